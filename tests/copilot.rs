//! The Copilot CLI converter, pinned against `samples/copilot/EXPECTED.md` and
//! `spec/harnesses/copilot.md`: the sample read as the portable stream (reasoning kept,
//! sub-agents under their `task` call, rewind notes, aborts and compactions not turns), foreign
//! sessions written the way Copilot lists and loads them, and damaged stores.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use crate::support::ReadBack as Read;
use crate::support::{samples, tmp};
use asp_convert::harness::ReadOptions;
use asp_convert::kit::pathmap::PathMap;
use asp_format::kind::KindSet;
use serde_json::Value;

const HARNESS: &str = "copilot";

fn sample_home() -> PathBuf {
    samples().join("copilot")
}

fn read_home(home: &Path) -> Read {
    crate::support::read_home(HARNESS, home, KindSet::ALL, ReadOptions::default())
}

fn counts(updates: &[Value]) -> [usize; 5] {
    let c = |k: &str| updates.iter().filter(|u| u["sessionUpdate"] == k).count();
    [
        c("user_message_chunk"),
        c("agent_thought_chunk"),
        c("agent_message_chunk"),
        c("tool_call"),
        c("tool_call_update"),
    ]
}

#[test]
fn the_sample_reads_as_expected_md_says() {
    let r = read_home(&sample_home());
    // The three things not carried, and said: instructions scoped by an applyTo glob, a
    // custom agent, and the settings of Copilot's own.
    let said: Vec<String> = r
        .diagnostics
        .iter()
        .map(|d| d.file().unwrap().display().to_string())
        .collect();
    assert_eq!(said.len(), 3, "{:#?}", r.diagnostics);
    assert!(said[0].ends_with(".copilot/instructions/money.instructions.md"));
    assert!(said[1].ends_with(".copilot/agents/money-reviewer.agent.md"));
    assert!(said[2].ends_with(".copilot/settings.json"));
    assert!(r.state.instructions.is_some());
    let skills: Vec<&str> = r
        .state
        .skills
        .iter()
        .flatten()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(skills, ["release-notes"]);
    let tools: Vec<&str> = r.state.tools.iter().flatten().map(|t| t.name()).collect();
    assert_eq!(tools, ["docs", "issues"], "mcp-config.json");
    let sessions = r.state.sessions.as_ref().unwrap();
    assert_eq!(sessions.len(), 7);
    // [user chunks, thoughts, agent messages, tool calls, updates]; session 2's image is a
    // second user chunk.
    let expect: [(&str, &str, [usize; 5]); 7] = [
        (
            "4d6db0b9-06cd-448c-a833-6cb42632a8ab",
            "Checkout totals ignore discount codes like WELCOME10. Fix total_cents and make sure the tests pass.",
            [2, 2, 3, 7, 7],
        ),
        ("cc3f10bb-5f33-4a65-90de-de5d3428dc0e", "", [2, 1, 2, 1, 1]),
        (
            "7b232b6c-90b2-44f3-82e4-a35ffc7b8586",
            "Which parts of the shop have no tests? Use the explore agent.",
            [1, 0, 2, 1, 1],
        ),
        (
            "cb3f75aa-08a1-4ecf-9b12-55a557ec1064",
            "Rename total_cents (tests left alone)",
            [1, 0, 1, 2, 2],
        ),
        (
            "ff097c9e-4b51-492f-a89f-b721dc178c13",
            "What does deploy.sh do?",
            [3, 1, 3, 2, 2],
        ),
        (
            "aa09b89b-cc7b-488d-a781-a5548a6cf2a2",
            "Write the reply to Sam about the invoice.",
            [1, 0, 0, 0, 0],
        ),
        (
            "d3ceb4b4-8ff8-4f26-b0ff-5f9a26649c53",
            "Nightly backup check",
            [1, 0, 1, 3, 3],
        ),
    ];
    let mut got = BTreeMap::new();
    for (id, title, c) in expect {
        let s = r.session(id);
        if !title.is_empty() {
            assert_eq!(s.title, title, "{id}");
        }
        assert!(s.cwd.as_deref().unwrap().starts_with("/home/dev/"), "{id}");
        got.insert(id, (counts(&r.updates(id)), c));
    }
    for (id, (g, e)) in &got {
        assert_eq!(g, e, "{id}: {got:#?}");
    }
    // The image travels as an image block.
    let u2 = r.updates("cc3f10bb-5f33-4a65-90de-de5d3428dc0e");
    assert!(
        u2.iter()
            .any(|u| u["content"]["type"] == "image" && u["content"]["mimeType"] == "image/png")
    );
    // The sub-agent's stream is under the task call, not main-agent turns.
    let u3 = r.updates("7b232b6c-90b2-44f3-82e4-a35ffc7b8586");
    let task = u3
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update")
        .unwrap();
    let sub = &task["_meta"]["copilot"]["subagent"];
    assert_eq!(sub["agentName"], "explore");
    assert_eq!(
        counts(sub["updates"].as_array().unwrap())[3],
        2,
        "glob and grep"
    );
    // A failing call is failed; a failing command that ran is completed with its exit code.
    let u7 = r.updates("d3ceb4b4-8ff8-4f26-b0ff-5f9a26649c53");
    let failed: Vec<&Value> = u7.iter().filter(|u| u["status"] == "failed").collect();
    assert_eq!(failed.len(), 1);
    // The rewind note, the abort and the compaction summary are kept beside the turns.
    let meta = |id: &str| r.session(id).meta.as_ref().unwrap()["copilot"].clone();
    assert_eq!(
        meta("cb3f75aa-08a1-4ecf-9b12-55a557ec1064")["notes"][0]["data"]["infoType"],
        "rewind"
    );
    assert_eq!(
        meta("cb3f75aa-08a1-4ecf-9b12-55a557ec1064")["userNamed"],
        true
    );
    assert!(meta("aa09b89b-cc7b-488d-a781-a5548a6cf2a2")["aborts"][0]["reason"].is_string());
    assert!(
        meta("ff097c9e-4b51-492f-a89f-b721dc178c13")["compactions"][0]["summaryContent"]
            .is_string()
    );
    // Settings: none set a model in the sample.
    assert!(r.state.settings.is_none());
}

