//! The sample (`samples/opencode/`, made by OpenCode 1.18.33) read as its EXPECTED.md says.

use std::collections::BTreeMap;

use asp_format::blob::{BlobSource, MemoryStore};
use asp_format::progress::Quiet;
use serde_json::Value;

use super::*;
use crate::harness::{Home, ReadOptions};
use crate::kit::report::Diagnostics;

fn sample() -> Home {
    Home::at(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/opencode"))
}

const KINDS: [&str; 6] = [
    "user_message_chunk",
    "agent_thought_chunk",
    "agent_message_chunk",
    "tool_call",
    "tool_call_update",
    "plan",
];

fn read_all(home: &Home) -> (Vec<Session>, MemoryStore, Diagnostics) {
    let d = Diagnostics::new();
    let survey = OpenCode
        .survey(&SurveyContext {
            home,
            diagnostics: &d,
        })
        .unwrap();
    let blobs = MemoryStore::new();
    let ctx = SessionContext {
        home,
        blobs: &blobs,
        diagnostics: &d,
        progress: &Quiet,
        options: ReadOptions::default(),
    };
    let mut out = Vec::new();
    for e in &survey.sessions {
        out.extend(OpenCode.read_session(&ctx, e).unwrap());
    }
    (out, blobs, d)
}

fn counts(s: &Session, blobs: &MemoryStore) -> [usize; 6] {
    let text = blobs.read_all(&s.updates).unwrap();
    let mut c = [0usize; 6];
    for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let v: Value = serde_json::from_slice(line).unwrap();
        if let Some(i) = KINDS
            .iter()
            .position(|k| v["update"]["sessionUpdate"] == *k)
        {
            c[i] += 1;
        }
    }
    c
}

#[test]
fn the_sample_reads_as_expected_md_says() {
    let home = sample();
    let (sessions, blobs, d) = read_all(&home);
    assert!(d.is_empty(), "{:?}", d.items());
    assert_eq!(sessions.len(), 8);
    let by: BTreeMap<&str, &Session> = sessions.iter().map(|s| (s.id.as_str(), s)).collect();
    let expect: [(&str, &str, [usize; 6]); 8] = [
        (
            "ses_dcbe29379ffe7EA91rytPF0rq2",
            "Fix discount codes in checkout total",
            [2, 2, 3, 10, 10, 3],
        ),
        (
            "ses_dcbe26931ffe4oHq3LvtNHeEkH",
            "README logo",
            [2, 1, 2, 1, 1, 0],
        ),
        (
            "ses_dcbe2625dffeon9jAGX5j0o9Kz",
            "Find untested shop code",
            [1, 0, 2, 1, 1, 0],
        ),
        (
            "ses_dcbe260acffer3QV3aBzBoeP5p",
            "Find untested code (@explore subagent)",
            [1, 0, 1, 2, 2, 0],
        ),
        (
            "ses_dcbe25720ffePQA8vq5bct6Xvh",
            "Rename total_cents to cart_total",
            [2, 0, 2, 4, 4, 0],
        ),
        (
            "ses_dcbe23199ffeRfJ0vonjK4YnIf",
            "Explain deploy.sh",
            [3, 1, 3, 2, 2, 0],
        ),
        (
            "ses_dcbe22049ffeQ1g6jkD2LsynL4",
            "Check todos and nightly backup",
            [2, 0, 1, 3, 3, 0],
        ),
        (
            "ses_dcbe208e2ffeMHTQ6GSyj1unVK",
            "Reply to Sam about the invoice",
            [1, 0, 1, 0, 0, 0],
        ),
    ];
    for (id, title, c) in expect {
        let s = by[id];
        assert_eq!(s.title, title, "{id}");
        assert_eq!(counts(s, &blobs), c, "{id}");
        assert!(
            s.native.as_ref().is_some_and(|n| !n.files.is_empty()),
            "{id}"
        );
    }
    // The sub-agent knows its parent; the task call names its child.
    let child = by["ses_dcbe260acffer3QV3aBzBoeP5p"];
    assert_eq!(
        crate::kit::meta::parent_id(child.meta.as_ref()),
        Some("ses_dcbe2625dffeon9jAGX5j0o9Kz")
    );
    let s5 = by["ses_dcbe23199ffeRfJ0vonjK4YnIf"].meta.as_ref().unwrap();
    assert!(
        s5["opencode"]["compaction"][0]["summary"]
            .as_str()
            .unwrap()
            .starts_with("## Goal")
    );
    let s4 = by["ses_dcbe25720ffePQA8vq5bct6Xvh"].meta.as_ref().unwrap();
    assert_eq!(s4["opencode"]["revertedMessages"], 3);
}
