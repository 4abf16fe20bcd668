//! The plain directory form: the state as files a person can read and edit.
//!
//! ```text
//! DIR/
//!   sessions/<id>.json          {"id", "title", "harness"?, "cwd"?, "updatedAt"?, "native"?, "_meta"?}
//!   sessions/<id>.jsonl         one session/update notification params object per line
//!   sessions/<id>.native/<path> the harness's own files, when the bundle carries them
//!   AGENTS.md                   instructions
//!   skills/<name>/...           skill folders, executable bits kept
//!   skills.json                 only when a skill carries `_meta`: {"<name>": {"_meta": ...}}
//!   tools.json                  [McpServer]
//!   memory/<path>               notes
//!   memory.json                 [{"path", "origin", "deleted"?}]: origins and tombstones
//!   settings.json               {"<option id>": value}
//! ```
//!
//! `<id>` is the session id escaped by [`crate::kit::escape`]. A kind is given exactly when its
//! file or directory exists (an empty `sessions/` gives no sessions, which is not the same as
//! not giving sessions). Reading a directory written from a bundle and packing it again gives
//! the same bundle, byte for byte: each update stream is derived from the session's native
//! transcript as its converter's read derived it ([`crate::Harness::transcript`]), so it is
//! compressed against the same dictionary.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, BufRead, BufReader};
use std::path::{Path, PathBuf};

use asp_format::Descriptor;
use asp_format::blob::{BlobSink, BlobSource};
use asp_format::kind::{KindSet, StateKind};
use asp_format::name::{HarnessName, RelPath, SessionId, SkillName};
use asp_format::progress::Progress;
use asp_format::state::{
    FileEntry, Instructions, McpServer, MemoryNote, Meta, Native, NoteBody, Origin, Session,
    Settings, Skill, State,
};
use asp_format::update::{UpdateWriter, check_line};
use serde::{Deserialize, Serialize};

use crate::error::ConvertError;
use crate::harness::{Survey, Surveyed};
use crate::kit::escape;
use crate::kit::fsops::{Created, Writer, is_executable};
use crate::kit::source::SourceFile;

const SESSIONS: &str = "sessions";
const AGENTS_MD: &str = "AGENTS.md";
const SKILLS: &str = "skills";
const SKILLS_INDEX: &str = "skills.json";
const TOOLS: &str = "tools.json";
const MEMORY: &str = "memory";
const MEMORY_INDEX: &str = "memory.json";
const SETTINGS: &str = "settings.json";

/// The names a state directory holds at its top (the module's table): what `--from-dir`
/// looks for, and what `--force` may replace (anything else in a directory means it is not
/// one [`write()`] made, and it is left alone).
const ENTRIES: [&str; 8] = [
    SESSIONS,
    AGENTS_MD,
    SKILLS,
    SKILLS_INDEX,
    TOOLS,
    MEMORY,
    MEMORY_INDEX,
    SETTINGS,
];

/// `sessions/<id>.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SessionFile {
    id: SessionId,
    title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    harness: Option<HarnessName>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    updated_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    native: Option<NativeIndex>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Meta>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeIndex {
    harness: HarnessName,
    files: Vec<NativeFileIndex>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NativeFileIndex {
    path: RelPath,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    executable: bool,
}

/// An entry of `memory.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoteIndex {
    path: RelPath,
    #[serde(default)]
    origin: Origin,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    deleted: bool,
}

/// An entry of `skills.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct SkillIndex {
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<Meta>,
}

/// Refuses anything but a regular file: a state directory holds plain files, and a symlink
/// in one (planted, or left by a tool) must not make the reader pack a file from elsewhere.
fn regular_file(path: &Path) -> Result<(), ConvertError> {
    let m = fs::symlink_metadata(path).map_err(ConvertError::io(path))?;
    if m.file_type().is_symlink() {
        return Err(ConvertError::invalid(
            path,
            "symbolic links are not followed in a state directory",
        ));
    }
    if !m.is_file() {
        return Err(ConvertError::invalid(path, "not a regular file"));
    }
    Ok(())
}

