//! Arguments shared by several commands.

use std::num::NonZeroUsize;

use asp_format::KindSet;
use asp_format::name::SessionId;
use clap::Args;

/// Options every command takes.
#[derive(Debug, Clone, Args)]
pub struct Common {
    /// Print the result as JSON on stdout (one document: an object; a list for `asp sessions`,
    /// `asp snapshots` and `asp backup`, one per harness backed up). A command that fails
    /// after its arguments were read prints {"error": {"message", "class", "exit"}} there
    /// instead (class: integrity, source, store or usage); on stderr when stdout holds
    /// something else already (a bundle with -o -)
    #[arg(long, global = true)]
    pub json: bool,

    /// No progress bar, and no lines of detail: what was left out by design and the notes
    /// (`asp backup` also leaves out the sessions new, changed and gone; `asp push` and `asp
    /// pull` their notes). What was lost, and what was done, are still said, and --json
    /// lists everything
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

/// `--strict`, for every command that carries state.
#[derive(Debug, Clone, Copy, Args)]
pub struct Strict {
    /// Exit 3 when anything was not taken, also what is left out by design or cannot exist in
    /// the target [default: exit 3 only when something was lost]
    #[arg(long)]
    pub strict: bool,
}

/// Parses `--kinds sessions,skills`.
pub fn parse_kinds(s: &str) -> Result<KindSet, String> {
    let set = KindSet::parse_list(s).map_err(|e| e.to_string())?;
    if set.is_empty() {
        return Err("name at least one kind".to_owned());
    }
    Ok(set)
}

/// Parses a harness name against the converters this build has.
pub fn parse_harness(s: &str) -> Result<String, String> {
    let known = asp_convert::harness_names();
    if known.iter().any(|k| k == s) {
        Ok(s.to_owned())
    } else if known.is_empty() {
        Err(format!(
            "unknown harness {s:?}: this build has no harness converters"
        ))
    } else {
        // `claude` for claude-code, `gemini-cli` for gemini: a name one of the known ones
        // begins with, or that begins with one of them; else a typo (`codx`, `claud-code`):
        // one or two letters off.
        let given = s.to_ascii_lowercase();
        let mut near: Vec<&String> = known
            .iter()
            .filter(|k| !given.is_empty() && (k.starts_with(&given) || given.starts_with(*k)))
            .collect();
        if near.is_empty() {
            near = known
                .iter()
                .filter(|k| edit_distance(k, &given) <= 2.min(k.len() / 3))
                .collect();
        }
        let hint = match near.as_slice() {
            [one] => format!("did you mean {one}? "),
            _ => String::new(),
        };
        Err(format!(
            "unknown harness {s:?} ({hint}this build knows: {})",
            known.join(", ")
        ))
    }
}

/// How many letters to insert, delete or change to make `a` into `b` (Levenshtein).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let next = (row[j + 1] + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = row[j + 1];
            row[j + 1] = next;
        }
    }
    row[b.len()]
}

/// Parses a session id (`--session`).
pub fn parse_session(s: &str) -> Result<SessionId, String> {
    SessionId::new(s).map_err(|e| e.to_string())
}

/// Parses a thread count (`--threads`): a positive number.
pub fn parse_threads(s: &str) -> Result<NonZeroUsize, String> {
    s.parse::<NonZeroUsize>()
        .map_err(|_| format!("{s:?} is not a positive number of threads"))
}

/// `--repo DIR`, shared by the repository commands.
#[derive(Debug, Clone, Args)]
pub struct RepoArg {
    /// The snapshot repository; restore, check, sessions, snapshots, pack and push only read
    /// it, from a read-only mount too [default: $ASP_REPO, else $XDG_DATA_HOME/asp/repo, else
    /// ~/.local/share/asp/repo]
    #[arg(long, value_name = "DIR")]
    pub repo: Option<std::path::PathBuf>,

    #[command(flatten)]
    pub wait: LockWaitArg,
}

/// `--lock-wait DURATION`, shared by every command that opens a repository.
#[derive(Debug, Clone, Default, Args)]
pub struct LockWaitArg {
    /// Give up (exit 1) when another asp command still holds a lock this one needs after
    /// waiting this long for it (the repository's, or a backup's of the same harness and
    /// home): 0, 30s, 10m, 2h [default: wait until it is free]
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub lock_wait: Option<std::time::Duration>,
}

