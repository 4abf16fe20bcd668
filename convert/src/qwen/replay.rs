//! The conversation of a Qwen chat (its chain, [`super::transcript::Chain`]) as an ACP
//! `session/update` stream.
//!
//! Qwen's own `session/load` replay is the reference (`spec/harnesses/qwen.md` §7), with the
//! choices of §16.2: a user record's text parts are one `user_message_chunk` each and its
//! `inlineData` images image chunks; an assistant record's parts in order are thoughts, text
//! and `pending` tool calls, then a `usage_update` from its `usageMetadata` (not Qwen's empty
//! agent chunk); a `tool_result` is the call's `tool_call_update` (`todo_write` gives a
//! `plan`). A slash command (`/compress`) and its output are UI, not conversation: they go
//! under the session's `_meta.qwen` with the compressions. Telemetry, snapshots, checkpoints
//! and rewinds are the harness's bookkeeping and stay in the native file.

use std::collections::{HashMap, HashSet};

use asp_format::blob::BlobSink;
use asp_format::update::UpdateWriter;
use serde_json::{Map, Value, json};

use super::calls;
use super::transcript::{Chain, Record};
use crate::error::ConvertError;
use crate::kit::acp::{self, Chunk, ToolFields, ToolStatus, Update};

/// The context window Qwen reports when a record names none (`qwen3-coder-plus`).
const DEFAULT_WINDOW: u64 = 262_144;

/// What converting one chain found out besides its updates.
#[derive(Debug, Default)]
pub struct Converted {
    pub updates: Option<asp_format::Descriptor>,
    /// The session's `_meta.qwen`.
    pub meta: Map<String, Value>,
    /// The time of the last record.
    pub last_time: Option<String>,
}

struct Stream<'a> {
    writer: UpdateWriter<'a>,
    session_id: &'a str,
}

impl Stream<'_> {
    fn push(&mut self, u: &Update) -> Result<(), ConvertError> {
        Ok(self.writer.push(&u.notification(self.session_id))?)
    }
}

fn chunk(content: Value, id: &str, time: Option<&str>) -> Chunk {
    chunk_with(content, id, time, Map::new())
}

/// A chunk of record `id` with `_meta.qwen` = the record's time and `extra`.
fn chunk_with(
    content: Value,
    id: &str,
    time: Option<&str>,
    mut extra: Map<String, Value>,
) -> Chunk {
    if let Some(t) = time {
        extra.insert("timestamp".into(), json!(t));
    }
    Chunk {
        content,
        message_id: Some(id.to_owned()),
        meta: (!extra.is_empty())
            .then(|| acp::meta("qwen", Value::Object(extra)))
            .flatten(),
    }
}

/// A user record's parts as content blocks: text parts one each, images, other inline data as
/// embedded resources, file references as links.
pub fn user_blocks(parts: &[Value]) -> Vec<Value> {
    let mut out = Vec::new();
    for p in parts {
        if let Some(t) = p.get("text").and_then(Value::as_str) {
            if !t.is_empty() {
                out.push(acp::text(t));
            }
        } else if let Some(d) = p.get("inlineData") {
            let mime = d.get("mimeType").and_then(Value::as_str).unwrap_or("");
            let data = d.get("data").and_then(Value::as_str).unwrap_or("");
            if mime.starts_with("image/") {
                out.push(acp::image(data, mime));
            } else {
                out.push(json!({"type": "resource", "resource": {
                    "uri": format!("data:{mime};base64,"), "mimeType": mime, "blob": data}}));
            }
        } else if let Some(f) = p.get("fileData") {
            let uri = f.get("fileUri").and_then(Value::as_str).unwrap_or("");
            let name = uri.rsplit('/').next().unwrap_or(uri);
            let mut link = json!({"type": "resource_link", "uri": uri, "name": name});
            if let Some(m) = f.get("mimeType") {
                link["mimeType"] = m.clone();
            }
            out.push(link);
        }
    }
    out
}

/// The text a user record's parts say, joined.
fn parts_text(parts: &[Value]) -> String {
    parts
        .iter()
        .filter_map(|p| p.get("text").and_then(Value::as_str))
        .collect::<Vec<_>>()
        .join("")
}

