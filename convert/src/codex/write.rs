//! Writing sessions into a Codex home, never losing or overwriting a thread.
//!
//! - A Codex session with its native rollout goes back byte for byte to the same path. When
//!   `--map-path` changed paths, the rollout was already rewritten (a compressed one is
//!   rewritten here and written plain, which Codex reads the same).
//! - Any other session is composed into a new rollout ([`super::compose`]).
//! - A thread id already in the home with the same content: "already there". With different
//!   content: the session is kept beside it as `<thread>~<harness>`, which for Codex means a
//!   new UUID (derived from `<id>~<harness>` and the digest of the content, so importing it
//!   again finds it), reported in the answer's session map.
//! - No id, file name or line depends on when the import runs: times come from the content
//!   (else from the id, else the epoch), so a second import of the same session finds the
//!   first one.
//! - Then the thread is named in `session_index.jsonl` and, where Codex keeps a
//!   `state_<N>.sqlite`, given a row in its `threads` table.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use asp_format::Digest;
use asp_format::blob::BlobSource;
use asp_format::state::Session;
use asp_format::update::UpdateLines;
use rusqlite::types::Value as Sql;
use serde_json::Value;

use super::NAME;
use super::compose::{self, Built, Defaults, Source};
use super::first_pass::{FirstPass, str_at};
use super::ids;
use super::index::SessionIndex;
use super::layout::Layout;
use super::rollout::{self, ARCHIVED_DIR, Kind, Lines, SESSIONS_DIR};
use super::settings::TurnSettings;
use super::state_db::{self, Insert, Row};
use super::time::{self, Nanos};
use crate::error::ConvertError;
use crate::kit::beside::{MAX_COPIES, holds_all_of, kept_beside, marked_title};
use crate::kit::conversation::Folder;
use crate::kit::fsops::{Created, Stamp, Writer};
use crate::kit::pathmap::PathMap;
use crate::kit::placement::SessionPlaced;
use crate::kit::report::{Diagnostics, Severity};

/// Facts for the thread index row.
#[derive(Debug, Clone, Default)]
struct Summary {
    id: String,
    path: PathBuf,
    created: Nanos,
    updated: Nanos,
    source: String,
    model_provider: String,
    cwd: String,
    title: String,
    first_prompt: String,
    settings: TurnSettings,
    cli_version: String,
    originator: String,
    thread_source: Option<String>,
    git: Option<Value>,
    archived: bool,
    paginated: bool,
    tokens_used: i64,
}

/// Writes sessions into one Codex home.
pub struct SessionWriter<'a> {
    paths: &'a Layout,
    writer: &'a Writer,
    blobs: &'a dyn BlobSource,
    diagnostics: &'a Diagnostics,
    path_map: &'a PathMap,
    defaults: Defaults,
    /// Rollouts in the home by thread id.
    existing: HashMap<String, Vec<PathBuf>>,
    index: SessionIndex,
    db: Option<PathBuf>,
}

impl std::fmt::Debug for SessionWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionWriter")
            .field("codex", &self.paths.codex)
            .field("db", &self.db)
            .finish_non_exhaustive()
    }
}

/// `jsonl` with each `turn_context` line's payload cut to its turn and directory: what is left
/// is the conversation, whatever model, effort, approval or sandbox each turn was recorded
/// with. A line that does not parse stays as it is.
fn without_turn_settings(jsonl: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(jsonl.len());
    for line in jsonl.split_inclusive(|&b| b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let cut = memchr::memmem::find(body, b"\"turn_context\"")
            .and_then(|_| serde_json::from_slice::<Value>(body).ok())
            .filter(|v| v["type"] == "turn_context")
            .map(|mut v| {
                if let Some(p) = v.get_mut("payload").and_then(Value::as_object_mut) {
                    p.retain(|k, _| k == "turn_id" || k == "cwd");
                }
                v.to_string()
            });
        match cut {
            Some(text) => out.extend_from_slice(text.as_bytes()),
            None => out.extend_from_slice(body),
        }
        if line.ends_with(b"\n") {
            out.push(b'\n');
        }
    }
    out
}

/// The thread's rollout bytes as JSONL (decompressed).
fn jsonl_of(path: &Path) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    rollout::decode_bytes(&bytes, path.extension().is_some_and(|e| e == "zst")).ok()
}

