//! The chain of a transcript as the ACP `session/update` stream `session/load` replays.
//!
//! Conversation rows become message chunks, tool calls and plans, as Claude Code's ACP adapter
//! replays them. What ACP has no update kind for is not invented: title records become
//! `session_info_update`, permission modes `current_mode_update`, models
//! `config_option_update`, usage `usage_update` and `_meta.claudeCode.usage`; every record that
//! gives no update of its own (compaction boundaries, injected `isMeta` rows, hook and timing
//! rows, file-history snapshots, queue operations, ...) travels verbatim under
//! `_meta.claudeCode.recordsBefore` of the next update (or `recordsAfter` of the last one).

use std::collections::{HashMap, HashSet};
use std::io::Write;

use serde_json::{Value, json};

use super::calls::{self, image_block};
use super::line::{self, Block, Carried, Content, Line};
use super::transcript::{Chain, Record, TOOL_CALLS, str_at};
use crate::error::ConvertError;
use crate::kit::acp::{
    self, Chunk, PlanEntry, PlanStatus, Priority, ToolFields, ToolStatus, Update,
};
use crate::kit::text::collapse_whitespace;

/// The context window the adapter assumes when it knows no better (claude-agent-acp's
/// `DEFAULT_CONTEXT_WINDOW`); transcripts do not record it.
pub const DEFAULT_CONTEXT_WINDOW: u64 = 200_000;

/// Slash commands the adapter does not replay as prompts.
const HIDDEN_COMMANDS: &[&str] = &[
    "/context",
    "/heapdump",
    "/extra-usage",
    "/compact",
    "/model",
    "/mcp",
    "/status",
    "/usage",
];

/// Markup Claude Code wraps around command invocations and injected text.
const MARKERS: &[&str] = &[
    "command-name",
    "command-message",
    "command-args",
    "local-command-stdout",
    "local-command-stderr",
    "system-reminder",
    "task-notification",
];

/// What the replay learned about the session besides its updates.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// The title from title records (custom > ai > summary), if any.
    pub title: Option<String>,
    /// Which record it came from: `custom-title`, `ai-title` or `summary`
    /// ([`crate::kit::title`]).
    pub title_source: Option<&'static str>,
    /// The first real prompt, shown when there is no title.
    pub first_prompt: Option<String>,
    pub updates: u64,
    /// The last model and permission mode seen.
    pub model: Option<String>,
    pub mode: Option<String>,
}

/// Inputs of one replay.
#[derive(Debug)]
pub struct Source<'a> {
    /// Every record of the transcript, in file order, as the first pass keeps them
    /// ([`super::transcript::Skeleton`]): the replay reads each record it replays whole
    /// through the loader handed to [`replay`].
    pub records: &'a [Record],
    pub chain: &'a Chain,
    pub cwd: Option<&'a str>,
    /// `tool_use` id of an Agent/Task call → the subagent's session id in the state.
    pub subagents: &'a HashMap<String, String>,
    /// `tool_use` id → tool name over the whole file (a result may sit off the chain's
    /// order); see [`note_tool_names`].
    pub tool_names: &'a HashMap<String, String>,
}

/// Adds the tool calls of one record to a `tool_use` id → tool name map.
pub fn note_tool_names(r: &Record, names: &mut HashMap<String, String>) {
    for b in r.tool_blocks() {
        if b.str("type").is_some_and(|t| TOOL_CALLS.contains(&t))
            && let (Some(id), Some(name)) = (b.str("id"), b.str("name"))
        {
            names.insert(id.to_owned(), name.to_owned());
        }
    }
}

/// Where the replay reads the records it replays whole.
pub trait LineSource {
    /// The bytes of record `i`'s line of [`Source::records`]; `None` when it cannot be read
    /// (the source reports why), and the record is then left out.
    fn line(&mut self, i: usize) -> Option<&[u8]>;
    /// Reports that record `i`'s line, read back, is not the JSON object the first pass saw;
    /// the record is left out.
    fn changed(&mut self, i: usize);
    /// Reports that record `i`'s line holds bytes that are not UTF-8, read as U+FFFD as Claude
    /// Code (Node reading the file as UTF-8) reads them.
    fn not_utf8(&mut self, i: usize);
}

type Sink<'s> = dyn FnMut(Out) -> Result<(), ConvertError> + 's;

/// `_meta.claudeCode` of an update: members in the order they were set; setting one again
/// replaces its value where it is, as a JSON object map does.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ClaudeMeta(Vec<(&'static str, Carried)>);

