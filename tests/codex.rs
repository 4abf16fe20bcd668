//! The Codex converter, pinned against `samples/codex/EXPECTED.md`, the damaged fixtures in
//! `tests/fixtures/codex/`, and the write-back rules of `spec/harnesses/codex.md` §12: through
//! the library and through `asp-pack` / `asp-unpack`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::support::*;
use asp_convert::harness::ReadOptions;
use asp_convert::kit::pathmap::PathMap;
use asp_convert::kit::report::{Diagnostic, Diagnostics};
use asp_format::KindSet;
use asp_format::answer::ImportAnswer;
use asp_format::blob::{BlobSource, MemoryStore};
use asp_format::bundle::Bundle;
use asp_format::state::{McpServer, NoteBody, Session, SettingValue, State};
use predicates::prelude::PredicateBooleanExt;
use serde_json::{Value, json};

const A: &str = "01a1fe6b-30a4-77a2-b12a-76a63dd1d7e5";
const B: &str = "01a20271-1024-7681-a31d-f248f3c4db0a";
const C: &str = "01a21382-12a0-7552-982b-fe8c17c720e1";
const D: &str = "01a221b5-fabc-7282-a1a4-1ac14ae9430b";
const E: &str = "01a1f83a-cfc8-7f41-a357-d22735d28371";
const CLAUDE_SESSION: &str = "da41f528-2d0a-4f84-8acd-fe5d7087734b";

const HARNESS: &str = "codex";

/// Findings as the library hands them back, to ask them again.
fn collected(items: Vec<Diagnostic>) -> Diagnostics {
    let d = Diagnostics::new();
    for i in items {
        d.push(i);
    }
    d
}

fn sample_home() -> PathBuf {
    samples().join("codex")
}

fn fixture(name: &str) -> PathBuf {
    root().join("tests/fixtures/codex").join(name)
}

/// Reads a home through the library.
fn read(home: &Path) -> (State, MemoryStore, Diagnostics) {
    read_with(home, ReadOptions::default())
}

/// Writes a state into a home through the library.
fn write(
    home: &Path,
    state: &State,
    blobs: &dyn BlobSource,
    dry_run: bool,
) -> (ImportAnswer, Diagnostics) {
    let (answer, items) =
        crate::support::write_home(HARNESS, home, state, blobs, dry_run, &PathMap::default());
    (answer, collected(items))
}

fn session<'a>(state: &'a State, id: &str) -> &'a Session {
    state
        .sessions
        .iter()
        .flatten()
        .find(|s| s.id.as_str() == id)
        .unwrap_or_else(|| panic!("no session {id}"))
}

/// The `update` objects of a session's stream.
fn updates(store: &MemoryStore, s: &Session) -> Vec<Value> {
    let bytes = store.read_all(&s.updates).unwrap();
    String::from_utf8(bytes)
        .unwrap()
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            assert_eq!(v["sessionId"], s.id.as_str());
            v["update"].clone()
        })
        .collect()
}

fn of_kind<'a>(updates: &'a [Value], kind: &str) -> Vec<&'a Value> {
    updates
        .iter()
        .filter(|u| u["sessionUpdate"] == kind)
        .collect()
}