#[test]
fn sessions_of_every_other_harness_are_written_as_copilot_loads_them() {
    for h in asp_convert::harness_names() {
        if h == HARNESS {
            continue;
        }
        let from = crate::support::read_home(
            &h,
            &samples().join(&h),
            KindSet::ALL,
            ReadOptions::default(),
        );
        let home = tmp();
        let (answer, _) = from.write_into(HARNESS, home.path());
        let problems = validate(home.path());
        assert!(problems.is_empty(), "{h}: {problems:#?}");
        let back = read_home(home.path());
        for (src, dst) in &answer.sessions {
            let s = back.session(dst);
            let orig = from.session(src);
            // An untitled session is titled by its first prompt, as Copilot lists it.
            if !orig.title.is_empty() {
                assert_eq!(s.title, orig.title, "{h} {src}");
            }
            let a = counts(&from.updates(src));
            let b = counts(&back.updates(dst));
            assert_eq!(a[0].min(1), b[0].min(1), "{h} {src}: prompts");
            assert_eq!(a[3], b[3], "{h} {src}: every call is written");
            assert_eq!(b[3], b[4], "{h} {src}: every call has its result");
        }
    }
}

/// `tests/fixtures/copilot/damaged` (its README says what each session dir holds): every damage
/// named with its file (and line), the rest read, and nothing lost: a restore into Copilot
/// gives every file back byte for byte, and writing other sessions into the damaged home
/// changes none of its files.
#[test]
fn damaged_stores_are_reported_with_file_and_line_and_nothing_is_lost() {
    let fixture = crate::support::root().join("tests/fixtures/copilot/damaged");
    let home = tmp();
    crate::support::copy_dir(&fixture, home.path());
    let r = read_home(home.path());
    let states = home.path().join(".copilot/session-state");

    // 1: no workspace.yaml, no session.start, not UTF-8, not JSON, a cut last line.
    let one = "11111111-2222-4333-8444-555555555555";
    let ev = states.join(one).join("events.jsonl");
    let s = r.session(one);
    assert_eq!(s.title, "hi \u{fffd} there", "the first prompt names it");
    assert_eq!(counts(&r.updates(one))[..3], [1, 0, 1]);
    let at = |file: &Path, line: Option<u64>| {
        r.diagnostics
            .iter()
            .any(|d| d.file() == Some(file) && d.line == line)
    };
    assert!(at(&ev, Some(1)), "non-UTF-8: {:#?}", r.diagnostics);
    assert!(at(&ev, Some(2)), "not JSON: {:#?}", r.diagnostics);
    assert!(at(&ev, Some(4)), "cut line: {:#?}", r.diagnostics);
    assert!(at(&ev, None), "no session.start: {:#?}", r.diagnostics);
    assert!(at(&states.join(one).join("workspace.yaml"), None));

    // 2: workspace.yaml that is not YAML: named, cwd and title from the events.
    let two = "22222222-3333-4444-8555-666666666666";
    assert!(
        at(&states.join(two).join("workspace.yaml"), None),
        "{:#?}",
        r.diagnostics
    );
    let s = r.session(two);
    assert_eq!(s.cwd.as_deref(), Some("/home/dev/notes"));
    assert_eq!(s.title, "What is in todo.md?");
    assert_eq!(counts(&r.updates(two))[..3], [1, 0, 1]);

    // 3: no events.jsonl: no session, the directory named as left out.
    let three = "33333333-4444-4555-8666-777777777777";
    assert!(
        r.diagnostics
            .iter()
            .any(|d| d.severity.is_not_carried() && d.file() == Some(states.join(three).as_path())),
        "{:#?}",
        r.diagnostics
    );
    assert!(
        r.state
            .sessions
            .iter()
            .flatten()
            .all(|s| s.id.as_str() != three)
    );

    // Nothing lost: restored byte for byte into an empty Copilot home ...
    let restored = tmp();
    r.write_into(HARNESS, restored.path());
    for id in [one, two] {
        let src = crate::support::files_in(&states.join(id));
        let dst =
            crate::support::files_in(&restored.path().join(".copilot/session-state").join(id));
        assert_eq!(src, dst, "session {id} restores byte for byte");
    }
    // ... and importing the sample into the damaged home leaves every damaged file as it was.
    let before = crate::support::files_in(home.path());
    let sample = read_home(&sample_home());
    sample.write_into(HARNESS, home.path());
    let after = crate::support::files_in(home.path());
    for (path, bytes) in &before {
        assert_eq!(after.get(path), Some(bytes), "{path} is unchanged");
    }
}

