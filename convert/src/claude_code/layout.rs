//! Where Claude Code keeps things: the config dir, the global state file, project buckets.
//!
//! Paths inside the portable state (native files, memory origins) are relative to a *virtual
//! home* in which the config dir is `.claude/` and the global state file `.claude.json`. That
//! is the real layout of a default install; with `CLAUDE_CONFIG_DIR` the two live elsewhere,
//! and [`Layout`] maps between the virtual paths and the real ones, so a state packed from one
//! layout restores into the other.

use std::path::{Path, PathBuf};

use crate::harness::Home;

/// The config dir's name in the virtual home.
pub const CONFIG: &str = ".claude";
/// The global state file's name in the virtual home.
pub const GLOBAL: &str = ".claude.json";

/// The config dir's folder of rewind checkpoints, `<FILE_HISTORY>/<session id>/<file>`.
pub const FILE_HISTORY: &str = "file-history";
/// The config dir's folder of todo lists, `<TODOS>/<session id>-agent-<agent id>.json`.
pub const TODOS: &str = "todos";
/// The config dir's folder of pasted texts over 1,024 characters, `<PASTE_CACHE>/<the first 16
/// hex digits of the text's sha256>.txt`, which `history.jsonl` names by `contentHash`.
pub const PASTE_CACHE: &str = "paste-cache";

/// The real locations of one Claude Code install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// The config dir (`~/.claude` or `$CLAUDE_CONFIG_DIR`).
    pub config: PathBuf,
    /// The global state file (`~/.claude.json`, `$CLAUDE_CONFIG_DIR/.claude.json`, or a legacy
    /// `<config>/.config.json` when that exists).
    pub global: PathBuf,
    /// The home directory, for sessions that name no working directory.
    pub home: PathBuf,
}

impl Layout {
    /// The layout of `home`. `CLAUDE_CONFIG_DIR` is honoured only when the user did not name
    /// the home (`--home`), as Claude Code itself resolves it.
    pub fn of(home: &Home) -> Layout {
        let env_dir = if home.explicit {
            None
        } else {
            std::env::var_os("CLAUDE_CONFIG_DIR").filter(|v| !v.is_empty())
        };
        Layout::with_config_dir(&home.dir, env_dir.map(PathBuf::from))
    }

    /// The layout of `home` with an optional config dir override.
    pub fn with_config_dir(home: &Path, config_dir: Option<PathBuf>) -> Layout {
        let (config, global) = match config_dir {
            Some(dir) => {
                let global = dir.join(GLOBAL);
                (dir, global)
            }
            None => (home.join(CONFIG), home.join(GLOBAL)),
        };
        let legacy = config.join(".config.json");
        let global = if legacy.is_file() { legacy } else { global };
        Layout {
            config,
            global,
            home: home.to_path_buf(),
        }
    }

    /// `<config>/projects`.
    pub fn projects(&self) -> PathBuf {
        self.config.join("projects")
    }

    /// `<config>/file-history`: a folder per session of the files as they were before each
    /// edit (what `/rewind` puts back).
    pub fn file_history(&self) -> PathBuf {
        self.config.join(FILE_HISTORY)
    }

    /// `<config>/todos`: each session's (and subagent's) last todo list.
    pub fn todos(&self) -> PathBuf {
        self.config.join(TODOS)
    }

    /// `<config>/paste-cache`: the long texts pasted into prompts the prompt history names.
    pub fn paste_cache(&self) -> PathBuf {
        self.config.join(PASTE_CACHE)
    }

    /// The virtual path of a real path under the config dir.
    pub fn virtual_path(&self, real: &Path) -> Option<String> {
        let rel = real.strip_prefix(&self.config).ok()?;
        let mut out = String::from(CONFIG);
        for c in rel.components() {
            out.push('/');
            out.push_str(c.as_os_str().to_str()?);
        }
        Some(out)
    }
}

