//! `asp push` of a repository's snapshot and `asp pull` into a repository (issue 14), against
//! the real registry: what is restored from the pulled snapshot on another HOME is what the
//! original snapshot restores, and a second snapshot sharing most blobs uploads only its own.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use asp_test_registry::{Auth, TestRegistry, User};
use serde_json::{Value, json};

use crate::registry_cli::{Home, PASSWORD, json};
use crate::support::*;

const A: &str = "71958462-4bb8-46b6-a36a-1becf56c22dc";
const SHOP: &str = ".claude/projects/-home-dev-shop";

/// The Claude Code sample home in `home`, with `copies` more copies of session A under new
/// ids, last changed an hour ago (outside the racy-timestamp window).
fn sample_home(home: &Path, copies: std::ops::Range<usize>) {
    copy_dir(&samples().join("claude-code"), home);
    add_copies(home, copies);
}

fn add_copies(home: &Path, copies: std::ops::Range<usize>) {
    let text = fs::read_to_string(home.join(SHOP).join(format!("{A}.jsonl"))).unwrap();
    for i in copies {
        let id = format!("{:08x}-0000-4000-8000-{:012x}", i + 1, i + 1);
        // Each mention of a coupon gets its own 96 hex digits, so a copy is a session of
        // its own size (about 30 KiB of layer), not a few bytes of difference.
        let mut copy = String::new();
        for (j, part) in text.replace(A, &id).split("coupon").enumerate() {
            if j > 0 {
                let hex: String = crate::registry_cli::noise((i * 1000 + j) as u64, 48)
                    .iter()
                    .map(|b| format!("{b:02x}"))
                    .collect();
                copy.push_str(&format!("coupon {i} {hex}"));
            }
            copy.push_str(part);
        }
        fs::write(home.join(SHOP).join(format!("{id}.jsonl")), copy).unwrap();
    }
    let t = SystemTime::now() - Duration::from_secs(3600);
    for f in files_under(home) {
        fs::File::options()
            .write(true)
            .open(&f)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }
}

/// A registry that takes alice, and a laptop whose Claude Code home (`state`: the sample with
/// `copies` more sessions) is backed up into its default repository.
fn laptop_backed_up(copies: std::ops::Range<usize>) -> (TestRegistry, Home, PathBuf) {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let laptop = Home::new();
    let state = laptop.path().join("work");
    sample_home(&state, copies);
    backup(&laptop, &state);
    (reg, laptop, state)
}

/// `asp` as run on `home`'s machine: its repository is the default one under its HOME.
fn asp_on(home: &Home) -> assert_cmd::Command {
    let mut c = home.asp();
    c.env_remove("ASP_REPO").env_remove("XDG_DATA_HOME");
    c
}

fn default_repo(home: &Home) -> PathBuf {
    home.path().join(".local/share/asp/repo")
}

fn backup(home: &Home, state_home: &Path) {
    succeeds(
        asp_on(home)
            .args(["backup", "-q", "--from", "claude-code", "--home"])
            .arg(state_home),
    );
}

/// `c` run logged in as alice, the password on standard input.
fn as_alice(c: &mut assert_cmd::Command) -> std::process::Output {
    c.args(["-u", "alice", "--password-stdin"])
        .write_stdin(format!("{PASSWORD}\n"))
        .output()
        .unwrap()
}

fn push(home: &Home, args: &[&str]) -> Value {
    json(&succeeds(
        asp_on(home)
            .arg("push")
            .args(args)
            .args(["-u", "alice", "--password-stdin", "--json", "-q"])
            .write_stdin(format!("{PASSWORD}\n")),
    ))
}

fn pull(home: &Home, args: &[&str]) -> Value {
    json(&succeeds(
        asp_on(home)
            .arg("pull")
            .args(args)
            .args(["-u", "alice", "--password-stdin", "--json", "-q"])
            .write_stdin(format!("{PASSWORD}\n")),
    ))
}

fn restore_into(home: &Home, to: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    fs::create_dir_all(to).unwrap();
    succeeds(
        asp_on(home)
            .args(["restore", "-q", "--to", "claude-code", "--home"])
            .arg(to),
    );
    files_in(to)
}

/// A session of the sample that the second backup finds gone from the source.
const GONE: &str = "8406e3f1-f626-479d-a2f4-e83bc7ff1d18";
const GONE_FILE: &str =
    ".claude/projects/-home-dev-api-gateway/8406e3f1-f626-479d-a2f4-e83bc7ff1d18.jsonl";

/// Backs up the sample with its configuration files, then again without session [`GONE`]:
/// the newest snapshot keeps that session, marked gone, and the configuration.
fn backup_with_a_gone_session(laptop: &Home, state: &Path) {
    sample_home(state, 0..3);
    assert!(state.join(".claude/settings.json").exists());
    assert!(state.join(".claude/rules/security.md").exists());
    backup(laptop, state);
    fs::remove_file(state.join(GONE_FILE)).unwrap();
    backup(laptop, state);
    let snapshots = json(&succeeds(asp_on(laptop).args(["snapshots", "--json"])));
    assert_eq!(snapshots.as_array().unwrap().len(), 2, "{snapshots}");
    assert_eq!(snapshots[1]["gone"], 1, "{snapshots}");
}

