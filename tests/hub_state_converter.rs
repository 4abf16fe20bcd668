//! The agent-state methods through a harness converter: the converter says what is
//! advertised, describe and export read the native store, import writes it and maps each
//! session's old id to its new one.
//!
//! The converter is a real one over a plain state directory (`crate::support::dir_harness`)
//! whose capabilities each test chooses; the harness converters' own hub paths are tested by
//! the contract suite and the scripted agent.

use std::path::Path;
use std::sync::Arc;

use crate::support::dir_harness::{DirHarness, STORE};
use crate::support::hub::{TestClient, options, with_hub};
use asp_convert::Home;
use asp_format::blob::MemoryStore;
use asp_format::progress::Quiet;
use asp_hub::Converter;
use asp_hub::HubOptions;
use asp_protocol::{KindSet, StateKind};
use asp_scripted_agent::{Options, agent_with_handle};
use serde_json::{Value, json};

fn kinds(list: &[StateKind]) -> KindSet {
    list.iter().copied().collect()
}

fn harness() -> DirHarness {
    DirHarness {
        export: kinds(&[
            StateKind::Sessions,
            StateKind::Instructions,
            StateKind::Settings,
        ]),
        import: kinds(&[StateKind::Sessions, StateKind::Instructions]),
    }
}

fn with_converter(home: &Path) -> HubOptions {
    HubOptions {
        converter: Some(Converter::Harness {
            harness: Arc::new(harness()),
            home: Home::at(home),
        }),
        ..options()
    }
}

