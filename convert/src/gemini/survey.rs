//! Listing Gemini's sessions without reading them.
//!
//! Main chats are `~/.gemini/tmp/<project>/chats/session-*.json(l)`; a subagent's chat is
//! `chats/<parent id>/<id>.jsonl` and is read together with its parent. The same session can
//! sit in several files (the CLI copies hash directories into slug directories; a resumed
//! `.json` chat continues in a new `.jsonl`; every resume leaves a startup-only file with the
//! same id): they are one entry, and its read picks the file Gemini would resume.
//!
//! What the survey reads: folder listings, the project registry, and the first line of each
//! chat log (its metadata record names the session). A legacy single-document chat, or a log
//! whose first line names no session, is parsed whole: its id is nowhere else.

use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use asp_format::name::SessionId;

use super::ids;
use super::layout::Layout;
use super::log;
use super::projects::{Projects, is_hash_dir};
use crate::error::ConvertError;
use crate::harness::{Survey, SurveyContext, Surveyed};
use crate::kit::report::Diagnostics;
use crate::kit::source::SourceFile;

/// One chat file of a project directory.
#[derive(Debug, Clone)]
pub struct ChatFile {
    pub source: SourceFile,
    /// The project directory's name under `tmp/`.
    pub dir_name: String,
    /// Its root, when the registry or its marker says (never for a hash directory).
    pub dir_root: Option<String>,
    /// For a subagent's chat: the name of the folder it is in (its parent's id).
    pub parent_dir: Option<String>,
    /// The stems of the subagent chats kept for this chat's session in its project directory.
    pub children: HashSet<String>,
}

/// What reading one session needs.
#[derive(Debug)]
pub struct Plan {
    /// The home (paths of native files are relative to it).
    pub root: PathBuf,
    pub projects: Arc<Projects>,
    /// The session's own files, in survey order.
    pub mains: Vec<ChatFile>,
    /// Its subagents' files, by subagent session id, in survey order.
    pub subagents: Vec<(String, Vec<ChatFile>)>,
}

fn sorted_entries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    v.sort();
    v
}

pub fn name_of(p: &Path) -> &str {
    p.file_name().and_then(|n| n.to_str()).unwrap_or("")
}

fn is_chat_name(n: &str) -> bool {
    n.ends_with(".jsonl") || n.ends_with(".json")
}

/// The session id of a chat file: its first line's, else (a legacy document, a damaged log)
/// the whole file's. `None` when it is not a chat or names no session (reported).
fn session_of(src: &SourceFile, diagnostics: &Diagnostics) -> Option<String> {
    if let Some(id) = log::header_session_id(src) {
        return Some(id);
    }
    let path = &src.path;
    match log::read_surveyed(src, &Diagnostics::new()) {
        Ok(Ok(chat)) => match chat.session_id() {
            Some(id) => Some(id.to_owned()),
            None => {
                diagnostics.lost(path, None, "the chat has no session id; skipped");
                None
            }
        },
        Ok(Err(why)) => {
            diagnostics.lost(path, None, format!("{}; skipped", why.0));
            None
        }
        Err(ConvertError::Io { source, .. }) => {
            diagnostics.lost(path, None, format!("cannot be read ({source}); skipped"));
            None
        }
        Err(e) => {
            diagnostics.lost(path, None, format!("cannot be read ({e}); skipped"));
            None
        }
    }
}