/// What Copilot 1.0.102 needs to list and load a session (spec §7, §10): a directory named by
/// its id (the same id in `workspace.yaml` and `session.start`), valid UTF-8 JSONL whose first
/// event is `session.start`, every event with `type`, `id`, `timestamp`, and a
/// `tool.execution_complete` for every requested call; no provider-bound reasoning.
pub(crate) fn validate(home: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let root = home.join(".copilot/session-state");
    let Ok(rd) = fs::read_dir(&root) else {
        return problems;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            problems.push(format!(
                "{name}: a hidden directory was left in session-state/"
            ));
            continue;
        }
        let dir = e.path();
        if let Ok(ws) = fs::read_to_string(dir.join("workspace.yaml")) {
            let id = ws.lines().find_map(|l| l.strip_prefix("id: "));
            if id != Some(name.as_str()) {
                problems.push(format!("{name}: workspace.yaml id is {id:?}"));
            }
            if ws.lines().any(|l| {
                l.starts_with("user_named:")
                    && !matches!(l, "user_named: true" | "user_named: false")
            }) {
                problems.push(format!(
                    "{name}: workspace.yaml user_named is not a boolean"
                ));
            }
            if !ws.lines().any(|l| l.starts_with("cwd: /")) {
                problems.push(format!("{name}: workspace.yaml has no absolute cwd"));
            }
        }
        let bytes = match fs::read(dir.join("events.jsonl")) {
            Ok(b) => b,
            Err(e) => {
                problems.push(format!("{name}: events.jsonl: {e}"));
                continue;
            }
        };
        let Ok(text) = String::from_utf8(bytes) else {
            problems.push(format!(
                "{name}: events.jsonl is not UTF-8 (Copilot hides it)"
            ));
            continue;
        };
        let mut requested = BTreeSet::new();
        let mut completed = BTreeSet::new();
        for (i, line) in text.lines().enumerate() {
            let Ok(v) = serde_json::from_str::<Value>(line) else {
                problems.push(format!("{name}: line {} is not JSON", i + 1));
                continue;
            };
            if i == 0 && (v["type"] != "session.start" || v["data"]["sessionId"] != name.as_str()) {
                problems.push(format!("{name}: the first event is not its session.start"));
            }
            if v["type"].as_str().is_none()
                || v["id"].as_str().is_none()
                || v["timestamp"].as_str().is_none()
            {
                problems.push(format!(
                    "{name}: line {} lacks type, id or timestamp",
                    i + 1
                ));
            }
            let d = &v["data"];
            if v["type"] == "assistant.message" {
                if d.get("reasoningOpaque").is_some() || d.get("encryptedContent").is_some() {
                    problems.push(format!("{name}: line {}: provider-bound reasoning", i + 1));
                }
                for r in d["toolRequests"].as_array().into_iter().flatten() {
                    requested.insert(r["toolCallId"].as_str().unwrap_or("").to_owned());
                }
            }
            if v["type"] == "tool.execution_complete" {
                completed.insert(d["toolCallId"].as_str().unwrap_or("").to_owned());
            }
        }
        for id in requested.difference(&completed) {
            problems.push(format!("{name}: call {id} has no tool.execution_complete"));
        }
    }
    problems
}

