//! Push and pull against a real registry (CNCF distribution 2.8, Debian's `docker-registry`),
//! started per test on 127.0.0.1 with a free port and a temporary storage directory.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use asp_format::blob::BlobSource;
use asp_format::error::{Classify, ErrorClass};
use asp_registry::credentials::{Credentials, SecretKind};
use asp_registry::layout::{Layout, LayoutSink};
use asp_registry::manifest::{ImageManifest, OciDescriptor};
use asp_registry::secret::Secret;
use asp_registry::transfer::Outcome;
use asp_registry::{
    ARTIFACT_TYPE, Client, ClientOptions, Error, Observer, PullOptions, PushOptions, Reference,
    Silent, pull, push,
};
use asp_test_registry::{Auth, QuietServer, TestRegistry, User};

const PASSWORD: &str = "Pw-9f1c!correct-horse";
const WRONG: &str = "Wr0ng-pw-7d2e#battery";

/// `n` bytes that do not compress, the same for the same seed.
fn noise(seed: u64, n: usize) -> Vec<u8> {
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

/// A layout at `dir` holding one artifact of `bodies`, named `name`.
fn artifact_layout(dir: &Path, bodies: &[Vec<u8>], name: &str) -> (Layout, OciDescriptor) {
    let layout = Layout::open_or_init(dir).unwrap();
    layout.put_blob(asp_registry::manifest::EMPTY_JSON).unwrap();
    let layers = bodies
        .iter()
        .map(|b| {
            OciDescriptor::new(
                "application/vnd.asp.test.layer",
                layout.put_blob(b).unwrap(),
            )
        })
        .collect();
    let mut ann = BTreeMap::new();
    ann.insert(
        "org.opencontainers.image.created".to_owned(),
        "2026-12-01T00:00:00Z".to_owned(),
    );
    let m = ImageManifest::artifact(layers, ann);
    let d = layout
        .add_manifest(&m.to_bytes(), Some(ARTIFACT_TYPE), Some(name))
        .unwrap();
    (layout, d)
}

fn creds(user: &str, password: &str) -> Credentials {
    Credentials {
        username: user.to_owned(),
        secret: Secret::new(password),
        kind: SecretKind::Password,
        origin: "the test".to_owned(),
    }
}

fn connect(reg: &TestRegistry, repo: &str, c: Option<Credentials>) -> (Client, Reference) {
    let r = Reference::parse(&format!("{}/{repo}", reg.host())).unwrap();
    let client = Client::connect(
        &r,
        ClientOptions {
            credentials: c,
            ..ClientOptions::default()
        },
    )
    .unwrap();
    (client, r)
}

fn push_layout(
    client: &Client,
    r: &Reference,
    layout: &Layout,
    m: &OciDescriptor,
    opts: &PushOptions,
    obs: &dyn Observer,
) -> Result<asp_registry::PushReport, Error> {
    let bytes = layout.read_manifest(m, &Default::default()).unwrap();
    push(client, r, &bytes, layout as &dyn BlobSource, opts, obs)
}

/// Every file under `dir`, relative path → bytes.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(rel, fs::read(&p).unwrap());
            }
        }
    }
    out
}

fn users() -> Vec<User> {
    vec![User::new("alice", PASSWORD)]
}

