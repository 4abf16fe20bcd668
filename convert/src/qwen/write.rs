//! Writing the sessions of a state into a Qwen home.
//!
//! A session packed from Qwen carries its files (`Session::native`): its chat, its subagents'
//! transcripts and its file-history backups go back byte for byte, the chat and subagents into
//! the project folder of its (mapped) cwd. Any other session is composed
//! ([`super::compose`]) into `projects/<sanitized cwd>/chats/<uuid>.jsonl`.
//!
//! A session whose file is already there with other content is kept beside it as
//! `<thread>~<harness>` (then `~<harness>~2`, ...) under a name-based UUID, its records
//! renamed to that id, and titled `<title> ~<harness>` by a compact `custom_title` record
//! chained last, where Qwen's title search finds it. A subagent session goes back under its
//! parent's (possibly new) id; one from another harness becomes a chat of its own.

use std::path::{Path, PathBuf};

use asp_format::state::{Native, Session};
use asp_format::update::UpdateLines;
use serde_json::{Value, json};

use super::compose::{self, Header};
use super::ids::{is_session_file, is_uuid, name_uuid, qwen_id};
use super::layout::{Layout, sanitize_cwd};
use super::read::subagent_id;
use crate::error::ConvertError;
use crate::harness::WriteContext;
use crate::kit::beside::{MAX_COPIES, holds_all_of, kept_beside};
use crate::kit::conversation::Folder;
use crate::kit::fsops::Created;
use crate::kit::placement::{Placement, SessionPlaced, Tally};
use crate::kit::time;

/// One file to write.
struct Planned {
    path: PathBuf,
    bytes: Vec<u8>,
}

/// What is at the planned paths.
enum Check {
    /// Nothing: write it all.
    Free,
    /// Every file, with the same bytes, or those and more (Qwen Code appends to a chat it
    /// resumes: one continued there since holds all we carry).
    Same,
    /// Something else.
    Taken,
}

/// A chat log, which Qwen Code appends to (not a file-history snapshot or `.meta.json`).
fn is_log(path: &std::path::Path) -> bool {
    path.extension().is_some_and(|e| e == "jsonl")
}

/// Where Qwen Code keeps the chat at `path` when the other of archived and listed: a chat
/// moved into `chats/archive/` (or back) is the same session, never a second file of it.
fn other_place(path: &Path) -> Option<PathBuf> {
    let dir = path.parent()?;
    let name = path.file_name()?;
    Some(match dir.file_name()? {
        n if n == "archive" => dir.parent()?.join(name),
        n if n == "chats" => dir.join("archive").join(name),
        _ => return None,
    })
}

/// Whether nothing at all is at `path`: a dangling link reads as NotFound but takes the name.
fn nothing_at(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_err()
}

fn check(files: &[Planned]) -> Result<Check, ConvertError> {
    let mut same = 0;
    for f in files {
        // A chat is looked for where it is archived or listed, whichever it is written to.
        let read = match std::fs::read(&f.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && nothing_at(&f.path) => {
                match other_place(&f.path).filter(|_| is_log(&f.path)) {
                    Some(other) if !nothing_at(&other) => std::fs::read(&other),
                    _ => Err(e),
                }
            }
            read => read,
        };
        match read {
            Ok(b) if b == f.bytes || (is_log(&f.path) && holds_all_of(&b, &f.bytes)) => same += 1,
            Ok(_) => return Ok(Check::Taken),
            // Free only when nothing at all is there: a dangling link reads as NotFound but
            // takes the name, and a folder or an unreadable file is someone else's too.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && nothing_at(&f.path) => {}
            Err(_) if let Some(file) = crate::kit::fsops::file_in_the_way(&f.path) => {
                return Err(ConvertError::invalid(
                    file,
                    "is a file where Qwen Code keeps a folder; nothing is written under it",
                ));
            }
            Err(_) => return Ok(Check::Taken),
        }
    }
    Ok(if same == files.len() {
        Check::Same
    } else if same == 0 {
        Check::Free
    } else {
        Check::Taken
    })
}

fn qwen_native(s: &Session) -> Option<&Native> {
    s.native
        .as_ref()
        .filter(|n| n.harness.as_str() == super::NAME)
}

