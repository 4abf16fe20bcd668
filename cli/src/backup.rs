//! `asp backup`: harness stores into snapshots of a repository.

use std::num::NonZeroUsize;
use std::path::PathBuf;

use asp_convert::kit::report::Diagnostics;
use asp_convert::{ConvertError, Home};
use asp_repo::RepoError;
use asp_repo::backup::{BackupContext, BackupOptions, BackupOutcome, backup};
use clap::Parser;

use crate::args::{Common, RepoArg, parse_threads};
use crate::bail_usage;
use crate::exit::{Context, EXIT_CODES_HELP, Exit, Result};
use crate::human;
use crate::progress::Bar;

const AFTER_HELP: &str = "\
Examples:
  asp backup --from claude-code
      Snapshot your Claude Code sessions, instructions, skills, MCP servers, memory and
      settings, with Claude Code's own files (settings, rules, prompt history, the scripts
      its MCP servers run from ~/.claude; never credentials, databases or keys), into the
      repository ($ASP_REPO, else $XDG_DATA_HOME/asp/repo, else
      ~/.local/share/asp/repo; created on first use, in a missing or empty directory only:
      never in one holding other files, nor in another tool's OCI image layout).
  asp backup --from all --repo /mnt/backup/asp
      Every harness whose store exists in your home, one snapshot each.
  asp backup --from codex --home /mnt/old-laptop/home/me
      Another home's Codex store (snapshots record the harness, home and host).
  asp backup --from-bundle claude-2026-11.aspstate
      Add a bundle made by asp-pack as a snapshot (its layers are stored as they are).

Incremental: a session whose files (path, size, mtime, status change time, inode) have not
changed since the last snapshot of the same harness and home is not read again; --reread reads
every one. A session the harness has deleted since is kept, marked gone from source (`asp
sessions` shows it; `asp restore --session ID` brings it back). Nothing changed (neither what
the sessions hold nor their files' records): no snapshot is made and the command says so,
exit 0.

A file that cannot be read (a transcript the harness left broken, a configuration file the
user cannot read) is in no snapshot as it is now (the copy an earlier backup made is kept:
a session whose file or database cannot be read at all is counted unreadable, not gone):
it is listed as lost on every run until it is mended, also
with -q, and the command exits 3 (`--json` lists it under \"lost\" as {severity, file,
line, message}). So is a session gone from the source whose data the repository has lost
(`asp check` says which): it is kept as it is until `asp forget --session ID` lets it go.
A newest snapshot that cannot be read (its manifest damaged) is passed over: the backup is
made from the newest one that can be, says so and exits 4; `asp check` names the damaged one
until `asp forget --snapshot ID` lets it go.
What is left out by design (of the portable kinds; a configuration file named as holding
credentials, a link that leads nowhere) is said when a snapshot is made, but not with -q.

Run it every hour: see README (\"Backups\") for a systemd user timer and a cron line.";

/// Back up agent state into a snapshot repository, reading only what changed
#[derive(Debug, Clone, Parser)]
#[command(after_help = format!("{AFTER_HELP}\n\n{EXIT_CODES_HELP}"))]
// One source: a usage error names both when none is given.
#[command(group(
    clap::ArgGroup::new("source")
        .required(true)
        .args(["from", "from_bundle"])
))]
pub struct BackupArgs {
    /// The harness to back up (claude-code, codex, gemini, ...; repeatable), or `all` for every
    /// harness whose store exists in the home. A harness named whose store is not there is an
    /// error (exit 1) once the others are backed up
    #[arg(long, value_name = "HARNESS")]
    pub from: Vec<String>,

    /// Add a bundle (asp-pack's .aspstate) as a snapshot
    #[arg(long, value_name = "FILE")]
    pub from_bundle: Option<PathBuf>,

    /// Home directory holding the harness's store [default: your home; CODEX_HOME and the
    /// like are honoured when this is not given]
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,

    #[command(flatten)]
    pub repo: RepoArg,

