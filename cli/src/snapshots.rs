//! `asp snapshots`: the snapshots of a repository.

use clap::Parser;

use crate::args::{Common, RepoArg};
use crate::exit::{EXIT_CODES_HELP, Exit, Result};
use crate::human;

/// List the snapshots of a repository, oldest first
#[derive(Debug, Clone, Parser)]
#[command(after_help = format!("\
Examples:
  asp snapshots
  asp snapshots --repo /mnt/backup/asp --json

Columns, in order: ID, the snapshot id (the first 8 hex digits of its digest; any unique
prefix of 4 or more works wherever a snapshot id is asked for; a session id is given whole);
TIME, when it was made (UTC); HARNESS; SESSIONS, how many sessions it holds (of them gone
from the source); HOST; HOME.

{EXIT_CODES_HELP}"))]
pub struct SnapshotsArgs {
    #[command(flatten)]
    pub repo: RepoArg,

    #[command(flatten)]
    pub common: Common,
}

pub fn run(args: SnapshotsArgs) -> Result<Exit> {
    let repo = args.repo.open()?;
    let snapshots = repo.snapshots()?;
    if args.common.json {
        // Each with its short `id` too, as `asp sessions --json` names a snapshot.
        crate::outln!(
            "{}",
            serde_json::to_string(&snapshots).expect("snapshots serialise")
        );
        return Ok(Exit::Ok);
    }
    if snapshots.is_empty() {
        crate::outln!("no snapshots in {}", repo.root().display());
        return Ok(Exit::Ok);
    }
    let rows: Vec<Vec<String>> = snapshots
        .iter()
        .map(|s| {
            let sessions = if s.gone > 0 {
                format!("{} ({} gone)", s.sessions, s.gone)
            } else {
                s.sessions.to_string()
            };
            vec![
                s.short_id(),
                s.created.clone(),
                s.harness.to_string(),
                sessions,
                s.host.clone(),
                s.home.clone(),
            ]
        })
        .collect();
    let header = ["ID", "TIME", "HARNESS", "SESSIONS", "HOST", "HOME"];
    for line in human::table(&header, &rows) {
        crate::outln!("{line}");
    }
    Ok(Exit::Ok)
}