#[test]
fn push_then_pull_gives_every_file_back_and_repeats_move_nothing() {
    let reg = TestRegistry::start(Auth::Htpasswd(users()));
    let work = tempfile::tempdir().unwrap();
    let bodies: Vec<Vec<u8>> = (0..12)
        .map(|i| noise(i, 1000 + 5000 * i as usize))
        .collect();
    let (src, m) = artifact_layout(&work.path().join("src"), &bodies, "v1");
    let (client, r) = connect(&reg, "team/state:v1", Some(creds("alice", PASSWORD)));

    let first = push_layout(&client, &r, &src, &m, &PushOptions::default(), &Silent).unwrap();
    assert_eq!(first.digest, m.digest);
    assert_eq!(first.blobs, 13, "12 layers and the empty config");
    assert_eq!(first.blobs_uploaded, 13);
    assert_eq!(first.blobs_present, 0);

    let again = push_layout(&client, &r, &src, &m, &PushOptions::default(), &Silent).unwrap();
    assert_eq!((again.blobs_uploaded, again.bytes_uploaded), (0, 0));
    assert_eq!(again.blobs_present, 13);

    let dest = work.path().join("dest");
    let sink = LayoutSink::new(&dest).unwrap();
    let report = pull(&client, &r, &sink, &PullOptions::default(), &Silent).unwrap();
    assert_eq!(report.digest, m.digest);
    assert_eq!(report.blobs_downloaded, 13);
    // Same blobs, same manifest, same index entry: the layouts are equal file for file.
    assert_eq!(tree(&src.root().join("blobs")), tree(&dest.join("blobs")));
    assert_eq!(
        fs::read(src.root().join("oci-layout")).unwrap(),
        fs::read(dest.join("oci-layout")).unwrap()
    );
    assert_eq!(
        Layout::open(&dest).unwrap().index().unwrap(),
        src.index().unwrap()
    );
    // Nothing left over beside the layout.
    let names: Vec<_> = fs::read_dir(work.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");

    let again = pull(&client, &r, &sink, &PullOptions::default(), &Silent).unwrap();
    assert_eq!((again.blobs_downloaded, again.bytes_downloaded), (0, 0));
    assert_eq!(again.blobs_present, 13);

    // By digest too.
    let by_digest = r.with_digest(m.digest);
    let dest2 = work.path().join("dest2");
    pull(
        &client,
        &by_digest,
        &LayoutSink::new(&dest2).unwrap(),
        &PullOptions::default(),
        &Silent,
    )
    .unwrap();
    assert_eq!(tree(&src.root().join("blobs")), tree(&dest2.join("blobs")));
}

#[test]
fn a_snapshot_sharing_99_percent_uploads_at_most_2_percent() {
    let reg = TestRegistry::start(Auth::None);
    let work = tempfile::tempdir().unwrap();
    let mut bodies: Vec<Vec<u8>> = (0..100).map(|i| noise(100 + i, 64 << 10)).collect();
    let (l1, m1) = artifact_layout(&work.path().join("l"), &bodies, "one");
    let (client, r1) = connect(&reg, "me/state:one", None);
    push_layout(&client, &r1, &l1, &m1, &PushOptions::default(), &Silent).unwrap();

    bodies[42] = noise(9999, 64 << 10);
    let (l2, m2) = artifact_layout(&work.path().join("l"), &bodies, "two");
    let r2 = Reference::parse(&format!("{}/me/state:two", reg.host())).unwrap();
    let rep = push_layout(&client, &r2, &l2, &m2, &PushOptions::default(), &Silent).unwrap();
    let total = rep.bytes_uploaded + rep.bytes_present + rep.bytes_mounted;
    println!(
        "99%-shared push: {} of {} blob bytes uploaded ({:.2}%), {} skipped, manifest {} bytes",
        rep.bytes_uploaded,
        total,
        100.0 * rep.bytes_uploaded as f64 / total as f64,
        rep.bytes_present,
        rep.manifest_bytes
    );
    assert_eq!(rep.blobs_uploaded, 1);
    assert!(
        (rep.bytes_uploaded + rep.manifest_bytes) * 50 <= total,
        "{rep:?}"
    );
}

#[test]
fn blobs_are_mounted_from_another_repository_of_the_registry() {
    for auth in [
        Auth::Htpasswd(users()),
        Auth::Token {
            users: users(),
            identity_tokens: vec![],
        },
    ] {
        let reg = TestRegistry::start(auth);
        let work = tempfile::tempdir().unwrap();
        let bodies: Vec<Vec<u8>> = (0..10).map(|i| noise(300 + i, 20_000)).collect();
        let (l, m) = artifact_layout(&work.path().join("l"), &bodies, "x");
        let (client, a) = connect(&reg, "team/a:x", Some(creds("alice", PASSWORD)));
        push_layout(&client, &a, &l, &m, &PushOptions::default(), &Silent).unwrap();
        let b = Reference::parse(&format!("{}/team/b:x", reg.host())).unwrap();
        let opts = PushOptions {
            mount_from: vec!["team/b".into(), "team/a".into()],
            ..PushOptions::default()
        };
        let rep = push_layout(&client, &b, &l, &m, &opts, &Silent).unwrap();
        assert_eq!(rep.blobs_mounted, 11, "{rep:?}");
        assert_eq!(rep.bytes_uploaded, 0);
        assert_eq!(rep.mounted_from.as_deref(), Some("team/a"));
        // The mounted blobs really are in b: it pulls.
        let dest = work.path().join("d");
        pull(
            &client,
            &b,
            &LayoutSink::new(&dest).unwrap(),
            &PullOptions::default(),
            &Silent,
        )
        .unwrap();
        // A source that does not hold them costs nothing but the attempt.
        let c = Reference::parse(&format!("{}/team/c:x", reg.host())).unwrap();
        let opts = PushOptions {
            mount_from: vec!["team/nothing-here".into()],
            ..PushOptions::default()
        };
        let rep = push_layout(&client, &c, &l, &m, &opts, &Silent).unwrap();
        assert_eq!((rep.blobs_uploaded, rep.blobs_mounted), (11, 0));
    }
}

#[test]
fn wrong_passwords_are_refused_clearly_and_never_echoed() {
    for auth in [
        Auth::Htpasswd(users()),
        Auth::Token {
            users: users(),
            identity_tokens: vec![],
        },
    ] {
        let token = matches!(auth, Auth::Token { .. });
        let reg = TestRegistry::start(auth);
        let work = tempfile::tempdir().unwrap();
        let (l, m) = artifact_layout(&work.path().join("l"), &[noise(1, 100)], "x");
        let r = Reference::parse(&format!("{}/team/s:x", reg.host())).unwrap();
        let client = Client::connect(
            &r,
            ClientOptions {
                credentials: Some(creds("alice", WRONG)),
                ..ClientOptions::default()
            },
        )
        .unwrap();
        let e = push_layout(&client, &r, &l, &m, &PushOptions::default(), &Silent).unwrap_err();
        // Nothing that can be printed holds the password: the error, nor the client itself.
        let text = format!("{e} | {e:?} | {client:?}");
        assert!(
            matches!(e, Error::AuthFailed { .. }),
            "token={token}: {text}"
        );
        assert!(
            text.contains("refused the credentials of user \"alice\""),
            "{text}"
        );
        assert!(!text.contains(WRONG), "the password leaked: {text}");
        assert_eq!(e.class(), ErrorClass::Source);
        let e = pull(
            &client,
            &r,
            &LayoutSink::new(work.path().join("d")).unwrap(),
            &PullOptions::default(),
            &Silent,
        )
        .unwrap_err();
        assert!(matches!(e, Error::AuthFailed { .. }), "{e}");
        assert!(!format!("{e} {e:?}").contains(WRONG));
        assert!(!work.path().join("d").exists());
        if token {
            let reqs = reg.token_server().unwrap().requests();
            assert!(reqs.iter().all(|r| !r.granted), "{reqs:?}");
        }
    }
}

#[test]
fn token_auth_anonymous_pulls_credentials_push_identity_tokens_and_scopes() {
    let mut limited = User::new("bob", "bob-pw-1234");
    limited.push_prefixes = vec!["team/".into()];
    let reg = TestRegistry::start(Auth::Token {
        users: vec![User::new("alice", PASSWORD), limited],
        identity_tokens: vec![("refresh-token-of-alice".into(), "alice".into())],
    });
    let work = tempfile::tempdir().unwrap();
    let (l, m) = artifact_layout(&work.path().join("l"), &[noise(7, 5000)], "x");

    // Anonymous: pushing asks for credentials, with the ways to give them.
    let (anon, public) = connect(&reg, "public/state:x", None);
    let e = push_layout(&anon, &public, &l, &m, &PushOptions::default(), &Silent).unwrap_err();
    assert!(matches!(e, Error::AuthRequired { .. }), "{e}");
    assert!(e.to_string().contains("docker login"), "{e}");

    // With a password: the token flow with basic auth at the realm.
    let (alice, public) = connect(&reg, "public/state:x", Some(creds("alice", PASSWORD)));
    push_layout(&alice, &public, &l, &m, &PushOptions::default(), &Silent).unwrap();
    let reqs = reg.token_server().unwrap().requests();
    assert!(reqs.iter().any(|r| {
        r.user.as_deref() == Some("alice")
            && r.scopes
                .iter()
                .any(|s| s == "repository:public/state:pull,push")
    }));

    // Anonymous pull of a public repository works (anonymous token with pull access).
    pull(
        &anon,
        &public,
        &LayoutSink::new(work.path().join("p")).unwrap(),
        &PullOptions::default(),
        &Silent,
    )
    .unwrap();
    let (anon2, private) = connect(&reg, "private/state:x", None);
    push_layout(
        &alice,
        &Reference::parse(&format!("{}/private/state:x", reg.host())).unwrap(),
        &l,
        &m,
        &PushOptions::default(),
        &Silent,
    )
    .unwrap();
    let e = pull(
        &anon2,
        &private,
        &LayoutSink::new(work.path().join("q")).unwrap(),
        &PullOptions::default(),
        &Silent,
    )
    .unwrap_err();
    assert!(matches!(e, Error::AuthRequired { .. }), "{e}");
    assert!(!work.path().join("q").exists());

    // An identity token (docker login against an OAuth2 token server): refresh-token grant.
    let id = Credentials {
        username: String::new(),
        secret: Secret::new("refresh-token-of-alice"),
        kind: SecretKind::IdentityToken,
        origin: "config.json".into(),
    };
    let (by_token, r) = connect(&reg, "team/idtok:x", Some(id));
    push_layout(&by_token, &r, &l, &m, &PushOptions::default(), &Silent).unwrap();
    assert!(
        reg.token_server()
            .unwrap()
            .requests()
            .iter()
            .any(|r| r.method == "POST" && r.user.as_deref() == Some("alice"))
    );

    // A user without push rights on a repository is denied, by name.
    let (bob, other) = connect(&reg, "other/state:x", Some(creds("bob", "bob-pw-1234")));
    let e = push_layout(&bob, &other, &l, &m, &PushOptions::default(), &Silent).unwrap_err();
    assert!(matches!(e, Error::Denied { .. }), "{e}");
    assert!(e.to_string().contains("\"bob\""), "{e}");
    let team = Reference::parse(&format!("{}/team/bob:x", reg.host())).unwrap();
    push_layout(&bob, &team, &l, &m, &PushOptions::default(), &Silent).unwrap();
}

/// Stops the registry when the given number of blobs has been uploaded.
struct StopAfter<'a> {
    registry: &'a Mutex<TestRegistry>,
    after: u64,
    uploaded: AtomicU64,
}

