//! Image references: `[host[:port]/]name[:tag][@sha256:<hex>]`, parsed by docker's grammar.
//!
//! What docker calls a host: the part before the first `/` when it contains a `.` or a `:`, is
//! `localhost`, or has an uppercase letter; otherwise the whole reference is a name on Docker
//! Hub (`docker.io`, with `library/` before one-component names). A reference without tag or
//! digest means the tag `latest`. A name is lowercase components of `[a-z0-9]` joined by `.`,
//! `_`, `__` or dashes, separated by `/`, at most 255 characters with its host. A tag is
//! `[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}`. When both a tag and a digest are given the digest
//! decides what is fetched, and the tag is kept only for display (as docker does).

use std::fmt;
use std::net::{IpAddr, Ipv6Addr};
use std::str::FromStr;

use asp_format::Digest;

/// Docker Hub's name in references and in `~/.docker/config.json`.
pub const DOCKER_HUB: &str = "docker.io";
/// The host Docker Hub's registry API answers on.
pub const DOCKER_HUB_API: &str = "registry-1.docker.io";
/// The key Docker Hub credentials are stored under by `docker login`.
pub const DOCKER_HUB_AUTH_KEY: &str = "https://index.docker.io/v1/";

const MAX_NAME: usize = 255;
const MAX_TAG: usize = 128;

/// A parsed, normalised reference.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Reference {
    registry: String,
    repository: String,
    tag: Option<String>,
    digest: Option<Digest>,
}

/// Why a reference was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid reference {input:?}: {reason}")]
pub struct ReferenceError {
    pub input: String,
    pub reason: String,
}

fn err(input: &str, reason: impl Into<String>) -> ReferenceError {
    ReferenceError {
        input: input.to_owned(),
        reason: reason.into(),
    }
}

impl Reference {
    /// Parses `s` by docker's rules (see the module docs).
    pub fn parse(s: &str) -> Result<Self, ReferenceError> {
        if s.is_empty() {
            return Err(err(s, "it is empty"));
        }
        if s.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(err(s, "it contains whitespace or control characters"));
        }
        // A URL pasted from a browser or a registry's page: say what to give instead.
        if let Some((scheme, rest)) = s.split_once("://") {
            return Err(err(
                s,
                format!(
                    "a reference has no scheme: give {rest:?} ({scheme}:// is not written; HTTPS \
                     is used, and plain HTTP for a registry on this machine or with --insecure)"
                ),
            ));
        }
        let (rest, digest) = match s.rsplit_once('@') {
            Some((r, d)) => {
                let digest = Digest::from_str(d).map_err(|e| err(s, e.to_string()))?;
                (r, Some(digest))
            }
            None => (s, None),
        };
        // A tag is after the last ':' that follows the last '/' (so `host:5000/name` has none).
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (name, tag) = match rest[last_slash..].rfind(':') {
            Some(i) => {
                let at = last_slash + i;
                (&rest[..at], Some(rest[at + 1..].to_owned()))
            }
            None => (rest, None),
        };
        if let Some(t) = &tag {
            check_tag(t).map_err(|r| err(s, r))?;
        }
        let (registry, repository) = split_registry(name);
        check_host(&registry).map_err(|r| err(s, r))?;
        check_repository(&repository).map_err(|r| err(s, r))?;
        if registry.len() + 1 + repository.len() > MAX_NAME {
            return Err(err(
                s,
                format!("the name is longer than {MAX_NAME} characters"),
            ));
        }
        let tag = match (&tag, &digest) {
            (None, None) => Some("latest".to_owned()),
            _ => tag,
        };
        Ok(Reference {
            registry,
            repository,
            tag,
            digest,
        })
    }

    /// The registry as written in references and credential stores: `host[:port]`, or
    /// `docker.io`.
    pub fn registry(&self) -> &str {
        &self.registry
    }

    /// The host (and port) the registry's API is reached at.
    pub fn api_host(&self) -> &str {
        if self.registry == DOCKER_HUB {
            DOCKER_HUB_API
        } else {
            &self.registry
        }
    }

    /// The repository (name) inside the registry, such as `team/agent-state`.
    pub fn repository(&self) -> &str {
        &self.repository
    }

    pub fn tag(&self) -> Option<&str> {
        self.tag.as_deref()
    }

    pub fn digest(&self) -> Option<&Digest> {
        self.digest.as_ref()
    }

    /// What goes after `/manifests/` in the API: the digest when given, else the tag.
    pub fn target(&self) -> String {
        match (&self.digest, &self.tag) {
            (Some(d), _) => d.to_string(),
            (None, Some(t)) => t.clone(),
            (None, None) => "latest".to_owned(),
        }
    }

    /// The same repository at `digest` (and no tag).
    pub fn with_digest(&self, digest: Digest) -> Reference {
        Reference {
            registry: self.registry.clone(),
            repository: self.repository.clone(),
            tag: None,
            digest: Some(digest),
        }
    }

    /// Whether the registry is on this machine (`localhost`, `127.0.0.0/8`, `::1`): plain HTTP
    /// is allowed there without `--insecure`, as docker allows it.
    pub fn is_loopback(&self) -> bool {
        host_is_loopback(host_of(self.api_host()))
    }
}

