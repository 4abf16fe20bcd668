//! A real OCI registry for tests: Debian's `docker-registry` (CNCF distribution 2.8), started
//! on 127.0.0.1 with a free port and a temporary storage directory, with no auth, htpasswd
//! basic auth, or token auth served by [`TokenServer`] (the distribution token protocol, JWTs
//! signed with an ECDSA P-256 key made for the test). Never a mock: the registry is the real
//! server; only the token server is ours, and it speaks the protocol the registry checks.
//!
//! The registry binary is `$ASP_TEST_REGISTRY_BIN`, else `docker-registry` on `PATH`, else
//! `/usr/bin/docker-registry`. A test that needs it and cannot find it fails, saying how to
//! install it (`scripts/ci-deps.sh`, or `apt-get install -y docker-registry`).

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair as _};

/// The service name the registry and the token server agree on.
pub const SERVICE: &str = "asp-test-registry";
/// The issuer the registry trusts.
pub const ISSUER: &str = "asp-test-issuer";

/// Where the registry binary is, or a panic that says how to install it.
pub fn registry_binary() -> PathBuf {
    if let Some(p) = std::env::var_os("ASP_TEST_REGISTRY_BIN") {
        return PathBuf::from(p);
    }
    if let Some(paths) = std::env::var_os("PATH") {
        for dir in std::env::split_paths(&paths) {
            let p = dir.join("docker-registry");
            if p.is_file() {
                return p;
            }
        }
    }
    let p = PathBuf::from("/usr/bin/docker-registry");
    if p.is_file() {
        return p;
    }
    panic!(
        "these tests need a real OCI registry: Debian's docker-registry (CNCF distribution \
         2.8) was not found on PATH or at /usr/bin/docker-registry. Install it with \
         `sh scripts/ci-deps.sh` (as root; .ci/run does this) or \
         `apt-get install -y docker-registry`, or point ASP_TEST_REGISTRY_BIN at a \
         distribution `registry` binary."
    )
}

/// Who may do what.
#[derive(Debug, Clone)]
pub struct User {
    pub name: String,
    pub password: String,
    /// For token auth: repositories (prefixes) this user may push to. Empty: anywhere.
    pub push_prefixes: Vec<String>,
    /// For token auth: repositories (prefixes) this user may pull from. Empty: anywhere.
    pub pull_prefixes: Vec<String>,
}

impl User {
    pub fn new(name: &str, password: &str) -> Self {
        User {
            name: name.to_owned(),
            password: password.to_owned(),
            push_prefixes: Vec::new(),
            pull_prefixes: Vec::new(),
        }
    }
}

/// How the registry authenticates.
#[derive(Debug, Clone)]
pub enum Auth {
    None,
    /// htpasswd basic auth with these users (bcrypt entries made here).
    Htpasswd(Vec<User>),
    /// The token flow, with [`TokenServer`] as the realm. Anonymous users get pull access to
    /// repositories under `public/` only. `identity_tokens` maps refresh tokens to users.
    Token {
        users: Vec<User>,
        identity_tokens: Vec<(String, String)>,
    },
}

/// A running registry.
#[derive(Debug)]
pub struct TestRegistry {
    child: Option<Child>,
    port: u16,
    dir: tempfile::TempDir,
    token_server: Option<TokenServer>,
    tls: Option<PathBuf>,
}

/// A port on 127.0.0.1 nothing listens on (bound, then let go).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind a free port")
        .local_addr()
        .unwrap()
        .port()
}

impl TestRegistry {
    pub fn start(auth: Auth) -> Self {
        Self::start_with(auth, false)
    }