impl Observer for StopAfter<'_> {
    fn blob(&self, _blob: &OciDescriptor, outcome: Outcome) {
        if outcome == Outcome::Uploaded
            && self.uploaded.fetch_add(1, Ordering::SeqCst) + 1 == self.after
        {
            self.registry.lock().unwrap().stop();
        }
    }
}

#[test]
fn a_push_cut_off_by_a_vanishing_registry_resumes_with_what_arrived() {
    let reg = Mutex::new(TestRegistry::start(Auth::Htpasswd(users())));
    let host = reg.lock().unwrap().host();
    let work = tempfile::tempdir().unwrap();
    let bodies: Vec<Vec<u8>> = (0..8).map(|i| noise(500 + i, 30_000)).collect();
    let (l, m) = artifact_layout(&work.path().join("l"), &bodies, "x");
    let r = Reference::parse(&format!("{host}/team/resume:x")).unwrap();
    let connect = || {
        Client::connect(
            &r,
            ClientOptions {
                credentials: Some(creds("alice", PASSWORD)),
                ..ClientOptions::default()
            },
        )
        .unwrap()
    };
    let client = connect();
    let stop = StopAfter {
        registry: &reg,
        after: 3,
        uploaded: AtomicU64::new(0),
    };
    let one_at_a_time = PushOptions {
        jobs: 1,
        ..PushOptions::default()
    };
    let e = push_layout(&client, &r, &l, &m, &one_at_a_time, &stop).unwrap_err();
    assert!(
        matches!(e, Error::Unreachable { .. } | Error::Transport { .. }),
        "{e}"
    );
    assert_eq!(e.class(), ErrorClass::Source);

    reg.lock().unwrap().restart();
    let client = connect();
    let rep = push_layout(&client, &r, &l, &m, &PushOptions::default(), &Silent).unwrap();
    assert_eq!(rep.blobs_present, 3, "{rep:?}");
    assert_eq!(rep.blobs_uploaded, 6, "{rep:?}");
    let dest = work.path().join("d");
    pull(
        &client,
        &r,
        &LayoutSink::new(&dest).unwrap(),
        &PullOptions::default(),
        &Silent,
    )
    .unwrap();
    assert_eq!(tree(&l.root().join("blobs")), tree(&dest.join("blobs")));
}