    /// Read every session again, not only those whose files changed since the last snapshot
    /// (after a tool rewrote files and put their times back, or to check the store as it is).
    /// Also spelled --force, as before; elsewhere --force replaces an output
    #[arg(long = "reread", alias = "force", conflicts_with = "from_bundle")]
    pub force: bool,

    /// Threads reading sessions and compressing [default: one per core]
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub threads: Option<NonZeroUsize>,

    #[command(flatten)]
    pub common: Common,
}

pub fn run(args: BackupArgs) -> Result<Exit> {
    if let Some(file) = &args.from_bundle {
        // A file that is not a bundle at all (cut short, not a zip) is said before a
        // repository is made for it (new-user trial helper-137, 11: an empty new one was left).
        asp_format::bundle::Bundle::open(file)
            .with_context(|| format!("cannot back up {}", file.display()))?;
        let repo = args.repo.open_or_init()?;
        let bar = Bar::new(args.common.quiet);
        let o = asp_repo::from_bundle::backup_bundle(&repo, file, None, &bar)?;
        bar.clear();
        if args.common.json {
            crate::outln!("{}", serde_json::to_string(&[&o]).expect("serialises"));
        } else {
            crate::outln!("{}", summary(&o));
        }
        return Ok(Exit::Ok);
    }
    let known = asp_convert::harness_names();
    let all = args.from.iter().any(|f| f == "all");
    let mut harnesses: Vec<String> = if all {
        known.clone()
    } else {
        for f in &args.from {
            if let Err(e) = crate::args::parse_harness(f) {
                bail_usage!("--from {f}: {e}");
            }
        }
        let mut seen = std::collections::HashSet::new();
        let mut h = args.from.clone();
        h.retain(|f| seen.insert(f.clone()));
        h
    };
    // The stores first: a mistyped --home, or a harness with no store there, makes no
    // repository.
    let home = Home::resolve(args.home.clone())?;
    let present = |h: &str| {
        asp_convert::Store::harness(h, home.clone())
            .expect("a harness this build knows")
            .check_present()
    };
    // With `all`, the harnesses whose store is there. A harness named whose store is not there
    // fails the run after the others are backed up (an hourly job naming two must not stop
    // keeping one because the other went), and before any repository is made when none is.
    let mut missing = Vec::new();
    harnesses.retain(|h| match present(h) {
        Ok(()) => true,
        Err(e) => {
            if !all {
                missing.push(e);
            }
            false
        }
    });
    if harnesses.is_empty() {
        if all {
            // As a --home without the one harness's store: the source is not there (exit 1).
            return Err(crate::exit::Failure::new(
                asp_format::error::ErrorClass::Source,
                format!(
                    "no harness store in {} (this build knows: {})",
                    home.dir.display(),
                    known.join(", ")
                ),
            ));
        }
        return Err(no_store(missing));
    }
    let repo = args.repo.open_or_init()?;
    let bar = Bar::new(args.common.quiet);
    let mut outcomes = Vec::new();
    let mut incomplete = false;
    let mut damaged = false;
    // Harnesses whose backup failed, with why: with several, one that fails (its repository
    // documents damaged, a store locked) does not stop the others, and their outcomes are
    // said (review helper-133, 7: the first error ended the run, the outcomes made before it
    // unsaid and `--json` empty).
    let several = harnesses.len() > 1;
    let mut failed: Vec<(String, crate::exit::Failure)> = Vec::new();
    for harness in harnesses {
        let diagnostics = Diagnostics::new();
        let result = backup(
            &repo,
            &BackupOptions {
                harness: harness.clone(),
                home: home.clone(),
                threads: args.threads,
                host: None,
                skip_absent: all,
                reread_all: args.force,
            },
            &BackupContext {
                diagnostics: &diagnostics,
                progress: &bar,
            },
        );
        bar.clear();
        // What was lost is said on every run, `-q` or not, until it is mended: a file that
        // cannot be read is in no snapshot, and an hourly job must not hear of it only once.
        // What is left out by design or noted is said when a snapshot is made, unless `-q`
        // (nothing changed: it was said when the parent was made).
        let items = diagnostics.items();
        // (A backup that stored layers the repository had lost says how it mended it.)
        let made = result
            .as_ref()
            .is_ok_and(|o| o.snapshot.is_some() || o.blobs_added > 0)
            || result.is_err();
        let shown = items
            .iter()
            .filter(|d| d.severity.is_loss() || (made && !args.common.quiet));
        for line in human::finding_lines(shown) {
            bar.println(line);
        }
        let lost: Vec<serde_json::Value> = items
            .iter()
            .filter(|d| d.severity.is_loss())
            .map(human::finding_json)
            .collect();
        // What was left out by design, as `asp-pack --json` gives it: `-q` leaves it off
        // stderr, so a scheduled backup's script finds it here (it was nowhere in --json:
        // new-user trial helper-137, 2).
        let left_out: Vec<serde_json::Value> = items
            .iter()
            .filter(|d| d.severity.is_not_carried() && !d.severity.is_loss())
            .map(human::finding_json)
            .collect();
        incomplete |= result.is_ok() && !lost.is_empty();
        if let Ok(o) = &result {
            // Said `-q` or not, as a loss is: the backup goes on from an older snapshot, and
            // `asp check` names the damage until it is let go.
            for p in &o.passed_over {
                damaged = true;
                bar.println(format!(
                    "damaged: {} ({}): {}; this backup is made from {}",
                    o.harness,
                    o.home,
                    p.error,
                    o.parent
                        .map_or("nothing (a full backup)".to_owned(), |d| format!(
                            "snapshot {}, the newest that can be read",
                            d.short()
                        )),
                ));
            }
            if let (Some(why), Some(parent)) = (&o.records_unread, o.parent) {
                damaged = true;
                bar.println(format!(
                    "damaged: {} ({}): the source records of snapshot {} cannot be read \
                     ({why}); its state is whole: this backup is made from it, every session \
                     read again",
                    o.harness,
                    o.home,
                    parent.short(),
                ));
            }
            // Said `-q` or not: the repository was damaged, and is no longer.
            for d in &o.mended {
                bar.println(format!(
                    "mended: {} ({}): blob {d} in {} held other bytes than its name says \
                     (damaged); this backup wrote that document again, so the snapshots that \
                     name it can be read again",
                    o.harness,
                    o.home,
                    repo.root().display(),
                ));
            }
        }
        match result {
            Ok(o) if o.absent => continue,
            Ok(o) => outcomes.push((o, lost, left_out)),
            // `all` takes the harnesses whose store is there.
            Err(RepoError::Convert(ConvertError::NoStore { .. })) if all => continue,
            Err(e) if several => {
                let f = crate::exit::Failure::from(e);
                bar.println(format!("asp: error: backing up {harness}: {f}"));
                failed.push((harness, f));
            }
            Err(e) => return Err(e.into()),
        }
    }
    if all && outcomes.is_empty() && failed.is_empty() {
        // The stores there hold nothing yet (no session, no configuration): nothing was asked
        // that was not done.
        crate::errln!(
            "the harness stores in {} hold nothing to back up yet",
            home.dir.display()
        );
    }
    if args.common.json {
        // Each harness's outcome, with what it lost (empty when nothing was).
        let outcomes: Vec<serde_json::Value> = outcomes
            .iter()
            .map(|(o, lost, left_out)| {
                let mut v = serde_json::to_value(o).expect("outcome serialises");
                v["lost"] = serde_json::json!(lost);
                v["leftOut"] = serde_json::json!(left_out);
                v
            })
            .chain(
                failed
                    .iter()
                    .map(|(h, f)| serde_json::json!({"harness": h, "error": f.to_string()})),
            )
            .collect();
        crate::outln!(
            "{}",
            serde_json::to_string(&outcomes).expect("outcomes serialise")
        );
    } else {
        for (o, lost, _) in &outcomes {
            let lost = if lost.is_empty() {
                String::new()
            } else {
                format!("; {} LOST (listed above)", lost.len())
            };
            crate::outln!("{}{lost}", summary(o));
            if !args.common.quiet {
                for line in which(o) {
                    crate::outln!("{line}");
                }
            }
        }
    }
    if !missing.is_empty() {
        return Err(no_store(missing));
    }
    // The first failure's class, after every outcome was said: an error (1) or damage (4)
    // says more than what was lost elsewhere (3).
    if let Some((_, f)) = failed.first() {
        return Ok(f.exit());
    }
    Ok(if damaged {
        Exit::Integrity
    } else if incomplete {
        Exit::Incomplete
    } else {
        Exit::Ok
    })
}

