//! `asp forget`: drop snapshots by a keep policy, or drop sessions gone from the source.

use asp_convert::kit::time;
use asp_repo::forget::{
    DropSessions, KeepPolicy, NamedPlan, drop_sessions, forget, plan_keeping_sessions, plan_named,
};
use asp_repo::{Repository, SnapshotInfo};
use clap::Parser;

use crate::args::{Common, RepoArg};
use crate::bail_usage;
use crate::exit::{EXIT_CODES_HELP, Exit, Result};
use crate::human;

/// Forget snapshots by a keep policy or by id (then `asp prune` frees their space)
#[derive(Debug, Clone, Parser)]
#[command(after_help = format!("\
Examples:
  asp forget --keep-last 24 --keep-daily 30 --keep-weekly 52 --dry-run
      Say which snapshots an hourly backup would keep: the last 24, one a day for 30 days,
      one a week for a year. Without --dry-run, forget the others; then run `asp prune`.
  asp forget --gone-before 2026-01-01
      Let go of the sessions the harness deleted before 2026 (a new snapshot without them).
  asp forget --session 71958462-4bb8-46b6-a36a-1becf56c22dc
      Let go of one session in the newest snapshot. While the harness still has it, the next
      backup takes it again (said): delete it in the harness first.
  asp forget --snapshot 3f2a9c1e --dry-run
      Say what forgetting that one snapshot would do (one `asp check` says is damaged, or one
      taken by mistake). If it is the newest of its harness and home, the sessions only it
      holds are named: they go with it (the next backup takes them again if the source still
      has them).

Policies apply per harness and home. The newest snapshot of each is always kept: it holds
every session ever backed up, so no policy loses a session; an older snapshot that alone holds
a session (a series of --from-bundle backups, a backup made past a damaged parent) is kept too,
and said. Only --gone-before and --session let sessions go (older snapshots keep them until
forgotten themselves), or --snapshot naming that newest one.

{EXIT_CODES_HELP}"))]
pub struct ForgetArgs {
    /// Keep the newest N snapshots
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub keep_last: Option<usize>,

    /// Keep the newest snapshot of each of the last N days that have one (UTC)
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub keep_daily: Option<usize>,

    /// Keep the newest snapshot of each of the last N weeks that have one
    #[arg(long, value_name = "N", value_parser = at_least_one)]
    pub keep_weekly: Option<usize>,

    /// Drop sessions gone from the source before DATE (YYYY-MM-DD or RFC 3339) from the newest
    /// snapshots
    #[arg(long, value_name = "DATE")]
    pub gone_before: Option<String>,

    /// Drop this session, with its subagent sessions, from the newest snapshots (repeatable)
    #[arg(long = "session", value_name = "ID")]
    pub sessions: Vec<String>,

    /// Forget this snapshot, whatever a policy would keep: its id or a unique prefix of 4 or
    /// more hex digits (repeatable; `asp snapshots` lists them)
    #[arg(
        long = "snapshot",
        value_name = "ID",
        conflicts_with_all = ["keep_last", "keep_daily", "keep_weekly", "gone_before", "sessions"]
    )]
    pub snapshots: Vec<String>,

    /// Say what would be forgotten; change nothing
    #[arg(long)]
    pub dry_run: bool,

    #[command(flatten)]
    pub repo: RepoArg,

    #[command(flatten)]
    pub common: Common,
}

fn parse_date(s: &str) -> Option<i128> {
    time::parse(s).or_else(|| time::parse(&format!("{s}T00:00:00Z")))
}

