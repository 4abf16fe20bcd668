//! Bundles come from other machines. Every broken or hostile one gets a clear error naming the
//! entry, exit code 4, and nothing written at all.

use std::fs;

use crate::support::*;
use asp_format::blob::MemoryStore;
use asp_format::bundle::{self, Limits, ReadError, WriteOptions};
use asp_format::export::ExportResponse;
use predicates::prelude::*;
use zip::CompressionMethod;

/// The entries of the sample state packed in layout 1.0.0 (`manifest.json` and blobs in a zip):
/// the checks below are the zip-level ones both layouts share, and layout 1's own.
fn sample_entries() -> Vec<(String, Vec<u8>)> {
    entries(&fs::read(layout1("state.aspstate")).unwrap())
}

fn layout1(name: &str) -> std::path::PathBuf {
    root().join("tests/fixtures/layout-1").join(name)
}

/// Asserts that unpacking `bytes` fails with exit 4, that stderr mentions every `needle`, and
/// that nothing was written; `asp verify` must fail the same way.
fn refused(bytes: &[u8], needles: &[&str]) {
    let (_dir, out) = unpacked_with_damage(bytes, needles);
    assert!(
        nothing_in(&out),
        "something was written into {}",
        out.display()
    );
}

/// A bundle one of whose bodies does not check out: `asp-unpack` leaves out what needs it,
/// unpacks the rest, names the damage (the body by its digest, as wherever it is stored) and
/// exits 4; nothing unchecked is written; `asp verify` refuses the bundle; `asp export`
/// prints the rest, whole, and says the same.
fn salvaged(bytes: &[u8], needles: &[&str]) {
    let mut needles: Vec<String> = needles
        .iter()
        .map(|n| n.replace("blobs/sha256/", "sha256:"))
        .collect();
    needles.push("left out, their data in the bundle being damaged".to_owned());
    let needles: Vec<&str> = needles.iter().map(String::as_str).collect();
    let (dir, out) = unpacked_with_damage(bytes, &needles);
    assert!(
        !nothing_in(&out),
        "the rest is unpacked into {}",
        out.display()
    );
    // Export prints only what checks out, whole (it printed what a damaged body decoded to,
    // then cut-off JSON: a new user's trial), and says what it left out.
    let export = asp()
        .arg("export")
        .arg(dir.path().join("bad.aspstate"))
        .output()
        .unwrap();
    assert_eq!(export.status.code(), Some(4));
    let said = String::from_utf8_lossy(&export.stderr);
    for n in &needles {
        assert!(said.contains(n), "export: {n:?} in {said}");
    }
    let printed: serde_json::Value =
        serde_json::from_slice(&export.stdout).unwrap_or_else(|e| panic!("export: {e}: {said}"));
    assert!(printed["state"].is_object(), "{printed}");
    // What was written is a whole, checked state: it packs again.
    asp_pack()
        .arg("--from-dir")
        .arg(&out)
        .arg("-o")
        .arg(dir.path().join("again.aspstate"))
        .assert()
        .code(predicate::in_iter([0, 3]));
}

/// Unpacks `bytes` into a new directory, which it gives (with the scratch directory holding
/// it), asserting exit 4, every `needle` on stderr, and that `asp verify` exits 4 too.
fn unpacked_with_damage(bytes: &[u8], needles: &[&str]) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tmp();
    let bundle = dir.path().join("bad.aspstate");
    fs::write(&bundle, bytes).unwrap();
    let out = dir.path().join("out");
    let mut assert = unpack_to_dir(&bundle, &out).assert().code(4);
    for n in needles {
        assert = assert.stderr(predicate::str::contains(*n));
    }
    let mut v = asp();
    v.arg("verify").arg(&bundle);
    v.assert().code(4);
    // With --json, the verdict is on stdout however damaged the bundle is.
    let out_json = asp()
        .args(["verify", "--json"])
        .arg(&bundle)
        .output()
        .unwrap();
    assert_eq!(out_json.status.code(), Some(4));
    let verdict: serde_json::Value = serde_json::from_slice(&out_json.stdout).unwrap_or_else(|e| {
        panic!(
            "verify --json: {e}: {}",
            String::from_utf8_lossy(&out_json.stdout)
        )
    });
    assert_eq!(verdict["ok"], false, "{verdict}");
    assert!(
        !verdict["problems"].as_array().unwrap().is_empty(),
        "{verdict}"
    );
    (dir, out)
}

