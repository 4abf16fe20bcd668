//! The errors that stop a conversion, each knowing its own [`ErrorClass`].
//!
//! Damage that costs only one item (a line that is not JSON, a file that cannot be read) is a
//! [`crate::kit::report::Diagnostic`] instead, and the conversion goes on.

use std::io;
use std::path::PathBuf;

use asp_format::blob::BlobError;
use asp_format::error::{Classify, ErrorClass, io_class};

/// Errors that stop a conversion.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("no home directory: set HOME or pass --home")]
    NoHome,
    /// A `--home` to write into that is not a directory: a typo must not make a new tree
    /// the person then takes for the home they restored into.
    #[error(
        "the home {} {} (create it first to write into a new home)",
        .0.display(),
        if .0.exists() { "is not a directory" } else { "does not exist" }
    )]
    NoSuchHome(PathBuf),
    /// A harness store that is not there: the home does not exist, or holds no store of the
    /// harness. `looked_for` names what was looked for, for the person who typed the path.
    #[error("{}", no_store_message(.harness, .home, .looked_for))]
    NoStore {
        harness: String,
        home: PathBuf,
        looked_for: Vec<PathBuf>,
    },
    /// Reading a file or folder of the source failed.
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// Writing into the destination failed.
    #[error("{}: {source}", .path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A file of the source that cannot be used as it is.
    #[error("{}: {message}", .path.display())]
    Invalid { path: PathBuf, message: String },
    #[error(transparent)]
    Blob(#[from] BlobError),
    /// A body carried in the state that cannot be read (a stream line cut off, a note that is
    /// not text).
    #[error("{what}: {source}")]
    Carried {
        what: String,
        #[source]
        source: io::Error,
    },
    /// A write that went wrong part way and says what it left.
    #[error("{0}")]
    Partial(String),
    /// A write into a store that stopped at `error`, after it had changed the files of
    /// `done` (each whole: every write is atomic). Said, so the person knows what is there now
    /// (the sessions written before the error, which a second run finds already there).
    #[error("{error}{}", done_before(.done))]
    Stopped {
        error: Box<ConvertError>,
        done: Vec<crate::kit::fsops::Change>,
    },
    /// The request cannot be done as asked (a session id the store does not have).
    #[error("{0}")]
    Usage(String),
    /// A write aimed outside the store (a hostile or broken bundle's name); nothing was
    /// written there.
    #[error("{}: refused: this path leads outside {}", .path.display(), roots_list(.roots))]
    Outside { path: PathBuf, roots: Vec<PathBuf> },
}

/// How many of the changes before an error [`ConvertError::Stopped`] names.
const DONE_NAMED: usize = 10;

fn done_before(done: &[crate::kit::fsops::Change]) -> String {
    use crate::kit::fsops::Change;
    if done.is_empty() {
        return String::new();
    }
    let named: Vec<String> = done
        .iter()
        .take(DONE_NAMED)
        .map(|c| match c {
            Change::Create(p) => format!("created {}", p.display()),
            Change::Replace(p) => format!("replaced {}", p.display()),
            Change::Append(p) => format!("appended to {}", p.display()),
            Change::Remove(p) => format!("removed {}", p.display()),
            Change::Database(p) => format!("committed to {}", p.display()),
        })
        .collect();
    let more = match done.len().saturating_sub(DONE_NAMED) {
        0 => String::new(),
        n => format!(", and {n} more"),
    };
    format!(
        "; before it stopped it wrote, each in full: {}{more}",
        named.join(", ")
    )
}

fn roots_list(roots: &[PathBuf]) -> String {
    roots
        .iter()
        .map(|r| r.display().to_string())
        .collect::<Vec<_>>()
        .join(" and ")
}

fn no_store_message(harness: &str, home: &std::path::Path, looked_for: &[PathBuf]) -> String {
    let what: Vec<String> = looked_for.iter().map(|p| p.display().to_string()).collect();
    if !home.exists() {
        format!(
            "the home {} does not exist (looked for the {harness} store in {})",
            home.display(),
            what.join(", ")
        )
    } else if let Some(var) = set_by_environment(looked_for) {
        // The home was not named: the harness's own variable put the store elsewhere, and
        // that is what to check (it said "check --home": new-user trial helper-137, 5).
        format!(
            "no {harness} store at {} (where {var} points); check {var}, or give --home",
            what.join(", ")
        )
    } else {
        format!(
            "{} holds no {harness} store (looked for {}); check --home",
            home.display(),
            what.join(", ")
        )
    }
}

