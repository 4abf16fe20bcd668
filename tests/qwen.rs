//! The Qwen Code converter, pinned against `samples/qwen/EXPECTED.md` and
//! `spec/harnesses/qwen.md`: what each sample session replays as, titles, the rewound turn and
//! the compression left out, subagents linked, and the validator: what Qwen Code's reader
//! needs to list and load a session.

use std::fs;
use std::path::{Path, PathBuf};

use crate::support::{new_home, read_home, samples, tmp};
use asp_convert::harness::ReadOptions;
use asp_convert::kit::pathmap::PathMap;
use asp_format::kind::KindSet;
use serde_json::Value;

const HARNESS: &str = "qwen";

fn sample_home() -> PathBuf {
    samples().join(HARNESS)
}

fn fixture(name: &str) -> PathBuf {
    crate::support::root()
        .join("tests/fixtures/qwen")
        .join(name)
}

/// Counts of update kinds; usage apart.
fn counts(updates: &[Value]) -> std::collections::BTreeMap<String, usize> {
    let mut out = std::collections::BTreeMap::new();
    for u in updates {
        let k = u["sessionUpdate"].as_str().unwrap_or("").to_owned();
        *out.entry(k).or_insert(0) += 1;
    }
    out
}

fn n(c: &std::collections::BTreeMap<String, usize>, k: &str) -> usize {
    c.get(k).copied().unwrap_or(0)
}

#[test]
fn the_sample_sessions_replay_as_expected() {
    let r = read_home(
        HARNESS,
        &sample_home(),
        KindSet::ALL,
        ReadOptions::default(),
    );
    // (But the settings of Qwen Code's own, said as left out by design.)
    let damage: Vec<_> = r
        .diagnostics
        .iter()
        .filter(|d| d.severity.is_not_carried())
        .filter(|d| !d.file().is_some_and(|f| f.ends_with(".qwen/settings.json")))
        .collect();
    assert!(damage.is_empty(), "{damage:#?}");
    // (id, title, user, thought, agent, tool_call, tool_call_update, failed, usage)
    let expected = [
        (
            "a9e019a0-3eca-408b-9ff8-0a0b4be0bc99",
            "Fix discount codes in checkout",
            2,
            4,
            4,
            5,
            5,
            1,
            6,
        ),
        (
            "c8c64794-4131-498c-83cd-6e16d3c7e0c7",
            "Where the discount table lives",
            2,
            0,
            2,
            2,
            2,
            0,
            4,
        ),
        (
            "dce81f7f-0ed7-43dd-b6cd-4df7a03f9934",
            "How are the tests laid out?",
            3,
            0,
            3,
            5,
            5,
            0,
            8,
        ),
        (
            "1f97bfb3-3b17-40b6-b7d9-2ab2f837a57b",
            "What does this icon from the cart page mean?",
            1,
            1,
            2,
            1,
            1,
            0,
            2,
        ),
        (
            "b9d77458-bb1e-48a4-9aec-540ccf511105",
            "Add an /orders route to the gateway, as sketched in @routes.png",
            6,
            0,
            2,
            3,
            3,
            1,
            3,
        ),
    ];
    for (id, title, user, thought, agent, calls, results, failed, usage) in expected {
        let s = r.session(id);
        assert_eq!(s.title, title, "{id}");
        let ups = r.updates(id);
        let c = counts(&ups);
        assert_eq!(n(&c, "user_message_chunk"), user, "{id}: {c:?}");
        assert_eq!(n(&c, "agent_thought_chunk"), thought, "{id}: {c:?}");
        assert_eq!(n(&c, "agent_message_chunk"), agent, "{id}: {c:?}");
        assert_eq!(n(&c, "tool_call"), calls, "{id}: {c:?}");
        assert_eq!(n(&c, "tool_call_update"), results, "{id}: {c:?}");
        assert_eq!(n(&c, "usage_update"), usage, "{id}: {c:?}");
        let f = ups
            .iter()
            .filter(|u| u["sessionUpdate"] == "tool_call_update" && u["status"] == "failed")
            .count();
        assert_eq!(f, failed, "{id}");
    }
    // The rewound prompt is not replayed.
    let rewound = r.updates("c8c64794-4131-498c-83cd-6e16d3c7e0c7");
    assert!(
        !serde_json::to_string(&rewound)
            .unwrap()
            .contains("write discounts.json")
    );
    // The image of the headless @file reference is carried.
    let gw = r.updates("b9d77458-bb1e-48a4-9aec-540ccf511105");
    assert!(
        gw.iter()
            .any(|u| u["content"]["type"] == "image" && u["content"]["mimeType"] == "image/jpeg")
    );
    // The subagent is a session of its own, linked both ways.
    let child = "1f97bfb3-3b17-40b6-b7d9-2ab2f837a57b:agent-Explore-call_3b055e982dcaa5c0";
    let cs = r.session(child);
    assert_eq!(
        asp_convert::kit::meta::parent_id(cs.meta.as_ref()),
        Some("1f97bfb3-3b17-40b6-b7d9-2ab2f837a57b")
    );
    let parent = r.updates("1f97bfb3-3b17-40b6-b7d9-2ab2f837a57b");
    assert!(
        parent
            .iter()
            .any(|u| u["_meta"]["asp"]["subagentSessionId"] == child)
    );
    assert_eq!(r.state.sessions.as_ref().unwrap().len(), 6);
}

