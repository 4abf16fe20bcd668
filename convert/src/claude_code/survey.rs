//! Listing Claude Code's sessions without reading them.
//!
//! Every `projects/<bucket>/<id>.jsonl` is a session. Its subagents (2.1.x:
//! `<bucket>/<id>/subagents/agent-<agentId>.jsonl` + `.meta.json`; 2.0.x: `agent-<agentId>.jsonl`
//! beside the session, owned by the session its first line names) become sessions of their
//! own, read together with it. A session's files are its transcript, its subagents'
//! transcripts and `.meta.json`, and its `tool-results/`; anything else in `<bucket>/<id>/` is
//! reported and left out. Outside the project folder, its rewind checkpoints
//! (`file-history/<id>/`) and todo lists (`todos/<id>-agent-*.json`) are its files too.
//!
//! What the survey reads: folder listings, and one line of each 2.0-era subagent file (the one
//! naming its session). Only when one session id is in two project folders are those two
//! transcripts read, to carry the newer one.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::io::{self, BufRead, Read};
use std::path::{Path, PathBuf};

use asp_format::name::SessionId;
use serde_json::{Value, json};

use super::layout::Layout;
use super::transcript::{Indexer, Record, str_at};
use crate::error::ConvertError;
use crate::harness::{Survey, SurveyContext, Surveyed};
use crate::kit::report::Diagnostics;
use crate::kit::source::SourceFile;

/// The folders of `<bucket>/<id>/` Claude Code keeps for a session. Only their files are a
/// session's native files; the writer restores nothing else (see `write::classify`).
pub const SUBAGENTS: &str = "subagents";
pub const TOOL_RESULTS: &str = "tool-results";
/// `<stem>/before-cleanup/<ms>-<hex>.jsonl.replaced`: the transcript as it was before Claude
/// Code's local clean-up rewrote it (2.1.337, kept when `localGcEnabled` is `keep`).
pub const BEFORE_CLEANUP: &str = "before-cleanup";
/// Files of their own Claude Code keeps beside a session's transcript, carried as they are:
/// `archived.json` (`{archived, at, by}`: the session taken out of the list, 2.1.337) and
/// `custom-title.json` (its title, also appended to the transcript as a `custom-title`
/// record).
pub const SESSION_RECORDS: &[&str] = &["archived.json", "custom-title.json"];
/// `<stem>/resume-head.jsonl`: where a resume starts reading (offsets and a probe of the
/// transcript), which Claude Code rebuilds when it is missing; not carried, and not said.
pub const RESUME_HEAD: &str = "resume-head.jsonl";

/// One session transcript found on disk, with the subagent transcripts that belong to it.
#[derive(Debug, Clone)]
pub struct Found {
    pub stem: String,
    pub file: PathBuf,
    /// The files that travel with the session besides its transcript: those of
    /// `<bucket>/<stem>/` (subagent transcripts and their `.meta.json`, tool results), its
    /// rewind checkpoints and its todo lists; sorted by path.
    pub side: Vec<PathBuf>,
    pub subagents: Vec<Subagent>,
}

#[derive(Debug, Clone)]
pub struct Subagent {
    pub agent_id: String,
    pub file: PathBuf,
    pub meta_file: Option<PathBuf>,
    /// Beside the session (2.0.x) rather than under its directory.
    pub legacy: bool,
    /// Its session id in the state: `agent-<agentId>` when that is unique, else qualified by
    /// the session.
    pub child: String,
    /// [`Subagent::child`] as a session id; `None` when it is not a usable one, or another
    /// session already has it (reported).
    pub id: Option<SessionId>,
}

/// What reading one session needs, beyond its files.
#[derive(Debug)]
pub struct Plan {
    pub found: Found,
    /// The stat record of every file, by path.
    pub sources: HashMap<PathBuf, SourceFile>,
}

impl Plan {
    /// The surveyed record of `path`.
    pub fn source(&self, path: &Path) -> Option<&SourceFile> {
        self.sources.get(path)
    }
}