#[test]
fn tampered_or_truncated_blobs_in_the_registry_fail_the_pull_and_write_nothing() {
    let reg = TestRegistry::start(Auth::None);
    let work = tempfile::tempdir().unwrap();
    let bodies: Vec<Vec<u8>> = (0..4).map(|i| noise(700 + i, 10_000)).collect();
    let (l, m) = artifact_layout(&work.path().join("l"), &bodies, "x");
    let (client, r) = connect(&reg, "me/tamper:x", None);
    push_layout(&client, &r, &l, &m, &PushOptions::default(), &Silent).unwrap();
    let victim = asp_format::Digest::of(&bodies[2]).hex();
    let data = reg.blob_data(&victim);

    // Same length, one byte changed: caught by the digest.
    let mut bytes = fs::read(&data).unwrap();
    bytes[5000] ^= 0x40;
    fs::write(&data, &bytes).unwrap();
    let check = |e: Error| {
        assert!(matches!(e, Error::Integrity(_)), "{e}");
        assert!(e.to_string().contains("does not match its digest"), "{e}");
        assert_eq!(e.class(), ErrorClass::Integrity);
    };
    // Into a new directory: it is not created.
    let fresh = work.path().join("fresh");
    check(
        pull(
            &client,
            &r,
            &LayoutSink::new(&fresh).unwrap(),
            &PullOptions::default(),
            &Silent,
        )
        .unwrap_err(),
    );
    assert!(!fresh.exists());
    // Into a layout that lacks that blob: not a file of it changes.
    fs::remove_file(l.blob_path(&asp_format::Digest::of(&bodies[2]))).unwrap();
    let before = tree(l.root());
    check(
        pull(
            &client,
            &r,
            &LayoutSink::new(l.root()).unwrap(),
            &PullOptions::default(),
            &Silent,
        )
        .unwrap_err(),
    );
    assert_eq!(before, tree(l.root()));
    assert!(!work.path().join("fresh").exists());

    // Shorter: caught by the size the registry announces, before reading.
    bytes.truncate(9000);
    fs::write(&data, &bytes).unwrap();
    let e = pull(
        &client,
        &r,
        &LayoutSink::new(work.path().join("fresh")).unwrap(),
        &PullOptions::default(),
        &Silent,
    )
    .unwrap_err();
    assert!(e.to_string().contains("announced 9000 bytes"), "{e}");
    assert!(!work.path().join("fresh").exists());
    let leftovers: Vec<_> = fs::read_dir(work.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers.len(), 1, "staging left behind: {leftovers:?}");
}