pub fn run(args: ForgetArgs) -> Result<Exit> {
    let policy = KeepPolicy {
        last: args.keep_last,
        daily: args.keep_daily,
        weekly: args.keep_weekly,
    };
    let dropping = args.gone_before.is_some() || !args.sessions.is_empty();
    if !args.snapshots.is_empty() {
        let repo = args.repo.open()?;
        // Held from the plan to the index's rewrite (`Repository::lock_forget`); a dry run
        // writes nothing, and may read a repository it cannot write.
        let _forgetting = match args.dry_run {
            true => None,
            false => Some(repo.lock_forget()?),
        };
        return forget_named(&repo, &args);
    }
    if policy.is_empty() && !dropping {
        bail_usage!(
            "say what to keep (--keep-last, --keep-daily, --keep-weekly) or what to drop \
             (--gone-before, --session, --snapshot)"
        );
    }
    let gone_before = match &args.gone_before {
        Some(d) => match parse_date(d) {
            Some(t) => Some(t),
            None => bail_usage!("--gone-before {d:?} is not a date (YYYY-MM-DD or RFC 3339)"),
        },
        None => None,
    };
    let repo = args.repo.open()?;
    let _forgetting = match args.dry_run {
        true => None,
        false => Some(repo.lock_forget()?),
    };
    let mut json = serde_json::Map::new();
    if dropping {
        let dropped = drop_sessions(
            &repo,
            &DropSessions {
                gone_before,
                sessions: args.sessions.clone(),
                dry_run: args.dry_run,
            },
        )?;
        if !args.common.json {
            let verb = if args.dry_run {
                "would drop"
            } else {
                "dropped"
            };
            crate::outln!(
                "{verb} {} from the newest snapshot of {}",
                human::count(dropped.sessions.len() as u64, "session", "sessions"),
                human::count(dropped.from.len() as u64, "series", "series"),
            );
            for f in &dropped.from {
                crate::outln!(
                    "  {} {} (snapshot {}{}): {}",
                    f.harness,
                    f.home,
                    f.snapshot.short(),
                    f.new
                        .map(|n| format!(", new snapshot {}", n.short()))
                        .unwrap_or_default(),
                    f.sessions.join(", ")
                );
            }
            if !dropped.compressed_again.is_empty() {
                crate::outln!(
                    "  compressed again, without a dictionary made of a dropped session's \
                     transcript: {}",
                    human::count(dropped.compressed_again.len() as u64, "session", "sessions")
                );
            }
            if !dropped.still_in_source.is_empty() {
                crate::errln!(
                    "warning: {} still in the harness's store when last backed up ({}): the \
                     next backup keeps {} again; delete {} in the harness first",
                    human::count(
                        dropped.still_in_source.len() as u64,
                        "session was",
                        "sessions were"
                    ),
                    dropped.still_in_source.join(", "),
                    if dropped.still_in_source.len() == 1 {
                        "it"
                    } else {
                        "them"
                    },
                    if dropped.still_in_source.len() == 1 {
                        "it"
                    } else {
                        "them"
                    },
                );
            }
        }
        json.insert(
            "dropped".to_owned(),
            serde_json::to_value(&dropped).expect("serialises"),
        );
    }
    if !policy.is_empty() {
        let (p, held) = plan_keeping_sessions(&repo, &repo.snapshots()?, &policy)?;
        if !args.dry_run {
            forget(&repo, &p.remove)?;
        }
        if !args.common.json {
            let verb = if args.dry_run {
                "would forget"
            } else {
                "forgot"
            };
            crate::outln!(
                "{verb} {}, keeping {}{}",
                human::count(p.remove.len() as u64, "snapshot", "snapshots"),
                p.keep.len(),
                if p.remove.is_empty() || args.dry_run {
                    ""
                } else {
                    "; `asp prune` frees their space"
                }
            );
            for s in &p.remove {
                crate::outln!("  {}", snapshot_line(s));
            }
            for h in &held {
                let why = match h.sessions.as_slice() {
                    [] => "its state cannot be read to tell which sessions it holds (`asp check` says why)".to_owned(),
                    ids => format!(
                        "no other snapshot kept of {} in {} holds {} {}",
                        h.snapshot.harness,
                        h.snapshot.home,
                        if ids.len() == 1 { "session" } else { "sessions" },
                        match ids.len() {
                            1..=5 => ids.join(", "),
                            n => format!("{} and {} more", ids[..5].join(", "), n - 5),
                        }
                    ),
                };
                crate::outln!("  kept {}: {why}", snapshot_line(&h.snapshot));
            }
        }
        json.insert(
            "snapshots".to_owned(),
            serde_json::to_value(&p).expect("serialises"),
        );
        if !held.is_empty() {
            json.insert(
                "heldBack".to_owned(),
                serde_json::to_value(&held).expect("serialises"),
            );
        }
    }
    if args.common.json {
        json.insert("dryRun".to_owned(), serde_json::Value::Bool(args.dry_run));
        crate::outln!("{}", serde_json::Value::Object(json));
    }
    Ok(Exit::Ok)
}

