//! Reading one surveyed thread into a session.
//!
//! The rollout is read twice: a first pass ([`super::first_pass`]) learns what the second
//! needs ahead, and the second ([`super::replay`]) streams the ACP updates into their blob.
//! Memory stays at one rollout's hashes, whatever its size.

use std::path::Path;

use asp_format::name::{HarnessName, RelPath};
use asp_format::state::{FileEntry, Meta, Native, Session};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::first_pass::{FirstPass, str_at};
use super::replay::{self, Context};
use super::rollout::{Lines, RolloutFile};
use super::survey::Plan;
use super::{NAME, time};
use crate::error::ConvertError;
use crate::harness::{SessionContext, Surveyed};
use crate::kit::meta::{self as kit_meta, Parent};
use crate::kit::source::copy_to_blob;

/// Titles longer than this (a long first prompt) are cut.
const MAX_TITLE: usize = 200;

/// The parent thread a subagent thread names in its meta
/// (`source: {"subagent": {"thread_spawn": {"parent_thread_id": …}}}`).
pub fn parent_of(meta: &Value) -> Option<String> {
    let source = meta.get("source")?;
    let agent = ["subagent", "sub_agent", "subAgent"]
        .iter()
        .find_map(|k| source.get(*k))?;
    let spawn = ["thread_spawn", "threadSpawn"]
        .iter()
        .find_map(|k| agent.get(*k))?;
    str_at(spawn, "/parent_thread_id").or_else(|| str_at(spawn, "/parentThreadId"))
}

/// A title from a prompt: trimmed, at most [`MAX_TITLE`] bytes, cut at a character boundary.
pub fn title_from_prompt(prompt: &str) -> String {
    let t = prompt.trim();
    if t.len() <= MAX_TITLE {
        return t.to_owned();
    }
    let mut end = MAX_TITLE;
    while !t.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", t[..end].trim_end())
}

/// The session meta as carried: `base_instructions` (Codex's system prompt, often 20 KB and
/// regenerated every start) is replaced by its size and digest.
fn carried_meta(meta: &Value) -> Value {
    let mut m = meta.clone();
    if let Some(o) = m.as_object_mut() {
        for key in ["base_instructions", "instructions"] {
            if let Some(v) = o.get(key).filter(|v| !v.is_null()) {
                let text = v
                    .get("text")
                    .and_then(Value::as_str)
                    .or_else(|| v.as_str())
                    .unwrap_or_default();
                let digest = hex::encode(Sha256::digest(text.as_bytes()));
                o.insert(
                    key.to_owned(),
                    json!({"sha256": digest, "bytes": text.len(), "omitted": true}),
                );
            }
        }
    }
    m
}

fn format_of(file: &RolloutFile, diagnostics: &crate::kit::report::Diagnostics) -> &'static str {
    let Ok(mut lines) = Lines::open(file, false) else {
        return "unknown";
    };
    match lines.next_record(diagnostics) {
        Some(r) if r.raw.get("record_type").is_some() => "transitional",
        Some(r) if r.raw.get("payload").is_none() => "flat",
        Some(r)
            if r.raw.get("ordinal").is_some()
                || r.payload().get("history_mode").and_then(Value::as_str) == Some("paginated") =>
        {
            "paginated"
        }
        Some(_) => "legacy",
        None => "empty",
    }
}