#[test]
fn manifests_too_large_or_not_ours_are_refused_before_any_blob() {
    let reg = TestRegistry::start(Auth::None);
    let work = tempfile::tempdir().unwrap();
    let (client, _) = connect(&reg, "me/x", None);

    // Distribution 2.8.2 neither takes nor serves a manifest over 4 MiB (our default limit
    // too), so the limit is lowered here to meet a manifest it does serve: 1,000 layers.
    let layers: Vec<OciDescriptor> = (0..1000u64)
        .map(|i| {
            OciDescriptor::new(
                "application/vnd.asp.test.layer",
                asp_format::Descriptor::of(&i.to_le_bytes()),
            )
        })
        .collect();
    let big = ImageManifest::artifact(layers, BTreeMap::new()).to_bytes();
    assert!(big.len() > 64 << 10);
    reg.plant_manifest("me/big", "v1", &big);
    let r = Reference::parse(&format!("{}/me/big:v1", reg.host())).unwrap();
    let small = PullOptions {
        limits: asp_registry::manifest::Limits {
            max_manifest_bytes: 64 << 10,
            ..Default::default()
        },
        ..PullOptions::default()
    };
    let e = pull(
        &client,
        &r,
        &LayoutSink::new(work.path().join("d")).unwrap(),
        &small,
        &Silent,
    )
    .unwrap_err();
    assert!(matches!(e, Error::Integrity(_)), "{e}");
    assert!(e.to_string().contains("over the limit of 65536"), "{e}");
    assert!(!work.path().join("d").exists());
    // With the default limit it passes that check and fails on the missing blobs instead.
    let e = pull(
        &client,
        &r,
        &LayoutSink::new(work.path().join("d")).unwrap(),
        &PullOptions::default(),
        &Silent,
    )
    .unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
    assert!(!work.path().join("d").exists());

    // Over 4 MiB: distribution itself refuses to serve it (500, "read exceeds limit").
    let layers: Vec<OciDescriptor> = (0..40_000u64)
        .map(|i| {
            OciDescriptor::new(
                "application/vnd.asp.test.layer",
                asp_format::Descriptor::of(&i.to_le_bytes()),
            )
        })
        .collect();
    let huge = ImageManifest::artifact(layers, BTreeMap::new()).to_bytes();
    assert!(huge.len() > 4 << 20);
    reg.plant_manifest("me/huge", "v1", &huge);
    let r = Reference::parse(&format!("{}/me/huge:v1", reg.host())).unwrap();
    let e = pull(
        &client,
        &r,
        &LayoutSink::new(work.path().join("d")).unwrap(),
        &PullOptions::default(),
        &Silent,
    )
    .unwrap_err();
    assert!(matches!(e, Error::Registry { status: 500, .. }), "{e}");
    assert!(!work.path().join("d").exists());

    // A container image.
    let config =
        br#"{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":[]}}"#;
    let cd = asp_format::Descriptor::of(config);
    let image = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cd.digest.to_string(), "size": cd.size},
        "layers": []
    });
    let image = serde_json::to_vec(&image).unwrap();
    reg.plant_manifest("me/image", "latest", &image);
    let r = Reference::parse(&format!("{}/me/image", reg.host())).unwrap();
    let e = pull(
        &client,
        &r,
        &LayoutSink::new(work.path().join("d")).unwrap(),
        &PullOptions::default(),
        &Silent,
    )
    .unwrap_err();
    assert!(
        e.to_string().starts_with("not an asp state artifact:"),
        "{e}"
    );
    assert!(e.to_string().contains("a container image"), "{e}");
    assert!(!work.path().join("d").exists());

    // A tag that is not there.
    let r = Reference::parse(&format!("{}/me/image:nope", reg.host())).unwrap();
    let e = pull(
        &client,
        &r,
        &LayoutSink::new(work.path().join("d")).unwrap(),
        &PullOptions::default(),
        &Silent,
    )
    .unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
}

