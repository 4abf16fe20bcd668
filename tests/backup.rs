//! `asp backup` and its repository (issue 13): full and incremental backups, the racy-timestamp
//! rule, sessions gone from the source, restores byte for byte, `asp check`, concurrent
//! backups, and backups killed at random points.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use predicates::prelude::{PredicateBooleanExt, predicate};
use serde_json::{Value, json};

use crate::support::*;

const A: &str = "71958462-4bb8-46b6-a36a-1becf56c22dc";
const C: &str = "8406e3f1-f626-479d-a2f4-e83bc7ff1d18";
const SHOP: &str = ".claude/projects/-home-dev-shop";
const GATEWAY: &str = ".claude/projects/-home-dev-api-gateway";

/// A copy of the Claude Code sample home whose files were last changed an hour ago (outside
/// the racy-timestamp window of any backup the test makes).
fn home_in(dir: &Path) -> PathBuf {
    let home = dir.join("home");
    copy_tree(&samples().join("claude-code"), &home);
    age(&home, Duration::from_secs(3600));
    home
}

fn copy_tree(from: &Path, to: &Path) {
    for f in files_under(from) {
        let rel = f.strip_prefix(from).unwrap();
        let dest = to.join(rel);
        fs::create_dir_all(dest.parent().unwrap()).unwrap();
        fs::copy(&f, &dest).unwrap();
    }
}

/// Sets every file's mtime under `dir` to `ago` before now.
fn age(dir: &Path, ago: Duration) {
    let t = SystemTime::now() - ago;
    for f in files_under(dir) {
        fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }
}

fn set_mtime(file: &Path, ago: Duration) {
    fs::File::options()
        .write(true)
        .open(file)
        .unwrap()
        .set_modified(SystemTime::now() - ago)
        .unwrap();
}

/// `asp backup --home HOME --repo REPO ARGS...`, as it ran.
fn backup_run(home: &Path, repo: &Path, args: &[&str]) -> std::process::Output {
    asp()
        .arg("backup")
        .args(args)
        .arg("--home")
        .arg(home)
        .arg("--repo")
        .arg(repo)
        .output()
        .unwrap()
}

fn backup(home: &Path, repo: &Path) -> Value {
    let out = backup_run(home, repo, &["--from", "claude-code", "--json", "-q"]);
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "backup failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v[0].clone()
}

/// Appends one more record like the transcript's last one, under the uuid numbered `n`, as
/// a harness appends a turn; gives the whole new text.
fn append_turn(file: &Path, n: u64) -> String {
    let mut text = fs::read_to_string(file).unwrap();
    let mut again = text
        .lines()
        .rev()
        .find(|l| l.contains("\"uuid\":\""))
        .unwrap()
        .to_owned();
    let uuid_at = again.find("\"uuid\":\"").unwrap() + 8;
    again.replace_range(
        uuid_at..uuid_at + 36,
        &format!("00000000-0000-4000-8000-{n:012}"),
    );
    text.push_str(&again);
    text.push('\n');
    fs::write(file, &text).unwrap();
    text
}

/// The repository's largest blob: a transcript's layer.
fn largest_blob(repo: &Path) -> PathBuf {
    let mut blobs = files_under(&repo.join("blobs/sha256"));
    blobs.sort_by_key(|p| fs::metadata(p).unwrap().len());
    blobs.pop().unwrap()
}

/// Flips one bit of the file at `path`, at byte `at` (counted from the end when negative), as
/// bit rot would; gives the damaged bytes.
fn rot(path: &Path, at: isize) -> Vec<u8> {
    let mut bytes = fs::read(path).unwrap();
    let i = if at < 0 {
        bytes.len() - at.unsigned_abs()
    } else {
        at as usize
    };
    bytes[i] ^= 0x40;
    fs::write(path, &bytes).unwrap();
    bytes
}

/// Flips a byte of the content manifest (`vnd.asp.snapshot.content`, the snapshot manifest's
/// subject) of the snapshot a backup made (its `--json` outcome): the snapshot can no longer
/// be read, while its layers are sound.
fn rot_content_manifest(repo: &Path, backed_up: &Value) {
    let s = backed_up["snapshot"]["digest"].as_str().unwrap();
    let manifest: Value =
        serde_json::from_slice(&fs::read(repo.join("blobs/sha256").join(&s[7..])).unwrap())
            .unwrap();
    let content = manifest["annotations"]["vnd.asp.snapshot.content"]
        .as_str()
        .unwrap();
    assert_eq!(manifest["subject"]["digest"], content);
    rot(&repo.join("blobs/sha256").join(&content[7..]), 40);
}

/// A snapshot whose source records (what the next backup compares the store with) cannot be
/// read still holds a whole state: `asp check` says so and does not offer to forget it, and
/// the next backup builds on it, every session read again, the sessions gone from the home
/// that only it holds carried (new-user trial helper-130, 2: check called it unreadable and
/// offered `asp forget --snapshot`, and the backup started afresh without them).
#[test]
fn a_snapshot_whose_records_are_damaged_is_built_on_and_not_offered_to_forget() {
    let (t, home, repo) = home_and_repo();
    let first = backup(&home, &repo);
    let original = transcript(&home, A);
    fs::remove_file(home.join(SHOP).join(format!("{A}.jsonl"))).unwrap();
    let s = first["snapshot"]["digest"].as_str().unwrap();
    let manifest: Value =
        serde_json::from_slice(&fs::read(repo.join("blobs/sha256").join(&s[7..])).unwrap())
            .unwrap();
    let shard = manifest["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["mediaType"].as_str().unwrap().contains("sources-shard"))
        .expect("a source records shard");
    let shard = repo
        .join("blobs/sha256")
        .join(&shard["digest"].as_str().unwrap()[7..]);
    let len = fs::metadata(&shard).unwrap().len() as isize;
    rot(&shard, len / 2);

    let out = asp().args(["check", "--repo"]).arg(&repo).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(
        said.contains("its source records cannot be read")
            && said.contains("its sessions restore")
            && !said.contains("asp forget --snapshot"),
        "{said}"
    );

    let out = backup_run(&home, &repo, &["--from", "claude-code", "--json"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(said.contains("every session read again"), "{said}");
    let o: Value = serde_json::from_slice(&out.stdout).unwrap();
    let o = &o[0];
    assert_eq!(o["parent"], first["snapshot"]["digest"], "{o}");
    assert_eq!(o["sessionsRead"], first["new"].as_u64().unwrap() - 1, "{o}");
    assert_eq!(o["gone"], 1, "{o}");
    // The next one reads nothing again and says nothing of it.
    let next = backup(&home, &repo);
    assert_eq!(next["sessionsRead"], 0, "{next}");
    assert!(next.get("recordsUnread").is_none(), "{next}");
    let fresh = t.path().join("fresh");
    restore(&repo, &fresh, &["--session", A]);
    assert_eq!(transcript(&fresh, A), original);
}

/// A backup of several harnesses goes on past one that fails: the others' outcomes are said
/// (in `--json` too, the failed one with its error), and the run exits with the failure's
/// code (review helper-133, 7: the first error ended the run, the outcomes made before it
/// unsaid). Here one series is locked by another backup.
#[test]
fn a_backup_of_several_harnesses_goes_on_past_one_that_fails() {
    let t = tmp();
    let home = t.path().join("home");
    copy_tree(&samples().join("claude-code"), &home);
    copy_tree(&samples().join("codex"), &home);
    age(&home, Duration::from_secs(3600));
    let repo = t.path().join("repo");
    let both = ["--from", "claude-code", "--from", "codex", "--json", "-q"];
    let out = backup_run(&home, &repo, &both);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let series: Vec<PathBuf> = files_under(&repo.join("locks"))
        .into_iter()
        .filter(|f| {
            f.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("series-")
        })
        .collect();
    assert_eq!(series.len(), 2, "{series:?}");
    let held = fs::File::options().write(true).open(&series[0]).unwrap();
    held.lock().unwrap();
    fs::write(home.join(".claude/CLAUDE.md"), "# Mine\n\nOne more rule.\n").unwrap();
    let out = backup_run(&home, &repo, &[&both[..], &["--lock-wait", "0"]].concat());
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("asp: error: backing up "), "{said}");
    let outcomes: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(outcomes.len(), 2, "{outcomes:?}");
    assert_eq!(
        outcomes.iter().filter(|o| o.get("error").is_some()).count(),
        1,
        "{outcomes:?}"
    );
    assert_eq!(
        outcomes
            .iter()
            .filter(|o| o.get("parent").is_some())
            .count(),
        1,
        "the other was backed up: {outcomes:?}"
    );
    drop(held);

    // Stores that hold nothing yet: nothing asked was left undone (exit 0), and it is said.
    let empty = t.path().join("empty");
    fs::create_dir_all(empty.join(".claude")).unwrap();
    let out = backup_run(&empty, &repo, &["--from", "all", "--json"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("hold nothing to back up yet"), "{said}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "[]");
}

/// A subagent whose update stream alone is damaged comes back whole with its parent, restored
/// into its own harness: the parent's native files hold its transcript, and the native restore
/// does not read the stream. The damage is said (exit 4), the subagent not said lost (new-user
/// trial helper-130, 3: "LOST … not written", while its files were written byte for byte).
#[cfg(feature = "claude-code")]
#[test]
fn a_subagent_whose_stream_alone_is_damaged_comes_back_with_its_parent() {
    const PARENT: &str = "12821015-852a-451b-911f-ba64553fbf57";
    const SUB: &str = "agent-a44a1a1a1ce6520e9";
    let (t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let r = asp_repo::Repository::open(&repo).unwrap();
    let info = r.snapshots().unwrap().pop().unwrap();
    let snap = asp_repo::Snapshot::load(&r, &info).unwrap();
    let sub = snap
        .state
        .sessions
        .iter()
        .flatten()
        .find(|s| s.id.as_str() == SUB)
        .unwrap();
    let layer = snap.table[&sub.updates.digest].layer;
    let path = repo.join("blobs/sha256").join(layer.hex());
    let len = fs::metadata(&path).unwrap().len() as isize;
    rot(&path, len / 2);

    let to = new_home(t.path().join("to"));
    let out = asp()
        .args(["restore", "--json", "--to", "claude-code", "--home"])
        .arg(&to)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(
        said.contains(&format!("{SUB}, with session {PARENT}")),
        "{said}"
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        !answer
            .to_string()
            .contains(&format!("session {SUB}: its data")),
        "not said lost: {answer}"
    );
    let rel = format!("{SHOP}/{PARENT}/subagents/{SUB}.jsonl");
    assert!(fs::read(to.join(&rel)).unwrap() == fs::read(home.join(&rel)).unwrap());

    // Into another harness, which composes it from its stream, it is lost.
    let other = new_home(t.path().join("other"));
    let out = asp()
        .args(["restore", "--to", "codex", "--home"])
        .arg(&other)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(said.contains(&format!("session {SUB}: its data")), "{said}");
}

/// Two forgets never plan on what the other removes: each holds `locks/forget` from its plan
/// to its write (review helper-133, 4: a policy that kept a series' newest and a `--snapshot`
/// that forgot it, at once, left the series empty). A dry run writes nothing and takes none.
#[test]
fn a_forget_waits_for_another() {
    let (_t, home, repo) = home_and_repo();
    let first = backup(&home, &repo);
    fs::write(home.join(".claude/CLAUDE.md"), "# Mine\n\nOne more rule.\n").unwrap();
    backup(&home, &repo);
    let lock = repo.join("locks/forget");
    let held = fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock)
        .unwrap();
    held.lock().unwrap();
    let id = &first["snapshot"]["digest"].as_str().unwrap()[7..19];
    for args in [
        &["forget", "--snapshot", id][..],
        &["forget", "--keep-last", "1"],
    ] {
        let out = asp()
            .args(args)
            .args(["--lock-wait", "0", "--repo"])
            .arg(&repo)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {said}");
        assert!(said.contains("another asp forget"), "{said}");
    }
    asp()
        .args([
            "forget",
            "--dry-run",
            "--keep-last",
            "1",
            "--lock-wait",
            "0",
            "--repo",
        ])
        .arg(&repo)
        .assert()
        .success();
    drop(held);
    asp()
        .args([
            "forget",
            "-q",
            "--keep-last",
            "1",
            "--lock-wait",
            "0",
            "--repo",
        ])
        .arg(&repo)
        .assert()
        .success();
}

/// `asp prune --dry-run` only reads: it runs while a backup holds the repository (and on a
/// repository it cannot write, new-user trial helper-130, 5), where the prune itself waits.
#[test]
fn a_prune_dry_run_runs_beside_a_backup() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let held = fs::File::open(repo.join("locks/repo")).unwrap();
    held.lock_shared().unwrap();
    asp()
        .args(["prune", "--dry-run", "-q", "--lock-wait", "0", "--repo"])
        .arg(&repo)
        .assert()
        .success();
    asp()
        .args(["prune", "-q", "--lock-wait", "0", "--repo"])
        .arg(&repo)
        .assert()
        .code(1);
    drop(held);
}

/// [`rot`] in the middle of the repository's largest blob: its path and damaged bytes.
fn rot_largest_blob(repo: &Path) -> (PathBuf, Vec<u8>) {
    let big = largest_blob(repo);
    let len = fs::metadata(&big).unwrap().len() as isize;
    let bytes = rot(&big, len / 2);
    (big, bytes)
}

/// The blob of `repo` that stores `body` (as it is, or as one zstd frame of its own).
fn layer_holding(repo: &Path, body: &[u8]) -> PathBuf {
    files_under(&repo.join("blobs/sha256"))
        .into_iter()
        .find(|p| {
            let bytes = fs::read(p).unwrap();
            bytes == body || zstd::decode_all(&bytes[..]).is_ok_and(|d| d == body)
        })
        .expect("a layer holding the body")
}

/// The reasons of an import answer's `notTaken` entries.
fn reasons_not_taken(answer: &Value) -> Vec<&str> {
    let not_taken = answer["notTaken"].as_array().unwrap();
    not_taken
        .iter()
        .filter_map(|n| n["reason"].as_str())
        .collect()
}

/// `asp restore --to claude-code --json` of the newest snapshot in `repo` into a new home `to`.
fn restore_json(repo: &Path, to: &Path) -> std::process::Output {
    fs::create_dir_all(to).unwrap();
    asp()
        .args(["restore", "--to", "claude-code", "--json", "--home"])
        .arg(to)
        .arg("--repo")
        .arg(repo)
        .output()
        .unwrap()
}

/// `asp pack --from-repo -q` of the repository's newest snapshot into `out`.
fn pack_from_repo(repo: &Path, out: &Path) -> assert_cmd::Command {
    let mut cmd = asp();
    cmd.args(["pack", "--from-repo", "-q", "--repo"])
        .arg(repo)
        .arg("-o")
        .arg(out);
    cmd
}

fn check(repo: &Path, read_data: bool) {
    let mut cmd = asp();
    cmd.args(["check", "-q", "--repo"]).arg(repo);
    if read_data {
        cmd.arg("--read-data");
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "check failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn blob_count(repo: &Path) -> usize {
    fs::read_dir(repo.join("blobs/sha256")).unwrap().count()
}

/// A backup's `[new, changed, unchanged, gone]`, in sessions (a subagent is one): with a
/// snapshot written, they add up to the sessions `asp snapshots` says it holds.
fn counts(o: &Value) -> [u64; 4] {
    let c = ["new", "changed", "unchanged", "gone"].map(|k| o[k].as_u64().unwrap());
    if let Some(held) = o["snapshot"]["sessions"].as_u64() {
        assert_eq!(
            c.iter().sum::<u64>() + o["unreadable"].as_u64().unwrap(),
            held,
            "the counts add up to the snapshot's: {o}"
        );
    }
    c
}

fn restore(repo: &Path, to: &Path, args: &[&str]) {
    asp()
        .args(["restore", "-q", "--to", "claude-code", "--home"])
        .arg(new_home(to))
        .arg("--repo")
        .arg(repo)
        .args(args)
        .assert()
        .success();
}

/// `asp restore -q --to HARNESS` of the latest snapshot into a new home at `to`, with `extra`
/// arguments: it must exit 0; what it said on stderr.
fn restore_said(repo: &Path, to: &Path, harness: &str, extra: &[&str]) -> String {
    let out = asp()
        .args(["restore", "-q", "--to", harness, "--home"])
        .arg(new_home(to))
        .arg("--repo")
        .arg(repo)
        .args(extra)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{said}");
    said
}

/// Session `id`'s transcript in the shop project of `home`.
/// `asp sessions --json` of a repository: one row per session ever backed up.
fn sessions_in(repo: &Path) -> Vec<Value> {
    let out = sessions_run(repo);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    listed.as_array().unwrap().clone()
}

/// `asp sessions --json --repo REPO`, as it ran.
fn sessions_run(repo: &Path) -> std::process::Output {
    asp()
        .args(["sessions", "--json", "--repo"])
        .arg(repo)
        .output()
        .unwrap()
}

fn transcript(home: &Path, id: &str) -> Vec<u8> {
    fs::read(home.join(SHOP).join(format!("{id}.jsonl"))).unwrap()
}

fn projects(home: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    files_in(&home.join(".claude/projects"))
        .into_iter()
        .filter(|(p, _)| p.ends_with(".jsonl") || p.ends_with(".meta.json"))
        .collect()
}

#[test]
fn a_full_backup_is_the_bundle_asp_pack_makes_and_restores_byte_for_byte() {
    let (t, home, repo) = home_and_repo();
    let o = backup(&home, &repo);
    assert_eq!(counts(&o), [5, 0, 0, 0], "{o}");
    let snap = &o["snapshot"];
    let out = asp_pack()
        .args(["--from", "claude-code", "--json", "-q", "--home"])
        .arg(&home)
        .arg("-o")
        .arg(t.path().join("b.aspstate"))
        .output()
        .unwrap();
    let packed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        snap["content"], packed["digest"],
        "the snapshot's content manifest is the bundle's image manifest"
    );
    check(&repo, true);

    let fresh = t.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    restore(&repo, &fresh, &[]);
    assert_eq!(projects(&fresh), projects(&home));
    // Restoring again changes nothing (never clobbers).
    restore(&repo, &fresh, &[]);
    assert_eq!(projects(&fresh), projects(&home));

    let listed = asp()
        .args(["snapshots", "--json", "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);
    assert_eq!(listed[0]["harness"], "claude-code");
    assert_eq!(listed[0]["sessions"], 5);
    // A snapshot's short id is the one `asp sessions --json` gives.
    let id = listed[0]["id"].as_str().unwrap();
    assert!(listed[0]["digest"].as_str().unwrap()[7..].starts_with(id));
    assert!(
        sessions_in(&repo)
            .iter()
            .all(|s| s["snapshot"].as_str() == Some(id)),
        "{:?}",
        sessions_in(&repo)
    );
}

#[test]
fn nothing_changed_adds_no_blob_and_no_snapshot() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let blobs = blob_count(&repo);
    let index = fs::read(repo.join("index.json")).unwrap();
    let out = asp()
        .args(["backup", "--from", "claude-code", "-q", "--home"])
        .arg(&home)
        .arg("--repo")
        .arg(&repo)
        .assert()
        .code(0);
    let text = String::from_utf8_lossy(&out.get_output().stdout).into_owned();
    assert!(text.contains("nothing changed"), "{text}");
    assert!(out.get_output().stderr.is_empty(), "quiet");
    assert_eq!(blob_count(&repo), blobs);
    assert_eq!(fs::read(repo.join("index.json")).unwrap(), index);
}

/// A transcript that cannot be read is in no snapshot, so every backup says it is lost (also
/// "nothing changed" ones, also with -q) and exits 3, until it is mended.
#[cfg(unix)]
#[test]
fn a_file_that_cannot_be_read_is_lost_on_every_backup_until_mended() {
    let (_t, home, repo) = home_and_repo();
    let broken = home
        .join(SHOP)
        .join("aaaaaaaa-1111-2222-3333-444444444444.jsonl");
    std::os::unix::fs::symlink("/nonexistent/x.jsonl", &broken).unwrap();
    let run = || backup_run(&home, &repo, &["--from", "claude-code", "-q", "--json"]);
    for _ in 0..2 {
        let out = run();
        assert_eq!(out.status.code(), Some(3));
        // (The first backup also says it made the repository, whatever -q.)
        let stderr: String = String::from_utf8_lossy(&out.stderr)
            .lines()
            .filter(|l| !l.starts_with("created a new repository at "))
            .map(|l| format!("{l}\n"))
            .collect();
        assert!(stderr.starts_with("lost: "), "{stderr}");
        assert!(stderr.contains("aaaaaaaa-1111"), "{stderr}");
        // -q: what is left out by design is not said.
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v[0]["lost"].as_array().unwrap().len(), 1, "{v}");
        assert_eq!(v[0]["lost"][0]["severity"], "lost", "{v}");
        assert!(
            v[0]["lost"][0]["file"]
                .as_str()
                .unwrap()
                .contains("aaaaaaaa-1111"),
            "{v}"
        );
    }
    fs::remove_file(&broken).unwrap();
    let out = run();
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stderr.is_empty());
}
/// A session whose file is still there but cannot be read at all (a Pi transcript whose
/// header is damaged, an OpenCode database cut short) is lost on every backup, and kept as the
/// last snapshot held it: unreadable, not gone from the source (a `forget --gone-before` must
/// not let it go). Mended, it is unchanged.
#[test]
fn a_session_that_cannot_be_read_is_kept_as_before_not_gone() {
    let damage_pi_header = |home: &Path, header: &str| -> (PathBuf, usize) {
        let dir = home.join(".pi/agent/sessions/--home-dev-shop--");
        let file = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.to_string_lossy().contains("01a23402-1481"))
            .unwrap();
        let text = fs::read_to_string(&file).unwrap();
        let rest = text.split_once('\n').unwrap().1;
        fs::write(&file, format!("{header}\n{rest}")).unwrap();
        (file, 1)
    };
    let damage_pi = |home: &Path| damage_pi_header(home, "GARBAGE HEADER");
    // Blanked, the entries after it still there: damage, not an empty file.
    let blank_pi = |home: &Path| damage_pi_header(home, "");
    let damage_opencode = |home: &Path| -> (PathBuf, usize) {
        let db = home.join(".local/share/opencode/opencode.db");
        let f = fs::OpenOptions::new().write(true).open(&db).unwrap();
        f.set_len(f.metadata().unwrap().len() * 3 / 8).unwrap();
        (db, 8)
    };
    // Each damage gives the file it damaged and how many sessions are read from it.
    type Damage<'a> = &'a dyn Fn(&Path) -> (PathBuf, usize);
    let cases: [(&str, Damage); 3] = [
        ("pi", &damage_pi),
        ("pi", &blank_pi),
        ("opencode", &damage_opencode),
    ];
    for (harness, damage) in cases {
        let t = tmp();
        let home = t.path().join("home");
        copy_tree(&samples().join(harness), &home);
        let repo = t.path().join("repo");
        let run = || {
            let out = backup_run(&home, &repo, &["--from", harness, "--json", "-q"]);
            let v: Value = serde_json::from_slice(&out.stdout).unwrap();
            (out.status.code(), v[0].clone())
        };
        let (code, first) = run();
        assert_eq!(code, Some(0), "{harness}: {first}");
        let held = first["snapshot"]["sessions"].as_u64().unwrap();
        let (file, n) = damage(&home);
        let kept = fs::read(&file).unwrap();
        let mut original = home.clone();
        original.set_file_name("original");
        copy_tree(&samples().join(harness), &original);
        for _ in 0..2 {
            let (code, v) = run();
            assert_eq!(code, Some(3), "{harness}: lost, on every run: {v}");
            assert_eq!(v["unreadable"], n, "{harness}: {v}");
            assert_eq!(v["gone"], 0, "{harness}: not gone: {v}");
            assert!(v["goneNow"].is_null(), "{harness}: {v}");
        }
        let listed = sessions_in(&repo);
        assert_eq!(listed.len() as u64, held, "{harness}: {listed:?}");
        assert!(
            listed.iter().all(|s| s["gone"].is_null()),
            "{harness}: none shown gone: {listed:?}"
        );
        assert_eq!(fs::read(&file).unwrap(), kept, "the source is only read");
        let rel = file.strip_prefix(&home).unwrap();
        fs::copy(original.join(rel), &file).unwrap();
        let (code, v) = run();
        assert_eq!(code, Some(0), "{harness}: mended: {v}");
        assert_eq!(v["unreadable"], 0, "{harness}: {v}");
    }
}

/// A newest snapshot whose manifest is damaged does not stop backups: the next one is made
/// from the newest that can be read, says which it passed over and how to let it go, and
/// exits 4; later ones are made from it, and `asp check` names the damaged one until it is
/// let go.
#[test]
fn a_damaged_newest_snapshot_is_passed_over_not_a_stop() {
    let (_t, home, repo) = home_and_repo();
    let instructions = home.join(".claude/CLAUDE.md");
    let first = backup(&home, &repo);
    fs::write(&instructions, "# Mine\n\nOne more rule.\n").unwrap();
    let second = backup(&home, &repo);
    let digest = second["snapshot"]["digest"].as_str().unwrap().to_owned();
    let id = &digest["sha256:".len().."sha256:".len() + 8];
    rot(
        &repo.join("blobs/sha256").join(&digest["sha256:".len()..]),
        100,
    );
    // Listed from the newest that can be read, the damage said: exit 4.
    let out = asp()
        .args(["sessions", "--json", "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(
        said.contains(&format!("snapshot {id} cannot be read")),
        "{said}"
    );
    let listed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 5, "{listed}");
    fs::write(&instructions, "# Mine\n\nTwo more rules.\n").unwrap();
    let out = backup_run(&home, &repo, &["--from", "claude-code", "--json", "-q"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{said}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["parent"], first["snapshot"]["digest"], "{v}");
    assert!(
        v[0]["snapshot"]["digest"].is_string(),
        "a snapshot is made: {v}"
    );
    assert_eq!(v[0]["passedOver"][0]["snapshot"], id, "{v}");
    assert!(
        said.starts_with("damaged: ")
            && said.contains(&format!("snapshot {id} cannot be read"))
            && said.contains(&format!("asp forget --snapshot {id}")),
        "{said}"
    );
    assert_eq!(sessions_in(&repo).len(), 5, "the newest can be read again");
    // The next backup's parent is the new snapshot: it says nothing of the damaged one,
    // which `asp check` names until it is let go.
    fs::write(&instructions, "# Mine\n\nTwo more rules, again.\n").unwrap();
    let out = backup_run(&home, &repo, &["--from", "claude-code", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = asp().args(["check", "--repo"]).arg(&repo).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("asp forget --snapshot {id}")),
        "{said}"
    );
    let forget = asp()
        .args(["forget", "--snapshot", id, "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    assert!(forget.status.success(), "{forget:?}");
    check(&repo, false);
}

/// A restore without --snapshot passes over a newest snapshot that cannot be read, as `asp
/// sessions` and a backup do: it restores the newest of the harness and home that can be
/// read, says which it passed over, and exits 4; so does a --session restore. One named with
/// --snapshot fails as it did. Found by a new user's trial: one flipped byte in the newest
/// snapshot's content manifest made `asp restore` restore nothing (exit 4) while `asp
/// sessions` listed every session from the snapshot before.
#[test]
fn a_restore_passes_over_a_damaged_newest_snapshot() {
    let (t, home, repo) = home_and_repo();
    let instructions = home.join(".claude/CLAUDE.md");
    let backed_up = fs::read(&instructions).unwrap();
    let first = backup(&home, &repo);
    fs::write(&instructions, "# Mine\n\nOne more rule.\n").unwrap();
    let second = backup(&home, &repo);
    let short = |o: &Value| o["snapshot"]["digest"].as_str().unwrap()[7..15].to_owned();
    let (s1, s2) = (short(&first), short(&second));
    // The second snapshot's content manifest (vnd.asp.snapshot.content), a byte flipped.
    rot_content_manifest(&repo, &second);
    assert_eq!(sessions_run(&repo).status.code(), Some(4), "as documented");

    let to = t.path().join("restored");
    let out = restore_json(&repo, &to);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(
        said.contains(&format!("damaged: snapshot {s2} cannot be read"))
            && said.contains(&format!("restoring from snapshot {s1}")),
        "{said}"
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        answer["_meta"]["asp"]["passedOver"][0]["snapshot"], s2,
        "{answer}"
    );
    assert_eq!(
        answer["sessions"].as_object().unwrap().len(),
        sessions_listed_by(&home),
        "every session: {answer}"
    );
    assert_eq!(projects(&to), projects(&home), "byte for byte");
    assert_eq!(
        fs::read(to.join(".claude/CLAUDE.md")).unwrap(),
        backed_up,
        "the instructions the first snapshot holds"
    );

    // `asp pack --from-repo` (latest) passes it over too, and packs the snapshot before.
    let bundle = t.path().join("latest.aspstate");
    let out = asp()
        .args(["pack", "--from-repo", "--json", "--repo"])
        .arg(&repo)
        .arg("-o")
        .arg(&bundle)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(
        said.contains(&format!("damaged: snapshot {s2} cannot be read"))
            && said.contains(&format!("packing snapshot {s1}")),
        "{said}"
    );
    let packed: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        packed["_meta"]["asp"]["passedOver"][0]["snapshot"], s2,
        "{packed}"
    );
    asp().arg("verify").arg(&bundle).assert().success();

    // One session alone, from the newest snapshot that can be read.
    let one = new_home(t.path().join("one"));
    let out = asp()
        .args([
            "restore",
            "-q",
            "--session",
            A,
            "--to",
            "claude-code",
            "--home",
        ])
        .arg(&one)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(
        said.contains(&format!("damaged: snapshot {s2} cannot be read")),
        "{said}"
    );
    assert_eq!(transcript(&one, A), transcript(&home, A));

    // Named, the damaged snapshot is not passed over: nothing is written.
    let named = new_home(t.path().join("named"));
    let out = asp()
        .args([
            "restore",
            "-q",
            "--snapshot",
            &s2,
            "--to",
            "claude-code",
            "--home",
        ])
        .arg(&named)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(
        said.contains(&format!("snapshot {s2} cannot be read")),
        "{said}"
    );
    assert!(nothing_in(&named), "nothing restored");
}

/// A damaged snapshot manifest is one problem to `asp check --read-data`: the snapshot that
/// cannot be read names it, and it is not said again as a blob no readable snapshot names (it
/// was: 2 problems for one flipped byte).
#[test]
fn a_damaged_snapshot_manifest_is_one_problem_to_check() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    fs::write(home.join(".claude/CLAUDE.md"), "# Mine\n\nOne more rule.\n").unwrap();
    let second = backup(&home, &repo);
    let s = second["snapshot"]["digest"].as_str().unwrap();
    rot(&repo.join("blobs/sha256").join(&s[7..]), 40);
    let out = asp()
        .args(["check", "--read-data", "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{said}");
    let problems: Vec<&str> = said.lines().filter(|l| l.starts_with("problem:")).collect();
    assert_eq!(problems.len(), 1, "{said}");
    assert!(
        problems[0].contains(&format!("snapshot {} ", &s[7..15]))
            && problems[0].contains(&s[7..])
            && said.contains("1 problem"),
        "{said}"
    );
}

/// `asp push latest` does not pass over a damaged newest snapshot as restore does (the tag
/// could already name that snapshot, pushed before the damage, and would go back to an older
/// state): it stops before reaching the registry, exit 4, and names the newest of the series
/// that can be read, to push by its id.
#[test]
fn a_push_of_latest_names_the_newest_readable_snapshot_when_the_newest_is_damaged() {
    let (_t, home, repo) = home_and_repo();
    let first = backup(&home, &repo);
    fs::write(home.join(".claude/CLAUDE.md"), "# Mine\n\nOne more rule.\n").unwrap();
    let second = backup(&home, &repo);
    let short = |o: &Value| o["snapshot"]["digest"].as_str().unwrap()[7..19].to_owned();
    rot_content_manifest(&repo, &second);
    // Port 9 (discard) on the loopback: nothing is sent, so nothing needs to answer. It stops
    // before reaching the registry, exit 4, and says why.
    let push_latest = || {
        let out = asp()
            .args(["push", "latest", "127.0.0.1:9/me/state:laptop", "--repo"])
            .arg(&repo)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(4), "{said}");
        said
    };

    let said = push_latest();
    assert!(
        said.contains(&format!("snapshot {} cannot be read", &short(&second)[..8]))
            && said.contains(&format!("`asp push {} REF` pushes it", &short(&first)[..8])),
        "{said}"
    );

    // A third snapshot whose source records are damaged (it restores, but its record would
    // lack the configuration they hold) is not pushed either, and the suggestion passes over
    // the second too.
    fs::write(home.join(".claude/CLAUDE.md"), "# Mine\n\nA third rule.\n").unwrap();
    // (It exits 4: it was made from the first, passing over the damaged second.)
    let made = backup_run(&home, &repo, &["--from", "claude-code", "--json", "-q"]);
    assert_eq!(made.status.code(), Some(4), "{made:?}");
    let third = serde_json::from_slice::<Value>(&made.stdout).unwrap()[0].clone();
    let s = third["snapshot"]["digest"].as_str().unwrap();
    let manifest: Value =
        serde_json::from_slice(&fs::read(repo.join("blobs/sha256").join(&s[7..])).unwrap())
            .unwrap();
    let records = manifest["layers"][0]["digest"].as_str().unwrap();
    rot(&repo.join("blobs/sha256").join(&records[7..]), 10);
    let said = push_latest();
    assert!(
        said.contains(&format!(
            "snapshot {} cannot be pushed",
            &short(&third)[..8]
        )) && said.contains(&format!("`asp push {} REF` pushes it", &short(&first)[..8])),
        "{said}"
    );
}

/// `asp restore --session` says as damage (and exits 4 for) only the snapshots passed over in
/// the series it restores from: a damaged newest snapshot of another home looked in first,
/// whose readable snapshot does not hold the session, is a note, and the restore from the
/// newest snapshot of the home that holds it exits 0. It was "damaged: …; restoring from"
/// that snapshot, as if it were not the newest of its own series, and exit 4.
#[test]
fn a_session_restore_says_damage_elsewhere_as_a_note() {
    let (t, here, repo) = home_and_repo();
    let p1 = backup(&here, &repo);
    // Another home, backed up first without the session, then with it; that newest damaged
    // (its instructions differ, so that it shares no content manifest with the first home's).
    let there = home_in(&t.path().join("there"));
    fs::write(there.join(".claude/CLAUDE.md"), "# There\n").unwrap();
    let session = there.join(SHOP).join(format!("{A}.jsonl"));
    let kept = fs::read(&session).unwrap();
    fs::remove_file(&session).unwrap();
    backup(&there, &repo);
    fs::write(&session, &kept).unwrap();
    set_mtime(&session, Duration::from_secs(3600));
    let q2 = backup(&there, &repo);
    rot_content_manifest(&repo, &q2);
    let short = |o: &Value| o["snapshot"]["digest"].as_str().unwrap()[7..15].to_owned();

    let one = new_home(t.path().join("one"));
    let out = asp()
        .args([
            "restore",
            "--session",
            A,
            "--to",
            "claude-code",
            "--json",
            "--home",
        ])
        .arg(&one)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(!said.contains("damaged: "), "{said}");
    assert!(
        said.contains(&format!("note: snapshot {} cannot be read", short(&q2)))
            && said.contains("which it may have held")
            && said.contains(&format!("restoring from snapshot {}", short(&p1))),
        "{said}"
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        answer["_meta"]["asp"].get("passedOver").is_none(),
        "{answer}"
    );
    assert_eq!(
        answer["_meta"]["asp"]["passedOverElsewhere"][0]["snapshot"],
        short(&q2),
        "{answer}"
    );
    assert_eq!(transcript(&one, A), transcript(&here, A));
}

/// Damaged source records (a snapshot manifest's first layer: what the next backup compares,
/// the configuration files kept, the sessions gone) keep no session from coming back: a
/// restore writes the whole state and says what it could not (exit 4), `asp sessions` lists
/// them (exit 4), and `asp check` names the damage.
#[test]
fn damaged_source_records_keep_no_session_from_being_restored() {
    let (t, home, repo) = home_and_repo();
    let made = backup(&home, &repo);
    let digest = made["snapshot"]["digest"].as_str().unwrap();
    let manifest: Value = serde_json::from_slice(
        &fs::read(repo.join("blobs/sha256").join(&digest["sha256:".len()..])).unwrap(),
    )
    .unwrap();
    let head = manifest["layers"][0]["digest"].as_str().unwrap();
    rot(&repo.join("blobs/sha256").join(&head["sha256:".len()..]), 3);

    let out = restore_json(&repo, &t.path().join("restored"));
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(
        said.contains("damaged: ") && said.contains("source records"),
        "{said}"
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let listed = sessions_listed_by(&home);
    assert_eq!(
        answer["sessions"].as_object().unwrap().len(),
        listed,
        "every session is restored: {answer}"
    );
    assert_eq!(
        projects(&t.path().join("restored")),
        projects(&home),
        "byte for byte"
    );

    let out = sessions_run(&repo);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), listed, "{rows}");

    let out = asp().args(["check", "--repo"]).arg(&repo).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
}

/// How many sessions `asp sessions --from claude-code` lists in `home`.
fn sessions_listed_by(home: &Path) -> usize {
    let out = asp()
        .args(["sessions", "--from", "claude-code", "--json", "--home"])
        .arg(home)
        .output()
        .unwrap();
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    rows.as_array().unwrap().len()
}

/// A session there whose subagent transcript was deleted since gets it back: the subagent is
/// new (not "already there"), and what was written back into the session there is said.
#[test]
fn a_restore_writes_back_the_missing_files_of_a_session_there_and_says_so() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let parent = "12821015-852a-451b-911f-ba64553fbf57";
    let subagents = home.join(SHOP).join(parent).join("subagents");
    let before = fs::read(subagents.join("agent-a44a1a1a1ce6520e9.jsonl")).unwrap();
    fs::remove_dir_all(&subagents).unwrap();
    let out = asp()
        .args([
            "restore",
            "--json",
            "--session",
            parent,
            "--to",
            "claude-code",
            "--home",
        ])
        .arg(&home)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["_meta"]["asp"]["alreadyThere"],
        serde_json::json!([parent]),
        "{v}"
    );
    assert!(
        v["_meta"]["asp"]["findings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|f| f["message"]
                .as_str()
                .unwrap()
                .contains("2 of its files that were missing were written back")),
        "{v}"
    );
    assert_eq!(
        fs::read(subagents.join("agent-a44a1a1a1ce6520e9.jsonl")).unwrap(),
        before
    );
}

