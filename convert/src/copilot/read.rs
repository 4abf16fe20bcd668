//! Reading one surveyed session directory: its files into blobs (when native files are kept,
//! for a byte-exact restore), then `events.jsonl` streamed line by line through the
//! [`Replay`], with `workspace.yaml` for the title and cwd.

use std::io::{self, BufRead, BufReader, Read, Write};

use asp_format::Descriptor;
use asp_format::blob::BlobError;
use asp_format::name::{HarnessName, RelPath, SessionId};
use asp_format::state::{FileEntry, Meta, Native, Session};
use asp_format::update::UpdateWriter;
use serde_json::{Value, json};

use super::NAME;
use super::layout::{Layout, ROOT_REL};
use super::replay::Replay;
use super::survey::Plan;
use super::workspace::Workspace;
use crate::error::ConvertError;
use crate::harness::{SessionContext, Surveyed};
use crate::kit::acp::Update;
use crate::kit::fsops::is_executable;
use crate::kit::source::SourceFile;

/// Copies one surveyed file into a blob; `None` (reported) when it cannot be read or named.
fn carry(
    layout: &Layout,
    ctx: &SessionContext<'_>,
    f: &SourceFile,
) -> Result<Option<FileEntry>, ConvertError> {
    let d = ctx.diagnostics;
    let mut file = match f.open() {
        Ok(r) => r,
        Err(e) => {
            d.lost(&f.path, None, format!("cannot be read ({e}); not carried"));
            return Ok(None);
        }
    };
    let exec = file
        .file_mut()
        .metadata()
        .map(|m| is_executable(&m))
        .unwrap_or(false);
    let Some(rel) = layout
        .virtual_path(&f.path)
        .and_then(|r| RelPath::new(&r).ok())
    else {
        d.lost(
            &f.path,
            None,
            "this file's name cannot be carried portably; left out of the session's native files",
        );
        return Ok(None);
    };
    let mut w = ctx.blobs.begin()?;
    let mut buf = vec![0; 1 << 16];
    loop {
        match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => w.write_all(&buf[..n]).map_err(BlobError::from)?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => {
                d.lost(&f.path, None, format!("cannot be read ({e}); not carried"));
                return Ok(None);
            }
        }
    }
    Ok(Some(FileEntry {
        path: rel,
        executable: exec,
        content: w.finish()?,
    }))
}

/// The native transcript of a session as its state holds it (see
/// [`crate::Harness::transcript`]): its `events.jsonl`, the file [`read_session`] replays and
/// derives the update stream from.
pub fn transcript(id: &SessionId, native: &Native) -> Option<Descriptor> {
    transcript_in(id, &native.files)
}

/// `.copilot/session-state/<id>/events.jsonl` among a session's native files (the session's
/// directory is named by its id, and native files are named as under `.copilot/` wherever
/// `$COPILOT_HOME` is).
fn transcript_in(id: &SessionId, files: &[FileEntry]) -> Option<Descriptor> {
    FileEntry::at(
        files,
        &format!("{ROOT_REL}/session-state/{}/events.jsonl", id.as_str()),
    )
}

