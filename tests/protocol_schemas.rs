//! The JSON Schemas in spec/schemas/protocol/ describe what is really sent: the seed's own
//! examples, the typed forms of `asp-protocol`, and the answers and refusals of a running hub
//! all validate, and hand-made wrong documents do not.

use std::path::{Path, PathBuf};
use std::time::Duration;

use agent_client_protocol::Error;
use asp_hub::{Hub, HubOptions};
use asp_protocol::{BusyMode, ExportRequest, KindSet, StateKind};
use asp_scripted_agent::client::{TestClient, drive};
use asp_scripted_agent::{Options, SeedSession, Steering, agent};
use jsonschema::{Retrieve, Uri};
use serde_json::{Value, json};

const BASE: &str = "https://link-asp.dev/schemas/";

fn spec_schemas() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../spec/schemas")
}

/// Resolves `https://link-asp.dev/schemas/...` to the files under spec/schemas/, so the
/// protocol schemas' references to the export and import-answer schemas are checked too.
struct SpecDir;

impl Retrieve for SpecDir {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let rel = uri
            .as_str()
            .strip_prefix(BASE)
            .ok_or_else(|| format!("{} is not one of ours", uri.as_str()))?;
        Ok(serde_json::from_str(&std::fs::read_to_string(
            spec_schemas().join(rel),
        )?)?)
    }
}