    /// With `tls`, the registry serves HTTPS with a certificate for 127.0.0.1 and localhost,
    /// issued by a CA whose certificate is at [`TestRegistry::ca_file`].
    pub fn start_with(auth: Auth, tls: bool) -> Self {
        let bin = registry_binary();
        let dir = tempfile::Builder::new()
            .prefix("asp-test-registry-")
            .tempdir()
            .unwrap();
        let storage = dir.path().join("storage");
        fs::create_dir_all(&storage).unwrap();
        let mut auth_yaml = String::new();
        let mut token_server = None;
        match &auth {
            Auth::None => {}
            Auth::Htpasswd(users) => {
                let mut file = String::new();
                for u in users {
                    let hash = bcrypt::hash(&u.password, 5).unwrap();
                    file.push_str(&format!("{}:{hash}\n", u.name));
                }
                let path = dir.path().join("htpasswd");
                fs::write(&path, file).unwrap();
                auth_yaml = format!(
                    "auth:\n  htpasswd:\n    realm: asp-test\n    path: {}\n",
                    path.display()
                );
            }
            Auth::Token {
                users,
                identity_tokens,
            } => {
                let ts = TokenServer::start(users.clone(), identity_tokens.clone());
                let bundle = dir.path().join("token-root.crt");
                fs::write(&bundle, ts.certificate_pem()).unwrap();
                auth_yaml = format!(
                    "auth:\n  token:\n    realm: {}\n    service: {SERVICE}\n    issuer: {ISSUER}\n    rootcertbundle: {}\n",
                    ts.realm(),
                    bundle.display()
                );
                token_server = Some(ts);
            }
        }
        let tls = tls.then(|| write_tls(dir.path()));
        let mut reg = TestRegistry {
            child: None,
            port: 0,
            dir,
            token_server,
            tls,
        };
        // A port can be taken between finding it free and the registry binding it: retry.
        for _ in 0..5 {
            reg.port = free_port();
            reg.write_config(&storage, &auth_yaml);
            if reg.launch(&bin) {
                return reg;
            }
        }
        panic!("the registry did not start; its log:\n{}", reg.log());
    }

    fn write_config(&self, storage: &Path, auth_yaml: &str) {
        let tls_yaml = match &self.tls {
            Some(d) => format!(
                "  tls:\n    certificate: {}\n    key: {}\n",
                d.join("server.crt").display(),
                d.join("server.key").display()
            ),
            None => String::new(),
        };
        let config = format!(
            "version: 0.1\n\
             log:\n  level: info\n  accesslog:\n    disabled: false\n\
             storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n  \
             maintenance:\n    uploadpurging:\n      enabled: false\n\
             http:\n  addr: 127.0.0.1:{}\n  secret: asp-test-http-secret\n{tls_yaml}\
             {auth_yaml}",
            storage.display(),
            self.port
        );
        fs::write(self.dir.path().join("config.yml"), config).unwrap();
    }

