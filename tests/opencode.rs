//! The OpenCode converter, pinned against `samples/opencode/EXPECTED.md` and
//! `spec/harnesses/opencode.md`: the validator (what OpenCode 1.18.33 needs of the rows to list
//! and load a session, §4 and §10) and sessions of every other harness written as rows.

use std::fs;
use std::path::Path;

use crate::support::{copy_dir, read_home, samples, tmp, write_home};
use asp_convert::harness::ReadOptions;
use asp_convert::kit::pathmap::PathMap;
use asp_convert::kit::report::Severity;
use asp_format::kind::KindSet;
use serde_json::Value;

const DB: &str = ".local/share/opencode/opencode.db";

/// What OpenCode needs of the database to list and load every session in it (spec §10, each
/// measured): ids with their prefixes, a project row, message data with every required field
/// of its role, part data that is JSON with a type, and every migration recorded.
pub(crate) fn validate(home: &Path) -> Vec<String> {
    let path = home.join(DB);
    if !path.exists() {
        return Vec::new();
    }
    let mut problems = Vec::new();
    let c = match rusqlite::Connection::open_with_flags(
        &path,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    ) {
        Ok(c) => c,
        Err(e) => return vec![format!("{DB}: {e}")],
    };
    let n: i64 = c
        .query_row("SELECT count(*) FROM migration", [], |r| r.get(0))
        .unwrap_or(0);
    if n < 38 {
        problems.push(format!(
            "{DB}: {n} migrations recorded, OpenCode 1.18.33 has 38"
        ));
    }
    let mut s = c
        .prepare(
            "SELECT s.id, s.directory, s.title, s.version, \
             EXISTS(SELECT 1 FROM project p WHERE p.id = s.project_id) FROM session s",
        )
        .unwrap();
    let sessions: Vec<(String, String, String, String, bool)> = s
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (id, dir, title, version, project) in sessions {
        if !id.starts_with("ses") {
            problems.push(format!("session {id}: the id lacks the ses prefix"));
        }
        if !dir.starts_with('/') || title.is_empty() || version.is_empty() || !project {
            problems.push(format!(
                "session {id}: directory, title, version or project missing"
            ));
        }
    }
    let mut m = c.prepare("SELECT id, data FROM message").unwrap();
    let msgs: Vec<(String, String)> = m
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (id, data) in msgs {
        let v: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
        let need: &[&str] = match v["role"].as_str() {
            Some("user") => &[
                "/time/created",
                "/agent",
                "/model/providerID",
                "/model/modelID",
            ],
            Some("assistant") => &[
                "/time/created",
                "/parentID",
                "/modelID",
                "/providerID",
                "/mode",
                "/agent",
                "/path/cwd",
                "/path/root",
                "/cost",
                "/tokens/input",
                "/tokens/output",
                "/tokens/reasoning",
                "/tokens/cache/read",
                "/tokens/cache/write",
            ],
            _ => {
                problems.push(format!("message {id}: no role"));
                continue;
            }
        };
        for p in need {
            if v.pointer(p).is_none() {
                problems.push(format!("message {id}: no {p}"));
            }
        }
        if !id.starts_with("msg") {
            problems.push(format!("message {id}: the id lacks the msg prefix"));
        }
    }
    let mut p = c.prepare("SELECT id, data FROM part").unwrap();
    let parts: Vec<(String, String)> = p
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    for (id, data) in parts {
        let v: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
        if !id.starts_with("prt") || v["type"].as_str().is_none() {
            problems.push(format!("part {id}: not a part OpenCode loads"));
        }
        if v["type"] == "tool"
            && !matches!(
                v.pointer("/state/status").and_then(Value::as_str),
                Some("completed" | "error")
            )
        {
            problems.push(format!("part {id}: a tool call without its result"));
        }
    }
    problems
}

/// Harness `from`'s sample, read whole and written into a new OpenCode home.
fn carried_in(
    from: &str,
) -> (
    crate::support::ReadBack,
    tempfile::TempDir,
    asp_format::answer::ImportAnswer,
) {
    let packed = read_home(
        from,
        &samples().join(from),
        KindSet::ALL,
        ReadOptions::default(),
    );
    let home = tmp();
    let (answer, _) = packed.write_into("opencode", home.path());
    (packed, home, answer)
}

#[test]
fn every_other_sample_is_written_as_rows_opencode_loads_with_every_prompt_and_answer() {
    for from in ["claude-code", "codex", "gemini", "pi", "qwen"] {
        let (packed, home, answer) = carried_in(from);
        let problems = validate(home.path());
        assert!(problems.is_empty(), "{from}: {problems:#?}");
        let back = read_home(
            "opencode",
            home.path(),
            KindSet::ALL,
            ReadOptions::default(),
        );
        for s in packed.state.sessions.iter().flatten() {
            let Some(new) = answer.sessions.get(s.id.as_str()) else {
                continue;
            };
            let count = |u: &[Value], k: &str| u.iter().filter(|u| u["sessionUpdate"] == k).count();
            let (a, b) = (packed.updates(s.id.as_str()), back.updates(new));
            // Every tool call is there, each with its result (the validator checked the state).
            assert_eq!(
                count(&a, "tool_call"),
                count(&b, "tool_call"),
                "{from} {}",
                s.id
            );
            assert!(count(&b, "user_message_chunk") > 0, "{from} {}", s.id);
        }
    }
}

