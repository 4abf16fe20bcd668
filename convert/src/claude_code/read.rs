//! Reading transcripts into sessions, one at a time.
//!
//! Every `projects/<bucket>/<id>.jsonl` is a session. Its subagents (2.1.x:
//! `<bucket>/<id>/subagents/agent-<agentId>.jsonl` + `.meta.json`; 2.0.x: `agent-<agentId>.jsonl`
//! beside the session) become sessions of their own, linked both ways through `_meta.asp`. A
//! session's native files are its transcript and everything under `<bucket>/<id>/`, so restoring
//! it into Claude Code gives back exactly what was there.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use asp_format::Descriptor;
use asp_format::name::{HarnessName, RelPath, SessionId};
use asp_format::state::{FileEntry, Meta, Native, Session};
use asp_format::update::UpdateWriter;
use serde_json::{Value, json};

use super::HARNESS;
use super::layout::Layout;
use super::replay::{self, Source};
use super::transcript::{self, Record, Tree, str_at};
use crate::fsops::is_executable;
use crate::harness::{ConvertError, ReadContext};

/// One session transcript found on disk, with the subagent transcripts that belong to it.
#[derive(Debug, Clone)]
struct Found {
    stem: String,
    file: PathBuf,
    /// `<bucket>/<stem>/` when it exists.
    dir: Option<PathBuf>,
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

fn read_dir_sorted(dir: &Path) -> Result<Vec<fs::DirEntry>, ConvertError> {
    let mut entries = match fs::read_dir(dir) {
        Ok(e) => e
            .collect::<Result<Vec<_>, _>>()
            .map_err(ConvertError::io(dir))?,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ConvertError::io(dir)(e)),
    };
    entries.sort_by_key(fs::DirEntry::file_name);
    Ok(entries)
}

/// The first `sessionId` in a legacy subagent file: the session it belongs to.
fn owner_of(file: &Path) -> Option<String> {
    let text = fs::read_to_string(file).ok()?;
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find_map(|v| str_at(&v, "sessionId").map(str::to_owned))
}

/// Every session transcript under `projects/`, bucket by bucket, sorted.
fn discover(layout: &Layout, ctx: &ReadContext<'_>) -> Result<Vec<Found>, ConvertError> {
    let mut found = Vec::new();
    for bucket in read_dir_sorted(&layout.projects())? {
        let bdir = bucket.path();
        if !bdir.is_dir() {
            continue;
        }
        if bucket.file_name().to_str().is_none() {
            ctx.diagnostics
                .skipped(&bdir, None, "project folder name is not UTF-8; skipped");
            continue;
        };
        let entries = read_dir_sorted(&bdir)?;
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
            if !path.is_file() {
                continue;
            }
            if let Some(agent) = stem.strip_prefix("agent-") {
                legacy.push((agent.to_owned(), path));
                continue;
            }
            let dir = bdir.join(stem);
            let dir = dir.is_dir().then_some(dir);
            let mut subagents = Vec::new();
            if let Some(d) = &dir {
                for s in read_dir_sorted(&d.join("subagents"))? {
                    let sname = s.file_name();
                    let Some(agent) = sname
                        .to_str()
                        .and_then(|n| n.strip_prefix("agent-"))
                        .and_then(|n| n.strip_suffix(".jsonl"))
                    else {
                        continue;
                    };
                    let meta = d.join("subagents").join(format!("agent-{agent}.meta.json"));
                    subagents.push(Subagent {
                        agent_id: agent.to_owned(),
                        file: s.path(),
                        meta_file: meta.is_file().then_some(meta),
                        legacy: false,
                    });
                }
            }
            sessions.push(Found {
                stem: stem.to_owned(),
                file: path,
                dir,
                subagents,
            });
        }
        for (agent, path) in legacy {
            let owner = owner_of(&path);
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
                    dir: None,
                    subagents: Vec::new(),
                }),
            }
        }
        sessions.sort_by(|a, b| a.stem.cmp(&b.stem));
        found.extend(sessions);
    }
    Ok(found)
}

/// What reading the sessions found out besides the sessions: project paths, for memory.
#[derive(Debug, Default)]
pub struct SessionsRead {
    pub sessions: Vec<Session>,
    /// Every working directory seen in a transcript.
    pub cwds: BTreeSet<String>,
}

