//! The pieces of registry auth that are pure data: `WWW-Authenticate` challenges, scopes, and
//! the tokens held per scope. The HTTP side is in [`crate::client`].
//!
//! The distribution token flow: a request without (or with an insufficient) token gets `401`
//! with `WWW-Authenticate: Bearer realm="…",service="…",scope="…"`; the client asks the realm
//! for a token (`GET realm?service=…&scope=…`, with basic credentials when it has them, or a
//! `POST` with `grant_type=refresh_token` for an identity token) and repeats the request with
//! `Authorization: Bearer <token>`. A registry that answers `WWW-Authenticate: Basic …` takes the
//! credentials on every request instead.

use std::collections::HashMap;
use std::time::{Duration, Instant};

/// One challenge from a `WWW-Authenticate` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Challenge {
    Basic,
    Bearer {
        realm: String,
        service: Option<String>,
        scope: Option<String>,
        error: Option<String>,
    },
}

/// Parses a `WWW-Authenticate` value: `Scheme k="v", k2=v2, …` (RFC 7235). Returns the first
/// Bearer or Basic challenge; parameters of other schemes are skipped.
pub(crate) fn parse_challenge(header: &str) -> Option<Challenge> {
    let mut p = Parser {
        s: header.as_bytes(),
        i: 0,
    };
    let mut found: Option<(String, Vec<(String, String)>)> = None;
    let mut current: Option<(String, Vec<(String, String)>)> = None;
    loop {
        p.skip_ws_commas();
        if p.done() {
            break;
        }
        let Some(tok) = p.token() else {
            // A byte no token starts with (the `=` padding of a token68): skip it.
            p.i += 1;
            continue;
        };
        p.skip_ws();
        if p.peek() == Some(b'=') {
            // A parameter of the current scheme.
            p.i += 1;
            p.skip_ws();
            let value = if p.peek() == Some(b'"') {
                p.quoted()?
            } else {
                p.token().unwrap_or_default()
            };
            if let Some((_, params)) = current.as_mut() {
                params.push((tok.to_ascii_lowercase(), value));
            }
        } else {
            // A new scheme starts.
            if let Some(c) = current.take()
                && found.is_none()
                && is_known(&c.0)
            {
                found = Some(c);
            }
            current = Some((tok, Vec::new()));
        }
    }
    if let Some(c) = current.take()
        && found.is_none()
        && is_known(&c.0)
    {
        found = Some(c);
    }
    let (scheme, params) = found?;
    let get = |k: &str| {
        params
            .iter()
            .find(|(pk, _)| pk == k)
            .map(|(_, v)| v.clone())
    };
    if scheme.eq_ignore_ascii_case("basic") {
        Some(Challenge::Basic)
    } else {
        Some(Challenge::Bearer {
            realm: get("realm")?,
            service: get("service"),
            scope: get("scope"),
            error: get("error"),
        })
    }
}

fn is_known(scheme: &str) -> bool {
    scheme.eq_ignore_ascii_case("basic") || scheme.eq_ignore_ascii_case("bearer")
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn done(&self) -> bool {
        self.i >= self.s.len()
    }
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }
    fn skip_ws_commas(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b',')) {
            self.i += 1;
        }
    }
    /// An RFC 7230 token (plus `/` so a bare `token68` does not stop the parse).
    fn token(&mut self) -> Option<String> {
        let start = self.i;
        while let Some(b) = self.peek() {
            if b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~/:".contains(&b) {
                self.i += 1;
            } else {
                break;
            }
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }
    fn quoted(&mut self) -> Option<String> {
        debug_assert_eq!(self.peek(), Some(b'"'));
        self.i += 1;
        let mut out = Vec::new();
        loop {
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    return Some(String::from_utf8_lossy(&out).into_owned());
                }
                b'\\' => {
                    self.i += 1;
                    out.push(self.peek()?);
                    self.i += 1;
                }
                b => {
                    out.push(b);
                    self.i += 1;
                }
            }
        }
    }
}

/// Access to one repository, as the token flow names it: `repository:<name>:<actions>`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Scope {
    pub repository: String,
    pub actions: &'static str,
}

impl Scope {
    pub fn pull(repository: &str) -> Self {
        Scope {
            repository: repository.to_owned(),
            actions: "pull",
        }
    }