fn texts(updates: &[Value], kind: &str) -> Vec<String> {
    of_kind(updates, kind)
        .iter()
        .map(|u| u["content"]["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn rollouts(home: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walkdir::WalkDir::new(home.join(".codex"))
        .into_iter()
        .map(Result::unwrap)
        .filter(|e| e.file_name().to_string_lossy().starts_with("rollout-"))
        .map(|e| e.path().to_path_buf())
        .collect();
    out.sort();
    out
}

fn jsonl(path: &Path) -> Vec<Value> {
    fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn pack_sample_codex(out: &Path) {
    pack_home("codex", sample_home(), out).assert().success();
}

fn unpack_json(bundle: &Path, home: &Path, extra: &[&str]) -> Value {
    let out = asp_unpack()
        .arg(bundle)
        .args(["--to", "codex", "--home"])
        .arg(new_home(home))
        .arg("--json")
        .args(extra)
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "asp-unpack failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

// ---------------------------------------------------------------------------------------
// Reading: samples/codex/EXPECTED.md

#[test]
fn the_sample_home_has_the_counts_expected_md_gives() {
    let (state, store, diagnostics) = read(&sample_home());
    let sessions = state.sessions.as_ref().unwrap();
    assert_eq!(sessions.len(), 5);
    assert!(
        sessions
            .iter()
            .all(|s| s.harness.as_ref().unwrap().as_str() == "codex")
    );
    assert!(
        sessions
            .iter()
            .all(|s| s.cwd.is_some() && s.updated_at.is_some() && s.native.is_some())
    );
    let text = store
        .read_all(&state.instructions.as_ref().unwrap().text)
        .unwrap();
    assert_eq!(
        text,
        fs::read(sample_home().join(".codex/AGENTS.md")).unwrap()
    );
    let skills: Vec<&str> = state
        .skills
        .iter()
        .flatten()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(
        skills,
        ["release-notes", "sql-style"],
        "the bundled .system skill stays out"
    );
    let release = &state.skills.as_ref().unwrap()[0];
    let script = release
        .files
        .iter()
        .find(|f| f.path.as_str() == "scripts/collect.sh")
        .unwrap();
    assert_eq!(script.executable, cfg!(unix));
    assert_eq!(state.memory.as_ref().unwrap().len(), 4);
    let note = &state.memory.as_ref().unwrap()[0];
    assert_eq!(note.origin.harness.as_ref().unwrap().as_str(), "codex");
    assert_eq!(
        note.origin.path.as_deref(),
        Some(".codex/memories/MEMORY.md")
    );
    assert!(matches!(note.body, NoteBody::Text(_)));
    assert!(!diagnostics.any_lost(), "{:?}", diagnostics.items());
}

/// A token Codex reads from a variable (`bearer_token_env_var`, `env_http_headers`) is the
/// header every other harness spells with `${VAR}`; what ACP has no field for stays under
/// `_meta.codex`.
#[test]
fn mcp_servers_are_acp_servers_with_codex_only_keys_under_meta() {
    let (state, ..) = read(&sample_home());
    let tools = serde_json::to_value(state.tools.as_ref().unwrap()).unwrap();
    assert_eq!(
        tools,
        json!([
            {"name": "docs", "command": "npx", "args": ["-y", "@acme/docs-mcp", "--index", "/home/dev/shop/docs"],
             "env": [{"name": "DOCS_MCP_CACHE", "value": "/home/dev/.cache/docs-mcp"},
                     {"name": "DOCS_MCP_LOG", "value": "warn"}],
             "_meta": {"codex": {"startup_timeout_sec": 20, "tool_timeout_sec": 60, "enabled": true}}},
            {"type": "http", "name": "tracker", "url": "https://mcp.tracker.example.com/mcp",
             "headers": [{"name": "X-Workspace", "value": "acme"},
                         {"name": "Authorization", "value": "Bearer ${TRACKER_MCP_TOKEN}"}],
             "_meta": {"codex": {"enabled": false}}}
        ])
    );
}

/// The sample's `tracker` is switched off (`enabled = false`) and takes its token from
/// `TRACKER_MCP_TOKEN`. Carried, it keeps both: the token as a header each harness expands,
/// switched off where the harness can say so, and left out (said, exit 0) where it cannot,
/// rather than started.
#[test]
fn a_server_switched_off_in_codex_stays_off_and_keeps_its_token_variable() {
    let t = tempfile::tempdir().unwrap();
    let bundle = t.path().join("codex.aspstate");
    pack_sample_codex(&bundle);
    let carry = |to: &str| {
        let home = new_home(t.path().join(to));
        let out = asp_unpack()
            .arg(&bundle)
            .args(["--kinds", "tools", "--json", "--to", to, "--home"])
            .arg(&home)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{to}: {out:?}");
        let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
        (home, answer)
    };
    let (home, answer) = carry("claude-code");
    let not_taken = answer["notTaken"].to_string();
    assert!(
        not_taken.contains("MCP server tracker is switched off in Codex (`enabled = false`)"),
        "{answer}"
    );
    let claude: Value =
        serde_json::from_slice(&fs::read(home.join(".claude.json")).unwrap()).unwrap();
    assert!(claude["mcpServers"]["docs"].is_object(), "{claude}");
    assert!(claude["mcpServers"].get("tracker").is_none(), "{claude}");
    for (to, file) in [
        ("gemini", ".gemini/settings.json"),
        ("qwen", ".qwen/settings.json"),
    ] {
        let (home, answer) = carry(to);
        assert_eq!(answer["notTaken"], json!([]), "{to}: {answer}");
        let settings: Value = serde_json::from_slice(&fs::read(home.join(file)).unwrap()).unwrap();
        assert_eq!(settings["mcp"]["excluded"], json!(["tracker"]), "{to}");
        assert_eq!(
            settings["mcpServers"]["tracker"]["headers"]["Authorization"],
            "Bearer ${TRACKER_MCP_TOKEN}",
            "{to}"
        );
    }
    let (home, _) = carry("opencode");
    let opencode: Value =
        serde_json::from_slice(&fs::read(home.join(".config/opencode/opencode.json")).unwrap())
            .unwrap();
    let tracker = &opencode["mcp"]["tracker"];
    assert_eq!(tracker["enabled"], false, "{opencode}");
    assert_eq!(
        tracker["headers"]["Authorization"], "Bearer {env:TRACKER_MCP_TOKEN}",
        "{opencode}"
    );
    // And back into Codex: the keys it had.
    let (home, _) = carry("codex");
    let config = fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    assert!(
        config.contains("enabled = false\nbearer_token_env_var = \"TRACKER_MCP_TOKEN\"\n"),
        "{config}"
    );
}

/// A conversation carried into Codex again, after this home's settings changed, is the thread
/// already there: the settings each turn was composed with (the session's, else this home's
/// `config.toml`) make no other conversation.
#[test]
fn a_session_carried_again_after_the_settings_changed_is_already_there() {
    let t = tempfile::tempdir().unwrap();
    let bundle = t.path().join("claude.aspstate");
    pack_home("claude-code", samples().join("claude-code"), &bundle)
        .args(["--kinds", "sessions"])
        .assert()
        .code(predicates::ord::eq(0).or(predicates::ord::eq(3)));
    let home = new_home(t.path().join("codex"));
    let carry = || {
        let out = asp_unpack()
            .arg(&bundle)
            .args(["--to", "codex", "--json", "--session"])
            .arg("71958462-4bb8-46b6-a36a-1becf56c22dc")
            .arg("--home")
            .arg(&home)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    carry();
    let first = rollouts(&home);
    assert_eq!(first.len(), 1);
    fs::write(
        home.join(".codex/config.toml"),
        "model = \"gpt-5.4\"\nmodel_reasoning_effort = \"low\"\n",
    )
    .unwrap();
    let again = carry();
    assert_eq!(
        again["_meta"]["asp"]["alreadyThere"],
        json!(["71958462-4bb8-46b6-a36a-1becf56c22dc"]),
        "{again}"
    );
    assert_eq!(rollouts(&home), first, "no copy beside it");
    assert!(
        again["_meta"]["asp"]["findings"].to_string().contains(
            "the same conversation is here, its turns recorded with other settings; kept as it is"
        ),
        "{again}"
    );
}

/// Claude Code's auto memory is per project; Codex keeps the notes it carries under
/// `memories/extensions/ad_hoc/notes/<project folder>/`. Carried back with its sessions, each
/// note goes to the project its path names, byte for byte; into a home without that project
/// it is not taken (said), as any note of no project.
#[test]
fn claude_code_memory_comes_back_from_codex_to_its_project() {
    let t = tempfile::tempdir().unwrap();
    let claude = samples().join("claude-code");
    let codex = new_home(t.path().join("codex"));
    let to_codex = t.path().join("to-codex.aspstate");
    pack_home("claude-code", &claude, &to_codex)
        .assert()
        .code(predicates::ord::eq(0).or(predicates::ord::eq(3)));
    asp_unpack()
        .arg(&to_codex)
        .args(["--to", "codex", "-q", "--home"])
        .arg(&codex)
        .assert()
        .code(predicates::ord::eq(0).or(predicates::ord::eq(3)));
    let back = t.path().join("back.aspstate");
    pack_home("codex", &codex, &back)
        .assert()
        .code(predicates::ord::eq(0).or(predicates::ord::eq(3)));
    let memory = ".claude/projects/-home-dev-shop/memory";
    let home = new_home(t.path().join("claude"));
    // A dry run answers as the write does (the project folder is the sessions', not yet made).
    let dry = asp_unpack()
        .arg(&back)
        .args(["--to", "claude-code", "--dry-run", "--json", "--home"])
        .arg(&home)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&dry.stdout);
    assert!(!said.contains("belongs to no project"), "{said}");
    assert!(nothing_in(&home), "a dry run writes nothing");
    let out = asp_unpack()
        .arg(&back)
        .args(["--to", "claude-code", "--json", "--home"])
        .arg(&home)
        .output()
        .unwrap();
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(!answer.contains("belongs to no project"), "{answer}");
    for note in [
        "MEMORY.md",
        "project_deploy_freeze.md",
        "feedback_money_in_cents.md",
    ] {
        assert_eq!(
            fs::read(home.join(memory).join(note)).unwrap(),
            fs::read(claude.join(memory).join(note)).unwrap(),
            "{note}"
        );
    }
    // With the home moved (`--map-path /home/dev=/home/me`), the sessions go to the new
    // project folder, and so do the notes the old folder named.
    let moved = new_home(t.path().join("moved"));
    let out = asp_unpack()
        .arg(&back)
        .args([
            "--to",
            "claude-code",
            "--map-path",
            "/home/dev=/home/me",
            "--json",
            "--home",
        ])
        .arg(&moved)
        .output()
        .unwrap();
    let answer = String::from_utf8_lossy(&out.stdout);
    assert!(!answer.contains("belongs to no project"), "{answer}");
    assert_eq!(
        fs::read(moved.join(".claude/projects/-home-me-shop/memory/MEMORY.md")).unwrap(),
        fs::read(claude.join(memory).join("MEMORY.md")).unwrap(),
    );
    // Memory alone, into a home without the project: said, not written.
    let empty = new_home(t.path().join("empty"));
    let out = asp_unpack()
        .arg(&back)
        .args([
            "--kinds",
            "memory",
            "--to",
            "claude-code",
            "--json",
            "--home",
        ])
        .arg(&empty)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("belongs to no project"),
        "{out:?}"
    );
}

/// Codex's `reasoning_effort` and Claude Code's `effort` are the one ACP `thought_level`
/// option: carried either way, the level is kept when the other harness has it.
#[test]
fn reasoning_effort_is_claude_codes_effort_level() {
    let t = tempfile::tempdir().unwrap();
    let bundle = t.path().join("codex.aspstate");
    pack_home("codex", sample_home(), &bundle)
        .arg("--kinds")
        .arg("settings")
        .assert()
        .success();
    let home = new_home(t.path().join("claude"));
    let out = asp_unpack()
        .arg(&bundle)
        .args(["--to", "claude-code", "--json", "--home"])
        .arg(&home)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("reasoning_effort"),
        "not refused: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let settings: Value =
        serde_json::from_slice(&fs::read(home.join(".claude/settings.json")).unwrap()).unwrap();
    // The sample's global `model_reasoning_effort = "medium"`.
    assert_eq!(settings["effortLevel"], "medium", "{settings}");
}

#[test]
fn settings_use_the_option_ids_of_codex_acp() {
    let (state, ..) = read(&sample_home());
    let s = state.settings.unwrap();
    let sel = |v: &str| SettingValue::Select(v.into());
    assert_eq!(s["model"], sel("gpt-5.5"));
    assert_eq!(s["reasoning_effort"], sel("medium"));
    assert_eq!(
        s["mode"],
        sel("auto"),
        "on-request + workspace-write is codex-acp's `auto` preset"
    );
    assert_eq!(s["model_reasoning_summary"], sel("auto"));
}

#[test]
fn session_a_replays_each_message_once_and_every_tool_with_its_result() {
    let (state, store, _) = read(&sample_home());
    let a = session(&state, A);
    assert_eq!(a.title, "Deploy script: dry-run flag and header");
    assert_eq!(a.cwd.as_deref(), Some("/home/dev/shop"));
    assert_eq!(a.updated_at.as_deref(), Some("2026-11-21T14:11:27.700Z"));
    let u = updates(&store, a);
    assert_eq!(
        texts(&u, "user_message_chunk"),
        [
            "Add a --dry-run flag to deploy.sh",
            "Check our docs for the dry-run convention and compare with rsync.",
            "Also print a header line, and note the change in a changelog."
        ],
        "injected context (AGENTS.md, environment, permissions) never becomes a user message"
    );
    let agent = texts(&u, "agent_message_chunk");
    assert_eq!(
        agent.len(),
        4,
        "no doubles from event_msg, no compaction summary: {agent:?}"
    );
    assert_eq!(agent[0], "I'll read `deploy.sh` first.");
    assert!(agent[3].starts_with("Done: `deploy.sh` now prints"));
    let phases: Vec<&Value> = of_kind(&u, "agent_message_chunk")
        .iter()
        .map(|c| &c["_meta"]["codex"]["phase"])
        .collect();
    assert_eq!(
        phases,
        [
            &json!("commentary"),
            &json!("final_answer"),
            &json!("final_answer"),
            &json!("final_answer")
        ]
    );
    let thoughts = of_kind(&u, "agent_thought_chunk");
    assert_eq!(thoughts.len(), 4);
    assert_eq!(
        thoughts[0]["content"]["text"],
        "**Inspecting deploy script**\n\nI need to read deploy.sh before changing it."
    );
    assert!(
        thoughts[0]["_meta"]["codex"]["encrypted_content"].is_string(),
        "encrypted reasoning is kept, only in _meta"
    );

    let calls = of_kind(&u, "tool_call");
    let ids: Vec<&str> = calls
        .iter()
        .map(|c| c["toolCallId"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        [
            "call_dW1xQk3sTz8aPf0R",
            "call_Qz7kVb3nRx1wTg6M",
            "call_Ty4mNc8qWe2rUi5O",
            "call_Pa9sDf3gHj6kLz1X",
            "ws_45a50e5488c01f9fbacdd50ed2718240bbe4ff45fefc4acc",
            "call_Ts6gYh2jKl9zXc3V",
            "call_Mk3jHg7fDs1aPo9I",
            "compaction-63",
            "call_Zx8cVb2nMq4wEr6T",
        ]
    );
    let kind = |i: usize| calls[i].get("kind").cloned().unwrap_or(json!("other"));
    assert_eq!(
        (0..9).map(kind).collect::<Vec<_>>(),
        [
            "execute", "edit", "execute", "execute", "fetch", "search", "other", "think", "edit"
        ]
    );
    assert_eq!(calls[0]["title"], "cat deploy.sh");
    assert_eq!(calls[6]["title"], "docs.search_docs");
    assert_eq!(
        calls[6]["rawInput"],
        json!({"query": "deploy dry-run convention", "limit": 3})
    );
    assert_eq!(
        calls[1]["locations"],
        json!([{"path": "/home/dev/shop/deploy.sh"}])
    );
    assert_eq!(calls[1]["content"][0]["type"], "diff");
    assert_eq!(calls[1]["content"][0]["path"], "/home/dev/shop/deploy.sh");
    let changelog = &calls[8]["content"][1];
    assert_eq!(changelog["path"], "/home/dev/shop/CHANGELOG.md");
    assert_eq!(
        changelog["oldText"],
        Value::Null,
        "an added file has no old text"
    );
    assert!(
        changelog["newText"]
            .as_str()
            .unwrap()
            .starts_with("# Changelog\n\n- deploy.sh: ")
    );

    let results: BTreeMap<&str, &Value> = of_kind(&u, "tool_call_update")
        .into_iter()
        .map(|r| (r["toolCallId"].as_str().unwrap(), r))
        .collect();
    assert_eq!(
        results.len(),
        8,
        "every call but the compaction gets one update"
    );
    let status = |id: &str| results[id]["status"].as_str().unwrap();
    assert_eq!(status("call_dW1xQk3sTz8aPf0R"), "completed");
    assert_eq!(status("call_Pa9sDf3gHj6kLz1X"), "failed", "exit code 127");
    assert_eq!(
        status("ws_45a50e5488c01f9fbacdd50ed2718240bbe4ff45fefc4acc"),
        "completed"
    );
    assert_eq!(status("call_Mk3jHg7fDs1aPo9I"), "completed");
    assert_eq!(
        results["call_dW1xQk3sTz8aPf0R"]["content"][0]["content"]["text"],
        "#!/bin/sh\nset -e\nrsync -a dist/ prod:/srv/app\n"
    );
    assert_eq!(
        results["call_Pa9sDf3gHj6kLz1X"]["content"][0]["content"]["text"],
        "/bin/bash: line 1: pnpm: command not found\n"
    );
    assert!(
        results["call_Mk3jHg7fDs1aPo9I"]["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .starts_with("deploy.md#dry-run: Every deploy script must support --dry-run")
    );
    assert!(
        results["call_Ts6gYh2jKl9zXc3V"]["rawOutput"].is_array(),
        "the tool_search result is its tools list"
    );
    assert!(
        results["call_Qz7kVb3nRx1wTg6M"].get("content").is_none(),
        "an edit's output does not replace its diffs"
    );

    let plans = of_kind(&u, "plan");
    assert_eq!(plans.len(), 2);
    assert_eq!(
        plans[0]["entries"],
        json!([
            {"content": "Read deploy.sh", "priority": "medium", "status": "completed"},
            {"content": "Add --dry-run handling", "priority": "medium", "status": "in_progress"},
            {"content": "Run the script in dry-run mode and the tests", "priority": "medium", "status": "pending"}
        ])
    );
    assert_eq!(
        plans[0]["_meta"]["codex"]["explanation"],
        "Small, self-contained change to deploy.sh."
    );
    assert!(
        plans[1]["entries"]
            .as_array()
            .unwrap()
            .iter()
            .all(|e| e["status"] == "completed")
    );

    let compaction = calls[7];
    assert_eq!(compaction["title"], "Compact conversation");
    assert_eq!(compaction["status"], "completed");
    assert!(
        compaction["content"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .starts_with("Summary of the conversation so far")
    );
    assert!(compaction["_meta"]["codex"]["compacted"]["replacement_history"].is_array());

    let usage = of_kind(&u, "usage_update");
    assert_eq!(usage[0]["used"], 23000);
    assert_eq!(usage[0]["size"], 258400);
}

#[test]
fn settings_changes_are_config_and_mode_updates_where_they_change() {
    let (state, store, _) = read(&sample_home());
    let u = updates(&store, session(&state, A));
    let modes: Vec<&str> = of_kind(&u, "current_mode_update")
        .iter()
        .map(|m| m["currentModeId"].as_str().unwrap())
        .collect();
    assert_eq!(
        modes,
        ["on-request/danger-full-access", "full-access"],
        "turn 4's unchanged context gives nothing"
    );
    let configs = of_kind(&u, "config_option_update");
    assert_eq!(configs.len(), 2);
    let current = |c: &Value, id: &str| {
        c["configOptions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|o| o["id"] == id)
            .unwrap()["currentValue"]
            .clone()
    };
    assert_eq!(current(configs[0], "model"), "gpt-5.5");
    assert_eq!(current(configs[0], "reasoning_effort"), "medium");
    assert_eq!(current(configs[1], "model"), "gpt-5.4");
    assert_eq!(current(configs[1], "reasoning_effort"), "high");
    // The first turn's context, the injected messages and the turn start are kept verbatim.
    let records = configs[0]["_meta"]["codex"]["records"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let first_mode = of_kind(&u, "current_mode_update")[0]["_meta"]["codex"]["records"]
        .as_array()
        .cloned()
        .unwrap();
    let kinds: Vec<&str> = first_mode
        .iter()
        .chain(&records)
        .map(|r| r["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "event_msg",
            "response_item",
            "response_item",
            "turn_context"
        ]
    );
}

#[test]
fn titles_come_from_the_index_then_renames_then_the_first_prompt() {
    let (state, store, _) = read(&sample_home());
    assert_eq!(session(&state, E).title, "Why deploy.sh uses set -e");
    assert_eq!(session(&state, D).title, "Most urgent TODO");
    assert_eq!(session(&state, B).title, "Summarize notes/todo.md");
    assert_eq!(
        session(&state, C).title,
        "How do I list git branches sorted by last commit date?"
    );
    // E's renames are in the rollout (0.128): one session_info_update each, where they happened.
    let e = updates(&store, session(&state, E));
    let infos: Vec<&Value> = of_kind(&e, "session_info_update");
    assert_eq!(
        infos.len(),
        2,
        "index entries that repeat the renames are not doubled"
    );
    assert_eq!(infos[1]["title"], "Why deploy.sh uses set -e");
    assert_eq!(infos[1]["updatedAt"], "2026-11-20T09:16:44.780Z");
    // A was renamed through the index only: its namings come in at their time.
    let a = updates(&store, session(&state, A));
    let titles: Vec<&str> = of_kind(&a, "session_info_update")
        .iter()
        .map(|i| i["title"].as_str().unwrap())
        .collect();
    assert_eq!(
        titles,
        ["Deploy dry-run", "Deploy script: dry-run flag and header"]
    );
    // B never got a name: no session_info_update at all.
    assert!(of_kind(&updates(&store, session(&state, B)), "session_info_update").is_empty());
}

#[test]
fn archived_compressed_and_paginated_threads_read_like_the_others() {
    let (state, store, _) = read(&sample_home());
    let b = session(&state, B);
    assert_eq!(b.meta.as_ref().unwrap()["codex"]["archived"], true);
    assert_eq!(b.cwd.as_deref(), Some("/home/dev/notes"));
    let bu = updates(&store, b);
    assert_eq!(
        texts(&bu, "user_message_chunk"),
        ["Summarize notes/todo.md"]
    );
    assert_eq!(of_kind(&bu, "tool_call")[0]["title"], "cat todo.md");

    let c = session(&state, C);
    let native = &c.native.as_ref().unwrap().files[0];
    assert!(
        native.path.as_str().ends_with(".jsonl.zst"),
        "the compressed file is carried as it is"
    );
    assert_eq!(c.meta.as_ref().unwrap()["codex"]["format"], "paginated");
    let cu = updates(&store, c);
    assert_eq!(
        texts(&cu, "user_message_chunk"),
        ["How do I list git branches sorted by last commit date?"]
    );
    assert_eq!(
        texts(&cu, "agent_thought_chunk"),
        ["**Recalling git for-each-ref**"]
    );
    assert_eq!(texts(&cu, "agent_message_chunk").len(), 1);
    assert_eq!(of_kind(&cu, "usage_update")[0]["used"], 33500);

    let du = updates(&store, session(&state, D));
    assert_eq!(
        texts(&du, "user_message_chunk"),
        ["Which TODO is most urgent?"]
    );
    assert_eq!(
        texts(&du, "agent_thought_chunk"),
        ["**Reading the TODO list**"]
    );
    assert_eq!(of_kind(&du, "tool_call")[0]["kind"], "execute");
    assert_eq!(of_kind(&du, "tool_call_update")[0]["status"], "completed");
    assert!(texts(&du, "agent_message_chunk")[0].starts_with("Renewing the TLS certificate"));
}

// ---------------------------------------------------------------------------------------
// Reading: damaged and old files

#[test]
fn a_line_that_is_not_json_is_reported_with_file_and_line_and_skipped() {
    let (state, store, diagnostics) = read(&fixture("nonjson-line"));
    let e = session(&state, E);
    assert_eq!(e.title, "Why deploy.sh uses set -e");
    let u = updates(&store, e);
    assert_eq!(
        texts(&u, "user_message_chunk"),
        ["Why does deploy.sh use set -e?"]
    );
    assert_eq!(texts(&u, "agent_thought_chunk"), ["**Explaining set -e**"]);
    assert!(texts(&u, "agent_message_chunk")[0].starts_with("`set -e` makes the script stop"));
    let items = diagnostics.items();
    assert_eq!(items.len(), 1, "{items:?}");
    assert_eq!(items[0].line, Some(8));
    assert!(
        items[0]
            .file()
            .unwrap()
            .ends_with("rollout-2026-11-20T09-12-47-01a1f83a-cfc8-7f41-a357-d22735d28371.jsonl")
    );
}

#[test]
fn a_cut_off_last_line_is_reported_and_the_rest_is_read() {
    let (state, store, diagnostics) = read(&fixture("truncated-last-line"));
    let e = session(&state, E);
    assert_eq!(e.title, "set -e question", "the remaining rename names it");
    assert_eq!(
        texts(&updates(&store, e), "user_message_chunk"),
        ["Why does deploy.sh use set -e?"]
    );
    let items = diagnostics.items();
    assert_eq!(items.len(), 1);
    assert_eq!(items[0].line, Some(16));
    assert!(items[0].message.contains("incomplete"), "{}", items[0]);
}

#[test]
fn the_early_flat_format_is_read() {
    let (state, store, _) = read(&fixture("legacy-flat"));
    let s = session(&state, "5973b6c0-94b8-487b-a530-2aeb6098ae0e");
    assert_eq!(
        s.cwd.as_deref(),
        Some("/home/dev/shop"),
        "from the environment context"
    );
    assert_eq!(s.title, "List the files in dist/");
    let u = updates(&store, s);
    assert_eq!(
        texts(&u, "user_message_chunk"),
        ["List the files in dist/"],
        "<user_instructions> stays out"
    );
    assert_eq!(
        texts(&u, "agent_thought_chunk"),
        ["**Listing dist directory**"]
    );
    let call = of_kind(&u, "tool_call")[0];
    assert_eq!(
        (
            call["toolCallId"].as_str(),
            call["kind"].as_str(),
            call["title"].as_str()
        ),
        (
            Some("call_Lg8mNb2vCx5zAs1Q"),
            Some("execute"),
            Some("ls dist")
        )
    );
    let result = of_kind(&u, "tool_call_update")[0];
    assert_eq!(result["status"], "completed");
    assert_eq!(result["content"][0]["content"]["text"], "index.html\n");
    assert_eq!(
        texts(&u, "agent_message_chunk"),
        ["`dist/` contains a single file: `index.html`."]
    );
}

#[test]
fn damaged_stores_still_pack_and_say_where_the_damage_is() {
    let dir = tmp();
    let out = dir.path().join("x.aspstate");
    let assert = pack_home("codex", fixture("nonjson-line"), &out)
        .assert()
        .code(0);
    let stderr = String::from_utf8_lossy(&assert.get_output().stderr).into_owned();
    assert!(
        stderr.contains(
            "rollout-2026-11-20T09-12-47-01a1f83a-cfc8-7f41-a357-d22735d28371.jsonl:8: not JSON"
        ),
        "{stderr}"
    );
    assert!(out.exists());
}

#[test]
fn codex_home_is_honoured_only_when_no_home_is_named() {
    let dir = tmp();
    let out = dir.path().join("env.aspstate");
    let empty_home = dir.path().join("home");
    fs::create_dir(&empty_home).unwrap();
    asp_pack()
        .args(["--from", "codex", "--kinds", "sessions", "-o"])
        .arg(&out)
        .env("HOME", &empty_home)
        .env("CODEX_HOME", sample_home().join(".codex"))
        .assert()
        .success()
        .stdout(predicates::str::contains("packed 5 sessions"));
    let named = dir.path().join("named.aspstate");
    asp_pack()
        .args(["--from", "codex", "--kinds", "sessions", "--home"])
        .arg(&empty_home)
        .arg("-o")
        .arg(&named)
        .env("CODEX_HOME", sample_home().join(".codex"))
        .assert()
        .code(1)
        .stderr(predicates::str::contains("holds no codex store"))
        .stderr(predicates::str::contains(
            empty_home.join(".codex").display().to_string(),
        ));
}

// ---------------------------------------------------------------------------------------
// Writing: restore, no-overwrite, foreign sessions, indexes, config

#[test]
fn a_codex_backup_restores_byte_for_byte_at_the_same_paths() {
    let dir = tmp();
    let bundle = dir.path().join("codex.aspstate");
    pack_sample_codex(&bundle);
    let home = dir.path().join("home");
    let answer = unpack_json(&bundle, &home, &[]);
    assert_eq!(answer["notTaken"], json!([]));
    for id in [A, B, C, D, E] {
        assert_eq!(answer["sessions"][id], id);
    }
    let original = files_in(&sample_home().join(".codex"));
    let restored = files_in(&home.join(".codex"));
    for (path, bytes) in &original {
        if path.contains("sessions/")
            || path.starts_with("memories/")
            || path == "AGENTS.md"
            || path.starts_with("skills/sql-style")
        {
            assert!(
                restored.get(path) == Some(bytes),
                "{path} is not restored byte for byte"
            );
        }
    }
    assert!(
        !restored.keys().any(|p| p.contains(".system")),
        "bundled skills are Codex's to install"
    );
    assert_eq!(
        files_in(&home.join(".agents")),
        files_in(&sample_home().join(".agents")),
        "user skills go back to ~/.agents/skills"
    );
    // Named threads are named again; the thread index is Codex's to create.
    let index = fs::read_to_string(home.join(".codex/session_index.jsonl")).unwrap();
    let names: Vec<(String, String)> = index
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| {
            (
                v["id"].as_str().unwrap().to_owned(),
                v["thread_name"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        names,
        [
            (E.to_owned(), "Why deploy.sh uses set -e".to_owned()),
            (
                A.to_owned(),
                "Deploy script: dry-run flag and header".to_owned()
            ),
            (D.to_owned(), "Most urgent TODO".to_owned())
        ]
    );
    assert!(!home.join(".codex/state_5.sqlite").exists());

    // Packing the restored home gives the same conversations back.
    let (before, bstore, _) = read(&sample_home());
    let (after, astore, _) = read(&home);
    for s in before.sessions.iter().flatten() {
        let t = session(&after, s.id.as_str());
        assert_eq!(t.title, s.title);
        let strip = |u: Vec<Value>| -> Vec<Value> {
            u.into_iter()
                .filter(|u| u["sessionUpdate"] != "session_info_update")
                .collect()
        };
        assert_eq!(
            strip(updates(&astore, t)),
            strip(updates(&bstore, s)),
            "session {}",
            s.id
        );
    }
}

#[test]
fn a_different_version_of_a_thread_is_kept_beside_it_under_a_new_uuid() {
    let dir = tmp();
    let bundle = dir.path().join("codex.aspstate");
    pack_sample_codex(&bundle);
    let home = dir.path().join("home");
    copy_dir(&sample_home(), &home);
    let rollout = home.join(".codex/sessions/2026/11/20/rollout-2026-11-20T09-12-47-01a1f83a-cfc8-7f41-a357-d22735d28371.jsonl");
    // A line the carried version does not have, before its last (one after it would be the
    // thread continued here, which holds all the carried one has: already there).
    let mut changed = fs::read(&rollout).unwrap();
    crate::support::diverge(&mut changed, b"{\"timestamp\":\"2026-11-20T10:00:00.000Z\",\"type\":\"event_msg\",\"payload\":{\"type\":\"turn_aborted\"}}\n");
    fs::write(&rollout, &changed).unwrap();
    let before = files_in(&home);
    let answer = unpack_json(&bundle, &home, &["--kinds", "sessions"]);
    let new_id = answer["sessions"][E].as_str().unwrap().to_owned();
    assert_ne!(new_id, E);
    assert_eq!(new_id.len(), 36);
    for id in [A, B, C, D] {
        assert_eq!(
            answer["sessions"][id], id,
            "identical threads are already there"
        );
    }
    assert_eq!(
        fs::read(&rollout).unwrap(),
        changed,
        "the user's version is untouched"
    );
    let copy = rollout.with_file_name(format!("rollout-2026-11-20T09-12-47-{new_id}.jsonl"));
    let lines = jsonl(&copy);
    assert_eq!(lines[0]["payload"]["id"], new_id.as_str());
    assert_eq!(lines.len(), 16);
    let after = files_in(&home);
    for (path, bytes) in &before {
        if path != ".codex/session_index.jsonl" && path != ".codex/state_5.sqlite" {
            assert!(after.get(path) == Some(bytes), "{path} changed");
        }
    }
    // Importing the same bundle again finds the copy.
    let again = unpack_json(&bundle, &home, &["--kinds", "sessions"]);
    assert_eq!(again["sessions"][E], new_id.as_str());
}

#[test]
fn sessions_from_another_harness_are_written_as_codex_lists_and_resumes_them() {
    let dir = tmp();
    let home = dir.path().join("home");
    let answer = unpack_json(&samples().join("state.aspstate"), &home, &[]);
    assert_eq!(
        answer["sessions"][CLAUDE_SESSION], CLAUDE_SESSION,
        "UUID ids are kept"
    );
    let telegram = answer["sessions"]["telegram:42"].as_str().unwrap();
    assert!(
        telegram.len() == 36 && &telegram[14..15] == "7",
        "a non-UUID id gets a UUIDv7: {telegram}"
    );
    let files = rollouts(&home);
    assert_eq!(files.len(), 2);
    for f in &files {
        let name = f.file_name().unwrap().to_string_lossy().into_owned();
        let lines = jsonl(f);
        let id = lines[0]["payload"]["id"].as_str().unwrap();
        assert!(
            name.starts_with("rollout-2026-11-2") && name.ends_with(&format!("-{id}.jsonl")),
            "{name}"
        );
        assert_eq!(lines[0]["type"], "session_meta");
        assert_eq!(
            lines[0]["payload"]["source"], "cli",
            "an interactive source, so the picker shows it"
        );
        assert!(lines.iter().take(5).any(|l| l["type"] == "turn_context"));
        let user_items = lines
            .iter()
            .filter(|l| l["payload"]["type"] == "message" && l["payload"]["role"] == "user")
            .count();
        let user_events = lines
            .iter()
            .filter(|l| l["payload"]["type"] == "user_message")
            .count();
        assert_eq!(
            user_items, user_events,
            "each user turn has its event_msg, or Codex does not list it"
        );
        assert!(
            lines[..6]
                .iter()
                .any(|l| l["payload"]["type"] == "user_message")
        );
        let calls: Vec<&Value> = lines
            .iter()
            .filter(|l| l["payload"]["type"] == "function_call")
            .collect();
        for c in &calls {
            assert!(
                c["payload"]["arguments"].is_string(),
                "arguments is a JSON string"
            );
            let id = &c["payload"]["call_id"];
            assert_eq!(
                lines
                    .iter()
                    .filter(|l| l["payload"]["type"] == "function_call_output"
                        && &l["payload"]["call_id"] == id)
                    .count(),
                1,
                "call {id} has exactly one output"
            );
        }
        assert!(!fs::read_to_string(f).unwrap().contains("encrypted_content"));
        assert!(
            !fs::read_to_string(f).unwrap().contains("signature"),
            "no foreign signatures reach Codex"
        );
    }
    let index = fs::read_to_string(home.join(".codex/session_index.jsonl")).unwrap();
    assert!(index.contains(&format!(
        "{{\"id\":\"{CLAUDE_SESSION}\",\"thread_name\":\"Add dry-run flag to deploy script\""
    )));
    assert!(index.contains(&format!(
        "{{\"id\":\"{telegram}\",\"thread_name\":\"Which tests cover the checkout flow?\""
    )));

    // Read back, the conversation is the one that was written.
    let (state, store, _) = read(&home);
    let claude = session(&state, CLAUDE_SESSION);
    assert_eq!(claude.title, "Add dry-run flag to deploy script");
    let u = updates(&store, claude);
    assert_eq!(
        texts(&u, "user_message_chunk"),
        ["Add a --dry-run flag to deploy.sh"]
    );
    assert_eq!(
        texts(&u, "agent_thought_chunk"),
        ["I should read deploy.sh before editing it."]
    );
    assert_eq!(
        texts(&u, "agent_message_chunk"),
        ["Added `--dry-run`: the script now prints the rsync command instead of running it."]
    );
    let calls = of_kind(&u, "tool_call");
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0]["title"].as_str(), calls[0]["kind"].as_str()),
        (Some("Read deploy.sh"), Some("read"))
    );
    assert_eq!(calls[0]["_meta"]["claudeCode"]["toolName"], "Read");
    assert_eq!(
        (calls[1]["title"].as_str(), calls[1]["kind"].as_str()),
        (Some("Edit deploy.sh"), Some("edit"))
    );
    assert_eq!(calls[1]["content"][0]["type"], "diff");
    let results = of_kind(&u, "tool_call_update");
    assert_eq!(
        results[0]["rawOutput"],
        "     1→#!/bin/sh\n     2→rsync -a dist/ prod:/srv/app\n"
    );
    assert!(results.iter().all(|r| r["status"] == "completed"));
    assert_eq!(
        of_kind(&u, "plan")[0]["entries"][0]["content"],
        "Parse --dry-run"
    );
}

#[test]
fn sessions_alone_into_a_new_home_leave_no_config_toml_behind() {
    // Nothing goes into config.toml when only sessions come: a missing file stays missing
    // (an empty one was written before).
    let dir = tmp();
    let home = dir.path().join("home");
    let answer = unpack_json(
        &samples().join("state.aspstate"),
        &home,
        &["--kinds", "sessions"],
    );
    assert_eq!(answer["taken"], json!(["sessions"]), "{answer}");
    assert_eq!(rollouts(&home).len(), 2);
    assert!(!home.join(".codex/config.toml").exists());
    // The settings kind does write it.
    let other = dir.path().join("other");
    unpack_json(
        &samples().join("state.aspstate"),
        &other,
        &["--kinds", "settings"],
    );
    let text = fs::read_to_string(other.join(".codex/config.toml")).unwrap();
    assert!(!text.trim().is_empty());
}

#[test]
fn the_thread_index_gets_one_row_per_new_thread_with_only_its_columns() {
    let dir = tmp();
    let home = dir.path().join("home");
    copy_dir(&sample_home(), &home);
    let db = home.join(".codex/state_5.sqlite");
    let dump = |db: &Path| -> Vec<Vec<String>> {
        let conn = rusqlite::Connection::open(db).unwrap();
        let mut stmt = conn.prepare("SELECT * FROM threads ORDER BY id").unwrap();
        let n = stmt.column_count();
        stmt.query_map([], |r| {
            Ok((0..n)
                .map(|i| format!("{:?}", r.get_ref(i).unwrap()))
                .collect::<Vec<_>>())
        })
        .unwrap()
        .map(Result::unwrap)
        .collect()
    };
    let before = dump(&db);
    // The home named relative to where the command runs: the row's path is absolute all
    // the same, since Codex opens it from anywhere.
    let out = asp_unpack()
        .arg(samples().join("state.aspstate"))
        .args([
            "--to", "codex", "--home", "home", "--json", "--kinds", "sessions",
        ])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let after = dump(&db);
    assert_eq!(after.len(), before.len() + 2);
    for row in &before {
        assert!(after.contains(row), "an existing row changed: {row:?}");
    }
    let conn = rusqlite::Connection::open(&db).unwrap();
    let telegram = answer["sessions"]["telegram:42"].as_str().unwrap();
    let (path, source, preview, title, mode, history): (String, String, String, String, String, String) = conn
        .query_row(
            "SELECT rollout_path, source, preview, title, approval_mode, history_mode FROM threads WHERE id = ?1",
            [telegram],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)),
        )
        .unwrap();
    assert!(
        Path::new(&path).is_absolute() && Path::new(&path).is_file(),
        "{path}"
    );
    assert_eq!(
        (source.as_str(), preview.as_str(), title.as_str()),
        (
            "cli",
            "Which tests cover the checkout flow?",
            "Which tests cover the checkout flow?"
        )
    );
    assert_eq!((mode.as_str(), history.as_str()), ("on-request", "legacy"));
    // The thread is named at its last activity, as the row dates it, not at the import.
    let updated_ms: i64 = conn
        .query_row(
            "SELECT updated_at_ms FROM threads WHERE id = ?1",
            [telegram],
            |r| r.get(0),
        )
        .unwrap();
    let index = fs::read_to_string(home.join(".codex/session_index.jsonl")).unwrap();
    let named: Value = index
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|l| l["id"] == telegram)
        .unwrap();
    use asp_convert::kit::time;
    assert_eq!(
        named["updated_at"],
        time::format_nanos(time::from_millis(updated_ms))
    );

    // An older schema (fewer columns) gets a row with only those.
    let old_home = dir.path().join("old");
    fs::create_dir_all(old_home.join(".codex")).unwrap();
    let old = old_home.join(".codex/state_5.sqlite");
    rusqlite::Connection::open(&old)
        .unwrap()
        .execute_batch("CREATE TABLE threads (id TEXT PRIMARY KEY, rollout_path TEXT NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, source TEXT NOT NULL, model_provider TEXT NOT NULL, cwd TEXT NOT NULL, title TEXT NOT NULL, sandbox_policy TEXT NOT NULL, approval_mode TEXT NOT NULL, tokens_used INTEGER NOT NULL DEFAULT 0, has_user_event INTEGER NOT NULL DEFAULT 0, archived INTEGER NOT NULL DEFAULT 0, archived_at INTEGER, git_sha TEXT, git_branch TEXT, git_origin_url TEXT);")
        .unwrap();
    unpack_json(
        &samples().join("state.aspstate"),
        &old_home,
        &["--kinds", "sessions"],
    );
    assert_eq!(dump(&old).len(), 2);
}

#[test]
fn mcp_servers_and_settings_merge_into_config_toml_keeping_the_users_text() {
    let dir = tmp();
    let home = dir.path().join("home");
    fs::create_dir_all(home.join(".codex")).unwrap();
    let mine = "# my settings\nmodel = \"gpt-5.5\"  # pinned\n\n[mcp_servers.github]\ncommand = \"gh-mcp\" # my own\n";
    fs::write(home.join(".codex/config.toml"), mine).unwrap();
    let answer = unpack_json(
        &samples().join("state.aspstate"),
        &home,
        &["--kinds", "tools,settings"],
    );
    let text = fs::read_to_string(home.join(".codex/config.toml")).unwrap();
    assert!(
        text.starts_with("# my settings\nmodel = \"gpt-5.5\"  # pinned\n"),
        "{text}"
    );
    assert!(
        text.contains("[mcp_servers.github]\ncommand = \"gh-mcp\" # my own\n"),
        "{text}"
    );
    assert!(text.contains("[mcp_servers.docs]\nurl = \"https://mcp.example.com/mcp\"\nbearer_token_env_var = \"DOCS_TOKEN\"\n"), "{text}");
    assert!(text.contains("model_reasoning_effort = \"high\""), "{text}");
    assert!(
        !text.contains("opus"),
        "a model Codex cannot run is not written"
    );
    let reasons: Vec<String> = answer["notTaken"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["reason"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("a different MCP server named github")),
        "{reasons:?}"
    );
    assert!(
        reasons
            .iter()
            .any(|r| r.contains("opus is an Anthropic model; Codex runs OpenAI models")),
        "{reasons:?}"
    );
    assert!(
        reasons.iter().any(|r| r.contains("acceptEdits")),
        "{reasons:?}"
    );
    assert_eq!(answer["taken"], json!(["tools", "settings"]));
}

#[test]
fn a_dry_run_writes_nothing_and_answers_like_the_real_run() {
    let dir = tmp();
    let bundle = dir.path().join("codex.aspstate");
    pack_sample_codex(&bundle);
    let home = dir.path().join("home");
    copy_dir(&sample_home(), &home);
    fs::remove_dir_all(home.join(".codex/sessions")).unwrap();
    let before = files_in(&home);
    let dry = as_written(unpack_json(
        &samples().join("state.aspstate"),
        &home,
        &["--dry-run"],
    ));
    let dry_codex = unpack_json(&bundle, &home, &["--dry-run"]);
    assert_eq!(
        files_in(&home),
        before,
        "a dry run touches nothing, the thread index included"
    );
    let real = unpack_json(&samples().join("state.aspstate"), &home, &[]);
    // The same answer, but what is added to a file that was there "would be" (as_written
    // takes that out of writtenInto), and the findings say so too.
    let mut dry = dry;
    for f in dry["_meta"]["asp"]["findings"].as_array_mut().unwrap() {
        let said = f["message"]
            .as_str()
            .unwrap()
            .replace("would be added", "were added");
        f["message"] = json!(said);
    }
    assert_eq!(dry, real);
    assert_eq!(dry_codex["sessions"][A], A);
}

#[test]
fn the_library_round_trip_keeps_memory_skills_and_instructions() {
    let (state, store, _) = read(&sample_home());
    let dir = tmp();
    let (answer, _) = write(dir.path(), &state, &store, false);
    assert!(answer.not_taken.is_empty(), "{:?}", answer.not_taken);
    let (back, back_store, _) = read(dir.path());
    let bodies = |s: &State, st: &MemoryStore| -> Vec<(String, Vec<u8>)> {
        s.memory
            .iter()
            .flatten()
            .map(|n| match n.body {
                NoteBody::Text(d) => (n.path.to_string(), st.read_all(&d).unwrap()),
                NoteBody::Deleted => (n.path.to_string(), vec![]),
            })
            .collect()
    };
    assert_eq!(bodies(&back, &back_store), bodies(&state, &store));
    assert_eq!(back.skills, state.skills);
    assert_eq!(back.tools, state.tools);
    assert_eq!(back.settings, state.settings);

    // A tombstone of a Codex note removes it; writing the rest again changes nothing.
    let mut forget = State {
        memory: state.memory.clone(),
        ..State::default()
    };
    forget.memory.as_mut().unwrap()[0].body = NoteBody::Deleted;
    let (answer, _) = write(dir.path(), &forget, &store, false);
    assert_eq!(
        answer.taken,
        KindSet::EMPTY.with(asp_format::StateKind::Memory)
    );
    assert!(!dir.path().join(".codex/memories/MEMORY.md").exists());
}

#[test]
fn secrets_in_mcp_servers_are_blanked_on_request_and_never_written_back_blank() {
    let dir = tmp();
    let home = dir.path().join("home");
    fs::create_dir_all(home.join(".codex")).unwrap();
    fs::write(
        home.join(".codex/config.toml"),
        "[mcp_servers.api]\ncommand = \"api-mcp\"\nenv = { API_KEY = \"sk-live-123\", LEVEL = \"${LEVEL}\" }\n",
    )
    .unwrap();
    let bundle = dir.path().join("r.aspstate");
    // Packed as it is, the literal key is named (and only it: LEVEL is a reference), so the
    // user knows what the bundle holds before sharing it.
    asp_pack()
        .args(["--from", "codex", "--kinds", "tools", "--home"])
        .arg(&home)
        .arg("-o")
        .arg(&bundle)
        .assert()
        .code(0)
        .stderr(predicates::str::contains("note: "))
        .stderr(predicates::str::contains(
            "config.toml: MCP server \"api\" holds a credential written out in full (env.API_KEY): carried as it is (a bundle packed with asp-pack --redact-secrets leaves such values out",
        ));
    asp_pack()
        .args([
            "--from",
            "codex",
            "--kinds",
            "tools",
            "--redact-secrets",
            "--force",
            "--home",
        ])
        .arg(&home)
        .arg("-o")
        .arg(&bundle)
        .assert()
        .success()
        .stderr(predicates::str::contains("written out in full").not())
        .stderr(predicates::str::contains(
            "MCP server \"api\": blanked env.API_KEY (--redact-secrets;",
        ));
    let b = Bundle::open(&bundle).unwrap();
    let tools = b.manifest().state.tools.clone().unwrap();
    let McpServer::Stdio(s) = &tools[0] else {
        panic!()
    };
    assert_eq!(s.env[0].value, "", "the literal key is blanked");
    assert_eq!(s.env[1].value, "${LEVEL}");
    let other = dir.path().join("other");
    let answer = unpack_json(&bundle, &other, &[]);
    let text = fs::read_to_string(other.join(".codex/config.toml")).unwrap();
    assert!(!text.contains("API_KEY"), "{text}");
    assert!(text.contains("env_vars = [\"LEVEL\"]"), "{text}");
    assert!(
        answer["notTaken"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("--redact-secrets")
    );
}

// ---------------------------------------------------------------------------------------
// Migration both ways, with Claude Code

#[cfg(feature = "claude-code")]
mod with_claude_code {
    use super::*;

    const CLAUDE: &str = "claude-code";

    /// The conversation of a session: user prompts, agent answers, tool calls with results,
    /// plans, title.
    fn conversation(store: &MemoryStore, s: &Session) -> Value {
        let items = asp_convert::kit::conversation::fold(
            String::from_utf8(store.read_all(&s.updates).unwrap())
                .unwrap()
                .lines()
                .map(|l| serde_json::from_str::<Value>(l).unwrap()),
        );
        let mut out = Vec::new();
        for i in items {
            use asp_convert::kit::conversation::Item;
            match i {
                Item::User(m) => out.push(json!({"user": m.text()})),
                Item::Agent(m) => out.push(json!({"agent": m.text()})),
                Item::Tool(t) => out.push(
                    json!({"tool": t.id, "input": t.raw_input, "failed": t.failed(),
                    "result": t.content_text()}),
                ),
                Item::Plan { entries, .. } => out.push(
                    json!({"plan": entries.iter().map(|e| e["content"].clone()).collect::<Vec<_>>()}),
                ),
                Item::Thought(_) | Item::Other(_) => {}
            }
        }
        json!({"title": s.title, "items": out})
    }

    fn migrate(from: &str, from_home: &Path, to: &str) -> (State, MemoryStore, State, MemoryStore) {
        let sessions = KindSet::EMPTY.with(asp_format::StateKind::Sessions);
        let read = crate::support::read_home(from, from_home, sessions, ReadOptions::default());
        let dir = tmp();
        read.write_into(to, dir.path());
        let back = crate::support::read_home(to, dir.path(), sessions, ReadOptions::default());
        (read.state, read.store, back.state, back.store)
    }

    /// Whether `after` says what `before` said. Words, plans, titles and which calls failed must
    /// match exactly; a harness may carry a tool's input wrapped in an object (Claude Code's
    /// `tool_use.input` must be one) and its result with the harness's own framing around it.
    fn same_item(before: &Value, after: &Value) -> bool {
        if before.get("tool").is_none() {
            return before == after;
        }
        let input_ok = before["input"] == after["input"]
            || json!({"input": before["input"]}) == after["input"]
            || (before["input"].is_null() && after["input"] == json!({}));
        let squash = |v: &Value| {
            v.as_str()
                .unwrap_or("")
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ")
        };
        let result_ok = squash(&after["result"]).contains(&squash(&before["result"]));
        before["tool"] == after["tool"]
            && before["failed"] == after["failed"]
            && input_ok
            && result_ok
    }

    fn assert_same_conversations(
        state: &State,
        store: &MemoryStore,
        back: &State,
        back_store: &MemoryStore,
    ) {
        let before: Vec<Value> = state
            .sessions
            .iter()
            .flatten()
            .map(|s| conversation(store, s))
            .collect();
        let after: Vec<Value> = back
            .sessions
            .iter()
            .flatten()
            .map(|s| conversation(back_store, s))
            .collect();
        assert_eq!(after.len(), before.len());
        for b in &before {
            let survived = after.iter().any(|a| {
                a["title"] == b["title"]
                    && a["items"].as_array().unwrap().len() == b["items"].as_array().unwrap().len()
                    && b["items"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .zip(a["items"].as_array().unwrap())
                        .all(|(x, y)| same_item(x, y))
            });
            assert!(
                survived,
                "lost in migration: {b:#}\nafter: {:#}",
                json!(after)
            );
        }
    }

    /// The model and mode a carried session chose, which Codex cannot run, are named with
    /// what the thread runs with instead: one session carried alone has no settings kind
    /// beside it to report them.
    #[test]
    fn settings_a_carried_session_chose_that_codex_cannot_run_are_said() {
        let dir = tmp();
        let bundle = dir.path().join("one.aspstate");
        asp_pack()
            .args(["--from", CLAUDE, "-q", "--session"])
            .arg("71958462-4bb8-46b6-a36a-1becf56c22dc")
            .arg("--home")
            .arg(samples().join("claude-code"))
            .arg("-o")
            .arg(&bundle)
            .assert()
            .success();
        let answer = unpack_json(&bundle, &dir.path().join("home"), &[]);
        let findings = answer["_meta"]["asp"]["findings"].as_array().unwrap();
        assert!(
            findings.iter().any(|f| f["severity"] == "left out"
                && f["message"]
                    == "its mode \"acceptEdits\", model \"claude-opus-4-6\" are not for Codex; \
                        the thread runs with model gpt-5.5, approval on-request, sandbox \
                        workspace-write (this home's settings, else Codex's defaults)"),
            "{answer}"
        );
    }

    #[test]
    fn claude_code_sessions_migrate_into_codex_and_back_out() {
        let (state, store, back, back_store) =
            migrate(CLAUDE, &samples().join("claude-code"), HARNESS);
        assert_same_conversations(&state, &store, &back, &back_store);
    }

    #[test]
    fn codex_sessions_migrate_into_claude_code_and_back_out() {
        let (state, store, back, back_store) = migrate(HARNESS, &sample_home(), CLAUDE);
        assert_same_conversations(&state, &store, &back, &back_store);
    }
}

// ---------------------------------------------------------------------------------------
// Subagents, paths, merges

fn line(ts: &str, ty: &str, payload: Value) -> String {
    json!({"timestamp": ts, "type": ty, "payload": payload}).to_string() + "\n"
}

#[test]
fn subagent_threads_are_separate_sessions_linked_both_ways() {
    let dir = tmp();
    let day = dir.path().join(".codex/sessions/2026/11/29");
    fs::create_dir_all(&day).unwrap();
    let parent = "01a22700-0000-7000-8000-000000000001";
    let child = "01a22700-0000-7000-8000-000000000002";
    let p = [
        line("2026-11-29T10:00:00.000Z", "session_meta", json!({"id": parent, "timestamp": "2026-11-29T10:00:00.000Z", "cwd": "/w", "source": "cli"})),
        line("2026-11-29T10:00:01.000Z", "response_item", json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Ask a helper"}]})),
        line("2026-11-29T10:00:02.000Z", "response_item", json!({"type": "function_call", "name": "spawn_agent", "call_id": "call_spawn", "arguments": "{\"message\":\"look\"}"})),
        line("2026-11-29T10:00:03.000Z", "response_item", json!({"type": "function_call_output", "call_id": "call_spawn", "output": format!("{{\"agent_id\":\"{child}\"}}")})),
    ]
    .concat();
    let c = [
        line("2026-11-29T10:00:02.500Z", "session_meta", json!({"id": child, "timestamp": "2026-11-29T10:00:02.500Z", "cwd": "/w",
            "source": {"subagent": {"thread_spawn": {"parent_thread_id": parent, "depth": 1}}}})),
        line("2026-11-29T10:00:02.600Z", "response_item", json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "look"}]})),
    ]
    .concat();
    fs::write(
        day.join(format!("rollout-2026-11-29T10-00-00-{parent}.jsonl")),
        p,
    )
    .unwrap();
    fs::write(
        day.join(format!("rollout-2026-11-29T10-00-02-{child}.jsonl")),
        c,
    )
    .unwrap();
    let (state, store, _) = read(dir.path());
    let kid = session(&state, child);
    assert_eq!(
        kid.meta.as_ref().unwrap()["asp"]["parent"],
        json!({"sessionId": parent})
    );
    let u = updates(&store, session(&state, parent));
    let spawn = of_kind(&u, "tool_call")[0];
    assert_eq!(spawn["kind"], "think");
    assert_eq!(spawn["_meta"]["asp"]["subagentSessionId"], child);
}

#[test]
fn map_path_moves_cwds_and_a_compressed_rollout_is_rewritten_plain() {
    let dir = tmp();
    let bundle = dir.path().join("codex.aspstate");
    pack_sample_codex(&bundle);
    let home = dir.path().join("home");
    unpack_json(
        &bundle,
        &home,
        &["--kinds", "sessions", "--map-path", "/home/dev=/Users/dev"],
    );
    let sessions = home.join(".codex/sessions/2026/11/25");
    let plain = sessions.join(format!("rollout-2026-11-25T16-20-22-{C}.jsonl"));
    assert!(plain.is_file() && !plain.with_extension("jsonl.zst").exists());
    let lines = jsonl(&plain);
    assert_eq!(lines[0]["payload"]["cwd"], "/Users/dev/shop");
    let (state, ..) = read(&home);
    assert!(
        state.sessions.iter().flatten().all(|s| s
            .cwd
            .as_deref()
            .unwrap()
            .starts_with("/Users/dev/"))
    );
}

#[test]
fn instructions_merge_below_the_users_own_and_only_once() {
    let dir = tmp();
    let home = dir.path().join("home");
    fs::create_dir_all(home.join(".codex")).unwrap();
    fs::write(home.join(".codex/AGENTS.md"), "# Mine\n\nBe brief.\n").unwrap();
    for run in 0..2 {
        let answer = unpack_json(
            &samples().join("state.aspstate"),
            &home,
            &["--kinds", "instructions"],
        );
        // Said when they are added (the first time), not when they are found there.
        let said = answer["_meta"]["asp"]["findings"].to_string();
        assert_eq!(
            said.contains("it already had instructions; the carried ones were added after them"),
            run == 0,
            "{said}"
        );
    }
    let text = fs::read_to_string(home.join(".codex/AGENTS.md")).unwrap();
    assert!(
        text.starts_with("# Mine\n\nBe brief.\n\n<!-- Added by asp"),
        "{text}"
    );
    assert_eq!(text.matches("# Working agreements").count(), 1, "{text}");
    // With an override file, that is the one Codex reads, so that is where they go.
    fs::write(home.join(".codex/AGENTS.override.md"), "override\n").unwrap();
    unpack_json(
        &samples().join("state.aspstate"),
        &home,
        &["--kinds", "instructions"],
    );
    assert!(
        fs::read_to_string(home.join(".codex/AGENTS.override.md"))
            .unwrap()
            .contains("# Working agreements")
    );
}

#[test]
fn a_skill_in_both_roots_is_carried_once_from_agents_and_the_other_reported() {
    let dir = tmp();
    for (root, body) in [
        (".agents/skills/fmt", "from agents"),
        (".codex/skills/fmt", "from codex"),
    ] {
        fs::create_dir_all(dir.path().join(root)).unwrap();
        fs::write(
            dir.path().join(root).join("SKILL.md"),
            format!("---\nname: fmt\ndescription: {body}\n---\n"),
        )
        .unwrap();
    }
    let (state, store, diagnostics) = read(dir.path());
    let skills = state.skills.unwrap();
    assert_eq!(skills.len(), 1);
    let text = store.read_all(&skills[0].files[0].content).unwrap();
    assert!(String::from_utf8(text).unwrap().contains("from agents"));
    let notes = diagnostics.items();
    assert!(
        notes.iter().any(|d| d
            .message
            .contains("a different skill named fmt is also in .agents/skills")),
        "{notes:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Damage and odd input: the read carries on, says where, and the write adds nothing twice

/// Reads a home with chosen options.
fn read_with(home: &Path, options: ReadOptions) -> (State, MemoryStore, Diagnostics) {
    let r = crate::support::read_home(HARNESS, home, KindSet::ALL, options);
    (r.state, r.store, collected(r.diagnostics))
}

fn skipped_in(d: &Diagnostics, file: &Path) -> Vec<Diagnostic> {
    d.items()
        .into_iter()
        .filter(|i| i.severity.is_not_carried() && i.file() == Some(file))
        .collect()
}

#[test]
fn a_rollout_name_that_ends_inside_a_character_is_reported_not_read() {
    let dir = tmp();
    copy_dir(&fixture("legacy-flat"), dir.path());
    let day = dir.path().join(".codex/sessions/2026/01/01");
    fs::create_dir_all(&day).unwrap();
    // Named like a rollout; 36 bytes from the end of the stem fall inside a `€`.
    let odd = day.join(format!("rollout-a{}b.jsonl", "\u{20ac}".repeat(12)));
    fs::write(&odd, "{}\n").unwrap();
    let (state, _, diagnostics) = read(dir.path());
    assert_eq!(state.sessions.as_ref().unwrap().len(), 1, "the real one");
    let found = skipped_in(&diagnostics, &odd);
    assert_eq!(found.len(), 1, "{:?}", diagnostics.items());
    assert!(found[0].message.contains("thread UUID"), "{}", found[0]);
    // The whole pipeline too.
    let out = pack_home("codex", dir.path(), dir.path().join("b.aspstate"))
        .output()
        .unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_session_index_line_that_is_not_utf8_is_reported_and_the_rest_read() {
    let dir = tmp();
    copy_dir(&fixture("legacy-flat"), dir.path());
    let index = dir.path().join(".codex/session_index.jsonl");
    let mut bytes = b"{\"id\":\"x\",\"thread_name\":\"\xff\"}\n".to_vec();
    bytes.extend_from_slice(
        b"{\"id\":\"5973b6c0-94b8-487b-a530-2aeb6098ae0e\",\"thread_name\":\"Listing dist\"}\n",
    );
    fs::write(&index, bytes).unwrap();
    let (state, _, diagnostics) = read(dir.path());
    assert_eq!(
        session(&state, "5973b6c0-94b8-487b-a530-2aeb6098ae0e").title,
        "Listing dist"
    );
    let found = skipped_in(&diagnostics, &index);
    assert_eq!(found.len(), 1, "{:?}", diagnostics.items());
    assert_eq!(found[0].line, Some(1));
}

#[test]
fn a_rollout_under_a_path_no_bundle_can_hold_is_carried_without_its_file() {
    let dir = tmp();
    let src = fixture("legacy-flat").join(
        ".codex/sessions/rollout-2025-06-12T10-15-30-5973b6c0-94b8-487b-a530-2aeb6098ae0e.jsonl",
    );
    // `:` is not portable (Windows), so the rollout cannot be a native file of the bundle.
    let odd_dir = dir.path().join(".codex/sessions/2025/06/12:x");
    fs::create_dir_all(&odd_dir).unwrap();
    let odd = odd_dir.join(src.file_name().unwrap());
    fs::copy(&src, &odd).unwrap();
    let (state, store, diagnostics) = read(dir.path());
    let s = session(&state, "5973b6c0-94b8-487b-a530-2aeb6098ae0e");
    assert!(s.native.is_none());
    assert_eq!(
        texts(&updates(&store, s), "user_message_chunk"),
        ["List the files in dist/"],
        "the conversation is carried"
    );
    let found = skipped_in(&diagnostics, &odd);
    assert_eq!(found.len(), 1, "{:?}", diagnostics.items());
    assert!(found[0].message.contains("not carried"), "{}", found[0]);
}

#[test]
fn instructions_and_notes_that_are_not_utf8_are_reported_not_carried() {
    let dir = tmp();
    let codex_home = dir.path().join(".codex");
    fs::create_dir_all(codex_home.join("memories")).unwrap();
    fs::write(codex_home.join("AGENTS.md"), b"# rules\n\xff\xfe\n").unwrap();
    fs::write(codex_home.join("memories/bad.md"), b"\xc3(").unwrap();
    fs::write(codex_home.join("memories/good.md"), "fine\n").unwrap();
    let (state, store, diagnostics) = read(dir.path());
    assert!(state.instructions.is_none());
    let notes: Vec<String> = state
        .memory
        .iter()
        .flatten()
        .map(|n| n.path.to_string())
        .collect();
    assert_eq!(notes, ["good.md"]);
    assert_eq!(
        skipped_in(&diagnostics, &codex_home.join("AGENTS.md")).len(),
        1
    );
    assert_eq!(
        skipped_in(&diagnostics, &codex_home.join("memories/bad.md")).len(),
        1
    );
    // What was carried makes an export.
    asp_format::export::ExportState::from_state(&state, &store).unwrap();
}

/// A conversation from a harness with other ids, with no times anywhere (or only `updatedAt`).
fn timeless_session(store: &MemoryStore, id: &str, text: &str, updated: bool) -> State {
    let mut s = json!({"id": id, "title": "T", "harness": "opencode", "cwd": "/tmp/x",
       "updates": [
        {"sessionId": id, "update": {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": text}}},
        {"sessionId": id, "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}}}
    ]});
    if updated {
        s["updatedAt"] = json!("2026-01-01T00:00:00Z");
    }
    let e: asp_format::export::ExportState =
        serde_json::from_value(json!({ "sessions": [s] })).unwrap();
    e.into_state(store).unwrap()
}

#[test]
fn importing_the_same_session_again_finds_it_whatever_times_it_carries() {
    for updated in [false, true] {
        for id in ["telegram:42", "11111111-2222-4333-8444-555555555555"] {
            let dir = tmp();
            let store = MemoryStore::new();
            let state = timeless_session(&store, id, "hello", updated);
            let (first, _) = write(dir.path(), &state, &store, false);
            let before = files_in(dir.path());
            std::thread::sleep(std::time::Duration::from_millis(20));
            let (again, _) = write(dir.path(), &state, &store, false);
            assert_eq!(again.sessions, first.sessions, "{id} updatedAt: {updated}");
            assert_eq!(
                files_in(dir.path()),
                before,
                "{id} updatedAt: {updated}: nothing new"
            );
            assert_eq!(rollouts(dir.path()).len(), 1);
        }
    }
}

#[test]
fn a_different_version_kept_beside_is_found_again_on_the_next_import() {
    let id = "11111111-2222-4333-8444-555555555555";
    let dir = tmp();
    let store = MemoryStore::new();
    let mine = timeless_session(&store, id, "hello", false);
    let theirs = timeless_session(&store, id, "hello again", false);
    write(dir.path(), &mine, &store, false);
    let (first, _) = write(dir.path(), &theirs, &store, false);
    let copy = first.sessions[id].clone();
    assert_ne!(copy, id, "kept beside under its own id");
    let before = files_in(dir.path());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (again, _) = write(dir.path(), &theirs, &store, false);
    assert_eq!(again.sessions[id], copy);
    assert_eq!(files_in(dir.path()), before, "no third copy");
    assert_eq!(rollouts(dir.path()).len(), 2);
}

#[test]
fn a_codex_thread_with_an_older_v4_id_is_kept_beside_once() {
    const V4: &str = "5973b6c0-94b8-487b-a530-2aeb6098ae0e";
    let (state, store, _) = read(&fixture("legacy-flat"));
    let home = tmp();
    copy_dir(&fixture("legacy-flat"), home.path());
    let rollout = home.path().join(format!(
        ".codex/sessions/rollout-2025-06-12T10-15-30-{V4}.jsonl"
    ));
    let mut changed = fs::read(&rollout).unwrap();
    crate::support::diverge(&mut changed, b"{\"type\":\"message\",\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"and more\"}]}\n");
    fs::write(&rollout, &changed).unwrap();
    let (first, _) = write(home.path(), &state, &store, false);
    let copy = first.sessions[V4].clone();
    assert_ne!(copy, V4);
    let copy_path = rollout.with_file_name(format!("rollout-2025-06-12T10-15-30-{copy}.jsonl"));
    let lines = fs::read_to_string(&copy_path).unwrap();
    assert!(
        lines.starts_with(&format!("{{\"id\":\"{copy}\"")),
        "the early flat meta names the copy: {lines}"
    );
    let before = files_in(home.path());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (again, _) = write(home.path(), &state, &store, false);
    assert_eq!(again.sessions[V4], copy);
    assert_eq!(files_in(home.path()), before);
}

#[test]
fn an_mcp_server_name_codex_refuses_is_not_taken() {
    let store = MemoryStore::new();
    let e: asp_format::export::ExportState = serde_json::from_value(json!({"tools": [
        {"name": "my docs.v2", "command": "npx", "args": [], "env": []},
        {"name": "docs", "command": "npx", "args": [], "env": []}
    ]}))
    .unwrap();
    let state = e.into_state(&store).unwrap();
    let dir = tmp();
    let (answer, _) = write(dir.path(), &state, &store, false);
    assert_eq!(answer.not_taken.len(), 1, "{:?}", answer.not_taken);
    assert!(answer.not_taken[0].reason.contains("\"my docs.v2\""));
    let text = fs::read_to_string(dir.path().join(".codex/config.toml")).unwrap();
    assert_eq!(text, "[mcp_servers.docs]\ncommand = \"npx\"\n");
}

#[test]
fn auto_approval_comes_back_only_for_the_servers_codex_had() {
    let dir = tmp();
    let home = dir.path().join("home");
    fs::create_dir_all(home.join(".codex")).unwrap();
    fs::write(
        home.join(".codex/config.toml"),
        "[mcp_servers.docs]\ncommand = \"docs-mcp\"\ndefault_tools_approval_mode = \"approve\"\n",
    )
    .unwrap();
    let (state, store, _) = read(&home);
    let other = dir.path().join("other");
    let (answer, _) = write(&other, &state, &store, false);
    assert!(answer.not_taken.is_empty(), "{:?}", answer.not_taken);
    let text = fs::read_to_string(other.join(".codex/config.toml")).unwrap();
    assert!(
        text.contains("default_tools_approval_mode = \"approve\""),
        "{text}"
    );

    // The same key on a server another harness (or a hand) put in a bundle.
    let e: asp_format::export::ExportState = serde_json::from_value(json!({"tools": [
        {"name": "docs", "command": "docs-mcp", "args": [], "env": [],
         "_meta": {"codex": {"default_tools_approval_mode": "approve", "tool_timeout_sec": 30}}}
    ]}))
    .unwrap();
    let foreign = e.into_state(&store).unwrap();
    let third = dir.path().join("third");
    let (answer, _) = write(&third, &foreign, &store, false);
    assert_eq!(answer.not_taken.len(), 1, "{:?}", answer.not_taken);
    assert!(
        answer.not_taken[0]
            .reason
            .contains("default_tools_approval_mode"),
        "{:?}",
        answer.not_taken
    );
    let text = fs::read_to_string(third.join(".codex/config.toml")).unwrap();
    assert_eq!(
        text,
        "[mcp_servers.docs]\ncommand = \"docs-mcp\"\ntool_timeout_sec = 30\n"
    );
}

// ---------------------------------------------------------------------------------------
// The validator: what Codex needs of a home to list and resume its threads

/// The checks Codex makes (spec/harnesses/codex.md §3, §8, §9): a rollout is
/// `sessions/YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<uuid>.jsonl`, in the folder of its date;
/// its first line is the `session_meta` of that thread; every line is JSON;
/// `session_index.jsonl` lines name a thread; `config.toml` is TOML.
pub(crate) fn validate(home: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let codex = home.join(".codex");
    for e in walkdir::WalkDir::new(codex.join("sessions"))
        .into_iter()
        .flatten()
    {
        if !e.file_type().is_file() {
            continue;
        }
        let rel = e.path().strip_prefix(&codex).unwrap().display().to_string();
        let name = e.file_name().to_string_lossy().into_owned();
        let compressed = name.ends_with(".jsonl.zst");
        let Some(stem) = name.strip_prefix("rollout-").and_then(|n| {
            n.strip_suffix(".jsonl")
                .or_else(|| n.strip_suffix(".jsonl.zst"))
        }) else {
            problems.push(format!("{rel}: not named like a rollout"));
            continue;
        };
        let (stamp, id) = stem.split_at(stem.len().saturating_sub(37));
        let id = id.trim_start_matches('-');
        if !asp_convert::kit::uuid::is_uuid(id) || stamp.len() != 19 {
            problems.push(format!("{rel}: not rollout-<time>-<uuid>.jsonl"));
            continue;
        }
        let date_dir = format!(
            "sessions/{}/{}/{}/",
            &stamp[..4],
            &stamp[5..7],
            &stamp[8..10]
        );
        if !rel.starts_with(&date_dir) {
            problems.push(format!("{rel}: not in the folder of its date ({date_dir})"));
        }
        if compressed {
            continue;
        }
        let text = fs::read_to_string(e.path()).unwrap();
        for (i, line) in text.lines().enumerate() {
            match serde_json::from_str::<Value>(line) {
                Ok(v) if i == 0 => {
                    if v["type"] != "session_meta" || v["payload"]["id"] != id {
                        problems.push(format!("{rel}:1: not the session_meta of thread {id}"));
                    }
                }
                Ok(_) => {}
                Err(_) => problems.push(format!("{rel}:{}: not JSON", i + 1)),
            }
        }
    }
    if let Ok(text) = fs::read_to_string(codex.join("session_index.jsonl")) {
        for (i, line) in text.lines().enumerate() {
            let ok = serde_json::from_str::<Value>(line)
                .is_ok_and(|v| v["id"].is_string() && v["thread_name"].is_string());
            if !ok {
                problems.push(format!("session_index.jsonl:{}: not a naming", i + 1));
            }
        }
    }
    if let Ok(text) = fs::read_to_string(codex.join("config.toml"))
        && let Err(e) = text.parse::<toml_edit::DocumentMut>()
    {
        problems.push(format!("config.toml: not TOML ({e})"));
    }
    problems
}

#[test]
fn a_plain_rollout_is_its_update_streams_dictionary_and_a_zst_one_is_not() {
    // The stream repeats the rollout's text, so a bundle stores it once (spec/aspstate.md §4);
    // a `.jsonl.zst` rollout is compressed bytes the stream does not repeat. (The contract
    // checks every harness's streams against `Harness::transcript` and the directory form's
    // round trip; this one that Codex's sample has both kinds and which one is a transcript.)
    let t = tmp();
    let out = t.path().join("codex.aspstate");
    pack_sample_codex(&out);
    let b = Bundle::open(&out).unwrap();
    let (mut plain, mut zst) = (0, 0);
    for s in b.manifest().state.sessions.iter().flatten() {
        let rollout = s.meta.as_ref().unwrap()["codex"]["rolloutPath"]
            .as_str()
            .unwrap()
            .to_owned();
        let native = &s.native.as_ref().expect("the rollout is carried").files[0];
        assert_eq!(native.path.as_str(), rollout);
        let (_, dictionary) = b.layer_of(&s.updates.digest).unwrap();
        if rollout.ends_with(".jsonl") {
            assert_eq!(dictionary, Some(native.content.digest), "{rollout}");
            plain += 1;
        } else {
            assert_eq!(dictionary, None, "{rollout}");
            zst += 1;
        }
    }
    assert!(
        plain > 0 && zst > 0,
        "the sample has both: {plain} plain, {zst} zst"
    );
}

/// A thread continued in Codex since it was carried (Codex appends to the rollout of a thread
/// it resumes) holds every line of the carried one: importing it again writes no copy beside
/// it, and says why.
#[test]
fn a_thread_continued_in_codex_is_already_there() {
    let dir = tmp();
    let home = dir.path().join("home");
    let bundle = samples().join("state.aspstate");
    let first = unpack_json(&bundle, &home, &["--kinds", "sessions"]);
    let id = first["sessions"]["telegram:42"]
        .as_str()
        .unwrap()
        .to_owned();
    let rollout = rollouts(&home)
        .into_iter()
        .find(|p| p.to_string_lossy().contains(&id))
        .unwrap();
    let mut text = fs::read_to_string(&rollout).unwrap();
    let last = text.lines().last().unwrap().to_owned();
    text.push_str(&last);
    text.push('\n');
    fs::write(&rollout, &text).unwrap();
    let before = files_in(&home);
    let out = asp_unpack()
        .arg(&bundle)
        .args(["--to", "codex", "--json", "--kinds", "sessions", "--home"])
        .arg(&home)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["sessions"]["telegram:42"], id.as_str(), "{again}");
    assert!(
        said.contains(&format!(
            "thread {id}: the rollout here continues the one carried"
        )),
        "{said}"
    );
    assert_eq!(files_in(&home), before, "nothing written");
}

/// The other way: the rollout here is the start of the carried one (the thread went on
/// elsewhere and is carried back). It is brought up to date under its own id, not kept beside
/// as a copy under another id each round trip (new-user trial helper-136, 1).
#[test]
fn a_thread_continued_elsewhere_is_brought_up_to_date() {
    let dir = tmp();
    let home = dir.path().join("home");
    let bundle = samples().join("state.aspstate");
    let first = unpack_json(&bundle, &home, &["--kinds", "sessions"]);
    let id = first["sessions"]["telegram:42"]
        .as_str()
        .unwrap()
        .to_owned();
    let rollout = rollouts(&home)
        .into_iter()
        .find(|p| p.to_string_lossy().contains(&id))
        .unwrap();
    let carried = fs::read(&rollout).unwrap();
    // This machine has only the first lines of it.
    let text = String::from_utf8(carried.clone()).unwrap();
    let kept: String = text.lines().take(3).map(|l| format!("{l}\n")).collect();
    fs::write(&rollout, &kept).unwrap();
    let before = files_in(&home);
    let out = asp_unpack()
        .arg(&bundle)
        .args(["--to", "codex", "--json", "--kinds", "sessions", "--home"])
        .arg(&home)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let again: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(again["sessions"]["telegram:42"], id.as_str(), "{again}");
    assert_eq!(
        again["_meta"]["asp"]["updated"],
        json!(["telegram:42"]),
        "{again}"
    );
    assert!(
        said.contains(&format!(
            "thread {id}: the carried rollout continues the one here"
        )),
        "{said}"
    );
    assert_eq!(fs::read(&rollout).unwrap(), carried);
    assert_eq!(
        files_in(&home).len(),
        before.len(),
        "no copy beside it: {:?}",
        files_in(&home).keys().collect::<Vec<_>>()
    );
}

/// A `config.toml` that is not TOML costs its servers and settings, said once with its path
/// (it was said twice: `…/config.toml: …/config.toml: not valid TOML`, a new user's trial).
#[test]
fn a_config_toml_that_is_not_toml_is_named_once_in_what_was_lost() {
    let t = tmp();
    let home = t.path().join("home");
    copy_dir(&sample_home(), &home);
    let config = home.join(".codex/config.toml");
    fs::write(&config, "[mcp_servers.docs\ncommand = 1\n").unwrap();
    let (_, _, d) = read(&home);
    let said: Vec<String> = d
        .items()
        .iter()
        .filter(|i| i.file() == Some(config.as_path()))
        .map(ToString::to_string)
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    let path = config.display().to_string();
    assert!(
        said[0].starts_with(&format!("{path}: not valid TOML: ")),
        "{said:?}"
    );
    assert_eq!(said[0].matches(&path).count(), 1, "{said:?}");
    assert!(
        said[0].ends_with("; no MCP servers or settings were read"),
        "{said:?}"
    );
}

/// A thread carried to a home that has not got it is named with its newest naming's own
/// `updated_at`, to the nanosecond: the line is the sample's own. It was dated to the thread's
/// last turn, which moved a naming made after the last turn earlier (the sample renames
/// 01a1fe6b two minutes after its last turn).
#[test]
fn a_carried_thread_is_named_with_its_newest_namings_own_time() {
    let t = tmp();
    let bundle = t.path().join("codex.aspstate");
    pack_sample_codex(&bundle);
    let home = t.path().join("fresh");
    fs::create_dir_all(&home).unwrap();
    asp_unpack()
        .arg(&bundle)
        .args(["--to", "codex", "--home"])
        .arg(&home)
        .assert()
        .success();
    let index = |home: &Path| fs::read_to_string(home.join(".codex/session_index.jsonl")).unwrap();
    let sample = index(&sample_home());
    // The newest naming of each thread, as the sample has it.
    let mut newest: BTreeMap<String, &str> = BTreeMap::new();
    for line in sample.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        newest.insert(v["id"].as_str().unwrap().to_owned(), line);
    }
    let written: Vec<String> = index(&home).lines().map(str::to_owned).collect();
    assert_eq!(written.len(), newest.len(), "{written:?}");
    for line in &written {
        let v: Value = serde_json::from_str(line).unwrap();
        assert_eq!(
            Some(&line.as_str()),
            newest.get(v["id"].as_str().unwrap()),
            "{written:?}"
        );
    }
}

/// A compressed rollout here is not brought up to date, whatever it holds: the carried version
/// is kept beside it and the `.jsonl.zst` stays byte for byte (Codex reads a plain rollout
/// before its compressed sibling, so writing one would hide it).
#[test]
fn a_compressed_rollout_cut_short_is_kept_beside_not_brought_up_to_date() {
    let dir = tmp();
    let bundle = dir.path().join("b.aspstate");
    succeeds(&mut pack_home("codex", sample_home(), &bundle));
    let home = dir.path().join("home");
    copy_dir(&sample_home(), &home);
    let zst = rollouts(&home)
        .into_iter()
        .find(|p| p.to_string_lossy().ends_with(".jsonl.zst"))
        .unwrap();
    let text = zstd::decode_all(&fs::read(&zst).unwrap()[..]).unwrap();
    let end = text[..text.len() - 1]
        .iter()
        .rposition(|b| *b == b'\n')
        .unwrap()
        + 1;
    fs::write(&zst, zstd::encode_all(&text[..end], 3).unwrap()).unwrap();
    let cut = fs::read(&zst).unwrap();
    let out = asp_unpack()
        .arg(&bundle)
        .args(["--to", "codex", "--json", "--kinds", "sessions", "--home"])
        .arg(&home)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(answer["_meta"]["asp"].get("updated").is_none(), "{answer}");
    assert_eq!(
        fs::read(&zst).unwrap(),
        cut,
        "the compressed rollout is as it was"
    );
    let id = "01a21382-12a0-7552-982b-fe8c17c720e1";
    let copy = answer["sessions"][id].as_str().unwrap();
    assert_ne!(copy, id, "kept beside: {answer}");
}
