//! The exit policy: 0 unless something the source had was lost; what is left out by design is
//! reported and exits 0; `--strict` makes anything not taken exit 3.

#![cfg(all(feature = "claude-code", feature = "codex"))]

use assert_cmd::Command;
use std::fs;

use crate::support::*;

fn claude_home() -> std::path::PathBuf {
    samples().join("claude-code")
}

/// README's main command: the sample leaves a `rules/` file, a project-scope MCP server and
/// harness-level settings out by design; that is reported, and it is not a failure.
#[test]
fn packing_the_claude_code_sample_exits_0_and_says_what_it_left_out() {
    let dir = tmp();
    let out = dir.path().join("claude.aspstate");
    let o = asp()
        .args(["pack", "--from", "claude-code", "--home"])
        .arg(claude_home())
        .arg("-o")
        .arg(&out)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("left out: ") && err.contains("rules/security.md"),
        "{err}"
    );
    assert!(!err.contains("lost"), "{err}");
    let said = String::from_utf8_lossy(&o.stdout);
    assert!(said.contains("; 3 not taken"), "{said}");

    let strict = pack_home("claude-code", claude_home(), dir.path().join("s.aspstate"))
        .arg("--strict")
        .output()
        .unwrap();
    assert_eq!(
        strict.status.code(),
        Some(3),
        "--strict: anything not taken exits 3"
    );

    let json = pack_home("claude-code", claude_home(), dir.path().join("j.aspstate"))
        .arg("--json")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(v["notTaken"].as_array().unwrap().len(), 3, "{v}");
    assert_eq!(v["lost"], serde_json::json!([]), "{v}");
    // Each as `asp backup` and `asp-unpack` give a finding: what, where, how bad.
    for f in v["notTaken"].as_array().unwrap() {
        assert_eq!(f["severity"], "left out", "{f}");
        assert!(f["file"].is_string() && f["message"].is_string(), "{f}");
    }
    assert!(v["findings"].as_array().unwrap().len() >= 3, "{v}");
}

/// A crash-cut last line travels byte for byte in the native file: reported, not a loss in its
/// own harness; a loss in any other.
#[test]
fn a_crash_cut_last_line_kept_natively_is_not_a_loss_in_its_own_harness() {
    let dir = tmp();
    let home = dir.path().join("home");
    copy_dir(&claude_home(), &home);
    let log =
        home.join(".claude/projects/-home-dev-shop/71958462-4bb8-46b6-a36a-1becf56c22dc.jsonl");
    let mut bytes = fs::read(&log).unwrap();
    bytes.extend_from_slice(b"{\"type\":\"user\",\"message\":{\"role\":\"us");
    fs::write(&log, &bytes).unwrap();
    let out = dir.path().join("b.aspstate");
    let o = pack_home("claude-code", &home, &out).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(
        err.contains("kept byte for byte in the session's native file"),
        "{err}"
    );
    // Restored into the same harness, the cut line is back.
    let restored = new_home(dir.path().join("restored"));
    asp_unpack()
        .arg(&out)
        .args(["--to", "claude-code", "--home"])
        .arg(&restored)
        .assert()
        .code(0);
    let back = restored.join(log.strip_prefix(&home).unwrap());
    assert_eq!(fs::read(back).unwrap(), bytes);
    // Into another harness, written from the conversation, what the line held is not carried:
    // a loss, named with the session and the line.
    let elsewhere = new_home(dir.path().join("codex"));
    let o = asp_unpack()
        .arg(&out)
        .args(["--to", "codex", "--home"])
        .arg(&elsewhere)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    let lines = bytes.iter().filter(|b| **b == b'\n').count() + 1;
    assert!(
        err.contains(&format!(
            "lost: session 71958462-4bb8-46b6-a36a-1becf56c22dc: line {lines} of its claude-code file"
        )),
        "{err}"
    );
}

