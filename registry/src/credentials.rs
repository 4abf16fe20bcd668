//! Where credentials for a registry come from, in this order (the first that has any wins):
//!
//! 1. `--username` with `--password-stdin` (given to [`Lookup::new`] by the caller);
//! 2. `ASP_REGISTRY_USERNAME` and `ASP_REGISTRY_PASSWORD` (both, or it is a usage error);
//! 3. docker's `config.json` (`$DOCKER_CONFIG/config.json`, else `~/.docker/config.json`):
//!    a. `credHelpers[<registry>]`: run `docker-credential-<helper> get`;
//!    b. `credsStore`: the same with the default helper;
//!    c. `auths[<registry>]`: `auth` (base64 of `user:password`), or `username`/`password`,
//!    and `identitytoken` (an OAuth2 refresh token for the token flow).
//!
//! A helper that is not installed or has nothing for the registry falls through to `auths`,
//! with a note saying so. Keys of `auths` match when equal to the registry or when their host
//! is (`https://registry.example/v1/` matches `registry.example`); Docker Hub is looked up
//! under `https://index.docker.io/v1/` as `docker login` stores it.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::Deserialize;

use crate::error::{Error, shorten};
use crate::reference::{DOCKER_HUB, DOCKER_HUB_AUTH_KEY};
use crate::secret::Secret;

/// The environment variables read for credentials.
pub const ENV_USERNAME: &str = "ASP_REGISTRY_USERNAME";
pub const ENV_PASSWORD: &str = "ASP_REGISTRY_PASSWORD";

/// What the secret is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretKind {
    /// A password (or a personal access token used as one): basic auth, or the token flow's
    /// GET with basic auth.
    Password,
    /// An identity token from `docker login` against an OAuth2 token server: the token flow's
    /// POST with `grant_type=refresh_token`.
    IdentityToken,
}

/// A user name and secret, and where they came from (for messages).
#[derive(Debug, Clone)]
pub struct Credentials {
    pub username: String,
    pub secret: Secret,
    pub kind: SecretKind,
    /// Where they were found: `--password-stdin`, `ASP_REGISTRY_PASSWORD`, a config file's
    /// path, `docker-credential-<helper>`.
    pub origin: String,
}

/// The result of a lookup: credentials if any, and notes worth telling the user (a helper that
/// is not installed, for instance).
#[derive(Debug, Default)]
pub struct Found {
    pub credentials: Option<Credentials>,
    pub notes: Vec<String>,
}

/// Where to look for credentials.
#[derive(Debug, Clone, Default)]
pub struct Lookup {
    explicit: Option<(String, Secret)>,
    env: Option<(String, Secret)>,
    docker_config_dir: Option<PathBuf>,
    /// `PATH` for credential helpers; `None` inherits the process's.
    helper_path: Option<OsString>,
}