fn read_json<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, ConvertError> {
    regular_file(path)?;
    let bytes = fs::read(path).map_err(ConvertError::io(path))?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ConvertError::invalid(
            path,
            format!("line {} column {}: {e}", e.line(), e.column()),
        )
    })
}

fn exists(path: &Path) -> Result<bool, ConvertError> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.file_type().is_symlink() => Err(ConvertError::invalid(
            path,
            "symbolic links are not followed in a state directory",
        )),
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(ConvertError::io(path)(e)),
    }
}

/// Every regular file under `root`, as sorted relative paths. Symlinks and special files are
/// refused: a state directory holds plain files only.
fn files_under(root: &Path) -> Result<Vec<(RelPath, PathBuf, bool)>, ConvertError> {
    let mut out = Vec::new();
    for entry in walkdir::WalkDir::new(root).follow_links(false).min_depth(1) {
        let entry = entry.map_err(|e| {
            let path = e.path().unwrap_or(root).to_path_buf();
            ConvertError::Io {
                path,
                source: e.into(),
            }
        })?;
        let ft = entry.file_type();
        if ft.is_dir() {
            continue;
        }
        if !ft.is_file() {
            return Err(ConvertError::invalid(
                entry.path(),
                "only regular files are allowed here (no symlinks or special files)",
            ));
        }
        let rel = entry.path().strip_prefix(root).expect("walked under root");
        let rel = RelPath::from_path(rel)
            .map_err(|e| ConvertError::invalid(entry.path(), e.to_string()))?;
        let meta = entry.metadata().map_err(|e| ConvertError::Io {
            path: entry.path().to_path_buf(),
            source: e.into(),
        })?;
        out.push((rel, entry.path().to_path_buf(), is_executable(&meta)));
    }
    out.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
    Ok(out)
}

fn put_file(sink: &dyn BlobSink, path: &Path) -> Result<asp_format::Descriptor, ConvertError> {
    regular_file(path)?;
    let mut f = crate::kit::source::open_regular(path).map_err(ConvertError::io(path))?;
    Ok(sink.put_reader(&mut f)?)
}

/// Reads a state directory, every kind in `kinds`, sessions in order. [`crate::store::Store`]
/// reads one through [`survey`], [`read_session`] and [`read_kinds`]; this is the same, for
/// callers that hold no store.
pub fn read(
    dir: &Path,
    kinds: KindSet,
    sink: &dyn BlobSink,
    progress: &dyn Progress,
) -> Result<State, ConvertError> {
    let rest = kinds.iter().filter(|k| *k != StateKind::Sessions).collect();
    let mut state = read_kinds(dir, rest, sink)?;
    if kinds.contains(StateKind::Sessions) && exists(&dir.join(SESSIONS))? {
        let mut sessions = Vec::new();
        let entries = survey(dir)?.sessions;
        progress.begin(
            "reading sessions",
            Some(entries.iter().map(Surveyed::size).sum()),
        );
        for entry in entries {
            sessions.extend(read_session(&entry, sink)?);
            progress.advance(entry.size());
        }
        progress.finish();
        state.sessions = Some(sessions);
    }
    state.normalize();
    state.validate().map_err(|errs| {
        ConvertError::invalid(
            dir,
            errs.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("; "),
        )
    })?;
    Ok(state)
}

fn check_dir(dir: &Path) -> Result<(), ConvertError> {
    if !dir.is_dir() {
        return Err(ConvertError::invalid(dir, "not a directory"));
    }
    // A folder that holds something, but nothing a state directory has, is not one: most
    // often a harness's home given to `--from-dir` instead of `--from HARNESS --home`, which
    // would otherwise pack as an empty state, exit 0.
    let mut other = Vec::new();
    for entry in fs::read_dir(dir).map_err(ConvertError::io(dir))? {
        let name = entry.map_err(ConvertError::io(dir))?.file_name();
        let name = name.to_string_lossy();
        if ENTRIES.contains(&name.as_ref()) {
            return Ok(());
        }
        other.push(name.into_owned());
    }
    if other.is_empty() {
        return Ok(());
    }
    other.sort();
    other.truncate(5);
    Err(ConvertError::invalid(
        dir,
        format!(
            "not a state directory: it holds none of sessions/, AGENTS.md, skills/, tools.json, \
             memory/, settings.json (it holds {}); a state directory is what `asp-unpack \
             --to-dir` writes, and a harness's home is read with `asp-pack --from HARNESS \
             --home DIR` or listed with `asp sessions --from HARNESS --home DIR`",
            other.join(", ")
        ),
    ))
}

