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
        let cwds = state
            .sessions
            .iter()
            .flatten()
            .filter_map(|s| s.cwd.as_deref());
        if state.sessions.as_ref().is_some_and(|s| !s.is_empty()) {
            for rule in map.unused(cwds) {
                let old = rule.split_once('=').map_or(rule.as_str(), |(o, _)| o);
                eprintln!(
                    "warning: --map-path {rule}: no session's working directory is under {old} \
                     (a typo?)"
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