    pub fn push(repository: &str) -> Self {
        Scope {
            repository: repository.to_owned(),
            actions: "pull,push",
        }
    }

    pub fn as_param(&self) -> String {
        format!("repository:{}:{}", self.repository, self.actions)
    }

    /// What a person would call this access, for messages.
    pub fn verb(&self) -> &'static str {
        if self.actions.contains("push") {
            "push to"
        } else {
            "pull from"
        }
    }
}

/// The key a token is cached under: its scopes, sorted.
pub(crate) fn scope_key(scopes: &[Scope]) -> String {
    let mut v: Vec<String> = scopes.iter().map(Scope::as_param).collect();
    v.sort();
    v.join(" ")
}

/// How a registry wants requests authorised, learnt from its challenges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// No challenge seen: requests go without `Authorization`.
    Anonymous,
    /// `Basic`: the credentials on every request.
    Basic,
    /// The token flow.
    Bearer {
        realm: String,
        service: Option<String>,
    },
}

/// A bearer token and when to stop using it.
#[derive(Debug, Clone)]
pub(crate) struct Token {
    pub token: crate::secret::Secret,
    pub expires: Instant,
}

/// Tokens shorter-lived than this are assumed to last this long (the token spec's default).
pub(crate) const DEFAULT_TOKEN_LIFETIME: Duration = Duration::from_secs(60);
/// A token is renewed this long before it expires, so a request does not start with a token
/// that lapses on the way.
pub(crate) const TOKEN_MARGIN: Duration = Duration::from_secs(10);

/// What the client knows about authorising against one registry.
#[derive(Debug)]
pub(crate) struct AuthState {
    pub scheme: Scheme,
    pub tokens: HashMap<String, Token>,
}

impl Default for AuthState {
    fn default() -> Self {
        AuthState {
            scheme: Scheme::Anonymous,
            tokens: HashMap::new(),
        }
    }
}

impl AuthState {
    /// A cached token for `key` that is still good.
    pub fn token(&self, key: &str) -> Option<&Token> {
        self.tokens
            .get(key)
            .filter(|t| t.expires > Instant::now() + TOKEN_MARGIN)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_challenges_as_registries_send_them() {
        let c = parse_challenge(
            r#"Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:samalba/my-app:pull,push""#,
        )
        .unwrap();
        assert_eq!(
            c,
            Challenge::Bearer {
                realm: "https://auth.docker.io/token".into(),
                service: Some("registry.docker.io".into()),
                scope: Some("repository:samalba/my-app:pull,push".into()),
                error: None,
            }
        );
        let c = parse_challenge(
            r#"Bearer realm="http://127.0.0.1:9/t", service="reg", scope="a", error="insufficient_scope""#,
        )
        .unwrap();
        assert!(
            matches!(c, Challenge::Bearer { error: Some(ref e), .. } if e == "insufficient_scope")
        );
    }

    #[test]
    fn basic_and_odd_forms() {
        assert_eq!(
            parse_challenge(r#"Basic realm="basic-realm""#),
            Some(Challenge::Basic)
        );
        assert_eq!(parse_challenge("basic"), Some(Challenge::Basic));
        // An unknown scheme first, then Bearer with an escaped quote.
        let c = parse_challenge(r#"Negotiate abc==, Bearer realm="https://x/\"t\"", service=svc"#)
            .unwrap();
        assert!(matches!(c, Challenge::Bearer { ref realm, ref service, .. }
            if realm == "https://x/\"t\"" && service.as_deref() == Some("svc")));
        assert_eq!(parse_challenge("Bearer service=\"x\""), None, "no realm");
        assert_eq!(parse_challenge(""), None);
        assert_eq!(parse_challenge("Digest realm=\"x\""), None);
        assert_eq!(parse_challenge("Bearer realm=\"unterminated"), None);
    }

    #[test]
    fn scope_keys_do_not_depend_on_order() {
        let a = [Scope::push("x"), Scope::pull("y")];
        let b = [Scope::pull("y"), Scope::push("x")];
        assert_eq!(scope_key(&a), scope_key(&b));
        assert_eq!(scope_key(&a), "repository:x:pull,push repository:y:pull");
    }
}
