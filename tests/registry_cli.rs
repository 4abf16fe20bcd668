//! `asp push` and `asp pull` end to end, against a real registry (CNCF distribution 2.8,
//! Debian's `docker-registry`) started on 127.0.0.1 for each test.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use asp_registry::ARTIFACT_TYPE;
use asp_registry::layout::Layout;
use asp_registry::manifest::{EMPTY_JSON, ImageManifest, OciDescriptor};
use asp_test_registry::{Auth, TestRegistry, User};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

pub(crate) const PASSWORD: &str = "Cli-pw-3b7e!staple";
pub(crate) const WRONG: &str = "Nope-pw-41aa?wrong";

/// A scratch home: its own HOME, docker config dir and state dir, so nothing of the machine's
/// leaks in and the record of remotes starts empty.
pub(crate) struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    pub(crate) fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("docker")).unwrap();
        Home { dir }
    }

    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }

    pub(crate) fn asp(&self) -> assert_cmd::Command {
        let mut c = crate::support::asp();
        c.env("HOME", self.path())
            .env("DOCKER_CONFIG", self.path().join("docker"))
            .env("XDG_STATE_HOME", self.path().join("state"))
            .env_remove("ASP_REGISTRY_USERNAME")
            .env_remove("ASP_REGISTRY_PASSWORD");
        c
    }

    pub(crate) fn docker_config(&self, json: &str) {
        fs::write(self.path().join("docker/config.json"), json).unwrap();
    }
}

/// Incompressible bytes, the same for the same seed.
pub(crate) fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

pub(crate) fn make_layout(dir: &Path, bodies: &[Vec<u8>], name: &str) -> OciDescriptor {
    let layout = Layout::open_or_init(dir).unwrap();
    layout.put_blob(EMPTY_JSON).unwrap();
    let layers = bodies
        .iter()
        .map(|b| {
            OciDescriptor::new(
                "application/vnd.asp.test.layer",
                layout.put_blob(b).unwrap(),
            )
        })
        .collect();
    let m = ImageManifest::artifact(layers, BTreeMap::new());
    layout
        .add_manifest(&m.to_bytes(), Some(ARTIFACT_TYPE), Some(name))
        .unwrap()
}

pub(crate) fn files(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap())
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().strip_prefix(dir).unwrap().to_path_buf(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

pub(crate) fn json(out: &[u8]) -> Value {
    serde_json::from_slice(out)
        .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(out)))
}

/// Every text a run produced, and the ways a password could hide in it.
pub(crate) fn assert_no_secret(out: &std::process::Output, secret: &str, user: &str) {
    let text = format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    for form in [
        secret.to_owned(),
        STANDARD.encode(format!("{user}:{secret}")),
        secret.replace('!', "%21").replace('?', "%3F"),
    ] {
        assert!(
            !text.contains(&form),
            "the secret leaked as {form:?}:\n{text}"
        );
    }
}