#[test]
fn https_with_the_registrys_ca_and_a_clear_error_without_it() {
    let reg = TestRegistry::start_with(Auth::Htpasswd(users()), true);
    let work = tempfile::tempdir().unwrap();
    let (l, m) = artifact_layout(&work.path().join("l"), &[noise(3, 3000)], "x");
    let r = Reference::parse(&format!("localhost:{}/team/tls:x", reg.port())).unwrap();
    let client = Client::connect(
        &r,
        ClientOptions {
            credentials: Some(creds("alice", PASSWORD)),
            ca_file: reg.ca_file(),
            ..ClientOptions::default()
        },
    )
    .unwrap();
    assert!(
        client.base_url().starts_with("https://"),
        "{}",
        client.base_url()
    );
    push_layout(&client, &r, &l, &m, &PushOptions::default(), &Silent).unwrap();
    pull(
        &client,
        &r,
        &LayoutSink::new(work.path().join("d")).unwrap(),
        &PullOptions::default(),
        &Silent,
    )
    .unwrap();

    // Without the CA: the certificate is the problem, and it says so.
    let e = Client::connect(
        &r,
        ClientOptions {
            credentials: Some(creds("alice", PASSWORD)),
            ..ClientOptions::default()
        },
    )
    .unwrap_err();
    assert!(matches!(e, Error::Unreachable { .. }), "{e}");
    assert!(e.to_string().to_lowercase().contains("certificate"), "{e}");
    // --insecure accepts it.
    let client = Client::connect(
        &r,
        ClientOptions {
            credentials: Some(creds("alice", PASSWORD)),
            insecure: true,
            ..ClientOptions::default()
        },
    )
    .unwrap();
    assert!(client.base_url().starts_with("https://"));
}