fn blob_names(entries: &[(String, Vec<u8>)]) -> Vec<String> {
    entries
        .iter()
        .map(|e| e.0.clone())
        .filter(|n| n.starts_with("blobs/"))
        .collect()
}

#[test]
fn a_blob_whose_bytes_do_not_match_its_digest() {
    let mut e = sample_entries();
    let victim = e.iter().position(|(n, _)| n.starts_with("blobs/")).unwrap();
    let name = e[victim].0.clone();
    let last = e[victim].1.len() - 2;
    e[victim].1[last] ^= 0x20;
    salvaged(
        &zip_with(&e, CompressionMethod::Deflated),
        &[&name, "does not match its digest"],
    );
}

#[test]
fn a_truncated_file() {
    let mut bytes = fs::read(samples().join("state.aspstate")).unwrap();
    bytes.truncate(bytes.len() - 100);
    refused(&bytes, &["truncated or damaged"]);
    // The zip crate's words, without its type names.
    bytes.truncate(5000);
    let (_dir, _) = unpacked_with_damage(&bytes, &["truncated or damaged"]);
    let path = tmp();
    let damaged = path.path().join("cut.aspstate");
    fs::write(&damaged, &bytes).unwrap();
    let out = asp().arg("verify").arg(&damaged).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(!said.contains("::"), "{said}");
}

/// Bytes appended after the zip's end record are not part of the bundle: refused, as bytes
/// before its first entry are (found by a new user's trial: `asp verify` said ok).
#[test]
fn data_appended_after_the_end_record() {
    let mut bytes = fs::read(samples().join("state.aspstate")).unwrap();
    bytes.extend_from_slice(&[0x5a; 1000]);
    refused(&bytes, &["1000 bytes follow the zip's end record"]);
}

#[test]
fn entry_names_that_are_paths() {
    for hostile in [
        "../evil.txt",
        "/etc/passwd",
        "C:\\win.txt",
        "blobs/sha256/../../x",
        "a/../../b",
    ] {
        let mut e = sample_entries();
        e.push((hostile.to_owned(), b"owned".to_vec()));
        refused(&zip_of(&e), &[hostile, "not allowed"]);
    }
}

#[test]
fn duplicate_names() {
    let mut e = sample_entries();
    let blobs = blob_names(&e);
    let (a, b) = (blobs[0].clone(), blobs[1].clone());
    // Make a second entry whose name differs from `a` only in its last character, then patch
    // it into `a` in both the local header and the central directory.
    let mut twin = a.clone();
    let last = twin.pop().unwrap();
    twin.push(if last == '0' { '1' } else { '0' });
    e.push((twin.clone(), b"other".to_vec()));
    let mut bytes = zip_of(&e);
    assert_eq!(patch(&mut bytes, twin.as_bytes(), a.as_bytes()), 2);
    let _ = b;
    refused(&bytes, &[&a, "more than once"]);
}

#[test]
fn symlink_entries() {
    use std::io::{Cursor, Write};
    use zip::write::SimpleFileOptions;
    let e = sample_entries();
    let mut w = zip::ZipWriter::new(Cursor::new(Vec::new()));
    for (name, bytes) in &e {
        w.start_file(name.as_str(), SimpleFileOptions::default())
            .unwrap();
        w.write_all(bytes).unwrap();
    }
    let name = format!("blobs/sha256/{}", sha256_hex(b"/etc/passwd"));
    w.add_symlink(name.as_str(), "/etc/passwd", SimpleFileOptions::default())
        .unwrap();
    let bytes = w.finish().unwrap().into_inner();
    refused(&bytes, &[&name, "symlink"]);
}

