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

/// `asp hub -- asp-scripted-agent` as a child process spoken to in raw JSON-RPC lines: the
/// tests of how the hub ends, which the SDK's client would hide (it closes both directions
/// together and answers nothing after).
struct RawHub {
    child: std::process::Child,
    stdin: Option<std::process::ChildStdin>,
    stdout: Option<std::process::ChildStdout>,
    lines: Option<std::sync::mpsc::Receiver<Value>>,
    reader: Option<std::thread::JoinHandle<()>>,
    /// What the hub says on stderr, read to its end.
    stderr: Option<std::thread::JoinHandle<String>>,
}

/// How long a test waits for the hub before it calls it a deadlock.
const DEADLOCK: std::time::Duration = std::time::Duration::from_secs(120);

impl RawHub {
    fn start() -> RawHub {
        RawHub::start_with(&[])
    }

    /// `asp hub [hub args] -- asp-scripted-agent`.
    fn start_with(hub_args: &[&str]) -> RawHub {
        use std::process::{Command, Stdio};
        let mut child = Command::new(env!("CARGO_BIN_EXE_asp"))
            .arg("hub")
            .args(hub_args)
            .arg("--")
            .arg(scripted_agent())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            std::io::Read::read_to_string(&mut stderr, &mut text).unwrap();
            text
        });
        RawHub {
            stdin: child.stdin.take(),
            stdout: child.stdout.take(),
            child,
            lines: None,
            reader: None,
            stderr: Some(stderr),
        }
    }

    /// Reads the hub's stdout on a thread of its own, line by line, into [`Self::wait_for`].
    fn listen(mut self) -> RawHub {
        use std::io::{BufRead, BufReader};
        let stdout = self.stdout.take().expect("stdout not taken");
        let (tx, rx) = std::sync::mpsc::channel::<Value>();
        self.reader = Some(std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let line = line.unwrap();
                let v: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON-RPC on stdout: {line:?}: {e}"));
                if tx.send(v).is_err() {
                    break;
                }
            }
        }));
        self.lines = Some(rx);
        self
    }

    fn send(&mut self, v: Value) {
        use std::io::Write;
        writeln!(self.stdin.as_mut().expect("stdin open"), "{v}").unwrap();
    }

    /// The next message from the hub for which `pred` holds.
    fn wait_for(&self, pred: &dyn Fn(&Value) -> bool) -> Value {
        loop {
            let v = self
                .lines
                .as_ref()
                .expect("listening")
                .recv_timeout(DEADLOCK)
                .expect("deadlock guard: the hub went silent");
            if pred(&v) {
                return v;
            }
        }
    }

    /// Everything the hub still says, up to the end of its stdout.
    fn rest(&mut self) -> Vec<Value> {
        let rx = self.lines.take().expect("listening");
        let rest = std::iter::from_fn(|| rx.recv_timeout(DEADLOCK).ok()).collect();
        self.reader.take().unwrap().join().unwrap();
        rest
    }

    /// A session with prompt 3 running ("hold A") and prompt 4 queued behind it, the hub
    /// having read both (an echo after them came back).
    fn two_prompts_waiting(&mut self) {
        self.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
        );
        self.send(
            json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}),
        );
        let sid = self.wait_for(&|v| v["id"] == 2)["result"]["sessionId"]
            .as_str()
            .unwrap()
            .to_owned();
        self.send(
            json!({"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hold A"}]}}),
        );
        self.wait_for(&|v| v["params"]["update"]["content"]["text"] == "A started");
        self.send(
            json!({"jsonrpc": "2.0", "id": 4, "method": "session/prompt",
                "params": {"sessionId": sid, "prompt": [{"type": "text", "text": "hold B"}],
                           "_meta": {"asp": {"busy": "queue"}}}}),
        );
        self.send(json!({"jsonrpc": "2.0", "id": 5, "method": "_scripted/echo", "params": {}}));
        self.wait_for(&|v| v["id"] == 5);
    }

    /// Asks the agent, through the hub, what it did (`_scripted/log`) until `pred` holds of
    /// its events: the hub routes requests that name no session even while an export runs.
    fn wait_for_agent(&mut self, what: &str, pred: &dyn Fn(&[Value]) -> bool) {
        let deadline = std::time::Instant::now() + DEADLOCK;
        for id in 1_000.. {
            self.send(json!({"jsonrpc": "2.0", "id": id, "method": "_scripted/log", "params": {}}));
            let log = self.wait_for(&|v| v["id"] == id);
            if pred(log["result"]["events"].as_array().unwrap()) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "deadlock guard: the agent never {what}"
            );
        }
    }

    /// Closes the hub's stdin, waits for it to exit, and gives its exit status and what it
    /// said on stderr.
    fn ended(mut self) -> (std::process::ExitStatus, String) {
        let stderr = self.stderr.take().unwrap();
        let status = self.exit_status();
        (status, stderr.join().unwrap())
    }

    /// Closes the hub's stdin and waits for it to exit.
    fn exit_status(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        let deadline = std::time::Instant::now() + DEADLOCK;
        let status = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "deadlock guard: the hub did not exit after stdin closed"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        status
    }
}

