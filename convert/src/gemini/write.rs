//! Writing the sessions of a state into a Gemini home.
//!
//! A session packed from Gemini carries its chat files (`Session::native`): they go back byte
//! for byte to the same place, `tmp/<dir>/chats/...`, where `<dir>` is the project's
//! directory in the target home (the same slug when it is free, so a restore into an empty
//! home gives the same paths). Any other session is converted ([`super::write`]) into a chat
//! in its project's directory, registering the project as the CLI would when it is new.
//!
//! Ids: Gemini session ids are UUIDs; a state id that is one is kept, any other gets a
//! name-based UUID ([`super::ids`]). When a different version of the session is already
//! there, the carried one is kept beside it as `<thread>~<harness>` (then `~<harness>~2`, ...),
//! again with a name-based UUID, and the import answer maps the old id to the new one. A
//! subagent session whose parent is carried too becomes a Gemini subagent chat under the
//! parent (`chats/<parent>/<id>.jsonl`, `kind: "subagent"`), linked from the parent's call by
//! `agentId`, as Gemini itself keeps them.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use asp_format::blob::BlobSource;
use asp_format::state::{Native, Session};
use asp_format::update::UpdateLines;
use serde_json::Value;

use crate::error::ConvertError;
use crate::harness::WriteContext;
use crate::kit::beside::{MAX_COPIES, kept_beside, marked_title};
use crate::kit::conversation::Folder;
use crate::kit::fsops::Writer;
use crate::kit::placement::{Placement, SessionPlaced, Tally};
use crate::kit::report::Severity;

use super::ids::{self, gemini_id, name_uuid};
use super::place::{self, Check, Planned};
use super::projects::{Projects, is_hash_dir, project_hash};
use super::{compose, time};

/// Where a written session ended up.
#[derive(Debug, Clone)]
struct Placed {
    gid: String,
    dir: String,
    last_updated_ms: Option<i64>,
    written: bool,
    /// Written beside a different version of it under a new id (not a new session).
    beside: bool,
}

/// The writer of one run.
pub struct Sessions<'a, 'b> {
    pub ctx: &'a WriteContext<'b>,
    pub gemini: &'a Path,
    pub projects: &'a mut Projects,
    pub writer: &'a Writer,
    pub tally: &'a mut Tally<'b>,
}

impl std::fmt::Debug for Sessions<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sessions")
            .field("gemini", &self.gemini)
            .finish_non_exhaustive()
    }
}

fn parent_of(s: &Session) -> Option<&str> {
    crate::kit::meta::parent_id(s.meta.as_ref())
}

fn gemini_native(s: &Session) -> Option<&Native> {
    s.native
        .as_ref()
        .filter(|n| n.harness.as_str() == super::NAME)
}

/// A native chat path taken apart: `.gemini/tmp/<dir>/chats/<rest>`.
struct NativePath<'p> {
    dir: &'p str,
    /// `[file]` for a main chat, `[parent, file]` for a subagent's.
    rest: Vec<&'p str>,
}

fn native_path(p: &str) -> Option<NativePath<'_>> {
    let parts: Vec<&str> = p.split('/').collect();
    match parts.as_slice() {
        [".gemini", "tmp", dir, "chats", rest @ ..] if matches!(rest.len(), 1 | 2) => {
            let file = rest[rest.len() - 1];
            let ok = if rest.len() == 1 {
                file.starts_with("session-")
                    && (file.ends_with(".jsonl") || file.ends_with(".json"))
            } else {
                file.ends_with(".jsonl") || file.ends_with(".json")
            };
            ok.then(|| NativePath {
                dir,
                rest: rest.to_vec(),
            })
        }
        _ => None,
    }
}