#[test]
fn a_decompression_bomb_is_refused_before_reading() {
    let zeros = vec![0u8; 64 << 20];
    let mut e = sample_entries();
    e.push((format!("blobs/sha256/{}", sha256_hex(&zeros)), zeros));
    let bytes = zip_with(&e, CompressionMethod::Deflated);
    assert!(bytes.len() < 1 << 20, "the bomb should be small on disk");
    refused(&bytes, &["zip bomb"]);
}

#[test]
fn a_lie_about_the_declared_size_is_caught() {
    // The zip directory and the manifest both say N bytes; the deflate stream expands to more.
    let mut e = sample_entries();
    let i = e.iter().position(|(n, _)| n.starts_with("blobs/")).unwrap();
    let name = e[i].0.clone();
    let honest = e[i].1.len() as u32;
    e[i].1.extend_from_slice(b" and then some");
    let mut bytes = zip_with(&e, CompressionMethod::Deflated);
    let mut hits = 0;
    for at in find_all(&bytes, name.as_bytes()) {
        // Uncompressed size: local header +22, central header +24.
        for (back, size_off, sig) in [(30usize, 22usize, b"PK\x03\x04"), (46, 24, b"PK\x01\x02")] {
            if at >= back && &bytes[at - back..at - back + 4] == sig {
                let o = at - back + size_off;
                bytes[o..o + 4].copy_from_slice(&honest.to_le_bytes());
                hits += 1;
            }
        }
    }
    assert_eq!(hits, 2);
    salvaged(&bytes, &[&name, "more than the"]);
}

#[test]
fn an_invalid_manifest() {
    let mut e = sample_entries();
    let m = e.iter().position(|(n, _)| n == "manifest.json").unwrap();
    e[m].1 = b"{\"schemaVersion\": 1, \"mediaType\": \"application/vnd.asp.state.manifest.v1+json\", \"state\": {\"sessions\": [{\"id\": 1}]}}".to_vec();
    refused(&zip_of(&e), &["manifest.json", "invalid type"]);
    e[m].1 = b"{not json".to_vec();
    refused(&zip_of(&e), &["manifest.json", "not a JSON object"]);
}

#[test]
fn a_manifest_path_that_escapes() {
    let mut e = sample_entries();
    let m = e.iter().position(|(n, _)| n == "manifest.json").unwrap();
    let text = String::from_utf8(e[m].1.clone()).unwrap();
    let evil = text.replacen("\"path\": \"SKILL.md\"", "\"path\": \"../../.bashrc\"", 1);
    assert_ne!(text, evil);
    e[m].1 = evil.into_bytes();
    refused(&zip_of(&e), &["manifest.json", "../../.bashrc"]);
}

#[test]
fn an_oversized_manifest() {
    let dir = tmp();
    let path = dir.path().join("s.aspstate");
    fs::copy(layout1("state.aspstate"), &path).unwrap();
    let limits = Limits {
        max_manifest_bytes: 100,
        ..Limits::default()
    };
    let err = asp_format::bundle::Bundle::open_with(&path, &limits).unwrap_err();
    assert!(err.is_integrity());
    let msg = err.to_string();
    assert!(
        msg.contains("manifest.json") && msg.contains("over the limit of 100"),
        "{msg}"
    );
}

#[test]
fn too_many_entries() {
    let dir = tmp();
    let path = dir.path().join("s.aspstate");
    fs::copy(samples().join("state.aspstate"), &path).unwrap();
    let limits = Limits {
        max_entries: 3,
        ..Limits::default()
    };
    let err = asp_format::bundle::Bundle::open_with(&path, &limits).unwrap_err();
    assert!(err.to_string().contains("more than 3 entries"), "{err}");
}

#[test]
fn an_unknown_major_version() {
    let mut e = sample_entries();
    e[0].1 =
        br#"{"layoutVersion":"6.0.0","mediaType":"application/vnd.asp.state.v1+zip"}"#.to_vec();
    refused(&zip_of(&e), &["aspstate-layout", "major version 6"]);
}

#[test]
fn the_marker_must_come_first() {
    let mut e = sample_entries();
    e.swap(0, 1);
    refused(
        &zip_of(&e),
        &["manifest.json", "first entry must be `aspstate-layout`"],
    );
}

