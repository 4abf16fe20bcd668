//! Where a home keeps Copilot CLI's state: `~/.copilot/` (or `$COPILOT_HOME`), config and
//! state together (spec §1).

use std::path::{Path, PathBuf};

use crate::harness::Home;

/// How native files of the Copilot dir are named in a state, wherever the dir really is: a
/// bundle made with `$COPILOT_HOME` restores into a home without it.
pub const ROOT_REL: &str = ".copilot";

/// The real locations of one Copilot install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The home directory (holding `.agents/`).
    pub home: PathBuf,
    /// `$COPILOT_HOME` (a leading `~` expanded) when the home was not named, else
    /// `<home>/.copilot`.
    pub root: PathBuf,
}

impl Layout {
    pub fn of(home: &Home) -> Layout {
        Layout::with_env(home, std::env::var("COPILOT_HOME").ok())
    }

    /// The layout for `home` given `$COPILOT_HOME`: honoured only for the user's own home,
    /// never for a home named with `--home`.
    fn with_env(home: &Home, env: Option<String>) -> Layout {
        let env = env.filter(|d| !d.is_empty() && !home.explicit);
        let root = match env {
            Some(d) if d == "~" => home.dir.clone(),
            Some(d) => match d.strip_prefix("~/") {
                Some(rest) => home.dir.join(rest),
                None => PathBuf::from(d),
            },
            None => home.dir.join(ROOT_REL),
        };
        Layout {
            home: home.dir.clone(),
            root,
        }
    }

    /// `session-state/`: one directory per session.
    pub fn sessions(&self) -> PathBuf {
        self.root.join("session-state")
    }

    /// `skills/`: Copilot's own skills.
    pub fn skills(&self) -> PathBuf {
        self.root.join("skills")
    }

    /// `~/.agents/skills/`, which Copilot shares with other harnesses.
    pub fn shared_skills(&self) -> PathBuf {
        self.home.join(crate::kit::skills::AGENTS_SKILLS)
    }

    /// `mcp-config.json`: the user's MCP servers.
    pub fn mcp_config(&self) -> PathBuf {
        self.root.join("mcp-config.json")
    }

    /// `settings.json`.
    pub fn settings(&self) -> PathBuf {
        self.root.join("settings.json")
    }

    /// The state's name of a file in the Copilot dir: `.copilot/<rel>`, `/`-separated.
    pub fn virtual_path(&self, p: &Path) -> Option<String> {
        let rel = p.strip_prefix(&self.root).ok()?;
        let mut parts = vec![ROOT_REL.to_owned()];
        for c in rel.components() {
            parts.push(c.as_os_str().to_str()?.to_owned());
        }
        Some(parts.join("/"))
    }

    /// The session directory and the path inside it of a state's
    /// `.copilot/session-state/<id>/<rel>`; `None` for any other path.
    pub fn session_file(&self, virtual_path: &str) -> Option<(String, String)> {
        let rest = virtual_path
            .strip_prefix(ROOT_REL)?
            .strip_prefix("/session-state/")?;
        let (dir, rel) = rest.split_once('/')?;
        let ok = rest
            .split('/')
            .all(|p| !p.is_empty() && p != "." && p != "..")
            && !dir.starts_with('.');
        ok.then(|| (dir.to_owned(), rel.to_owned()))
    }
}

/// Whether a file of a session directory is Copilot's bookkeeping of a running process, not
/// part of the session (spec §1: lock, hold and in-use files).
pub fn is_transient(name: &str) -> bool {
    name.ends_with(".lock") || name.ends_with(".hold") || name.starts_with("inuse.")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_names_are_under_dot_copilot() {
        let l = Layout::of(&Home::at("/home/dev"));
        let p = l.sessions().join("abc").join("events.jsonl");
        let v = l.virtual_path(&p).unwrap();
        assert_eq!(v, ".copilot/session-state/abc/events.jsonl");
        assert_eq!(
            l.session_file(&v).unwrap(),
            ("abc".to_owned(), "events.jsonl".to_owned())
        );
        assert!(l.session_file(".copilot/config.json").is_none());
        assert!(l.session_file(".copilot/session-state/../x").is_none());
    }

    #[test]
    fn copilot_home_moves_the_users_own_dir_only() {
        let own = Home {
            dir: "/home/dev".into(),
            explicit: false,
        };
        assert_eq!(
            Layout::with_env(&own, Some("/srv/c".into())).root,
            Path::new("/srv/c")
        );
        assert_eq!(
            Layout::with_env(&own, Some("~/c".into())).root,
            Path::new("/home/dev/c")
        );
        let named = Home::at("/b");
        assert_eq!(
            Layout::with_env(&named, Some("/srv/c".into())).root,
            Path::new("/b/.copilot")
        );
    }
}
