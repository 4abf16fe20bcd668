//! Writing sessions into Claude Code, never over anything that is there.
//!
//! A session packed from Claude Code is restored from its native files, byte for byte, at the
//! paths they came from (moved to the bucket of its new cwd when `--map-path` changed it). A
//! session from elsewhere is composed as a transcript ([`super::compose`]). Either way:
//!
//! - the same session id already there with the same bytes: "already there", maps to itself;
//! - with different bytes: the copy is written beside it under the id derived from
//!   `<thread>~<harness>` (Claude Code only lists UUID-named transcripts, so the copy's id is
//!   the name-based UUID of that name, and the sessions map says which it is), with the id
//!   inside every line rewritten;
//! - an id that is not a UUID (`telegram:42`) is written under the name-based UUID of the id.

use std::fs;
use std::path::{Path, PathBuf};

use asp_format::answer::ImportAnswer;
use asp_format::blob::BlobSource;
use asp_format::kind::StateKind;
use asp_format::state::{FileEntry, Session};
use serde_json::Value;

use super::HARNESS;
use super::compose::{self, Target, Timeline};
use super::ids::{is_uuid, name_uuid};
use super::layout::{self, Layout, bucket_matches};
use crate::conversation::Folder;
use crate::fsops::{Created, Writer};
use crate::harness::{ConvertError, WriteContext};

/// Where a session's transcript file is, in any bucket.
fn find_transcript(layout: &Layout, preferred_bucket: &str, stem: &str) -> Option<PathBuf> {
    let name = format!("{stem}.jsonl");
    let preferred = layout.projects().join(preferred_bucket).join(&name);
    if preferred.is_file() {
        return Some(preferred);
    }
    let mut buckets: Vec<PathBuf> = fs::read_dir(layout.projects())
        .ok()?
        .flatten()
        .map(|e| e.path())
        .collect();
    buckets.sort();
    buckets
        .into_iter()
        .map(|b| b.join(&name))
        .find(|p| p.is_file())
}

/// The id a copy kept beside a different version gets.
pub fn copy_id(id: &str, harness: &str) -> String {
    name_uuid(&format!("{id}~{harness}"))
}

/// The Claude Code id a session is written under.
pub fn claude_id(id: &str) -> String {
    if is_uuid(id) {
        id.to_owned()
    } else {
        name_uuid(id)
    }
}

/// Writes every session; children carried inside a native parent's files map to themselves.
/// A subagent whose parent is not in the state is written as a session of its own, composed
/// from its updates (its native file alone is not a session Claude Code can list).
pub fn write_sessions(
    layout: &Layout,
    writer: &Writer,
    ctx: &WriteContext<'_>,
    sessions: &[Session],
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let mut any = sessions.is_empty();
    ctx.progress.begin("writing Claude Code sessions", None);
    for s in sessions {
        ctx.progress.item(s.id.as_str());
        let outcome = if carried_by_parent(s, sessions) {
            Ok(s.id.to_string())
        } else if is_native(s)
            && main_transcript(&s.native.as_ref().expect("native").files).is_some()
        {
            write_native(layout, writer, ctx, s)?
        } else {
            write_composed(layout, writer, ctx, s)?
        };
        match outcome {
            Ok(new_id) => {
                answer.sessions.insert(s.id.to_string(), new_id);
                any = true;
            }
            Err(why) => answer.refuse(StateKind::Sessions, why),
        }
    }
    ctx.progress.finish();
    if any {
        answer.take(StateKind::Sessions);
    }
    Ok(())
}

fn is_native(s: &Session) -> bool {
    s.native
        .as_ref()
        .is_some_and(|n| n.harness.as_str() == HARNESS && !n.files.is_empty())
}

/// A subagent session whose files travel in its parent's native files.
fn carried_by_parent(s: &Session, all: &[Session]) -> bool {
    let Some(parent) = s
        .meta
        .as_ref()
        .and_then(|m| m.get("asp"))
        .and_then(|a| a.pointer("/parent/sessionId"))
        .and_then(Value::as_str)
    else {
        return false;
    };
    let Some(own) = s.native.as_ref().filter(|_| is_native(s)) else {
        return false;
    };
    all.iter().any(|p| {
        p.id.as_str() == parent
            && is_native(p)
            && own.files.iter().all(|f| {
                p.native
                    .as_ref()
                    .is_some_and(|pn| pn.files.iter().any(|pf| pf.path == f.path))
            })
    })
}

