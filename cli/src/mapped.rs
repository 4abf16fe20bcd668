//! `--map-path OLD=NEW` for the commands that write state into a store (`asp-unpack`,
//! `asp restore`): the argument, and the state with its paths rewritten.

use std::path::Path;

use asp_convert::kit::pathmap::PathMap;
use asp_format::blob::{BlobSource, Overlay, StagingStore};
use asp_format::state::State;
use clap::Args;

use crate::exit::{Context, Result};

/// `--map-path OLD=NEW`, repeatable.
#[derive(Debug, Clone, Default, Args)]
pub struct MapPathArg {
    /// Rewrite paths under OLD to NEW (session working directories and paths inside the
    /// state); both absolute paths; repeatable, longest OLD wins
    #[arg(long = "map-path", value_name = "OLD=NEW")]
    pub map_path: Vec<String>,
}

impl MapPathArg {
    /// The rules given, checked.
    pub fn path_map(&self) -> Result<PathMap> {
        let mut map = PathMap::default();
        for rule in &self.map_path {
            map.add(rule)?;
        }
        Ok(map)
    }
}

/// What a `--map-path` rule that moves nothing is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnusedRule {
    /// A usage error, before anything is written, when no rule moves anything: the state is
    /// one harness's, and a typo in OLD would put every session at the path it had, and the
    /// corrected run would then write them all again at the new one (new-user trial
    /// helper-136, 2).
    Refuse,
    /// A warning: `asp restore --to all`, where a rule may be for another harness's sessions.
    Warn,
}

/// The folders most of `paths` (absolute paths) are under, by their first two components
/// (`/home/dev`), the most common first, at most three: what a person gives as OLD.
fn common_roots<'a>(paths: impl IntoIterator<Item = &'a str>) -> Vec<(String, usize)> {
    let mut count: std::collections::BTreeMap<String, usize> = std::collections::BTreeMap::new();
    for p in paths {
        if !p.starts_with('/') {
            continue;
        }
        let root: Vec<&str> = p.split('/').filter(|c| !c.is_empty()).take(2).collect();
        if root.is_empty() {
            continue;
        }
        *count.entry(format!("/{}", root.join("/"))).or_default() += 1;
    }
    let mut roots: Vec<(String, usize)> = count.into_iter().collect();
    roots.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    roots.truncate(3);
    roots
}