    /// Starts the process and waits for it to answer; false if it exited first.
    fn launch(&mut self, bin: &Path) -> bool {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("registry.log"))
            .unwrap();
        let child = Command::new(bin)
            .arg("serve")
            .arg(self.dir.path().join("config.yml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", bin.display()));
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(status) = self.child.as_mut().unwrap().try_wait().unwrap() {
                let _ = status;
                self.child = None;
                return false;
            }
            if TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!(
            "the registry did not listen within 20 s; its log:\n{}",
            self.log()
        );
    }

    /// `127.0.0.1:<port>`, as references name it.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    /// The registry's storage root (the filesystem driver's `rootdirectory`).
    pub fn storage(&self) -> PathBuf {
        self.dir.path().join("storage")
    }

    /// Where the registry keeps a blob's bytes (`sha256` hex digest).
    pub fn blob_data(&self, hex: &str) -> PathBuf {
        self.storage()
            .join("docker/registry/v2/blobs/sha256")
            .join(&hex[..2])
            .join(hex)
            .join("data")
    }

    /// The CA certificate (PEM) of a TLS registry.
    pub fn ca_file(&self) -> Option<PathBuf> {
        self.tls.as_ref().map(|d| d.join("ca.crt"))
    }

    pub fn token_server(&self) -> Option<&TokenServer> {
        self.token_server.as_ref()
    }

    /// The registry's log so far.
    pub fn log(&self) -> String {
        fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// Kills the registry (as a crash or an unplugged server would end it).
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port and storage.
    pub fn restart(&mut self) {
        self.stop();
        let bin = registry_binary();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.launch(&bin) {
            assert!(
                Instant::now() < deadline,
                "the registry did not restart; its log:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Writes a manifest straight into the registry's storage, as a hostile or broken
    /// registry would serve it (distribution itself refuses manifests over 4 MiB on upload).
    pub fn plant_manifest(&self, repository: &str, tag: &str, bytes: &[u8]) -> String {
        let hex = sha256_hex(bytes);
        let data = self.blob_data(&hex);
        fs::create_dir_all(data.parent().unwrap()).unwrap();
        fs::write(&data, bytes).unwrap();
        let repo = self
            .storage()
            .join("docker/registry/v2/repositories")
            .join(repository)
            .join("_manifests");
        let link = format!("sha256:{hex}");
        for p in [
            repo.join("revisions/sha256").join(&hex).join("link"),
            repo.join("tags").join(tag).join("current/link"),
            repo.join("tags")
                .join(tag)
                .join("index/sha256")
                .join(&hex)
                .join("link"),
        ] {
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, &link).unwrap();
        }
        link
    }
}

impl Drop for TestRegistry {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The sha256 of `bytes` in lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let d = ring::digest::digest(&ring::digest::SHA256, bytes);
    d.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// A CA and a server certificate for 127.0.0.1 and localhost, in `dir/tls/`.
fn write_tls(dir: &Path) -> PathBuf {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    let d = dir.join("tls");
    fs::create_dir_all(&d).unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "asp test CA");
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = Issuer::new(ca_params, ca_key);
    let server_key = KeyPair::generate().unwrap();
    let server_params =
        CertificateParams::new(vec!["127.0.0.1".to_owned(), "localhost".to_owned()]).unwrap();
    let server_cert = server_params.signed_by(&server_key, &issuer).unwrap();
    fs::write(d.join("ca.crt"), ca_cert.pem()).unwrap();
    fs::write(d.join("server.crt"), server_cert.pem()).unwrap();
    fs::write(d.join("server.key"), server_key.serialize_pem()).unwrap();
    d
}

/// One request the token server answered.
#[derive(Debug, Clone)]
pub struct TokenRequest {
    pub method: String,
    /// The user that authenticated, if any.
    pub user: Option<String>,
    pub scopes: Vec<String>,
    pub granted: bool,
}

/// A token server for the distribution token protocol (`docs/spec/auth/token.md` and
/// `oauth.md` of distribution): `GET /token?service=&scope=…` with optional basic auth, and
/// `POST /token` with `grant_type=password` or `refresh_token`. It answers signed JWTs whose
/// `access` claims grant what the user may do of what was asked.
#[derive(Debug)]
pub struct TokenServer {
    port: u16,
    cert_pem: String,
    requests: Arc<Mutex<Vec<TokenRequest>>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

struct Signer {
    key: EcdsaKeyPair,
    kid: String,
    rng: SystemRandom,
    counter: AtomicU64,
}

/// The DER prefix of an ECDSA P-256 SubjectPublicKeyInfo (before the 65-byte point).
const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// libtrust's key id, which distribution matches a token's `kid` against: the first 240
/// bits of the sha256 of the DER public key, base32, in 12 groups of 4 joined by `:`.
fn libtrust_key_id(spki_der: &[u8]) -> String {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let h = ring::digest::digest(&ring::digest::SHA256, spki_der);
    let bytes = &h.as_ref()[..30];
    let mut bits: u64 = 0;
    let mut n = 0;
    let mut out = String::new();
    for b in bytes {
        bits = (bits << 8) | u64::from(*b);
        n += 8;
        while n >= 5 {
            n -= 5;
            out.push(ALPHABET[((bits >> n) & 31) as usize] as char);
        }
    }
    out.as_bytes()
        .chunks(4)
        .map(|c| std::str::from_utf8(c).unwrap())
        .collect::<Vec<_>>()
        .join(":")
}

impl Signer {
    fn new() -> (Self, String) {
        let rng = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let key = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng)
            .unwrap();
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(key.public_key().as_ref());
        let kid = libtrust_key_id(&spki);
        let rc_key = rcgen::KeyPair::try_from(pkcs8.as_ref()).unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "asp test token signer");
        let cert = params.self_signed(&rc_key).unwrap();
        (
            Signer {
                key,
                kid,
                rng,
                counter: AtomicU64::new(0),
            },
            cert.pem(),
        )
    }

    fn token(&self, subject: &str, access: &[(String, Vec<String>)]) -> String {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let header = serde_json::json!({"typ": "JWT", "alg": "ES256", "kid": self.kid});
        let claims = serde_json::json!({
            "iss": ISSUER,
            "sub": subject,
            "aud": SERVICE,
            "exp": now + 300,
            "nbf": now - 10,
            "iat": now,
            "jti": format!("asp-test-{}", self.counter.fetch_add(1, Ordering::SeqCst)),
            "access": access.iter().map(|(name, actions)| serde_json::json!({
                "type": "repository", "name": name, "actions": actions
            })).collect::<Vec<_>>(),
        });
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let sig = self.key.sign(&self.rng, signing_input.as_bytes()).unwrap();
        format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
    }
}

struct Policy {
    users: Vec<User>,
    identity_tokens: Vec<(String, String)>,
}

impl Policy {
    /// The user these credentials belong to, if they are right.
    fn check(&self, name: &str, password: &str) -> Option<&User> {
        self.users
            .iter()
            .find(|u| u.name == name && u.password == password)
    }

    /// What of `scope` (`repository:<name>:<actions>`) `user` gets.
    fn grant(&self, user: Option<&User>, scope: &str) -> Option<(String, Vec<String>)> {
        let mut parts = scope.splitn(3, ':');
        let (kind, name, actions) = (parts.next()?, parts.next()?, parts.next()?);
        if kind != "repository" {
            return None;
        }
        let granted: Vec<String> = actions
            .split(',')
            .filter(|a| match (a, user) {
                (&"pull", None) => name.starts_with("public/"),
                (&"pull", Some(u)) => {
                    u.pull_prefixes.is_empty()
                        || u.pull_prefixes.iter().any(|p| name.starts_with(p.as_str()))
                }
                (&"push", Some(u)) => {
                    u.push_prefixes.is_empty()
                        || u.push_prefixes.iter().any(|p| name.starts_with(p.as_str()))
                }
                _ => false,
            })
            .map(str::to_owned)
            .collect();
        Some((name.to_owned(), granted))
    }
}

impl TokenServer {
    pub fn start(users: Vec<User>, identity_tokens: Vec<(String, String)>) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (signer, cert_pem) = Signer::new();
        let policy = Policy {
            users,
            identity_tokens,
        };
        let requests = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = {
            let requests = requests.clone();
            let stop = stop.clone();
            std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match listener.accept() {
                        Ok((stream, _)) => {
                            let _ = stream.set_nonblocking(false);
                            let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                            if let Some(r) = serve(stream, &signer, &policy) {
                                requests.lock().unwrap().push(r);
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                            std::thread::sleep(Duration::from_millis(5));
                        }
                        Err(_) => break,
                    }
                }
            })
        };
        TokenServer {
            port,
            cert_pem,
            requests,
            stop,
            thread: Some(thread),
        }
    }

    /// The realm URL the registry sends clients to.
    pub fn realm(&self) -> String {
        format!("http://127.0.0.1:{}/token", self.port)
    }

    /// The signing key's certificate, for the registry's `rootcertbundle`.
    pub fn certificate_pem(&self) -> &str {
        &self.cert_pem
    }

    /// Every request answered so far.
    pub fn requests(&self) -> Vec<TokenRequest> {
        self.requests.lock().unwrap().clone()
    }
}

