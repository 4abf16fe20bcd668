//! Reading one surveyed session ([`super::survey`]): its chat, then its subagents'
//! transcripts, each a session of its own linked both ways (`_meta.asp.parent` on the child,
//! `_meta.asp.subagentSessionId` on the parent's `agent` call).
//!
//! The title is the one Qwen lists: the last compact `custom_title` record it finds, else the
//! first prompt (then `_meta.qwen.titleSource` is `prompt`, so a writer does not turn it into a
//! title record). The chat and its file-history backups are the session's native files; a
//! subagent's transcript and `.meta.json` are the subagent session's.

use std::collections::HashMap;

use asp_format::name::{HarnessName, RelPath, SessionId};
use asp_format::state::{FileEntry, Meta, Native, Session};
use serde_json::{Value, json};

use super::layout::Layout;
use super::replay;
use super::survey::Plan;
use super::transcript::{self, Transcript};
use crate::error::ConvertError;
use crate::harness::{SessionContext, Surveyed};
use crate::kit::meta::{self as kit_meta, Parent};
use crate::kit::source::SourceFile;

fn harness() -> HarnessName {
    HarnessName::new(super::NAME).expect("a valid name")
}

/// The state id of a subagent transcript: unique in the state, and found again on a restore.
pub fn subagent_id(parent: &str, agent_id: &str) -> String {
    format!("{parent}:agent-{agent_id}")
}

