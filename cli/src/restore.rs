//! `asp restore`: a snapshot (or some of its sessions) back into a harness's store.

use std::path::PathBuf;

use asp_convert::harness::absolute;
use asp_convert::kit::config::{without_credentials, without_credentials_said};
use asp_convert::kit::placement::{Grants, Placement};
use asp_convert::kit::report::Diagnostics;
use asp_convert::store::WriteRequest;
use asp_convert::{Home, Store};
use asp_format::KindSet;
use asp_repo::backup::home_name;
use asp_repo::blobs::SnapshotBlobs;
use asp_repo::snapshot::PassedOver;
use asp_repo::{RepoError, Repository, Snapshot, SnapshotInfo};
use clap::Parser;

use crate::args::{Common, RepoArg, Strict, parse_harness, parse_kinds};
use crate::bail_usage;
use crate::exit::{Context, EXIT_CODES_HELP, Exit, Result};
use crate::imported::Imported;
use crate::mapped::{MapPathArg, Mapped};
use crate::progress::Bar;

const AFTER_HELP: &str = "\
Examples:
  asp restore --to claude-code
      Restore the newest snapshot of Claude Code in your home (sessions the harness deleted
      since included). Existing sessions are never overwritten: the same one is reported as
      already there, and where a different one holds its id, that one is kept and the
      backed-up one is written beside it under a new id (in the summary: session OLD → NEW).
      The harness's own configuration comes back where none is; where your machine has its
      own different file, that is kept and the backed-up copy is written beside it as
      <file>.asp-restored; so are instructions changed since (AGENTS.md, GEMINI.md,
      QWEN.md; Claude Code's CLAUDE.md goes beside as CLAUDE.imported.md, as every carry
      into Claude Code writes it). Session options (model, permission mode, effort) are added to your settings
      file only where it sets none, each one said.
  asp restore --session 71958462-4bb8-46b6-a36a-1becf56c22dc --to claude-code
      Bring back one session (with its subagents; for Claude Code also its rewind
      checkpoints and todo lists), byte for byte.
  asp restore --snapshot 1a2b3c4d --to codex --dry-run --json
      Say what restoring that snapshot into Codex would take and leave behind; write nothing.
  asp restore --to claude-code --home /mnt/new-machine/home/me
      Restore into another home (a fresh machine); the directory must exist, so that a typo
      is an error rather than a new tree.
  asp restore --to claude-code --map-path /home/me=/Users/me --map-path /srv/work=/Users/me/work
      Restore onto a machine where the projects live elsewhere: working directories, paths
      inside the sessions and the projects of local-scope MCP servers are rewritten (the
      longest OLD wins; a line that is a path is rewritten, prose that merely mentions one is
      left alone).

`latest` (the default) is the newest snapshot of the --to harness in the --home; when there
is none, the newest snapshot of that harness; when the repository holds none of that harness
(carrying into another one), its newest snapshot if all its snapshots are of one harness and
home, else name one with --snapshot. With --session, it is the newest snapshot that holds
the sessions, looked for in that order and then in every other harness and home (so
`--session ID --to codex` finds a session backed up from Claude Code). A newer snapshot of
that harness and home that cannot be read (damaged) is passed over for the newest one that
can, as `asp sessions` lists them: the restore says which it passed over, restores, and exits
4 (_meta.asp.passedOver in --json); a snapshot named with --snapshot that cannot be read is
not passed over. With --session, that is of the harness and home restored from: a damaged
snapshot of one looked in before it (whose newest readable snapshot does not hold the
sessions) is a note, not exit 4 (_meta.asp.passedOverElsewhere). --json prints the
_asp/state/import answer, as asp-unpack --json does (with _meta.asp.resume, alreadyThere,
writtenInto and findings).

Every body is read and checked before anything is written. What needs data the repository
has lost or damaged is left out and named (a rewind checkpoint, todo list or tool result
alone; else the whole session with its subagents; a skill, a note), the rest is restored, and the exit code
is 4 (notTaken and _meta.asp.damaged in --json). `asp check --read-data --repair`, then
`asp backup`, stores such data again from the source.";

/// Restore a snapshot, or sessions of it, into an agent's store
#[derive(Debug, Clone, Parser)]
#[command(after_help = format!("{AFTER_HELP}\n\n{EXIT_CODES_HELP}"))]
pub struct RestoreArgs {
    /// Set by `--to all` for each harness it restores (not an option).
    #[arg(skip)]
    pub within_all: bool,

    /// The snapshot: its id (a unique prefix of 4 or more hex digits) or `latest`
    #[arg(long, value_name = "ID", default_value = "latest")]
    pub snapshot: String,

