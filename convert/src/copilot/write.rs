//! Writing the sessions of a state into `session-state/` (spec §7, §9).
//!
//! A session packed from Copilot carries its directory (`Session::native`): it goes back byte
//! for byte under its own id. Any other session is composed ([`super::compose`]) into a
//! directory named by a name-based UUID of its id, holding `workspace.yaml` and
//! `events.jsonl`. Either way the directory is written whole under a hidden name in
//! `session-state/` and renamed into place, so Copilot never sees half a session, and the
//! mtime of `events.jsonl` is set to the session's last time (Copilot's `updatedAt`).
//!
//! A directory is never written into. When a session's id is already there with other
//! content, the carried one is kept beside it under the id of `<thread>~<harness>` (then
//! `~<harness>~2`, ...), with its `workspace.yaml` `name` saying `~<harness>` and the ids inside
//! its files changed to the new one (Copilot cannot load a directory whose name is not its id).

use std::collections::BTreeMap;
use std::fs;
use std::io;

use asp_format::state::{Native, Session};
use asp_format::update::UpdateLines;
use serde_json::{Value, json};

use super::compose::{self, Composed};
use super::layout::Layout;
use super::workspace::Workspace;
use crate::error::ConvertError;
use crate::harness::WriteContext;
use crate::kit::beside::{MAX_COPIES, holds_all_of, kept_beside};
use crate::kit::conversation::{Folder, Item};
use crate::kit::fsops::{Writer, rename_noclobber_dir};
use crate::kit::placement::{Placement, SessionPlaced, Tally};
use crate::kit::{time, uuid};

/// A session directory to place: file paths inside it, with their bytes.
type Files = BTreeMap<String, (Vec<u8>, bool)>;

/// What placing a directory came to.
enum Outcome {
    Written,
    Same,
    Taken,
}

/// A name-based UUID for a Copilot session id.
pub fn session_uuid(name: &str) -> String {
    uuid::name_based("copilot", name)
}

pub struct Sessions<'a, 'b> {
    layout: &'a Layout,
    ctx: &'a WriteContext<'b>,
}

impl Sessions<'_, '_> {
    pub fn new<'a, 'b>(layout: &'a Layout, ctx: &'a WriteContext<'b>) -> Sessions<'a, 'b> {
        Sessions { layout, ctx }
    }

    pub fn write_all(
        &mut self,
        list: &[Session],
        tally: &mut Tally<'_>,
    ) -> Result<(), ConvertError> {
        for s in list {
            self.ctx.progress.item(s.id.as_str());
            let native = s
                .native
                .as_ref()
                .filter(|n| n.harness.as_str() == super::NAME && !n.files.is_empty());
            let placed = match native {
                Some(n) => self.restore(s, n)?,
                None => self.convert(s)?,
            };
            tally.session(s.id.as_str(), placed);
        }
        Ok(())
    }

