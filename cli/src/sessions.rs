//! `asp sessions`: every session ever backed up, or the sessions of a live store.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;

use asp_convert::kit::report::Diagnostics;
use asp_convert::store::ReadRequest;
use asp_convert::{Home, Store};
use asp_format::blob::Discard;
use asp_format::state::{Session, parent_of};
use asp_format::{KindSet, StateKind};
use asp_repo::Snapshot;
use clap::Parser;
use serde::Serialize;

use crate::args::{Common, RepoArg, parse_harness};
use crate::exit::{Context, EXIT_CODES_HELP, Exit, Result};
use crate::human;
use crate::progress::Bar;

/// List the sessions backed up, gone ones included (or, with --from, a live store's sessions)
#[derive(Debug, Clone, Parser)]
#[command(after_help = format!("\
Examples:
  asp sessions
      Every session the newest snapshots hold (each backup carries the sessions gone from
      the source; one `asp forget --session` let go is no longer listed, though older
      snapshots may still hold it): id, last activity, harness, the newest snapshot holding
      it, whether it is gone from the source, working directory and title. A subagent's
      session is listed under the conversation that started it (`└`), and in --json names it
      as `parent`.
  asp sessions --json | jq -r '.[] | select(.goneFromSource) | .id'
      The sessions your harness has deleted, which the repository still holds.
  asp sessions --from claude-code
      The sessions of your Claude Code store now (no repository), to pick one to carry.
      What cannot be read (a database that does not open) is said, and the listing exits 3.

A series whose newest snapshot cannot be read is listed from the newest one that can; the
damage is said and the listing exits 4 (`asp check` names it, `asp forget --snapshot ID`
lets it go).

{EXIT_CODES_HELP}"))]
pub struct SessionsArgs {
    /// List this harness's live store instead of the repository
    #[arg(long, value_name = "HARNESS", value_parser = parse_harness)]
    pub from: Option<String>,

    /// With --from: the home holding the store [default: your home]
    #[arg(long, value_name = "DIR", requires = "from")]
    pub home: Option<PathBuf>,

    #[command(flatten)]
    pub repo: RepoArg,

    #[command(flatten)]
    pub common: Common,
}

/// One line of the listing.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Row {
    id: String,
    title: String,
    harness: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    updated_at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    snapshot: Option<String>,
    /// The home of the snapshot's series (`registry:HOST/REPO` for a pulled one).
    #[serde(skip_serializing_if = "Option::is_none")]
    home: Option<String>,
    gone_from_source: bool,
    /// For a subagent's session, the session it belongs to (`_meta.asp.parent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    parent: Option<String>,
    /// How many subagents deep: 0 for a session of its own, 1 under its parent, ... (only
    /// for the table: a subagent whose parent is not listed counts as a session of its own).
    #[serde(skip)]
    depth: usize,
}

fn row(s: &Session, harness: &str, snapshot: Option<String>, gone: bool) -> Row {
    Row {
        id: s.id.to_string(),
        title: s.title.clone(),
        harness: s
            .harness
            .as_ref()
            .map_or_else(|| harness.to_owned(), ToString::to_string),
        cwd: s.cwd.clone(),
        updated_at: s.updated_at.clone(),
        snapshot,
        home: None,
        gone_from_source: gone,
        parent: parent_of(s).map(str::to_owned),
        depth: 0,
    }
}

/// A session as a parent is looked up: in its series (harness and home), since one id can be
/// in two (a Claude Code session carried into Codex keeps its UUID).
type Key = (String, Option<String>, String);

fn key(r: &Row, id: &str) -> Key {
    (r.harness.clone(), r.home.clone(), id.to_owned())
}

