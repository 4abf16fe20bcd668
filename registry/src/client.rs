//! A blocking client for the OCI distribution API, on `ureq` (HTTP/1.1, rustls).
//!
//! - **Scheme.** HTTPS, verified against Mozilla's roots (or the CA file given, or docker's
//!   `/etc/docker/certs.d/<registry>/*.crt`). Plain HTTP only for a loopback registry or with
//!   `insecure`; those try HTTPS first and fall back to HTTP, as docker does. `insecure` also
//!   accepts a certificate that does not verify.
//! - **Auth.** The first request (`GET /v2/`) goes without credentials; its challenge decides:
//!   `Basic` sends the credentials on every request, `Bearer` runs the token flow per set of
//!   scopes (see [`crate::auth`]). Credentials go only to the registry's own host and scheme
//!   and to the token realm it names; never over plain HTTP to a host that is not loopback
//!   unless `insecure`; never along a redirect to another host.
//! - **Messages.** Errors name the registry, the request and what the server said, scrubbed of
//!   every secret this client holds or was given.
//!
//! One `Client` talks to one registry; it is `Sync`, so pushes and pulls share it between
//! worker threads.

use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use asp_format::Digest;
use asp_format::digest::is_integrity_error;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;
use ureq::http::{self, Method, Response, StatusCode, header};
use ureq::tls::{Certificate, PemItem, RootCerts, TlsConfig};
use ureq::{Agent, Body, SendBody};

use crate::auth::{
    AuthState, Challenge, DEFAULT_TOKEN_LIFETIME, Scheme, Scope, Token, parse_challenge, scope_key,
};
use crate::credentials::{Credentials, SecretKind};
use crate::error::{Error, seconds, shorten};
use crate::manifest::{ACCEPT_MANIFESTS, Limits, OciDescriptor, too_large};
use crate::reference::{Reference, host_is_loopback, host_of};
use crate::secret::{Scrubber, Secret, percent_encode};

/// How to reach a registry.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Allow plain HTTP and certificates that do not verify, for any host.
    pub insecure: bool,
    /// Credentials to offer when the registry asks.
    pub credentials: Option<Credentials>,
    /// PEM file of CA certificates to trust instead of the built-in roots.
    pub ca_file: Option<PathBuf>,
    /// Where docker keeps per-registry CAs (`<dir>/<registry>/*.crt`); `None` to not look.
    pub certs_d: Option<PathBuf>,
    /// Longest wait for the first contact: connecting (TCP and TLS) and the answer to
    /// `GET /v2/`, over HTTPS and the plain-HTTP fallback together (HTTPS gets half of it
    /// when HTTP may follow).
    pub connect_timeout: Duration,
    /// Longest wait, once the registry has answered, for each answer and for the next bytes
    /// of a body.
    pub read_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            insecure: false,
            credentials: None,
            ca_file: None,
            certs_d: Some(PathBuf::from("/etc/docker/certs.d")),
            connect_timeout: Duration::from_secs(30),
            read_timeout: Duration::from_secs(120),
        }
    }
}

/// Why the first request to one scheme failed.
#[derive(Debug)]
enum Failure {
    /// No connection (refused, unknown host, TLS failure, no connection in time): what
    /// happened, without the URL.
    Unreachable(String),
    /// Connected, and no answer in time.
    Silent(String),
    /// An answer, with this status, from something that is not a registry
    /// ([`Error::NotARegistry`]).
    Foreign(u16, Error),
    /// An answer that ends the attempt (a registry's error, a bad request).
    Other(Error),
}

impl Failure {
    fn detail(&self) -> String {
        match self {
            Failure::Unreachable(d) | Failure::Silent(d) => d.clone(),
            Failure::Foreign(_, e) | Failure::Other(e) => e.to_string(),
        }
    }

    fn into_error(self, registry: &str, base: &str) -> Error {
        match self {
            Failure::Unreachable(d) | Failure::Silent(d) => Error::Unreachable {
                registry: registry.to_owned(),
                detail: format!("{d} ({base}/v2/)"),
            },
            Failure::Foreign(_, e) | Failure::Other(e) => e,
        }
    }
}

