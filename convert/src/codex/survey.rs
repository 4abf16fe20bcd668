//! Listing Codex's threads without reading them.
//!
//! Every rollout under `sessions/` and `archived_sessions/` is a thread, named by its first
//! line's `session_meta` (else by the UUID at the end of its file name). The survey reads that
//! one line of each file, which also says whether the thread is a subagent's and whose, and
//! the two indexes that name threads (`session_index.jsonl`, the `threads` table of
//! `state_<N>.sqlite`): what they say about a thread is part of that thread's survey entry, so
//! a read needs nothing else. A thread found twice (a live and an archived copy) is one entry;
//! its live copy is read first.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use asp_format::name::SessionId;

use super::first_pass::str_at;
use super::index::{Entry, SessionIndex};
use super::layout::Layout;
use super::read::parent_of;
use super::rollout::{self, Lines, RolloutFile};
use super::state_db::{self, Thread};
use crate::error::ConvertError;
use crate::harness::{Survey, SurveyContext, Surveyed};
use crate::kit::source::SourceFile;

/// What reading one thread needs, beyond its files.
#[derive(Debug)]
pub struct Plan {
    /// The thread's rollouts, the one to read first first.
    pub candidates: Vec<RolloutFile>,
    /// Threads that name this one as their parent.
    pub children: Vec<String>,
    /// The thread this one is a subagent of.
    pub parent: Option<String>,
    /// `session_index.jsonl`'s namings of the thread, oldest first.
    pub index_entries: Vec<Entry>,
    /// Its row in the thread database.
    pub db_row: Option<Thread>,
    /// Its project, as a pack predicts the project's dictionary by it: [`project_key`] of the
    /// `cwd` its first rollout's `session_meta` names.
    pub project: Option<PathBuf>,
}

/// The path a Codex project is named by when a pack predicts its dictionary (spec/aspstate.md
/// §4.1, `Harness::surveyed_project`): Codex keeps rollouts by day, not by project, so a
/// project is the threads with the same `cwd`, named by a path under `CODEX_HOME` that no
/// file is at: `.asp-projects/<sha256 of the cwd>`, one component, so no project's name is
/// a prefix of another's (a blob store matches a transcript to the longest predicted prefix)
/// and two spellings of a folder stay two projects, as the rule has them. Only a name:
/// nothing is read from or written there.
pub fn project_key(codex: &Path, cwd: &str) -> PathBuf {
    use sha2::{Digest, Sha256};
    codex
        .join(".asp-projects")
        .join(hex::encode(Sha256::digest(cwd.as_bytes())))
}

/// The threads of the Codex home.
pub fn survey(layout: &Layout, ctx: &SurveyContext<'_>) -> Result<Survey, ConvertError> {
    let diagnostics = ctx.diagnostics;
    let mut files = rollout::discover(&layout.codex, diagnostics);
    // Live threads first, so a thread found twice keeps its live copy.
    files.sort_by(|a, b| (a.archived, &a.rel).cmp(&(b.archived, &b.rel)));
    let index = SessionIndex::load(&layout.codex, diagnostics)?;
    let db: HashMap<String, Thread> = match state_db::find(&layout.codex) {
        Some(p) => match state_db::read(&p) {
            Ok(t) => t,
            Err(e) => {
                diagnostics.note(
                    &p,
                    None,
                    format!("thread index not read ({e}); titles come from the rollouts"),
                );
                HashMap::new()
            }
        },
        None => HashMap::new(),
    };

    // Thread ids and subagent links, from each file's opening line.
    let mut order: Vec<String> = Vec::new();
    type Found = (Vec<RolloutFile>, Option<String>, Option<PathBuf>);
    let mut by_id: HashMap<String, Found> = HashMap::new();
    let mut children: HashMap<String, Vec<String>> = HashMap::new();
    for mut f in files {
        let source = match SourceFile::stat(&f.path, !f.compressed) {
            Ok(s) => s,
            Err(e) => {
                diagnostics.lost(&f.path, None, format!("cannot be read ({e}); skipped"));
                continue;
            }
        };
        f.source = Some(source);
        let first = Lines::open(&f, false)
            .ok()
            .and_then(|mut lines| lines.next_record(diagnostics));
        let meta = first.filter(|r| r.kind == rollout::Kind::SessionMeta);
        let id = meta
            .as_ref()
            .and_then(|r| str_at(r.payload(), "/id"))
            .or_else(|| f.name_id.clone());
        let Some(id) = id else {
            diagnostics.lost(
                &f.path,
                None,
                "no session_meta and no thread id in the file name; skipped",
            );
            continue;
        };
        let parent = meta.as_ref().and_then(|r| parent_of(r.payload()));
        let project = meta
            .as_ref()
            .and_then(|r| str_at(r.payload(), "/cwd"))
            .map(|cwd| project_key(&layout.codex, &cwd));
        match by_id.get_mut(&id) {
            Some((copies, ..)) => copies.push(f),
            None => {
                if let Some(p) = &parent {
                    children.entry(p.clone()).or_default().push(id.clone());
                }
                order.push(id.clone());
                by_id.insert(id, (vec![f], parent, project));
            }
        }
    }

    let mut out = Vec::new();
    for id in order {
        let (candidates, parent, project) = by_id.remove(&id).expect("listed above");
        let session_id = match SessionId::new(&id) {
            Ok(s) => s,
            Err(e) => {
                for f in &candidates {
                    diagnostics.lost(&f.path, None, format!("skipped: {e}"));
                }
                continue;
            }
        };
        let plan = Plan {
            children: children.remove(&id).unwrap_or_default(),
            index_entries: index.entries(&id).to_vec(),
            db_row: db.get(&id).cloned(),
            candidates,
            parent: parent.clone(),
            project,
        };
        let files = plan
            .candidates
            .iter()
            .filter_map(|f| f.source.clone())
            .collect();
        let facts = format!(
            "{:?}|{:?}|{:?}|{:?}|{:?}",
            plan.children,
            plan.parent,
            plan.index_entries,
            plan.db_row,
            plan.candidates
                .iter()
                .map(|c| (&c.rel, c.archived))
                .collect::<Vec<_>>()
        );
        let parent_id = parent.and_then(|p| SessionId::new(&p).ok());
        out.push(Surveyed::new(session_id, files, facts.as_bytes(), plan).with_parent(parent_id));
    }
    Ok(Survey::of(out))
}
