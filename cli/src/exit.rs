//! Exit codes, and the error every command fails with: one that carries its class.
//!
//! A library error knows its own [`ErrorClass`] ([`Classify`]); it is asked once, where it
//! becomes a [`Failure`] (the `?` in a command), and the class travels with the message from
//! there. The exit code is the class's: nothing here looks at what type an error was.

use std::fmt;

use asp_format::error::{Classify, ErrorClass};

/// The documented exit codes, shared by `asp`, `asp-pack` and `asp-unpack`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Everything was done.
    Ok = 0,
    /// A runtime error: input/output, a file that does not parse, a refusal to overwrite.
    Error = 1,
    /// A usage error (clap's own code).
    Usage = 2,
    /// Done, but something the source had was lost (a file that could not be read, a session
    /// that could not be carried or written, a damaged record not kept natively); or, with
    /// `--strict`, anything was not taken. Listed on stderr.
    Incomplete = 3,
    /// An integrity failure: a digest or size mismatch, a corrupt, truncated or hostile bundle.
    Integrity = 4,
}

impl From<Exit> for std::process::ExitCode {
    fn from(e: Exit) -> Self {
        std::process::ExitCode::from(e as u8)
    }
}

impl From<ErrorClass> for Exit {
    fn from(class: ErrorClass) -> Self {
        match class {
            ErrorClass::Integrity => Exit::Integrity,
            ErrorClass::Usage => Exit::Usage,
            ErrorClass::Source | ErrorClass::Store => Exit::Error,
        }
    }
}

/// Text for the `EXIT CODES` section of every `--help`.
pub const EXIT_CODES_HELP: &str = "\
Exit codes:
  0  done, and nothing the source had is lost. What is left out by design, or cannot exist in
     the target (a model it cannot run, a project-scope MCP server), is still reported: on
     stderr, in the summary line, and in --json (notTaken: what a kind as a whole could not
     take; _meta.asp.findings: each item left out, with its file and line)
  1  error (input/output, a file that does not parse, refused to overwrite, no store at --home,
     no repository at --repo)
  2  usage error (also a session or snapshot id that names none: nothing was read or written)
  3  done, but something was lost: a file that could not be read, a session that could not be
     carried or written, a record dropped as damaged and not kept natively (a crash-cut last
     line travels byte for byte in the native file: not a loss). With --strict (pack,
     unpack, restore), anything not taken exits 3 too
  4  integrity failure (digest or size mismatch; corrupt, truncated or hostile bundle)";

/// The exit of a command that carried state: [`Exit::Incomplete`] when something was lost, or
/// when `strict` and anything was not taken; else [`Exit::Ok`].
pub fn carried(lost: bool, not_taken: bool, strict: bool) -> Exit {
    if lost || (strict && not_taken) {
        Exit::Incomplete
    } else {
        Exit::Ok
    }
}

/// Why a command failed: the error with its context, and its class.
pub struct Failure {
    pub class: ErrorClass,
    error: anyhow::Error,
}

impl Failure {
    /// A failure of `class` described by `message`.
    pub fn new(
        class: ErrorClass,
        message: impl fmt::Display + fmt::Debug + Send + Sync + 'static,
    ) -> Self {
        Failure {
            class,
            error: anyhow::Error::msg(message),
        }
    }

    /// The request itself is wrong.
    pub fn usage(message: impl fmt::Display + fmt::Debug + Send + Sync + 'static) -> Self {
        Failure::new(ErrorClass::Usage, message)
    }

    /// An I/O error of what was asked to be read.
    pub fn source(e: std::io::Error) -> Self {
        Failure::io(e, ErrorClass::Source)
    }

    /// An I/O error of what was asked to be written.
    pub fn store(e: std::io::Error) -> Self {
        Failure::io(e, ErrorClass::Store)
    }

    fn io(e: std::io::Error, otherwise: ErrorClass) -> Self {
        Failure {
            class: asp_format::error::io_class(&e, otherwise),
            error: e.into(),
        }
    }

    /// The same failure, with what was being done said first.
    #[must_use]
    pub fn context(self, what: impl fmt::Display + fmt::Debug + Send + Sync + 'static) -> Self {
        Failure {
            class: self.class,
            error: self.error.context(what),
        }
    }

    /// The exit code it deserves.
    pub fn exit(&self) -> Exit {
        self.class.into()
    }

    /// Whether it is a write into a closed pipe (the reader of our standard output went
    /// away), which ends a command quietly as it ends other Unix tools.
    pub fn is_broken_pipe(&self) -> bool {
        self.error.chain().any(|c| {
            c.downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
        })
    }
}

impl<E: Classify + std::error::Error + Send + Sync + 'static> From<E> for Failure {
    fn from(e: E) -> Self {
        Failure {
            class: e.class(),
            error: e.into(),
        }
    }
}

impl fmt::Debug for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} ({:?})", self.error, self.class)
    }
}

impl fmt::Display for Failure {
    /// The message with its causes, `context: cause: cause`, each said once: many errors end
    /// their own message with their cause (`writing {path}: {source}`), and a cause the message
    /// before it ends with (after a `: `) is not said again.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut said = String::new();
        for cause in self.error.chain() {
            let text = cause.to_string();
            if said == text || said.ends_with(&format!(": {text}")) {
                continue;
            }
            if !said.is_empty() {
                said.push_str(": ");
            }
            said.push_str(&text);
        }
        f.write_str(&said)
    }
}

/// What a command returns.
pub type Result<T> = std::result::Result<T, Failure>;

/// `.context(..)` on anything that becomes a [`Failure`].
pub trait Context<T> {
    fn context(self, what: impl fmt::Display + fmt::Debug + Send + Sync + 'static) -> Result<T>;
    fn with_context<D: fmt::Display + fmt::Debug + Send + Sync + 'static>(
        self,
        what: impl FnOnce() -> D,
    ) -> Result<T>;
}

impl<T, E: Into<Failure>> Context<T> for std::result::Result<T, E> {
    fn context(self, what: impl fmt::Display + fmt::Debug + Send + Sync + 'static) -> Result<T> {
        self.map_err(|e| e.into().context(what))
    }

    fn with_context<D: fmt::Display + fmt::Debug + Send + Sync + 'static>(
        self,
        what: impl FnOnce() -> D,
    ) -> Result<T> {
        self.map_err(|e| e.into().context(what()))
    }
}

/// Returns early with a usage failure: `bail_usage!("--x needs --y")`.
#[macro_export]
macro_rules! bail_usage {
    ($($t:tt)*) => {
        return Err($crate::exit::Failure::usage(format!($($t)*)))
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::blob::BlobError;

    #[test]
    fn the_exit_code_is_the_class_of_the_error_whatever_its_context() {
        let missing: Failure = BlobError::Missing(asp_format::Digest::of(b"x")).into();
        assert_eq!(missing.context("cannot unpack").exit(), Exit::Integrity);
        let io = Failure::store(std::io::Error::other("disk full")).context("cannot write");
        assert_eq!(io.exit(), Exit::Error);
        assert_eq!(io.to_string(), "cannot write: disk full");
        // A cause an error already says in its own message is not said twice.
        let io = std::io::Error::other("disk full");
        let wrapped: Failure = asp_format::bundle::WriteError::Io {
            path: "x.aspstate".into(),
            source: io,
        }
        .into();
        assert_eq!(
            wrapped.context("cannot pack").to_string(),
            "cannot pack: writing x.aspstate: disk full"
        );
        assert_eq!(Failure::usage("no").exit(), Exit::Usage);
    }
}