/// The failure of the harnesses named whose store is not there, each said.
fn no_store(mut missing: Vec<ConvertError>) -> crate::exit::Failure {
    if missing.len() == 1 {
        return missing.remove(0).into();
    }
    let said: Vec<String> = missing.iter().map(ToString::to_string).collect();
    crate::exit::Failure::new(asp_format::error::ErrorClass::Source, said.join("; and "))
}

/// The sessions a backup found new, changed and newly gone, a line each kind, at most
/// [`NAMED`] ids on a line (`--json` has them all).
fn which(o: &BackupOutcome) -> Vec<String> {
    const NAMED: usize = 5;
    [
        ("new", &o.new_sessions),
        ("changed", &o.changed_sessions),
        ("newly gone from source", &o.gone_now),
        ("back in source", &o.back_sessions),
        ("unreadable, kept as before", &o.unreadable_sessions),
        ("changed besides sessions", &o.kinds_changed),
        (
            "configuration files new, changed or gone",
            &o.config_changed,
        ),
    ]
    .into_iter()
    .filter(|(_, ids)| !ids.is_empty())
    .map(|(what, ids)| {
        let more = ids.len().saturating_sub(NAMED);
        let shown = ids
            .iter()
            .take(NAMED)
            .cloned()
            .collect::<Vec<_>>()
            .join(", ");
        if more > 0 {
            format!("  {what}: {shown} and {more} more")
        } else {
            format!("  {what}: {shown}")
        }
    })
    .collect()
}