/// A JSONL file with `sessionId` `old` replaced by `new` in every record that has it, every
/// other line kept byte for byte, and a compact title record appended when `title` is given.
fn renamed(bytes: &[u8], old: &str, new: &str, title: Option<&str>) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len() + 256);
    let mut last_uuid = None;
    let mut last_time = None;
    let mut cwd = None;
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(mut rec)) => {
                if let Some(u) = rec.get("uuid").and_then(Value::as_str) {
                    last_uuid = Some(u.to_owned());
                }
                if let Some(t) = rec.get("timestamp") {
                    last_time = Some(t.clone());
                }
                if cwd.is_none() {
                    cwd = rec.get("cwd").cloned();
                }
                if rec.get("sessionId").and_then(Value::as_str) == Some(old) {
                    rec.insert("sessionId".into(), json!(new));
                    out.extend(serde_json::to_vec(&rec).expect("serialises"));
                    if line.ends_with(b"\n") {
                        out.push(b'\n');
                    }
                } else {
                    out.extend_from_slice(line);
                }
            }
            _ => out.extend_from_slice(line),
        }
    }
    if let Some(title) = title {
        if !out.is_empty() && !out.ends_with(b"\n") {
            out.push(b'\n');
        }
        let rec = json!({
            "uuid": name_uuid(&format!("{new}/title")), "parentUuid": last_uuid, "sessionId": new,
            "timestamp": last_time, "type": "system", "cwd": cwd, "version": compose::VERSION,
            "subtype": "custom_title", "systemPayload": {"customTitle": title, "titleSource": "manual"},
        });
        out.extend(serde_json::to_vec(&rec).expect("serialises"));
        out.push(b'\n');
    }
    out
}

/// Writes every session; fills the answer's `sessions` and `notTaken`.
pub fn write_sessions(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    sessions: &[Session],
    tally: &mut Tally<'_>,
) -> Result<(), ConvertError> {
    let mut placed: std::collections::HashMap<String, String> = std::collections::HashMap::new();
    let is_child = |s: &Session| {
        qwen_native(s).is_some() && crate::kit::meta::parent_id(s.meta.as_ref()).is_some()
    };
    for pass in [false, true] {
        for s in sessions.iter().filter(|s| is_child(s) == pass) {
            ctx.progress.item(s.id.as_str());
            let result = match qwen_native(s) {
                Some(n) if pass => {
                    let parent = crate::kit::meta::parent_id(s.meta.as_ref()).unwrap_or_default();
                    let parent_qid = placed
                        .get(parent)
                        .cloned()
                        .unwrap_or_else(|| parent.to_owned());
                    restore_child(layout, ctx, s, n, parent, &parent_qid)?
                }
                Some(n) => restore(layout, ctx, s, n)?,
                None => compose_one(layout, ctx, s)?,
            };
            match result {
                Ok((qid, how)) => {
                    placed.insert(s.id.to_string(), qid.clone());
                    tally.session(
                        s.id.as_str(),
                        SessionPlaced {
                            id: qid,
                            placement: how,
                        },
                    );
                }
                Err(reason) => tally.session(s.id.as_str(), SessionPlaced::refused(reason)),
            }
        }
    }
    Ok(())
}

fn harness_of(s: &Session) -> String {
    s.harness
        .as_ref()
        .map_or_else(|| "asp".to_owned(), |h| h.as_str().to_owned())
}

/// Writes every file or none; [`Created::AlreadyExists`] when one of the paths was taken
/// after it was checked (nothing written then).
fn write_all(ctx: &WriteContext<'_>, files: &[Planned]) -> Result<Created, ConvertError> {
    let list: Vec<(&Path, &[u8])> = files
        .iter()
        .map(|f| (f.path.as_path(), f.bytes.as_slice()))
        .collect();
    ctx.writer.create_all_new(&list)
}

type Outcome = Result<(String, Placement), String>;

/// The project folder for a session: its cwd's, else the one it was in.
fn project_dir(s: &Session, native_dir: Option<&str>) -> Option<String> {
    s.cwd
        .as_deref()
        .map(sanitize_cwd)
        .or_else(|| native_dir.map(str::to_owned))
}