impl Lookup {
    /// Reads the environment now: `ASP_REGISTRY_USERNAME`/`ASP_REGISTRY_PASSWORD`,
    /// `DOCKER_CONFIG`, `HOME`. `explicit` is `--username` with the password read from stdin.
    pub fn new(explicit: Option<(String, Secret)>) -> Result<Self, Error> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let env = match (var(ENV_USERNAME), var(ENV_PASSWORD)) {
            (Some(u), Some(p)) => Some((u, Secret::new(p))),
            (None, None) => None,
            (Some(_), None) => {
                return Err(Error::Usage(format!(
                    "{ENV_USERNAME} is set but {ENV_PASSWORD} is not"
                )));
            }
            (None, Some(_)) => {
                return Err(Error::Usage(format!(
                    "{ENV_PASSWORD} is set but {ENV_USERNAME} is not"
                )));
            }
        };
        let docker_config_dir = var("DOCKER_CONFIG")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|h| Path::new(&h).join(".docker")));
        Ok(Lookup {
            explicit,
            env,
            docker_config_dir,
            helper_path: None,
        })
    }

    /// A lookup that reads nothing from the environment: only what is set on it.
    pub fn none() -> Self {
        Lookup::default()
    }

    pub fn with_explicit(mut self, username: impl Into<String>, secret: Secret) -> Self {
        self.explicit = Some((username.into(), secret));
        self
    }

    /// Looks in `dir/config.json` for docker's configuration.
    pub fn with_docker_config_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.docker_config_dir = Some(dir.into());
        self
    }

    /// Runs credential helpers with this `PATH`.
    pub fn with_helper_path(mut self, path: impl Into<OsString>) -> Self {
        self.helper_path = Some(path.into());
        self
    }

    /// Finds credentials for `registry` (as in a reference: `host[:port]` or `docker.io`).
    pub fn find(&self, registry: &str) -> Result<Found, Error> {
        let mut found = Found::default();
        if let Some((u, s)) = &self.explicit {
            found.credentials = Some(Credentials {
                username: u.clone(),
                secret: s.clone(),
                kind: SecretKind::Password,
                origin: "--password-stdin".to_owned(),
            });
            return Ok(found);
        }
        if let Some((u, s)) = &self.env {
            found.credentials = Some(Credentials {
                username: u.clone(),
                secret: s.clone(),
                kind: SecretKind::Password,
                origin: ENV_PASSWORD.to_owned(),
            });
            return Ok(found);
        }
        let Some(dir) = &self.docker_config_dir else {
            return Ok(found);
        };
        let path = dir.join("config.json");
        let text = match std::fs::read(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(found),
            Err(e) => return Err(Error::read(&path, e)),
        };
        let config: DockerConfig =
            serde_json::from_slice(&text).map_err(|e| Error::Credentials {
                registry: registry.to_owned(),
                detail: format!("{} is not valid JSON: {e}", path.display()),
            })?;
        let helper = config
            .cred_helpers
            .get(registry)
            .or_else(|| {
                (registry == DOCKER_HUB)
                    .then(|| config.cred_helpers.get(DOCKER_HUB_AUTH_KEY))
                    .flatten()
            })
            .or(config.creds_store.as_ref())
            .filter(|h| !h.is_empty());
        if let Some(helper) = helper {
            match self.run_helper(helper, registry)? {
                HelperAnswer::Found(c) => {
                    found.credentials = Some(c);
                    return Ok(found);
                }
                HelperAnswer::NotFound => {}
                HelperAnswer::NotInstalled => found.notes.push(format!(
                    "credential helper docker-credential-{helper} (named in {}) is not \
                     installed; looking in its \"auths\" instead",
                    path.display()
                )),
            }
        }
        if let Some(entry) = auth_entry(&config.auths, registry) {
            found.credentials = entry.credentials(&path, registry)?;
        }
        Ok(found)
    }

    fn run_helper(&self, helper: &str, registry: &str) -> Result<HelperAnswer, Error> {
        let fail = |detail: String| Error::Credentials {
            registry: registry.to_owned(),
            detail,
        };
        if helper.is_empty()
            || !helper
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        {
            return Err(fail(format!(
                "credential helper name {helper:?} is not valid"
            )));
        }
        let program = format!("docker-credential-{helper}");
        let mut cmd = Command::new(&program);
        cmd.arg("get")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(p) = &self.helper_path {
            cmd.env("PATH", p);
        }
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(HelperAnswer::NotInstalled);
            }
            Err(e) => return Err(fail(format!("cannot run {program}: {e}"))),
        };
        let server = if registry == DOCKER_HUB {
            DOCKER_HUB_AUTH_KEY
        } else {
            registry
        };
        if let Some(mut stdin) = child.stdin.take() {
            // A helper that exits without reading is judged by its exit status below.
            let _ = stdin.write_all(server.as_bytes());
        }
        let out = child
            .wait_with_output()
            .map_err(|e| fail(format!("{program} failed: {e}")))?;
        if !out.status.success() {
            let said = String::from_utf8_lossy(&out.stdout);
            if said.contains("credentials not found") {
                return Ok(HelperAnswer::NotFound);
            }
            // What a helper prints on failure is its own message, never the secret it did
            // not return; still cut it short.
            let err = String::from_utf8_lossy(&out.stderr);
            let text = if said.trim().is_empty() { err } else { said };
            return Err(fail(format!(
                "{program} get failed ({}): {}",
                out.status,
                shorten(&text, 200)
            )));
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "PascalCase")]
        struct Answer {
            #[serde(default)]
            username: String,
            #[serde(default)]
            secret: String,
        }
        let a: Answer = serde_json::from_slice(&out.stdout)
            .map_err(|_| fail(format!("{program} get did not answer with JSON")))?;
        if a.secret.is_empty() {
            return Ok(HelperAnswer::NotFound);
        }
        let (username, kind) = if a.username == "<token>" {
            (String::new(), SecretKind::IdentityToken)
        } else {
            (a.username, SecretKind::Password)
        };
        Ok(HelperAnswer::Found(Credentials {
            username,
            secret: Secret::new(a.secret),
            kind,
            origin: program,
        }))
    }
}

