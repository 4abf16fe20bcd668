//! Writing sessions into OpenCode's database (spec/harnesses/opencode.md §10, §11), each in
//! one transaction through [`crate::kit::fsops::Writer::sqlite`] (rolled back in a dry run).
//!
//! A session packed from OpenCode carries its rows: they go back as they were (row-exact). Any
//! other session is composed from its stream into `session`, `message` and `part` rows.
//! Nothing there is overwritten: when the session's rows are already there the same, it is
//! already there; when a row under one of its keys differs, the carried session is kept
//! beside it under new ids derived from `<thread>~<harness>`, titled `<title> ~<harness>`.
//! Where there is no database at all (a new machine), it is made as OpenCode 1.18.33 makes an
//! empty file on its first start: the whole schema and the 38 migrations it records for it
//! ([`SCHEMA`]), so OpenCode's next start finds every migration done and runs none. An
//! existing database is never replaced.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use asp_format::state::Session;
use asp_format::update::UpdateLines;
use rusqlite::types::Value as Sql;
use serde_json::{Value, json};

use super::ids;
use super::layout::Layout;
use super::rows::{self, Row};
use super::survey::explain;
use crate::error::ConvertError;
use crate::harness::WriteContext;
use crate::kit::accepted;
use crate::kit::acp::{self, ToolKind};
use crate::kit::beside::{MAX_COPIES, kept_beside, marked_title};
use crate::kit::conversation::{Folder, Item, ToolCall};
use crate::kit::fsops::{Created, Writer};
use crate::kit::meta;
use crate::kit::placement::{Placement, SessionPlaced, Tally};
use crate::kit::time;

/// The OpenCode version a composed session says made it (the pinned one).
const VERSION: &str = "1.18.33";

/// Tables whose existing row is shared with other sessions (a project), and may have moved on
/// since: one already there is used as it is.
const SHARED: &[&str] = &["project", "project_directory"];

/// The columns of a session row that say which session it is, the only ones compared when it
/// is there already: the others are OpenCode's to change as the session goes on. It retitles
/// and archives it, moves it into the project of the git directory it was opened in
/// (`project_id`), and adds to its times and totals (`time_updated`, `cost`, `tokens_*`,
/// `summary_*`) with every message; and how asp titles an untitled session has changed between
/// versions. Compared, each made the next import of the same session keep a copy beside it
/// (new-user trial helper-131, 1). What it holds is in its message and part rows, which are
/// compared whole.
const SESSION_IDENTITY: &[&str] = &["id", "parent_id", "directory", "time_created"];

/// Tables of OpenCode's event log, which outlive a session (no foreign key to `session`: its
/// delete leaves them) and go on (`seq` with every event): a row there already is used as it
/// is, and says nothing of whether the session is there. Counted as the session's own, they
/// made a session deleted in OpenCode come back from a backup only as a copy beside under
/// another id (new-user trial helper-130, 1).
const LOG: &[&str] = &["event_sequence", "event"];

/// Where a table's rows go in a session's transaction: a row after the rows it points to.
fn table_rank(table: &str) -> usize {
    const ORDER: &[&str] = &[
        "project",
        "project_directory",
        "session",
        "message",
        "part",
        "todo",
        "event_sequence",
        "event",
    ];
    ORDER
        .iter()
        .position(|t| *t == table)
        .unwrap_or(ORDER.len())
}

/// The schema OpenCode 1.18.33 creates in an empty database file, and its migration rows.
pub const SCHEMA: &str = include_str!("schema.sql");

/// A new database with [`SCHEMA`], as bytes, made in a scratch directory.
fn fresh_database() -> Result<(tempfile::TempDir, PathBuf, Vec<u8>), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let path = dir.path().join("opencode.db");
    let conn = rusqlite::Connection::open(&path).map_err(|e| e.to_string())?;
    conn.execute_batch(SCHEMA).map_err(|e| e.to_string())?;
    conn.pragma_update(None, "journal_mode", "WAL")
        .map_err(|e| e.to_string())?;
    drop(conn);
    let bytes = std::fs::read(&path).map_err(|e| e.to_string())?;
    Ok((dir, path, bytes))
}

/// What placing a session's rows came to.
enum Outcome {
    Written,
    Same,
    Taken,
    Misfit(String),
    /// The database's migrations are not those of the pinned OpenCode.
    Migrations(String),
}