impl FromStr for Reference {
    type Err = ReferenceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Reference::parse(s)
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.registry, self.repository)?;
        if let Some(t) = &self.tag {
            write!(f, ":{t}")?;
        }
        if let Some(d) = &self.digest {
            write!(f, "@{d}")?;
        }
        Ok(())
    }
}

/// Docker's `splitDockerDomain`.
fn split_registry(name: &str) -> (String, String) {
    let (registry, remainder) = match name.split_once('/') {
        Some((first, rest))
            if first.contains(['.', ':'])
                || first == "localhost"
                || first.chars().any(|c| c.is_ascii_uppercase()) =>
        {
            (first.to_owned(), rest.to_owned())
        }
        _ => (DOCKER_HUB.to_owned(), name.to_owned()),
    };
    let registry = if registry == "index.docker.io" {
        DOCKER_HUB.to_owned()
    } else {
        registry
    };
    let remainder = if registry == DOCKER_HUB && !remainder.contains('/') {
        format!("library/{remainder}")
    } else {
        remainder
    };
    (registry, remainder)
}

fn check_tag(t: &str) -> Result<(), String> {
    let ok = !t.is_empty()
        && t.len() <= MAX_TAG
        && t.bytes().enumerate().all(|(i, b)| {
            b.is_ascii_alphanumeric() || b == b'_' || (i > 0 && matches!(b, b'.' | b'-'))
        });
    if ok {
        Ok(())
    } else {
        Err(format!(
            "tag {t:?} is not 1-{MAX_TAG} of [A-Za-z0-9_.-] starting with a letter, digit or _"
        ))
    }
}

fn check_repository(r: &str) -> Result<(), String> {
    if r.is_empty() {
        return Err("the name is empty".to_owned());
    }
    for c in r.split('/') {
        if !path_component_ok(c) {
            return Err(format!(
                "name component {c:?} must be lowercase letters and digits, joined by \
                 '.', '_', '__' or dashes"
            ));
        }
    }
    Ok(())
}