impl ClaudeMeta {
    fn insert(&mut self, key: &'static str, value: Carried) {
        match self.0.iter_mut().find(|(k, _)| *k == key) {
            Some(member) => member.1 = value,
            None => self.0.push((key, value)),
        }
    }
}

/// One update of the stream as the replay makes it. What it carries from the transcript
/// (`rawInput`, `rawOutput`, `_meta.claudeCode`) is kept beside the typed [`Update`] as
/// [`Carried`] parts, so that text is copied into the stream rather than parsed and escaped
/// again; these are the last members of an update in ACP's order, so [`Out::write`] writes
/// them after the rest.
#[derive(Debug, Clone, PartialEq)]
pub struct Out {
    /// Without `rawInput`, `rawOutput` and `claudeCode` (other `_meta` namespaces stay here).
    update: Update,
    raw_input: Option<Carried>,
    raw_output: Option<Carried>,
    claude: Option<ClaudeMeta>,
}

impl From<Update> for Out {
    fn from(update: Update) -> Out {
        Out {
            update,
            raw_input: None,
            raw_output: None,
            claude: None,
        }
    }
}

impl Out {
    /// Writes the notification params of session `session_id` as one compact JSON line
    /// (without `\n`): the bytes `serde_json` writes for [`Update::to_params`] of the whole
    /// update. `scratch` is reused between updates.
    pub fn write(
        mut self,
        session_id: &str,
        w: &mut dyn Write,
        scratch: &mut Vec<u8>,
    ) -> std::io::Result<()> {
        w.write_all(b"{\"sessionId\":")?;
        serde_json::to_writer(&mut *w, session_id)?;
        w.write_all(b",\"update\":")?;
        self.debug_check_once();
        let meta = self.update.meta_mut().take();
        scratch.clear();
        serde_json::to_writer(&mut *scratch, &self.update)?;
        // The update without its last members, which follow.
        let open = scratch
            .strip_suffix(b"}")
            .expect("an update is a JSON object");
        w.write_all(open)?;
        for (key, part) in [
            (&b",\"rawInput\":"[..], &self.raw_input),
            (b",\"rawOutput\":", &self.raw_output),
        ] {
            if let Some(part) = part {
                w.write_all(key)?;
                part.write(w)?;
            }
        }
        if meta.is_some() || self.claude.is_some() {
            w.write_all(b",\"_meta\":{")?;
            let mut first = true;
            for (k, v) in meta.iter().flatten() {
                if !first {
                    w.write_all(b",")?;
                }
                first = false;
                serde_json::to_writer(&mut *w, k)?;
                w.write_all(b":")?;
                serde_json::to_writer(&mut *w, v)?;
            }
            if let Some(cc) = &self.claude {
                if !first {
                    w.write_all(b",")?;
                }
                w.write_all(b"\"claudeCode\":{")?;
                for (i, (k, v)) in cc.0.iter().enumerate() {
                    if i > 0 {
                        w.write_all(b",")?;
                    }
                    serde_json::to_writer(&mut *w, k)?;
                    w.write_all(b":")?;
                    v.write(w)?;
                }
                w.write_all(b"}")?;
            }
            w.write_all(b"}")?;
        }
        w.write_all(b"}}")
    }

    /// Each carried member must be in one place only: the typed update must not also hold
    /// `rawInput`, `rawOutput` or `_meta.claudeCode` that a carried part gives, or
    /// [`Out::write`] would write the key twice.
    fn debug_check_once(&self) {
        if let Update::ToolCall { fields, .. } | Update::ToolCallUpdate { fields, .. } =
            &self.update
        {
            debug_assert!(
                self.raw_input.is_none() || fields.raw_input.is_none(),
                "rawInput both typed and carried"
            );
            debug_assert!(
                self.raw_output.is_none() || fields.raw_output.is_none(),
                "rawOutput both typed and carried"
            );
        }
        debug_assert!(
            self.claude.is_none()
                || !self
                    .update
                    .meta()
                    .is_some_and(|m| m.contains_key("claudeCode")),
            "_meta.claudeCode both typed and carried"
        );
    }

    /// The update whole, as the typed form gives it (for tests).
    #[cfg(test)]
    pub fn whole(&self) -> Update {
        self.debug_check_once();
        let mut u = self.update.clone();
        if let Update::ToolCall { fields, .. } | Update::ToolCallUpdate { fields, .. } = &mut u {
            fields.raw_input = self.raw_input.as_ref().map(Carried::to_value);
            fields.raw_output = self.raw_output.as_ref().map(Carried::to_value);
        }
        if let Some(cc) = &self.claude {
            let cc = cc.0.iter().map(|(k, v)| ((*k).to_owned(), v.to_value()));
            u.meta_mut()
                .get_or_insert_with(serde_json::Map::new)
                .insert("claudeCode".into(), Value::Object(cc.collect()));
        }
        u
    }
}