fn line(sid: &str, text: &str) -> Value {
    json!({"sessionId": sid, "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}}})
}

/// A native store with two sessions, instructions, settings and a note (which this converter
/// does not export).
fn store(home: &Path) {
    let root = home.join(STORE);
    std::fs::create_dir_all(root.join("sessions")).unwrap();
    std::fs::create_dir_all(root.join("memory")).unwrap();
    for (id, text) in [("s0", "kept"), ("s1", "original")] {
        std::fs::write(
            root.join(format!("sessions/{id}.json")),
            json!({"id": id, "title": format!("Session {id}"), "cwd": "/home/dev/shop"})
                .to_string(),
        )
        .unwrap();
        std::fs::write(
            root.join(format!("sessions/{id}.jsonl")),
            format!("{}\n", line(id, text)),
        )
        .unwrap();
    }
    std::fs::write(root.join("AGENTS.md"), "# Rules\nBe brief.\n").unwrap();
    std::fs::write(
        root.join("settings.json"),
        r#"{"model": "opus", "thinking": true}"#,
    )
    .unwrap();
    std::fs::write(root.join("memory/prefs.md"), "Use tabs.\n").unwrap();
}

async fn initialized(c: &TestClient) -> Value {
    c.initialize().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_converter_decides_what_agent_state_is_advertised() {
    let home = tempfile::tempdir().unwrap();
    // Even in front of an agent that cannot replay: the converter reads the store itself.
    let (agent, _log) = agent_with_handle(Options {
        load_session: false,
        ..Options::default()
    });
    with_hub(with_converter(home.path()), agent, async |c| {
        let init = initialized(&c).await;
        assert_eq!(
            init["agentCapabilities"]["_meta"]["asp"],
            json!({
                "steering": {"busy": ["queue", "interrupt"]},
                "agentState": {"export": ["sessions", "instructions", "settings"], "import": ["sessions", "instructions"]}
            })
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_and_export_read_the_native_store() {
    let home = tempfile::tempdir().unwrap();
    store(home.path());
    let (agent, log) = agent_with_handle(Options::default());
    with_hub(with_converter(home.path()), agent, async |c| {
        initialized(&c).await;
        assert_eq!(
            c.request("_asp/state/describe", json!({})).await?,
            json!({"kinds": {"sessions": 2, "instructions": 1, "settings": 2}}),
            "what the converter exports, counted; memory is not its to give"
        );
        let answer = c
            .request("_asp/state/export", json!({"kinds": ["sessions", "instructions", "memory"]}))
            .await?;
        let state = answer["state"].as_object().unwrap();
        assert_eq!(state.keys().collect::<Vec<_>>(), ["sessions", "instructions"]);
        assert_eq!(state["instructions"], json!({"text": "# Rules\nBe brief.\n"}));
        assert_eq!(
            state["sessions"][1],
            json!({"id": "s1", "title": "Session s1", "cwd": "/home/dev/shop", "updates": [line("s1", "original")]})
        );
        c.sync().await;
        assert!(
            log.events().iter().all(|e| e.get("load").is_none() && e.get("list").is_none()),
            "with a converter nothing is replayed"
        );
        Ok(())
    })
    .await;
}

/// A home with no store yet (where a first import will write) holds nothing: describe counts
/// no kind and export gives none, rather than failing as a store that cannot be read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_home_without_a_store_yet_holds_nothing() {
    let home = tempfile::tempdir().unwrap();
    let (agent, _log) = agent_with_handle(Options::default());
    with_hub(with_converter(home.path()), agent, async |c| {
        initialized(&c).await;
        assert_eq!(
            c.request("_asp/state/describe", json!({})).await?,
            json!({"kinds": {}})
        );
        assert_eq!(
            c.request(
                "_asp/state/export",
                json!({"kinds": ["sessions", "instructions"]})
            )
            .await?,
            json!({"state": {}})
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_writes_through_the_converter_and_maps_each_sessions_old_id_to_its_new_one() {
    let home = tempfile::tempdir().unwrap();
    store(home.path());
    let (agent, _log) = agent_with_handle(Options::default());
    with_hub(with_converter(home.path()), agent, async |c| {
        initialized(&c).await;
        let state = json!({
            "sessions": [
                {"id": "s0", "title": "Session s0", "cwd": "/home/dev/shop", "updates": [line("s0", "kept")]},
                {"id": "s1", "title": "Elsewhere", "harness": "gemini", "updates": [line("s1", "changed elsewhere")]},
                {"id": "s2", "title": "New", "updates": [line("s2", "new")]}
            ],
            "instructions": {"text": "# Rules\nBe briefer.\n"},
            "memory": [{"path": "prefs.md", "origin": {"harness": "gemini"}, "text": "Use spaces."}]
        });
        let answer = c.request("_asp/state/import", json!({"state": state})).await?;
        assert_eq!(
            answer,
            json!({
                "taken": ["sessions", "instructions"],
                // Kinds the converter does not import are answered by the hub, in words.
                "notTaken": [{"kind": "memory", "reason": "the dirstate converter does not import memory"}],
                "sessions": {"s0": "s0", "s1": "s1~dirstate", "s2": "s2"}
            })
        );

        let written = asp_convert::dir::read(&home.path().join(STORE), KindSet::ALL, &MemoryStore::new(), &Quiet).unwrap();
        let ids: Vec<&str> = written.sessions.iter().flatten().map(|s| s.id.as_str()).collect();
        assert_eq!(ids, ["s0", "s1", "s1~dirstate", "s2"], "nothing clobbered");
        let exported = c.request("_asp/state/export", json!({"kinds": ["sessions", "instructions"]})).await?;
        assert_eq!(exported["state"]["instructions"]["text"], "# Rules\nBe briefer.\n");
        let moved = &exported["state"]["sessions"][2];
        assert_eq!(moved["id"], "s1~dirstate");
        assert_eq!(moved["updates"], json!([line("s1~dirstate", "changed elsewhere")]));
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_and_export_are_refused_while_a_turn_runs() {
    let home = tempfile::tempdir().unwrap();
    store(home.path());
    let (agent, _log) = agent_with_handle(Options::default());
    with_hub(with_converter(home.path()), agent, async |c| {
        initialized(&c).await;
        let sid = c.new_session().await;
        let a = c.prompt(&sid, "hold A", None);
        c.said(&sid, "A started").await;
        for (method, params) in [
            (
                "_asp/state/import",
                json!({"state": {"instructions": {"text": "x"}}}),
            ),
            ("_asp/state/export", json!({"kinds": ["instructions"]})),
        ] {
            let e = c.request(method, params).await.unwrap_err();
            assert_eq!(i32::from(e.code), -31002, "{method}");
            assert_eq!(e.data, Some(json!({"method": method, "sessions": [sid]})));
        }
        c.release("A");
        a.await?;
        let taken = c
            .request(
                "_asp/state/import",
                json!({"state": {"instructions": {"text": "x"}}}),
            )
            .await?;
        assert_eq!(taken["taken"], json!(["instructions"]));
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_store_the_converter_cannot_read_is_a_clear_error() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join(STORE), "not a directory").unwrap();
    let (agent, _log) = agent_with_handle(Options::default());
    with_hub(with_converter(home.path()), agent, async |c| {
        initialized(&c).await;
        let e = c
            .request("_asp/state/export", json!({"kinds": ["sessions"]}))
            .await
            .unwrap_err();
        assert_eq!(i32::from(e.code), -31004);
        assert!(
            e.message
                .starts_with("the dirstate converter could not read its store"),
            "{}",
            e.message
        );
        assert_eq!(e.data.unwrap()["harness"], "dirstate");
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_that_is_not_valid_is_refused_as_invalid_params() {
    let home = tempfile::tempdir().unwrap();
    let (agent, _log) = agent_with_handle(Options::default());
    with_hub(with_converter(home.path()), agent, async |c| {
        initialized(&c).await;
        let e = c
            .request(
                "_asp/state/import",
                json!({"state": {"sessions": [
                    {"id": "s0", "title": "T", "updates": [line("s0", "x")]},
                    {"id": "s1", "title": "T", "updates": [line("s1", "x"), line("another", "x")]}
                ]}}),
            )
            .await
            .unwrap_err();
        assert_eq!(i32::from(e.code), -32602);
        let data = e.data.unwrap();
        assert_eq!(
            data["path"], "/state/sessions/1/updates/1",
            "the update at fault"
        );
        assert!(
            data["error"]
                .as_str()
                .unwrap()
                .contains("not the session's id"),
            "{data}"
        );
        assert!(
            e.message
                .starts_with("invalid params at /state/sessions/1/updates/1: ")
        );
        assert!(!home.path().join(STORE).exists(), "nothing written");

        let e = c
            .request(
                "_asp/state/import",
                json!({"state": {"sessions": [
                    {"id": "s0", "title": "T", "updates": []},
                    {"id": "s0", "title": "T", "updates": []}
                ]}}),
            )
            .await
            .unwrap_err();
        assert_eq!(i32::from(e.code), -32602);
        assert_eq!(e.data.as_ref().unwrap()["path"], "/state/sessions");
        assert!(!home.path().join(STORE).exists(), "nothing written");
        Ok(())
    })
    .await;
}

/// A state with several problems is refused naming every one of them (spec/protocol.md §4):
/// those found while reading its entries (a session id that is not allowed, a skill name with
/// a `/`), an update that is another session's, and a duplicate; `path` is the first one's,
/// and each of the others is named with its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_state_with_several_problems_is_refused_naming_every_one() {
    let home = tempfile::tempdir().unwrap();
    let (agent, _log) = agent_with_handle(Options::default());
    with_hub(with_converter(home.path()), agent, async |c| {
        initialized(&c).await;
        let refused = async |state: Value| {
            let e = c
                .request("_asp/state/import", json!({"state": state}))
                .await
                .unwrap_err();
            assert_eq!(i32::from(e.code), -32602);
            let data = e.data.unwrap();
            assert_eq!(
                data.as_object().unwrap().keys().collect::<Vec<_>>(),
                ["error", "path"],
                "{data}"
            );
            let message = e.message;
            (
                data["path"].as_str().unwrap().to_owned(),
                data["error"].as_str().unwrap().to_owned(),
                message,
            )
        };

        // Every entry reads, but two updates are other sessions' and a session is there twice.
        let (path, error, message) = refused(json!({"sessions": [
            {"id": "s0", "title": "T", "updates": [line("s0", "x"), line("another", "x")]},
            {"id": "s1", "title": "T", "updates": [line("s1", "x")]},
            {"id": "s1", "title": "T", "updates": [line("s9", "x")]}
        ]}))
        .await;
        assert_eq!(path, "/state/sessions/0/updates/1", "the first one's");
        assert!(message.starts_with("invalid params at /state/sessions/0/updates/1: "));
        for named in [
            "session \"s0\", update 2: sessionId \"another\" is not the session's id",
            "at /state/sessions/2/updates/0: session \"s1\", update 1: sessionId \"s9\"",
            "at /state/sessions: sessions: session \"s1\" appears more than once",
        ] {
            assert!(error.contains(named), "{named:?} not in {error:?}");
        }

        // Entries that do not read at all, beside the problems of those that do.
        let (path, error, _) = refused(json!({
            "sessions": [
                {"id": "", "title": "T", "updates": []},
                {"id": "s1", "title": "T", "updates": [line("another", "x")]},
                {"id": "s2", "title": "T", "updates": []},
                {"id": "s2", "title": "T", "updates": []}
            ],
            "skills": [{"name": "ok", "files": []}, {"name": "../x", "files": []}]
        }))
        .await;
        assert_eq!(path, "/state/sessions/0", "the first one's");
        for named in [
            "session id \"\" is not allowed: it is empty",
            "at /state/skills/1/name: skill name \"../x\" is not allowed",
            "at /state/sessions/1/updates/0: session \"s1\", update 1: sessionId \"another\"",
            "at /state/sessions: sessions: session \"s2\" appears more than once",
        ] {
            assert!(error.contains(named), "{named:?} not in {error:?}");
        }
        assert!(!home.path().join(STORE).exists(), "nothing written");

        // Many problems: as many as fit, then how many more, never the whole list.
        let sessions: Vec<Value> = (0..200)
            .map(
                |i| json!({"id": format!("s{i}"), "title": "T", "updates": [line("another", "x")]}),
            )
            .collect();
        let (path, error, message) = refused(json!({"sessions": sessions})).await;
        assert_eq!(path, "/state/sessions/0/updates/0");
        let named = 1 + error.matches("; at /state/sessions/").count();
        let more: usize = error
            .rsplit_once("; and ")
            .and_then(|(_, rest)| rest.strip_suffix(" more problems"))
            .unwrap_or_else(|| panic!("no count of the rest: {error:?}"))
            .parse()
            .unwrap();
        assert!(named > 1, "{error:?}");
        assert_eq!(named + more, 200, "{error:?}");
        assert!(
            error.chars().count() <= asp_protocol::methods::MAX_ERROR_CHARS,
            "{} characters",
            error.chars().count()
        );
        assert!(message.len() < 1_000, "{message}");
        assert!(!home.path().join(STORE).exists(), "nothing written");
        Ok(())
    })
    .await;
}

/// Params an import or export cannot parse: -32602 with what is wrong and where (a JSON
/// Pointer into the params), and nothing of the params sent back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn params_that_do_not_parse_are_answered_with_what_and_where_not_echoed() {
    let home = tempfile::tempdir().unwrap();
    let (agent, _log) = agent_with_handle(Options::default());
    let big = "x".repeat(100_000);
    with_hub(with_converter(home.path()), agent, async |c| {
        initialized(&c).await;
        for (method, params, path, error) in [
            (
                "_asp/state/import",
                json!({"state": {"instructions": {"text": big}, "skills": [{"name": "../x", "files": []}]}}),
                "/state/skills/0/name",
                "skill name \"../x\" is not allowed",
            ),
            (
                "_asp/state/import",
                json!({"state": {"instructions": {"text": big}, "sessions": [{"id": "", "title": "T", "updates": []}]}}),
                "/state/sessions/0",
                "session id \"\" is not allowed: it is empty",
            ),
            (
                "_asp/state/import",
                json!({"nostate": 1}),
                "",
                "missing field `state`",
            ),
            (
                "_asp/state/export",
                json!({"kinds": "sessions"}),
                "/kinds",
                "invalid type: string \"sessions\", expected a sequence",
            ),
            ("_asp/state/export", json!({}), "", "missing field `kinds`"),
        ] {
            let e = c.request(method, params).await.unwrap_err();
            assert_eq!(i32::from(e.code), -32602, "{method}");
            let data = e.data.unwrap();
            assert_eq!(
                data.as_object().unwrap().keys().collect::<Vec<_>>(),
                ["error", "path"],
                "{method}: {data}"
            );
            assert_eq!(data["path"], path, "{method}: {data}");
            assert!(
                data["error"].as_str().unwrap().starts_with(error),
                "{method}: {data}"
            );
            assert!(e.message.len() < 200, "{method}: {}", e.message);
        }
        Ok(())
    })
    .await;
}