#[test]
fn encrypted_entries() {
    let e = sample_entries();
    let mut bytes = zip_of(&e);
    // Set bit 0 of the general purpose flags of the first blob, in both headers.
    let name = blob_names(&e)[0].clone();
    let mut hits = 0;
    for sig_off in find_all(&bytes, name.as_bytes()) {
        // Local header: name at +30; central header: name at +46.
        for (back, flag_off) in [(30usize, 6usize), (46, 8)] {
            if sig_off >= back {
                let start = sig_off - back;
                let sig = &bytes[start..start + 4];
                if (back == 30 && sig == b"PK\x03\x04") || (back == 46 && sig == b"PK\x01\x02") {
                    bytes[start + flag_off] |= 1;
                    hits += 1;
                }
            }
        }
    }
    assert_eq!(hits, 2);
    refused(&bytes, &[&name, "encrypted"]);
}

fn find_all(hay: &[u8], needle: &[u8]) -> Vec<usize> {
    (0..=hay.len() - needle.len())
        .filter(|&i| &hay[i..i + needle.len()] == needle)
        .collect()
}

#[test]
fn not_a_zip() {
    refused(b"# just some markdown\n", &["not a zip archive"]);
}

#[test]
fn an_empty_file() {
    refused(b"", &["empty"]);
}

#[test]
fn a_session_line_that_is_not_json() {
    let store = MemoryStore::new();
    let state = serde_json::from_value::<ExportResponse>(serde_json::json!({"state": {"sessions": [
        {"id": "s1", "title": "t", "updates": [
            {"sessionId": "s1", "update": {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}}
        ]}
    ]}}))
    .unwrap()
    .state
    .into_state(&store)
    .unwrap();
    // Swap the session's stream for one whose second line is not JSON; its digest is honest.
    let mut state = state;
    let bad = b"{\"sessionId\":\"s1\",\"update\":{\"sessionUpdate\":\"plan\",\"entries\":[]}}\n{\"sessionId\": oops\n";
    let d = asp_format::blob::BlobSink::put(&store, bad).unwrap();
    state.sessions.as_mut().unwrap()[0].updates = d;
    let (cursor, _) = bundle::write_to(
        std::io::Cursor::new(Vec::new()),
        &state,
        &store,
        &WriteOptions::default(),
        &asp_format::progress::Quiet,
    )
    .unwrap();
    refused(
        &cursor.into_inner(),
        &[&d.digest.hex(), "session \"s1\", update 2", "not JSON"],
    );
}

#[test]
fn a_damaged_deflate_stream() {
    let e = sample_entries();
    let mut bytes = zip_with(&e, CompressionMethod::Deflated);
    // Damage the middle of the largest blob's compressed data.
    let big = e
        .iter()
        .filter(|(n, _)| n.starts_with("blobs/"))
        .max_by_key(|(_, b)| b.len())
        .unwrap()
        .0
        .clone();
    let at = find_all(&bytes, big.as_bytes())[0] + big.len() + 20;
    bytes[at] ^= 0xff;
    bytes[at + 1] ^= 0xff;
    salvaged(&bytes, &[&big]);
}

#[test]
fn problems_are_all_named_not_just_the_first() {
    let mut e = sample_entries();
    e.push(("../one".to_owned(), b"x".to_vec()));
    e.push(("/two".to_owned(), b"y".to_vec()));
    let dir = tmp();
    let p = dir.path().join("b.aspstate");
    fs::write(&p, zip_of(&e)).unwrap();
    let err = asp_format::bundle::Bundle::open(&p).unwrap_err();
    let ReadError::Invalid { problems, .. } = &err else {
        panic!("{err}")
    };
    assert_eq!(problems.len(), 2, "{err}");
    asp()
        .arg("verify")
        .arg(&p)
        .assert()
        .code(4)
        .stderr(predicate::str::contains("../one").and(predicate::str::contains("/two")));
}