/// `claude-code (/home/me): snapshot 1a2b3c4d: 2 new, 1 changed, 1997 unchanged, 3 gone
/// from source; 5 blobs, 1.2 MiB added`, or `...: nothing changed`.
pub fn summary(o: &BackupOutcome) -> String {
    let Some(s) = &o.snapshot else {
        if o.blobs_added > 0 {
            return format!(
                "{} ({}): nothing changed; {}, {} the repository had lost stored again",
                o.harness,
                o.home,
                human::count(o.blobs_added as u64, "blob", "blobs"),
                human::bytes(o.bytes_added)
            );
        }
        return format!("{} ({}): nothing changed", o.harness, o.home);
    };
    let unreadable = match o.unreadable {
        0 => String::new(),
        n => format!(", {n} unreadable (kept as before)"),
    };
    // The gone count is every session held gone, the line below names the newly gone: said,
    // so the two do not look like a miscount.
    let newly = match o.gone_now.len() {
        n if n == 0 || n == o.gone => String::new(),
        n => format!(" ({n} newly)"),
    };
    // Said on the line, `-q` or not, as when nothing else changed.
    let again = match o.layers_stored_again {
        0 => String::new(),
        n => format!(
            " ({} the repository had lost stored again)",
            human::count(n as u64, "layer", "layers")
        ),
    };
    // A snapshot made only for its records says why, not only "0 new, 0 changed".
    let records = if o.records_changed
        && o.new + o.changed == 0
        && o.gone_now.is_empty()
        && o.kinds_changed.is_empty()
        && o.config_changed.is_empty()
    {
        " (the sessions' files changed on disk, not what they hold: their records are kept \
         so the next backup need not read them)"
    } else {
        ""
    };
    format!(
        "{} ({}): snapshot {}: {} new, {} changed, {} unchanged{unreadable}, {} gone from \
         source{newly}; {}, {} added{again}{records}",
        o.harness,
        o.home,
        s.short_id(),
        o.new,
        o.changed,
        o.unchanged,
        o.gone,
        human::count(o.blobs_added as u64, "blob", "blobs"),
        human::bytes(o.bytes_added)
    )
}
