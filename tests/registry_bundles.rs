//! `asp push FILE.aspstate REF` and `asp pull REF -o FILE.aspstate` end to end, against a real
//! registry (CNCF distribution, Debian's `docker-registry`) started on 127.0.0.1 per test.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use asp_format::bundle::Bundle;
use asp_test_registry::{Auth, TestRegistry, User};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use crate::registry_cli::{Home, PASSWORD, WRONG, assert_no_secret, files, json, noise};

/// A state directory (the form `asp pack --from-dir` reads) of `n` sessions whose update
/// streams hold `bytes` of incompressible text each; `variant` changes session `changed`.
fn state_dir(dir: &Path, n: usize, bytes: usize, changed: Option<(usize, u64)>) {
    let sessions = dir.join("sessions");
    fs::create_dir_all(&sessions).unwrap();
    for i in 0..n {
        let id = format!("00000000-0000-4000-8000-{i:012}");
        let seed = match changed {
            Some((c, v)) if c == i => 1_000_000 + v,
            _ => i as u64,
        };
        let meta = json!({"id": id, "title": format!("session {i}"), "harness": "claude-code",
                          "cwd": "/home/dev/shop", "updatedAt": "2026-11-29T10:00:09.000Z"});
        fs::write(sessions.join(format!("{id}.json")), meta.to_string()).unwrap();
        let mut lines = String::new();
        for (k, chunk) in noise(seed, bytes).chunks(3000).enumerate() {
            let text = STANDARD.encode(chunk);
            let kind = if k % 2 == 0 {
                "user_message_chunk"
            } else {
                "agent_message_chunk"
            };
            let line = json!({"sessionId": id, "update": {"sessionUpdate": kind,
                              "content": {"type": "text", "text": text}}});
            lines.push_str(&line.to_string());
            lines.push('\n');
        }
        fs::write(sessions.join(format!("{id}.jsonl")), lines).unwrap();
    }
}

fn pack_dir(home: &Home, dir: &Path, out: &Path) {
    let o = home
        .asp()
        .args(["pack", "-q", "--from-dir"])
        .arg(dir)
        .arg("-o")
        .arg(out)
        .env_remove("SOURCE_DATE_EPOCH")
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn ok(out: &std::process::Output) -> Value {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out.stdout)
}

/// Nothing but `keep` in `dir`: no partial bundle, no staging directory.
fn assert_only(dir: &Path, keep: &[&str]) {
    let mut names: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, keep, "left behind in {}", dir.display());
}