/// Pushing to a tag that names something else moves the tag, as `docker push` does, and says
/// what it named before: that manifest is still there, pulled by its digest.
#[test]
fn a_push_that_moves_a_tag_names_what_it_named_before() {
    let reg = TestRegistry::start(Auth::None);
    let home = Home::new();
    let reference = format!("{}/me/agent-state:laptop", reg.host());
    let push = |src: &Path, json: bool| {
        let mut cmd = home.asp();
        cmd.args(["push", "--layout"]).arg(src).arg(&reference);
        if json {
            cmd.arg("--json");
        }
        crate::support::succeeded(cmd.output().unwrap())
    };
    let (a, b) = (home.path().join("a"), home.path().join("b"));
    let first = make_layout(&a, &[noise(1, 2000)], "laptop");
    make_layout(&b, &[noise(2, 2000)], "laptop");
    let out = push(&a, true);
    assert!(
        json(&out.stdout).get("replaced").is_none(),
        "a new tag replaced nothing"
    );
    // The same again: the tag names what it named.
    let out = push(&a, true);
    assert!(
        json(&out.stdout).get("replaced").is_none(),
        "the same manifest replaced nothing"
    );
    let out = push(&b, true);
    assert_eq!(json(&out.stdout)["replaced"], first.digest.to_string());
    let out = push(&a, false);
    let said = String::from_utf8_lossy(&out.stderr);
    let before = format!("{}/me/agent-state@", reg.host());
    assert!(
        said.contains("note: ") && said.contains("named sha256:") && said.contains(&before),
        "{said}"
    );
    // What the tag named before is there by its digest.
    let pulled = home.path().join("pulled");
    let by_digest = format!("{}/me/agent-state@{}", reg.host(), first.digest);
    let pull = home
        .asp()
        .args(["pull", &by_digest, "--layout"])
        .arg(&pulled)
        .output();
    crate::support::succeeded(pull.unwrap());

    // A pull into a layout that moves the tag there says so too (new-user trial helper-127,
    // 6): `replaced` in --json, a note without.
    let named = home.path().join("named");
    let pull = |json_out: bool| {
        let mut cmd = home.asp();
        cmd.args(["pull", &reference, "--layout"]).arg(&named);
        if json_out {
            cmd.arg("--json");
        }
        crate::support::succeeded(cmd.output().unwrap())
    };
    let out = pull(true);
    assert!(json(&out.stdout).get("replaced").is_none());
    let b_digest = json(&push(&b, true).stdout)["digest"].clone();
    let out = pull(true);
    assert_eq!(json(&out.stdout)["replaced"], first.digest.to_string());
    push(&a, false);
    let out = pull(false);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        said.contains(&format!(
            "note: laptop named {}",
            b_digest.as_str().unwrap()
        )),
        "{said}"
    );
}

#[test]
fn push_and_pull_through_the_cli_with_json_results() {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let home = Home::new();
    let src = home.path().join("src");
    let bodies: Vec<Vec<u8>> = (0..6).map(|i| noise(i, 3000 * (i as usize + 1))).collect();
    let m = make_layout(&src, &bodies, "laptop");
    let reference = format!("{}/me/agent-state:laptop", reg.host());

    let out = home
        .asp()
        .args(["push", "--layout"])
        .arg(&src)
        .args([&reference, "-u", "alice", "--password-stdin", "--json"])
        .write_stdin(format!("{PASSWORD}\n"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = json(&out.stdout);
    assert_eq!(first["digest"], m.digest.to_string());
    assert_eq!(first["blobsUploaded"], 7);
    let total: u64 = bodies.iter().map(|b| b.len() as u64).sum::<u64>() + 2;
    assert_eq!(first["bytesUploaded"], total);
    assert_no_secret(&out, PASSWORD, "alice");

    // Credentials from the environment this time; nothing left to upload.
    let out = home
        .asp()
        .args(["push", "--layout"])
        .arg(&src)
        .args([&reference, "--json"])
        .env("ASP_REGISTRY_USERNAME", "alice")
        .env("ASP_REGISTRY_PASSWORD", PASSWORD)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let again = json(&out.stdout);
    assert_eq!(
        (
            again["blobsUploaded"].as_u64(),
            again["bytesUploaded"].as_u64()
        ),
        (Some(0), Some(0))
    );
    assert_eq!(again["bytesPresent"], total);

    // Pull into an empty place under another HOME, with docker's config.json.
    let other = Home::new();
    other.docker_config(&format!(
        r#"{{"auths": {{"{}": {{"auth": "{}"}}}}}}"#,
        reg.host(),
        STANDARD.encode(format!("alice:{PASSWORD}"))
    ));
    let dest = other.path().join("pulled");
    let out = other
        .asp()
        .args(["pull", &reference, "--layout"])
        .arg(&dest)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.starts_with(&format!("pulled {reference}@{}", m.digest)),
        "{said}"
    );
    assert!(said.contains("7 blobs downloaded"), "{said}");
    assert_eq!(
        files(&src),
        files(&dest),
        "every file of the layout comes back"
    );

    let out = other
        .asp()
        .args(["pull", &reference, "--json", "--layout"])
        .arg(&dest)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(json(&out.stdout)["blobsDownloaded"], 0);

    // A mistyped tag is told from a mistyped repository by the tags there.
    for (wrong, said) in [
        (
            format!("{}/me/agent-state:lastest", reg.host()),
            "tag lastest (its tags: laptop) is not in the registry",
        ),
        (
            format!("{}/me/agent-stat:laptop", reg.host()),
            "tag laptop (the repository has no tags: is its name right?) is not in the registry",
        ),
    ] {
        let out = other
            .asp()
            .args(["pull", &wrong, "--layout"])
            .arg(other.path().join("nowhere"))
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(said), "{err}");
    }
}

