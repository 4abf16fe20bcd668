//! The second pass over a rollout: its records as the ACP `session/update` stream that
//! `session/load` would replay (spec/harnesses/codex.md §7), streamed into a blob.
//!
//! - `response_item`s are the conversation; their `event_msg`/`item_completed` twins are used
//!   only where an item is missing (the [`FirstPass`] says which).
//! - Injected context, `turn_context`, turn boundaries and every record ACP has no word for
//!   are kept verbatim: each goes into `_meta.codex.records` of the next update emitted, and
//!   what is left at the end into the session's `_meta.codex.trailingRecords`.
//! - Every update derived from a line has `_meta.codex.timestamp`, the line's time.

use std::collections::HashMap;

use asp_format::blob::BlobSink;
use asp_format::update::UpdateWriter;
use serde_json::{Map, Value, json};

use super::calls::{self, Call, CallInfo};
use super::first_pass::FirstPass;
use super::index::Entry;
use super::message;
use super::rollout::{Kind, Lines, Record, RolloutFile};
use super::settings::TurnSettings;
use super::time;
use crate::error::ConvertError;
use crate::kit::acp::{self, Meta, ToolFields, ToolKind, ToolStatus, Update};
use crate::kit::report::Diagnostics;

/// The session-level facts of a rollout, once its stream is written.
#[derive(Debug)]
pub struct Outcome {
    pub updates: asp_format::Descriptor,
    pub first_prompt: Option<String>,
    /// The last `thread_name_updated` name.
    pub renamed: Option<String>,
    /// Records nothing came after.
    pub trailing: Vec<Value>,
}

/// What the reader is told about the thread beyond its file.
#[derive(Debug, Default)]
pub struct Context<'a> {
    /// `session_index.jsonl` namings of this thread, oldest first.
    pub index_entries: &'a [Entry],
}

/// Writes updates with the pending native records attached.
struct Emitter<'a> {
    out: UpdateWriter<'a>,
    session_id: String,
    pending: Vec<Value>,
}

impl Emitter<'_> {
    /// Emits an update from a rollout line, carrying the native records since the last one.
    fn emit(&mut self, u: Update, timestamp: Option<&str>) -> Result<(), ConvertError> {
        self.push(u, timestamp, true)
    }

    fn push(
        &mut self,
        mut u: Update,
        timestamp: Option<&str>,
        records: bool,
    ) -> Result<(), ConvertError> {
        let meta = u.meta_mut().get_or_insert_with(Meta::new);
        let codex = meta.entry("codex").or_insert_with(|| json!({}));
        if !codex.is_object() {
            *codex = json!({ "value": codex.take() });
        }
        let codex = codex.as_object_mut().expect("made an object above");
        if let Some(t) = timestamp {
            codex.insert("timestamp".into(), json!(t));
        }
        if records && !self.pending.is_empty() {
            codex.insert(
                "records".into(),
                Value::Array(std::mem::take(&mut self.pending)),
            );
        }
        self.out.push(&u.notification(&self.session_id))?;
        Ok(())
    }
}

struct Reader<'a> {
    em: Emitter<'a>,
    survey: &'a FirstPass,
    cwd: Option<String>,
    settings: Option<TurnSettings>,
    calls: HashMap<String, CallInfo>,
    /// Calls without an output yet, in call order.
    open: Vec<String>,
    /// Events about a call that came before its output.
    hints: HashMap<String, Vec<Value>>,
    compaction_summary: Option<String>,
    first_prompt: Option<String>,
    renamed: Option<String>,
    index: Vec<&'a Entry>,
    next_index: usize,
    seen_meta: bool,
}

/// An ACP content block for a Codex content part.
fn block(part: &Value) -> Option<Value> {
    let ty = part.get("type").and_then(Value::as_str)?;
    match ty {
        "input_text" | "output_text" | "text" | "Text" => {
            Some(acp::text(part.get("text").and_then(Value::as_str)?))
        }
        "input_image" => image_block(part.get("image_url").and_then(Value::as_str)?),
        _ => None,
    }
}

/// An image from a data URL, or a link for an image Codex sent by URL.
fn image_block(url: &str) -> Option<Value> {
    if let Some(rest) = url.strip_prefix("data:")
        && let Some((mime, data)) = rest.split_once(";base64,")
    {
        return Some(acp::image(data, mime));
    }
    Some(json!({"type": "resource_link", "uri": url, "name": url}))
}