/// Reads every session, streaming each one's updates into the blob sink as it goes.
pub fn read_sessions(layout: &Layout, ctx: &ReadContext<'_>) -> Result<SessionsRead, ConvertError> {
    let found = discover(layout, ctx)?;
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
        let bytes = fs::read(&f.file).map_err(ConvertError::io(&f.file))?;
        let records = transcript::parse(&bytes, &f.file, ctx.diagnostics);

        // Agent/Task calls and the subagent each one started.
        let mut agent_tool: HashMap<String, String> = HashMap::new();
        for r in &records {
            let Some(agent) = r
                .value
                .pointer("/toolUseResult/agentId")
                .and_then(Value::as_str)
            else {
                continue;
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
        }
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
        let mut native = vec![(f.file.clone(), sink_bytes(ctx, &bytes)?)];
        if let Some(dir) = &f.dir {
            for entry in walkdir::WalkDir::new(dir)
                .follow_links(false)
                .sort_by_file_name()
            {
                let entry = entry.map_err(|e| ConvertError::Io {
                    path: dir.clone(),
                    source: e.into(),
                })?;
                if entry.file_type().is_file() {
                    let p = entry.path().to_path_buf();
                    let d = sink_file(ctx, &p)?;
                    native.push((p, d));
                }
            }
        }
        for s in f.subagents.iter().filter(|s| s.legacy) {
            let d = sink_file(ctx, &s.file)?;
            native.push((s.file.clone(), d));
        }
        let files = native_entries(layout, ctx, &native);

        let (session, cwd, _) = build(
            ctx,
            id,
            &records,
            &tool_child,
            false,
            vpath(&f.file),
            files.clone(),
        )?;
        out.cwds.extend(cwd.clone());
        let parent_id = session.id.to_string();
        out.sessions.push(session);

        for s in &f.subagents {
            let cid = child_id(&f.stem, &s.agent_id);
            let Ok(child) = SessionId::new(&cid) else {
                continue;
            };
            let sbytes = fs::read(&s.file).map_err(ConvertError::io(&s.file))?;
            let srecords = transcript::parse(&sbytes, &s.file, ctx.diagnostics);
            // The child's own files, a subset of the parent's (blobs are stored once).
            let own: Vec<FileEntry> = files
                .iter()
                .filter(|e| {
                    let p = e.path.as_str();
                    vpath(&s.file).as_deref() == Some(p)
                        || s.meta_file.as_ref().and_then(|m| vpath(m)).as_deref() == Some(p)
                })
                .cloned()
                .collect();
            let (mut cs, ccwd, titled) = build(
                ctx,
                child,
                &srecords,
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

fn sink_bytes(ctx: &ReadContext<'_>, bytes: &[u8]) -> Result<(Descriptor, bool), ConvertError> {
    Ok((ctx.blobs.put(bytes)?, false))
}

fn sink_file(ctx: &ReadContext<'_>, p: &Path) -> Result<(Descriptor, bool), ConvertError> {
    let mut file = fs::File::open(p).map_err(ConvertError::io(p))?;
    let exec = file.metadata().map(|m| is_executable(&m)).unwrap_or(false);
    Ok((ctx.blobs.put_reader(&mut file)?, exec))
}

fn native_entries(
    layout: &Layout,
    ctx: &ReadContext<'_>,
    files: &[(PathBuf, (Descriptor, bool))],
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

/// Builds one session from its records: replays the chain into a blob and gathers the facts.
fn build(
    ctx: &ReadContext<'_>,
    id: SessionId,
    records: &[Record],
    subagents: &HashMap<String, String>,
    subagent: bool,
    transcript: Option<String>,
    files: Vec<FileEntry>,
) -> Result<(Session, Option<String>, bool), ConvertError> {
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

    let mut w = UpdateWriter::new(ctx.blobs)?;
    let sid = id.as_str().to_owned();
    let source = Source {
        records,
        chain: &chain,
        cwd: cwd.as_deref(),
        subagents,
    };
    let summary = replay::replay(&source, &mut |u| {
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
            native: Some(Native {
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
