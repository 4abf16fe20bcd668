//! `--dry-run` answers exactly what the real run then does, and writes nothing, also where the
//! destination already holds a different version of a session (the `<thread>~<harness>` path),
//! for every harness.

use std::fs;
use std::path::Path;

use crate::support::*;
use serde_json::Value;

fn unpack(bundle: &Path, harness: &str, home: &Path, dry: bool) -> Value {
    let mut cmd = asp_unpack();
    cmd.arg(bundle)
        .args(["--to", harness, "--home"])
        .arg(home)
        .arg("--json");
    if dry {
        cmd.arg("--dry-run");
    }
    let out = cmd.output().unwrap();
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{harness}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Inserts a line after the first line of the home's first session file, so the carried
/// version differs (not merely continued: Gemini counts a chat that only grew as the same).
fn change_a_session(home: &Path, harness: &str) {
    if harness == "opencode" {
        // Its sessions are rows of a database: the first session's row changes there.
        let db = home.join(".local/share/opencode/opencode.db");
        let first: String = rusqlite::Connection::open(&db)
            .unwrap()
            .query_row("SELECT min(id) FROM session", [], |r| r.get(0))
            .unwrap();
        crate::contract::diverge_row(&db, &first);
        return;
    }
    let files: Vec<_> = files_under(home)
        .into_iter()
        .filter(|p| {
            let s = p.display().to_string();
            match harness {
                "claude-code" => {
                    s.contains("/.claude/projects/")
                        && s.ends_with(".jsonl")
                        && !s.contains("/subagents/")
                }
                "codex" => s.contains("/.codex/sessions/") && s.ends_with(".jsonl"),
                "qwen" => {
                    s.contains("/.qwen/projects/") && s.contains("/chats/") && s.ends_with(".jsonl")
                }
                "pi" => s.contains("/.pi/agent/sessions/") && s.ends_with(".jsonl"),
                "copilot" => s.contains("/.copilot/session-state/") && s.ends_with("/events.jsonl"),
                _ => {
                    s.contains("/.gemini/tmp/")
                        && s.contains("/chats/session-")
                        && s.ends_with(".jsonl")
                }
            }
        })
        .collect();
    let f = files.iter().min().expect("a session file to change");
    let bytes = fs::read(f).unwrap();
    let cut = bytes.iter().position(|b| *b == b'\n').unwrap() + 1;
    let mut changed = bytes[..cut].to_vec();
    changed.extend_from_slice(b"{\"type\":\"not-from-the-bundle\"}\n");
    changed.extend_from_slice(&bytes[cut..]);
    fs::write(f, changed).unwrap();
}

#[test]
fn a_dry_run_answers_like_the_real_run_and_writes_nothing_even_on_conflicts() {
    for harness in asp_convert::harness_names() {
        let harness = harness.as_str();
        let dir = tmp();
        let bundle = dir.path().join("b.aspstate");
        let packed = asp_pack()
            .args(["--from", harness, "--home"])
            .arg(samples().join(harness))
            .arg("-o")
            .arg(&bundle)
            .output()
            .unwrap();
        assert!(matches!(packed.status.code(), Some(0 | 3)), "{harness}");

        let home = dir.path().join("home");
        fs::create_dir(&home).unwrap();
        unpack(&bundle, harness, &home, false);
        change_a_session(&home, harness);

        let before = files_in(&home);
        let planned = as_written(unpack(&bundle, harness, &home, true));
        assert!(
            before == files_in(&home),
            "{harness}: the dry run changed the home"
        );
        let done = unpack(&bundle, harness, &home, false);
        assert_eq!(planned, done, "{harness}: the dry run said something else");
        let renamed = done["sessions"]
            .as_object()
            .unwrap()
            .iter()
            .filter(|(old, new)| old != new)
            .count();
        assert!(
            renamed >= 1,
            "{harness}: the changed session is kept beside, under a new id: {done}"
        );
    }
}

/// `asp restore --strict --json` of the repository's latest snapshot of `harness` into `home`,
/// with `--dry-run` or not: its exit code and answer.
fn restore(repo: &Path, harness: &str, home: &Path, dry: bool) -> (Option<i32>, Value) {
    let mut cmd = asp();
    cmd.args([
        "restore", "-q", "--strict", "--json", "--to", harness, "--home",
    ])
    .arg(home)
    .arg("--repo")
    .arg(repo);
    if dry {
        cmd.arg("--dry-run");
    }
    let out = cmd.output().unwrap();
    let answer = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{harness}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), answer)
}

/// A whole restore writes the backup's configuration before the state, and judges the state
/// against it; its dry run judges the state against the configuration as the restore would
/// leave it, so it answers the same, exit code and all (found by a new user's trial: the
/// Gemini CLI sample's dry run with `--strict` exited 3 over a server's `trust`, which the
/// restored settings keep, and named another session retention than the restored settings').
#[test]
fn a_dry_run_of_a_whole_restore_answers_like_the_restore() {
    for harness in asp_convert::harness_names() {
        let harness = harness.as_str();
        let dir = tmp();
        let source = dir.path().join("source");
        copy_dir(&samples().join(harness), &source);
        let repo = dir.path().join("repo");
        let backed_up = asp()
            .args(["backup", "-q", "--from", harness, "--home"])
            .arg(&source)
            .arg("--repo")
            .arg(&repo)
            .output()
            .unwrap();
        assert_eq!(backed_up.status.code(), Some(0), "{harness}: {backed_up:?}");

        // Into an empty home; into it again, with everything there; into a home that has the
        // sample's sessions and its configuration files, each one changed.
        let empty = dir.path().join("empty");
        fs::create_dir(&empty).unwrap();
        let changed = dir.path().join("changed");
        copy_dir(&samples().join(harness), &changed);
        let kept = crate::support::config_kept(harness, &changed, "", &[]);
        assert!(!kept.is_empty(), "{harness}: the sample has configuration");
        for rel in &kept {
            let mut bytes = fs::read(changed.join(rel)).unwrap();
            bytes.extend_from_slice(b"\n");
            fs::write(changed.join(rel), bytes).unwrap();
        }
        for home in [&empty, &empty, &changed] {
            let before = files_in(home);
            let (dry_code, dry) = restore(&repo, harness, home, true);
            assert!(before == files_in(home), "{harness}: the dry run wrote");
            let (code, done) = restore(&repo, harness, home, false);
            assert_eq!(dry_code, code, "{harness}: {dry} against {done}");
            assert_eq!(
                as_written(dry),
                done,
                "{harness}: the dry run said something else into {}",
                home.display()
            );
        }
    }
}