impl<'a> SessionWriter<'a> {
    pub fn new(
        paths: &'a Layout,
        writer: &'a Writer,
        blobs: &'a dyn BlobSource,
        diagnostics: &'a Diagnostics,
        path_map: &'a PathMap,
        defaults: Defaults,
    ) -> Result<Self, ConvertError> {
        let mut existing: HashMap<String, Vec<PathBuf>> = HashMap::new();
        let quiet = Diagnostics::new();
        for f in rollout::discover(&paths.codex, &quiet) {
            if let Some(id) = &f.name_id {
                existing.entry(id.clone()).or_default().push(f.path.clone());
            }
        }
        Ok(SessionWriter {
            paths,
            writer,
            blobs,
            diagnostics,
            path_map,
            defaults,
            existing,
            index: SessionIndex::load(&paths.codex, diagnostics)?,
            db: state_db::find(&paths.codex),
        })
    }

    /// Whether `bytes` (JSONL) are what the home holds for `id`: `Some(true)` the same, or a
    /// rollout that continues it (said); `Some(false)` a different version is there; `None`
    /// the id is free.
    ///
    /// A rollout composed from another harness's session (`composed`) is compared without the
    /// settings its `turn_context` lines record: they come from the session's options or, when
    /// it has none, from this home's `config.toml` at the time of writing, so the same
    /// conversation carried again after a setting changed is the same thread, not a copy.
    fn compare(&self, id: &str, bytes: &[u8], composed: bool) -> Compared {
        let Some(paths) = self.existing.get(id) else {
            return Compared::Free;
        };
        let mut continued = None;
        let mut behind = None;
        let carried = composed.then(|| without_turn_settings(bytes));
        for p in paths {
            let was = Stamp::of(p);
            let Some(have) = jsonl_of(p) else {
                continue;
            };
            if have == bytes {
                return Compared::Same;
            }
            // The carried rollout continues this one, byte for byte (the thread went on
            // elsewhere): a plain rollout is brought up to date, a compressed one left as it is.
            if let Some(was) = was
                && p.extension().is_some_and(|e| e == "jsonl")
                && !have.is_empty()
                && holds_all_of(bytes, &have)
            {
                behind.get_or_insert((p.clone(), was));
            }
            let have = match &carried {
                None => have,
                Some(_) => without_turn_settings(&have),
            };
            let carried = carried.as_deref().unwrap_or(bytes);
            if have == carried {
                self.diagnostics.note(
                    p,
                    None,
                    format!(
                        "thread {id}: the same conversation is here, its turns recorded with \
                         other settings; kept as it is"
                    ),
                );
                return Compared::Same;
            }
            // Codex appends to the rollout of a thread it resumes: one that starts with the
            // carried lines holds all of them.
            if holds_all_of(&have, carried) {
                continued.get_or_insert(p);
            }
        }
        let Some(p) = continued else {
            return match behind {
                Some((path, was)) => Compared::Behind { path, was },
                None => Compared::Different,
            };
        };
        self.diagnostics.note(
            p,
            None,
            format!(
                "thread {id}: the rollout here continues the one carried (it holds every line \
                 of it, and more after them); kept as it is"
            ),
        );
        Compared::Same
    }

    /// Replaces the rollout at `path` (which was `was`) with `bytes`, which continue it
    /// ([`Compared::Behind`]), and says so.
    fn bring_up_to_date(
        &self,
        id: &str,
        path: &Path,
        was: Stamp,
        bytes: &[u8],
    ) -> Result<SessionPlaced, ConvertError> {
        if !self.writer.bring_up_to_date(path, &mut &bytes[..], was)? {
            return Ok(SessionPlaced::refused(format!(
                "thread {id}: {} changed while it was brought up to date; kept as it is, the \
                 carried version was not written (carry it again)",
                path.display()
            )));
        }
        self.diagnostics.note(
            path,
            None,
            format!(
                "thread {id}: the carried rollout continues the one here (it holds every line of \
                 it, and more after them); {}brought up to date",
                if self.writer.is_dry_run() {
                    "would be "
                } else {
                    ""
                }
            ),
        );
        Ok(SessionPlaced::updated(id))
    }

    pub fn write(&mut self, session: &Session) -> Result<SessionPlaced, ConvertError> {
        if let Some(native) = session
            .native
            .as_ref()
            .filter(|n| n.harness.as_str() == NAME)
            .and_then(|n| {
                n.files.iter().find(|f| {
                    let p = f.path.as_str();
                    (p.starts_with(".codex/sessions/")
                        || p.starts_with(".codex/archived_sessions/"))
                        && rollout::id_from_name(p.rsplit('/').next().unwrap_or("")).is_some()
                })
            })
        {
            return self.restore(session, native);
        }
        self.foreign(session)
    }

