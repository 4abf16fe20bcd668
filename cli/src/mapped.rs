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
        let used = state
            .sessions
            .iter()
            .flatten()
            .filter_map(|s| s.cwd.as_deref())
            .chain(server_paths.iter().copied());
        if state.sessions.as_ref().is_some_and(|s| !s.is_empty()) {
            for rule in map.unused(used) {
                let old = rule.split_once('=').map_or(rule.as_str(), |(o, _)| o);
                crate::errln!(
                    "warning: --map-path {rule}: no session's working directory and no MCP \
                     server's path is under {old} (a typo?)"
                );
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