#[test]
fn wrong_credentials_from_every_source_fail_with_exit_1_and_never_show_the_password() {
    for auth in [
        Auth::Htpasswd(vec![User::new("alice", PASSWORD)]),
        Auth::Token {
            users: vec![User::new("alice", PASSWORD)],
            identity_tokens: vec![],
        },
    ] {
        let reg = TestRegistry::start(auth);
        let home = Home::new();
        let src = home.path().join("src");
        make_layout(&src, &[noise(1, 500)], "x");
        let reference = format!("{}/me/state:x", reg.host());
        let check = |out: std::process::Output, how: &str| {
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            assert_eq!(out.status.code(), Some(1), "{how}: {err}");
            assert!(
                err.contains("refused the credentials of user \"alice\""),
                "{how}: {err}"
            );
            assert_no_secret(&out, WRONG, "alice");
        };
        let out = home
            .asp()
            .args(["push", "--layout"])
            .arg(&src)
            .args([&reference, "-u", "alice", "--password-stdin"])
            .write_stdin(WRONG)
            .output()
            .unwrap();
        check(out, "--password-stdin");
        let out = home
            .asp()
            .args(["pull", &reference, "--json", "--layout"])
            .arg(home.path().join("d"))
            .env("ASP_REGISTRY_USERNAME", "alice")
            .env("ASP_REGISTRY_PASSWORD", WRONG)
            .output()
            .unwrap();
        check(out, "environment");
        assert!(!home.path().join("d").exists());
        home.docker_config(&format!(
            r#"{{"auths": {{"http://{}/v2/": {{"auth": "{}"}}}}}}"#,
            reg.host(),
            STANDARD.encode(format!("alice:{WRONG}"))
        ));
        let out = home
            .asp()
            .args(["push", "-q", "--layout"])
            .arg(&src)
            .arg(&reference)
            .output()
            .unwrap();
        check(out, "config.json");
        // No credentials at all: told how to give them.
        fs::remove_file(home.path().join("docker/config.json")).unwrap();
        let out = home
            .asp()
            .args(["push", "--layout"])
            .arg(&src)
            .arg(&reference)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("asks for credentials") && err.contains("--password-stdin"),
            "{err}"
        );
    }
}