#[test]
fn a_damaged_local_blob_is_never_pushed() {
    let reg = TestRegistry::start(Auth::None);
    let work = tempfile::tempdir().unwrap();
    let bodies = vec![noise(11, 4000), noise(12, 4000)];
    let (l, m) = artifact_layout(&work.path().join("l"), &bodies, "x");
    let p = l.blob_path(&asp_format::Digest::of(&bodies[1]));
    let mut b = fs::read(&p).unwrap();
    b[10] ^= 1;
    fs::write(&p, &b).unwrap();
    let (client, r) = connect(&reg, "me/damaged:x", None);
    let e = push_layout(&client, &r, &l, &m, &PushOptions::default(), &Silent).unwrap_err();
    assert_eq!(e.class(), ErrorClass::Integrity, "{e}");
    // The manifest did not arrive.
    let e = pull(
        &client,
        &r,
        &LayoutSink::new(work.path().join("d")).unwrap(),
        &PullOptions::default(),
        &Silent,
    )
    .unwrap_err();
    assert!(matches!(e, Error::NotFound { .. }), "{e}");
}

#[test]
fn a_mount_the_token_does_not_cover_falls_back_to_uploading() {
    let mut carol = User::new("carol", "carol-pw-5678");
    carol.push_prefixes = vec!["team/".into()];
    carol.pull_prefixes = vec!["team/".into()];
    let reg = TestRegistry::start(Auth::Token {
        users: vec![User::new("alice", PASSWORD), carol],
        identity_tokens: vec![],
    });
    let work = tempfile::tempdir().unwrap();
    let bodies: Vec<Vec<u8>> = (0..5).map(|i| noise(900 + i, 8000)).collect();
    let (l, m) = artifact_layout(&work.path().join("l"), &bodies, "x");
    let (alice, secret) = connect(&reg, "secret/a:x", Some(creds("alice", PASSWORD)));
    push_layout(&alice, &secret, &l, &m, &PushOptions::default(), &Silent).unwrap();
    // Carol may not read secret/a: the registry refuses the mount, the blobs are uploaded.
    let (carol, team) = connect(&reg, "team/c:x", Some(creds("carol", "carol-pw-5678")));
    let opts = PushOptions {
        mount_from: vec!["secret/a".into()],
        jobs: 1,
        ..PushOptions::default()
    };
    let rep = push_layout(&carol, &team, &l, &m, &opts, &Silent).unwrap();
    assert_eq!((rep.blobs_mounted, rep.blobs_uploaded), (0, 6), "{rep:?}");
    assert_eq!(rep.mounted_from, None);
    // One refused mount, then none tried: the token server saw one request naming secret/a.
    let asked: Vec<_> = reg
        .token_server()
        .unwrap()
        .requests()
        .into_iter()
        .filter(|r| r.user.as_deref() == Some("carol"))
        .filter(|r| r.scopes.iter().any(|s| s.contains("secret/a")))
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
}