/// Holds back the last update so records after it (and usage of its response) can be
/// attached before it is written.
struct Emitter<'s, 'k> {
    held: Option<Out>,
    held_response: Option<String>,
    records: Vec<Carried>,
    blocks: Vec<Carried>,
    sink: &'k mut Sink<'s>,
    count: u64,
}

fn claude_meta(u: &mut Out) -> &mut ClaudeMeta {
    u.claude.get_or_insert_with(ClaudeMeta::default)
}

impl<'s, 'k> Emitter<'s, 'k> {
    fn emit(&mut self, mut u: Out, response: Option<&str>) -> Result<(), ConvertError> {
        if !self.records.is_empty() {
            claude_meta(&mut u).insert(
                "recordsBefore",
                Carried::List(std::mem::take(&mut self.records)),
            );
        }
        if !self.blocks.is_empty() {
            claude_meta(&mut u).insert(
                "blocksBefore",
                Carried::List(std::mem::take(&mut self.blocks)),
            );
        }
        if let Some(prev) = self.held.replace(u) {
            (self.sink)(prev)?;
        }
        self.held_response = response.map(str::to_owned);
        self.count += 1;
        Ok(())
    }

    fn finish(mut self) -> Result<u64, ConvertError> {
        if let Some(mut last) = self.held.take() {
            if !self.records.is_empty() {
                claude_meta(&mut last).insert("recordsAfter", Carried::List(self.records));
            }
            if !self.blocks.is_empty() {
                claude_meta(&mut last).insert("blocksAfter", Carried::List(self.blocks));
            }
            (self.sink)(last)?;
        }
        Ok(self.count)
    }
}

/// Title state: the effective title is the last custom title, else the last AI title, else a
/// summary of the live branch.
#[derive(Default)]
struct Titles {
    custom: Option<String>,
    ai: Option<String>,
    summary: Option<String>,
    shown: Option<String>,
}

impl Titles {
    /// The record type [`Titles::effective`] comes from.
    fn source(&self) -> Option<&'static str> {
        if self.custom.is_some() {
            Some("custom-title")
        } else if self.ai.is_some() {
            Some("ai-title")
        } else {
            self.summary.as_ref().map(|_| "summary")
        }
    }

    fn effective(&self) -> Option<&String> {
        self.custom
            .as_ref()
            .or(self.ai.as_ref())
            .or(self.summary.as_ref())
    }
}

struct Replay<'a, 's, 'k> {
    src: &'a Source<'a>,
    out: Emitter<'s, 'k>,
    titles: Titles,
    mode: Option<String>,
    model: Option<String>,
    chain_uuids: HashSet<&'a str>,
    /// The response being replayed: (message id, its usage, its stop reason).
    response: Option<(String, Option<Carried>, Option<Carried>)>,
    last_usage: Option<(String, Carried)>,
    first_prompt: Option<String>,
    command_prompt: Option<String>,
}

/// Replays the chain into `sink`, reading each record it replays from `lines`.
pub fn replay(
    src: &Source<'_>,
    lines: &mut dyn LineSource,
    sink: &mut Sink<'_>,
) -> Result<Summary, ConvertError> {
    let chain_uuids = src
        .chain
        .rows
        .iter()
        .filter_map(|&i| src.records[i].uuid())
        .collect();
    let mut rp = Replay {
        src,
        out: Emitter {
            held: None,
            held_response: None,
            records: Vec::new(),
            blocks: Vec::new(),
            sink,
            count: 0,
        },
        titles: Titles::default(),
        mode: None,
        model: None,
        chain_uuids,
        response: None,
        last_usage: None,
        first_prompt: None,
        command_prompt: None,
    };

    // Metadata records (no uuid) are interleaved by file position.
    let mut metadata: Vec<usize> = (0..src.records.len())
        .filter(|&i| !src.records[i].is_row())
        .collect();
    metadata.sort_by_key(|&i| src.records[i].line);
    let mut next_meta = 0;
    for &i in &src.chain.rows {
        let line = src.records[i].line;
        while next_meta < metadata.len() && src.records[metadata[next_meta]].line < line {
            read(lines, metadata[next_meta], |l| rp.metadata(l))?;
            next_meta += 1;
        }
        read(lines, i, |row| {
            if row.message_id() != rp.response.as_ref().map(|r| r.0.as_str()) {
                rp.end_response();
            }
            rp.row(row)
        })?;
    }
    rp.end_response();
    for &m in &metadata[next_meta..] {
        read(lines, m, |l| rp.metadata(l))?;
    }
    if let Some((message_id, usage)) = rp.last_usage.take() {
        let usage = usage.to_value();
        let used = [
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
        ]
        .iter()
        .filter_map(|k| usage.get(*k).and_then(Value::as_u64))
        .sum();
        let u = Update::UsageUpdate {
            used,
            size: DEFAULT_CONTEXT_WINDOW,
            cost: None,
            meta: None,
        };
        let mut m = ClaudeMeta::default();
        m.insert("messageId", json!(message_id).into());
        rp.out.emit(with_claude(u, m), None)?;
    }
    let summary = Summary {
        title: rp.titles.effective().cloned(),
        title_source: rp.titles.source(),
        first_prompt: rp.first_prompt.take().or(rp.command_prompt.take()),
        updates: 0,
        model: rp.model.clone(),
        mode: rp.mode.clone(),
    };
    let updates = rp.out.finish()?;
    Ok(Summary { updates, ..summary })
}