/// A line from the client that is not UTF-8 is read with U+FFFD and answered as any other
/// line; it does not end the hub with a turn running (new-user trial helper-129, 1).
#[test]
fn a_line_that_is_not_utf8_does_not_end_the_hub() {
    use std::io::Write;
    let mut hub = RawHub::start().listen();
    hub.two_prompts_waiting();
    let stdin = hub.stdin.as_mut().expect("stdin open");
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"_scripted/echo\",\"params\":{\"x\":\"\xff\"}}\n")
        .unwrap();
    let echoed = hub.wait_for(&|v| v["id"] == 6);
    assert!(echoed.get("result").is_some(), "{echoed}");
    hub.send(json!({"jsonrpc": "2.0", "id": 7, "method": "_scripted/echo", "params": {}}));
    hub.wait_for(&|v| v["id"] == 7);
    let (status, said) = hub.ended();
    assert!(status.success(), "{status:?}: {said}");
    assert!(said.contains("not UTF-8"), "{said}");
}

/// SIGTERM (as an editor stops its agent server) ends the hub as its client leaving does: the
/// agent's process group with it, and the hub exits 0. Killed by the signal, the hub left the
/// agent running, adopted by init (new-user trial helper-129, 2).
#[cfg(unix)]
#[test]
fn sigterm_ends_the_hub_and_its_agent() {
    let mut hub = RawHub::start().listen();
    hub.two_prompts_waiting();
    let hub_pid = hub.child.id() as i32;
    let agent_pid: i32 = String::from_utf8(
        std::process::Command::new("pgrep")
            .args(["-P", &hub_pid.to_string()])
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap()
    .split_whitespace()
    .next()
    .expect("the agent runs under the hub")
    .parse()
    .unwrap();
    let kill = |args: &[&str]| {
        std::process::Command::new("kill")
            .args(args)
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap()
            .success()
    };
    assert!(kill(&["-TERM", &hub_pid.to_string()]));
    let deadline = std::time::Instant::now() + DEADLOCK;
    let status = loop {
        if let Some(status) = hub.child.try_wait().unwrap() {
            break status;
        }
        assert!(std::time::Instant::now() < deadline, "the hub did not end");
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    // The agent's group (it leads one of its own) is gone, within the hub's grace to it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    // Signal 0 only asks whether the group has a process.
    while kill(&["-0", "--", &format!("-{agent_pid}")]) {
        assert!(
            std::time::Instant::now() < deadline,
            "the agent {agent_pid} outlived the hub"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let said = hub.stderr.take().unwrap().join().unwrap();
    assert!(said.contains("SIGTERM"), "{said}");
}

/// Raw bytes this time: the hub's stdout carries only JSON-RPC lines, and closing its stdin
/// ends it cleanly (exit status 0) with a turn running and a prompt waiting.
#[test]
fn the_hub_exits_cleanly_when_its_client_closes_stdin_with_prompts_waiting() {
    let mut hub = RawHub::start().listen();
    hub.two_prompts_waiting();
    let status = hub.exit_status();
    assert!(status.success(), "{status:?}");
}

/// A client that closes its input with requests still being answered (a script piping 50 of
/// them in) has left: the hub ends cleanly, exit 0, however far the answers got. The SDK's
/// forwarding of an answer that found the client gone once failed the run (exit 1, about half
/// the time): five runs, so that race shows.
#[test]
fn the_hub_exits_cleanly_when_its_client_closes_stdin_with_requests_in_flight() {
    for _ in 0..5 {
        let mut hub = RawHub::start().listen();
        hub.send(
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
        );
        hub.wait_for(&|v| v["id"] == 1);
        let big = "y".repeat(10_000);
        for id in 2..52 {
            hub.send(
                json!({"jsonrpc": "2.0", "id": id, "method": "_scripted/echo",
                "params": {"x": big}}),
            );
        }
        let status = hub.exit_status();
        assert!(status.success(), "{status:?}");
    }
}

/// The agent exits with a prompt running and one queued behind it: over stdio, the hub answers
/// both (the agent has exited) before its stdout ends. The answers are the hub's last frames;
/// they were once dropped when the transport finished before the hub's output was handed on.
#[test]
fn the_hub_answers_waiting_prompts_over_stdio_when_the_agent_exits() {
    let mut hub = RawHub::start().listen();
    hub.two_prompts_waiting();
    hub.send(json!({"jsonrpc": "2.0", "method": "_scripted/exit", "params": {}}));
    let rest = hub.rest();
    for id in [3, 4] {
        let answer = rest.iter().find(|v| v["id"] == id).unwrap_or_else(|| {
            panic!("prompt {id} was not answered before stdout ended: {rest:?}")
        });
        assert_eq!(answer["error"]["code"], -32603, "{answer}");
    }
    let status = hub.exit_status();
    assert!(
        !status.success(),
        "the agent exited: the hub says so: {status:?}"
    );
}

/// The agent exits while requests are in flight: one the hub handles itself (an export, its
/// replay waiting out the quiet time) and one forwarded to the agent (held there). Each is
/// answered with an error that says the agent behind the hub has exited, before the hub's
/// stdout ends; the export was once dropped unanswered, and the forwarded one answered only
/// with the SDK's "Incoming transport closed".
#[test]
fn requests_in_flight_when_the_agent_exits_are_answered() {
    // A quiet time far beyond the deadlock guard: the export cannot end by itself in time.
    let mut hub = RawHub::start_with(&["--replay-quiet-ms", "600000"]).listen();
    hub.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
    );
    hub.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": {"cwd": "/tmp", "mcpServers": []}}),
    );
    let sid = hub.wait_for(&|v| v["id"] == 2)["result"]["sessionId"]
        .as_str()
        .unwrap()
        .to_owned();
    hub.send(json!({"jsonrpc": "2.0", "id": 3, "method": "_asp/state/export", "params": {"kinds": ["sessions"]}}));
    hub.send(
        json!({"jsonrpc": "2.0", "id": 4, "method": "_scripted/hold", "params": {"key": "k"}}),
    );
    hub.wait_for_agent("loaded the session and held the request", &|events| {
        events.contains(&json!({"load": sid})) && events.contains(&json!({"holding": "k"}))
    });
    hub.send(json!({"jsonrpc": "2.0", "method": "_scripted/exit", "params": {}}));
    let rest = hub.rest();
    for id in [3, 4] {
        let answer = rest.iter().find(|v| v["id"] == id).unwrap_or_else(|| {
            panic!("request {id} was not answered before stdout ended: {rest:?}")
        });
        assert_eq!(answer["error"]["code"], -32603, "{answer}");
        assert!(
            answer["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("the agent behind the hub has exited"),
            "{answer}"
        );
    }
    let status = hub.exit_status();
    assert!(!status.success(), "{status:?}");
}

/// The agent exits with a status of its own while a prompt runs and another waits: each is
/// answered with that status, in words and in `data.exit`, and the hub says it as it ends.
#[test]
fn the_agents_exit_status_is_said_wherever_its_exit_is() {
    for (code, words) in [(3, "exit status 3"), (0, "exit status 0")] {
        let mut hub = RawHub::start().listen();
        hub.two_prompts_waiting();
        hub.send(json!({"jsonrpc": "2.0", "method": "_scripted/exit", "params": {"code": code}}));
        let rest = hub.rest();
        for id in [3, 4] {
            let answer = rest.iter().find(|v| v["id"] == id).unwrap_or_else(|| {
                panic!("prompt {id} was not answered before stdout ended: {rest:?}")
            });
            assert_eq!(
                answer["error"]["message"],
                format!("the agent behind the hub has exited ({words})"),
                "{answer}"
            );
            assert_eq!(answer["error"]["data"], json!({"exit": {"code": code}}));
        }
        let (status, stderr) = hub.ended();
        assert!(!status.success(), "{status:?}");
        assert!(
            stderr.contains(&format!("the agent exited ({words})")),
            "{stderr}"
        );
    }
}

/// What the agent writes on stderr is shown as `[agent] …` lines whatever its bytes: a line
/// that is not UTF-8 is shown with U+FFFD, and the lines after it still are. The hub stopped
/// reading at such a line and closed the pipe, so the agent's next write to stderr failed
/// (`EPIPE`; a program that does not ignore `SIGPIPE` dies of it).
#[test]
fn the_agents_stderr_is_shown_whatever_its_bytes() {
    let mut hub = RawHub::start().listen();
    hub.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}));
    hub.wait_for(&|v| v["id"] == 1);
    let mut bad = b"cache at /tmp/caf".to_vec();
    bad.extend([0xe9, b'\n']);
    for (id, bytes) in [(2, bad), (3, b"still here\n".to_vec())] {
        hub.send(json!({"jsonrpc": "2.0", "id": id, "method": "_scripted/stderr", "params": {"bytes": bytes}}));
        let answer = hub.wait_for(&|v| v["id"] == id);
        assert_eq!(answer["result"], json!({"written": null}), "{answer}");
    }
    let (_, stderr) = hub.ended();
    assert!(
        stderr.contains("[agent] cache at /tmp/caf\u{fffd}\n")
            && stderr.contains("[agent] still here\n"),
        "{stderr}"
    );
}