#[test]
fn a_session_from_elsewhere_is_listed_under_its_cwd_with_its_title() {
    let r = read_home(
        "claude-code",
        &samples().join("claude-code"),
        KindSet::ALL,
        ReadOptions::default(),
    );
    let home = tmp();
    let (answer, _) = r.write_into(HARNESS, home.path());
    assert!(
        validate(home.path()).is_empty(),
        "{:?}",
        validate(home.path())
    );
    let back = read_home(HARNESS, home.path(), KindSet::ALL, ReadOptions::default());
    for s in r.state.sessions.iter().flatten() {
        let Some(qid) = answer.sessions.get(s.id.as_str()) else {
            continue;
        };
        let b = back.session(qid);
        assert_eq!(b.cwd, s.cwd, "{}", s.id);
        if !s.title.is_empty() {
            assert_eq!(b.title, s.title, "{}", s.id);
        }
    }
}

/// What Qwen Code 0.24 requires to list and load a session (spec §2, §4, §5, §13): chats named
/// `<uuid>.jsonl` whose every record names that session; the first record's cwd is the one
/// the project folder is named for; every line a compact JSON object; every parent a record of
/// the file; a title record compact and chained (not a lone root at the end); every
/// `functionCall` answered by a `tool_result`; `settings.json` a JSON object.
pub(crate) fn validate(home: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    let projects = home.join(".qwen/projects");
    for p in fs::read_dir(&projects).into_iter().flatten().flatten() {
        let dir = p.file_name().to_string_lossy().into_owned();
        for f in fs::read_dir(p.path().join("chats"))
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = f.file_name().to_string_lossy().into_owned();
            let Some(stem) = name.strip_suffix(".jsonl") else {
                continue;
            };
            let at = format!("projects/{dir}/chats/{name}");
            if !asp_convert::kit::uuid::is_uuid(stem) {
                problems.push(format!("{at}: not named by a UUID"));
            }
            let text = fs::read_to_string(f.path()).unwrap();
            let mut uuids = std::collections::HashSet::new();
            let mut calls = Vec::new();
            let mut results = std::collections::HashSet::new();
            let mut parents = Vec::new();
            let lines: Vec<&str> = text.lines().collect();
            for (i, line) in lines.iter().enumerate() {
                let Ok(v) = serde_json::from_str::<Value>(line) else {
                    problems.push(format!("{at}:{}: not JSON", i + 1));
                    continue;
                };
                if v["sessionId"] != stem {
                    problems.push(format!("{at}:{}: names session {}", i + 1, v["sessionId"]));
                }
                if i == 0 {
                    let cwd = v["cwd"].as_str().unwrap_or("");
                    let want: String = cwd
                        .encode_utf16()
                        .map(|u| match u8::try_from(u) {
                            Ok(b) if b.is_ascii_alphanumeric() => char::from(b),
                            _ => '-',
                        })
                        .collect();
                    if cwd.is_empty() || want != dir {
                        problems.push(format!(
                            "{at}: its first record's cwd {cwd:?} is not this project"
                        ));
                    }
                }
                if serde_json::to_string(&v).unwrap() != *line {
                    problems.push(format!("{at}:{}: not compact JSON", i + 1));
                }
                uuids.insert(v["uuid"].as_str().unwrap_or("").to_owned());
                if let Some(parent) = v["parentUuid"].as_str() {
                    parents.push((i + 1, parent.to_owned()));
                } else if i > 0 {
                    problems.push(format!("{at}:{}: a second root", i + 1));
                }
                for part in v["message"]["parts"].as_array().into_iter().flatten() {
                    if let Some(id) = part["functionCall"]["id"].as_str() {
                        calls.push(id.to_owned());
                    }
                    if let Some(id) = part["functionResponse"]["id"].as_str() {
                        results.insert(id.to_owned());
                    }
                }
                if !["user", "assistant", "tool_result", "system"]
                    .contains(&v["type"].as_str().unwrap_or(""))
                {
                    problems.push(format!(
                        "{at}:{}: type {} is not one Qwen reads",
                        i + 1,
                        v["type"]
                    ));
                }
            }
            for (line, p) in parents {
                if !uuids.contains(&p) {
                    problems.push(format!("{at}:{line}: its parent {p} is not in the file"));
                }
            }
            for c in calls {
                if !results.contains(&c) {
                    problems.push(format!("{at}: call {c} has no result"));
                }
            }
        }
    }
    let settings = home.join(".qwen/settings.json");
    if let Ok(b) = fs::read(&settings)
        && !serde_json::from_slice::<Value>(&b).is_ok_and(|v| v.is_object())
    {
        problems.push("settings.json is not a JSON object".to_owned());
    }
    problems
}