fn chunk(make: fn(Value) -> Update, content: Value, message_id: &str, codex: Value) -> Update {
    let mut u = make(content);
    if let Update::UserMessageChunk(c)
    | Update::AgentMessageChunk(c)
    | Update::AgentThoughtChunk(c) = &mut u
    {
        c.message_id = Some(message_id.to_owned());
    }
    if codex.as_object().is_some_and(|o| !o.is_empty()) {
        u = u.with_meta("codex", codex);
    }
    u
}

impl<'a> Reader<'a> {
    fn ts(r: &Record) -> Option<&str> {
        r.timestamp.as_deref()
    }

    fn message_id(r: &Record) -> String {
        r.payload()
            .get("id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("line-{}", r.line))
    }

    /// Emits index namings that happened before `at`.
    fn names_until(&mut self, at: Option<time::Nanos>) -> Result<(), ConvertError> {
        while let Some(e) = self.index.get(self.next_index) {
            let due = match (e.at, at) {
                (Some(e_at), Some(now)) => e_at <= now,
                (_, None) => true,
                (None, Some(_)) => false,
            };
            if !due {
                break;
            }
            self.next_index += 1;
            let u = Update::SessionInfoUpdate {
                title: Some(e.name.clone()),
                updated_at: e.at.map(time::format_millis),
                meta: acp::meta("codex", json!({"source": "session_index"})),
            };
            // Not from a rollout line: the line records wait for the next line's update.
            self.em.push(u, None, false)?;
        }
        Ok(())
    }

    fn record(&mut self, r: Record) -> Result<(), ConvertError> {
        if let Some(t) = r.timestamp.as_deref().and_then(time::parse) {
            self.names_until(Some(t))?;
        }
        match r.kind {
            Kind::SessionMeta => {
                // The first defines the thread (session-level `_meta`); later ones (forks,
                // resumes) are kept as records.
                if std::mem::replace(&mut self.seen_meta, true) {
                    self.em.pending.push(r.raw);
                }
                Ok(())
            }
            Kind::TurnContext => self.turn_context(r),
            Kind::ResponseItem => self.response_item(r),
            Kind::EventMsg => self.event(r),
            Kind::Compacted => self.compacted(r),
            Kind::Other(_) => {
                self.em.pending.push(r.raw);
                Ok(())
            }
        }
    }

    fn turn_context(&mut self, r: Record) -> Result<(), ConvertError> {
        if let Some(c) = r.payload().get("cwd").and_then(Value::as_str) {
            self.cwd = Some(c.to_owned());
        }
        let s = TurnSettings::of_turn_context(r.payload());
        let ts = r.timestamp.clone();
        self.em.pending.push(r.raw);
        let prev = self.settings.replace(s.clone());
        if let Some(mode) = s.mode()
            && prev.as_ref().and_then(TurnSettings::mode).as_deref() != Some(&mode)
        {
            let u = Update::CurrentModeUpdate {
                current_mode_id: mode,
                meta: None,
            };
            self.em.emit(u, ts.as_deref())?;
        }
        let options = s.config_options();
        if prev.as_ref() != Some(&s) && !options.is_empty() {
            let u = Update::ConfigOptionUpdate {
                config_options: options,
                meta: None,
            };
            self.em.emit(u, ts.as_deref())?;
        }
        Ok(())
    }

    fn user_parts(
        &mut self,
        r: &Record,
        parts: &[Value],
        codex: Value,
    ) -> Result<(), ConvertError> {
        let id = Self::message_id(r);
        let blocks: Vec<Value> = parts.iter().filter_map(block).collect();
        let text: Vec<&str> = blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect();
        if self.first_prompt.is_none() && !text.is_empty() {
            self.first_prompt = Some(text.join("\n").trim().to_owned());
        }
        for (i, b) in blocks.into_iter().enumerate() {
            let c = if i == 0 { codex.clone() } else { json!({}) };
            self.em.emit(chunk(Update::user, b, &id, c), Self::ts(r))?;
        }
        Ok(())
    }

    fn response_item(&mut self, r: Record) -> Result<(), ConvertError> {
        let p = &r.payload();
        match r.payload_type() {
            "message" => match message::role(p) {
                "user" if self.survey.is_real_user_item(p) => {
                    let parts = p
                        .get("content")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    self.user_parts(&r, &parts, json!({}))
                }
                "assistant" if self.survey.compaction_summaries.contains(&r.line) => {
                    self.compaction_summary = Some(message::text(p));
                    self.em.pending.push(r.raw);
                    Ok(())
                }
                "assistant" => {
                    let id = Self::message_id(&r);
                    let mut codex = Map::new();
                    if let Some(ph) = p.get("phase") {
                        codex.insert("phase".into(), ph.clone());
                    }
                    let parts = p
                        .get("content")
                        .and_then(Value::as_array)
                        .cloned()
                        .unwrap_or_default();
                    for part in &parts {
                        if let Some(b) = block(part) {
                            let u = chunk(Update::agent, b, &id, Value::Object(codex.clone()));
                            self.em.emit(u, Self::ts(&r))?;
                        }
                    }
                    Ok(())
                }
                _ => {
                    self.em.pending.push(r.raw);
                    Ok(())
                }
            },
            "reasoning" => self.reasoning(r),
            "function_call" | "custom_tool_call" | "local_shell_call" | "tool_search_call" => {
                self.call(r)
            }
            "web_search_call" | "image_generation_call" => {
                // These carry their final status; there is no output item.
                let id = p.get("id").and_then(Value::as_str).unwrap_or("").to_owned();
                let status = match p.get("status").and_then(Value::as_str) {
                    Some("failed" | "incomplete") => ToolStatus::Failed,
                    _ => ToolStatus::Completed,
                };
                let ts = r.timestamp.clone();
                self.call(r)?;
                self.open.retain(|c| c != &id);
                let mut codex = Map::new();
                if let Some(h) = self.hints.remove(&id) {
                    codex.insert("events".into(), Value::Array(h));
                }
                let u = Update::ToolCallUpdate {
                    tool_call_id: id,
                    fields: ToolFields {
                        status: Some(status),
                        ..ToolFields::default()
                    },
                    meta: Some(Meta::from_iter([(
                        "codex".to_owned(),
                        Value::Object(codex),
                    )])),
                };
                self.em.emit(u, ts.as_deref())
            }
            "function_call_output" | "custom_tool_call_output" | "tool_search_output" => {
                self.output(r)
            }
            _ => {
                self.em.pending.push(r.raw);
                Ok(())
            }
        }
    }

    fn reasoning(&mut self, r: Record) -> Result<(), ConvertError> {
        let p = &r.payload();
        let texts = |key: &str| -> Vec<String> {
            p.get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|s| s.get("text").and_then(Value::as_str))
                .map(str::to_owned)
                .collect()
        };
        let summary = texts("summary");
        let parts = if summary.is_empty() {
            texts("content")
        } else {
            summary
        };
        if parts.is_empty() {
            // Encrypted only: nothing a person can read.
            self.em.pending.push(r.raw);
            return Ok(());
        }
        let id = Self::message_id(&r);
        let mut codex = Map::new();
        if let Some(e) = p.get("encrypted_content").filter(|e| !e.is_null()) {
            codex.insert("encrypted_content".into(), e.clone());
        }
        if !texts("content").is_empty() && !texts("summary").is_empty() {
            codex.insert(
                "content".into(),
                p.get("content").cloned().unwrap_or(Value::Null),
            );
        }
        for (i, t) in parts.into_iter().enumerate() {
            let c = if i == 0 {
                Value::Object(codex.clone())
            } else {
                json!({})
            };
            let u = chunk(Update::thought, acp::text(t), &id, c);
            self.em.emit(u, Self::ts(&r))?;
        }
        Ok(())
    }