/// The sessions of the Gemini home.
pub fn survey(layout: &Layout, ctx: &SurveyContext<'_>) -> Result<Survey, ConvertError> {
    let diagnostics = ctx.diagnostics;
    let projects = Arc::new(Projects::load(&layout.gemini, diagnostics));
    let mut mains: BTreeMap<String, Vec<ChatFile>> = BTreeMap::new();
    let mut main_order: Vec<String> = Vec::new();
    let mut subs: BTreeMap<String, Vec<ChatFile>> = BTreeMap::new();
    let mut sub_order: Vec<String> = Vec::new();
    for dir in sorted_entries(&layout.gemini.join("tmp")) {
        let chats = dir.join("chats");
        if !chats.is_dir() {
            continue;
        }
        let dir_name = name_of(&dir).to_owned();
        let dir_root = if is_hash_dir(&dir_name) {
            None
        } else {
            projects.root_of_dir(&dir_name)
        };
        let mut main_files = Vec::new();
        let mut sub_files: Vec<(String, PathBuf)> = Vec::new();
        for entry in sorted_entries(&chats) {
            let n = name_of(&entry).to_owned();
            if entry.is_dir() {
                for f in sorted_entries(&entry) {
                    if is_chat_name(name_of(&f)) && f.is_file() {
                        sub_files.push((n.clone(), f));
                    }
                }
            } else if n.starts_with("session-") && is_chat_name(&n) {
                if entry.is_file() {
                    main_files.push(entry);
                } else {
                    diagnostics.lost(
                        &entry,
                        None,
                        "named like a chat but not a readable file (a FIFO, socket or device, or a link to nowhere); skipped",
                    );
                }
            }
        }
        // parent folder → the stems of the subagent chats in it.
        let mut children: BTreeMap<String, HashSet<String>> = BTreeMap::new();
        for (parent, f) in &sub_files {
            let stem = name_of(f)
                .rsplit_once('.')
                .map_or("", |(s, _)| s)
                .to_owned();
            children.entry(parent.clone()).or_default().insert(stem);
        }
        let surveyed = |path: &Path, parent_dir: Option<String>| -> Option<(String, ChatFile)> {
            let appended = path.extension().is_some_and(|e| e == "jsonl");
            let source = match SourceFile::stat(path, appended) {
                Ok(s) => s,
                Err(e) => {
                    diagnostics.lost(path, None, format!("cannot be read ({e}); skipped"));
                    return None;
                }
            };
            let sid = session_of(&source, diagnostics)?;
            let kids = children
                .get(&ids::file_part(&sid))
                .cloned()
                .unwrap_or_default();
            Some((
                sid,
                ChatFile {
                    source,
                    dir_name: dir_name.clone(),
                    dir_root: dir_root.clone(),
                    parent_dir,
                    children: kids,
                },
            ))
        };
        for path in &main_files {
            if let Some((sid, f)) = surveyed(path, None) {
                if !mains.contains_key(&sid) {
                    main_order.push(sid.clone());
                }
                mains.entry(sid).or_default().push(f);
            }
        }
        for (parent, path) in &sub_files {
            if let Some((sid, f)) = surveyed(path, Some(parent.clone())) {
                if !subs.contains_key(&sid) {
                    sub_order.push(sid.clone());
                }
                subs.entry(sid).or_default().push(f);
            }
        }
    }

    // A subagent's chats travel with the session whose id names their folder.
    let by_part: BTreeMap<String, String> = main_order
        .iter()
        .map(|sid| (ids::file_part(sid), sid.clone()))
        .collect();
    let mut plans: Vec<(String, Plan)> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    for sid in &main_order {
        index.insert(sid.clone(), plans.len());
        plans.push((
            sid.clone(),
            Plan {
                root: layout.root.clone(),
                projects: Arc::clone(&projects),
                mains: mains.remove(sid).unwrap_or_default(),
                subagents: Vec::new(),
            },
        ));
    }
    for sid in sub_order {
        let files = subs.remove(&sid).unwrap_or_default();
        let parent = files
            .first()
            .and_then(|f| f.parent_dir.as_ref())
            .and_then(|p| by_part.get(p))
            .filter(|p| **p != sid);
        match parent.and_then(|p| index.get(p)) {
            Some(&i) => plans[i].1.subagents.push((sid, files)),
            None => {
                if index.contains_key(&sid) {
                    // The id of a main session too: carried once, with the main's files.
                    let i = index[&sid];
                    plans[i].1.mains.extend(files);
                    continue;
                }
                index.insert(sid.clone(), plans.len());
                plans.push((
                    sid,
                    Plan {
                        root: layout.root.clone(),
                        projects: Arc::clone(&projects),
                        mains: files,
                        subagents: Vec::new(),
                    },
                ));
            }
        }
    }

    let mut out = Vec::new();
    for (sid, plan) in plans {
        let Ok(id) = SessionId::new(&sid) else {
            for f in &plan.mains {
                diagnostics.lost(
                    &f.source.path,
                    None,
                    format!("session id {sid:?} is not usable; skipped"),
                );
            }
            continue;
        };
        let files: Vec<SourceFile> = plan
            .mains
            .iter()
            .chain(plan.subagents.iter().flat_map(|(_, f)| f))
            .map(|f| f.source.clone())
            .collect();
        let describe = |f: &ChatFile| {
            let mut kids: Vec<&String> = f.children.iter().collect();
            kids.sort();
            format!(
                "{}|{:?}|{:?}|{kids:?}",
                f.dir_name, f.dir_root, f.parent_dir
            )
        };
        let facts = format!(
            "{:?}|{:?}|{:?}",
            projects,
            plan.mains.iter().map(describe).collect::<Vec<_>>(),
            plan.subagents
                .iter()
                .map(|(s, fs)| (s, fs.iter().map(describe).collect::<Vec<_>>()))
                .collect::<Vec<_>>()
        );
        let subagents = plan
            .subagents
            .iter()
            .filter_map(|(s, _)| SessionId::new(s).ok())
            .collect();
        out.push(Surveyed::new(id, files, facts.as_bytes(), plan).with_subagents(subagents));
    }
    Ok(Survey::of(out))
}
