//! Listing Qwen Code's sessions without reading them.
//!
//! A session is `projects/<dir>/chats/<uuid>.jsonl` (or `chats/archive/<uuid>.jsonl`) under the
//! runtime dir; its files are that
//! chat, its subagents' transcripts (`projects/<dir>/subagents/<sessionId>/agent-*.jsonl` and
//! their `.meta.json`, read together with it as sessions of their own) and its file-history
//! backups (`file-history/<sessionId>/*`, carried as native files for `/rewind`). The survey
//! reads folder listings and the first line of each chat (the session id and the cwd that
//! decides its project).

use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use asp_format::name::SessionId;
use serde_json::Value;

use super::ids;
use super::layout::Layout;
use super::read::subagent_id;
use crate::error::ConvertError;
use crate::harness::{Survey, SurveyContext, Surveyed};
use crate::kit::report::Diagnostics;
use crate::kit::source::SourceFile;

/// A subagent transcript of a session.
#[derive(Debug, Clone)]
pub struct Subagent {
    /// `<type>-<callId>` from the file name `agent-<agentId>.jsonl`.
    pub agent_id: String,
    pub file: SourceFile,
    pub meta: Option<SourceFile>,
}

/// What reading one session needs.
#[derive(Debug, Clone)]
pub struct Plan {
    pub layout: Layout,
    pub chat: SourceFile,
    pub subagents: Vec<Subagent>,
    pub file_history: Vec<SourceFile>,
}

fn sorted(dir: &Path, diagnostics: &Diagnostics) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = match fs::read_dir(dir) {
        Ok(e) => e.flatten().map(|e| e.path()).collect(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            diagnostics.lost(
                dir,
                None,
                format!("cannot be read as a folder ({e}); nothing in it was carried"),
            );
            return Vec::new();
        }
    };
    v.sort();
    v
}

fn name_of(p: &Path) -> &str {
    p.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

/// The first record of a chat: its `sessionId` and `cwd`.
fn header(src: &SourceFile) -> Result<(Option<String>, Option<String>), String> {
    let f = src.open().map_err(|e| format!("cannot be read ({e})"))?;
    let mut line = Vec::new();
    BufReader::new(f)
        .read_until(b'\n', &mut line)
        .map_err(|e| format!("cannot be read ({e})"))?;
    let text = String::from_utf8_lossy(&line);
    let v: Value = serde_json::from_str(text.trim_end())
        .or_else(|_| {
            super::transcript::recover_objects(&text)
                .into_iter()
                .next()
                .map(Value::Object)
                .ok_or(())
        })
        .map_err(|()| "its first line is not a record".to_owned())?;
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    Ok((s("sessionId"), s("cwd")))
}

/// The files of a folder, recursively, sorted (file-history backups).
fn files_under(dir: &Path, diagnostics: &Diagnostics, out: &mut Vec<SourceFile>) {
    for p in sorted(dir, diagnostics) {
        if p.is_dir() {
            files_under(&p, diagnostics, out);
        } else if p.is_file()
            && let Ok(s) = SourceFile::stat(&p, false)
        {
            out.push(s);
        }
    }
}

/// The sessions of the Qwen home.
pub fn survey(layout: &Layout, ctx: &SurveyContext<'_>) -> Result<Survey, ConvertError> {
    let diagnostics = ctx.diagnostics;
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for project in sorted(&layout.projects(), diagnostics) {
        let chats = project.join("chats");
        if !chats.is_dir() {
            continue;
        }
        // Archived chats (`chats/archive/`) are listed by Qwen only on request; carried alike.
        let mut paths = sorted(&chats, diagnostics);
        paths.extend(sorted(&chats.join("archive"), diagnostics));
        for path in paths {
            let name = name_of(&path).to_owned();
            if !name.ends_with(".jsonl") || path.is_dir() {
                continue;
            }
            if !ids::is_session_file(&name) {
                diagnostics.left_out(&path, None, "not named <session uuid>.jsonl, so Qwen Code neither lists nor loads it; not carried");
                continue;
            }
            let stem = name.trim_end_matches(".jsonl");
            let chat = match SourceFile::stat(&path, true) {
                Ok(s) => s,
                Err(e) => {
                    diagnostics.lost(&path, None, format!("cannot be read ({e}); skipped"));
                    continue;
                }
            };
            let (sid, cwd) = match header(&chat) {
                Ok(h) => h,
                Err(why) => {
                    diagnostics.left_out(
                        &path,
                        Some(1),
                        format!("{why}; Qwen Code cannot list it, not carried"),
                    );
                    continue;
                }
            };
            if cwd.is_none() {
                diagnostics.left_out(&path, Some(1), "its first record has no cwd, so it belongs to no project and Qwen Code never lists it; not carried");
                continue;
            }
            if !sid.as_deref().is_some_and(|s| s.eq_ignore_ascii_case(stem)) {
                diagnostics.left_out(
                    &path,
                    Some(1),
                    format!("its first record names session {sid:?}, not the file's; Qwen Code cannot load it, not carried"),
                );
                continue;
            }
            let Ok(id) = SessionId::new(stem) else {
                continue;
            };
            if !seen.insert(stem.to_ascii_lowercase()) {
                diagnostics.left_out(
                    &path,
                    None,
                    format!(
                        "session {stem} is in another project folder too; this copy was not carried"
                    ),
                );
                continue;
            }
            let mut subagents = Vec::new();
            for f in sorted(&project.join("subagents").join(stem), diagnostics) {
                let n = name_of(&f);
                let Some(agent) = n
                    .strip_prefix("agent-")
                    .and_then(|a| a.strip_suffix(".jsonl"))
                else {
                    continue;
                };
                let Ok(file) = SourceFile::stat(&f, true) else {
                    continue;
                };
                let meta_path = f.with_file_name(format!("agent-{agent}.meta.json"));
                subagents.push(Subagent {
                    agent_id: agent.to_owned(),
                    file,
                    meta: SourceFile::stat(&meta_path, false).ok(),
                });
            }
            let mut file_history = Vec::new();
            files_under(
                &layout.runtime.join("file-history").join(stem),
                diagnostics,
                &mut file_history,
            );
            let mut files = vec![chat.clone()];
            for s in &subagents {
                files.push(s.file.clone());
                files.extend(s.meta.clone());
            }
            files.extend(file_history.iter().cloned());
            let facts = format!(
                "{}|{:?}",
                layout.runtime.display(),
                subagents.iter().map(|s| &s.agent_id).collect::<Vec<_>>()
            );
            let subagent_ids = subagents
                .iter()
                .filter_map(|s| SessionId::new(&subagent_id(id.as_str(), &s.agent_id)).ok())
                .collect();
            out.push(
                Surveyed::new(
                    id,
                    files,
                    facts.as_bytes(),
                    Plan {
                        layout: layout.clone(),
                        chat,
                        subagents,
                        file_history,
                    },
                )
                .with_subagents(subagent_ids),
            );
        }
    }
    Ok(Survey::of(out))
}
