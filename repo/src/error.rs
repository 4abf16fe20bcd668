//! What can go wrong with a repository, each failure knowing its class.

use std::io;
use std::path::{Path, PathBuf};

use asp_format::error::{Classify, ErrorClass, io_class};

/// Errors of repository operations.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    /// The request is wrong (no such snapshot).
    #[error("{0}")]
    Usage(String),

    /// No repository where one was named (as a `--home` without the harness's store: the
    /// source is not there, exit 1).
    #[error("{0}")]
    NotARepository(String),

    /// A lock another process holds was still held when the wait the caller allowed ran out
    /// ([`crate::Repository::with_lock_wait`]).
    #[error(
        "{} is still locked after {waited}: {holder} did not end in time, so this command gave \
         up waiting there (try again later, or allow a longer --lock-wait)",
        path.display()
    )]
    Locked {
        path: PathBuf,
        /// The wait allowed, in seconds (`90s`, `1.5s`).
        waited: String,
        /// Who holds it, as the wait notice says.
        holder: String,
    },

    /// A command that writes into the repository cannot write there: a read-only mount, or
    /// a repository of another user's. (A command that only reads needs no write access,
    /// [`crate::Repository::lock_to_read`].)
    #[error(
        "{} cannot be written to here, and this command writes into the repository (backup, \
         pull, forget, prune, check --repair and --rebuild-index do; restore, check, sessions, \
         snapshots, pack and push only read it): run it as a user who can write there, or \
         through a read-write mount; {}: {source}",
        root.display(),
        path.display()
    )]
    ReadOnly {
        root: PathBuf,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    /// The repository's data does not match what it promises.
    #[error("integrity failure: {0}")]
    Integrity(String),

    /// `index.json` says of a snapshot what its own manifest does not (a harness, a home, a
    /// count changed by hand or by damage): the index, not the snapshot, is what is wrong,
    /// and `asp check --rebuild-index` mends it.
    #[error("integrity failure: {0}")]
    IndexDiffers(String),

    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error(transparent)]
    Convert(#[from] asp_convert::ConvertError),

    #[error(transparent)]
    Layout(#[from] asp_registry::Error),

    #[error(transparent)]
    Write(#[from] asp_format::bundle::WriteError),

    #[error(transparent)]
    Blob(#[from] asp_format::blob::BlobError),

    #[error(transparent)]
    Bundle(#[from] asp_format::bundle::ReadError),
}

impl RepoError {
    /// An I/O failure at `path`.
    pub fn io(path: impl AsRef<Path>) -> impl FnOnce(io::Error) -> RepoError {
        let path = path.as_ref().to_path_buf();
        move |source| RepoError::Io { path, source }
    }
}

impl Classify for RepoError {
    fn class(&self) -> ErrorClass {
        match self {
            RepoError::Usage(_) => ErrorClass::Usage,
            RepoError::NotARepository(_) => ErrorClass::Source,
            RepoError::Integrity(_) | RepoError::IndexDiffers(_) => ErrorClass::Integrity,
            RepoError::Locked { .. } | RepoError::ReadOnly { .. } => ErrorClass::Store,
            RepoError::Io { source, .. } => io_class(source, ErrorClass::Store),
            RepoError::Convert(e) => e.class(),
            RepoError::Layout(e) => e.class(),
            RepoError::Write(e) => e.class(),
            RepoError::Blob(e) => e.class(),
            RepoError::Bundle(e) => e.class(),
        }
    }
}