/// Reads every kind in `kinds` but sessions.
pub fn read_kinds(dir: &Path, kinds: KindSet, sink: &dyn BlobSink) -> Result<State, ConvertError> {
    check_dir(dir)?;
    let mut state = State::default();
    let agents = dir.join(AGENTS_MD);
    if kinds.contains(StateKind::Instructions) && exists(&agents)? {
        regular_file(&agents)?;
        let bytes = fs::read(&agents).map_err(ConvertError::io(&agents))?;
        if std::str::from_utf8(&bytes).is_err() {
            return Err(ConvertError::invalid(
                &agents,
                "AGENTS.md is not UTF-8 text",
            ));
        }
        state.instructions = Some(Instructions {
            text: sink.put(&bytes)?,
        });
    }
    let skills_dir = dir.join(SKILLS);
    if kinds.contains(StateKind::Skills) && exists(&skills_dir)? {
        state.skills = Some(read_skills(dir, &skills_dir, sink)?);
    }
    let tools = dir.join(TOOLS);
    if kinds.contains(StateKind::Tools) && exists(&tools)? {
        state.tools = Some(read_json::<Vec<McpServer>>(&tools)?);
    }
    let memory_index = dir.join(MEMORY_INDEX);
    let memory_dir = dir.join(MEMORY);
    if kinds.contains(StateKind::Memory) && (exists(&memory_index)? || exists(&memory_dir)?) {
        state.memory = Some(read_memory(&memory_index, &memory_dir, sink)?);
    }
    let settings = dir.join(SETTINGS);
    if kinds.contains(StateKind::Settings) && exists(&settings)? {
        state.settings = Some(read_json::<Settings>(&settings)?);
    }
    Ok(state)
}

/// What reading one session of a state directory needs: its files' stem and their folder.
struct Plan {
    dir: PathBuf,
    stem: String,
    meta: SessionFile,
}

