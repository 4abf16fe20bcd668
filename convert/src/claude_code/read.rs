//! Reading transcripts into sessions, one at a time.
//!
//! Every `projects/<bucket>/<id>.jsonl` is a session. Its subagents (2.1.x:
//! `<bucket>/<id>/subagents/agent-<agentId>.jsonl` + `.meta.json`; 2.0.x: `agent-<agentId>.jsonl`
//! beside the session) become sessions of their own, linked both ways through `_meta.asp`. A
//! session's native files are its transcript, its subagents' transcripts and `.meta.json`, its
//! `tool-results/` and its 2.0-era subagent files, so restoring it into Claude Code gives back
//! exactly what was there; anything else in `<bucket>/<id>/` is reported and left out.
//!
//! A transcript is read in two passes, so a large one is never held in memory: the first
//! streams the file (into its blob too) and keeps a skeleton of each line
//! ([`super::transcript::Indexer`]); the replay then reads the lines it replays back one at a
//! time by offset ([`super::transcript::Lines`]). An entry that cannot be read costs only
//! itself: it is reported and the rest is read.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::io::{self, BufRead, Read, Write};
use std::path::{Path, PathBuf};

use asp_format::Descriptor;
use asp_format::blob::BlobError;
use asp_format::name::{HarnessName, RelPath, SessionId};
use asp_format::state::{FileEntry, Meta, Native, Session};
use asp_format::update::UpdateWriter;
use serde_json::{Value, json};

use super::HARNESS;
use super::layout::Layout;
use super::replay::{self, Source};
use super::transcript::{Index, Indexer, Lines, Record, Tree, str_at};
use crate::fsops::is_executable;
use crate::harness::{ConvertError, ReadContext};
use crate::report::Diagnostics;

/// The folders of `<bucket>/<id>/` Claude Code keeps for a session. Only their files are a
/// session's native files; the writer restores nothing else (see `write::Allowed`).
pub const SUBAGENTS: &str = "subagents";
pub const TOOL_RESULTS: &str = "tool-results";

/// One session transcript found on disk, with the subagent transcripts that belong to it.
#[derive(Debug, Clone)]
struct Found {
    stem: String,
    file: PathBuf,
    /// The files of `<bucket>/<stem>/` that travel with the session (subagent transcripts and
    /// their `.meta.json`, tool results), sorted by path.
    side: Vec<PathBuf>,
    subagents: Vec<Subagent>,
}

#[derive(Debug, Clone)]
struct Subagent {
    agent_id: String,
    file: PathBuf,
    meta_file: Option<PathBuf>,
    /// Beside the session (2.0.x) rather than under its directory.
    legacy: bool,
}

/// The entries of `dir`, sorted by name. A folder that is not there has none; one that cannot
/// be read (or is not a folder) is reported and has none.
fn read_dir_sorted(dir: &Path, diagnostics: &Diagnostics) -> Vec<fs::DirEntry> {
    let mut entries: Vec<fs::DirEntry> = match fs::read_dir(dir) {
        Ok(e) => e.filter_map(Result::ok).collect(),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            diagnostics.skipped(
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

/// What a session keeps under `<bucket>/<stem>/`: `subagents/agent-<id>.jsonl` (+ `.meta.json`)
/// and `tool-results/<file>`. Anything else there is reported and left out.
fn session_folder(dir: &Path, ctx: &ReadContext<'_>) -> (Vec<PathBuf>, Vec<Subagent>) {
    let mut side = Vec::new();
    let mut subagents = Vec::new();
    let not_carried = |p: &Path, what: &str| {
        ctx.diagnostics.skipped(
            p,
            None,
            format!("{what}; not carried (a session keeps only subagents/agent-*.jsonl, their .meta.json, and tool-results/ files)"),
        )
    };
    for e in read_dir_sorted(dir, ctx.diagnostics) {
        let path = e.path();
        let name = e.file_name();
        match name.to_str() {
            Some(SUBAGENTS) | Some(TOOL_RESULTS) if !e.file_type().is_ok_and(|t| t.is_dir()) => {
                not_carried(&path, "not a folder");
            }
            Some(SUBAGENTS) => {
                for s in read_dir_sorted(&path, ctx.diagnostics) {
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
                        });
                        side.push(sp);
                    } else if agent_id(sname, ".meta.json").is_some() {
                        side.push(sp);
                    } else {
                        not_carried(&sp, "not a subagent transcript or its metadata");
                    }
                }
            }
            Some(TOOL_RESULTS) => {
                for t in read_dir_sorted(&path, ctx.diagnostics) {
                    if is_regular(&t) {
                        side.push(t.path());
                    } else {
                        not_carried(&t.path(), "not a regular file");
                    }
                }
            }
            _ => not_carried(&path, "not a file Claude Code keeps for a session"),
        }
    }
    (side, subagents)
}

