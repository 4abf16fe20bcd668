//! The JSON Schemas in spec/schemas/ describe what the tools really write: the sample bundle's
//! layout and manifest, `asp export`'s output and the import answer all validate, and
//! hand-made wrong documents do not.

use std::fs;

use crate::support::*;
use serde_json::{Value, json};

fn schema(name: &str) -> jsonschema::Validator {
    let path = root()
        .join("spec/schemas")
        .join(format!("{name}.schema.json"));
    let s: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    jsonschema::validator_for(&s).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn assert_valid(v: &jsonschema::Validator, doc: &Value, what: &str) {
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{what}: {errors:#?}");
}

fn sample_entries() -> Vec<(String, Vec<u8>)> {
    entries(&fs::read(samples().join("state.aspstate")).unwrap())
}

#[test]
fn the_sample_bundle_validates() {
    let e = sample_entries();
    let layout: Value = serde_json::from_slice(&e[0].1).unwrap();
    assert_valid(&schema("layout"), &layout, "aspstate-layout");
    let manifest: Value = serde_json::from_slice(&e[1].1).unwrap();
    assert_valid(&schema("manifest"), &manifest, "manifest.json");
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
    let out = asp_unpack()
        .arg(samples().join("state.aspstate"))
        .arg("--to-dir")
        .arg(dir.path().join("d"))
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
        &json!({"layoutVersion": "2.0.0", "mediaType": "application/vnd.asp.state.v1+zip"})
    ));
    assert!(!schema("export").is_valid(&json!({"state": {"skills": [{"name": "a", "files": [{"path": "x", "text": "t", "base64": "dA=="}]}]}})));
}