/// Lists the sessions of a state directory: every `sessions/<id>.json`, read (it is the
/// session's header), with the files the session is made of. No `sessions/` lists none.
pub fn survey(dir: &Path) -> Result<Survey, ConvertError> {
    check_dir(dir)?;
    let sdir = dir.join(SESSIONS);
    if !exists(&sdir)? {
        return Ok(Survey::default());
    }
    let mut metas = Vec::new();
    // A session's other files, which its `<id>.json` must be there to name.
    let mut parts: Vec<(String, PathBuf)> = Vec::new();
    for entry in fs::read_dir(&sdir).map_err(ConvertError::io(&sdir))? {
        let entry = entry.map_err(ConvertError::io(&sdir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            return Err(ConvertError::invalid(
                entry.path(),
                "file name is not UTF-8",
            ));
        };
        if let Some(stem) = name.strip_suffix(".json") {
            metas.push((stem.to_owned(), entry.path()));
        } else if let Some(stem) = name
            .strip_suffix(".jsonl")
            .or_else(|| name.strip_suffix(".native"))
        {
            parts.push((stem.to_owned(), entry.path()));
        } else {
            return Err(ConvertError::invalid(
                entry.path(),
                "unexpected file in sessions/ (expected <id>.json, <id>.jsonl and <id>.native/)",
            ));
        }
    }
    metas.sort();
    parts.sort();
    if let Some((stem, path)) = parts
        .iter()
        .find(|(stem, _)| !metas.iter().any(|(m, _)| m == stem))
    {
        return Err(ConvertError::invalid(
            path,
            format!(
                "a file of session {stem} without its sessions/{stem}.json (the session's header, \
                 which names it and its files): put the header back, or delete the session's \
                 other files to leave the session out"
            ),
        ));
    }
    let mut sessions = Vec::with_capacity(metas.len());
    for (stem, meta_path) in metas {
        let meta: SessionFile = read_json(&meta_path)?;
        let stat =
            |p: &Path, appended: bool| SourceFile::stat(p, appended).map_err(ConvertError::io(p));
        let mut files = vec![stat(&meta_path, false)?];
        let jsonl = sdir.join(format!("{stem}.jsonl"));
        regular_file(&jsonl)?;
        files.push(stat(&jsonl, true)?);
        if let Some(index) = &meta.native {
            let root = sdir.join(format!("{stem}.native"));
            for f in &index.files {
                let p = f.path.under(&root);
                regular_file(&p)?;
                files.push(stat(&p, false)?);
            }
        }
        let id = meta.id.clone();
        let facts = serde_json::to_vec(&meta).expect("a session file serialises");
        sessions.push(Surveyed::new(
            id,
            files,
            &facts,
            Plan {
                dir: sdir.clone(),
                stem,
                meta,
            },
        ));
    }
    Ok(Survey::of(sessions))
}

/// Reads one surveyed session of a state directory: its native files, then its update stream,
/// derived from the session's native transcript (see [`transcript`]).
pub fn read_session(entry: &Surveyed, sink: &dyn BlobSink) -> Result<Vec<Session>, ConvertError> {
    let Plan { dir, stem, meta } = entry.plan::<Plan>();
    let native = match &meta.native {
        None => None,
        Some(index) => {
            let root = dir.join(format!("{stem}.native"));
            let mut files = Vec::with_capacity(index.files.len());
            for f in &index.files {
                let p = f.path.under(&root);
                let content = put_file(sink, &p)?;
                let executable = is_executable(&fs::metadata(&p).map_err(ConvertError::io(&p))?);
                files.push(FileEntry {
                    path: f.path.clone(),
                    executable: executable || f.executable,
                    content,
                });
            }
            Some(Native {
                harness: index.harness.clone(),
                files,
            })
        }
    };
    let jsonl = dir.join(format!("{stem}.jsonl"));
    regular_file(&jsonl)?;
    let file = crate::kit::source::open_regular(&jsonl).map_err(ConvertError::io(&jsonl))?;
    let base = native
        .as_ref()
        .and_then(|n| transcript(&meta.id, n, meta.meta.as_ref()));
    let mut w = UpdateWriter::derived(sink, base)?;
    for (i, line) in BufReader::new(file).lines().enumerate() {
        let n = i as u64 + 1;
        let line = line
            .map_err(|e| ConvertError::invalid(&jsonl, format!("line {n}: cannot be read: {e}")))?;
        if line.trim().is_empty() {
            continue;
        }
        let line = check_line(&line, &meta.id)
            .map_err(|e| ConvertError::invalid(&jsonl, format!("line {n}: {e}")))?;
        w.push_raw(&line)?;
    }
    let updates = w.finish()?;
    let meta = meta.clone();
    Ok(vec![Session {
        id: meta.id,
        title: meta.title,
        harness: meta.harness,
        cwd: meta.cwd,
        updated_at: meta.updated_at,
        updates,
        native,
        meta: meta.meta,
    }])
}

/// The body a session's update stream derives from: its native transcript, as the converter
/// named by `native.harness` finds it in the session ([`crate::Harness::transcript`]: a
/// function of the id, the native files and `_meta`), so the stream is compressed against the
/// same dictionary as when that converter read it and a directory written from a bundle packs
/// back to that bundle. `None` for a harness this build does not have.
fn transcript(id: &SessionId, native: &Native, meta: Option<&Meta>) -> Option<Descriptor> {
    crate::harness(native.harness.as_str())?.transcript(id, native, meta)
}

fn read_skills(
    dir: &Path,
    skills_dir: &Path,
    sink: &dyn BlobSink,
) -> Result<Vec<Skill>, ConvertError> {
    let index_path = dir.join(SKILLS_INDEX);
    let mut index: BTreeMap<String, SkillIndex> = if exists(&index_path)? {
        read_json(&index_path)?
    } else {
        BTreeMap::new()
    };
    let mut skills = Vec::new();
    let mut names: Vec<_> = fs::read_dir(skills_dir)
        .map_err(ConvertError::io(skills_dir))?
        .collect::<Result<_, _>>()
        .map_err(ConvertError::io(skills_dir))?;
    names.sort_by_key(|e| e.file_name());
    for entry in names {
        let path = entry.path();
        let ft = entry.file_type().map_err(ConvertError::io(&path))?;
        if !ft.is_dir() {
            return Err(ConvertError::invalid(
                &path,
                "skills/ holds one folder per skill; this is not a folder",
            ));
        }
        let raw = entry.file_name();
        let name = raw
            .to_str()
            .ok_or_else(|| ConvertError::invalid(&path, "folder name is not UTF-8"))?;
        let name = SkillName::new(name).map_err(|e| ConvertError::invalid(&path, e.to_string()))?;
        let mut files = Vec::new();
        for (rel, p, executable) in files_under(&path)? {
            files.push(FileEntry {
                path: rel,
                executable,
                content: put_file(sink, &p)?,
            });
        }
        let meta = index.remove(name.as_str()).and_then(|i| i.meta);
        skills.push(Skill { name, files, meta });
    }
    if let Some(stray) = index.keys().next() {
        return Err(ConvertError::invalid(
            &index_path,
            format!("names skill {stray:?}, which has no folder under skills/"),
        ));
    }
    Ok(skills)
}

fn read_memory(
    index_path: &Path,
    memory_dir: &Path,
    sink: &dyn BlobSink,
) -> Result<Vec<MemoryNote>, ConvertError> {
    let index: Vec<NoteIndex> = if exists(index_path)? {
        read_json(index_path)?
    } else {
        Vec::new()
    };
    let on_disk: BTreeMap<String, PathBuf> = if exists(memory_dir)? {
        files_under(memory_dir)?
            .into_iter()
            .map(|(rel, p, _)| (rel.as_str().to_owned(), p))
            .collect()
    } else {
        BTreeMap::new()
    };
    let mut listed = BTreeSet::new();
    let mut notes = Vec::new();
    for n in index {
        listed.insert(n.path.as_str().to_owned());
        let file = on_disk.get(n.path.as_str());
        let body = match (n.deleted, file) {
            (true, None) => NoteBody::Deleted,
            (true, Some(p)) => {
                return Err(ConvertError::invalid(
                    index_path,
                    format!(
                        "note {} is marked deleted but {} exists; remove one of them",
                        n.path,
                        p.display()
                    ),
                ));
            }
            (false, Some(p)) => NoteBody::Text(put_text(sink, p)?),
            (false, None) => {
                return Err(ConvertError::invalid(
                    index_path,
                    format!(
                        "note {} is listed but memory/{} does not exist (mark it \"deleted\": true to keep a tombstone)",
                        n.path, n.path
                    ),
                ));
            }
        };
        notes.push(MemoryNote {
            path: n.path,
            origin: n.origin,
            body,
        });
    }
    // Notes added by hand without an index entry are carried with no origin.
    for (rel, p) in &on_disk {
        if !listed.contains(rel) {
            notes.push(MemoryNote {
                path: RelPath::new(rel).expect("validated by files_under"),
                origin: Origin::default(),
                body: NoteBody::Text(put_text(sink, p)?),
            });
        }
    }
    Ok(notes)
}

fn put_text(sink: &dyn BlobSink, path: &Path) -> Result<asp_format::Descriptor, ConvertError> {
    regular_file(path)?;
    let bytes = fs::read(path).map_err(ConvertError::io(path))?;
    if std::str::from_utf8(&bytes).is_err() {
        return Err(ConvertError::invalid(
            path,
            "a memory note must be UTF-8 text",
        ));
    }
    Ok(sink.put(&bytes)?)
}

/// What [`write()`] wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DirWritten {
    pub files: u64,
    pub bytes: u64,
    /// With --force, when the old state directory's files could not all be removed once the
    /// new one was in place: what is left, and where.
    pub leftover: Option<String>,
}