/// `(bucket, rest)` of a native path `.claude/projects/<bucket>/<rest>`.
fn split_native(path: &str) -> Option<(&str, &str)> {
    path.strip_prefix(".claude/projects/")?.split_once('/')
}

/// The session's main transcript among its native files.
fn main_transcript(files: &[FileEntry]) -> Option<&FileEntry> {
    let depth_one = |f: &&FileEntry| {
        split_native(f.path.as_str())
            .is_some_and(|(_, rest)| !rest.contains('/') && rest.ends_with(".jsonl"))
    };
    files
        .iter()
        .filter(depth_one)
        .find(|f| {
            !f.path
                .as_str()
                .rsplit('/')
                .next()
                .unwrap_or("")
                .starts_with("agent-")
        })
        .or_else(|| files.iter().find(depth_one))
}

/// The session id inside the lines (`"sessionId":"<old>"`, `"session_id":"<old>"`, as Claude
/// Code's compact JSON spells them) replaced; every other byte kept, damaged lines included.
fn replace_session_id(bytes: &[u8], old: &str, new: &str) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for key in ["sessionId", "session_id"] {
        let from = format!("\"{key}\":\"{old}\"");
        let to = format!("\"{key}\":\"{new}\"");
        out = replace_bytes(&out, from.as_bytes(), to.as_bytes());
    }
    out
}