#[test]
fn one_damaged_session_does_not_stop_another_from_being_read() {
    use asp_format::blob::BlobSource;
    use std::io::Read;
    // Random access: a session's blob is found through the central directory and read alone,
    // so damage elsewhere in the bundle does not touch it.
    let mut e = sample_entries();
    let manifest: serde_json::Value = serde_json::from_slice(&e[1].1).unwrap();
    let sessions = manifest["state"]["sessions"].as_array().unwrap();
    let hex =
        |i: usize| sessions[i]["updates"]["digest"].as_str().unwrap()["sha256:".len()..].to_owned();
    let (good, bad) = (hex(0), hex(1));
    let i = e.iter().position(|(n, _)| n.ends_with(&bad)).unwrap();
    e[i].1[10] ^= 1;
    let dir = tmp();
    let p = dir.path().join("b.aspstate");
    fs::write(&p, zip_with(&e, CompressionMethod::Deflated)).unwrap();
    let b = asp_format::bundle::Bundle::open(&p).unwrap();
    let s = b.manifest().state.sessions.clone().unwrap();
    let mut out = Vec::new();
    b.open(&s[0].updates)
        .unwrap()
        .read_to_end(&mut out)
        .unwrap();
    assert_eq!(s[0].updates.digest.hex(), good);
    assert_eq!(out.len() as u64, s[0].updates.size);
    assert!(
        b.open(&s[1].updates)
            .unwrap()
            .read_to_end(&mut Vec::new())
            .is_err()
    );
}

#[test]
fn one_session_is_read_without_parsing_the_others() {
    // The state manifest's other sessions are not parsed when one session is asked for (a
    // bundle of thousands of sessions is read in milliseconds); everything else still refuses
    // a session the manifest cannot describe, naming the manifest.
    let mut e = sample_entries();
    let m = e.iter().position(|(n, _)| n == "manifest.json").unwrap();
    let mut manifest: serde_json::Value = serde_json::from_slice(&e[m].1).unwrap();
    let sessions = manifest["state"]["sessions"].as_array_mut().unwrap();
    let good = sessions[0]["id"].as_str().unwrap().to_owned();
    sessions[1]["id"] = serde_json::json!("control\u{1}character");
    e[m].1 = serde_json::to_vec_pretty(&manifest).unwrap();
    let dir = tmp();
    let bundle = dir.path().join("b.aspstate");
    fs::write(&bundle, zip_of(&e)).unwrap();

    let out = asp()
        .arg("export")
        .arg(&bundle)
        .args(["--session", &good])
        .assert()
        .success();
    let v: serde_json::Value = serde_json::from_slice(&out.get_output().stdout).unwrap();
    assert_eq!(v["state"]["sessions"][0]["id"], good.as_str());
    assert_eq!(v["state"]["sessions"].as_array().unwrap().len(), 1);
    let to = dir.path().join("one");
    unpack_to_dir(&bundle, &to)
        .args(["--session", &good])
        .assert()
        .success();
    assert!(to.join(format!("sessions/{good}.json")).is_file());

    for args in [
        &["export"][..],
        &["export", "--kinds", "sessions"],
        &["verify"],
    ] {
        asp().args(args).arg(&bundle).assert().code(4).stderr(
            predicate::str::contains("manifest.json").and(predicate::str::contains("control")),
        );
    }
}

/// A deterministic xorshift generator for mutants.
struct Xorshift(u64);

impl Xorshift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// One damaged copy of `original`: a bit flip, a truncation, an insertion or a zeroed run.
fn mutant(original: &[u8], rng: &mut Xorshift) -> (String, Vec<u8>) {
    let mut b = original.to_vec();
    let at = rng.below(b.len());
    match rng.below(4) {
        0 => {
            let bit = rng.below(8);
            b[at] ^= 1 << bit;
            (format!("bit {bit} of byte {at} flipped"), b)
        }
        1 => {
            b.truncate(at);
            (format!("cut to {at} bytes"), b)
        }
        2 => {
            let n = 1 + rng.below(16);
            let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            b.splice(at..at, bytes);
            (format!("{n} bytes inserted at {at}"), b)
        }
        _ => {
            let n = (1 + rng.below(64)).min(b.len() - at);
            b[at..at + n].fill(0);
            (format!("{n} bytes zeroed at {at}"), b)
        }
    }
}

