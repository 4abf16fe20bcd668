//! The bundle tools end to end: pack, unpack, inspect, export and verify through the real
//! binaries, on the committed sample.

use std::fs;

use crate::support::*;
use predicates::prelude::*;
use serde_json::Value;

fn pack_sample(out: &std::path::Path) {
    asp_pack()
        .arg("--from-dir")
        .arg(samples().join("state"))
        .arg("-o")
        .arg(out)
        .env_remove("SOURCE_DATE_EPOCH")
        .assert()
        .success();
}

#[test]
fn the_committed_sample_bundle_is_what_packing_the_sample_directory_gives() {
    let dir = tmp();
    let out = dir.path().join("state.aspstate");
    pack_sample(&out);
    assert!(
        fs::read(&out).unwrap() == fs::read(samples().join("state.aspstate")).unwrap(),
        "samples/state.aspstate is stale: run `cargo run --bin asp-pack -- --from-dir samples/state -o samples/state.aspstate --force`"
    );
}

#[test]
fn packing_is_deterministic_and_survives_a_trip_through_the_directory_form() {
    let dir = tmp();
    let (a, b, c) = (
        dir.path().join("a.aspstate"),
        dir.path().join("b.aspstate"),
        dir.path().join("c.aspstate"),
    );
    pack_sample(&a);
    pack_sample(&b);
    assert_eq!(fs::read(&a).unwrap(), fs::read(&b).unwrap());
    let plain = dir.path().join("plain");
    asp_unpack()
        .arg(&a)
        .arg("--to-dir")
        .arg(&plain)
        .assert()
        .success();
    asp_pack()
        .arg("--from-dir")
        .arg(&plain)
        .arg("-o")
        .arg(&c)
        .assert()
        .success();
    assert_eq!(fs::read(&a).unwrap(), fs::read(&c).unwrap());
}

#[cfg(unix)]
#[test]
fn executable_bits_survive_unpacking() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tmp();
    let plain = dir.path().join("plain");
    asp_unpack()
        .arg(samples().join("state.aspstate"))
        .arg("--to-dir")
        .arg(&plain)
        .assert()
        .success();
    let mode = |p: &str| fs::metadata(plain.join(p)).unwrap().permissions().mode() & 0o111;
    assert_ne!(mode("skills/release-notes/scripts/changes.sh"), 0);
    assert_eq!(mode("skills/release-notes/SKILL.md"), 0);
}