enum HelperAnswer {
    Found(Credentials),
    NotFound,
    NotInstalled,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct DockerConfig {
    #[serde(default)]
    auths: BTreeMap<String, AuthEntry>,
    #[serde(default)]
    creds_store: Option<String>,
    #[serde(default)]
    cred_helpers: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
}

impl AuthEntry {
    fn credentials(&self, path: &Path, registry: &str) -> Result<Option<Credentials>, Error> {
        let origin = path.display().to_string();
        let (mut username, mut password) = (self.username.clone(), self.password.clone());
        if let Some(auth) = self.auth.as_deref().filter(|a| !a.is_empty()) {
            let bad = || Error::Credentials {
                registry: registry.to_owned(),
                detail: format!(
                    "the \"auth\" of {registry} in {origin} is not base64 of user:password"
                ),
            };
            let decoded = STANDARD.decode(auth.trim()).map_err(|_| bad())?;
            let text = String::from_utf8(decoded).map_err(|_| bad())?;
            let (u, p) = text.split_once(':').ok_or_else(bad)?;
            username = Some(u.to_owned());
            password = Some(p.to_owned());
        }
        if let Some(token) = self.identitytoken.as_deref().filter(|t| !t.is_empty()) {
            return Ok(Some(Credentials {
                username: username.unwrap_or_default(),
                secret: Secret::new(token),
                kind: SecretKind::IdentityToken,
                origin,
            }));
        }
        Ok(match (username, password) {
            (Some(u), Some(p)) if !p.is_empty() => Some(Credentials {
                username: u,
                secret: Secret::new(p),
                kind: SecretKind::Password,
                origin,
            }),
            _ => None,
        })
    }
}

/// The host of an `auths` key: `https://host:5000/v1/` → `host:5000`.
fn key_host(key: &str) -> &str {
    let k = key
        .strip_prefix("https://")
        .or_else(|| key.strip_prefix("http://"))
        .unwrap_or(key);
    k.split('/').next().unwrap_or(k)
}

fn auth_entry<'a>(auths: &'a BTreeMap<String, AuthEntry>, registry: &str) -> Option<&'a AuthEntry> {
    let wanted: Vec<&str> = if registry == DOCKER_HUB {
        vec![
            DOCKER_HUB_AUTH_KEY,
            "index.docker.io",
            "docker.io",
            "registry-1.docker.io",
        ]
    } else {
        vec![registry]
    };
    for w in &wanted {
        if let Some(e) = auths.get(*w) {
            return Some(e);
        }
    }
    auths
        .iter()
        .find(|(k, _)| wanted.iter().any(|w| key_host(k) == key_host(w)))
        .map(|(_, e)| e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write_config(dir: &Path, json: &str) {
        std::fs::write(dir.join("config.json"), json).unwrap();
    }

    #[test]
    fn auths_by_host_with_auth_and_identity_token() {
        let dir = tempfile::tempdir().unwrap();
        let auth = STANDARD.encode("alice:s3cret:with:colons");
        write_config(
            dir.path(),
            &format!(
                r#"{{"auths": {{"https://reg.example:5000/v1/": {{"auth": "{auth}"}},
                    "tok.example": {{"auth": "{}", "identitytoken": "refresh-me"}},
                    "https://index.docker.io/v1/": {{"username": "hub", "password": "hubpw"}}}}}}"#,
                STANDARD.encode("bob:")
            ),
        );
        let l = Lookup::none().with_docker_config_dir(dir.path());
        let c = l.find("reg.example:5000").unwrap().credentials.unwrap();
        assert_eq!(
            (c.username.as_str(), c.secret.expose(), c.kind),
            ("alice", "s3cret:with:colons", SecretKind::Password)
        );
        let c = l.find("tok.example").unwrap().credentials.unwrap();
        assert_eq!(
            (c.username.as_str(), c.secret.expose(), c.kind),
            ("bob", "refresh-me", SecretKind::IdentityToken)
        );
        let c = l.find("docker.io").unwrap().credentials.unwrap();
        assert_eq!(c.username, "hub");
        assert!(l.find("other.example").unwrap().credentials.is_none());
    }

    #[test]
    fn explicit_wins_and_no_config_means_none() {
        let dir = tempfile::tempdir().unwrap();
        let l = Lookup::none().with_docker_config_dir(dir.path());
        assert!(l.find("r.example").unwrap().credentials.is_none());
        let l = l.with_explicit("me", Secret::new("pw"));
        let c = l.find("r.example").unwrap().credentials.unwrap();
        assert_eq!(c.origin, "--password-stdin");
    }

    #[test]
    fn a_bad_auth_field_is_an_error_that_does_not_echo_it() {
        let dir = tempfile::tempdir().unwrap();
        write_config(
            dir.path(),
            r#"{"auths": {"r.example": {"auth": "bm9jb2xvbg=="}}}"#,
        );
        let e = Lookup::none()
            .with_docker_config_dir(dir.path())
            .find("r.example")
            .unwrap_err();
        assert!(!e.to_string().contains("bm9jb2xvbg"), "{e}");
        assert!(!e.to_string().contains("nocolon"), "{e}");
    }

    #[cfg(unix)]
    #[test]
    fn credential_helpers_are_run_with_the_protocol() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        // Answers for r.example only, as docker-credential-* helpers do.
        let script = r#"#!/bin/sh
