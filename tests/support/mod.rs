//! What every test module shares: the binaries, the samples, reading and writing a harness's
//! store through the porcelain (`asp_convert::Store`, as the commands do), raw zip surgery for
//! crafting broken bundles, and the hub driven in this process.
#![allow(dead_code)]

pub mod dir_harness;
pub mod hub;

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
/// Runs `cmd`, which must succeed (else its output is shown); its stdout.
pub fn succeeds(cmd: &mut Command) -> Vec<u8> {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{:?} failed: {}{}",
        cmd,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

pub fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// Every regular file under `dir` (none when it is missing), sorted.
pub fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(walkdir::DirEntry::into_path)
        .collect();
    out.sort();
    out
}

/// Every regular file under `dir`, by `/`-separated path relative to it, with its bytes.
pub fn files_in(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    files_under(dir)
        .into_iter()
        .map(|p| {
            let rel = p
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let bytes = std::fs::read(&p).unwrap();
            (rel, bytes)
        })
        .collect()
}

/// Whether a directory is missing or empty.
pub fn nothing_in(dir: &Path) -> bool {
    !dir.exists() || std::fs::read_dir(dir).unwrap().next().is_none()
}

/// A harness's store read into memory, for tests that look at what a converter read.
pub struct ReadBack {
    pub state: asp_format::State,
    pub store: asp_format::blob::MemoryStore,
    pub diagnostics: Vec<asp_convert::kit::report::Diagnostic>,
}

impl ReadBack {
    /// Writes the whole of it into `home` with the harness `name` ([`write_home`], not a dry
    /// run, no path mapping): the answer and what was noted on the way.
    pub fn write_into(
        &self,
        name: &str,
        home: &Path,
    ) -> (
        asp_format::answer::ImportAnswer,
        Vec<asp_convert::kit::report::Diagnostic>,
    ) {
        write_home(
            name,
            home,
            &self.state,
            &self.store,
            false,
            &asp_convert::kit::pathmap::PathMap::default(),
        )
    }
}

/// The store of the registered harness `name` in `home`.
pub fn store_of(name: &str, home: &Path) -> asp_convert::Store {
    asp_convert::Store::harness(name, asp_convert::Home::at(home))
        .unwrap_or_else(|| panic!("this build has no {name} converter"))
}

/// Reads `home` with the harness `name`, as `asp-pack` does.
pub fn read_home(
    name: &str,
    home: &Path,
    kinds: asp_format::KindSet,
    options: asp_convert::harness::ReadOptions,
) -> ReadBack {
    try_read_home(name, home, kinds, options).unwrap()
}

/// [`read_home`], failing as the read fails.
pub fn try_read_home(
    name: &str,
    home: &Path,
    kinds: asp_format::KindSet,
    options: asp_convert::harness::ReadOptions,
) -> Result<ReadBack, asp_convert::ConvertError> {
    let store = asp_format::blob::MemoryStore::new();
    let diagnostics = asp_convert::kit::report::Diagnostics::new();
    let mut req =
        asp_convert::store::ReadRequest::new(&store, &diagnostics, &asp_format::progress::Quiet);
    req.kinds = kinds;
    req.options = options;
    let state = store_of(name, home).read(&req)?;
    Ok(ReadBack {
        state,
        store,
        diagnostics: diagnostics.items(),
    })
}

/// Writes `state` into `home` with the harness `name`, as `asp-unpack` does: the answer and
/// what was noted on the way.
pub fn write_home(
    name: &str,
    home: &Path,
    state: &asp_format::State,
    blobs: &dyn asp_format::blob::BlobSource,
    dry_run: bool,
    path_map: &asp_convert::kit::pathmap::PathMap,
) -> (
    asp_format::answer::ImportAnswer,
    Vec<asp_convert::kit::report::Diagnostic>,
) {
    try_write_home(name, home, state, blobs, dry_run, path_map).unwrap()
}

/// [`write_home`], failing as the write fails.
pub fn try_write_home(
    name: &str,
    home: &Path,
    state: &asp_format::State,
    blobs: &dyn asp_format::blob::BlobSource,
    dry_run: bool,
    path_map: &asp_convert::kit::pathmap::PathMap,
) -> Result<
    (
        asp_format::answer::ImportAnswer,
        Vec<asp_convert::kit::report::Diagnostic>,
    ),
    asp_convert::ConvertError,
