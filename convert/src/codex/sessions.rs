//! Reading every rollout of a Codex home into sessions, one file at a time.
//!
//! A first look at each file's opening line links subagent threads to their parents; then
//! each rollout is surveyed, streamed into its update blob, and stored byte for byte as the
//! session's native file. Memory stays at one rollout's hashes, whatever the store's size.

use std::collections::{HashMap, HashSet};
use std::fs::File;

use asp_format::name::{HarnessName, RelPath, SessionId};
use asp_format::state::{FileEntry, Meta, Native, Session};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use super::index::SessionIndex;
use super::read::{self, Context};
use super::rollout::{self, Lines, RolloutFile};
use super::state_db;
use super::survey::{Survey, str_at};
use super::{NAME, Paths, time};
use crate::harness::{ConvertError, ReadContext};

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

fn format_of(file: &RolloutFile, diagnostics: &crate::report::Diagnostics) -> &'static str {
    let Ok(mut lines) = Lines::open(&file.path, false) else {
        return "unknown";
    };
    match lines.next_record(diagnostics) {
        Some(r) if r.raw.get("record_type").is_some() => "transitional",
        Some(r) if r.raw.get("payload").is_none() => "flat",
        Some(r)
            if r.raw.get("ordinal").is_some()
                || r.payload.get("history_mode").and_then(Value::as_str) == Some("paginated") =>
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
    diagnostics: &crate::report::Diagnostics,
) -> Result<Option<T>, ConvertError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(ConvertError::Io { path, source }) if path == f.path => {
            diagnostics.skipped(&path, None, format!("cannot be read ({source}); skipped"));
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Reads every rollout of the home.
pub fn read_all(paths: &Paths, ctx: &ReadContext<'_>) -> Result<Vec<Session>, ConvertError> {
    let diagnostics = ctx.diagnostics;
    let mut files = rollout::discover(&paths.codex, diagnostics);
    // Live threads first, so a thread found twice keeps its live copy.
    files.sort_by(|a, b| (a.archived, &a.rel).cmp(&(b.archived, &b.rel)));
    let index = SessionIndex::load(&paths.codex, diagnostics)?;
    let db = match state_db::find(&paths.codex) {
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
    let mut ids: Vec<Option<String>> = Vec::with_capacity(files.len());
    let mut parents: HashMap<String, String> = HashMap::new();
    let mut children: HashMap<String, Vec<String>> = HashMap::new();
    for f in &files {
        let first = Lines::open(&f.path, false)
            .ok()
            .and_then(|mut lines| lines.next_record(diagnostics));
        let meta = first.filter(|r| r.kind == rollout::Kind::SessionMeta);
        let id = meta
            .as_ref()
            .and_then(|r| str_at(&r.payload, "/id"))
            .or_else(|| f.name_id.clone());
        if let (Some(id), Some(parent)) = (&id, meta.as_ref().and_then(|r| parent_of(&r.payload))) {
            children.entry(parent.clone()).or_default().push(id.clone());
            parents.insert(id.clone(), parent);
        }
        ids.push(id);
    }

    let harness = HarnessName::new(NAME).expect("a valid harness name");
    let mut seen = HashSet::new();
    let mut sessions = Vec::new();
    for (f, id) in files.iter().zip(ids) {
        ctx.progress.item(&f.rel);
        let Some(id) = id else {
            diagnostics.skipped(
                &f.path,
                None,
                "no session_meta and no thread id in the file name; skipped",
            );
            continue;
        };
        let kids = children.get(&id).map(Vec::as_slice).unwrap_or_default();
        let survey =
            match skip_unreadable(Survey::of_file(&f.path, kids, diagnostics), f, diagnostics)? {
                Some(s) => s,
                None => continue,
            };
        if survey.meta.is_none() {
            diagnostics.note(
                &f.path,
                None,
                "no session_meta line (Codex itself does not list this file); read by its file name",
            );
        }
        let session_id = match SessionId::new(&id) {
            Ok(s) => s,
            Err(e) => {
                diagnostics.skipped(&f.path, None, format!("skipped: {e}"));
                continue;
            }
        };
        if !seen.insert(id.clone()) {
            diagnostics.skipped(
                &f.path,
                None,
                format!("another rollout of thread {id} was read already; this copy is skipped"),
            );
            continue;
        }
        let outcome = match skip_unreadable(
            read::read(
                f,
                &id,
                &survey,
                &Context {
                    index_entries: index.entries(&id),
                },
                ctx.blobs,
                diagnostics,
            ),
            f,
            diagnostics,
        )? {
            Some(o) => o,
            None => continue,
        };

        let db_row = db.get(&id);
        let (title, source) = if let Some(n) = index.name(&id) {
            (n.to_owned(), "session_index")
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

        // The rollout, byte for byte, as the session's native file: only when the caller wants
        // native files, and only under a path every platform can hold. Without it the
        // conversation is still carried (and would be written back as a built rollout).
        let rel = format!(".codex/{}", f.rel);
        let native_rel = match RelPath::new(&rel) {
            Ok(p) => Some(p),
            Err(e) if ctx.options.native => {
                diagnostics.skipped(
                    &f.path,
                    None,
                    format!("the rollout file itself is not carried ({e}); its conversation is"),
                );
                None
            }
            Err(_) => None,
        };
        let native = match native_rel.filter(|_| ctx.options.native) {
            None => None,
            Some(path) => {
                let Some(mut raw) = skip_unreadable(
                    File::open(&f.path).map_err(ConvertError::io(&f.path)),
                    f,
                    diagnostics,
                )?
                else {
                    continue;
                };
                // A rollout is copied as it is on disk; an I/O error here (not a blob error)
                // skips it.
                let content = match ctx.blobs.put_reader(&mut raw) {
                    Ok(d) => d,
                    Err(asp_format::blob::BlobError::Other(e)) => {
                        diagnostics.skipped(
                            &f.path,
                            None,
                            format!("cannot be read ({e}); skipped"),
                        );
                        continue;
                    }
                    Err(e) => return Err(e.into()),
                };
                Some(Native {
                    harness: harness.clone(),
                    files: vec![FileEntry {
                        path,
                        executable: false,
                        content,
                    }],
                })
            }
        };

        let mut codex = json!({
            "rolloutPath": rel,
            "format": format_of(f, diagnostics),
            "titleSource": source,
        });
        if f.archived || db_row.is_some_and(|t| t.archived) {
            codex["archived"] = json!(true);
        }
        if let Some(m) = &survey.meta {
            codex["sessionMeta"] = carried_meta(m);
        }
        if !outcome.trailing.is_empty() {
            codex["trailingRecords"] = Value::Array(outcome.trailing);
        }
        let mut meta = Meta::new();
        meta.insert("codex".into(), codex);
        if let Some(parent) = parents.get(&id) {
            meta.insert("asp".into(), json!({"parent": {"sessionId": parent}}));
        }
        let updated = survey.last_time.or(survey.first_time);
        sessions.push(Session {
            id: session_id,
            title,
            harness: Some(harness.clone()),
            cwd: survey
                .meta
                .as_ref()
                .and_then(|m| str_at(m, "/cwd"))
                .or(survey.cwd_hint.clone()),
            updated_at: updated.map(time::format_millis),
            updates: outcome.updates,
            native,
            meta: Some(meta),
        });
    }
    Ok(sessions)
}