/// Reads record `i`'s line and replays it with `f`; a line that cannot be read is reported
/// and left out.
fn read(
    lines: &mut dyn LineSource,
    i: usize,
    f: impl FnOnce(&Line<'_>) -> Result<(), ConvertError>,
) -> Result<(), ConvertError> {
    let Some(raw) = lines.line(i) else {
        return Ok(());
    };
    let done = if std::str::from_utf8(raw).is_ok() {
        line::with_line(raw, f)
    } else {
        // A line the first pass could index (its members are ASCII) whose text has bytes
        // that are not UTF-8 is read as Claude Code reads it, not left out as a line that
        // "changed" (found by a new user's trial).
        let text = String::from_utf8_lossy(raw).into_owned();
        lines.not_utf8(i);
        line::with_line(text.as_bytes(), f)
    };
    match done {
        Some(done) => done,
        None => {
            lines.changed(i);
            Ok(())
        }
    }
}

fn row_meta(r: &Line) -> ClaudeMeta {
    let mut m = ClaudeMeta::default();
    if let Some(u) = r.f.uuid.get() {
        m.insert("uuid", json!(u).into());
    }
    if let Some(t) = r.f.timestamp.get() {
        m.insert("timestamp", json!(t).into());
    }
    m
}

/// The text of a user row's content as a tool result's text reads ([`calls::result_text`]).
fn content_text(content: &Content) -> String {
    match content {
        Content::Text(t) => t.as_ref().to_owned(),
        Content::Blocks(blocks) => blocks
            .iter()
            .filter_map(|b| b.f.text.get())
            .collect::<Vec<_>>()
            .join("\n"),
        Content::Other(raw) => calls::result_text(&line::value(raw)),
    }
}

fn with_claude(u: Update, m: ClaudeMeta) -> Out {
    let mut u = Out::from(u);
    let cc = claude_meta(&mut u);
    for (k, v) in m.0 {
        cc.insert(k, v);
    }
    u
}

fn chunk(content: Value, message_id: Option<&str>) -> Chunk {
    Chunk {
        content,
        message_id: message_id.map(str::to_owned),
        meta: None,
    }
}

impl<'a> Replay<'a, '_, '_> {
    fn metadata(&mut self, r: &Line) -> Result<(), ConvertError> {
        let v = &r.f;
        match r.kind() {
            "permission-mode" => {
                if let Some(m) = v.permission_mode.get() {
                    self.set_mode(m)?;
                }
                Ok(())
            }
            "custom-title" => {
                self.titles.custom = v
                    .custom_title
                    .get()
                    .filter(|t| !t.is_empty())
                    .map(str::to_owned);
                self.title_changed()
            }
            "ai-title" => {
                if let Some(t) = v.ai_title.get().filter(|t| !t.is_empty()) {
                    self.titles.ai = Some(t.to_owned());
                }
                self.title_changed()
            }
            "summary"
                if v.leaf_uuid
                    .get()
                    .is_some_and(|l| self.chain_uuids.contains(l)) =>
            {
                if let Some(t) = v.summary.get().filter(|t| !t.is_empty()) {
                    self.titles.summary = Some(t.to_owned());
                }
                self.title_changed()
            }
            _ => {
                self.out.records.push(r.carried());
                Ok(())
            }
        }
    }

    fn title_changed(&mut self) -> Result<(), ConvertError> {
        let Some(t) = self.titles.effective().cloned() else {
            return Ok(());
        };
        if self.titles.shown.as_ref() == Some(&t) {
            return Ok(());
        }
        self.titles.shown = Some(t.clone());
        self.out.emit(
            Update::SessionInfoUpdate {
                title: Some(t),
                updated_at: None,
                meta: None,
            }
            .into(),
            None,
        )
    }

    fn set_mode(&mut self, mode: &str) -> Result<(), ConvertError> {
        if self.mode.as_deref() == Some(mode) {
            return Ok(());
        }
        self.mode = Some(mode.to_owned());
        self.out.emit(
            Update::CurrentModeUpdate {
                current_mode_id: mode.to_owned(),
                meta: None,
            }
            .into(),
            None,
        )
    }

    fn set_model(&mut self, model: &str) -> Result<(), ConvertError> {
        if model == "<synthetic>" || self.model.as_deref() == Some(model) {
            return Ok(());
        }
        self.model = Some(model.to_owned());
        let mut options = Vec::new();
        if let Some(mode) = &self.mode {
            options.push(acp::select_option("mode", "Mode", Some("mode"), mode));
        }
        options.push(acp::select_option("model", "Model", Some("model"), model));
        self.out.emit(
            Update::ConfigOptionUpdate {
                config_options: options,
                meta: None,
            }
            .into(),
            None,
        )
    }

    /// A response ended: its usage goes on its last update.
    fn end_response(&mut self) {
        let Some((id, usage, stop)) = self.response.take() else {
            return;
        };
        if let Some(u) = &usage {
            self.last_usage = Some((id.clone(), u.clone()));
        }
        if self.out.held_response.as_deref() == Some(id.as_str())
            && let Some(held) = self.out.held.as_mut()
        {
            let m = claude_meta(held);
            if let Some(u) = usage {
                m.insert("usage", u);
            }
            if let Some(s) = stop.filter(|s| !s.is_null()) {
                m.insert("stopReason", s);
            }
            if let Some(model) = &self.model {
                m.insert("model", json!(model).into());
            }
        }
    }

    fn row(&mut self, r: &Line) -> Result<(), ConvertError> {
        let before = self.out.count;
        match r.kind() {
            "user" if !r.f.is_meta.0 => self.user(r)?,
            "assistant" => self.assistant(r)?,
            "attachment" => self.attachment(r)?,
            _ => {}
        }
        if self.out.count == before {
            self.out.records.push(r.carried());
        }
        Ok(())
    }

    fn user(&mut self, r: &Line) -> Result<(), ConvertError> {
        if let Some(m) = r.f.permission_mode.get() {
            self.set_mode(m)?;
        }
        let uuid = r.f.uuid.get();
        let Some(content) = &r.content else {
            return Ok(());
        };
        if r.f.is_compact_summary.0 {
            let text = content_text(content);
            let mut m = row_meta(r);
            m.insert("isCompactSummary", json!(true).into());
            let u = Update::UserMessageChunk(chunk(acp::text(text), uuid));
            return self.out.emit(with_claude(u, m), None);
        }
        if !r.has_tool_result() {
            self.note_first_prompt(content);
        }
        match content {
            Content::Text(t) => self.user_text(r, t)?,
            Content::Blocks(blocks) => {
                let mut first_result = true;
                for b in blocks {
                    match b.f.kind.get() {
                        Some("text") => self.user_text(r, b.f.text.get().unwrap_or(""))?,
                        Some("image") => {
                            let v = r.block_value(b);
                            match image_block(&v) {
                                Some(img) => {
                                    let u = Update::UserMessageChunk(chunk(img, uuid));
                                    self.out.emit(with_claude(u, row_meta(r)), None)?;
                                }
                                None => self.out.blocks.push(v.into()),
                            }
                        }
                        Some("tool_result") => {
                            self.tool_result(r, b, first_result)?;
                            first_result = false;
                        }
                        _ => self.out.blocks.push(r.block_carried(b)),
                    }
                }
            }
            Content::Other(_) => {}
        }
        Ok(())
    }

    fn user_text(&mut self, r: &Line, text: &str) -> Result<(), ConvertError> {
        if let Some(t) = clean_prompt(text) {
            let u = Update::UserMessageChunk(chunk(acp::text(t), r.f.uuid.get()));
            self.out.emit(with_claude(u, row_meta(r)), None)?;
        }
        Ok(())
    }

    fn note_first_prompt(&mut self, content: &Content) {
        if self.first_prompt.is_some() {
            return;
        }
        let text = match content {
            Content::Text(t) => t.as_ref(),
            Content::Blocks(blocks) => blocks
                .iter()
                .find(|b| b.f.kind.get() == Some("text"))
                .and_then(|b| b.f.text.get())
                .unwrap_or(""),
            Content::Other(_) => "",
        };
        let flat = collapse_whitespace(text);
        if flat.is_empty() || flat.starts_with("[Request interrupted by user") {
            return;
        }
        if flat.contains("<command-name>") {
            if self.command_prompt.is_none() {
                self.command_prompt = clean_prompt(text).map(|t| cut(&t));
            }
            return;
        }
        if let Some(cmd) = flat
            .strip_prefix("<bash-input>")
            .and_then(|r| r.split("</bash-input>").next())
        {
            self.first_prompt = Some(cut(&format!("! {cmd}")));
            return;
        }
        if flat.starts_with('<') {
            return;
        }
        self.first_prompt = Some(cut(&flat));
    }

    fn tool_result(&mut self, r: &Line, b: &Block, first: bool) -> Result<(), ConvertError> {
        let id = b.f.tool_use_id.get().unwrap_or_default();
        let name = self.src.tool_names.get(id).map_or("", String::as_str);
        if name == "TodoWrite" {
            return Ok(());
        }
        let is_error = b.f.is_error.0;
        // Parsed only when the result is shown; carried as it is.
        let rendered = match b.f.content {
            Some(c) if calls::result_shown(name, is_error) => {
                calls::result_content(name, &line::value(c), is_error)
            }
            _ => Vec::new(),
        };
        let raw_output = b.f.content.map(Carried::of).filter(|c| !c.is_null());
        let mut m = row_meta(r);
        if !name.is_empty() {
            m.insert("toolName", json!(name).into());
        }
        if first && let Some(resp) = r.f.tool_use_result {
            m.insert("toolResponse", Carried::of(resp));
        }
        let u = Update::ToolCallUpdate {
            tool_call_id: id.to_owned(),
            fields: ToolFields {
                status: Some(if is_error {
                    ToolStatus::Failed
                } else {
                    ToolStatus::Completed
                }),
                content: (!rendered.is_empty()).then_some(rendered),
                ..ToolFields::default()
            },
            meta: None,
        };
        let u = Out {
            raw_output,
            ..with_claude(u, m)
        };
        self.out.emit(u, None)
    }

    fn assistant(&mut self, r: &Line) -> Result<(), ConvertError> {
        let msg = r.message();
        if let Some(model) = msg.and_then(|m| m.model.get()) {
            self.set_model(model)?;
        }
        let message_id = r.message_id();
        if let (Some(id), Some(msg)) = (message_id, msg) {
            let usage = msg.usage.map(Carried::of);
            let stop = msg.stop_reason.map(Carried::of);
            match &mut self.response {
                Some(resp) if resp.0 == id => {
                    if usage.is_some() {
                        resp.1 = usage;
                    }
                    if stop.as_ref().is_some_and(|s| !s.is_null()) {
                        resp.2 = stop;
                    }
                }
                _ => self.response = Some((id.to_owned(), usage, stop)),
            }
        }
        // The blocks are read where they lie; only those carried whole are parsed.
        let blocks = match &r.content {
            Some(Content::Blocks(b)) => b.as_slice(),
            Some(Content::Text(t)) => return self.assistant_text(r, t, message_id),
            _ => &[],
        };
        for b in blocks {
            match b.f.kind.get().unwrap_or("") {
                "text" => self.assistant_text(r, b.f.text.get().unwrap_or(""), message_id)?,
                "thinking" => {
                    let mut m = row_meta(r);
                    if let Some(sig) = b.f.signature {
                        m.insert("signature", Carried::of(sig));
                    }
                    let t = b.f.thinking.get().unwrap_or("");
                    let u = Update::AgentThoughtChunk(chunk(acp::text(t), message_id));
                    self.out.emit(with_claude(u, m), message_id)?;
                }
                "tool_use" | "server_tool_use" | "mcp_tool_use" => {
                    self.tool_use(r, b, message_id)?;
                }
                k if k.ends_with("_tool_result") && b.f.tool_use_id.present() => {
                    let id = b.f.tool_use_id.get().unwrap_or_default();
                    let failed =
                        b.f.content
                            .map(line::value)
                            .as_ref()
                            .and_then(|c| str_at(c, "type"))
                            .is_some_and(|t| t.ends_with("error"));
                    let mut m = row_meta(r);
                    m.insert("block", r.block_carried(b));
                    let u = Update::ToolCallUpdate {
                        tool_call_id: id.to_owned(),
                        fields: ToolFields {
                            status: Some(if failed {
                                ToolStatus::Failed
                            } else {
                                ToolStatus::Completed
                            }),
                            ..ToolFields::default()
                        },
                        meta: None,
                    };
                    let u = Out {
                        raw_output: b.f.content.map(Carried::of),
                        ..with_claude(u, m)
                    };
                    self.out.emit(u, message_id)?;
                }
                _ => self.out.blocks.push(r.block_carried(b)),
            }
        }
        Ok(())
    }

    /// A text block of an assistant row (or its content when that is a string).
    fn assistant_text(
        &mut self,
        r: &Line,
        t: &str,
        message_id: Option<&str>,
    ) -> Result<(), ConvertError> {
        if t.is_empty() {
            return Ok(());
        }
        if let Some((harness, body)) = super::compose::parse_foreign_reasoning(t) {
            let mut m = row_meta(r);
            m.insert("foreignReasoning", json!(harness).into());
            let u = Update::AgentThoughtChunk(chunk(acp::text(body), message_id));
            return self.out.emit(with_claude(u, m), message_id);
        }
        let u = Update::AgentMessageChunk(chunk(acp::text(t), message_id));
        self.out.emit(with_claude(u, row_meta(r)), message_id)
    }

    fn tool_use(
        &mut self,
        r: &Line,
        b: &Block,
        message_id: Option<&str>,
    ) -> Result<(), ConvertError> {
        let id = b.f.id.get().unwrap_or_default();
        let name = b.f.name.get().unwrap_or_default();
        let input = b.f.input.map_or_else(|| json!({}), line::value);
        let mut m = row_meta(r);
        m.insert("toolName", json!(name).into());
        if name == "TodoWrite"
            && let Some(todos) = input.get("todos").and_then(Value::as_array)
        {
            m.insert("toolUseId", json!(id).into());
            let u = Update::Plan {
                entries: todos.iter().map(plan_entry).collect(),
                meta: None,
            };
            return self.out.emit(with_claude(u, m), message_id);
        }
        let info = calls::tool_info(name, &input, self.src.cwd);
        let mut u = Update::ToolCall {
            tool_call_id: id.to_owned(),
            fields: ToolFields {
                title: Some(info.title),
                kind: Some(info.kind),
                status: Some(ToolStatus::Pending),
                content: (!info.content.is_empty()).then_some(info.content),
                locations: (!info.locations.is_empty()).then_some(info.locations),
                raw_input: None,
                raw_output: None,
            },
            meta: None,
        };
        if let Some(child) = self.src.subagents.get(id) {
            u = u.with_meta("asp", json!({"subagentSessionId": child}));
        }
        let raw_input = match b.f.input {
            Some(raw) => Carried::of(raw),
            None => input.into(),
        };
        let u = Out {
            raw_input: Some(raw_input),
            ..with_claude(u, m)
        };
        self.out.emit(u, message_id)
    }

    fn attachment(&mut self, r: &Line) -> Result<(), ConvertError> {
        // Not an object: no `type`, so not a queued command.
        let Some(att) = r.attachment() else {
            return Ok(());
        };
        if att.kind.get() != Some("queued_command") || r.f.is_meta.0 || att.is_meta.0 {
            return Ok(());
        }
        let text = match att.prompt {
            Some(p) => calls::result_text(&line::value(p)),
            None => return Ok(()),
        };
        if text.trim().is_empty() {
            return Ok(());
        }
        let mut m = row_meta(r);
        m.insert("queuedCommand", json!(true).into());
        let u = Update::UserMessageChunk(chunk(acp::text(text), r.f.uuid.get()));
        self.out.emit(with_claude(u, m), None)
    }
}

fn plan_entry(todo: &Value) -> PlanEntry {
    let status = match str_at(todo, "status") {
        Some("in_progress") => PlanStatus::InProgress,
        Some("completed") => PlanStatus::Completed,
        _ => PlanStatus::Pending,
    };
    let priority = match str_at(todo, "priority") {
        Some("high") => Priority::High,
        Some("low") => Priority::Low,
        _ => Priority::Medium,
    };
    let meta =
        str_at(todo, "activeForm").and_then(|a| acp::meta("claudeCode", json!({"activeForm": a})));
    PlanEntry {
        content: str_at(todo, "content").unwrap_or_default().to_owned(),
        priority,
        status,
        meta,
    }
}

fn cut(t: &str) -> String {
    if t.chars().count() <= 200 {
        t.to_owned()
    } else {
        let mut s: String = t.chars().take(200).collect();
        s.push('…');
        s
    }
}

/// Removes `<tag>…</tag>` spans; returns the text and the inner text of each removed tag.
fn strip_tags(text: &str) -> (String, Vec<(&'static str, String)>) {
    let mut out = text.to_owned();
    let mut found = Vec::new();
    for tag in MARKERS {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        while let Some(start) = out.find(&open) {
            let Some(end) = out[start..].find(&close).map(|e| start + e) else {
                break;
            };
            found.push((*tag, out[start + open.len()..end].to_owned()));
            out.replace_range(start..end + close.len(), "");
        }
    }
    (out, found)
}

/// A user prompt as the adapter replays it: command markup removed; a bare command shown as
/// `/name args`; command output and hidden commands not shown (`None`).
pub fn clean_prompt(text: &str) -> Option<String> {
    let (rest, tags) = strip_tags(text);
    if tags.is_empty() {
        return (!text.trim().is_empty()).then(|| text.to_owned());
    }
    let rest = rest.trim();
    if !rest.is_empty() {
        return Some(rest.to_owned());
    }
    let get = |t: &str| tags.iter().find(|(k, _)| *k == t).map(|(_, v)| v.trim());
    if get("local-command-stdout").is_some() || get("local-command-stderr").is_some() {
        return None;
    }
    let name = get("command-name")?;
    let first = name.split_whitespace().next().unwrap_or("");
    if !name.starts_with('/') || HIDDEN_COMMANDS.contains(&first) {
        return None;
    }
    Some(match get("command-args").filter(|a| !a.is_empty()) {
        Some(args) => format!("{name} {args}"),
        None => name.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An update written from its parts is the line its typed form serialises to.
    #[test]
    fn an_update_is_written_as_its_params_serialise() {
        let raw =
            |t: &str| Carried::of(serde_json::from_str::<&serde_json::value::RawValue>(t).unwrap());
        let call = Update::ToolCall {
            tool_call_id: "t\"1".into(),
            fields: ToolFields {
                title: Some("Read a.rs".into()),
                status: Some(ToolStatus::Pending),
                ..ToolFields::default()
            },
            meta: None,
        }
        .with_meta("asp", json!({"subagentSessionId": "s2"}));
        let mut cc = ClaudeMeta::default();
        cc.insert("uuid", json!("u1").into());
        cc.insert("toolResponse", raw(r#"{"a":[1,"x\ny"],"b":null}"#));
        cc.insert("usage", raw(r#"{ "spaced": 1.50 }"#));
        cc.insert("uuid", json!("u2").into());
        let outs = [
            Out {
                raw_input: Some(raw(r#"{"file_path":"/a.rs","k":"\u00e9\/"}"#)),
                raw_output: Some(Carried::List(vec![raw("[1]"), json!("é").into()])),
                ..with_claude(call, cc.clone())
            },
            Update::CurrentModeUpdate {
                current_mode_id: "plan".into(),
                meta: None,
            }
            .into(),
            with_claude(
                Update::UsageUpdate {
                    used: 3,
                    size: 4,
                    cost: None,
                    meta: None,
                },
                ClaudeMeta::default(),
            ),
            with_claude(Update::agent(acp::text("hi")), cc),
        ];
        for out in outs {
            let want = serde_json::to_vec(&out.whole().to_params("s\u{1}")).unwrap();
            let mut got = Vec::new();
            out.write("s\u{1}", &mut got, &mut Vec::new()).unwrap();
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(want).unwrap()
            );
        }
    }

    #[test]
    fn command_markup_is_replayed_as_the_command() {
        assert_eq!(
            clean_prompt("<command-message>deploy-check</command-message>\n<command-name>/deploy-check</command-name>\n<command-args>staging</command-args>").as_deref(),
            Some("/deploy-check staging")
        );
        assert_eq!(
            clean_prompt("<local-command-stdout>Session renamed</local-command-stdout>"),
            None
        );
        assert_eq!(
            clean_prompt("<command-name>/model</command-name><command-args></command-args>"),
            None
        );
        assert_eq!(
            clean_prompt("plain  text\n").as_deref(),
            Some("plain  text\n")
        );
        assert_eq!(
            clean_prompt("<system-reminder>x</system-reminder>\nDo it").as_deref(),
            Some("Do it")
        );
    }
}
