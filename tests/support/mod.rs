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