/// The agent is killed by a signal: the answers and the hub's last words name it.
#[cfg(unix)]
#[test]
fn an_agent_killed_by_a_signal_is_said_to_be() {
    let mut hub = RawHub::start().listen();
    hub.two_prompts_waiting();
    hub.send(json!({"jsonrpc": "2.0", "id": 6, "method": "_scripted/pid", "params": {}}));
    let pid = hub.wait_for(&|v| v["id"] == 6)["result"]["pid"].to_string();
    let killed = std::process::Command::new("kill")
        .args(["-KILL", &pid])
        .status()
        .unwrap();
    assert!(killed.success(), "kill -KILL {pid}: {killed:?}");
    let rest = hub.rest();
    for id in [3, 4] {
        let answer = rest.iter().find(|v| v["id"] == id).unwrap_or_else(|| {
            panic!("prompt {id} was not answered before stdout ended: {rest:?}")
        });
        assert_eq!(
            answer["error"]["message"], "the agent behind the hub has exited (killed by signal 9)",
            "{answer}"
        );
        assert_eq!(answer["error"]["data"], json!({"exit": {"signal": 9}}));
    }
    let (status, stderr) = hub.ended();
    assert!(!status.success(), "{status:?}");
    assert!(
        stderr.contains("the agent exited (killed by signal 9)"),
        "{stderr}"
    );
}