/// A session without a title is titled by its first prompt as the user typed it: a Pi session
/// begun with `/skill:route-check Add an /orders route…` by that command, not by the
/// `<skill name=… location=…>` block Pi stores the skill's text in (Claude Code's reader
/// titles a command the same way, `/name args`).
#[test]
fn an_untitled_session_begun_with_a_skill_is_titled_by_the_command_typed() {
    let (packed, home, answer) = carried_in("pi");
    let back = read_home(
        "opencode",
        home.path(),
        KindSet::ALL,
        ReadOptions::default(),
    );
    let skill = "01a23402-34b7-7388-8129-ef78ff38aa87";
    assert_eq!(packed.session(skill).title, "", "untitled in Pi");
    assert_eq!(
        back.session(&answer.sessions[skill]).title,
        "/skill:route-check Add an /orders route to the gateway."
    );
    for s in packed.state.sessions.iter().flatten() {
        let title = &back.session(&answer.sessions[s.id.as_str()]).title;
        assert!(!title.contains("<skill"), "{}: {title}", s.id);
    }
}

/// A session carried into OpenCode keeps its times and its family (spec §10 steps 4 to 6): its
/// messages are dated as the source dated its turns, in order, and the session spans them; a
/// sub-agent session whose parent came along points at the parent's row (`parent_id`, so
/// OpenCode lists it under its parent, not as a conversation of its own), and the call that
/// started it names it (`metadata.sessionId`).
#[test]
fn sessions_carried_into_opencode_keep_their_times_and_their_parents() {
    let mut linked = 0;
    for from in ["claude-code", "codex", "gemini", "qwen"] {
        let (packed, home, answer) = carried_in(from);
        let c = rusqlite::Connection::open(home.path().join(DB)).unwrap();
        for s in packed.state.sessions.iter().flatten() {
            let Some(sid) = answer.sessions.get(s.id.as_str()) else {
                continue;
            };
            let (created, updated, parent): (i64, i64, Option<String>) = c
                .query_row(
                    "SELECT time_created, time_updated, parent_id FROM session WHERE id = ?1",
                    [sid],
                    |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
                )
                .unwrap();
            let mut q = c
                .prepare("SELECT time_created FROM message WHERE session_id = ?1 ORDER BY id")
                .unwrap();
            let times: Vec<i64> = q
                .query_map([sid], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            let what = format!("{from} {}", s.id);
            assert!(times.windows(2).all(|w| w[0] < w[1]), "{what}: {times:?}");
            assert_eq!(times.first(), Some(&created), "{what}");
            assert!(created <= updated, "{what}");
            // The first prompt is dated as the source dated it.
            let first = packed.updates(s.id.as_str()).iter().find_map(|u| {
                if u["sessionUpdate"] != "user_message_chunk" {
                    return None;
                }
                let meta = u["_meta"].as_object()?;
                meta.values().find_map(|ns| match &ns["timestamp"] {
                    Value::String(t) => chrono_ms(t),
                    v => v.as_i64(),
                })
            });
            if let Some(first) = first {
                assert_eq!(created, first, "{what}: the first message's time");
            }
            let carried_parent = asp_convert::kit::meta::parent_id(s.meta.as_ref())
                .and_then(|p| answer.sessions.get(p));
            assert_eq!(parent.as_ref(), carried_parent, "{what}: parent_id");
            if let Some(p) = carried_parent {
                linked += 1;
                let named: i64 = c
                    .query_row(
                        "SELECT count(*) FROM part WHERE session_id = ?1 \
                         AND json_extract(data, '$.state.metadata.sessionId') = ?2",
                        [p, sid],
                        |r| r.get(0),
                    )
                    .unwrap();
                assert_eq!(named, 1, "{what}: the parent's call that started it");
            }
        }
    }
    assert!(
        linked >= 3,
        "the samples' sub-agents were carried with their parents"
    );
}

/// A carried session's messages name the model that answered them, as OpenCode names models
/// (`anthropic/claude-opus-4-6`, `openai/gpt-5.5`), so OpenCode resumes with that model where
/// the user has its provider: the model each stream's `config_option_update` chose last, for
/// the prompt it answered too. A stream that names no model, or one OpenCode cannot name,
/// leaves `<harness>/imported` (spec/harnesses/opencode.md, "Composed").
#[test]
fn messages_carried_into_opencode_name_the_model_that_answered() {
    let mut named = 0;
    for from in ["claude-code", "codex", "gemini", "pi", "qwen"] {
        let (packed, home, answer) = carried_in(from);
        let c = rusqlite::Connection::open(home.path().join(DB)).unwrap();
        for s in packed.state.sessions.iter().flatten() {
            let Some(sid) = answer.sessions.get(s.id.as_str()) else {
                continue;
            };
            // The last model the stream chose before its first answer, as `provider/model`.
            let mut chosen = None;
            for u in packed.updates(s.id.as_str()) {
                if u["sessionUpdate"] == "agent_message_chunk" {
                    break;
                }
                let options = u["configOptions"].as_array().into_iter().flatten();
                for o in options.filter(|o| o["id"] == "model") {
                    chosen = o["currentValue"]
                        .as_str()
                        .and_then(asp_convert::kit::accepted::with_provider);
                }
            }
            let want = chosen.unwrap_or_else(|| format!("{from}/imported"));
            let mut q = c
                .prepare(
                    "SELECT coalesce(json_extract(data, '$.model.providerID'), \
                     json_extract(data, '$.providerID')) || '/' || \
                     coalesce(json_extract(data, '$.model.modelID'), \
                     json_extract(data, '$.modelID')) FROM message \
                     WHERE session_id = ?1 ORDER BY id LIMIT 2",
                )
                .unwrap();
            let first: Vec<String> = q
                .query_map([sid], |r| r.get(0))
                .unwrap()
                .collect::<Result<_, _>>()
                .unwrap();
            // The first prompt and its answer.
            for m in &first {
                assert_eq!(m, &want, "{from} {}", s.id);
            }
            named += usize::from(!want.ends_with("/imported"));
        }
    }
    assert!(
        named >= 4,
        "the Claude Code and Codex samples' models are named"
    );
}

/// Epoch milliseconds of an RFC 3339 time.
fn chrono_ms(t: &str) -> Option<i64> {
    asp_convert::kit::time::parse(t).map(asp_convert::kit::time::millis)
}

// Damaged databases (tests/fixtures/opencode/: one SQL script per damage, applied to a copy of
// the sample's database).

/// A home holding the sample's database with the fixture `script` applied.
fn damaged(script: &str) -> tempfile::TempDir {
    let home = tmp();
    let db = home.path().join(DB);
    std::fs::create_dir_all(db.parent().unwrap()).unwrap();
    std::fs::copy(samples().join("opencode").join(DB), &db).unwrap();
    let sql = std::fs::read_to_string(
        crate::support::root()
            .join("tests/fixtures/opencode")
            .join(script),
    )
    .unwrap();
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch(&sql)
        .unwrap();
    home
}

fn counts_of(r: &crate::support::ReadBack) -> std::collections::BTreeMap<String, [usize; 4]> {
    let c = |u: &[Value], k: &str| u.iter().filter(|u| u["sessionUpdate"] == k).count();
    r.state
        .sessions
        .iter()
        .flatten()
        .map(|s| {
            let u = r.updates(s.id.as_str());
            let n = [
                c(&u, "user_message_chunk"),
                c(&u, "agent_message_chunk"),
                c(&u, "tool_call"),
                c(&u, "tool_call_update"),
            ];
            (s.id.as_str().to_owned(), n)
        })
        .collect()
}

fn read_all(home: &Path) -> crate::support::ReadBack {
    read_home("opencode", home, KindSet::ALL, ReadOptions::default())
}

#[test]
fn a_damaged_row_is_named_by_file_table_and_row_the_rest_read_and_the_row_restored() {
    let sample = counts_of(&read_all(&samples().join("opencode")));
    let part = "prt_2341d6cfa001QxHcu3cVvdAFkM";
    let first = "ses_dcbe29379ffe7EA91rytPF0rq2";

    let home = damaged("truncated-part.sql");
    let db = home.path().join(DB);
    let r = read_all(home.path());
    assert!(
        r.diagnostics
            .iter()
            .any(|d| d.severity == Severity::KeptNatively
                && d.file() == Some(db.join(format!("part/{part}.row.json")).as_path())
                && d.message.contains(&format!("table part row {part}"))),
        "{:#?}",
        r.diagnostics
    );
    let got = counts_of(&r);
    for (id, n) in &sample {
        if id != first {
            assert_eq!(got.get(id), Some(n), "session {id} reads as in the sample");
        }
    }
    // Nothing lost: the damaged row travels as it is, and a restore puts it back.
    let restored = tmp();
    r.write_into("opencode", restored.path());
    let data = |db: &Path| -> String {
        rusqlite::Connection::open(db)
            .unwrap()
            .query_row("SELECT data FROM part WHERE id = ?1", [part], |r| r.get(0))
            .unwrap()
    };
    assert_eq!(data(&restored.path().join(DB)), data(&db));

    let home = damaged("non-utf8-part.sql");
    let r = read_all(home.path());
    assert!(
        r.diagnostics.iter().any(|d| !d.severity.is_not_carried()
            && d.file() == Some(home.path().join(DB).as_path())
            && d.message.contains("not UTF-8")),
        "{:#?}",
        r.diagnostics
    );
    assert!(r.text(&r.session(first).updates).contains("ok\u{FFFD}"));
}

#[test]
fn a_database_with_other_migrations_is_read_but_never_written() {
    let sample = read_all(&samples().join("opencode"));
    let foreign = read_home(
        "claude-code",
        &samples().join("claude-code"),
        KindSet::ALL,
        ReadOptions::default(),
    );
    for (script, says) in [
        ("half-migrated.sql", "20260428004200_add_session_path"),
        ("newer-schema.sql", "20270115093000_session_labels"),
        ("drizzle-older.sql", "__drizzle_migrations"),
    ] {
        let home = damaged(script);
        let db = home.path().join(DB);
        assert_eq!(
            counts_of(&read_all(home.path())),
            counts_of(&sample),
            "{script}: every session reads"
        );
        let before = crate::support::files_in(home.path());
        for (state, store) in [
            (&sample.state, &sample.store),
            (&foreign.state, &foreign.store),
        ] {
            let sessions = asp_format::State {
                sessions: state.sessions.clone(),
                ..Default::default()
            };
            let (answer, _) = write_home(
                "opencode",
                home.path(),
                &sessions,
                store,
                false,
                &PathMap::default(),
            );
            assert!(answer.sessions.is_empty(), "{script}: {answer:?}");
            assert_eq!(
                answer.not_taken.len(),
                sessions.sessions.as_ref().unwrap().len(),
                "{script}"
            );
            for n in &answer.not_taken {
                assert!(
                    n.reason.contains(&db.display().to_string()) && n.reason.contains(says),
                    "{script}: {}",
                    n.reason
                );
            }
        }
        assert_eq!(
            crate::support::files_in(home.path()),
            before,
            "{script}: nothing changed"
        );
    }
}

// Instructions, skills, MCP servers and the model (spec §1, §9).

#[test]
fn the_samples_config_is_read_as_opencode_merges_it_and_written_back_the_same() {
    use asp_format::state::{McpServer, SettingValue};
    let r = read_all(&samples().join("opencode"));
    let s = &r.state;
    let text = r.text(&s.instructions.as_ref().unwrap().text);
    assert_eq!(
        text,
        std::fs::read_to_string(samples().join("opencode/.config/opencode/AGENTS.md")).unwrap()
    );
    let skills: Vec<&str> = s.skills.iter().flatten().map(|k| k.name.as_str()).collect();
    assert_eq!(skills, ["release-notes"]);
    let tools = s.tools.as_ref().unwrap();
    assert_eq!(tools.len(), 2);
    let McpServer::Stdio(issues) = tools.iter().find(|t| t.name() == "issues").unwrap() else {
        panic!("issues is a local server")
    };
    assert_eq!(issues.command, "python3");
    assert_eq!(issues.args[0], "/home/dev/.config/opencode/mcp/issues.py");
    assert_eq!(issues.env[0].name, "ISSUES_PROJECT");
    assert_eq!(
        issues.meta.as_ref().unwrap()["opencode"]["enabled"],
        Value::Bool(false)
    );
    let McpServer::Http(docs) = tools.iter().find(|t| t.name() == "docs").unwrap() else {
        panic!("docs is a remote server")
    };
    assert_eq!(docs.headers[0].value, "Bearer {env:DOCS_MCP_TOKEN}");
    assert_eq!(
        s.settings.as_ref().unwrap().get("model"),
        Some(&SettingValue::Select("scripted/scripted-1".into()))
    );

    // Into an empty home: a new opencode.json whose `mcp` entries are the sample's, exactly.
    let home = tmp();
    let only = asp_format::State {
        instructions: s.instructions.clone(),
        skills: s.skills.clone(),
        tools: s.tools.clone(),
        settings: s.settings.clone(),
        ..Default::default()
    };
    let (answer, _) = write_home(
        "opencode",
        home.path(),
        &only,
        &r.store,
        false,
        &PathMap::default(),
    );
    assert!(answer.not_taken.is_empty(), "{answer:?}");
    let json = |p: &Path| -> Value { serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap() };
    let sample = json(&samples().join("opencode/.config/opencode/opencode.json"));
    let written = json(&home.path().join(".config/opencode/opencode.json"));
    assert_eq!(written["mcp"], sample["mcp"]);
    assert_eq!(written["model"], sample["model"]);
    assert!(
        home.path()
            .join(".config/opencode/skills/release-notes/SKILL.md")
            .is_file()
    );
    // Again: everything is already there, nothing changes.
    let before = crate::support::files_in(home.path());
    let (answer, _) = write_home(
        "opencode",
        home.path(),
        &only,
        &r.store,
        false,
        &PathMap::default(),
    );
    assert!(answer.not_taken.is_empty(), "{answer:?}");
    assert_eq!(crate::support::files_in(home.path()), before);
}

/// MCP descriptors keep their values literally, each in its source's spelling of an
/// environment reference: Claude Code's `${VAR}` goes into OpenCode as `{env:VAR}` (which
/// OpenCode substitutes; `${VAR}` it would send as text, and the server would fail to
/// authenticate), and OpenCode's `{env:VAR}` into Claude Code as `${VAR}`.
#[test]
fn environment_references_are_written_in_the_spelling_the_target_expands() {
    let claude = read_home(
        "claude-code",
        &samples().join("claude-code"),
        asp_format::KindSet::ALL,
        asp_convert::harness::ReadOptions::default(),
    );
    let tools_only = |s: &asp_format::State| asp_format::State {
        tools: s.tools.clone(),
        ..Default::default()
    };
    // The MCP servers of `from` written into `harness`: the text of its file `config`.
    let written_into = |harness: &str, from: &crate::support::ReadBack, config: &str| {
        let home = tmp();
        let state = tools_only(&from.state);
        write_home(
            harness,
            home.path(),
            &state,
            &from.store,
            false,
            &PathMap::default(),
        );
        std::fs::read_to_string(home.path().join(config)).unwrap()
    };
    let written = written_into("opencode", &claude, ".config/opencode/opencode.json");
    assert!(
        written.contains("\"{env:GITHUB_TOKEN}\"")
            && written.contains("\"Bearer {env:LINEAR_API_KEY}\"")
            && !written.contains("${"),
        "{written}"
    );

    let mut opencode = read_all(&samples().join("opencode"));
    // The sample's servers are switched off, and a server switched off is not written into
    // Claude Code at all (`kit::mcp_switch`, tested in tests/codex.rs): switched on here.
    for server in opencode.state.tools.iter_mut().flatten() {
        if let Some(own) = server
            .meta_mut()
            .as_mut()
            .and_then(|m| m.get_mut("opencode"))
            .and_then(Value::as_object_mut)
        {
            own.remove("enabled");
        }
    }
    let written = written_into("claude-code", &opencode, ".claude.json");
    assert!(
        written.contains("\"Bearer ${DOCS_MCP_TOKEN}\"") && !written.contains("{env:"),
        "{written}"
    );
}

#[test]
fn a_config_file_with_comments_is_read_but_never_rewritten() {
    let r = read_all(&samples().join("opencode"));
    let home = tmp();
    let dir = home.path().join(".config/opencode");
    std::fs::create_dir_all(&dir).unwrap();
    let jsonc = "{\n  // the user's own note\n  \"mcp\": {\n    \"mine\": {\"type\": \"remote\", \"url\": \"https://x.example/mcp\",},\n  },\n}\n";
    std::fs::write(dir.join("opencode.jsonc"), jsonc).unwrap();
    let back = read_all(home.path());
    let names: Vec<&str> = back
        .state
        .tools
        .iter()
        .flatten()
        .map(|t| t.name())
        .collect();
    assert_eq!(names, ["mine"], "comments and trailing commas are read");
    let only = asp_format::State {
        tools: r.state.tools.clone(),
        settings: r.state.settings.clone(),
        ..Default::default()
    };
    let (answer, _) = write_home(
        "opencode",
        home.path(),
        &only,
        &r.store,
        false,
        &PathMap::default(),
    );
    assert_eq!(answer.not_taken.len(), 2, "{answer:?}");
    assert!(
        answer
            .not_taken
            .iter()
            .all(|n| n.reason.contains("opencode.jsonc") && n.reason.contains("comments")),
        "{answer:?}"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("opencode.jsonc")).unwrap(),
        jsonc
    );
}