    /// A Codex session with its native rollout.
    fn restore(
        &mut self,
        session: &Session,
        native: &asp_format::state::FileEntry,
    ) -> Result<SessionPlaced, ConvertError> {
        let stored_rel = native
            .path
            .as_str()
            .trim_start_matches(".codex/")
            .to_owned();
        let (dir, file) = stored_rel
            .rsplit_once('/')
            .unwrap_or(("", stored_rel.as_str()));
        let name_id = rollout::id_from_name(file).unwrap_or_default();
        let raw = self.blobs.read_all(&native.content)?;
        let compressed = file.ends_with(".zst");
        let mut jsonl = rollout::decode_bytes(&raw, compressed).map_err(|e| {
            ConvertError::invalid(&stored_rel, format!("the rollout is not valid zstd: {e}"))
        })?;
        // `--map-path` rewrote `.jsonl` files already; a compressed one is rewritten here and
        // written plain (Codex reads a plain file in preference to its `.zst` sibling).
        let rewritten = compressed && !self.path_map.is_empty();
        if rewritten {
            jsonl = map_lines(self.path_map, &jsonl);
        }
        let diagnostics = self.diagnostics;
        let survey = |text: &[u8], path: &Path| {
            FirstPass::of_lines(
                Lines::from_reader(Box::new(std::io::Cursor::new(text.to_vec())), path, false),
                &[],
                diagnostics,
            )
        };
        // What a copy's id is derived from: never the time of the import.
        let digest = Digest::of(&jsonl);
        let mut copy_ms = ids::v7_millis(&name_id);
        for attempt in 0..MAX_COPIES {
            let (id, rel, bytes, text) = if attempt == 0 {
                let rel = if rewritten {
                    stored_rel.trim_end_matches(".zst").to_owned()
                } else {
                    stored_rel.clone()
                };
                let bytes = if rewritten {
                    jsonl.clone()
                } else {
                    raw.clone()
                };
                (name_id.clone(), rel, bytes, jsonl.clone())
            } else {
                let ms = *copy_ms.get_or_insert_with(|| {
                    survey(&jsonl, Path::new(&stored_rel))
                        .first_time
                        .map_or(0, time::millis)
                });
                let id = copy_id(&name_id, NAME, &digest, ms, attempt);
                let text = with_thread_id(&jsonl, &name_id, &id);
                let plain = file.trim_end_matches(".zst");
                let stem = plain
                    .strip_suffix(&format!("{name_id}.jsonl"))
                    .unwrap_or("rollout-");
                let rel = format!("{dir}/{stem}{id}.jsonl");
                (id, rel, text.clone(), text)
            };
            match self.compare(&id, &text, false) {
                Compared::Same => return Ok(SessionPlaced::already_there(id)),
                Compared::Behind { path, was } => {
                    return self.bring_up_to_date(&id, &path, was, &text);
                }
                Compared::Different => continue,
                Compared::Free => {}
            }
            let path = self.paths.codex.join(&rel);
            if self.writer.create_new(&path, &bytes, false)? == Created::AlreadyExists {
                return Ok(SessionPlaced::refused(format!(
                    "{} is in the way (a file Codex does not name like a rollout); left as it is",
                    path.display()
                )));
            }
            self.existing
                .entry(id.clone())
                .or_default()
                .push(path.clone());
            if id != name_id {
                self.diagnostics.note(
                    &path,
                    None,
                    format!("a different version of thread {name_id} is already in this Codex home; this one was kept beside it as thread {id}"),
                );
            }
            let survey = survey(&text, &path);
            let codex_meta = session.meta.as_ref().and_then(|m| m.get("codex"));
            let named = codex_meta
                .and_then(|c| c.get("titleSource"))
                .and_then(Value::as_str)
                .is_some_and(|s| matches!(s, "session_index" | "thread_name_updated" | "state_db"));
            let titled_at = codex_meta
                .and_then(|c| c.get("titleAt"))
                .and_then(Value::as_str)
                .and_then(time::parse);
            let mut summary =
                summary_of(&id, &path, &survey, session, rel.starts_with(ARCHIVED_DIR));
            // A copy kept beside is named with the marker (session_index.jsonl and the state
            // DB), so `codex resume` tells the two apart.
            let naming = if id != name_id {
                summary.title = marked_title(&summary.title, NAME);
                Naming::AtLastTurn
            } else if !named {
                Naming::Not
            } else if let Some(at) = titled_at {
                Naming::At(at)
            } else {
                Naming::AtLastTurn
            };
            self.register(&summary, naming)?;
            return Ok(if id == name_id {
                SessionPlaced::new(id)
            } else {
                SessionPlaced::beside(id)
            });
        }
        Ok(SessionPlaced::refused(format!(
            "thread {name_id}: {MAX_COPIES} different versions of it are already in this Codex home; not written"
        )))
    }