/// The client stops reading (closes its end of the hub's stdout) before it closes stdin, with
/// an answer on the way: the hub's write finds no reader (`EPIPE`), and the hub still exits
/// cleanly, since its client left rather than failed. It once exited 1 with "Broken pipe".
#[test]
fn the_hub_exits_cleanly_when_its_client_stops_reading_before_it_closes_stdin() {
    use std::io::{BufRead, BufReader};
    let mut hub = RawHub::start();
    hub.send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 1}}),
    );
    let mut stdout = BufReader::new(hub.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let answer: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(answer["id"], 1, "{line}");

    drop(stdout);
    // Answered by the hub at once, before it can see its input end.
    hub.send(json!({"jsonrpc": "2.0", "id": 2, "method": "_asp/no-such-method", "params": {}}));
    let status = hub.exit_status();
    assert!(status.success(), "{status:?}");
}

/// Texts of the user and agent messages of a stream of `session/update` params, one entry per
/// message (consecutive chunks of one kind joined).
fn messages(updates: &[Value]) -> (Vec<String>, Vec<String>) {
    let (mut user, mut agent): (Vec<String>, Vec<String>) = (Vec::new(), Vec::new());
    let mut last = "";
    for u in updates {
        let kind = u["update"]["sessionUpdate"].as_str().unwrap_or("");
        let text = u["update"]["content"]["text"].as_str().unwrap_or("");
        let list = match kind {
            "user_message_chunk" => &mut user,
            "agent_message_chunk" => &mut agent,
            _ => {
                last = "";
                continue;
            }
        };
        if kind == last {
            list.last_mut().unwrap().push_str(text);
        } else {
            list.push(text.to_owned());
        }
        last = if kind == "user_message_chunk" {
            "user_message_chunk"
        } else {
            "agent_message_chunk"
        };
    }
    (user, agent)
}