/// The entries of `dir`, sorted by name. A folder that is not there has none; one that cannot
/// be read (or is not a folder) is reported and has none.
fn read_dir_sorted(dir: &Path, diagnostics: &Diagnostics) -> Vec<fs::DirEntry> {
    let mut entries: Vec<fs::DirEntry> = match fs::read_dir(dir) {
        Ok(e) => e.filter_map(Result::ok).collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            diagnostics.lost(
                dir,
                None,
                format!("cannot be read as a folder ({e}); nothing in it was carried"),
            );
            return Vec::new();
        }
    };
    entries.sort_by_key(fs::DirEntry::file_name);
    entries
}

/// Whether an entry is a regular file (a link is not followed).
fn is_regular(e: &fs::DirEntry) -> bool {
    e.file_type().is_ok_and(|t| t.is_file())
}

/// `<id>` of a file named `agent-<id><suffix>`.
fn agent_id<'n>(name: &'n str, suffix: &str) -> Option<&'n str> {
    name.strip_prefix("agent-")
        .and_then(|n| n.strip_suffix(suffix))
        .filter(|n| !n.is_empty())
}

/// The first `sessionId` in a legacy subagent file: the session it belongs to. Reads line by
/// line and stops at the first one that names a session.
pub fn owner_of(reader: impl Read) -> Option<String> {
    let mut r = io::BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        if let Ok(v) = serde_json::from_slice::<Value>(&line)
            && let Some(id) = str_at(&v, "sessionId")
        {
            return Some(id.to_owned());
        }
    }
}

/// What a session keeps under `<bucket>/<stem>/`: `subagents/agent-<id>.jsonl` (+ `.meta.json`),
/// `tool-results/<file>`, `before-cleanup/<file>` and [`SESSION_RECORDS`]. Anything else there
/// is reported and left out, but [`RESUME_HEAD`].
fn session_folder(dir: &Path, diagnostics: &Diagnostics) -> (Vec<PathBuf>, Vec<Subagent>) {
    let mut side = Vec::new();
    let mut subagents = Vec::new();
    let not_carried = |p: &Path, what: &str| {
        diagnostics.left_out(
            p,
            None,
            format!("{what}; not carried (a session keeps only subagents/agent-*.jsonl, their .meta.json, tool-results/ and before-cleanup/ files, archived.json and custom-title.json)"),
        )
    };
    for e in read_dir_sorted(dir, diagnostics) {
        let path = e.path();
        let name = e.file_name();
        match name.to_str() {
            Some(SUBAGENTS) | Some(TOOL_RESULTS) if !e.file_type().is_ok_and(|t| t.is_dir()) => {
                not_carried(&path, "not a folder");
            }
            Some(SUBAGENTS) => {
                for s in read_dir_sorted(&path, diagnostics) {
                    let sp = s.path();
                    let sname = s.file_name();
                    let sname = sname.to_str().unwrap_or("");
                    if !is_regular(&s) {
                        not_carried(&sp, "not a regular file");
                    } else if let Some(agent) = agent_id(sname, ".jsonl") {
                        let meta = path.join(format!("agent-{agent}.meta.json"));
                        let meta_ok = fs::symlink_metadata(&meta).is_ok_and(|m| m.is_file());
                        subagents.push(Subagent {
                            agent_id: agent.to_owned(),
                            file: sp.clone(),
                            meta_file: meta_ok.then_some(meta),
                            legacy: false,
                            child: String::new(),
                            id: None,
                        });
                        side.push(sp);
                    } else if agent_id(sname, ".meta.json").is_some() {
                        side.push(sp);
                    } else {
                        not_carried(&sp, "not a subagent transcript or its metadata");
                    }
                }
            }
            Some(TOOL_RESULTS) | Some(BEFORE_CLEANUP) => {
                for t in read_dir_sorted(&path, diagnostics) {
                    if is_regular(&t) {
                        side.push(t.path());
                    } else {
                        not_carried(&t.path(), "not a regular file");
                    }
                }
            }
            Some(name) if SESSION_RECORDS.contains(&name) && is_regular(&e) => side.push(path),
            // A cache Claude Code rebuilds from the transcript when it is missing or stale.
            Some(RESUME_HEAD) => {}
            _ => not_carried(&path, "not a file Claude Code keeps for a session"),
        }
    }
    (side, subagents)
}