/// The environment variable whose value is one of `paths` (`CODEX_HOME`,
/// `CLAUDE_CONFIG_DIR`, ...), when one is.
fn set_by_environment(paths: &[PathBuf]) -> Option<String> {
    std::env::vars_os().find_map(|(name, value)| {
        let value = PathBuf::from(value);
        let shells_own = name == "PWD" || name == "OLDPWD";
        (!shells_own && !value.as_os_str().is_empty() && paths.contains(&value))
            .then(|| name.to_string_lossy().into_owned())
    })
}

impl ConvertError {
    /// Reading `path` failed.
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> ConvertError {
        let path = path.into();
        move |source| ConvertError::Io { path, source }
    }

    /// Writing `path` failed.
    pub fn write(path: impl Into<PathBuf>) -> impl FnOnce(io::Error) -> ConvertError {
        let path = path.into();
        move |source| ConvertError::Write { path, source }
    }

    pub fn invalid(path: impl Into<PathBuf>, message: impl Into<String>) -> ConvertError {
        ConvertError::Invalid {
            path: path.into(),
            message: message.into(),
        }
    }

    /// What went wrong, without the path the error names: for a report that names the file
    /// itself (it said `lost: …/config.toml: …/config.toml: not valid TOML`).
    pub fn without_path(&self) -> String {
        match self {
            ConvertError::Io { source, .. } | ConvertError::Write { source, .. } => {
                source.to_string()
            }
            ConvertError::Invalid { message, .. } => message.clone(),
            other => other.to_string(),
        }
    }

    /// A carried body (`what` says which) that cannot be read.
    pub fn carried(what: impl Into<String>, source: io::Error) -> ConvertError {
        ConvertError::Carried {
            what: what.into(),
            source,
        }
    }
}

impl Classify for ConvertError {
    fn class(&self) -> ErrorClass {
        match self {
            ConvertError::NoHome
            | ConvertError::NoSuchHome(_)
            | ConvertError::NoStore { .. }
            | ConvertError::Invalid { .. } => ErrorClass::Source,
            ConvertError::Io { source, .. } => io_class(source, ErrorClass::Source),
            ConvertError::Write { source, .. } => io_class(source, ErrorClass::Store),
            ConvertError::Carried { source, .. } => io_class(source, ErrorClass::Source),
            ConvertError::Blob(e) => e.class(),
            ConvertError::Partial(_) => ErrorClass::Store,
            ConvertError::Stopped { error, .. } => error.class(),
            ConvertError::Usage(_) => ErrorClass::Usage,
            // What the bundle carried cannot be used as it is.
            ConvertError::Outside { .. } => ErrorClass::Source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::Descriptor;

    #[test]
    fn errors_name_their_class() {
        let missing = ConvertError::Blob(BlobError::Missing(Descriptor::of(b"x").digest));
        assert_eq!(missing.class(), ErrorClass::Integrity);
        let read = ConvertError::io("/x")(io::Error::other("boom"));
        assert_eq!(read.class(), ErrorClass::Source);
        let write = ConvertError::write("/x")(io::Error::other("full"));
        assert_eq!(write.class(), ErrorClass::Store);
        assert_eq!(
            ConvertError::Usage("no such session".into()).class(),
            ErrorClass::Usage
        );
    }

    #[test]
    fn an_error_says_what_went_wrong_without_its_path_for_a_report_that_names_it() {
        let bad = ConvertError::invalid("/h/.codex/config.toml", "not valid TOML: x");
        assert_eq!(bad.to_string(), "/h/.codex/config.toml: not valid TOML: x");
        assert_eq!(bad.without_path(), "not valid TOML: x");
        let read = ConvertError::io("/x")(io::Error::other("boom"));
        assert_eq!(read.without_path(), "boom");
    }
}
