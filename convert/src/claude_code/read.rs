//! Reading one surveyed session into sessions: the transcript, then each of its subagents.
//!
//! A transcript is read in two passes, so a large one is never held in memory: the first
//! streams the file (into its blob too) and keeps a skeleton of each line
//! ([`super::transcript::Indexer`]); the replay then reads the lines it replays back one at a
//! time by offset ([`super::transcript::Lines`]). An entry that cannot be read costs only
//! itself: it is reported and the rest is read. Files are read as the survey saw them
//! ([`crate::kit::source`]): a transcript Claude Code is appending to is read up to its last
//! whole line.

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use asp_format::Descriptor;
use asp_format::name::{HarnessName, RelPath, SessionId};
use asp_format::state::{FileEntry, Meta, Native, Session};
use asp_format::update::UpdateWriter;
use serde_json::{Value, json};

use super::NAME;
use super::layout::Layout;
use super::replay::{self, Source};
use super::survey::Plan;
use super::transcript::{Chain, Index, Indexer, Lines, Record, Tree, str_at};
use crate::error::ConvertError;
use crate::harness::{SessionContext, Surveyed};
use crate::kit::fsops::is_executable;
use crate::kit::meta::{self, Parent};
use crate::kit::report::{Diagnostics, Severity};
use crate::kit::source::{SourceFile, read_into};

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

/// Streams a file as the survey saw it: every chunk goes to `feed` and, when `keep`, into a
/// blob (a `transcript`'s as one, [`asp_format::blob::BlobSink::begin_transcript`]). `None`
/// when the file cannot be read (reported); a failing blob store is an error.
fn stream_file(
    ctx: &SessionContext<'_>,
    plan: &Plan,
    path: &Path,
    keep: bool,
    transcript: bool,
    what: &str,
    feed: impl FnMut(&[u8]),
) -> Result<Option<(fs::File, Option<Kept>)>, ConvertError> {
    let unreadable = |e: io::Error| {
        ctx.diagnostics.lost(
            path,
            None,
            format!("{what} cannot be read ({e}); not carried"),
        );
    };
    let opened = match plan.source(path) {
        Some(src) => src.open(),
        None => Err(io::Error::new(
            io::ErrorKind::NotFound,
            "it was gone when the store was listed",
        )),
    };
    let mut file = match opened {
        Ok(f) => f,
        Err(e) => {
            unreadable(e);
            return Ok(None);
        }
    };
    let exec = file
        .file_mut()
        .metadata()
        .map(|m| is_executable(&m))
        .unwrap_or(false);
    let blob = match (keep, transcript) {
        (true, true) => Some(ctx.blobs.begin_transcript(path, file.len())?),
        (true, false) => Some(ctx.blobs.begin_sized(file.len())?),
        (false, _) => None,
    };
    match read_into(&mut file, blob, feed)? {
        Ok(blob) => Ok(Some((file.into_file(), blob.map(|d| (d, exec))))),
        Err(e) => {
            unreadable(e);
            Ok(None)
        }
    }
}

/// The first pass over a transcript (see [`Indexer`]); its bytes go into a blob when `keep`.
fn read_transcript(
    ctx: &SessionContext<'_>,
    plan: &Plan,
    path: &Path,
    keep: bool,
    on_record: impl FnMut(&Record),
) -> Result<Option<Transcript>, ConvertError> {
    let mut ix = Indexer::new(path, ctx.diagnostics, on_record);
    let Some((file, blob)) = stream_file(ctx, plan, path, keep, true, "the transcript", |c| {
        ix.feed(c)
    })?
    else {
        return Ok(None);
    };
    Ok(Some(Transcript {
        path: path.to_path_buf(),
        file,
        index: ix.finish(),
        blob,
    }))
}

