//! Shared helpers for the end-to-end tests: the binaries, the samples, and raw zip surgery
//! for crafting broken bundles.
#![allow(dead_code)]

use std::io::{Cursor, Read, Write};
use std::path::{Path, PathBuf};

use assert_cmd::Command;
use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, ZipArchive, ZipWriter};

pub fn asp() -> Command {
    assert_cmd::cargo::cargo_bin_cmd!("asp")
}

pub fn asp_pack() -> Command {
    assert_cmd::cargo::cargo_bin_cmd!("asp-pack")
}

pub fn asp_unpack() -> Command {
    assert_cmd::cargo::cargo_bin_cmd!("asp-unpack")
}

/// The repository root.
pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("cli/ has a parent")
        .to_path_buf()
}

pub fn samples() -> PathBuf {
    root().join("samples")
}

/// The entries of a zip, in order, with their bytes.
pub fn entries(zip_bytes: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut z = ZipArchive::new(Cursor::new(zip_bytes)).expect("a zip");
    (0..z.len())
        .map(|i| {
            let mut f = z.by_index(i).unwrap();
            let mut b = Vec::new();
            f.read_to_end(&mut b).unwrap();
            (f.name().unwrap().into_owned(), b)
        })
        .collect()
}

/// A zip of `entries`, all Stored, so names and bytes can be patched in place afterwards.
pub fn zip_of(entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    zip_with(entries, CompressionMethod::Stored)
}

pub fn zip_with(entries: &[(String, Vec<u8>)], method: CompressionMethod) -> Vec<u8> {
    let mut w = ZipWriter::new(Cursor::new(Vec::new()));
    let opts = SimpleFileOptions::default()
        .compression_method(method)
        .unix_permissions(0o644);
    for (name, bytes) in entries {
        w.start_file(name.as_str(), opts).unwrap();
        w.write_all(bytes).unwrap();
    }
    w.finish().unwrap().into_inner()
}

/// Replaces every occurrence of `from` with `to` (same length) in raw bytes.
pub fn patch(bytes: &mut [u8], from: &[u8], to: &[u8]) -> usize {
    assert_eq!(from.len(), to.len(), "patches keep lengths");
    let mut n = 0;
    let mut i = 0;
    while i + from.len() <= bytes.len() {
        if &bytes[i..i + from.len()] == from {
            bytes[i..i + from.len()].copy_from_slice(to);
            n += 1;
            i += from.len();
        } else {
            i += 1;
        }
    }
    n
}

/// The sha256 hex of bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    asp_format::Digest::of(bytes).hex()
}

/// A temporary directory.
pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// Whether a directory is missing or empty.
pub fn nothing_in(dir: &Path) -> bool {
    !dir.exists() || std::fs::read_dir(dir).unwrap().next().is_none()
}

/// A harness's store read into memory, for tests that look at what a converter read.
pub struct ReadBack {
    pub state: asp_format::State,
    pub store: asp_format::blob::MemoryStore,
    pub diagnostics: Vec<asp_convert::report::Diagnostic>,
}

/// Reads `home` with `harness`.
pub fn read_home(
    harness: &dyn asp_convert::Harness,
    home: &Path,
    kinds: asp_format::KindSet,
    options: asp_convert::harness::ReadOptions,
) -> ReadBack {
    let store = asp_format::blob::MemoryStore::new();
    let diagnostics = asp_convert::report::Diagnostics::new();
    let state = harness
        .read(&asp_convert::ReadContext {
            home: &asp_convert::Home::at(home),
            kinds,
            blobs: &store,
            diagnostics: &diagnostics,
            progress: &asp_format::progress::Quiet,
            options,
        })
        .unwrap();
    ReadBack {
        state,
        store,
        diagnostics: diagnostics.items(),
    }
}

impl ReadBack {
    pub fn session(&self, id: &str) -> &asp_format::state::Session {
        self.state
            .sessions
            .iter()
            .flatten()
            .find(|s| s.id.as_str() == id)
            .unwrap_or_else(|| panic!("no session {id}"))
    }

    /// The `update` objects of a session's stream.
    pub fn updates(&self, id: &str) -> Vec<serde_json::Value> {
        updates_of(&self.store, self.session(id))
    }

    /// A blob that holds text.
    pub fn text(&self, d: &asp_format::Descriptor) -> String {
        use asp_format::blob::BlobSource;
        String::from_utf8(self.store.read_all(d).unwrap()).unwrap()
    }

    /// Whether something was reported as not carried.
    pub fn any_skipped(&self) -> bool {
        self.diagnostics
            .iter()
            .any(|d| d.severity == asp_convert::report::Severity::Skipped)
    }
}

/// The `update` objects of a session's stream, checking every line names its session.
pub fn updates_of(
    blobs: &dyn asp_format::blob::BlobSource,
    s: &asp_format::state::Session,
) -> Vec<serde_json::Value> {
    let mut lines = asp_format::update::UpdateLines::open(blobs, &s.updates).unwrap();
    let mut out = Vec::new();
    while let Some((_, line)) = lines.next_line().unwrap() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            v["sessionId"],
            s.id.as_str(),
            "every line names its session"
        );
        out.push(v["update"].clone());
    }
    out
}

/// `asp-pack --from HARNESS --home HOME -o OUT`, ready to run.
pub fn pack_home(harness: &str, home: impl AsRef<Path>, out: impl AsRef<Path>) -> Command {
    let mut cmd = asp_pack();
    cmd.args(["--from", harness, "--home"])
        .arg(home.as_ref())
        .arg("-o")
        .arg(out.as_ref());
    cmd
}