/// A damaged line in a subagent's own transcript is the subagent's: written alone, from its
/// conversation, into any harness (its own included: without its parent it is composed anew),
/// it is lost; with its parent into Claude Code the file travels and nothing is.
#[test]
fn a_damaged_line_of_a_subagent_is_the_subagents() {
    let dir = tmp();
    let home = dir.path().join("home");
    copy_dir(&claude_home(), &home);
    let log = home.join(
        ".claude/projects/-home-dev-shop/12821015-852a-451b-911f-ba64553fbf57/subagents/agent-a44a1a1a1ce6520e9.jsonl",
    );
    let mut bytes = fs::read(&log).unwrap();
    bytes.extend_from_slice(b"{\"this line\": is not JSON\n");
    fs::write(&log, &bytes).unwrap();
    let out = dir.path().join("b.aspstate");
    let o = pack_home("claude-code", &home, &out).output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let unpack = |session: &str, to: &str| {
        let o = asp_unpack()
            .arg(&out)
            .args(["--session", session, "--to", to, "--home"])
            .arg(new_home(dir.path().join(format!("{to}-{session}"))))
            .output()
            .unwrap();
        (
            o.status.code(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let sub = "agent-a44a1a1a1ce6520e9";
    for to in ["codex", "claude-code"] {
        let (code, err) = unpack(sub, to);
        assert_eq!(code, Some(3), "{to}: {err}");
        assert!(
            err.contains(&format!("lost: session {sub}: line")),
            "{to}: {err}"
        );
    }
    let (code, err) = unpack("12821015-852a-451b-911f-ba64553fbf57", "claude-code");
    assert_eq!(code, Some(0), "{err}");
}

/// A file that cannot be carried (instructions that are not UTF-8) is lost: exit 3.
#[test]
fn a_file_that_cannot_be_carried_is_a_loss() {
    let dir = tmp();
    let home = dir.path().join("home");
    copy_dir(&claude_home(), &home);
    fs::write(
        home.join(".claude/CLAUDE.md"),
        b"# Rules\n\xff\xfe not text\n",
    )
    .unwrap();
    let o = pack_home("claude-code", &home, dir.path().join("b.aspstate"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{err}");
    assert!(err.contains("lost: ") && err.contains("CLAUDE.md"), "{err}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("1 LOST"),
        "{o:?}"
    );
}

/// Carried into another harness, a model the target cannot run is not taken: reported, exit 0;
/// `--strict` exits 3.
#[test]
fn an_import_into_another_harness_exits_0_unless_strict() {
    let dir = tmp();
    let bundle = dir.path().join("codex.aspstate");
    pack_home("codex", samples().join("codex"), &bundle)
        .assert()
        .code(0);
    let o = asp_unpack()
        .arg(&bundle)
        .args(["--to", "claude-code", "--home"])
        .arg(new_home(dir.path().join("a")))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("not taken: settings"), "{err}");
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("not taken"),
        "{o:?}"
    );
    asp_unpack()
        .arg(&bundle)
        .args(["--to", "claude-code", "--strict", "--home"])
        .arg(new_home(dir.path().join("b")))
        .assert()
        .code(3);
}

/// An empty transcript packs as a session with no updates: carried into another harness it
/// holds nothing to write, which is said, and is no loss (every writer refused it as having
/// nothing to show, and the refusal exited 3). Into its own harness its file comes back as it
/// was.
#[test]
fn a_session_with_no_conversation_is_not_written_and_not_lost() {
    let dir = tmp();
    let home = dir.path().join("home");
    copy_dir(&claude_home(), &home);
    let id = "71958462-4bb8-46b6-a36a-1becf56c22dc";
    let transcript = home
        .join(".claude/projects/-home-dev-shop")
        .join(format!("{id}.jsonl"));
    fs::write(&transcript, b"").unwrap();
    let bundle = dir.path().join("b.aspstate");
    pack_home("claude-code", &home, &bundle).assert().code(0);
    for to in ["pi", "codex", "gemini"] {
        let o = asp_unpack()
            .arg(&bundle)
            .args(["--session", id, "--to", to, "--home"])
            .arg(new_home(dir.path().join(to)))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{to}: {err}");
        assert!(
            err.contains(&format!("session {id} holds no conversation")),
            "{to}: {err}"
        );
        assert!(!err.contains("lost"), "{to}: {err}");
    }
    let own = new_home(dir.path().join("own"));
    asp_unpack()
        .arg(&bundle)
        .args(["--session", id, "--to", "claude-code", "--home"])
        .arg(&own)
        .assert()
        .code(0);
    let back = own
        .join(".claude/projects/-home-dev-shop")
        .join(format!("{id}.jsonl"));
    assert_eq!(fs::read(back).unwrap(), b"");
}

/// The same finding about many sessions is shown for the first three and then counted on
/// stderr; `--json` lists every one.
#[test]
fn the_same_finding_about_many_sessions_is_counted_not_repeated() {
    let dir = tmp();
    let bundle = dir.path().join("claude.aspstate");
    pack_home("claude-code", claude_home(), &bundle)
        .assert()
        .code(0);
    let o = asp_unpack()
        .arg(&bundle)
        .args(["--to", "codex", "--json", "--home"])
        .arg(new_home(dir.path().join("a")))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    let alike = "usage_update updates have no place in a Codex rollout";
    assert_eq!(err.matches(alike).count(), 3, "{err}");
    assert!(
        err.contains("left out: the same for 2 more (5 in all; `--json` lists each)"),
        "{err}"
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let listed = v["_meta"]["asp"]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["message"].as_str().is_some_and(|m| m.contains(alike)))
        .count();
    assert_eq!(listed, 5, "{v}");
}

/// A `--home` to write into that does not exist is an error (exit 1) before anything is read
/// or written, as it is for pack: a typo must not make a new tree that looks like a restore.
#[test]
fn unpacking_or_restoring_into_a_home_that_is_not_there_is_an_error() {
    let dir = tmp();
    let bundle = dir.path().join("codex.aspstate");
    pack_home("codex", samples().join("codex"), &bundle)
        .assert()
        .code(0);
    let typo = dir.path().join("hmoe/dev");
    asp_unpack()
        .arg(&bundle)
        .args(["--to", "claude-code", "--home"])
        .arg(&typo)
        .assert()
        .code(1)
        .stderr(predicates::str::contains(format!(
            "the home {} does not exist",
            typo.display()
        )));
    let repo = dir.path().join("repo");
    asp()
        .args(["backup", "-q", "--from", "codex", "--home"])
        .arg(samples().join("codex"))
        .arg("--repo")
        .arg(&repo)
        .assert()
        .code(0);
    asp()
        .args(["restore", "--to", "codex", "--repo"])
        .arg(&repo)
        .arg("--home")
        .arg(&typo)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("does not exist"));
    assert!(!dir.path().join("hmoe").exists());
}

/// An unpack into a harness that stops part way (here a file where one project's folder must
/// go) says, with the error, what it had written before it stopped: those sessions are there,
/// each whole, and the next run finds them already there.
#[test]
fn an_unpack_that_stops_part_way_says_what_it_wrote_before() {
    let dir = tmp();
    let bundle = dir.path().join("codex.aspstate");
    pack_home("codex", samples().join("codex"), &bundle)
        .assert()
        .code(0);
    // The sample's sessions are in two projects; whichever is written second is blocked.
    let mut said_some = false;
    for blocked in ["-home-dev-notes", "-home-dev-shop"] {
        let home = new_home(dir.path().join(format!("home{blocked}")));
        let projects = home.join(".claude/projects");
        fs::create_dir_all(&projects).unwrap();
        fs::write(projects.join(blocked), b"").unwrap();
        let out = asp_unpack()
            .arg(&bundle)
            .args(["--to", "claude-code", "--home"])
            .arg(&home)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("is a file where a folder is expected"),
            "{stderr}"
        );
        let written: Vec<_> = files_under(&projects)
            .into_iter()
            .filter(|f| f.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        match written.is_empty() {
            true => assert!(!stderr.contains("before it stopped"), "{stderr}"),
            false => {
                said_some = true;
                assert!(
                    stderr.contains("before it stopped it wrote, each in full:"),
                    "{stderr}"
                );
                for f in &written {
                    assert!(
                        stderr.contains(&format!("created {}", f.display())),
                        "{} is not named: {stderr}",
                        f.display()
                    );
                    let text = fs::read_to_string(f).unwrap();
                    assert!(text.ends_with('\n'), "{}", f.display());
                    for line in text.lines() {
                        serde_json::from_str::<serde_json::Value>(line).unwrap();
                    }
                }
            }
        }
    }
    assert!(
        said_some,
        "neither order wrote a session before the blocked one"
    );
}

/// A session id the store or the bundle does not have is a wrong argument (exit 2), said as
/// one: which store or bundle, and the command that lists what is there. An output folder
/// that is not there is an error (exit 1) that says so.
#[test]
fn a_session_that_is_not_there_and_an_output_folder_that_is_not_there_are_said_plainly() {
    let dir = tmp();
    asp_pack()
        .args(["--from", "claude-code", "--session", "deadbeef", "--home"])
        .arg(claude_home())
        .arg("-o")
        .arg(dir.path().join("x.aspstate"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains(format!(
            "in the claude-code store in {}: no session deadbeef among its 5 sessions \
             (`asp sessions --from claude-code --home {}` lists them)",
            claude_home().display(),
            claude_home().display()
        )))
        .stderr(predicates::prelude::PredicateBooleanExt::not(
            predicates::str::contains("cannot read"),
        ));
    let bundle = dir.path().join("claude.aspstate");
    pack_home("claude-code", claude_home(), &bundle)
        .assert()
        .code(0);
    let listed = format!("(`asp inspect {}` lists its sessions)", bundle.display());
    asp()
        .arg("export")
        .arg(&bundle)
        .args(["--session", "deadbeef"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("has no session deadbeef"))
        .stderr(predicates::str::contains(listed.as_str()))
        .stderr(predicates::prelude::PredicateBooleanExt::not(
            predicates::str::contains("did you mean"),
        ));
    // The start of an id, as a snapshot id may be given: the whole one is suggested.
    asp()
        .arg("export")
        .arg(&bundle)
        .args(["--session", "7195"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "; a session id is given whole: did you mean \
             71958462-4bb8-46b6-a36a-1becf56c22dc?",
        ));
    asp_unpack()
        .arg(&bundle)
        .args(["--session", "deadbeef", "--to-dir"])
        .arg(dir.path().join("out"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains(listed.as_str()));
    // From standard input, and from a repository's snapshot.
    asp_unpack()
        .args(["-", "--session", "deadbeef", "--to-dir"])
        .arg(dir.path().join("out"))
        .pipe_stdin(&bundle)
        .unwrap()
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "<stdin> has no session deadbeef (`asp inspect` of the same bundle lists",
        ));
    let repo = dir.path().join("repo");
    asp()
        .args(["backup", "-q", "--from", "claude-code", "--home"])
        .arg(claude_home())
        .arg("--repo")
        .arg(&repo)
        .assert()
        .code(0);
    asp()
        .args(["restore", "--session", "deadbeef", "--snapshot"])
        .arg(crate::backup::asp_snapshots_latest(&repo))
        .args(["--to", "codex", "--repo"])
        .arg(&repo)
        .arg("--home")
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "(`asp sessions --repo REPO` lists its sessions)",
        ));
    // A bundle that is not there is named once.
    let missing = dir.path().join("nothere.aspstate");
    for args in [&["inspect"][..], &["export"], &["verify"]] {
        let o = asp().args(args).arg(&missing).output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(
            err.matches(&*missing.display().to_string()).count(),
            1,
            "{args:?}: {err}"
        );
    }
    let nowhere = dir.path().join("nodir");
    asp_pack()
        .args(["--from", "claude-code", "--home"])
        .arg(claude_home())
        .arg("-o")
        .arg(nowhere.join("x.aspstate"))
        .assert()
        .code(1)
        .stderr(predicates::str::contains(format!(
            "the folder {} does not exist",
            nowhere.display()
        )));
}

/// Without a source or a target, the usage error names every one there is (exit 2).
#[test]
fn a_missing_source_or_target_names_every_choice() {
    let dir = tmp();
    asp_pack()
        .arg("-o")
        .arg(dir.path().join("x.aspstate"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "<--from <HARNESS>|--from-dir <DIR>|--from-repo>",
        ));
    asp_unpack()
        .arg(dir.path().join("x.aspstate"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains("<--to <HARNESS>|--to-dir <DIR>>"));
    asp()
        .args(["backup", "--repo"])
        .arg(dir.path().join("repo"))
        .assert()
        .code(2)
        .stderr(predicates::str::contains(
            "<--from <HARNESS>|--from-bundle <FILE>>",
        ));
    assert!(!dir.path().join("repo").exists(), "no repository made");
}

/// `--home` names a harness's home: beside `--to-dir` or `--from-dir`, which name the directory
/// themselves, it is a usage error (exit 2), not silently ignored, and nothing is written.
#[test]
fn home_beside_a_state_directory_is_a_usage_error() {
    let t = tmp();
    let bundle = t.path().join("b.aspstate");
    pack_sample_home("claude-code", &bundle);
    let dir = t.path().join("dir");
    let out = asp_unpack()
        .arg(&bundle)
        .arg("--to-dir")
        .arg(&dir)
        .args(["--home", "/nonexistent"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--home is for --to HARNESS"),
        "{out:?}"
    );
    assert!(!dir.exists());
    unpack_to_dir(&bundle, &dir).assert().success();
    let again = t.path().join("again.aspstate");
    let out = asp_pack()
        .arg("--from-dir")
        .arg(&dir)
        .arg("--home")
        .arg(t.path())
        .arg("-o")
        .arg(&again)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--home is for --from HARNESS"),
        "{out:?}"
    );
    assert!(!again.exists());
}

/// A directory given where a bundle goes is a usage error (2) for every command that reads a
/// bundle, and the message says what reads a directory (it was 2 for `inspect` and 1 for the
/// others: new-user trial helper-122, 9).
#[test]
fn a_directory_given_as_the_bundle_is_a_usage_error_everywhere() {
    let dir = tmp();
    let there = dir.path().join("state");
    fs::create_dir_all(&there).unwrap();
    let to = dir.path().join("out");
    for args in [
        vec!["inspect"],
        vec!["export"],
        vec!["verify"],
        vec!["unpack", "--to-dir", to.to_str().unwrap()],
    ] {
        let o = asp()
            .args(&args[..1])
            .arg(&there)
            .args(&args[1..])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("is a directory") && err.contains("--from-dir"),
            "{args:?}: {err}"
        );
    }
}

/// With `--json`, a command that fails still puts one JSON document on stdout, the error with
/// its class and exit code, for a script that reads stdout (it printed nothing: new-user trial
/// helper-131, 8; helper-137, 4); the message stays on stderr. One case for each class.
#[test]
fn a_failure_with_json_is_a_json_error_on_stdout() {
    let dir = tmp();
    let bundle = dir.path().join("b.aspstate");
    succeeds(&mut pack_home("claude-code", claude_home(), &bundle));
    let mut damaged = fs::read(&bundle).unwrap();
    let at = damaged.len() / 2;
    damaged.truncate(at);
    let cut = dir.path().join("cut.aspstate");
    fs::write(&cut, &damaged).unwrap();
    let missing = dir.path().join("none.aspstate");
    let empty_home = dir.path().join("empty");
    fs::create_dir_all(&empty_home).unwrap();

    let cases: Vec<(Command, &str, i32)> = vec![
        (
            {
                let mut c = asp();
                c.arg("inspect").arg(&cut).arg("--json");
                c
            },
            "integrity",
            4,
        ),
        (
            {
                let mut c = asp();
                c.arg("inspect").arg(&missing).arg("--json");
                c
            },
            "source",
            1,
        ),
        (
            {
                let mut c = asp_unpack();
                c.arg(&bundle)
                    .args(["--session", "no-such-session", "--to-dir"]);
                c.arg(dir.path().join("out")).arg("--json");
                c
            },
            "usage",
            2,
        ),
        (
            {
                let mut c = asp_pack();
                c.args(["--from", "claude-code", "--home"]).arg(&empty_home);
                c.arg("-o").arg(dir.path().join("e.aspstate")).arg("--json");
                c
            },
            "source",
            1,
        ),
        // Arguments clap itself refuses (re-trial helper-139, 4).
        (
            {
                let mut c = asp_pack();
                c.args(["--from", "nosuch", "-o", "x.aspstate", "--json"]);
                c
            },
            "usage",
            2,
        ),
        (
            {
                let mut c = asp();
                c.args(["nosuchcmd", "--json"]);
                c
            },
            "usage",
            2,
        ),
    ];
    for (mut cmd, class, code) in cases {
        let o = cmd.output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(code), "{cmd:?}: {err}");
        let v: serde_json::Value = serde_json::from_slice(&o.stdout)
            .unwrap_or_else(|e| panic!("{cmd:?}: stdout is not JSON ({e}): {:?}", o.stdout));
        assert_eq!(v["error"]["class"], class, "{cmd:?}: {v}");
        assert_eq!(v["error"]["exit"], code, "{cmd:?}: {v}");
        let message = v["error"]["message"].as_str().unwrap();
        assert!(
            !message.is_empty() && err.contains(message),
            "{message} / {err}"
        );
    }

    // Without --json stdout stays empty, as before; `asp verify --json` answers with its own
    // report (`ok: false`), which says more than an error would.
    let o = asp().arg("inspect").arg(&cut).output().unwrap();
    assert_eq!(o.status.code(), Some(4));
    assert!(o.stdout.is_empty(), "{:?}", o.stdout);
}

