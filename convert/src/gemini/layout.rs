//! Where a home keeps Gemini CLI's state: `~/.gemini/`, and `~/.agents/` for the skills Gemini
//! shares with other harnesses.

use std::path::PathBuf;

use crate::harness::Home;

/// The real locations of one Gemini CLI install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The directory holding `.gemini/` and `.agents/`: the named home, else
    /// `$GEMINI_CLI_HOME` (which the CLI uses in place of the OS home), else the user's home.
    pub root: PathBuf,
    /// `<root>/.gemini`.
    pub gemini: PathBuf,
}

impl Layout {
    pub fn of(home: &Home) -> Layout {
        let root = match std::env::var_os("GEMINI_CLI_HOME").filter(|h| !h.is_empty()) {
            Some(h) if !home.explicit => PathBuf::from(h),
            _ => home.dir.clone(),
        };
        Layout {
            gemini: root.join(".gemini"),
            root,
        }
    }

    /// `settings.json`.
    pub fn settings(&self) -> PathBuf {
        self.gemini.join("settings.json")
    }
}
