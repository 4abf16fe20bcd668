//! The agent-state methods without a converter: sessions exported by replaying them through
//! the agent's own `session/list` + `session/load`, raw, and never shown to the client.

use std::time::Duration;

use crate::support::hub::{TestClient, guarded, options, with_hub};
use asp_protocol::{ExportRequest, KindSet, StateKind};
use asp_scripted_agent::{Options, SeedSession, agent_with_handle};
use serde_json::{Value, json};

fn update(sid: &str, update: Value) -> Value {
    json!({"sessionId": sid, "update": update})
}

/// Conversations as an agent would replay them, with what typed ACP values would lose.
fn seeded() -> Vec<SeedSession> {
    let shop = "sess_789xyz";
    let tg = "telegram:42";
    vec![
        SeedSession {
            session_id: shop.into(),
            cwd: "/home/dev/shop".into(),
            title: Some("Skip the tests".into()),
            updated_at: Some("2026-11-29T17:02:11Z".into()),
            updates: vec![
                update(
                    shop,
                    json!({"sessionUpdate": "user_message_chunk", "messageId": "m1", "content": {"type": "text", "text": "Skip the tests."}}),
                ),
                json!({"sessionId": shop, "update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read",
                       "kind": "other", "status": "pending", "futureField": {"a": [1, 2.5, -0.0]}}, "_meta": {"vendor": {"x": 1}}}),
                update(
                    shop,
                    json!({"sessionUpdate": "future_kind", "anything": [null, true]}),
                ),
                update(
                    shop,
                    json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done. ünïcode ✓ \"quoted\"\n"}}),
                ),
            ],
        },
        SeedSession {
            session_id: tg.into(),
            cwd: "/tmp".into(),
            title: None,
            updated_at: None,
            updates: vec![
                update(
                    tg,
                    json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Fix the deploy script\nplease"}}),
                ),
                update(
                    tg,
                    json!({"sessionUpdate": "session_info_update", "title": "Deploy"}),
                ),
            ],
        },
        SeedSession {
            session_id: "empty".into(),
            cwd: "/".into(),
            title: None,
            updated_at: None,
            updates: vec![],
        },
    ]
}

fn seeded_options() -> Options {
    Options {
        sessions: seeded(),
        ..Options::default()
    }
}

async fn export_raw(c: &TestClient, kinds: Value) -> Result<Value, agent_client_protocol::Error> {
    c.request("_asp/state/export", json!({"kinds": kinds}))
        .await
}