    /// Restore only this session and its subagent sessions (repeatable; only the sessions
    /// kind unless --kinds says more). A subagent's own id restores it alone, as a
    /// conversation of its own: its parent's id brings it back under the parent
    #[arg(long = "session", value_name = "ID")]
    pub sessions: Vec<String>,

    /// Write into this harness's store (claude-code, codex, gemini, ...), or `all`: the newest
    /// snapshot of every harness the repository holds, each into its own harness (what `asp
    /// backup --from all` took; on a fresh machine, one command; --json gives one array of
    /// answers, each with its `harness`)
    #[arg(long, value_name = "HARNESS", value_parser = parse_harness_or_all, required = true)]
    pub to: String,

    /// Home directory holding the harness's store, which must exist (its harness folder need
    /// not) [default: your home]
    #[arg(long, value_name = "DIR")]
    pub home: Option<PathBuf>,

    /// Restore only these kinds, comma-separated [default: all the snapshot holds]
    #[arg(long, value_name = "KINDS", value_parser = parse_kinds)]
    pub kinds: Option<KindSet>,

    /// Say what would be taken and what not, and exit as the restore would; write nothing
    /// (the state is judged against the configuration as the restore would leave it)
    #[arg(long)]
    pub dry_run: bool,

    /// Leave out the folder trust and approvals the harness's configuration holds by a
    /// folder's path (Claude Code's trust of a folder, the tools it runs there without asking,
    /// the .mcp.json servers approved there; Gemini CLI's and Qwen Code's trustedFolders.json;
    /// the projects Codex's config.toml trusts), the MCP servers Gemini CLI's settings.json
    /// runs without asking (trust: true), and a permission mode that acts without asking
    /// (Claude Code's permissions.defaultMode acceptEdits or auto; a carried session mode such
    /// as acceptEdits, autoEdit, yolo, Codex's auto or full-access): on another machine
    /// another repository may sit at that path, and a server's tools should not run unasked
    /// there before it is looked at. Each is said either way
    #[arg(long)]
    pub no_grants: bool,

    #[command(flatten)]
    pub map_path: MapPathArg,

    #[command(flatten)]
    pub repo: RepoArg,

    #[command(flatten)]
    pub strict: Strict,

    #[command(flatten)]
    pub common: Common,
}

/// The snapshot `id` names. `latest`: the newest of `harness` in `home`, else of `harness`,
/// else of the one harness and home the repository holds (carrying into another harness).
pub fn pick(repo: &Repository, id: &str, harness: &str, home: &Home) -> Result<SnapshotInfo> {
    if id != "latest" {
        return Ok(repo.find(id)?);
    }
    if let Some(s) = repo.latest(harness, &home_name(home))? {
        return Ok(s);
    }
    let all = repo.snapshots()?;
    if let Some(s) = all.iter().rev().find(|s| s.harness == harness) {
        // A backup of another home: the newest. Backups of other homes too are named, so that
        // a fresh machine does not go without a laptop's sessions unsaid (found by a new
        // user's trial).
        let others: Vec<String> = repo
            .newest_of_each_series()?
            .into_iter()
            .filter(|o| o.harness == harness && o.home != s.home)
            .map(|o| format!("{} (snapshot {})", o.home, o.short_id()))
            .collect();
        if !others.is_empty() {
            crate::errln!(
                "note: restoring the newest backup of {harness}, of {} (snapshot {}); the \
                 repository also holds backups of {harness} from {}: name one with --snapshot ID",
                s.home,
                s.short_id(),
                others.join(", ")
            );
        }
        return Ok(s.clone());
    }
    // Carrying into another harness: the newest snapshot of each harness and home there is.
    // One is taken; of several, none is guessed.
    let mut chains = repo.newest_of_each_series()?.into_iter();
    match (chains.next(), chains.len()) {
        (None, _) => bail_usage!(
            "{} has no snapshot yet (asp backup makes them)",
            repo.root().display()
        ),
        (Some(only), 0) => Ok(only),
        (Some(first), _) => {
            let named: Vec<String> = std::iter::once(first)
                .chain(chains)
                .map(|s| format!("{} ({} in {})", s.short_id(), s.harness, s.home))
                .collect();
            bail_usage!(
                "{} has no snapshot of {harness}; name the one to carry with --snapshot ID, the newest of each: {}",
                repo.root().display(),
                named.join(", ")
            )
        }
    }
}