/// Unpacks `bundle` into a Claude Code store under `into`: the exit code, what it said was
/// left out, and every file written.
fn unpack_to_claude(
    home: &Home,
    bundle: &Path,
    into: &Path,
) -> (Option<i32>, String, BTreeMap<PathBuf, Vec<u8>>) {
    fs::create_dir_all(into).unwrap();
    let o = home
        .asp()
        .args(["unpack", "-q"])
        .arg(bundle)
        .args(["--to", "claude-code", "--home"])
        .arg(into)
        .output()
        .unwrap();
    // The sample holds what Claude Code cannot take (exit 3, said on stderr); both sides
    // must leave out the same.
    assert!(
        matches!(o.status.code(), Some(0 | 3)),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let said = String::from_utf8_lossy(&o.stderr).into_owned();
    (o.status.code(), said, files(into))
}

#[test]
fn a_bundle_pulled_under_another_home_is_the_bundle_pushed_and_unpacks_the_same() {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let home = Home::new();
    let original = home.path().join("laptop.aspstate");
    pack_dir(&home, &crate::support::samples().join("state"), &original);
    let digest = Bundle::open(&original).unwrap().digest();
    let reference = format!("{}/me/agent-state:laptop", reg.host());

    let out = home
        .asp()
        .arg("push")
        .arg(&original)
        .args([&reference, "-u", "alice", "--password-stdin", "--json"])
        .write_stdin(format!("{PASSWORD}\n"))
        .output()
        .unwrap();
    let pushed = ok(&out);
    assert_no_secret(&out, PASSWORD, "alice");
    assert_eq!(
        pushed["digest"],
        digest.to_string(),
        "the bundle's own digest"
    );
    let blobs = pushed["blobs"].as_u64().unwrap();
    assert_eq!(pushed["blobsUploaded"].as_u64(), Some(blobs));
    assert_eq!(pushed["bytesSkipped"], 0);
    assert_eq!(pushed["source"], original.display().to_string());

    // Again: everything is there.
    let out = home
        .asp()
        .arg("push")
        .arg(&original)
        .args([&reference, "--json"])
        .env("ASP_REGISTRY_USERNAME", "alice")
        .env("ASP_REGISTRY_PASSWORD", PASSWORD)
        .output()
        .unwrap();
    let again = ok(&out);
    assert_eq!(again["bytesUploaded"], 0);
    assert_eq!(again["bytesSkipped"], pushed["bytesUploaded"]);

    // Another machine: its own HOME, docker's config.json.
    let other = Home::new();
    other.docker_config(&format!(
        r#"{{"auths": {{"{}": {{"auth": "{}"}}}}}}"#,
        reg.host(),
        STANDARD.encode(format!("alice:{PASSWORD}"))
    ));
    let pulled = other.path().join("desk.aspstate");
    let out = other
        .asp()
        .args(["pull", &reference, "--json", "-o"])
        .arg(&pulled)
        .output()
        .unwrap();
    let answer = ok(&out);
    assert_eq!(answer["digest"], digest.to_string());
    assert_eq!(answer["blobsDownloaded"].as_u64(), Some(blobs));
    assert_eq!(
        answer["bundleBytes"].as_u64(),
        Some(fs::metadata(&original).unwrap().len())
    );
    assert!(
        fs::read(&pulled).unwrap() == fs::read(&original).unwrap(),
        "the pulled bundle is byte for byte the pushed one"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            fs::metadata(&pulled).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
    let v = other.asp().arg("verify").arg(&pulled).output().unwrap();
    assert!(v.status.success(), "{}", String::from_utf8_lossy(&v.stderr));

    // The manifest says when, which harness and how many sessions without a layer fetched.
    let annotations = Bundle::open(&pulled)
        .unwrap()
        .image_manifest()
        .unwrap()
        .annotations
        .clone()
        .unwrap();
    assert_eq!(annotations["vnd.asp.sessions"], "2");
    assert_eq!(annotations["vnd.asp.harness"], "claude-code,codex");

    // Unpacking the pulled bundle into a harness gives what unpacking the original gives.
    let a = unpack_to_claude(&home, &original, &home.path().join("h1"));
    let b = unpack_to_claude(&other, &pulled, &other.path().join("h1"));
    assert!(a.2.len() > 3, "{:?}", a.2.keys());
    assert_eq!(a, b);

    // An existing file is kept unless --force: refused to overwrite, exit 1, as asp-pack.
    fs::write(&pulled, b"mine").unwrap();
    let out = other
        .asp()
        .args(["pull", &reference, "-o"])
        .arg(&pulled)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("--force"));
    assert_eq!(fs::read(&pulled).unwrap(), b"mine");
    let out = other
        .asp()
        .args(["pull", &reference, "--force", "-o"])
        .arg(&pulled)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(fs::read(&pulled).unwrap() == fs::read(&original).unwrap());
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .starts_with(&format!("pulled {reference}@{digest} into ")),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn a_wrong_password_fails_clearly_and_is_never_shown_with_basic_or_token_auth() {
    let users = || vec![User::new("alice", PASSWORD)];
    for auth in [
        Auth::Htpasswd(users()),
        Auth::Token {
            users: users(),
            identity_tokens: vec![],
        },
    ] {
        let reg = TestRegistry::start(auth);
        let home = Home::new();
        let bundle = home.path().join("b.aspstate");
        pack_dir(&home, &crate::support::samples().join("state"), &bundle);
        let reference = format!("{}/me/s:x", reg.host());
        let out = home
            .asp()
            .arg("push")
            .arg(&bundle)
            .args([&reference, "-u", "alice", "--password-stdin"])
            .write_stdin(format!("{WRONG}\n"))
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("refused the credentials of user \"alice\""),
            "{err}"
        );
        assert_no_secret(&out, WRONG, "alice");

        // The right one works, and the pull with a wrong one writes nothing.
        let out = home
            .asp()
            .arg("push")
            .arg(&bundle)
            .args([&reference, "-u", "alice", "--password-stdin"])
            .write_stdin(format!("{PASSWORD}\n"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_no_secret(&out, PASSWORD, "alice");
        let out = home
            .asp()
            .args(["pull", &reference, "-o"])
            .arg(home.path().join("p.aspstate"))
            .env("ASP_REGISTRY_USERNAME", "alice")
            .env("ASP_REGISTRY_PASSWORD", WRONG)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(1));
        assert_no_secret(&out, WRONG, "alice");
        assert!(!home.path().join("p.aspstate").exists());
    }
}

/// How many blobs repository `repo` holds (whole, and linked into it: what HEAD finds).
fn blobs_linked(reg_storage: &Path, repo: &str) -> usize {
    let root = reg_storage
        .join("docker/registry/v2/repositories")
        .join(repo)
        .join("_layers/sha256");
    let Ok(dirs) = fs::read_dir(root) else {
        return 0;
    };
    dirs.flatten()
        .filter(|d| d.path().join("link").is_file())
        .count()
}

#[test]
fn a_push_cut_off_by_a_vanishing_registry_sends_only_the_rest_when_run_again() {
    let reg = Arc::new(Mutex::new(TestRegistry::start(Auth::None)));
    let (host, storage) = {
        let r = reg.lock().unwrap();
        (r.host(), r.storage())
    };
    let home = Home::new();
    let dir = home.path().join("state");
    state_dir(&dir, 60, 200_000, None);
    let bundle = home.path().join("big.aspstate");
    pack_dir(&home, &dir, &bundle);
    let reference = format!("{host}/me/big:x");

    // Kill the registry once a few blobs arrived, as an unplugged server would go.
    let done = Arc::new(AtomicBool::new(false));
    let watcher = {
        let (reg, done) = (Arc::clone(&reg), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::SeqCst) {
                if blobs_linked(&storage, "me/big") >= 5 {
                    reg.lock().unwrap().stop();
                    return true;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            false
        })
    };
    let out = home
        .asp()
        .arg("push")
        .arg(&bundle)
        .args([&reference, "--jobs", "1", "--json"])
        .output()
        .unwrap();
    done.store(true, Ordering::SeqCst);
    assert!(
        watcher.join().unwrap(),
        "the push ended before the registry was stopped"
    );
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let arrived = blobs_linked(&reg.lock().unwrap().storage(), "me/big");

    reg.lock().unwrap().restart();
    let out = home
        .asp()
        .arg("push")
        .arg(&bundle)
        .args([&reference, "--json"])
        .output()
        .unwrap();
    let r = ok(&out);
    let total = r["bytesUploaded"].as_u64().unwrap() + r["bytesSkipped"].as_u64().unwrap();
    println!(
        "resumed push: {} of {} blobs already there, {} of {} bytes uploaded",
        r["blobsPresent"], r["blobs"], r["bytesUploaded"], total
    );
    // What arrived is skipped; a blob whose record the kill cut in half (distribution
    // answers 500 for it) is sent again.
    let present = r["blobsPresent"].as_u64().unwrap();
    assert!(
        arrived >= 5 && present <= arrived as u64 && present + 1 >= arrived as u64,
        "{r}"
    );
    assert_eq!(
        r["blobsUploaded"].as_u64().unwrap() + present,
        r["blobs"].as_u64().unwrap()
    );
    assert!(r["bytesUploaded"].as_u64().unwrap() < total);

    // What arrived in two goes pulls back as the same bundle.
    let pulled = home.path().join("back.aspstate");
    let out = home
        .asp()
        .args(["pull", &reference, "-o"])
        .arg(&pulled)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(fs::read(&pulled).unwrap() == fs::read(&bundle).unwrap());
}

#[test]
fn a_tampered_blob_on_the_registry_fails_the_pull_with_exit_4_and_writes_nothing() {
    let reg = TestRegistry::start(Auth::None);
    let home = Home::new();
    let dir = home.path().join("state");
    state_dir(&dir, 3, 20_000, None);
    let bundle = home.path().join("b.aspstate");
    pack_dir(&home, &dir, &bundle);
    let reference = format!("{}/me/t:x", reg.host());
    let out = home
        .asp()
        .arg("push")
        .arg(&bundle)
        .arg(&reference)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The largest layer, changed in the registry's own storage.
    let b = Bundle::open(&bundle).unwrap();
    let layer = b
        .image_manifest()
        .unwrap()
        .layers
        .iter()
        .max_by_key(|l| l.size)
        .unwrap()
        .clone();
    let data = reg.blob_data(&layer.digest.hex());
    let mut bytes = fs::read(&data).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x20;
    fs::write(&data, &bytes).unwrap();

    let dest = home.path().join("out");
    fs::create_dir(&dest).unwrap();
    let out = home
        .asp()
        .args(["pull", &reference, "-o"])
        .arg(dest.join("p.aspstate"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("integrity failure"), "{err}");
    assert!(
        err.contains(&layer.digest.to_string()),
        "names the blob: {err}"
    );
    assert_only(&dest, &[]);

    // Truncated: shorter than the manifest says.
    bytes.truncate(mid);
    fs::write(&data, &bytes).unwrap();
    let out = home
        .asp()
        .args(["pull", &reference, "-o"])
        .arg(dest.join("p.aspstate"))
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_only(&dest, &[]);
}

#[test]
fn a_bundle_sharing_99_percent_with_one_pushed_uploads_at_most_2_percent() {
    let reg = TestRegistry::start(Auth::None);
    let home = Home::new();
    let (one, two) = (home.path().join("one"), home.path().join("two"));
    state_dir(&one, 100, 40_000, None);
    state_dir(&two, 100, 40_000, Some((42, 1)));
    let (b1, b2) = (
        home.path().join("1.aspstate"),
        home.path().join("2.aspstate"),
    );
    pack_dir(&home, &one, &b1);
    pack_dir(&home, &two, &b2);
    let first = ok(&home
        .asp()
        .arg("push")
        .arg(&b1)
        .args([&format!("{}/me/state:one", reg.host()), "--json"])
        .output()
        .unwrap());
    let r = ok(&home
        .asp()
        .arg("push")
        .arg(&b2)
        .args([&format!("{}/me/state:two", reg.host()), "--json"])
        .output()
        .unwrap());
    let uploaded = r["bytesUploaded"].as_u64().unwrap();
    let skipped = r["bytesSkipped"].as_u64().unwrap();
    let manifest = r["manifestBytes"].as_u64().unwrap();
    let total = uploaded + skipped;
    println!(
        "99%-shared bundle push: {uploaded} of {total} blob bytes uploaded ({:.2}%) in {} of {} blobs, \
         {skipped} skipped, manifest {manifest} bytes ({:.2}% with it); first push {} bytes",
        100.0 * uploaded as f64 / total as f64,
        r["blobsUploaded"],
        r["blobs"],
        100.0 * (uploaded + manifest) as f64 / total as f64,
        first["bytesUploaded"]
    );
    // The changed session's layer, the state-manifest layer and the layer table.
    assert_eq!(r["blobsUploaded"], 3, "{r}");
    assert!((uploaded + manifest) * 50 <= total, "{r}");
}

#[test]
fn what_cannot_be_pushed_or_pulled_as_a_bundle_says_why() {
    let home = Home::new();
    // Layout 1 has no image manifest: re-pack (no registry is contacted).
    let old = crate::support::root().join("tests/fixtures/layout-1/state.aspstate");
    let out = home
        .asp()
        .arg("push")
        .arg(&old)
        .arg("localhost:9/me/s:x")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("layout 1.0.0") && err.contains("asp-pack --from-dir"),
        "{err}"
    );

    // A reference alone: what to push?
    let out = home
        .asp()
        .args(["push", "localhost:9/me/s:x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("asp push FILE.aspstate REF"));

    // A damaged bundle is not pushed.
    let good = home.path().join("g.aspstate");
    pack_dir(&home, &crate::support::samples().join("state"), &good);
    let mut bytes = fs::read(&good).unwrap();
    let n = bytes.len();
    bytes.truncate(n - 30);
    let bad = home.path().join("bad.aspstate");
    fs::write(&bad, &bytes).unwrap();
    let out = home
        .asp()
        .arg("push")
        .arg(&bad)
        .arg("localhost:9/me/s:x")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // An artifact that is not a bundle (pushed from a bare layout) does not become one.
    let reg = TestRegistry::start(Auth::None);
    let src = home.path().join("layout");
    crate::registry_cli::make_layout(&src, &[noise(1, 5000)], "x");
    let reference = format!("{}/me/l:x", reg.host());
    let out = home
        .asp()
        .args(["push", "--layout"])
        .arg(&src)
        .arg(&reference)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dest = home.path().join("dest");
    fs::create_dir(&dest).unwrap();
    let out = home
        .asp()
        .args(["pull", &reference, "-o"])
        .arg(dest.join("l.aspstate"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("does not make a usable bundle"), "{err}");
    assert_only(&dest, &[]);

    // A container image, and blobs from elsewhere: refused before any blob, nothing written.
    // (A manifest over the 4 MiB limit cannot be planted: distribution will not serve it;
    // the registry crate's tests lower the limit instead.)
    let config = br#"{"architecture":"amd64","os":"linux"}"#;
    let cd = asp_format::Descriptor::of(config);
    let image = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": cd.digest.to_string(), "size": cd.size},
        "layers": []
    }))
    .unwrap();
    reg.plant_manifest("library/busybox", "latest", &image);
    // Layers from elsewhere (`urls`) are not fetched.
    let foreign = serde_json::to_vec(&json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.asp.state.v1",
        "config": {"mediaType": "application/vnd.oci.empty.v1+json",
                   "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
                   "size": 2},
        "layers": [{"mediaType": "application/vnd.asp.file.v1", "size": 5,
                    "digest": cd.digest.to_string(), "urls": ["https://example.com/x"]}]
    }))
    .unwrap();
    reg.plant_manifest("me/foreign", "x", &foreign);
    for (repo, code, says) in [
        ("library/busybox:latest", 1, "not an asp state artifact"),
        ("me/foreign:x", 4, "external URLs"),
    ] {
        let out = home
            .asp()
            .args(["pull", &format!("{}/{repo}", reg.host()), "-o"])
            .arg(dest.join("l.aspstate"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{repo}: {err}");
        assert!(err.contains(says), "{repo}: {err}");
        assert_only(&dest, &[]);
    }

    // Two destinations are a usage error (none is the snapshot repository).
    let out = home
        .asp()
        .args(["pull", &reference, "-o", "a.aspstate", "--layout", "d"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn bundles_flow_through_pipes_to_and_from_a_registry() {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let home = Home::new();
    let bundle = home.path().join("s.aspstate");
    pack_dir(&home, &crate::support::samples().join("state"), &bundle);
    let reference = format!("{}/me/pipe:x", reg.host());
    let out = home
        .asp()
        .args(["push", "-", &reference, "--json"])
        .env("ASP_REGISTRY_USERNAME", "alice")
        .env("ASP_REGISTRY_PASSWORD", PASSWORD)
        .write_stdin(fs::read(&bundle).unwrap())
        .output()
        .unwrap();
    let r = ok(&out);
    assert_eq!(r["source"], "<stdin>");
    assert_eq!(
        r["digest"],
        Bundle::open(&bundle).unwrap().digest().to_string()
    );

    // By digest, to standard output: the same bytes.
    let by_digest = format!("{}/me/pipe@{}", reg.host(), r["digest"].as_str().unwrap());
    let out = home
        .asp()
        .args(["pull", &by_digest, "-o", "-"])
        .env("ASP_REGISTRY_USERNAME", "alice")
        .env("ASP_REGISTRY_PASSWORD", PASSWORD)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout == fs::read(&bundle).unwrap());
    assert!(String::from_utf8_lossy(&out.stderr).contains("to standard output"));

    // Standard input cannot carry both the bundle and the password; stdout not both the
    // bundle and --json.
    for args in [
        vec!["push", "-", &reference, "-u", "alice", "--password-stdin"],
        vec!["pull", &reference, "-o", "-", "--json"],
    ] {
        let out = home.asp().args(&args).output().unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

#[test]
fn a_bundle_with_a_damaged_layer_is_never_pushed_whole() {
    let reg = TestRegistry::start(Auth::None);
    let home = Home::new();
    let dir = home.path().join("state");
    state_dir(&dir, 2, 60_000, None);
    let bundle = home.path().join("b.aspstate");
    pack_dir(&home, &dir, &bundle);
    let (layer, stored) = {
        let b = Bundle::open(&bundle).unwrap();
        let layer = b
            .image_manifest()
            .unwrap()
            .layers
            .iter()
            .max_by_key(|l| l.size)
            .unwrap()
            .clone();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut b.open_stored(&layer.descriptor()).unwrap(), &mut bytes)
            .unwrap();
        (layer, bytes)
    };
    // Entries are Stored: the layer's bytes are in the file as they are.
    let mut file = fs::read(&bundle).unwrap();
    let at = file
        .windows(64)
        .position(|w| w == &stored[stored.len() / 2..stored.len() / 2 + 64])
        .unwrap();
    file[at] ^= 0x01;
    fs::write(&bundle, &file).unwrap();

    let reference = format!("{}/me/dmg:x", reg.host());
    let out = home
        .asp()
        .arg("push")
        .arg(&bundle)
        .arg(&reference)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("integrity failure"), "{err}");
    assert!(
        !reg.blob_data(&layer.digest.hex()).exists(),
        "the damaged layer reached the registry"
    );
}

/// A layout 4 bundle (project dictionaries, spec/aspstate.md §4.1) pushed and pulled back is
/// the same bundle, byte for byte: the pull says layout 4 from the image manifest alone, and
/// checks each layer through its two dictionaries before it writes a byte.
#[cfg(feature = "claude-code")]
#[test]
fn a_layout_4_bundle_pulled_is_the_bundle_pushed() {
    let home = Home::new();
    let claude = crate::project_dictionaries::long_claude_home(home.path());
    pulled_is_pushed(&home, &claude, "4.0.0");
}

/// A layout 5 bundle (an update stream in windows, spec/aspstate.md §4.2) likewise: the pull
/// says layout 5 from the windowed layer's media type, and decodes it before it writes a byte.
#[cfg(feature = "claude-code")]
#[test]
fn a_layout_5_bundle_pulled_is_the_bundle_pushed() {
    let home = Home::new();
    let (claude, _) = crate::windowed_streams::large_claude_home(home.path());
    pulled_is_pushed(&home, &claude, "5.0.0");
}

/// Packs the Claude Code home `claude` (checking its layout version), pushes the bundle to a
/// registry and pulls it back: the same bytes.
#[cfg(feature = "claude-code")]
fn pulled_is_pushed(home: &Home, claude: &Path, version: &str) {
    let reg = TestRegistry::start(Auth::None);
    let bundle = home.path().join("packed.aspstate");
    let packed = home
        .asp()
        .args(["pack", "--from", "claude-code", "-q", "--home"])
        .arg(claude)
        .arg("-o")
        .arg(&bundle)
        .output()
        .unwrap();
    assert!(
        packed.status.success(),
        "{}",
        String::from_utf8_lossy(&packed.stderr)
    );
    assert_eq!(
        Bundle::open(&bundle).unwrap().layout().layout_version,
        version
    );
    let reference = format!("{}/me/layout:x", reg.host());
    let out = home
        .asp()
        .args(["push"])
        .arg(&bundle)
        .args([&reference, "--json"])
        .output()
        .unwrap();
    ok(&out);
    let pulled = home.path().join("pulled.aspstate");
    let out = home
        .asp()
        .args(["pull", &reference, "--json", "-o"])
        .arg(&pulled)
        .output()
        .unwrap();
    ok(&out);
    assert!(
        fs::read(&pulled).unwrap() == fs::read(&bundle).unwrap(),
        "the bundle pulled is not the bundle pushed"
    );
}