/// Reads one surveyed session and its subagents, streaming each one's updates into the blob
/// sink as it goes.
pub fn read_session(
    layout: &Layout,
    ctx: &SessionContext<'_>,
    entry: &Surveyed,
) -> Result<Vec<Session>, ConvertError> {
    let plan: &Plan = entry.plan();
    let f = &plan.found;
    let keep = ctx.options.native;
    let mut out = Vec::new();
    // Agent/Task calls and the subagent each one started; tool names for the replay.
    let mut agent_tool: HashMap<String, String> = HashMap::new();
    let mut tool_names: HashMap<String, String> = HashMap::new();
    let Some(mut t) = read_transcript(ctx, plan, &f.file, keep, |r| {
        replay::note_tool_names(r, &mut tool_names);
        let Some(agent) = r.agent_id() else {
            return;
        };
        let tool = r.tool_blocks().iter().find_map(|b| b.str("tool_use_id"));
        if let Some(t) = tool {
            agent_tool.insert(agent.to_owned(), t.to_owned());
        }
    })?
    else {
        return Ok(out);
    };
    let mut subagent_meta: HashMap<String, Value> = HashMap::new();
    for s in &f.subagents {
        if let Some(m) = &s.meta_file
            && let Some(Ok(text)) = plan.source(m).map(SourceFile::read_all)
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
                .map(|t| (t.clone(), s.child.clone()))
        })
        .collect();

    let vpath = |p: &Path| layout.virtual_path(p);
    let files = match t.blob {
        Some(main) => {
            let mut native = vec![(f.file.clone(), main)];
            let legacy = f.subagents.iter().filter(|s| s.legacy).map(|s| &s.file);
            for p in f.side.iter().chain(legacy) {
                // A subagent's transcript is compressed as one, against the project's dictionary.
                let transcript = f.subagents.iter().any(|s| s.file == *p);
                if let Some((_, Some(d))) =
                    stream_file(ctx, plan, p, true, transcript, "this file", |_| {})?
                {
                    native.push((p.clone(), d));
                }
            }
            Some(native_entries(layout, ctx, &native))
        }
        None => None,
    };

    let (session, cwd, _) = build(
        ctx,
        entry.id.clone(),
        &mut t,
        &tool_names,
        &tool_child,
        false,
        vpath(&f.file),
        files.clone(),
    )?;
    drop(t);
    let parent_id = session.id.to_string();
    out.push(session);

    for s in &f.subagents {
        let Some(child) = s.id.clone() else {
            continue;
        };
        let mut child_tools: HashMap<String, String> = HashMap::new();
        let Some(mut st) = read_transcript(ctx, plan, &s.file, false, |r| {
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
        let (mut cs, _, titled) = build(
            ctx,
            child,
            &mut st,
            &child_tools,
            &HashMap::new(),
            true,
            vpath(&s.file),
            own,
        )?;
        meta::set_parent(
            &mut cs.meta,
            &Parent::new(parent_id.clone()).with_call(agent_tool.get(&s.agent_id)),
        );
        if let Some(Value::Object(cc)) = cs.meta.as_mut().and_then(|m| m.get_mut("claudeCode")) {
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
            if let Some(Value::Object(cc)) = cs.meta.as_mut().and_then(|m| m.get_mut("claudeCode"))
            {
                cc.insert("titleSource".into(), json!("agent-description"));
            }
        }
        if cs.cwd.is_none() {
            cs.cwd.clone_from(&cwd);
        }
        out.push(cs);
    }
    Ok(out)
}

fn native_entries(
    layout: &Layout,
    ctx: &SessionContext<'_>,
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
            _ => ctx.diagnostics.lost(
                p,
                None,
                "this file's name cannot be carried portably; left out of the session's native files",
            ),
        }
    }
    out
}

/// Says that the chain stops at row `i`, whose parent is not in the file: the rows before it
/// are not replayed (Claude Code, resuming, shows the conversation from there too, spec §3.3),
/// though the native file keeps them. Right after a line that could not be read, that line was
/// as like as not the parent, and the rows are reported as the damage's (kept natively when
/// the native file travels, else lost); otherwise it is a note.
fn report_cut(diagnostics: &Diagnostics, path: &Path, records: &[Record], i: usize, chain: &Chain) {
    let r = &records[i];
    let before = chain.abandoned.iter().filter(|&&j| j < i).count();
    if before == 0 {
        return;
    }
    let parent = r.parent_uuid().unwrap_or("");
    let previous_line = i.checked_sub(1).map_or(0, |p| records[p].line);
    // A line between the two records that was reported damaged (a blank line is skipped
    // unsaid, and is no damage).
    let damaged_before = diagnostics.items().iter().find_map(|d| {
        let l = d.line?;
        (d.severity == Severity::Damaged
            && d.file() == Some(path)
            && l > previous_line
            && l < r.line)
            .then_some(l)
    });
    let (rows, are) = if before == 1 {
        ("row", "is")
    } else {
        ("rows", "are")
    };
    if let Some(bad) = damaged_before {
        diagnostics.damaged(
            path,
            Some(r.line),
            format!(
                "its parent row {parent} is not in the file (line {bad} before it could not be \
                 read): the conversation starts here, as Claude Code resumes it, and the \
                 {before} {rows} before it {are} not carried as updates"
            ),
        );
    } else {
        diagnostics.note(
            path,
            Some(r.line),
            format!(
                "its parent row {parent} is not in the file: the conversation starts here, as \
                 Claude Code resumes it, and the {before} {rows} before it {are} not carried as \
                 updates (in the session's native file)"
            ),
        );
    }
}