/// The newest snapshot not among `newest` that holds one of `ids`, and which: what a session
/// forgotten from its series' newest snapshot is restored from. Snapshots that cannot be read
/// are passed over (this only finds a hint).
fn older_holder<'a>(
    repo: &Repository,
    newest: &[SnapshotInfo],
    ids: &[&'a str],
) -> Option<(SnapshotInfo, &'a str)> {
    let mut older: Vec<SnapshotInfo> = repo
        .snapshots()
        .ok()?
        .into_iter()
        .filter(|s| !newest.iter().any(|n| n.digest == s.digest))
        .collect();
    older.sort_by_key(|s| std::cmp::Reverse(s.created_ns()));
    let wanted: Vec<String> = ids.iter().map(|i| (*i).to_owned()).collect();
    older.into_iter().find_map(|info| {
        let snap = Snapshot::load_sessions(repo, &info, &wanted).ok()?;
        let held = snap
            .state
            .sessions
            .iter()
            .flatten()
            .find_map(|s| ids.iter().copied().find(|i| *i == s.id.as_str()))?;
        Some((info, held))
    })
}

/// What [`pick_for_sessions`] chose: the snapshot, loaded; the newer snapshots of its own
/// series (harness and home) passed over for it, being damaged (said, and the restore exits
/// 4: what is restored is not the newest of its series); and those of the series looked in
/// before it, whose newest readable snapshot did not hold the sessions (said as a note, the
/// exit unchanged: the damaged one may have held a newer copy of them, but the sessions are
/// restored whole from where they are found, as they would be had that series no snapshot).
struct ForSessions {
    info: SnapshotInfo,
    snapshot: Snapshot,
    passed_over: Vec<PassedOver>,
    elsewhere: Vec<(SnapshotInfo, PassedOver)>,
    /// Sessions the snapshot chosen holds that another harness's newest snapshot holds in a
    /// version updated later, a line each: a session carried into the --to harness once is
    /// found in its snapshot first, and restoring it again took that older copy, "already
    /// there", with no word (new-user trial helper-136, 3).
    newer_elsewhere: Vec<String>,
}

/// The sessions of `found` (ids `ids`) whose version in the newest snapshot of another harness
/// than `harness` was updated later, said with the snapshot to give `--snapshot`.
fn newer_elsewhere(
    repo: &Repository,
    candidates: &[SnapshotInfo],
    harness: &str,
    found: &Snapshot,
    ids: &[String],
) -> Vec<String> {
    let updated = |snap: &Snapshot, id: &str| -> Option<String> {
        snap.state
            .sessions
            .iter()
            .flatten()
            .find(|s| s.id.as_str() == id)
            .and_then(|s| s.updated_at.clone())
    };
    let mut said = Vec::new();
    for other in candidates.iter().filter(|c| c.harness != harness) {
        let Ok(snap) = Snapshot::load_sessions(repo, other, ids) else {
            continue;
        };
        for id in ids {
            if let (Some(there), Some(here)) = (updated(&snap, id), updated(found, id))
                && there > here
            {
                said.push(format!(
                    "session {id} is in snapshot {} ({} in {}) too, updated later ({there}); this \
                     restores the version {} holds ({here}): give --snapshot {} for the other",
                    other.short_id(),
                    other.harness,
                    other.home,
                    found.info.short_id(),
                    other.short_id(),
                ));
            }
        }
    }
    said
}

