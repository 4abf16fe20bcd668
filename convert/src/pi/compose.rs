//! A session from another harness as a Pi session file (spec/harnesses/pi.md §10, §14.3).
//!
//! The file is what Pi writes itself: the header, a `model_change` when the model is known
//! and a `thinking_level_change` (so opening it appends nothing), then the messages chained by
//! `parentId`, and the title as a `session_info` last (so it is also the leaf, where pi-acp
//! looks for it). Prompts become `user` messages; reasoning, text and tool calls of one turn
//! become one `assistant` message, each call followed by its `toolResult` (a call that never
//! finished gets a failed result: a provider refuses a call without one). Reasoning is carried
//! as readable text only, never with a signature: a foreign signature would be sent back to a
//! provider that rejects it. Every id and time derives from the session, so writing it again
//! gives the same bytes.

use serde_json::{Map, Value, json};

use super::calls;
use super::ids::EntryIds;
use crate::kit::conversation::{Item, Message, ToolCall};
use crate::kit::time;

/// What the file is made from besides the conversation.
#[derive(Debug)]
pub struct Header<'a> {
    pub id: &'a str,
    pub cwd: &'a str,
    pub title: &'a str,
    /// Epoch ms of the first message; messages without a time of their own get the time
    /// before them (or this).
    pub start_ms: i64,
    /// `(provider, modelId)` when the session names a model Pi knows how to name.
    pub model: Option<(String, String)>,
    pub thinking_level: String,
}

/// A composed session file.
#[derive(Debug)]
pub struct Composed {
    pub lines: Vec<Value>,
    /// Whether it holds a prompt or an answer (else Pi shows nothing of it).
    pub resumable: bool,
    /// Update kinds that have no place in a Pi session.
    pub dropped: Vec<String>,
    /// Whether it holds a plan, which has no Pi form either and is written as an answer's
    /// text (`Plan:` and a line per step), so that what it said is still there.
    pub plan_as_text: bool,
}

impl Composed {
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for l in &self.lines {
            serde_json::to_writer(&mut out, l).expect("serialises");
            out.push(b'\n');
        }
        out
    }
}

use crate::kit::conversation::meta_time;

struct Builder<'a> {
    h: &'a Header<'a>,
    ids: EntryIds,
    lines: Vec<Value>,
    parent: Option<String>,
    now: i64,
    /// The assistant message being built, and the results of its calls.
    blocks: Vec<Value>,
    results: Vec<Value>,
    resumable: bool,
}

impl Builder<'_> {
    fn entry(&mut self, kind: &str, fields: Value) {
        let id = self.ids.next();
        let mut e = Map::new();
        e.insert("type".into(), json!(kind));
        e.insert("id".into(), json!(id));
        e.insert("parentId".into(), json!(self.parent));
        e.insert(
            "timestamp".into(),
            json!(time::format_millis(time::from_millis(self.now))),
        );
        if let Value::Object(f) = fields {
            e.extend(f);
        }
        self.lines.push(Value::Object(e));
        self.parent = Some(id);
    }

    fn at(&mut self, metas: &[Map<String, Value>]) {
        if let Some(t) = meta_time(metas) {
            self.now = self.now.max(t);
        }
    }

    fn message(&mut self, mut m: Map<String, Value>) {
        m.insert("timestamp".into(), json!(self.now));
        self.entry("message", json!({"message": m}));
    }

    fn flush(&mut self) {
        if !self.blocks.is_empty() {
            let stop = if self.results.is_empty() {
                "stop"
            } else {
                "toolUse"
            };
            let mut m = Map::new();
            m.insert("role".into(), json!("assistant"));
            m.insert(
                "content".into(),
                Value::Array(std::mem::take(&mut self.blocks)),
            );
            if let Some((p, id)) = &self.h.model {
                m.insert("provider".into(), json!(p));
                m.insert("model".into(), json!(id));
            }
            m.insert(
                "usage".into(),
                json!({"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
                       "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}),
            );
            m.insert("stopReason".into(), json!(stop));
            self.message(m);
        }
        for r in std::mem::take(&mut self.results) {
            if let Value::Object(m) = r {
                self.message(m);
            }
        }
    }

    /// A new assistant message starts after the results of the last one's calls.
    fn assistant_block(&mut self, b: Value) {
        if !self.results.is_empty() {
            self.flush();
        }
        self.blocks.push(b);
    }
}

/// Content blocks of a prompt as Pi's user content.
fn user_content(m: &Message) -> Vec<Value> {
    let mut out = Vec::new();
    for b in &m.blocks {
        let kind = b.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            "text" => out.push(json!({"type": "text", "text": b.get("text").and_then(Value::as_str).unwrap_or("")})),
            "image" => out.push(json!({"type": "image",
                "data": b.get("data").and_then(Value::as_str).unwrap_or(""),
                "mimeType": b.get("mimeType").and_then(Value::as_str).unwrap_or("image/png")})),
            "resource" => {
                let r = b.get("resource").cloned().unwrap_or(Value::Null);
                let text = r.get("text").and_then(Value::as_str).unwrap_or("");
                let uri = r.get("uri").and_then(Value::as_str).unwrap_or("");
                out.push(json!({"type": "text", "text": format!("{uri}\n{text}")}));
            }
            "resource_link" => {
                let uri = b.get("uri").and_then(Value::as_str).unwrap_or("");
                out.push(json!({"type": "text", "text": uri}));
            }
            _ => {}
        }
    }
    // Pi joins consecutive text chunks of one message into one text block.
    let mut merged: Vec<Value> = Vec::new();
    for b in out {
        if b["type"] == "text"
            && let Some(last) = merged.last_mut()
            && last["type"] == "text"
        {
            let joined = format!(
                "{}{}",
                last["text"].as_str().unwrap_or(""),
                b["text"].as_str().unwrap_or("")
            );
            last["text"] = json!(joined);
            continue;
        }
        merged.push(b);
    }
    merged
}