/// A rollout that cannot be opened or read costs that rollout, not the whole read.
fn skip_unreadable<T>(
    r: Result<T, ConvertError>,
    f: &RolloutFile,
    diagnostics: &crate::kit::report::Diagnostics,
) -> Result<Option<T>, ConvertError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(ConvertError::Io { path, source }) if path == f.path => {
            diagnostics.lost(&path, None, format!("cannot be read ({source}); skipped"));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// A session's transcript (`Harness::transcript`, spec/aspstate.md §4): its rollout kept as a
/// plain native file, at `_meta.codex.rolloutPath`. A `.jsonl.zst` rollout is compressed bytes,
/// which the update stream does not repeat, so it is none.
pub fn transcript(native: &Native, meta: Option<&Meta>) -> Option<asp_format::Descriptor> {
    let path = meta?.get("codex")?.get("rolloutPath")?.as_str()?;
    FileEntry::at(&native.files, path).filter(|_| path.ends_with(".jsonl"))
}

/// The rollout, byte for byte, as the session's native file: only when the caller wants
/// native files, and only under a path every platform can hold (without it the conversation
/// is still carried, and would be written back as a built rollout). `Ok(None)`: the file
/// cannot be read (reported), and this copy of the thread is not read.
fn native_of(
    ctx: &SessionContext<'_>,
    f: &RolloutFile,
    project: Option<&Path>,
    harness: &HarnessName,
) -> Result<Option<Option<Native>>, ConvertError> {
    let diagnostics = ctx.diagnostics;
    let rel = format!(".codex/{}", f.rel);
    let native_rel = match RelPath::new(&rel) {
        Ok(p) => Some(p),
        Err(e) if ctx.options.native => {
            diagnostics.lost(
                &f.path,
                None,
                format!("the rollout file itself is not carried ({e}); its conversation is"),
            );
            None
        }
        Err(_) => None,
    };
    let Some(path) = native_rel.filter(|_| ctx.options.native) else {
        return Ok(Some(None));
    };
    let opened = match &f.source {
        Some(src) => src.open().map_err(ConvertError::io(&f.path)),
        None => Err(ConvertError::io(&f.path)(std::io::Error::from(
            std::io::ErrorKind::NotFound,
        ))),
    };
    let Some(mut raw) = skip_unreadable(opened, f, diagnostics)? else {
        return Ok(None);
    };
    // A rollout is copied as it is on disk; an I/O error here (not a blob error) skips it. A
    // plain one is a transcript, compressed against its project's dictionary when the survey
    // predicted one (spec/aspstate.md §4.1; a `.zst` one is compressed bytes already).
    let w = match f.compressed {
        false => ctx
            .blobs
            .begin_transcript(project.unwrap_or(&f.path), raw.len())?,
        true => ctx.blobs.begin_sized(raw.len())?,
    };
    let content = match copy_to_blob(&mut raw, w)? {
        Ok(d) => d,
        Err(e) => {
            diagnostics.lost(&f.path, None, format!("cannot be read ({e}); skipped"));
            return Ok(None);
        }
    };
    Ok(Some(Some(Native {
        harness: harness.clone(),
        files: vec![FileEntry {
            path,
            executable: false,
            content,
        }],
    })))
}

/// Reads one surveyed thread: its first readable rollout (the others are reported), surveyed
/// in a first pass, streamed into its update blob in the second, and stored byte for byte as
/// the session's native file.
pub fn read_session(
    ctx: &SessionContext<'_>,
    entry: &Surveyed,
) -> Result<Vec<Session>, ConvertError> {
    let plan: &Plan = entry.plan();
    let diagnostics = ctx.diagnostics;
    let id = entry.id.as_str();
    let harness = HarnessName::new(NAME).expect("a valid harness name");
    let mut read_one = None;
    for f in &plan.candidates {
        if read_one.is_some() {
            diagnostics.left_out(
                &f.path,
                None,
                format!("another rollout of thread {id} was read already; this copy is skipped"),
            );
            continue;
        }
        ctx.progress.item(&f.rel);
        let Some(first) = skip_unreadable(
            FirstPass::of_file(f, &plan.children, diagnostics),
            f,
            diagnostics,
        )?
        else {
            continue;
        };
        if first.meta.is_none() {
            diagnostics.note(
                &f.path,
                None,
                "no session_meta line (Codex itself does not list this file); read by its file name",
            );
        }
        // The native file first, so the update stream can be derived from it: a plain
        // rollout is what the stream repeats (a `.zst` one is compressed bytes).
        // An unreadable copy costs only itself, as in the passes before.
        let Some(native) = native_of(ctx, f, plan.project.as_deref(), &harness)? else {
            continue;
        };
        let base = native
            .as_ref()
            .filter(|_| !f.compressed)
            .map(|n| n.files[0].content);
        let Some(outcome) = skip_unreadable(
            replay::read(
                f,
                id,
                &first,
                &Context {
                    index_entries: &plan.index_entries,
                },
                ctx.blobs,
                base,
                diagnostics,
            ),
            f,
            diagnostics,
        )?
        else {
            continue;
        };
        read_one = Some((f, first, outcome, native));
    }
    let Some((f, first, outcome, native)) = read_one else {
        return Ok(Vec::new());
    };
    let rel = format!(".codex/{}", f.rel);

    let db_row = plan.db_row.as_ref();
    let newest_naming = plan.index_entries.last();
    let (title, source) = if let Some(e) = newest_naming {
        (e.name.clone(), "session_index")
    } else if let Some(n) = &outcome.renamed {
        (n.clone(), "thread_name_updated")
    } else if let Some(n) = db_row
        .and_then(|t| {
            t.name.clone().or_else(|| {
                t.title
                    .clone()
                    .filter(|title| Some(title) != t.first_user_message.as_ref())
            })
        })
        .filter(|n| !n.trim().is_empty())
    {
        (n, "state_db")
    } else if let Some(p) = outcome.first_prompt.as_deref().filter(|p| !p.is_empty()) {
        (title_from_prompt(p), "first_prompt")
    } else {
        (format!("Codex thread {id}"), "none")
    };

    let mut codex = json!({
        "rolloutPath": rel,
        "format": format_of(f, diagnostics),
        "titleSource": source,
    });
    // When the index named it so: a write names the thread again with that time, not its last
    // turn's (which moved a naming made after the last turn earlier).
    if let Some(at) = newest_naming.and_then(|e| e.at) {
        codex["titleAt"] = json!(time::format_nanos(at));
    }
    if f.archived || db_row.is_some_and(|t| t.archived) {
        codex["archived"] = json!(true);
    }
    if let Some(m) = &first.meta {
        codex["sessionMeta"] = carried_meta(m);
    }
    if !outcome.trailing.is_empty() {
        codex["trailingRecords"] = Value::Array(outcome.trailing);
    }
    let mut meta = Some(Meta::new());
    meta.as_mut()
        .expect("made above")
        .insert("codex".into(), codex);
    if let Some(parent) = &plan.parent {
        kit_meta::set_parent(&mut meta, &Parent::new(parent.clone()));
    }
    let updated = first.last_time.or(first.first_time);
    Ok(vec![Session {
        id: entry.id.clone(),
        title,
        harness: Some(harness),
        cwd: first
            .meta
            .as_ref()
            .and_then(|m| str_at(m, "/cwd"))
            .or(first.cwd_hint.clone()),
        updated_at: updated.map(time::format_millis),
        updates: outcome.updates,
        native,
        meta,
    }])
}