    fn call(&mut self, r: Record) -> Result<(), ConvertError> {
        match calls::read_call(r.payload(), self.cwd.as_deref()) {
            Call::Plan(u) => {
                if let Some(id) = r.payload().get("call_id").and_then(Value::as_str) {
                    self.calls.insert(
                        id.to_owned(),
                        CallInfo {
                            is_plan: true,
                            has_diffs: false,
                        },
                    );
                }
                self.em.emit(u, Self::ts(&r))
            }
            Call::Tool {
                id,
                mut update,
                info,
            } => {
                if let Some(child) = self.survey.spawned.get(&id) {
                    update = update.with_meta("asp", json!({"subagentSessionId": child}));
                }
                self.calls.insert(id.clone(), info);
                self.open.push(id);
                self.em.emit(update, Self::ts(&r))
            }
        }
    }

    fn output(&mut self, r: Record) -> Result<(), ConvertError> {
        let id = r
            .payload()
            .get("call_id")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        self.open.retain(|c| c != &id);
        let hints = self.hints.remove(&id).unwrap_or_default();
        if self.calls.get(&id).is_some_and(|c| c.is_plan) {
            // "Plan updated": the plan update already said it all.
            self.em.pending.push(r.raw);
            self.em.pending.extend(hints);
            return Ok(());
        }
        let u = calls::read_output(r.payload(), self.calls.get(&id), hints);
        self.em.emit(u, Self::ts(&r))
    }

