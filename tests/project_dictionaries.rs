//! Layout 4 (spec/aspstate.md §4.1): a Claude Code home whose projects have transcripts of a
//! MiB or more packs with project dictionaries, and what reads bundles reads it: `asp verify`,
//! the directory form (which packs back to the same bytes), one session by id, and the `zstd`
//! command line alone.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use asp_format::bundle::Bundle;
use asp_format::bundle::oci::{DICTIONARY_ANNOTATION, DICTIONARY_LAYER};

use crate::support::*;

/// The benchmark's generator of Claude Code homes (the tests of layout 5 use it too).
#[path = "../cli/benches/stores/claude.rs"]
#[allow(dead_code)]
pub(crate) mod generator;

/// A generated Claude Code home of about 12 MB of transcripts (the benchmark's generator):
/// enough that some projects have a transcript of a MiB or more.
pub fn long_claude_home(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    generator::generate(&home, 12 << 20, 1);
    home
}

/// The layers of a bundle by digest, unzipped under `dir`.
fn unzipped(bundle: &Path, dir: &Path) -> PathBuf {
    let ok = Command::new("unzip")
        .arg("-q")
        .arg(bundle)
        .arg("-d")
        .arg(dir)
        .status()
        .unwrap();
    assert!(ok.success());
    dir.join("blobs/sha256")
}

