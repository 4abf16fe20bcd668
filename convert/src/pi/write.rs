//! Writing the sessions of a state into a Pi agent dir.
//!
//! A session packed from Pi carries its file (`Session::native`): it goes back byte for byte
//! to the same place under `A/sessions/` (the per-cwd directory of the session's cwd, so a
//! `--map-path` moves it with the cwd). Any other session is composed ([`super::compose`])
//! into `A/sessions/--<cwd>--/<time>_<id>.jsonl`, as Pi names its own.
//!
//! A file is never written over, nor appended to (Pi appends to a session while it is open).
//! When a session's id is already there with other content, the carried one is kept beside it
//! under the id of `<thread>~<harness>` (then `~<harness>~2`, ...), a name-based UUID, in a
//! file of its own whose `session_info` title says `~<harness>`; the answer maps the old id
//! to the new one.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use asp_format::state::{Native, Session};
use asp_format::update::UpdateLines;
use serde_json::{Value, json};

use super::compose::{self, Composed};
use super::entries::Header;
use super::ids::{self, name_uuid, pi_id};
use super::layout::Layout;
use super::settings::LEVELS;
use super::survey::session_files;
use crate::error::ConvertError;
use crate::harness::WriteContext;
use crate::kit::beside::{MAX_COPIES, holds_all_of, kept_beside};
use crate::kit::conversation::{Folder, Item};
use crate::kit::fsops::Created;
use crate::kit::placement::{Placement, SessionPlaced, Tally};
use crate::kit::time;

/// The sessions already in the agent dir, by header id.
fn existing(layout: &Layout) -> HashMap<String, PathBuf> {
    let mut out = HashMap::new();
    // A folder that cannot be listed was reported when the store was surveyed; a session in
    // it is not found here either.
    for p in session_files(layout, &mut |_, _| {}) {
        let Ok(f) = crate::kit::source::open_regular(&p) else {
            continue;
        };
        let mut line = Vec::new();
        use std::io::{BufRead, BufReader, Read};
        if BufReader::new(f.take(64 * 1024))
            .read_until(b'\n', &mut line)
            .is_err()
        {
            continue;
        }
        if let Some(h) = Header::parse(&line) {
            out.entry(h.id).or_insert(p);
        }
    }
    out
}

/// What a planned file came to.
enum Outcome {
    Written,
    /// The session is there already.
    Same,
    /// Another version of the session (or another session) is there, in this file.
    Taken(PathBuf),
}

pub struct Sessions<'a, 'b> {
    pub layout: &'a Layout,
    pub ctx: &'a WriteContext<'b>,
    pub existing: HashMap<String, PathBuf>,
}