/// Claude Code's project bucket name for a path: every UTF-16 code unit that is not an ASCII
/// letter or digit becomes `-`; a result longer than 200 is cut to 200 and `-<hash>` appended
/// (the hash of the original path, see [`path_hash`]). Lossy on purpose: never decode it.
pub fn bucket(path: &str) -> String {
    let sanitized = sanitize(path);
    if sanitized.len() <= MAX_BUCKET {
        sanitized
    } else {
        format!("{}-{}", &sanitized[..MAX_BUCKET], path_hash(path))
    }
}

const MAX_BUCKET: usize = 200;

fn sanitize(path: &str) -> String {
    path.encode_utf16()
        .map(|u| match u8::try_from(u) {
            Ok(b) if b.is_ascii_alphanumeric() => char::from(b),
            _ => '-',
        })
        .collect()
}

/// The 32-bit string hash Claude Code appends to long bucket names (Java's `String.hashCode`
/// over UTF-16 code units), as the absolute value in lowercase base 36.
pub fn path_hash(path: &str) -> String {
    let mut h: i32 = 0;
    for u in path.encode_utf16() {
        h = h.wrapping_shl(5).wrapping_sub(h).wrapping_add(i32::from(u));
    }
    base36(i64::from(h).unsigned_abs())
}

fn base36(mut n: u64) -> String {
    const DIGITS: &[u8; 36] = b"0123456789abcdefghijklmnopqrstuvwxyz";
    if n == 0 {
        return "0".to_owned();
    }
    let mut out = Vec::new();
    while n > 0 {
        out.push(DIGITS[(n % 36) as usize]);
        n /= 36;
    }
    out.reverse();
    String::from_utf8(out).expect("ASCII digits")
}

/// Whether `bucket_name` is the bucket of `path`. Long names are matched by their 201-char
/// prefix, as Claude Code's own readers do: builds differ in the hash they append.
pub fn bucket_matches(bucket_name: &str, path: &str) -> bool {
    let sanitized = sanitize(path);
    if sanitized.len() <= MAX_BUCKET {
        bucket_name == sanitized
    } else {
        bucket_name.len() > MAX_BUCKET + 1
            && bucket_name.starts_with(&sanitized[..MAX_BUCKET])
            && bucket_name.as_bytes()[MAX_BUCKET] == b'-'
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_claude_codes_encoder() {
        assert_eq!(bucket("/home/dev/shop"), "-home-dev-shop");
        assert_eq!(bucket("/home/dev/my_app.v2"), "-home-dev-my-app-v2");
        assert_eq!(bucket("C:\\Users\\dev\\shop"), "C--Users-dev-shop");
        assert_eq!(bucket("/home/dev/café"), "-home-dev-caf-");
        assert_eq!(bucket("/home/dev/🚀app"), "-home-dev---app");
    }

    #[test]
    fn long_buckets_are_cut_and_hashed() {
        let p = "/home/dev/work/clients/example-corporation/platform-monorepo/packages/checkout-service/src/integrations/payment-providers/adyen/webhooks/handlers/refunds/partial/regression-fixtures/2026-11-checkout-incident/replay";
        let b = bucket(p);
        assert_eq!(b.len(), 200 + 1 + "91yiw3".len());
        assert!(b.ends_with("-91yiw3"), "{b}");
        assert!(bucket_matches(&b, p));
        // The Bun.hash variant of older native builds matches by prefix too.
        let bun = format!("{}-2g106a52z9ti9", &b[..200]);
        assert!(bucket_matches(&bun, p));
        assert!(!bucket_matches("-home-dev-shop", p));
    }

    #[test]
    fn virtual_paths_map_to_the_config_dir() {
        let l = Layout::with_config_dir(Path::new("/h"), Some(PathBuf::from("/cfg")));
        assert_eq!(
            l.virtual_path(Path::new("/cfg/skills/a/SKILL.md"))
                .as_deref(),
            Some(".claude/skills/a/SKILL.md")
        );
        assert_eq!(l.global, PathBuf::from("/cfg/.claude.json"));
    }
}