/// `zstd -d` of `layer` into `out`, against `dictionary` when given: what a person without
/// asp types.
fn zstd_decode(layer: &Path, dictionary: Option<&Path>, out: &Path) {
    let mut cmd = Command::new("zstd");
    cmd.args(["-q", "-d", "-f", "-o"]).arg(out);
    if let Some(d) = dictionary {
        cmd.arg("-D").arg(d);
    }
    let o = cmd.arg(layer).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn a_home_with_long_transcripts_packs_to_layout_4_and_every_reader_takes_it() {
    let t = tmp();
    let home = long_claude_home(t.path());
    let bundle = t.path().join("home.aspstate");
    pack_home("claude-code", &home, &bundle)
        .arg("-q")
        .assert()
        .success();
    let b = Bundle::open(&bundle).unwrap();
    assert_eq!(b.layout().layout_version, "4.0.0");
    let image = b.image_manifest().unwrap().clone();
    let dictionaries: Vec<_> = image
        .layers
        .iter()
        .filter(|l| l.media_type.starts_with(DICTIONARY_LAYER))
        .collect();
    assert!(!dictionaries.is_empty(), "no project has a dictionary");
    asp().arg("verify").arg(&bundle).assert().success();

    // The documents are as the schemas say: the marker, the image manifest, every table.
    let entries = entries(&fs::read(&bundle).unwrap());
    let get = |name: &str| &entries.iter().find(|(n, _)| n == name).unwrap().1;
    let json = |bytes: &[u8]| serde_json::from_slice::<serde_json::Value>(bytes).unwrap();
    let valid = |name: &str, doc: &serde_json::Value| {
        crate::schemas::assert_valid(&crate::schemas::schema(name), doc, name)
    };
    valid("layout", &json(get("aspstate-layout")));
    valid(
        "image-manifest",
        &json(get(&format!("blobs/sha256/{}", b.digest().hex()))),
    );
    let mut sized = 0;
    for l in image
        .layers
        .iter()
        .filter(|l| l.media_type.contains("layer-table"))
    {
        let stored = get(&format!("blobs/sha256/{}", l.digest.hex()));
        let table = match l.media_type.ends_with("+zstd") {
            true => {
                let size = crate::schemas::zstd_size(stored);
                json(&asp_format::bundle::layers::decompress(stored, None, size).unwrap())
            }
            false => json(stored),
        };
        valid("layer-table", &table);
        sized += table["blobs"]
            .as_object()
            .unwrap()
            .values()
            .filter(|e| e.get("bodySize").is_some())
            .count();
    }
    assert!(sized > 0, "no table gives a dictionary's size");

    // zstd alone: the dictionary, a transcript against it, its stream against the transcript.
    let blobs = unzipped(&bundle, &t.path().join("x"));
    let against = |layer: String| {
        image.layers.iter().filter(move |l| {
            l.annotations
                .as_ref()
                .and_then(|a| a.get(DICTIONARY_ANNOTATION))
                .is_some_and(|d| *d == layer)
        })
    };
    let dict = dictionaries[0];
    let transcript = against(dict.digest.to_string())
        .find(|t| against(t.digest.to_string()).next().is_some())
        .expect("a transcript against the dictionary, with a stream against it");
    let stream = against(transcript.digest.to_string()).next().unwrap();
    let (d, tr, st) = (
        t.path().join("dictionary"),
        t.path().join("transcript"),
        t.path().join("stream"),
    );
    zstd_decode(&blobs.join(dict.digest.hex()), None, &d);
    let length = fs::metadata(&d).unwrap().len();
    assert!(
        asp_format::bundle::DICTIONARY_LENGTHS.contains(&length),
        "a dictionary of {length} bytes"
    );
    zstd_decode(&blobs.join(transcript.digest.hex()), Some(&d), &tr);
    zstd_decode(&blobs.join(stream.digest.hex()), Some(&tr), &st);
    assert!(fs::read(&st).unwrap().starts_with(b"{\"sessionId\":"));
    // The transcript is one of the home's, byte for byte.
    let text = fs::read(&tr).unwrap();
    assert!(
        files_under(&home)
            .iter()
            .any(|f| fs::read(f).unwrap() == text),
        "the decoded transcript is not a file of the home"
    );

    // The directory form packs back to the same bundle, though nothing predicted the
    // dictionaries when it was read.
    assert_packs_back_from_dir(&bundle, t.path());

    // One session whose transcript is two layers deep, by id: exported and unpacked alone.
    let state = &b.manifest().state;
    let session = state
        .sessions
        .iter()
        .flatten()
        .find(|s| {
            s.native.iter().flat_map(|n| &n.files).any(|f| {
                b.layer_of(&f.content.digest)
                    .is_some_and(|(_, d)| d.is_some())
            })
        })
        .expect("a session whose transcript has a dictionary");
    let export: serde_json::Value = serde_json::from_slice(&succeeds(
        asp()
            .args(["export"])
            .arg(&bundle)
            .args(["--session", session.id.as_str()]),
    ))
    .unwrap();
    let exported = export["state"]["sessions"].as_array().unwrap();
    assert_eq!(exported[0]["id"], session.id.as_str(), "{export}");
    assert!(
        exported[1..]
            .iter()
            .all(|s| s["_meta"]["asp"]["parent"]["sessionId"] == session.id.as_str()),
        "only the session and its subagents"
    );
    let to = new_home(t.path().join("to"));
    asp_unpack()
        .arg(&bundle)
        .args([
            "--session",
            session.id.as_str(),
            "--to",
            "claude-code",
            "-q",
            "--home",
        ])
        .arg(&to)
        .assert()
        .success();
    let file = &session.native.as_ref().unwrap().files[0];
    let restored = fs::read(to.join(file.path.as_str())).unwrap();
    assert_eq!(asp_format::Descriptor::of(&restored), file.content);

    // A dictionary's `bodySize` is a MUST for every reader, not only for `asp verify` (spec
    // conformance trial helper-132, 3: `asp export` took a table a byte short); one at the
    // top of the range is damage too, not an overflow.
    for wrong in [|n: u64| n - 1, |_| u64::MAX] {
        let crafted = t.path().join("crafted.aspstate");
        fs::write(
            &crafted,
            crate::bundle_cli::with_documents_and(
                &bundle,
                |docs| {
                    for doc in docs.values_mut() {
                        for e in doc
                            .get_mut("blobs")
                            .and_then(serde_json::Value::as_object_mut)
                            .into_iter()
                            .flat_map(|b| b.values_mut())
                        {
                            if let Some(n) = e.get("bodySize").and_then(serde_json::Value::as_u64) {
                                e["bodySize"] = serde_json::Value::from(wrong(n));
                            }
                        }
                    }
                },
                |_, _| {},
            ),
        )
        .unwrap();
        for args in [
            &["export"][..],
            &["export", "--session", session.id.as_str()],
            &["verify"],
        ] {
            asp().args(args).arg(&crafted).assert().code(4);
        }
    }
}