impl LockWaitArg {
    /// `repo`, saying on stderr when it waits for a lock, and waiting no longer than
    /// `--lock-wait`.
    pub fn apply(&self, repo: asp_repo::Repository) -> asp_repo::Repository {
        let repo = waits_said(repo);
        match self.lock_wait {
            Some(limit) => repo.with_lock_wait(limit),
            None => repo,
        }
    }
}

/// A duration: a number of seconds, or one with `s`, `m` or `h` after it (`1.5s`, `10m`).
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let (number, unit) = match s.trim().strip_suffix(['s', 'm', 'h']) {
        Some(n) => (n, &s.trim()[n.len()..]),
        None => (s.trim(), "s"),
    };
    let factor = match unit {
        "m" => 60.0,
        "h" => 3600.0,
        _ => 1.0,
    };
    number
        .parse::<f64>()
        .ok()
        .filter(|n| n.is_finite() && *n >= 0.0)
        .and_then(|n| std::time::Duration::try_from_secs_f64(n * factor).ok())
        .ok_or_else(|| format!("{s:?} is not a duration (say 0, 30s, 10m or 2h)"))
}

impl RepoArg {
    /// The repository's directory: the one named, else the default.
    pub fn path(&self) -> Result<std::path::PathBuf, crate::exit::Failure> {
        self.repo
            .clone()
            .or_else(asp_repo::Repository::default_location)
            .ok_or_else(|| {
                crate::exit::Failure::usage(
                    "no repository: pass --repo DIR or set ASP_REPO (HOME is not set either)",
                )
            })
    }

    /// Opens the existing repository.
    pub fn open(&self) -> Result<asp_repo::Repository, crate::exit::Failure> {
        Ok(self.wait.apply(asp_repo::Repository::open(&self.path()?)?))
    }

    /// Opens the repository, making it where nothing is (what `asp backup` does). A new one
    /// is said on stderr even with `--quiet` (which hides the progress bar, not what was done),
    /// so a mistyped `--repo` in a scheduled backup does not go unnoticed.
    pub fn open_or_init(&self) -> Result<asp_repo::Repository, crate::exit::Failure> {
        let path = self.path()?;
        let (repo, made) = asp_repo::Repository::open_or_make(&path)?;
        if made {
            crate::errln!("created a new repository at {}", path.display());
        }
        Ok(self.wait.apply(repo))
    }
}

/// `repo`, saying on stderr when it waits for a lock another process holds.
fn waits_said(repo: asp_repo::Repository) -> asp_repo::Repository {
    repo.with_wait_notice(|m| crate::errln!("{m}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_is_seconds_or_has_its_unit() {
        use std::time::Duration;
        for (text, want) in [
            ("0", Duration::ZERO),
            ("30", Duration::from_secs(30)),
            ("1.5s", Duration::from_millis(1500)),
            ("10m", Duration::from_secs(600)),
            ("2h", Duration::from_secs(7200)),
        ] {
            assert_eq!(parse_duration(text), Ok(want), "{text}");
        }
        for bad in ["", "s", "-1", "10ms", "1d", "NaN", "inf", "1e400"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn edit_distance_counts_letters_inserted_deleted_or_changed() {
        for (a, b, d) in [
            ("codex", "codx", 1),
            ("claude-code", "claud-code", 1),
            ("gemini", "gemnii", 2),
            ("pi", "qwen", 4),
            ("", "abc", 3),
            ("same", "same", 0),
        ] {
            assert_eq!(edit_distance(a, b), d, "{a} {b}");
        }
    }

    #[cfg(all(feature = "claude-code", feature = "gemini"))]
    #[test]
    fn an_unknown_harness_near_a_known_one_is_suggested() {
        let err = parse_harness("claude").unwrap_err();
        assert!(err.contains("did you mean claude-code?"), "{err}");
        let err = parse_harness("Gemini-CLI").unwrap_err();
        assert!(err.contains("did you mean gemini?"), "{err}");
        for typo in ["claud-code", "clade-code"] {
            let err = parse_harness(typo).unwrap_err();
            assert!(err.contains("did you mean claude-code?"), "{err}");
        }
        let err = parse_harness("gemnii").unwrap_err();
        assert!(err.contains("did you mean gemini?"), "{err}");
        let err = parse_harness("vim").unwrap_err();
        assert!(!err.contains("did you mean"), "{err}");
        assert!(err.contains("this build knows: "), "{err}");
        assert_eq!(parse_harness("gemini").unwrap(), "gemini");
    }
}