/// The snapshot to restore the sessions `ids` from, loaded with them, and the snapshots that
/// could not be read and were passed over on the way ([`ForSessions`]). `latest`: the
/// newest snapshot that holds them all, preferring what [`pick`] prefers (the --to harness in
/// the home, then that harness anywhere), then the newest of every other harness and home,
/// so that `asp restore --session ID --to codex` carries a Claude Code session without being
/// told which snapshot holds it; of each harness and home, the newest that can be read (as
/// `asp sessions` lists it). Sessions that no one snapshot holds together are a usage error
/// naming where each one is.
fn pick_for_sessions(
    repo: &Repository,
    id: &str,
    harness: &str,
    home: &Home,
    ids: &[String],
) -> Result<ForSessions> {
    if id != "latest" {
        let info = repo.find(id)?;
        let snapshot = Snapshot::load_sessions(repo, &info, ids)?;
        return Ok(ForSessions {
            info,
            snapshot,
            passed_over: Vec::new(),
            elsewhere: Vec::new(),
            newer_elsewhere: Vec::new(),
        });
    }
    let all = repo.snapshots()?;
    // The newest snapshot of each harness and home holds every session of that series.
    let mut candidates = repo.newest_of_each_series()?;
    if candidates.is_empty() {
        bail_usage!(
            "{} has no snapshot yet (asp backup makes them)",
            repo.root().display()
        );
    }
    let here = home_name(home);
    // Newest first, then the --to harness in this home, then that harness anywhere.
    candidates.sort_by_key(|s| std::cmp::Reverse(s.created_ns()));
    candidates.sort_by_key(|s| (s.harness != harness || s.home != here, s.harness != harness));
    let mut holder: std::collections::BTreeMap<&str, String> = std::collections::BTreeMap::new();
    // A snapshot of another harness that cannot be read does not stop the search; it is said
    // only when no snapshot holds the sessions.
    let mut unreadable = None;
    // Newer snapshots of the series looked in, passed over for the newest that can be read,
    // each with the newest of its series ([`ForSessions::elsewhere`]).
    let mut elsewhere: Vec<(SnapshotInfo, PassedOver)> = Vec::new();
    // The ids there are, for a hint of the whole ones when given ones are not found.
    let mut known: std::collections::BTreeSet<String> = std::collections::BTreeSet::new();
    for newest in &candidates {
        // (The loader returns what every repository read returns, `RepoError`, which is large
        // for every caller alike; clippy says so only of a closure.)
        #[allow(clippy::result_large_err)]
        let read = Snapshot::newest_readable(repo, &all, &newest.harness, &newest.home, |r, i| {
            Snapshot::load_sessions(r, i, ids)
        });
        let (snap, passed) = match read {
            Ok((found, passed)) => {
                if let Some(first) = passed.first() {
                    unreadable.get_or_insert(RepoError::Integrity(first.error.clone()));
                }
                match found {
                    Some(s) => (s, passed),
                    None => {
                        elsewhere.extend(passed.into_iter().map(|p| (newest.clone(), p)));
                        continue;
                    }
                }
            }
            Err(e) => {
                unreadable.get_or_insert(e);
                continue;
            }
        };
        let info = &snap.info;
        let (_, missing) = snap.state.select(
            KindSet::EMPTY.with(asp_format::StateKind::Sessions),
            Some(ids),
        );
        if missing.is_empty() {
            let newer_elsewhere = match info.harness == harness {
                true => newer_elsewhere(repo, &candidates, harness, &snap, ids),
                false => Vec::new(),
            };
            return Ok(ForSessions {
                info: info.clone(),
                snapshot: snap,
                passed_over: passed,
                elsewhere,
                newer_elsewhere,
            });
        }
        elsewhere.extend(passed.into_iter().map(|p| (newest.clone(), p)));
        known.extend(
            snap.state
                .sessions
                .iter()
                .flatten()
                .map(|s| s.id.to_string()),
        );
        for asked in ids.iter().filter(|i| !missing.contains(i)) {
            holder.entry(asked.as_str()).or_insert_with(|| {
                format!("{} ({} in {})", info.short_id(), info.harness, info.home)
            });
        }
    }
    let nowhere: Vec<&str> = ids
        .iter()
        .map(String::as_str)
        .filter(|i| !holder.contains_key(i))
        .collect();
    if !nowhere.is_empty() {
        // The snapshot that could not be read may be the one that holds them.
        if let Some(e) = unreadable {
            return Err(e.into());
        }
        // Let go from the newest (`forget --session`, `--gone-before`), a session may still be
        // in an older snapshot: the newest of those is named, ready to use.
        if let Some((older, holds)) = older_holder(repo, &candidates, &nowhere) {
            bail_usage!(
                "no newest snapshot holds session {}, but the older snapshot {} ({} of {} in {}) \
                 does: asp restore --snapshot {} --session {} …",
                holds,
                older.short_id(),
                older.created,
                older.harness,
                older.home,
                older.short_id(),
                holds,
            );
        }
        bail_usage!(
            "no newest snapshot in {} (of any harness and home) holds session {} (asp sessions \
             lists them; an older snapshot may: name it with --snapshot){}",
            repo.root().display(),
            nowhere.join(", "),
            asp_format::state::whole_ids_hint(&nowhere, known.iter().map(String::as_str))
        );
    }
    let said: Vec<String> = holder
        .iter()
        .map(|(id, snap)| format!("{id} in {snap}"))
        .collect();
    bail_usage!(
        "no one snapshot holds all these sessions: {}; restore them one --snapshot at a time",
        said.join(", ")
    )
}

/// `--to`: a harness this build knows, or `all`.
fn parse_harness_or_all(s: &str) -> std::result::Result<String, String> {
    if s == "all" {
        Ok(s.to_owned())
    } else {
        parse_harness(s)
    }
}

