//! A record of the repositories this machine pushed to or pulled from, per registry, so a
//! push can mount blobs from a repository that likely holds them (cross-repository mount)
//! without the user naming it.
//!
//! Kept in `$XDG_STATE_HOME/asp/remotes.json` (default `~/.local/state/asp/remotes.json`):
//! `{"registries": {"<registry>": ["<repository>", …]}}`, most recent first, at most
//! [`KEEP`] per registry. It is a hint: a wrong or stale entry costs one mount attempt that
//! the registry answers with an upload session, which the push then uses.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::Error;

/// Repositories remembered per registry.
pub const KEEP: usize = 16;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Remotes {
    #[serde(default)]
    registries: BTreeMap<String, Vec<String>>,
}

impl Remotes {
    /// The default location, from `XDG_STATE_HOME` or `HOME`.
    pub fn default_path() -> Option<PathBuf> {
        let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
        var("XDG_STATE_HOME")
            .map(PathBuf::from)
            .or_else(|| var("HOME").map(|h| Path::new(&h).join(".local").join("state")))
            .map(|d| d.join("asp").join("remotes.json"))
    }

    /// Reads the record; a missing or unreadable one is empty (it is only a hint).
    pub fn load(path: &Path) -> Remotes {
        std::fs::read(path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_default()
    }

    /// Notes that `repository` on `registry` was just used.
    pub fn record(&mut self, registry: &str, repository: &str) {
        let list = self.registries.entry(registry.to_owned()).or_default();
        list.retain(|r| r != repository);
        list.insert(0, repository.to_owned());
        list.truncate(KEEP);
    }

    /// Repositories on `registry` other than `except`, most recent first.
    pub fn candidates(&self, registry: &str, except: &str) -> Vec<String> {
        self.registries
            .get(registry)
            .map(|l| l.iter().filter(|r| *r != except).cloned().collect())
            .unwrap_or_default()
    }

    /// Writes the record atomically, creating its directory.
    pub fn save(&self, path: &Path) -> Result<(), Error> {
        let dir = path.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
        let mut bytes = serde_json::to_vec_pretty(self).expect("remotes serialise");
        bytes.push(b'\n');
        crate::layout::write_atomic(dir, path, &bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_recent_first_without_the_target() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state/asp/remotes.json");
        let mut r = Remotes::load(&path);
        r.record("h:5000", "a");
        r.record("h:5000", "b");
        r.record("h:5000", "a");
        r.record("other", "c");
        r.save(&path).unwrap();
        let r = Remotes::load(&path);
        assert_eq!(r.candidates("h:5000", "x"), ["a", "b"]);
        assert_eq!(r.candidates("h:5000", "a"), ["b"]);
        assert!(r.candidates("nope", "a").is_empty());
        for i in 0..40 {
            let mut r2 = r.clone();
            r2.record("h:5000", &format!("r{i}"));
        }
        let mut r3 = r.clone();
        for i in 0..40 {
            r3.record("h:5000", &format!("r{i}"));
        }
        assert_eq!(r3.candidates("h:5000", "").len(), KEEP);
    }
}