/// `/home/dev (12 sessions), /tmp (1 session)`.
fn roots_said(roots: &[(String, usize)]) -> String {
    roots
        .iter()
        .map(|(r, n)| {
            format!(
                "{r} ({})",
                crate::human::count(*n as u64, "session", "sessions")
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Says, when most sessions' working directories are not on this machine and no
/// `--map-path` moves them, which folder they are under and how to move them: a harness finds
/// a session by its folder, and restoring first and mapping after writes every session twice
/// (new-user trial helper-136, 2). `None` when most are here.
pub fn folders_not_here(state: &State) -> Option<String> {
    let cwds: Vec<&str> = state
        .sessions
        .iter()
        .flatten()
        .filter_map(|s| s.cwd.as_deref())
        .filter(|c| c.starts_with('/'))
        .collect();
    let missing: Vec<&str> = cwds
        .iter()
        .copied()
        .filter(|c| !Path::new(c).exists())
        .collect();
    if missing.is_empty() || missing.len() * 2 <= cwds.len() {
        return None;
    }
    let roots = common_roots(missing.iter().copied());
    let first = roots.first().map_or("/OLD", |(r, _)| r.as_str());
    Some(format!(
        "{} of {} sessions' working directories are not on this machine, under {}; a harness \
         lists a session by its folder: if the projects are elsewhere here, restore with \
         --map-path {first}=WHERE (see what it would do with --dry-run first)",
        missing.len(),
        cwds.len(),
        roots_said(&roots)
    ))
}

/// A state with `--map-path` applied. Rewritten bodies go into a staging store read before
/// the source, made in `staging_parent` (the destination's file system: the system temporary
/// directory may be memory-backed); none when there is no rule.
#[derive(Debug)]
pub struct Mapped {
    pub state: State,
    staging: Option<StagingStore>,
}

impl Mapped {
    pub fn new(
        state: State,
        map: &PathMap,
        source: &dyn BlobSource,
        staging_parent: &Path,
        unused: UnusedRule,
    ) -> Result<Mapped> {
        if map.is_empty() {
            return Ok(Mapped {
                state,
                staging: None,
            });
        }
        // A rule is used when a session's working directory or an MCP server's path is under
        // its OLD.
        let server_paths: Vec<&str> = state
            .tools
            .iter()
            .flatten()
            .flat_map(PathMap::server_paths)
            .collect();
        // (A memory note's project moves too: review helper-138, 7.)
        let note_projects = state
            .memory
            .iter()
            .flatten()
            .filter_map(|n| n.origin.project.as_deref());
        let used = state
            .sessions
            .iter()
            .flatten()
            .filter_map(|s| s.cwd.as_deref())
            .chain(server_paths.iter().copied())
            .chain(note_projects);
        if state.sessions.as_ref().is_some_and(|s| !s.is_empty()) {
            let cwds = state
                .sessions
                .iter()
                .flatten()
                .filter_map(|s| s.cwd.as_deref());
            let roots = roots_said(&common_roots(cwds));
            let unused_rules = map.unused(used);
            // Refused only when no rule moves anything: one rule in a set a person keeps for
            // several machines may be for another.
            let unused = match unused_rules.len() == map.rules().count() {
                true => unused,
                false => UnusedRule::Warn,
            };
            for rule in unused_rules {
                let old = rule.split_once('=').map_or(rule.as_str(), |(o, _)| o);
                let under = match roots.is_empty() {
                    true => String::new(),
                    false => format!("; they are under {roots}"),
                };
                match unused {
                    UnusedRule::Refuse => crate::bail_usage!(
                        "--map-path {rule}: no session's working directory, MCP server's path or \
                         memory note's project is under {old}{under}; nothing was written"
                    ),
                    UnusedRule::Warn => crate::errln!(
                        "warning: --map-path {rule}: no session's working directory, MCP server's \
                         path or memory note's project is under {old} (a typo?){under}"
                    ),
                }
            }
        }
        let staging = StagingStore::new_in(staging_parent)?;
        let state = map
            .apply(&state, source, &staging)
            .context("cannot apply --map-path")?;
        Ok(Mapped {
            state,
            staging: Some(staging),
        })
    }

    /// The bodies of [`Mapped::state`]: the rewritten ones, else `source`'s.
    pub fn blobs<'a>(&'a self, source: &'a dyn BlobSource) -> Overlay<'a> {
        match &self.staging {
            Some(s) => Overlay::new(vec![s as &dyn BlobSource, source]),
            None => Overlay::new(vec![source]),
        }
    }
}

/// Puts back as the backup had them, in `mapped` (the state with `--map-path` applied), the
/// MCP servers whose paths it moved where `store` already holds the server so: a whole restore
/// writes the harness's configuration as it is before the state (Gemini CLI's settings.json,
/// Codex's config.toml, with their servers at the old paths, and said to be), and a home may
/// have the server from before; the moved one would be refused there as "configured
/// differently", exit 3 with `--strict`. Reads the store's servers as its converter does (in
/// a dry run, its configuration as the restore would leave it). Each one put back is said in
/// `diagnostics`.
pub fn keep_servers_as_there(
    mapped: &mut State,
    original: &[asp_format::state::McpServer],
    store: &asp_convert::Store,
    diagnostics: &asp_convert::kit::report::Diagnostics,
) {
    for name in servers_kept_as_there(mapped, original, store) {
        diagnostics.push(asp_convert::kit::report::Diagnostic {
            severity: asp_convert::kit::report::Severity::Note,
            subject: None,
            line: None,
            message: format!(
                "MCP server \"{name}\" is kept as the backup had it, at the paths --map-path \
                 moves: the harness's configuration here already has it so; set its paths again \
                 for the moved folders"
            ),
        });
    }
}

/// [`keep_servers_as_there`]: the names put back.
fn servers_kept_as_there(
    mapped: &mut State,
    original: &[asp_format::state::McpServer],
    store: &asp_convert::Store,
) -> Vec<String> {
    let moved: Vec<&asp_format::state::McpServer> = original
        .iter()
        .filter(|o| {
            mapped
                .tools
                .iter()
                .flatten()
                .any(|m| m.name() == o.name() && m != *o)
        })
        .collect();
    if moved.is_empty() {
        return Vec::new();
    }
    let request = asp_convert::store::ReadRequest {
        kinds: asp_format::kind::KindSet::EMPTY.with(asp_format::kind::StateKind::Tools),
        sessions: &asp_convert::store::Sessions::All,
        options: asp_convert::harness::ReadOptions::default(),
        threads: None,
        blobs: &asp_format::blob::MemoryStore::new(),
        diagnostics: &asp_convert::kit::report::Diagnostics::new(),
        progress: &asp_format::progress::Quiet,
    };
    // (A home with no store of the harness yet has no server.)
    let Ok(there) = store.read(&request) else {
        return Vec::new();
    };
    let there = there.tools.unwrap_or_default();
    let mut kept = Vec::new();
    for o in moved {
        if there.iter().any(|t| t == o) {
            for m in mapped.tools.iter_mut().flatten() {
                if m.name() == o.name() {
                    *m = o.clone();
                }
            }
            kept.push(o.name().to_owned());
        }
    }
    kept
}