/// Custom agents (`~/.copilot/agents/`, nested folders too) are Copilot's own configuration: a
/// backup reads them whole and restores them into Copilot byte for byte, never over a file
/// the user has there.
#[test]
fn custom_agents_come_back_into_copilot_byte_for_byte() {
    let home = tmp();
    let agents = home.path().join(".copilot/agents");
    fs::create_dir_all(agents.join("team")).unwrap();
    fs::write(
        agents.join("reviewer.agent.md"),
        "---\nname: reviewer\ndescription: Reviews money code\ntools: [\"read\"]\n---\nReview.\n",
    )
    .unwrap();
    fs::write(
        agents.join("team/release.md"),
        "---\ndescription: Ships\n---\nShip.\n",
    )
    .unwrap();
    let blobs = asp_format::blob::MemoryStore::new();
    let config = crate::support::store_of(HARNESS, home.path())
        .read_config(&blobs, &[], &asp_convert::kit::report::Diagnostics::new())
        .unwrap()
        .expect("the agents are configuration")
        .native;
    let paths: Vec<&str> = config.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            ".copilot/agents/reviewer.agent.md",
            ".copilot/agents/team/release.md"
        ]
    );
    let fresh = tmp();
    fs::create_dir_all(fresh.path().join(".copilot/agents")).unwrap();
    fs::write(
        fresh.path().join(".copilot/agents/reviewer.agent.md"),
        "mine\n",
    )
    .unwrap();
    let placed = crate::support::store_of(HARNESS, fresh.path())
        .write_config(
            &config,
            &blobs,
            &PathMap::default(),
            Default::default(),
            false,
        )
        .unwrap()
        .placed;
    assert_eq!(
        fs::read(fresh.path().join(".copilot/agents/team/release.md")).unwrap(),
        fs::read(agents.join("team/release.md")).unwrap()
    );
    assert_eq!(
        fs::read_to_string(fresh.path().join(".copilot/agents/reviewer.agent.md")).unwrap(),
        "mine\n",
        "the user's own file is kept: {placed:?}"
    );
    use asp_convert::kit::placement::Placement;
    let of = |p: &str| placed.iter().find(|(rel, _)| rel == p).map(|(_, pl)| pl);
    assert!(
        matches!(
            of(".copilot/agents/reviewer.agent.md"),
            Some(Placement::Refused(why)) if why.contains("other content")
        ),
        "{placed:?}"
    );
    assert_eq!(
        of(".copilot/agents/team/release.md"),
        Some(&Placement::New),
        "{placed:?}"
    );
}