/// Every session transcript under `projects/`, bucket by bucket, sorted; one per session id.
fn discover(layout: &Layout, diagnostics: &Diagnostics) -> Vec<Found> {
    let mut found = Vec::new();
    for bucket in read_dir_sorted(&layout.projects(), diagnostics) {
        let bdir = bucket.path();
        if !bdir.is_dir() {
            continue;
        }
        if bucket.file_name().to_str().is_none() {
            diagnostics.lost(&bdir, None, "project folder name is not UTF-8; skipped");
            continue;
        };
        let entries = read_dir_sorted(&bdir, diagnostics);
        let mut sessions: Vec<Found> = Vec::new();
        let mut legacy: Vec<(String, PathBuf)> = Vec::new();
        for e in &entries {
            let path = e.path();
            let Some(name) = e.file_name().to_str().map(str::to_owned) else {
                diagnostics.lost(&path, None, "file name is not UTF-8; skipped");
                continue;
            };
            let Some(stem) = name.strip_suffix(".jsonl") else {
                continue;
            };
            // `is_file` follows links: a link to a transcript kept elsewhere is read; anything
            // named like a transcript that is not one (a folder, a link to nowhere) is said.
            if !path.is_file() {
                diagnostics.lost(
                    &path,
                    None,
                    "named like a transcript but not a readable file; skipped",
                );
                continue;
            }
            if let Some(agent) = stem.strip_prefix("agent-") {
                legacy.push((agent.to_owned(), path));
                continue;
            }
            let dir = bdir.join(stem);
            let (side, subagents) = if dir.is_dir() {
                session_folder(&dir, diagnostics)
            } else {
                (Vec::new(), Vec::new())
            };
            sessions.push(Found {
                stem: stem.to_owned(),
                file: path,
                side,
                subagents,
            });
        }
        for (agent, path) in legacy {
            let owner = crate::kit::source::open_regular(&path)
                .ok()
                .and_then(owner_of);
            let sub = Subagent {
                agent_id: agent.clone(),
                file: path.clone(),
                meta_file: None,
                legacy: true,
                child: String::new(),
                id: None,
            };
            match sessions
                .iter_mut()
                .find(|s| Some(&s.stem) == owner.as_ref())
            {
                Some(parent) => parent.subagents.push(sub),
                // A subagent whose session is gone is still a conversation: carry it alone.
                None => sessions.push(Found {
                    stem: format!("agent-{agent}"),
                    file: path,
                    side: Vec::new(),
                    subagents: Vec::new(),
                }),
            }
        }
        sessions.sort_by(|a, b| a.stem.cmp(&b.stem));
        found.extend(sessions);
    }
    let mut found = one_per_session(found, diagnostics);
    attach_outside_files(layout, &mut found, diagnostics);
    found
}

/// Adds the files Claude Code keeps for a session outside its project folder: its rewind
/// checkpoints (`file-history/<id>/<file>`, what `/rewind` puts back) and its todo lists
/// (`todos/<id>-agent-<agent id>.json`, the session's own and one per subagent). They travel
/// with the session, not with the home's configuration, because Claude Code's cleanup deletes
/// them with the transcript: a backup keeps them as long as it keeps the session, and a
/// restore of one session gives them back with it.
fn attach_outside_files(layout: &Layout, found: &mut [Found], diagnostics: &Diagnostics) {
    let mut todos: HashMap<String, Vec<PathBuf>> = HashMap::new();
    for e in read_dir_sorted(&layout.todos(), diagnostics) {
        let name = e.file_name();
        if let Some(owner) = name.to_str().and_then(todo_owner)
            && is_regular(&e)
        {
            todos.entry(owner.to_owned()).or_default().push(e.path());
        }
    }
    // The checkpoint folders there are, listed once (most sessions have none).
    let checkpointed: HashSet<std::ffi::OsString> =
        read_dir_sorted(&layout.file_history(), diagnostics)
            .iter()
            .map(fs::DirEntry::file_name)
            .collect();
    for f in found.iter_mut() {
        let before = f.side.len();
        let dir = layout.file_history().join(&f.stem);
        let listed = match checkpointed.contains(std::ffi::OsStr::new(&f.stem)) {
            true => read_dir_sorted(&dir, diagnostics),
            false => Vec::new(),
        };
        for e in listed {
            if is_regular(&e) {
                f.side.push(e.path());
            } else {
                diagnostics.left_out(
                    &e.path(),
                    None,
                    "not a regular file; not carried (a session's rewind checkpoints are the files directly in its file-history folder)",
                );
            }
        }
        f.side.extend(todos.remove(&f.stem).unwrap_or_default());
        if f.side.len() > before {
            f.side.sort();
        }
    }
}