[ "$1" = get ] || exit 2
read server
case "$server" in
  r.example) echo '{"ServerURL":"r.example","Username":"carol","Secret":"helper-pw"}' ;;
  tok.example) echo '{"ServerURL":"tok.example","Username":"<token>","Secret":"idtok"}' ;;
  *) echo "credentials not found in native keychain"; exit 1 ;;
esac
"#;
        let h = bin.join("docker-credential-asptest");
        std::fs::write(&h, script).unwrap();
        std::fs::set_permissions(&h, std::fs::Permissions::from_mode(0o755)).unwrap();
        write_config(
            dir.path(),
            &format!(
                r#"{{"credsStore": "asptest", "credHelpers": {{"missing.example": "absent"}},
                    "auths": {{"fallback.example": {{"auth": "{}"}},
                               "missing.example": {{"auth": "{}"}}}}}}"#,
                STANDARD.encode("dave:file-pw"),
                STANDARD.encode("erin:file-pw2")
            ),
        );
        let l = Lookup::none()
            .with_docker_config_dir(dir.path())
            .with_helper_path(&bin);
        let c = l.find("r.example").unwrap().credentials.unwrap();
        assert_eq!(
            (c.username.as_str(), c.secret.expose()),
            ("carol", "helper-pw")
        );
        assert_eq!(c.origin, "docker-credential-asptest");
        let c = l.find("tok.example").unwrap().credentials.unwrap();
        assert_eq!(c.kind, SecretKind::IdentityToken);
        // The store has nothing: the file's entry is used.
        let c = l.find("fallback.example").unwrap().credentials.unwrap();
        assert_eq!(c.username, "dave");
        // A per-registry helper that is not installed: noted, then the file's entry.
        let f = l.find("missing.example").unwrap();
        assert_eq!(f.credentials.unwrap().username, "erin");
        assert!(
            f.notes[0].contains("docker-credential-absent"),
            "{:?}",
            f.notes
        );
        assert!(l.find("none.example").unwrap().credentials.is_none());
    }
}