/// The seed's harness switch, end to end through two hubs and the real converters: a hub over
/// a Claude Code home advertises its export kinds and exports; a second hub over an empty
/// Codex home imports and answers what it took and each session's new id; then the client
/// loads each new id through that second hub, whose agent (standing in for Codex) reads the
/// Codex store, and the conversation is there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_harness_switch_through_two_hubs_and_the_real_converters() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let source = root.join("samples/claude-code").display().to_string();
    let destination = tempfile::tempdir().unwrap();
    let dest = destination.path().display().to_string();

    // 1. The source's export kinds, and the export itself.
    let mut exported = Value::Null;
    drive(
        hub(&["--harness", "claude-code", "--home", &source], &[]),
        async |c| {
            let init = c.initialize().await;
            let asp = &init["agentCapabilities"]["_meta"]["asp"];
            let kinds = asp["agentState"]["export"].clone();
            for k in [
                "sessions",
                "instructions",
                "skills",
                "tools",
                "memory",
                "settings",
            ] {
                assert!(kinds.as_array().unwrap().contains(&json!(k)), "{asp}");
            }
            let described = c.request("_asp/state/describe", json!({})).await?;
            exported = c
                .request("_asp/state/export", json!({"kinds": kinds}))
                .await?;
            let sessions = exported["state"]["sessions"].as_array().unwrap();
            assert_eq!(
                json!(sessions.len()),
                described["kinds"]["sessions"],
                "describe counts what export gives"
            );
            Ok(())
        },
    )
    .await;

    // 2. The destination's import kinds, the import, and the answer.
    let store = format!("codex={dest}");
    let mut answer = Value::Null;
    drive(
        hub(
            &["--harness", "codex", "--home", &dest],
            &["--store", &store],
        ),
        async |c| {
            let init = c.initialize().await;
            let imports = init["agentCapabilities"]["_meta"]["asp"]["agentState"]["import"]
                .as_array()
                .unwrap()
                .clone();
            assert!(imports.contains(&json!("sessions")), "{imports:?}");
            // Hand over what the destination takes, as the seed's step 2 says.
            let state: serde_json::Map<String, Value> = exported["state"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| imports.contains(&json!(k)))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            answer = c
                .request("_asp/state/import", json!({"state": state}))
                .await?;
            let taken = answer["taken"].as_array().unwrap();
            assert!(taken.contains(&json!("sessions")), "{answer}");
            for n in answer["notTaken"].as_array().unwrap() {
                assert!(
                    n["reason"].as_str().is_some_and(|r| !r.is_empty()),
                    "every refusal says why: {n}"
                );
            }
            let map = answer["sessions"].as_object().unwrap();
            let sessions = exported["state"]["sessions"].as_array().unwrap();
            assert_eq!(
                map.len(),
                sessions.len(),
                "every session has its new id: {answer}"
            );

            // 3. Continue each chat: load the new id through the hub, from the Codex store.
            for s in sessions {
                let new_id = map[s["id"].as_str().unwrap()].as_str().unwrap();
                let cwd = s["cwd"].as_str().unwrap_or("/");
                c.request(
                    "session/load",
                    json!({"sessionId": new_id, "cwd": cwd, "mcpServers": []}),
                )
                .await?;
                let loaded: Vec<Value> = c
                    .seen
                    .all()
                    .into_iter()
                    .filter(|m| {
                        m["method"] == "session/update" && m["params"]["sessionId"] == new_id
                    })
                    .map(|m| m["params"].clone())
                    .collect();
                assert!(
                    !loaded.is_empty(),
                    "{} → {new_id}: nothing replayed",
                    s["id"]
                );
                let (user, agent) = messages(&loaded);
                assert!(!user.is_empty(), "{} → {new_id}: no prompts", s["id"]);
                let (src_user, src_agent) = messages(s["updates"].as_array().unwrap());
                assert_eq!(user, src_user, "{} → {new_id}: the user's prompts", s["id"]);
                let said = agent.join("\n");
                for a in src_agent.iter().filter(|a| !a.is_empty()) {
                    assert!(
                        said.contains(a.as_str()),
                        "{} → {new_id}: answer {a:?} is lost",
                        s["id"]
                    );
                }
            }
            Ok(())
        },
    )
    .await;
}