/// The session a todo list belongs to: `<session>` of `<session>-agent-<agent>.json`.
pub fn todo_owner(name: &str) -> Option<&str> {
    let (session, agent) = name.strip_suffix(".json")?.split_once("-agent-")?;
    (!session.is_empty() && !agent.is_empty() && !agent.contains('/')).then_some(session)
}

/// The newest row timestamp of a transcript (empty when it has none or cannot be read).
fn last_timestamp(file: &Path) -> String {
    let scratch = Diagnostics::new();
    let mut newest = String::new();
    let mut ix = Indexer::new(file, &scratch, |r: &Record| {
        if r.is_row() && r.timestamp() > newest.as_str() {
            newest = r.timestamp().to_owned();
        }
    });
    if let Ok(f) = crate::kit::source::open_regular(file) {
        let mut f = io::BufReader::with_capacity(1 << 16, f);
        while let Ok(buf) = f.fill_buf() {
            if buf.is_empty() {
                break;
            }
            let n = buf.len();
            ix.feed(buf);
            f.consume(n);
        }
    }
    drop(ix.finish());
    newest
}

/// The same session id in two project folders (a moved project, a copied folder) would be two
/// sessions with one id. The one whose last row is newest is carried (the first found on a
/// tie); each other one is reported with its files and left out.
fn one_per_session(found: Vec<Found>, diagnostics: &Diagnostics) -> Vec<Found> {
    let mut by_stem: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (i, f) in found.iter().enumerate() {
        by_stem.entry(f.stem.as_str()).or_default().push(i);
    }
    let mut dropped: HashSet<usize> = HashSet::new();
    for idx in by_stem.values().filter(|v| v.len() > 1) {
        let stamps: Vec<String> = idx
            .iter()
            .map(|&i| last_timestamp(&found[i].file))
            .collect();
        let mut keep = 0;
        for (k, t) in stamps.iter().enumerate() {
            if *t > stamps[keep] {
                keep = k;
            }
        }
        let kept = &found[idx[keep]];
        for (k, &i) in idx.iter().enumerate() {
            if k == keep {
                continue;
            }
            let f = &found[i];
            let mut others: Vec<String> = f.side.iter().map(|p| p.display().to_string()).collect();
            others.extend(
                f.subagents
                    .iter()
                    .filter(|s| s.legacy)
                    .map(|s| s.file.display().to_string()),
            );
            let newer = if stamps[k] == stamps[keep] {
                "which is as new and was found first"
            } else {
                "whose last record is newer"
            };
            let mut why = format!(
                "session {} is also at {}, {newer}; this copy was not carried",
                f.stem,
                kept.file.display()
            );
            if !others.is_empty() {
                why.push_str(&format!(", nor its files {}", others.join(", ")));
            }
            diagnostics.lost(&f.file, None, why);
            dropped.insert(i);
        }
    }
    found
        .into_iter()
        .enumerate()
        .filter(|(i, _)| !dropped.contains(i))
        .map(|(_, f)| f)
        .collect()
}