#[test]
fn an_appended_turn_reads_only_that_session() {
    let (t, home, repo) = home_and_repo();
    let first = backup(&home, &repo);
    let file = home.join(GATEWAY).join(format!("{C}.jsonl"));
    let text = append_turn(&file, 1);
    set_mtime(&file, Duration::from_secs(3500));

    let o = backup(&home, &repo);
    assert_eq!(counts(&o), [0, 1, 4, 0], "{o}");
    assert_eq!(o["parent"], first["snapshot"]["digest"]);
    // Which session changed is named, in --json and in the summary.
    assert_eq!(o["changedSessions"], json!([C]), "{o}");
    assert!(
        o.get("newSessions").is_none() && o.get("goneNow").is_none(),
        "{o}"
    );
    check(&repo, true);
    let fresh = t.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    restore(&repo, &fresh, &["--session", C]);
    assert_eq!(
        fs::read(fresh.join(GATEWAY).join(format!("{C}.jsonl"))).unwrap(),
        text.as_bytes()
    );
    // The first snapshot still gives the session as it was.
    let older = t.path().join("older");
    fs::create_dir_all(&older).unwrap();
    let id = first["snapshot"]["digest"].as_str().unwrap()[7..19].to_owned();
    restore(&repo, &older, &["--session", C, "--snapshot", &id]);
    assert_eq!(
        fs::read(older.join(GATEWAY).join(format!("{C}.jsonl"))).unwrap(),
        fs::read(
            samples()
                .join("claude-code")
                .join(GATEWAY)
                .join(format!("{C}.jsonl"))
        )
        .unwrap()
    );
    // The summary names it too.
    append_turn(&file, 2);
    set_mtime(&file, Duration::from_secs(3400));
    let out = backup_run(&home, &repo, &["--from", "claude-code"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains(&format!("\n  changed: {C}\n")), "{said}");
}

/// A home of more sessions than one shard of source records holds (their records come back
/// from the repository in shard order, not survey order): a second backup finds nothing
/// changed, and reads nothing again.
#[test]
fn a_large_home_backed_up_twice_is_unchanged_the_second_time() {
    let t = tmp();
    let home = big_home(t.path(), 60);
    let repo = t.path().join("repo");
    assert!(backup(&home, &repo)["snapshot"].is_object());
    let again = backup(&home, &repo);
    assert!(again["snapshot"].is_null(), "{again}");
    assert!(again.get("recordsChanged").is_none(), "{again}");
    assert_eq!(again["sessionsRead"], 0, "{again}");
}

/// Rewrites `file` in place with the first `from` made `to` (as long), then puts its mtime
/// back: same size, inode and mtime, other bytes. Gives the new bytes.
fn rewrite_keeping_mtime(file: &Path, from: &[u8], to: &[u8]) -> Vec<u8> {
    assert_eq!(from.len(), to.len());
    let mtime = fs::metadata(file).unwrap().modified().unwrap();
    let mut bytes = fs::read(file).unwrap();
    let at = bytes.windows(from.len()).position(|w| w == from).unwrap();
    bytes[at..at + to.len()].copy_from_slice(to);
    fs::write(file, &bytes).unwrap();
    fs::File::options()
        .write(true)
        .open(file)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    bytes
}

#[test]
fn a_file_changed_within_the_mtime_granularity_is_read_again() {
    let t = tmp();
    let home = t.path().join("home");
    copy_tree(&samples().join("claude-code"), &home);
    // Written just before the backup starts: within the racy window.
    let file = home.join(GATEWAY).join(format!("{C}.jsonl"));
    backup(&home, &repo_of(&t));
    // Same size, same inode, same mtime, other bytes.
    let bytes = rewrite_keeping_mtime(&file, b"build", b"BUILD");
    let o = backup(&home, &repo_of(&t));
    assert!(o["snapshot"].is_object(), "the change was seen: {o}");
    let fresh = t.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    restore(&repo_of(&t), &fresh, &["--session", C]);
    assert_eq!(
        fs::read(fresh.join(GATEWAY).join(format!("{C}.jsonl"))).unwrap(),
        bytes
    );
}

#[test]
fn a_file_read_again_only_for_the_racy_rule_counts_as_unchanged() {
    let t = tmp();
    let home = home_in(t.path());
    let repo = repo_of(&t);
    backup(&home, &repo);
    // Written "now": the next backup starts within its mtime granularity, and the one after
    // reads it again to be sure, finding what it had.
    let file = home.join(GATEWAY).join(format!("{C}.jsonl"));
    append_turn(&file, 2);
    set_mtime(&file, Duration::ZERO);
    let o = backup(&home, &repo);
    assert_eq!(counts(&o), [0, 1, 4, 0], "{o}");
    let o = backup(&home, &repo);
    assert_eq!(counts(&o), [0, 0, 5, 0], "read again, the same: {o}");
    assert!(o["snapshot"].is_null(), "nothing changed: {o}");
}

fn repo_of(t: &tempfile::TempDir) -> PathBuf {
    t.path().join("repo")
}

/// A scratch directory holding a copy of the Claude Code sample home (`home_in`) and the path
/// of a repository beside it, not made yet.
fn home_and_repo() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let t = tmp();
    let home = home_in(t.path());
    let repo = repo_of(&t);
    (t, home, repo)
}

/// A home and repository in `t` where session A was backed up, then deleted by the harness
/// and backed up again as gone: the home, the repository, A's transcript, and that second
/// backup's outcome.
fn with_a_gone(t: &tempfile::TempDir) -> (PathBuf, PathBuf, Vec<u8>, Value) {
    let home = home_in(t.path());
    let repo = t.path().join("repo");
    backup(&home, &repo);
    let original = transcript(&home, A);
    fs::remove_file(home.join(SHOP).join(format!("{A}.jsonl"))).unwrap();
    let o = backup(&home, &repo);
    (home, repo, original, o)
}

/// `asp snapshots --json` of a repository, and how it exited.
fn snapshots_listed(repo: &Path) -> (Option<i32>, String, String) {
    let out = asp()
        .args(["snapshots", "--json", "--repo"])
        .arg(repo)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A session gone from the source that comes back (its transcript put back) is live again
/// and named as back (`backSessions`, and "back in source" on the details), not only counted
/// as unchanged.
#[test]
fn a_gone_session_put_back_is_named_as_back() {
    let t = tmp();
    let (home, repo, original, o) = with_a_gone(&t);
    assert_eq!(o["goneNow"], json!([A]), "{o}");
    fs::write(home.join(SHOP).join(format!("{A}.jsonl")), &original).unwrap();
    let back = backup(&home, &repo);
    assert_eq!(back["backSessions"], json!([A]), "{back}");
    assert_eq!(back["gone"], 0, "{back}");
    let again = backup(&home, &repo);
    assert!(again.get("backSessions").is_none(), "said once: {again}");
}

#[test]
fn an_index_damaged_or_deleted_is_rebuilt_from_the_snapshot_manifests() {
    let t = tmp();
    let (home, repo, original, _) = with_a_gone(&t);
    let (code, before, _) = snapshots_listed(&repo);
    assert_eq!(code, Some(0));
    let index = repo.join("index.json");
    let bytes = fs::read(&index).unwrap();
    for damage in ["cut", "deleted"] {
        match damage {
            "cut" => fs::write(&index, &bytes[..bytes.len() / 2]).unwrap(),
            _ => fs::remove_file(&index).unwrap(),
        }
        let (code, _, err) = snapshots_listed(&repo);
        assert_eq!(code, Some(4), "{damage}: {err}");
        assert!(
            err.contains("`asp check --rebuild-index`"),
            "{damage}: {err}"
        );
        let out = asp()
            .args(["check", "--rebuild-index", "--repo"])
            .arg(&repo)
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{damage}: {said}");
        assert!(said.contains("2 snapshots listed"), "{damage}: {said}");
        assert_eq!(
            said.contains("index.json.before-rebuild"),
            damage == "cut",
            "{damage}: the index before is kept aside when there was one: {said}"
        );
        let (code, after, err) = snapshots_listed(&repo);
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(
            after, before,
            "{damage}: the same snapshots, as they were listed"
        );
    }
    let kept = fs::read(repo.join("index.json.before-rebuild")).unwrap();
    assert_eq!(
        kept,
        bytes[..bytes.len() / 2],
        "the damaged index is kept as it was"
    );
    // Everything restores, the gone session with it, and the next backup goes on.
    let to = t.path().join("restored");
    restore(&repo, &to, &[]);
    assert_eq!(transcript(&to, A), original);
    backup(&home, &repo);
}

/// What `index.json` says of a snapshot (its counts, its harness) changed by hand or by damage
/// no longer passes: the snapshot's own manifest says otherwise, and `asp check` says so and
/// that `--rebuild-index` mends it (not `forget`); a backup passes over that snapshot.
#[test]
fn an_index_that_says_otherwise_than_a_snapshots_manifest_is_said_as_damage() {
    let t = tmp();
    let (home, repo, _, o) = with_a_gone(&t);
    let index = repo.join("index.json");
    let bytes = fs::read_to_string(&index).unwrap();
    assert_eq!(
        bytes.matches("\"vnd.asp.snapshot.gone\": \"1\"").count(),
        1,
        "{bytes}"
    );
    fs::write(
        &index,
        bytes.replace(
            "\"vnd.asp.snapshot.gone\": \"1\"",
            "\"vnd.asp.snapshot.gone\": \"0\"",
        ),
    )
    .unwrap();
    let short = &o["snapshot"]["digest"].as_str().unwrap()["sha256:".len()..][..8];
    let out = asp().args(["check", "--repo"]).arg(&repo).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!(
            "index.json says vnd.asp.snapshot.gone \"0\" of snapshot {short}, and its manifest \"1\""
        )) && said.contains("--rebuild-index")
            && !said.contains("forget"),
        "{said}"
    );
    // Checked all the same: its blobs are not counted as unreferenced.
    assert!(said.contains("; 0 unreferenced;"), "{said}");
    // A backup passes over it, and says the same: not `forget`, which with a prune would
    // delete a sound snapshot.
    let out = backup_run(&home, &repo, &["--from", "claude-code"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains("--rebuild-index") && !err.contains("forget"),
        "{err}"
    );
    asp()
        .args(["check", "-q", "--rebuild-index", "--repo"])
        .arg(&repo)
        .assert()
        .success();
    check(&repo, true);
}

/// A digest in `index.json` changed by one character still parses: the snapshot it names
/// is missing, and its real manifest is unreferenced. `asp check` says the index may be what
/// is damaged, and that `--rebuild-index` must come before a `forget` and `prune` that would
/// delete the good manifest.
#[test]
fn an_index_naming_a_missing_manifest_beside_an_unnamed_one_is_said_as_damage() {
    let t = tmp();
    let (_, repo, _, o) = with_a_gone(&t);
    let hex = o["snapshot"]["digest"].as_str().unwrap()["sha256:".len()..].to_owned();
    let flipped = format!(
        "{}{}",
        if hex.starts_with('0') { "1" } else { "0" },
        &hex[1..]
    );
    let index = repo.join("index.json");
    let text = fs::read_to_string(&index).unwrap();
    fs::write(&index, text.replace(&hex, &flipped)).unwrap();
    let out = asp().args(["check", "--repo"]).arg(&repo).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{said}");
    let problems: Vec<&str> = said
        .lines()
        .filter(|l| l.starts_with("problem: "))
        .collect();
    assert_eq!(problems.len(), 2, "{said}");
    assert!(
        problems[0].contains(&flipped[..8]) && problems[0].contains("index.json may be"),
        "{said}"
    );
    assert!(
        problems[1].contains(&hex[..8])
            && problems[1].contains("`asp check --rebuild-index`")
            && problems[1].contains("before `asp forget`"),
        "{said}"
    );
}

#[test]
fn a_session_the_harness_deleted_is_kept_and_comes_back() {
    let t = tmp();
    let (home, repo, original, o) = with_a_gone(&t);
    assert_eq!(counts(&o), [0, 0, 4, 1], "{o}");
    // Still gone: carried again, and nothing else changed.
    let again = backup(&home, &repo);
    assert!(again["snapshot"].is_null(), "{again}");

    let rows = sessions_in(&repo);
    assert_eq!(rows.len(), 5);
    let a = rows.iter().find(|r| r["id"] == A).unwrap();
    assert_eq!(a["goneFromSource"], true);
    assert_eq!(
        rows.iter().filter(|r| r["goneFromSource"] == true).count(),
        1
    );

    restore(&repo, &home, &["--session", A]);
    assert_eq!(transcript(&home, A), original);
    // Back in the source: no longer gone.
    set_mtime(
        &home.join(SHOP).join(format!("{A}.jsonl")),
        Duration::from_secs(3000),
    );
    let back = backup(&home, &repo);
    assert_eq!(back["gone"], 0, "{back}");
    check(&repo, false);
}

/// A damaged record in a session's file does not make a listing incomplete: the session is
/// listed, its record kept in its file as a backup keeps it (new-user trial helper-126, 6: the
/// listing said `lost:` and exited 3).
#[test]
fn a_damaged_record_does_not_make_a_listing_lose_anything() {
    let home = tmp();
    copy_dir(&samples().join("claude-code"), home.path());
    let log = home.path().join(SHOP).join(format!("{A}.jsonl"));
    let mut bytes = fs::read(&log).unwrap();
    bytes.extend_from_slice(b"{\"this line\": is not JSON\n");
    fs::write(&log, bytes).unwrap();
    let out = asp()
        .args(["sessions", "--json", "--from", "claude-code", "--home"])
        .arg(home.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("lost"), "{stderr}");
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(rows.as_array().unwrap().iter().any(|r| r["id"] == A));
}

#[test]
fn sessions_lists_a_live_store_without_a_repository() {
    let t = tmp();
    let out = asp()
        .args(["sessions", "--json", "--from", "claude-code", "--home"])
        .arg(samples().join("claude-code"))
        .env("ASP_REPO", t.path().join("none"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let rows: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(rows.as_array().unwrap().len(), 5);
    assert!(rows[0]["snapshot"].is_null());
    // The subagent's session is listed right after the conversation that started it, and
    // names it; the table indents it there.
    let ids: Vec<&str> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    let sub = ids.iter().position(|i| i.starts_with("agent-")).unwrap();
    let parent = "12821015-852a-451b-911f-ba64553fbf57";
    assert_eq!(
        (ids[sub - 1], &rows[sub]["parent"]),
        (parent, &json!(parent))
    );
    assert!(
        rows.as_array()
            .unwrap()
            .iter()
            .filter(|r| r.get("parent").is_some())
            .count()
            == 1
    );
    let table = asp()
        .args(["sessions", "--from", "claude-code", "--home"])
        .arg(samples().join("claude-code"))
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&table.stdout);
    let lines: Vec<&str> = table.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with("└ agent-"))
        .expect("indented");
    assert!(lines[at - 1].starts_with(parent), "{table}");
    assert!(!t.path().join("none").exists(), "no repository was made");
    // --repo beside --from would mean nothing: refused, as asp-pack --repo without
    // --from-repo is.
    asp()
        .args(["sessions", "--from", "claude-code", "--home"])
        .arg(samples().join("claude-code"))
        .arg("--repo")
        .arg(t.path().join("none"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--repo"));
    asp_pack()
        .args(["--from", "claude-code", "--home"])
        .arg(samples().join("claude-code"))
        .arg("--repo")
        .arg(t.path().join("none"))
        .arg("-o")
        .arg(t.path().join("x.aspstate"))
        .assert()
        .code(2)
        .stderr(predicate::str::contains("--from-repo"));
    assert!(!t.path().join("x.aspstate").exists());
}

#[test]
fn check_finds_a_damaged_layer_and_a_missing_one() {
    let (t, home, repo) = home_and_repo();
    backup(&home, &repo);
    check(&repo, true);
    let (big, _) = rot_largest_blob(&repo);
    check(&repo, false);
    let checked = asp()
        .args(["check", "-q", "--json", "--read-data", "--repo"])
        .arg(&repo)
        .assert()
        .code(4)
        .get_output()
        .stdout
        .clone();
    // The largest layer is a transcript's, the dictionary of its update stream: one damaged
    // blob is one problem, which counts the transcript and the stream as unreadable without
    // it and names the session that needs it.
    let report: Value = serde_json::from_slice(&checked).unwrap();
    let problems: Vec<&str> = report["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert!(
        problems[0].contains("does not match its digest"),
        "{problems:?}"
    );
    assert!(
        problems[0].contains("; 2 bodies cannot be read without it; needed by session "),
        "{problems:?}"
    );
    assert_eq!(report["damagedLayers"], 1, "{report}");
    // Packing the snapshot into a bundle meets the damage too: an integrity failure, its
    // cause said once, and no bundle.
    let out = t.path().join("x.aspstate");
    let packed = pack_from_repo(&repo, &out)
        .assert()
        .code(4)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(packed).unwrap();
    assert_eq!(err.matches("does not match its digest").count(), 1, "{err}");
    assert!(!out.exists());
    fs::remove_file(&big).unwrap();
    asp()
        .args(["check", "-q", "--repo"])
        .arg(&repo)
        .assert()
        .code(4);
    // A missing layer is an integrity failure for packing too.
    pack_from_repo(&repo, &out)
        .assert()
        .code(4)
        .stderr(predicate::str::contains("is missing"));
    assert!(!out.exists());

    // The next backup that has something to store mends it: the sessions that need the
    // missing layer are read again from the source (it still has them) and their layers
    // stored anew, with a note; the repository checks again.
    let file = home.join(GATEWAY).join(format!("{C}.jsonl"));
    append_turn(&file, 1);
    set_mtime(&file, Duration::from_secs(3000));
    let out = asp()
        .args(["backup", "--from", "claude-code", "--home"])
        .arg(&home)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("were read again from the source"),
        "{stderr}"
    );
    check(&repo, true);
}

/// A snapshot whose manifest is damaged is named by `asp check`, with what it does to the
/// count of unreferenced blobs (they are its own, not garbage), and `asp prune` removes none.
#[test]
fn check_names_a_snapshot_whose_manifest_cannot_be_read() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let id = asp_snapshots_latest(&repo);
    let index: Value = serde_json::from_slice(&fs::read(repo.join("index.json")).unwrap()).unwrap();
    let digest = index["manifests"][0]["digest"].as_str().unwrap()[7..].to_owned();
    let manifest = repo.join("blobs/sha256").join(&digest);
    let mut bytes = fs::read(&manifest).unwrap();
    bytes[10] ^= 1;
    fs::write(&manifest, bytes).unwrap();
    let blobs = blob_count(&repo);
    let out = asp().args(["check", "--repo"]).arg(&repo).output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("problem: snapshot {} (", &id[..8]))
            && said.contains("cannot be read")
            && said.contains("the blobs only it holds are counted as unreferenced"),
        "{said}"
    );
    asp().args(["prune", "--repo"]).arg(&repo).assert().code(4);
    assert_eq!(blob_count(&repo), blobs, "nothing pruned");
    // Letting it go, as check says, is warned of: what only it holds cannot be told, and a
    // session gone from the source that only it holds would go with it.
    let out = asp()
        .args(["forget", "--dry-run", "--snapshot", &id[..8], "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("snapshot {} cannot be read", &id[..8]))
            && said.contains("would go with it at the next `asp prune`"),
        "{said}"
    );
}