fn events_named<'a>(events: &'a [Value], name: &str) -> Vec<&'a Value> {
    events.iter().filter_map(|e| e.get(name)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_replays_every_session_raw_and_the_client_sees_none_of_it() {
    let (agent, log) = agent_with_handle(seeded_options());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let before = c.seen.len();
        let answer =
            c.cx.send_request(ExportRequest::new(KindSet::EMPTY.with(StateKind::Sessions)))
                .block_task();
        let answer = guarded("the export", answer).await?;
        assert_eq!(c.seen.len(), before, "the replay never reaches the client");

        let state = answer.state();
        assert!(
            state.instructions.is_none() && state.memory.is_none(),
            "only sessions are given"
        );
        let sessions = state.sessions.as_ref().unwrap();
        let ids: Vec<&str> = sessions.iter().map(|s| s.head.id.as_str()).collect();
        assert_eq!(ids, ["empty", "sess_789xyz", "telegram:42"], "as listed");
        for (s, seed) in sessions.iter().zip(["empty", "sess_789xyz", "telegram:42"]) {
            let want: Vec<String> = seeded()
                .into_iter()
                .find(|x| x.session_id == seed)
                .unwrap()
                .updates
                .iter()
                .map(|u| serde_json::to_string(u).unwrap())
                .collect();
            let got: Vec<&str> = s.updates.iter().map(|u| u.get()).collect();
            assert_eq!(got, want, "{seed}: every update as the agent sent it");
        }
        let shop = &sessions[1].head;
        assert_eq!(
            (
                shop.title.as_str(),
                shop.cwd.as_deref(),
                shop.updated_at.as_deref()
            ),
            (
                "Skip the tests",
                Some("/home/dev/shop"),
                Some("2026-11-29T17:02:11Z")
            )
        );
        assert_eq!(
            sessions[2].head.title, "Deploy",
            "an unlisted title comes from the session's own info update"
        );
        assert_eq!(sessions[0].head.title, "");

        let events = log.events();
        assert_eq!(events_named(&events, "load").len(), 3);
        assert_eq!(
            events_named(&events, "close"),
            [
                &json!("empty"),
                &json!("sess_789xyz"),
                &json!("telegram:42")
            ],
            "sessions loaded only for the export are let go"
        );
        let received = log.received();
        let mcp: Vec<&Value> = received
            .iter()
            .filter(|m| m["method"] == "session/load")
            .map(|m| &m["params"])
            .collect();
        assert_eq!(
            mcp[1],
            &json!({"sessionId": "sess_789xyz", "cwd": "/home/dev/shop", "mcpServers": []})
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_counts_the_sessions_listed_across_pages_without_replaying_them() {
    let (agent, log) = agent_with_handle(Options {
        list_page_size: 1,
        ..seeded_options()
    });
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        assert_eq!(
            c.request("_asp/state/describe", json!({})).await?,
            json!({"kinds": {"sessions": 3}})
        );
        assert_eq!(
            c.request("_asp/state/describe", Value::Null).await?,
            json!({"kinds": {"sessions": 3}})
        );
        let events = log.events();
        assert_eq!(events_named(&events, "list").len(), 6, "three pages, twice");
        assert!(events_named(&events, "load").is_empty());

        let all = export_raw(&c, json!(["sessions"])).await?;
        assert_eq!(
            all["state"]["sessions"].as_array().unwrap().len(),
            3,
            "every page is exported"
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_not_asked_for_or_not_exported_is_not_given() {
    let (agent, _log) = agent_with_handle(seeded_options());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        assert_eq!(
            export_raw(&c, json!(["instructions", "memory"])).await?,
            json!({"state": {}})
        );
        assert_eq!(export_raw(&c, json!([])).await?, json!({"state": {}}));
        let some = export_raw(&c, json!(["sessions", "dreams"])).await?;
        assert_eq!(
            some["state"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            ["sessions"]
        );
        let e = c.request("_asp/state/export", json!({})).await.unwrap_err();
        assert_eq!(i32::from(e.code), -32602, "kinds is required");
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replay_that_comes_after_the_load_answer_is_waited_for() {
    let (agent, _log) = agent_with_handle(Options {
        late_replay: true,
        ..seeded_options()
    });
    // The scripted agent streams its late replay at once; the quiet time only has to outlast
    // the hop between two of its messages.
    let quiet = asp_hub::HubOptions {
        replay_quiet: Duration::from_secs(2),
        ..options()
    };
    with_hub(quiet, agent, async |c| {
        c.initialize().await;
        let before = c.seen.len();
        let answer = export_raw(&c, json!(["sessions"])).await?;
        let counts: Vec<usize> = answer["state"]["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["updates"].as_array().unwrap().len())
            .collect();
        assert_eq!(counts, [0, 4, 2]);
        c.sync().await;
        assert_eq!(
            c.seen.len(),
            before,
            "nothing of the late replay leaks to the client"
        );
        Ok(())
    })
    .await;
}

/// A kind not held is left out of describe, never counted 0; and without `session/list`, no
/// session opened through the hub says nothing of what the agent holds, so the export gives
/// no sessions kind rather than an empty one (which would say there are none). With a list
/// that is empty, the kind is given empty: the agent holds none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_not_known_are_not_given_as_none() {
    for list_sessions in [false, true] {
        let (agent, _log) = agent_with_handle(Options {
            list_sessions,
            ..Options::default()
        });
        with_hub(options(), agent, async |c| {
            c.initialize().await;
            assert_eq!(
                c.request("_asp/state/describe", json!({})).await?,
                json!({"kinds": {}}),
                "list: {list_sessions}"
            );
            let answer = export_raw(&c, json!(["sessions"])).await?;
            let want = match list_sessions {
                true => json!({"state": {"sessions": []}}),
                false => json!({"state": {}}),
            };
            assert_eq!(answer, want, "list: {list_sessions}");
            Ok(())
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_session_list_the_sessions_the_client_opened_are_exported() {
    let (agent, log) = agent_with_handle(Options {
        list_sessions: false,
        ..seeded_options()
    });
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        c.prompt(&sid, "hello", None).await?;
        c.request(
            "session/load",
            json!({"sessionId": "telegram:42", "cwd": "/tmp", "mcpServers": []}),
        )
        .await?;
        assert_eq!(
            c.request("_asp/state/describe", json!({})).await?,
            json!({"kinds": {"sessions": 2}})
        );
        let answer = export_raw(&c, json!(["sessions"])).await?;
        let sessions = answer["state"]["sessions"].as_array().unwrap();
        let ids: Vec<&str> = sessions.iter().map(|s| s["id"].as_str().unwrap()).collect();
        assert_eq!(ids, [sid.as_str(), "telegram:42"]);
        assert_eq!(
            sessions[0]["title"], "hello",
            "titled by what the user said first"
        );
        assert_eq!(sessions[0]["updates"].as_array().unwrap().len(), 2);
        assert!(
            events_named(&log.events(), "close").is_empty(),
            "sessions the client opened stay open"
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_cannot_be_replayed_fails_the_export_naming_it() {
    let (agent, _log) = agent_with_handle(Options {
        fail_loads: vec!["telegram:42".into()],
        ..seeded_options()
    });
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let e = export_raw(&c, json!(["sessions"])).await.unwrap_err();
        assert_eq!(i32::from(e.code), -31004);
        assert!(e.message.contains("telegram:42"), "{}", e.message);
        assert_eq!(
            e.data.unwrap()["sessions"]["telegram:42"],
            json!({"code": -32603, "message": "Internal error", "data": {"details": "the session file is damaged"}})
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn export_is_refused_while_a_turn_runs_or_a_prompt_waits() {
    let (agent, _log) = agent_with_handle(seeded_options());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        let a = c.prompt(&sid, "hold A", None);
        c.said(&sid, "A started").await;
        let e = export_raw(&c, json!(["sessions"])).await.unwrap_err();
        assert_eq!(i32::from(e.code), -31002);
        assert_eq!(
            e.data,
            Some(json!({"method": "_asp/state/export", "sessions": [sid]}))
        );
        assert!(e.message.contains("no turn running"), "{}", e.message);
        // Describing is fine while a turn runs.
        assert_eq!(
            c.request("_asp/state/describe", json!({})).await?,
            json!({"kinds": {"sessions": 4}})
        );

        c.release("A");
        a.await?;
        assert_eq!(
            export_raw(&c, json!(["sessions"])).await?["state"]["sessions"]
                .as_array()
                .unwrap()
                .len(),
            4
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_for_a_session_being_replayed_waits_until_the_export_is_done() {
    let (agent, log) = agent_with_handle(Options {
        late_replay: true,
        list_sessions: false,
        ..Options::default()
    });
    let quiet = asp_hub::HubOptions {
        replay_quiet: Duration::from_millis(1500),
        ..options()
    };
    with_hub(quiet, agent, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        c.prompt(&sid, "first", None).await?;
        let export =
            c.cx.send_request(agent_client_protocol::UntypedMessage::new(
                "_asp/state/export",
                json!({"kinds": ["sessions"]}),
            )?);
        let export = export.block_task();
        guarded("the hub's replay to start", async {
            while events_named(&log.events(), "load").is_empty() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await;
        // Sent while the session's replay is being recorded: it must not be mixed into it.
        let second = c.prompt(&sid, "second", None);
        let exported = guarded("the export", export).await?;
        assert_eq!(second.await?["stopReason"], "end_turn");
        let texts: Vec<&str> = exported["state"]["sessions"][0]["updates"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|u| u["update"]["content"]["text"].as_str())
            .collect();
        assert_eq!(
            texts,
            ["first", "first"],
            "user and agent said first; nothing of the second prompt"
        );
        assert_eq!(
            c.lines(&sid),
            ["first", "second"],
            "the client saw its own turns, not the replay"
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_load_session_there_is_no_agent_state_and_its_methods_are_method_not_found() {
    let (agent, _log) = agent_with_handle(Options {
        load_session: false,
        ..seeded_options()
    });
    with_hub(options(), agent, async |c| {
        let init = c.initialize().await;
        assert_eq!(
            init["agentCapabilities"]["_meta"]["asp"],
            json!({"steering": {"busy": ["queue", "interrupt"]}})
        );
        for (method, params) in [
            ("_asp/state/describe", json!({})),
            ("_asp/state/export", json!({"kinds": ["sessions"]})),
            ("_asp/state/import", json!({"state": {}})),
        ] {
            let e = c.request(method, params).await.unwrap_err();
            assert_eq!(i32::from(e.code), -32601, "{method}");
            assert!(
                e.data.unwrap()["reason"]
                    .as_str()
                    .unwrap()
                    .contains("--harness"),
                "{method}"
            );
        }
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn import_without_a_converter_is_method_not_found() {
    let (agent, log) = agent_with_handle(seeded_options());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let e = c
            .request("_asp/state/import", json!({"state": {"instructions": {"text": "Be brief."}}}))
            .await
            .unwrap_err();
        assert_eq!(i32::from(e.code), -32601);
        assert_eq!(
            e.data,
            Some(json!({"method": "_asp/state/import",
                        "reason": "the hub imports only through a harness converter (start it with --harness NAME)"}))
        );
        // Not offered comes before what is wrong with the params.
        let e = c
            .request("_asp/state/import", json!({"nostate": 1}))
            .await
            .unwrap_err();
        assert_eq!(i32::from(e.code), -32601);
        c.sync().await;
        assert!(log.received().iter().all(|m| m["method"] != "_asp/state/import"));
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn state_methods_before_initialize_are_refused() {
    let (agent, _log) = agent_with_handle(seeded_options());
    with_hub(options(), agent, async |c| {
        for (method, params) in [
            ("_asp/state/describe", json!({})),
            // Before initialize, even params that do not parse are answered -32600.
            ("_asp/state/export", json!({"kinds": "sessions"})),
            ("_asp/state/import", json!({"nostate": 1})),
            // And a method ASP does not define: -32600 first, as JSON-RPC checks.
            ("_asp/nonsense", json!({})),
        ] {
            let e = c.request(method, params).await.unwrap_err();
            assert_eq!(i32::from(e.code), -32600, "{method}");
            assert_eq!(
                e.data,
                Some(json!({"method": method,
                            "reason": "send initialize first; the hub says what it offers in its answer"}))
            );
        }
        Ok(())
    })
    .await;
}

/// `session/list` pages as an agent might give them.
fn page(ids: &[&str], next: Option<&str>) -> Value {
    let sessions: Vec<Value> = ids
        .iter()
        .map(|id| json!({"sessionId": id, "cwd": "/tmp"}))
        .collect();
    match next {
        Some(c) => json!({"sessions": sessions, "nextCursor": c}),
        None => json!({"sessions": sessions}),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_that_gives_a_cursor_twice_fails_naming_it_instead_of_looping() {
    let (agent, log) = agent_with_handle(Options {
        // Page 2 points back at itself: asking on would never end.
        list_script: vec![page(&["sess_789xyz"], Some("p2")), page(&[], Some("p2"))],
        ..seeded_options()
    });
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        for method in ["_asp/state/describe", "_asp/state/export"] {
            let e = c
                .request(method, json!({"kinds": ["sessions"]}))
                .await
                .unwrap_err();
            assert_eq!(i32::from(e.code), -31004, "{method}");
            assert!(e.message.contains("\"p2\""), "{method}: {}", e.message);
            assert_eq!(
                e.data,
                Some(json!({"method": "session/list", "cursor": "p2"})),
                "{method}"
            );
        }
        Ok(())
    })
    .await;
    let lists = events_named(&log.events(), "list").len();
    assert_eq!(lists, 4, "two pages asked per method, then it stopped");
    assert!(
        events_named(&log.events(), "load").is_empty(),
        "nothing was replayed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_listed_twice_is_exported_once() {
    let twice = || Options {
        list_script: vec![
            page(&["sess_789xyz", "telegram:42", "sess_789xyz"], Some("p2")),
            page(&["telegram:42", "empty"], None),
        ],
        ..seeded_options()
    };
    let (agent, _log) = agent_with_handle(twice());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let counts = c.request("_asp/state/describe", json!({})).await?;
        assert_eq!(counts, json!({"kinds": {"sessions": 3}}));
        Ok(())
    })
    .await;

    let (agent, log) = agent_with_handle(twice());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let state = export_raw(&c, json!(["sessions"])).await?;
        let ids: Vec<&str> = state["state"]["sessions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            ["sess_789xyz", "telegram:42", "empty"],
            "each once, as first listed"
        );
        Ok(())
    })
    .await;
    let loads = events_named(&log.events(), "load").len();
    assert_eq!(loads, 3, "each session replayed once");
}