#[test]
fn inspect_json_answers_as_describe_does() {
    let out = asp()
        .args(["inspect", "--json"])
        .arg(samples().join("state.aspstate"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(
        v["kinds"],
        serde_json::json!({"sessions": 2, "instructions": 1, "skills": 1, "tools": 2, "memory": 3, "settings": 4})
    );
    assert!(
        v["bundle"]["digest"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );
}

#[test]
fn inspect_reads_like_a_summary() {
    asp()
        .arg("inspect")
        .arg(samples().join("state.aspstate"))
        .assert()
        .success()
        .stdout(
            predicate::str::contains("sessions (2)")
                .and(predicate::str::contains(
                    "\"Add dry-run flag to deploy script\"",
                ))
                .and(predicate::str::contains("telegram:42"))
                .and(predicate::str::contains("release-notes  2 files"))
                .and(predicate::str::contains("github  stdio  npx -y"))
                .and(predicate::str::contains(
                    "shop/old-staging.md  claude-code  (deleted)",
                ))
                .and(predicate::str::contains("model = opus"))
                .and(predicate::str::contains("bundle   sha256:")),
        );
}

#[test]
fn export_prints_the_export_answer_and_leaves_out_kinds_not_asked() {
    let out = asp()
        .args(["export", "--kinds", "sessions,settings"])
        .arg(samples().join("state.aspstate"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    let state = v["state"].as_object().unwrap();
    assert_eq!(state.keys().collect::<Vec<_>>(), ["sessions", "settings"]);
    let s = &v["state"]["sessions"][1];
    assert_eq!(s["id"], "telegram:42");
    assert_eq!(s["harness"], "codex");
    assert_eq!(s["updates"].as_array().unwrap().len(), 6);
    assert_eq!(
        s["updates"][0]["update"]["sessionUpdate"],
        "user_message_chunk"
    );
}

#[test]
fn export_of_everything_matches_the_sample_files() {
    let out = asp()
        .arg("export")
        .arg(samples().join("state.aspstate"))
        .assert()
        .success()
        .get_output()
        .stdout
        .clone();
    let v: Value = serde_json::from_slice(&out).unwrap();
    let agents = fs::read_to_string(samples().join("state/AGENTS.md")).unwrap();
    assert_eq!(v["state"]["instructions"]["text"], agents.as_str());
    let tools: Value =
        serde_json::from_str(&fs::read_to_string(samples().join("state/tools.json")).unwrap())
            .unwrap();
    assert_eq!(v["state"]["tools"], tools);
    let files = v["state"]["skills"][0]["files"].as_array().unwrap();
    assert_eq!(files[1]["path"], "scripts/changes.sh");
    assert_eq!(files[1]["executable"], true);
    let memory = v["state"]["memory"].as_array().unwrap();
    assert_eq!(memory[2]["deleted"], true);
    assert!(memory[2].get("text").is_none());
}

#[test]
fn verify_reports_the_bundle_digest() {
    let inspect: Value = serde_json::from_slice(
        &asp()
            .args(["inspect", "--json"])
            .arg(samples().join("state.aspstate"))
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    let digest = inspect["bundle"]["digest"].as_str().unwrap().to_owned();
    asp()
        .arg("verify")
        .arg(samples().join("state.aspstate"))
        .assert()
        .success()
        .stdout(predicate::str::contains(format!("ok {digest}")));
    let out = asp()
        .args(["verify", "--json"])
        .arg(samples().join("state.aspstate"))
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["digest"], digest.as_str());
}

#[test]
fn an_existing_output_is_not_overwritten_without_force() {
    let dir = tmp();
    let out = dir.path().join("x.aspstate");
    fs::write(&out, b"precious").unwrap();
    asp_pack()
        .arg("--from-dir")
        .arg(samples().join("state"))
        .arg("-o")
        .arg(&out)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("already exists"));
    assert_eq!(fs::read(&out).unwrap(), b"precious");
    asp_pack()
        .arg("--from-dir")
        .arg(samples().join("state"))
        .arg("-o")
        .arg(&out)
        .arg("--force")
        .assert()
        .success();
    assert_eq!(
        fs::read(&out).unwrap(),
        fs::read(samples().join("state.aspstate")).unwrap()
    );
    // No temporary files are left beside it.
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn unpacking_into_a_non_empty_directory_needs_force() {
    let dir = tmp();
    fs::write(dir.path().join("mine.txt"), b"keep me").unwrap();
    asp_unpack()
        .arg(samples().join("state.aspstate"))
        .arg("--to-dir")
        .arg(dir.path())
        .assert()
        .code(1)
        .stderr(predicate::str::contains("not empty"));
    asp_unpack()
        .arg(samples().join("state.aspstate"))
        .arg("--to-dir")
        .arg(dir.path())
        .arg("--force")
        .assert()
        .success();
    assert_eq!(fs::read(dir.path().join("mine.txt")).unwrap(), b"keep me");
    assert!(dir.path().join("AGENTS.md").exists());
}

#[test]
fn bundles_flow_through_pipes() {
    let packed = asp_pack()
        .arg("--from-dir")
        .arg(samples().join("state"))
        .args(["-o", "-"])
        .env_remove("SOURCE_DATE_EPOCH")
        .output()
        .unwrap();
    assert!(packed.status.success());
    assert_eq!(
        packed.stdout,
        fs::read(samples().join("state.aspstate")).unwrap()
    );
    // The summary goes to stderr when the bundle takes stdout.
    assert!(String::from_utf8_lossy(&packed.stderr).contains("packed 2 sessions"));
    asp()
        .args(["verify", "-"])
        .write_stdin(packed.stdout)
        .assert()
        .success();
}

#[test]
fn creation_time_comes_from_the_flag_or_source_date_epoch() {
    let dir = tmp();
    let a = dir.path().join("a.aspstate");
    asp_pack()
        .arg("--from-dir")
        .arg(samples().join("state"))
        .arg("-o")
        .arg(&a)
        .env("SOURCE_DATE_EPOCH", "1796021315")
        .assert()
        .success();
    let v: Value = serde_json::from_slice(
        &asp()
            .args(["inspect", "--json"])
            .arg(&a)
            .output()
            .unwrap()
            .stdout,
    )
    .unwrap();
    assert_eq!(v["bundle"]["created"], "2026-11-30T06:48:35Z");
    asp_pack()
        .arg("--from-dir")
        .arg(samples().join("state"))
        .arg("-o")
        .arg(dir.path().join("b.aspstate"))
        .args(["--created", "yesterday"])
        .assert()
        .code(2) // a usage error, as clap's own
        .stderr(predicate::str::contains("RFC 3339"));
}

#[test]
fn kinds_narrow_what_is_packed_and_unpacked() {
    let dir = tmp();
    let out = dir.path().join("t.aspstate");
    asp_pack()
        .arg("--from-dir")
        .arg(samples().join("state"))
        .args(["--kinds", "tools,memory", "-o"])
        .arg(&out)
        .assert()
        .success()
        .stdout(predicate::str::contains("packed 2 MCP servers, 3 notes"));
    let plain = dir.path().join("plain");
    asp_unpack()
        .arg(&out)
        .args(["--kinds", "memory", "--to-dir"])
        .arg(&plain)
        .assert()
        .success();
    let mut names: Vec<_> = fs::read_dir(&plain)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(names, ["memory", "memory.json"]);
}

#[test]
fn map_path_rewrites_working_directories_and_paths_in_updates() {
    let dir = tmp();
    let plain = dir.path().join("plain");
    asp_unpack()
        .arg(samples().join("state.aspstate"))
        .arg("--to-dir")
        .arg(&plain)
        .args(["--map-path", "/home/dev=/Users/dev"])
        .assert()
        .success();
    let meta: Value = serde_json::from_str(
        &fs::read_to_string(plain.join("sessions/da41f528-2d0a-4f84-8acd-fe5d7087734b.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(meta["cwd"], "/Users/dev/shop");
    let lines =
        fs::read_to_string(plain.join("sessions/da41f528-2d0a-4f84-8acd-fe5d7087734b.jsonl"))
            .unwrap();
    assert!(lines.contains("\"path\":\"/Users/dev/shop/deploy.sh\""));
    assert!(!lines.contains("\"/home/dev/shop/deploy.sh\""));
    let memory: Value =
        serde_json::from_str(&fs::read_to_string(plain.join("memory.json")).unwrap()).unwrap();
    assert_eq!(memory[1]["origin"]["project"], "/Users/dev/shop");
}

#[test]
fn help_answers_questions_and_usage_errors_exit_2() {
    for (mut cmd, needles) in [
        (
            asp_pack(),
            &[
                "Examples:",
                "--redact-secrets",
                "often contain API tokens",
                "Exit codes:",
            ][..],
        ),
        (
            asp_unpack(),
            &["Examples:", "--dry-run", "<id>~<harness>", "Exit codes:"][..],
        ),
        (
            asp(),
            &["Examples:", "inspect", "verify", "Exit codes:"][..],
        ),
    ] {
        let mut a = cmd.arg("--help").assert().success();
        for n in needles {
            a = a.stdout(predicate::str::contains(*n));
        }
    }
    asp_pack().assert().code(2);
    asp_pack()
        .args(["--from-dir", ".", "--kinds", "sessions,notes", "-o", "x"])
        .assert()
        .code(2)
        .stderr(predicate::str::contains("unknown state kind \"notes\""));
    asp_unpack().arg("x.aspstate").assert().code(2);
}

#[test]
fn a_missing_bundle_is_an_error_not_an_integrity_failure() {
    asp()
        .args(["inspect", "/nonexistent/x.aspstate"])
        .assert()
        .code(1)
        .stderr(predicate::str::contains("/nonexistent/x.aspstate"));
}
