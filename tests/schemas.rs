//! The JSON Schemas in spec/schemas/ describe what the tools really write: the sample bundle's
//! layout and manifest, `asp export`'s output and the import answer all validate, and
//! hand-made wrong documents do not.

use std::fs;

use crate::support::*;
use serde_json::{Value, json};

pub(crate) fn schema(name: &str) -> jsonschema::Validator {
    let path = root()
        .join("spec/schemas")
        .join(format!("{name}.schema.json"));
    let s: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    jsonschema::validator_for(&s).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub(crate) fn assert_valid(v: &jsonschema::Validator, doc: &Value, what: &str) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

/// The entries of the sample state packed in layout 1.0.0.
fn sample_entries() -> Vec<(String, Vec<u8>)> {
    entries(&fs::read(root().join("tests/fixtures/layout-1/state.aspstate")).unwrap())
}

#[test]
fn the_layout_1_bundle_validates() {
    let e = sample_entries();
    let layout: Value = serde_json::from_slice(&e[0].1).unwrap();
    assert_valid(&schema("layout"), &layout, "aspstate-layout");
    let manifest: Value = serde_json::from_slice(&e[1].1).unwrap();
    assert_valid(&schema("manifest"), &manifest, "manifest.json");
}

#[test]
fn the_sample_bundle_validates() {
    let e = entries(&fs::read(samples().join("state.aspstate")).unwrap());
    let get = |name: &str| -> Vec<u8> {
        e.iter()
            .find(|(n, _)| n == name)
            .unwrap_or_else(|| panic!("no {name}"))
            .1
            .clone()
    };
    let layout: Value = serde_json::from_slice(&get("aspstate-layout")).unwrap();
    assert_valid(&schema("layout"), &layout, "aspstate-layout");
    let index: Value = serde_json::from_slice(&get("index.json")).unwrap();
    assert_valid(&schema("index"), &index, "index.json");
    let root_digest = index["manifests"][0]["digest"].as_str().unwrap();
    let image: Value =
        serde_json::from_slice(&get(&format!("blobs/sha256/{}", &root_digest[7..]))).unwrap();
    assert_valid(&schema("image-manifest"), &image, "the image manifest");
    for (media, name) in [
        ("application/vnd.asp.state.manifest.v1+json", "manifest"),
        ("application/vnd.asp.layer-table.v1+json", "layer-table"),
    ] {
        let layer = image["layers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|l| l["mediaType"].as_str().unwrap().starts_with(media))
            .unwrap();
        let mut bytes = get(&format!(
            "blobs/sha256/{}",
            &layer["digest"].as_str().unwrap()[7..]
        ));
        if layer["mediaType"].as_str().unwrap().ends_with("+zstd") {
            let size = zstd_size(&bytes);
            bytes = asp_format::bundle::layers::decompress(&bytes, None, size).unwrap();
        }
        let doc: Value = serde_json::from_slice(&bytes).unwrap();
        assert_valid(&schema(name), &doc, media);
    }
}

/// The content size a zstd frame header states (Frame_Content_Size of RFC 8878).
pub(crate) fn zstd_size(frame: &[u8]) -> u64 {
    let fhd = frame[4];
    let single = fhd & 0x20 != 0;
    let fcs_flag = fhd >> 6;
    let at = 5 + usize::from(!single) + [0, 1, 2, 4][usize::from(fhd & 3)];
    let n = match (fcs_flag, single) {
        (0, true) => 1,
        (0, false) => panic!("no content size"),
        (1, _) => 2,
        (2, _) => 4,
        _ => 8,
    };
    let mut v = 0u64;
    for (i, b) in frame[at..at + n].iter().enumerate() {
        v |= u64::from(*b) << (8 * i);
    }
    if n == 2 { v + 256 } else { v }
}

#[test]
fn export_output_validates() {
    let out = asp()
        .arg("export")
        .arg(samples().join("state.aspstate"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&schema("export"), &v, "asp export");
}

#[test]
fn the_import_answer_validates() {
    let dir = tmp();
    let out = unpack_to_dir(samples().join("state.aspstate"), dir.path().join("d"))
        .arg("--json")
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_valid(&schema("import-answer"), &v, "asp-unpack --json");
    assert_valid(
        &schema("import-answer"),
        &json!({"taken": ["sessions", "instructions"], "notTaken": [{"kind": "memory", "reason": "this agent keeps no memory"}], "sessions": {"sess_789xyz": "sess_a1b2c3"}}),
        "the seed's example",
    );
}

#[test]
fn wrong_documents_do_not_validate() {
    let m = schema("manifest");
    let e = sample_entries();
    let good: Value = serde_json::from_slice(&e[1].1).unwrap();
    for (path, bad) in [
        ("/schemaVersion", json!(2)),
        ("/state/sessions/0/updates/digest", json!("sha256:ABC")),
        ("/state/skills/0/files/0/path", json!("../escape")),
        ("/state/tools/0/type", json!("ws")),
        (
            "/state/memory/2/text",
            json!({"digest": format!("sha256:{}", "0".repeat(64)), "size": 1}),
        ),
        ("/state/settings/model", json!(3)),
    ] {
        let mut doc = good.clone();
        let (parent, key) = path.rsplit_once('/').unwrap();
        let slot = doc.pointer_mut(parent).unwrap_or_else(|| panic!("{path}"));
        match slot {
            Value::Object(o) => {
                o.insert(key.to_owned(), bad.clone());
            }
            Value::Array(a) => a[key.parse::<usize>().unwrap()] = bad.clone(),
            _ => panic!("{path}"),
        }
        assert!(!m.is_valid(&doc), "{path} = {bad} was accepted");
    }
    assert!(!schema("layout").is_valid(
        &json!({"layoutVersion": "6.0.0", "mediaType": "application/vnd.asp.state.v1+zip"})
    ));
    assert!(!schema("layer-table").is_valid(&json!({"schemaVersion": 1, "mediaType": "application/vnd.asp.layer-table.v1+json",
        "blobs": {format!("sha256:{}", "0".repeat(64)): {"layer": format!("sha256:{}", "1".repeat(64)), "size": 3, "encoding": "gzip"}}})));
    assert!(!schema("export").is_valid(&json!({"state": {"skills": [{"name": "a", "files": [{"path": "x", "text": "t", "base64": "dA=="}]}]}})));
}