/// Writes `state` into `dir` as plain files. `dir` must be missing or empty, unless `force`:
/// then a state directory already there (one holding nothing but [`ENTRIES`]) is replaced as a
/// whole. The new one is written beside it and exchanged with it, so what was there stays
/// intact until the new one is complete, and afterwards nothing of the old one is left to mix
/// with it: merging file by file kept an earlier unpack's sessions, skills and notes, which
/// `asp-pack --from-dir` then packed as if the bundle had them.
pub fn write(
    dir: &Path,
    state: &State,
    blobs: &dyn BlobSource,
    force: bool,
    progress: &dyn Progress,
) -> Result<DirWritten, ConvertError> {
    let mut replacing = false;
    if exists(dir)? {
        if !dir.is_dir() {
            return Err(ConvertError::invalid(dir, "exists and is not a directory"));
        }
        let mut entries = fs::read_dir(dir).map_err(ConvertError::io(dir))?;
        if let Some(first) = entries.next() {
            if !force {
                return Err(ConvertError::invalid(
                    dir,
                    "exists and is not empty (use --force to replace the state directory there)",
                ));
            }
            for entry in std::iter::once(first).chain(entries) {
                let name = entry.map_err(ConvertError::io(dir))?.file_name();
                if !name.to_str().is_some_and(|n| ENTRIES.contains(&n)) {
                    return Err(ConvertError::invalid(
                        dir,
                        format!(
                            "holds {:?}, which is not part of a state directory: --force replaces \
                             only a directory asp-unpack --to-dir wrote; give a new or empty one",
                            name.to_string_lossy()
                        ),
                    ));
                }
            }
            replacing = true;
        }
    }
    if !replacing {
        return write_missing(dir, state, blobs, progress);
    }
    // Spelled out (`.`, `..`, `x/..` name a folder whose parent and name they do not say),
    // since the new folder is made beside it. (`dir` is no link: `exists` refused one.)
    let dir = &fs::canonicalize(dir).map_err(ConvertError::io(dir))?;
    let (Some(parent), Some(name)) = (dir.parent(), dir.file_name()) else {
        return Err(ConvertError::invalid(
            dir,
            "is the root of the file system, which --force does not replace",
        ));
    };
    if std::env::current_dir().is_ok_and(|cwd| cwd.starts_with(dir)) {
        // A shell there would be left in the old folder, deleted, and see nothing.
        return Err(ConvertError::invalid(
            dir,
            "is the current directory (or holds it): --force replaces the folder as a whole; \
             run the command from outside it",
        ));
    }
    let (staged, on_stop) = staged_beside(parent, name)?;
    let written = write_new(staged.path(), state, blobs, progress)?;
    // `staged` goes when dropped: the new state if it could not be put in place, else the
    // old one (if `replace_dir` could not remove it).
    let leftover = on_stop
        .settle(|| crate::kit::fsops::replace_dir(staged.path(), dir))
        .map_err(ConvertError::write(dir))?;
    if leftover.is_some() {
        // What could not be removed is the user's to see, not a temporary folder's to drop.
        let _ = staged.keep();
    }
    Ok(DirWritten {
        leftover,
        ..written
    })
}