impl Sessions<'_, '_> {
    pub fn new<'a, 'b>(layout: &'a Layout, ctx: &'a WriteContext<'b>) -> Sessions<'a, 'b> {
        Sessions {
            layout,
            ctx,
            existing: existing(layout),
        }
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

    /// Puts `bytes` for session `id` at `path` unless the id or the path is taken.
    fn place(&mut self, id: &str, path: &Path, bytes: &[u8]) -> Result<Outcome, ConvertError> {
        // Pi appends to a session it resumes: one continued there since holds all we carry.
        if let Some(there) = self.existing.get(id) {
            return Ok(match fs::read(there) {
                Ok(b) if holds_all_of(&b, bytes) => Outcome::Same,
                _ => Outcome::Taken(there.clone()),
            });
        }
        let taken = || Outcome::Taken(path.to_path_buf());
        match fs::read(path) {
            Ok(b) if holds_all_of(&b, bytes) => return Ok(Outcome::Same),
            Ok(_) => return Ok(taken()),
            Err(_) if fs::symlink_metadata(path).is_ok() => return Ok(taken()),
            Err(_) => {}
        }
        match self.ctx.writer.create_new(path, bytes, false)? {
            Created::New => {
                self.existing.insert(id.to_owned(), path.to_path_buf());
                Ok(Outcome::Written)
            }
            Created::AlreadyExists => Ok(taken()),
        }
    }

    /// Said of the copy written at `copy`, naming the file `there` that holds the other
    /// version.
    fn note_copy(&self, id: &str, name: &str, new_id: &str, copy: &Path, there: &Path) {
        self.ctx.diagnostics.note(
            copy,
            None,
            format!(
                "a different version of session {id} is already in Pi ({}); the carried one was \
                 kept beside it as {name} (Pi session id {new_id})",
                there.display()
            ),
        );
    }

    /// The directory for a session in `cwd`.
    fn dir_for(&self, cwd: &str) -> PathBuf {
        self.layout.sessions().join(ids::session_dir(cwd))
    }

    fn restore(&mut self, s: &Session, native: &Native) -> Result<SessionPlaced, ConvertError> {
        let id = s.id.as_str();
        if native.files.len() != 1 {
            return Ok(SessionPlaced::refused(format!(
                "session {id}: a Pi session is one file, and {} were carried; not written",
                native.files.len()
            )));
        }
        let f = &native.files[0];
        let Some(mut path) = self.layout.session_path(f.path.as_str()) else {
            return Ok(SessionPlaced::refused(format!(
                "session {id}: its native file {} is not a Pi session file; not written",
                f.path
            )));
        };
        let bytes = self.ctx.blobs.read_all(&f.content)?;
        let first_end = bytes
            .iter()
            .position(|b| *b == b'\n')
            .unwrap_or(bytes.len());
        let Some(header) = Header::parse(&bytes[..first_end]) else {
            return Ok(SessionPlaced::refused(format!(
                "session {id}: its file {} does not start with a session header (Pi would \
                 replace such a file); not written",
                f.path
            )));
        };
        // A file in the per-cwd directory follows the cwd (which a --map-path may have moved:
        // the header, rewritten, names the new cwd, the folder still the old one).
        let path_map = &self.ctx.options.path_map;
        let in_cwd_dir = path.parent().and_then(Path::parent) == Some(&self.layout.sessions())
            && path
                .parent()
                .and_then(Path::file_name)
                .and_then(|n| n.to_str())
                .is_some_and(|n| {
                    n == ids::session_dir(&header.cwd)
                        || path_map
                            .sources_of(&header.cwd)
                            .iter()
                            .any(|old| n == ids::session_dir(old))
                });
        if in_cwd_dir
            && let (Some(cwd), Some(name)) = (&s.cwd, path.file_name().map(ToOwned::to_owned))
        {
            path = self.dir_for(cwd).join(name);
        }
        // The file holding the version a copy is kept beside.
        let mut there: Option<PathBuf> = None;
        for n in 0..MAX_COPIES {
            let (name, new_id, file, data) = if n == 0 {
                (
                    id.to_owned(),
                    header.id.clone(),
                    path.clone(),
                    bytes.clone(),
                )
            } else {
                // Pi lists a session without a name by its first prompt: a copy's marked name
                // says that prompt, not the marker alone.
                let title = match s.title.trim() {
                    "" => first_prompt(&bytes[first_end..]).unwrap_or_default(),
                    t => t.to_owned(),
                };
                let k = kept_beside(id, &title, Some(super::NAME), n);
                let new_id = name_uuid(&k.name);
                let Some(data) = renamed(&bytes, first_end, &new_id, &k.title) else {
                    return Ok(SessionPlaced::refused(format!(
                        "session {id}: a different version is in Pi, and its file cannot be \
                         renamed; not written"
                    )));
                };
                let stamp = header
                    .timestamp
                    .as_deref()
                    .unwrap_or("1970-01-01T00:00:00.000Z");
                let file = path.with_file_name(ids::file_name(stamp, &new_id));
                (k.name, new_id, file, data)
            };
            match self.place(&new_id, &file, &data)? {
                Outcome::Taken(at) => {
                    there.get_or_insert(at);
                    continue;
                }
                Outcome::Same => return Ok(placed(n, new_id, Placement::AlreadyThere)),
                Outcome::Written => {
                    if let Some(there) = there.as_deref().filter(|_| n > 0) {
                        self.note_copy(id, &name, &new_id, &file, there);
                    }
                    return Ok(placed(n, new_id, Placement::New));
                }
            }
        }
        Ok(SessionPlaced::refused(format!(
            "session {id}: {MAX_COPIES} different versions of it are already in Pi; not written"
        )))
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

    /// The time a composed session starts at: the first time its updates carry, else its
    /// `updatedAt`, else the time its id carries (a v7 UUID), else the Unix epoch. Never the
    /// time of the import: the same session must give the same bytes.
    fn start_ms(s: &Session, items: &[Item]) -> i64 {
        let first = items.iter().find_map(Item::time);
        first
            .or_else(|| {
                s.updated_at
                    .as_deref()
                    .and_then(time::parse)
                    .map(time::millis)
            })
            .or_else(|| v7_ms(s.id.as_str()))
            .unwrap_or(0)
    }

    fn convert(&mut self, s: &Session) -> Result<SessionPlaced, ConvertError> {
        let id = s.id.as_str();
        let harness = s
            .harness
            .as_ref()
            .map_or_else(|| "asp".to_owned(), |h| h.as_str().to_owned());
        let items = self.fold(s)?;
        let cwd = crate::kit::resume::cwd_or_home(s, self.ctx, &self.layout.sessions());
        let pi_meta = s.meta.as_ref().and_then(|m| m.get("pi"));
        let model = pi_meta
            .and_then(|p| p.get("model"))
            .and_then(Value::as_str)
            .and_then(|m| m.split_once('/'))
            .map(|(p, m)| (p.to_owned(), m.to_owned()));
        let thinking_level = pi_meta
            .and_then(|p| p.get("thinkingLevel"))
            .and_then(Value::as_str)
            .filter(|l| LEVELS.contains(l))
            .unwrap_or("off")
            .to_owned();
        let start_ms = Self::start_ms(s, &items);
        let dir = self.dir_for(&cwd);
        // The file holding the version a copy is kept beside.
        let mut there: Option<PathBuf> = None;
        for n in 0..MAX_COPIES {
            let (name, new_id, title) = if n == 0 {
                (id.to_owned(), pi_id(id), s.title.clone())
            } else {
                let title = crate::kit::conversation::title_or_prompt(&s.title, &items);
                let k = kept_beside(id, &title, Some(&harness), n);
                (k.name.clone(), name_uuid(&k.name), k.title)
            };
            let composed: Composed = compose::build(
                &items,
                &compose::Header {
                    id: &new_id,
                    cwd: &cwd,
                    title: &title,
                    start_ms,
                    model: model.clone(),
                    thinking_level: thinking_level.clone(),
                },
            );
            if !composed.resumable {
                return Ok(SessionPlaced::refused(format!(
                    "session {id} has no prompt or answer Pi can show; not written"
                )));
            }
            let stamp = composed.lines[0]["timestamp"]
                .as_str()
                .unwrap_or("")
                .to_owned();
            let file = dir.join(ids::file_name(&stamp, &new_id));
            match self.place(&new_id, &file, &composed.bytes())? {
                Outcome::Taken(at) => {
                    there.get_or_insert(at);
                    continue;
                }
                // Nothing written: what the file there lacks was said when it was written
                // (as every other writer says it, once).
                Outcome::Same => return Ok(placed(n, new_id, Placement::AlreadyThere)),
                Outcome::Written => {
                    self.note_not_composed(id, &composed, &file);
                    if let Some(there) = there.as_deref().filter(|_| n > 0) {
                        self.note_copy(id, &name, &new_id, &file, there);
                    }
                    return Ok(placed(n, new_id, Placement::New));
                }
            }
        }
        Ok(SessionPlaced::refused(format!(
            "session {id}: {MAX_COPIES} different versions of it are already in Pi; not written"
        )))
    }

    /// Says what of session `id` the composed file `at` has no place for, or has as text: of
    /// the file it was written into, so a copy kept beside another version is said of the
    /// copy.
    fn note_not_composed(&self, id: &str, composed: &Composed, at: &Path) {
        if !composed.dropped.is_empty() {
            self.ctx.diagnostics.left_out(
                at,
                None,
                format!(
                    "session {id}: {} updates have no place in a Pi session and were left out",
                    composed.dropped.join(", ")
                ),
            );
        }
        if composed.plan_as_text {
            // A note, not left out: what the plan said is there, as text.
            self.ctx.diagnostics.note(
                at,
                None,
                format!(
                    "session {id}: plan updates have no place in a Pi session and were written \
                     as answer text (`Plan:` and a line per step)"
                ),
            );
        }
    }
}

fn placed(n: u32, id: String, how: Placement) -> SessionPlaced {
    let how = match how {
        Placement::New if n > 0 => Placement::Beside,
        p => p,
    };
    SessionPlaced { id, placement: how }
}

/// The epoch ms a UUID v7 carries.
fn v7_ms(id: &str) -> Option<i64> {
    if !ids::is_uuid(id) || &id[14..15] != "7" {
        return None;
    }
    let hex: String = id.chars().filter(|c| *c != '-').take(12).collect();
    i64::from_str_radix(&hex, 16).ok()
}

/// The first line of the first user message in a Pi session's entries, at most 60 characters:
/// what Pi's session list shows for a session without a name (a skill's block said as the
/// command typed, `/skill:<name> <args>`, not as the block's first line).
fn first_prompt(entries: &[u8]) -> Option<String> {
    entries
        .split(|b| *b == b'\n')
        .filter_map(|line| serde_json::from_slice::<Value>(line).ok())
        .filter(|v| v["type"] == "message" && v["message"]["role"] == "user")
        .find_map(|v| {
            let content = &v["message"]["content"];
            let text = content.as_str().map(str::to_owned).or_else(|| {
                content
                    .as_array()?
                    .iter()
                    .find_map(|p| (p["type"] == "text").then(|| p["text"].as_str())?)
                    .map(str::to_owned)
            })?;
            // A skill's block as the command typed, as every prompt-made title says it.
            let text = crate::kit::skill_block::as_typed(&text);
            let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
            Some(match line.char_indices().nth(60) {
                Some((end, _)) => format!("{}…", &line[..end]),
                None => line.to_owned(),
            })
        })
}

/// A Pi file under a new id: the header's `id` replaced, every other line byte for byte, and
/// a `session_info` with the marked title appended as the new leaf (a child of the last entry,
/// so the branch Pi shows stays the same).
fn renamed(bytes: &[u8], first_end: usize, new_id: &str, title: &str) -> Option<Vec<u8>> {
    let mut header: Value = serde_json::from_slice(&bytes[..first_end]).ok()?;
    header["id"] = json!(new_id);
    let mut out = serde_json::to_vec(&header).ok()?;
    out.extend_from_slice(&bytes[first_end..]);
    if !out.ends_with(b"\n") {
        out.push(b'\n');
    }
    let mut last_id = None;
    let mut last_time = None;
    for line in bytes[first_end..].split(|b| *b == b'\n') {
        if let Ok(v) = serde_json::from_slice::<Value>(line) {
            if let Some(i) = v.get("id").and_then(Value::as_str) {
                last_id = Some(i.to_owned());
            }
            if let Some(t) = v.get("timestamp").and_then(Value::as_str) {
                last_time = Some(t.to_owned());
            }
        }
    }
    let mut eid = ids::EntryIds::new(new_id);
    let info_id = loop {
        let c = eid.next();
        if !bytes
            .windows(c.len() + 2)
            .any(|w| w[1..=c.len()] == *c.as_bytes() && w[0] == b'"')
        {
            break c;
        }
    };
    let info = json!({"type": "session_info", "id": info_id, "parentId": last_id,
                      "timestamp": last_time, "name": title});
    out.extend_from_slice(&serde_json::to_vec(&info).ok()?);
    out.push(b'\n');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untitled_copy_is_named_by_its_first_prompt() {
        let entries = b"{\"type\":\"model_change\",\"id\":\"m\"}\n{\"type\":\"message\",\"id\":\"a\",\"message\":{\"role\":\"user\",\"content\":[{\"type\":\"text\",\"text\":\"\\n  How are the tests laid out?\\nAnd why?\"}]}}\n";
        assert_eq!(
            first_prompt(entries).as_deref(),
            Some("How are the tests laid out?")
        );
        assert_eq!(first_prompt(b"{\"type\":\"model_change\"}\n"), None);
    }

    #[test]
    fn a_copy_has_a_new_id_and_a_marked_title_as_its_leaf() {
        let f = b"{\"type\":\"session\",\"version\":3,\"id\":\"a\",\"timestamp\":\"t0\",\"cwd\":\"/w\"}\n{\"type\":\"message\",\"id\":\"e1\",\"parentId\":null,\"timestamp\":\"t1\"}\n";
        let end = f.iter().position(|b| *b == b'\n').unwrap();
        let out = String::from_utf8(renamed(f, end, "b", "T ~pi").unwrap()).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(lines[0].contains("\"id\":\"b\""));
        assert_eq!(
            lines[1],
            "{\"type\":\"message\",\"id\":\"e1\",\"parentId\":null,\"timestamp\":\"t1\"}"
        );
        let info: Value = serde_json::from_str(lines[2]).unwrap();
        assert_eq!(info["parentId"], "e1");
        assert_eq!(info["name"], "T ~pi");
        assert_eq!(
            v7_ms("01a23401-fede-73bb-a519-9d9e83d26f55"),
            Some(0x01a2_3401_fede)
        );
    }
}