    /// A session from another harness (or a Codex session without its rollout).
    fn foreign(&mut self, session: &Session) -> Result<SessionPlaced, ConvertError> {
        let mut folder = Folder::new();
        let mut lines = UpdateLines::open(self.blobs, &session.updates)?;
        loop {
            match lines.next_line() {
                Ok(None) => break,
                Ok(Some((n, line))) => match serde_json::from_str::<Value>(line) {
                    Ok(mut v) => {
                        if let Some(u) = v.get_mut("update") {
                            folder.push(u.take());
                        }
                    }
                    Err(e) => self.diagnostics.in_session(
                        Severity::Note,
                        session.id.as_str(),
                        Some(n),
                        format!(
                            "update line is not JSON ({}); skipped",
                            crate::kit::report::why_line_is_not_json(&e)
                        ),
                    ),
                },
                Err((n, e)) => {
                    return Err(ConvertError::carried(
                        format!("session {}: update line {n}", session.id),
                        e,
                    ));
                }
            }
        }
        let items = folder.finish();
        let harness = session
            .harness
            .as_ref()
            .map_or("asp", |h| h.as_str())
            .to_owned();
        let sid = session.id.as_str();
        // The thread's time names its file and (for a derived id) leads its id, so it must come
        // from the session itself: its first recorded time, else `updatedAt`, else the time in a
        // UUIDv7 id, else the epoch. The time of the import would make every import a new thread.
        let fallback = session
            .updated_at
            .as_deref()
            .and_then(time::parse)
            .or_else(|| ids::v7_millis(sid).map(time::from_millis));
        let start = match compose::first_time(&items).or(fallback) {
            Some(t) => t,
            None => {
                self.diagnostics.in_session(
                    Severity::Note,
                    sid,
                    None,
                    "the session carries no time; it was dated 1970-01-01 (the same every time, so importing it again finds it)",
                );
                0
            }
        };
        let cwd = session.cwd.clone().unwrap_or_else(|| {
            crate::harness::absolute(&self.paths.home)
                .display()
                .to_string()
        });
        let base = if ids::is_uuid(sid) {
            sid.to_owned()
        } else {
            ids::derive_v7(
                time::millis(start),
                format!("asp\0{harness}\0{sid}").as_bytes(),
            )
        };
        let copy_ms = ids::v7_millis(&base).unwrap_or_else(|| time::millis(start));
        let mut id = base.clone();
        let mut attempt = 0;
        let built = loop {
            let built = compose::build(
                &Source {
                    thread_id: &id,
                    cwd: &cwd,
                    harness: &harness,
                    start,
                    defaults: &self.defaults,
                    git_branch: crate::kit::git_branch::source_branch(session.meta.as_ref()),
                },
                &items,
            );
            match self.compare(&id, &built.bytes, true) {
                Compared::Same => return Ok(SessionPlaced::already_there(id)),
                Compared::Behind { path, was } => {
                    return self.bring_up_to_date(&id, &path, was, &built.bytes);
                }
                Compared::Free => break built,
                Compared::Different => {
                    attempt += 1;
                    if attempt >= MAX_COPIES {
                        return Ok(SessionPlaced::refused(format!(
                            "session {sid}: {MAX_COPIES} different versions of it are already in this Codex home; not written"
                        )));
                    }
                    id = copy_id(&base, &harness, &session.updates.digest, copy_ms, attempt);
                }
            }
        };
        if !built.dropped.is_empty() {
            self.diagnostics.in_session(
                Severity::LeftOut,
                sid,
                None,
                format!(
                    "{} updates have no place in a Codex rollout and were left out",
                    built.dropped.join(", ")
                ),
            );
        }
        if !built.not_run.is_empty() {
            let s = &built.settings;
            self.diagnostics.in_session(
                Severity::LeftOut,
                sid,
                None,
                format!(
                    "its {} {} not for Codex; the thread runs with model {}, approval {}, \
                     sandbox {} (this home's settings, else Codex's defaults)",
                    built.not_run.join(", "),
                    if built.not_run.len() == 1 {
                        "is"
                    } else {
                        "are"
                    },
                    s.model.as_deref().unwrap_or(compose::DEFAULT_MODEL),
                    s.approval.as_deref().unwrap_or("on-request"),
                    s.sandbox.as_deref().unwrap_or("workspace-write"),
                ),
            );
        }
        if built.user_turns == 0 {
            self.diagnostics.in_session(
                Severity::Note,
                sid,
                None,
                "the session has no user message; Codex lists only threads that start with one",
            );
        }
        // A thread archived where it was read goes into the archive, as Codex's own archiving
        // moves it: flat, under the same file name.
        let archived = crate::kit::archive::archived(session).is_some();
        let rel = if archived {
            format!(
                "{ARCHIVED_DIR}/rollout-{}-{id}.jsonl",
                time::file_stamp(start)
            )
        } else {
            format!(
                "{SESSIONS_DIR}/{}/rollout-{}-{id}.jsonl",
                time::date_dirs(start),
                time::file_stamp(start)
            )
        };
        let path = self.paths.codex.join(&rel);
        if self.writer.create_new(&path, &built.bytes, false)? == Created::AlreadyExists {
            return Ok(SessionPlaced::refused(format!(
                "{} is in the way; left as it is",
                path.display()
            )));
        }
        self.existing
            .entry(id.clone())
            .or_default()
            .push(path.clone());
        if attempt > 0 {
            self.diagnostics.note(
                &path,
                None,
                format!("a different version of thread {base} is already in this Codex home; this one was kept beside it as thread {id}"),
            );
        }
        let mut summary = foreign_summary(&id, &path, &built, session, &cwd);
        summary.archived = archived;
        if attempt > 0 {
            // Codex lists an untitled thread by its first prompt: so is the copy, marked.
            let title = match summary.title.trim() {
                "" => super::read::title_from_prompt(
                    summary.first_prompt.lines().next().unwrap_or_default(),
                ),
                t => t.to_owned(),
            };
            summary.title = marked_title(&title, &harness);
        }
        // A title that was only the first prompt is not named: Codex lists an unnamed thread
        // by that prompt itself, and a naming would stand for one the user gave.
        let naming = if attempt == 0
            && crate::kit::title::origin(session) == Some(crate::kit::title::TitleOrigin::Prompt)
        {
            Naming::Not
        } else {
            Naming::AtLastTurn
        };
        self.register(&summary, naming)?;
        Ok(if attempt > 0 {
            SessionPlaced::beside(id)
        } else {
            SessionPlaced::new(id)
        })
    }