pub fn run(args: RestoreArgs) -> Result<Exit> {
    if args.to == "all" {
        return run_all(args);
    }
    let out = crate::Lines::default();
    let (exit, json) = run_one(args, &out)?;
    if let Some(json) = json {
        out.line(json)?;
    }
    out.finish(exit)
}

/// `--to all`: each harness the repository holds a snapshot of, in name order, restored as
/// `--to HARNESS` restores it (the newest snapshot of that harness in this home, else
/// anywhere). Exits with the worst of them; an error stops it there, after what was done.
fn run_all(args: RestoreArgs) -> Result<Exit> {
    if !args.sessions.is_empty() || args.snapshot != "latest" {
        bail_usage!(
            "--to all restores the newest snapshot of every harness; to restore a session or a \
             snapshot, name the harness to write it into (--to HARNESS)"
        );
    }
    let known = asp_convert::harness_names();
    let (harnesses, unknown): (
        std::collections::BTreeSet<String>,
        std::collections::BTreeSet<String>,
    ) = args
        .repo
        .open()?
        .newest_of_each_series()?
        .into_iter()
        .map(|s| s.harness)
        .partition(|h| known.contains(h));
    for h in &unknown {
        crate::errln!(
            "note: the repository's snapshots of {h} are not restored: this build has no {h} \
             converter"
        );
    }
    if harnesses.is_empty() {
        bail_usage!(
            "the repository has no snapshot of a harness this build knows (`asp snapshots` \
             lists them)"
        );
    }
    // A --home that is one of them's own folder is refused before any is written (Claude
    // Code's store went into ~/.codex/.claude before Codex's restore refused it: review
    // helper-138, 4).
    let home = Home::resolve_to_write(args.home.clone())?;
    for harness in &harnesses {
        Store::harness(harness, home.clone())
            .expect("known")
            .check_home_is_not_the_store()?;
    }
    let mut worst = Exit::Ok;
    // With --json, one array: each harness's answer with `harness` beside it (printed also
    // when a later harness fails: what was restored is said).
    let mut answers = Vec::new();
    let out = crate::Lines::default();
    let print = |answers: &mut Vec<serde_json::Value>| -> Result<()> {
        if args.common.json {
            out.line(serde_json::Value::Array(std::mem::take(answers)))?;
        }
        Ok(())
    };
    for harness in harnesses {
        let (exit, json) = match run_one(
            RestoreArgs {
                to: harness.clone(),
                within_all: true,
                ..args.clone()
            },
            &out,
        ) {
            Ok(done) => done,
            Err(e) => {
                print(&mut answers)?;
                return Err(e);
            }
        };
        if let Some(serde_json::Value::Object(mut answer)) = json {
            answer.insert("harness".to_owned(), serde_json::json!(harness));
            answers.push(serde_json::Value::Object(answer));
        }
        if exit as i32 > worst as i32 {
            worst = exit;
        }
    }
    print(&mut answers)?;
    out.finish(worst)
}