/// Puts a Qwen session's own files back.
fn restore(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    s: &Session,
    native: &Native,
) -> Result<Outcome, ConvertError> {
    let id = s.id.as_str();
    let mut chat = None;
    let mut history = Vec::new();
    for f in &native.files {
        let parts: Vec<&str> = f.path.as_str().split('/').collect();
        match parts.as_slice() {
            [".qwen", "projects", dir, "chats", file] if file.ends_with(".jsonl") => {
                chat = Some((
                    dir.to_string(),
                    false,
                    *file,
                    ctx.blobs.read_all(&f.content)?,
                ));
            }
            [".qwen", "projects", dir, "chats", "archive", file] if file.ends_with(".jsonl") => {
                chat = Some((
                    dir.to_string(),
                    true,
                    *file,
                    ctx.blobs.read_all(&f.content)?,
                ));
            }
            [".qwen", "file-history", _, rest @ ..] if !rest.is_empty() => {
                history.push((rest.join("/"), ctx.blobs.read_all(&f.content)?));
            }
            _ => {
                return Ok(Err(format!(
                    "session {id}: its native file {} is not a Qwen Code session file, so it was not written",
                    f.path
                )));
            }
        }
    }
    let Some((native_dir, archived, file, bytes)) = chat else {
        return Ok(Err(format!("session {id}: its chat file was not carried")));
    };
    // The id names the files written (the chat, the file-history folder): only the name Qwen
    // gave the chat, a UUID, is used, never an id as the bundle spells it (`../../.ssh`).
    if !(is_session_file(file) && file.strip_suffix(".jsonl") == Some(id)) {
        return Ok(Err(format!(
            "session {id}: its chat file {file} is not named after it as Qwen Code names a session, so it was not written"
        )));
    }
    let dir = project_dir(s, Some(&native_dir)).expect("a folder");
    let mut chats = layout.projects().join(&dir).join("chats");
    if archived {
        chats.push("archive");
    }
    let harness = super::NAME;
    for n in 0..MAX_COPIES {
        let (qid, body) = if n == 0 {
            (id.to_owned(), bytes.clone())
        } else {
            let k = kept_beside(id, &s.title, Some(harness), n);
            let qid = name_uuid(&k.name);
            (qid.clone(), renamed(&bytes, id, &qid, Some(&k.title)))
        };
        let mut files = vec![Planned {
            path: chats.join(format!("{qid}.jsonl")),
            bytes: body,
        }];
        for (rel, b) in &history {
            files.push(Planned {
                path: layout.runtime.join("file-history").join(&qid).join(rel),
                bytes: b.clone(),
            });
        }
        match check(&files)? {
            Check::Taken => continue,
            Check::Same => return Ok(Ok((qid, Placement::AlreadyThere))),
            Check::Free => {
                if write_all(ctx, &files)? == Created::AlreadyExists {
                    continue;
                }
                if n > 0 {
                    note_copy(ctx, &chats, id, &qid);
                }
                return Ok(Ok((
                    qid,
                    if n > 0 {
                        Placement::Beside
                    } else {
                        Placement::New
                    },
                )));
            }
        }
    }
    Ok(Err(format!(
        "session {id}: {MAX_COPIES} different versions of it are already in Qwen Code; not written"
    )))
}

fn note_copy(ctx: &WriteContext<'_>, chats: &Path, id: &str, qid: &str) {
    ctx.diagnostics.note(
        chats,
        None,
        format!("a different version of session {id} is already in Qwen Code; the carried one was kept beside it as session {qid}"),
    );
}

/// Puts a Qwen subagent transcript back under its parent's id (renamed when the parent was
/// kept beside under a new one).
fn restore_child(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    s: &Session,
    native: &Native,
    parent: &str,
    parent_qid: &str,
) -> Result<Outcome, ConvertError> {
    let id = s.id.as_str();
    // The parent's id names the folder written: one not placed by this import is used only
    // when it is a UUID, as Qwen names sessions.
    if !is_uuid(parent_qid) {
        return Ok(Err(format!(
            "subagent session {id}: its parent's id {parent_qid} is not a Qwen Code session id, so it was not written"
        )));
    }
    let mut files = Vec::new();
    let mut agent = None;
    for f in &native.files {
        let parts: Vec<&str> = f.path.as_str().split('/').collect();
        let [".qwen", "projects", dir, "subagents", _, file] = parts.as_slice() else {
            return Ok(Err(format!(
                "session {id}: its native file {} is not a Qwen Code subagent file, so it was not written",
                f.path
            )));
        };
        if let Some(a) = file
            .strip_prefix("agent-")
            .and_then(|a| a.strip_suffix(".jsonl"))
        {
            agent = Some(a.to_owned());
        }
        let dir = project_dir(s, Some(dir)).expect("a folder");
        let mut bytes = ctx.blobs.read_all(&f.content)?;
        if parent_qid != parent {
            bytes = if file.ends_with(".jsonl") {
                renamed(&bytes, parent, parent_qid, None)
            } else {
                rename_meta(&bytes, parent, parent_qid)
            };
        }
        files.push(Planned {
            path: layout
                .projects()
                .join(dir)
                .join("subagents")
                .join(parent_qid)
                .join(file),
            bytes,
        });
    }
    let qid = agent.map_or_else(|| id.to_owned(), |a| subagent_id(parent_qid, &a));
    match check(&files)? {
        Check::Same => Ok(Ok((qid, Placement::AlreadyThere))),
        Check::Free if write_all(ctx, &files)? == Created::New => Ok(Ok((qid, Placement::New))),
        Check::Free | Check::Taken => Ok(Err(format!(
            "subagent session {id}: a different transcript is already at {}; not written",
            files[0].path.display()
        ))),
    }
}

/// A subagent `.meta.json` with its `parentSessionId` renamed.
fn rename_meta(bytes: &[u8], old: &str, new: &str) -> Vec<u8> {
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(mut o))
            if o.get("parentSessionId").and_then(Value::as_str) == Some(old) =>
        {
            o.insert("parentSessionId".into(), json!(new));
            let mut out = serde_json::to_vec_pretty(&o).expect("serialises");
            if bytes.ends_with(b"\n") {
                out.push(b'\n');
            }
            out
        }
        _ => bytes.to_vec(),
    }
}