/// A chat file's bytes with its session id replaced (metadata records and `$set.sessionId`),
/// every other line kept byte for byte.
fn rename_in(bytes: &[u8], json_doc: bool, old: &str, new: &str) -> Vec<u8> {
    if json_doc && let Ok(Value::Object(mut doc)) = serde_json::from_slice::<Value>(bytes) {
        doc.insert("sessionId".into(), Value::String(new.to_owned()));
        let mut out = serde_json::to_vec_pretty(&doc).expect("serialises");
        if bytes.ends_with(b"\n") {
            out.push(b'\n');
        }
        return out;
    }
    let mut out = Vec::with_capacity(bytes.len());
    for line in bytes.split_inclusive(|b| *b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let changed = match serde_json::from_slice::<Value>(body) {
            Ok(Value::Object(mut rec)) => {
                let mut hit = false;
                if rec.get("sessionId").and_then(Value::as_str) == Some(old) {
                    rec.insert("sessionId".into(), Value::String(new.to_owned()));
                    hit = true;
                }
                if let Some(Value::Object(set)) = rec.get_mut("$set")
                    && set.get("sessionId").and_then(Value::as_str) == Some(old)
                {
                    set.insert("sessionId".into(), Value::String(new.to_owned()));
                    hit = true;
                }
                hit.then(|| serde_json::to_vec(&rec).expect("serialises"))
            }
            _ => None,
        };
        match changed {
            Some(b) => {
                out.extend_from_slice(&b);
                if line.ends_with(b"\n") {
                    out.push(b'\n');
                }
            }
            None => out.extend_from_slice(line),
        }
    }
    out
}

/// One native chat file of a restored session, with its directory in the target home.
struct NativeFile {
    dir: String,
    /// The path under `chats/`, by component.
    rest: Vec<String>,
    /// A single-document `.json` chat rather than a JSONL log.
    json_doc: bool,
    bytes: Vec<u8>,
}

/// The `n`-th name for a session: its id, then [`kept_beside`]'s `<id>~<harness>`,
/// `<id>~<harness>~2`, ... with their name-based UUIDs.
fn candidate(id: &str, harness: &str, n: u32) -> (String, String) {
    if n == 0 {
        return (id.to_owned(), gemini_id(id));
    }
    let name = kept_beside(id, "", Some(harness), n).name;
    let gid = name_uuid(&name);
    (name, gid)
}

/// A chat's bytes with its title (`summary`) set: a `$set` record appended to a JSONL log (the
/// store's own title event, last write wins), or the key set in a legacy JSON document.
fn with_summary(mut bytes: Vec<u8>, json_doc: bool, title: &str) -> Vec<u8> {
    if json_doc {
        return match serde_json::from_slice::<serde_json::Value>(&bytes) {
            Ok(serde_json::Value::Object(mut o)) => {
                o.insert("summary".into(), serde_json::json!(title));
                serde_json::to_vec_pretty(&o).unwrap_or(bytes)
            }
            _ => bytes,
        };
    }
    if !bytes.is_empty() && !bytes.ends_with(b"\n") {
        bytes.push(b'\n');
    }
    let record = serde_json::json!({"$set": {"summary": title}});
    bytes.extend_from_slice(record.to_string().as_bytes());
    bytes.push(b'\n');
    bytes
}

impl Sessions<'_, '_> {
    fn blobs(&self) -> &dyn BlobSource {
        self.ctx.blobs
    }

    fn home_dir(&self) -> String {
        self.ctx.home.absolute_dir().to_string_lossy().into_owned()
    }

    /// Writes every session; fills the answer's `sessions` map and `notTaken`.
    pub fn write_all(&mut self, sessions: &[Session]) -> Result<(), ConvertError> {
        let ids: std::collections::HashSet<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
        let is_child = |s: &Session| {
            gemini_native(s).is_none() && parent_of(s).is_some_and(|p| ids.contains(p))
        };
        let child_ids: HashMap<String, String> = sessions
            .iter()
            .filter(|s| is_child(s))
            .map(|s| (s.id.to_string(), gemini_id(s.id.as_str())))
            .collect();
        let mut placed: HashMap<String, Placed> = HashMap::new();
        let mut written_times = Vec::new();
        for pass in [false, true] {
            for s in sessions.iter().filter(|s| is_child(s) == pass) {
                self.ctx.progress.item(s.id.as_str());
                let parent = if pass {
                    parent_of(s).and_then(|p| placed.get(p)).cloned()
                } else {
                    None
                };
                let result = match gemini_native(s) {
                    Some(native) => self.restore(s, native)?,
                    None => self.convert(s, parent.as_ref(), &child_ids)?,
                };
                match result {
                    Ok(p) => {
                        let how = if p.written {
                            written_times.push(p.last_updated_ms);
                            if p.beside {
                                Placement::Beside
                            } else {
                                Placement::New
                            }
                        } else {
                            Placement::AlreadyThere
                        };
                        self.tally.session(
                            s.id.as_str(),
                            SessionPlaced {
                                id: p.gid.clone(),
                                placement: how,
                            },
                        );
                        placed.insert(s.id.to_string(), p);
                    }
                    Err(reason) => self
                        .tally
                        .session(s.id.as_str(), SessionPlaced::refused(reason)),
                }
            }
        }
        self.warn_retention(&written_times);
        Ok(())
    }