/// Only the Markdown files under `agents/` are custom agents (what Copilot reads there); a note
/// beside them is not configuration and is not kept.
#[test]
fn only_markdown_under_agents_is_configuration() {
    let home = crate::support::tmp();
    let kept = crate::support::config_kept(
        "copilot",
        home.path(),
        ".copilot/agents",
        &[
            "reviewer.agent.md",
            "nested/deep.agent.md",
            "README.txt",
            "x.md.bak",
        ],
    );
    assert_eq!(
        kept,
        [
            ".copilot/agents/nested/deep.agent.md",
            ".copilot/agents/reviewer.agent.md"
        ]
    );
}

/// A backup keeps Copilot's own configuration: the user's settings, the prompt history, the
/// path-scoped instructions (which the instructions kind does not carry) and the custom
/// agents; never `config.json` (its trusted folders are granted again).
#[test]
fn a_backup_keeps_the_settings_history_instructions_and_agents() {
    let home = crate::support::samples().join("copilot");
    let store = asp_convert::Store::harness("copilot", asp_convert::Home::at(&home)).unwrap();
    let kept = store
        .read_config(
            &asp_format::blob::MemoryStore::new(),
            &[],
            &asp_convert::kit::report::Diagnostics::new(),
        )
        .unwrap()
        .unwrap();
    let paths: Vec<&str> = kept.native.files.iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            ".copilot/agents/money-reviewer.agent.md",
            ".copilot/command-history-state.json",
            ".copilot/instructions/money.instructions.md",
            ".copilot/settings.json",
        ]
    );
}