/// `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
fn path_component_ok(c: &str) -> bool {
    let b = c.as_bytes();
    let alnum = |x: u8| x.is_ascii_lowercase() || x.is_ascii_digit();
    if b.is_empty() || !alnum(b[0]) || !alnum(b[b.len() - 1]) {
        return false;
    }
    let mut i = 0;
    while i < b.len() {
        if alnum(b[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && !alnum(b[i]) {
            i += 1;
        }
        let sep = &c[start..i];
        let ok = sep == "." || sep == "_" || sep == "__" || sep.bytes().all(|x| x == b'-');
        if !ok {
            return false;
        }
    }
    true
}

/// `host[:port]` where host is a domain name, an IPv4 address or `[IPv6]`.
fn check_host(h: &str) -> Result<(), String> {
    let bad = || format!("registry {h:?} is not host[:port]");
    let (host, port) = if let Some(rest) = h.strip_prefix('[') {
        let (v6, after) = rest.split_once(']').ok_or_else(bad)?;
        v6.parse::<Ipv6Addr>().map_err(|_| bad())?;
        match after {
            "" => (h, None),
            p => (h, Some(p.strip_prefix(':').ok_or_else(bad)?)),
        }
    } else {
        match h.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (h, None),
        }
    };
    if let Some(p) = port
        && (p.is_empty()
            || !p.bytes().all(|b| b.is_ascii_digit())
            || p.parse::<u16>().map_or(true, |n| n == 0))
    {
        return Err(bad());
    }
    if host.starts_with('[') {
        return Ok(());
    }
    let component_ok = |c: &str| {
        let b = c.as_bytes();
        !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b[b.len() - 1].is_ascii_alphanumeric()
            && b.iter().all(|x| x.is_ascii_alphanumeric() || *x == b'-')
    };
    if host.split('.').all(component_ok) {
        Ok(())
    } else {
        Err(bad())
    }
}

/// The host part of `host[:port]` (brackets kept off an IPv6 address).
pub(crate) fn host_of(h: &str) -> &str {
    if let Some(rest) = h.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match h.rsplit_once(':') {
        Some((host, _)) => host,
        None => h,
    }
}

/// `localhost`, `127.0.0.0/8` or `::1`.
pub(crate) fn host_is_loopback(host: &str) -> bool {
    if host.eq_ignore_ascii_case("localhost") {
        return true;
    }
    host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Reference {
        Reference::parse(s).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn hosts_follow_dockers_rules() {
        let r = p("localhost:5000/team/state:v1");
        assert_eq!(
            (r.registry(), r.repository(), r.tag()),
            ("localhost:5000", "team/state", Some("v1"))
        );
        assert!(r.is_loopback());
        let r = p("ghcr.io/me/agent");
        assert_eq!((r.registry(), r.tag()), ("ghcr.io", Some("latest")));
        assert!(!r.is_loopback());
        // No dot, colon or localhost: a Docker Hub name.
        let r = p("me/agent");
        assert_eq!((r.registry(), r.repository()), ("docker.io", "me/agent"));
        assert_eq!(r.api_host(), DOCKER_HUB_API);
        let r = p("agent");
        assert_eq!(r.repository(), "library/agent");
        assert_eq!(p("index.docker.io/me/a").registry(), "docker.io");
        assert_eq!(p("localhost/a").registry(), "localhost");
        assert_eq!(p("Example/a").registry(), "Example");
        let r = p(
            "127.0.0.1:5000/a@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
        );
        assert!(r.is_loopback());
        assert_eq!(r.tag(), None);
        assert!(r.target().starts_with("sha256:"));
        let r = p("[::1]:5000/a:t");
        assert_eq!((r.registry(), r.tag()), ("[::1]:5000", Some("t")));
        assert!(r.is_loopback());
        assert_eq!(p("127.0.0.1:5000/a").to_string(), "127.0.0.1:5000/a:latest");
    }

    #[test]
    fn tag_and_digest_together_keep_both() {
        let r =
            p("h.io/a:v1@sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
        assert_eq!(r.tag(), Some("v1"));
        assert!(r.target().starts_with("sha256:"));
    }

    #[test]
    fn bad_references_are_refused() {
        for bad in [
            "",
            "h.io/",
            "h.io/A",
            "h.io/a:",
            "h.io/a:-x",
            "h.io/a b",
            "h.io/a--",
            "h.io/a..b",
            "h.io/a___b",
            "h.io:0/a",
            "h.io:99999/a",
            "h.io:x/a",
            "-h.io/a",
            "[::1/a",
            "h.io/a@sha256:abc",
            "h.io/a@md5:abc",
            "h.io//a",
        ] {
            assert!(Reference::parse(bad).is_err(), "{bad:?} was accepted");
        }
        let long = format!("h.io/{}", "a".repeat(260));
        assert!(Reference::parse(&long).is_err());
        let long_tag = format!("h.io/a:{}", "t".repeat(129));
        assert!(Reference::parse(&long_tag).is_err());
        // A URL is refused with the reference it meant.
        let e = Reference::parse("http://127.0.0.1:5055/me/state:t")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("a reference has no scheme: give \"127.0.0.1:5055/me/state:t\""),
            "{e}"
        );
    }

    #[test]
    fn separators_in_names() {
        for ok in ["a.b", "a_b", "a__b", "a-b", "a---b", "a/b/c", "a0.b1-c2"] {
            assert!(path_component_ok(ok) || ok.contains('/'), "{ok}");
            assert!(Reference::parse(&format!("h.io/{ok}")).is_ok(), "{ok}");
        }
    }
}