/// While OpenCode has no `AGENTS.md` it reads `~/.claude/CLAUDE.md` as its instructions, so
/// that file is the instructions already there: the same text is already there, and different
/// text is never replaced by writing an `AGENTS.md` (the carried text goes beside).
#[test]
fn claude_md_that_opencode_reads_instead_is_never_replaced_by_an_agents_md() {
    use asp_format::StateKind;
    let r = read_all(&samples().join("opencode"));
    let carried = r.text(&r.state.instructions.as_ref().unwrap().text);
    let only = asp_format::State {
        instructions: r.state.instructions.clone(),
        ..Default::default()
    };
    let config = |h: &Path| h.join(".config/opencode");

    // Different text in CLAUDE.md: AGENTS.md is not written, the carried text goes beside.
    let home = tmp();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::write(
        home.path().join(".claude/CLAUDE.md"),
        "the user's own rules\n",
    )
    .unwrap();
    let (answer, _) = write_home(
        "opencode",
        home.path(),
        &only,
        &r.store,
        false,
        &PathMap::default(),
    );
    assert!(!config(home.path()).join("AGENTS.md").exists());
    assert_eq!(answer.not_taken.len(), 1, "{answer:?}");
    assert_eq!(answer.not_taken[0].kind, StateKind::Instructions);
    assert!(
        answer.not_taken[0].reason.contains("CLAUDE.md")
            && answer.not_taken[0].reason.contains("AGENTS.imported.md"),
        "{answer:?}"
    );
    assert_eq!(
        std::fs::read_to_string(config(home.path()).join("AGENTS.imported.md")).unwrap(),
        carried
    );
    assert_eq!(
        std::fs::read_to_string(home.path().join(".claude/CLAUDE.md")).unwrap(),
        "the user's own rules\n"
    );

    // The same text in CLAUDE.md: already there, nothing written.
    let home = tmp();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::write(home.path().join(".claude/CLAUDE.md"), &carried).unwrap();
    let before = crate::support::files_in(home.path());
    let (answer, _) = write_home(
        "opencode",
        home.path(),
        &only,
        &r.store,
        false,
        &PathMap::default(),
    );
    assert!(answer.not_taken.is_empty(), "{answer:?}");
    assert!(answer.taken.contains(StateKind::Instructions), "{answer:?}");
    assert_eq!(crate::support::files_in(home.path()), before);
}