/// What a request sends.
pub(crate) enum Payload<'a> {
    Empty,
    Bytes(&'a [u8]),
    Stream(Box<dyn Read + Send + 'a>, u64),
}

/// How an upload session started.
#[derive(Debug)]
pub(crate) enum Upload {
    /// The blob was mounted from another repository: nothing to send.
    Mounted,
    /// Send the blob to this URL.
    Session(String),
}

/// A manifest as the registry sent it.
#[derive(Debug)]
pub(crate) struct FetchedManifest {
    pub bytes: Vec<u8>,
    pub content_type: Option<String>,
    /// `Docker-Content-Digest`, when the registry sent a sha256 one.
    pub digest_header: Option<Digest>,
}

/// A client for one registry.
#[derive(Debug)]
pub struct Client {
    /// As in references (`host:port`, `docker.io`), for messages.
    registry: String,
    /// Where the API answers: `host[:port]`.
    host: String,
    /// `https://host[:port]` or `http://…`, decided by the first request.
    base: String,
    agent: Agent,
    credentials: Option<Credentials>,
    scrubber: Scrubber,
    auth: Mutex<AuthState>,
    insecure: bool,
    /// For messages: how long an answer is waited for.
    read_timeout: Duration,
}

const USER_AGENT: &str = concat!("asp/", env!("CARGO_PKG_VERSION"));
/// The header a registry names its API with (`registry/2.0`) on its answers; what tells a
/// registry's error from a web server's page at `/v2/`.
const API_VERSION: &str = "Docker-Distribution-API-Version";
/// Error bodies and token answers are read up to this much.
const SMALL_BODY: u64 = 1 << 20;

impl Client {
    /// Connects to the registry of `reference`: `GET /v2/` decides the scheme and how to
    /// authenticate. Credentials are not sent yet.
    pub fn connect(reference: &Reference, options: ClientOptions) -> Result<Client, Error> {
        let registry = reference.registry().to_owned();
        let host = reference.api_host().to_owned();
        let loopback = reference.is_loopback();
        let scrubber = Scrubber::new();
        if let Some(c) = &options.credentials {
            scrubber.add(Some(&c.username), &c.secret);
        }
        let roots = roots_for(&registry, &options)?;
        let mut client = Client {
            registry,
            host,
            base: String::new(),
            agent: agent(&options, roots),
            credentials: options.credentials.clone(),
            scrubber,
            auth: Mutex::new(AuthState::default()),
            insecure: options.insecure,
            read_timeout: options.read_timeout,
        };
        let schemes: &[&str] = if loopback || options.insecure {
            &["https", "http"]
        } else {
            &["https"]
        };
        // One budget for the whole first contact, so a registry that accepts connections and
        // never answers costs `connect_timeout`, not a wait per scheme: HTTPS gets half of it
        // when plain HTTP may follow (a TLS server answers a hello at once), HTTP the rest.
        let budget = options.connect_timeout;
        let start = Instant::now();
        let mut failures: Vec<(String, Failure)> = Vec::new();
        for (i, scheme) in schemes.iter().enumerate() {
            client.base = format!("{scheme}://{}", client.host);
            let left = budget.saturating_sub(start.elapsed());
            let allowed = if i + 1 < schemes.len() {
                left / 2
            } else {
                left
            };
            match client.ping(allowed) {
                Ok(()) => return Ok(client),
                // HTTPS failed: try plain HTTP where allowed.
                Err(f @ (Failure::Unreachable(_) | Failure::Silent(_)))
                    if i + 1 < schemes.len() =>
                {
                    failures.push((client.base.clone(), f))
                }
                Err(f) => {
                    failures.push((client.base.clone(), f));
                    break;
                }
            }
        }
        Err(client.first_contact_failed(failures, budget))
    }

    /// Why no scheme reached the registry, naming every URL tried. When HTTPS failed and plain
    /// HTTP got an answer, the answer decides what is reported:
    /// - a `400` from something that is not a registry is what a TLS server says to plain
    ///   HTTP (Go's "Client sent an HTTP request to an HTTPS server", nginx's "The plain HTTP
    ///   request was sent to HTTPS port"): the registry there speaks HTTPS, and the HTTPS
    ///   failure (a certificate it does not trust) is reported first, the answer after it;
    /// - any other answer comes from a server that speaks plain HTTP there, so HTTPS failing
    ///   against it ("received corrupt message": it answered the TLS hello in plain text) says
    ///   nothing: the answer is reported (a web server's `404` is not a registry; a registry's
    ///   own error is that error), with the HTTPS attempt named after it.
    fn first_contact_failed(&self, failures: Vec<(String, Failure)>, budget: Duration) -> Error {
        let tried = failures
            .iter()
            .map(|(base, _)| format!("{base}/v2/"))
            .collect::<Vec<_>>()
            .join(", then ");
        let silent = failures
            .iter()
            .any(|(_, f)| matches!(f, Failure::Silent(_)));
        let all_unreachable = failures
            .iter()
            .all(|(_, f)| matches!(f, Failure::Unreachable(_) | Failure::Silent(_)));
        if silent && all_unreachable {
            return Error::NoAnswer {
                registry: self.registry.clone(),
                waited: seconds(budget),
                tried,
            };
        }
        let mut failures = failures.into_iter();
        let (first_base, first) = failures.next().expect("at least one scheme was tried");
        match (first, failures.next()) {
            (Failure::Other(e) | Failure::Foreign(_, e), _) => e,
            (f, None) => f.into_error(&self.registry, &first_base),
            // With the API version header or without (a proxy in front of a registry may add
            // it to every answer), a 400 to plain HTTP is a TLS server's.
            (
                f,
                Some((
                    second_base,
                    g @ (Failure::Foreign(400, _)
                    | Failure::Other(Error::Registry { status: 400, .. })),
                )),
            ) => Error::Unreachable {
                registry: self.registry.clone(),
                detail: format!(
                    "{} ({first_base}/v2/); {second_base}/v2/ answered plain HTTP as an HTTPS \
                     server does: {}",
                    f.detail(),
                    match g {
                        Failure::Foreign(_, Error::NotARegistry { status, said, .. }) => {
                            format!("{status}{said}")
                        }
                        Failure::Other(Error::Registry { detail, .. }) => {
                            format!("400 Bad Request: {detail}")
                        }
                        other => other.detail(),
                    }
                ),
            },
            (f, Some((_, Failure::Foreign(_, e)))) => match e {
                Error::NotARegistry {
                    registry,
                    url,
                    status,
                    said,
                    ..
                } => Error::NotARegistry {
                    registry,
                    url,
                    status,
                    said,
                    tried: format!("; tried first: {first_base}/v2/, {}", f.detail()),
                },
                other => other,
            },
            (_, Some((_, Failure::Other(e)))) => e,
            (f, Some((second_base, g))) => {
                let (a, b) = (f.detail(), g.detail());
                let detail = if a == b {
                    format!("{a} (tried {tried})")
                } else {
                    format!("{a} ({first_base}/v2/); {b} ({second_base}/v2/)")
                };
                Error::Unreachable {
                    registry: self.registry.clone(),
                    detail,
                }
            }
        }
    }

    /// The registry as references name it.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// `https://host` or `http://host`: where requests go.
    pub fn base_url(&self) -> &str {
        &self.base
    }

    /// The scrubber holding this client's secrets, for callers composing messages from
    /// server text.
    pub fn scrubber(&self) -> &Scrubber {
        &self.scrubber
    }

    /// `GET /v2/` at `self.base`, connecting and answering within `allowed`.
    fn ping(&self, allowed: Duration) -> Result<(), Failure> {
        let url = format!("{}/v2/", self.base);
        let req = http::Request::builder()
            .method(Method::GET)
            .uri(&url)
            .body(SendBody::none())
            .map_err(|e| Failure::Other(self.bad_request(e)))?;
        // Resolving, connecting (TCP and TLS) and the answer each get `allowed` (not
        // `read_timeout`, which is for later requests), so a timeout's reason tells the phase
        // (`Resolve`/`Connect`: no connection or TLS handshake; after it: connected and
        // silent). ureq times each phase from its own start and the whole call from the
        // call's, so the whole call gets twice as long: a slow name lookup followed by a
        // dropped connection, or a connection followed by silence, is named by its phase, and
        // the call still ends.
        let hair = allowed
            .saturating_mul(2)
            .saturating_add(Duration::from_millis(50));
        let req = self
            .agent
            .configure_request(req)
            .timeout_resolve(Some(allowed))
            .timeout_connect(Some(allowed))
            .timeout_recv_response(Some(allowed))
            .timeout_per_call(Some(hair))
            .timeout_per_read(Some(hair))
            .build();
        // Whatever stops the very first request (refused, TLS, a plain-HTTP server answering
        // a TLS hello) means the registry cannot be reached this way.
        let mut resp = self.agent.run(req).map_err(|e| match e {
            // Connected (TCP, and TLS for HTTPS), then no answer in time.
            ureq::Error::Timeout(
                ureq::Timeout::SendRequest | ureq::Timeout::RecvResponse | ureq::Timeout::PerRead,
            ) => Failure::Silent(format!("no answer within {} s", seconds(allowed))),
            // The whole call ran out, which the phases' own limits should have ended first:
            // resolving and connecting are timed from different moments (ureq starts the
            // connect limit once the name is resolved), so it cannot say which phase it was.
            ureq::Error::Timeout(ureq::Timeout::PerCall | ureq::Timeout::Global) => {
                Failure::Unreachable(format!(
                    "no connection or answer within {} s",
                    seconds(allowed)
                ))
            }
            // No connection, or no TLS handshake, in time.
            ureq::Error::Timeout(ureq::Timeout::Connect | ureq::Timeout::Resolve) => {
                Failure::Unreachable(format!(
                    "no connection{} within {} s",
                    if self.base.starts_with("https:") {
                        " or TLS handshake"
                    } else {
                        ""
                    },
                    seconds(allowed)
                ))
            }
            ureq::Error::Io(io) if io.kind() == io::ErrorKind::ConnectionRefused => {
                Failure::Unreachable("connection refused".to_owned())
            }
            e => Failure::Unreachable(self.scrubber.scrub(&e.to_string())),
        })?;
        match resp.status() {
            StatusCode::OK => Ok(()),
            StatusCode::UNAUTHORIZED => {
                let challenge = challenge_of(&resp);
                let mut st = self.auth.lock().expect("auth state poisoned");
                match challenge {
                    Some(Challenge::Basic) => st.scheme = Scheme::Basic,
                    Some(Challenge::Bearer { realm, service, .. }) => {
                        st.scheme = Scheme::Bearer { realm, service }
                    }
                    None => {}
                }
                Ok(())
            }
            // A registry answering with an error of its own (it names its API version).
            status if resp.headers().contains_key(API_VERSION) => {
                Err(Failure::Other(Error::Registry {
                    registry: self.registry.clone(),
                    request: "GET /v2/".to_owned(),
                    status: status.as_u16(),
                    detail: self.error_detail(&mut resp),
                }))
            }
            status => Err(Failure::Foreign(
                status.as_u16(),
                self.not_a_registry(&url, &mut resp),
            )),
        }
    }

    /// What answered `GET /v2/` with neither `200` nor `401` and without the API version
    /// header every registry sends: what the answer was, what the server calls itself, and
    /// what it said (not an HTML page, which says nothing a person needs here).
    fn not_a_registry(&self, url: &str, resp: &mut Response<Body>) -> Error {
        let status = resp.status();
        let header_text = |name: header::HeaderName| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(|v| shorten(&self.scrubber.scrub(v), 80))
                .filter(|v| !v.is_empty())
        };
        let media = header_text(header::CONTENT_TYPE)
            .map(|t| t.split(';').next().unwrap_or_default().trim().to_owned());
        let server = header_text(header::SERVER);
        let html = media.as_deref().is_some_and(|m| m.contains("html"));
        let mut about = Vec::new();
        if let Some(m) = &media {
            // The media type's own article: "an application/json page".
            let article = if m.starts_with(['a', 'e', 'i', 'o', 'u']) {
                "an"
            } else {
                "a"
            };
            about.push(format!("{article} {m} page"));
        }
        if let Some(s) = server {
            about.push(format!("from {s}"));
        }
        let mut said = String::new();
        if !about.is_empty() {
            said.push_str(&format!(" ({})", about.join(", ")));
        }
        if !html {
            let text = self.error_detail(resp);
            if text != "(no details)" {
                said.push_str(&format!(": {text}"));
            }
        }
        Error::NotARegistry {
            registry: self.registry.clone(),
            url: url.to_owned(),
            status: match status.canonical_reason() {
                Some(r) => format!("{} {r}", status.as_u16()),
                None => status.as_u16().to_string(),
            },
            said,
            tried: String::new(),
        }
    }

    /// Sends a request, authorising it for `scopes` and answering challenges. `body` is
    /// called once per attempt, so a stream can be opened again after a challenge.
    pub(crate) fn send<'b>(
        &self,
        method: Method,
        url: &str,
        scopes: &[Scope],
        headers: &[(&str, &str)],
        what: &str,
        body: &mut dyn FnMut() -> Result<Payload<'b>, Error>,
    ) -> Result<Response<Body>, Error> {
        let ours = self.same_origin(url);
        let mut attempt = 0;
        loop {
            attempt += 1;
            let authorization = if ours {
                self.authorization(scopes)?
            } else {
                None
            };
            let mut b = http::Request::builder().method(method.clone()).uri(url);
            for (k, v) in headers {
                b = b.header(*k, *v);
            }
            if let Some(a) = &authorization {
                b = b.header(header::AUTHORIZATION, a.expose());
            }
            let has_body =
                method == Method::POST || method == Method::PUT || method == Method::PATCH;
            let result = match body()? {
                Payload::Empty => {
                    if has_body {
                        b = b.header(header::CONTENT_LENGTH, "0");
                    }
                    let req = b.body(SendBody::none()).map_err(|e| self.bad_request(e))?;
                    self.agent.run(req)
                }
                Payload::Bytes(bytes) => {
                    b = b.header(header::CONTENT_LENGTH, bytes.len().to_string());
                    let req = b.body(bytes).map_err(|e| self.bad_request(e))?;
                    self.agent.run(req)
                }
                Payload::Stream(mut reader, len) => {
                    b = b.header(header::CONTENT_LENGTH, len.to_string());
                    let req = b
                        .body(SendBody::from_reader(&mut reader))
                        .map_err(|e| self.bad_request(e))?;
                    self.agent.run(req)
                }
            };
            let resp = result.map_err(|e| self.transport(e, what))?;
            match resp.status() {
                StatusCode::UNAUTHORIZED if ours && attempt < 3 => {
                    self.on_unauthorized(&resp, scopes, authorization.is_some(), attempt)?;
                }
                StatusCode::UNAUTHORIZED => {
                    return Err(self.not_allowed(scopes, authorization.is_some()));
                }
                StatusCode::FORBIDDEN => {
                    return Err(self.not_allowed(scopes, authorization.is_some()));
                }
                _ => return Ok(resp),
            }
        }
    }

    /// Learns from a 401 how to authorise the next attempt, or says why there is none.
    fn on_unauthorized(
        &self,
        resp: &Response<Body>,
        scopes: &[Scope],
        sent: bool,
        attempt: u32,
    ) -> Result<(), Error> {
        let challenge = challenge_of(resp);
        let mut st = self.auth.lock().expect("auth state poisoned");
        match challenge {
            None => Err(Error::Registry {
                registry: self.registry.clone(),
                request: scopes
                    .first()
                    .map(|s| format!("{} {}", s.verb(), s.repository))
                    .unwrap_or_default(),
                status: 401,
                detail: "unauthorised, without a WWW-Authenticate challenge".to_owned(),
            }),
            Some(Challenge::Basic) => {
                if sent && st.scheme == Scheme::Basic {
                    return Err(self.refused(String::new()));
                }
                match &self.credentials {
                    None => Err(self.not_allowed(scopes, false)),
                    Some(_) => {
                        st.scheme = Scheme::Basic;
                        Ok(())
                    }
                }
            }
            Some(Challenge::Bearer {
                realm,
                service,
                error,
                ..
            }) => {
                let scheme = Scheme::Bearer { realm, service };
                if sent && st.scheme == scheme {
                    st.tokens.remove(&scope_key(scopes));
                    if error.as_deref() == Some("insufficient_scope") || attempt >= 2 {
                        return Err(self.not_allowed(scopes, self.credentials.is_some()));
                    }
                    // `invalid_token` (expired, revoked): one more try with a fresh token.
                    Ok(())
                } else {
                    st.scheme = scheme;
                    st.tokens.clear();
                    Ok(())
                }
            }
        }
    }

    /// The `Authorization` value for a request needing `scopes`, fetching a token if needed.
    fn authorization(&self, scopes: &[Scope]) -> Result<Option<Secret>, Error> {
        let mut st = self.auth.lock().expect("auth state poisoned");
        match st.scheme.clone() {
            Scheme::Anonymous => Ok(None),
            Scheme::Basic => Ok(self.credentials.as_ref().and_then(|c| {
                (c.kind == SecretKind::Password).then(|| {
                    Secret::new(format!(
                        "Basic {}",
                        STANDARD.encode(format!("{}:{}", c.username, c.secret.expose()))
                    ))
                })
            })),
            Scheme::Bearer { realm, service } => {
                let key = scope_key(scopes);
                if let Some(t) = st.token(&key) {
                    return Ok(Some(Secret::new(format!("Bearer {}", t.token.expose()))));
                }
                let t = self.fetch_token(&realm, service.as_deref(), scopes)?;
                let value = Secret::new(format!("Bearer {}", t.token.expose()));
                st.tokens.insert(key, t);
                Ok(Some(value))
            }
        }
    }

    /// Asks the realm for a token covering `scopes`.
    fn fetch_token(
        &self,
        realm: &str,
        service: Option<&str>,
        scopes: &[Scope],
    ) -> Result<Token, Error> {
        let uri: http::Uri = realm.parse().map_err(|_| Error::Registry {
            registry: self.registry.clone(),
            request: "GET /v2/".to_owned(),
            status: 401,
            detail: format!("the token realm {realm:?} is not a URL"),
        })?;
        let realm_host = uri.host().unwrap_or("");
        match uri.scheme_str() {
            Some("https") => {}
            Some("http") if self.insecure || host_is_loopback(realm_host) => {}
            _ => {
                return Err(Error::Registry {
                    registry: self.registry.clone(),
                    request: "GET /v2/".to_owned(),
                    status: 401,
                    detail: format!(
                        "the token realm {realm:?} is not HTTPS; credentials are not sent \
                         there without --insecure"
                    ),
                });
            }
        }
        let mut params: Vec<(&str, String)> = Vec::new();
        if let Some(s) = service {
            params.push(("service", s.to_owned()));
        }
        let what = format!("getting a token from {realm}");
        let identity = self
            .credentials
            .as_ref()
            .filter(|c| c.kind == SecretKind::IdentityToken);
        let mut resp = if let Some(c) = identity {
            // OAuth2 refresh-token grant (distribution's `oauth.md`).
            params.push(("grant_type", "refresh_token".to_owned()));
            params.push(("client_id", "asp".to_owned()));
            params.push((
                "scope",
                scopes
                    .iter()
                    .map(Scope::as_param)
                    .collect::<Vec<_>>()
                    .join(" "),
            ));
            let mut form: String = params
                .iter()
                .map(|(k, v)| format!("{k}={}", percent_encode(v)))
                .collect::<Vec<_>>()
                .join("&");
            form.push_str("&refresh_token=");
            form.push_str(&percent_encode(c.secret.expose()));
            let req = http::Request::builder()
                .method(Method::POST)
                .uri(realm)
                .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
                .header(header::CONTENT_LENGTH, form.len().to_string())
                .body(form.as_bytes())
                .map_err(|e| self.bad_request(e))?;
            self.agent.run(req).map_err(|e| self.transport(e, &what))?
        } else {
            for s in scopes {
                params.push(("scope", s.as_param()));
            }
            let password = self
                .credentials
                .as_ref()
                .filter(|c| c.kind == SecretKind::Password);
            if let Some(c) = password {
                params.push(("account", c.username.clone()));
            }
            let query: String = params
                .iter()
                .map(|(k, v)| format!("{k}={}", percent_encode(v)))
                .collect::<Vec<_>>()
                .join("&");
            let sep = if realm.contains('?') { '&' } else { '?' };
            let mut b = http::Request::builder()
                .method(Method::GET)
                .uri(format!("{realm}{sep}{query}"));
            if let Some(c) = password {
                b = b.header(
                    header::AUTHORIZATION,
                    format!(
                        "Basic {}",
                        STANDARD.encode(format!("{}:{}", c.username, c.secret.expose()))
                    ),
                );
            }
            let req = b.body(SendBody::none()).map_err(|e| self.bad_request(e))?;
            self.agent.run(req).map_err(|e| self.transport(e, &what))?
        };
        let status = resp.status();
        if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
            let said = self.error_detail(&mut resp);
            return Err(match &self.credentials {
                Some(_) => self.refused(format!(": {said}")),
                None => self.not_allowed(scopes, false),
            });
        }
        if status != StatusCode::OK {
            return Err(Error::Registry {
                registry: self.registry.clone(),
                request: what,
                status: status.as_u16(),
                detail: self.error_detail(&mut resp),
            });
        }
        #[derive(Deserialize)]
        struct Answer {
            #[serde(default)]
            token: Option<String>,
            #[serde(default)]
            access_token: Option<String>,
            #[serde(default)]
            expires_in: Option<u64>,
        }
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(SMALL_BODY)
            .read_to_vec()
            .map_err(|e| self.transport(e, &what))?;
        let answer: Answer = serde_json::from_slice(&bytes).map_err(|_| Error::Registry {
            registry: self.registry.clone(),
            request: what.clone(),
            status: 200,
            detail: "the token answer is not JSON".to_owned(),
        })?;
        let token = answer
            .token
            .or(answer.access_token)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| Error::Registry {
                registry: self.registry.clone(),
                request: what,
                status: 200,
                detail: "the token answer holds no token".to_owned(),
            })?;
        let token = Secret::new(token);
        self.scrubber.add(None, &token);
        let lifetime = answer
            .expires_in
            .map(Duration::from_secs)
            .filter(|d| *d >= DEFAULT_TOKEN_LIFETIME)
            .unwrap_or(DEFAULT_TOKEN_LIFETIME);
        Ok(Token {
            token,
            expires: Instant::now() + lifetime,
        })
    }

    // ---- the distribution API ----

    /// `HEAD /v2/<name>/blobs/<digest>`: the size the registry has for the blob, if any.
    /// Asked with push access when `for_push`, so a push needs one token, not two.
    pub(crate) fn blob_size(
        &self,
        repository: &str,
        blob: &OciDescriptor,
        for_push: bool,
    ) -> Result<Option<u64>, Error> {
        let url = format!("{}/v2/{repository}/blobs/{}", self.base, blob.digest);
        let what = format!("HEAD blob {}", blob.digest);
        let scope = if for_push {
            Scope::push(repository)
        } else {
            Scope::pull(repository)
        };
        let mut resp = self.send(Method::HEAD, &url, &[scope], &[], &what, &mut || {
            Ok(Payload::Empty)
        })?;
        match resp.status() {
            StatusCode::OK => Ok(Some(content_length(&resp).unwrap_or(blob.size))),
            StatusCode::NOT_FOUND => Ok(None),
            s => Err(self.unexpected(&what, s, &mut resp)),
        }
    }

    /// Starts an upload into `repository`, mounting the blob from `mount.1` when given and
    /// the registry can.
    pub(crate) fn start_upload(
        &self,
        repository: &str,
        mount: Option<(&Digest, &str)>,
    ) -> Result<Upload, Error> {
        let mut url = format!("{}/v2/{repository}/blobs/uploads/", self.base);
        let mut scopes = vec![Scope::push(repository)];
        if let Some((digest, from)) = mount {
            url.push_str(&format!(
                "?mount={}&from={}",
                percent_encode(&digest.to_string()),
                percent_encode(from)
            ));
            scopes.push(Scope::pull(from));
        }
        let what = match mount {
            Some((d, from)) => format!("mounting blob {d} from {from}"),
            None => "starting an upload".to_owned(),
        };
        let mut resp = self.send(Method::POST, &url, &scopes, &[], &what, &mut || {
            Ok(Payload::Empty)
        })?;
        match resp.status() {
            StatusCode::CREATED if mount.is_some() => Ok(Upload::Mounted),
            StatusCode::ACCEPTED => {
                let loc = self.location(&resp, &what)?;
                Ok(Upload::Session(loc))
            }
            s => Err(self.unexpected(&what, s, &mut resp)),
        }
    }

    /// Sends a whole blob to an upload session and closes it (`PUT <location>?digest=…`).
    /// `open` gives the bytes, and is called again if the request must be repeated.
    pub(crate) fn finish_upload<'b>(
        &self,
        session: &str,
        repository: &str,
        blob: &OciDescriptor,
        open: &mut dyn FnMut() -> Result<Box<dyn Read + Send + 'b>, Error>,
    ) -> Result<(), Error> {
        let sep = if session.contains('?') { '&' } else { '?' };
        let url = format!(
            "{session}{sep}digest={}",
            percent_encode(&blob.digest.to_string())
        );
        let what = format!("uploading blob {}", blob.digest);
        let size = blob.size;
        let mut resp = self.send(
            Method::PUT,
            &url,
            &[Scope::push(repository)],
            &[("content-type", "application/octet-stream")],
            &what,
            &mut || Ok(Payload::Stream(open()?, size)),
        )?;
        match resp.status() {
            StatusCode::CREATED => {
                if let Some(d) = digest_header(&resp)
                    && d != blob.digest
                {
                    return Err(Error::Integrity(format!(
                        "{} stored blob {} as {d}",
                        self.registry, blob.digest
                    )));
                }
                Ok(())
            }
            StatusCode::BAD_REQUEST => {
                let detail = self.error_detail(&mut resp);
                if detail.contains("DIGEST_INVALID") || detail.contains("SIZE_INVALID") {
                    Err(Error::Integrity(format!(
                        "{} refused blob {}: {detail}",
                        self.registry, blob.digest
                    )))
                } else {
                    Err(Error::Registry {
                        registry: self.registry.clone(),
                        request: what,
                        status: 400,
                        detail,
                    })
                }
            }
            s => Err(self.unexpected(&what, s, &mut resp)),
        }
    }

    /// `GET /v2/<name>/manifests/<reference>`, refusing more than `limits.max_manifest_bytes`
    /// before reading it (by `Content-Length`) and while reading it.
    pub(crate) fn get_manifest(
        &self,
        reference: &Reference,
        limits: &Limits,
    ) -> Result<FetchedManifest, Error> {
        let url = format!(
            "{}/v2/{}/manifests/{}",
            self.base,
            reference.repository(),
            reference.target()
        );
        let what = format!("GET manifest {}", reference.target());
        let mut resp = self.send(
            Method::GET,
            &url,
            &[Scope::pull(reference.repository())],
            &[("accept", ACCEPT_MANIFESTS)],
            &what,
            &mut || Ok(Payload::Empty),
        )?;
        match resp.status() {
            StatusCode::OK => {}
            StatusCode::NOT_FOUND => {
                let detail = self.error_detail(&mut resp);
                let what = if detail.contains("NAME_UNKNOWN") {
                    "the repository".to_owned()
                } else if let Some(tag) = reference.tag().filter(|_| reference.digest().is_none()) {
                    // A mistyped tag and a mistyped repository look the same to a manifest
                    // GET (distribution 2.8 says MANIFEST_UNKNOWN for both): the tags there
                    // tell them apart.
                    match self.tags(reference.repository()) {
                        Some(tags) if tags.is_empty() => {
                            format!("tag {tag} (the repository has no tags: is its name right?)")
                        }
                        Some(tags) => format!("tag {tag} (its tags: {})", shown_tags(&tags)),
                        None => format!("tag {tag}"),
                    }
                } else {
                    "the manifest".to_owned()
                };
                return Err(Error::NotFound {
                    reference: reference.to_string(),
                    what,
                });
            }
            s => return Err(self.unexpected(&what, s, &mut resp)),
        }
        let source = reference.to_string();
        if let Some(n) = content_length(&resp)
            && n > limits.max_manifest_bytes
        {
            return Err(too_large(&source, n, limits));
        }
        let content_type = resp
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .map(|s| s.split(';').next().unwrap_or(s).trim().to_owned());
        let digest_header = digest_header(&resp);
        let bytes = match resp
            .body_mut()
            .with_config()
            .limit(limits.max_manifest_bytes)
            .read_to_vec()
        {
            Ok(b) => b,
            Err(ureq::Error::BodyExceedsLimit(_)) => {
                return Err(too_large(
                    &source,
                    limits.max_manifest_bytes.saturating_add(1),
                    limits,
                ));
            }
            Err(e) => return Err(self.transport(e, &what)),
        };
        Ok(FetchedManifest {
            bytes,
            content_type,
            digest_header,
        })
    }

    /// `PUT /v2/<name>/manifests/<reference>`: the digest the registry reports, if any.
    pub(crate) fn put_manifest(
        &self,
        reference: &Reference,
        bytes: &[u8],
        media_type: &str,
    ) -> Result<Option<Digest>, Error> {
        let url = format!(
            "{}/v2/{}/manifests/{}",
            self.base,
            reference.repository(),
            reference.target()
        );
        let what = format!("PUT manifest {}", reference.target());
        let mut resp = self.send(
            Method::PUT,
            &url,
            &[Scope::push(reference.repository())],
            &[("content-type", media_type)],
            &what,
            &mut || Ok(Payload::Bytes(bytes)),
        )?;
        match resp.status() {
            StatusCode::CREATED | StatusCode::OK => Ok(digest_header(&resp)),
            s => Err(self.unexpected(&what, s, &mut resp)),
        }
    }

    /// `GET /v2/<name>/blobs/<digest>`: the body, and the length the registry announced.
    pub(crate) fn get_blob(
        &self,
        repository: &str,
        blob: &OciDescriptor,
    ) -> Result<(Box<dyn Read + Send>, Option<u64>), Error> {
        let url = format!("{}/v2/{repository}/blobs/{}", self.base, blob.digest);
        let what = format!("GET blob {}", blob.digest);
        let mut resp = self.send(
            Method::GET,
            &url,
            &[Scope::pull(repository)],
            &[],
            &what,
            &mut || Ok(Payload::Empty),
        )?;
        match resp.status() {
            StatusCode::OK => {
                let len = content_length(&resp);
                Ok((Box::new(resp.into_body().into_reader()), len))
            }
            StatusCode::NOT_FOUND => Err(Error::NotFound {
                reference: format!("{}/{repository}", self.registry),
                what: format!("blob {}", blob.digest),
            }),
            s => Err(self.unexpected(&what, s, &mut resp)),
        }
    }

    // ---- helpers ----

    /// Whether `url` is on this registry (same scheme and host), so it may carry credentials.
    fn same_origin(&self, url: &str) -> bool {
        url.strip_prefix(&self.base)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/') || rest.starts_with('?'))
    }

    /// The absolute URL in a `Location` header.
    fn location(&self, resp: &Response<Body>, what: &str) -> Result<String, Error> {
        let loc = resp
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| Error::Registry {
                registry: self.registry.clone(),
                request: what.to_owned(),
                status: resp.status().as_u16(),
                detail: "no Location header".to_owned(),
            })?;
        Ok(if loc.starts_with('/') {
            format!("{}{loc}", self.base)
        } else {
            loc.to_owned()
        })
    }

    fn refused(&self, detail: String) -> Error {
        let (username, origin) = match &self.credentials {
            Some(c) if c.kind == SecretKind::IdentityToken => {
                ("(identity token)".to_owned(), c.origin.clone())
            }
            Some(c) => (c.username.clone(), c.origin.clone()),
            None => (String::new(), String::new()),
        };
        Error::AuthFailed {
            registry: self.registry.clone(),
            username,
            origin,
            detail: self.scrubber.scrub(&detail),
        }
    }

    fn not_allowed(&self, scopes: &[Scope], authenticated: bool) -> Error {
        let (action, repository) = scopes
            .first()
            .map(|s| (s.verb().to_owned(), s.repository.clone()))
            .unwrap_or_else(|| ("use".to_owned(), String::new()));
        match (&self.credentials, authenticated) {
            (Some(c), true) => Error::Denied {
                registry: self.registry.clone(),
                who: format!("user {:?}", c.username),
                action,
                repository,
            },
            _ => Error::AuthRequired {
                registry: self.registry.clone(),
                repository,
                action,
            },
        }
    }

    fn unexpected(&self, what: &str, status: StatusCode, resp: &mut Response<Body>) -> Error {
        Error::Registry {
            registry: self.registry.clone(),
            request: what.to_owned(),
            status: status.as_u16(),
            detail: self.error_detail(resp),
        }
    }

    /// The repository's tags (the first 100; none for a repository the registry does not
    /// have), or `None` when the registry does not say (no right to list, an answer that is
    /// not a tag list): only ever a hint.
    fn tags(&self, repository: &str) -> Option<Vec<String>> {
        let url = format!("{}/v2/{repository}/tags/list?n=100", self.base);
        let what = "GET tags/list".to_owned();
        let mut resp = self
            .send(
                Method::GET,
                &url,
                &[Scope::pull(repository)],
                &[],
                &what,
                &mut || Ok(Payload::Empty),
            )
            .ok()?;
        match resp.status() {
            StatusCode::OK => {}
            // No repository of that name (NAME_UNKNOWN): it has no tags.
            StatusCode::NOT_FOUND => return Some(Vec::new()),
            _ => return None,
        }
        #[derive(Deserialize)]
        struct TagList {
            #[serde(default)]
            tags: Option<Vec<String>>,
        }
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(1 << 20)
            .read_to_vec()
            .ok()?;
        let list: TagList = serde_json::from_slice(&bytes).ok()?;
        Some(list.tags.unwrap_or_default())
    }

    /// What an error answer says: the OCI error envelope's codes and messages, or the start
    /// of the body; scrubbed and short.
    fn error_detail(&self, resp: &mut Response<Body>) -> String {
        let bytes = resp
            .body_mut()
            .with_config()
            .limit(64 << 10)
            .read_to_vec()
            .unwrap_or_default();
        #[derive(Deserialize)]
        struct Envelope {
            errors: Vec<OciError>,
        }
        #[derive(Deserialize)]
        struct OciError {
            #[serde(default)]
            code: String,
            #[serde(default)]
            message: String,
            #[serde(default)]
            detail: Option<serde_json::Value>,
        }
        let text = match serde_json::from_slice::<Envelope>(&bytes) {
            Ok(env) if !env.errors.is_empty() => env
                .errors
                .iter()
                .map(|e| {
                    let mut s = format!("{}: {}", e.code, e.message);
                    if let Some(d) = &e.detail
                        && !d.is_null()
                    {
                        let d = match d {
                            serde_json::Value::String(s) => s.clone(),
                            other => other.to_string(),
                        };
                        s.push_str(&format!(" ({d})"));
                    }
                    s
                })
                .collect::<Vec<_>>()
                .join("; "),
            _ if bytes.is_empty() => "(no details)".to_owned(),
            _ => String::from_utf8_lossy(&bytes).into_owned(),
        };
        shorten(&self.scrubber.scrub(&text), 300)
    }

    fn transport(&self, e: ureq::Error, what: &str) -> Error {
        if let ureq::Error::Io(io) = &e
            && is_integrity_error(io)
        {
            return Error::Integrity(io.to_string());
        }
        let detail = match &e {
            // Connected, then nothing more from the registry in time.
            ureq::Error::Timeout(
                ureq::Timeout::PerCall
                | ureq::Timeout::Global
                | ureq::Timeout::RecvResponse
                | ureq::Timeout::RecvBody
                | ureq::Timeout::PerRead,
            ) => format!(
                "the registry sent nothing for {} s",
                seconds(self.read_timeout)
            ),
            _ => self.scrubber.scrub(&e.to_string()),
        };
        let unreachable = match &e {
            ureq::Error::ConnectionFailed
            | ureq::Error::HostNotFound
            | ureq::Error::Tls(_)
            | ureq::Error::Rustls(_)
            | ureq::Error::Pem(_) => true,
            ureq::Error::Timeout(t) => matches!(t, ureq::Timeout::Connect | ureq::Timeout::Resolve),
            ureq::Error::Io(io) => matches!(
                io.kind(),
                io::ErrorKind::ConnectionRefused
                    | io::ErrorKind::AddrNotAvailable
                    | io::ErrorKind::HostUnreachable
                    | io::ErrorKind::NetworkUnreachable
            ),
            _ => false,
        };
        if unreachable {
            Error::Unreachable {
                registry: self.registry.clone(),
                detail: format!("{detail} ({})", self.base),
            }
        } else {
            Error::Transport {
                registry: self.registry.clone(),
                what: what.to_owned(),
                detail,
            }
        }
    }

    fn bad_request(&self, e: http::Error) -> Error {
        Error::Usage(format!("cannot build a request to {}: {e}", self.registry))
    }
}