    fn event(&mut self, r: Record) -> Result<(), ConvertError> {
        let p = &r.payload();
        let s = self.survey;
        let str_of = |k: &str| p.get(k).and_then(Value::as_str).unwrap_or("");
        match r.payload_type() {
            "user_message" => {
                if s.user_items.contains(&message::hash(str_of("message"))) {
                    return Ok(());
                }
                let mut parts = vec![json!({"type": "input_text", "text": str_of("message")})];
                for img in p
                    .get("images")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(url) = img.as_str() {
                        parts.push(json!({"type": "input_image", "image_url": url}));
                    }
                }
                self.user_parts(&r, &parts, json!({"fromEvent": true}))
            }
            "agent_message" => {
                if s.agent_items.contains(&message::hash(str_of("message"))) {
                    return Ok(());
                }
                let mut codex = json!({"fromEvent": true});
                if let Some(ph) = p.get("phase").filter(|v| !v.is_null()) {
                    codex["phase"] = ph.clone();
                }
                let id = format!("line-{}", r.line);
                let u = chunk(Update::agent, acp::text(str_of("message")), &id, codex);
                self.em.emit(u, Self::ts(&r))
            }
            "agent_reasoning" | "agent_reasoning_raw_content" => {
                if s.reasoning_items.contains(&message::hash(str_of("text"))) {
                    return Ok(());
                }
                let id = format!("line-{}", r.line);
                let u = chunk(
                    Update::thought,
                    acp::text(str_of("text")),
                    &id,
                    json!({"fromEvent": true}),
                );
                self.em.emit(u, Self::ts(&r))
            }
            "item_completed" => self.item_completed(r),
            "token_count" => {
                let (Some(used), Some(size)) = (
                    p.pointer("/info/last_token_usage/input_tokens")
                        .and_then(Value::as_u64),
                    p.pointer("/info/model_context_window")
                        .and_then(Value::as_u64),
                ) else {
                    self.em.pending.push(r.raw);
                    return Ok(());
                };
                let mut codex = Map::new();
                for k in ["total_token_usage", "last_token_usage"] {
                    if let Some(v) = p.pointer(&format!("/info/{k}")) {
                        codex.insert(k.into(), v.clone());
                    }
                }
                if let Some(rl) = p.get("rate_limits").filter(|v| !v.is_null()) {
                    codex.insert("rate_limits".into(), rl.clone());
                }
                let u = Update::UsageUpdate {
                    used,
                    size,
                    cost: None,
                    meta: Some(Meta::from_iter([(
                        "codex".to_owned(),
                        Value::Object(codex),
                    )])),
                };
                self.em.emit(u, Self::ts(&r))
            }
            "thread_name_updated" => {
                let name = str_of("thread_name").to_owned();
                if name.trim().is_empty() {
                    self.em.pending.push(r.raw);
                    return Ok(());
                }
                self.renamed = Some(name.clone());
                let u = Update::SessionInfoUpdate {
                    title: Some(name),
                    updated_at: r
                        .timestamp
                        .as_deref()
                        .and_then(time::parse)
                        .map(time::format_millis),
                    meta: acp::meta("codex", json!({"source": "thread_name_updated"})),
                };
                self.em.emit(u, Self::ts(&r))
            }
            "patch_apply_end" | "mcp_tool_call_end" | "exec_command_end" | "web_search_end" => {
                let id = str_of("call_id").to_owned();
                self.hints.entry(id).or_default().push(r.raw);
                Ok(())
            }
            _ => {
                self.em.pending.push(r.raw);
                Ok(())
            }
        }
    }

    /// Paginated files: `item_completed` twins of messages, and facts about calls.
    fn item_completed(&mut self, r: Record) -> Result<(), ConvertError> {
        let s = self.survey;
        let item = r.payload().get("item").cloned().unwrap_or(Value::Null);
        match item.get("type").and_then(Value::as_str).unwrap_or("") {
            "UserMessage" => {
                if s.user_items.contains(&message::hash(&message::text(&item))) {
                    return Ok(());
                }
                let parts: Vec<Value> = message::text_parts(&item)
                    .into_iter()
                    .map(|t| json!({"type": "input_text", "text": t}))
                    .collect();
                self.user_parts(&r, &parts, json!({"fromEvent": true}))
            }
            "AgentMessage" => {
                let t = message::text(&item);
                if s.agent_items.contains(&message::hash(&t)) {
                    return Ok(());
                }
                let id = format!("line-{}", r.line);
                let u = chunk(Update::agent, acp::text(t), &id, json!({"fromEvent": true}));
                self.em.emit(u, Self::ts(&r))
            }
            "Reasoning" => {
                let parts: Vec<&str> = item
                    .get("summary_text")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                let missing: Vec<&str> = parts
                    .into_iter()
                    .filter(|t| !s.reasoning_items.contains(&message::hash(t)))
                    .collect();
                let id = format!("line-{}", r.line);
                for t in missing {
                    let u = chunk(
                        Update::thought,
                        acp::text(t),
                        &id,
                        json!({"fromEvent": true}),
                    );
                    self.em.emit(u, Self::ts(&r))?;
                }
                Ok(())
            }
            _ => {
                // CommandExecution, FileChange, McpToolCall...: facts about a call whose
                // output item is still to come.
                match item.get("id").and_then(Value::as_str) {
                    Some(id) if self.calls.contains_key(id) => {
                        self.hints.entry(id.to_owned()).or_default().push(r.raw)
                    }
                    _ => self.em.pending.push(r.raw),
                }
                Ok(())
            }
        }
    }

    /// `compacted`: no messages (its `replacement_history` is model input, never replayed), but
    /// one completed `think` call, "Compact conversation", whose content is the summary.
    fn compacted(&mut self, r: Record) -> Result<(), ConvertError> {
        let summary = self.compaction_summary.take().unwrap_or_else(|| {
            r.payload()
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        });
        let u = Update::ToolCall {
            tool_call_id: format!("compaction-{}", r.line),
            fields: ToolFields {
                title: Some("Compact conversation".into()),
                kind: Some(ToolKind::Think),
                status: Some(ToolStatus::Completed),
                content: (!summary.is_empty()).then(|| vec![acp::tool_content(acp::text(summary))]),
                ..ToolFields::default()
            },
            meta: acp::meta("codex", json!({"compacted": r.payload()})),
        };
        self.em.emit(u, Self::ts(&r))
    }

    fn finish(mut self) -> Result<Outcome, ConvertError> {
        for id in std::mem::take(&mut self.open) {
            if let Some(h) = self.hints.remove(&id) {
                self.em.pending.extend(h);
            }
            self.em.emit(calls::missing_output(&id), None)?;
        }
        self.names_until(None)?;
        let mut trailing = std::mem::take(&mut self.em.pending);
        let mut leftover: Vec<_> = self.hints.into_values().flatten().collect();
        trailing.append(&mut leftover);
        Ok(Outcome {
            updates: self.em.out.finish()?,
            first_prompt: self.first_prompt,
            renamed: self.renamed,
            trailing,
        })
    }
}