    /// Notes what Gemini's session cleanup will do to what was written.
    fn warn_retention(&self, written: &[Option<i64>]) {
        if written.is_empty() {
            return;
        }
        let path = self.gemini.join("settings.json");
        let Some((age, max_ms)) = crate::kit::settings_json::File::load(&path)
            .map(|f| super::settings::retention_max_age(&f))
            .unwrap_or(Some(("30d".to_owned(), 30 * 86_400_000)))
        else {
            return;
        };
        let cutoff = time::now_ms() - max_ms;
        let old = written
            .iter()
            .filter(|t| t.is_some_and(|t| t < cutoff))
            .count();
        let mut msg = String::from("Gemini's session cleanup (general.sessionRetention) is on: ");
        if old > 0 {
            msg.push_str(&format!(
                "{old} of the {} sessions written last changed more than {age} ago, and Gemini \
                 deletes such sessions the next time it starts. ",
                written.len()
            ));
        } else {
            msg.push_str(&format!(
                "Gemini deletes sessions once they are older than {age}. "
            ));
        }
        msg.push_str(&format!(
            "Gemini CLI 0.61 can also delete a session at the start after the one where it was \
             resumed. To keep them, set \"general\": {{\"sessionRetention\": {{\"enabled\": \
             false}}}} (or a larger maxAge) in {} before starting Gemini.",
            path.display()
        ));
        self.ctx.diagnostics.note(&path, None, msg);
    }

    /// Every chats directory the CLI may read `cwd`'s project from: `tmp/<dir>/chats` first,
    /// then its registered slug directory and its old `sha256(root)` directory.
    fn project_chats(&self, dir: &str, cwd: Option<&str>) -> Vec<PathBuf> {
        let tmp = self.gemini.join("tmp");
        let mut out = vec![tmp.join(dir).join("chats")];
        if let Some(cwd) = cwd {
            for other in [self.projects.lookup(cwd), Some(project_hash(cwd))]
                .into_iter()
                .flatten()
            {
                let c = tmp.join(other).join("chats");
                if !out.contains(&c) {
                    out.push(c);
                }
            }
        }
        out
    }

    /// The directory in the target home for a native `tmp/<dir>` of a session in `cwd`.
    fn target_dir(&mut self, dir: &str, cwd: Option<&str>) -> Result<String, ConvertError> {
        let Some(cwd) = cwd else {
            return Ok(dir.to_owned());
        };
        if is_hash_dir(dir) {
            // The CLI copies a hash directory into the project's slug directory at start, but
            // only while that holds nothing but its marker; when it is in use, the chat goes
            // straight into it. Otherwise the chat keeps its old place and the project is
            // registered, so the CLI (and anyone reading the registry) finds it.
            if let Some(slug) = self.projects.lookup(cwd)
                && self.projects.slug_dir_in_use(&slug)
            {
                return Ok(slug);
            }
            self.projects.claim(cwd, None);
            self.projects.save(self.writer)?;
            return Ok(project_hash(cwd));
        }
        let slug = self.projects.claim(cwd, Some(dir));
        self.projects.save(self.writer)?;
        self.projects.adopt_hash_dir(cwd, &slug, self.writer)?;
        Ok(slug)
    }