#[cfg(unix)]
#[test]
fn credential_helpers_named_in_docker_config_are_used() {
    use std::os::unix::fs::PermissionsExt;
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("carol", PASSWORD)]));
    let home = Home::new();
    let bin = home.path().join("bin");
    fs::create_dir(&bin).unwrap();
    let helper = bin.join("docker-credential-asptest");
    fs::write(
        &helper,
        format!(
            "#!/bin/sh\n[ \"$1\" = get ] || exit 2\nread server\n\
             [ \"$server\" = \"{}\" ] || {{ echo 'credentials not found in native keychain'; exit 1; }}\n\
             printf '%s' '{{\"ServerURL\":\"'\"$server\"'\",\"Username\":\"carol\",\"Secret\":\"{PASSWORD}\"}}'\n",
            reg.host()
        ),
    )
    .unwrap();
    fs::set_permissions(&helper, fs::Permissions::from_mode(0o755)).unwrap();
    home.docker_config(&format!(
        r#"{{"credHelpers": {{"{}": "asptest"}}}}"#,
        reg.host()
    ));
    let src = home.path().join("src");
    make_layout(&src, &[noise(2, 800)], "x");
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = home
        .asp()
        .env("PATH", &path)
        .args(["push", "--json", "--layout"])
        .arg(&src)
        .arg(format!("{}/me/helper:x", reg.host()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_no_secret(&out, PASSWORD, "carol");
}

#[test]
fn integrity_failures_exit_4_and_leave_the_destination_untouched() {
    let reg = TestRegistry::start(Auth::None);
    let home = Home::new();
    let src = home.path().join("src");
    let bodies = vec![noise(5, 20_000), noise(6, 20_000)];
    make_layout(&src, &bodies, "x");
    let reference = format!("{}/me/t:x", reg.host());
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
    let hex = asp_format::Digest::of(&bodies[1]).hex();
    let data = reg.blob_data(&hex);
    let mut b = fs::read(&data).unwrap();
    b[100] ^= 0xff;
    fs::write(&data, &b).unwrap();
    let dest = home.path().join("dest");
    let out = home
        .asp()
        .args(["pull", &reference, "--layout"])
        .arg(&dest)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("integrity failure"), "{err}");
    assert!(!dest.exists());
    let entries: Vec<_> = fs::read_dir(home.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        entries
            .iter()
            .all(|n| !n.to_string_lossy().starts_with(".asp-pull")),
        "staging left behind: {entries:?}"
    );
}