/// `--home ~/.codex` (the harness's own folder, not the home that holds it) is a usage error
/// naming the home to give: written into, it got a second store inside (`.codex/.codex`) that
/// the harness never reads, and exit 0 (new-user trial helper-136, 8). Nothing is written.
#[test]
fn a_home_that_is_the_harnesss_own_folder_is_refused() {
    let dir = tmp();
    for (harness, folder) in [("codex", ".codex"), ("claude-code", ".claude")] {
        let home = dir.path().join(folder);
        fs::create_dir_all(&home).unwrap();
        let o = asp_unpack()
            .arg(samples().join("state.aspstate"))
            .args(["--to", harness, "--home"])
            .arg(&home)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{harness}: {err}");
        assert!(
            err.contains(&format!("is {harness}'s own folder"))
                && err.contains(&format!("give --home {}", dir.path().display())),
            "{harness}: {err}"
        );
        assert!(nothing_in(&home), "{harness}: nothing written");
    }
}

/// `-q` on pack and unpack says what `asp backup -q` says: what was lost, and what was done;
/// what was left out by design is counted, and listed by --json (it was all printed, as
/// without -q: new-user trial helper-137, 6).
#[test]
fn quiet_pack_and_unpack_say_what_was_lost_and_done_only() {
    let dir = tmp();
    let bundle = dir.path().join("b.aspstate");
    let o = pack_home("claude-code", claude_home(), &bundle)
        .arg("-q")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    let said = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(!err.contains("left out: "), "{err}");
    assert!(
        said.contains(
            "; 3 not taken (-q says only what a command did not take; --json lists each)"
        ),
        "{said}"
    );
    let home = dir.path().join("codex");
    fs::create_dir_all(&home).unwrap();
    let o = asp_unpack()
        .arg(&bundle)
        .args(["--to", "codex", "-q", "--home"])
        .arg(&home)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    // What it did not take is what was done, said either way; the findings are not.
    assert!(
        !err.contains("left out: ") && !err.contains("note: ") && err.contains("not taken: "),
        "{err}"
    );
}