impl Drop for TokenServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < b.len() => {
                let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(v) => {
                        out.push(v);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn form_pairs(s: &str) -> Vec<(String, String)> {
    s.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (percent_decode(k), percent_decode(v)),
            None => (percent_decode(p), String::new()),
        })
        .collect()
}

/// Answers one HTTP/1.1 request on `stream` (then closes it).
fn serve(stream: TcpStream, signer: &Signer, policy: &Policy) -> Option<TokenRequest> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_owned();
    let target = parts.next()?.to_owned();
    let mut headers = BTreeMap::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':') {
            headers.insert(k.trim().to_ascii_lowercase(), v.trim().to_owned());
        }
    }
    let len: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0u8; len.min(1 << 20)];
    reader.read_exact(&mut body).ok()?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    let mut stream = stream;
    if path != "/token" {
        respond(
            &mut stream,
            404,
            r#"{"errors":[{"code":"NOT_FOUND","message":"no such endpoint"}]}"#,
        );
        return None;
    }
    let params = if method == "POST" {
        form_pairs(&String::from_utf8_lossy(&body))
    } else {
        form_pairs(query)
    };
    let get = |k: &str| {
        params
            .iter()
            .find(|(pk, _)| pk == k)
            .map(|(_, v)| v.clone())
    };
    let mut scopes: Vec<String> = params
        .iter()
        .filter(|(k, _)| k == "scope")
        .map(|(_, v)| v.clone())
        .collect();
    if method == "POST" {
        // OAuth2 form: scopes are space separated in one parameter.
        scopes = scopes
            .iter()
            .flat_map(|s| s.split(' ').map(str::to_owned).collect::<Vec<_>>())
            .filter(|s| !s.is_empty())
            .collect();
    }
    let unauthorized = |stream: &mut TcpStream| {
        respond(
            stream,
            401,
            r#"{"errors":[{"code":"UNAUTHORIZED","message":"authentication failed"}]}"#,
        )
    };
    if get("service").as_deref() != Some(SERVICE) {
        respond(
            &mut stream,
            400,
            r#"{"errors":[{"code":"INVALID","message":"unknown service"}]}"#,
        );
        return None;
    }
    let user: Option<&User> = if method == "POST" {
        match get("grant_type").as_deref() {
            Some("password") => {
                match policy.check(&get("username")?, &get("password").unwrap_or_default()) {
                    Some(u) => Some(u),
                    None => {
                        unauthorized(&mut stream);
                        return Some(rejected(&method, scopes));
                    }
                }
            }
            Some("refresh_token") => {
                let t = get("refresh_token").unwrap_or_default();
                let name = policy
                    .identity_tokens
                    .iter()
                    .find(|(tok, _)| *tok == t)
                    .map(|(_, n)| n.clone());
                match name.and_then(|n| policy.users.iter().find(|u| u.name == n)) {
                    Some(u) => Some(u),
                    None => {
                        unauthorized(&mut stream);
                        return Some(rejected(&method, scopes));
                    }
                }
            }
            _ => {
                respond(
                    &mut stream,
                    400,
                    r#"{"errors":[{"code":"UNSUPPORTED","message":"grant_type"}]}"#,
                );
                return None;
            }
        }
    } else {
        match headers.get("authorization") {
            None => None,
            Some(h) => {
                let decoded = h
                    .strip_prefix("Basic ")
                    .and_then(|b| STANDARD.decode(b.trim()).ok())
                    .and_then(|b| String::from_utf8(b).ok());
                let user = decoded
                    .as_deref()
                    .and_then(|d| d.split_once(':'))
                    .and_then(|(n, p)| policy.check(n, p));
                match user {
                    Some(u) => Some(u),
                    None => {
                        unauthorized(&mut stream);
                        return Some(rejected(&method, scopes));
                    }
                }
            }
        }
    };
    let access: Vec<(String, Vec<String>)> = scopes
        .iter()
        .filter_map(|s| policy.grant(user, s))
        .collect();
    let token = signer.token(user.map_or("", |u| u.name.as_str()), &access);
    let body = serde_json::json!({
        "token": token,
        "access_token": token,
        "expires_in": 300,
        "issued_at": "2026-01-01T00:00:00Z",
    });
    respond(&mut stream, 200, &body.to_string());
    Some(TokenRequest {
        method,
        user: user.map(|u| u.name.clone()),
        scopes,
        granted: true,
    })
}