/// Converts a chain into its update stream. `subagents` maps a call id to the session id of
/// the subagent transcript that call started.
pub fn convert(
    chain: &Chain,
    session_id: &str,
    subagents: &HashMap<String, String>,
    sink: &dyn BlobSink,
) -> Result<Converted, ConvertError> {
    let mut out = Converted::default();
    let mut w = Stream {
        writer: UpdateWriter::new(sink)?,
        session_id,
    };
    // A user record that is a slash command (`/compress`): its text is the `rawCommand` of a
    // `slash_command` record that follows it.
    let commands: HashSet<&str> = chain
        .records
        .iter()
        .filter(|r| r.subtype() == Some("slash_command"))
        .filter_map(|r| r.payload("rawCommand").and_then(Value::as_str))
        .map(str::trim)
        .collect();
    let mut calls: HashMap<String, (String, Value)> = HashMap::new();
    let mut open: Vec<String> = Vec::new();
    let mut slash = Vec::new();
    let mut compressions = Vec::new();
    for r in &chain.records {
        if let Some(t) = r.timestamp() {
            out.last_time = Some(t.to_owned());
        }
        let id = r.uuid();
        let time = r.timestamp();
        match (r.kind(), r.subtype()) {
            ("user", None) => {
                let text = parts_text(r.parts());
                if commands.contains(text.trim()) && text.trim().starts_with('/') {
                    slash.push(json!({"uuid": id, "prompt": text}));
                    continue;
                }
                let display = r.payload("displayText").cloned();
                for (i, b) in user_blocks(r.parts()).into_iter().enumerate() {
                    let mut extra = Map::new();
                    if i == 0
                        && let Some(d) = &display
                    {
                        extra.insert("displayText".into(), d.clone());
                    }
                    w.push(&Update::UserMessageChunk(chunk_with(b, id, time, extra)))?;
                }
            }
            ("user", Some(sub)) => {
                let text = r
                    .payload("displayText")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| parts_text(r.parts()));
                if text.trim().is_empty() {
                    continue;
                }
                let c = chunk(acp::text(text), id, time);
                let u = if sub == "notification" {
                    Update::AgentMessageChunk(c)
                } else {
                    Update::UserMessageChunk(c)
                };
                w.push(&u.with_meta("qwen", json!({"subtype": sub})))?;
            }
            ("assistant", _) => {
                for p in r.parts() {
                    if let Some(call) = p.get("functionCall") {
                        let cid = call
                            .get("id")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned();
                        let name = call
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned();
                        let args = call.get("args").cloned().unwrap_or_else(|| json!({}));
                        calls.insert(cid.clone(), (name.clone(), args.clone()));
                        if name == "todo_write" {
                            continue; // Qwen shows a plan, from its result.
                        }
                        open.push(cid.clone());
                        let mut u = Update::ToolCall {
                            tool_call_id: cid.clone(),
                            fields: ToolFields {
                                title: Some(calls::title(&name, &args)),
                                kind: Some(calls::kind_of(&name)),
                                status: Some(ToolStatus::Pending),
                                locations: Some(calls::locations(&args)).filter(|l| !l.is_empty()),
                                raw_input: Some(args),
                                ..ToolFields::default()
                            },
                            meta: None,
                        }
                        .with_meta("qwen", json!({"toolName": name, "timestamp": time}));
                        if let Some(child) = subagents.get(&cid) {
                            u = u.with_meta("asp", json!({"subagentSessionId": child}));
                        }
                        w.push(&u)?;
                    } else if let Some(t) = p.get("text").and_then(Value::as_str) {
                        if t.is_empty() {
                            continue;
                        }
                        let c = chunk(acp::text(t), id, time);
                        if p.get("thought").and_then(Value::as_bool) == Some(true) {
                            w.push(&Update::AgentThoughtChunk(c))?;
                        } else {
                            w.push(&Update::AgentMessageChunk(c))?;
                        }
                    }
                }
                if let Some(u) = r.value.get("usageMetadata").filter(|u| u.is_object()) {
                    let n = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                    let size = r
                        .value
                        .get("contextWindowSize")
                        .and_then(Value::as_u64)
                        .unwrap_or(DEFAULT_WINDOW);
                    let mut native = json!({"usageMetadata": u});
                    if let Some(m) = r.value.get("model") {
                        native["model"] = m.clone();
                    }
                    w.push(
                        &Update::UsageUpdate {
                            used: n("promptTokenCount") + n("candidatesTokenCount"),
                            size,
                            cost: None,
                            meta: None,
                        }
                        .with_meta("qwen", native),
                    )?;
                }
            }
            ("tool_result", _) => {
                for p in r.parts() {
                    let Some(fr) = p.get("functionResponse") else {
                        continue;
                    };
                    let result = r.value.get("toolCallResult");
                    let cid = result
                        .and_then(|t| t.get("callId"))
                        .or_else(|| fr.get("id"))
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned();
                    let (name, args) = calls.get(&cid).cloned().unwrap_or_else(|| {
                        (
                            fr.get("name")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_owned(),
                            Value::Null,
                        )
                    });
                    let status = calls::status_of(
                        result.and_then(|t| t.get("status")).and_then(Value::as_str),
                    );
                    if name == "todo_write" {
                        if let Some(entries) = calls::plan_entries(&args) {
                            w.push(&Update::Plan {
                                entries,
                                meta: None,
                            })?;
                        }
                        continue;
                    }
                    open.retain(|c| *c != cid);
                    let display = result
                        .and_then(|t| t.get("resultDisplay"))
                        .filter(|d| !d.is_null());
                    let content = display.and_then(calls::display_content).or_else(|| {
                        let resp = fr.get("response")?;
                        let t = resp
                            .get("output")
                            .or_else(|| resp.get("error"))
                            .and_then(Value::as_str)?;
                        (!t.is_empty()).then(|| vec![acp::tool_content(acp::text(t))])
                    });
                    let mut native = Map::new();
                    native.insert("toolName".into(), json!(name));
                    if let Some(t) = time {
                        native.insert("timestamp".into(), json!(t));
                    }
                    if let Some(res) = result {
                        native.insert("toolCallResult".into(), res.clone());
                    }
                    w.push(
                        &Update::ToolCallUpdate {
                            tool_call_id: cid,
                            fields: ToolFields {
                                status: Some(status),
                                content,
                                raw_output: fr.get("response").cloned(),
                                ..ToolFields::default()
                            },
                            meta: None,
                        }
                        .with_meta("qwen", Value::Object(native)),
                    )?;
                }
            }
            ("system", Some("slash_command")) => {
                slash.push(json!({"uuid": id, "systemPayload": r.value.get("systemPayload")}));
            }
            ("system", Some("chat_compression")) => {
                compressions.push(json!({"uuid": id, "info": r.payload("info")}));
            }
            _ => {}
        }
    }
    // A call whose result never came (the run ended first), as Qwen's replay closes it.
    for cid in open {
        w.push(&Update::ToolCallUpdate {
            tool_call_id: cid,
            fields: ToolFields {
                status: Some(ToolStatus::Failed),
                content: Some(vec![acp::tool_content(acp::text(
                    "Tool result missing from saved history; the previous run likely ended before \
                     this tool completed.",
                ))]),
                ..ToolFields::default()
            },
            meta: None,
        })?;
    }
    out.updates = Some(w.writer.finish()?);
    if !slash.is_empty() {
        out.meta.insert("slashCommands".into(), Value::Array(slash));
    }
    if !compressions.is_empty() {
        out.meta
            .insert("compressions".into(), Value::Array(compressions));
    }
    if let Some((line, parent)) = &chain.gap {
        out.meta.insert(
            "historyGap".into(),
            json!({"line": line, "missingParent": parent}),
        );
    }
    Ok(out)
}

/// The model of the last assistant record of a chain.
pub fn last_model(chain: &Chain) -> Option<String> {
    chain
        .records
        .iter()
        .rev()
        .filter(|r| r.kind() == "assistant")
        .find_map(|r: &Record| r.str("model").map(str::to_owned))
}
