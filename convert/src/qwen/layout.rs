//! Where a home keeps Qwen Code's state: the global dir `~/.qwen` (`$QWEN_HOME`), the runtime
//! dir that holds chats, managed memory and file history (`$QWEN_RUNTIME_DIR`, else the global
//! dir), and `~/.agents/` for the skills Qwen shares with other harnesses.
//!
//! Paths inside the portable state (native files) are relative to a *virtual home* in which
//! the runtime dir is `.qwen/`, the real layout of a default install; [`Layout`] maps between
//! the two, so a state packed with `$QWEN_HOME` set restores into a default home and back.

use std::path::{Path, PathBuf};

use crate::harness::Home;

/// The runtime dir's name in the virtual home.
pub const QWEN: &str = ".qwen";

/// The real locations of one Qwen Code install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The home directory (holding `.agents/`).
    pub root: PathBuf,
    /// The global dir: `settings.json`, `QWEN.md`, `skills/` (`$QWEN_HOME`, else `~/.qwen`).
    pub qwen: PathBuf,
    /// The runtime dir: `projects/`, `memories/`, `file-history/` (`$QWEN_RUNTIME_DIR`, else
    /// the global dir).
    pub runtime: PathBuf,
}

/// `~` expanded against `home`, a relative path against the current directory, as Qwen's
/// `Storage` resolves `$QWEN_HOME`.
fn resolve(value: &std::ffi::OsStr, home: &Path) -> PathBuf {
    let s = value.to_string_lossy();
    let p = if s == "~" {
        home.to_path_buf()
    } else if let Some(rest) = s.strip_prefix("~/") {
        home.join(rest)
    } else {
        PathBuf::from(value)
    };
    std::path::absolute(&p).unwrap_or(p)
}

impl Layout {
    /// The layout of `home`. `$QWEN_HOME` and `$QWEN_RUNTIME_DIR` are honoured only when the
    /// user did not name the home (`--home`).
    pub fn of(home: &Home) -> Layout {
        let env = |k: &str| {
            if home.explicit {
                None
            } else {
                std::env::var_os(k).filter(|v| !v.is_empty())
            }
        };
        let qwen = env("QWEN_HOME").map_or_else(|| home.dir.join(QWEN), |v| resolve(&v, &home.dir));
        let runtime =
            env("QWEN_RUNTIME_DIR").map_or_else(|| qwen.clone(), |v| resolve(&v, &home.dir));
        Layout {
            root: home.dir.clone(),
            qwen,
            runtime,
        }
    }

    /// `<runtime>/projects`.
    pub fn projects(&self) -> PathBuf {
        self.runtime.join("projects")
    }

    /// The virtual path (`.qwen/...`) of a real path under the runtime dir.
    pub fn virtual_path(&self, real: &Path) -> Option<String> {
        let rel = real.strip_prefix(&self.runtime).ok()?;
        let mut out = String::from(QWEN);
        for c in rel.components() {
            out.push('/');
            out.push_str(c.as_os_str().to_str()?);
        }
        Some(out)
    }
}

/// Qwen's project directory name for a working directory (`sanitizeCwd`): every UTF-16 code
/// unit that is not an ASCII letter or digit becomes `-`, with no length cap. Lossy: the cwd is
/// in the records, never decoded from the name.
pub fn sanitize_cwd(cwd: &str) -> String {
    cwd.encode_utf16()
        .map(|u| match u8::try_from(u) {
            Ok(b) if b.is_ascii_alphanumeric() => char::from(b),
            _ => '-',
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_dirs_follow_sanitize_cwd() {
        assert_eq!(sanitize_cwd("/home/dev/shop"), "-home-dev-shop");
        assert_eq!(
            sanitize_cwd("/home/dev/api-gateway"),
            "-home-dev-api-gateway"
        );
        assert_eq!(sanitize_cwd("/home/dev/🚀"), "-home-dev---");
        let long = format!("/{}", "a".repeat(300));
        assert_eq!(sanitize_cwd(&long).len(), 301, "no cap, unlike Claude Code");
    }

    #[test]
    fn virtual_paths_map_to_the_runtime_dir() {
        let l = Layout {
            root: "/h".into(),
            qwen: "/q".into(),
            runtime: "/r".into(),
        };
        let v = l
            .virtual_path(Path::new("/r/projects/-x/chats/a.jsonl"))
            .unwrap();
        assert_eq!(v, ".qwen/projects/-x/chats/a.jsonl");
        assert!(l.virtual_path(Path::new("/q/settings.json")).is_none());
    }
}