/// What `asp sessions` says is gone from the source.
fn gone_sessions(home: &Home) -> Vec<String> {
    let listed = json(&succeeds(asp_on(home).args(["sessions", "--json"])));
    listed
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["goneFromSource"] == true)
        .map(|s| s["id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_pushed_snapshot_pulled_into_an_empty_repository_restores_the_same_files() {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let reference = format!("{}/me/agent-state:laptop", reg.host());
    let laptop = Home::new();
    let state = laptop.path().join("work");
    backup_with_a_gone_session(&laptop, &state);
    let snapshots = json(&succeeds(asp_on(&laptop).args(["snapshots", "--json"])));
    let content = snapshots[1]["content"].as_str().unwrap().to_owned();

    let pushed = push(&laptop, &["latest", &reference]);
    assert_eq!(pushed["digest"], content.as_str(), "{pushed}");
    assert!(pushed["source"].as_str().unwrap().starts_with("snapshot "));
    // The tag names the snapshot record, whose subject is the state.
    let record = pushed["record"].as_str().unwrap().to_owned();
    let r: Value = serde_json::from_slice(
        &fs::read(reg.blob_data(record.trim_start_matches("sha256:"))).unwrap(),
    )
    .unwrap();
    assert_eq!(r["artifactType"], "application/vnd.asp.snapshot.v1", "{r}");
    assert_eq!(r["subject"]["digest"], content.as_str(), "{r}");
    // Nothing about the laptop travels: no home path, host, parent or source records.
    let text = r.to_string();
    assert!(!text.contains(laptop.path().to_str().unwrap()), "{text}");
    assert!(
        !text.contains("vnd.asp.snapshot.home") && !text.contains("parent"),
        "{text}"
    );
    let record_layer = fs::read(
        reg.blob_data(
            r["layers"][0]["digest"]
                .as_str()
                .unwrap()
                .trim_start_matches("sha256:"),
        ),
    )
    .unwrap();
    let record_json = if r["layers"][0]["mediaType"]
        .as_str()
        .unwrap()
        .ends_with("+zstd")
    {
        zstd::decode_all(&record_layer[..]).unwrap()
    } else {
        record_layer
    };
    let record_json = String::from_utf8(record_json).unwrap();
    assert!(record_json.contains(GONE), "{record_json}");
    for local in ["inode", "mtimeNs", "startedNs", "entries", "work/"] {
        assert!(!record_json.contains(local), "{local} in {record_json}");
    }

    // Another machine: nothing there yet, the repository is made by the pull.
    let desktop = Home::new();
    assert!(!default_repo(&desktop).exists());
    let pulled = pull(&desktop, &[&reference]);
    assert_eq!(pulled["digest"], content.as_str(), "{pulled}");
    // When the backup was made travels; the new snapshot's own time is the pull's.
    assert_eq!(pulled["backedUp"], snapshots[1]["created"], "{pulled}");
    assert_eq!(pulled["record"], record.as_str(), "{pulled}");
    let snap = &pulled["snapshot"];
    assert_eq!(snap["harness"], "claude-code", "{pulled}");
    assert_eq!(snap["content"], content.as_str());
    assert_eq!(snap["gone"], 1, "{pulled}");
    assert_eq!(
        snap["home"],
        format!("registry:{}/me/agent-state:laptop", reg.host()).as_str()
    );
    assert_eq!(snap["backedUp"], snapshots[1]["created"], "{pulled}");
    succeeds(asp_on(&desktop).args(["check", "-q", "--read-data"]));
    assert_eq!(gone_sessions(&desktop), [GONE]);
    assert_eq!(gone_sessions(&laptop), [GONE]);

    // Restoring the pulled snapshot writes what restoring the original writes, byte for
    // byte: the sessions (the gone one too), their native files, and the harness's own
    // configuration files (settings.json, rules/), which travel in the record.
    let original = restore_into(&laptop, &laptop.path().join("restored"));
    let copy = restore_into(&desktop, &desktop.path().join("restored"));
    assert!(original.keys().any(|k| k.ends_with(&format!("{A}.jsonl"))));
    assert!(
        original.contains_key(GONE_FILE),
        "the gone session is restored"
    );
    for config in [".claude/rules/security.md", ".claude/settings.json"] {
        assert_eq!(
            original.get(config),
            Some(&fs::read(state.join(config)).unwrap()),
            "{config} is restored whole"
        );
    }
    let differ: Vec<&String> = original
        .keys()
        .chain(copy.keys())
        .filter(|k| original.get(*k) != copy.get(*k))
        .collect();
    assert!(differ.is_empty(), "these differ: {differ:?}");
    assert!(copy.keys().filter(|k| k.ends_with(".jsonl")).count() >= 8);

    // The same snapshot again: nothing new, nothing downloaded.
    // Only the record's own small layer is fetched again: a repository keeps its content in
    // the snapshot's source records, not the layer itself.
    let again = pull(&desktop, &[&reference]);
    assert!(again["blobsDownloaded"].as_u64().unwrap() <= 1, "{again}");
    assert!(again["bytesDownloaded"].as_u64().unwrap() < 4096, "{again}");
    assert!(
        again.get("snapshot").is_none() || again["snapshot"].is_null(),
        "{again}"
    );
    let listed = json(&succeeds(asp_on(&desktop).args(["snapshots", "--json"])));
    assert_eq!(listed.as_array().unwrap().len(), 1);

    // The state alone, by its digest (what a bundle push makes): a snapshot of the same
    // content without the record is something new (no gone marks, no configuration).
    let bare = pull(
        &desktop,
        &[&format!("{}/me/agent-state@{content}", reg.host())],
    );
    assert!(bare.get("record").is_none(), "{bare}");
    assert_eq!(bare["snapshot"]["gone"], 0, "{bare}");
    // Said to a person: the reference a push prints names what its tag names, the record
    // (pulling it gives the configuration too); a pull of a bare state says what it lacks.
    let out = as_alice(asp_on(&laptop).args(["push", "latest", &reference]));
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!(
            " to {reference}@{record} (a snapshot record, of state {content}): "
        )),
        "{said}"
    );

    let elsewhere = Home::new();
    let out = as_alice(
        asp_on(&elsewhere).args(["pull", &format!("{}/me/agent-state@{content}", reg.host())]),
    );
    let (said, noted) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{noted}");
    assert!(
        said.starts_with(&format!(
            "pulled {}/me/agent-state@{content} into ",
            reg.host()
        )),
        "{said}"
    );
    assert!(
        noted.contains("names a state without a snapshot record")
            && noted.contains("not the harness's own configuration files"),
        "{noted}"
    );
    assert!(
        noted.contains("to restore it: asp restore --snapshot "),
        "{noted}"
    );

    // The bundle pulled from the same REF (through the record) is the one `asp pack
    // --from-repo` writes: plain state.
    let bundle = desktop.path().join("b.aspstate");
    pull(&desktop, &[&reference, "-o", bundle.to_str().unwrap()]);
    let packed = laptop.path().join("p.aspstate");
    succeeds(
        asp_on(&laptop)
            .args(["pack", "-q", "--from-repo", "-o"])
            .arg(&packed),
    );
    assert!(fs::read(&bundle).unwrap() == fs::read(&packed).unwrap());
}