fn quick(connect: f64, read: f64) -> ClientOptions {
    ClientOptions {
        connect_timeout: std::time::Duration::from_secs_f64(connect),
        read_timeout: std::time::Duration::from_secs_f64(read),
        ..ClientOptions::default()
    }
}

#[test]
fn a_registry_that_accepts_and_never_answers_costs_the_connect_timeout_once() {
    let server = QuietServer::start(|_| false);
    let host = server.host();
    let r = Reference::parse(&format!("{host}/me/x:t")).unwrap();
    let started = std::time::Instant::now();
    let e = Client::connect(&r, quick(1.0, 0.5)).unwrap_err();
    let took = started.elapsed();
    // Over HTTPS (no TLS handshake) and then plain HTTP (no answer), one second in all.
    assert!(matches!(e, Error::NoAnswer { .. }), "{e}");
    assert_eq!(e.class(), ErrorClass::Source);
    assert_eq!(
        e.to_string(),
        format!(
            "the registry at {host} accepted the connection but did not answer within 1 s \
             (tried https://{host}/v2/, then http://{host}/v2/)"
        )
    );
    assert!(
        took >= std::time::Duration::from_millis(900) && took < std::time::Duration::from_secs(3),
        "took {took:?}"
    );
}

#[test]
fn a_registry_that_answers_then_goes_quiet_is_given_up_on_after_the_read_timeout() {
    let server = QuietServer::start(|path| path == "/v2/");
    let r = Reference::parse(&format!("{}/me/x:t", server.host())).unwrap();
    let client = Client::connect(&r, quick(2.0, 0.5)).unwrap();
    assert!(
        client.base_url().starts_with("http://"),
        "{}",
        client.base_url()
    );
    let work = tempfile::tempdir().unwrap();
    let started = std::time::Instant::now();
    let e = pull(
        &client,
        &r,
        &LayoutSink::new(work.path().join("d")).unwrap(),
        &PullOptions::default(),
        &Silent,
    )
    .unwrap_err();
    let took = started.elapsed();
    assert!(matches!(e, Error::Transport { .. }), "{e}");
    assert!(
        e.to_string().contains("GET manifest t")
            && e.to_string()
                .contains("the registry sent nothing for 0.5 s"),
        "{e}"
    );
    assert!(took < std::time::Duration::from_secs(3), "took {took:?}");
    assert!(!work.path().join("d").exists());
}

#[test]
fn a_registry_that_is_down_is_named_by_every_url_tried() {
    let port = asp_test_registry::free_port();
    let host = format!("127.0.0.1:{port}");
    let r = Reference::parse(&format!("{host}/me/x:t")).unwrap();
    let e = Client::connect(&r, ClientOptions::default()).unwrap_err();
    assert!(matches!(e, Error::Unreachable { .. }), "{e}");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("cannot reach {host}: ")),
        "{text}"
    );
    assert!(text.to_lowercase().contains("refused"), "{text}");
    assert!(
        text.contains(&format!("https://{host}/v2/"))
            && text.contains(&format!("http://{host}/v2/")),
        "{text}"
    );
}