/// A home named with `--home` is the agent's home too: it runs with the variable that makes
/// its harness use that store (`CODEX_HOME` for Codex), unless the command sets it; without
/// `--home` nothing is added. Else the hub imports into one store while the agent serves
/// another (found by a new user's trial).
#[test]
fn a_home_named_is_the_agents_home_too() {
    let home = tempfile::tempdir().unwrap();
    let with = |agent: &[&str], home: Option<PathBuf>| {
        asp_hub::HubConfig::new(agent.iter().map(|s| (*s).to_owned()).collect())
            .with_harness("codex", home)
            .unwrap()
            .agent
    };
    let agent = with(&["codex-acp", "--x"], Some(home.path().to_path_buf()));
    assert!(
        agent[0].starts_with("CODEX_HOME=/") && agent[0].ends_with("/.codex"),
        "{agent:?}"
    );
    assert_eq!(agent[1..], ["codex-acp", "--x"]);
    let agent = with(
        &["CODEX_HOME=/elsewhere", "codex-acp"],
        Some(home.path().to_path_buf()),
    );
    assert_eq!(
        agent,
        ["CODEX_HOME=/elsewhere", "codex-acp"],
        "the command's own"
    );
    assert_eq!(with(&["codex-acp"], None), ["codex-acp"]);
}