#[test]
fn a_failed_pull_leaves_no_repository_behind() {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let desktop = Home::new();
    let before: Vec<_> = files_under(desktop.path());
    for (password, tag) in [
        (crate::registry_cli::WRONG, "laptop"),
        (PASSWORD, "missing"),
    ] {
        let out = asp_on(&desktop)
            .args(["pull", &format!("{}/me/agent-state:{tag}", reg.host())])
            .args(["-u", "alice", "--password-stdin"])
            .write_stdin(format!("{password}\n"))
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let repo = default_repo(&desktop);
        assert!(
            no_repository_in(&repo),
            "{tag}: the pull left {:?}",
            files_under(desktop.path())
        );
        let left: Vec<_> = files_under(desktop.path())
            .into_iter()
            .filter(|f| !f.starts_with(&repo))
            .collect();
        assert_eq!(left, before);
    }
    // An empty directory given as the repository stays, empty.
    let dir = desktop.path().join("empty");
    fs::create_dir(&dir).unwrap();
    let out = as_alice(
        asp_on(&desktop)
            .args([
                "pull",
                &format!("{}/me/agent-state:missing", reg.host()),
                "--repo",
            ])
            .arg(&dir),
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        dir.is_dir() && no_repository_in(&dir),
        "{:?}",
        files_under(&dir)
    );
    // What it left is said as ours, with what makes a repository there.
    let out = asp_on(&desktop)
        .args(["snapshots", "--repo"])
        .arg(&dir)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("holds only the locks/ folder") && !err.contains("give another --repo"),
        "{err}"
    );
}

/// What a failed first pull leaves of the repository it made: nothing but the lock files (a
/// lock file is never unlinked, another process may hold it), or nothing at all.
fn no_repository_in(dir: &Path) -> bool {
    walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .filter_map(Result::ok)
        .all(|e| {
            let rel = e.path().strip_prefix(dir).unwrap();
            rel.starts_with("locks") && (rel.components().count() == 1 || e.file_type().is_file())
        })
}