/// The result text of a call: its text content, else its raw output.
fn result_content(t: &ToolCall) -> Vec<Value> {
    let mut out = Vec::new();
    for c in &t.content {
        match c.get("type").and_then(Value::as_str) {
            Some("content") => {
                let b = c.get("content").cloned().unwrap_or(Value::Null);
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => out.push(json!({"type": "text", "text": b.get("text").and_then(Value::as_str).unwrap_or("")})),
                    Some("image") => out.push(json!({"type": "image",
                        "data": b.get("data").and_then(Value::as_str).unwrap_or(""),
                        "mimeType": b.get("mimeType").and_then(Value::as_str).unwrap_or("image/png")})),
                    _ => {}
                }
            }
            Some("diff") => {
                let path = c.get("path").and_then(Value::as_str).unwrap_or("");
                out.push(json!({"type": "text", "text": format!("Edited {path}")}));
            }
            _ => {}
        }
    }
    if out.is_empty() {
        let text = match &t.raw_output {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(v) => v
                .get("output")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .unwrap_or_else(|| v.to_string()),
        };
        out.push(json!({"type": "text", "text": text}));
    }
    out
}

fn tool(b: &mut Builder<'_>, t: &ToolCall) {
    let finished = matches!(
        t.status,
        Some(crate::kit::acp::ToolStatus::Completed | crate::kit::acp::ToolStatus::Failed)
    );
    let name = calls::foreign_name(&t.meta, t.kind);
    if t.meta.get("pi").and_then(|p| p.get("userBash")) == Some(&Value::Bool(true)) {
        b.flush();
        let command = t
            .raw_input
            .as_ref()
            .and_then(|v| v.get("command"))
            .and_then(Value::as_str)
            .unwrap_or("");
        let raw = t.raw_output.clone().unwrap_or(Value::Null);
        let mut m = Map::new();
        m.insert("role".into(), json!("bashExecution"));
        m.insert("command".into(), json!(command));
        m.insert("output".into(), json!(t.content_text()));
        m.insert(
            "exitCode".into(),
            raw.get("exitCode")
                .cloned()
                .unwrap_or(json!(i32::from(t.failed()))),
        );
        m.insert(
            "cancelled".into(),
            raw.get("cancelled").cloned().unwrap_or(json!(false)),
        );
        m.insert(
            "truncated".into(),
            raw.get("truncated").cloned().unwrap_or(json!(false)),
        );
        b.message(m);
        return;
    }
    let arguments = match &t.raw_input {
        Some(Value::Object(o)) => Value::Object(o.clone()),
        Some(Value::Null) | None => json!({}),
        Some(v) => json!({"input": v}),
    };
    b.blocks
        .push(json!({"type": "toolCall", "id": t.id, "name": name, "arguments": arguments}));
    let (content, is_error) = if finished {
        (result_content(t), t.failed())
    } else {
        (
            vec![
                json!({"type": "text", "text": "(this call never finished: no result was recorded)"}),
            ],
            true,
        )
    };
    let mut m = Map::new();
    m.insert("role".into(), json!("toolResult"));
    m.insert("toolCallId".into(), json!(t.id));
    m.insert("toolName".into(), json!(name));
    m.insert("content".into(), Value::Array(content));
    m.insert("isError".into(), json!(is_error));
    b.results.push(Value::Object(m));
}

