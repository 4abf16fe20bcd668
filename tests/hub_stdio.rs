//! `asp hub` as real processes: the client (this test, with the ACP SDK's own client) talks to
//! the `asp` binary over its stdio, and the hub to the scripted agent binary over the agent's
//! stdio. The same behaviour as the in-process tests of `asp-protocol`, through two real pipes.

use std::path::PathBuf;

use agent_client_protocol::{AcpAgent, LineDirection};
use asp_scripted_agent::client::{TestClient, drive};
use serde_json::{Value, json};

/// The scripted agent's binary, built by `cargo test` beside `asp` (its package has an
/// integration test, so cargo builds its binary whenever the workspace is tested).
fn scripted_agent() -> PathBuf {
    let asp = PathBuf::from(env!("CARGO_BIN_EXE_asp"));
    let agent = asp.with_file_name(format!(
        "asp-scripted-agent{}",
        std::env::consts::EXE_SUFFIX
    ));
    assert!(
        agent.exists(),
        "{} is missing: run the whole workspace's tests (`cargo test --workspace`), or build it \
         first with `cargo build -p asp-scripted-agent`",
        agent.display()
    );
    agent
}

/// `asp hub [hub args] -- asp-scripted-agent [agent args]`, as an ACP agent subprocess.
fn hub(hub_args: &[&str], agent_args: &[&str]) -> AcpAgent {
    let mut args: Vec<String> = vec![env!("CARGO_BIN_EXE_asp").into(), "hub".into()];
    args.extend(hub_args.iter().map(|s| s.to_string()));
    args.push("--".into());
    args.push(scripted_agent().display().to_string());
    args.extend(agent_args.iter().map(|s| s.to_string()));
    AcpAgent::from_args(args)
        .unwrap()
        .with_debug(|line, direction| {
            if matches!(direction, LineDirection::Stderr) {
                eprintln!("(hub stderr) {line}");
            }
        })
}

fn stop(v: &Value) -> &str {
    v["stopReason"].as_str().unwrap_or("<none>")
}

async fn started(c: &TestClient, sid: &str, key: &str) {
    c.said(sid, &format!("{key} started")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hub_binary_fronts_an_agent_binary_over_stdio() {
    drive(
        hub(
            &["--replay-quiet-ms", "100"],
            &["--steering", "session-steering"],
        ),
        async |c| {
            let init = c.initialize().await;
            assert_eq!(
                init["agentCapabilities"]["_meta"]["asp"],
                json!({
                    "steering": {"busy": ["steer", "queue", "interrupt"]},
                    "agentState": {"export": ["sessions"], "import": []}
                })
            );
            assert_eq!(
                init["scriptedFutureField"],
                json!({"kept": true}),
                "the agent's answer passes through"
            );

            let sid = c.new_session().await;
            let a = c.prompt(&sid, "hold A", None);
            started(&c, &sid, "A").await;
            let queued = c.prompt(&sid, "hold Q", Some("queue"));
            let steer = c.prompt(&sid, "Be brief.", Some("steer"));
            c.said(&sid, "A joined: Be brief.").await;
            c.release("A");
            assert_eq!(stop(&a.await?), "end_turn");
            assert_eq!(
                stop(&steer.await?),
                "end_turn",
                "the steering prompt ends with the answer it joined"
            );
            started(&c, &sid, "Q").await;
            let interrupt = c.prompt(&sid, "Stop.", Some("interrupt"));
            assert_eq!(stop(&queued.await?), "cancelled");
            assert_eq!(stop(&interrupt.await?), "end_turn");

            let before = c.seen.len();
            let exported = c
                .request("_asp/state/export", json!({"kinds": ["sessions"]}))
                .await?;
            let session = &exported["state"]["sessions"][0];
            assert_eq!(session["id"], sid.as_str());
            assert_eq!(session["title"], "hold A");
            let texts: Vec<&str> = session["updates"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|u| u["update"]["content"]["text"].as_str())
                .collect();
            assert!(
                texts.contains(&"A joined: Be brief.") && texts.contains(&"Q cancelled"),
                "{texts:?}"
            );
            assert_eq!(c.seen.len(), before, "the replay stays inside the hub");

            let e = c
                .request("_asp/state/import", json!({"state": {}}))
                .await
                .unwrap_err();
            assert_eq!(i32::from(e.code), -32601);
            Ok(())
        },
    )
    .await;
}

/// Raw bytes this time: the hub's stdout carries only JSON-RPC lines, and closing its stdin
/// ends it cleanly (exit status 0) with a turn running and a prompt waiting.
#[test]
fn the_hub_exits_cleanly_when_its_client_closes_stdin_with_prompts_waiting() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    use std::sync::mpsc;
    use std::time::{Duration, Instant};

    let mut child = Command::new(env!("CARGO_BIN_EXE_asp"))
        .args(["hub", "--"])
        .arg(scripted_agent())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let (tx, rx) = mpsc::channel::<Value>();
    let stdout = child.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            let v: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("not JSON-RPC on stdout: {line:?}: {e}"));
            if tx.send(v).is_err() {
                break;
            }
        }
    });
    let mut send = |v: Value| writeln!(stdin, "{v}").unwrap();
    let wait_for = |pred: &dyn Fn(&Value) -> bool| loop {
        let v = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("deadlock guard: the hub went silent");
        if pred(&v) {
            return v;
        }
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
    );
    send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}),
    );
    let sid = wait_for(&|v| v["id"] == 2)["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hold A"}]}}),
    );
    wait_for(&|v| v["params"]["update"]["content"]["text"] == "A started");
    send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hold B"}], "_meta": {"asp": {"busy": "queue"}}}}),
    );
    send(json!({"jsonrpc": "2.0", "id": 5, "method": "_scripted/echo", "params": {}}));
    wait_for(&|v| v["id"] == 5);
    drop(stdin);

    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "deadlock guard: the hub did not exit after stdin closed"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    reader.join().unwrap();
}