fn place(writer: &Writer, db: &Path, list: &[Row]) -> rusqlite::Result<Outcome> {
    writer.sqlite(db, |tx| {
        // Checked in the transaction that writes, so no OpenCode migrates in between.
        if let Some(why) = super::migrations::mismatch(tx)? {
            return Ok(Outcome::Migrations(why));
        }
        let mut missing = Vec::new();
        // Whether a row of the session's own (not a project's) is there already: then every
        // one must be, or the database holds another version of the session (messages
        // reverted or deleted there), which is not this one's to fill in.
        let mut own_there = false;
        for r in list {
            let cols = rows::columns(tx, &r.table)?;
            if let Some(why) = rows::misfit(&cols, r) {
                return Ok(Outcome::Misfit(why));
            }
            let shared = SHARED.contains(&r.table.as_str()) || LOG.contains(&r.table.as_str());
            match rows::existing(tx, r)? {
                None => missing.push(r),
                // Only the columns carried are compared: a composed row leaves the others to
                // their defaults.
                Some(there)
                    if shared
                        || r.cols.iter().all(|(c, v)| {
                            (r.table == "session" && !SESSION_IDENTITY.contains(&c.as_str()))
                                || there.get(c) == Some(v)
                        }) =>
                {
                    own_there |= !shared;
                }
                Some(_) => return Ok(Outcome::Taken),
            }
        }
        if missing.is_empty() {
            return Ok(Outcome::Same);
        }
        if own_there
            && missing
                .iter()
                .any(|r| !SHARED.contains(&r.table.as_str()) && !LOG.contains(&r.table.as_str()))
        {
            return Ok(Outcome::Taken);
        }
        for r in missing {
            rows::insert(tx, r)?;
        }
        Ok(Outcome::Written)
    })
}

pub fn write_all(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    list: &[Session],
    tally: &mut Tally<'_>,
) -> Result<(), ConvertError> {
    // A dry run makes its transactions in a scratch copy of the database it would create.
    let mut scratch = None;
    let mut scratch_writer: Option<Writer> = None;
    let db = if layout.db.is_file() || list.is_empty() {
        layout.db.clone()
    } else {
        let (dir, path, bytes) = fresh_database().map_err(|e| {
            ConvertError::invalid(&layout.db, format!("cannot make a database: {e}"))
        })?;
        if ctx.writer.create_new(&layout.db, &bytes, false)? == Created::AlreadyExists {
            // A folder (or a link to nowhere) where the database goes.
            return Err(ConvertError::invalid(
                &layout.db,
                "is there but is not a file: OpenCode's database must be a file; nothing was written",
            ));
        }
        ctx.diagnostics.note(
            &layout.db,
            None,
            // Neutral in tense: a dry run answers as the real run does.
            "there was no OpenCode database in the home: the import makes one as OpenCode \
             1.18.33 makes one on its first start",
        );
        let db = if ctx.writer.is_dry_run() {
            scratch_writer = Some(Writer::new(true));
            path
        } else {
            layout.db.clone()
        };
        scratch = Some(dir);
        db
    };
    // A sub-agent session composed from its stream points at its parent's row (`parent_id`),
    // and the parent's call that started it at the child (`metadata.sessionId`): parents go
    // first, so a child knows where its parent was placed.
    let ids: HashSet<&str> = list.iter().map(|s| s.id.as_str()).collect();
    let children: HashMap<String, String> = list
        .iter()
        .filter(|s| carried_parent(s, &ids).is_some())
        .map(|s| (s.id.to_string(), ids::session(s.id.as_str(), base_ms(s))))
        .collect();
    let mut placed_ids: HashMap<String, String> = HashMap::new();
    for s in parents_first(list, &ids) {
        ctx.progress.item(s.id.as_str());
        let links = Links {
            parent: carried_parent(s, &ids)
                .and_then(|p| placed_ids.get(p))
                .map(String::as_str),
            children: &children,
        };
        let writer = scratch_writer.as_ref().unwrap_or(ctx.writer);
        let placed = write_one(
            Database {
                open: &db,
                named: &layout.db,
            },
            writer,
            ctx,
            s,
            &links,
        )?;
        if !placed.id.is_empty() {
            placed_ids.insert(s.id.to_string(), placed.id.clone());
        }
        tally.session(s.id.as_str(), placed);
    }
    drop(scratch);
    Ok(())
}