pub fn read_session(
    layout: &Layout,
    ctx: &SessionContext<'_>,
    entry: &Surveyed,
) -> Result<Vec<Session>, ConvertError> {
    let plan: &Plan = entry.plan();
    let d = ctx.diagnostics;
    let Some(events) = plan.file("events.jsonl") else {
        return Ok(Vec::new());
    };
    let files = if ctx.options.native {
        let mut out = Vec::new();
        for f in &plan.files {
            if let Some(e) = carry(layout, ctx, f)? {
                out.push(e);
            }
        }
        Some(out)
    } else {
        None
    };

    let ws_path = plan.dir.join("workspace.yaml");
    let ws = match plan.file("workspace.yaml").map(SourceFile::read_all) {
        Some(Ok(bytes)) => match Workspace::parse(&String::from_utf8_lossy(&bytes)) {
            Ok(w) => w,
            Err(e) => {
                d.note(
                    &ws_path,
                    None,
                    format!("is not a YAML mapping ({e}); title and cwd taken from the events"),
                );
                Workspace::default()
            }
        },
        Some(Err(e)) => {
            d.lost(
                &ws_path,
                None,
                format!("cannot be read ({e}); title and cwd taken from the events"),
            );
            Workspace::default()
        }
        None => {
            d.note(
                &ws_path,
                None,
                "the session has no workspace.yaml; its cwd is taken from session.start and its \
                 title from the first prompt (as Copilot lists it)",
            );
            Workspace::default()
        }
    };
    let id = entry.id.as_str();
    if let Some(inner) = ws.id.as_deref().filter(|i| *i != id) {
        d.note(
            &ws_path,
            None,
            format!(
                "the directory is named {id} but workspace.yaml says id {inner}: Copilot lists it \
                 under the directory name and cannot load it"
            ),
        );
    }

    let base = files.as_deref().and_then(|f| transcript_in(&entry.id, f));
    let mut w = UpdateWriter::derived(ctx.blobs, base)?;
    let mut replay = Replay::new();
    let path = &events.path;
    let mut reader = match events.open() {
        Ok(r) => BufReader::new(r),
        Err(e) => {
            d.lost(path, None, format!("cannot be read ({e}); not carried"));
            return Ok(Vec::new());
        }
    };
    let mut first_title = ws.name.clone();
    if let Some(t) = &first_title {
        w.push(
            &Update::SessionInfoUpdate {
                title: Some(t.clone()),
                updated_at: None,
                meta: None,
            }
            .notification(id),
        )?;
    }
    let mut line = Vec::new();
    let mut n = 0u64;
    let mut not_utf8 = false;
    loop {
        line.clear();
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) => {
                d.lost(
                    path,
                    Some(n + 1),
                    format!("cannot be read ({e}); the rest is not carried"),
                );
                break;
            }
        }
        n += 1;
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = match std::str::from_utf8(body) {
            Ok(t) => std::borrow::Cow::Borrowed(t),
            Err(_) => {
                if !not_utf8 {
                    d.note(
                        path,
                        Some(n),
                        "bytes that are not UTF-8, read with replacement characters (Copilot \
                         itself neither lists nor loads a session with such bytes)",
                    );
                    not_utf8 = true;
                }
                String::from_utf8_lossy(body)
            }
        };
        let v: Value = match serde_json::from_str(&text) {
            Ok(v @ Value::Object(_)) => v,
            other => {
                let cut = !line.ends_with(b"\n");
                d.damaged(
                    path,
                    Some(n),
                    match other {
                        _ if cut => "the last line is cut off (not whole JSON); skipped, as \
                                     Copilot skips it"
                            .to_owned(),
                        Err(e) => format!(
                            "not JSON ({}); skipped, as Copilot skips it",
                            crate::kit::report::why_line_is_not_json(&e)
                        ),
                        Ok(_) => "not a JSON object; skipped, as Copilot skips it".to_owned(),
                    },
                );
                continue;
            }
        };
        replay.event(&v, &mut |u| w.push(&u.notification(id)))?;
    }
    let summary = replay.finish(&mut |u| w.push(&u.notification(id)))?;
    let updates = w.finish()?;
    if !summary.has_start {
        d.note(
            path,
            None,
            "there is no session.start event: Copilot lists this session but cannot load it",
        );
    }
    if first_title.is_none() {
        first_title = summary.first_prompt.clone();
    }
    let cwd = ws.cwd.clone().or(summary.start_cwd.clone());
    let updated_at = summary
        .last_time
        .clone()
        .or(ws.updated_at.clone())
        .filter(|t| crate::kit::time::parse(t).is_some());

    let mut copilot = summary.meta;
    if ws.user_named {
        copilot.insert("userNamed".into(), json!(true));
    }
    for (k, v) in [
        ("gitRoot", &ws.git_root),
        ("branch", &ws.branch),
        ("createdAt", &ws.created_at),
        ("startedAt", &summary.started_at),
        ("model", &summary.model),
        ("reasoningEffort", &summary.reasoning_effort),
    ] {
        if let Some(v) = v {
            copilot.insert(k.into(), json!(v));
        }
    }
    let mut meta = Meta::new();
    meta.insert("copilot".into(), Value::Object(copilot));
    let harness = HarnessName::new(NAME).expect("a valid harness name");
    Ok(vec![Session {
        id: entry.id.clone(),
        title: first_title.unwrap_or_default(),
        harness: Some(harness.clone()),
        cwd,
        updated_at,
        updates,
        native: files.map(|files| Native { harness, files }),
        meta: Some(meta),
    }])
}