/// Issue 10, item 6: bit rot anywhere in a bundle is either refused as an integrity failure
/// (exit 4, no panic) or changes nothing that is read: the export is exactly the original's.
fn mutants_are_refused_or_harmless(bundle: &std::path::Path, count: usize, seed: u64) {
    let original = fs::read(bundle).unwrap();
    let expected = asp().arg("export").arg(bundle).output().unwrap();
    assert!(expected.status.success());
    let dir = tmp();
    let path = dir.path().join("mutant.aspstate");
    let mut rng = Xorshift(seed);
    let (mut refused, mut harmless) = (0, 0);
    for i in 0..count {
        let (what, bytes) = mutant(&original, &mut rng);
        fs::write(&path, &bytes).unwrap();
        let out = asp().arg("export").arg(&path).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !stderr.contains("panicked"),
            "mutant {i} ({what}) made asp panic: {stderr}"
        );
        match out.status.code() {
            Some(0) => {
                assert!(
                    out.stdout == expected.stdout,
                    "mutant {i} ({what}) exports something other than the original"
                );
                harmless += 1;
            }
            Some(4) => refused += 1,
            other => panic!("mutant {i} ({what}) exited {other:?}: {stderr}"),
        }
    }
    assert!(
        refused > count / 2,
        "only {refused} of {count} mutants refused ({harmless} harmless)"
    );
}

#[test]
fn bit_rot_in_a_layout_1_bundle_is_refused_or_harmless() {
    mutants_are_refused_or_harmless(&layout1("state.aspstate"), 250, 0x1234_5678_9abc_def1);
}

#[test]
fn bit_rot_in_a_layout_2_bundle_is_refused_or_harmless() {
    mutants_are_refused_or_harmless(
        &samples().join("state.aspstate"),
        250,
        0x0fed_cba9_8765_4321,
    );
}

#[test]
fn the_manifest_bit_flip_of_issue_10_is_an_integrity_failure() {
    // Byte 542, bit 4: inside the Deflate stream of layout 1's manifest.json; the stream still
    // inflates, to a different title. Only the entry's CRC-32 catches it.
    let mut b = fs::read(layout1("state.aspstate")).unwrap();
    b[542] ^= 1 << 4;
    refused(&b, &["manifest.json", "CRC-32"]);
}

/// A blob whose local header names another entry than the zip directory does. Opening a
/// bundle reads a blob's local header only when it reads the blob (so one session is read
/// without the headers of thousands), and `asp verify` reads all of them: both refuse it,
/// naming the entry.
#[test]
fn a_local_header_that_names_another_entry() {
    let mut bytes = fs::read(samples().join("state.aspstate")).unwrap();
    let names = blob_names(&entries(&bytes));
    // The last blob: a body layer, not a document the bundle is opened by.
    let name = names.last().unwrap().clone();
    let at = find_all(&bytes, name.as_bytes());
    assert_eq!(at.len(), 2, "local header and central directory");
    // Change the local header's copy only (the first), keeping it a well-formed name.
    let last = at[0] + name.len() - 1;
    bytes[last] = if bytes[last] == b'0' { b'1' } else { b'0' };
    salvaged(&bytes, &[&name, "local header names it"]);
    let dir = tmp();
    let bundle = dir.path().join("bad.aspstate");
    fs::write(&bundle, &bytes).unwrap();
    let out = asp().arg("verify").arg(&bundle).output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains(&name) && said.contains("local header names it"),
        "{said}"
    );
}