/// The rows in listing order: sessions of their own newest first, each followed by its
/// subagents' sessions (oldest first, as they ran) at any depth, so a subagent is read under
/// the conversation that started it. A subagent whose parent is not listed stands alone.
fn nested(mut rows: Vec<Row>) -> Vec<Row> {
    rows.sort_by(|a, b| (b.updated_at.as_deref(), &a.id).cmp(&(a.updated_at.as_deref(), &b.id)));
    let listed: HashSet<Key> = rows.iter().map(|r| key(r, &r.id)).collect();
    let mut children: HashMap<Key, Vec<Row>> = HashMap::new();
    let mut roots = Vec::new();
    for r in rows {
        match r.parent.as_deref().map(|p| key(&r, p)) {
            Some(k) if listed.contains(&k) && k != key(&r, &r.id) => {
                children.entry(k).or_default().push(r);
            }
            _ => roots.push(r),
        }
    }
    fn place(r: Row, depth: usize, children: &mut HashMap<Key, Vec<Row>>, out: &mut Vec<Row>) {
        let k = key(&r, &r.id);
        out.push(Row { depth, ..r });
        if let Some(mut kids) = children.remove(&k) {
            kids.reverse();
            for kid in kids {
                place(kid, depth + 1, children, out);
            }
        }
    }
    let mut out = Vec::new();
    for r in roots {
        place(r, 0, &mut children, &mut out);
    }
    // A parent cycle (damaged metadata) leaves its rows unplaced: they are listed, not lost.
    let mut left: Vec<Row> = children.into_values().flatten().collect();
    left.sort_by(|a, b| a.id.cmp(&b.id));
    out.extend(left);
    out
}