    /// Puts a Gemini session's own files back.
    fn restore(
        &mut self,
        s: &Session,
        native: &Native,
    ) -> Result<Result<Placed, String>, ConvertError> {
        let id = s.id.as_str();
        let mut paths = Vec::new();
        for f in &native.files {
            let Some(np) = native_path(f.path.as_str()) else {
                return Ok(Err(format!(
                    "session {id}: its native file {} is not a Gemini chat file, so it was not \
                     written",
                    f.path
                )));
            };
            paths.push((np, f));
        }
        let mut files = Vec::new();
        for (np, f) in paths {
            files.push(NativeFile {
                dir: self.target_dir(np.dir, s.cwd.as_deref())?,
                rest: np.rest.iter().map(|r| r.to_string()).collect(),
                json_doc: f.path.as_str().ends_with(".json"),
                bytes: self.blobs().read_all(&f.content)?,
            });
        }
        if files.is_empty() {
            return Ok(Err(format!("session {id}: no chat files were carried")));
        }
        if s.cwd.is_none() {
            self.ctx.diagnostics.note(
                &self.gemini.join("tmp"),
                None,
                format!(
                    "session {id}: its project is not known, so its chat went back into the same \
                     directory under tmp/ without registering a project"
                ),
            );
        }
        let parent = files[0]
            .rest
            .first()
            .filter(|_| files[0].rest.len() == 2)
            .cloned();
        for n in 0..MAX_COPIES {
            let (name, gid) = if n == 0 {
                (id.to_owned(), id.to_owned())
            } else {
                candidate(id, "gemini", n)
            };
            let planned: Vec<Planned> = files
                .iter()
                .enumerate()
                .map(|(i, f)| {
                    let chats = self.gemini.join("tmp").join(&f.dir).join("chats");
                    let (rel, bytes) = if n == 0 {
                        (f.rest.join("/"), f.bytes.clone())
                    } else {
                        let mut bytes = rename_in(&f.bytes, f.json_doc, id, &gid);
                        if i == 0 {
                            // The copy's chat is titled with the marker, so `/resume` tells
                            // the two apart.
                            bytes =
                                with_summary(bytes, f.json_doc, &marked_title(&s.title, "gemini"));
                        }
                        (renamed_file(&f.rest, &gid), bytes)
                    };
                    Planned {
                        path: chats.join(rel),
                        bytes,
                    }
                })
                .collect();
            let dir = files[0].dir.clone();
            let chats = self.gemini.join("tmp").join(&dir).join("chats");
            let dirs = self.project_chats(&dir, s.cwd.as_deref());
            if self.planned_earlier(&planned) {
                continue;
            }
            let outcome = match place::check(&dirs, &gid, parent.as_deref(), &planned)? {
                Check::Conflict => continue,
                Check::AlreadyThere => false,
                Check::Write(missing) => match place::write(self.writer, &planned, &missing)? {
                    false => continue,
                    _ => true,
                },
            };
            if n > 0 {
                self.note_copy(id, &name, &gid, &chats);
            }
            return Ok(Ok(Placed {
                gid,
                dir,
                last_updated_ms: s.updated_at.as_deref().and_then(time::parse_rfc3339),
                written: outcome,
                beside: n > 0,
            }));
        }
        Ok(Err(format!(
            "session {id}: {MAX_COPIES} different versions of it are already in Gemini; not written"
        )))
    }

    /// Whether a dry run already planned another session's file at one of these paths. Two
    /// sessions whose ids share their first 8 characters (UUID v7 ids made within a minute of
    /// each other, as Pi's are) get the same chat name in the same minute: the real run finds
    /// the first one's file there and keeps the second beside it, and so must the dry run,
    /// which wrote nothing.
    fn planned_earlier(&self, planned: &[Planned]) -> bool {
        let paths = self.planned_paths();
        planned.iter().any(|p| paths.contains(&p.path))
    }

    /// The files a dry run has planned and not written.
    fn planned_paths(&self) -> Vec<PathBuf> {
        if !self.writer.is_dry_run() {
            return Vec::new();
        }
        self.writer
            .changes()
            .into_iter()
            .filter_map(|c| match c {
                crate::kit::fsops::Change::Create(p) if !p.exists() => Some(p),
                _ => None,
            })
            .collect()
    }

    fn note_copy(&self, id: &str, name: &str, gid: &str, chats: &Path) {
        self.ctx.diagnostics.note(
            chats,
            None,
            format!(
                "a different version of session {id} is already in Gemini; the carried one was \
                 kept beside it as {name} (Gemini session id {gid})"
            ),
        );
    }