/// The parent of a sub-agent session composed from its stream, when the parent is carried
/// with it (among `ids`).
fn carried_parent<'s>(s: &'s Session, ids: &HashSet<&str>) -> Option<&'s str> {
    meta::parent_id(s.meta.as_ref()).filter(|p| !is_native(s) && ids.contains(p))
}

/// `list` in the order to write it: each session after its carried parent (a
/// sub-agent's sub-agent after its parent, whatever the list's order), else as listed. A
/// chain that loops back on itself, which no harness writes, goes in list order.
fn parents_first<'a>(list: &'a [Session], ids: &HashSet<&str>) -> Vec<&'a Session> {
    let at: HashMap<&str, usize> = list
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    let depth = |mut i: usize| {
        let mut d = 0;
        while let Some(&p) = carried_parent(&list[i], ids).and_then(|p| at.get(p)) {
            d += 1;
            i = p;
            if d > list.len() {
                return 0;
            }
        }
        d
    };
    let mut order: Vec<(usize, usize)> = (0..list.len()).map(|i| (depth(i), i)).collect();
    order.sort_unstable();
    order.into_iter().map(|(_, i)| &list[i]).collect()
}

/// The database a session is written into.
#[derive(Clone, Copy)]
struct Database<'a> {
    /// The file opened: the user's database, or in a dry run into a home without one, the
    /// scratch database standing in for it.
    open: &'a Path,
    /// The file findings name: always the user's database, so a dry run says what the real
    /// run would of the file the user has, never of a scratch copy thrown away.
    named: &'a Path,
}

/// `writer` is the context's, or in a dry run into a home without a database, one for the
/// scratch database standing in for it (outside the home, rolled back, thrown away).
fn write_one(
    db: Database<'_>,
    writer: &Writer,
    ctx: &WriteContext<'_>,
    s: &Session,
    links: &Links<'_>,
) -> Result<SessionPlaced, ConvertError> {
    let id = s.id.as_str();
    let native = s.native.as_ref().filter(|_| is_native(s));
    let harness = s.harness.as_ref().map_or("asp", |h| h.as_str()).to_owned();
    let mut items: Option<Vec<Item>> = None;
    for n in 0..MAX_COPIES {
        let (list, new_id) = match (n, native) {
            (0, Some(nat)) => {
                let mut list = Vec::new();
                for f in &nat.files {
                    let bytes = ctx.blobs.read_all(&f.content)?;
                    match Row::parse(&bytes) {
                        Some(r) => list.push(r),
                        None => {
                            return Ok(SessionPlaced::refused(format!(
                                "session {id}: {} is not a row document; not written",
                                f.path
                            )));
                        }
                    }
                }
                // A state keeps native files sorted by path; rows go in what they point to first.
                list.sort_by_key(|r| table_rank(&r.table));
                let Some(sid) = list
                    .iter()
                    .find(|r| r.table == "session")
                    .and_then(|r| r.text("id"))
                    .map(str::to_owned)
                else {
                    return Ok(SessionPlaced::refused(format!(
                        "session {id}: its rows have no session row; not written"
                    )));
                };
                (list, sid)
            }
            _ => {
                if items.is_none() {
                    let folded = fold(ctx, s)?;
                    let kinds = left_out(&folded);
                    if !kinds.is_empty() {
                        ctx.diagnostics.left_out(
                            db.named,
                            None,
                            format!(
                                "session {id}: {} updates have no place in OpenCode's rows and \
                                 were left out",
                                kinds.join(", ")
                            ),
                        );
                    }
                    items = Some(folded);
                }
                let its = items.as_deref().unwrap_or_default();
                let name = if n == 0 {
                    id.to_owned()
                } else {
                    kept_beside(id, &s.title, Some(&harness), n).name
                };
                let how = Composing {
                    name: &name,
                    beside: n > 0,
                    harness: &harness,
                    links,
                };
                let Some(list) = compose(s, its, &how, ctx) else {
                    return Ok(SessionPlaced::refused(format!(
                        "session {id} has no prompt OpenCode can show; not written"
                    )));
                };
                let sid = list[1].text("id").unwrap_or_default().to_owned();
                (list, sid)
            }
        };
        match place(writer, db.open, &list) {
            Ok(Outcome::Written) => {
                if n > 0 {
                    ctx.diagnostics.note(
                        db.named,
                        None,
                        format!(
                            "a different version of session {id} is already in OpenCode; the \
                             carried one was kept beside it as session {new_id}"
                        ),
                    );
                }
                let how = if n > 0 {
                    Placement::Beside
                } else {
                    Placement::New
                };
                return Ok(SessionPlaced {
                    id: new_id,
                    placement: how,
                });
            }
            Ok(Outcome::Same) => return Ok(SessionPlaced::already_there(new_id)),
            Ok(Outcome::Taken) => continue,
            Ok(Outcome::Migrations(why)) => {
                return Ok(SessionPlaced::refused(format!(
                    "session {id}: {}: {why}; not written",
                    db.named.display()
                )));
            }
            Ok(Outcome::Misfit(why)) => {
                return Ok(SessionPlaced::refused(format!(
                    "session {id}: {why} (OpenCode's schema moved on); not written"
                )));
            }
            Err(e) if super::survey::is_locked(&e) => {
                return Err(super::survey::locked(db.named, &e));
            }
            Err(e) => {
                return Ok(SessionPlaced::refused(format!(
                    "session {id}: {}: {}; not written",
                    db.named.display(),
                    explain(&e)
                )));
            }
        }
    }
    Ok(SessionPlaced::refused(format!(
        "session {id}: {MAX_COPIES} different versions of it are already in OpenCode; not written"
    )))
}