/// Reads one surveyed session and its subagents.
pub fn read_session(
    ctx: &SessionContext<'_>,
    entry: &Surveyed,
) -> Result<Vec<Session>, ConvertError> {
    let plan: &Plan = entry.plan();
    let sid = entry.id.as_str();
    let layout = &plan.layout;
    let diags = ctx.diagnostics;
    let path = &plan.chat.path;
    ctx.progress.item(sid);
    let Some(t) = read_chat(&plan.chat, diags) else {
        return Ok(Vec::new());
    };
    if let Some(r) = t
        .records
        .iter()
        .find(|r| !r.session_id().eq_ignore_ascii_case(sid))
    {
        diags.note(
            path,
            Some(r.line),
            format!(
                "names session {}, not {sid}: Qwen Code refuses to load a file with two session \
                 ids (it still lists it); the conversation is carried as asp reads it",
                r.session_id()
            ),
        );
    }
    // Subagents first: the parent's calls link to them.
    let mut links: HashMap<String, String> = HashMap::new();
    let mut children = Vec::new();
    for s in &plan.subagents {
        let child_id = subagent_id(sid, &s.agent_id);
        let meta_doc: Option<Value> = s
            .meta
            .as_ref()
            .and_then(|m| m.read_all().ok())
            .and_then(|b| serde_json::from_slice(&b).ok());
        let call = meta_doc
            .as_ref()
            .and_then(|m| m.get("toolUseId"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| s.agent_id.rsplit_once('-').map(|(_, c)| c.to_owned()));
        if let Some(c) = &call {
            links.insert(c.clone(), child_id.clone());
        }
        children.push((s, child_id, call, meta_doc));
    }
    let mut out = Vec::new();
    let chain = t.chain();
    if let Some((line, parent)) = &chain.gap {
        diags.note(
            path,
            Some(*line),
            format!(
                "its parent record {parent} is not in the file: Qwen Code replays only what follows \
                 (with a history-gap notice), and so does asp; the earlier records are kept in the \
                 native file"
            ),
        );
    }
    let conv = replay::convert(&chain, sid, &links, ctx.blobs)?;
    let mut files = vec![&plan.chat];
    files.extend(plan.file_history.iter());
    let native = native_files(ctx, layout, &files)?;
    let (title, source) = title_of(&t);
    let mut qwen = conv.meta;
    qwen.insert("titleSource".into(), json!(source));
    if let Some(m) = replay::last_model(&chain) {
        qwen.insert("model".into(), json!(m));
    }
    for k in ["version", "gitBranch"] {
        if let Some(v) = t.records.first().and_then(|r| r.value.get(k)) {
            qwen.insert(k.into(), v.clone());
        }
    }
    if chain.off_chain > 0 {
        qwen.insert("offChainRecords".into(), json!(chain.off_chain));
    }
    if path
        .parent()
        .and_then(|p| p.file_name())
        .is_some_and(|n| n == "archive")
    {
        qwen.insert("archived".into(), json!(true));
    }
    let mut meta = Meta::new();
    meta.insert("qwen".into(), Value::Object(qwen));
    out.push(Session {
        id: entry.id.clone(),
        title,
        harness: Some(harness()),
        cwd: t.cwd().map(str::to_owned),
        updated_at: t
            .records
            .last()
            .and_then(|r| r.timestamp())
            .map(str::to_owned),
        updates: conv.updates.expect("convert finishes the stream"),
        native,
        meta: Some(meta),
    });
    for (s, child_id, call, meta_doc) in children {
        let Ok(id) = SessionId::new(&child_id) else {
            continue;
        };
        let Some(ct) = read_chat(&s.file, diags) else {
            continue;
        };
        let chain = ct.chain();
        let conv = replay::convert(&chain, &child_id, &HashMap::new(), ctx.blobs)?;
        let mut files = vec![&s.file];
        files.extend(s.meta.iter());
        let native = native_files(ctx, layout, &files)?;
        let description = meta_doc
            .as_ref()
            .and_then(|m| m.get("description"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        let mut qwen = conv.meta;
        qwen.insert("agentId".into(), json!(s.agent_id));
        if let Some(m) = &meta_doc {
            qwen.insert("subagentMeta".into(), m.clone());
        }
        let mut meta = Some(Meta::new());
        meta.as_mut()
            .expect("made")
            .insert("qwen".into(), Value::Object(qwen));
        kit_meta::set_parent(&mut meta, &Parent::new(sid).with_call(call));
        out.push(Session {
            id,
            title: description.unwrap_or_else(|| ct.first_prompt().unwrap_or_default()),
            harness: Some(harness()),
            cwd: ct
                .cwd()
                .map(str::to_owned)
                .or_else(|| t.cwd().map(str::to_owned)),
            updated_at: ct
                .records
                .last()
                .and_then(|r| r.timestamp())
                .map(str::to_owned),
            updates: conv.updates.expect("convert finishes the stream"),
            native,
            meta,
        });
    }
    Ok(out)
}

/// A chat file read as surveyed, line by line; `None` (reported) when it cannot be read.
fn read_chat(file: &SourceFile, diags: &crate::kit::report::Diagnostics) -> Option<Transcript> {
    let r = file.open().and_then(|f| {
        let len = f.len();
        transcript::read(
            std::io::BufReader::with_capacity(1 << 16, f),
            len,
            &file.path,
            diags,
        )
    });
    match r {
        Ok(t) => Some(t),
        Err(e) => {
            diags.lost(&file.path, None, format!("cannot be read ({e}); skipped"));
            None
        }
    }
}

/// The title Qwen lists, and where it comes from (`manual`, `auto`, or `prompt`).
fn title_of(t: &Transcript) -> (String, String) {
    match &t.title {
        Some(title) => (
            title.clone(),
            t.title_source.clone().unwrap_or_else(|| "manual".into()),
        ),
        None => (t.first_prompt().unwrap_or_default(), "prompt".to_owned()),
    }
}

/// The files as native files at their virtual paths (none when the read carries none).
fn native_files(
    ctx: &SessionContext<'_>,
    layout: &Layout,
    files: &[&SourceFile],
) -> Result<Option<Native>, ConvertError> {
    if !ctx.options.native {
        return Ok(None);
    }
    let mut out = Vec::new();
    for f in files {
        let Some(rel) = layout
            .virtual_path(&f.path)
            .and_then(|v| RelPath::new(&v).ok())
        else {
            ctx.diagnostics.note(
                &f.path,
                None,
                "its path cannot be carried as a native file; only its updates are",
            );
            continue;
        };
        let mut r = match f.open() {
            Ok(r) => r,
            Err(e) => {
                ctx.diagnostics
                    .lost(&f.path, None, format!("cannot be read ({e}); not carried"));
                continue;
            }
        };
        out.push(FileEntry {
            path: rel,
            executable: false,
            content: ctx.blobs.put_reader(&mut r)?,
        });
    }
    Ok(Some(Native {
        harness: harness(),
        files: out,
    }))
}