/// Reads `file` (already surveyed) into an update stream in `sink`, derived from `base` (the
/// rollout's own body when it is kept as a plain native file: a bundle compresses the stream
/// against it, spec/aspstate.md §4).
pub fn read(
    file: &RolloutFile,
    session_id: &str,
    survey: &FirstPass,
    ctx: &Context<'_>,
    sink: &dyn BlobSink,
    base: Option<asp_format::Descriptor>,
    diagnostics: &Diagnostics,
) -> Result<Outcome, ConvertError> {
    let mut lines = Lines::open(file, true)?;
    let index = ctx
        .index_entries
        .iter()
        .filter(|e| !survey.renames.contains(&e.name))
        .collect();
    let mut reader = Reader {
        em: Emitter {
            out: UpdateWriter::derived(sink, base)?,
            session_id: session_id.to_owned(),
            pending: Vec::new(),
        },
        survey,
        cwd: survey
            .meta
            .as_ref()
            .and_then(|m| m.get("cwd"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        settings: None,
        calls: HashMap::new(),
        open: Vec::new(),
        hints: HashMap::new(),
        compaction_summary: None,
        first_prompt: None,
        renamed: None,
        index,
        next_index: 0,
        seen_meta: false,
    };
    while let Some(r) = lines.next_record(diagnostics) {
        reader.record(r)?;
    }
    reader.finish()
}