    /// Names the thread as `naming` says and adds its index row.
    fn register(&mut self, s: &Summary, naming: Naming) -> Result<(), ConvertError> {
        let at = match naming {
            Naming::Not => None,
            Naming::AtLastTurn => Some(s.updated),
            Naming::At(at) => Some(at),
        };
        if let Some(at) = at {
            self.index.name_thread(self.writer, &s.id, &s.title, at)?;
        }
        let Some(db) = self.db.clone() else {
            return Ok(());
        };
        match state_db::insert(self.writer, &db, &row(s)) {
            Ok(Insert::Added | Insert::AlreadyThere) => {}
            Ok(Insert::NoTable) => self.diagnostics.note(
                &db,
                None,
                "has no `threads` table; no index row was added (Codex finds legacy rollouts without one)",
            ),
            Err(e) => self.diagnostics.note(
                &db,
                None,
                format!("no index row was added for thread {} ({e}); Codex adds one itself when it lists threads", s.id),
            ),
        }
        Ok(())
    }
}

/// How a rollout carried compares with what the home holds under its id.
#[derive(Debug)]
enum Compared {
    /// Nothing is there under that id.
    Free,
    /// The same rollout is there, or one that continues it (resumed here since).
    Same,
    /// The plain rollout at `path` (which was `was`) is the start of the carried one: the
    /// thread went on elsewhere.
    Behind { path: PathBuf, was: Stamp },
    /// A different version is there.
    Different,
}

/// Whether a written thread is named in `session_index.jsonl`, and with which time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Naming {
    /// Its title is its first prompt, as Codex shows an unnamed thread.
    Not,
    /// At its last turn: a built thread, a copy kept beside another version, or a thread named
    /// where the state does not say when.
    AtLastTurn,
    /// At the time the index named it so (`_meta.codex.titleAt`): a naming made after the last
    /// turn keeps its time.
    At(Nanos),
}

/// The id of a copy of thread `id` kept beside a different version: a UUIDv7 with the time
/// `millis` (the thread's own), derived from the id, the harness the copy came from and the
/// digest of its content. The same content always gets the same copy id, so importing it again
/// finds it, and two different versions get two ids whatever order they come in. `attempt`
/// (from 1) only moves past an id that is somehow taken by yet other content.
fn copy_id(id: &str, harness: &str, content: &Digest, millis: i64, attempt: u32) -> String {
    let name = kept_beside(id, "", Some(harness), attempt).name;
    ids::derive_v7(millis, format!("{name}\0{}", content.hex()).as_bytes())
}

