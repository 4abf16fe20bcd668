//! `asp check`: a repository's integrity.

use asp_format::error::ErrorClass;
use asp_repo::check::{CheckOptions, check};
use clap::Parser;

use crate::args::{Common, RepoArg};
use crate::exit::{EXIT_CODES_HELP, Exit, Failure, Result};
use crate::human;
use crate::progress::Bar;

/// Check a snapshot repository: every snapshot's manifests and the layers they name
#[derive(Debug, Clone, Parser)]
#[command(after_help = format!("\
Examples:
  asp check
      Every snapshot's manifests, state manifest and layer table are read and checked, and
      every layer they name is present with its size. Quick.
  asp check --read-data
      Also read every layer (its sha256 against its name) and decode every body (its sha256
      against the state): finds bit rot.
  asp check --rebuild-index
      When index.json is damaged or deleted (every command then says so), write a new one
      from the snapshot manifests in blobs/, each of which carries what the index lists of
      it; then check as above.
  asp check --read-data --repair; asp backup --from claude-code
      Move each layer whose bytes no longer match its name into <repo>/damaged/ (nothing is
      deleted); the next backup finds it missing and stores it again from the source, for
      the sessions the source still has. A layer only sessions gone from the source need
      cannot be stored again: backups go on, keep those sessions as they are and name them
      as lost (exit 3) on every run, until `asp forget --session ID` lets them go. (`asp
      restore` restores everything that does not need a lost layer.)

A missing or damaged blob is named with the sessions (and the snapshots holding them) or the
configuration files that need it. The next backup stores it again for a session the source
still has; for one gone from the source it is lost: `asp forget --session ID` lets that
session go from the newest snapshot, and the older snapshots that still hold it keep naming the
blob until a forget policy and `asp prune` let them go.

Blobs no snapshot names (left by an interrupted backup, or by forget) are counted, not
problems; `asp prune` removes them. What the index's other entries name (another tool's image
put into the layout: its manifests, configs and layers) is counted apart, not checked, and
never removed. Problems exit 4.

{EXIT_CODES_HELP}"))]
pub struct CheckArgs {
    /// Read all data, not only the documents
    #[arg(long)]
    pub read_data: bool,

    /// Move damaged layers aside (into <repo>/damaged/) for the next backup to store again
    #[arg(long, requires = "read_data")]
    pub repair: bool,

    /// First write a new index.json listing every snapshot whose manifest is in blobs/ (after
    /// index.json was damaged or deleted); the old one is kept as index.json.before-rebuild
    #[arg(long)]
    pub rebuild_index: bool,

    #[command(flatten)]
    pub repo: RepoArg,

    #[command(flatten)]
    pub common: Common,
}

pub fn run(args: CheckArgs) -> Result<Exit> {
    let repo = args.repo.open()?;
    // What the rebuild passed over is a problem of the check (exit 4); what it did is said on
    // stderr, so `--json` stays one document.
    let mut passed_over = Vec::new();
    if args.rebuild_index {
        let rebuilt = repo.rebuild_index()?;
        passed_over = rebuilt
            .damaged
            .iter()
            .map(|d| {
                format!(
                    "blob {d} holds a snapshot manifest's artifact type but does not match its \
                     name: the snapshot it was is not listed"
                )
            })
            .collect();
        crate::errln!(
            "rebuilt {}: {} listed (a snapshot forgotten but not yet pruned is listed again: \
             `asp forget` it again){}",
            repo.root().join("index.json").display(),
            human::count(rebuilt.snapshots as u64, "snapshot", "snapshots"),
            rebuilt
                .kept_aside
                .as_ref()
                .map(|p| format!("; the index before is kept as {}", p.display()))
                .unwrap_or_default()
        );
        if rebuilt.unreadable_before {
            // An image of another tool's that it listed and that is not listed again would
            // have its blobs deleted by the next prune.
            crate::errln!(
                "warning: the index before could not be read whole{}: what else it listed                  (not asp's snapshots) is listed again only where it could be read; look in                  the copy kept before any `asp prune`, which deletes the blobs no listed                  entry names",
                match rebuilt.entries_unread {
                    0 => String::new(),
                    n => format!(
                        " ({} could not be read; a snapshot among them is listed again from its \
                         manifest)",
                        human::count(n as u64, "entry", "entries")
                    ),
                }
            );
        }
    }
    let bar = Bar::new(args.common.quiet);
    let mut report = check(
        &repo,
        &CheckOptions {
            read_data: args.read_data,
            repair: args.repair,
        },
        &bar,
    )?;
    report.problems.extend(passed_over);
    bar.clear();
    if args.common.json {
        crate::outln!(
            "{}",
            serde_json::to_string(&report).expect("report serialises")
        );
    } else {
        for p in &report.problems {
            crate::outln!("problem: {p}");
        }
        for d in &report.moved_aside {
            crate::outln!(
                "moved aside: {d} into {}; the next `asp backup` stores it again for the \
                 sessions the source still has (one only sessions gone from the source need \
                 cannot be: `asp forget --session ID` lets them go)",
                repo.root().join("damaged").display()
            );
        }
        crate::outln!(
            "checked {}, {}{}; {} unreferenced{}{}{}; {}",
            human::count(report.snapshots as u64, "snapshot", "snapshots"),
            human::count(report.blobs as u64, "blob", "blobs"),
            if args.read_data {
                format!(" ({} bodies read)", report.bodies_read)
            } else {
                String::new()
            },
            report.unreferenced,
            if report.unreferenced > 0 && report.is_ok() {
                " (`asp prune` removes them)"
            } else {
                ""
            },
            match report.leftovers {
                0 => String::new(),
                n => format!(
                    ", {} of interrupted writes or of a backup running now (`asp prune` removes \
                     {} once none runs)",
                    human::count(n as u64, "leftover", "leftovers"),
                    if n == 1 { "it" } else { "them" }
                ),
            },
            match report.other_entries {
                0 => String::new(),
                n => format!(
                    "; {} of {} that {} (another tool's: not checked, and kept by `asp \
                     prune`)",
                    human::count(report.other_blobs as u64, "blob", "blobs"),
                    human::count(n as u64, "index entry", "index entries"),
                    if n == 1 {
                        "is not an asp snapshot"
                    } else {
                        "are not asp snapshots"
                    }
                ),
            },
            if report.is_ok() {
                "no problems".to_owned()
            } else {
                human::count(report.problems.len() as u64, "problem", "problems")
            }
        );
    }
    if report.is_ok() {
        Ok(Exit::Ok)
    } else {
        Err(Failure::new(
            ErrorClass::Integrity,
            format!(
                "{} has {}{}",
                repo.root().display(),
                human::count(report.problems.len() as u64, "problem", "problems"),
                if report.damaged_layers > 0 {
                    " (each is said above; a damaged layer, `asp check --read-data --repair` \
                     moves aside for the next backup to store again)"
                } else {
                    " (each is said above)"
                }
            ),
        ))
    }
}