/// A zip of `entries`, written by hand so an entry's data can be any bytes: each is Stored,
/// or, when it is `padded`, raw Deflate after `pad` bytes of empty fixed-Huffman blocks (ten
/// bytes, eight blocks), as no Deflate writer makes them.
fn zip_padded(entries: &[(String, Vec<u8>)], padded: &str, pad: usize) -> Vec<u8> {
    use std::io::Write;
    let (mut out, mut central) = (Vec::new(), Vec::new());
    for (name, data) in entries {
        let (method, body): (u16, Vec<u8>) = if name.contains(padded) {
            let mut body =
                [0x02, 0x08, 0x20, 0x80, 0x00, 0x02, 0x08, 0x20, 0x80, 0x00].repeat(pad / 10);
            let mut e = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
            e.write_all(data).unwrap();
            body.extend(e.finish().unwrap());
            (8, body)
        } else {
            (0, data.clone())
        };
        let crc = crc32fast::hash(data);
        let offset = out.len() as u32;
        let sizes = |v: &mut Vec<u8>| {
            v.extend(crc.to_le_bytes());
            v.extend((body.len() as u32).to_le_bytes());
            v.extend((data.len() as u32).to_le_bytes());
            v.extend((name.len() as u16).to_le_bytes());
            v.extend(0u16.to_le_bytes());
        };
        out.extend(0x0403_4b50u32.to_le_bytes());
        for x in [20u16, 0, method, 0, 0x21] {
            out.extend(x.to_le_bytes());
        }
        sizes(&mut out);
        out.extend(name.as_bytes());
        out.extend(&body);
        central.extend(0x0201_4b50u32.to_le_bytes());
        for x in [20u16, 20, 0, method, 0, 0x21] {
            central.extend(x.to_le_bytes());
        }
        sizes(&mut central);
        for x in [0u16, 0, 0, 0, 0] {
            central.extend(x.to_le_bytes());
        }
        central.extend(offset.to_le_bytes());
        central.extend(name.as_bytes());
    }
    let start = out.len() as u32;
    out.extend(&central);
    out.extend(0x0605_4b50u32.to_le_bytes());
    for x in [0u16, 0, entries.len() as u16, entries.len() as u16] {
        out.extend(x.to_le_bytes());
    }
    out.extend((central.len() as u32).to_le_bytes());
    out.extend(start.to_le_bytes());
    out.extend(0u16.to_le_bytes());
    out
}

#[test]
fn deflate_data_far_longer_than_its_content_is_refused() {
    // The empty config blob, which every layout 2 and 3 bundle has: 2 bytes of content, and
    // in the padded bundle 4 KB of empty Deflate blocks before them. Each read would decode
    // the padding; a document named as thousands of parts, or a body thousands of sessions
    // share, would cost hours.
    let e = entries(&fs::read(samples().join("state.aspstate")).unwrap());
    let config = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
    let dir = tmp();
    let plain = dir.path().join("plain.aspstate");
    fs::write(&plain, zip_padded(&e, config, 0)).unwrap();
    asp().arg("verify").arg(&plain).assert().success();
    refused(
        &zip_padded(&e, config, 4000),
        &[config, "more than any Deflate or Stored entry takes"],
    );
}

/// A marker the reader cannot read (one flipped byte) leaves the layout unknown: the finding is
/// the marker's damage, and no entry is judged as another layout's. Checked as layout 1's, a
/// current bundle's `oci-layout` and `index.json` were said to belong to layout 2 only, and it
/// to have no `manifest.json` (a new user's trial).
#[test]
fn a_damaged_marker_leaves_the_layout_unknown_and_is_the_only_finding() {
    let dir = tmp();
    let bundle = dir.path().join("b.aspstate");
    pack_home("claude-code", samples().join("claude-code"), &bundle)
        .assert()
        .code(0);
    let mut bytes = fs::read(&bundle).unwrap();
    let at = {
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(&bytes)).unwrap();
        let marker = zip.by_name("aspstate-layout").unwrap();
        marker.data_start().unwrap() as usize + 5
    };
    bytes[at] ^= 1;
    fs::write(&bundle, &bytes).unwrap();
    let out = asp().arg("verify").arg(&bundle).output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    let said = String::from_utf8_lossy(&out.stderr);
    let bad: Vec<&str> = said.lines().filter(|l| l.starts_with("bad: ")).collect();
    assert_eq!(bad.len(), 2, "{said}");
    assert!(
        bad[0].starts_with("bad: aspstate-layout: its CRC-32 is "),
        "{said}"
    );
    assert!(
        bad[1].contains("which layout it is cannot be told without its `aspstate-layout`"),
        "{said}"
    );
}
