//! Putting a session's files into a chats directory without touching another version of it.
//!
//! A session is "already there" when every file we would write is present with the same
//! bytes, or with our bytes followed by more (Gemini appends to a chat it resumes, so a
//! restored session the user has since continued still holds everything we carry). It
//! conflicts when one of its paths holds something else, or when none of its files is there
//! but another chat Gemini would list has the same session id. A chat with that id that Gemini
//! would not list (the startup-only file every resume leaves behind, `spec/harnesses/gemini.md`
//! §3.3) is not a version of the conversation.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::error::ConvertError;
use crate::kit::beside::holds_all_of;
use crate::kit::fsops::{Created, Writer};
use crate::kit::report::Diagnostics;

use super::ids;
use super::log::read_chat;

/// One file to write.
#[derive(Debug, Clone)]
pub struct Planned {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
}

/// The chat files in `chats` that belong to session `id`: main chats end in its first 8
/// characters; a subagent's chat is `<parent>/<id>.jsonl` under any parent (a subagent id
/// names one conversation, whichever chat started it).
pub fn versions(chats: &Path, id: &str, parent: Option<&str>) -> Vec<PathBuf> {
    let quiet = Diagnostics::new();
    let (short, stem) = (ids::short(id), ids::file_part(id));
    let candidates: Vec<PathBuf> = match parent {
        Some(_) => fs::read_dir(chats)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir())
            .flat_map(|d| {
                [
                    d.join(format!("{stem}.jsonl")),
                    d.join(format!("{stem}.json")),
                ]
            })
            .filter(|p| p.is_file())
            .collect(),
        None => fs::read_dir(chats)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                e.file_name().to_str().is_some_and(|n| {
                    n.starts_with("session-")
                        && (n.ends_with(&format!("-{short}.jsonl"))
                            || n.ends_with(&format!("-{short}.json")))
                })
            })
            .map(|e| e.path())
            .collect(),
    };
    let mut out: Vec<PathBuf> = candidates
        .into_iter()
        .filter(|p| matches!(read_chat(p, &quiet), Ok(Ok(chat)) if chat.session_id() == Some(id)))
        .collect();
    out.sort();
    out
}

/// Whether a main chat of another session ends as session `id`'s would (the first 8
/// characters of the ids alike: UUID v7 ids made within about a minute of each other, as Pi's
/// are), in any of `chats` or among the files `planned` (a dry run's, not written). Gemini CLI
/// groups chats by that ending: its retention deletes a group together, and a resume first
/// writes a file with the resumed id's ending (`spec/harnesses/gemini.md` §3.3), so two
/// sessions sharing one put each other at risk.
pub fn ending_taken(chats: &[PathBuf], id: &str, planned: &[PathBuf]) -> bool {
    let quiet = Diagnostics::new();
    let short = ids::short(id);
    let ends = |n: &str| {
        n.starts_with("session-")
            && (n.ends_with(&format!("-{short}.jsonl")) || n.ends_with(&format!("-{short}.json")))
    };
    let name_ends = |p: &Path| p.file_name().and_then(|n| n.to_str()).is_some_and(ends);
    if planned
        .iter()
        .any(|p| name_ends(p) && chats.iter().any(|c| p.parent() == Some(c.as_path())))
    {
        return true;
    }
    chats
        .iter()
        .flat_map(|c| fs::read_dir(c).into_iter().flatten().flatten())
        .map(|e| e.path())
        .filter(|p| name_ends(p))
        .any(|p| {
            matches!(read_chat(&p, &quiet), Ok(Ok(chat))
                if chat.session_id().is_some_and(|other| other != id))
        })
}

/// Whether the chat at `path` holds a conversation: something Gemini would list, or for a
/// subagent's chat (never listed) the same kind of content.
fn has_conversation(path: &Path) -> bool {
    matches!(read_chat(path, &Diagnostics::new()), Ok(Ok(chat)) if chat.has_content())
}

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    AlreadyThere,
    Conflict,
    /// Nothing stands in the way; these files (indexes into the plan) are missing.
    Write(Vec<usize>),
}