#[test]
fn the_validator_finds_what_qwen_cannot_load() {
    let home = tmp();
    let chats = home.path().join(".qwen/projects/-w/chats");
    fs::create_dir_all(&chats).unwrap();
    fs::write(
        chats.join("telegram.jsonl"),
        "{\"uuid\":\"a\",\"parentUuid\":\"gone\",\"sessionId\":\"x\",\"type\":\"user\",\"cwd\":\"/w\"}\n",
    )
    .unwrap();
    let problems = validate(home.path());
    assert!(
        problems.iter().any(|p| p.contains("not named by a UUID")),
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("not in the file")),
        "{problems:?}"
    );
}

/// `tests/fixtures/qwen/damaged`: one chat per damage Qwen Code survives (spec §12), each named
/// with its file and line, nothing carried lost, and each replayed as Qwen replays it.
#[test]
fn damage_is_named_and_replayed_as_qwen_replays_it() {
    let home = fixture("damaged");
    let r = read_home(HARNESS, &home, KindSet::ALL, ReadOptions::default());
    let chats = home.join(".qwen/projects/-w/chats");
    let id = |n: u32| format!("00000000-0000-4000-8000-{n:012}");
    let said = |n: &str, line: Option<u64>, what: &str| {
        let file = chats.join(n);
        assert!(
            r.diagnostics
                .iter()
                .any(|d| d.file() == Some(file.as_path())
                    && d.line == line
                    && d.message.contains(what)),
            "{n}:{line:?} {what:?}: {:#?}",
            r.diagnostics
        );
    };
    let texts = |sid: &str, kind: &str| -> Vec<String> {
        r.updates(sid)
            .iter()
            .filter(|u| u["sessionUpdate"] == kind)
            .map(|u| u["content"]["text"].as_str().unwrap_or("").to_owned())
            .collect()
    };
    // A last line cut mid-JSON.
    said(&format!("{}.jsonl", id(1)), Some(3), "cut off");
    assert_eq!(texts(&id(1), "user_message_chunk"), ["one"]);
    // A cut record glued to the next one: the next is recovered, the gap reported.
    said(&format!("{}.jsonl", id(2)), Some(2), "recovered");
    assert_eq!(texts(&id(2), "user_message_chunk"), ["two"]);
    assert_eq!(texts(&id(2), "agent_message_chunk"), ["answer two"]);
    // A broken parent chain: what follows the gap replays, the gap is named.
    said(&format!("{}.jsonl", id(3)), Some(3), "is not in the file");
    assert_eq!(texts(&id(3), "user_message_chunk"), ["two"]);
    // Two leaves: the last record wins, the abandoned branch is not replayed.
    assert_eq!(
        texts(&id(4), "agent_message_chunk"),
        ["kept answer", "answer two"]
    );
    // A first record without cwd belongs to no project.
    said(&format!("{}.jsonl", id(5)), Some(1), "no cwd");
    assert!(
        r.state
            .sessions
            .iter()
            .flatten()
            .all(|s| s.id.as_str() != id(5))
    );
    // Non-UTF-8 tool output: read as U+FFFD, named.
    said(&format!("{}.jsonl", id(6)), Some(3), "not UTF-8");
    let out = r.updates(&id(6));
    let update = out
        .iter()
        .find(|u| u["sessionUpdate"] == "tool_call_update")
        .unwrap();
    assert_eq!(update["content"][0]["content"]["text"], "caf\u{FFFD}");
    // Two session ids in one file.
    said(&format!("{}.jsonl", id(7)), Some(2), "two session ids");
    // A file Qwen does not list.
    said("telegram-42.jsonl", None, "not named <session uuid>.jsonl");
    // Whatever was carried restores byte for byte, damage included.
    let target = tmp();
    let (answer, _) = r.write_into(HARNESS, target.path());
    for n in [1, 2, 3, 4, 6, 7] {
        let name = format!(".qwen/projects/-w/chats/{}.jsonl", id(n));
        assert_eq!(answer.sessions[&id(n)], id(n));
        assert!(
            fs::read(home.join(&name)).unwrap() == fs::read(target.path().join(&name)).unwrap(),
            "{name}"
        );
    }
}

