//! `asp forget`: drop snapshots by a keep policy, or drop sessions gone from the source.

use asp_convert::kit::time;
use asp_repo::forget::{DropSessions, KeepPolicy, drop_sessions, forget, plan};
use clap::Parser;

use crate::args::{Common, RepoArg};
use crate::bail_usage;
use crate::exit::{EXIT_CODES_HELP, Exit, Result};
use crate::human;

/// Forget snapshots by a keep policy (then `asp prune` frees their space)
#[derive(Debug, Clone, Parser)]
#[command(after_help = format!("\
Examples:
  asp forget --keep-last 24 --keep-daily 30 --keep-weekly 52 --dry-run
      Say which snapshots an hourly backup would keep: the last 24, one a day for 30 days,
      one a week for a year. Without --dry-run, forget the others; then run `asp prune`.
  asp forget --gone-before 2026-01-01
      Let go of the sessions the harness deleted before 2026 (a new snapshot without them).
  asp forget --session 71958462-4bb8-46b6-a36a-1becf56c22dc
      Let go of one session in the newest snapshot.

Policies apply per harness and home. The newest snapshot of each is always kept: it holds
every session ever backed up, so no policy loses a session; only --gone-before and --session
let sessions go (older snapshots keep them until forgotten themselves).

{EXIT_CODES_HELP}"))]
pub struct ForgetArgs {
    /// Keep the newest N snapshots
    #[arg(long, value_name = "N")]
    pub keep_last: Option<usize>,

    /// Keep the newest snapshot of each of the last N days that have one (UTC)
    #[arg(long, value_name = "N")]
    pub keep_daily: Option<usize>,

    /// Keep the newest snapshot of each of the last N weeks that have one
    #[arg(long, value_name = "N")]
    pub keep_weekly: Option<usize>,

    /// Drop sessions gone from the source before DATE (YYYY-MM-DD or RFC 3339) from the newest
    /// snapshots
    #[arg(long, value_name = "DATE")]
    pub gone_before: Option<String>,

    /// Drop this session from the newest snapshots (repeatable)
    #[arg(long = "session", value_name = "ID")]
    pub sessions: Vec<String>,

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
    if policy.is_empty() && !dropping {
        bail_usage!(
            "say what to keep (--keep-last, --keep-daily, --keep-weekly) or what to drop \
             (--gone-before, --session)"
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
                "{verb} {}{}",
                human::count(dropped.sessions.len() as u64, "session", "sessions"),
                dropped
                    .snapshots
                    .iter()
                    .map(|s| format!("; new snapshot {}", s.short_id()))
                    .collect::<String>()
            );
            for s in &dropped.sessions {
                crate::outln!("  {s}");
            }
        }
        json.insert(
            "dropped".to_owned(),
            serde_json::to_value(&dropped).expect("serialises"),
        );
    }
    if !policy.is_empty() {
        let p = plan(&repo.snapshots()?, &policy);
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
                crate::outln!(
                    "  {}  {}  {}  {}",
                    s.short_id(),
                    s.created,
                    s.harness,
                    s.home
                );
            }
        }
        json.insert(
            "snapshots".to_owned(),
            serde_json::to_value(&p).expect("serialises"),
        );
    }
    if args.common.json {
        crate::outln!("{}", serde_json::Value::Object(json));
    }
    Ok(Exit::Ok)
}