/// One harness's restore; with `--json`, its answer, for the caller to print.
fn run_one(args: RestoreArgs, out: &crate::Lines) -> Result<(Exit, Option<serde_json::Value>)> {
    let path_map = args.map_path.path_map()?;
    let repo = args.repo.open()?;
    let _lock = repo.lock_to_read()?;
    let home = Home::resolve_to_write(args.home.clone())?;
    Store::harness(&args.to, home.clone())
        .expect("validated by the argument parser")
        .check_home_is_not_the_store()?;
    let (info, snapshot, passed_over, elsewhere) = match args.sessions.is_empty() {
        true => {
            let info = pick(&repo, &args.snapshot, &args.to, &home)?;
            let (info, snapshot, passed_over) = newest_readable(&repo, &args.snapshot, info)?;
            (info, snapshot, passed_over, Vec::new())
        }
        false => {
            let f = pick_for_sessions(&repo, &args.snapshot, &args.to, &home, &args.sessions)?;
            for line in &f.newer_elsewhere {
                crate::errln!("note: {line}");
            }
            (f.info, f.snapshot, f.passed_over, f.elsewhere)
        }
    };
    let shown = format!("snapshot {}", info.short_id());
    // Said before anything is written, `-q` or not: what is restored is not the newest.
    for p in &passed_over {
        crate::errln!(
            "damaged: {}; restoring from {shown} ({} of {} in {}), the newest that can be read",
            p.error,
            info.created,
            info.harness,
            info.home
        );
    }
    // A series looked in first, whose damaged newest snapshot may have held the sessions: a
    // note, not a failure (they are restored whole from the series they are found in).
    for (newest, p) in &elsewhere {
        crate::errln!(
            "note: {}; passed over while looking for the sessions in {} in {}, which it may \
             have held; restoring from {shown} ({} of {} in {}), which holds them",
            p.error,
            newest.harness,
            newest.home,
            info.created,
            info.harness,
            info.home
        );
    }
    let (mut state, _) = crate::unpack::select(
        &snapshot.state,
        args.kinds,
        &args.sessions,
        &shown,
        "`asp sessions --repo REPO`",
    )?;
    let blobs = SnapshotBlobs::new(&repo, &snapshot.table);
    let bar = Bar::new(args.common.quiet);

    // Every body is read and checked before anything is written; what a damaged one belongs
    // to is left out, and the rest restored (crate::salvage).
    let mut damaged = crate::salvage::check(&mut state, &blobs, &shown, Some(&args.to))?;
    if let Some(problem) = &snapshot.sources_damage
        && args.sessions.is_empty()
        && args.kinds.is_none()
        && info.harness == args.to
    {
        let head = snapshot.manifest.layers.first();
        damaged.source_records(
            &head.map_or(String::new(), |l| l.digest.to_string()),
            problem,
        );
    }

    let staging_parent = Some(home.dir.clone())
        .filter(|d| d.is_dir())
        .unwrap_or_else(std::env::temp_dir);
    let original_tools = state.tools.clone().unwrap_or_default();
    let unused = match args.within_all {
        true => crate::mapped::UnusedRule::Warn,
        false => crate::mapped::UnusedRule::Refuse,
    };
    let not_here = path_map
        .is_empty()
        .then(|| crate::mapped::folders_not_here(&state))
        .flatten();
    let mut mapped = Mapped::new(state, &path_map, &blobs, &staging_parent, unused)?;

    if let Some(message) = not_here
        && !args.common.quiet
    {
        crate::errln!("note: {message}");
    }
    let diagnostics = Diagnostics::new();
    // A carried session mode that acts without asking is a grant too (new-user trial
    // helper-136, 4: `--no-grants` merged `acceptEdits` into the settings.json there).
    if args.no_grants
        && let Some(settings) = mapped.state.settings.as_mut()
        && let Some(asp_format::state::SettingValue::Select(mode)) = settings.get("mode")
        && asp_convert::kit::accepted::approves_unasked(mode)
    {
        let message =
            format!("setting \"mode\" {mode:?}: not granted (--no-grants): it acts without asking");
        settings.remove("mode");
        diagnostics.push(asp_convert::kit::report::Diagnostic {
            severity: asp_convert::kit::report::Severity::LeftOut,
            subject: None,
            line: None,
            message,
        });
    }
    // A dry run judges the state, and each configuration file merged into another, against
    // the files as the restore would leave them, not as they are (`PlannedView`).
    let _planned = args
        .dry_run
        .then(asp_convert::kit::fsops::PlannedView::begin);
    // The configuration's files this restore makes (below): what the import then adds to one
    // of them is not added to a file the owner had, so it is not said to be.
    let mut made_here: std::collections::BTreeSet<PathBuf> = std::collections::BTreeSet::new();
    let store = Store::harness(&args.to, home).expect("validated by the argument parser");
    // The harness's own configuration: with a whole restore, into the same harness only.
    let mut config_lines = Vec::new();
    let config_blobs = SnapshotBlobs::new(&repo, &snapshot.sources.config_layers);
    // What the configuration's restore wrote before the state, and what it writes after.
    let mut config_written: Option<(asp_convert::store::ConfigWritten, asp_format::state::Native)> =
        None;
    if let Some(config) = &snapshot.sources.config
        && args.sessions.is_empty()
        && args.kinds.is_none()
    {
        if config.harness.as_str() == args.to {
            let mut config = config.clone();
            crate::salvage::check_config(&mut config, &config_blobs, &shown, &mut damaged)?;
            // A skill folder kept as configuration (one another hides, `kit::skills::shadowed`)
            // is written after the state, whose skills would otherwise find it there first
            // and refuse to hide it again; the rest before, so the state's session options
            // go into the settings file restored, not one made anew.
            let (late, early): (Vec<_>, Vec<_>) = std::mem::take(&mut config.files)
                .into_iter()
                .partition(|f| asp_convert::kit::skills::is_hidden_copy(f.path.as_str()));
            config.files = early;
            let written = write_config(&store, &config, &config_blobs, &path_map, &args)?;
            made_here.extend(written.created.iter().map(|p| absolute(p)));
            config.files = late;
            config_written = Some((written, config));
        } else {
            config_lines.push(format!(
                "configuration: {}'s own configuration is restored only into {}",
                config.harness, config.harness
            ));
        }
    } else if let Some(config) = &snapshot.sources.config
        && config.harness.as_str() == args.to
        && !config.files.is_empty()
    {
        // A restore of some sessions or kinds leaves the configuration (a server's script
        // with it) where it is: said, so that `--kinds tools` is not taken for all a server
        // needs (found by a new user's trial).
        config_lines.push(format!(
            "configuration: {}'s own files ({} in snapshot {}: settings, prompt history, the \
             scripts MCP servers run) are restored by a whole restore only, not with --session \
             or --kinds",
            config.harness,
            config.files.len(),
            info.short_id()
        ));
    } else if snapshot.sources.config.is_none()
        && snapshot.sources_damage.is_none()
        && args.sessions.is_empty()
        && args.kinds.is_none()
        && info.harness == args.to
    {
        // A whole restore that will not bring the settings files back says so: a snapshot
        // made from a bundle looks like any other in `asp snapshots`.
        config_lines.push(format!(
            "configuration: snapshot {} holds none of {}'s own files (settings, rules, prompt \
             history: a snapshot made from a bundle, or pulled without its snapshot record, has \
             none, and so has the backup of a home that had none): only the state is restored",
            info.short_id(),
            info.harness
        ));
    }
    // A server whose paths --map-path moves stays as the backup had it where the home (its
    // configuration just restored, or as it was) has it so.
    crate::mapped::keep_servers_as_there(&mut mapped.state, &original_tools, &store, &diagnostics);
    let state = &mapped.state;
    let mapped_blobs = mapped.blobs(&blobs);
    let written = store
        .write(
            state,
            &WriteRequest {
                kinds: args.kinds,
                dry_run: args.dry_run,
                path_map: &path_map,
                force: false,
                restoring: info.harness == args.to,
                blobs: &mapped_blobs,
                diagnostics: &diagnostics,
                progress: &bar,
            },
        )
        .with_context(|| format!("cannot write into {}", store.describe_location()))?;
    if let Some((mut before, late)) = config_written {
        if !late.files.is_empty() {
            // The state is written: a failure here is said with the rest, not instead of it.
            match write_config(&store, &late, &config_blobs, &path_map, &args) {
                Ok(after) => {
                    before.placed.extend(after.placed);
                    before.unmoved.extend(after.unmoved);
                }
                Err(e) => before.placed.extend(late.files.iter().map(|f| {
                    (
                        f.path.to_string(),
                        Placement::Refused(format!("not written: {e}")),
                    )
                })),
            }
        }
        config_lines.extend(config_said(before, damaged.config_files(), &args));
    }
    bar.clear();
    let mut answer = written.answer;
    answer
        .written_into
        .retain(|w| !made_here.contains(&absolute(&w.file)));
    damaged.into_answer(
        &mut answer,
        "the repository (asp check --read-data names the blob)",
    );
    let imported = Imported::new(answer, written.resume, &diagnostics);
    imported.print_findings(&bar, args.common.quiet);
    for line in &config_lines {
        bar.println(line);
    }
    for line in damaged.lines() {
        bar.println(format!("damaged: {shown}: {line}"));
    }
    if !damaged.is_empty() {
        bar.println(format!(
            "left out, their data in the repository being damaged: {}; `asp check --read-data` lists every damaged blob",
            damaged.summary()
        ));
    }
    let mut answer = None;
    if args.common.json {
        let mut json = imported.json(args.dry_run);
        if !damaged.is_empty() {
            json["_meta"]["asp"]["damaged"] = serde_json::json!(damaged.blobs);
        }
        if !passed_over.is_empty() {
            json["_meta"]["asp"]["passedOver"] = serde_json::json!(passed_over);
        }
        if !elsewhere.is_empty() {
            json["_meta"]["asp"]["passedOverElsewhere"] =
                serde_json::json!(elsewhere.iter().map(|(_, p)| p).collect::<Vec<_>>());
        }
        answer = Some(json);
    } else {
        let verb = if args.dry_run {
            "would restore"
        } else {
            "restored"
        };
        let taken = &imported.answer.taken;
        let taken = if taken.is_empty() {
            "nothing".to_owned()
        } else {
            taken.to_string().replace(',', ", ")
        };
        // The home backed up is named: several homes' backups can hold the same session, and
        // which one it came from is what the user may want to know (new-user trial helper-122).
        out.line(format_args!(
            "{verb} {taken} from {shown} ({} of {} in {}) into {}{}",
            info.created,
            info.harness,
            info.home,
            store.describe_location(),
            imported.summary_tail(args.common.quiet)
        ))?;
        for line in imported.detail_lines(args.dry_run) {
            out.line(line)?;
        }
    }
    if !damaged.is_empty() || !passed_over.is_empty() {
        return Ok((Exit::Integrity, answer));
    }
    Ok((imported.exit(args.strict.strict), answer))
}