/// A session packed from OpenCode, whose rows go back as they were.
fn is_native(s: &Session) -> bool {
    s.native
        .as_ref()
        .is_some_and(|n| n.harness.as_str() == super::NAME && !n.files.is_empty())
}

/// The time a composed session's id is made from: when the source last updated it, so the same
/// session carried again gets the same id and is found there.
fn base_ms(s: &Session) -> i64 {
    s.updated_at
        .as_deref()
        .and_then(time::parse)
        .map_or(0, time::millis)
}

/// How a composed session links to the sessions carried with it.
struct Links<'a> {
    /// Where its parent was placed, when it is a sub-agent session whose parent is carried.
    parent: Option<&'a str>,
    /// The id each sub-agent session carried with it is composed under (source id → `ses_…`).
    children: &'a HashMap<String, String>,
}

/// What a composed session is written as.
struct Composing<'a> {
    /// The name its ids derive from: the source id, or the `<thread>~<harness>` of a copy kept
    /// beside.
    name: &'a str,
    /// A copy kept beside a different version: its title is marked `~<harness>`.
    beside: bool,
    /// The harness it came from (the provider its messages name).
    harness: &'a str,
    links: &'a Links<'a>,
}

/// The times of composed rows: each item's own time where the source kept one, made strictly
/// later than the one before (OpenCode orders messages and parts by their ids, which carry the
/// time); an item without a time a millisecond after the one before it.
struct Clock {
    last: Option<i64>,
    /// The time before the first item, when it has none: the first time the source kept, else
    /// when it last updated the session.
    start: i64,
}

impl Clock {
    fn new(items: &[Item], base: i64) -> Self {
        Clock {
            last: None,
            start: items
                .iter()
                .find_map(Item::time)
                .map_or(base, |t| t - 1)
                .max(-1),
        }
    }

    fn tick(&mut self, item: &Item) -> i64 {
        let after = self.last.unwrap_or(self.start).saturating_add(1);
        // Ids hold no time before 1970: an earlier one is taken as 1970's first.
        let ms = match (item.time().map(|t| t.max(0)), self.last) {
            (Some(t), Some(_)) => t.max(after),
            (Some(t), None) => t,
            (None, _) => after,
        };
        self.last = Some(ms);
        ms
    }
}