/// A snapshot is forgotten by its id, whatever a policy keeps: a series' newest with the
/// sessions only it holds named, and a damaged one, which `asp check` says how to let go.
#[test]
fn a_snapshot_named_by_id_is_forgotten_and_what_goes_with_it_is_said() {
    let (t, home, repo) = home_and_repo();
    let a = home.join(SHOP).join(format!("{A}.jsonl"));
    let aside = t.path().join("a.jsonl");
    fs::rename(&a, &aside).unwrap();
    backup(&home, &repo);
    let older = asp_snapshots_latest(&repo);
    fs::rename(&aside, &a).unwrap();
    backup(&home, &repo);
    let newest = asp_snapshots_latest(&repo);
    assert_ne!(older, newest);
    let forget = |args: &[&str]| {
        asp()
            .arg("forget")
            .args(args)
            .arg("--repo")
            .arg(&repo)
            .output()
            .unwrap()
    };

    // The newest holds A, which the older does not: a dry run names it and changes nothing.
    let index = fs::read(repo.join("index.json")).unwrap();
    let out = forget(&["--dry-run", "--snapshot", &newest[..8]]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(
        said.starts_with("would forget 1 snapshot\n")
            && said.contains(&format!("the newest is then {}", &older[..8]))
            && said.contains("1 session only it holds would go with it")
            && said.contains(&format!("\n    {A}\n")),
        "{said}"
    );
    assert_eq!(fs::read(repo.join("index.json")).unwrap(), index);
    let out = forget(&["--json", "--dry-run", "--snapshot", &newest]);
    let plan: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["dryRun"], true, "{plan}");
    assert_eq!(
        plan["named"]["newestForgotten"][0]["sessionsOnlyItHeld"],
        json!([A])
    );
    // Both named: no snapshot of the series is left, and every session goes.
    let out = forget(&[
        "--json",
        "--dry-run",
        "--snapshot",
        &newest,
        "--snapshot",
        &older,
    ]);
    let both: Value = serde_json::from_slice(&out.stdout).unwrap();
    let gone = &both["named"]["newestForgotten"][0];
    assert!(gone["newest"].is_null(), "{both}");
    assert_eq!(
        gone["sessionsOnlyItHeld"].as_array().unwrap().len(),
        5,
        "{both}"
    );
    assert_eq!(both["named"]["remove"].as_array().unwrap().len(), 2);

    let digest = plan["named"]["newestForgotten"][0]["newest"]["digest"]
        .as_str()
        .unwrap()[7..]
        .to_owned();
    let manifest = repo.join("blobs/sha256").join(&digest);
    // The older one's manifest cannot be opened for a reason that says nothing of its bytes
    // (here a symbolic link to itself: an I/O error, not damage): the plan stops there,
    // naming the file, rather than count the snapshot as unreadable and forget it for that.
    let aside = t.path().join("manifest-aside");
    fs::rename(&manifest, &aside).unwrap();
    std::os::unix::fs::symlink(&manifest, &manifest).unwrap();
    let index = fs::read(repo.join("index.json")).unwrap();
    let out = forget(&["--snapshot", &older[..8], "--snapshot", &newest[..8]]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains(&digest), "{said}");
    assert_eq!(fs::read(repo.join("index.json")).unwrap(), index);
    fs::remove_file(&manifest).unwrap();
    fs::rename(&aside, &manifest).unwrap();

    // The older one's manifest is damaged: check says how to let it go, and then it is gone.
    let mut bytes = fs::read(&manifest).unwrap();
    bytes[10] ^= 1;
    fs::write(&manifest, bytes).unwrap();
    let out = asp().args(["check", "--repo"]).arg(&repo).output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    let hint = format!("`asp forget --snapshot {}` lets it go", &older[..8]);
    assert!(String::from_utf8_lossy(&out.stdout).contains(&hint));
    let out = forget(&["--snapshot", &older[..8]]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{said}");
    assert!(
        said.starts_with("forgot 1 snapshot; `asp prune` frees their space\n")
            && said.contains(&older[..8])
            && !said.contains("newest"),
        "{said}"
    );
    asp()
        .args(["prune", "-q", "--repo"])
        .arg(&repo)
        .assert()
        .success();
    check(&repo, true);
    assert!(!manifest.exists(), "pruned");
    let fresh = t.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    restore(&repo, &fresh, &[]);
    assert_eq!(transcript(&fresh, A), transcript(&home, A));

    // An id that names no snapshot is refused, and a policy with it is a usage error.
    assert_eq!(forget(&["--snapshot", &older[..8]]).status.code(), Some(2));
    assert_eq!(
        forget(&["--snapshot", &newest[..8], "--keep-last", "1"])
            .status
            .code(),
        Some(2)
    );
}

/// One damaged blob does not keep the other sessions from coming back: a restore leaves out
/// what needs it, restores the rest, names what it left out and exits 4.
#[test]
fn a_restore_brings_back_every_session_a_damaged_blob_does_not_touch() {
    let (t, home, repo) = home_and_repo();
    backup(&home, &repo);
    rot_largest_blob(&repo);

    let fresh = t.path().join("fresh");
    let out = restore_json(&repo, &fresh);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("does not match its digest"), "{err}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        !answer["_meta"]["asp"]["damaged"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    // Exactly one top-level session is named as not restored; every other one is back, byte
    // for byte, and that one is not there at all.
    let summary = err
        .lines()
        .find(|l| l.starts_with("left out, their data"))
        .unwrap_or_else(|| panic!("{err}"));
    let top = [
        A,
        "12821015-852a-451b-911f-ba64553fbf57",
        C,
        "0e06340e-3c10-486d-a4a9-8763cc8a6c00",
    ];
    let lost: Vec<&str> = top.into_iter().filter(|id| summary.contains(id)).collect();
    assert_eq!(lost.len(), 1, "{summary}");
    let restored = projects(&fresh);
    let mut back = 0;
    for (path, bytes) in projects(&home) {
        let top_level = path.matches('/').count() == 1;
        if path.contains(lost[0]) {
            assert!(!restored.contains_key(&path), "{path} is not half-written");
        } else if top_level {
            assert!(restored.get(&path) == Some(&bytes), "{path} restored");
            back += 1;
        }
    }
    assert_eq!(back, top.len() - 1);
}

/// Where two skill folders of one name hide each other (Gemini CLI uses `~/.agents/skills`'
/// over its own, Pi and Copilot CLI their own over `~/.agents/skills`'), the reader carries
/// the one the harness uses; a backup keeps the other with the harness's own configuration,
/// so a restore into an empty home gives both back, byte for byte.
#[test]
fn a_skill_folder_another_hides_is_kept_by_a_backup() {
    for (harness, winner, hidden) in [
        ("gemini", ".agents/skills", ".gemini/skills"),
        ("pi", ".pi/agent/skills", ".agents/skills"),
        ("copilot", ".copilot/skills", ".agents/skills"),
    ] {
        let t = tmp();
        let home = t.path().join("home");
        copy_tree(&samples().join(harness), &home);
        for (root, says) in [(winner, "the one used"), (hidden, "the hidden one")] {
            let dir = home.join(root).join("release-notes");
            fs::create_dir_all(dir.join("scripts")).unwrap();
            fs::write(
                dir.join("SKILL.md"),
                format!("---\nname: release-notes\ndescription: Write release notes ({says}).\n---\n\nSummarise the changes.\n"),
            )
            .unwrap();
            fs::write(
                dir.join("scripts/changelog.sh"),
                format!("#!/bin/sh\n# {says}\ngit log --oneline\n"),
            )
            .unwrap();
        }
        age(&home, Duration::from_secs(3600));
        let repo = t.path().join("repo");
        let out = backup_run(&home, &repo, &["--from", harness]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{harness}: {err}");
        assert!(
            err.lines()
                .any(|l| l.starts_with("kept natively: ") && l.contains("release-notes")),
            "{harness}: {err}"
        );
        let fresh = t.path().join("fresh");
        let said = restore_said(&repo, &fresh, harness, &[]);
        for root in [winner, hidden] {
            for f in ["SKILL.md", "scripts/changelog.sh"] {
                let rel = format!("{root}/release-notes/{f}");
                assert_eq!(
                    fs::read(fresh.join(&rel)).ok(),
                    Some(fs::read(home.join(&rel)).unwrap()),
                    "{harness}: {rel}: {said}"
                );
            }
        }
    }
}

/// `asp check` names what needs a damaged layer whatever its kind: a skill's file, as a
/// restore names it, not only sessions and configuration files.
#[test]
fn check_names_the_skill_a_damaged_layer_holds() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let skill = fs::read(home.join(".claude/skills/commit-style/SKILL.md")).unwrap();
    fs::remove_file(layer_holding(&repo, &skill)).unwrap();
    let out = asp().args(["check", "--repo"]).arg(&repo).output().unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("; needed by file SKILL.md of skill commit-style"),
        "{said}"
    );
}