/// The snapshot [`pick`] chose, loaded, and the snapshots passed over for it. For `latest`,
/// the newest of its series (harness and home) that can be read: a newer one that cannot (a
/// document of it damaged) is passed over, as `asp sessions` and a backup pass it over, so
/// that one damaged snapshot does not keep every session from coming back (found by a new
/// user's trial: the restore failed whole while `asp sessions` listed them from the snapshot
/// before). A snapshot named by its id is read as it is, or the restore fails.
fn newest_readable(
    repo: &Repository,
    id: &str,
    info: SnapshotInfo,
) -> Result<(SnapshotInfo, Snapshot, Vec<PassedOver>)> {
    if id != "latest" {
        let snap = Snapshot::load_for_reading(repo, &info)?;
        return Ok((info, snap, Vec::new()));
    }
    let (found, passed_over) = Snapshot::newest_readable(
        repo,
        &repo.snapshots()?,
        &info.harness,
        &info.home,
        Snapshot::load_for_reading,
    )?;
    match found {
        Some(snap) => Ok((snap.info.clone(), snap, passed_over)),
        // None can be read: the newest's damage is the error.
        None => Err(RepoError::Integrity(
            passed_over
                .into_iter()
                .next()
                .map(|p| p.error)
                .unwrap_or_else(|| format!("snapshot {} cannot be read", info.short_id())),
        )
        .into()),
    }
}