pub fn run(args: SessionsArgs) -> Result<Exit> {
    if args.from.is_some() && args.repo.repo.is_some() {
        crate::bail_usage!(
            "--from lists a live store, --repo a repository: give one (`asp sessions` alone \
             lists the repository)"
        );
    }
    let mut rows = Vec::new();
    // Where the sessions were looked for, for "no sessions in ...".
    let looked_in;
    // A live store some of whose sessions could not be read.
    let mut incomplete = false;
    // A snapshot that could not be read, passed over for an older one of its series.
    let mut damaged = false;
    if let Some(name) = &args.from {
        let home = Home::resolve(args.home.clone())?;
        let store = Store::harness(name, home).expect("validated by the argument parser");
        let diagnostics = Diagnostics::new();
        let bar = Bar::new(args.common.quiet);
        let mut req = ReadRequest::new(&Discard, &diagnostics, &bar);
        req.kinds = KindSet::EMPTY.with(StateKind::Sessions);
        // Native files are read too (the default; into nothing but a hash): a damaged record
        // of a session is then what it is in a backup, kept in its file and listed with its
        // session, not a loss of the listing (new-user trial helper-126, 6: `lost:` and exit
        // 3 for a listing that lists every session).
        debug_assert!(req.options.native);
        looked_in = store.describe_location();
        let state = store
            .read(&req)
            .with_context(|| format!("cannot read {looked_in}"))?;
        bar.clear();
        for s in state.sessions.iter().flatten() {
            rows.push(row(s, name, None, false));
        }
        // What could not be read is said (a database that does not open is not "no
        // sessions"), and the listing exits 3; what is left out by design is not.
        let lost: Vec<_> = diagnostics
            .items()
            .into_iter()
            .filter(|d| d.severity.is_loss())
            .collect();
        for line in crate::human::finding_lines(lost.iter()) {
            crate::errln!("{line}");
        }
        incomplete = !lost.is_empty();
    } else {
        let repo = args.repo.open()?;
        let _lock = repo.lock_to_read()?;
        looked_in = repo.root().display().to_string();
        // The newest snapshot of each harness and home holds every session of that series; one
        // that cannot be read is said (exit 4) and the series listed from the newest that can.
        let snapshots = repo.snapshots()?;
        for newest in asp_repo::repository::newest_of_each_series(&snapshots) {
            let (found, passed_over) = Snapshot::newest_readable(
                &repo,
                &snapshots,
                &newest.harness,
                &newest.home,
                Snapshot::load_for_reading,
            )?;
            for p in &passed_over {
                crate::errln!("damaged: {} ({}): {}", newest.harness, newest.home, p.error);
                damaged = true;
            }
            let Some(snap) = found else { continue };
            let info = &snap.info;
            if let Some(problem) = &snap.sources_damage {
                // Its sessions are listed; which of them the source no longer has is not known.
                crate::errln!(
                    "damaged: {} ({}): snapshot {}: {problem}; its sessions are listed, but not \
                     which are gone from the source; `asp check` names the damage",
                    newest.harness,
                    newest.home,
                    info.short_id()
                );
                damaged = true;
            }
            for s in snap.state.sessions.iter().flatten() {
                let mut r = row(
                    s,
                    &info.harness,
                    Some(info.short_id()),
                    snap.is_gone(s.id.as_str()),
                );
                r.home = Some(info.home.clone());
                rows.push(r);
            }
        }
    }
    let rows = nested(rows);
    let done = if damaged {
        Exit::Integrity
    } else if incomplete {
        Exit::Incomplete
    } else {
        Exit::Ok
    };
    if args.common.json {
        crate::outln!("{}", serde_json::to_string(&rows).expect("rows serialise"));
        return Ok(done);
    }
    if rows.is_empty() {
        crate::outln!("no sessions in {looked_in}");
        return Ok(done);
    }
    // A HOME column only when the sessions come from several homes (a machine's backups and
    // a pull from a registry list the same sessions twice; it tells them apart).
    let homes: std::collections::BTreeSet<&str> =
        rows.iter().filter_map(|r| r.home.as_deref()).collect();
    let with_home = homes.len() > 1;
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let id = match r.depth {
                0 => r.id.clone(),
                d => format!("{}└ {}", "  ".repeat(d - 1), r.id),
            };
            let mut cells = vec![
                id,
                r.updated_at.clone().unwrap_or_else(|| "-".to_owned()),
                r.harness.clone(),
            ];
            if with_home {
                cells.push(r.home.clone().unwrap_or_default());
            }
            cells.extend([
                r.snapshot.clone().unwrap_or_else(|| "live".to_owned()),
                if r.gone_from_source { "gone" } else { "" }.to_owned(),
                human::one_line(r.cwd.as_deref().unwrap_or("-")),
                human::title(&r.title),
            ]);
            cells
        })
        .collect();
    let header: Vec<&str> = ["ID", "UPDATED", "HARNESS"]
        .into_iter()
        .chain(with_home.then_some("HOME"))
        .chain(["SNAPSHOT", "GONE", "CWD", "TITLE"])
        .collect();
    for line in human::table(&header, &cells) {
        crate::outln!("{line}");
    }
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(id: &str, updated: &str, parent: Option<&str>, harness: &str) -> Row {
        Row {
            id: id.to_owned(),
            title: String::new(),
            harness: harness.to_owned(),
            cwd: None,
            updated_at: Some(updated.to_owned()),
            snapshot: None,
            home: Some("h".to_owned()),
            gone_from_source: false,
            parent: parent.map(str::to_owned),
            depth: 0,
        }
    }

    fn order(rows: Vec<Row>) -> Vec<(String, usize)> {
        nested(rows).into_iter().map(|r| (r.id, r.depth)).collect()
    }

    #[test]
    fn subagents_follow_the_session_that_started_them_at_any_depth() {
        let rows = vec![
            r("a", "2026-01-01", None, "claude-code"),
            r("b", "2026-01-03", None, "claude-code"),
            r("a1", "2026-01-02", Some("a"), "claude-code"),
            r("a0", "2026-01-01", Some("a"), "claude-code"),
            r("a1x", "2026-01-02", Some("a1"), "claude-code"),
            // Its parent is not listed: it stands alone.
            r("o", "2026-01-02", Some("gone"), "claude-code"),
            // The same id in another series is another session: not a's.
            r("c", "2026-01-04", Some("a"), "codex"),
        ];
        let want = [
            ("c", 0),
            ("b", 0),
            ("o", 0),
            ("a", 0),
            ("a0", 1),
            ("a1", 1),
            ("a1x", 2),
        ];
        assert_eq!(order(rows), want.map(|(i, d)| (i.to_owned(), d)).to_vec());
    }

    #[test]
    fn a_parent_cycle_is_listed_not_lost() {
        let rows = vec![
            r("x", "2026-01-01", Some("y"), "pi"),
            r("y", "2026-01-02", Some("x"), "pi"),
            r("z", "2026-01-03", None, "pi"),
        ];
        let listed = order(rows);
        assert_eq!(listed.len(), 3, "{listed:?}");
        assert_eq!(listed[0], ("z".to_owned(), 0));
    }
}
