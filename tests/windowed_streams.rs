//! Layout 5 (spec/aspstate.md §4.2): the update stream of a transcript over 8 MiB is stored in
//! windows of its transcript, and what reads bundles and repositories reads it: `asp verify`,
//! one session by id, the directory form (which packs back to the same bytes), a backup, its
//! check and a bundle packed from it.

use std::fs;
use std::path::{Path, PathBuf};

use asp_format::bundle::Bundle;
use asp_format::bundle::oci::{Encoding, WINDOWED_SUFFIX};
use asp_format::bundle::windows::WINDOWED_BASE;
use asp_format::state::Session;

use crate::project_dictionaries::generator;
use crate::support::*;

/// A generated Claude Code home with one session whose transcript is a little over 8 MiB
/// (the benchmark's generator), and that session's id.
pub fn large_claude_home(dir: &Path) -> (PathBuf, String) {
    let home = dir.join("home");
    let summary = generator::generate_one(&home, WINDOWED_BASE + (1 << 20), 7);
    (home, summary.sample_session.expect("a session"))
}

/// The export form of session `id` of `bundle`.
fn export(bundle: &Path, id: &str) -> Vec<u8> {
    succeeds(asp().arg("export").arg(bundle).args(["--session", id]))
}

/// [`large_claude_home`] packed under `dir`: the home, the bundle, the large session.
fn packed_large_home(dir: &Path) -> (PathBuf, PathBuf, Session) {
    let (home, id) = large_claude_home(dir);
    let bundle = dir.join("large.aspstate");
    pack_home("claude-code", &home, &bundle)
        .arg("-q")
        .assert()
        .success();
    let session = Bundle::open(&bundle)
        .unwrap()
        .manifest()
        .state
        .sessions
        .iter()
        .flatten()
        .find(|s| s.id.as_str() == id)
        .unwrap()
        .clone();
    (home, bundle, session)
}

#[test]
fn the_stream_of_a_transcript_over_8_mib_is_packed_in_windows_and_read_back() {
    let t = tmp();
    let (home, bundle, session) = packed_large_home(t.path());
    let id = session.id.as_str().to_owned();
    let b = Bundle::open(&bundle).unwrap();
    assert_eq!(b.layout().layout_version, "5.0.0");
    let transcript = session.native.as_ref().unwrap().files[0].content;
    assert!(transcript.size > WINDOWED_BASE, "{}", transcript.size);
    let layer = b.layer_ref(&session.updates.digest).unwrap();
    assert_eq!(layer.encoding, Encoding::ZstdWindows);
    assert_eq!(layer.dictionary, Some(transcript.digest));
    let image = b.image_manifest().unwrap();
    let listed = image
        .layers
        .iter()
        .find(|l| l.digest == layer.layer)
        .unwrap();
    assert!(
        listed.media_type.ends_with(WINDOWED_SUFFIX),
        "{}",
        listed.media_type
    );
    asp().arg("verify").arg(&bundle).assert().success();

    // The same conversation as a bundle whose bodies are stored as they are.
    let plain = t.path().join("plain.aspstate");
    pack_home("claude-code", &home, &plain)
        .args(["-q", "--compression", "stored"])
        .assert()
        .success();
    let exported = export(&bundle, &id);
    assert!(
        exported == export(&plain, &id),
        "the stream reads otherwise"
    );

    // The directory form packs back to the same bytes.
    assert_packs_back_from_dir(&bundle, t.path());

    // A repository keeps the windowed layer: its check decodes it, and a bundle packed from
    // it is the bundle `asp-pack` made.
    let repo = t.path().join("repo");
    asp()
        .args(["backup", "-q", "--from", "claude-code", "--home"])
        .arg(&home)
        .arg("--repo")
        .arg(&repo)
        .assert()
        .success();
    asp()
        .args(["check", "-q", "--read-data", "--repo"])
        .arg(&repo)
        .assert()
        .success();
    let from_repo = t.path().join("from-repo.aspstate");
    asp()
        .args(["pack", "--from-repo", "-q", "--repo"])
        .arg(&repo)
        .arg("-o")
        .arg(&from_repo)
        .assert()
        .success();
    assert!(
        fs::read(&from_repo).unwrap() == fs::read(&bundle).unwrap(),
        "the repository packed to other bytes"
    );
}

#[test]
fn a_damaged_windowed_layer_is_an_integrity_failure() {
    let t = tmp();
    let (_, bundle, session) = packed_large_home(t.path());
    let id = session.id.as_str();
    let layer = Bundle::open(&bundle)
        .unwrap()
        .layer_ref(&session.updates.digest)
        .unwrap();
    // A byte inside its second frame changed (the zip entry's CRC-32 made to match): the
    // layer's own digest and its frames say so, whichever a reader checks first (the frame
    // checks themselves are the unit tests' of `bundle::windows`).
    let mut entries = entries(&fs::read(&bundle).unwrap());
    let name = format!("blobs/sha256/{}", layer.layer.hex());
    let (_, data) = entries.iter_mut().find(|(n, _)| *n == name).unwrap();
    let second = zstd::zstd_safe::find_frame_compressed_size(data).unwrap();
    assert!(data.len() > second + 200, "one frame only");
    data[second + 100] ^= 0x55;
    let damaged = t.path().join("damaged.aspstate");
    fs::write(&damaged, zip_of(&entries)).unwrap();
    let out = asp().arg("verify").arg(&damaged).output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = asp()
        .arg("export")
        .arg(&damaged)
        .args(["--session", id])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
}