/// A layer gone from the repository is stored again by the next backup even when nothing
/// else changed: the sessions that need it are read again from the source.
#[test]
fn a_missing_layer_is_mended_by_the_next_backup_even_when_nothing_changed() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    fs::remove_file(largest_blob(&repo)).unwrap();
    asp()
        .args(["check", "-q", "--repo"])
        .arg(&repo)
        .assert()
        .code(4);
    let out = backup_run(&home, &repo, &["--from", "claude-code"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("were read again from the source"), "{err}");
    check(&repo, true);
    // And then it is nothing changed again.
    let out = backup_run(&home, &repo, &["--from", "claude-code", "--json", "-q"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v[0]["snapshot"].is_null(), "{v}");
    assert_eq!(v[0]["blobsAdded"], 0, "{v}");
}

/// Bit rot is mended in two steps: `asp check --read-data --repair` moves the damaged layer
/// aside (nothing deleted), and the next backup stores it again from the source.
#[test]
fn a_damaged_layer_moved_aside_is_stored_again_by_the_next_backup() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let (big, bytes) = rot_largest_blob(&repo);
    asp()
        .args(["check", "-q", "--read-data", "--repair", "--repo"])
        .arg(&repo)
        .assert()
        .code(4)
        .stdout(predicate::str::contains("moved aside"));
    let aside = repo.join("damaged").join(big.file_name().unwrap());
    assert_eq!(fs::read(&aside).unwrap(), bytes, "kept, not deleted");
    // Until the next backup, a check says where it went and what stores it again, and does
    // not send the person to `--repair` a second time.
    let out = asp()
        .args(["check", "--read-data", "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(said.matches("problem: ").count(), 1, "{said}");
    assert!(said.contains("moved it into"), "{said}");
    assert!(
        said.contains("the next `asp backup` of the home it came from stores it again"),
        "{said}"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("--repair"), "{err}");
    let out = backup_run(&home, &repo, &["--from", "claude-code"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    check(&repo, true);
    // --repair without --read-data is a usage error: only reading finds bit rot.
    asp()
        .args(["check", "--repair", "--repo"])
        .arg(&repo)
        .assert()
        .code(2);
}

/// The blob of the newest snapshot's first content layer of `media_type`.
fn newest_layer_of(repo: &Path, media_type: &str) -> PathBuf {
    let blob = |d: &Value| {
        repo.join("blobs/sha256")
            .join(&d.as_str().unwrap()["sha256:".len()..])
    };
    let read = |p: PathBuf| -> Value { serde_json::from_slice(&fs::read(p).unwrap()).unwrap() };
    let index = read(repo.join("index.json"));
    let snapshot = read(blob(
        &index["manifests"].as_array().unwrap().last().unwrap()["digest"],
    ));
    let content = read(blob(&snapshot["subject"]["digest"]));
    let layer = content["layers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["mediaType"] == media_type)
        .unwrap_or_else(|| panic!("no {media_type} layer: {content}"));
    blob(&layer["digest"])
}

/// A damaged document every snapshot of a home shares (a part of the state manifest, the
/// same bytes each time) is written again by the next backup, not named as it is: the
/// snapshot that backup makes can be read, and so can the one before it again. Found by a
/// new user's trial: each later backup made a snapshot unreadable from the start.
#[test]
fn a_damaged_shared_document_is_written_again_by_the_next_backup() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let part = newest_layer_of(&repo, "application/vnd.asp.state.manifest.v1+json+zstd");
    let good = fs::read(&part).unwrap();
    rot(&part, 20);
    let out = backup_run(&home, &repo, &["--from", "claude-code", "--json", "-q"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(4),
        "the newest was passed over: {said}"
    );
    let name = part.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        said.contains("mended: claude-code")
            && said.contains(&name)
            && said.contains(
                "held other bytes than its name says (damaged); this backup wrote that document \
                 again, so the snapshots that name it can be read again"
            ),
        "{said}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["mended"][0], format!("sha256:{name}"), "{v}");
    assert_eq!(fs::read(&part).unwrap(), good, "the right bytes, in place");
    // Both snapshots can be read; the next backup is made from the newest, and is clean.
    check(&repo, true);
    let out = backup_run(&home, &repo, &["--from", "claude-code", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // Cut short, the same: written again, and said.
    fs::write(&part, &good[..good.len() / 2]).unwrap();
    let out = backup_run(&home, &repo, &["--from", "claude-code", "--json", "-q"]);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v[0]["mended"][0], format!("sha256:{name}"), "{v}");
    assert_eq!(fs::read(&part).unwrap(), good);
    check(&repo, true);
}

/// `asp check --read-data --repair` moves aside what it finds damaged also where no snapshot
/// that can be read names it (a document of the snapshots it makes unreadable), and a blob
/// cut short, whose size alone says it is damaged; the next backup stores each again.
#[test]
fn check_repair_moves_aside_a_damaged_document_and_a_blob_cut_short() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    // A blob cut short.
    let (big, _) = rot_largest_blob(&repo);
    let whole = fs::metadata(&big).unwrap().len();
    let f = fs::OpenOptions::new().write(true).open(&big).unwrap();
    f.set_len(3000).unwrap();
    drop(f);
    let out = asp()
        .args(["check", "--read-data", "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("has 3000 bytes, not {whole}: it is damaged")),
        "{said}"
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--repair"),
        "{out:?}"
    );
    let repaired = || {
        asp()
            .args(["check", "-q", "--read-data", "--repair", "--repo"])
            .arg(&repo)
            .assert()
            .code(4)
            .stdout(predicate::str::contains("moved aside"));
    };
    repaired();
    assert!(!big.exists());
    assert!(repo.join("damaged").join(big.file_name().unwrap()).exists());
    let out = backup_run(&home, &repo, &["--from", "claude-code", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    check(&repo, true);
    // A damaged document: no snapshot that can be read names it.
    let part = newest_layer_of(&repo, "application/vnd.asp.state.manifest.v1+json+zstd");
    rot(&part, 20);
    let out = asp()
        .args(["check", "--read-data", "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("holds other bytes than its name says: it is damaged"),
        "{said}"
    );
    repaired();
    assert!(!part.exists());
    assert!(
        repo.join("damaged")
            .join(part.file_name().unwrap())
            .exists()
    );
    let out = backup_run(&home, &repo, &["--from", "claude-code", "-q"]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "the newest was passed over: {out:?}"
    );
    check(&repo, true);
}

/// A backup that stores again a layer the repository lost says so also when something else
/// changed and it makes a snapshot: on its summary line, `-q` or not, and in `--json`
/// (`layersStoredAgain`). Before, only a backup with nothing else to do said it.
#[test]
fn a_lost_layer_stored_again_is_said_beside_other_changes() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    rot_largest_blob(&repo);
    asp()
        .args(["check", "-q", "--read-data", "--repair", "--repo"])
        .arg(&repo)
        .assert()
        .code(4);
    fs::write(home.join(".claude/CLAUDE.md"), "# Mine\n\nA new rule.\n").unwrap();
    let out = backup_run(&home, &repo, &["--from", "claude-code", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("snapshot ")
            && said.contains("(1 layer the repository had lost stored again)"),
        "{said}"
    );
    check(&repo, true);
    rot_largest_blob(&repo);
    asp()
        .args(["check", "-q", "--read-data", "--repair", "--repo"])
        .arg(&repo)
        .assert()
        .code(4);
    fs::write(home.join(".claude/CLAUDE.md"), "# Mine\n\nAnother rule.\n").unwrap();
    let v = backup(&home, &repo);
    assert_eq!(v["layersStoredAgain"], 1, "{v}");
    assert!(v["snapshot"].is_object(), "{v}");
}

/// The empty config every manifest names, damaged and moved aside, is written again by the
/// next backup even when nothing changed: its two bytes are known, and nothing else would
/// store it.
#[test]
fn the_empty_config_moved_aside_is_written_again_by_the_next_backup() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let empty = repo
        .join("blobs/sha256")
        .join("44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
    fs::write(&empty, b"{ ").unwrap();
    asp()
        .args(["check", "-q", "--read-data", "--repair", "--repo"])
        .arg(&repo)
        .assert()
        .code(4)
        .stdout(predicate::str::contains("moved aside"));
    assert!(!empty.exists());
    let out = backup_run(&home, &repo, &["--from", "claude-code", "--json", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v[0]["snapshot"].is_null(), "nothing changed: {v}");
    assert_eq!(fs::read(&empty).unwrap(), b"{}");
    check(&repo, true);
}

/// A layer that only a session gone from the source needs cannot be stored again. Backups
/// go on (what changed elsewhere is kept), carry that session as it is and name it as lost,
/// exit 3, on every run, until `asp forget --session` lets it go.
#[test]
fn a_lost_layer_of_a_gone_session_does_not_stop_later_backups() {
    let t = tmp();
    let (home, repo, original, _) = with_a_gone(&t);
    fs::remove_file(layer_holding(&repo, &original)).unwrap();
    let file = home.join(GATEWAY).join(format!("{C}.jsonl"));
    let grown = append_turn(&file, 7);
    // `asp check` says whose the blob was.
    let out = asp().args(["check", "--repo"]).arg(&repo).output().unwrap();
    assert_eq!(out.status.code(), Some(4));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("needed by session {A} (snapshots ")),
        "{said}"
    );

    let out = backup_run(&home, &repo, &["--from", "claude-code", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let said = format!("session {A} (gone from the source since");
    assert!(err.contains(&said), "{err}");
    assert!(!err.contains("read again from the source"), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(!v[0]["snapshot"].is_null(), "the backup went on: {v}");
    assert_eq!(counts(&v[0]), [0, 1, 3, 1], "{v}");
    assert_eq!(v[0]["layersLost"], 1, "{v}");
    assert_eq!(v[0]["lost"].as_array().unwrap().len(), 1, "{v}");
    let fresh = t.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    restore(&repo, &fresh, &["--session", C]);
    let back = fs::read(fresh.join(GATEWAY).join(format!("{C}.jsonl"))).unwrap();
    assert_eq!(back, grown.as_bytes(), "the new turn is kept");

    // A whole restore gives back every other session.
    let all = t.path().join("all");
    let out = restore_json(&repo, &all);
    assert_eq!(out.status.code(), Some(4), "{out:?}");
    assert!(!all.join(SHOP).join(format!("{A}.jsonl")).exists());
    let back = fs::read(all.join(GATEWAY).join(format!("{C}.jsonl"))).unwrap();
    assert_eq!(back, grown.as_bytes());

    // Nothing changed: still said, still exit 3, no snapshot.
    let out = backup_run(&home, &repo, &["--from", "claude-code", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    assert!(err.contains(&said), "{err}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v[0]["snapshot"].is_null(), "{v}");
    assert_eq!(v[0]["blobsAdded"], 0, "{v}");

    asp()
        .args(["forget", "-q", "--session", A, "--repo"])
        .arg(&repo)
        .assert()
        .success();
    let out = backup_run(&home, &repo, &["--from", "claude-code", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(out.stderr.is_empty(), "{out:?}");
}

/// A damaged rewind checkpoint leaves out that file alone: its session (transcript, todo
/// list, the other checkpoint) is restored, and the checkpoint is named as lost.
#[test]
fn a_damaged_checkpoint_leaves_out_only_itself() {
    let (t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let checkpoints = format!(".claude/file-history/{A}");
    let v1 = fs::read(home.join(&checkpoints).join("b5276ea0bd7f01a0@v1")).unwrap();
    let layer = layer_holding(&repo, &v1);
    rot(&layer, -1);

    let fresh = t.path().join("fresh");
    let out = restore_json(&repo, &fresh);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert_eq!(transcript(&fresh, A), transcript(&home, A), "{err}");
    assert!(
        !fresh
            .join(&checkpoints)
            .join("b5276ea0bd7f01a0@v1")
            .exists()
    );
    assert_eq!(
        fs::read(fresh.join(&checkpoints).join("b5276ea0bd7f01a0@v2")).unwrap(),
        fs::read(home.join(&checkpoints).join("b5276ea0bd7f01a0@v2")).unwrap()
    );
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let lost = reasons_not_taken(&answer);
    assert_eq!(lost.len(), 1, "{lost:?}");
    assert!(lost[0].contains("b5276ea0bd7f01a0@v1"), "{lost:?}");
    assert_eq!(answer["sessions"][A], A);
}

/// A damaged subagent transcript leaves out its session and the subagent's (restored without
/// it, the parent would lose a file its conversation needs, and the subagent would come back
/// as a session of its own); every other session is restored.
#[test]
fn a_damaged_subagent_transcript_leaves_out_its_session_and_subagent() {
    let (t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let (parent, agent) = (
        "12821015-852a-451b-911f-ba64553fbf57",
        "agent-a44a1a1a1ce6520e9",
    );
    let sub = fs::read(
        home.join(SHOP)
            .join(parent)
            .join(format!("subagents/{agent}.jsonl")),
    )
    .unwrap();
    let layer = layer_holding(&repo, &sub);
    rot(&layer, -1);
    let fresh = t.path().join("fresh");
    let out = restore_json(&repo, &fresh);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let lost = reasons_not_taken(&answer);
    assert_eq!(lost.len(), 2, "{lost:?}");
    for id in [parent, agent] {
        assert!(lost.iter().any(|l| l.contains(id)), "{id}: {lost:?}");
    }
    assert!(!fresh.join(SHOP).join(format!("{parent}.jsonl")).exists());
    assert!(!fresh.join(SHOP).join(format!("{agent}.jsonl")).exists());
    assert_eq!(transcript(&fresh, A), transcript(&home, A));
    assert!(fresh.join(GATEWAY).join(format!("{C}.jsonl")).is_file());
}

/// A home with `n` more copies of session A under new ids: enough work for a backup to be
/// killed in the middle of.
fn big_home(dir: &Path, n: usize) -> PathBuf {
    let home = home_in(dir);
    let text = fs::read_to_string(home.join(SHOP).join(format!("{A}.jsonl"))).unwrap();
    for i in 0..n {
        let id = format!("{:08x}-0000-4000-8000-{:012x}", i + 1, i + 1);
        let copy = text
            .replace(A, &id)
            .replace("coupon", &format!("coupon {i}"));
        fs::write(home.join(SHOP).join(format!("{id}.jsonl")), copy).unwrap();
    }
    age(&home, Duration::from_secs(3600));
    home
}

#[test]
fn a_backup_killed_at_any_point_leaves_a_repository_that_checks_and_restores() {
    let t = tmp();
    let home = big_home(t.path(), 120);
    let repo = t.path().join("repo");
    let first = backup(&home, &repo);
    let first_id = first["snapshot"]["digest"].as_str().unwrap()[7..19].to_owned();
    // Change every session, so the next backup has everything to write.
    for f in files_under(&home.join(SHOP)) {
        if f.extension().is_some_and(|e| e == "jsonl") {
            let mut b = fs::read(&f).unwrap();
            b.extend_from_slice(&b.clone()[..b.iter().position(|c| *c == b'\n').unwrap() + 1]);
            fs::write(&f, b).unwrap();
        }
    }
    age(&home, Duration::from_secs(3000));
    let started = std::time::Instant::now();
    let whole = backup(&home, &repo.join("../probe"));
    let full = started.elapsed();
    assert!(whole["snapshot"].is_object());
    let bin = assert_cmd::cargo::cargo_bin!("asp");
    // Kill points spread over the whole run, and a few right at the start.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    for k in 0..8u32 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let at = if k < 2 {
            Duration::from_millis(u64::from(k) * 3)
        } else {
            full.mul_f64((seed % 1000) as f64 / 1000.0)
        };
        let mut child = std::process::Command::new(bin)
            .args(["backup", "--from", "claude-code", "-q", "--home"])
            .arg(&home)
            .arg("--repo")
            .arg(&repo)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(at);
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        check(&repo, false);
        let fresh = t.path().join(format!("fresh{k}"));
        fs::create_dir_all(&fresh).unwrap();
        restore(&repo, &fresh, &["--snapshot", &first_id, "--session", A]);
        assert_eq!(
            transcript(&fresh, A),
            transcript(&samples().join("claude-code"), A)
        );
    }
    // A backup after the kills completes, and everything checks.
    let last = backup(&home, &repo);
    assert!(
        last["snapshot"].is_object() || last["snapshot"].is_null(),
        "{last}"
    );
    check(&repo, true);
}

/// What a killed backup leaves (its staging folder, a blob being written) is counted by
/// `asp check`, as what `asp prune` then removes, not passed over in silence.
#[test]
fn check_counts_the_leftovers_prune_removes() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    fs::create_dir_all(repo.join(".aspstate-layers-Ab12Cd")).unwrap();
    fs::write(
        repo.join("blobs/sha256/.asp-Ef34Gh.partial"),
        b"half a layer",
    )
    .unwrap();
    let count = || -> Value {
        let out = asp()
            .args(["check", "--json", "-q", "--repo"])
            .arg(&repo)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        serde_json::from_slice(&out.stdout).unwrap()
    };
    assert_eq!(count()["leftovers"], 2);
    let out = asp().args(["check", "--repo"]).arg(&repo).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(
            "2 leftovers of interrupted writes or of a backup running now (`asp prune` removes \
             them once none runs)"
        ),
        "{said}"
    );
    let out = asp()
        .args(["prune", "--json", "-q", "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    let pruned: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(pruned["removedLeftovers"], 2, "{pruned}");
    assert_eq!(count()["leftovers"], 0);
}

#[test]
fn two_backups_at_once_both_succeed() {
    let t = tmp();
    let home = big_home(t.path(), 30);
    let repo = t.path().join("repo");
    let run = || {
        let home = home.clone();
        let repo = repo.clone();
        std::thread::spawn(move || backup(&home, &repo))
    };
    let (a, b) = (run(), run());
    let (a, b) = (a.join().unwrap(), b.join().unwrap());
    assert!(a["snapshot"].is_object() || b["snapshot"].is_object());
    check(&repo, true);
}

/// A transcript rewritten in place, its size and mtime as before (a tool that keeps times,
/// `touch -r`), is read again: its status change time moved (new-user trial helper-124, 5:
/// "nothing changed" on every run, and the backup kept the old text). `--force` reads every
/// session whatever its files say.
#[test]
#[cfg(unix)]
fn a_file_rewritten_with_its_times_put_back_is_read_again_and_force_reads_all() {
    let (_t, home, repo) = home_and_repo();
    let first = backup(&home, &repo);
    let file = home.join(SHOP).join(format!("{A}.jsonl"));
    rewrite_keeping_mtime(&file, b"text", b"TEXT");
    let v = backup(&home, &repo);
    assert_eq!(v["changedSessions"], json!([A]), "{v}");
    assert_eq!(v["sessionsRead"], 1, "{v}");

    let unchanged = backup(&home, &repo);
    assert!(unchanged["snapshot"].is_null(), "{unchanged}");
    assert_eq!(unchanged["sessionsRead"], 0, "{unchanged}");

    // Its mode changed, not what it holds: read again once, and a snapshot is made for the
    // records, so the backups after it do not read it again and again (review helper-125, 1).
    use std::os::unix::fs::PermissionsExt as _;
    let mode = fs::metadata(&file).unwrap().permissions().mode();
    fs::set_permissions(&file, fs::Permissions::from_mode(mode ^ 0o040)).unwrap();
    let chmodded = backup(&home, &repo);
    assert_eq!(chmodded["sessionsRead"], 1, "{chmodded}");
    assert_eq!(chmodded["recordsChanged"], true, "{chmodded}");
    assert_eq!(chmodded["changed"], 0, "{chmodded}");
    assert!(!chmodded["snapshot"].is_null(), "{chmodded}");
    let after = backup(&home, &repo);
    assert!(after["snapshot"].is_null(), "{after}");
    assert_eq!(after["sessionsRead"], 0, "{after}");
    let out = backup_run(
        &home,
        &repo,
        &["--from", "claude-code", "--reread", "--json", "-q"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let forced: Value = serde_json::from_slice(&out.stdout).unwrap();
    let forced = &forced[0];
    assert!(forced["snapshot"].is_null(), "nothing changed: {forced}");
    assert_eq!(forced["sessionsRead"], first["new"], "{forced}");
}

#[test]
fn forget_and_prune_free_space_and_keep_every_session() {
    let (t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let original = transcript(&home, A);
    fs::remove_file(home.join(SHOP).join(format!("{A}.jsonl"))).unwrap();
    let file = home.join(GATEWAY).join(format!("{C}.jsonl"));
    let mut text = fs::read(&file).unwrap();
    text.extend_from_slice(&text.clone()[..text.iter().position(|c| *c == b'\n').unwrap() + 1]);
    fs::write(&file, &text).unwrap();
    set_mtime(&file, Duration::from_secs(3000));
    backup(&home, &repo);
    let blobs = blob_count(&repo);

    asp()
        .args(["forget", "--keep-last", "1", "--repo"])
        .arg(&repo)
        .assert()
        .success();
    let prune = |args: &[&str]| -> Value {
        let out = asp()
            .args(["prune", "--json", "--repo"])
            .arg(&repo)
            .args(args)
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap()
    };
    // A dry run says it is one, with the counts the prune then gives.
    let would = prune(&["--dry-run"]);
    assert_eq!(would["dryRun"], true, "{would}");
    assert_eq!(blob_count(&repo), blobs, "nothing removed");
    let pruned = prune(&[]);
    assert_eq!(pruned["dryRun"], false, "{pruned}");
    assert!(pruned["removedBlobs"].as_u64().unwrap() > 0, "{pruned}");
    assert_eq!(pruned["removedBlobs"], would["removedBlobs"]);
    assert!(blob_count(&repo) < blobs);
    check(&repo, true);
    // The gone session survived the policy: it is in the newest snapshot.
    let fresh = t.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    restore(&repo, &fresh, &["--session", A]);
    assert_eq!(transcript(&fresh, A), original);

    // Only naming it lets it go.
    asp()
        .args(["forget", "--gone-before", "2999-01-01", "--repo"])
        .arg(&repo)
        .assert()
        .success();
    // Let go from the newest, it is still in an older snapshot, which the usage error names
    // ready to use.
    let out = asp()
        .args(["restore", "--session", A, "--to", "claude-code", "--home"])
        .arg(&fresh)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    let hint = said
        .split("asp restore --snapshot ")
        .nth(1)
        .unwrap_or_else(|| panic!("{said}"));
    let older = hint.split_whitespace().next().unwrap();
    let again = t.path().join("again");
    fs::create_dir_all(&again).unwrap();
    restore(&repo, &again, &["--snapshot", older, "--session", A]);
    assert_eq!(transcript(&again, A), original);
    asp()
        .args(["forget", "--keep-last", "1", "--repo"])
        .arg(&repo)
        .assert()
        .success();
    asp()
        .args(["prune", "-q", "--repo"])
        .arg(&repo)
        .assert()
        .success();
    check(&repo, true);
    let listed = sessions_in(&repo);
    assert_eq!(listed.len(), 4);
    assert!(listed.iter().all(|r| r["id"] != A));
    // And no snapshot is held back for it: the owner let it go (new-user trial helper-124, 4:
    // the one before the forget was kept for good, and A with it).
    let (code, out, err) = snapshots_listed(&repo);
    assert_eq!(code, Some(0), "{err}");
    let snapshots: Vec<Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(snapshots.len(), 1, "{out}");
    assert_eq!(snapshots[0]["dropped"], json!([A]), "{out}");

    // A session no newest snapshot holds (a typo, or one already let go) is a usage error
    // that changes nothing, even beside one that exists.
    let snapshots = fs::read(repo.join("index.json")).unwrap();
    asp()
        .args(["forget", "--session", "deadbeef", "--session", C, "--repo"])
        .arg(&repo)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("deadbeef"));
    assert_eq!(fs::read(repo.join("index.json")).unwrap(), snapshots);
}

#[test]
fn prune_while_a_backup_runs_removes_nothing_it_needs() {
    let t = tmp();
    let home = big_home(t.path(), 60);
    let repo = t.path().join("repo");
    backup(&home, &repo);
    for f in files_under(&home.join(SHOP)) {
        if f.extension().is_some_and(|e| e == "jsonl") {
            let mut b = fs::read(&f).unwrap();
            b.extend_from_slice(&b.clone()[..b.iter().position(|c| *c == b'\n').unwrap() + 1]);
            fs::write(&f, b).unwrap();
        }
    }
    age(&home, Duration::from_secs(3000));
    let running = {
        let (home, repo) = (home.clone(), repo.clone());
        std::thread::spawn(move || backup(&home, &repo))
    };
    for _ in 0..5 {
        asp()
            .args(["prune", "-q", "--repo"])
            .arg(&repo)
            .assert()
            .success();
        std::thread::sleep(Duration::from_millis(20));
    }
    let o = running.join().unwrap();
    assert!(o["snapshot"].is_object(), "{o}");
    asp()
        .args(["prune", "-q", "--repo"])
        .arg(&repo)
        .assert()
        .success();
    check(&repo, true);
}

/// Stores `bytes` as a blob of the OCI image layout at `layout`, as any OCI tool does; its
/// descriptor (`mediaType`, `digest`, `size`).
fn oci_blob(layout: &Path, media_type: &str, bytes: &[u8]) -> Value {
    let hex = sha256_hex(bytes);
    let dir = layout.join("blobs/sha256");
    fs::create_dir_all(&dir).unwrap();
    fs::write(dir.join(&hex), bytes).unwrap();
    json!({"mediaType": media_type, "digest": format!("sha256:{hex}"), "size": bytes.len()})
}

/// An image of another tool, as `skopeo copy` or `docker save --format oci` write it into a
/// layout: a config and a layer under an image manifest; its manifest's descriptor.
fn oci_image(layout: &Path, name: &str) -> Value {
    let config = oci_blob(
        layout,
        "application/vnd.oci.image.config.v1+json",
        format!(r#"{{"architecture":"amd64","os":"linux","name":"{name}"}}"#).as_bytes(),
    );
    let layer = oci_blob(
        layout,
        "application/vnd.oci.image.layer.v1.tar+gzip",
        format!("the layer of {name}").as_bytes(),
    );
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": config,
        "layers": [layer],
    });
    oci_blob(
        layout,
        "application/vnd.oci.image.manifest.v1+json",
        &serde_json::to_vec(&manifest).unwrap(),
    )
}

/// `index.json` of the layout at `layout` with `entry` added to its manifests.
fn oci_index_add(layout: &Path, entry: Value) {
    let path = layout.join("index.json");
    let mut index: Value = match fs::read(&path) {
        Ok(b) => serde_json::from_slice(&b).unwrap(),
        Err(_) => json!({"schemaVersion": 2, "manifests": []}),
    };
    index["manifests"].as_array_mut().unwrap().push(entry);
    fs::write(&path, serde_json::to_vec(&index).unwrap()).unwrap();
}

/// Another tool's OCI image layout at `layout`: `myimage:1` (a manifest, its config and
/// layer), and `multi:1`, an image index naming one platform's image the layout holds and one
/// it does not (a partial copy of a multi-platform image).
fn foreign_layout(layout: &Path) {
    fs::create_dir_all(layout).unwrap();
    fs::write(
        layout.join("oci-layout"),
        r#"{"imageLayoutVersion":"1.0.0"}"#,
    )
    .unwrap();
    let mut mine = oci_image(layout, "myimage");
    mine["annotations"] = json!({"org.opencontainers.image.ref.name": "myimage:1"});
    oci_index_add(layout, mine);
    let held = oci_image(layout, "multi-amd64");
    let absent = json!({
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "digest": format!("sha256:{}", sha256_hex(b"not copied")),
        "size": 10,
    });
    let index = json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [held, absent],
    });
    let mut multi = oci_blob(
        layout,
        "application/vnd.oci.image.index.v1+json",
        &serde_json::to_vec(&index).unwrap(),
    );
    multi["annotations"] = json!({"org.opencontainers.image.ref.name": "multi:1"});
    oci_index_add(layout, multi);
}

/// Another tool's OCI image layout is not a repository: `asp backup` refuses to make one in it,
/// `asp check` counts every blob its index reaches (an image manifest's config and layers, a
/// nested index's manifests and theirs) as that index's, and the commands that write (prune,
/// forget, check --repair) refuse it too. Nothing is made in it, not even `locks/`, which tells
/// an asp repository from another tool's layout. Found by a new user's trial: check called the
/// image's blobs unreferenced, backup took the layout, and prune deleted them; then check made
/// `locks/`, which would have passed the layout for a repository.
#[test]
fn another_tools_image_layout_is_never_pruned_nor_taken_for_a_repository() {
    let (t, home, _) = home_and_repo();
    let oci = t.path().join("oci");
    foreign_layout(&oci);
    let image = files_in(&oci);
    assert_eq!(files_under(&oci.join("blobs/sha256")).len(), 7);

    let out = asp().args(["check", "--repo"]).arg(&oci).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{out:?}");
    assert!(
        said.contains("0 unreferenced")
            && said.contains("7 blobs of 2 index entries that are not asp snapshots"),
        "{said}"
    );

    let out = backup_run(&home, &oci, &["--from", "claude-code", "-q"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("an OCI image layout of another tool")
            && said.contains("myimage:1")
            && said.contains("no asp snapshot"),
        "{said}"
    );

    for args in [
        &["prune"][..],
        &["prune", "--dry-run"],
        &["forget", "--keep-last", "1"],
        &["check", "--read-data", "--repair"],
        &["check", "--rebuild-index"],
    ] {
        let out = asp().args(args).arg("--repo").arg(&oci).output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {said}");
        assert!(
            said.contains("an OCI image layout of another tool")
                && said.contains("writes nothing into it"),
            "{args:?}: {said}"
        );
    }
    // Checked again after all that, it is still no repository to a backup.
    let out = asp().args(["check", "--repo"]).arg(&oci).output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = backup_run(&home, &oci, &["--from", "claude-code", "-q"]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert_eq!(files_in(&oci), image, "the layout is as its tool left it");
    assert!(!oci.join("locks").exists(), "no locks/ was made");
}

/// A layout of asp state artifacts (what `asp pull --layout` writes) is not a repository
/// either, but it is not another tool's: the refusal says what it is and what reads it.
#[test]
fn a_layout_of_asp_state_is_not_called_another_tools() {
    let (t, home, _) = home_and_repo();
    let state = t.path().join("state");
    crate::registry_cli::make_layout(&state, &[b"a state's layer".to_vec()], "laptop");
    let out = backup_run(&home, &state, &["--from", "claude-code", "-q"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("an OCI image layout of asp state artifacts")
            && said.contains("asp push --layout")
            && said.contains("laptop")
            && !said.contains("another tool"),
        "{said}"
    );
}

/// An asp repository whose snapshots were all forgotten and pruned, beside an image put into
/// it by hand, is still asp's: its `locks/` folder tells it from another tool's layout, and the
/// next backup goes into it (it was refused as another tool's).
#[test]
fn a_repository_whose_snapshots_were_all_forgotten_beside_an_image_is_still_asps() {
    let (_t, home, repo) = home_and_repo();
    let first = backup(&home, &repo);
    let mut mine = oci_image(&repo, "myimage");
    mine["annotations"] = json!({"org.opencontainers.image.ref.name": "myimage:1"});
    oci_index_add(&repo, mine);
    let id = &first["snapshot"]["digest"].as_str().unwrap()[7..19];
    for args in [&["forget", "--snapshot", id][..], &["prune"]] {
        let out = asp().args(args).arg("--repo").arg(&repo).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
    }
    assert!(repo.join("locks").is_dir());
    let out = asp().args(["check", "--repo"]).arg(&repo).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("checked 0 snapshots"), "{said}");

    let again = backup(&home, &repo);
    assert_ne!(again["snapshot"]["digest"], first["snapshot"]["digest"]);
    check(&repo, true);

    // Without its locks/ (copied without it), it is taken for another tool's layout, and the
    // refusal says how to make it one again.
    let out = asp()
        .args(["forget", "--snapshot"])
        .arg(&again["snapshot"]["digest"].as_str().unwrap()[7..19])
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let copy = repo.with_file_name("copy");
    copy_tree(&repo, &copy);
    fs::remove_dir_all(copy.join("locks")).unwrap();
    let out = backup_run(&home, &copy, &["--from", "claude-code", "-q"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("mkdir"), "{said}");
    fs::create_dir(copy.join("locks")).unwrap();
    let out = backup_run(&home, &copy, &["--from", "claude-code", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// An image put by hand into an asp repository stays through forget and prune, beside
/// the snapshots, while what nothing names goes; a manifest of such an image that cannot be
/// read stops the prune (what it needs cannot be told) and is a problem to `asp check`.
#[test]
fn an_image_put_into_a_repository_by_hand_stays_through_prune() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let mut mine = oci_image(&repo, "myimage");
    mine["annotations"] = json!({"org.opencontainers.image.ref.name": "myimage:1"});
    let manifest = repo
        .join("blobs/sha256")
        .join(&mine["digest"].as_str().unwrap()["sha256:".len()..]);
    oci_index_add(&repo, mine);
    let junk = oci_blob(&repo, "", b"a blob nothing names");
    let junk = repo
        .join("blobs/sha256")
        .join(&junk["digest"].as_str().unwrap()["sha256:".len()..]);
    fs::write(home.join(".claude/CLAUDE.md"), "# Mine\n\nOne more rule.\n").unwrap();
    backup(&home, &repo);

    let out = asp().args(["prune", "--repo"]).arg(&repo).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(
        said.contains("removed 1 unreferenced blob")
            && said.contains("and 1 index entry that is not an asp snapshot kept"),
        "{said}"
    );
    assert!(manifest.exists() && !junk.exists());
    check(&repo, true);

    // Damaged, it names what cannot be known: nothing is deleted.
    rot(&manifest, 10);
    oci_blob(&repo, "", b"another blob nothing names");
    let before = blob_count(&repo);
    let out = asp().args(["prune", "--repo"]).arg(&repo).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(
        said.contains("myimage:1") && said.contains("nothing is deleted"),
        "{said}"
    );
    assert_eq!(blob_count(&repo), before);
    let out = asp().args(["check", "--repo"]).arg(&repo).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(
        said.contains("problem: index.json's entry myimage:1"),
        "{said}"
    );
}

/// What another tool wrote into `index.json` comes out of asp's rewrites of it as it went in:
/// an entry's `platform` and members asp does not know, and the index's own. The index was
/// read through asp's descriptor type, which dropped them (a multi-platform image's entries
/// lost what told them apart).
#[test]
fn another_tools_index_entries_keep_every_member_through_backup_forget_and_prune() {
    let (_t, home, repo) = home_and_repo();
    let first = backup(&home, &repo);
    let mut mine = oci_image(&repo, "myimage");
    mine["annotations"] = json!({"org.opencontainers.image.ref.name": "myimage:1"});
    mine["platform"] = json!({"architecture": "arm64", "os": "linux", "variant": "v8"});
    mine["io.example.future"] = json!({"kept": [1, 2, 3]});
    oci_index_add(&repo, mine.clone());
    let path = repo.join("index.json");
    let mut index: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    index["io.example.indexMember"] = json!("kept too");
    fs::write(&path, serde_json::to_vec(&index).unwrap()).unwrap();

    fs::write(home.join(".claude/CLAUDE.md"), "# Mine\n\nOne more rule.\n").unwrap();
    backup(&home, &repo);
    let id = &first["snapshot"]["digest"].as_str().unwrap()[7..19];
    for args in [&["forget", "--snapshot", id][..], &["prune"]] {
        let out = asp().args(args).arg("--repo").arg(&repo).output().unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
    }
    let index: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(index["io.example.indexMember"], "kept too", "{index}");
    let theirs: Vec<&Value> = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["digest"] == mine["digest"])
        .collect();
    assert_eq!(theirs, [&mine], "{index}");
    check(&repo, true);
}

/// An entry of `index.json` without a media type (the spec reads one "with or without a
/// `mediaType`") is another tool's image like any other: every command reads the index, the
/// entry stays as it came through a backup and a prune, and so do its blobs. An index that
/// cannot be read whole is rebuilt with what can be read of it, entry by entry, and the
/// rebuild says what it could not list. Review helper-133, 1: such an entry made the index
/// unreadable, the rebuild the error advised dropped every other tool's entry, and the next
/// prune deleted their blobs.
#[test]
fn an_index_entry_without_a_media_type_and_its_blobs_stay() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let mut mine = oci_image(&repo, "myimage");
    mine["annotations"] = json!({"org.opencontainers.image.ref.name": "myimage:1"});
    mine.as_object_mut().unwrap().remove("mediaType");
    let manifest = repo
        .join("blobs/sha256")
        .join(&mine["digest"].as_str().unwrap()["sha256:".len()..]);
    oci_index_add(&repo, mine.clone());
    fs::write(home.join(".claude/CLAUDE.md"), "# Mine\n\nOne more rule.\n").unwrap();
    backup(&home, &repo);
    let listed = |repo: &Path| -> Vec<Value> {
        let index: Value =
            serde_json::from_slice(&fs::read(repo.join("index.json")).unwrap()).unwrap();
        index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["digest"] == mine["digest"])
            .cloned()
            .collect()
    };
    assert_eq!(listed(&repo), [mine.clone()]);
    asp()
        .args(["prune", "-q", "--repo"])
        .arg(&repo)
        .assert()
        .success();
    assert!(manifest.exists());
    check(&repo, true);

    // Damaged: an entry that is no descriptor beside it. The rebuild keeps the image's.
    oci_index_add(&repo, json!({"digest": 5}));
    let out = asp()
        .args(["check", "--rebuild-index", "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains("could not be read whole (1 entry could not be read;"),
        "{said}"
    );
    assert_eq!(listed(&repo), [mine.clone()]);
    asp()
        .args(["prune", "-q", "--repo"])
        .arg(&repo)
        .assert()
        .success();
    assert!(manifest.exists());
    check(&repo, true);
}

/// A descriptor without a media type within another tool's manifest is read as a manifest only
/// when it can be: a layer of 5 MiB that is not JSON, a config that is not JSON, and a blob
/// naming itself (its bytes cannot match its name) are blobs of their own, kept and not
/// followed; they were said to be manifests that cannot be read, and every prune stopped. A
/// typed manifest that cannot be read still stops the prune. A referrer keeps another tool's
/// subject, not asp's: a snapshot a referrer was attached to is pruned once forgotten.
#[test]
fn another_tools_untyped_blobs_are_kept_and_a_referrer_keeps_no_forgotten_snapshot() {
    const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
    const INDEX: &str = "application/vnd.oci.image.index.v1+json";
    let (_t, home, repo) = home_and_repo();
    let first = backup(&home, &repo);
    fs::write(home.join(".claude/CLAUDE.md"), "# Mine\n\nOne more rule.\n").unwrap();
    backup(&home, &repo);
    let path_of = |d: &Value| {
        repo.join("blobs/sha256")
            .join(&d["digest"].as_str().unwrap()["sha256:".len()..])
    };
    let untyped = |mut d: Value| {
        d.as_object_mut().unwrap().remove("mediaType");
        d
    };
    let doc = |v: Value| serde_json::to_vec(&v).unwrap();
    // A blob of the name `hex` that names itself, with `media_type` or none.
    let names_itself = |what: &str, media_type: Option<&str>| {
        let hex = sha256_hex(what.as_bytes());
        let mut me = json!({"digest": format!("sha256:{hex}"), "size": 1});
        if let Some(t) = media_type {
            me["mediaType"] = json!(t);
        }
        let bytes = doc(json!({"schemaVersion": 2, "mediaType": INDEX, "manifests": [me]}));
        fs::write(repo.join("blobs/sha256").join(&hex), &bytes).unwrap();
        me["size"] = json!(bytes.len());
        me
    };

    let big: Vec<u8> = (0..5u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    assert!(serde_json::from_slice::<Value>(&big).is_err());
    let layer = untyped(oci_blob(&repo, "", &big));
    let config = untyped(oci_blob(&repo, "", b"not JSON"));
    let image = oci_blob(
        &repo,
        MANIFEST,
        &doc(
            json!({"schemaVersion": 2, "mediaType": MANIFEST, "config": config,
            "layers": [layer]}),
        ),
    );
    let itself = untyped(names_itself("an untyped index naming itself", None));
    let mut untyped_index = oci_blob(
        &repo,
        INDEX,
        &doc(json!({"schemaVersion": 2, "mediaType": INDEX,
            "manifests": [image, itself]})),
    );
    untyped_index["annotations"] = json!({"org.opencontainers.image.ref.name": "untyped:1"});
    oci_index_add(&repo, untyped_index);

    // A referrer of the first snapshot, and one of an image of another tool's that the index
    // does not list (a signature put in with its image).
    let s1 = first["snapshot"]["digest"].as_str().unwrap();
    let s1_path = repo.join("blobs/sha256").join(&s1["sha256:".len()..]);
    let s1_desc = json!({"mediaType": MANIFEST, "digest": s1,
        "size": fs::metadata(&s1_path).unwrap().len()});
    let unlisted = oci_image(&repo, "unlisted");
    let empty = oci_blob(&repo, "application/vnd.oci.empty.v1+json", b"{}");
    let mut listed = Vec::new();
    for (name, subject) in [("on-asp", &s1_desc), ("on-unlisted", &unlisted)] {
        let signature = oci_blob(&repo, "application/vnd.example.signature", name.as_bytes());
        let mut referrer = oci_blob(
            &repo,
            MANIFEST,
            &doc(json!({"schemaVersion": 2, "mediaType": MANIFEST,
                "artifactType": "application/vnd.example.signature", "config": empty,
                "layers": [signature], "subject": subject})),
        );
        referrer["annotations"] = json!({"org.opencontainers.image.ref.name": name});
        listed.push(path_of(&referrer));
        oci_index_add(&repo, referrer);
    }
    let kept = [
        path_of(&layer),
        path_of(&config),
        path_of(&itself),
        path_of(&unlisted),
        listed[0].clone(),
        listed[1].clone(),
    ];

    let out = asp().args(["check", "--repo"]).arg(&repo).output().unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("0 unreferenced"), "{said}");
    let out = asp()
        .args(["prune", "--json", "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let pruned: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(pruned["removedBlobs"], 0, "{pruned}");
    assert_eq!(pruned["otherEntries"], 3, "{pruned}");

    // Forgotten, the first snapshot goes, though a referrer names it; the referrer stays.
    let out = asp()
        .args(["forget", "--snapshot", &s1[7..19], "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let out = asp()
        .args(["prune", "--json", "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let pruned: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(pruned["removedBlobs"].as_u64().unwrap() >= 1, "{pruned}");
    assert!(
        !s1_path.exists(),
        "the forgotten snapshot's manifest is pruned"
    );
    for p in &kept {
        assert!(p.exists(), "{} is kept", p.display());
    }
    check(&repo, true);

    // A typed index naming itself (its bytes cannot match its name) cannot be read: the
    // prune stops, and the walk ends.
    let itself = names_itself("a typed index naming itself", Some(INDEX));
    let mut typed = oci_blob(
        &repo,
        INDEX,
        &doc(json!({"schemaVersion": 2, "mediaType": INDEX, "manifests": [itself]})),
    );
    typed["annotations"] = json!({"org.opencontainers.image.ref.name": "typed:1"});
    oci_index_add(&repo, typed);
    let out = asp().args(["prune", "--repo"]).arg(&repo).output().unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(
        said.contains("typed:1") && said.contains("nothing is deleted"),
        "{said}"
    );
}

/// Makes every file under `dir` read-only for everybody (0444, folders 0555: readable by any
/// user, writable by none but one who passes permission checks), or, with `writable`, gives
/// the owner write access back.
fn read_only_tree(dir: &Path, writable: bool) {
    use std::os::unix::fs::PermissionsExt;
    for e in walkdir::WalkDir::new(dir).contents_first(writable) {
        let e = e.unwrap();
        let mode = match (e.file_type().is_dir(), writable) {
            (true, false) => 0o555,
            (false, false) => 0o444,
            (true, true) => 0o755,
            (false, true) => 0o644,
        };
        fs::set_permissions(e.path(), fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// Gives `dir` write access back when dropped, so a failed test's scratch folder can still be
/// removed.
struct WritableAgain<'a>(&'a Path);

impl Drop for WritableAgain<'_> {
    fn drop(&mut self) {
        read_only_tree(self.0, true);
    }
}

/// A repository is read from where it cannot be written: restore, check, sessions and pack
/// take their shared lock through a read-only handle of the lock file (flock needs no write
/// access) and work; with no lock file there and none makeable, they read without a lock and
/// say so; backup and prune, which write, say they cannot (exit 1). Found by a new user's
/// trial: `asp restore` from a read-only mount failed on making `locks/repo`.
///
/// What this proves: the repository's tree is made read-only by its permissions. Where this
/// test runs with privileges that permissions do not stop (root), asp is run as `nobody`
/// (uid 65534) so they do; where it cannot switch users either, the test says so and proves
/// nothing. Permissions give EACCES; a read-only mount (EROFS) takes the same path in asp
/// (`cannot_write`), but no mount is made here.
#[test]
fn a_read_only_repository_is_read_and_said_not_writable() {
    use std::os::unix::process::CommandExt;
    let (t, home, repo) = home_and_repo();
    backup(&home, &repo);
    assert!(repo.join("locks/repo").is_file());
    read_only_tree(&repo, false);
    let _again = WritableAgain(&repo);
    // Whether this process writes a read-only file regardless (root): then asp runs as nobody.
    let privileged = fs::OpenOptions::new()
        .append(true)
        .open(repo.join("index.json"))
        .is_ok();
    let user = privileged.then_some(65534u32);
    let scratch = t.path().join("scratch");
    fs::create_dir_all(&scratch).unwrap();
    if let Some(uid) = user {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(t.path(), fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::chown(&scratch, Some(uid), Some(uid)).unwrap();
        // The temporary folder may be under one that uid 65534 cannot pass (TMPDIR in a home
        // of mode 0700): then nothing here can be checked as that user.
        let probe = std::process::Command::new("/bin/sh")
            .args(["-c", r#"test -r "$1/index.json" && test -w "$2""#, "sh"])
            .arg(&repo)
            .arg(&scratch)
            .uid(uid)
            .gid(uid)
            .status();
        if !probe.as_ref().is_ok_and(|s| s.success()) {
            eprintln!(
                "skipped: permissions do not stop this user's writes, and uid 65534 cannot \
                 read {} or write {} (an ancestor of the temporary folder it cannot pass?), \
                 or cannot be switched to ({probe:?}); nothing about a read-only repository \
                 was checked",
                repo.display(),
                scratch.display()
            );
            return;
        }
    }
    let run = |args: &[&std::ffi::OsStr]| -> Option<std::process::Output> {
        let mut cmd = std::process::Command::new(assert_cmd::cargo::cargo_bin!("asp"));
        cmd.args(args)
            .arg("--repo")
            .arg(&repo)
            .env("HOME", &scratch)
            .env("TMPDIR", &scratch);
        if let Some(uid) = user {
            cmd.uid(uid).gid(uid);
        }
        match cmd.output() {
            Ok(out) => Some(out),
            Err(e) if user.is_some() => {
                eprintln!(
                    "skipped: permissions do not stop this user's writes, and asp cannot be \
                     run as uid 65534 ({e}); nothing about a read-only repository was checked"
                );
                None
            }
            Err(e) => panic!("{e}"),
        }
    };
    let os = |s: &'static str| std::ffi::OsStr::new(s);
    // `asp restore --to claude-code` into a new home of the user asp runs as.
    let restore_into = |name: &str| -> (PathBuf, Option<std::process::Output>) {
        let to = scratch.join(name);
        fs::create_dir_all(&to).unwrap();
        if let Some(uid) = user {
            std::os::unix::fs::chown(&to, Some(uid), Some(uid)).unwrap();
        }
        let out = run(&[
            os("restore"),
            os("-q"),
            os("--to"),
            os("claude-code"),
            os("--home"),
            to.as_os_str(),
        ]);
        (to, out)
    };
    let (restored, Some(out)) = restore_into("restored") else {
        return;
    };
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        !said.contains("without a lock"),
        "the lock file was there: {said}"
    );
    assert_eq!(projects(&restored), projects(&home), "byte for byte");
    for args in [
        &[os("check"), os("--read-data")][..],
        &[os("sessions"), os("--json")],
        &[os("snapshots")],
    ] {
        let out = run(args).unwrap();
        assert_eq!(out.status.code(), Some(0), "{args:?}: {out:?}");
    }
    let bundle = scratch.join("out.aspstate");
    let out = run(&[
        os("pack"),
        os("--from-repo"),
        os("-q"),
        os("-o"),
        bundle.as_os_str(),
    ])
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(bundle.is_file());

    // The commands that write say they cannot.
    for args in [
        &[
            os("backup"),
            os("--from"),
            os("claude-code"),
            os("--home"),
            home.as_os_str(),
        ][..],
        &[os("prune")],
        &[os("check"), os("--read-data"), os("--repair")],
    ] {
        let out = run(args).unwrap();
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {said}");
        assert!(
            said.contains("cannot be written to here") && said.contains("locks/repo"),
            "{args:?}: {said}"
        );
    }

    // With no lock file, and none makeable: read without one, and said.
    read_only_tree(&repo, true);
    fs::remove_dir_all(repo.join("locks")).unwrap();
    read_only_tree(&repo, false);
    let (again, out) = restore_into("again");
    let out = out.unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(said.contains("is read without a lock"), "{said}");
    assert_eq!(projects(&again), projects(&home), "byte for byte");
    assert!(!repo.join("locks").exists(), "nothing was made");

    // A lock file that cannot be opened even to be read (another user's, mode 0600; here
    // 0000, which stops its owner too when permissions stop this one): read without a lock,
    // and said, not a bare "Permission denied".
    read_only_tree(&repo, true);
    fs::create_dir(repo.join("locks")).unwrap();
    fs::write(repo.join("locks/repo"), "").unwrap();
    read_only_tree(&repo, false);
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(repo.join("locks/repo"), fs::Permissions::from_mode(0o000)).unwrap();
    }
    let (third, out) = restore_into("third");
    let out = out.unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("is read without a lock")
            && said.contains("cannot be opened here, not even to be read"),
        "{said}"
    );
    assert_eq!(projects(&third), projects(&home), "byte for byte");
    let out = run(&[os("check")]).unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

/// `asp pack --from-repo` without --snapshot packs the newest snapshot of all: with more than
/// one home (or harness) backed up, which one that is is said.
#[test]
fn packing_the_latest_of_several_homes_says_which_it_is() {
    let (t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let out = t.path().join("one.aspstate");
    let said = pack_from_repo(&repo, &out).assert().success();
    let err = String::from_utf8_lossy(&said.get_output().stderr).into_owned();
    assert!(!err.contains("note:"), "one home: nothing to say: {err}");
    let other = t.path().join("other");
    copy_dir(&home, &other);
    backup(&other, &repo);
    let said = pack_from_repo(&repo, &out)
        .arg("--force")
        .assert()
        .success();
    let err = String::from_utf8_lossy(&said.get_output().stderr).into_owned();
    assert!(
        err.contains("holds snapshots of 2 harnesses or homes; `latest` is the newest of them all (claude-code of ")
            && err.contains("--snapshot ID packs another"),
        "{err}"
    );
}

fn pack_home_to(home: &Path, out: &Path) -> Vec<u8> {
    asp_pack()
        .args(["--from", "claude-code", "-q", "--home"])
        .arg(home)
        .arg("-o")
        .arg(out)
        .assert()
        .code(predicates::ord::eq(0).or(predicates::ord::eq(3)));
    fs::read(out).unwrap()
}

fn pack_repo_to(repo: &Path, out: &Path, snapshot: &str) -> Vec<u8> {
    asp()
        .args([
            "pack",
            "--from-repo",
            "-q",
            "--snapshot",
            snapshot,
            "--repo",
        ])
        .arg(repo)
        .arg("-o")
        .arg(out)
        .assert()
        .success();
    fs::read(out).unwrap()
}

/// A restore run again writes nothing and says so: in its summary, and in `--json` under
/// `_meta.asp.alreadyThere` (the protocol's answer maps each session to itself either way);
/// a dry run does not say how to resume what it did not write.
#[test]
fn a_restore_run_again_says_every_session_is_already_there() {
    let (t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let fresh = t.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    let run = |args: &[&str]| {
        let out = asp()
            .args(["restore", "--to", "claude-code", "--home"])
            .arg(&fresh)
            .arg("--repo")
            .arg(&repo)
            .args(args)
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let dry = run(&["--dry-run"]);
    assert!(!dry.contains("to continue"), "{dry}");
    let first = run(&[]);
    assert!(!first.contains("already there"), "{first}");
    assert!(first.contains("to continue"), "{first}");
    let files = files_under(&fresh);
    let again = run(&[]);
    assert!(again.contains("5 sessions: 5 already there"), "{again}");
    assert_eq!(files_under(&fresh), files);
    let v: Value = serde_json::from_str(&run(&["--json"])).unwrap();
    assert_eq!(
        v["_meta"]["asp"]["alreadyThere"].as_array().unwrap().len(),
        5,
        "{v}"
    );
}

#[test]
fn pack_from_repo_gives_the_bundle_asp_pack_makes_byte_for_byte() {
    let (t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let packed = pack_home_to(&home, &t.path().join("a.aspstate"));
    assert!(packed == pack_repo_to(&repo, &t.path().join("b.aspstate"), "latest"));
    // After an incremental backup that reused four sessions' layers (three files') too.
    let file = home.join(GATEWAY).join(format!("{C}.jsonl"));
    let mut text = fs::read(&file).unwrap();
    text.extend_from_slice(&text.clone()[..text.iter().position(|c| *c == b'\n').unwrap() + 1]);
    fs::write(&file, &text).unwrap();
    set_mtime(&file, Duration::from_secs(3000));
    let o = backup(&home, &repo);
    assert_eq!(counts(&o)[2], 4, "{o}");
    let packed = pack_home_to(&home, &t.path().join("c.aspstate"));
    assert!(packed == pack_repo_to(&repo, &t.path().join("d.aspstate"), "latest"));
}

/// A keep policy keeps a snapshot that alone holds a session. A series of bundles records
/// no session as gone, so the bundle packed after a session was deleted lacks it, and keeping
/// only the newest snapshot let prune delete the session (review helper-123, 3).
#[test]
fn a_keep_policy_keeps_a_snapshot_that_alone_holds_a_session() {
    let t = tmp();
    let home = home_in(t.path());
    let bundle = t.path().join("a.aspstate");
    let repo = t.path().join("repo");
    let add = || {
        asp()
            .args(["backup", "-q", "--from-bundle"])
            .arg(&bundle)
            .arg("--repo")
            .arg(&repo)
            .assert()
            .success();
    };
    pack_home_to(&home, &bundle);
    add();
    fs::remove_file(home.join(GATEWAY).join(format!("{C}.jsonl"))).unwrap();
    let _ = fs::remove_dir_all(home.join(GATEWAY).join(C));
    fs::remove_file(&bundle).unwrap();
    pack_home_to(&home, &bundle);
    add();
    let forget = |json: bool| {
        let mut cmd = asp();
        cmd.args(["forget", "--keep-last", "1", "--repo"])
            .arg(&repo);
        if json {
            cmd.args(["--json", "--dry-run"]);
        }
        let out = cmd.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let planned: Value = serde_json::from_str(&forget(true)).unwrap();
    assert_eq!(
        planned["heldBack"][0]["sessions"],
        json!([C]),
        "{planned:#}"
    );
    assert_eq!(planned["snapshots"]["remove"], json!([]), "{planned:#}");
    let said = forget(false);
    assert!(
        said.contains("forgot 0 snapshots") && said.contains(&format!("holds session {C}")),
        "{said}"
    );
    asp()
        .args(["prune", "-q", "--repo"])
        .arg(&repo)
        .assert()
        .success();
    // The newest snapshot does not hold it; the one kept does, and restores it.
    let kept = planned["heldBack"][0]["snapshot"]["digest"]
        .as_str()
        .unwrap();
    let fresh = t.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    asp()
        .args(["restore", "-q", "--to", "claude-code", "--snapshot", kept])
        .args(["--session", C, "--home"])
        .arg(&fresh)
        .arg("--repo")
        .arg(&repo)
        .assert()
        .success();
    assert!(fresh.join(GATEWAY).join(format!("{C}.jsonl")).exists());
}

#[test]
fn a_bundle_becomes_a_snapshot() {
    let t = tmp();
    let home = home_in(t.path());
    let bundle = t.path().join("a.aspstate");
    let packed = pack_home_to(&home, &bundle);
    let repo = t.path().join("repo");
    let add = || {
        let out = asp()
            .args(["backup", "--json", "-q", "--from-bundle"])
            .arg(&bundle)
            .arg("--repo")
            .arg(&repo)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice::<Value>(&out.stdout).unwrap()[0].clone()
    };
    let o = add();
    assert_eq!(o["harness"], "claude-code");
    assert!(
        add()["snapshot"].is_null(),
        "the same bundle again is nothing changed"
    );
    check(&repo, true);
    assert!(packed == pack_repo_to(&repo, &t.path().join("b.aspstate"), "latest"));
    let fresh = t.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    // A bundle carries no settings files of the harness's own: its whole restore says so.
    let said = restore_said(&repo, &fresh, "claude-code", &[]);
    assert!(
        said.contains(&format!(
            "configuration: snapshot {} holds none of claude-code's own files",
            &asp_snapshots_latest(&repo)[..8]
        )),
        "{said}"
    );
    assert_eq!(projects(&fresh), projects(&home));
    // A backup's snapshot has them: nothing of the kind is said.
    let repo = t.path().join("backed-up");
    backup(&home, &repo);
    let said = restore_said(&repo, &t.path().join("other"), "claude-code", &[]);
    assert!(!said.contains("holds none"), "{said}");
}

#[test]
fn the_harness_configuration_comes_back_into_the_same_harness_only() {
    let t = tmp();
    let home = home_in(t.path());
    fs::write(
        home.join(".claude/.credentials.json"),
        b"{\"token\":\"secret\"}",
    )
    .unwrap();
    fs::create_dir_all(home.join(".claude/agents")).unwrap();
    fs::write(home.join(".claude/agents/reviewer.md"), b"# reviewer\n").unwrap();
    fs::create_dir_all(home.join(".claude/plans")).unwrap();
    fs::write(
        home.join(".claude/plans/quiet-drifting-lantern.md"),
        b"# Plan\n1. Parse --dry-run\n",
    )
    .unwrap();
    // A text pasted into a prompt, over 1,024 characters: Claude Code keeps it apart, named by
    // the first 16 hex digits of its sha256, and history.jsonl names it by that hash.
    let pasted = "error[E0502]: cannot borrow `cart` as mutable\n".repeat(30);
    let hash = &format!("{}", asp_format::digest::Digest::of(pasted.as_bytes()))[7..23];
    let paste = format!(".claude/paste-cache/{hash}.txt");
    fs::create_dir_all(home.join(".claude/paste-cache")).unwrap();
    fs::write(home.join(&paste), &pasted).unwrap();
    let mut history = fs::read_to_string(home.join(".claude/history.jsonl")).unwrap();
    history.push_str(&format!(
        "{{\"display\":\"Why does this not build? [Pasted text #1 +29 lines]\",\"pastedContents\":{{\"1\":{{\"id\":1,\"type\":\"text\",\"contentHash\":\"{hash}\"}}}},\"timestamp\":1795880000000,\"project\":\"/home/dev/shop\",\"sessionId\":\"{A}\"}}\n"
    ));
    fs::write(home.join(".claude/history.jsonl"), history).unwrap();
    // A pasted text no prompt of the history names any more.
    let unnamed = ".claude/paste-cache/fedcba9876543210.txt";
    fs::write(home.join(unnamed), "x".repeat(2000)).unwrap();
    fs::write(home.join(".claude/paste-cache/notes.bak"), b"not a paste").unwrap();
    age(&home.join(".claude"), Duration::from_secs(3600));
    let repo = t.path().join("repo");
    backup(&home, &repo);
    check(&repo, true);

    let fresh = t.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    restore(&repo, &fresh, &[]);
    for f in [
        ".claude/settings.json",
        ".claude/rules/security.md",
        ".claude/agents/reviewer.md",
        ".claude/history.jsonl",
        ".claude/plans/quiet-drifting-lantern.md",
        &paste,
        ".claude/file-history/71958462-4bb8-46b6-a36a-1becf56c22dc/b5276ea0bd7f01a0@v2",
        ".claude/todos/71958462-4bb8-46b6-a36a-1becf56c22dc-agent-71958462-4bb8-46b6-a36a-1becf56c22dc.json",
    ] {
        assert_eq!(
            fs::read(fresh.join(f)).unwrap(),
            fs::read(home.join(f)).unwrap(),
            "{f}"
        );
    }
    assert!(!fresh.join(".claude/.credentials.json").exists());
    assert!(!fresh.join(".claude/paste-cache/notes.bak").exists());
    assert!(fresh.join(unnamed).exists());
    // Claude Code's cleanup deletes the pasted texts by age; the history that names one
    // stays, and so does that text in the backup; one no prompt names goes.
    fs::remove_file(home.join(&paste)).unwrap();
    fs::remove_file(home.join(unnamed)).unwrap();
    let o = backup(&home, &repo);
    assert!(o["snapshot"].is_object(), "{o}");
    let later = t.path().join("later");
    fs::create_dir_all(&later).unwrap();
    restore(&repo, &later, &[]);
    assert_eq!(fs::read_to_string(later.join(&paste)).unwrap(), pasted);
    assert!(!later.join(unnamed).exists());
    let o = backup(&home, &repo);
    assert!(
        o["snapshot"].is_null(),
        "carried again, nothing changed: {o}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        for private in [".claude/history.jsonl", paste.as_str()] {
            let mode = fs::metadata(fresh.join(private))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{private}");
        }
    }
    // Changing it makes a snapshot; a restore keeps the user's different file.
    fs::write(home.join(".claude/agents/reviewer.md"), b"# reviewer v2\n").unwrap();
    set_mtime(
        &home.join(".claude/agents/reviewer.md"),
        Duration::from_secs(3000),
    );
    assert!(backup(&home, &repo)["snapshot"].is_object());
    restore(&repo, &fresh, &[]);
    assert_eq!(
        fs::read(fresh.join(".claude/agents/reviewer.md")).unwrap(),
        b"# reviewer\n"
    );
    // The backed-up copy is beside it, where Claude Code does not read it, and a backup does
    // not keep it as configuration.
    let side = fresh.join(".claude/agents/reviewer.md.asp-restored");
    assert_eq!(fs::read(&side).unwrap(), b"# reviewer v2\n");
    // Written once: one the user has begun to merge is left as it is by the next restore.
    fs::write(&side, b"# reviewer, half merged\n").unwrap();
    restore(&repo, &fresh, &[]);
    assert_eq!(
        fs::read(&side).unwrap(),
        b"# reviewer, half merged\n",
        "once"
    );
    let names = crate::support::config_kept("claude-code", &fresh, ".claude", &[]);
    assert!(
        !names.iter().any(|n| n.ends_with(".asp-restored")),
        "{names:?}"
    );
    // Another harness takes only the portable kinds.
    let codex = t.path().join("codex");
    fs::create_dir_all(codex.join(".codex")).unwrap();
    asp()
        .args(["restore", "-q", "--to", "codex", "--snapshot"])
        .arg(asp_snapshots_latest(&repo))
        .arg("--home")
        .arg(&codex)
        .arg("--repo")
        .arg(&repo)
        .assert()
        .code(predicates::ord::eq(0).or(predicates::ord::eq(3)));
    assert!(!codex.join(".claude").exists());
}

/// A backup that must wait for a prune says so (it would look hung), and goes on once the
/// lock is let go; a backup into a repository that was not there says it made one.
#[test]
fn a_backup_waiting_for_a_lock_says_so_and_a_new_repository_is_said() {
    let t = tempfile::tempdir().unwrap();
    let home = home_in(t.path());
    let repo = t.path().join("repo");
    let first = backup_run(&home, &repo, &["--from", "claude-code"]);
    assert_eq!(first.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&first.stderr)
            .contains(&format!("created a new repository at {}", repo.display())),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    // `--quiet` hides the progress bar, not a repository made where the user may have
    // mistyped its path.
    let other = t.path().join("other-repo");
    let quiet = backup_run(&home, &other, &["--from", "claude-code", "-q"]);
    assert_eq!(quiet.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&quiet.stderr)
            .contains(&format!("created a new repository at {}", other.display())),
        "{}",
        String::from_utf8_lossy(&quiet.stderr)
    );
    append_turn(&home.join(SHOP).join(format!("{A}.jsonl")), 1);
    // What a prune holds.
    let held = fs::File::open(repo.join("locks/repo")).unwrap();
    held.lock().unwrap();
    // The lock is held until the backup says it waits: it cannot have gone on without it.
    let (mut child, mut err, line) = backup_waiting(&home, &repo, &[]);
    assert!(
        line.starts_with(&format!(
            "waiting for the asp prune (or check --repair) running on {}",
            repo.display()
        )),
        "{line}"
    );
    assert!(child.try_wait().unwrap().is_none(), "it waits");
    // With --lock-wait, a command gives up when the wait runs out, and does nothing.
    let index = fs::read(repo.join("index.json")).unwrap();
    for (wait, said) in [("0", "after 0s"), ("0.3s", "after 0.3s")] {
        let out = backup_run(
            &home,
            &repo,
            &["--from", "claude-code", "-q", "--lock-wait", wait],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains(&format!("locks/repo is still locked {said}"))
                && err.contains("gave up waiting"),
            "{err}"
        );
        assert_eq!(err.contains("waiting up to 0.3s"), wait != "0", "{err}");
    }
    assert_eq!(fs::read(repo.join("index.json")).unwrap(), index);
    // A lock freed within the limit is taken: this backup waits up to a minute, and goes on
    // once the lock is free (below).
    // (Its stderr is kept open: once the repository's lock is let go it may wait for the
    // other backup's lock of the series, and says so there.)
    let (mut limited, _limited_err, line) = backup_waiting(&home, &repo, &["--lock-wait", "1m"]);
    assert!(
        line.starts_with("waiting up to 60s for the asp prune (or check --repair) running on"),
        "{line}"
    );
    asp()
        .args(["snapshots", "--lock-wait", "soon", "--repo"])
        .arg(&repo)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("is not a duration"));
    held.unlock().unwrap();
    let status = child.wait().unwrap();
    assert!(status.success());
    assert!(limited.wait().unwrap().success(), "taken within the limit");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert!(!rest.contains("created a new repository"), "{rest}");
}

/// Two backups of one home at once run one after the other: the second waits for the first's
/// series lock, then builds on the first's snapshot, so the newest holds what either saw (a
/// session deleted between the two is gone in it, not missing from it). A backup of another
/// home does not wait.
#[test]
fn a_second_backup_of_the_same_home_waits_for_the_first_and_builds_on_it() {
    let t = tempfile::tempdir().unwrap();
    let home = home_in(t.path());
    let repo = t.path().join("repo");
    let first = backup(&home, &repo);
    let series: Vec<PathBuf> = fs::read_dir(repo.join("locks"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("series-")
        })
        .collect();
    assert_eq!(series.len(), 1, "{series:?}");
    // What the first of two backups holds.
    let held = fs::File::open(&series[0]).unwrap();
    held.lock().unwrap();
    append_turn(&home.join(SHOP).join(format!("{A}.jsonl")), 1);
    let (mut child, _err, line) = backup_waiting(&home, &repo, &[]);
    assert!(
        line.starts_with("waiting for the other asp backup (or forget) of claude-code in "),
        "{line}"
    );
    assert!(child.try_wait().unwrap().is_none(), "it waits");
    let other = home_in(&t.path().join("elsewhere"));
    assert_eq!(
        backup_run(&other, &repo, &["--from", "claude-code", "-q"])
            .status
            .code(),
        Some(0),
        "another home's backup goes on"
    );
    // A third backup of the home waits too. Let go, the two run one after the other: the
    // first of them takes both turns, and the other, made from its snapshot, finds nothing
    // new to keep (at once, both would have been made from the first snapshot, each a
    // snapshot of its own).
    append_turn(&home.join(SHOP).join(format!("{A}.jsonl")), 2);
    let (mut third, _err3, line) = backup_waiting(&home, &repo, &[]);
    assert!(
        line.starts_with("waiting for the other asp backup"),
        "{line}"
    );
    held.unlock().unwrap();
    assert!(child.wait().unwrap().success());
    assert!(third.wait().unwrap().success());
    let (_, listed, _) = snapshots_listed(&repo);
    let snaps: Value = serde_json::from_str(&listed).unwrap();
    let ours: Vec<&Value> = snaps
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["home"] == first["home"])
        .collect();
    assert_eq!(ours.len(), 2, "{snaps:#}");
    assert_eq!(ours[0]["digest"], first["snapshot"]["digest"]);
    assert_eq!(ours[1]["parent"], ours[0]["digest"], "{snaps:#}");
}

/// A restore into a home whose settings file is the user's own keeps the file (the backed-up
/// copy beside it) and adds a session option only where the file sets none: each value added
/// is said, so the user knows their file changed, and a dry run says it and writes nothing.
#[test]
fn a_restore_says_each_setting_it_adds_to_a_settings_file_that_was_there() {
    let t = tempfile::tempdir().unwrap();
    let home = home_in(t.path());
    let repo = t.path().join("repo");
    backup(&home, &repo);
    let mine = t.path().join("mine");
    let settings = mine.join(".claude/settings.json");
    fs::create_dir_all(settings.parent().unwrap()).unwrap();
    let own = "{\"theme\": \"light\", \"model\": \"sonnet\"}\n";
    fs::write(&settings, own).unwrap();

    let dry = restore_said(&repo, &mine, "claude-code", &["--dry-run"]);
    assert_eq!(
        fs::read_to_string(&settings).unwrap(),
        own,
        "a dry run writes nothing"
    );
    assert!(
        dry.contains(&format!(
            "settings: would be added to {}",
            settings.display()
        )),
        "{dry}"
    );

    let said = restore_said(&repo, &mine, "claude-code", &[]);
    let now: Value = serde_json::from_slice(&fs::read(&settings).unwrap()).unwrap();
    assert_eq!(now["theme"], "light");
    assert_eq!(now["model"], "sonnet", "the user's model is kept");
    assert_eq!(now["effortLevel"], "high", "added: the file set none");
    assert_eq!(now["permissions"]["defaultMode"], "acceptEdits");
    let added = format!(
        "settings: added to {}, a file that was there: effortLevel = \"high\", \
         permissions = {{\"defaultMode\":\"acceptEdits\"}}",
        settings.display()
    );
    assert!(said.contains(&added), "{said}");
    assert!(
        said.contains("already sets model to \"sonnet\", so that value was kept"),
        "{said}"
    );
    assert!(
        said.contains(
            "settings.json: there with other content, kept, not replaced; the backed-up copy is \
             written beside it as settings.json.asp-restored"
        ),
        "{said}"
    );
    // Restored again: nothing more is added, and nothing is said of it.
    let again = restore_said(&repo, &mine, "claude-code", &[]);
    assert!(!again.contains("settings: added to"), "{again}");
    // `--json` carries what was added under _meta.asp.writtenInto.
    let theirs = t.path().join("theirs");
    fs::create_dir_all(theirs.join(".claude")).unwrap();
    fs::write(theirs.join(".claude/settings.json"), own).unwrap();
    let out = restore_json(&repo, &theirs);
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    let written = &answer["_meta"]["asp"]["writtenInto"];
    assert_eq!(written[0]["kind"], "settings", "{answer}");
    assert!(
        written[0]["what"]
            .as_str()
            .unwrap()
            .contains("effortLevel = \"high\""),
        "{answer}"
    );
    // The MCP servers of .claude.json: named when added to the owner's own file, not said
    // when the restore made the file (above, `theirs` had none).
    assert!(
        written
            .as_array()
            .unwrap()
            .iter()
            .all(|w| w["kind"] != "tools"),
        "{answer}"
    );
    let ours = t.path().join("ours");
    fs::create_dir_all(&ours).unwrap();
    fs::write(ours.join(".claude.json"), "{\"theme\": \"dark\"}\n").unwrap();
    let said = restore_said(&repo, &ours, "claude-code", &[]);
    assert!(
        said.contains(&format!(
            "tools: added to {}, a file that was there: MCP server \"github\", MCP server \
             \"linear\", MCP server \"sentry\"\n",
            ours.join(".claude.json").display()
        )),
        "{said}"
    );
}

/// Each harness's prompt history (what ↑ recalls), and Codex's thread names, come back whole
/// into a fresh home, and are merged, in time order and each record once, into the ones the new
/// machine already has. The thread names came back as one line per thread, dated to its last
/// turn, until a new user's trial found the renames gone and `updated_at` moved earlier.
#[test]
fn prompt_histories_and_thread_names_come_back_and_merge_into_the_ones_there() {
    // (harness, its log in the sample, the time member, a record written on the new machine,
    // whether the file is its owner's alone)
    let cases = [
        (
            "claude-code",
            ".claude/history.jsonl",
            "timestamp",
            json!({"display": "on the new machine", "pastedContents": {}, "timestamp": 1795300000000_u64, "project": "/home/dev/shop", "sessionId": "aaaaaaaa-0000-4000-8000-000000000001"}),
            true,
        ),
        (
            "codex",
            ".codex/history.jsonl",
            "ts",
            json!({"session_id": "01a20000-0000-7000-8000-000000000001", "ts": 1795200000_u64, "text": "on the new machine"}),
            true,
        ),
        (
            "codex",
            ".codex/session_index.jsonl",
            "updated_at",
            json!({"id": "01a20000-0000-7000-8000-000000000001", "thread_name": "on the new machine", "updated_at": "2026-11-22T08:00:00.123456789Z"}),
            false,
        ),
    ];
    // Both are JSON lines.
    let records = |bytes: &[u8]| -> Vec<Value> {
        bytes
            .split(|b| *b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect()
    };
    let written = |items: &[Value]| -> Vec<u8> {
        items
            .iter()
            .map(|v| format!("{v}\n"))
            .collect::<String>()
            .into_bytes()
    };
    for (harness, log, time, typed, private) in cases {
        let t = tmp();
        let home = t.path().join("home");
        copy_tree(&samples().join(harness), &home);
        let repo = t.path().join("repo");
        let out = backup_run(&home, &repo, &["--from", harness, "-q"]);
        assert_eq!(out.status.code(), Some(0), "{harness}: {out:?}");
        let sample = fs::read(home.join(log)).unwrap();
        let restore_into = |to: &Path| {
            asp()
                .args(["restore", "-q", "--to", harness, "--home"])
                .arg(to)
                .arg("--repo")
                .arg(&repo)
                .assert()
                .success();
        };

        let fresh = t.path().join("fresh");
        fs::create_dir_all(&fresh).unwrap();
        restore_into(&fresh);
        assert!(
            fs::read(fresh.join(log)).unwrap() == sample,
            "{harness} {log}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(fresh.join(log)).unwrap().permissions().mode();
            assert_eq!(
                mode & 0o077 == 0,
                private,
                "{harness} {log}: only the prompts are the owner's alone"
            );
        }

        // The new machine has one record of its own, and (a prompt history) one the backup has
        // too. A thread the new machine names keeps its name (below), so there it has only
        // the naming of a thread the backup does not hold.
        let used = t.path().join("used");
        let mut its_own = vec![typed.clone()];
        if log.ends_with("history.jsonl") {
            its_own.insert(0, records(&sample)[0].clone());
        }
        fs::create_dir_all(used.join(log).parent().unwrap()).unwrap();
        fs::write(used.join(log), written(&its_own)).unwrap();
        restore_into(&used);
        let mut want = records(&sample);
        want.push(typed);
        let key = |v: &Value| v[time].to_string().trim_matches('"').to_owned();
        want.sort_by(|a, b| {
            if a[time].is_number() {
                a[time].as_u64().cmp(&b[time].as_u64())
            } else {
                key(a).cmp(&key(b))
            }
        });
        let merged = fs::read(used.join(log)).unwrap();
        assert_eq!(records(&merged), want, "{harness} {log}");
        // Again: it has every record now, and stays as it is.
        restore_into(&used);
        assert!(
            fs::read(used.join(log)).unwrap() == merged,
            "{harness} {log}"
        );
    }
}

/// `--map-path` moves the folders a prompt history names, not a Codex thread's name that reads
/// like one: the thread names come back byte for byte (they were rewritten as a prompt history
/// is, once the file was kept: an independent review).
#[test]
fn map_path_leaves_codex_thread_names_as_they_are() {
    let t = tmp();
    let home = t.path().join("home");
    copy_tree(&samples().join("codex"), &home);
    let index = ".codex/session_index.jsonl";
    let mut names = fs::read_to_string(home.join(index)).unwrap();
    names.push_str(
        "{\"id\":\"01a1fe6b-30a4-77a2-b12a-76a63dd1d7e5\",\"thread_name\":\"/home/dev/shop\",\"updated_at\":\"2026-11-22T08:00:00Z\"}\n",
    );
    fs::write(home.join(index), &names).unwrap();
    let repo = t.path().join("repo");
    let out = backup_run(&home, &repo, &["--from", "codex", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let to = t.path().join("moved");
    restore_said(
        &repo,
        &to,
        "codex",
        &["--map-path", "/home/dev/shop=/home/me/shop"],
    );
    assert_eq!(fs::read_to_string(to.join(index)).unwrap(), names);
}

/// A Codex thread the new machine named keeps its name when a backup is restored there: the
/// backup's namings of it are not merged in, even those dated later (the last naming of a
/// thread is its name, so a later one from the backup renamed it: an independent review).
#[test]
fn a_thread_the_new_machine_named_keeps_its_name() {
    let t = tmp();
    let home = t.path().join("home");
    copy_tree(&samples().join("codex"), &home);
    let repo = t.path().join("repo");
    let out = backup_run(&home, &repo, &["--from", "codex", "-q"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    // The same threads on the new machine, 01a1fe6b renamed there before the backup's last
    // naming of it (2026-11-21T14:13:28.375800432Z).
    let used = t.path().join("used");
    copy_tree(&samples().join("codex"), &used);
    let index = used.join(".codex/session_index.jsonl");
    let renamed = "{\"id\":\"01a1fe6b-30a4-77a2-b12a-76a63dd1d7e5\",\"thread_name\":\"renamed here\",\"updated_at\":\"2026-11-21T14:12:00Z\"}";
    let lines: Vec<String> = fs::read_to_string(&index)
        .unwrap()
        .lines()
        .filter(|l| !l.contains("01a1fe6b"))
        .map(str::to_owned)
        .chain([renamed.to_owned()])
        .collect();
    fs::write(&index, lines.join("\n") + "\n").unwrap();
    let before = fs::read(&index).unwrap();
    asp()
        .args(["restore", "-q", "--to", "codex", "--home"])
        .arg(&used)
        .arg("--repo")
        .arg(&repo)
        .assert()
        .success();
    let after = fs::read_to_string(&index).unwrap();
    let last = after.lines().rfind(|l| l.contains("01a1fe6b")).unwrap();
    assert_eq!(last, renamed, "{after}");
    // The threads were there already, so nothing was added.
    assert_eq!(after.as_bytes(), before, "{after}");
}

/// Pi's and Qwen Code's own configuration comes back into the same harness, and a file that
/// holds credentials (Pi's `models.json` with provider keys, Qwen's `settings.json` with an API
/// key or an `env` block) comes back without them and with everything else.
/// The member at `path` of `v` (an array's element by its index).
fn member_mut<'v>(v: &'v mut Value, path: &[&str]) -> &'v mut Value {
    match path.split_first() {
        None => v,
        Some((p, rest)) => {
            let next = match v {
                Value::Array(items) => &mut items[p.parse::<usize>().unwrap()],
                v => &mut v[*p],
            };
            member_mut(next, rest)
        }
    }
}

#[test]
fn pi_and_qwen_configuration_comes_back_without_its_credentials() {
    // (harness, the file with credentials, the members they are and whether the restored
    // file has the placeholder there, a file kept whole)
    let cases = [
        (
            "pi",
            ".pi/agent/models.json",
            &[
                (&["providers", "ollama", "apiKey"][..], true),
                (&["providers", "ollama", "headers"], false),
                (&["providers", "ollama", "models", "0", "headers"], false),
            ][..],
            ".pi/agent/prompts/review.md",
        ),
        (
            "qwen",
            ".qwen/settings.json",
            &[
                (&["security", "auth", "apiKey"][..], false),
                (&["env"], false),
            ][..],
            ".qwen/extensions/extension-enablement.json",
        ),
    ];
    for (harness, file, secrets, whole) in cases {
        let t = tmp();
        let home = t.path().join("home");
        copy_tree(&samples().join(harness), &home);
        let mut doc: Value = serde_json::from_slice(&fs::read(home.join(file)).unwrap()).unwrap();
        let mut clean = doc.clone();
        for (path, masked) in secrets {
            let (last, parents) = path.split_last().unwrap();
            let parent = member_mut(&mut clean, parents);
            if *masked {
                parent[*last] = json!("REMOVED-BY-ASP-BACKUP-set-your-key-again");
            } else {
                parent.as_object_mut().unwrap().shift_remove(*last);
            }
            member_mut(&mut doc, parents)[*last] =
                json!({"SECRET_TOKEN_VALUE": "sk-live-0123456789"});
        }
        fs::write(home.join(file), serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
        let repo = t.path().join("repo");
        let out = backup_run(&home, &repo, &["--from", harness, "-q"]);
        assert_eq!(out.status.code(), Some(0), "{harness}: {out:?}");

        let fresh = t.path().join("fresh");
        fs::create_dir_all(&fresh).unwrap();
        asp()
            .args(["restore", "-q", "--to", harness, "--home"])
            .arg(&fresh)
            .arg("--repo")
            .arg(&repo)
            .assert()
            .success();
        let restored = fs::read_to_string(fresh.join(file)).unwrap();
        assert!(!restored.contains("sk-live"), "{harness}: {restored}");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(fresh.join(file)).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "{harness}: where the keys go back, 0600");
        }
        let restored: Value = serde_json::from_str(&restored).unwrap();
        assert_eq!(restored, clean, "{harness}: everything but the credentials");
        assert!(
            fs::read(fresh.join(whole)).unwrap() == fs::read(home.join(whole)).unwrap(),
            "{harness}: {whole}"
        );
        // No blob of the repository holds the key, compressed or not.
        for blob in files_under(&repo.join("blobs/sha256")) {
            let bytes = fs::read(&blob).unwrap();
            let plain = zstd::decode_all(&bytes[..]).unwrap_or_default();
            for b in [&bytes, &plain] {
                assert!(
                    !b.windows(7).any(|w| w == b"sk-live"),
                    "{harness}: {} holds the key",
                    blob.display()
                );
            }
        }
    }
}

/// A script an MCP server runs from the harness's own folder is kept with the configuration
/// and comes back with it, mode and all; a file it names elsewhere under the home is said not
/// to be kept. (Found by a new user's trial: the server came back without its script.)
#[test]
fn a_script_an_mcp_server_runs_from_the_harness_folder_comes_back_with_it() {
    // (harness, the file that names the servers, the script the sample's server runs)
    let cases = [
        (
            "copilot",
            ".copilot/mcp-config.json",
            ".copilot/mcp/issues.py",
        ),
        (
            "opencode",
            ".config/opencode/opencode.json",
            ".config/opencode/mcp/issues.py",
        ),
    ];
    for (harness, config, script) in cases {
        let t = tmp();
        let home = t.path().join("home");
        copy_tree(&samples().join(harness), &home);
        // The sample's servers name their files under /home/dev, the home it was made in.
        let named = fs::read_to_string(home.join(config)).unwrap();
        assert!(named.contains(&format!("/home/dev/{script}")), "{harness}");
        let here = format!("{}/", home.display());
        fs::write(home.join(config), named.replace("/home/dev/", &here)).unwrap();
        fs::create_dir_all(home.join(".local/share")).unwrap();
        fs::write(home.join(".local/share/issues.db"), b"SQLite format 3\0").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(home.join(script), fs::Permissions::from_mode(0o755)).unwrap();
        }
        let repo = t.path().join("repo");
        let out = backup_run(&home, &repo, &["--from", harness]);
        let said = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{harness}: {said}");
        assert!(
            said.contains(&format!(
                "note: {}: MCP server \"issues\" runs or reads this file, which is outside \
                 {harness}'s folders: a backup of {harness} does not keep it",
                home.join(".local/share/issues.db").display()
            )),
            "{harness}: {said}"
        );

        let fresh = t.path().join("fresh");
        restore_said(&repo, &fresh, harness, &[]);
        let fresh = new_home(&fresh);
        assert_eq!(
            fs::read(fresh.join(script)).unwrap(),
            fs::read(home.join(script)).unwrap(),
            "{harness}: {script}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(fresh.join(script))
                .unwrap()
                .permissions()
                .mode();
            assert_eq!(mode & 0o111, 0o111, "{harness}: {script} runs as it ran");
        }
        assert!(!fresh.join(".local/share/issues.db").exists(), "{harness}");
        // Only a whole restore brings the configuration back, and one of some kinds says so.
        let said = restore_said(
            &repo,
            &t.path().join("tools"),
            harness,
            &["--kinds", "tools"],
        );
        assert!(
            said.contains(&format!("configuration: {harness}'s own files ("))
                && said.contains(
                    "are restored by a whole restore only, not with --session or --kinds"
                ),
            "{harness}: {said}"
        );
        assert!(!t.path().join("tools").join(script).exists(), "{harness}");
    }
}

#[test]
fn what_the_configuration_keeps_is_not_said_to_be_left_out() {
    let t = tmp();
    let home = home_in(t.path());
    let out = backup_run(&home, &repo_of(&t), &["--from", "claude-code"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let about = |label: &str| {
        err.lines()
            .any(|l| l.starts_with(label) && l.contains("rules/security.md"))
    };
    assert!(about("kept natively:"), "{err}");
    assert!(!about("left out:"), "{err}");
    // asp-pack keeps no configuration: there the rule is left out.
    let out = asp_pack()
        .args(["--from", "claude-code", "-o", "-", "--home"])
        .arg(&home)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines()
            .any(|l| l.starts_with("left out:") && l.contains("rules/security.md")),
        "{err}"
    );
}

/// A configuration file kept in a dotfiles folder and linked into place is kept (its
/// content; a restore writes it as a file). What is found and not kept (a link that leads
/// nowhere, a file named as holding a token) is said, never left out silently; a Markdown
/// command is a command whatever its name.
#[cfg(unix)]
#[test]
fn linked_configuration_is_kept_and_what_is_not_kept_is_said() {
    use std::os::unix::fs::symlink;
    let t = tmp();
    let home = home_in(t.path());
    let dotfiles = home.join("dotfiles/claude-settings.json");
    fs::create_dir_all(dotfiles.parent().unwrap()).unwrap();
    fs::write(&dotfiles, b"{\"model\": \"opus\"}\n").unwrap();
    fs::remove_file(home.join(".claude/settings.json")).unwrap();
    symlink(&dotfiles, home.join(".claude/settings.json")).unwrap();
    fs::create_dir_all(home.join(".claude/commands")).unwrap();
    fs::write(
        home.join(".claude/commands/tokenize.md"),
        b"Split $ARGUMENTS\n",
    )
    .unwrap();
    fs::write(home.join(".claude/commands/api-token"), b"sk-ant-0000\n").unwrap();
    symlink(
        home.join("nowhere.md"),
        home.join(".claude/commands/gone.md"),
    )
    .unwrap();
    let repo = repo_of(&t);
    let out = backup_run(&home, &repo, &["--from", "claude-code"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let said = |file: &str, why: &str| {
        err.lines()
            .any(|l| l.starts_with("left out:") && l.contains(file) && l.contains(why))
    };
    assert!(said("commands/api-token", "holds credentials"), "{err}");
    assert!(
        said("commands/gone.md", "leads to no regular file"),
        "{err}"
    );
    assert!(!err.contains("tokenize.md"), "{err}");

    let fresh = t.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    restore(&repo, &fresh, &[]);
    let settings = fresh.join(".claude/settings.json");
    assert!(fs::symlink_metadata(&settings).unwrap().is_file());
    assert_eq!(fs::read(&settings).unwrap(), fs::read(&dotfiles).unwrap());
    assert_eq!(
        fs::read(fresh.join(".claude/commands/tokenize.md")).unwrap(),
        b"Split $ARGUMENTS\n"
    );
    assert!(!fresh.join(".claude/commands/api-token").exists());
    assert!(!fresh.join(".claude/commands/gone.md").exists());
}

pub(crate) fn asp_snapshots_latest(repo: &Path) -> String {
    let out = asp()
        .args(["snapshots", "--json", "--repo"])
        .arg(repo)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    v.as_array().unwrap().last().unwrap()["digest"]
        .as_str()
        .unwrap()[7..19]
        .to_owned()
}

#[test]
fn from_all_takes_only_the_harnesses_whose_store_is_there() {
    let (_t, home, repo) = home_and_repo();
    let out = backup_run(&home, &repo, &["--from", "all", "--json", "-q"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let harnesses: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["harness"].as_str().unwrap())
        .collect();
    assert_eq!(harnesses, ["claude-code"]);
}

#[test]
fn a_backup_of_a_store_that_is_not_there_makes_no_repository() {
    let (t, home, repo) = home_and_repo();
    // Codex has no store in this home; no harness has one in an empty directory.
    let empty = t.path().join("empty");
    fs::create_dir(&empty).unwrap();
    for (from, home, code, said) in [
        ("codex", &home, 1, "holds no codex store"),
        // (As a --home without the one harness's store: nothing there to read, exit 1.)
        ("all", &empty, 1, "no harness store"),
    ] {
        let out = backup_run(home, &repo, &["--from", from]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{err}");
        assert!(err.contains(said), "{err}");
        assert!(!repo.exists(), "--from {from} made a repository");
    }
    // Of the harnesses named, the one there is backed up (once); the run fails for the others,
    // each named.
    let named = [
        "--from",
        "codex",
        "--from",
        "claude-code",
        "--from",
        "gemini",
    ];
    let again = ["--from", "claude-code", "--json"];
    let out = backup_run(&home, &repo, &[&named[..], &again].concat());
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("holds no codex store") && err.contains("holds no gemini store"),
        "{err}"
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
    assert_eq!(v[0]["harness"], "claude-code", "{v}");
    assert!(v[0]["snapshot"].is_object(), "{v}");
    assert!(!sessions_in(&repo).is_empty());
}

#[cfg(unix)]
#[test]
fn every_spelling_of_one_home_is_one_chain_of_snapshots() {
    let t = tmp();
    let home = home_in(t.path());
    let repo = repo_of(&t);
    assert!(backup(&home, &repo)["snapshot"].is_object());
    let link = t.path().join("link");
    std::os::unix::fs::symlink(&home, &link).unwrap();
    let dotted = t
        .path()
        .join("x")
        .join("..")
        .join(home.file_name().unwrap());
    fs::create_dir(t.path().join("x")).unwrap();
    let slashed = PathBuf::from(format!("{}/", home.display()));
    for spelling in [&slashed, &dotted, &link] {
        let o = backup(spelling, &repo);
        assert!(o["snapshot"].is_null(), "{}: {o}", spelling.display());
    }
    let listed = asp()
        .args(["snapshots", "--json", "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&listed.stdout).unwrap();
    assert_eq!(v.as_array().unwrap().len(), 1, "{v}");
    assert_eq!(
        v[0]["home"].as_str().unwrap(),
        fs::canonicalize(&home).unwrap().to_str().unwrap()
    );
}

#[test]
fn latest_into_another_harness_is_the_one_chain_there_is_and_never_a_guess() {
    let t = tmp();
    let home = home_in(t.path());
    let repo = repo_of(&t);
    backup(&home, &repo);
    let into_codex = |to: &Path| {
        fs::create_dir_all(to.join(".codex")).unwrap();
        asp()
            .args(["restore", "-q", "--to", "codex", "--home"])
            .arg(to)
            .arg("--repo")
            .arg(&repo)
            .output()
            .unwrap()
    };
    let one = t.path().join("codex-one");
    let out = into_codex(&one);
    assert!(
        matches!(out.status.code(), Some(0 | 3)),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(one.join(".codex/sessions").is_dir());
    // A second home's chain: which one to carry is the user's to say.
    let other = t.path().join("other");
    fs::create_dir(&other).unwrap();
    copy_tree(&home, &other);
    backup(&other, &repo);
    let out = into_codex(&t.path().join("codex-two"));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--snapshot ID") && err.matches("claude-code in").count() == 2,
        "{err}"
    );
}

fn local_mcp(home: &Path) -> Value {
    let v: Value = serde_json::from_slice(&fs::read(home.join(".claude.json")).unwrap()).unwrap();
    let mut out = serde_json::Map::new();
    for (p, entry) in v["projects"].as_object().into_iter().flatten() {
        if let Some(m) = entry["mcpServers"].as_object().filter(|m| !m.is_empty()) {
            out.insert(p.clone(), Value::Object(m.clone()));
        }
    }
    Value::Object(out)
}

#[test]
fn local_scope_mcp_servers_come_back_into_the_same_harness_without_the_account() {
    let (t, home, repo) = home_and_repo();
    backup(&home, &repo);
    check(&repo, true);
    let kept = local_mcp(&home);
    assert!(kept["/home/dev/shop"]["design-system"].is_object());

    let fresh = t.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    let said = restore_said(&repo, &fresh, "claude-code", &[]);
    // Trust and permissions go by the folder's path: what they grant here is said.
    for granted in [
        "granted as the backup had it: the folder /home/dev/shop is trusted",
        "granted as the backup had it: Claude Code runs Bash(npm run lint:*) in /home/dev/shop without asking",
        "granted as the backup had it: the folder /home/dev/api-gateway is trusted",
    ] {
        assert!(said.contains(granted), "{granted}: {said}");
    }
    assert!(!said.contains("/home/dev/shared-libs is trusted"), "{said}");
    assert_eq!(local_mcp(&fresh), kept);
    // Or left out, each said: --no-grants.
    let wary = t.path().join("wary");
    fs::create_dir_all(&wary).unwrap();
    let said = restore_said(&repo, &wary, "claude-code", &["--no-grants"]);
    assert!(
        said.contains("not granted (--no-grants): the folder /home/dev/shop is trusted"),
        "{said}"
    );
    let wary_config: Value =
        serde_json::from_slice(&fs::read(wary.join(".claude.json")).unwrap()).unwrap();
    for (project, entry) in wary_config["projects"].as_object().unwrap() {
        assert!(
            entry.get("hasTrustDialogAccepted").is_none(),
            "{project}: {entry}"
        );
        assert!(entry.get("allowedTools").is_none(), "{project}: {entry}");
    }
    assert_eq!(
        local_mcp(&wary),
        kept,
        "the rest of the configuration comes back"
    );
    // A permission mode that acts without asking is a grant too: said when written, left out
    // with --no-grants, from the settings file restored and from the session setting merged
    // into one there (new-user trial helper-136, 4).
    assert!(
        said.contains("starts every session in mode \"acceptEdits\""),
        "{said}"
    );
    let settings = |home: &Path| -> Value {
        serde_json::from_slice(&fs::read(home.join(".claude/settings.json")).unwrap()).unwrap()
    };
    assert_eq!(settings(&wary)["permissions"].get("defaultMode"), None);
    assert_eq!(settings(&wary)["permissions"]["ask"][0], "Bash(git push:*)");
    assert_eq!(
        settings(&fresh)["permissions"]["defaultMode"],
        "acceptEdits"
    );
    let mine = t.path().join("mine");
    fs::create_dir_all(mine.join(".claude")).unwrap();
    fs::write(mine.join(".claude/settings.json"), r#"{"model":"sonnet"}"#).unwrap();
    let out = asp()
        .args([
            "restore",
            "--to",
            "claude-code",
            "--kinds",
            "settings",
            "--no-grants",
        ])
        .arg("--home")
        .arg(&mine)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("setting \"mode\" \"acceptEdits\": not granted (--no-grants)"),
        "{said}"
    );
    assert_eq!(
        settings(&mine).get("permissions"),
        None,
        "{}",
        settings(&mine)
    );
    let text = fs::read_to_string(fresh.join(".claude.json")).unwrap();
    for never in [
        "oauthAccount",
        "userID",
        "cachedGrowthBookFeatures",
        "customApiKeyResponses",
        "tipsHistory",
        "installMethod",
    ] {
        assert!(!text.contains(never), "{never} was restored");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(fresh.join(".claude.json"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "created as Claude Code creates it");
    }
    // The preferences come back with the servers.
    let g = |home: &Path| -> Value {
        serde_json::from_slice(&fs::read(home.join(".claude.json")).unwrap()).unwrap()
    };
    for key in ["theme", "editorMode", "verbose", "autoCompactEnabled"] {
        assert!(g(&home).get(key).is_some(), "the sample sets {key}");
        assert_eq!(g(&fresh)[key], g(&home)[key], "{key}");
    }
    // And the decisions about each project: the tools allowed without asking, the trust
    // dialog accepted; not the project's counters and last costs.
    for (project, entry) in g(&home)["projects"].as_object().unwrap() {
        let back = &g(&fresh)["projects"][project];
        for key in ["allowedTools", "hasTrustDialogAccepted"] {
            let was = &entry[key];
            if was.as_array().is_some_and(|a| !a.is_empty()) || *was == Value::Bool(true) {
                assert_eq!(&back[key], was, "{project} {key}");
            }
        }
        assert!(back.get("lastCost").is_none(), "{project}: {back}");
    }
    assert!(
        g(&home)["projects"]["/home/dev/shop"]["allowedTools"]
            .as_array()
            .is_some_and(|a| !a.is_empty()),
        "the sample allows tools in the shop project"
    );

    // Into a home that has its own .claude.json: everything in it stays, a server of the same
    // name configured differently stays the user's, the others are added.
    let mine = t.path().join("mine");
    fs::create_dir_all(&mine).unwrap();
    let theirs = serde_json::json!({
        "userID": "someone-else",
        "theme": "light-ansi",
        "projects": {"/home/dev/shop": {"allowedTools": ["Bash"],
            "mcpServers": {"design-system": {"type": "stdio", "command": "mine"}}},
            "/home/dev/other": {"mcpServers": {"x": {"command": "x"}}}}});
    fs::write(
        mine.join(".claude.json"),
        serde_json::to_vec_pretty(&theirs).unwrap(),
    )
    .unwrap();
    restore(&repo, &mine, &[]);
    let after: Value =
        serde_json::from_slice(&fs::read(mine.join(".claude.json")).unwrap()).unwrap();
    assert_eq!(after["userID"], "someone-else");
    assert_eq!(after["theme"], "light-ansi", "this machine's choice stays");
    assert_eq!(after["editorMode"], g(&home)["editorMode"]);
    assert_eq!(
        after["projects"]["/home/dev/shop"]["allowedTools"][0],
        "Bash"
    );
    assert_eq!(
        after["projects"]["/home/dev/shop"]["mcpServers"]["design-system"]["command"],
        "mine"
    );
    assert_eq!(
        after["projects"]["/home/dev/other"]["mcpServers"]["x"]["command"],
        "x"
    );

    // A change to them alone makes a snapshot.
    let mut v: Value =
        serde_json::from_slice(&fs::read(home.join(".claude.json")).unwrap()).unwrap();
    v["projects"]["/home/dev/api-gateway"]["mcpServers"] =
        serde_json::json!({"db": {"type": "stdio", "command": "pg-mcp", "args": [], "env": {}}});
    fs::write(
        home.join(".claude.json"),
        serde_json::to_vec_pretty(&v).unwrap(),
    )
    .unwrap();
    set_mtime(&home.join(".claude.json"), Duration::from_secs(3000));
    assert!(backup(&home, &repo)["snapshot"].is_object());
    let later = t.path().join("later");
    fs::create_dir_all(&later).unwrap();
    restore(&repo, &later, &[]);
    assert_eq!(local_mcp(&later), local_mcp(&home));
}

#[test]
fn restore_map_path_moves_sessions_and_local_mcp_projects() {
    let (t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let fresh = t.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    restore(
        &repo,
        &fresh,
        &[
            "--map-path",
            "/home/dev=/Users/dev",
            "--map-path",
            "/nowhere=/x",
        ],
    );
    let moved = fresh.join(".claude/projects/-Users-dev-shop");
    let line = fs::read_to_string(moved.join(format!("{A}.jsonl"))).unwrap();
    assert!(line.contains("\"cwd\":\"/Users/dev/shop\""), "{line}");
    assert!(!fresh.join(SHOP).exists());
    let mcp = local_mcp(&fresh);
    assert!(mcp.get("/home/dev/shop").is_none());
    assert_eq!(
        mcp["/Users/dev/shop"]["design-system"]["args"][0],
        "/Users/dev/shop/tools/design-mcp/server.js"
    );
    // The prompt history's projects move too, so ↑ finds the prompts there.
    let history = fs::read_to_string(fresh.join(".claude/history.jsonl")).unwrap();
    let projects: Vec<String> = history
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["project"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert!(!projects.is_empty());
    assert!(
        projects.iter().all(|p| p.starts_with("/Users/dev/")),
        "{projects:?}"
    );
    // A rule that is not OLD=NEW is a usage error, before anything is written.
    let none = t.path().join("none");
    fs::create_dir_all(&none).unwrap();
    asp()
        .args([
            "restore",
            "-q",
            "--to",
            "claude-code",
            "--map-path",
            "nope",
            "--home",
        ])
        .arg(&none)
        .arg("--repo")
        .arg(&repo)
        .assert()
        .code(2);
    assert!(fs::read_dir(&none).unwrap().next().is_none());
}

#[test]
fn a_repository_written_by_layout_2_still_checks_lists_restores_packs_and_prunes() {
    // tests/fixtures/layout-2/repo: one snapshot of the Claude Code sample as asp wrote it
    // before the state was sharded (its README says how).
    let t = tmp();
    let repo = t.path().join("repo");
    copy_dir(&root().join("tests/fixtures/layout-2/repo"), &repo);
    check(&repo, true);
    assert_eq!(sessions_in(&repo).len(), 5);

    // Everything, and one session, back into homes of their own: the same transcripts as the
    // sample's.
    let whole = t.path().join("whole");
    restore(&repo, &whole, &[]);
    assert_eq!(projects(&whole), projects(&samples().join("claude-code")));
    let one = t.path().join("one");
    restore(&repo, &one, &["--session", A]);
    assert_eq!(
        transcript(&one, A),
        transcript(&samples().join("claude-code"), A)
    );
    assert!(!one.join(GATEWAY).exists(), "only the session asked for");

    // A bundle of it holds what `asp-pack` makes of the same state: the sample as it was
    // then, before a session's checkpoints and todo lists were its files too. Not byte for
    // byte: the layers come as that version stored them, and this one compresses update
    // streams with a larger hash table (spec/repository.md §6): the same state and bodies,
    // told by the directory form of each (the state documents and every body).
    let from_repo = t.path().join("p.aspstate");
    pack_repo_to(&repo, &from_repo, "latest");
    let then = t.path().join("then");
    copy_dir(&samples().join("claude-code"), &then);
    for dir in ["file-history", "todos"] {
        fs::remove_dir_all(then.join(".claude").join(dir)).unwrap();
    }
    let direct = t.path().join("d.aspstate");
    pack_home_to(&then, &direct);
    for bundle in [&from_repo, &direct] {
        asp().arg("verify").arg("-q").arg(bundle).assert().success();
    }
    // A reader since then also records where a title came from (`_meta.claudeCode.
    // titleSource`, READ_VERSION 4): left out of the comparison.
    let unpacked = |bundle: &Path, dir: &str| {
        let dir = t.path().join(dir);
        unpack_to_dir(bundle, &dir).assert().success();
        files_in(&dir)
            .into_iter()
            .map(|(path, bytes)| {
                let bytes = match serde_json::from_slice::<Value>(&bytes) {
                    Ok(mut v) if path.ends_with(".json") => {
                        if let Some(cc) = v
                            .pointer_mut("/_meta/claudeCode")
                            .and_then(Value::as_object_mut)
                        {
                            cc.shift_remove("titleSource");
                        }
                        serde_json::to_vec(&v).unwrap()
                    }
                    _ => bytes,
                };
                (path, bytes)
            })
            .collect::<std::collections::BTreeMap<_, _>>()
    };
    let (a, b) = (unpacked(&from_repo, "p"), unpacked(&direct, "d"));
    assert!(a.len() > 5, "{:?}", a.keys());
    let differ: Vec<&String> = a
        .keys()
        .chain(b.keys())
        .filter(|k| a.get(*k) != b.get(*k))
        .collect();
    assert!(
        differ.is_empty(),
        "the repository's bundle and asp-pack's differ in what they hold: {differ:?} {:?}",
        differ.first().map(|k| (
            String::from_utf8_lossy(a.get(*k).map_or(&[][..], |v| &v[..])),
            String::from_utf8_lossy(b.get(*k).map_or(&[][..], |v| &v[..]))
        ))
    );

    // A new snapshot beside it, then forget and prune read every snapshot.
    backup(&home_in(t.path()), &repo);
    for args in [&["forget", "--keep-last", "1"][..], &["prune", "-q"]] {
        asp().args(args).arg("--repo").arg(&repo).assert().success();
    }
    check(&repo, true);
}

/// `asp restore --session ID --to codex` carries a session backed up from Claude Code without
/// being told which snapshot holds it, though the repository's newest Codex snapshot does not
/// have it; an id no snapshot holds is a usage error, and sessions in different snapshots
/// are named with where each one is.
#[test]
fn restoring_a_session_finds_the_snapshot_that_holds_it() {
    let (t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let codex = t.path().join("codex");
    copy_tree(&samples().join("codex"), &codex);
    let out = backup_run(&codex, &repo, &["--from", "codex", "-q"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let codex_session = sessions_in(&repo)
        .into_iter()
        .find(|s| s["harness"] == "codex")
        .unwrap()["id"]
        .as_str()
        .unwrap()
        .to_owned();

    let fresh = t.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    let restore_sessions = |ids: &[&str]| {
        let mut cmd = asp();
        cmd.args(["restore", "--json", "--to", "codex", "--home"])
            .arg(&fresh)
            .arg("--repo")
            .arg(&repo);
        for id in ids {
            cmd.args(["--session", id]);
        }
        cmd.output().unwrap()
    };
    let out = restore_sessions(&[A]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(matches!(out.status.code(), Some(0 | 3)), "{err}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(answer["sessions"].get(A).is_some(), "{answer}");

    let out = restore_sessions(&["00000000-0000-4000-8000-000000000000"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("holds session 00000000-0000-4000-8000-000000000000 (asp sessions")
            && !err.contains("did you mean"),
        "{err}"
    );
    let out = restore_sessions(&[&A[..8]]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("a session id is given whole: did you mean {A}?")),
        "{err}"
    );

    let out = restore_sessions(&[A, &codex_session]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no one snapshot holds all these sessions")
            && err.contains(&format!("{A} in "))
            && err.contains(&format!("{codex_session} in ")),
        "{err}"
    );
}

/// `asp sessions` shows which home a session was backed up from only when there are several
/// (two machines' backups, or a machine's and a pull, list the same sessions twice), and its
/// JSON always names the home.
#[test]
fn sessions_of_several_homes_say_which_home() {
    let t = tmp();
    let repo = t.path().join("repo");
    let first = home_in(&t.path().join("a"));
    backup(&first, &repo);
    let list = |repo: &Path| {
        let out = asp()
            .args(["sessions", "--repo"])
            .arg(repo)
            .output()
            .unwrap();
        assert!(out.status.success());
        String::from_utf8(out.stdout).unwrap()
    };
    let one = list(&repo);
    assert!(one.starts_with("ID ") && !one.contains(" HOME "), "{one}");
    assert!(
        sessions_in(&repo)
            .iter()
            .all(|s| s["home"].as_str().is_some_and(|h| h.ends_with("/a/home"))),
        "{:?}",
        sessions_in(&repo)
    );
    let second = home_in(&t.path().join("b"));
    backup(&second, &repo);
    let two = list(&repo);
    assert!(two.lines().next().unwrap().contains(" HOME "), "{two}");
    let line = two.lines().find(|l| l.starts_with(A)).unwrap();
    assert!(
        line.contains("/a/home ") || line.contains("/b/home "),
        "{two}"
    );
    assert_eq!(two.lines().filter(|l| l.starts_with(A)).count(), 2, "{two}");
}

/// A backup keeps Claude Code's `settings.json` byte for byte: when its `env` sets a
/// credential written out in full, the backup says so (naming the variable, never its
/// value), so that whoever pushes the repository knows what it holds. The sample's own `env`
/// (Node options, a traffic switch) holds none and is not called one.
#[test]
fn a_backup_says_when_settings_json_sets_a_credential() {
    let t = tmp();
    let home = home_in(t.path());
    let out = backup_run(&home, &t.path().join("plain"), &["--from", "claude-code"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!said.contains("written out in full"), "{said}");

    let settings = home.join(".claude/settings.json");
    let mut doc: Value = serde_json::from_slice(&fs::read(&settings).unwrap()).unwrap();
    doc["env"]["ANTHROPIC_API_KEY"] = json!("sk-ant-api03-live");
    doc["env"]["GITHUB_TOKEN"] = json!("${GITHUB_TOKEN}");
    fs::write(&settings, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();
    let out = backup_run(&home, &t.path().join("keyed"), &["--from", "claude-code"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(
            "settings.json: holds a credential written out in full (env.ANTHROPIC_API_KEY): \
             the backup keeps the file as it is, and the snapshots asp push sends carry it"
        ),
        "{said}"
    );
    assert!(!said.contains("sk-ant-api03-live"), "{said}");
}

/// The same note for a settings file with comments, which Gemini CLI (and Qwen Code, and
/// OpenCode, with trailing commas too) reads: the backup keeps Gemini's `settings.json` byte
/// for byte, comments and all, and says when its `env` sets a credential.
#[test]
fn a_backup_says_when_a_settings_json_with_comments_sets_a_credential() {
    let t = tmp();
    let home = t.path().join("home");
    copy_tree(&samples().join("gemini"), &home);
    let settings = home.join(".gemini/settings.json");
    let text = fs::read_to_string(&settings).unwrap();
    let text = text.replacen(
        '{',
        "{\n  // The key for this machine only.\n  \"env\": {\n    \"GEMINI_API_KEY\": \
         \"AIza-live-key\", /* not a reference */\n    \"GITHUB_TOKEN\": \"${GITHUB_TOKEN}\"\n  },",
        1,
    );
    fs::write(&settings, &text).unwrap();
    age(&home, Duration::from_secs(3600));
    let out = backup_run(&home, &t.path().join("repo"), &["--from", "gemini"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(
            "settings.json: holds a credential written out in full (env.GEMINI_API_KEY): \
             the backup keeps the file as it is, and the snapshots asp push sends carry it"
        ),
        "{said}"
    );
    assert!(!said.contains("AIza-live-key"), "{said}");
}

/// The top-level transcripts of each project folder of a Claude Code home, sorted by name (the
/// session id).
fn project_transcripts(home: &Path) -> Vec<Vec<PathBuf>> {
    let mut out = Vec::new();
    for p in fs::read_dir(home.join(".claude/projects")).unwrap() {
        let mut files: Vec<PathBuf> = fs::read_dir(p.unwrap().path())
            .unwrap()
            .map(|f| f.unwrap().path())
            .filter(|f| f.extension().is_some_and(|e| e == "jsonl"))
            .collect();
        files.sort();
        out.push(files);
    }
    out.sort();
    out
}

/// Layout 4 in a repository (spec/aspstate.md §4.1): a backup compresses the transcripts it
/// reads against their project's dictionary, also when the transcript that dictionary is made
/// of was taken from the snapshot before (read back from the repository); what it stores
/// checks out, restores byte for byte and packs into a layout 4 bundle.
#[cfg(feature = "claude-code")]
#[test]
fn a_backup_compresses_transcripts_against_their_projects_dictionary() {
    use asp_format::bundle::oci::DICTIONARY_LAYER;
    let t = tmp();
    let home = crate::project_dictionaries::long_claude_home(t.path());
    age(&home, Duration::from_secs(3600));
    let repo = t.path().join("repo");
    backup(&home, &repo);
    check(&repo, true);

    // A project with a transcript of a MiB or more, and another transcript of it: the
    // dictionary is made of the first of the long ones by id (file name), so the other
    // one changes without it.
    let (source, other) = project_transcripts(&home)
        .into_iter()
        .filter_map(|files| {
            let source = files
                .iter()
                .find(|f| fs::metadata(f).unwrap().len() >= 1 << 20)?
                .clone();
            let other = files.into_iter().find(|f| *f != source)?;
            Some((source, other))
        })
        .next()
        .expect("a project with a long transcript and another");
    let text = append_turn(&other, 1);
    let v = backup(&home, &repo);
    assert_eq!(v["changed"], 1, "{v}");
    check(&repo, true);

    let bundle = t.path().join("repo.aspstate");
    pack_from_repo(&repo, &bundle).assert().success();
    asp().arg("verify").arg(&bundle).assert().success();
    let b = asp_format::bundle::Bundle::open(&bundle).unwrap();
    assert_eq!(b.layout().layout_version, "4.0.0");
    let changed = asp_format::Descriptor::of(text.as_bytes());
    let (_, dictionary) = b.layer_of(&changed.digest).expect("the changed transcript");
    let dictionary = dictionary.expect("the changed transcript has a dictionary");
    let (layer, _) = b.layer_of(&dictionary).unwrap();
    let media = b
        .image_manifest()
        .unwrap()
        .layers
        .iter()
        .find(|l| l.digest == layer)
        .unwrap()
        .media_type
        .clone();
    assert!(media.starts_with(DICTIONARY_LAYER), "{media}");
    let head = fs::read(&source).unwrap();
    assert_eq!(
        dictionary,
        asp_format::Descriptor::of(&head[..1 << 20]).digest,
        "the dictionary is the first MiB of the project's least long transcript"
    );

    let to = t.path().join("restored");
    restore(&repo, &to, &[]);
    let rel = other.strip_prefix(&home).unwrap();
    assert!(fs::read(to.join(rel)).unwrap() == text.as_bytes());
}

/// A session let go (`asp forget --session`) leaves none of its text in the repository once
/// the snapshots before are forgotten and pruned, though its transcript's first MiB was its
/// project's dictionary (spec/aspstate.md §4.1), which the layers of the project's other
/// transcripts named: they are compressed again against a dictionary of a kept transcript,
/// and restore byte for byte (review helper-133, 2: the dictionary stayed, and `asp push`
/// would have uploaded it).
#[cfg(feature = "claude-code")]
#[test]
fn a_session_let_go_leaves_none_of_its_text_in_a_projects_dictionary() {
    let t = tmp();
    let home = crate::project_dictionaries::long_claude_home(t.path());
    age(&home, Duration::from_secs(3600));
    let repo = t.path().join("repo");
    backup(&home, &repo);
    // The first transcript of a MiB or more of a project with others (by id, the file name):
    // its first MiB is the project's dictionary.
    let (source, others) = project_transcripts(&home)
        .into_iter()
        .find_map(|files| {
            let source = files
                .iter()
                .find(|f| fs::metadata(f).unwrap().len() >= 1 << 20)?
                .clone();
            let others: Vec<PathBuf> = files.into_iter().filter(|f| *f != source).collect();
            (!others.is_empty()).then_some((source, others))
        })
        .expect("a project with a long transcript and others");
    let head = fs::read(&source).unwrap()[..1 << 20].to_vec();
    let id = source.file_stem().unwrap().to_str().unwrap().to_owned();
    // What only that transcript holds: its first 64 KiB, its first line among them.
    let secret = &head[..1 << 16];
    let holding_it = |repo: &Path| -> Vec<String> {
        let scratch = t.path().join("decoded");
        files_under(&repo.join("blobs/sha256"))
            .into_iter()
            .filter(|blob| {
                // What decodes alone: a dictionary, a document, a layer without a dictionary.
                let ok = std::process::Command::new("zstd")
                    .args(["-q", "-d", "-f", "-o"])
                    .arg(&scratch)
                    .arg(blob)
                    .output()
                    .unwrap()
                    .status
                    .success();
                let bytes = if ok {
                    fs::read(&scratch).unwrap()
                } else {
                    fs::read(blob).unwrap()
                };
                bytes.windows(secret.len()).any(|w| w == secret)
            })
            .map(|b| b.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    };
    assert!(
        !holding_it(&repo).is_empty(),
        "the backup holds the session"
    );

    let out = asp()
        .args(["forget", "--json", "--session", &id, "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let dropped: Value = serde_json::from_slice(&out.stdout).unwrap();
    let again = dropped["dropped"]["compressedAgain"]
        .as_array()
        .expect("compressedAgain");
    assert!(!again.is_empty(), "{dropped}");
    for args in [&["forget", "-q", "--keep-last", "1"][..], &["prune", "-q"]] {
        asp().args(args).arg("--repo").arg(&repo).assert().success();
    }
    assert_eq!(holding_it(&repo), Vec::<String>::new(), "gone after prune");
    check(&repo, true);
    let to = t.path().join("restored");
    restore(&repo, &to, &[]);
    for f in &others {
        let rel = f.strip_prefix(&home).unwrap();
        assert!(
            fs::read(to.join(rel)).unwrap() == fs::read(f).unwrap(),
            "{rel:?}"
        );
    }
    assert!(!to.join(source.strip_prefix(&home).unwrap()).exists());
}

/// Pads the first prompt of the transcript at `file` so the file is `size` bytes.
fn pad_transcript(file: &Path, size: usize) {
    let text = fs::read_to_string(file).unwrap();
    let mut lines: Vec<String> = text.split('\n').map(str::to_owned).collect();
    let at = lines
        .iter()
        .position(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| v["type"] == "user" && v["message"]["content"].is_string())
        })
        .expect("a prompt");
    let mut v: Value = serde_json::from_str(&lines[at]).unwrap();
    let base = v["message"]["content"].as_str().unwrap().to_owned();
    v["message"]["content"] = Value::from(format!("{base} "));
    lines[at] = serde_json::to_string(&v).unwrap();
    let short = size - lines.join("\n").len();
    v["message"]["content"] = Value::from(format!(
        "{base} {}",
        "pad ".repeat(short / 4) + &"x".repeat(short % 4)
    ));
    lines[at] = serde_json::to_string(&v).unwrap();
    fs::write(file, lines.join("\n")).unwrap();
    assert_eq!(fs::metadata(file).unwrap().len(), size as u64);
}

/// A project's new dictionary, once the session its dictionary was made of is let go, may be a
/// kept transcript whole (one of exactly 256 KiB): its layer is stored with the snapshot
/// (review helper-134, 1: the snapshot named a layer never written, and the session it held
/// restored as lost), and the repository checks out.
#[cfg(feature = "claude-code")]
#[test]
fn a_dictionary_that_is_a_kept_transcript_whole_is_stored_when_a_session_is_let_go() {
    let t = tmp();
    let home = home_in(t.path());
    let gateway = home.join(GATEWAY);
    let first = "0e06340e-3c10-486d-a4a9-8763cc8a6c00";
    pad_transcript(&gateway.join(format!("{first}.jsonl")), 300_000);
    pad_transcript(&gateway.join(format!("{C}.jsonl")), 1 << 18);
    age(&home, Duration::from_secs(3600));
    let file = format!("{GATEWAY}/{C}.jsonl");
    let original = fs::read(home.join(&file)).unwrap();
    let repo = t.path().join("repo");
    backup(&home, &repo);
    // A dry run says which would be compressed again, as the run then does.
    for dry in [true, false] {
        let out = asp()
            .args(["forget", "--json", "--session", first, "--repo"])
            .arg(&repo)
            .args(dry.then_some("--dry-run"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let dropped: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            dropped["dropped"]["compressedAgain"],
            json!([C]),
            "{dropped}"
        );
    }
    check(&repo, true);
    let fresh = t.path().join("fresh");
    restore(&repo, &fresh, &["--session", C]);
    assert!(fs::read(fresh.join(&file)).unwrap() == original);
}

/// A small project's dictionary grows with its transcripts (spec/aspstate.md §4.1): a
/// project whose transcripts are all under 512 KiB takes the first 256 KiB of its least one
/// that holds them; once a transcript of it passes 512 KiB, the next backup compresses what it
/// reads against that transcript's first 512 KiB, and the transcripts it did not read keep
/// their layers against the dictionary before. Both dictionaries stay in the repository,
/// which checks out, restores byte for byte and packs into a bundle that verifies.
#[cfg(feature = "claude-code")]
#[test]
fn a_small_projects_dictionary_grows_with_its_transcripts() {
    const KIB: u64 = 1 << 10;
    let t = tmp();
    let home = crate::project_dictionaries::long_claude_home(t.path());
    age(&home, Duration::from_secs(3600));
    let size = |f: &PathBuf| fs::metadata(f).unwrap().len();
    // A project whose transcripts are all under 512 KiB, one of them at least 256 KiB: its
    // dictionary is the first 256 KiB of the least of those (by id, the file name); another
    // transcript of it will grow past 512 KiB.
    let (source, grown) = project_transcripts(&home)
        .into_iter()
        .filter(|files| files.iter().all(|f| size(f) < 512 * KIB))
        .find_map(|files| {
            let source = files.iter().find(|f| size(f) >= 256 * KIB)?.clone();
            let grown = files.into_iter().find(|f| *f != source)?;
            Some((source, grown))
        })
        .expect("a project under 512 KiB with two transcripts, one of 256 KiB");
    let repo = t.path().join("repo");
    backup(&home, &repo);
    check(&repo, true);

    let dictionary_of = |bundle: &Path, file: &Path| {
        let b = asp_format::bundle::Bundle::open(bundle).unwrap();
        let body = asp_format::Descriptor::of(&fs::read(file).unwrap());
        b.layer_of(&body.digest).expect("a transcript's layer").1
    };
    let head = |file: &Path, length: u64| {
        asp_format::Descriptor::of(&fs::read(file).unwrap()[..length as usize]).digest
    };
    let before = t.path().join("before.aspstate");
    pack_from_repo(&repo, &before).assert().success();
    let small = head(&source, 256 * KIB);
    for f in [&source, &grown] {
        assert_eq!(dictionary_of(&before, f), Some(small), "{}", f.display());
    }

    // `grown` passes 512 KiB (a turn appended again and again).
    let mut n = 100;
    while size(&grown) < 520 * KIB {
        append_turn(&grown, n);
        n += 1;
    }
    let text = fs::read(&grown).unwrap();
    let v = backup(&home, &repo);
    assert_eq!(v["changed"], 1, "{v}");
    check(&repo, true);
    let after = t.path().join("after.aspstate");
    pack_from_repo(&repo, &after).assert().success();
    asp().arg("verify").arg(&after).assert().success();
    let large = head(&grown, 512 * KIB);
    assert_eq!(
        dictionary_of(&after, &grown),
        Some(large),
        "what the backup read goes against the first 512 KiB of the grown transcript"
    );
    assert_eq!(
        dictionary_of(&after, &source),
        Some(small),
        "the transcript the backup did not read keeps its layer"
    );
    // Packed from the home, the rule applies to every transcript of the project.
    let fresh = t.path().join("fresh.aspstate");
    pack_home_to(&home, &fresh);
    for f in [&source, &grown] {
        assert_eq!(dictionary_of(&fresh, f), Some(large), "{}", f.display());
    }

    let to = t.path().join("restored");
    restore(&repo, &to, &[]);
    assert!(fs::read(to.join(grown.strip_prefix(&home).unwrap())).unwrap() == text);
    assert!(
        projects(&to) == projects(&home),
        "the transcripts come back byte for byte"
    );
}

/// A project's dictionary whose layer went missing from the repository (layout 4): the next
/// backup, which takes the transcript the dictionary is made of from the snapshot before,
/// cannot read it back, so it gives the project no dictionary, finds the missing layer, reads
/// the sessions that need it again and stores it anew, as for any missing layer.
#[cfg(feature = "claude-code")]
#[test]
fn a_backup_repairs_a_missing_project_dictionary() {
    use asp_format::bundle::oci::DICTIONARY_LAYER;
    let t = tmp();
    let home = crate::project_dictionaries::long_claude_home(t.path());
    age(&home, Duration::from_secs(3600));
    let repo = t.path().join("repo");
    backup(&home, &repo);
    let bundle = t.path().join("before.aspstate");
    pack_from_repo(&repo, &bundle).assert().success();
    let image = asp_format::bundle::Bundle::open(&bundle)
        .unwrap()
        .image_manifest()
        .unwrap()
        .clone();
    let dictionaries: Vec<_> = image
        .layers
        .iter()
        .filter(|l| l.media_type.starts_with(DICTIONARY_LAYER))
        .collect();
    assert!(!dictionaries.is_empty());
    for d in &dictionaries {
        fs::remove_file(repo.join("blobs/sha256").join(d.digest.hex())).unwrap();
    }
    // Another session of every project changes, so each backup reads some of each.
    let mut n = 10;
    for files in project_transcripts(&home) {
        if let Some(last) = files.last().filter(|_| files.len() > 1) {
            append_turn(last, n);
            n += 1;
        }
    }
    let out = backup_run(&home, &repo, &["--from", "claude-code", "--json", "-q"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check(&repo, true);
    let to = t.path().join("restored");
    restore(&repo, &to, &[]);
    assert!(
        projects(&to) == projects(&home),
        "the transcripts come back byte for byte"
    );
}

/// A path that is not a repository is an error (exit 1), as a `--home` without the harness's
/// store is: nothing there to read.
#[test]
fn a_path_that_is_not_a_repository_exits_1() {
    let t = tmp();
    // Nor does a backup make one in a folder of other files.
    let home = home_in(t.path());
    let documents = t.path().join("documents");
    fs::create_dir_all(&documents).unwrap();
    fs::write(documents.join("letter.txt"), "mine").unwrap();
    let out = backup_run(&home, &documents, &["--from", "claude-code"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("is not an asp repository"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(fs::read_dir(&documents).unwrap().count(), 1);
    for cmd in ["snapshots", "sessions", "check", "prune"] {
        asp()
            .args([cmd, "--repo"])
            .arg(t.path().join("nowhere"))
            .assert()
            .code(1)
            .stderr(predicate::str::contains("is not an asp repository"));
    }
}

/// A configuration file that trusts folders by their path (Gemini CLI's
/// `trustedFolders.json`, Codex's `config.toml` projects), or MCP servers to run without asking
/// (Gemini CLI's `settings.json`), is said when a restore writes it; with
/// `--no-grants` the file without that trust is written (none when nothing is left), and that
/// is said.
#[test]
fn restored_folder_trust_is_said_or_left_out() {
    // The Gemini sample's file, with a folder not trusted and a parent trusted added.
    let gemini_trust = "{\n  \"/home/dev/code/shop\": \"TRUST_FOLDER\",\n  \"/home/dev/scratch\": \"DO_NOT_TRUST\",\n  \"/home/dev/work/Shop\": \"TRUST_PARENT\"\n}\n";
    for (harness, file, what, left) in [
        (
            "gemini",
            ".gemini/trustedFolders.json",
            "Gemini CLI trusts /home/dev/code/shop, /home/dev/work (the parent of /home/dev/work/Shop)",
            Some("\"/home/dev/scratch\": \"DO_NOT_TRUST\""),
        ),
        (
            "codex",
            ".codex/config.toml",
            "Codex trusts /home/dev/shop, /home/dev/notes",
            Some("[mcp_servers.docs]"),
        ),
    ] {
        let t = tmp();
        let home = t.path().join("home");
        copy_dir(&samples().join(harness), &home);
        if harness == "gemini" {
            fs::write(home.join(file), gemini_trust).unwrap();
        }
        let repo = t.path().join("repo");
        let out = backup_run(&home, &repo, &["--from", harness]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let restore_into = |name: &str, extra: &[&str]| {
            let to = t.path().join(name);
            let said = restore_said(&repo, &to, harness, extra);
            (to, said)
        };
        let (to, said) = restore_into("trusting", &[]);
        assert!(
            said.contains(&format!("granted as the backup had it: {what}")),
            "{harness}: {said}"
        );
        assert_eq!(
            fs::read(to.join(file)).unwrap(),
            fs::read(home.join(file)).unwrap(),
            "{harness}: byte for byte"
        );
        let (to, said) = restore_into("wary", &["--no-grants"]);
        assert!(
            said.contains(&format!("not granted (--no-grants): {what}")),
            "{harness}: {said}"
        );
        let kept = fs::read_to_string(to.join(file)).unwrap();
        for trust in ["TRUST_FOLDER", "TRUST_PARENT", "\"trusted\""] {
            assert!(!kept.contains(trust), "{harness}: {kept}");
        }
        if let Some(left) = left {
            assert!(kept.contains(left), "the rest of the file stays: {kept}");
        }
    }
    // A file of nothing but trust is not written at all.
    let t = tmp();
    let home = t.path().join("home");
    copy_dir(&samples().join("gemini"), &home);
    let repo = t.path().join("repo");
    assert!(
        backup_run(&home, &repo, &["--from", "gemini"])
            .status
            .success()
    );
    let to = t.path().join("wary");
    let said = restore_said(&repo, &to, "gemini", &["--no-grants"]);
    assert!(!to.join(".gemini/trustedFolders.json").exists());
    assert!(
        to.join(".gemini/settings.json").exists(),
        "the rest comes back"
    );
    // An MCP server Gemini CLI runs without asking (`trust: true` in settings.json) is a
    // grant too: said, and left out with --no-grants, the rest of the file kept.
    let grant = "Gemini CLI runs the tools of MCP server issues without asking (trust: true)";
    assert!(
        said.contains(&format!("not granted (--no-grants): {grant}")),
        "{said}"
    );
    let settings: Value =
        serde_json::from_slice(&fs::read(to.join(".gemini/settings.json")).unwrap()).unwrap();
    assert!(
        settings["mcpServers"]["issues"].get("trust").is_none(),
        "{settings}"
    );
    assert_eq!(
        settings["mcpServers"]["metrics"]["trust"], false,
        "{settings}"
    );
    let said = restore_said(&repo, &t.path().join("trusting"), "gemini", &[]);
    assert!(
        said.contains(&format!("granted as the backup had it: {grant}")),
        "{said}"
    );
    // Moved with --map-path, the sessions move, and a file restored as it was is said to
    // name the old folders still.
    let said = restore_said(
        &repo,
        &t.path().join("moved"),
        "gemini",
        &["--map-path", "/home/dev=/Users/dev"],
    );
    assert!(
        said.contains(
            "configuration: .gemini/trustedFolders.json is restored as it was, and names \
             /home/dev which --map-path moves"
        ),
        "{said}"
    );
}

/// A project's own MCP server (local scope) is not part of the state, but a backup keeps it
/// with the configuration: the backup says it is kept, where a pack says it is left out.
#[test]
fn a_local_scope_mcp_server_is_kept_by_a_backup_and_left_out_by_a_pack() {
    let t = tmp();
    let home = home_in(t.path());
    let out = backup_run(&home, &t.path().join("repo"), &["--from", "claude-code"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let line = said
        .lines()
        .find(|l| l.contains("\"design-system\""))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(
        line.starts_with("note: ") && line.contains("kept with Claude Code's configuration"),
        "{line}"
    );
    let out = asp_pack()
        .args(["--from", "claude-code", "--home"])
        .arg(&home)
        .arg("-o")
        .arg(t.path().join("b.aspstate"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    let line = said
        .lines()
        .find(|l| l.contains("\"design-system\""))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(line.starts_with("left out: "), "{line}");
}

/// A session continued in the home since the backup (Claude Code appends to the transcript it
/// resumes) holds every line the backup has: restoring it writes no copy beside it, says why,
/// and maps it to itself. One changed in the middle is still kept beside.
#[test]
fn a_session_continued_since_the_backup_is_already_there() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let file = home.join(SHOP).join(format!("{A}.jsonl"));
    append_turn(&file, 1);
    let before = files_in(&home);
    let restore = || {
        asp()
            .args(["restore", "--json", "--to", "claude-code", "--session", A])
            .arg("--home")
            .arg(&home)
            .arg("--repo")
            .arg(&repo)
            .output()
            .unwrap()
    };
    let out = restore();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["sessions"][A], A, "{answer}");
    assert!(
        answer["_meta"]["asp"]["alreadyThere"]
            .as_array()
            .unwrap()
            .contains(&json!(A)),
        "{answer}"
    );
    assert!(
        said.contains("the transcript here continues the one carried"),
        "{said}"
    );
    assert_eq!(answer["notTaken"], json!([]), "{answer}");
    assert_eq!(files_in(&home), before, "nothing written");

    // A line changed in the middle: not a continuation, kept beside under another id.
    let text = fs::read_to_string(&file).unwrap();
    fs::write(
        &file,
        text.replacen("\"type\":\"user\"", "\"type\": \"user\"", 1),
    )
    .unwrap();
    let answer: Value = serde_json::from_slice(&restore().stdout).unwrap();
    assert_ne!(answer["sessions"][A], A, "{answer}");
}

/// The other way: the session went on elsewhere (on the other laptop, backed up there) and
/// the version here is the start of the one restored. It is brought up to date under its own
/// id, not kept beside as a copy with another id each round trip (new-user trial helper-136,
/// 1); what was here is the start of what is there now, so nothing is lost. A dry run says
/// the same and writes nothing.
#[test]
fn a_session_continued_elsewhere_is_brought_up_to_date() {
    let (_t, home, repo) = home_and_repo();
    let file = home.join(SHOP).join(format!("{A}.jsonl"));
    let here = fs::read(&file).unwrap();
    let todos = home.join(format!(".claude/todos/{A}-agent-{A}.json"));
    let todos_here = fs::read(&todos).unwrap();
    let continued = append_turn(&file, 7);
    append_turn(&file, 8);
    let continued = fs::read(&file).unwrap().len().max(continued.len());
    // Its todo list changed as it went on: the newer one comes with it (review helper-138, 3).
    fs::write(
        &todos,
        b"[{\"content\":\"ship it\",\"status\":\"completed\"}]",
    )
    .unwrap();
    backup(&home, &repo);
    let backed_up = fs::read(&file).unwrap();
    let todos_backed_up = fs::read(&todos).unwrap();
    assert_eq!(backed_up.len(), continued);
    fs::write(&file, &here).unwrap();
    fs::write(&todos, &todos_here).unwrap();
    let restore = |extra: &[&str]| {
        asp()
            .args(["restore", "--json", "--to", "claude-code", "--session", A])
            .args(extra)
            .arg("--home")
            .arg(&home)
            .arg("--repo")
            .arg(&repo)
            .output()
            .unwrap()
    };
    let before = files_in(&home);
    let out = restore(&["--dry-run"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["_meta"]["asp"]["updated"], json!([A]), "{answer}");
    assert_eq!(files_in(&home), before, "a dry run writes nothing");

    let out = restore(&["--strict"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "nothing left out: {said}");
    let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(answer["sessions"][A], A, "{answer}");
    assert_eq!(answer["_meta"]["asp"]["updated"], json!([A]), "{answer}");
    assert!(said.contains("brought up to date"), "{said}");
    assert_eq!(
        fs::read(&file).unwrap(),
        backed_up,
        "the continued version is here"
    );
    assert_eq!(
        fs::read(&todos).unwrap(),
        todos_backed_up,
        "and its todo list"
    );
    let transcripts = files_in(&home)
        .keys()
        .filter(|p| p.ends_with(".jsonl") && p.contains("/projects/"))
        .count();
    let before_transcripts = before
        .keys()
        .filter(|p| p.ends_with(".jsonl") && p.contains("/projects/"))
        .count();
    assert_eq!(transcripts, before_transcripts, "no copy beside it");

    // Again: the same now, already there.
    let answer: Value = serde_json::from_slice(&restore(&[]).stdout).unwrap();
    assert!(
        answer["_meta"]["asp"]["alreadyThere"]
            .as_array()
            .unwrap()
            .contains(&json!(A)),
        "{answer}"
    );
}

/// Harnesses that share a folder come back whole from one `asp restore --to all`: Copilot
/// CLI's and OpenCode's own skill of a name Codex's `~/.agents/skills` also has (restored a
/// moment before, as the home had both), and OpenCode's own `AGENTS.md` beside the
/// `CLAUDE.md` Claude Code's restore wrote: each back at its own path, byte for byte, the
/// other copy named in a note (found by a new user's trial: both were left out, exit 0).
#[test]
fn restore_to_all_brings_back_what_harnesses_sharing_a_folder_each_had() {
    let t = tmp();
    let home = t.path().join("home");
    for h in ["claude-code", "opencode", "copilot", "codex"] {
        copy_dir(&samples().join(h), &home);
    }
    age(&home, Duration::from_secs(3600));
    let repo = t.path().join("repo");
    let out = backup_run(&home, &repo, &["--from", "all", "-q"]);
    assert!(out.status.success(), "{out:?}");
    let fresh = t.path().join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    let out = asp()
        .args(["restore", "--to", "all", "--home"])
        .arg(&fresh)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{said}{out:?}");
    assert!(!said.contains("not taken"), "{said}");
    for dir in [
        ".copilot/skills/release-notes",
        ".config/opencode/skills/release-notes",
        ".agents/skills/release-notes",
    ] {
        assert!(!files_in(&home.join(dir)).is_empty(), "{dir}");
        assert_eq!(
            files_in(&fresh.join(dir)),
            files_in(&home.join(dir)),
            "{dir}: byte for byte"
        );
    }
    for file in [".config/opencode/AGENTS.md", ".claude/CLAUDE.md"] {
        assert_eq!(
            fs::read(fresh.join(file)).unwrap(),
            fs::read(home.join(file)).unwrap(),
            "{file}"
        );
    }
    let noted = String::from_utf8_lossy(&out.stderr);
    assert!(
        noted.contains(
            "release-notes is back where Copilot CLI had it; a different skill named \
             release-notes is already in"
        ),
        "{noted}"
    );
}

/// A home holding the Claude Code, Codex and Gemini CLI samples, backed up with `--from all`
/// into a repository, and an empty home to restore into: (home, repository, empty home).
fn three_harnesses_backed_up(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let home = dir.join("home");
    for h in ["claude-code", "codex", "gemini"] {
        copy_dir(&samples().join(h), &home);
    }
    age(&home, Duration::from_secs(3600));
    let repo = dir.join("repo");
    let out = backup_run(&home, &repo, &["--from", "all", "-q"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let fresh = dir.join("fresh");
    fs::create_dir_all(&fresh).unwrap();
    (home, repo, fresh)
}

/// `asp restore --to all` whose output's reader went away (`| head -1`) still restores every
/// harness, and exits as a closed pipe ends a command, 141 (new-user trial helper-124, 3: it
/// stopped after the first harness, with nothing said).
#[test]
#[cfg(unix)]
fn restore_to_all_restores_every_harness_when_its_output_is_closed() {
    let t = tmp();
    let (_, repo, fresh) = three_harnesses_backed_up(t.path());
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("asp"))
        .args(["restore", "--to", "all", "--home"])
        .arg(&fresh)
        .arg("--repo")
        .arg(&repo)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The reader goes away before the first line is written.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(141), "{out:?}");
    for dir in [".claude/projects", ".codex/sessions", ".gemini/tmp"] {
        assert!(!files_in(&fresh.join(dir)).is_empty(), "{dir}: {out:?}");
    }
}

/// A lost machine with several harnesses comes back in one command: `asp restore --to all`
/// restores the newest snapshot of every harness into its own harness, as `asp backup --from
/// all` took them.
#[test]
fn restore_to_all_brings_every_harness_back() {
    let t = tmp();
    let (home, repo, fresh) = three_harnesses_backed_up(t.path());
    let out = asp()
        .args(["restore", "--to", "all", "--home"])
        .arg(&fresh)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{said}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for h in ["claude-code", "codex", "gemini"] {
        assert!(said.contains(&format!(" into {h} (")), "{h}: {said}");
    }
    for dir in [".claude/projects", ".codex/sessions", ".gemini/tmp"] {
        let files = |root: &Path| -> Vec<(String, Vec<u8>)> {
            files_in(&root.join(dir))
                .into_iter()
                .filter(|(p, _)| p.ends_with(".jsonl"))
                .collect()
        };
        assert!(!files(&home).is_empty(), "{dir}");
        assert_eq!(files(&fresh), files(&home), "{dir}: byte for byte");
    }
    // With --json, one array of answers, each naming its harness.
    let again = t.path().join("again");
    fs::create_dir_all(&again).unwrap();
    let out = asp()
        .args(["restore", "--to", "all", "--json", "--home"])
        .arg(&again)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    let answers: Value = serde_json::from_slice(&out.stdout).unwrap();
    let harnesses: Vec<&str> = answers
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["harness"].as_str().unwrap())
        .collect();
    assert_eq!(harnesses, ["claude-code", "codex", "gemini"]);
    assert!(
        answers[1]["sessions"]
            .as_object()
            .is_some_and(|m| !m.is_empty())
    );
    // It restores whole snapshots only: a session or a snapshot names its harness.
    asp()
        .args(["restore", "--to", "all", "--session", A, "--home"])
        .arg(&fresh)
        .arg("--repo")
        .arg(&repo)
        .assert()
        .code(2)
        .stderr(predicate::str::contains("name the harness"));
}

/// A backup of `home` into `repo` started while the repository's lock is held, with the first
/// line it says on stderr (read: so it has reached the wait), and the rest of its stderr.
fn backup_waiting(
    home: &Path,
    repo: &Path,
    extra: &[&str],
) -> (
    std::process::Child,
    std::io::BufReader<std::process::ChildStderr>,
    String,
) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin!("asp"))
        .args(["backup", "--from", "claude-code", "-q"])
        .args(extra)
        .arg("--home")
        .arg(home)
        .arg("--repo")
        .arg(repo)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    err.read_line(&mut line).unwrap();
    (child, err, line)
}

/// Codex, Gemini CLI and Qwen Code read one instructions file, so instructions carried from
/// another agent are added after what is there. Their own backup restored is another matter:
/// the file there, changed since, is the person's newer version. It stays as it is, and the
/// backed-up instructions are written beside it as `<file>.asp-restored`, as a
/// configuration file's are; adding the older version after it would double most of it.
#[test]
fn a_restore_keeps_instructions_changed_since_and_writes_the_backup_beside() {
    for (harness, file) in [
        ("codex", ".codex/AGENTS.md"),
        ("gemini", ".gemini/GEMINI.md"),
        ("qwen", ".qwen/QWEN.md"),
    ] {
        let t = tmp();
        let home = t.path().join("home");
        copy_tree(&samples().join(harness), &home);
        age(&home, Duration::from_secs(3600));
        let repo = t.path().join("repo");
        let out = backup_run(&home, &repo, &["--from", harness, "-q"]);
        assert_eq!(out.status.code(), Some(0), "{harness}: {out:?}");
        let backed_up = fs::read_to_string(home.join(file)).unwrap();
        let mine = backed_up.replacen('\n', "\nAlways run the linter first.\n", 1);
        fs::write(home.join(file), &mine).unwrap();

        let out = asp()
            .args(["restore", "--to", harness, "--json", "-q", "--home"])
            .arg(&home)
            .arg("--repo")
            .arg(&repo)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{harness}: {out:?}");
        assert_eq!(
            fs::read_to_string(home.join(file)).unwrap(),
            mine,
            "{harness}: the newer file stays as it is"
        );
        let beside = fs::read_to_string(home.join(format!("{file}.asp-restored"))).unwrap();
        // (Gemini CLI's and Qwen Code's instructions are the file without its memories.)
        assert!(
            !beside.trim().is_empty()
                && beside.lines().all(|l| backed_up.lines().any(|b| b == l))
                && !beside.contains("Always run the linter first."),
            "{harness}: the backed-up instructions are beside it: {beside}"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(".asp-restored"), "{harness}: said: {err}");

        // Carried from another agent, instructions are still added after what is there.
        let other = t.path().join("other");
        copy_tree(&samples().join(harness), &other);
        let bundle = t.path().join("claude.aspstate");
        asp_pack()
            .args(["--from", "claude-code", "-q", "--force", "--home"])
            .arg(samples().join("claude-code"))
            .arg("-o")
            .arg(&bundle)
            .assert()
            .success();
        asp_unpack()
            .arg(&bundle)
            .args(["--to", harness, "-q", "--home"])
            .arg(&other)
            .assert()
            .success();
        let grown = fs::read_to_string(other.join(file)).unwrap();
        let theirs = fs::read_to_string(samples().join(harness).join(file)).unwrap();
        assert!(
            grown.len() > theirs.len() && !other.join(format!("{file}.asp-restored")).exists(),
            "{harness}: {grown}"
        );
    }
}

/// A server that names a file the harness keeps only in part (Claude Code's `.claude.json`,
/// which holds the account) does not make a backup keep it whole; one that names a file only
/// its owner may read is said to be left out.
#[test]
fn a_server_naming_the_harness_account_file_or_a_key_does_not_make_a_backup_keep_it() {
    use asp_format::state::{McpServer, McpStdio};
    let t = tmp();
    let home = home_in(t.path());
    let key = home.join(".claude/mcp/deploy.token");
    fs::create_dir_all(key.parent().unwrap()).unwrap();
    fs::write(&key, b"s3cret").unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&key, fs::Permissions::from_mode(0o600)).unwrap();
    }
    let servers = [McpServer::Stdio(McpStdio {
        name: "deploy".to_owned(),
        command: "sh".to_owned(),
        args: vec![
            "~/.claude.json".to_owned(),
            format!("--token={}", key.display()),
        ],
        env: Vec::new(),
        meta: None,
    })];
    let diagnostics = asp_convert::kit::report::Diagnostics::new();
    let kept = asp_convert::Store::harness("claude-code", asp_convert::Home::at(&home))
        .unwrap()
        .read_config(
            &asp_format::blob::MemoryStore::new(),
            &servers,
            &diagnostics,
        )
        .unwrap()
        .unwrap();
    let paths: Vec<&str> = kept.native.files.iter().map(|f| f.path.as_str()).collect();
    assert!(
        !paths.contains(&".claude.json") && !paths.contains(&".claude/mcp/deploy.token"),
        "{paths:?}"
    );
    #[cfg(unix)]
    assert!(
        diagnostics
            .items()
            .iter()
            .any(|d| d.file() == Some(key.as_path())
                && d.message
                    .starts_with("named by MCP server \"deploy\"; may hold keys")),
        "{:?}",
        diagnostics.items()
    );
}

/// A snapshot made for what is not a session says what: the kinds whose content changed and
/// the configuration files new, changed or gone (found by a new user's trial: an edited
/// configuration made a snapshot that read "0 new, 0 changed").
#[test]
fn a_snapshot_made_for_configuration_or_other_kinds_names_them() {
    let t = tmp();
    let home = home_in(t.path());
    let repo = t.path().join("repo");
    backup(&home, &repo);
    fs::create_dir_all(home.join(".claude/agents")).unwrap();
    fs::write(home.join(".claude/agents/reviewer.md"), b"# reviewer\n").unwrap();
    fs::remove_file(home.join(".claude/rules/security.md")).unwrap();
    let skill = home.join(".claude/skills/commit-style/SKILL.md");
    let mut text = fs::read_to_string(&skill).unwrap();
    text.push_str("\nKeep the subject under 50 characters.\n");
    fs::write(&skill, text).unwrap();
    age(&home.join(".claude"), Duration::from_secs(3600));
    let o = backup(&home, &repo);
    assert!(o["snapshot"].is_object(), "{o}");
    assert_eq!(o["new"], 0, "{o}");
    assert_eq!(o["changed"], 0, "{o}");
    assert_eq!(o["kindsChanged"], json!(["skills"]), "{o}");
    assert_eq!(
        o["configChanged"],
        json!([".claude/agents/reviewer.md", ".claude/rules/security.md"]),
        "{o}"
    );
    let out = backup_run(&home, &repo, &["--from", "claude-code"]);
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("nothing changed"), "{said}");
}

/// `--map-path` moves the paths an MCP server runs from with the sessions: a server that ran a
/// script in the old home runs it in the new one (a new user's trial found it left pointing at
/// the old home).
#[test]
fn map_path_moves_the_paths_an_mcp_server_runs_from() {
    let t = tmp();
    let repo = t.path().join("repo");
    let out = backup_run(
        &samples().join("copilot"),
        &repo,
        &["--from", "copilot", "-q"],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let to = t.path().join("to");
    let said = restore_said(
        &repo,
        &to,
        "copilot",
        &["--map-path", "/home/dev=/Users/me"],
    );
    assert!(!said.contains("a typo"), "{said}");
    let config: Value =
        serde_json::from_slice(&fs::read(to.join(".copilot/mcp-config.json")).unwrap()).unwrap();
    assert_eq!(
        config["mcpServers"]["issues"]["args"],
        json!([
            "/Users/me/.copilot/mcp/issues.py",
            "--db",
            "/Users/me/.local/share/issues.db"
        ]),
        "{config}"
    );
}

/// A whole restore with `--map-path` takes every MCP server, for every harness: where the
/// configuration restored as it is holds a server at the old paths, the state's server is kept
/// so too (said), not refused as configured differently (exit 3 with `--strict`); elsewhere
/// its paths move. The dry run answers the same.
#[test]
fn a_whole_restore_with_map_path_takes_every_server() {
    for harness in asp_convert::harness_names() {
        let harness = harness.as_str();
        let t = tmp();
        let repo = t.path().join("repo");
        let out = backup_run(&samples().join(harness), &repo, &["--from", harness, "-q"]);
        assert_eq!(out.status.code(), Some(0), "{harness}: {out:?}");
        let to = new_home(t.path().join("to"));
        let mut answers = Vec::new();
        for dry in [true, false] {
            let mut cmd = asp();
            cmd.args(["restore", "-q", "--strict", "--json", "--to", harness])
                .args(["--map-path", "/home/dev=/Users/me", "--home"])
                .arg(&to)
                .arg("--repo")
                .arg(&repo);
            if dry {
                cmd.arg("--dry-run");
            }
            let out = cmd.output().unwrap();
            let answer: Value = serde_json::from_slice(&out.stdout).unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{harness} (dry run: {dry}): {answer}"
            );
            assert_eq!(answer["notTaken"], json!([]), "{harness}: {answer}");
            answers.push(answer);
        }
        let done = answers.pop().unwrap();
        assert_eq!(
            crate::support::as_written(answers.pop().unwrap()),
            done,
            "{harness}"
        );
    }
}

/// A session dropped goes with its subagent sessions (as `--session` restores them with it),
/// and what was dropped is said by series: harness, home, the snapshot it was dropped from
/// and the one made without it (new-user trial helper-124, 9 and 10: the subagent was left
/// behind, listed as a conversation of its own; an id four series held was said four times
/// with nothing to tell them apart).
#[test]
fn forgetting_a_session_drops_its_subagents_and_says_from_which_series() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let (parent, agent) = (
        "12821015-852a-451b-911f-ba64553fbf57",
        "agent-a44a1a1a1ce6520e9",
    );
    assert!(sessions_in(&repo).iter().any(|r| r["id"] == agent));
    let out = asp()
        .args(["forget", "--session", parent, "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.starts_with("dropped 2 sessions from the newest snapshot of 1 series\n"),
        "{said}"
    );
    let line = said.lines().nth(1).unwrap();
    assert!(
        line.starts_with("  claude-code ")
            && line.contains(", new snapshot ")
            && line.ends_with(&format!(": {parent}, {agent}")),
        "{said}"
    );
    let listed = sessions_in(&repo);
    assert!(
        listed.iter().all(|r| r["id"] != agent && r["id"] != parent),
        "{listed:?}"
    );
}

/// Dropping a session the harness still has says the next backup keeps it again; dropping
/// one gone from the source does not (a new user's trial: a session dropped for a secret in
/// it came back at the next backup, with no word).
#[test]
fn forgetting_a_session_the_harness_still_has_says_the_next_backup_keeps_it_again() {
    let (_t, home, repo) = home_and_repo();
    backup(&home, &repo);
    fs::remove_file(home.join(GATEWAY).join(format!("{C}.jsonl"))).unwrap();
    backup(&home, &repo);
    let out = asp()
        .args(["forget", "--json", "--session", A, "--session", C, "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["dropped"]["stillInSource"], json!([A]), "{v}");
    let out = asp()
        .args([
            "forget",
            "--session",
            "0e06340e-3c10-486d-a4a9-8763cc8a6c00",
            "--repo",
        ])
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(
            "warning: 1 session was still in the harness's store when last backed up \
             (0e06340e-3c10-486d-a4a9-8763cc8a6c00): the next backup keeps it again"
        ),
        "{said}"
    );
    let o = backup(&home, &repo);
    assert_eq!(
        o["newSessions"],
        json!(["0e06340e-3c10-486d-a4a9-8763cc8a6c00", A]),
        "{o}"
    );
}

/// A restore into a home the repository holds no backup of takes the harness's newest backup
/// of another home, and names the other homes it holds backups of (a new user's trial: a
/// laptop's sessions went unmentioned on a fresh machine).
#[test]
fn a_restore_into_a_new_home_names_the_other_homes_backed_up() {
    let t = tmp();
    let repo = t.path().join("repo");
    let laptop = home_in(&t.path().join("laptop"));
    let desktop = home_in(&t.path().join("desktop"));
    backup(&laptop, &repo);
    backup(&desktop, &repo);
    let said = restore_said(&repo, &t.path().join("new"), "claude-code", &[]);
    assert!(
        said.contains(&format!(
            "note: restoring the newest backup of claude-code, of {}",
            desktop.display()
        )) && said.contains(&format!(
            "the repository also holds backups of claude-code from {} (snapshot",
            laptop.display()
        )),
        "{said}"
    );
}

/// On a new machine whose folders are not the old one's, a restore without `--map-path` says
/// where the sessions' folders were and the rule that would move them: a harness lists a
/// session by its folder, and restoring first and mapping after writes every session twice
/// (new-user trial helper-136, 2). A typo in the one rule given is refused, nothing written.
#[test]
fn a_restore_to_folders_not_on_this_machine_says_how_to_move_them() {
    let (t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let fresh = new_home(t.path().join("fresh"));
    let restore = |extra: &[&str]| {
        asp()
            .args(["restore", "--to", "claude-code", "--dry-run", "--home"])
            .arg(&fresh)
            .arg("--repo")
            .arg(&repo)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = restore(&[]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains("working directories are not on this machine, under /home/dev (")
            && said.contains("--map-path /home/dev=WHERE"),
        "{said}"
    );
    let to = t.path().join("projects");
    fs::create_dir_all(to.join("shop")).unwrap();
    fs::create_dir_all(to.join("api")).unwrap();
    let out = restore(&["--map-path", &format!("/home/de={}", to.display())]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("they are under /home/dev ("), "{said}");
}

/// Mistakes said before anything is made (new-user trial helper-137, 11): a bundle cut short
/// given to `backup --from-bundle` makes no repository (an empty one was left); `--repo` that
/// is a file says so (it was "Not a directory (os error 20)"); `--keep-last 0` is a usage
/// error (it kept one).
#[test]
fn mistakes_are_said_before_anything_is_made() {
    let t = tmp();
    let bundle = t.path().join("b.aspstate");
    succeeds(&mut pack_home(
        "claude-code",
        samples().join("claude-code"),
        &bundle,
    ));
    let bytes = fs::read(&bundle).unwrap();
    let cut = t.path().join("cut.aspstate");
    fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let repo = t.path().join("repo");
    let out = asp()
        .args(["backup", "--from-bundle"])
        .arg(&cut)
        .arg("--repo")
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{said}");
    assert!(!repo.exists(), "no repository was made: {said}");

    let out = asp()
        .args(["backup", "--from-bundle"])
        .arg(&bundle)
        .arg("--repo")
        .arg(&bundle)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(said.contains("is a file, not an asp repository"), "{said}");

    let out = asp()
        .args(["forget", "--keep-last", "0", "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{said}");
    assert!(said.contains("0 keeps nothing"), "{said}");
}

/// A session carried into Codex once, and continued since in Claude Code: `restore --session
/// ID --to codex` finds Codex's own snapshot first, and says that Claude Code's holds a version
/// updated later and how to take it (it said only "1 already there": new-user trial
/// helper-136, 3).
#[test]
fn a_restore_of_a_session_says_when_another_harness_holds_it_newer() {
    let (t, home, repo) = home_and_repo();
    backup(&home, &repo);
    let codex = new_home(t.path().join("codex"));
    let carry = |extra: &[&str]| {
        asp()
            .args(["restore", "--to", "codex", "--session", A, "--home"])
            .arg(&codex)
            .arg("--repo")
            .arg(&repo)
            .args(extra)
            .output()
            .unwrap()
    };
    let out = carry(&[]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    succeeds(
        asp()
            .args(["backup", "-q", "--from", "codex", "--home"])
            .arg(&codex)
            .arg("--repo")
            .arg(&repo),
    );
    // A turn of a later day.
    let log = home.join(SHOP).join(format!("{A}.jsonl"));
    let text = append_turn(&log, 9);
    let last = text.lines().last().unwrap();
    let at = last.find("\"timestamp\":\"").unwrap() + 13;
    let later = format!(
        "{}2099-01-01T00:00:00.000Z{}",
        &last[..at],
        &last[at + 24..]
    );
    fs::write(&log, text.replace(last, &later)).unwrap();
    backup(&home, &repo);
    let out = carry(&["--dry-run"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    assert!(
        said.contains(&format!("note: session {A} is in snapshot "))
            && said.contains("(claude-code in ")
            && said.contains("updated later"),
        "{said}"
    );
}

/// What a backup leaves out is in its `--json` too (`leftOut`, as `asp-pack --json` gives it):
/// with `-q`, the form a scheduled backup runs in, it was said nowhere. Here Codex's own files
/// under a `CODEX_HOME` outside the home, which a backup does not keep (new-user trial
/// helper-137, 2).
#[test]
fn what_a_backup_leaves_out_is_in_its_json() {
    let t = tmp();
    let home = t.path().join("home");
    copy_dir(&samples().join("codex"), &home);
    let elsewhere = t.path().join("codex-home");
    fs::rename(home.join(".codex"), &elsewhere).unwrap();
    let out = asp()
        .args(["backup", "--from", "codex", "--json", "-q", "--repo"])
        .arg(t.path().join("repo"))
        .env("HOME", &home)
        .env("CODEX_HOME", &elsewhere)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{said}");
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let config = elsewhere.join("config.toml");
    assert!(
        v[0]["leftOut"].as_array().unwrap().iter().any(|f| {
            f["file"] == config.to_str().unwrap()
                && f["message"] == "outside the home: not backed up"
        }),
        "{v}"
    );
}