fn agent(options: &ClientOptions, roots: Option<Vec<Certificate<'static>>>) -> Agent {
    let mut tls = TlsConfig::builder();
    if let Some(r) = roots {
        tls = tls.root_certs(RootCerts::new_with_certs(&r));
    }
    if options.insecure {
        tls = tls.disable_verification(true);
    }
    Agent::config_builder()
        .http_status_as_error(false)
        .user_agent(USER_AGENT)
        .timeout_connect(Some(options.connect_timeout))
        .timeout_recv_response(Some(options.read_timeout))
        .timeout_per_read(Some(options.read_timeout))
        .max_redirects(5)
        .redirect_auth_headers(ureq::config::RedirectAuthHeaders::Never)
        .tls_config(tls.build())
        .build()
        .into()
}

/// The CA certificates to trust for `registry`: the CA file given, else docker's
/// `certs.d/<registry>/*.crt`, else none (the built-in roots).
fn roots_for(
    registry: &str,
    options: &ClientOptions,
) -> Result<Option<Vec<Certificate<'static>>>, Error> {
    let files: Vec<PathBuf> = if let Some(f) = &options.ca_file {
        vec![f.clone()]
    } else if let Some(dir) = &options.certs_d {
        let d = dir.join(registry);
        let mut v: Vec<PathBuf> = match std::fs::read_dir(&d) {
            Ok(rd) => rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "crt"))
                .collect(),
            Err(_) => Vec::new(),
        };
        v.sort();
        v
    } else {
        Vec::new()
    };
    if files.is_empty() {
        return Ok(None);
    }
    let mut certs = Vec::new();
    for f in &files {
        certs.extend(read_pem_certs(f)?);
    }
    if certs.is_empty() {
        return Err(Error::Usage(format!(
            "no certificates in {}",
            files
                .iter()
                .map(|f| f.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    Ok(Some(certs))
}

fn read_pem_certs(path: &Path) -> Result<Vec<Certificate<'static>>, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::read(path, e))?;
    let mut out = Vec::new();
    for item in ureq::tls::parse_pem(&bytes) {
        match item {
            Ok(PemItem::Certificate(c)) => out.push(c),
            Ok(_) => {}
            Err(e) => {
                return Err(Error::Usage(format!(
                    "{} is not a PEM certificate file: {e}",
                    path.display()
                )));
            }
        }
    }
    Ok(out)
}

fn challenge_of(resp: &Response<Body>) -> Option<Challenge> {
    resp.headers()
        .get_all(header::WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .find_map(parse_challenge)
}

fn content_length(resp: &Response<Body>) -> Option<u64> {
    resp.headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse().ok())
}

fn digest_header(resp: &Response<Body>) -> Option<Digest> {
    resp.headers()
        .get("docker-content-digest")
        .and_then(|v| v.to_str().ok())
        .and_then(|s| s.trim().parse().ok())
}

/// Whether a registry on `host` may be spoken to in plain HTTP without `--insecure`.
pub fn plain_http_allowed(host: &str) -> bool {
    host_is_loopback(host_of(host))
}

/// Tags as a hint names them: the first ten, sorted, and how many more there are.
fn shown_tags(tags: &[String]) -> String {
    let mut sorted: Vec<&str> = tags.iter().map(String::as_str).collect();
    sorted.sort_unstable();
    let mut out = sorted
        .iter()
        .take(10)
        .copied()
        .collect::<Vec<_>>()
        .join(", ");
    if sorted.len() > 10 {
        out.push_str(&format!(" and {} more", sorted.len() - 10));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_http_only_on_loopback() {
        for h in [
            "localhost:5000",
            "127.0.0.1:5000",
            "127.1.2.3",
            "[::1]:5000",
            "LOCALHOST",
        ] {
            assert!(plain_http_allowed(h), "{h}");
        }
        for h in [
            "ghcr.io",
            "10.0.0.1:5000",
            "192.168.1.2",
            "[::2]:5000",
            "localhost.example",
        ] {
            assert!(!plain_http_allowed(h), "{h}");
        }
    }
}