/// A store the harness's own variable points to that is not there is said with the variable,
/// not "check --home" when no --home was given (new-user trial helper-137, 5).
#[test]
fn a_store_the_environment_points_to_is_said_with_its_variable() {
    let dir = tmp();
    let home = dir.path().join("home");
    fs::create_dir_all(home.join(".codex")).unwrap();
    let typo = dir.path().join("typo-codex");
    let o = asp_pack()
        .args(["--from", "codex", "-o"])
        .arg(dir.path().join("b.aspstate"))
        .env("HOME", &home)
        .env("CODEX_HOME", &typo)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "no codex store at {} (where CODEX_HOME points); check CODEX_HOME",
            typo.display()
        )),
        "{err}"
    );
}

/// `asp push REF latest` (the two the wrong way round) says which goes where; it read the
/// reference as a bundle file that does not exist (new-user trial helper-136, 11).
#[test]
fn a_push_given_the_wrong_way_round_says_the_order() {
    let o = asp()
        .args(["push", "127.0.0.1:5000/me/state:v1", "latest"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains(
            "what to push goes first, where to last: asp push latest 127.0.0.1:5000/me/state:v1"
        ),
        "{err}"
    );
}

/// `-o -` on a terminal is refused before any work, as gzip refuses: a bundle is binary and
/// was written to the terminal (new-user trial helper-137, 9). `script` (util-linux, in every
/// Debian) gives the command a terminal.
#[cfg(target_os = "linux")]
#[test]
fn a_bundle_is_not_written_to_a_terminal() {
    let command = format!(
        "{} --from claude-code --home {} -o -",
        env!("CARGO_BIN_EXE_asp-pack"),
        claude_home().display()
    );
    let o = std::process::Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .output()
        .expect("util-linux's script");
    let said = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(2), "{said}");
    assert!(said.contains("which is a terminal here"), "{said}");
    assert!(!said.contains("PK"), "no zip bytes: {said}");
}