> {
    let diagnostics = asp_convert::kit::report::Diagnostics::new();
    let written = store_of(name, home).write(
        state,
        &asp_convert::store::WriteRequest {
            kinds: None,
            dry_run,
            path_map,
            force: false,
            restoring: false,
            blobs,
            diagnostics: &diagnostics,
            progress: &asp_format::progress::Quiet,
        },
    )?;
    Ok((written.answer, diagnostics.items()))
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
    pub fn any_not_carried(&self) -> bool {
        self.diagnostics.iter().any(|d| d.severity.is_not_carried())
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

/// Each MCP server a read gave, by name, with whether `_meta.<ns>.excluded` says it is
/// switched off (Gemini CLI's and Qwen Code's word for it).
pub fn servers_off(read: &ReadBack, ns: &str) -> Vec<(String, bool)> {
    read.state
        .tools
        .iter()
        .flatten()
        .map(|s| {
            let off = s
                .meta()
                .and_then(|m| m.get(ns))
                .and_then(|m| m.get("excluded"))
                == Some(&serde_json::Value::Bool(true));
            (s.name().to_owned(), off)
        })
        .collect()
}

/// Packs harness `harness`'s sample home into `out`, asserting it packed: exit 0, or 3 where
/// the sample holds what is lost on purpose (a damaged line).
pub fn pack_sample_home(harness: &str, out: &Path) {
    use predicates::prelude::PredicateBooleanExt;
    pack_home(harness, samples().join(harness), out)
        .assert()
        .code(predicates::ord::eq(0).or(predicates::ord::eq(3)));
}

/// Unpacks `bundle` into the directory form under `scratch` and packs that back: the same
/// bytes, whatever the writer predicted when it packed the bundle from a harness's store.
pub fn assert_packs_back_from_dir(bundle: &Path, scratch: &Path) {
    let dir = scratch.join("dir");
    unpack_to_dir(bundle, &dir).arg("-q").assert().success();
    let again = scratch.join("again.aspstate");
    asp_pack()
        .arg("--from-dir")
        .arg(&dir)
        .args(["-q", "-o"])
        .arg(&again)
        .assert()
        .success();
    assert!(
        std::fs::read(&again).unwrap() == std::fs::read(bundle).unwrap(),
        "the directory form packed to other bytes"
    );
}

/// `asp-unpack BUNDLE --to-dir DIR`, ready to run: a bundle unpacked into the directory form
/// (more arguments may be added).
pub fn unpack_to_dir(bundle: impl AsRef<Path>, dir: impl AsRef<Path>) -> Command {
    let mut cmd = asp_unpack();
    cmd.arg(bundle.as_ref()).arg("--to-dir").arg(dir.as_ref());
    cmd
}

/// `dir`, made (empty) if it is not there: a home to unpack or restore into, which must
/// exist (a `--home` that does not is refused as a typo).
pub fn new_home(dir: impl Into<PathBuf>) -> PathBuf {
    let dir = dir.into();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `line` put into a session log after its first line: a version that differs from the one
/// written before its end. (One added at the end is the session continued there, which holds
/// every line written: already there, not a different version.)
pub fn diverge(log: &mut Vec<u8>, line: &[u8]) {
    let at = log
        .iter()
        .position(|b| *b == b'\n')
        .map_or(log.len(), |i| i + 1);
    log.splice(at..at, line.iter().copied());
}

/// Copies the tree `src` to `dst` (a sample home into a temporary one a test may change).
pub fn copy_dir(src: &Path, dst: &Path) {
    for entry in walkdir::WalkDir::new(src) {
        let entry = entry.unwrap();
        let target = dst.join(entry.path().strip_prefix(src).unwrap());
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&target).unwrap();
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// The harness's own configuration a backup would keep in `home`, after writing `files` (each
/// `"x"`) under `dir` of it: the paths, relative to the home, as `Harness::config_files`
/// gives them.
pub fn config_kept(harness: &str, home: &Path, dir: &str, files: &[&str]) -> Vec<String> {
    for f in files {
        let p = home.join(dir).join(f);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, "x").unwrap();
    }
    asp_convert::harness(harness)
        .unwrap()
        .config_files(&asp_convert::Home::at(home))
        .keep
        .into_iter()
        .map(|(rel, _)| rel)
        .collect()
}

/// `out`, having checked that its command exited 0 (else fails with what it said on stderr).
pub fn succeeded(out: std::process::Output) -> std::process::Output {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A dry run's `--json` answer without the `_meta.asp.dryRun: true` it must carry (checked
/// here): the answer the write itself gives.
pub fn as_written(mut dry: serde_json::Value) -> serde_json::Value {
    let meta = dry["_meta"]
        .as_object_mut()
        .expect("a dry run's answer has _meta");
    let asp = meta["asp"].as_object_mut().expect("and _meta.asp");
    assert_eq!(
        asp.remove("dryRun"),
        Some(serde_json::Value::Bool(true)),
        "a dry run says it is one"
    );
    // What would be added to a file there is what is added.
    for w in asp
        .get_mut("writtenInto")
        .and_then(serde_json::Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if let Some(what) = w["what"].as_str() {
            w["what"] =
                serde_json::Value::String(what.replacen("would be added to", "added to", 1));
        }
    }
    if asp.is_empty() {
        meta.remove("asp");
    }
    if meta.is_empty() {
        dry.as_object_mut().expect("an object").remove("_meta");
    }
    dry
}