/// Builds the file.
pub fn build(items: &[Item], h: &Header<'_>) -> Composed {
    let start = time::format_millis(time::from_millis(h.start_ms));
    let mut lines = vec![
        json!({"type": "session", "version": 3, "id": h.id, "timestamp": start, "cwd": h.cwd}),
    ];
    let mut b = Builder {
        h,
        ids: EntryIds::new(h.id),
        lines: Vec::new(),
        parent: None,
        now: h.start_ms,
        blocks: Vec::new(),
        results: Vec::new(),
        resumable: false,
    };
    if let Some((p, m)) = &h.model {
        b.entry("model_change", json!({"provider": p, "modelId": m}));
    }
    b.entry(
        "thinking_level_change",
        json!({"thinkingLevel": h.thinking_level}),
    );
    let mut dropped: Vec<String> = Vec::new();
    let mut plan_as_text = false;
    for item in items {
        match item {
            Item::User(m) => {
                b.flush();
                b.at(&m.metas);
                let content = user_content(m);
                if content.is_empty() {
                    continue;
                }
                b.resumable = true;
                let mut msg = Map::new();
                msg.insert("role".into(), json!("user"));
                msg.insert("content".into(), Value::Array(content));
                b.message(msg);
            }
            Item::Agent(m) => {
                b.at(&m.metas);
                let text = m.text();
                if text.is_empty() {
                    continue;
                }
                b.resumable = true;
                b.assistant_block(json!({"type": "text", "text": text}));
            }
            Item::Thought(m) => {
                b.at(&m.metas);
                let text = m.text();
                if !text.is_empty() {
                    b.assistant_block(json!({"type": "thinking", "thinking": text}));
                }
            }
            Item::Tool(t) => {
                if !b.results.is_empty() && b.blocks.is_empty() {
                    b.flush();
                }
                b.at(std::slice::from_ref(&t.meta));
                tool(&mut b, t);
            }
            Item::Plan { entries, .. } => {
                let lines: Vec<String> = entries
                    .iter()
                    .map(|e| {
                        format!(
                            "- [{}] {}",
                            e.get("status").and_then(Value::as_str).unwrap_or("pending"),
                            e.get("content").and_then(Value::as_str).unwrap_or("")
                        )
                    })
                    .collect();
                b.assistant_block(
                    json!({"type": "text", "text": format!("Plan:\n{}", lines.join("\n"))}),
                );
                plan_as_text = true;
            }
            Item::Other(v) => {
                let k = v
                    .get("sessionUpdate")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown")
                    .to_owned();
                // The title travels as the session's own (`h.title`, the `session_info` entry
                // below): not left out (new-user trial helper-122, 3).
                if k == "session_info_update" {
                    continue;
                }
                if !dropped.contains(&k) {
                    dropped.push(k);
                }
            }
        }
    }
    b.flush();
    if !h.title.is_empty() {
        b.entry("session_info", json!({"name": h.title}));
    }
    let resumable = b.resumable;
    lines.extend(b.lines);
    Composed {
        lines,
        resumable,
        dropped,
        plan_as_text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::conversation::fold;

    fn p(u: Value) -> Value {
        json!({"sessionId": "s", "update": u})
    }

    #[test]
    fn a_turn_is_one_assistant_message_and_every_call_has_its_result() {
        let items = fold([
            p(
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Fix it"}}),
            ),
            p(
                json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}),
            ),
            p(
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read a.rs", "kind": "read", "status": "pending", "rawInput": {"path": "a.rs"}}),
            ),
            p(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "content": [{"type": "content", "content": {"type": "text", "text": "fn main"}}]}),
            ),
            p(
                json!({"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "Run", "kind": "execute", "status": "in_progress", "rawInput": {"command": "ls"}}),
            ),
            p(
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done"}}),
            ),
            p(json!({"sessionUpdate": "session_info_update", "title": "T"})),
            p(json!({"sessionUpdate": "usage_update", "used": 10, "size": 100})),
        ]);
        let c = build(
            &items,
            &Header {
                id: "01a23401-fede-73bb-a519-9d9e83d26f55",
                cwd: "/w",
                title: "T",
                start_ms: 1_796_168_875_743,
                model: None,
                thinking_level: "off".into(),
            },
        );
        let kinds: Vec<String> = c
            .lines
            .iter()
            .map(|l| {
                let t = l["type"].as_str().unwrap();
                l.pointer("/message/role")
                    .and_then(Value::as_str)
                    .unwrap_or(t)
                    .to_owned()
            })
            .collect();
        assert_eq!(
            kinds,
            [
                "session",
                "thinking_level_change",
                "user",
                "assistant",
                "toolResult",
                "toolResult",
                "assistant",
                "session_info"
            ]
        );
        assert_eq!(
            c.lines[3]["message"]["content"].as_array().unwrap().len(),
            3
        );
        assert_eq!(c.lines[5]["message"]["isError"], true);
        assert_eq!(c.lines[5]["message"]["toolName"], "bash");
        assert!(c.resumable);
        // The title is written (`session_info`): only what has no place is left out.
        assert_eq!(c.dropped, ["usage_update"]);
        // Chained, and the same bytes every time.
        for w in c.lines[1..].windows(2) {
            assert_eq!(w[1]["parentId"], w[0]["id"]);
        }
        assert_eq!(
            c.bytes(),
            build(
                &items,
                &Header {
                    id: "01a23401-fede-73bb-a519-9d9e83d26f55",
                    cwd: "/w",
                    title: "T",
                    start_ms: 1_796_168_875_743,
                    model: None,
                    thinking_level: "off".into()
                }
            )
            .bytes()
        );
    }
}