fn rejected(method: &str, scopes: Vec<String>) -> TokenRequest {
    TokenRequest {
        method: method.to_owned(),
        user: None,
        scopes,
        granted: false,
    }
}

fn respond(stream: &mut TcpStream, status: u16, body: &str) {
    let reason = match status {
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        _ => "Error",
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_ids_have_libtrusts_shape() {
        let id = libtrust_key_id(b"anything");
        assert_eq!(id.len(), 12 * 4 + 11);
        assert!(id.split(':').all(|g| {
            g.len() == 4
                && g.bytes()
                    .all(|b| b.is_ascii_uppercase() || (b'2'..=b'7').contains(&b))
        }));
    }

    #[test]
    fn form_decoding() {
        assert_eq!(
            form_pairs("a=b%20c&scope=repository%3Ax%3Apull&e"),
            vec![
                ("a".into(), "b c".into()),
                ("scope".into(), "repository:x:pull".into()),
                ("e".into(), String::new())
            ]
        );
    }
}

/// A server on 127.0.0.1 that accepts every connection; `answers` says which request paths it
/// answers (with `200 {}`); every other request gets no byte back, the connection held open:
/// a registry that hangs, for the client's timeouts (`|_| false`: one that never answers).
#[derive(Debug)]
pub struct QuietServer {
    port: u16,
}

impl QuietServer {
    pub fn start(answers: fn(&str) -> bool) -> Self {
        use std::io::{BufRead, BufReader, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        // The threads end with the test binary; nothing they hold outlives it.
        std::thread::spawn(move || {
            for conn in listener.incoming() {
                let Ok(mut conn) = conn else { continue };
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(conn.try_clone().unwrap());
                    loop {
                        let mut request = String::new();
                        if reader.read_line(&mut request).unwrap_or(0) == 0 {
                            return;
                        }
                        loop {
                            let mut line = String::new();
                            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                                return;
                            }
                            if line == "\r\n" {
                                break;
                            }
                        }
                        let path = request.split(' ').nth(1).unwrap_or("");
                        if !answers(path) {
                            // Silent from here on; keep the connection open.
                            std::thread::sleep(std::time::Duration::from_secs(600));
                            return;
                        }
                        let _ = conn.write_all(
                            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
                        );
                    }
                });
            }
        });
        QuietServer { port }
    }

    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }
}
