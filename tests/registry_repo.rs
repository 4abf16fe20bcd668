//! `asp push` of a repository's snapshot and `asp pull` into a repository (issue 14), against
//! the real registry: what is restored from the pulled snapshot on another HOME is what the
//! original snapshot restores, and a second snapshot sharing most blobs uploads only its own.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use asp_test_registry::{Auth, TestRegistry, User};
use serde_json::Value;

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

/// `asp` as run on `home`'s machine: its repository is the default one under its HOME.
fn asp_on(home: &Home) -> assert_cmd::Command {
    let mut c = home.asp();
    c.env_remove("ASP_REPO").env_remove("XDG_DATA_HOME");
    c
}

fn default_repo(home: &Home) -> PathBuf {
    home.path().join(".local/share/asp/repo")
}

fn ok(cmd: &mut assert_cmd::Command) -> Vec<u8> {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{:?} failed: {}{}",
        cmd,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn backup(home: &Home, state_home: &Path) {
    ok(asp_on(home)
        .args(["backup", "-q", "--from", "claude-code", "--home"])
        .arg(state_home));
}

fn push(home: &Home, args: &[&str]) -> Value {
    json(&ok(asp_on(home)
        .arg("push")
        .args(args)
        .args(["-u", "alice", "--password-stdin", "--json", "-q"])
        .write_stdin(format!("{PASSWORD}\n"))))
}

fn pull(home: &Home, args: &[&str]) -> Value {
    json(&ok(asp_on(home)
        .arg("pull")
        .args(args)
        .args(["-u", "alice", "--password-stdin", "--json", "-q"])
        .write_stdin(format!("{PASSWORD}\n"))))
}

fn restore_into(home: &Home, to: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    fs::create_dir_all(to).unwrap();
    ok(asp_on(home)
        .args(["restore", "-q", "--to", "claude-code", "--home"])
        .arg(to));
    files_in(to)
}

#[test]
fn a_pushed_snapshot_pulled_into_an_empty_repository_restores_the_same_files() {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let reference = format!("{}/me/agent-state:laptop", reg.host());
    let laptop = Home::new();
    let state = laptop.path().join("work");
    sample_home(&state, 0..3);
    backup(&laptop, &state);
    let snapshots = json(&ok(asp_on(&laptop).args(["snapshots", "--json"])));
    let content = snapshots[0]["content"].as_str().unwrap().to_owned();

    let pushed = push(&laptop, &["latest", &reference]);
    assert_eq!(pushed["digest"], content.as_str(), "{pushed}");
    assert!(pushed["source"].as_str().unwrap().starts_with("snapshot "));

    // Another machine: nothing there yet, the repository is made by the pull.
    let desktop = Home::new();
    assert!(!default_repo(&desktop).exists());
    let pulled = pull(&desktop, &[&reference]);
    assert_eq!(pulled["digest"], content.as_str(), "{pulled}");
    let snap = &pulled["snapshot"];
    assert_eq!(snap["harness"], "claude-code", "{pulled}");
    assert_eq!(snap["content"], content.as_str());
    assert_eq!(
        snap["home"],
        format!("registry:{}/me/agent-state", reg.host()).as_str()
    );
    ok(asp_on(&desktop).args(["check", "-q", "--read-data"]));

    let original = restore_into(&laptop, &laptop.path().join("restored"));
    let copy = restore_into(&desktop, &desktop.path().join("restored"));
    assert!(original.keys().any(|k| k.ends_with(&format!("{A}.jsonl"))));
    // Every file is the original's, byte for byte, except the harness's own configuration,
    // which the original snapshot keeps whole in its snapshot manifest (repository.md §7),
    // which does not travel (registry.md §9): `settings.json` is then written from the
    // state's settings, not copied, `rules/security.md` is not written, and `.claude.json`
    // gets no local-scope MCP servers (a part of it the configuration keeps).
    let config = [
        ".claude.json",
        ".claude/rules/security.md",
        ".claude/settings.json",
    ];
    let mut differ: Vec<&str> = original
        .keys()
        .chain(copy.keys())
        .filter(|k| original.get(*k) != copy.get(*k))
        .map(String::as_str)
        .collect();
    differ.sort_unstable();
    differ.dedup();
    assert_eq!(differ, config, "only the harness configuration differs");
    assert!(copy.keys().filter(|k| k.ends_with(".jsonl")).count() >= 8);

    // The same content again: nothing new, nothing downloaded.
    let again = pull(&desktop, &[&reference]);
    assert_eq!(again["blobsDownloaded"], 0, "{again}");
    assert!(
        again.get("snapshot").is_none() || again["snapshot"].is_null(),
        "{again}"
    );
    let listed = json(&ok(asp_on(&desktop).args(["snapshots", "--json"])));
    assert_eq!(listed.as_array().unwrap().len(), 1);

    // The bundle pulled from the same REF is the one `asp pack --from-repo` writes.
    let bundle = desktop.path().join("b.aspstate");
    pull(&desktop, &[&reference, "-o", bundle.to_str().unwrap()]);
    let packed = laptop.path().join("p.aspstate");
    ok(asp_on(&laptop)
        .args(["pack", "-q", "--from-repo", "-o"])
        .arg(&packed));
    assert!(fs::read(&bundle).unwrap() == fs::read(&packed).unwrap());
}

#[test]
fn a_second_snapshot_uploads_only_what_the_registry_lacks() {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let laptop = Home::new();
    let state = laptop.path().join("work");
    sample_home(&state, 0..200);
    backup(&laptop, &state);
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
    assert_eq!(first["blobsPresent"], 0, "{first}");
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

#[test]
fn a_tampered_blob_writes_nothing_into_the_repository() {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let reference = format!("{}/me/agent-state:laptop", reg.host());
    let laptop = Home::new();
    let state = laptop.path().join("work");
    sample_home(&state, 0..2);
    backup(&laptop, &state);
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
    let out = asp_on(&desktop)
        .args(["pull", &reference, "--repo"])
        .arg(&repo)
        .args(["-u", "alice", "--password-stdin"])
        .write_stdin(format!("{PASSWORD}\n"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(nothing_in(&repo.join("blobs/sha256")), "blobs were written");
    let index: Value = serde_json::from_slice(&fs::read(repo.join("index.json")).unwrap()).unwrap();
    assert_eq!(index["manifests"].as_array().unwrap().len(), 0);
    let leftovers: Vec<_> = fs::read_dir(&repo)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| n.to_string_lossy().starts_with(".asp-pull-"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