    /// Reads a session's updates and folds them into a conversation; also the first time any
    /// of them carries (a `timestamp` in any namespace of its `_meta`), in epoch milliseconds.
    fn fold(
        &self,
        s: &Session,
    ) -> Result<(Vec<crate::kit::conversation::Item>, Option<i64>), ConvertError> {
        let mut lines = UpdateLines::open(self.blobs(), &s.updates)?;
        let mut folder = Folder::new();
        let mut first_time = None;
        loop {
            match lines.next_line() {
                Ok(Some((_, line))) => {
                    if let Ok(mut v) = serde_json::from_str::<Value>(line)
                        && let Some(u) = v.get_mut("update")
                    {
                        if first_time.is_none() {
                            first_time = update_time(u);
                        }
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
        Ok((folder.finish(), first_time))
    }

    /// The time a session is dated by: its `updatedAt`, else the first time in its updates,
    /// else the time its id carries (a v1/v6/v7 UUID), else the Unix epoch. Never the time of
    /// the import: the chat's bytes must be the same each time the session is carried, or the
    /// second import would not find the first one's chat "already there".
    fn session_time(&self, s: &Session, first_in_updates: Option<i64>, chats: &Path) -> i64 {
        if let Some(ms) = s.updated_at.as_deref().and_then(time::parse_rfc3339) {
            return ms;
        }
        let id = s.id.as_str();
        let (ms, from) = match (first_in_updates, ids::time_of(id)) {
            (Some(ms), _) => (ms, "the first time in its updates"),
            (None, Some(ms)) => (ms, "the time in its id"),
            (None, None) => (0, "the Unix epoch, as nothing in it carries a time"),
        };
        let why = match &s.updated_at {
            Some(t) => format!("its updatedAt {t:?} is not a time"),
            None => "it has no updatedAt".to_owned(),
        };
        let mut msg = format!(
            "session {id}: {why}, so its chat is dated {} ({from})",
            time::iso(ms)
        );
        if from.starts_with("the Unix epoch") {
            msg.push_str(
                "; Gemini's session cleanup (general.sessionRetention) deletes a chat that old \
                 at its next start unless the cleanup is off",
            );
        }
        self.ctx.diagnostics.note(chats, None, msg);
        ms
    }

    /// Converts a session from another harness (or a Gemini one without its files).
    fn convert(
        &mut self,
        s: &Session,
        parent: Option<&Placed>,
        child_ids: &HashMap<String, String>,
    ) -> Result<Result<Placed, String>, ConvertError> {
        let id = s.id.as_str();
        let harness = s
            .harness
            .as_ref()
            .map(|h| h.as_str().to_owned())
            .unwrap_or_else(|| "unknown".to_owned());
        let (items, first_time) = self.fold(s)?;
        let cwd = match &s.cwd {
            Some(c) => c.clone(),
            None => {
                let home = self.home_dir();
                self.ctx.diagnostics.note(
                    &self.gemini.join("tmp"),
                    None,
                    format!(
                        "session {id} has no working directory; it was filed under the home \
                         directory {home} (run `gemini --resume` there)"
                    ),
                );
                home
            }
        };
        let dir = match parent {
            Some(p) => p.dir.clone(),
            None => {
                let d = self.projects.claim(&cwd, None);
                self.projects.save(self.writer)?;
                self.projects.adopt_hash_dir(&cwd, &d, self.writer)?;
                d
            }
        };
        let chats = self.gemini.join("tmp").join(&dir).join("chats");
        let updated_ms = self.session_time(s, first_time, &chats);
        let marked = marked_title(
            &crate::kit::conversation::title_or_prompt(&s.title, &items),
            &harness,
        );
        // Another session whose id begins as this one's (its chat's name ends alike) holds
        // the ending: this one is given an id of its own, neither a copy nor titled as one.
        let apart = parent.is_none()
            && place::ending_taken(
                &self.project_chats(&dir, Some(&cwd)),
                &gemini_id(id),
                &self.planned_paths(),
            );
        for n in u32::from(apart)..MAX_COPIES {
            let (name, gid) = candidate(id, &harness, n);
            let header = compose::Header {
                session_id: &gid,
                cwd: &cwd,
                // A copy kept beside is titled with the marker.
                title: if n == 0 || (apart && n == 1) {
                    &s.title
                } else {
                    &marked
                },
                updated_ms,
                subagent: parent.is_some(),
                harness: &harness,
                child_ids,
            };
            let chat = compose::build(&items, &header);
            if !chat.resumable {
                return Ok(Err(format!(
                    "session {id} has no prompt or answer Gemini can show (Gemini would neither \
                     list it nor keep it); not written"
                )));
            }
            if n == 0 && !chat.dropped.is_empty() {
                let kinds: Vec<&str> = chat.dropped.iter().map(String::as_str).collect();
                // Said of the session, in the same words for each, so a thousand sessions
                // make one line and a count, not a thousand lines that bury the rest
                // (new-user trial helper-137, 3).
                self.ctx.diagnostics.in_session(
                    Severity::LeftOut,
                    id,
                    None,
                    format!(
                        "{} updates have no place in a Gemini chat and were left out",
                        kinds.join(", ")
                    ),
                );
            }
            let path = match parent {
                Some(p) => chats
                    .join(ids::file_part(&p.gid))
                    .join(format!("{}.jsonl", ids::file_part(&gid))),
                None => chats.join(format!(
                    "session-{}-{}.jsonl",
                    time::file_stamp(chat.start_ms),
                    ids::short(&gid)
                )),
            };
            let planned = [Planned {
                path,
                bytes: chat.bytes(),
            }];
            let parent_gid = parent.map(|p| p.gid.as_str());
            let dirs = self.project_chats(&dir, Some(&cwd));
            if self.planned_earlier(&planned) {
                continue;
            }
            let written = match place::check(&dirs, &gid, parent_gid, &planned)? {
                Check::Conflict => continue,
                Check::AlreadyThere => false,
                Check::Write(missing) => match place::write(self.writer, &planned, &missing)? {
                    false => continue,
                    _ => true,
                },
            };
            if apart && n == 1 {
                self.ctx.diagnostics.note(
                    &chats,
                    None,
                    format!(
                        "session {id} was given the id {gid}: another session there begins as \
                         {id} does, and Gemini CLI tells chats apart by an id's first 8 \
                         characters (its cleanup deletes chats of one ending together)"
                    ),
                );
            } else if n > 0 {
                self.note_copy(id, &name, &gid, &chats);
            }
            let last = chat.records[0]["lastUpdated"]
                .as_str()
                .and_then(time::parse_rfc3339);
            return Ok(Ok(Placed {
                gid,
                dir,
                last_updated_ms: last,
                written,
                // An id changed only to stand apart from another session's first characters
                // is a new session, not a version kept beside one.
                beside: n > 0 && !(apart && n == 1),
            }));
        }
        Ok(Err(format!(
            "session {id}: {MAX_COPIES} different versions of it are already in Gemini; not written"
        )))
    }
}

/// The time an update carries: the first parseable `timestamp` in any namespace of its
/// `_meta` (the time the writer gives a message without one of its own).
fn update_time(update: &Value) -> Option<i64> {
    update
        .get("_meta")?
        .as_object()?
        .values()
        .filter_map(|ns| ns.get("timestamp")?.as_str())
        .find_map(time::parse_rfc3339)
}

/// The file name of a conflict copy: the same creation time with the new id's 8 characters,
/// or `<parent>/<new id>.jsonl` for a subagent's chat.
fn renamed_file(rest: &[String], gid: &str) -> String {
    match rest {
        [file] => {
            let (stem, ext) = file.rsplit_once('.').unwrap_or((file, "jsonl"));
            let prefix = stem.rsplit_once('-').map_or(stem, |(p, _)| p);
            format!("{prefix}-{}.{ext}", ids::short(gid))
        }
        [parent, file] => {
            let ext = file.rsplit_once('.').map_or("jsonl", |(_, e)| e);
            format!("{parent}/{}.{ext}", ids::file_part(gid))
        }
        _ => unreachable!("native paths have one or two parts"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renaming_touches_only_the_id_records() {
        let log = b"{\"sessionId\":\"a\",\"projectHash\":\"h\"}\n{\"id\":\"m\",\"type\":\"user\",\"content\":\"sessionId a\"}\n{\"$set\":{\"sessionId\":\"a\"}}\nnot json";
        let out = String::from_utf8(rename_in(log, false, "a", "b")).unwrap();
        assert_eq!(
            out,
            "{\"sessionId\":\"b\",\"projectHash\":\"h\"}\n{\"id\":\"m\",\"type\":\"user\",\"content\":\"sessionId a\"}\n{\"$set\":{\"sessionId\":\"b\"}}\nnot json"
        );
        assert_eq!(
            renamed_file(
                &["session-2026-11-23T09-14-fed50604.jsonl".into()],
                "0123abcd-0000-4000-8000-000000000000"
            ),
            "session-2026-11-23T09-14-0123abcd.jsonl"
        );
    }

    #[test]
    fn native_paths_must_be_chats() {
        assert!(native_path(".gemini/tmp/shop/chats/session-x-1.jsonl").is_some());
        assert!(native_path(".gemini/tmp/shop-1/chats/p/c.jsonl").is_some());
        assert!(native_path(".gemini/settings.json").is_none());
        assert!(native_path(".gemini/tmp/shop/chats/evil.sh").is_none());
    }
}
