//! `asp snapshots`: the snapshots of a repository.

use clap::Parser;

use crate::args::{Common, RepoArg};
use crate::exit::{EXIT_CODES_HELP, Exit, Result};

/// List the snapshots of a repository, oldest first
#[derive(Debug, Clone, Parser)]
#[command(after_help = format!("\
Examples:
  asp snapshots
  asp snapshots --repo /mnt/backup/asp --json

Each line: the snapshot id (the first 8 hex digits of its digest; any unique prefix of 4 or
more works wherever an id is asked for), when it was made (UTC), harness, home, host, and how
many sessions it holds (of them gone from the source).

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
    crate::outln!(
        "{:<8}  {:<24}  {:<12}  {:<8}  {:<12}  HOME",
        "ID",
        "TIME",
        "HARNESS",
        "SESSIONS",
        "HOST"
    );
    for s in &snapshots {
        let sessions = if s.gone > 0 {
            format!("{} ({} gone)", s.sessions, s.gone)
        } else {
            s.sessions.to_string()
        };
        crate::outln!(
            "{:<8}  {:<24}  {:<12}  {:<8}  {:<12}  {}",
            s.short_id(),
            s.created,
            s.harness,
            sessions,
            s.host,
            s.home
        );
    }
    Ok(Exit::Ok)
}