/// Every session transcript under `projects/`, bucket by bucket, sorted; one per session id.
fn discover(layout: &Layout, ctx: &ReadContext<'_>) -> Vec<Found> {
    let mut found = Vec::new();
    for bucket in read_dir_sorted(&layout.projects(), ctx.diagnostics) {
        let bdir = bucket.path();
        if !bdir.is_dir() {
            continue;
        }
        if bucket.file_name().to_str().is_none() {
            ctx.diagnostics
                .skipped(&bdir, None, "project folder name is not UTF-8; skipped");
            continue;
        };
        let entries = read_dir_sorted(&bdir, ctx.diagnostics);
        let mut sessions: Vec<Found> = Vec::new();
        let mut legacy: Vec<(String, PathBuf)> = Vec::new();
        for e in &entries {
            let path = e.path();
            let Some(name) = e.file_name().to_str().map(str::to_owned) else {
                ctx.diagnostics
                    .skipped(&path, None, "file name is not UTF-8; skipped");
                continue;
            };
            let Some(stem) = name.strip_suffix(".jsonl") else {
                continue;
            };
            // `is_file` follows links: a link to a transcript kept elsewhere is read; anything
            // named like a transcript that is not one (a folder, a link to nowhere) is said.
            if !path.is_file() {
                ctx.diagnostics.skipped(
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
                session_folder(&dir, ctx)
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
            let owner = fs::File::open(&path).ok().and_then(owner_of);
            let sub = Subagent {
                agent_id: agent.clone(),
                file: path.clone(),
                meta_file: None,
                legacy: true,
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
    one_per_session(found, ctx.diagnostics)
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
    if let Ok(f) = fs::File::open(file) {
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
            diagnostics.skipped(&f.file, None, why);
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

/// What reading the sessions found out besides the sessions: project paths, for memory.
#[derive(Debug, Default)]
pub struct SessionsRead {
    pub sessions: Vec<Session>,
    /// Every working directory seen in a transcript.
    pub cwds: BTreeSet<String>,
}

/// A transcript after the first pass: its index, the open file the second pass reads from,
/// and its blob when it is kept as a native file.
struct Transcript {
    path: PathBuf,
    file: fs::File,
    index: Index,
    blob: Option<Kept>,
}

/// A blob of a file and whether the file is executable.
type Kept = (Descriptor, bool);

/// Streams a file: every chunk goes to `feed` and, when `keep`, into a blob. `None` when the
/// file cannot be read (reported); a failing blob store is an error.
fn stream_file(
    ctx: &ReadContext<'_>,
    path: &Path,
    keep: bool,
    what: &str,
    mut feed: impl FnMut(&[u8]),
) -> Result<Option<(fs::File, Option<Kept>)>, ConvertError> {
    let unreadable = |e: io::Error| {
        ctx.diagnostics.skipped(
            path,
            None,
            format!("{what} cannot be read ({e}); not carried"),
        );
    };
    let mut file = match fs::File::open(path) {
        Ok(f) => f,
        Err(e) => {
            unreadable(e);
            return Ok(None);
        }
    };
    let exec = file.metadata().map(|m| is_executable(&m)).unwrap_or(false);
    let mut blob = if keep { Some(ctx.blobs.begin()?) } else { None };
    let mut buf = vec![0; 1 << 16];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => {
                unreadable(e);
                return Ok(None);
            }
        };
        if let Some(w) = blob.as_mut() {
            w.write_all(&buf[..n]).map_err(BlobError::from)?;
        }
        feed(&buf[..n]);
    }
    let blob = match blob {
        Some(w) => Some((w.finish()?, exec)),
        None => None,
    };
    Ok(Some((file, blob)))
}

/// The first pass over a transcript (see [`Indexer`]); its bytes go into a blob when `keep`.
fn read_transcript(
    ctx: &ReadContext<'_>,
    path: &Path,
    keep: bool,
    on_record: impl FnMut(&Record),
) -> Result<Option<Transcript>, ConvertError> {
    let mut ix = Indexer::new(path, ctx.diagnostics, on_record);
    let Some((file, blob)) = stream_file(ctx, path, keep, "the transcript", |c| ix.feed(c))? else {
        return Ok(None);
    };
    Ok(Some(Transcript {
        path: path.to_path_buf(),
        file,
        index: ix.finish(),
        blob,
    }))
}

/// Reads every session, streaming each one's updates into the blob sink as it goes.
pub fn read_sessions(layout: &Layout, ctx: &ReadContext<'_>) -> Result<SessionsRead, ConvertError> {
    let found = discover(layout, ctx);
    let keep = ctx.options.native;
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

    let mut out = SessionsRead::default();
    let mut ids: HashSet<String> = HashSet::new();
    // A second session under an id already carried (a file named like a subagent id) is left
    // out rather than making the state invalid.
    let mut fresh = |id: &SessionId, file: &Path| {
        let new = ids.insert(id.to_string());
        if !new {
            ctx.diagnostics.skipped(
                file,
                None,
                format!("another session already has the id {id}; not carried"),
            );
        }
        new
    };
    ctx.progress.begin("reading Claude Code sessions", None);
    for f in &found {
        ctx.progress.item(&f.stem);
        let Ok(id) = SessionId::new(&f.stem) else {
            ctx.diagnostics.skipped(
                &f.file,
                None,
                "the file name is not a usable session id; skipped",
            );
            continue;
        };
        if !fresh(&id, &f.file) {
            continue;
        }
        // Agent/Task calls and the subagent each one started; tool names for the replay.
        let mut agent_tool: HashMap<String, String> = HashMap::new();
        let mut tool_names: HashMap<String, String> = HashMap::new();
        let Some(mut t) = read_transcript(ctx, &f.file, keep, |r| {
            replay::note_tool_names(r, &mut tool_names);
            let Some(agent) = r
                .value
                .pointer("/toolUseResult/agentId")
                .and_then(Value::as_str)
            else {
                return;
            };
            let tool = r
                .content()
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .find_map(|b| str_at(b, "tool_use_id"));
            if let Some(t) = tool {
                agent_tool.insert(agent.to_owned(), t.to_owned());
            }
        })?
        else {
            continue;
        };
        let mut subagent_meta: HashMap<String, Value> = HashMap::new();
        for s in &f.subagents {
            if let Some(m) = &s.meta_file
                && let Ok(text) = fs::read(m)
            {
                match serde_json::from_slice::<Value>(&text) {
                    Ok(v) => {
                        if let Some(t) = str_at(&v, "toolUseId") {
                            agent_tool.insert(s.agent_id.clone(), t.to_owned());
                        }
                        subagent_meta.insert(s.agent_id.clone(), v);
                    }
                    Err(e) => ctx.diagnostics.note(
                        m,
                        None,
                        format!("subagent metadata is not JSON ({e}); carried as is"),
                    ),
                }
            }
        }
        let tool_child: HashMap<String, String> = f
            .subagents
            .iter()
            .filter_map(|s| {
                agent_tool
                    .get(&s.agent_id)
                    .map(|t| (t.clone(), child_id(&f.stem, &s.agent_id)))
            })
            .collect();

        let vpath = |p: &Path| layout.virtual_path(p);
        let files = match t.blob {
            Some(main) => {
                let mut native = vec![(f.file.clone(), main)];
                let legacy = f.subagents.iter().filter(|s| s.legacy).map(|s| &s.file);
                for p in f.side.iter().chain(legacy) {
                    if let Some((_, Some(d))) = stream_file(ctx, p, true, "this file", |_| {})? {
                        native.push((p.clone(), d));
                    }
                }
                Some(native_entries(layout, ctx, &native))
            }
            None => None,
        };

        let (session, cwd, _) = build(
            ctx,
            id,
            &mut t,
            &tool_names,
            &tool_child,
            false,
            vpath(&f.file),
            files.clone(),
        )?;
        drop(t);
        out.cwds.extend(cwd.clone());
        let parent_id = session.id.to_string();
        out.sessions.push(session);

        for s in &f.subagents {
            let cid = child_id(&f.stem, &s.agent_id);
            let Ok(child) = SessionId::new(&cid) else {
                continue;
            };
            if !fresh(&child, &s.file) {
                continue;
            }
            let mut child_tools: HashMap<String, String> = HashMap::new();
            let Some(mut st) = read_transcript(ctx, &s.file, false, |r| {
                replay::note_tool_names(r, &mut child_tools)
            })?
            else {
                continue;
            };
            // The child's own files, a subset of the parent's (blobs are stored once).
            let own: Option<Vec<FileEntry>> = files.as_ref().map(|files| {
                files
                    .iter()
                    .filter(|e| {
                        let p = e.path.as_str();
                        vpath(&s.file).as_deref() == Some(p)
                            || s.meta_file.as_ref().and_then(|m| vpath(m)).as_deref() == Some(p)
                    })
                    .cloned()
                    .collect()
            });
            let (mut cs, ccwd, titled) = build(
                ctx,
                child,
                &mut st,
                &child_tools,
                &HashMap::new(),
                true,
                vpath(&s.file),
                own,
            )?;
            out.cwds.extend(ccwd);
            let meta = cs.meta.get_or_insert_with(Meta::new);
            let mut parent = json!({"sessionId": parent_id});
            if let Some(t) = agent_tool.get(&s.agent_id) {
                parent["toolCallId"] = json!(t);
            }
            meta.insert("asp".into(), json!({"parent": parent}));
            if let Some(Value::Object(cc)) = meta.get_mut("claudeCode") {
                cc.insert("agentId".into(), json!(s.agent_id));
                if let Some(m) = subagent_meta.get(&s.agent_id) {
                    for k in ["agentType", "description"] {
                        if let Some(v) = m.get(k) {
                            cc.insert(k.into(), v.clone());
                        }
                    }
                }
            }
            if let Some(d) = subagent_meta
                .get(&s.agent_id)
                .and_then(|m| str_at(m, "description"))
                && !titled
            {
                cs.title = d.to_owned();
            }
            if cs.cwd.is_none() {
                cs.cwd.clone_from(&cwd);
            }
            out.sessions.push(cs);
        }
    }
    ctx.progress.finish();
    Ok(out)
}

fn native_entries(
    layout: &Layout,
    ctx: &ReadContext<'_>,
    files: &[(PathBuf, Kept)],
) -> Vec<FileEntry> {
    let mut out = Vec::new();
    for (p, (d, exec)) in files {
        match layout.virtual_path(p).map(|v| RelPath::new(&v)) {
            Some(Ok(path)) => out.push(FileEntry {
                path,
                executable: *exec,
                content: *d,
            }),
            _ => ctx.diagnostics.skipped(
                p,
                None,
                "this file's name cannot be carried portably; left out of the session's native files",
            ),
        }
    }
    out
}

/// Builds one session from its transcript's index: replays the chain into a blob, reading the
/// records it replays back from the file one at a time, and gathers the facts.
#[allow(clippy::too_many_arguments)]
fn build(
    ctx: &ReadContext<'_>,
    id: SessionId,
    t: &mut Transcript,
    tool_names: &HashMap<String, String>,
    subagents: &HashMap<String, String>,
    subagent: bool,
    transcript: Option<String>,
    files: Option<Vec<FileEntry>>,
) -> Result<(Session, Option<String>, bool), ConvertError> {
    let records = &t.index.records;
    let tree = Tree::new(records);
    let leaf = tree.leaf(subagent);
    let chain = tree.chain(leaf, subagent);
    let mut cwd = records
        .iter()
        .find_map(|r| str_at(&r.value, "cwd").map(str::to_owned));
    if let Some(moved) = records
        .iter()
        .rev()
        .find(|r| r.kind() == "relocated")
        .and_then(|r| str_at(&r.value, "relocatedCwd"))
    {
        cwd = Some(moved.to_owned());
    }
    let updated_at = records
        .iter()
        .filter(|r| r.is_row())
        .map(Record::timestamp)
        .filter(|t| !t.is_empty())
        .max()
        .map(str::to_owned);

    let mut w = UpdateWriter::derived(ctx.blobs, FileEntry::find(&files, &transcript))?;
    let sid = id.as_str().to_owned();
    let source = Source {
        records,
        chain: &chain,
        cwd: cwd.as_deref(),
        subagents,
        tool_names,
    };
    let mut lines = Lines::new(&t.path, &mut t.file, ctx.diagnostics);
    let index = &t.index;
    let summary = replay::replay(&source, &mut |i| lines.load(index, i), &mut |u| {
        w.push(&u.to_params(&sid))?;
        Ok(())
    })?;
    let updates = w.finish()?;

    let last = |key: &str| {
        records
            .iter()
            .rev()
            .find_map(|r| str_at(&r.value, key).map(str::to_owned))
    };
    let mut cc = BTreeMap::new();
    if let Some(t) = transcript {
        cc.insert("transcript", json!(t));
    }
    if let Some(l) = &chain.leaf {
        cc.insert("leafUuid", json!(l));
    }
    if !chain.abandoned.is_empty() {
        let uuids: Vec<&str> = chain
            .abandoned
            .iter()
            .filter_map(|&i| records[i].uuid())
            .collect();
        cc.insert("abandonedUuids", json!(uuids));
    }
    for (k, v) in [
        ("version", last("version")),
        ("gitBranch", last("gitBranch")),
        ("model", summary.model.clone()),
        ("permissionMode", summary.mode.clone()),
    ] {
        if let Some(v) = v {
            cc.insert(k, json!(v));
        }
    }
    let mut meta = Meta::new();
    meta.insert(
        "claudeCode".into(),
        Value::Object(cc.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()),
    );
    let titled = summary.title.is_some();
    let title = summary.title.or(summary.first_prompt).unwrap_or_default();
    Ok((
        Session {
            id,
            title,
            harness: Some(HarnessName::new(HARNESS).expect("valid")),
            cwd: cwd.clone(),
            updated_at,
            updates,
            native: files.map(|files| Native {
                harness: HarnessName::new(HARNESS).expect("valid"),
                files,
            }),
            meta: Some(meta),
        },
        cwd,
        titled,
    ))
}

/// The first `cwd` of every transcript, without replaying anything: project paths for memory
/// when sessions are not being read.
pub fn scan_cwds(layout: &Layout) -> BTreeSet<String> {
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
            let Ok(file) = fs::File::open(&p) else {
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