/// The sessions of the store under the layout's config dir.
pub fn survey(layout: &Layout, ctx: &SurveyContext<'_>) -> Result<Survey, ConvertError> {
    let found = discover(layout, ctx.diagnostics);
    // Subagent ids must be unique in the state: `agent-<agentId>` when it is, else qualified
    // by the session.
    let mut agent_count: HashMap<&str, usize> = HashMap::new();
    for f in &found {
        for s in &f.subagents {
            *agent_count.entry(s.agent_id.as_str()).or_default() += 1;
        }
        if let Some(a) = f.stem.strip_prefix("agent-") {
            *agent_count.entry(a).or_default() += 1;
        }
    }
    let child_id = |session: &str, agent: &str| {
        if agent_count.get(agent).copied().unwrap_or(0) > 1 {
            format!("{session}:agent-{agent}")
        } else {
            format!("agent-{agent}")
        }
    };
    let child_ids: Vec<Vec<String>> = found
        .iter()
        .map(|f| {
            f.subagents
                .iter()
                .map(|s| child_id(&f.stem, &s.agent_id))
                .collect()
        })
        .collect();

    // A second session under an id already carried (a file named like a subagent id) is left
    // out rather than making the state invalid; the first one in reading order keeps it.
    let mut ids: HashSet<String> = HashSet::new();
    let mut fresh = |id: &SessionId, file: &Path| {
        let new = ids.insert(id.to_string());
        if !new {
            ctx.diagnostics.lost(
                file,
                None,
                format!("another session already has the id {id}; not carried"),
            );
        }
        new
    };
    let mut out = Vec::new();
    for (mut f, children) in found.into_iter().zip(child_ids) {
        let Ok(id) = SessionId::new(&f.stem) else {
            ctx.diagnostics.lost(
                &f.file,
                None,
                "the file name is not a usable session id; skipped",
            );
            continue;
        };
        if !fresh(&id, &f.file) {
            continue;
        }
        for (s, cid) in f.subagents.iter_mut().zip(children) {
            s.id = SessionId::new(&cid).ok().filter(|c| fresh(c, &s.file));
            s.child = cid;
        }
        let mut paths = vec![(f.file.clone(), true)];
        paths.extend(
            f.side
                .iter()
                .map(|p| (p.clone(), p.extension().is_some_and(|e| e == "jsonl"))),
        );
        paths.extend(
            f.subagents
                .iter()
                .filter(|s| s.legacy)
                .map(|s| (s.file.clone(), true)),
        );
        let mut files = Vec::with_capacity(paths.len());
        let mut sources = HashMap::new();
        for (p, appended) in paths {
            match SourceFile::stat(&p, appended) {
                Ok(sf) => {
                    sources.insert(p, sf.clone());
                    files.push(sf);
                }
                // Gone since it was listed: the read reports it.
                Err(_) => continue,
            }
        }
        let facts = json!({
            "stem": f.stem,
            "subagents": f.subagents.iter().map(|s| json!({
                "agentId": s.agent_id,
                "id": s.id.as_ref().map(SessionId::as_str),
                "legacy": s.legacy,
                // By name, not path: the home's path as it was spelled (a link, `x/..`) is no
                // fact of the session, and made every backup through another spelling record
                // other facts.
                "meta": s.meta_file.as_ref().and_then(|m| m.file_name()).map(|n| n.to_string_lossy().into_owned()),
            })).collect::<Vec<_>>(),
        });
        let subagents = f.subagents.iter().filter_map(|s| s.id.clone()).collect();
        out.push(
            Surveyed::new(
                id,
                files,
                facts.to_string().as_bytes(),
                Plan { found: f, sources },
            )
            .with_subagents(subagents),
        );
    }
    Ok(Survey::of(out))
}

/// The first `cwd` of every transcript (the head of the file, never the whole of it): the
/// project paths auto-memory folders are matched to.
pub fn project_paths(layout: &Layout) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let Ok(buckets) = fs::read_dir(layout.projects()) else {
        return out;
    };
    for b in buckets.flatten() {
        let Ok(files) = fs::read_dir(b.path()) else {
            continue;
        };
        for f in files.flatten() {
            let p = f.path();
            if p.extension().and_then(|e| e.to_str()) != Some("jsonl") {
                continue;
            }
            let Ok(file) = crate::kit::source::open_regular(&p) else {
                continue;
            };
            use std::io::BufRead;
            for line in io::BufReader::new(file)
                .lines()
                .map_while(Result::ok)
                .take(200)
            {
                if let Ok(v) = serde_json::from_str::<Value>(&line)
                    && let Some(c) = str_at(&v, "cwd")
                {
                    out.insert(c.to_owned());
                    break;
                }
            }
        }
    }
    out
}