#[test]
fn thousands_of_messages_stream_through() {
    let home = tmp();
    let sid = "11111111-2222-4333-8444-555555555555";
    let chats = home.path().join(".qwen/projects/-w/chats");
    fs::create_dir_all(&chats).unwrap();
    let mut text = String::new();
    let mut parent = Value::Null;
    for i in 0..5000 {
        let (kind, role, part) = if i % 2 == 0 {
            ("user", "user", "prompt")
        } else {
            ("assistant", "model", "answer")
        };
        let uuid = format!("r{i}");
        let rec = serde_json::json!({"uuid": uuid, "parentUuid": parent, "sessionId": sid, "timestamp": "2026-12-01T10:00:00.000Z",
            "type": kind, "cwd": "/w", "message": {"role": role, "parts": [{"text": format!("{part} {i}")}]}});
        text.push_str(&rec.to_string());
        text.push('\n');
        parent = Value::String(uuid);
    }
    fs::write(chats.join(format!("{sid}.jsonl")), text).unwrap();
    let r = read_home(HARNESS, home.path(), KindSet::ALL, ReadOptions::default());
    let c = counts(&r.updates(sid));
    assert_eq!(
        (n(&c, "user_message_chunk"), n(&c, "agent_message_chunk")),
        (2500, 2500)
    );
}

#[test]
fn instructions_memory_and_skills_are_read_where_qwen_keeps_them() {
    let r = read_home(
        HARNESS,
        &sample_home(),
        KindSet::ALL,
        ReadOptions::default(),
    );
    let instructions = r.text(&r.state.instructions.as_ref().unwrap().text);
    assert!(
        instructions.starts_with("# Personal instructions"),
        "{instructions}"
    );
    assert!(
        !instructions.contains("Qwen Added Memories"),
        "{instructions}"
    );
    let notes: Vec<(String, Option<String>, Option<String>)> = r
        .state
        .memory
        .iter()
        .flatten()
        .map(|n| {
            (
                n.path.as_str().to_owned(),
                n.origin.path.clone(),
                n.origin.project.clone(),
            )
        })
        .collect();
    let has = |path: &str, project: Option<&str>| {
        assert!(
            notes
                .iter()
                .any(|(p, _, pr)| p == path && pr.as_deref() == project),
            "{path}: {notes:#?}"
        );
    };
    has(
        "qwen-added-memories/my-editor-is-helix-hx-suggest-commands-not-gui-steps.md",
        None,
    );
    has(
        "qwen-added-memories/the-staging-database-listens-on-port-5433-not-5432.md",
        None,
    );
    has("memories/feedback/money-in-cents.md", None);
    has(
        "projects/-home-dev-shop/project/deploy-freeze.md",
        Some("/home/dev/shop"),
    );
    let skills: Vec<&str> = r
        .state
        .skills
        .iter()
        .flatten()
        .map(|s| s.name.as_str())
        .collect();
    assert_eq!(skills, ["release-notes"]);
    // Restored into an empty home: the same files, and QWEN.md as it was.
    let home = tmp();
    let (answer, _) = r.write_into(HARNESS, home.path());
    assert!(answer.not_taken.is_empty(), "{answer:?}");
    for f in [
        ".qwen/QWEN.md",
        ".qwen/memories/feedback/money-in-cents.md",
        ".qwen/memories/MEMORY.md",
        ".qwen/projects/-home-dev-shop/memory/project/deploy-freeze.md",
        ".qwen/skills/release-notes/SKILL.md",
    ] {
        assert!(
            fs::read(sample_home().join(f)).unwrap() == fs::read(home.path().join(f)).unwrap(),
            "{f}"
        );
    }
}

#[test]
fn map_path_files_chats_and_project_memory_under_the_new_project() {
    let work = tmp();
    let bundle = work.path().join("qwen.aspstate");
    crate::support::asp_pack()
        .args(["--from", HARNESS, "-q", "--home"])
        .arg(sample_home())
        .arg("-o")
        .arg(&bundle)
        .assert()
        .success();
    let home = new_home(work.path().join("home"));
    crate::support::asp_unpack()
        .arg(&bundle)
        .args([
            "--to",
            HARNESS,
            "-q",
            "--map-path",
            "/home/dev=/home/alice",
            "--home",
        ])
        .arg(&home)
        .assert()
        .success();
    let p = home.join(".qwen/projects/-home-alice-shop");
    let chat =
        fs::read_to_string(p.join("chats/a9e019a0-3eca-408b-9ff8-0a0b4be0bc99.jsonl")).unwrap();
    assert!(
        chat.lines()
            .all(|l| l.contains("\"cwd\":\"/home/alice/shop\""))
    );
    assert!(p.join("memory/project/deploy-freeze.md").is_file());
    assert!(!home.join(".qwen/projects/-home-dev-shop").exists());
    assert!(validate(&home).is_empty(), "{:?}", validate(&home));
}

