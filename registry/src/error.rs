//! What can go wrong talking to a registry, each failure knowing its class.
//!
//! No variant carries a secret: messages name the registry, the user name and where the
//! credentials came from, never the password or a token. Text a registry or token server sent
//! is scrubbed of every known secret ([`crate::secret::Scrubber`]) and cut short before it gets
//! here.

use std::io;
use std::path::PathBuf;
use std::time::Duration;

use asp_format::Digest;
use asp_format::error::{Classify, ErrorClass, io_class};

use crate::reference::ReferenceError;

/// Errors of pushes and pulls.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Reference(#[from] ReferenceError),

    /// The request itself is wrong (options that contradict each other, a manifest that is
    /// not in the layout).
    #[error("{0}")]
    Usage(String),

    /// A directory named as a layout (to push from, or to pull into) that exists and is not
    /// one: refused before anything is read or written. The same class (exit 1) as a `--repo`
    /// that is not a repository or a `--home` without the harness's store: what is there is
    /// the wrong kind of thing, not a wrong way of asking.
    #[error("{0}")]
    NotALayout(String),

    /// Something answered where the registry should be, and it is not an OCI registry: `GET
    /// /v2/` (where every registry answers, `200` or `401`, with a
    /// `Docker-Distribution-API-Version` header) answered otherwise, without that header.
    #[error(
        "{registry} is not an OCI registry: {url} answered {status}{said}, without the \
         Docker-Distribution-API-Version header every registry sends (is the host or port \
         wrong?){tried}"
    )]
    NotARegistry {
        registry: String,
        url: String,
        /// The status and its reason (`404 Not Found`).
        status: String,
        /// Empty, or what tells what answered: ` (a text/html page, from SimpleHTTP/0.6)`,
        /// `: ` and what it said.
        said: String,
        /// Empty, or what was tried before it (`; tried first: https://…/v2/, …`).
        tried: String,
    },

    /// The registry cannot be reached at all (refused, unknown host, TLS failure, timeout).
    #[error("cannot reach {registry}: {detail}")]
    Unreachable { registry: String, detail: String },

    /// The registry accepted the connection and did not answer its first request in time.
    #[error(
        "the registry at {registry} accepted the connection but did not answer within \
         {waited} s (tried {tried})"
    )]
    NoAnswer {
        registry: String,
        /// Seconds, as a message says them.
        waited: String,
        /// The URLs asked, in order.
        tried: String,
    },

    /// The connection broke off in the middle of a request.
    #[error("talking to {registry} failed during {what}: {detail}")]
    Transport {
        registry: String,
        what: String,
        detail: String,
    },

    /// The registry wants credentials and none were found.
    #[error(
        "{registry} asks for credentials to {action} {repository}: run `docker login {registry}`, \
         or pass --username with --password-stdin, or set ASP_REGISTRY_USERNAME and \
         ASP_REGISTRY_PASSWORD"
    )]
    AuthRequired {
        registry: String,
        repository: String,
        action: String,
    },

    /// The credentials were refused.
    #[error("{registry} refused the credentials of user {username:?} (from {origin}){detail}")]
    AuthFailed {
        registry: String,
        username: String,
        origin: String,
        /// Empty, or `: ` and what the server said (scrubbed).
        detail: String,
    },

    /// Authenticated, but not allowed to do this.
    #[error("{registry} does not let {who} {action} {repository}")]
    Denied {
        registry: String,
        who: String,
        action: String,
        repository: String,
    },

    /// The manifest is not an asp state artifact (a container image, another artifact).
    #[error("not an asp state artifact: {reference} is {what}")]
    NotOurs { reference: String, what: String },

    #[error("{reference}: {what} is not in the registry")]
    NotFound { reference: String, what: String },

    /// Data does not match what was promised: a digest or size mismatch, a manifest over the
    /// size limit or with impossible descriptors, a damaged local layout.
    #[error("integrity failure: {0}")]
    Integrity(String),

    /// A blob of what is being pushed does not match its digest or size (or is missing): found
    /// before the upload of it was completed, so the registry never got it whole, and the
    /// manifest naming it was not sent.
    #[error(
        "integrity failure: {detail}; the push stopped before that blob was sent whole, and \
         sent no manifest{}",
        remedy.as_deref().map(|r| format!(": {r}")).unwrap_or_default()
    )]
    LocalBlob {
        digest: Digest,
        /// What is wrong, naming the file where the source knows it.
        detail: String,
        /// What to run to mend it, when the caller knows (`asp check --read-data --repair`).
        remedy: Option<String>,
    },

    /// The registry answered something this client cannot go on from.
    #[error("{registry} answered {status} to {request}: {detail}")]
    Registry {
        registry: String,
        request: String,
        status: u16,
        detail: String,
    },

    /// Finding credentials failed (a credential helper that failed, an unreadable
    /// `config.json`).
    #[error("credentials for {registry}: {detail}")]
    Credentials { registry: String, detail: String },

    /// Reading local data (a layout, a config file) failed.
    #[error("reading {}: {source}", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// Writing local data failed.
    #[error("writing {}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl Classify for Error {
    fn class(&self) -> ErrorClass {
        match self {
            Error::Reference(_) | Error::Usage(_) => ErrorClass::Usage,
            Error::Integrity(_) | Error::LocalBlob { .. } => ErrorClass::Integrity,
            Error::Read { source, .. } => io_class(source, ErrorClass::Source),
            Error::Write { source, .. } => io_class(source, ErrorClass::Store),
            Error::NotALayout(_)
            | Error::Unreachable { .. }
            | Error::NotARegistry { .. }
            | Error::NoAnswer { .. }
            | Error::Transport { .. }
            | Error::AuthRequired { .. }
            | Error::AuthFailed { .. }
            | Error::Denied { .. }
            | Error::NotOurs { .. }
            | Error::NotFound { .. }
            | Error::Registry { .. }
            | Error::Credentials { .. } => ErrorClass::Source,
        }
    }
}

impl Error {
    pub(crate) fn read(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Read {
            path: path.into(),
            source,
        }
    }

    pub(crate) fn write(path: impl Into<PathBuf>, source: io::Error) -> Self {
        Error::Write {
            path: path.into(),
            source,
        }
    }
}

/// Keeps a server-provided text short enough for one line of an error message.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    let t = text.trim();
    let t: String = t
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if t.chars().count() <= max {
        t
    } else {
        let cut: String = t.chars().take(max).collect();
        format!("{cut}…")
    }
}

/// A duration as a message says it in seconds: `30`, `1.5`, `0.25` (to the millisecond).
pub fn seconds(d: Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}", ms / 1000)
    } else {
        format!("{}.{:03}", ms / 1000, ms % 1000)
            .trim_end_matches('0')
            .to_owned()
    }
}