/// A different skill of the same name in another folder OpenCode reads skills from: writing
/// the carried one would leave two skills with one name (OpenCode's pick not defined), so it
/// is refused, naming that folder, and nothing is written.
#[test]
fn a_skill_whose_name_another_skills_folder_holds_differently_is_refused() {
    let r = read_all(&samples().join("opencode"));
    let only = asp_format::State {
        skills: r.state.skills.clone(),
        ..Default::default()
    };
    let home = tmp();
    let other = home.path().join(".agents/skills/release-notes");
    std::fs::create_dir_all(&other).unwrap();
    std::fs::write(
        other.join("SKILL.md"),
        "---\nname: release-notes\ndescription: another one\n---\nmine\n",
    )
    .unwrap();
    let before = crate::support::files_in(home.path());
    for dry_run in [true, false] {
        let (answer, _) = write_home(
            "opencode",
            home.path(),
            &only,
            &r.store,
            dry_run,
            &PathMap::default(),
        );
        assert_eq!(answer.not_taken.len(), 1, "{answer:?}");
        assert!(
            answer.not_taken[0].reason.contains(".agents/skills"),
            "{answer:?}"
        );
        assert_eq!(crate::support::files_in(home.path()), before);
    }
}

/// Only the Markdown files under agents, modes and commands are OpenCode's configuration (what
/// it reads there, by its globs: `{mode,modes}/*.md` is not nested); a note or an editor's
/// backup beside them is not kept.
#[test]
fn only_markdown_under_the_agent_and_command_folders_is_configuration() {
    let home = tmp();
    let kept = crate::support::config_kept(
        "opencode",
        home.path(),
        ".config/opencode",
        &[
            "agent/review.md",
            "agent/review.md~",
            "commands/ship.md",
            "commands/notes.txt",
            "mode/focus.md",
            "modes/old/focus.md",
        ],
    );
    assert_eq!(
        kept,
        [
            ".config/opencode/agent/review.md",
            ".config/opencode/commands/ship.md",
            ".config/opencode/mode/focus.md"
        ]
    );
}