#[test]
fn archived_chats_are_carried_and_go_back_to_the_archive() {
    let home = tmp();
    let sid = "c8c64794-4131-498c-83cd-6e16d3c7e0c7";
    let from = sample_home().join(format!(".qwen/projects/-home-dev-shop/chats/{sid}.jsonl"));
    let rel = format!(".qwen/projects/-home-dev-shop/chats/archive/{sid}.jsonl");
    fs::create_dir_all(home.path().join(&rel).parent().unwrap()).unwrap();
    fs::copy(&from, home.path().join(&rel)).unwrap();
    let r = read_home(HARNESS, home.path(), KindSet::ALL, ReadOptions::default());
    assert_eq!(r.session(sid).title, "Where the discount table lives");
    assert_eq!(
        r.session(sid).meta.as_ref().unwrap()["qwen"]["archived"],
        true
    );
    let target = tmp();
    let (answer, _) = r.write_into(HARNESS, target.path());
    assert_eq!(answer.sessions[sid], sid);
    assert!(fs::read(target.path().join(&rel)).unwrap() == fs::read(&from).unwrap());

    // Taken out of the archive since (or put into it): the same chat, already there, not a
    // second file of it under the same id.
    let live = format!(".qwen/projects/-home-dev-shop/chats/{sid}.jsonl");
    fs::rename(target.path().join(&rel), target.path().join(&live)).unwrap();
    let (again, _) = r.write_into(HARNESS, target.path());
    assert!(again.already_there.contains(sid), "{again:?}");
    assert!(!target.path().join(&rel).exists());
    let listed = read_home(HARNESS, target.path(), KindSet::ALL, ReadOptions::default());
    let (back, _) = listed.write_into(HARNESS, home.path());
    assert!(back.already_there.contains(sid), "{back:?}");
    assert!(!home.path().join(&live).exists());
}

// ---------------------------------------------------------------------------------------
// MCP servers and settings: `Q/settings.json` (spec/harnesses/qwen.md §9, §10)

fn tools_and_settings() -> KindSet {
    use asp_format::kind::StateKind;
    KindSet::EMPTY
        .with(StateKind::Tools)
        .with(StateKind::Settings)
}

fn write(home: &Path, state: &asp_format::State) -> asp_format::answer::ImportAnswer {
    let store = asp_format::blob::MemoryStore::new();
    crate::support::write_home(HARNESS, home, state, &store, false, &PathMap::default()).0
}

#[test]
fn mcp_servers_and_settings_are_read_from_settings_json_without_credentials() {
    use asp_format::state::{McpServer, SettingValue};
    let r = read_home(
        HARNESS,
        &sample_home(),
        tools_and_settings(),
        ReadOptions::default(),
    );
    let tools = r.state.tools.as_ref().expect("tools given");
    let names: Vec<&str> = tools.iter().map(McpServer::name).collect();
    assert_eq!(names, ["docs", "issues"]);
    let McpServer::Http(docs) = &tools[0] else {
        panic!("`httpUrl` is streamable HTTP: {:?}", tools[0]);
    };
    assert_eq!(docs.url, "https://mcp.docs.example.com/mcp");
    assert_eq!(docs.headers[0].value, "Bearer $DOCS_MCP_TOKEN");
    let McpServer::Stdio(issues) = &tools[1] else {
        panic!("{:?}", tools[1]);
    };
    assert_eq!(issues.command, "python3");
    assert_eq!(
        issues.meta.as_ref().unwrap()["qwen"],
        serde_json::json!({"timeout": 30000, "trust": false, "description": "Issue tracker (read-only)", "excluded": true}),
        "disabled in `mcp.excluded`, said so"
    );
    assert_eq!(
        docs.meta.as_ref().unwrap()["qwen"],
        serde_json::json!({"excluded": true})
    );
    let settings = r.state.settings.as_ref().expect("settings given");
    assert_eq!(
        settings.get("model"),
        Some(&SettingValue::Select("qwen3-coder-plus".into()))
    );
    assert_eq!(settings.len(), 1, "no mode is set: {settings:?}");
    let text = serde_json::to_string(&r.state).unwrap();
    for credential in ["selectedType", "security", "envKey", "127.0.0.1"] {
        assert!(!text.contains(credential), "{credential} carried: {text}");
    }
}