/// Keys whose value, wherever it is in a rollout line, names the line's own thread
/// (`session_meta.session_id`, the `thread_id` of events and `token_usage_record`s, ...).
const THREAD_ID_KEYS: &[&str] = &[
    "thread_id",
    "session_id",
    "conversation_id",
    "threadId",
    "sessionId",
    "conversationId",
];

/// Replaces `old` by `new` in `v` where it is the value of a thread-id key; `meta` also
/// replaces the session meta's own `id`. Says whether anything changed.
fn replace_thread_id(v: &mut Value, old: &str, new: &str, meta: bool) -> bool {
    let mut changed = false;
    match v {
        Value::Object(o) => {
            for (k, x) in o.iter_mut() {
                let is_id = THREAD_ID_KEYS.contains(&k.as_str()) || (meta && k == "id");
                if is_id && x.as_str() == Some(old) {
                    *x = Value::String(new.to_owned());
                    changed = true;
                } else {
                    changed |= replace_thread_id(x, old, new, false);
                }
            }
        }
        Value::Array(a) => {
            for x in a {
                changed |= replace_thread_id(x, old, new, false);
            }
        }
        _ => {}
    }
    changed
}

/// The rollout `jsonl` of thread `old` as the rollout of thread `new`: the id is replaced
/// only where it is a value that names the thread (the session meta's `id`, and
/// [`THREAD_ID_KEYS`]), never inside text (a message quoting the id keeps it). Lines that do
/// not hold the id, lines that are not JSON and bytes that are not UTF-8 stay byte for byte.
fn with_thread_id(jsonl: &[u8], old: &str, new: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(jsonl.len());
    let mut first = true;
    for line in jsonl.split_inclusive(|b| *b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        let is_first = first;
        first = first && body.trim_ascii().is_empty();
        let holds_id = !old.is_empty() && body.windows(old.len()).any(|w| w == old.as_bytes());
        if holds_id && let Ok(mut v) = serde_json::from_slice::<Value>(body) {
            let meta = rollout::normalise(0, v.clone(), is_first)
                .is_some_and(|r| r.kind == Kind::SessionMeta);
            let envelope =
                v.get("type").is_some_and(Value::is_string) && v.get("payload").is_some();
            let changed = if envelope {
                // `{timestamp, type, payload}`: the meta's own id is `payload.id`.
                let own = meta && v["payload"].get("id").and_then(Value::as_str) == Some(old);
                if own {
                    v["payload"]["id"] = Value::String(new.to_owned());
                }
                replace_thread_id(&mut v, old, new, false) | own
            } else {
                // The transitional and early flat forms keep the meta at the top level.
                replace_thread_id(&mut v, old, new, meta)
            };
            if changed {
                out.extend_from_slice(v.to_string().as_bytes());
                out.extend_from_slice(&line[body.len()..]);
                continue;
            }
        }
        out.extend_from_slice(line);
    }
    out
}

/// `--map-path` over a rollout's lines. Lines that are not UTF-8 (or not JSON) stay as they are.
fn map_lines(map: &PathMap, jsonl: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(jsonl.len());
    for line in jsonl.split_inclusive(|b| *b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        match std::str::from_utf8(body) {
            Ok(text) => {
                out.extend_from_slice(map.map_json_line(text).as_bytes());
                out.extend_from_slice(&line[body.len()..]);
            }
            Err(_) => out.extend_from_slice(line),
        }
    }
    out
}

fn summary_of(
    id: &str,
    path: &Path,
    survey: &FirstPass,
    session: &Session,
    archived: bool,
) -> Summary {
    let meta = survey.meta.clone().unwrap_or(Value::Null);
    let tc = survey.last_turn_context.clone().unwrap_or(Value::Null);
    let source = match meta.get("source") {
        Some(Value::String(s)) => s.clone(),
        Some(v) if !v.is_null() => v.to_string(),
        _ => "cli".to_owned(),
    };
    // The index row's times: the rollout's own, else the id's (an index row is no identity,
    // but it should not claim the thread started at the import either).
    let created = survey
        .first_time
        .or_else(|| ids::v7_millis(id).map(time::from_millis))
        .unwrap_or_else(time::now);
    Summary {
        id: id.to_owned(),
        path: path.to_path_buf(),
        created,
        updated: survey.last_time.unwrap_or(created),
        source,
        model_provider: str_at(&meta, "/model_provider").unwrap_or_else(|| "openai".into()),
        cwd: session
            .cwd
            .clone()
            .or_else(|| survey.cwd_hint.clone())
            .unwrap_or_default(),
        title: session.title.clone(),
        first_prompt: survey.first_user_text.clone().unwrap_or_default(),
        settings: TurnSettings::of_turn_context(&tc),
        cli_version: str_at(&meta, "/cli_version").unwrap_or_default(),
        originator: str_at(&meta, "/originator").unwrap_or_default(),
        thread_source: str_at(&meta, "/thread_source"),
        git: meta.get("git").cloned(),
        archived,
        paginated: str_at(&meta, "/history_mode").as_deref() == Some("paginated"),
        tokens_used: survey.tokens_used.unwrap_or(0),
    }
}

