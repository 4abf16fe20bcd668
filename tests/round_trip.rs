//! Property tests of the round trip: any state packs to the same bytes however it arrives,
//! and bundle → directory → bundle gives those bytes back.

use std::io::Cursor;

use asp_convert::dir;
use asp_format::blob::{BlobSource, MemoryStore};
use asp_format::bundle::{self, Bundle, WriteOptions};
use asp_format::export::{ExportResponse, ExportState};
use asp_format::progress::Quiet;
use asp_format::state::State;
use proptest::prelude::*;
use serde_json::{Value, json};

fn bundle_bytes(state: &State, blobs: &dyn BlobSource) -> Vec<u8> {
    bundle::write_to(
        Cursor::new(Vec::new()),
        state,
        blobs,
        &WriteOptions::default(),
        &Quiet,
    )
    .unwrap()
    .0
    .into_inner()
}

fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-f0-9]{8}-[a-f0-9]{4}-4[a-f0-9]{3}-[a-f0-9]{4}-[a-f0-9]{12}",
        "[a-z]{1,8}:[0-9]{1,4}",
        "[^\\p{C}]{1,24}",
    ]
}

fn text() -> impl Strategy<Value = String> {
    "(\\PC|\n|\t){0,80}"
}

fn update(session: String) -> impl Strategy<Value = Value> {
    prop_oneof![
        text().prop_map(|t| json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": t}})),
        text().prop_map(|t| json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": t}, "futureField": [1, 2.5, null]})),
        ("[a-z0-9_]{1,12}", text()).prop_map(|(id, t)| json!({"sessionUpdate": "tool_call", "toolCallId": id, "title": t, "kind": "execute", "rawInput": {"cmd": t}})),
        (0u64..1_000_000, 1u64..1_000_000).prop_map(|(u, s)| json!({"sessionUpdate": "usage_update", "used": u, "size": s})),
    ]
    .prop_map(move |u| json!({"sessionId": session.clone(), "update": u}))
}

fn session() -> impl Strategy<Value = Value> {
    (
        id(),
        text(),
        proptest::option::of("/home/[a-z]{1,8}/[a-z]{1,8}"),
    )
        .prop_flat_map(|(id, title, cwd)| {
            let updates = proptest::collection::vec(update(id.clone()), 0..6);
            (Just(id), Just(title), Just(cwd), updates)
        })
        .prop_map(|(id, title, cwd, updates)| {
            let mut s =
                json!({"id": id, "title": title, "harness": "claude-code", "updates": updates});
            if let Some(c) = cwd {
                s["cwd"] = json!(c);
                s["updatedAt"] = json!("2026-11-29T10:00:09.000Z");
                s["_meta"] = json!({"asp": {"parent": {"sessionId": "p", "toolCallId": "t"}}, "claudeCode": {"n": [1, 2.5]}});
            }
            s
        })
}

fn file() -> impl Strategy<Value = Value> {
    (
        "[a-z]{1,6}(/[a-z]{1,6}){0,2}\\.(md|sh|py|png)",
        prop_oneof![
            text().prop_map(|t| json!({"text": t})),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(|b| {
                use base64::Engine as _;
                json!({"base64": base64::engine::general_purpose::STANDARD.encode(b)})
            }),
        ],
        any::<bool>(),
    )
        .prop_map(|(path, mut body, exec)| {
            body["path"] = json!(path);
            if exec {
                body["executable"] = json!(true);
            }
            body
        })
}

/// A random export-form state, with distinct ids, names and paths.
fn state() -> impl Strategy<Value = Value> {
    (
        proptest::option::of(proptest::collection::vec(session(), 0..4)),
        proptest::option::of(text()),
        proptest::option::of(proptest::collection::btree_map("[a-z][a-z0-9-]{0,10}", proptest::collection::vec(file(), 1..4), 0..3)),
        proptest::option::of(proptest::collection::btree_map("[a-z]{1,8}", ("[a-z/]{1,12}", text()), 0..3)),
        proptest::option::of(proptest::collection::btree_map("[a-z]{1,8}(/[a-z]{1,8})?\\.md", proptest::option::of(text()), 0..4)),
        proptest::option::of(proptest::collection::btree_map("[a-z_]{1,10}", prop_oneof![any::<bool>().prop_map(Value::from), "[a-z0-9-]{1,10}".prop_map(Value::from)], 0..4)),
    )
        .prop_map(|(sessions, instructions, skills, tools, memory, settings)| {
            let mut st = serde_json::Map::new();
            if let Some(mut s) = sessions {
                let mut seen = std::collections::BTreeSet::new();
                s.retain(|x| seen.insert(x["id"].as_str().unwrap().to_owned()));
                st.insert("sessions".into(), json!(s));
            }
            if let Some(t) = instructions {
                st.insert("instructions".into(), json!({"text": t}));
            }
            if let Some(skills) = skills {
                let list: Vec<Value> = skills
                    .into_iter()
                    .map(|(name, mut files)| {
                        let mut seen = std::collections::BTreeSet::new();
                        files.retain(|f| seen.insert(f["path"].as_str().unwrap().to_owned()));
                        if name.len() % 2 == 0 {
                            json!({"name": name, "files": files, "_meta": {"asp": {"note": name}}})
                        } else {
                            json!({"name": name, "files": files})
                        }
                    })
                    .collect();
                st.insert("skills".into(), json!(list));
            }
            if let Some(tools) = tools {
                let list: Vec<Value> = tools
                    .into_iter()
                    .map(|(name, (cmd, v))| json!({"name": name, "command": cmd, "args": [v.clone()], "env": [{"name": "TOKEN", "value": v}]}))
                    .collect();
                st.insert("tools".into(), json!(list));
            }
            if let Some(notes) = memory {
                let list: Vec<Value> = notes
                    .into_iter()
                    .map(|(path, t)| match t {
                        Some(t) => json!({"path": path, "origin": {"harness": "gemini", "path": ".gemini/GEMINI.md#m", "project": "/home/dev/shop"}, "text": t}),
                        None => json!({"path": path, "origin": {}, "deleted": true}),
                    })
                    .collect();
                st.insert("memory".into(), json!(list));
            }
            if let Some(s) = settings {
                st.insert("settings".into(), Value::Object(s.into_iter().collect()));
            }
            json!({"state": st})
        })
}

/// The state of an export-form value, plus native files on every session with a working
/// directory (the export form has none, bundles and the directory form do); `None` for
/// states the model refuses (duplicate paths and the like), which proptest then discards.
fn load(v: &Value, store: &MemoryStore) -> Option<State> {
    use asp_format::blob::BlobSink;
    use asp_format::state::{FileEntry, Native};
    let parsed: ExportResponse = serde_json::from_value(v.clone()).ok()?;
    let mut state = parsed.state.into_state(store).ok()?;
    for s in state.sessions.iter_mut().flatten() {
        if s.cwd.is_some() {
            let transcript = format!("{{\"sessionId\":{:?}}}\n", s.id.as_str());
            s.native = Some(Native {
                harness: "claude-code".parse().unwrap(),
                files: vec![
                    FileEntry {
                        path: ".claude/projects/-x/a.jsonl".parse().unwrap(),
                        executable: false,
                        content: store.put(transcript.as_bytes()).unwrap(),
                    },
                    FileEntry {
                        path: ".claude/projects/-x/a/subagents/agent-1.jsonl"
                            .parse()
                            .unwrap(),
                        executable: false,
                        content: store.put(b"\xff not utf-8\n").unwrap(),
                    },
                ],
            });
        }
    }
    let mut s = state.clone();
    s.normalize();
    s.validate().ok()?;
    Some(state)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn bundle_directory_bundle_is_byte_identical(v in state()) {
        let store = MemoryStore::new();
        let state = load(&v, &store);
        prop_assume!(state.is_some());
        let state = state.unwrap();
        let first = bundle_bytes(&state, &store);

        let work = tempfile::tempdir().unwrap();
        let path = work.path().join("a.aspstate");
        std::fs::write(&path, &first).unwrap();
        let bundle = Bundle::open(&path).unwrap();
        let plain = work.path().join("plain");
        dir::write(&plain, &bundle.manifest().state, &bundle, false, &Quiet).unwrap();

        let again = MemoryStore::new();
        let reread = dir::read(&plain, asp_format::KindSet::ALL, &again, &Quiet).unwrap();
        prop_assert_eq!(reread.kinds(), state.kinds());
        let second = bundle_bytes(&reread, &again);
        prop_assert!(first == second, "bundle changed through the directory form");
    }

    #[test]
    fn order_of_arrival_does_not_change_the_bytes(v in state()) {
        let store = MemoryStore::new();
        let state = load(&v, &store);
        prop_assume!(state.is_some());
        let state = state.unwrap();
        let mut reversed = state.clone();
        if let Some(s) = &mut reversed.sessions { s.reverse(); }
        if let Some(s) = &mut reversed.skills {
            s.reverse();
            for k in s.iter_mut() { k.files.reverse(); }
        }
        if let Some(t) = &mut reversed.tools { t.reverse(); }
        if let Some(m) = &mut reversed.memory { m.reverse(); }
        prop_assert_eq!(bundle_bytes(&state, &store), bundle_bytes(&reversed, &store));
    }

    #[test]
    fn the_export_form_survives_a_bundle(v in state()) {
        let store = MemoryStore::new();
        let state = load(&v, &store);
        prop_assume!(state.is_some());
        let state = state.unwrap();
        let bytes = bundle_bytes(&state, &store);
        let work = tempfile::tempdir().unwrap();
        let path = work.path().join("a.aspstate");
        std::fs::write(&path, &bytes).unwrap();
        let bundle = Bundle::open(&path).unwrap();
        let from_bundle = ExportState::from_state(&bundle.manifest().state, &bundle).unwrap();
        let mut normalized = state.clone();
        normalized.normalize();
        let direct = ExportState::from_state(&normalized, &store).unwrap();
        prop_assert_eq!(
            serde_json::to_value(ExportResponse { state: from_bundle }).unwrap(),
            serde_json::to_value(ExportResponse { state: direct }).unwrap()
        );
    }
}
