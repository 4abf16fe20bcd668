//! Diagnostics: what a conversion found wrong or odd, by file and line.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How much a finding costs. The exit code follows it: only [`Severity::Lost`] (and a
/// [`Severity::Damaged`] nobody resolved) makes a command exit 3; what is left out by design is
/// reported and exits 0 (`--strict` makes it exit 3 too).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Carried, but worth knowing (a skill with invalid front matter, a foreign record kept
    /// under `_meta`).
    Note,
    /// Not carried, by design: the portable state has no place for it, or the harness itself
    /// does not use it (a `rules/` file, a project-scope MCP server, a shadowed skill copy).
    /// Reported; not a loss.
    LeftOut,
    /// A damaged record of a session file, dropped from the conversation but carried byte for
    /// byte in the session's native file (a crash-cut last line): a restore into the same
    /// harness gives it back, so it is not a loss.
    KeptNatively,
    /// A damaged record of a session file, dropped from the conversation, as a converter
    /// reports it; the porcelain turns it into [`Severity::KeptNatively`] when the file travels
    /// as the session's native file, else into [`Severity::Lost`].
    Damaged,
    /// Something the source had that is carried nowhere: a file that cannot be read, a record
    /// dropped as damaged and not kept natively, a session that cannot be carried.
    Lost,
}

impl Severity {
    /// Whether something the source had is missing from what was carried.
    pub fn is_loss(self) -> bool {
        matches!(self, Severity::Lost | Severity::Damaged)
    }

    /// Whether something was not carried, lost or by design.
    pub fn is_not_carried(self) -> bool {
        !matches!(self, Severity::Note)
    }
}

/// What a finding is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Subject {
    /// A file (of the store read, or written).
    File(PathBuf),
    /// A session of the state being written, by its id in the state: a writer's finding about
    /// the session's update stream (its `line` is the stream's line), or about the session as
    /// a whole, before it has a file of its own.
    Session(String),
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub subject: Option<Subject>,
    /// 1-based line, for line-oriented files and update streams.
    pub line: Option<u64>,
    pub message: String,
}

impl Diagnostic {
    /// The file the finding is about, if it is about a file.
    pub fn file(&self) -> Option<&Path> {
        match &self.subject {
            Some(Subject::File(p)) => Some(p),
            _ => None,
        }
    }

    /// The session (by its id in the state) the finding is about, if it is about one.
    pub fn session(&self) -> Option<&str> {
        match &self.subject {
            Some(Subject::Session(id)) => Some(id),
            _ => None,
        }
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.subject, self.line) {
            (Some(Subject::File(p)), Some(l)) => write!(f, "{}:{l}: ", p.display())?,
            (Some(Subject::File(p)), None) => write!(f, "{}: ", p.display())?,
            (Some(Subject::Session(id)), Some(l)) => write!(f, "session {id}, update line {l}: ")?,
            (Some(Subject::Session(id)), None) => write!(f, "session {id}: ")?,
            (None, _) => {}
        }
        f.write_str(&self.message)
    }
}

/// A thread-safe collection of findings.
#[derive(Debug, Default)]
pub struct Diagnostics {
    items: Mutex<Vec<Diagnostic>>,
}

impl Diagnostics {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&self, d: Diagnostic) {
        self.items.lock().expect("diagnostics poisoned").push(d);
    }

    /// Changes findings in place: the porcelain's second look, once it knows more than the
    /// converter that reported them (that a file left out of the portable kinds is kept
    /// natively after all).
    pub fn revise(&self, mut f: impl FnMut(&mut Diagnostic)) {
        for d in self.items.lock().expect("diagnostics poisoned").iter_mut() {
            f(d);
        }
    }

    /// Something in `file` (at `line`) was not carried and is kept nowhere: a loss.
    pub fn lost(&self, file: &Path, line: Option<u64>, message: impl Into<String>) {
        self.at(Severity::Lost, file, line, message);
    }

    /// Something in `file` was not carried, by design (the portable state has no place for it,
    /// or the harness does not use it): reported, not a loss.
    pub fn left_out(&self, file: &Path, line: Option<u64>, message: impl Into<String>) {
        self.at(Severity::LeftOut, file, line, message);
    }

    /// A record at `line` of a session's `file` was dropped as damaged. The porcelain decides
    /// whether it is lost: not when `file` travels byte for byte as the session's native file.
    pub fn damaged(&self, file: &Path, line: Option<u64>, message: impl Into<String>) {
        self.at(Severity::Damaged, file, line, message);
    }

    fn at(&self, severity: Severity, file: &Path, line: Option<u64>, message: impl Into<String>) {
        self.push(Diagnostic {
            severity,
            subject: Some(Subject::File(file.to_path_buf())),
            line,
            message: message.into(),
        });
    }

    /// Something in `file` was carried but is worth knowing.
    pub fn note(&self, file: &Path, line: Option<u64>, message: impl Into<String>) {
        self.push(Diagnostic {
            severity: Severity::Note,
            subject: Some(Subject::File(file.to_path_buf())),
            line,
            message: message.into(),
        });
    }

    /// A finding about session `id` of the state being written (at `line` of its update
    /// stream), not about a file: a writer's, before the session has a file of its own.
    pub fn in_session(
        &self,
        severity: Severity,
        id: &str,
        line: Option<u64>,
        message: impl Into<String>,
    ) {
        self.push(Diagnostic {
            severity,
            subject: Some(Subject::Session(id.to_owned())),
            line,
            message: message.into(),
        });
    }

    /// All findings so far, in the order they were found.
    pub fn items(&self) -> Vec<Diagnostic> {
        self.items.lock().expect("diagnostics poisoned").clone()
    }

    /// True when something the source had is carried nowhere.
    pub fn any_lost(&self) -> bool {
        self.items
            .lock()
            .expect("diagnostics poisoned")
            .iter()
            .any(|d| d.severity.is_loss())
    }

    /// True when anything was not carried, lost or left out by design (what `--strict` counts).
    pub fn any_not_carried(&self) -> bool {
        self.items
            .lock()
            .expect("diagnostics poisoned")
            .iter()
            .any(|d| d.severity.is_not_carried())
    }

    pub fn is_empty(&self) -> bool {
        self.items.lock().expect("diagnostics poisoned").is_empty()
    }
}

pub use asp_format::update::why_line_is_not_json;

#[cfg(test)]
mod json_line_tests {
    #[test]
    fn a_line_that_is_not_json_is_said_with_its_column_only() {
        let e = serde_json::from_str::<serde_json::Value>("{\"a\": 1, b}").unwrap_err();
        assert_eq!(
            super::why_line_is_not_json(&e),
            "key must be a string at column 10"
        );
    }
}