fn foreign_summary(id: &str, path: &Path, built: &Built, session: &Session, cwd: &str) -> Summary {
    Summary {
        id: id.to_owned(),
        path: path.to_path_buf(),
        created: built.start,
        updated: built.end,
        source: "cli".into(),
        model_provider: built.model_provider.clone(),
        cwd: cwd.to_owned(),
        title: session.title.clone(),
        first_prompt: built.first_prompt.clone().unwrap_or_default(),
        settings: built.settings.clone(),
        cli_version: compose::FORMAT_VERSION.into(),
        originator: compose::ORIGINATOR.into(),
        thread_source: Some("user".into()),
        git: crate::kit::git_branch::source_branch(session.meta.as_ref())
            .map(|b| serde_json::json!({"branch": b})),
        archived: false,
        paginated: false,
        tokens_used: 0,
    }
}

/// The `threads` row of a thread, with the values Codex itself derives (observed rows, spec
/// §9.3). `preview` must not be empty or the listing indexes skip the row.
fn row(s: &Summary) -> Row {
    let mut r = Row::default();
    let text = |v: &str| Sql::Text(v.to_owned());
    let opt = |v: Option<&str>| v.map_or(Sql::Null, |v| Sql::Text(v.to_owned()));
    let preview = if s.first_prompt.is_empty() {
        s.title.clone()
    } else {
        s.first_prompt.clone()
    };
    let sandbox = s.settings.sandbox.as_deref().unwrap_or("workspace-write");
    // 0.142+ records the permission profile; full access is `{"type":"disabled"}` there.
    let sandbox_json = if sandbox == "danger-full-access" {
        r#"{"type":"disabled"}"#.to_owned()
    } else {
        compose::sandbox_policy(sandbox).to_string()
    };
    r.set("id", text(&s.id));
    // Codex opens the thread from any directory: the path must be absolute (spec §12).
    r.set(
        "rollout_path",
        text(&crate::harness::absolute(&s.path).display().to_string()),
    );
    r.set("created_at", time::secs(s.created));
    r.set("updated_at", time::secs(s.updated));
    r.set("created_at_ms", time::millis(s.created));
    r.set("updated_at_ms", time::millis(s.updated));
    r.set("recency_at", time::secs(s.updated));
    r.set("recency_at_ms", time::millis(s.updated));
    r.set("source", text(&s.source));
    r.set("model_provider", text(&s.model_provider));
    r.set("cwd", text(&s.cwd));
    r.set("title", text(&s.title));
    r.set("sandbox_policy", text(&sandbox_json));
    r.set(
        "approval_mode",
        text(s.settings.approval.as_deref().unwrap_or("on-request")),
    );
    r.set("tokens_used", s.tokens_used);
    r.set("has_user_event", 0i64);
    r.set("archived", i64::from(s.archived));
    if s.archived {
        r.set("archived_at", time::secs(s.updated));
    }
    r.set(
        "git_sha",
        opt(s
            .git
            .as_ref()
            .and_then(|g| g.get("commit_hash"))
            .and_then(Value::as_str)),
    );
    r.set(
        "git_branch",
        opt(s
            .git
            .as_ref()
            .and_then(|g| g.get("branch"))
            .and_then(Value::as_str)),
    );
    r.set(
        "git_origin_url",
        opt(s
            .git
            .as_ref()
            .and_then(|g| g.get("repository_url"))
            .and_then(Value::as_str)),
    );
    r.set("cli_version", text(&s.cli_version));
    r.set("first_user_message", text(&s.first_prompt));
    r.set("preview", text(&preview));
    r.set("memory_mode", text("enabled"));
    r.set("model", opt(s.settings.model.as_deref()));
    r.set("reasoning_effort", opt(s.settings.effort.as_deref()));
    r.set("thread_source", opt(s.thread_source.as_deref()));
    r.set(
        "history_mode",
        text(if s.paginated { "paginated" } else { "legacy" }),
    );
    r.set("is_pinned", 0i64);
    r.set(
        "originator",
        opt((!s.originator.is_empty()).then_some(s.originator.as_str())),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    const OLD: &str = "01a1f83a-cfc8-7f41-a357-d22735d28371";
    const NEW: &str = "01a1f83a-cfc8-7aaa-8aaa-aaaaaaaaaaaa";

    #[test]
    fn a_copy_names_its_own_thread_only_where_the_id_is_a_value() {
        let meta = format!(
            r#"{{"timestamp":"t","type":"session_meta","payload":{{"id":"{OLD}","session_id":"{OLD}","forked_from_id":"x","cwd":"/p"}}}}"#
        );
        let said = format!(
            r#"{{"timestamp":"t","type":"response_item","payload":{{"type":"message","role":"user","content":[{{"type":"input_text","text":"resume {OLD} please"}}]}}}}"#
        );
        let event = format!(
            r#"{{"timestamp":"t","type":"event_msg","payload":{{"type":"thread_name_updated","thread_id":"{OLD}","thread_name":"n"}}}}"#
        );
        let mut jsonl = Vec::new();
        for l in [&meta, &said, &event] {
            jsonl.extend_from_slice(l.as_bytes());
            jsonl.push(b'\n');
        }
        // A line that is not JSON, with bytes that are not UTF-8, mentioning the id.
        let damaged = [b"{not json " as &[u8], OLD.as_bytes(), b" \xff\xfe\r\n"].concat();
        jsonl.extend_from_slice(&damaged);
        jsonl.extend_from_slice(event.as_bytes()); // cut off: no final newline

        let out = with_thread_id(&jsonl, OLD, NEW);
        let lines: Vec<&[u8]> = out.split_inclusive(|b| *b == b'\n').collect();
        assert_eq!(lines.len(), 5);
        let v: Value = serde_json::from_slice(lines[0]).unwrap();
        assert_eq!(v["payload"]["id"], NEW);
        assert_eq!(v["payload"]["session_id"], NEW);
        assert_eq!(v["payload"]["forked_from_id"], "x");
        assert_eq!(
            lines[1],
            format!("{said}\n").as_bytes(),
            "text that quotes the id is the user's words: kept byte for byte"
        );
        let v: Value = serde_json::from_slice(lines[2]).unwrap();
        assert_eq!(v["payload"]["thread_id"], NEW);
        assert_eq!(lines[3], damaged.as_slice(), "kept byte for byte");
        assert!(!lines[4].ends_with(b"\n"));
        let v: Value = serde_json::from_slice(lines[4]).unwrap();
        assert_eq!(v["payload"]["thread_id"], NEW);
    }

    #[test]
    fn the_early_flat_meta_is_renamed_too() {
        let jsonl = format!(
            "{{\"id\":\"{OLD}\",\"timestamp\":\"2025-06-12T10:15:30.000Z\",\"instructions\":null}}\n{{\"type\":\"message\",\"role\":\"user\",\"id\":\"{OLD}\",\"content\":[]}}\n"
        );
        let out = String::from_utf8(with_thread_id(jsonl.as_bytes(), OLD, NEW)).unwrap();
        let lines: Vec<Value> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(lines[0]["id"], NEW);
        assert_eq!(
            lines[1]["id"], OLD,
            "an item's `id` is the item's, not the thread's"
        );
    }

    #[test]
    fn copy_ids_come_from_the_id_the_harness_and_the_content_never_the_clock() {
        let a = Digest::of(b"one version");
        let b = Digest::of(b"another version");
        let id = "da41f528-2d0a-4f84-8acd-fe5d7087734b";
        let first = copy_id(id, "claude-code", &a, 1_795_269_800_300, 1);
        assert_eq!(first, copy_id(id, "claude-code", &a, 1_795_269_800_300, 1));
        assert_eq!(ids::v7_millis(&first), Some(1_795_269_800_300));
        assert_ne!(first, copy_id(id, "claude-code", &b, 1_795_269_800_300, 1));
        assert_ne!(first, copy_id(id, "gemini", &a, 1_795_269_800_300, 1));
        assert_ne!(first, copy_id(id, "claude-code", &a, 1_795_269_800_300, 2));
    }

    #[test]
    fn map_path_keeps_lines_that_are_not_utf8() {
        let mut map = PathMap::default();
        map.add("/home/dev=/home/me").unwrap();
        let jsonl = b"{\"cwd\":\"/home/dev/x\"}\n{\"cwd\":\"/home/dev/\xff\"}\n";
        let out = map_lines(&map, jsonl);
        assert_eq!(
            out,
            b"{\"cwd\":\"/home/me/x\"}\n{\"cwd\":\"/home/dev/\xff\"}\n".to_vec()
        );
    }
}