/// A desktop that backs up into its own repository too: `asp restore --to claude-code` alone
/// would take the desktop's own newest snapshot, so the pull says the command that restores
/// what it pulled, by id. A push of `latest` says which harness that is, and names the
/// newest snapshots of the other series, which it leaves behind.
#[test]
fn a_pull_says_how_to_restore_what_it_pulled_beside_the_machines_own_backups() {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let reference = format!("{}/me/agent-state:laptop", reg.host());
    let laptop = Home::new();
    let state = laptop.path().join("work");
    backup_with_a_gone_session(&laptop, &state);
    // Codex too, then one more Claude Code session: `latest` is Claude Code's, the newest.
    let codex = laptop.path().join("codex-home");
    copy_dir(&samples().join("codex"), &codex);
    let mut order = asp_on(&laptop);
    order
        .args(["backup", "-q", "--from", "codex", "--home"])
        .arg(&codex);
    succeeds(&mut order);
    add_copies(&state, 3..4);
    backup(&laptop, &state);
    let out = as_alice(asp_on(&laptop).args(["push", "latest", &reference]));
    let (said, noted) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{noted}");
    assert!(said.contains("(claude-code)"), "{said}");
    assert!(
        noted.contains("the newest of each other series stays here") && noted.contains("codex"),
        "{noted}"
    );
    // `latest` is never where to: the REF left out is said.
    let out = asp_on(&laptop).args(["push", "latest"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");

    // The desktop has its own Claude Code sessions and backs them up.
    let desktop = Home::new();
    let own = desktop.path().join("work");
    copy_dir(&samples().join("claude-code"), &own);
    fs::remove_file(own.join(GONE_FILE)).unwrap();
    backup(&desktop, &own);
    let out = as_alice(asp_on(&desktop).args(["pull", &reference]));
    let noted = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{noted}");
    let command = noted
        .lines()
        .find_map(|l| l.strip_prefix("to restore it: asp "))
        .unwrap_or_else(|| panic!("{noted}"));
    let words: Vec<&str> = command.split_whitespace().collect();
    assert_eq!(words[..2], ["restore", "--snapshot"], "{command}");
    // That command brings the laptop's session the desktop never had.
    let mut restore = asp_on(&desktop);
    restore.args(&words).args(["-q", "--home"]).arg(&own);
    succeeds(&mut restore);
    assert!(
        own.join(GONE_FILE).exists(),
        "the pulled snapshot was restored"
    );
}

/// Two machines, each pushing to its own tag and pulling the other's (new-user trial
/// helper-127, 2 to 4): `push latest` after a pull pushes this machine's own backup, not the
/// other's state under this one's tag; each tag pulled is a series of its own, so a third
/// machine lists both machines' sessions; a pulled snapshot pushed again keeps its backup's
/// time.
#[test]
fn machines_pushing_to_their_own_tags_keep_their_states_apart() {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let tag = |t: &str| format!("{}/me/agent-state:{t}", reg.host());
    let laptop = Home::new();
    let on_laptop = laptop.path().join("work");
    sample_home(&on_laptop, 0..1);
    backup(&laptop, &on_laptop);
    push(&laptop, &["latest", &tag("laptop")]);
    let laptop_snapshots = json(&succeeds(asp_on(&laptop).args(["snapshots", "--json"])));
    let laptop_time = laptop_snapshots[0]["created"].clone();

    let desktop = Home::new();
    let on_desktop = desktop.path().join("work");
    sample_home(&on_desktop, 1..2);
    backup(&desktop, &on_desktop);
    let own = json(&succeeds(asp_on(&desktop).args(["snapshots", "--json"])))[0]["digest"]
        .as_str()
        .unwrap()["sha256:".len()..]
        .to_owned();
    // The laptop's state, pulled after the desktop's own backup, is the newest snapshot.
    pull(&desktop, &[&tag("laptop")]);
    let pushed = push(&desktop, &["latest", &tag("desktop")]);
    assert_eq!(
        pushed["source"],
        format!("snapshot {} (claude-code)", &own[..8]).as_str(),
        "{pushed}"
    );

    // A third machine pulls both tags: two series, and both machines' sessions listed.
    let third = Home::new();
    pull(&third, &[&tag("laptop")]);
    // It has backed up nothing of its own: no `latest` of it to push.
    let out = as_alice(asp_on(&third).args(["push", "latest", &tag("third")]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("only snapshots pulled"), "{stderr}");
    pull(&third, &[&tag("desktop")]);
    let sessions = json(&succeeds(asp_on(&third).args(["sessions", "--json"])));
    let ids: Vec<&str> = sessions
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect();
    for id in [
        "00000001-0000-4000-8000-000000000001",
        "00000002-0000-4000-8000-000000000002",
    ] {
        assert!(ids.contains(&id), "{id} is listed: {sessions}");
    }
    // Pulling a tag again adds nothing to its series, and names the snapshot that holds it.
    let again = pull(&third, &[&tag("laptop")]);
    assert!(again["snapshot"].is_null(), "{again}");
    let holder = again["alreadyIn"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{again}"));
    assert_eq!(holder.len(), 8, "{again}");
    // So does a pull of it by its digest: held already, under its tag.
    let by_digest = format!(
        "{}/me/agent-state@{}",
        reg.host(),
        again["record"].as_str().unwrap()
    );
    let by_digest = pull(&third, &[&by_digest]);
    assert!(by_digest["snapshot"].is_null(), "{by_digest}");
    assert_eq!(
        by_digest["alreadyIn"]["id"].as_str(),
        Some(holder),
        "{by_digest}"
    );
    assert_eq!(
        json(&succeeds(asp_on(&third).args(["snapshots", "--json"])))
            .as_array()
            .unwrap()
            .len(),
        2
    );

    // The laptop's snapshot, pushed again from the desktop by its id, says when the laptop
    // backed it up, and so does a pull of it.
    let snapshots = json(&succeeds(asp_on(&desktop).args(["snapshots", "--json"])));
    let pulled = snapshots
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["home"].as_str().unwrap().starts_with("registry:"))
        .unwrap();
    assert_eq!(pulled["backedUp"], laptop_time, "{pulled}");
    let id = pulled["digest"].as_str().unwrap();
    push(&desktop, &[id, &tag("relay")]);
    let relayed = pull(&Home::new(), &[&tag("relay")]);
    assert_eq!(relayed["backedUp"], laptop_time, "{relayed}");
}

#[test]
fn a_second_snapshot_uploads_only_what_the_registry_lacks() {
    let (reg, laptop, state) = laptop_backed_up(0..200);
    let repo = default_repo(&laptop);
    let first = push(
        &laptop,
        &[
            "--repo",
            repo.to_str().unwrap(),
            "latest",
            &format!("{}/me/agent-state:one", reg.host()),
        ],
    );
    // Only the empty config, which the state and its record share.
    assert_eq!(first["blobsPresent"], 1, "{first}");
    // One more session: the new snapshot shares every layer but its own and the documents.
    add_copies(&state, 200..201);
    backup(&laptop, &state);
    let second = push(&laptop, &[&format!("{}/me/agent-state:two", reg.host())]);
    let uploaded = second["bytesUploaded"].as_u64().unwrap();
    let total = uploaded + second["bytesSkipped"].as_u64().unwrap();
    eprintln!("first push: {first}\nsecond push: {second}");
    assert!(second["blobsPresent"].as_u64().unwrap() > 0, "{second}");
    // The new session's two layers (native file, update stream), the state manifest and the
    // layer table; the documents grow with the session count, so they are most of it.
    assert_eq!(second["blobsUploaded"], 4, "{second}");
    assert!(
        uploaded * 25 <= total,
        "{uploaded} of {total} bytes uploaded: more than 4%"
    );
}

/// A repository's index changes only under its lock, by what makes snapshots: `pull --layout`
/// into one would write the index while a backup adds its snapshot, and drop its entry (new-user
/// trial helper-127, 1). Both layout commands refuse a repository and name the one that takes
/// it, before anything is read or sent.
#[test]
fn a_repository_is_not_taken_for_a_plain_layout() {
    let (reg, laptop, _) = laptop_backed_up(0..1);
    let reference = format!("{}/me/agent-state:laptop", reg.host());
    push(&laptop, &["latest", &reference]);
    let repo = default_repo(&laptop);
    let before = files_under(&repo);
    let out = as_alice(
        asp_on(&laptop)
            .args(["pull", &reference, "--layout"])
            .arg(&repo),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is an asp snapshot repository"), "{stderr}");
    assert!(stderr.contains("--repo"), "{stderr}");
    assert_eq!(
        files_under(&repo),
        before,
        "the pull wrote into the repository"
    );

    let registry = files_under(&reg.storage());
    let out = as_alice(
        asp_on(&laptop)
            .args(["push", "--layout"])
            .arg(&repo)
            .arg(format!("{}/me/agent-state:other", reg.host())),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("asp push SNAPSHOT"), "{stderr}");
    assert_eq!(files_under(&reg.storage()), registry);
}

/// A record whose state was deleted from the registry since the push is named as such, with
/// what puts it back (new-user trial helper-127, 7: "REF@sha256:…: the manifest is not in the
/// registry").
#[test]
fn a_record_whose_state_is_gone_says_so_and_what_puts_it_back() {
    let (reg, laptop, _) = laptop_backed_up(0..1);
    let reference = format!("{}/me/agent-state:laptop", reg.host());
    let pushed = push(&laptop, &["latest", &reference]);
    let digest = pushed["digest"].as_str().unwrap();
    let revision = reg.storage().join(format!(
        "docker/registry/v2/repositories/me/agent-state/_manifests/revisions/sha256/{}",
        &digest["sha256:".len()..]
    ));
    fs::remove_dir_all(&revision).unwrap();
    let desktop = Home::new();
    let out = as_alice(asp_on(&desktop).args(["pull", &reference]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("the state its snapshot record names") && stderr.contains("asp push"),
        "{stderr}"
    );
}

/// A snapshot is pushed as the state (by digest) and its record (by the tag): a reference that
/// names a digest has no tag for the record, so it is refused before anything is uploaded.
#[test]
fn a_snapshot_pushed_to_a_digest_is_refused_before_any_upload() {
    let (reg, laptop, _) = laptop_backed_up(0..1);
    let before = files_under(&reg.storage());
    let d = format!("sha256:{}", asp_test_registry::sha256_hex(b"x"));
    let out = as_alice(asp_on(&laptop).args([
        "push",
        "latest",
        &format!("{}/me/agent-state@{d}", reg.host()),
    ]));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("needs a tag"), "{stderr}");
    assert_eq!(files_under(&reg.storage()), before);
}

#[test]
fn a_tampered_blob_writes_nothing_into_the_repository() {
    let (reg, laptop, _) = laptop_backed_up(0..2);
    let reference = format!("{}/me/agent-state:laptop", reg.host());
    let pushed = push(&laptop, &["latest", &reference]);
    // Damage the largest layer in the registry's storage, keeping its size.
    let m: Value = serde_json::from_slice(
        &fs::read(
            reg.blob_data(
                pushed["digest"]
                    .as_str()
                    .unwrap()
                    .trim_start_matches("sha256:"),
            ),
        )
        .unwrap(),
    )
    .unwrap();
    let biggest = m["layers"]
        .as_array()
        .unwrap()
        .iter()
        .max_by_key(|l| l["size"].as_u64().unwrap())
        .unwrap();
    let path = reg.blob_data(
        biggest["digest"]
            .as_str()
            .unwrap()
            .trim_start_matches("sha256:"),
    );
    let mut bytes = fs::read(&path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    fs::write(&path, bytes).unwrap();

    let desktop = Home::new();
    let repo = desktop.path().join("repo");
    let out = as_alice(
        asp_on(&desktop)
            .args(["pull", &reference, "--repo"])
            .arg(&repo),
    );
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The repository this pull was to create is not there: nothing landed, so nothing stays
    // (not even an empty repository, nor a staging directory), but for its lock files.
    assert!(no_repository_in(&repo), "{:?}", files_under(&repo));
}

/// Bit rot in a repository blob (one byte flipped, the size kept) is caught while the blob is
/// sent, before its last bytes leave: the registry never gets it whole (distribution logs a
/// `PUT` its client cut short, never a digest it refused), no manifest is sent, and the error
/// names the local file and what mends it, exit 4. What it says to run then works.
#[test]
fn a_damaged_blob_of_the_repository_is_never_sent_whole() {
    let reg = TestRegistry::start(Auth::None);
    let reference = format!("{}/me/gem:v1", reg.host());
    let laptop = Home::new();
    let state = laptop.path().join("work");
    sample_home(&state, 0..3);
    backup(&laptop, &state);
    let repo = default_repo(&laptop);
    let snapshots = json(&succeeds(asp_on(&laptop).args(["snapshots", "--json"])));
    let content = snapshots[0]["content"].as_str().unwrap();
    let blobs = repo.join("blobs/sha256");
    let m: Value = serde_json::from_slice(
        &fs::read(blobs.join(content.trim_start_matches("sha256:"))).unwrap(),
    )
    .unwrap();
    // The largest native layer: a body the push sends and the state documents do not hold.
    let layer = m["layers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l["mediaType"].as_str().unwrap().contains(".native."))
        .max_by_key(|l| l["size"].as_u64().unwrap())
        .unwrap();
    let hex = layer["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    let file = blobs.join(hex);
    let good = fs::read(&file).unwrap();
    let mut rotten = good.clone();
    let mid = rotten.len() / 2;
    rotten[mid] ^= 0x01;
    fs::write(&file, &rotten).unwrap();

    let out = asp_on(&laptop)
        .args(["push", "latest", &reference])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("integrity failure"), "{err}");
    assert!(
        err.contains(&file.display().to_string()),
        "names the local file: {err}"
    );
    assert!(
        err.contains(&format!(
            "asp check --read-data --repair --repo {}",
            repo.display()
        )),
        "says what to run: {err}"
    );
    assert!(!err.contains("DIGEST_INVALID"), "{err}");

    // The registry saw that upload stop short of its length, and refused no digest.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let cut = loop {
        let log = reg.log();
        if let Some(l) = log
            .lines()
            .find(|l| l.contains("client disconnected during blob PUT"))
        {
            break l.to_owned();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no upload was cut short; the registry's log:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    let field = |name: &str| -> u64 {
        let at = cut
            .find(&format!("{name}="))
            .unwrap_or_else(|| panic!("{cut}"))
            + name.len()
            + 1;
        cut[at..]
            .split(|c: char| !c.is_ascii_digit())
            .next()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(field("contentLength"), good.len() as u64, "{cut}");
    assert!(field("copied") < good.len() as u64, "sent whole: {cut}");
    assert!(!reg.log().contains("digest invalid"), "{}", reg.log());
    assert!(!reg.blob_data(hex).exists());
    let out = asp_on(&laptop)
        .args(["pull", &reference, "-o"])
        .arg(laptop.path().join("x.aspstate"))
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "no manifest was sent");

    // What it said to run mends it: the layer is moved aside, stored again by the next
    // backup, and the push goes through.
    let out = asp_on(&laptop)
        .args(["check", "-q", "--read-data", "--repair", "--repo"])
        .arg(&repo)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(4));
    backup(&laptop, &state);
    assert_eq!(fs::read(&file).unwrap(), good);
    succeeds(asp_on(&laptop).args(["push", "-q", "latest", &reference]));
    assert_eq!(fs::read(reg.blob_data(hex)).unwrap(), good);
}

/// Pushes, as an OCI layout, a snapshot record of `layers` (its layer, of its media type,
/// then the configuration's) whose subject is the state `m` of `m_size` bytes, to `reference`.
fn push_record(
    home: &Home,
    dir: &Path,
    layers: &[(&[u8], &str)],
    m: &str,
    m_size: usize,
    reference: &str,
) {
    use asp_test_registry::sha256_hex;
    let blobs = dir.join("blobs/sha256");
    fs::create_dir_all(&blobs).unwrap();
    let put = |bytes: &[u8]| {
        let hex = sha256_hex(bytes);
        fs::write(blobs.join(&hex), bytes).unwrap();
        format!("sha256:{hex}")
    };
    put(b"{}");
    let layers: Vec<Value> = layers
        .iter()
        .map(|(bytes, media)| {
            serde_json::json!({"mediaType": media, "digest": put(bytes), "size": bytes.len()})
        })
        .collect();
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.asp.snapshot.v1",
        "config": {"mediaType": "application/vnd.oci.empty.v1+json",
                   "digest": format!("sha256:{}", sha256_hex(b"{}")), "size": 2, "data": "e30="},
        "layers": layers,
        "subject": {"mediaType": "application/vnd.oci.image.manifest.v1+json",
                    "digest": m, "size": m_size, "artifactType": "application/vnd.asp.state.v1"}
    })
    .to_string();
    let r = put(manifest.as_bytes());
    fs::write(dir.join("oci-layout"), r#"{"imageLayoutVersion":"1.0.0"}"#).unwrap();
    fs::write(
        dir.join("index.json"),
        serde_json::json!({"schemaVersion": 2, "manifests": [
            {"mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": r,
             "size": manifest.len()}]})
        .to_string(),
    )
    .unwrap();
    push(home, &["--layout", dir.to_str().unwrap(), reference]);
}

/// A snapshot record is hostile input like the rest: one whose configuration body does not
/// match its digest, one said to be zstd that is not, one that names another harness than the
/// state's sessions, one whose gone mark names a session the state does not hold, or whose
/// configuration names a file the harness does not keep
/// (pushed here by hand, as OCI layouts), writes nothing.
#[test]
fn a_record_that_does_not_fit_its_state_writes_nothing() {
    let (reg, laptop, _) = laptop_backed_up(0..1);
    let pushed = push(
        &laptop,
        &["latest", &format!("{}/me/agent-state:laptop", reg.host())],
    );
    let m = pushed["digest"].as_str().unwrap().to_owned();
    let m_size = fs::read(reg.blob_data(m.trim_start_matches("sha256:")))
        .unwrap()
        .len();

    // A repository's own snapshot manifest (this machine's source records) is never pushed,
    // not even through --layout.
    let snapshots = json(&succeeds(asp_on(&laptop).args(["snapshots", "--json"])));
    let out = as_alice(
        asp_on(&laptop)
            .args(["push", "--layout"])
            .arg(default_repo(&laptop))
            .args(["--manifest", snapshots[0]["digest"].as_str().unwrap()])
            .arg(format!("{}/me/agent-state:leak", reg.host())),
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("is an asp snapshot repository"), "{stderr}");

    let x = format!("sha256:{}", asp_test_registry::sha256_hex(b"x"));
    const RECORD: &str = "application/vnd.asp.snapshot.record.v1+json";
    // A configuration body said to be `{}` whose layer holds other bytes.
    const TAMPERED: &[u8] = b"{\"permissions\":{\"allow\":[\"Bash\"]}}";
    let body = format!("sha256:{}", asp_test_registry::sha256_hex(b"{}"));
    let layer = format!("sha256:{}", asp_test_registry::sha256_hex(TAMPERED));
    let cases: [(&str, String, &str); 5] = [
        (
            "body",
            format!(
                r#"{{"schemaVersion":1,"mediaType":"{RECORD}","harness":"claude-code","config":{{"harness":"claude-code","files":[{{"path":".claude/settings.json","content":{{"digest":"{body}","size":2}}}}]}},"configLayers":{{"{body}":{{"layer":"{layer}","size":{},"encoding":"identity"}}}}}}"#,
                TAMPERED.len()
            ),
            "configuration file .claude/settings.json:",
        ),
        (
            "zstd",
            r#"{"schemaVersion":1,"mediaType":"application/vnd.asp.snapshot.record.v1+json","harness":"claude-code"}"#.to_owned(),
            "the snapshot record: layer sha256:",
        ),
        (
            "harness",
            r#"{"schemaVersion":1,"mediaType":"application/vnd.asp.snapshot.record.v1+json","harness":"codex"}"#.to_owned(),
            "it is of harness codex, but the state's sessions are claude-code's",
        ),
        (
            "gone",
            r#"{"schemaVersion":1,"mediaType":"application/vnd.asp.snapshot.record.v1+json","harness":"claude-code","gone":{"00000000-0000-4000-8000-000000000000":"2026-12-02T00:00:00.000Z"}}"#.to_owned(),
            "marked gone",
        ),
        (
            "keys",
            format!(
                r#"{{"schemaVersion":1,"mediaType":"application/vnd.asp.snapshot.record.v1+json","harness":"claude-code","config":{{"harness":"claude-code","files":[{{"path":".ssh/authorized_keys","content":{{"digest":"{x}","size":1}}}}]}}}}"#
            ),
            ".ssh/authorized_keys is not a configuration file claude-code keeps",
        ),
    ];
    let desktop = Home::new();
    for (tag, record, says) in cases {
        let reference = format!("{}/me/agent-state:{tag}", reg.host());
        let media = if tag == "zstd" {
            format!("{RECORD}+zstd")
        } else {
            RECORD.to_owned()
        };
        let layers: [(&[u8], &str); 2] = [
            (record.as_bytes(), &media),
            (TAMPERED, "application/vnd.asp.native.v1"),
        ];
        push_record(
            &laptop,
            &laptop.path().join(tag),
            &layers[..if tag == "body" { 2 } else { 1 }],
            &m,
            m_size,
            &reference,
        );
        let repo = desktop.path().join("repo");
        let out = as_alice(
            asp_on(&desktop)
                .args(["pull", &reference, "--repo"])
                .arg(&repo),
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(4), "{tag}: {stderr}");
        assert!(stderr.contains(says), "{tag}: {stderr}");
        assert!(no_repository_in(&repo), "{tag}: {:?}", files_under(&repo));
        // The state it names is fine on its own: -o takes only the state.
        let bundle = desktop.path().join(format!("{tag}.aspstate"));
        let got = pull(&desktop, &[&reference, "-o", bundle.to_str().unwrap()]);
        assert_eq!(got["digest"], m.as_str(), "{got}");
    }
    // The directory the failed pulls left (its lock files) takes a good pull.
    let repo = desktop.path().join("repo");
    assert!(repo.join("locks").is_dir());
    let got = pull(
        &desktop,
        &[
            &format!("{}/me/agent-state:laptop", reg.host()),
            "--repo",
            repo.to_str().unwrap(),
        ],
    );
    assert!(got["snapshot"]["digest"].is_string(), "{got}");
}

/// The note a push of `laptop`'s newest snapshot to `me/keys:TAG` gives on the credentials
/// it sends (the push must succeed and give one).
fn credentials_note(laptop: &Home, reg: &TestRegistry, tag: &str) -> String {
    let out =
        as_alice(asp_on(laptop).args(["push", "latest", &format!("{}/me/keys:{tag}", reg.host())]));
    let noted = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{noted}");
    noted
        .lines()
        .find(|l| l.contains("holds credentials written out in full"))
        .unwrap_or_else(|| panic!("{noted}"))
        .to_owned()
}

/// A snapshot's push names the credentials written out in full that it sends: in its state's
/// MCP servers and in the configuration its record carries (a settings file's `env`, a
/// project's own servers), never their values.
#[test]
fn a_snapshot_push_names_the_credentials_its_configuration_holds() {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let laptop = Home::new();
    let state = laptop.path().join("work");
    sample_home(&state, 0..0);
    let settings = state.join(".claude/settings.json");
    let mut v: Value = serde_json::from_slice(&fs::read(&settings).unwrap()).unwrap();
    v["env"]["ANTHROPIC_API_KEY"] = json!("sk-ant-api03-4f9c2e7b1d8a6305");
    fs::write(&settings, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let global = state.join(".claude.json");
    let mut v: Value = serde_json::from_slice(&fs::read(&global).unwrap()).unwrap();
    v["projects"]["/home/dev/shop"]["mcpServers"]["billing"] = json!({"type": "http", "url": "https://billing.example/mcp",
               "headers": {"X-Api-Key": "bk_live_77f0a9d3c2e1"}});
    fs::write(&global, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    backup(&laptop, &state);
    let note = credentials_note(&laptop, &reg, "t");
    assert!(
        note.contains(".claude/settings.json env.ANTHROPIC_API_KEY")
            && note
                .contains("MCP server \"billing\" of the project /home/dev/shop headers.X-Api-Key")
            && !note.contains("sk-ant")
            && !note.contains("bk_live"),
        "{note}"
    );
}

/// A Codex snapshot's push names what its `config.toml` sends written out, in TOML: a model
/// provider's token, the environment Codex gives its commands, an MCP server's `env` (named
/// once, though the state carries the server too); the backup said it keeps the file's own.
#[test]
fn a_codex_snapshot_push_names_the_credentials_its_config_toml_holds() {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let laptop = Home::new();
    let state = laptop.path().join("work");
    copy_dir(&samples().join("codex"), &state);
    let config = state.join(".codex/config.toml");
    let mut text = fs::read_to_string(&config).unwrap();
    text = text.replace(
        "env = { DOCS_MCP_LOG = \"warn\",",
        "env = { DOCS_API_KEY = \"dk_9c1e7a55f02b4d8e\", DOCS_MCP_LOG = \"warn\",",
    );
    text.push_str(
        "\n[shell_environment_policy]\nset = { NPM_TOKEN = \"npm_5e0c2b9f7a1d4e36\" }\n\n\
         [model_providers.proxy]\nbase_url = \"https://llm.example/v1\"\n\
         experimental_bearer_token = \"sk-proxy-3b8f0d6a2c914e7f\"\n",
    );
    fs::write(&config, text).unwrap();
    let out = asp_on(&laptop)
        .args(["backup", "--from", "codex", "--home"])
        .arg(&state)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let kept = said
        .lines()
        .find(|l| l.contains("config.toml") && l.contains("the backup keeps the file"))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(
        kept.contains("shell_environment_policy.set.NPM_TOKEN")
            && kept.contains("model_providers.proxy.experimental_bearer_token")
            && !kept.contains("DOCS_API_KEY"),
        "the file's own only (the server is named where the tools are read): {kept}"
    );
    let note = credentials_note(&laptop, &reg, "codex");
    assert!(
        note.contains(".codex/config.toml shell_environment_policy.set.NPM_TOKEN")
            && note.contains(".codex/config.toml model_providers.proxy.experimental_bearer_token")
            && note.matches("MCP server \"docs\" env.DOCS_API_KEY").count() == 1
            && !note.contains("npm_5e0c")
            && !note.contains("sk-proxy")
            && !note.contains("dk_9c1e"),
        "{note}"
    );
}

/// The script an MCP server runs from the harness's folder, kept by the backup, travels with
/// the snapshot: the pull takes it as configuration (a server of the state names it) and the
/// restore on the other machine writes it.
#[test]
fn a_script_an_mcp_server_runs_travels_with_its_snapshot() {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let reference = format!("{}/me/agent-state:copilot", reg.host());
    let laptop = Home::new();
    let state = laptop.path().join("work");
    copy_dir(&samples().join("copilot"), &state);
    let config = state.join(".copilot/mcp-config.json");
    let text = fs::read_to_string(&config).unwrap();
    fs::write(
        &config,
        text.replace("/home/dev/", &format!("{}/", state.display())),
    )
    .unwrap();
    succeeds(
        asp_on(&laptop)
            .args(["backup", "-q", "--from", "copilot", "--home"])
            .arg(&state),
    );
    push(&laptop, &["latest", &reference]);

    let desktop = Home::new();
    pull(&desktop, &[&reference]);
    let to = desktop.path().join("work");
    fs::create_dir_all(&to).unwrap();
    succeeds(
        asp_on(&desktop)
            .args(["restore", "-q", "--to", "copilot", "--home"])
            .arg(&to),
    );
    assert_eq!(
        fs::read(to.join(".copilot/mcp/issues.py")).unwrap(),
        fs::read(state.join(".copilot/mcp/issues.py")).unwrap()
    );
}

/// A pull cut short (`kill -9`, a dropped connection) and started again fetches only what it
/// had not: the blobs its leftover `.asp-pull-*` folder holds are linked in and checked again
/// (one that does not match its digest is fetched anew), not downloaded again from nothing
/// (new-user trial helper-136, 6).
#[test]
fn a_pull_started_again_takes_what_the_one_cut_short_had_fetched() {
    let (reg, laptop, _state) = laptop_backed_up(0..3);
    let reference = format!("{}/me/agent-state:laptop", reg.host());
    let pushed = push(&laptop, &["latest", &reference]);
    let content = pushed["digest"]
        .as_str()
        .unwrap()
        .trim_start_matches("sha256:");
    let manifest: Value =
        serde_json::from_slice(&fs::read(reg.blob_data(content)).unwrap()).unwrap();
    let layers: Vec<String> = manifest["layers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            l["digest"]
                .as_str()
                .unwrap()
                .trim_start_matches("sha256:")
                .to_owned()
        })
        .collect();
    assert!(layers.len() >= 4, "{manifest}");

    // The desktop's repository, and what a pull killed half way left in it.
    let desktop = Home::new();
    succeeds(
        asp_on(&desktop)
            .args(["backup", "-q", "--from", "codex", "--home"])
            .arg(samples().join("codex")),
    );
    let leftover = default_repo(&desktop).join(".asp-pull-Ab12Cd");
    fs::create_dir_all(&leftover).unwrap();
    for hex in &layers[..3] {
        fs::copy(reg.blob_data(hex), leftover.join(hex)).unwrap();
    }
    let damaged = &layers[3];
    let mut bytes = fs::read(reg.blob_data(damaged)).unwrap();
    bytes[0] ^= 0x55;
    fs::write(leftover.join(damaged), &bytes).unwrap();

    let pulled = pull(&desktop, &[&reference]);
    assert_eq!(pulled["blobsResumed"], 3, "{pulled}");
    assert!(pulled["blobsDownloaded"].as_u64().unwrap() >= 1, "{pulled}");
    succeeds(asp_on(&desktop).args(["check", "-q", "--read-data"]));
}
