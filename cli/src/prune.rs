//! `asp prune`: delete the blobs no snapshot names.

use asp_repo::prune::prune;
use clap::Parser;

use crate::args::{Common, RepoArg};
use crate::exit::{EXIT_CODES_HELP, Exit, Result};
use crate::human;

/// Delete the blobs no snapshot names (after `asp forget`, or an interrupted backup)
#[derive(Debug, Clone, Parser)]
#[command(after_help = format!("\
Examples:
  asp forget --keep-daily 30 && asp prune
  asp prune --dry-run

Prune takes the repository's lock exclusively: it waits for running backups and restores to
finish, and they wait for it. A blob any snapshot names is never removed, nor one another
entry of index.json names (another tool's image put into the layout: its manifests, configs
and layers); a snapshot, or such an entry's manifest, that cannot be read stops the prune
before anything is deleted. Another tool's OCI image layout (no locks/ folder, and no asp
snapshot in its index) is not a repository: prune refuses it.

{EXIT_CODES_HELP}"))]
pub struct PruneArgs {
    /// Say what would be removed; remove nothing
    #[arg(long)]
    pub dry_run: bool,

    #[command(flatten)]
    pub repo: RepoArg,

    #[command(flatten)]
    pub common: Common,
}

pub fn run(args: PruneArgs) -> Result<Exit> {
    let repo = args.repo.open()?;
    let r = prune(&repo, args.dry_run)?;
    if args.common.json {
        crate::outln!("{}", serde_json::to_string(&r).expect("serialises"));
    } else {
        crate::outln!(
            "{} {} ({}) and {} of interrupted writes; {} of {}{} kept",
            if args.dry_run {
                "would remove"
            } else {
                "removed"
            },
            human::count(
                r.removed_blobs as u64,
                "unreferenced blob",
                "unreferenced blobs"
            ),
            human::bytes(r.removed_bytes),
            human::count(r.removed_leftovers as u64, "leftover", "leftovers"),
            human::count(r.kept_blobs as u64, "blob", "blobs"),
            human::count(r.snapshots as u64, "snapshot", "snapshots"),
            match r.other_entries {
                0 => String::new(),
                n => format!(
                    " and {} that {}",
                    human::count(n as u64, "index entry", "index entries"),
                    if n == 1 {
                        "is not an asp snapshot"
                    } else {
                        "are not asp snapshots"
                    }
                ),
            }
        );
    }
    Ok(Exit::Ok)
}