/// Writes `state` into `dir`, missing or an empty directory. A missing one is written beside
/// under a temporary name and renamed into place once complete, so a write that is stopped or
/// fails leaves no half state directory there, which a second try would refuse as not empty
/// and `asp-pack --from-dir` would read as the bundle's (new-user trial helper-137, 1); the
/// temporary one goes with the process ([`asp_format::on_stop`]).
fn write_missing(
    dir: &Path,
    state: &State,
    blobs: &dyn BlobSource,
    progress: &dyn Progress,
) -> Result<DirWritten, ConvertError> {
    let name = dir.file_name().filter(|_| !exists(dir).unwrap_or(true));
    let Some(name) = name else {
        // There and empty (or named as `x/..`): written where it is.
        fs::create_dir_all(dir).map_err(ConvertError::io(dir))?;
        return write_new(dir, state, blobs, progress);
    };
    let parent = match dir.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    fs::create_dir_all(parent).map_err(ConvertError::write(parent))?;
    let (staged, on_stop) = staged_beside(parent, name)?;
    let written = write_new(staged.path(), state, blobs, progress)?;
    // Onto a missing name, or a folder made empty meanwhile; not onto one that filled.
    on_stop.settle(|| fs::rename(staged.path(), dir)).map_err(|e| {
        ConvertError::invalid(
            dir,
            format!("was made by something else while the state was written ({e}); nothing was put there"),
        )
    })?;
    let _ = staged.keep();
    crate::kit::fsops::sync_dir(parent);
    Ok(written)
}

