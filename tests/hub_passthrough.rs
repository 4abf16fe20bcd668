//! The hub is transparent: every ACP message passes through unchanged, both ways, except the
//! initialize answer (which gains `_meta.asp`) and `_asp/*` (which the hub answers).

use crate::support::hub::{options, with_hub};
use asp_scripted_agent::{Options, agent_with_handle};
use serde_json::{Value, json};

fn received<'a>(log: &'a [Value], method: &str) -> Vec<&'a Value> {
    log.iter()
        .filter(|m| m["method"] == method)
        .map(|m| &m["params"])
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_initialize_answer_gains_asp_and_keeps_everything_else() {
    let (agent, log) = agent_with_handle(Options::default());
    with_hub(options(), agent, async |c| {
        let asked = json!({
            "protocolVersion": 1,
            "clientCapabilities": {"fs": {"readTextFile": true, "writeTextFile": false}, "terminal": false, "_meta": {"client": 1}},
            "clientInfo": {"name": "test", "version": "1"},
            "futureField": {"kept": true},
            "_meta": {"traceparent": "00-abc-def-01"}
        });
        let answer = c.request("initialize", asked.clone()).await?;
        assert_eq!(
            answer,
            json!({
                "protocolVersion": 1,
                "agentCapabilities": {
                    "loadSession": true,
                    "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
                    "sessionCapabilities": {"list": {}, "close": {}},
                    "_meta": {
                        "scripted": {"version": 1},
                        "asp": {
                            "steering": {"busy": ["queue", "interrupt"]},
                            "agentState": {"export": ["sessions"], "import": []}
                        }
                    }
                },
                "authMethods": [],
                "agentInfo": {"name": "asp-scripted-agent", "version": "0.1.0"},
                "scriptedFutureField": {"kept": true}
            })
        );
        assert_eq!(received(&log.received(), "initialize"), [&asked], "the request reaches the agent unchanged");
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_fields_methods_and_notifications_pass_from_client_to_agent() {
    let (agent, log) = agent_with_handle(Options::default());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let new = json!({"cwd": "/tmp", "mcpServers": [], "futureField": [1, {"x": null}], "_meta": {"client": "yes"}});
        let answer = c.request("session/new", new.clone()).await?;
        assert_eq!(answer, json!({"sessionId": "sess-1", "_meta": {"scripted": {"fresh": true}}}));

        let odd = json!({"a": [1, 2.5, -0.0, "x"], "b": {"nested": {"deep": true}}, "_meta": {"k": "v"}});
        assert_eq!(c.request("_scripted/echo", odd.clone()).await?, odd, "an unknown request and its answer");
        c.notify("_client/note", json!({"note": 1, "futureField": "kept"}));

        let e = c.request("_client/unknown", json!({"q": 1})).await.unwrap_err();
        assert_eq!(i32::from(e.code), -32601, "the agent's own answer, relayed");
        assert_eq!(e.data, Some(json!("_client/unknown")));

        c.sync().await;
        let log = log.received();
        assert_eq!(received(&log, "session/new"), [&new]);
        assert_eq!(received(&log, "_scripted/echo")[0], &odd);
        assert_eq!(received(&log, "_client/note"), [&json!({"note": 1, "futureField": "kept"})]);
        assert_eq!(received(&log, "_client/unknown"), [&json!({"q": 1})]);
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_typed_values_would_lose_passes_from_agent_to_client() {
    let (agent, _log) = agent_with_handle(Options::default());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        let answer = c.prompt(&sid, "weird", None).await?;
        assert_eq!(answer, json!({"stopReason": "end_turn"}));
        let seen = c.seen.all();
        let updates: Vec<&Value> = seen
            .iter()
            .filter(|m| m["method"] == "session/update")
            .map(|m| &m["params"])
            .collect();
        assert_eq!(
            updates[0],
            &json!({"sessionId": sid, "update": {"sessionUpdate": "future_kind", "futureField": 1}}),
            "an update kind ACP does not define"
        );
        assert_eq!(
            updates[1],
            &json!({"sessionId": sid, "update": {"sessionUpdate": "tool_call", "toolCallId": "tc-9", "title": "t",
                "kind": "other", "status": "pending", "futureField": [1, 2]}, "_meta": {"x": 1}}),
            "explicit defaults, unknown fields and _meta are kept"
        );
        let note = seen.iter().find(|m| m["method"] == "_scripted/note").unwrap();
        assert_eq!(note["params"], json!({"n": 1, "nested": {"futureField": null}}));
        let ask = seen.iter().find(|m| m["method"] == "_scripted/ask").unwrap();
        assert_eq!(ask["params"], json!({"q": "ping", "extra": [true]}), "an unknown request to the client");
        assert_eq!(
            c.lines(&sid).last().unwrap(),
            r#"_scripted/ask -> {"pong":true,"futureField":{"kept":[1,2.5]}}"#,
            "and the client's answer back to the agent"
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn permission_requests_and_errors_pass_through() {
    let (agent, _log) = agent_with_handle(Options::default());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        c.prompt(&sid, "permission", None).await?;
        let asked = c
            .seen
            .all()
            .into_iter()
            .find(|m| m["method"] == "session/request_permission")
            .unwrap();
        assert_eq!(asked["params"]["toolCall"]["title"], "rm -rf /tmp/x");
        assert_eq!(
            c.lines(&sid).last().unwrap(),
            r#"permission -> {"outcome":"selected","optionId":"allow"}"#
        );

        let e = c.prompt(&sid, "fail", None).await.unwrap_err();
        assert_eq!(
            serde_json::to_value(&e)?,
            json!({"code": 4242, "message": "scripted failure", "data": {"script": "fail"}})
        );

        let e = c
            .request("session/prompt", json!({"sessionId": "nope", "prompt": []}))
            .await
            .unwrap_err();
        assert_eq!(
            serde_json::to_value(&e)?,
            json!({"code": -32002, "message": "Resource not found", "data": {"sessionId": "nope"}})
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_asp_method_the_hub_does_not_know_is_method_not_found_and_never_reaches_the_agent() {
    let (agent, log) = agent_with_handle(Options::default());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        for method in ["_asp/state/forget", "_asp/unknown", "_asp/"] {
            let e = c.request(method, json!({})).await.unwrap_err();
            assert_eq!(i32::from(e.code), -32601, "{method}");
            assert_eq!(e.data.unwrap()["method"], method);
        }
        c.sync().await;
        assert!(
            log.received()
                .iter()
                .all(|m| !m["method"].as_str().unwrap().starts_with("_asp/")),
            "an agent that answers unknown methods with {{}} must never see them"
        );
        Ok(())
    })
    .await;
}