fn fold(ctx: &WriteContext<'_>, s: &Session) -> Result<Vec<Item>, ConvertError> {
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

/// The kinds of update the composed rows have no place for, in stream order: plans (OpenCode
/// keeps a todo list only as its own `todowrite` calls) and the kinds the conversation folder
/// passes on as they came, but the title (the session's own field) and settings.
fn left_out(items: &[Item]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for item in items {
        let k = match item {
            Item::Plan { .. } => "plan",
            Item::Other(v) => v
                .get("sessionUpdate")
                .and_then(Value::as_str)
                .unwrap_or("unknown"),
            _ => continue,
        };
        // (Usage is said as left out, as every other harness says it: the composed rows'
        // token totals stay zero; new-user trial helper-131, 4.)
        if !matches!(k, "session_info_update" | "config_option_update") && !out.contains(&k) {
            out.push(k);
        }
    }
    out
}

fn text_row(table: &str, cols: Vec<(&str, Sql)>) -> Row {
    Row {
        table: table.to_owned(),
        key: vec!["id".to_owned()],
        cols: cols.into_iter().map(|(c, v)| (c.to_owned(), v)).collect(),
    }
}

fn t(s: impl Into<String>) -> Sql {
    Sql::Text(s.into())
}

/// The tool name OpenCode knows a call by: the one it came with, else one of its own of the
/// same kind.
fn tool_name(c: &ToolCall) -> String {
    if let Some(n) = c
        .meta
        .get("opencode")
        .and_then(|o| o.get("tool"))
        .and_then(Value::as_str)
    {
        return n.to_owned();
    }
    // Another harness's tool by the name it gave it: OpenCode's own name for a tool every
    // harness has, else that name made safe. By its ACP kind alone, a Copilot CLI `task` was
    // a tool named `tool` (new-user trial helper-131, 9).
    use crate::kit::tool_names::{Common, api_safe, source_name};
    if let Some(name) = source_name(&c.meta) {
        return match Common::of(name) {
            Some(Common::Read) => "read".to_owned(),
            Some(Common::Write) => "write".to_owned(),
            Some(Common::Edit) => "edit".to_owned(),
            Some(Common::Shell) => "bash".to_owned(),
            Some(Common::Grep) => "grep".to_owned(),
            Some(Common::Glob) => "glob".to_owned(),
            Some(Common::List) => "list".to_owned(),
            Some(Common::Fetch) => "webfetch".to_owned(),
            None => api_safe(name).unwrap_or_else(|| "tool".to_owned()),
        };
    }
    match c.kind {
        ToolKind::Read => "read",
        ToolKind::Edit => "edit",
        ToolKind::Search => "grep",
        ToolKind::Execute => "bash",
        ToolKind::Fetch => "webfetch",
        ToolKind::Think => "task",
        _ => "tool",
    }
    .to_owned()
}

fn tool_part(c: &ToolCall, ms: i64, children: Option<&HashMap<String, String>>) -> Value {
    let input = c
        .raw_input
        .clone()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    let output = {
        let text = c.content_text();
        if text.is_empty() {
            match &c.raw_output {
                Some(Value::String(s)) => s.clone(),
                Some(v @ Value::Object(_)) => v
                    .get("output")
                    .or_else(|| v.get("error"))
                    .and_then(Value::as_str)
                    .map_or_else(|| v.to_string(), str::to_owned),
                Some(v) if !v.is_null() => v.to_string(),
                _ => String::new(),
            }
        } else {
            text
        }
    };
    let state = if c.failed()
        || c.status.is_none()
        || !matches!(c.status, Some(crate::kit::acp::ToolStatus::Completed))
    {
        let err = if c.failed() && !output.is_empty() {
            output
        } else if c.failed() {
            "failed".to_owned()
        } else {
            "[Tool execution was interrupted]".to_owned()
        };
        json!({"status": "error", "input": input, "error": err,
               "time": {"start": ms, "end": ms}})
    } else {
        // The call that started a sub-agent carried along names the child's session, as
        // OpenCode's `task` does.
        let child = meta::subagent_session_id(Some(&c.meta)).zip(children);
        let metadata = match child.and_then(|(i, children)| children.get(i)) {
            Some(child) => json!({"sessionId": child}),
            None => json!({}),
        };
        json!({"status": "completed", "input": input, "output": output, "title": c.title,
               "metadata": metadata, "time": {"start": ms, "end": ms}})
    };
    json!({"type": "tool", "tool": tool_name(c), "callID": c.id, "state": state})
}

/// A user content block as a part.
fn user_part(b: &Value) -> Option<Value> {
    match b.get("type").and_then(Value::as_str)? {
        "text" => Some(json!({"type": "text", "text": b.get("text")?})),
        "image" => {
            let mime = b
                .get("mimeType")
                .and_then(Value::as_str)
                .unwrap_or("image/png");
            let data = b.get("data").and_then(Value::as_str)?;
            let name = b
                .pointer("/_meta/opencode/filename")
                .and_then(Value::as_str)
                .unwrap_or("image");
            Some(json!({"type": "file", "mime": mime, "filename": name,
                        "url": format!("data:{mime};base64,{data}")}))
        }
        "resource_link" => Some(json!({"type": "file",
            "mime": b.get("mimeType").and_then(Value::as_str).unwrap_or("text/plain"),
            "filename": b.get("name"), "url": b.get("uri")})),
        "resource" => {
            let r = b.get("resource")?;
            Some(
                json!({"type": "text", "text": r.get("text").and_then(Value::as_str)
                .map_or_else(|| r.get("uri").map(Value::to_string).unwrap_or_default(), str::to_owned)}),
            )
        }
        _ => None,
    }
}

/// A composed message before it becomes rows.
struct Message {
    id: String,
    /// When it was created (the first of its parts' times).
    ms: i64,
    /// The row's `data`.
    data: Value,
    /// Its parts, each with its time.
    parts: Vec<(i64, Value)>,
}

impl Message {
    fn is_user(&self) -> bool {
        self.data["role"] == "user"
    }
}

/// A model as OpenCode names it in a message: `providerID` and `modelID`.
#[derive(Debug, Clone, PartialEq)]
struct Model {
    provider: String,
    id: String,
}

impl Model {
    /// The model after `item`: the one a `config_option_update` chooses, named as OpenCode
    /// names it (`anthropic/claude-sonnet-4-5`: a `provider/model` spelling whose provider is
    /// an id, as OpenCode's and Pi's are, as it is; a bare id whose provider OpenCode knows by
    /// that name); `unnamed` for a model it cannot name (Claude Code's `opus`, a Qwen model, a
    /// Bedrock ARN), so no message claims a model that did not answer.
    fn after(self, item: &Item, unnamed: &Model) -> Model {
        let Item::Other(u) = item else {
            return self;
        };
        let Some(chosen) = acp::chosen(u, "model") else {
            return self;
        };
        let named = match chosen.split_once('/') {
            Some(_) => Some(chosen.to_owned()),
            None => accepted::with_provider(chosen),
        };
        let is_id = |p: &str| {
            !p.is_empty()
                && p.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_.".contains(c))
        };
        match named.as_deref().and_then(|n| n.split_once('/')) {
            Some((p, m)) if is_id(p) && !m.is_empty() => Model {
                provider: p.to_owned(),
                id: m.to_owned(),
            },
            _ => unnamed.clone(),
        }
    }
}

/// The rows of a session composed from its stream: the `global` project, the session, then
/// each prompt as a user message and what answered it as one assistant message. `None` when
/// there is no prompt to show.
fn compose(
    s: &Session,
    items: &[Item],
    how: &Composing<'_>,
    ctx: &WriteContext<'_>,
) -> Option<Vec<Row>> {
    let (name, harness) = (how.name, how.harness);
    let base = base_ms(s);
    let cwd = s
        .cwd
        .clone()
        .unwrap_or_else(|| ctx.home.absolute_dir().to_string_lossy().into_owned());
    let sid = ids::session(name, base);
    // The model each message names: the one the stream says answered, where OpenCode can
    // name its provider; else the source harness and `imported`.
    let unnamed = Model {
        provider: harness.to_owned(),
        id: "imported".to_owned(),
    };
    let mut model = unnamed.clone();
    let mut msgs: Vec<Message> = Vec::new();
    let mut n = 0u64;
    let mut dropped = 0usize;
    let mut clock = Clock::new(items, base);
    for (i, item) in items.iter().enumerate() {
        match item {
            Item::User(m) => {
                let parts: Vec<Value> = m.blocks.iter().filter_map(user_part).collect();
                if parts.is_empty() {
                    continue;
                }
                let ms = clock.tick(item);
                n += 1;
                let mid = ids::ascending("msg", name, ms, n);
                // A prompt goes to the model that answers it: a change of model recorded
                // between the prompt and its answer (Claude Code records it with the answer)
                // is the prompt's.
                let asked = items[i + 1..]
                    .iter()
                    .take_while(|it| matches!(it, Item::Other(_) | Item::Plan { .. }))
                    .fold(model.clone(), |m, it| m.after(it, &unnamed));
                let info = json!({"role": "user", "time": {"created": ms}, "agent": "build",
                                  "model": {"providerID": asked.provider,
                                            "modelID": asked.id}});
                let parts = parts.into_iter().map(|p| (ms, p)).collect();
                msgs.push(Message {
                    id: mid,
                    ms,
                    data: info,
                    parts,
                });
            }
            Item::Agent(_) | Item::Thought(_) | Item::Tool(_) => {
                let Some(user) = msgs
                    .iter()
                    .rev()
                    .find(|m| m.is_user())
                    .map(|m| m.id.clone())
                else {
                    dropped += 1;
                    continue;
                };
                let ms = clock.tick(item);
                if msgs.last().is_some_and(Message::is_user) {
                    n += 1;
                    let mid = ids::ascending("msg", name, ms, n);
                    let info = json!({"parentID": user, "role": "assistant", "mode": "build",
                        "agent": "build", "path": {"cwd": cwd, "root": cwd}, "cost": 0,
                        "tokens": {"input": 0, "output": 0, "reasoning": 0,
                                   "cache": {"read": 0, "write": 0}},
                        "modelID": model.id, "providerID": model.provider,
                        "time": {"created": ms, "completed": ms}, "finish": "stop"});
                    msgs.push(Message {
                        id: mid,
                        ms,
                        data: info,
                        parts: Vec::new(),
                    });
                }
                let part = match item {
                    Item::Agent(m) => json!({"type": "text", "text": m.text(),
                                             "time": {"start": ms, "end": ms}}),
                    Item::Thought(m) => json!({"type": "reasoning", "text": m.text(),
                                               "time": {"start": ms, "end": ms}}),
                    // A copy kept beside names no child: the children's own ids were
                    // worked out for the first placing, which is not where this copy is.
                    Item::Tool(c) => tool_part(c, ms, (!how.beside).then_some(how.links.children)),
                    _ => unreachable!("matched above"),
                };
                let last = msgs.last_mut().expect("pushed above");
                last.data["time"]["completed"] = json!(ms);
                last.parts.push((ms, part));
            }
            Item::Other(_) => model = model.after(item, &unnamed),
            Item::Plan { .. } => {}
        }
    }
    if !msgs.iter().any(Message::is_user) {
        return None;
    }
    if dropped > 0 {
        ctx.diagnostics.note(
            &ctx.home.dir,
            None,
            format!(
                "session {}: {dropped} answers came before any prompt; OpenCode keeps an answer \
                 under its prompt, so they were left out",
                s.id
            ),
        );
    }
    // An untitled session is titled by its first prompt as the other writers title one
    // (a skill's block given back as the command typed).
    let title = match crate::kit::conversation::title_or_prompt(&s.title, items) {
        t if t.trim().is_empty() => "Imported session".to_owned(),
        t => t,
    };
    // A copy's title is marked, the one made of its first prompt too (not the bare marker).
    let title = if how.beside {
        marked_title(&title, harness)
    } else {
        title
    };
    // The session began with its first message and was last updated with its last one, or
    // later when the source says so.
    let created = msgs.first().map_or(base, |m| m.ms);
    let updated = msgs
        .iter()
        .flat_map(|m| m.parts.iter().map(|p| p.0).chain([m.ms]))
        .max()
        .unwrap_or(base)
        .max(base);
    let mut session = vec![
        ("id", t(&sid)),
        ("project_id", t("global")),
        ("slug", t(ids::slug(name))),
        ("directory", t(&cwd)),
        ("path", t("")),
        ("title", t(title)),
        ("version", t(VERSION)),
        ("time_created", Sql::Integer(created)),
        ("time_updated", Sql::Integer(updated)),
    ];
    if let Some(parent) = how.links.parent {
        session.push(("parent_id", t(parent)));
    }
    // A session archived where it was read is archived here too (out of the list, kept).
    if let Some(a) = crate::kit::archive::archived(s) {
        let at = crate::kit::archive::archived_at(s, a, time::from_millis(updated));
        session.push(("time_archived", Sql::Integer(time::millis(at))));
    }
    let mut out = vec![
        text_row(
            "project",
            vec![
                ("id", t("global")),
                ("worktree", t("/")),
                ("time_created", Sql::Integer(base)),
                ("time_updated", Sql::Integer(base)),
                ("sandboxes", t("[]")),
            ],
        ),
        text_row("session", session),
    ];
    let mut pn: u64;
    let mut parts = Vec::new();
    for Message {
        id: mid,
        ms,
        data: info,
        parts: ps,
    } in msgs
    {
        pn = 0;
        let done = ps.last().map_or(ms, |p| p.0);
        out.push(text_row(
            "message",
            vec![
                ("id", t(&mid)),
                ("session_id", t(&sid)),
                ("time_created", Sql::Integer(ms)),
                ("time_updated", Sql::Integer(done)),
                ("data", t(info.to_string())),
            ],
        ));
        for (at, p) in ps {
            pn += 1;
            parts.push(text_row(
                "part",
                vec![
                    ("id", t(ids::ascending("prt", name, at, pn))),
                    ("message_id", t(&mid)),
                    ("session_id", t(&sid)),
                    ("time_created", Sql::Integer(at)),
                    ("time_updated", Sql::Integer(at)),
                    ("data", t(p.to_string())),
                ],
            ));
        }
    }
    out.extend(parts);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::digest::Descriptor;
    use asp_format::name::SessionId;
    use serde_json::Map;

    /// A model the stream chose, as each message names it: a bare id by the provider OpenCode
    /// knows it under, a `provider/model` spelling as it is (the model part may have slashes
    /// of its own), anything else (an alias, a Bedrock ARN) the source harness and `imported`;
    /// an update that chooses no model changes nothing.
    #[test]
    fn a_model_is_named_as_opencode_names_it_or_not_at_all() {
        let unnamed = Model {
            provider: "claude-code".into(),
            id: "imported".into(),
        };
        let choose = |m: &str| {
            Item::Other(json!({"sessionUpdate": "config_option_update",
                "configOptions": [acp::select_option("model", "Model", Some("model"), m)]}))
        };
        let after = |m: &str| {
            let Model { provider, id } = unnamed.clone().after(&choose(m), &unnamed);
            format!("{provider}/{id}")
        };
        assert_eq!(after("claude-opus-4-6"), "anthropic/claude-opus-4-6");
        assert_eq!(after("gpt-5.5"), "openai/gpt-5.5");
        assert_eq!(
            after("openrouter/qwen/qwen3-coder"),
            "openrouter/qwen/qwen3-coder"
        );
        for unknown in [
            "opus",
            "qwen3-coder-plus",
            "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude",
            "/x",
        ] {
            assert_eq!(after(unknown), "claude-code/imported", "{unknown}");
        }
        let chosen = Model {
            provider: "openai".into(),
            id: "gpt-5.5".into(),
        };
        let other = Item::Other(json!({"sessionUpdate": "usage_update", "used": 1, "size": 2}));
        assert_eq!(chosen.clone().after(&other, &unnamed), chosen);
    }

    fn session(id: &str, parent: Option<&str>) -> Session {
        let mut s = Session {
            id: SessionId::new(id).unwrap(),
            title: String::new(),
            harness: None,
            cwd: None,
            updated_at: None,
            updates: Descriptor::of(b""),
            native: None,
            meta: None,
        };
        if let Some(p) = parent {
            meta::set_parent(&mut s.meta, &meta::Parent::new(p));
        }
        s
    }

    #[test]
    fn a_sub_agents_sub_agent_is_written_after_its_parent_whatever_the_list_order() {
        let list = [
            session("grandchild", Some("child")),
            session("child", Some("root")),
            session("root", None),
            session("orphan", Some("not carried")),
            session("loop-a", Some("loop-b")),
            session("loop-b", Some("loop-a")),
        ];
        let ids: HashSet<&str> = list.iter().map(|s| s.id.as_str()).collect();
        let order: Vec<&str> = parents_first(&list, &ids)
            .into_iter()
            .map(|s| s.id.as_str())
            .collect();
        assert_eq!(
            order,
            ["root", "orphan", "loop-a", "loop-b", "child", "grandchild"]
        );
    }

    fn at(ms: Option<i64>) -> Item {
        let mut meta = Map::new();
        if let Some(ms) = ms {
            meta.insert("x".into(), json!({"timestamp": ms}));
        }
        Item::Agent(crate::kit::conversation::Message {
            message_id: None,
            blocks: Vec::new(),
            metas: vec![meta],
        })
    }

    #[test]
    fn composed_times_are_the_sources_made_strictly_later_and_never_before_1970() {
        let items = [
            at(None),
            at(Some(100)),
            at(Some(50)),
            at(None),
            at(Some(i64::MAX)),
        ];
        let mut clock = Clock::new(&items, 7);
        let times: Vec<i64> = items.iter().map(|i| clock.tick(i)).collect();
        // The first has none: a millisecond before the first time kept. A time going back is
        // made a millisecond later; one that is no time (after 9999) is none.
        assert_eq!(times, [100, 101, 102, 103, 104]);
        let before_1970 = [at(None)];
        let mut clock = Clock::new(&before_1970, 0);
        assert_eq!(clock.tick(&before_1970[0]), 1);
        let items = [at(Some(0)), at(Some(0))];
        let mut clock = Clock::new(&items, 0);
        let times: Vec<i64> = items.iter().map(|i| clock.tick(i)).collect();
        assert_eq!(times, [0, 1]);
    }
}