/// Folds a session's updates into a conversation.
fn fold(
    ctx: &WriteContext<'_>,
    s: &Session,
) -> Result<Vec<crate::kit::conversation::Item>, ConvertError> {
    let mut lines = UpdateLines::open(ctx.blobs, &s.updates)?;
    let mut folder = Folder::new();
    loop {
        match lines.next_line() {
            Ok(Some((_, line))) => {
                if let Ok(mut v) = serde_json::from_str::<Value>(line)
                    && let Some(u) = v.get_mut("update")
                {
                    folder.push(u.take());
                }
            }
            Ok(None) => break,
            Err((n, e)) => {
                return Err(ConvertError::carried(
                    format!("session {}: update line {n}", s.id),
                    e,
                ));
            }
        }
    }
    Ok(folder.finish())
}

/// Composes a session from another harness (or a Qwen one without its files).
fn compose_one(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    s: &Session,
) -> Result<Outcome, ConvertError> {
    let id = s.id.as_str();
    let harness = harness_of(s);
    let items = fold(ctx, s)?;
    let cwd = crate::kit::resume::cwd_or_home(s, ctx, &layout.projects());
    let mut chats = layout.projects().join(sanitize_cwd(&cwd)).join("chats");
    // A session archived where it was read goes into Qwen Code's archive.
    if crate::kit::archive::archived(s).is_some() {
        chats.push("archive");
    }
    let default_time = s.updated_at.as_deref().and_then(time::parse).map_or_else(
        || "1970-01-01T00:00:00.000Z".to_owned(),
        time::format_millis,
    );
    // A title that was only the first prompt is not written as one (Qwen lists the prompt
    // itself); one the harness made is written as made (`auto`), not as the user's.
    let origin = crate::kit::title::origin(s);
    let prompt_title = origin == Some(crate::kit::title::TitleOrigin::Prompt);
    for n in 0..MAX_COPIES {
        let (qid, title) = if n == 0 {
            (qwen_id(id), (!prompt_title).then(|| s.title.clone()))
        } else {
            let title = crate::kit::conversation::title_or_prompt(&s.title, &items);
            let k = kept_beside(id, &title, Some(&harness), n);
            (name_uuid(&k.name), Some(k.title))
        };
        let header = Header {
            session_id: &qid,
            cwd: &cwd,
            title: title.as_deref(),
            // A copy's marked title is a name asp gives it.
            title_origin: if n == 0 {
                origin
            } else {
                Some(crate::kit::title::TitleOrigin::Chosen)
            },
            default_time: default_time.clone(),
            git_branch: crate::kit::git_branch::source_branch(s.meta.as_ref()),
        };
        let chat = compose::build(&items, &header);
        if !chat.has_conversation {
            return Ok(Err(format!(
                "session {id} has no prompt or answer Qwen Code can show; not written"
            )));
        }
        if n == 0 && !chat.dropped.is_empty() {
            let kinds: Vec<&str> = chat.dropped.iter().map(String::as_str).collect();
            ctx.diagnostics.left_out(
                &chats,
                None,
                format!(
                    "session {id}: {} updates have no place in a Qwen Code chat and were left out",
                    kinds.join(", ")
                ),
            );
        }
        let files = [Planned {
            path: chats.join(format!("{qid}.jsonl")),
            bytes: chat.bytes(),
        }];
        match check(&files)? {
            Check::Taken => continue,
            Check::Same => return Ok(Ok((qid, Placement::AlreadyThere))),
            Check::Free => {
                if write_all(ctx, &files)? == Created::AlreadyExists {
                    continue;
                }
                if n > 0 {
                    note_copy(ctx, &chats, id, &qid);
                }
                return Ok(Ok((
                    qid,
                    if n > 0 {
                        Placement::Beside
                    } else {
                        Placement::New
                    },
                )));
            }
        }
    }
    Ok(Err(format!(
        "session {id}: {MAX_COPIES} different versions of it are already in Qwen Code; not written"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_renamed_and_titled_by_a_chained_compact_record() {
        let log = b"{\"uuid\":\"a\",\"parentUuid\":null,\"sessionId\":\"old\",\"cwd\":\"/w\",\"type\":\"user\"}\nbroken\n";
        let out = String::from_utf8(renamed(log, "old", "new", Some("T ~qwen"))).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert!(lines[0].contains("\"sessionId\":\"new\""));
        assert_eq!(lines[1], "broken");
        assert!(
            lines[2].contains("\"subtype\":\"custom_title\"")
                && lines[2].contains("\"parentUuid\":\"a\"")
        );
    }
}