/// A new folder in `parent` that a state directory named `name` is written into before it is
/// put in place (`.<name>.asp-unpack-XXXXXX`), removed if the process is told to stop first.
fn staged_beside(
    parent: &Path,
    name: &std::ffi::OsStr,
) -> Result<(tempfile::TempDir, asp_format::on_stop::Guard), ConvertError> {
    let prefix = format!(".{}.asp-unpack-", name.to_string_lossy());
    asp_format::on_stop::make_registered(
        || tempfile::Builder::new().prefix(&prefix).tempdir_in(parent),
        |d| d.path(),
    )
    .map_err(ConvertError::write(parent))
}

/// Writes `state` into `dir`, an empty directory.
fn write_new(
    dir: &Path,
    state: &State,
    blobs: &dyn BlobSource,
    progress: &dyn Progress,
) -> Result<DirWritten, ConvertError> {
    let w = Writer::new(false);
    let mut out = DirWritten::default();
    let mut put =
        |path: &Path, reader: &mut dyn io::Read, executable: bool| -> Result<(), ConvertError> {
            let mut counting = CountingReader {
                inner: reader,
                n: 0,
            };
            if w.create_new_from(path, &mut counting, executable)? == Created::AlreadyExists {
                return Err(ConvertError::invalid(path, "already exists"));
            }
            out.files += 1;
            out.bytes += counting.n;
            progress.advance(counting.n);
            Ok(())
        };
    let json = |v: &dyn erased::Json| -> Vec<u8> {
        let mut b = v.pretty();
        b.push(b'\n');
        b
    };

    let total: u64 = state.descriptors().iter().map(|d| d.size).sum();
    progress.begin("writing files", Some(total));
    if let Some(sessions) = &state.sessions {
        let sdir = dir.join(SESSIONS);
        crate::kit::fsops::make_dirs(&sdir).map_err(ConvertError::io(&sdir))?;
        let mut folded = BTreeMap::new();
        for s in sessions {
            let stem = escape::escape(s.id.as_str());
            if let Some(other) = folded.insert(stem.to_lowercase(), s.id.clone()) {
                return Err(ConvertError::invalid(
                    &sdir,
                    format!(
                        "sessions {:?} and {:?} differ only in letter case, which this filesystem may not keep apart",
                        other.as_str(),
                        s.id.as_str()
                    ),
                ));
            }
            progress.item(s.id.as_str());
            let meta = SessionFile {
                id: s.id.clone(),
                title: s.title.clone(),
                harness: s.harness.clone(),
                cwd: s.cwd.clone(),
                updated_at: s.updated_at.clone(),
                native: s.native.as_ref().map(|n| NativeIndex {
                    harness: n.harness.clone(),
                    files: n
                        .files
                        .iter()
                        .map(|f| NativeFileIndex {
                            path: f.path.clone(),
                            executable: f.executable,
                        })
                        .collect(),
                }),
                meta: s.meta.clone(),
            };
            put(
                &sdir.join(format!("{stem}.json")),
                &mut &json(&meta)[..],
                false,
            )?;
            put(
                &sdir.join(format!("{stem}.jsonl")),
                &mut blobs.open(&s.updates)?,
                false,
            )?;
            if let Some(n) = &s.native {
                let root = sdir.join(format!("{stem}.native"));
                for f in &n.files {
                    put(
                        &f.path.under(&root),
                        &mut blobs.open(&f.content)?,
                        f.executable,
                    )?;
                }
            }
        }
    }
    if let Some(i) = &state.instructions {
        put(&dir.join(AGENTS_MD), &mut blobs.open(&i.text)?, false)?;
    }
    if let Some(skills) = &state.skills {
        let root = dir.join(SKILLS);
        crate::kit::fsops::make_dirs(&root).map_err(ConvertError::io(&root))?;
        let mut index = BTreeMap::new();
        for s in skills {
            let sdir = root.join(s.name.as_str());
            crate::kit::fsops::make_dirs(&sdir).map_err(ConvertError::io(&sdir))?;
            for f in &s.files {
                put(
                    &f.path.under(&sdir),
                    &mut blobs.open(&f.content)?,
                    f.executable,
                )?;
            }
            if s.meta.is_some() {
                index.insert(
                    s.name.to_string(),
                    SkillIndex {
                        meta: s.meta.clone(),
                    },
                );
            }
        }
        if !index.is_empty() {
            put(&dir.join(SKILLS_INDEX), &mut &json(&index)[..], false)?;
        }
    }
    if let Some(tools) = &state.tools {
        put(&dir.join(TOOLS), &mut &json(tools)[..], false)?;
    }
    if let Some(notes) = &state.memory {
        let mdir = dir.join(MEMORY);
        crate::kit::fsops::make_dirs(&mdir).map_err(ConvertError::io(&mdir))?;
        let mut index = Vec::with_capacity(notes.len());
        for n in notes {
            if let NoteBody::Text(d) = n.body {
                put(&n.path.under(&mdir), &mut blobs.open(&d)?, false)?;
            }
            index.push(NoteIndex {
                path: n.path.clone(),
                origin: n.origin.clone(),
                deleted: n.body == NoteBody::Deleted,
            });
        }
        put(&dir.join(MEMORY_INDEX), &mut &json(&index)[..], false)?;
    }
    if let Some(settings) = &state.settings {
        put(&dir.join(SETTINGS), &mut &json(settings)[..], false)?;
    }
    progress.finish();
    Ok(out)
}

