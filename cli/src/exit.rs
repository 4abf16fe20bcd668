//! Exit codes, and how an error maps onto them.

use std::io;

use asp_convert::ConvertError;
use asp_format::blob::BlobError;
use asp_format::bundle::ReadError;
use asp_format::digest::is_integrity_error;

/// The documented exit codes, shared by `asp`, `asp-pack` and `asp-unpack`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything was done.
    Ok = 0,
    /// A runtime error: input/output, a file that does not parse, a refusal to overwrite.
    Error = 1,
    /// A usage error (clap's own code).
    Usage = 2,
    /// Done, but some items were not carried; they are listed on stderr.
    Incomplete = 3,
    /// An integrity failure: a digest or size mismatch, a corrupt, truncated or hostile bundle.
    Integrity = 4,
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e as u8)
    }
}

/// Text for the `EXIT CODES` section of every `--help`.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  success
  1  error (input/output, a file that does not parse, refused to overwrite)
  2  usage error
  3  done, but some items were not carried (listed on stderr)
  4  integrity failure (digest or size mismatch; corrupt, truncated or hostile bundle)";

/// A request that names something that is not there (a session id a bundle does not have).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Whether the error is a write into a closed pipe.
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<io::Error>()
            .is_some_and(|e| e.kind() == io::ErrorKind::BrokenPipe)
    })
}

/// The exit code an error deserves: [`Exit::Integrity`] when anything in its chain says the
/// data does not match what was promised, else [`Exit::Error`].
pub fn classify(err: &anyhow::Error) -> Exit {
    for cause in err.chain() {
        if cause.downcast_ref::<UsageError>().is_some() {
            return Exit::Usage;
        }
        let integrity = if let Some(e) = cause.downcast_ref::<ReadError>() {
            e.is_integrity()
        } else if let Some(e) = cause.downcast_ref::<BlobError>() {
            match e {
                BlobError::Missing(_) | BlobError::SizeMismatch { .. } => true,
                BlobError::Other(io) | BlobError::Io { source: io, .. } => is_integrity_error(io),
            }
        } else if let Some(ConvertError::Io { source, .. }) = cause.downcast_ref::<ConvertError>() {
            is_integrity_error(source)
        } else if let Some(e) = cause.downcast_ref::<io::Error>() {
            is_integrity_error(e)
        } else {
            false
        };
        if integrity {
            return Exit::Integrity;
        }
    }
    Exit::Error
}