#[test]
fn a_settings_json_with_comments_is_read_and_never_rewritten() {
    use asp_format::state::{SettingValue, Settings};
    let home = tmp();
    let q = home.path().join(".qwen");
    fs::create_dir_all(&q).unwrap();
    let text = "{\n  // my model\n  \"model\": {\"name\": \"qwen3-coder-plus\"},\n  \"mcpServers\": {\"s\": {\"url\": \"https://s\"}}\n}\n";
    fs::write(q.join("settings.json"), text).unwrap();
    let r = read_home(
        HARNESS,
        home.path(),
        tools_and_settings(),
        ReadOptions::default(),
    );
    assert!(
        matches!(&r.state.tools.as_deref().unwrap()[0], asp_format::state::McpServer::Sse(s) if s.url == "https://s"),
        "`url` is SSE in Qwen: {:?}",
        r.state.tools
    );
    let state = asp_format::State {
        settings: Some(Settings::from([(
            "mode".to_owned(),
            SettingValue::Select("plan".into()),
        )])),
        ..Default::default()
    };
    let answer = write(home.path(), &state);
    assert!(answer.taken.is_empty(), "{answer:?}");
    assert!(
        answer.not_taken[0].reason.contains("has comments"),
        "{answer:?}"
    );
    assert_eq!(fs::read_to_string(q.join("settings.json")).unwrap(), text);

    // Not JSON at all: both kinds left out and the place named.
    fs::write(q.join("settings.json"), "{\n  \"model\": {\n}}}\n").unwrap();
    let r = read_home(
        HARNESS,
        home.path(),
        tools_and_settings(),
        ReadOptions::default(),
    );
    assert_eq!((r.state.tools, r.state.settings), (None, None));
    let d = r
        .diagnostics
        .iter()
        .find(|d| d.severity.is_not_carried())
        .expect("reported");
    assert_eq!(d.line, Some(3), "{d:?}");
}

#[test]
fn servers_and_settings_are_written_as_qwen_reads_them_and_never_replace_the_users() {
    use asp_format::state::{McpServer, SettingValue, Settings};
    let tools: Vec<McpServer> = serde_json::from_value(serde_json::json!([
        {"type": "http", "name": "gem", "url": "https://g/mcp", "headers": [],
         "_meta": {"gemini": {"urlField": "url"}}},
        {"type": "sse", "name": "events", "url": "https://e/sse", "headers": [{"name": "A", "value": "b"}]},
        {"name": "local", "command": "srv", "args": ["-v"], "env": [],
         "_meta": {"qwen": {"trust": true, "timeout": 5}}}
    ]))
    .unwrap();
    let settings = Settings::from([
        (
            "model".to_owned(),
            SettingValue::Select("qwen3-coder-plus".into()),
        ),
        (
            "mode".to_owned(),
            SettingValue::Select("acceptEdits".into()),
        ),
    ]);
    let state = asp_format::State {
        tools: Some(tools),
        settings: Some(settings),
        ..Default::default()
    };
    let home = tmp();
    let answer = write(home.path(), &state);
    let path = home.path().join(".qwen/settings.json");
    let doc: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(
        doc["mcpServers"],
        serde_json::json!({
            "gem": {"httpUrl": "https://g/mcp"},
            "events": {"url": "https://e/sse", "headers": {"A": "b"}},
            "local": {"command": "srv", "args": ["-v"], "timeout": 5}
        }),
        "HTTP as httpUrl (Qwen speaks SSE to a url), and no trust granted"
    );
    assert_eq!(doc["model"]["name"], "qwen3-coder-plus");
    assert_eq!(doc["tools"]["approvalMode"], "auto-edit");
    assert_eq!(answer.not_taken.len(), 1, "{answer:?}");
    assert!(
        answer.not_taken[0].reason.contains("trust: true"),
        "{answer:?}"
    );
    // Written again: nothing changes.
    assert_eq!(write(home.path(), &state), answer);
    assert_eq!(
        serde_json::from_slice::<Value>(&fs::read(&path).unwrap()).unwrap(),
        doc
    );

    // The user's own values are kept; yolo is never written; another provider's model refused.
    let mut own = doc.clone();
    own["model"]["name"] = "qwen3-max".into();
    own["tools"] = serde_json::json!({"approvalMode": "default"});
    fs::write(&path, serde_json::to_string_pretty(&own).unwrap()).unwrap();
    for (mode, model) in [("auto", "qwen3-coder-plus"), ("yolo", "claude-opus-4-6")] {
        let state = asp_format::State {
            settings: Some(Settings::from([
                ("model".to_owned(), SettingValue::Select(model.into())),
                ("mode".to_owned(), SettingValue::Select(mode.into())),
            ])),
            ..Default::default()
        };
        let answer = write(home.path(), &state);
        assert!(answer.taken.is_empty(), "{answer:?}");
        assert_eq!(answer.not_taken.len(), 2, "{answer:?}");
    }
    let after: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(after, own);
}

