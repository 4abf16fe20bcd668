//! Diagnostics: what a conversion found wrong or odd, by file and line.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// How much a finding costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Carried, but worth knowing (a skill with invalid front matter, a foreign record kept
    /// under `_meta`).
    Note,
    /// Something was not carried (a line that is not JSON, a file that cannot be read).
    Skipped,
}

/// One finding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    pub severity: Severity,
    pub file: Option<PathBuf>,
    /// 1-based line, for line-oriented files.
    pub line: Option<u64>,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.file, self.line) {
            (Some(p), Some(l)) => write!(f, "{}:{l}: ", p.display())?,
            (Some(p), None) => write!(f, "{}: ", p.display())?,
            _ => {}
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

    /// Something in `file` (at `line`) was not carried.
    pub fn skipped(&self, file: &Path, line: Option<u64>, message: impl Into<String>) {
        self.push(Diagnostic {
            severity: Severity::Skipped,
            file: Some(file.to_path_buf()),
            line,
            message: message.into(),
        });
    }

    /// Something in `file` was carried but is worth knowing.
    pub fn note(&self, file: &Path, line: Option<u64>, message: impl Into<String>) {
        self.push(Diagnostic {
            severity: Severity::Note,
            file: Some(file.to_path_buf()),
            line,
            message: message.into(),
        });
    }

    /// All findings so far, in the order they were found.
    pub fn items(&self) -> Vec<Diagnostic> {
        self.items.lock().expect("diagnostics poisoned").clone()
    }

    /// True when something was not carried.
    pub fn any_skipped(&self) -> bool {
        self.items
            .lock()
            .expect("diagnostics poisoned")
            .iter()
            .any(|d| d.severity == Severity::Skipped)
    }

    pub fn is_empty(&self) -> bool {
        self.items.lock().expect("diagnostics poisoned").is_empty()
    }
}
