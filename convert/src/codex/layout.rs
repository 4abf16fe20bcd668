//! Where a home keeps Codex's state: `$CODEX_HOME` (default `~/.codex`), and `~/.agents/` for
//! the skills Codex shares with other harnesses.

use std::path::PathBuf;

use crate::harness::Home;

/// The real locations of one Codex install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The user's home (holds `.agents/skills`).
    pub home: PathBuf,
    /// `CODEX_HOME`.
    pub codex: PathBuf,
}

impl Layout {
    /// `CODEX_HOME` when set and the user did not name a home (`--home`), else `<home>/.codex`.
    pub fn of(home: &Home) -> Layout {
        let env = (!home.explicit)
            .then(|| std::env::var_os("CODEX_HOME"))
            .flatten()
            .filter(|v| !v.is_empty());
        Layout {
            home: home.dir.clone(),
            codex: env
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(".codex")),
        }
    }
}