#[test]
fn the_samples_servers_and_settings_restore_into_qwen_as_they_were() {
    let r = read_home(
        HARNESS,
        &sample_home(),
        tools_and_settings(),
        ReadOptions::default(),
    );
    let home = tmp();
    let answer = write(home.path(), &r.state);
    assert!(answer.not_taken.is_empty(), "{answer:?}");
    let before: Value =
        serde_json::from_slice(&fs::read(sample_home().join(".qwen/settings.json")).unwrap())
            .unwrap();
    let after: Value =
        serde_json::from_slice(&fs::read(home.path().join(".qwen/settings.json")).unwrap())
            .unwrap();
    assert_eq!(after["mcpServers"], before["mcpServers"]);
    let names = |v: &Value| {
        let mut n: Vec<String> = serde_json::from_value(v["mcp"]["excluded"].clone()).unwrap();
        n.sort();
        n
    };
    assert_eq!(
        names(&after),
        names(&before),
        "disabled again (in the state's order)"
    );
    assert_eq!(after["model"], before["model"]);
}

/// A name taken by a dangling link (or a folder) is taken: the carried chat is kept beside it,
/// never reported as written when nothing was.
#[cfg(unix)]
#[test]
fn a_chat_name_taken_by_a_dangling_link_or_a_folder_is_kept_beside() {
    let r = read_home(
        HARNESS,
        &sample_home(),
        KindSet::ALL,
        ReadOptions::default(),
    );
    let home = tmp();
    let chats: Vec<(String, PathBuf)> = r
        .state
        .sessions
        .iter()
        .flatten()
        .filter_map(|s| {
            let f = s.native.as_ref()?.files.iter().find(|f| {
                f.path.as_str().contains("/chats/") && !f.path.as_str().contains("/archive/")
            })?;
            Some((s.id.to_string(), f.path.under(home.path())))
        })
        .take(2)
        .collect();
    assert_eq!(chats.len(), 2, "the sample has two chats");
    fs::create_dir_all(chats[0].1.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(home.path().join("nowhere"), &chats[0].1).unwrap();
    fs::create_dir_all(&chats[1].1).unwrap();
    let (answer, _) = r.write_into(HARNESS, home.path());
    for (id, path) in &chats {
        let new = &answer.sessions[id];
        assert_ne!(new, id, "{id} is kept beside what is at {}", path.display());
        let copy = path.with_file_name(format!("{new}.jsonl"));
        assert!(copy.is_file(), "{} was written", copy.display());
    }
}

/// Qwen Code 0.24 names servers in `mcp.allowed` and `mcp.excluded` by patterns (`*` any
/// run, `?` one character, case as written): a server no allowed pattern names, or an
/// excluded one does, is read switched off.
#[test]
fn a_server_qwen_code_does_not_start_by_its_patterns_is_read_switched_off() {
    let home = tmp();
    let qwen = home.path().join(".qwen");
    fs::create_dir_all(&qwen).unwrap();
    fs::write(
        qwen.join("settings.json"),
        r#"{"mcpServers": {"api": {"command": "a"}, "api-old": {"command": "b"},
            "Api2": {"command": "c"}, "docs": {"command": "d"}},
            "mcp": {"allowed": ["api*", "Api?"], "excluded": ["*-old"]}}"#,
    )
    .unwrap();
    let read = read_home("qwen", home.path(), KindSet::ALL, ReadOptions::default());
    assert_eq!(
        crate::support::servers_off(&read, "qwen"),
        [
            ("Api2".to_owned(), false),
            ("api".to_owned(), false),
            ("api-old".to_owned(), true),
            ("docs".to_owned(), true)
        ]
    );
}

/// Qwen Code's project memory into a Claude Code home that has its own: the index line links
/// to the note where it is written (Claude Code's folder is flat), once, and the owner's index
/// it was added to is named in the answer (new-user trial helper-126, 3).
#[test]
fn project_memory_into_claude_code_links_each_note_once_where_it_is() {
    use asp_format::kind::StateKind;
    let qwen = read_home(
        HARNESS,
        &sample_home(),
        KindSet::EMPTY.with(StateKind::Memory),
        ReadOptions::default(),
    );
    let home = tmp();
    crate::support::copy_dir(&samples().join("claude-code"), home.path());
    let memory = home.path().join(".claude/projects/-home-dev-shop/memory");
    let before = fs::read_to_string(memory.join("MEMORY.md")).unwrap();
    let (answer, _) = qwen.write_into("claude-code", home.path());
    let index = fs::read_to_string(memory.join("MEMORY.md")).unwrap();
    assert!(index.starts_with(&before), "{index}");
    let added: Vec<&str> = index[before.len()..].lines().collect();
    assert_eq!(added.len(), 1, "{index}");
    let link = added[0]
        .split_once("](")
        .and_then(|(_, rest)| rest.split_once(')'))
        .map(|(l, _)| l)
        .unwrap();
    assert!(memory.join(link).is_file(), "{link} is not there: {index}");
    assert!(
        answer
            .written_into
            .iter()
            .any(|w| w.file == memory.join("MEMORY.md") && w.what.contains(link)),
        "{:?}",
        answer.written_into
    );
}