/// Decides whether `files` of session `id` can be written (see the module doc). `chats` are
/// the project's chats directories: the one written to first, then any other the CLI may
/// still read the project from (its old `sha256(root)` directory).
pub fn check(
    chats: &[PathBuf],
    id: &str,
    parent: Option<&str>,
    files: &[Planned],
) -> Result<Check, ConvertError> {
    let mut missing = Vec::new();
    for (i, f) in files.iter().enumerate() {
        match fs::read(&f.path) {
            Ok(existing) => {
                if !holds_all_of(&existing, &f.bytes) {
                    return Ok(Check::Conflict);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => missing.push(i),
            Err(e) => return Err(ConvertError::io(&f.path)(e)),
        }
    }
    if missing.is_empty() {
        return Ok(Check::AlreadyThere);
    }
    if missing.len() == files.len() {
        let ours: Vec<&PathBuf> = files.iter().map(|f| &f.path).collect();
        for other in chats.iter().flat_map(|c| versions(c, id, parent)) {
            if ours.contains(&&other) {
                continue;
            }
            // The same bytes under another name (the CLI copies old hash directories into
            // slug directories) are this session, already there.
            let same =
                fs::read(&other).is_ok_and(|b| files.iter().any(|f| holds_all_of(&b, &f.bytes)));
            if same {
                return Ok(Check::AlreadyThere);
            }
            if has_conversation(&other) {
                return Ok(Check::Conflict);
            }
        }
    }
    Ok(Check::Write(missing))
}

/// Writes the files [`check`] found missing, all or none ([`Writer::create_all_new`]): a
/// session is never left with some of its chats. `false` when a file appeared in the
/// meantime (a conflict): then nothing is written.
pub fn write(writer: &Writer, files: &[Planned], missing: &[usize]) -> Result<bool, ConvertError> {
    let batch: Vec<(&Path, &[u8])> = missing
        .iter()
        .map(|&i| (files[i].path.as_path(), files[i].bytes.as_slice()))
        .collect();
    Ok(writer.create_all_new(&batch)? == Created::New)
}

/// [`check`], then [`write`].
#[cfg(test)]
fn place(
    writer: &Writer,
    chats: &Path,
    id: &str,
    parent: Option<&str>,
    files: &[Planned],
) -> Result<crate::kit::placement::Placement, ConvertError> {
    use crate::kit::placement::Placement;
    let conflict = || Placement::Refused("conflict".into());
    match check(&[chats.to_path_buf()], id, parent, files)? {
        Check::AlreadyThere => Ok(Placement::AlreadyThere),
        Check::Conflict => Ok(conflict()),
        Check::Write(missing) => Ok(if write(writer, files, &missing)? {
            Placement::New
        } else {
            conflict()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::placement::Placement;

    const ID: &str = "fed50604-91d7-43a0-ae1f-8998673c3ced";

    fn chat(id: &str, prompt: Option<&str>) -> Vec<u8> {
        let mut s = format!(
            "{{\"sessionId\":\"{id}\",\"projectHash\":\"h\",\"startTime\":\"t\",\"lastUpdated\":\"t\"}}\n"
        );
        if let Some(p) = prompt {
            s.push_str(&format!(
                "{{\"id\":\"m\",\"timestamp\":\"t\",\"type\":\"user\",\"content\":[{{\"text\":\"{p}\"}}]}}\n"
            ));
        }
        s.into_bytes()
    }

    #[test]
    fn same_bytes_or_a_continued_chat_are_already_there_others_conflict() {
        let dir = tempfile::tempdir().unwrap();
        let w = Writer::new(false);
        let file = Planned {
            path: dir.path().join("session-2026-11-23T09-14-fed50604.jsonl"),
            bytes: chat(ID, Some("hi")),
        };
        let one = std::slice::from_ref(&file);
        assert_eq!(
            place(&w, dir.path(), ID, None, one).unwrap(),
            Placement::New
        );
        assert_eq!(
            place(&w, dir.path(), ID, None, one).unwrap(),
            Placement::AlreadyThere
        );
        let mut continued = file.bytes.clone();
        continued.extend_from_slice(b"{\"$set\":{\"lastUpdated\":\"t2\"}}\n");
        fs::write(&file.path, &continued).unwrap();
        assert_eq!(
            place(&w, dir.path(), ID, None, one).unwrap(),
            Placement::AlreadyThere
        );
        fs::write(&file.path, chat(ID, Some("changed"))).unwrap();
        assert_eq!(
            place(&w, dir.path(), ID, None, one).unwrap(),
            Placement::Refused("conflict".into())
        );
    }

    #[test]
    fn another_listable_file_of_the_session_conflicts_a_startup_stray_does_not() {
        let dir = tempfile::tempdir().unwrap();
        let w = Writer::new(false);
        let stray = dir.path().join("session-2026-11-30T08-00-fed50604.jsonl");
        fs::write(&stray, chat(ID, None)).unwrap();
        let file = Planned {
            path: dir.path().join("session-2026-11-23T09-14-fed50604.jsonl"),
            bytes: chat(ID, Some("hi")),
        };
        let one = std::slice::from_ref(&file);
        assert_eq!(
            place(&w, dir.path(), ID, None, one).unwrap(),
            Placement::New
        );
        fs::remove_file(&file.path).unwrap();
        fs::write(&stray, chat(ID, Some("other"))).unwrap();
        assert_eq!(
            place(&w, dir.path(), ID, None, one).unwrap(),
            Placement::Refused("conflict".into())
        );
        assert!(!file.path.exists());
    }
}