fn replace_bytes(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

/// Restores a Claude Code session from its native files.
fn write_native(
    layout: &Layout,
    writer: &Writer,
    ctx: &WriteContext<'_>,
    s: &Session,
) -> Result<Result<String, String>, ConvertError> {
    let files = &s.native.as_ref().expect("checked").files;
    let main = main_transcript(files).expect("checked by the caller");
    let (src_bucket, main_name) = split_native(main.path.as_str()).expect("checked");
    let stem = main_name.trim_end_matches(".jsonl");
    // A bucket is derived from the cwd; when --map-path moved the cwd, the transcript moves to
    // the new cwd's bucket (its contents were already rewritten).
    let bucket = match &s.cwd {
        Some(cwd) if !ctx.options.path_map.is_empty() && !bucket_matches(src_bucket, cwd) => {
            layout::bucket(cwd)
        }
        _ => src_bucket.to_owned(),
    };
    let main_bytes = ctx.blobs.read_all(&main.content)?;
    let new_stem = match find_transcript(layout, &bucket, stem) {
        None => stem.to_owned(),
        Some(p) if fs::read(&p).ok().as_deref() == Some(&main_bytes[..]) => {
            // Already there; put back any of its other files that are missing.
            place(
                layout, writer, ctx.blobs, files, src_bucket, &bucket, stem, stem,
            )?;
            return Ok(Ok(s.id.to_string()));
        }
        Some(_) => {
            let copy = copy_id(stem, harness_of(s));
            let copy_bytes = replace_session_id(&main_bytes, stem, &copy);
            match find_transcript(layout, &bucket, &copy) {
                Some(p) if fs::read(&p).ok().as_deref() == Some(&copy_bytes[..]) => {
                    return Ok(Ok(copy));
                }
                Some(p) => {
                    return Ok(Err(format!(
                        "session {} is already in {} with different content, and so is its copy {}; not written",
                        s.id,
                        layout.projects().display(),
                        p.display()
                    )));
                }
                None => copy,
            }
        }
    };
    place(
        layout, writer, ctx.blobs, files, src_bucket, &bucket, stem, &new_stem,
    )?;
    Ok(Ok(if new_stem == stem {
        s.id.to_string()
    } else {
        new_stem
    }))
}

fn harness_of(s: &Session) -> &str {
    s.harness.as_ref().map_or("asp", |h| h.as_str())
}

/// Writes native files into `bucket`, renaming the session `stem` → `new_stem` (paths and the
/// ids inside `.jsonl` lines). Files already there are left alone.
#[allow(clippy::too_many_arguments)]
fn place(
    layout: &Layout,
    writer: &Writer,
    blobs: &dyn BlobSource,
    files: &[FileEntry],
    src_bucket: &str,
    bucket: &str,
    stem: &str,
    new_stem: &str,
) -> Result<(), ConvertError> {
    let renamed = stem != new_stem;
    for f in files {
        let Some((b, rest)) = split_native(f.path.as_str()) else {
            continue;
        };
        if b != src_bucket {
            continue;
        }
        let rest = if rest == format!("{stem}.jsonl") {
            format!("{new_stem}.jsonl")
        } else if let Some(r) = rest.strip_prefix(&format!("{stem}/")) {
            format!("{new_stem}/{r}")
        } else {
            rest.to_owned()
        };
        let target = layout.projects().join(bucket).join(&rest);
        // No clobbering: a file already at the target stays as it is.
        if renamed && rest.ends_with(".jsonl") {
            let bytes = replace_session_id(&blobs.read_all(&f.content)?, stem, new_stem);
            writer.create_new(&target, &bytes, f.executable)?;
        } else {
            let mut r = blobs.open(&f.content)?;
            writer.create_new_from(&target, &mut r, f.executable)?;
        }
    }
    Ok(())
}

/// Writes a session from its update stream.
fn write_composed(
    layout: &Layout,
    writer: &Writer,
    ctx: &WriteContext<'_>,
    s: &Session,
) -> Result<Result<String, String>, ConvertError> {
    let mut folder = Folder::new();
    let mut timeline = Timeline::default();
    let mut at = 0;
    let mut lines = asp_format::update::UpdateLines::open(ctx.blobs, &s.updates)?;
    loop {
        match lines.next_line() {
            Ok(Some((n, line))) => match serde_json::from_str::<Value>(line) {
                Ok(v) => {
                    if let Some(u) = v.get("update") {
                        timeline.note(at, u);
                        at += 1;
                        folder.push(u.clone());
                    }
                }
                Err(e) => ctx.diagnostics.skipped(
                    Path::new(s.id.as_str()),
                    Some(n),
                    format!("an update that is not JSON ({e}); skipped"),
                ),
            },
            Ok(None) => break,
            Err((n, e)) => {
                return Err(ConvertError::Other(format!(
                    "session {}: update line {n} cannot be read: {e}",
                    s.id
                )));
            }
        }
    }
    let items = folder.finish();
    let home = layout.home.to_string_lossy().into_owned();
    let cwd = s.cwd.clone().unwrap_or_else(|| {
        ctx.diagnostics.note(
            Path::new(s.id.as_str()),
            None,
            format!(
                "session {} names no working directory; written for your home directory {home}",
                s.id
            ),
        );
        home.clone()
    });
    let bucket = layout::bucket(&cwd);
    let harness = harness_of(s);
    let compose_as = |id: &str| {
        compose::compose(
            &Target {
                id,
                cwd: &cwd,
                title: &s.title,
                harness,
                updated_at: s.updated_at.as_deref(),
            },
            &items,
            &timeline,
        )
    };
    let mut id = claude_id(s.id.as_str());
    let mut composed = compose_as(&id);
    if let Some(p) = find_transcript(layout, &bucket, &id) {
        if fs::read(&p).ok().as_deref() == Some(&composed.bytes[..]) {
            return Ok(Ok(id));
        }
        id = copy_id(s.id.as_str(), harness);
        composed = compose_as(&id);
        if let Some(p) = find_transcript(layout, &bucket, &id) {
            if fs::read(&p).ok().as_deref() == Some(&composed.bytes[..]) {
                return Ok(Ok(id));
            }
            return Ok(Err(format!(
                "session {} is already in Claude Code with different content, and so is its copy {}; not written",
                s.id,
                p.display()
            )));
        }
    }
    let target = layout.projects().join(&bucket).join(format!("{id}.jsonl"));
    if writer.create_new(&target, &composed.bytes, false)? == Created::AlreadyExists {
        return Ok(Err(format!(
            "{} appeared while session {} was written; not replaced",
            target.display(),
            s.id
        )));
    }
    Ok(Ok(id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renaming_keeps_every_other_byte() {
        let bytes =
            b"{\"sessionId\":\"a\",\"x\":\"\\\"sessionId\\\":\\\"a\\\"\"}\n\xff\x00 garbage\n";
        let out = replace_session_id(bytes, "a", "b");
        assert!(out.starts_with(b"{\"sessionId\":\"b\","));
        assert_eq!(out.len(), bytes.len());
        assert!(out.ends_with(b"\xff\x00 garbage\n"));
        // Text that merely quotes an id (escaped quotes) is left alone.
        assert_eq!(&out[16..], &bytes[16..]);
    }
}