/// A session's usage (`usage_update`) that the harness written into keeps no record of is said
/// as left out, as Pi and Claude Code say it: Copilot CLI and OpenCode wrote none and said
/// nothing, and Qwen Code said nothing of another harness's (new-user trial helper-131, 4).
#[test]
fn usage_a_composed_session_cannot_keep_is_said() {
    let with_usage = |h: &str| {
        let r = read_home(h, &samples().join(h), KindSet::ALL, ReadOptions::default());
        assert!(
            r.state.sessions.iter().flatten().any(|s| r
                .updates(s.id.as_str())
                .iter()
                .any(|u| u["sessionUpdate"] == "usage_update")),
            "the {h} sample has usage"
        );
        r
    };
    for (from, to) in [
        ("qwen", "copilot"),
        ("qwen", "opencode"),
        ("gemini", "qwen"),
    ] {
        let r = with_usage(from);
        let home = tmp();
        let (_, said) = r.write_into(to, home.path());
        assert!(
            said.iter().any(|d| d.message.contains("usage_update")),
            "{from} into {to}: {said:#?}"
        );
    }
}

/// A subagent restored alone from its own files goes where Qwen Code keeps its parent's
/// subagents, which Qwen shows with that parent only: the write says so, and gives no command
/// to resume it alone (new-user trial helper-131, 3: "written as a conversation of its own",
/// and `qwen --resume <parent>:agent-…`, which names no chat).
#[test]
fn a_subagent_restored_alone_is_said_to_be_with_its_parent_and_has_no_resume_line() {
    let t = tmp();
    let bundle = t.path().join("qwen.aspstate");
    crate::support::pack_sample_home(HARNESS, &bundle);
    let home = new_home(t.path().join("home"));
    let sub = "1f97bfb3-3b17-40b6-b7d9-2ab2f837a57b:agent-Explore-call_3b055e982dcaa5c0";
    let out = crate::support::asp_unpack()
        .arg(&bundle)
        .args(["--session", sub, "--to", HARNESS, "--home"])
        .arg(&home)
        .output()
        .unwrap();
    let (said, done) = (
        String::from_utf8_lossy(&out.stderr),
        String::from_utf8_lossy(&out.stdout),
    );
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("where Qwen Code keeps the subagents of 1f97bfb3")
            && !said.contains("conversation of its own"),
        "{said}"
    );
    assert!(!done.contains("to continue"), "{done}");
}

/// Qwen Code expands a bare `$NAME` in its settings file (its sample's servers use it):
/// written into a harness that does not (OpenCode, Claude Code), each is that harness's
/// reference, and back into Qwen Code it stays as it was (new-user trial helper-131, 5:
/// OpenCode got the words `Bearer $WEB_TOKEN`). A `$` that names nothing stays text.
#[test]
fn a_bare_env_reference_is_a_reference_wherever_the_server_is_written() {
    let from = tmp();
    fs::create_dir_all(from.path().join(".qwen")).unwrap();
    fs::write(
        from.path().join(".qwen/settings.json"),
        r#"{"mcpServers": {"web": {"httpUrl": "https://x.example/mcp",
            "headers": {"Authorization": "Bearer $WEB_TOKEN", "X-Price": "$5"}}}}"#,
    )
    .unwrap();
    let r = read_home(HARNESS, from.path(), KindSet::ALL, ReadOptions::default());
    for (to, file, want) in [
        (
            "opencode",
            ".config/opencode/opencode.json",
            "Bearer {env:WEB_TOKEN}",
        ),
        ("claude-code", ".claude.json", "Bearer ${WEB_TOKEN}"),
        ("qwen", ".qwen/settings.json", "Bearer $WEB_TOKEN"),
    ] {
        let home = tmp();
        r.write_into(to, home.path());
        let text = fs::read_to_string(home.path().join(file)).unwrap();
        assert!(
            text.contains(want) && text.contains("\"$5\""),
            "{to}: {text}"
        );
    }
}