/// The seed's harness switch, through two hubs backed by the real converters: the source
/// exports what its destination imports, and the answer maps every session to its new id.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_harness_switch_through_two_hubs_and_the_real_converters() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let source_home = root.join("samples/gemini");
    let destination = tempfile::tempdir().unwrap();
    let source = source_home.display().to_string();
    let dest = destination.path().display().to_string();

    let mut exported = Value::Null;
    drive(
        hub(&["--harness", "gemini", "--home", &source], &[]),
        async |c| {
            let init = c.initialize().await;
            let asp = &init["agentCapabilities"]["_meta"]["asp"];
            let exports = asp["agentState"]["export"].as_array().unwrap();
            assert!(
                exports.contains(&json!("sessions")) && exports.contains(&json!("instructions")),
                "{asp}"
            );
            let described = c.request("_asp/state/describe", json!({})).await?;
            exported = c
                .request(
                    "_asp/state/export",
                    json!({"kinds": ["sessions", "instructions"]}),
                )
                .await?;
            let sessions = exported["state"]["sessions"].as_array().unwrap();
            assert_eq!(
                json!(sessions.len()),
                described["kinds"]["sessions"],
                "describe counts what export gives"
            );
            assert!(
                exported["state"].get("memory").is_none(),
                "a kind not asked for is not given"
            );
            Ok(())
        },
    )
    .await;

    drive(
        hub(&["--harness", "claude-code", "--home", &dest], &[]),
        async |c| {
            let init = c.initialize().await;
            let imports = &init["agentCapabilities"]["_meta"]["asp"]["agentState"]["import"];
            assert!(
                imports.as_array().unwrap().contains(&json!("sessions")),
                "{imports}"
            );
            let answer = c
                .request("_asp/state/import", json!({"state": exported["state"]}))
                .await?;
            assert!(
                answer["taken"]
                    .as_array()
                    .unwrap()
                    .contains(&json!("sessions")),
                "{answer}"
            );
            let map = answer["sessions"].as_object().unwrap();
            for s in exported["state"]["sessions"].as_array().unwrap() {
                assert!(
                    map.contains_key(s["id"].as_str().unwrap()),
                    "{} has a new id: {answer}",
                    s["id"]
                );
            }
            let described = c.request("_asp/state/describe", json!({})).await?;
            assert_eq!(
                described["kinds"]["sessions"],
                json!(map.len()),
                "the destination holds them now"
            );
            Ok(())
        },
    )
    .await;
}
