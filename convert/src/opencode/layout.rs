//! Where OpenCode keeps its state under a home (spec/harnesses/opencode.md §1): the data dir
//! `$XDG_DATA_HOME/opencode` holding `opencode.db` (`$OPENCODE_DB` overrides), and the config
//! dir `$XDG_CONFIG_HOME/opencode` (`AGENTS.md`, `skills/`, `opencode.json`). The environment
//! is honoured only for the user's own home: a home named with `--home` is read as it is.

use std::path::{Path, PathBuf};

use crate::harness::Home;

/// The database path carried in row documents when the database is not under the home.
pub const DEFAULT_DB: &str = ".local/share/opencode/opencode.db";

#[derive(Debug, Clone)]
pub struct Layout {
    pub home: PathBuf,
    /// `<data>` (`~/.local/share/opencode`).
    pub data: PathBuf,
    /// The session database.
    pub db: PathBuf,
    /// `<config>` (`~/.config/opencode`): instructions, skills, `opencode.json`.
    pub config: PathBuf,
}

fn env_dir(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
}

impl Layout {
    pub fn of(home: &Home) -> Layout {
        let own = !home.explicit;
        let data = own
            .then(|| env_dir("XDG_DATA_HOME"))
            .flatten()
            .unwrap_or_else(|| home.join(".local/share"))
            .join("opencode");
        // `OPENCODE_DB`: an absolute path, or a name relative to the data dir; `:memory:`
        // keeps nothing on disk, so there is nothing to read.
        let db = match std::env::var("OPENCODE_DB").ok().filter(|_| own) {
            Some(v) if !v.is_empty() && v != ":memory:" => {
                let p = PathBuf::from(&v);
                if p.is_absolute() { p } else { data.join(p) }
            }
            _ => data.join("opencode.db"),
        };
        let config = own
            .then(|| env_dir("XDG_CONFIG_HOME"))
            .flatten()
            .unwrap_or_else(|| home.join(".config"))
            .join("opencode");
        Layout {
            home: home.dir.clone(),
            data,
            db,
            config,
        }
    }

    /// Whether the configuration is at its usual place (`~/.config/opencode`, no
    /// `$XDG_CONFIG_HOME` elsewhere): only there is a global file at that place OpenCode's.
    pub fn config_is_usual(&self) -> bool {
        self.config == self.home.join(".config/opencode")
    }

    /// The database's path as row documents name it: relative to the home when under it.
    pub fn db_rel(&self) -> String {
        self.db
            .strip_prefix(&self.home)
            .ok()
            .and_then(Path::to_str)
            .map_or_else(|| DEFAULT_DB.to_owned(), |s| s.replace('\\', "/"))
    }

    /// The global config files in the order OpenCode merges them, each over the one before
    /// [bin `Config`: `config.json`, then `opencode.json`, then `opencode.jsonc`].
    pub fn config_files(&self) -> [PathBuf; 3] {
        ["config.json", "opencode.json", "opencode.jsonc"].map(|n| self.config.join(n))
    }

    /// `~/.agents/skills/`, which OpenCode reads beside its own skills.
    pub fn shared_skills(&self) -> PathBuf {
        self.home.join(".agents/skills")
    }

    /// `<db>-wal`, where OpenCode's committed rows wait for a checkpoint.
    pub fn wal(&self) -> PathBuf {
        let mut s = self.db.clone().into_os_string();
        s.push("-wal");
        PathBuf::from(s)
    }
}