struct CountingReader<'a> {
    inner: &'a mut dyn io::Read,
    n: u64,
}

impl io::Read for CountingReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.n += n as u64;
        Ok(n)
    }
}

/// Object-safe pretty JSON, so one closure serialises the different index types.
mod erased {
    pub trait Json {
        fn pretty(&self) -> Vec<u8>;
    }
    impl<T: serde::Serialize> Json for T {
        fn pretty(&self) -> Vec<u8> {
            serde_json::to_vec_pretty(self).expect("index files serialise")
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use asp_format::blob::MemoryStore;
    use asp_format::progress::Quiet;

    #[test]
    fn a_symlink_in_a_state_directory_is_refused_not_followed() {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret"), "not yours\n").unwrap();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("settings.json"), "{}\n").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), dir.path().join("AGENTS.md"))
            .unwrap();
        let err = read(dir.path(), KindSet::ALL, &MemoryStore::new(), &Quiet).unwrap_err();
        assert!(
            err.to_string().contains("symbolic links are not followed"),
            "{err}"
        );

        let sessions = dir.path().join("sessions");
        std::fs::remove_file(dir.path().join("AGENTS.md")).unwrap();
        std::fs::create_dir(&sessions).unwrap();
        std::fs::write(sessions.join("s.json"), r#"{"id": "s", "title": ""}"#).unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret"), sessions.join("s.jsonl"))
            .unwrap();
        let err = read(dir.path(), KindSet::ALL, &MemoryStore::new(), &Quiet).unwrap_err();
        assert!(err.to_string().contains("s.jsonl"), "{err}");
    }
}