/// A snapshot as the listings show it: short id, time, harness, home.
fn snapshot_line(s: &SnapshotInfo) -> String {
    format!("{}  {}  {}  {}", s.short_id(), s.created, s.harness, s.home)
}

/// `--snapshot ID`: forgets the snapshots named, saying first what goes with a series' newest.
fn forget_named(repo: &Repository, args: &ForgetArgs) -> Result<Exit> {
    let p: NamedPlan = plan_named(repo, &args.snapshots)?;
    if !args.dry_run {
        forget(repo, &p.remove)?;
    }
    if args.common.json {
        crate::outln!(
            "{}",
            serde_json::json!({ "named": p, "dryRun": args.dry_run })
        );
        return Ok(Exit::Ok);
    }
    let verb = if args.dry_run {
        "would forget"
    } else {
        "forgot"
    };
    crate::outln!(
        "{verb} {}{}",
        human::count(p.remove.len() as u64, "snapshot", "snapshots"),
        if args.dry_run {
            ""
        } else {
            "; `asp prune` frees their space"
        }
    );
    for s in &p.remove {
        crate::outln!("  {}", snapshot_line(s));
    }
    for s in &p.unreadable {
        crate::outln!(
            "snapshot {} cannot be read, so which sessions only it holds cannot be told: a \
             session gone from the source that only it holds {} with it at the next `asp \
             prune`, though that session's own blobs may be sound. Keep it while such a session \
             matters (`asp check` goes on naming it; a copy pushed to a registry can be pulled \
             again)",
            s.short_id(),
            if args.dry_run { "would go" } else { "goes" }
        );
    }
    for n in &p.newest_forgotten {
        let now = match &n.newest {
            Some(s) => format!("the newest is then {}", s.short_id()),
            None => "no snapshot of it is left".to_owned(),
        };
        crate::outln!(
            "that is the newest snapshot of {} in {}, which holds every session it backed up; \
             {now}",
            n.harness,
            n.home
        );
        match &n.sessions_only_it_held {
            Some(ids) if ids.is_empty() => {
                crate::outln!("  no session is held only by it");
            }
            Some(ids) => {
                crate::outln!(
                    "  {} only it holds {} with it (the next backup takes those the source \
                     still has again):",
                    human::count(ids.len() as u64, "session", "sessions"),
                    if args.dry_run { "would go" } else { "went" }
                );
                for id in ids {
                    crate::outln!("    {id}");
                }
            }
            None => {
                crate::outln!(
                    "  which sessions only it holds cannot be told: a snapshot's state cannot \
                     be read (`asp check` says which)"
                );
            }
        }
    }
    Ok(Exit::Ok)
}

/// A `--keep-*` count: 0 would keep none, which is not what a person asking to keep means
/// (`--keep-last 0` kept one: new-user trial helper-137, 11).
fn at_least_one(s: &str) -> std::result::Result<usize, String> {
    match s.parse::<usize>() {
        Ok(0) => Err(
            "0 keeps nothing; give 1 or more (asp forget --snapshot ID lets go of one snapshot)"
                .to_owned(),
        ),
        Ok(n) => Ok(n),
        Err(e) => Err(e.to_string()),
    }
}