fn schema(name: &str) -> jsonschema::Validator {
    let path = spec_schemas().join(format!("protocol/{name}.schema.json"));
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    jsonschema::options()
        .with_retriever(SpecDir)
        .build(&s)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn assert_valid(name: &str, doc: &Value) {
    let v = schema(name);
    let errors: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{name}: {doc}: {errors:#?}");
}

fn assert_invalid(name: &str, doc: &Value) {
    assert!(!schema(name).is_valid(doc), "{name} should refuse {doc}");
}

fn error_json(e: &Error) -> Value {
    serde_json::to_value(e).unwrap()
}

#[test]
fn the_seeds_examples_validate() {
    let init: Value = serde_json::from_str(r#"{"protocolVersion": 1, "agentCapabilities": {"_meta": {"asp": {"steering": {"busy": ["queue", "interrupt"]}, "agentState": {"export": ["sessions", "instructions"], "import": ["sessions"]}}}}}"#).unwrap();
    assert_valid("capabilities", &init["agentCapabilities"]["_meta"]["asp"]);
    let prompt: Value = serde_json::from_str(r#"{"sessionId": "telegram:42", "prompt": [{"type": "text", "text": "Skip the tests."}], "_meta": {"asp": {"busy": "interrupt"}}}"#).unwrap();
    assert_valid("prompt-meta", &prompt["_meta"]["asp"]);
    assert_valid("describe-request", &json!({}));
    assert_valid(
        "describe-response",
        &json!({"kinds": {"sessions": 3, "instructions": 1}}),
    );
    assert_valid(
        "import-response",
        &json!({"taken": ["sessions", "instructions"], "notTaken": [{"kind": "memory", "reason": "this agent keeps no memory"}], "sessions": {"sess_789xyz": "sess_a1b2c3"}}),
    );
}

#[test]
fn the_typed_forms_validate() {
    let caps = asp_protocol::AspCapabilities {
        steering: Some(asp_protocol::SteeringCapability {
            busy: BusyMode::ALL.to_vec(),
        }),
        agent_state: Some(asp_protocol::AgentStateCapability {
            export: KindSet::ALL,
            import: KindSet::EMPTY.with(StateKind::Sessions),
        }),
    };
    assert_valid("capabilities", &serde_json::to_value(&caps).unwrap());
    let export = ExportRequest::new(KindSet::ALL);
    assert_valid("export-request", &serde_json::to_value(&export).unwrap());
    assert_valid(
        "describe-request",
        &serde_json::to_value(asp_protocol::DescribeRequest::default()).unwrap(),
    );
    let import: asp_protocol::ImportRequest =
        serde_json::from_value(json!({"state": {"instructions": {"text": "Be brief."}}})).unwrap();
    assert_valid("import-request", &serde_json::to_value(&import).unwrap());
    for e in [
        asp_protocol::AspError::BusyModeNotOffered {
            asked: json!("steer"),
            offered: vec![BusyMode::Queue],
        },
        asp_protocol::AspError::TurnRunning {
            method: "_asp/state/export".into(),
            sessions: vec!["s".into()],
        },
        asp_protocol::AspError::NotOffered {
            method: "_asp/state/import".into(),
            reason: "no converter".into(),
        },
        asp_protocol::AspError::SteeringFailed {
            detail: "x".into(),
            outcome: json!("failed"),
        },
        asp_protocol::AspError::StateFailed {
            message: "x".into(),
            data: json!({}),
        },
        asp_protocol::AspError::InvalidParams {
            path: "/state/sessions/0/id".into(),
            error: "session id \"\" is not allowed: it is empty".into(),
        },
        asp_protocol::AspError::InvalidParams {
            path: String::new(),
            error: "missing field `kinds`".into(),
        },
        asp_protocol::AspError::NotInitialized {
            method: "_asp/state/describe".into(),
            reason: "send initialize first".into(),
        },
    ] {
        assert_valid("error", &error_json(&e.into()));
    }
}

fn seeded() -> Vec<SeedSession> {
    vec![SeedSession {
        session_id: "sess_789xyz".into(),
        cwd: "/home/dev/shop".into(),
        title: Some("Skip the tests".into()),
        updated_at: Some("2026-11-29T17:02:11Z".into()),
        updates: vec![
            json!({"sessionId": "sess_789xyz", "update": {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Skip the tests."}}}),
            json!({"sessionId": "sess_789xyz", "update": {"sessionUpdate": "future_kind", "x": 1}}),
        ],
    }]
}

fn hub(
    options: Options,
) -> Hub<impl agent_client_protocol::ConnectTo<agent_client_protocol::Client>> {
    let hub_options = HubOptions {
        replay_quiet: Duration::from_millis(50),
        ..HubOptions::default()
    };
    Hub::new(hub_options, agent(options))
}

async fn refused(c: &TestClient, method: &str, params: Value) -> Value {
    error_json(&c.request(method, params).await.unwrap_err())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_hubs_answers_and_refusals_validate() {
    let options = Options {
        sessions: seeded(),
        steering: Steering::SessionSteering,
        steering_outcome: Some("failed".into()),
        ..Options::default()
    };
    drive(hub(options), async |c| {
        assert_valid(
            "error",
            &refused(&c, "_asp/state/describe", json!({})).await,
        );
        let init = c.initialize().await;
        assert_valid("capabilities", &init["agentCapabilities"]["_meta"]["asp"]);
        assert_valid(
            "describe-response",
            &c.request("_asp/state/describe", json!({})).await?,
        );
        assert_valid(
            "export-response",
            &c.request(
                "_asp/state/export",
                json!({"kinds": ["sessions", "memory"]}),
            )
            .await?,
        );
        assert_valid(
            "error",
            &refused(&c, "_asp/state/import", json!({"state": {}})).await,
        );
        assert_valid("error", &refused(&c, "_asp/state/forget", json!({})).await);
        for bad in [
            json!({}),
            json!({"kinds": "sessions"}),
            json!({"kinds": [], "_meta": 5}),
        ] {
            let e = refused(&c, "_asp/state/export", bad).await;
            assert_eq!(e["code"], -32602);
            assert_valid("error", &e);
        }

        let sid = c.new_session().await;
        let e = c.prompt(&sid, "x", Some("later")).await.unwrap_err();
        assert_valid("error", &error_json(&e));
        let a = c.prompt(&sid, "hold A", None);
        c.said(&sid, "A started").await;
        assert_valid(
            "error",
            &refused(&c, "_asp/state/export", json!({"kinds": ["sessions"]})).await,
        );
        let e = c.prompt(&sid, "steer", Some("steer")).await.unwrap_err();
        assert_valid("error", &error_json(&e));
        c.release("A");
        a.await?;
        Ok(())
    })
    .await;

    let options = Options {
        sessions: seeded(),
        fail_loads: vec!["sess_789xyz".into()],
        ..Options::default()
    };
    drive(hub(options), async |c| {
        c.initialize().await;
        assert_valid(
            "error",
            &refused(&c, "_asp/state/export", json!({"kinds": ["sessions"]})).await,
        );
        Ok(())
    })
    .await;
}

#[test]
fn wrong_documents_do_not_validate() {
    assert_invalid("capabilities", &json!({"steering": {"busy": ["later"]}}));
    assert_invalid("capabilities", &json!({"steering": {"busy": "queue"}}));
    assert_invalid(
        "capabilities",
        &json!({"agentState": {"export": ["dreams"]}}),
    );
    assert_invalid("prompt-meta", &json!({"busy": "soon"}));
    // What the protocol takes is valid (spec conformance trial helper-132, 7): `busy: null`
    // is the default (protocol.md §2.1), and a request may name a kind a later version adds,
    // which the agent skips (§3); a kinds item that is no name is not.
    assert_valid("prompt-meta", &json!({"busy": null}));
    assert_valid("export-request", &json!({"kinds": ["sessions", "dreams"]}));
    assert_invalid("export-request", &json!({"kinds": [7]}));
    assert_invalid("describe-response", &json!({"kinds": {"sessions": -1}}));
    assert_invalid("describe-response", &json!({"kinds": {"dreams": 1}}));
    assert_invalid("export-request", &json!({}));
    assert_invalid(
        "import-request",
        &json!({"state": {"sessions": [{"id": "s"}]}}),
    );
    assert_invalid(
        "error",
        &json!({"code": -31001, "message": "m", "data": {"busy": "steer"}}),
    );
    assert_invalid(
        "error",
        &json!({"code": -31002, "message": "m", "data": {"method": "x", "sessions": []}}),
    );
    assert_invalid(
        "error",
        &json!({"code": -32601, "message": "m", "data": {"method": "session/new", "reason": "r"}}),
    );
    assert_invalid(
        "error",
        &json!({"code": -32602, "message": "m", "data": "the state handed over is not valid"}),
    );
    assert_invalid(
        "error",
        &json!({"code": -32602, "message": "m", "data": {"error": "e", "path": "state.sessions"}}),
    );
    assert_invalid(
        "error",
        &json!({"code": -32600, "message": "m", "data": "send initialize first"}),
    );
}