/// The prompt history a backup keeps is what the person typed: a restore writes it readable
/// by its owner alone, as Copilot does.
#[cfg(unix)]
#[test]
fn a_restored_prompt_history_is_the_owners_alone() {
    use std::os::unix::fs::PermissionsExt;
    let t = crate::support::tmp();
    let repo = t.path().join("repo");
    let out = crate::support::asp()
        .args(["backup", "-q", "--from", "copilot", "--home"])
        .arg(crate::support::samples().join("copilot"))
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 3)), "{out:?}");
    let to = t.path().join("to");
    std::fs::create_dir_all(&to).unwrap();
    let out = crate::support::asp()
        .args(["restore", "-q", "--to", "copilot", "--home"])
        .arg(&to)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 3)), "{out:?}");
    let mode = std::fs::metadata(to.join(".copilot/command-history-state.json"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
}

/// A server Copilot CLI keeps without the members it may leave out (`env`, `args`, `tools`)
/// is the same server when carried back into its home: already there, not "another
/// configuration" (a new user's trial: `--strict` exited 3 on a restore into its own home).
#[test]
fn a_server_without_the_members_copilot_leaves_out_is_already_there_when_carried_back() {
    let t = tmp();
    let home = t.path().join("home");
    crate::support::copy_dir(&sample_home(), &home);
    let config = home.join(".copilot/mcp-config.json");
    let mut doc: Value = serde_json::from_slice(&fs::read(&config).unwrap()).unwrap();
    doc["mcpServers"]["plain"] = serde_json::json!({"type": "local", "command": "/usr/bin/true"});
    doc["mcpServers"]["remote"] =
        serde_json::json!({"type": "http", "url": "https://mcp.example.com/x"});
    fs::write(&config, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let bundle = t.path().join("b.aspstate");
    crate::support::asp_pack()
        .args(["--from", HARNESS, "--home"])
        .arg(&home)
        .arg("-o")
        .arg(&bundle)
        .assert()
        .success();
    let out = crate::support::asp_unpack()
        .arg(&bundle)
        .args([
            "--to", HARNESS, "--kinds", "tools", "--strict", "--json", "--home",
        ])
        .arg(&home)
        .output()
        .unwrap();
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{answer}");
    assert_eq!(answer["notTaken"], serde_json::json!([]), "{answer}");
}

/// A session restored into Copilot and then resumed or renamed there is already there when
/// restored again: Copilot rewrites its `workspace.yaml` (`updated_at`, `name`, `user_named`)
/// and appends to its events, and neither makes it another version (new-user trial
/// helper-131, 1: the restore kept it beside itself as a `~copilot` copy). Another session
/// under its id (another `created_at`) still is.
#[test]
fn a_session_resumed_and_renamed_in_copilot_is_already_there() {
    let r = read_home(&sample_home());
    let home = tmp();
    let (first, _) = r.write_into(HARNESS, home.path());
    assert!(first.beside.is_empty(), "{first:?}");
    let id = "d3ceb4b4-8ff8-4f26-b0ff-5f9a26649c53";
    let ws = home
        .path()
        .join(".copilot/session-state")
        .join(id)
        .join("workspace.yaml");
    let text = fs::read_to_string(&ws).unwrap();
    let edited: String = text
        .lines()
        .map(|l| match l.split_once(':').map(|(k, _)| k) {
            Some("updated_at") => "updated_at: 2026-12-09T10:00:00.000Z".to_owned(),
            Some("name") => "name: Discount codes".to_owned(),
            Some("user_named") => "user_named: true".to_owned(),
            _ => l.to_owned(),
        })
        .map(|l| l + "\n")
        .collect();
    assert_ne!(edited, text);
    fs::write(&ws, &edited).unwrap();
    let (again, _) = r.write_into(HARNESS, home.path());
    assert!(again.beside.is_empty(), "{again:?}");
    assert!(again.already_there.contains(id), "{again:?}");

    let other = edited.replace("created_at: 2026-", "created_at: 2025-");
    assert_ne!(other, edited);
    fs::write(&ws, other).unwrap();
    let (third, _) = r.write_into(HARNESS, home.path());
    assert!(third.beside.contains(id), "{third:?}");
}

/// `--map-path` moves a Copilot session restored into Copilot: its `workspace.yaml`'s `cwd`
/// and `git_root`, where Copilot lists it, as well as its events (new-user trial helper-131,
/// 2: the resume line said the new folder while the session stayed listed under the old one).
#[test]
fn map_path_moves_a_restored_copilot_sessions_workspace() {
    let t = tmp();
    let bundle = t.path().join("copilot.aspstate");
    crate::support::pack_sample_home(HARNESS, &bundle);
    let home = crate::support::new_home(t.path().join("home"));
    crate::support::asp_unpack()
        .arg(&bundle)
        .args(["--to", HARNESS, "--kinds", "sessions", "-q", "--map-path"])
        .arg("/home/dev=/Users/me")
        .arg("--home")
        .arg(&home)
        .assert()
        .success();
    let dir = home.join(".copilot/session-state/4d6db0b9-06cd-448c-a833-6cb42632a8ab");
    let ws = fs::read_to_string(dir.join("workspace.yaml")).unwrap();
    assert!(
        ws.contains("\ncwd: /Users/me/shop\n") && ws.contains("\ngit_root: /Users/me/shop\n"),
        "{ws}"
    );
    assert!(!ws.contains("/home/dev"), "{ws}");
    let events = fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(!events.contains("\"cwd\":\"/home/dev"), "{events}");
}
