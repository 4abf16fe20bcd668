//! The OpenCode converter, pinned against `samples/opencode/EXPECTED.md` and
//! `spec/harnesses/opencode.md`: the validator (what OpenCode 1.18.33 needs of the rows to list
//! and load a session, §4 and §10) and sessions of every other harness written as rows.

use std::path::Path;

use crate::support::{read_home, samples, tmp, write_home};
use asp_convert::harness::ReadOptions;
use asp_convert::kit::pathmap::PathMap;
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

#[test]
fn every_other_sample_is_written_as_rows_opencode_loads_with_every_prompt_and_answer() {
    for from in ["claude-code", "codex", "gemini", "pi", "qwen"] {
        let packed = read_home(
            from,
            &samples().join(from),
            KindSet::ALL,
            ReadOptions::default(),
        );
        let home = tmp();
        let (answer, _) = write_home(
            "opencode",
            home.path(),
            &packed.state,
            &packed.store,
            false,
            &PathMap::default(),
        );
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
