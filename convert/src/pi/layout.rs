//! Where a home keeps Pi's state: the agent dir `~/.pi/agent/` (or `$PI_CODING_AGENT_DIR`),
//! and `~/.agents/skills/` which Pi shares with other harnesses.

use std::path::{Path, PathBuf};

use crate::harness::Home;

/// How native files of the agent dir are named in a state, wherever the dir really is: a
/// bundle made with `$PI_CODING_AGENT_DIR` restores into a home without it.
pub const AGENT_REL: &str = ".pi/agent";

/// The real locations of one Pi install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The home directory (holding `.agents/`).
    pub root: PathBuf,
    /// The agent dir: `$PI_CODING_AGENT_DIR` (a leading `~` expanded) when the home was not
    /// named, else `<home>/.pi/agent`.
    pub agent: PathBuf,
}

impl Layout {
    pub fn of(home: &Home) -> Layout {
        Layout::with_env(home, std::env::var("PI_CODING_AGENT_DIR").ok())
    }

    /// The layout for `home` given the value of `$PI_CODING_AGENT_DIR`: honoured only for the
    /// user's own home, never for a home named with `--home`.
    fn with_env(home: &Home, env: Option<String>) -> Layout {
        let env = env.filter(|d| !d.is_empty() && !home.explicit);
        let agent = match env {
            Some(d) if d == "~" => home.dir.clone(),
            Some(d) => match d.strip_prefix("~/") {
                Some(rest) => home.dir.join(rest),
                None => PathBuf::from(d),
            },
            None => home.dir.join(AGENT_REL),
        };
        Layout {
            root: home.dir.clone(),
            agent,
        }
    }

    /// `A/sessions`.
    pub fn sessions(&self) -> PathBuf {
        self.agent.join("sessions")
    }

    /// `A/settings.json`.
    pub fn settings(&self) -> PathBuf {
        self.agent.join("settings.json")
    }

    /// The state's name of a file in the agent dir: `.pi/agent/<rel>`, `/`-separated.
    pub fn virtual_path(&self, p: &Path) -> Option<String> {
        let rel = p.strip_prefix(&self.agent).ok()?;
        let mut parts = vec![AGENT_REL.to_owned()];
        for c in rel.components() {
            parts.push(c.as_os_str().to_str()?.to_owned());
        }
        Some(parts.join("/"))
    }

    /// Where a state's `.pi/agent/sessions/...` file goes in this install; `None` for any
    /// other path.
    pub fn session_path(&self, virtual_path: &str) -> Option<PathBuf> {
        let rest = virtual_path
            .strip_prefix(AGENT_REL)?
            .strip_prefix("/sessions/")?;
        let parts: Vec<&str> = rest.split('/').collect();
        let ok = parts
            .iter()
            .all(|p| !p.is_empty() && *p != "." && *p != "..")
            && rest.ends_with(".jsonl");
        ok.then(|| parts.iter().fold(self.sessions(), |d, p| d.join(p)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_names_are_under_dot_pi_agent() {
        let l = Layout::of(&Home::at("/home/dev"));
        let p = l.sessions().join("--home-dev-shop--").join("a_b.jsonl");
        let v = l.virtual_path(&p).unwrap();
        assert_eq!(v, ".pi/agent/sessions/--home-dev-shop--/a_b.jsonl");
        assert_eq!(l.session_path(&v).unwrap(), p);
        assert!(l.session_path(".pi/agent/auth.json").is_none());
        assert!(l.session_path(".pi/agent/sessions/../x.jsonl").is_none());
    }

    #[test]
    fn pi_coding_agent_dir_moves_the_users_own_agent_dir_only() {
        let own = Home {
            dir: "/home/dev".into(),
            explicit: false,
        };
        let env = |v: &str| Some(v.to_owned());
        assert_eq!(
            Layout::with_env(&own, env("~/pi-state")).agent,
            Path::new("/home/dev/pi-state")
        );
        assert_eq!(
            Layout::with_env(&own, env("/srv/pi")).agent,
            Path::new("/srv/pi")
        );
        assert_eq!(
            Layout::with_env(&own, None).agent,
            Path::new("/home/dev/.pi/agent")
        );
        let named = Home::at("/backup/home");
        assert_eq!(
            Layout::with_env(&named, env("/srv/pi")).agent,
            Path::new("/backup/home/.pi/agent")
        );
        // Native names do not depend on where the agent dir is.
        let l = Layout::with_env(&own, env("/srv/pi"));
        assert_eq!(
            l.virtual_path(Path::new("/srv/pi/sessions/--w--/a.jsonl"))
                .unwrap(),
            ".pi/agent/sessions/--w--/a.jsonl"
        );
    }
}