    /// Puts `files` as the directory `id` unless it is taken.
    fn place(
        &self,
        id: &str,
        files: &Files,
        mtime_ms: Option<i64>,
    ) -> Result<Outcome, ConvertError> {
        let dir = self.layout.sessions().join(id);
        if fs::symlink_metadata(&dir).is_ok() {
            // Copilot appends to the events of a session it resumes: continued there since,
            // they hold all we carry; and it rewrites its `workspace.yaml` when it resumes or
            // renames it (its other files must be the same).
            let same = files.iter().all(|(rel, (bytes, _))| {
                fs::read(dir.join(rel)).is_ok_and(|b| {
                    b == *bytes
                        || (rel == "events.jsonl" && holds_all_of(&b, bytes))
                        || (rel == "workspace.yaml" && same_workspace(&b, bytes))
                })
            });
            return Ok(if same { Outcome::Same } else { Outcome::Taken });
        }
        let writer: &Writer = self.ctx.writer;
        if writer.is_dry_run() {
            for (rel, (bytes, exec)) in files {
                writer.create_new(&dir.join(rel), bytes, *exec)?;
            }
            return Ok(Outcome::Written);
        }
        let root = self.layout.sessions();
        if let Some(file) = crate::kit::fsops::file_in_the_way(&root.join("x")) {
            return Err(ConvertError::invalid(
                file,
                "is a file where Copilot CLI keeps a folder; nothing is written under it",
            ));
        }
        fs::create_dir_all(&root).map_err(ConvertError::io(&root))?;
        let staging = tempfile::Builder::new()
            .prefix(".asp-session-")
            .tempdir_in(&root)
            .map_err(ConvertError::io(&root))?;
        let scratch = Writer::new(false);
        for (rel, (bytes, exec)) in files {
            scratch.create_new(&staging.path().join(rel), bytes, *exec)?;
        }
        if let Some(ms) = mtime_ms {
            let p = staging.path().join("events.jsonl");
            let t = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
            if let Ok(f) = fs::File::options().append(true).open(&p) {
                // Copilot orders its list by this mtime; a failure only changes the order.
                let _ = f.set_modified(t);
            }
        }
        let staged = staging.keep();
        if let Err(e) = rename_noclobber_dir(&staged, &dir) {
            let _ = fs::remove_dir_all(&staged);
            if e.kind() == io::ErrorKind::AlreadyExists {
                return Ok(Outcome::Taken);
            }
            return Err(ConvertError::io(&dir)(e));
        }
        writer.record_created(&dir);
        Ok(Outcome::Written)
    }

    fn note_copy(&self, id: &str, name: &str, new_id: &str) {
        self.ctx.diagnostics.note(
            &self.layout.sessions().join(new_id),
            None,
            format!(
                "a different version of session {id} is already in Copilot; the carried one was \
                 kept beside it as {name} (Copilot session id {new_id})"
            ),
        );
    }

    /// Tries `files` under the id, then under kept-beside ids made by `renamed`.
    fn place_or_beside(
        &self,
        s: &Session,
        harness: &str,
        first_id: String,
        files: Files,
        mtime_ms: Option<i64>,
        renamed: &dyn Fn(&str, &str) -> Option<Files>,
    ) -> Result<SessionPlaced, ConvertError> {
        let id = s.id.as_str();
        for n in 0..MAX_COPIES {
            let (name, new_id, files) = if n == 0 {
                (id.to_owned(), first_id.clone(), files.clone())
            } else {
                let k = kept_beside(id, &s.title, Some(harness), n);
                let new_id = session_uuid(&k.name);
                let Some(f) = renamed(&new_id, &k.title) else {
                    return Ok(SessionPlaced::refused(format!(
                        "session {id}: a different version is in Copilot, and its files cannot \
                         be given a new id; not written"
                    )));
                };
                (k.name, new_id, f)
            };
            match self.place(&new_id, &files, mtime_ms)? {
                Outcome::Taken => continue,
                Outcome::Same => return Ok(placed(n, new_id, Placement::AlreadyThere)),
                Outcome::Written => {
                    if n > 0 {
                        self.note_copy(id, &name, &new_id);
                    }
                    return Ok(placed(n, new_id, Placement::New));
                }
            }
        }
        Ok(SessionPlaced::refused(format!(
            "session {id}: {MAX_COPIES} different versions of it are already in Copilot; not written"
        )))
    }

    fn restore(&self, s: &Session, native: &Native) -> Result<SessionPlaced, ConvertError> {
        let id = s.id.as_str();
        let mut files = Files::new();
        let mut dir_name: Option<String> = None;
        for f in &native.files {
            let Some((dir, rel)) = self.layout.session_file(f.path.as_str()) else {
                return Ok(SessionPlaced::refused(format!(
                    "session {id}: its native file {} is not in a Copilot session directory; \
                     not written",
                    f.path
                )));
            };
            if dir_name.get_or_insert_with(|| dir.clone()) != &dir {
                return Ok(SessionPlaced::refused(format!(
                    "session {id}: its native files are in more than one session directory; \
                     not written"
                )));
            }
            files.insert(rel, (self.ctx.blobs.read_all(&f.content)?, f.executable));
        }
        let dir = dir_name.unwrap_or_else(|| id.to_owned());
        if !files.contains_key("events.jsonl") {
            return Ok(SessionPlaced::refused(format!(
                "session {id}: its native files have no events.jsonl; not written"
            )));
        }
        let mtime = s
            .updated_at
            .as_deref()
            .and_then(time::parse)
            .map(time::millis);
        let base = files.clone();
        let cwd = s.cwd.clone();
        let renamed =
            move |new_id: &str, title: &str| renamed(&base, new_id, title, cwd.as_deref());
        self.place_or_beside(s, super::NAME, dir, files, mtime, &renamed)
    }