#[test]
fn what_is_not_asp_state_and_usage_errors_say_so() {
    let reg = TestRegistry::start(Auth::None);
    let home = Home::new();
    let config = br#"{"architecture":"amd64","os":"linux"}"#;
    let cd = asp_format::Descriptor::of(config);
    let image = serde_json::to_vec(&serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd.digest.to_string(), "size": cd.size},
        "layers": []
    }))
    .unwrap();
    reg.plant_manifest("library/busybox", "latest", &image);
    let out = home
        .asp()
        .args([
            "pull",
            &format!("{}/library/busybox", reg.host()),
            "--layout",
        ])
        .arg(home.path().join("d"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("not an asp state artifact") && err.contains("container image"),
        "{err}"
    );

    // Usage: a bad reference, a layout with two manifests and no choice.
    let src = home.path().join("src");
    make_layout(&src, &[noise(8, 100)], "one");
    make_layout(&src, &[noise(9, 100)], "two");
    for args in [
        vec![
            "push".to_owned(),
            "--layout".into(),
            src.display().to_string(),
            "Bad/Ref".into(),
        ],
        vec![
            "push".to_owned(),
            "--layout".into(),
            src.display().to_string(),
            format!("{}/me/x:three", reg.host()),
        ],
        vec![
            "pull".to_owned(),
            "x".into(),
            "-o".into(),
            "a".into(),
            "--repo".into(),
            "b".into(),
        ],
        vec![
            "push".to_owned(),
            "--layout".into(),
            "x".into(),
            "-u".into(),
            "a".into(),
            "h/x".into(),
        ],
    ] {
        let out = home.asp().args(&args).output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // Naming the manifest works, and the pushed tag is REF's.
    let out = home
        .asp()
        .args(["push", "--manifest", "two", "--json", "--layout"])
        .arg(&src)
        .arg(format!("{}/me/x:three", reg.host()))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_repository_pushed_to_before_is_where_blobs_are_mounted_from() {
    let reg = TestRegistry::start(Auth::None);
    let home = Home::new();
    let src = home.path().join("src");
    let bodies: Vec<Vec<u8>> = (0..5).map(|i| noise(40 + i, 10_000)).collect();
    make_layout(&src, &bodies, "x");
    let push_to = |repo: &str| {
        let out = home
            .asp()
            .args(["push", "--json", "--layout"])
            .arg(&src)
            .arg(format!("{}/{repo}:x", reg.host()))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        json(&out.stdout)
    };
    push_to("me/first");
    let second = push_to("me/second");
    assert_eq!(second["blobsMounted"], 6, "{second}");
    assert_eq!(second["mountedFrom"], "me/first");
    assert_eq!(second["bytesUploaded"], 0);
    let remotes = fs::read_to_string(home.path().join("state/asp/remotes.json")).unwrap();
    assert!(
        remotes.contains("me/second") && remotes.contains("me/first"),
        "{remotes}"
    );
}

#[test]
fn a_registry_that_accepts_and_never_answers_is_given_up_on_after_the_timeout() {
    let silent = asp_test_registry::QuietServer::start(|_| false);
    let host = silent.host();
    let home = Home::new();
    let out_file = home.path().join("x.aspstate");

    // Pull, --timeout 1: HTTPS and plain HTTP together wait one second, not 30 + 120.
    let started = std::time::Instant::now();
    let out = home
        .asp()
        .args(["pull", &format!("{host}/me/x:t"), "--timeout", "1", "-o"])
        .arg(&out_file)
        .output()
        .unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "the registry at {host} accepted the connection but did not answer within 1 s"
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!("https://{host}/v2/")) && err.contains(&format!("http://{host}/v2/")),
        "both URLs tried are named: {err}"
    );
    assert!(took < std::time::Duration::from_secs(4), "took {took:?}");
    assert!(!out_file.exists());

    // Push, the timeout from the environment.
    let src = home.path().join("src");
    make_layout(&src, &[noise(31, 100)], "t");
    let started = std::time::Instant::now();
    let out = home
        .asp()
        .env("ASP_REGISTRY_TIMEOUT", "0.5")
        .args(["push", "--layout"])
        .arg(&src)
        .arg(format!("{host}/me/x:t"))
        .output()
        .unwrap();
    let took = started.elapsed();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("accepted the connection but did not answer within 0.5 s"),
        "{err}"
    );
    assert!(took < std::time::Duration::from_secs(3), "took {took:?}");

    // A timeout that is not a number of seconds is a usage error, before any connection.
    for (flag, env) in [(Some("0"), None), (None, Some("soon"))] {
        let mut cmd = home.asp();
        if let Some(e) = env {
            cmd.env("ASP_REGISTRY_TIMEOUT", e);
        }
        cmd.args(["pull", &format!("{host}/me/x:t"), "-o"])
            .arg(&out_file);
        if let Some(f) = flag {
            cmd.args(["--timeout", f]);
        }
        let out = cmd.output().unwrap();
        assert_eq!(
            out.status.code(),
            Some(2),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    // --help says how long it waits and how to change it.
    for cmd in ["pull", "push"] {
        let out = home.asp().args([cmd, "--help"]).output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        assert!(
            help.contains("--timeout <SECONDS>") && help.contains("ASP_REGISTRY_TIMEOUT"),
            "{help}"
        );
    }
}

#[test]
fn a_registry_that_is_down_is_named_by_every_url_tried() {
    let port = asp_test_registry::free_port();
    let host = format!("127.0.0.1:{port}");
    let home = Home::new();
    let started = std::time::Instant::now();
    let out = home
        .asp()
        .args(["pull", &format!("{host}/me/x:t"), "-o"])
        .arg(home.path().join("x.aspstate"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("cannot reach {host}")), "{err}");
    assert!(err.to_lowercase().contains("refused"), "{err}");
    assert!(
        err.contains(&format!("https://{host}/v2/")) && err.contains(&format!("http://{host}/v2/")),
        "a loopback registry is tried over HTTPS and plain HTTP, and the message names both: {err}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(4));
}

/// A state holding a credential written out (an MCP server's token) says so before it leaves
/// for the registry, naming each by server and name; references (`${VAR}`) are not named.
#[test]
fn a_push_names_the_credentials_the_state_holds() {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let home = Home::new();
    let claude = home.path().join("claude");
    crate::support::copy_dir(&crate::support::samples().join("claude-code"), &claude);
    let config = claude.join(".claude.json");
    let mut v: Value = serde_json::from_slice(&fs::read(&config).unwrap()).unwrap();
    v["mcpServers"]["tracker"] = serde_json::json!({
        "command": "tracker-mcp",
        "env": {"TRACKER_API_TOKEN": "tk_live_8f3a9c2e71b04d5f"}
    });
    fs::write(&config, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
    let bundle = home.path().join("state.aspstate");
    crate::support::asp_pack()
        .args(["--from", "claude-code", "-q", "--home"])
        .arg(&claude)
        .arg("-o")
        .arg(&bundle)
        .assert()
        .code(0);
    let out = home
        .asp()
        .arg("push")
        .arg(&bundle)
        .arg(format!("{}/me/state:t", reg.host()))
        .args(["-u", "alice", "--password-stdin"])
        .write_stdin(format!("{PASSWORD}\n"))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    let note = said
        .lines()
        .find(|l| l.starts_with("note: ") && l.contains("credentials written out in full"))
        .unwrap_or_else(|| panic!("{said}"));
    assert!(
        note.contains(&format!("go to {} with it: ", reg.host()))
            && note.contains("MCP server \"tracker\" env.TRACKER_API_TOKEN")
            && !note.contains("GITHUB"),
        "{note}"
    );
    assert!(
        !note.contains("tk_live"),
        "the value itself is never printed: {note}"
    );
}

/// A directory named as a layout or a repository that exists and is something else is the
/// same mistake either way, and fails the same way: exit 1 (as a `--repo` that is not a
/// repository does everywhere), before anything is fetched or written. The registry holds
/// what was asked for, so only the destination can be what stops the pull.
#[test]
fn a_destination_of_another_kind_is_refused_alike() {
    let reg = TestRegistry::start(Auth::None);
    let home = Home::new();
    let src = home.path().join("src");
    make_layout(&src, &[noise(61, 1000)], "v1");
    let reference = format!("{}/me/kind:v1", reg.host());
    let out = home
        .asp()
        .args(["push", "-q", "--layout"])
        .arg(&src)
        .arg(&reference)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let folder = home.path().join("photos");
    fs::create_dir_all(&folder).unwrap();
    fs::write(folder.join("cat.jpg"), b"not a layout").unwrap();
    let before = files(&folder);
    for (flag, says) in [
        ("--repo", "is not an asp repository"),
        ("--layout", "is not an OCI image layout"),
    ] {
        let out = home
            .asp()
            .args(["pull", &reference, flag])
            .arg(&folder)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flag}: {err}");
        assert!(err.contains(says), "{flag}: {err}");
        assert_eq!(files(&folder), before, "{flag} wrote into it");
    }
    // Pushing from it is the same: what is there is not a layout.
    let out = home
        .asp()
        .args(["push", "--layout"])
        .arg(&folder)
        .arg(&reference)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("is not an OCI image layout"), "{err}");
}

/// `-u USER` reads no password by itself: `--password-stdin` says to, as with `docker login`.
/// The help says so on the option's own line, and leaving `--password-stdin` out is a usage
/// error (exit 2) that says what to add, before anything is read; with it, the push goes.
#[test]
fn a_user_name_alone_says_to_add_password_stdin() {
    let reg = TestRegistry::start(Auth::Htpasswd(vec![User::new("alice", PASSWORD)]));
    let home = Home::new();
    for cmd in ["push", "pull"] {
        let out = home.asp().args([cmd, "--help"]).output().unwrap();
        let help = String::from_utf8_lossy(&out.stdout);
        let line = help
            .lines()
            .find(|l| l.contains("--username <USER>"))
            .unwrap_or_else(|| panic!("{help}"));
        assert!(
            line.contains("with --password-stdin") && !line.contains("is read from standard input"),
            "{cmd}: {line}"
        );
    }
    let src = home.path().join("src");
    make_layout(&src, &[noise(62, 1000)], "v1");
    let reference = format!("{}/me/b1:v1", reg.host());
    let mut push = home.asp();
    push.args(["push", "--layout"]).arg(&src).arg(&reference);
    let out = push
        .args(["-u", "alice"])
        .write_stdin(format!("{PASSWORD}\n"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--username alice needs --password-stdin")
            && err.contains("-u alice --password-stdin"),
        "{err}"
    );
    let out = home
        .asp()
        .args(["pull", &reference, "--password-stdin", "--layout"])
        .arg(home.path().join("d"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--username USER"), "{err}");
    assert!(!home.path().join("d").exists());
    let out = home
        .asp()
        .args(["push", "-q", "--layout"])
        .arg(&src)
        .arg(&reference)
        .args(["-u", "alice", "--password-stdin"])
        .write_stdin(format!("{PASSWORD}\n"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A web server on 127.0.0.1 that answers everything, a TLS hello included, with a plain-HTTP
/// `404` page and closes, as `python3 -m http.server` does.
fn web_server() -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut buf = [0u8; 4096];
            let _ = conn.read(&mut buf);
            let page = "<!DOCTYPE HTML><html><body><h1>Error response</h1>\
                        <p>Error code: 404</p><p>Message: File not found.</p></body></html>";
            let _ = conn.write_all(
                format!(
                    "HTTP/1.0 404 File not found\r\nServer: SimpleHTTP/0.6 Python/3.11.7\r\n\
                     Content-Type: text/html;charset=utf-8\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{page}",
                    page.len()
                )
                .as_bytes(),
            );
        }
    });
    format!("127.0.0.1:{port}")
}

/// What answers where a registry should be and is not one is reported as such: what answered
/// (its status, page and server) and that a registry's header is missing, not the TLS error
/// its plain-HTTP answer to the HTTPS attempt caused. An HTTPS registry reached without its
/// CA still reports the certificate: its plain-HTTP 400 is what TLS servers say.
#[test]
fn a_web_server_that_is_not_a_registry_is_named_as_such() {
    let host = web_server();
    let home = Home::new();
    let out = home
        .asp()
        .args(["pull", &format!("{host}/me/gem:v1"), "-o"])
        .arg(home.path().join("x.aspstate"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!(
            "{host} is not an OCI registry: http://{host}/v2/ answered 404 Not Found"
        )) && err.contains("SimpleHTTP/0.6")
            && err.contains("Docker-Distribution-API-Version"),
        "{err}"
    );
    assert!(
        err.find("not an OCI registry") < err.find(&format!("https://{host}/v2/")),
        "the answer comes first, then the HTTPS attempt: {err}"
    );
    assert!(!err.contains("<html"), "{err}");

    let reg = TestRegistry::start_with(Auth::None, true);
    let out = home
        .asp()
        .args(["pull", &format!("localhost:{}/me/gem:v1", reg.port()), "-o"])
        .arg(home.path().join("x.aspstate"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.starts_with(&format!(
            "asp: error: cannot reach localhost:{}",
            reg.port()
        )) && err.to_lowercase().contains("certificate")
            && err.contains("answered plain HTTP as an HTTPS server does: 400"),
        "{err}"
    );
}

/// Two names in a layout's index for one manifest (`v1` and `latest`, as a pull of each tag
/// leaves) are one manifest to push, not a choice: it is pushed, and the push says its names.
#[test]
fn a_manifest_a_layout_names_twice_is_pushed() {
    let reg = TestRegistry::start(Auth::None);
    let home = Home::new();
    let src = home.path().join("src");
    let m = make_layout(&src, &[noise(63, 2000)], "v1");
    let layout = Layout::open(&src).unwrap();
    let bytes = fs::read(layout.blob_path(&m.digest)).unwrap();
    layout
        .add_manifest(&bytes, Some(ARTIFACT_TYPE), Some("latest"))
        .unwrap();
    assert_eq!(layout.index().unwrap().manifests.len(), 2);
    let out = home
        .asp()
        .args(["push", "--layout"])
        .arg(&src)
        .arg(format!("{}/me/gem:v9", reg.host()))
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        said.contains("(the manifest named v1, latest)") && said.contains(&m.digest.to_string()),
        "{said}"
    );
    // A second manifest is a choice again.
    make_layout(&src, &[noise(64, 2000)], "other");
    let out = home
        .asp()
        .args(["push", "--layout"])
        .arg(&src)
        .arg(format!("{}/me/gem:v9", reg.host()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("holds 2 manifests"), "{err}");
}