/// What OpenCode reads and asp does not carry is said, file by file, as Pi's prompt templates
/// and Copilot's agents are: the sample's custom agent and custom command (not skills), and
/// the settings of `opencode.json` other than the model and the MCP servers, named. That is
/// left out by design: the pack exits 0, and 3 with `--strict`. A backup keeps the agent, the
/// command and `opencode.json` with OpenCode's own configuration and says so.
#[test]
fn packing_the_sample_says_what_it_left_out_and_strict_exits_3() {
    use crate::support::asp;
    let home = samples().join("opencode");
    let dir = tmp();
    let run = |extra: &[&str]| {
        let o = asp()
            .args(["pack", "--from", "opencode", "--home"])
            .arg(&home)
            .arg("-o")
            .arg(dir.path().join("x.aspstate"))
            .arg("--force")
            .args(extra)
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let said = |err: &str, label: &str, file: &str, what: &str| {
        err.lines().any(|l| {
            l.starts_with(&format!("{label}: "))
                && l.contains(&format!(".config/opencode/{file}: "))
                && l.contains(what)
        })
    };
    let (code, err) = run(&[]);
    assert_eq!(code, Some(0), "{err}");
    let agent = "a custom agent of OpenCode's own, not a skill";
    let command = "a custom command (a /command of OpenCode's own), not a skill";
    let settings = "these settings configure OpenCode itself, not a session, and are not \
                    carried as session options: small_model, autoupdate, share, provider, \
                    permission";
    assert!(
        said(&err, "left out", "agent/money-reviewer.md", agent),
        "{err}"
    );
    assert!(said(&err, "left out", "command/test.md", command), "{err}");
    assert!(said(&err, "left out", "opencode.json", settings), "{err}");
    assert_eq!(err.matches("left out: ").count(), 3, "{err}");
    assert!(!err.contains("lost"), "{err}");

    let (code, err) = run(&["--strict"]);
    assert_eq!(code, Some(3), "--strict: anything not taken exits 3: {err}");

    let out = asp()
        .args(["backup", "--from", "opencode", "--home"])
        .arg(&home)
        .arg("--repo")
        .arg(dir.path().join("repo"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let kept = "(kept byte for byte with opencode's own configuration";
    for (file, what) in [
        ("agent/money-reviewer.md", agent),
        ("command/test.md", command),
    ] {
        assert!(said(&err, "kept natively", file, what), "{err}");
        assert!(said(&err, "kept natively", file, kept), "{err}");
    }
    // The global configuration is kept too (its permissions and providers): the sample's
    // provider names its key by `{env:…}`, so the file is kept whole.
    assert!(
        said(&err, "kept natively", "opencode.json", settings),
        "{err}"
    );
    assert!(said(&err, "kept natively", "opencode.json", kept), "{err}");
}

/// A full restore gives back OpenCode's global configuration: whole when no provider holds a
/// key written out (the sample's names it by `{env:…}`), else without the keys (OpenCode
/// falls back to `auth.json` and the environment), its permissions and everything else as
/// they were.
#[test]
fn a_restore_gives_back_the_global_configuration_without_written_out_keys() {
    use crate::support::asp;
    let t = tempfile::tempdir().unwrap();
    let config = ".config/opencode/opencode.json";
    for literal in [false, true] {
        let home = t.path().join(format!("home-{literal}"));
        copy_dir(&samples().join("opencode"), &home);
        let original = fs::read_to_string(home.join(config)).unwrap();
        if literal {
            let text = original.replace("{env:SCRIPTED_MODEL_KEY}", "sk-or-v1-5c2e9a7f0b3d4e61");
            fs::write(home.join(config), text).unwrap();
        }
        let repo = t.path().join(format!("repo-{literal}"));
        let out = asp()
            .args(["backup", "-q", "--from", "opencode", "--home"])
            .arg(&home)
            .arg("--repo")
            .arg(&repo)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let to = t.path().join(format!("to-{literal}"));
        fs::create_dir_all(&to).unwrap();
        let out = asp()
            .args(["restore", "-q", "--to", "opencode", "--home"])
            .arg(&to)
            .arg("--repo")
            .arg(&repo)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let restored = fs::read_to_string(to.join(config)).unwrap();
        if literal {
            let v: serde_json::Value = serde_json::from_str(&restored).unwrap();
            assert!(
                v["provider"]["scripted"]["options"].get("apiKey").is_none(),
                "{v}"
            );
            assert_eq!(v["permission"]["bash"]["git push*"], "deny", "{v}");
            assert_eq!(v["share"], "disabled", "{v}");
            assert!(!restored.contains("sk-or-v1"), "{restored}");
        } else {
            assert_eq!(restored, original, "byte for byte");
        }
    }
}

/// The OpenCode sample packed into `dir`/oc.aspstate.
fn packed_sample(dir: &Path) -> std::path::PathBuf {
    let bundle = dir.join("oc.aspstate");
    crate::support::asp_pack()
        .args(["-q", "--from", "opencode", "--home"])
        .arg(samples().join("opencode"))
        .arg("-o")
        .arg(&bundle)
        .assert()
        .success();
    bundle
}

/// OpenCode's calls carried into Pi and Copilot CLI are named by the tool OpenCode ran, as
/// each harness calls that tool when it has it (`glob` is Pi's `find`, `read` Copilot's
/// `view`), else as OpenCode named it (`todowrite`, `task`): never after a title, which is
/// for people ("cart.py", "3 todos").
#[test]
fn calls_carried_into_pi_and_copilot_are_named_by_the_tool_opencode_ran() {
    use crate::support::{asp, asp_unpack, files_in};
    let t = tmp();
    let bundle = packed_sample(t.path());
    let out = asp().arg("export").arg(&bundle).output().unwrap();
    let export: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mut ran: Vec<String> = Vec::new();
    for s in export["state"]["sessions"].as_array().unwrap() {
        for u in s["updates"].as_array().unwrap() {
            let u = &u["update"];
            if u["sessionUpdate"] == "tool_call" {
                ran.push(u["_meta"]["opencode"]["tool"].as_str().unwrap().to_owned());
            }
        }
    }
    assert!(ran.iter().any(|t| t == "todowrite") && ran.iter().any(|t| t == "glob"));
    let named = |to: &str, key: &str| -> Vec<String> {
        let home = t.path().join(to);
        fs::create_dir_all(&home).unwrap();
        let out = asp_unpack()
            .arg(&bundle)
            .args(["-q", "--to", to, "--home"])
            .arg(&home)
            .output()
            .unwrap();
        assert!(matches!(out.status.code(), Some(0 | 3)), "{to}: {out:?}");
        let mut names = Vec::new();
        for (path, bytes) in files_in(&home) {
            if !path.ends_with(".jsonl") {
                continue;
            }
            for line in String::from_utf8_lossy(&bytes).lines() {
                let Ok(v) = serde_json::from_str::<Value>(line) else {
                    continue;
                };
                collect(&v, key, &mut names);
            }
        }
        names.sort();
        names
    };
    fn collect(v: &Value, key: &str, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => {
                if key == "name" && m.get("type").and_then(Value::as_str) == Some("toolCall") {
                    out.extend(m["name"].as_str().map(str::to_owned));
                } else if key == "toolName"
                    && m.get("toolCallId").is_some()
                    && m.contains_key("arguments")
                {
                    out.extend(m.get("toolName").and_then(Value::as_str).map(str::to_owned));
                }
                m.values().for_each(|v| collect(v, key, out));
            }
            Value::Array(a) => a.iter().for_each(|v| collect(v, key, out)),
            _ => {}
        }
    }
    let expect = |rename: &dyn Fn(&str) -> String| {
        let mut e: Vec<String> = ran.iter().map(|t| rename(t)).collect();
        e.sort();
        e
    };
    let pi = |t: &str| match t {
        "glob" => "find".to_owned(),
        "list" => "ls".to_owned(),
        other => other.to_owned(),
    };
    assert_eq!(named("pi", "name"), expect(&pi), "pi");
    let copilot = |t: &str| match t {
        "read" => "view".to_owned(),
        "write" => "create".to_owned(),
        "webfetch" => "web_fetch".to_owned(),
        other => other.to_owned(),
    };
    assert_eq!(named("copilot", "toolName"), expect(&copilot), "copilot");
}

/// An OpenCode conversation carried into Pi keeps its times: each turn is dated when
/// OpenCode made its message (or ran its tool), not all at the session's last update.
#[test]
fn a_conversation_carried_into_pi_keeps_its_times() {
    use crate::support::{asp_unpack, files_in};
    let t = tmp();
    let bundle = packed_sample(t.path());
    let home = t.path().join("pi");
    fs::create_dir_all(&home).unwrap();
    let out = asp_unpack()
        .arg(&bundle)
        .args([
            "-q",
            "--session",
            "ses_dcbe29379ffe7EA91rytPF0rq2",
            "--to",
            "pi",
            "--home",
        ])
        .arg(&home)
        .output()
        .unwrap();
    assert!(matches!(out.status.code(), Some(0 | 3)), "{out:?}");
    let (_, bytes) = files_in(&home)
        .into_iter()
        .find(|(p, _)| p.ends_with(".jsonl"))
        .unwrap();
    let times: std::collections::BTreeSet<String> = String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["type"] == "message")
        .filter_map(|v| v["timestamp"].as_str().map(str::to_owned))
        .collect();
    assert!(times.len() >= 3, "{times:?}");
}

/// `asp sessions --from opencode` of a database that does not open says so and exits 3: it is
/// not a store with no sessions.
#[test]
fn listing_a_database_that_does_not_open_is_a_loss_not_no_sessions() {
    use crate::support::{asp, copy_dir};
    let t = tmp();
    let home = t.path().join("home");
    copy_dir(&samples().join("opencode"), &home);
    let db = home.join(".local/share/opencode/opencode.db");
    let f = fs::OpenOptions::new().write(true).open(&db).unwrap();
    f.set_len(f.metadata().unwrap().len() * 3 / 8).unwrap();
    let out = asp()
        .args(["sessions", "--from", "opencode", "--home"])
        .arg(&home)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{said}");
    assert!(
        said.starts_with("lost: ") && said.contains("opencode.db"),
        "{said}"
    );
}

/// A session renamed in OpenCode after it was imported is the same session to the next import
/// of the same state: already there, no copy kept beside it. The title was compared with the
/// other columns, so a rename (or a change in how asp titles an untitled session) made every
/// later import keep a `~harness` copy.
#[test]
fn a_session_renamed_in_opencode_is_already_there_to_the_next_import() {
    let claude = read_home(
        "claude-code",
        &samples().join("claude-code"),
        KindSet::EMPTY.with(asp_format::StateKind::Sessions),
        ReadOptions::default(),
    );
    let home = tmp();
    let write = || claude.write_into("opencode", home.path()).0;
    let first = write();
    let renamed = rusqlite::Connection::open(home.path().join(DB))
        .unwrap()
        .execute("UPDATE session SET title = title || ' (renamed here)'", [])
        .unwrap();
    assert!(renamed > 0);
    let before = crate::support::files_in(home.path());
    let again = write();
    assert_eq!(again.sessions, first.sessions, "{again:?}");
    assert!(again.not_taken.is_empty(), "{again:?}");
    let count: i64 = rusqlite::Connection::open(home.path().join(DB))
        .unwrap()
        .query_row("SELECT count(*) FROM session", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count as usize, first.sessions.len());
    assert_eq!(crate::support::files_in(home.path()), before);
}

/// Whether a session is archived is the user's to change in OpenCode, and asp wrote none
/// archived before it carried archives: a session taken out of the archive since (or written
/// by an earlier asp) is already there, not kept beside as a copy (review helper-128, 1).
#[test]
fn a_session_taken_out_of_the_archive_is_already_there() {
    let codex = read_home(
        "codex",
        &samples().join("codex"),
        KindSet::EMPTY.with(asp_format::kind::StateKind::Sessions),
        ReadOptions::default(),
    );
    let archived = "01a20271-1024-7681-a31d-f248f3c4db0a";
    assert!(asp_convert::kit::archive::archived(codex.session(archived)).is_some());
    let home = tmp();
    let (first, _) = codex.write_into("opencode", home.path());
    let sid = first.sessions[archived].clone();
    let db = home.path().join(DB);
    let c = rusqlite::Connection::open(&db).unwrap();
    let at: Option<i64> = c
        .query_row(
            "SELECT time_archived FROM session WHERE id = ?1",
            [&sid],
            |r| r.get(0),
        )
        .unwrap();
    assert!(at.is_some(), "written archived");
    c.execute(
        "UPDATE session SET time_archived = NULL WHERE id = ?1",
        [&sid],
    )
    .unwrap();
    drop(c);
    let (again, _) = codex.write_into("opencode", home.path());
    assert!(again.already_there.contains(archived), "{again:?}");
    assert!(again.beside.is_empty(), "{again:?}");
}

/// A session carried into OpenCode and then used there is already there when carried again:
/// OpenCode moves it into the project of the git directory it is opened in, and adds to its
/// times and totals with every message, and none of that makes it another version (new-user
/// trial helper-131, 1: each kept the session beside itself as a copy). A message it lost
/// (reverted there) still does.
#[test]
fn a_session_used_in_opencode_since_it_was_carried_is_already_there() {
    let pi = read_home(
        "pi",
        &samples().join("pi"),
        KindSet::EMPTY.with(asp_format::kind::StateKind::Sessions),
        ReadOptions::default(),
    );
    let home = tmp();
    let (first, _) = pi.write_into("opencode", home.path());
    assert!(first.beside.is_empty(), "{first:?}");
    let c = rusqlite::Connection::open(home.path().join(DB)).unwrap();
    c.execute_batch(
        "INSERT INTO project (id, worktree, vcs, time_created, time_updated, sandboxes) \
         VALUES ('e447711eecb747e3b8b9c2297d48ff00aac8bbff', '/home/dev/shop', 'git', 1, 1, '[]'); \
         UPDATE session SET project_id = 'e447711eecb747e3b8b9c2297d48ff00aac8bbff', \
         time_updated = time_updated + 60000, cost = cost + 0.25, tokens_input = tokens_input + 900 \
         WHERE directory = '/home/dev/shop';",
    )
    .unwrap();
    let moved: i64 = c
        .query_row(
            "SELECT count(*) FROM session WHERE project_id = 'e447711eecb747e3b8b9c2297d48ff00aac8bbff'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert!(moved > 0);
    let (again, _) = pi.write_into("opencode", home.path());
    assert!(again.beside.is_empty(), "{again:?}");
    assert_eq!(again.already_there.len(), first.sessions.len(), "{again:?}");

    // A message gone (the conversation reverted there): another version, kept beside.
    let sid = &first.sessions.values().next().unwrap().clone();
    c.execute(
        "DELETE FROM message WHERE id = (SELECT max(id) FROM message WHERE session_id = ?1)",
        [sid],
    )
    .unwrap();
    drop(c);
    let (third, _) = pi.write_into("opencode", home.path());
    assert_eq!(third.beside.len(), 1, "{third:?}");
}

/// A session deleted in OpenCode comes back from a backup under its own id: OpenCode's delete
/// leaves the session's event log (no foreign key to `session`), which said it was there in
/// another version, so it came back only as a copy beside under another id (new-user trial
/// helper-130, 1).
#[test]
fn a_session_deleted_in_opencode_is_restored_under_its_own_id() {
    let home = tmp();
    copy_dir(&samples().join("opencode"), home.path());
    let own = read_home(
        "opencode",
        home.path(),
        KindSet::EMPTY.with(asp_format::kind::StateKind::Sessions),
        ReadOptions::default(),
    );
    let c = rusqlite::Connection::open(home.path().join(DB)).unwrap();
    let (id, logged): (String, i64) = c
        .query_row(
            "SELECT s.id, (SELECT count(*) FROM event WHERE aggregate_id = s.id) FROM session s \
             WHERE s.parent_id IS NULL AND EXISTS (SELECT 1 FROM event_sequence e WHERE \
             e.aggregate_id = s.id) ORDER BY s.id LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .expect("a session of the sample with an event log");
    c.execute_batch(&format!(
        "PRAGMA foreign_keys = ON; DELETE FROM session WHERE id = '{id}';"
    ))
    .unwrap();
    let left: i64 = c
        .query_row(
            "SELECT count(*) FROM event_sequence WHERE aggregate_id = ?1",
            [&id],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(left, 1, "the delete leaves the log ({logged} events)");
    let (back, _) = own.write_into("opencode", home.path());
    assert_eq!(back.sessions.get(&id), Some(&id), "{back:?}");
    assert!(!back.beside.contains(&id), "{back:?}");
    let there: i64 = c
        .query_row("SELECT count(*) FROM session WHERE id = ?1", [&id], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(there, 1);
}

/// A tool call of another harness is named in OpenCode by the name that harness gave it
/// (OpenCode's own name for a tool every harness has): Copilot CLI's `task` was a tool named
/// `tool`, its `view` is OpenCode's `read` (new-user trial helper-131, 9).
#[test]
fn another_harnesss_tool_is_named_as_it_was() {
    let copilot = read_home(
        "copilot",
        &samples().join("copilot"),
        KindSet::EMPTY.with(asp_format::kind::StateKind::Sessions),
        ReadOptions::default(),
    );
    let home = tmp();
    copilot.write_into("opencode", home.path());
    let c = rusqlite::Connection::open(home.path().join(DB)).unwrap();
    let tools: Vec<String> = c
        .prepare("SELECT DISTINCT json_extract(data, '$.tool') FROM part WHERE json_extract(data, '$.type') = 'tool'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert!(tools.iter().any(|t| t == "task"), "{tools:?}");
    assert!(tools.iter().any(|t| t == "read"), "{tools:?}");
    assert!(!tools.iter().any(|t| t == "tool"), "{tools:?}");
}