/// Restores `config`, the harness's own files or some of them ([`Store::write_config`]).
fn write_config(
    store: &Store,
    config: &asp_format::state::Native,
    blobs: &SnapshotBlobs<'_>,
    path_map: &asp_convert::kit::pathmap::PathMap,
    args: &RestoreArgs,
) -> Result<asp_convert::store::ConfigWritten> {
    store
        .write_config(
            config,
            blobs,
            path_map,
            if args.no_grants {
                Grants::Leave
            } else {
                Grants::Carry
            },
            args.dry_run,
        )
        .context("cannot restore the harness's configuration")
}

/// What restoring the configuration did, a line each: the count, refusals by reason, grants,
/// files restored without credentials, files naming folders `--map-path` moves.
fn config_said(
    written: asp_convert::store::ConfigWritten,
    damaged_files: usize,
    args: &RestoreArgs,
) -> Vec<String> {
    let mut config_lines = Vec::new();
    let unmoved = written.unmoved;
    let placed = written.placed;
    let new = placed.iter().filter(|(_, p)| p.is_written()).count();
    let there = placed
        .iter()
        .filter(|(_, p)| *p == Placement::AlreadyThere)
        .count();
    config_lines.push(format!(
        "configuration: {new} of {} {}, {there} already there (files, and entries \
         merged into files: MCP servers, preferences)",
        placed.len() + damaged_files,
        if args.dry_run {
            "would be restored"
        } else {
            "restored"
        }
    ));
    // Refusals for one reason on one line: a configured machine keeps many of its own
    // preferences.
    let mut refused: Vec<(String, Vec<String>)> = Vec::new();
    for (path, p) in &placed {
        if let Placement::Refused(why) = p {
            match refused.iter_mut().find(|(w, _)| w == why) {
                Some((_, paths)) => paths.push(path.clone()),
                None => refused.push((why.clone(), vec![path.clone()])),
            }
        }
    }
    for (why, paths) in refused {
        config_lines.push(format!("configuration: {}: {why}", paths.join(", ")));
    }
    for (path, p) in placed {
        match p {
            Placement::Refused(_) => {}
            Placement::Granted(what) => config_lines.push(format!(
                "configuration: {} as the backup had it: {what}",
                if args.dry_run {
                    "would grant"
                } else {
                    "granted"
                }
            )),
            Placement::New => {
                if let Some(file) = without_credentials(&path) {
                    config_lines.push(format!(
                        "configuration: {file}: {}",
                        without_credentials_said()
                    ))
                }
            }
            _ => {}
        }
    }
    for (file, old) in &unmoved {
        config_lines.push(format!(
            "configuration: {file} {} as it was, and names {} which --map-path \
             moves: what it says of those folders (trust, projects, a server's folder) \
             stays at the old paths; set it again for the moved ones",
            if args.dry_run {
                "would be restored"
            } else {
                "is restored"
            },
            old.join(", ")
        ));
    }
    config_lines
}
