//! The class of a failure, which every error of this workspace can name about itself.
//!
//! Callers branch on the class, never on concrete error types: the CLI turns a class into an
//! exit code, the hub into a JSON-RPC error, without downcasting through error chains (the way
//! `gix-odb` errors answer `is_corrupted()` themselves). A library error type implements
//! [`Classify`]; an error that wraps another asks the wrapped one.

use std::io;

use crate::digest::is_integrity_error;

/// What went wrong, in the terms a caller acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorClass {
    /// Data does not match what was promised: a digest or size mismatch, a damaged, truncated
    /// or hostile bundle or repository. The CLI exits 4.
    Integrity,
    /// What was asked to be read cannot be read as asked: a home or store that is not there, a
    /// file that cannot be opened or parsed. The CLI exits 1.
    Source,
    /// What was asked to be written cannot be written: permissions, a full disk, a refusal to
    /// overwrite. The CLI exits 1.
    Store,
    /// The request itself is wrong (arguments that contradict each other, a name that does not
    /// exist). The CLI exits 2.
    Usage,
}

impl ErrorClass {
    /// Its name where a program reads it (the CLI's `--json` error): `integrity`, `source`,
    /// `store` or `usage`.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Integrity => "integrity",
            ErrorClass::Source => "source",
            ErrorClass::Store => "store",
            ErrorClass::Usage => "usage",
        }
    }
}

/// An error that knows its own [`ErrorClass`].
pub trait Classify {
    fn class(&self) -> ErrorClass;
}

/// The class of an I/O error met while reading: [`ErrorClass::Integrity`] when it carries an
/// [`crate::digest::IntegrityError`], else `otherwise`.
pub fn io_class(e: &io::Error, otherwise: ErrorClass) -> ErrorClass {
    if is_integrity_error(e) {
        ErrorClass::Integrity
    } else {
        otherwise
    }
}

impl Classify for crate::bundle::WriteError {
    /// A state that is not valid, or too large for its readers, is the input's; a file in the
    /// way (without `--force`) and the rest is writing the bundle's, unless a blob did not
    /// match its digest.
    fn class(&self) -> ErrorClass {
        use crate::bundle::WriteError as E;
        match self {
            E::InvalidState(_) | E::TooLarge { .. } => ErrorClass::Source,
            E::Exists { .. } => ErrorClass::Store,
            E::NotAFile { .. } | E::ForeignLink { .. } => ErrorClass::Usage,
            E::Io { source, .. } => io_class(source, ErrorClass::Store),
            E::Blob { source, .. } => source.class(),
            E::Zip(zip::result::ZipError::Io(e)) => io_class(e, ErrorClass::Store),
            E::Zip(_) => ErrorClass::Store,
        }
    }
}

impl Classify for crate::export::ExportError {
    fn class(&self) -> ErrorClass {
        use crate::export::ExportError as E;
        match self {
            E::Blob { source, .. } => source.class(),
            E::BadUpdate { .. } | E::NotText { .. } | E::Invalid(_) => ErrorClass::Source,
            E::Io(e) => io_class(e, ErrorClass::Store),
        }
    }
}