    fn fold(&self, s: &Session) -> Result<Vec<Item>, ConvertError> {
        let mut lines = UpdateLines::open(self.ctx.blobs, &s.updates)?;
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

    fn convert(&self, s: &Session) -> Result<SessionPlaced, ConvertError> {
        let id = s.id.as_str();
        let harness = s
            .harness
            .as_ref()
            .map_or_else(|| "asp".to_owned(), |h| h.as_str().to_owned());
        let items = self.fold(s)?;
        let cwd = crate::kit::resume::cwd_or_home(s, self.ctx, &self.layout.sessions());
        let copilot = s.meta.as_ref().and_then(|m| m.get("copilot"));
        let model = copilot
            .and_then(|c| c.get("model"))
            .and_then(Value::as_str)
            .filter(|m| super::settings::ACCEPTS.model(m).is_ok());
        // A name someone gave it in any harness is one Copilot must not replace with its own
        // (`user_named`); a made one, or a first prompt, it may.
        let user_named = copilot
            .and_then(|c| c.get("userNamed"))
            .and_then(Value::as_bool)
            .unwrap_or(false)
            || crate::kit::title::origin(s) == Some(crate::kit::title::TitleOrigin::Chosen);
        let start_ms = start_ms(s, &items);
        let branch = crate::kit::git_branch::source_branch(s.meta.as_ref());
        let make = |new_id: &str, title: &str| -> (Composed, Files) {
            let composed = compose::build(
                &items,
                &compose::Header {
                    id: new_id,
                    cwd: &cwd,
                    start_ms,
                    model,
                    branch,
                },
            );
            let ws = Workspace {
                id: Some(new_id.to_owned()),
                cwd: Some(cwd.clone()),
                branch: branch.map(str::to_owned),
                name: (!title.is_empty()).then(|| title.to_owned()),
                user_named,
                created_at: Some(time::format_millis(time::from_millis(start_ms))),
                updated_at: Some(time::format_millis(time::from_millis(composed.last_ms))),
                ..Workspace::default()
            };
            let mut files = Files::new();
            files.insert("workspace.yaml".into(), (ws.render().into_bytes(), false));
            files.insert("events.jsonl".into(), (composed.bytes(), false));
            (composed, files)
        };
        let first_id = session_uuid(id);
        let (composed, files) = make(&first_id, &s.title);
        if !composed.resumable {
            return Ok(SessionPlaced::refused(format!(
                "session {id} has no prompt or answer Copilot can show; not written"
            )));
        }
        if !composed.dropped.is_empty() {
            // Left out, not a note: `--strict` counts what a session lost.
            self.ctx.diagnostics.left_out(
                &self.layout.sessions().join(&first_id),
                None,
                format!(
                    "session {id}: {} updates have no place in a Copilot session and were left out",
                    composed.dropped.join(", ")
                ),
            );
        }
        let renamed = |new_id: &str, title: &str| Some(make(new_id, title).1);
        // A copy kept beside is marked from the title, else from the first prompt, as Copilot
        // lists an unnamed session.
        let titled = Session {
            title: crate::kit::conversation::title_or_prompt(&s.title, &items),
            ..s.clone()
        };
        self.place_or_beside(
            &titled,
            &harness,
            first_id,
            files,
            Some(composed.last_ms),
            &renamed,
        )
    }
}

/// Whether the `workspace.yaml` there (`there`) is the carried one (`carried`) as Copilot
/// leaves it after using the session: the same session (`id`), begun in the same place at the
/// same time. Copilot rewrites the file when it resumes a session (`updated_at`, `branch`) or
/// the user renames it (`name`, `user_named`, `summary`), and compared byte for byte each made
/// a restore of the session keep it beside itself as a copy (new-user trial helper-131, 1).
fn same_workspace(there: &[u8], carried: &[u8]) -> bool {
    let read = |b: &[u8]| {
        std::str::from_utf8(b)
            .ok()
            .and_then(|t| Workspace::parse(t).ok())
    };
    match (read(there), read(carried)) {
        (Some(a), Some(b)) => {
            a.id.is_some() && a.id == b.id && a.cwd == b.cwd && a.created_at == b.created_at
        }
        _ => false,
    }
}

fn placed(n: u32, id: String, how: Placement) -> SessionPlaced {
    let how = match how {
        Placement::New if n > 0 => Placement::Beside,
        p => p,
    };
    SessionPlaced { id, placement: how }
}

/// The time a composed session starts at: the first time its updates carry, else its
/// `updatedAt`, else the Unix epoch. Never the time of the import: the same session must give
/// the same bytes.
fn start_ms(s: &Session, items: &[Item]) -> i64 {
    let first = items.iter().find_map(Item::time);
    first
        .or_else(|| {
            s.updated_at
                .as_deref()
                .and_then(time::parse)
                .map(time::millis)
        })
        .unwrap_or(0)
}

/// A Copilot session directory under a new id: `workspace.yaml` with the new `id` and the
/// marked `name` (written new when there was none), the `sessionId` of `session.start` in
/// `events.jsonl` changed; every other line and file byte for byte.
fn renamed(files: &Files, new_id: &str, title: &str, cwd: Option<&str>) -> Option<Files> {
    let mut out = files.clone();
    let ws = match files.get("workspace.yaml") {
        Some((b, _)) => Workspace::parse(&String::from_utf8_lossy(b)).ok()?,
        None => Workspace {
            cwd: cwd.map(str::to_owned),
            ..Workspace::default()
        },
    };
    let ws = Workspace {
        id: Some(new_id.to_owned()),
        name: Some(title.to_owned()),
        ..ws
    };
    out.insert("workspace.yaml".into(), (ws.render().into_bytes(), false));
    let (events, exec) = files.get("events.jsonl")?;
    let mut new = Vec::with_capacity(events.len());
    let mut done = false;
    for line in events.split_inclusive(|b| *b == b'\n') {
        if !done
            && let Ok(mut v) = serde_json::from_slice::<Value>(line)
            && v.get("type").and_then(Value::as_str) == Some("session.start")
        {
            v["data"]["sessionId"] = json!(new_id);
            new.extend_from_slice(&serde_json::to_vec(&v).ok()?);
            new.push(b'\n');
            done = true;
            continue;
        }
        new.extend_from_slice(line);
    }
    out.insert("events.jsonl".into(), (new, *exec));
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_has_the_new_id_inside_and_a_marked_title() {
        let mut f = Files::new();
        f.insert(
            "workspace.yaml".into(),
            (b"id: a\ncwd: /w\nname: T\n".to_vec(), false),
        );
        f.insert(
            "events.jsonl".into(),
            (
                b"{\"type\":\"session.start\",\"data\":{\"sessionId\":\"a\"}}\n{\"type\":\"user.message\",\"data\":{\"content\":\"x\"}}\n".to_vec(),
                false,
            ),
        );
        let out = renamed(&f, "b", "T ~copilot", None).unwrap();
        let ws =
            Workspace::parse(&String::from_utf8(out["workspace.yaml"].0.clone()).unwrap()).unwrap();
        assert_eq!(ws.id.as_deref(), Some("b"));
        assert_eq!(ws.cwd.as_deref(), Some("/w"));
        assert_eq!(ws.name.as_deref(), Some("T ~copilot"));
        let ev = String::from_utf8(out["events.jsonl"].0.clone()).unwrap();
        assert!(ev.starts_with("{\"type\":\"session.start\",\"data\":{\"sessionId\":\"b\"}}\n"));
        assert!(ev.ends_with("{\"type\":\"user.message\",\"data\":{\"content\":\"x\"}}\n"));
    }
}