/// The native transcript of a session as its state holds it (see
/// [`crate::Harness::transcript`]): the native file at `_meta.claudeCode.transcript`, which
/// [`build`] sets to the path of the file it replayed and derived the update stream from.
pub fn transcript(native: &Native, meta: Option<&Meta>) -> Option<Descriptor> {
    crate::kit::meta::native_file(native, meta, "claudeCode", "transcript")
}

/// Builds one session from its transcript's index: replays the chain into a blob, reading the
/// records it replays back from the file one at a time, and gathers the facts.
#[allow(clippy::too_many_arguments)]
fn build(
    ctx: &SessionContext<'_>,
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
    if let Some(i) = chain.broken_at {
        report_cut(ctx.diagnostics, &t.path, records, i, &chain);
    }
    // Said as the other harnesses say it (a session that holds no conversation); the session
    // is packed all the same, its file to come back into Claude Code as it was; a write into
    // another harness answers that one whose stream is empty has nothing to write
    // (`store::take_empty_sessions`).
    if !records
        .iter()
        .any(|r| r.is_row() && matches!(r.kind(), "user" | "assistant"))
    {
        ctx.diagnostics.note(
            &t.path,
            None,
            match files {
                Some(_) => {
                    "the transcript holds no conversation (no prompt or answer); the session is \
                     carried as its file, which a restore into Claude Code gives back"
                }
                None => "the transcript holds no conversation (no prompt or answer)",
            },
        );
    }
    let mut cwd = records.iter().find_map(|r| r.str("cwd").map(str::to_owned));
    if let Some(moved) = records
        .iter()
        .rev()
        .find(|r| r.kind() == "relocated")
        .and_then(|r| r.str("relocatedCwd"))
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
    let mut lines = IndexedLines {
        lines: Lines::new(&t.path, &mut t.file, ctx.diagnostics),
        index: &t.index,
    };
    // Each update is written straight from its parts (`to_params` would build a `Value`
    // tree of it first; the bytes are the same).
    let mut scratch = Vec::new();
    let summary = replay::replay(&source, &mut lines, &mut |u| {
        w.push_with(|out| u.write(&sid, out, &mut scratch))?;
        Ok(())
    })?;
    let updates = w.finish()?;

    let last = |key: &str| {
        records
            .iter()
            .rev()
            .find_map(|r| r.str(key).map(str::to_owned))
    };
    let mut cc = BTreeMap::new();
    if let Some(t) = transcript {
        cc.insert("transcript", json!(t));
    }
    if let Some(l) = &chain.leaf {
        cc.insert("leafUuid", json!(l));
    }
    // How many rows fell off the chain (edited prompts, rewinds, retries): a count, not
    // their uuids. The rows themselves are in the native file; a list of random uuids in the
    // state manifest cost most of its size (300 of 406 KB compressed on a 256 MiB home),
    // which every snapshot rewrote and every one-session read parsed.
    if !chain.abandoned.is_empty() {
        cc.insert("abandonedRows", json!(chain.abandoned.len()));
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
    let title_source = summary.title_source.or_else(|| {
        summary
            .first_prompt
            .as_ref()
            .is_some_and(|p| !p.is_empty())
            .then_some("first_prompt")
    });
    if let (Some(source), Some(Value::Object(cc))) = (title_source, meta.get_mut("claudeCode")) {
        cc.insert("titleSource".into(), json!(source));
    }
    let title = summary.title.or(summary.first_prompt).unwrap_or_default();
    Ok((
        Session {
            id,
            title,
            harness: Some(HarnessName::new(NAME).expect("valid")),
            cwd: cwd.clone(),
            updated_at,
            updates,
            native: files.map(|files| Native {
                harness: HarnessName::new(NAME).expect("valid"),
                files,
            }),
            meta: Some(meta),
        },
        cwd,
        titled,
    ))
}

/// The lines of one transcript's index, as the replay reads them back.
struct IndexedLines<'i, 'd> {
    lines: Lines<'d>,
    index: &'i Index,
}

impl replay::LineSource for IndexedLines<'_, '_> {
    fn line(&mut self, i: usize) -> Option<&[u8]> {
        self.lines.raw(self.index, i)
    }

    fn changed(&mut self, i: usize) {
        self.lines.changed(self.index, i);
    }

    fn not_utf8(&mut self, i: usize) {
        self.lines.not_utf8(self.index, i);
    }
}
