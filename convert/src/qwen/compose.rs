//! A conversation from any harness as a Qwen chat that `qwen` lists under its project and
//! loads (`spec/harnesses/qwen.md` §13).
//!
//! One compact JSON record per line, each with `uuid`, `parentUuid` (the previous record;
//! `null` only for the first), the one `sessionId`, `timestamp`, `type`, `cwd` (it decides the
//! project) and `version`. A user message is a `user` record of Gemini-style parts; an answer
//! is one `assistant` record (`role: "model"`) per model response, thoughts, text and
//! `functionCall`s in order, followed at once by one `tool_result` record per call
//! (`functionResponse` and `toolCallResult`, whose status decides the replay). A thought or
//! text after a call starts the next response. A plan becomes a `todo_write` call and result,
//! which Qwen replays as a plan. The title, when there is one, is a compact `custom_title`
//! record chained last, where Qwen's byte search finds it. Record uuids are name-based (the
//! session id and the record's position), so the same session gives the same bytes.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::calls;
use super::ids::name_uuid;
use crate::kit::acp::ToolStatus;
use crate::kit::conversation::{Item, Message, ToolCall};
use crate::kit::time;
use crate::kit::title::TitleOrigin;

/// The Qwen Code version composed records claim: the version asp was checked against.
pub const VERSION: &str = "0.24.4";

/// What a chat is written from, besides the conversation.
#[derive(Debug, Clone)]
pub struct Header<'a> {
    pub session_id: &'a str,
    pub cwd: &'a str,
    /// `None`: no title record (Qwen lists the first prompt).
    pub title: Option<&'a str>,
    /// Who gave it ([`crate::kit::title`]): one a harness or its model made is written with
    /// `titleSource` `auto`, any other `manual`.
    pub title_origin: Option<TitleOrigin>,
    /// The time of records that carry none (the session's `updatedAt`).
    pub default_time: String,
    /// The git branch it was on, when its harness kept one ([`crate::kit::git_branch`]):
    /// every record's `gitBranch`, which Qwen Code leaves out outside git.
    pub git_branch: Option<&'a str>,
}

/// A built chat.
#[derive(Debug, Clone, Default)]
pub struct Chat {
    pub records: Vec<Value>,
    /// Update kinds that have no place in a Qwen chat and were left out.
    pub dropped: BTreeSet<String>,
    /// Whether it holds a prompt or an answer (else Qwen shows nothing).
    pub has_conversation: bool,
}

impl Chat {
    /// One compact JSON record per line.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for r in &self.records {
            serde_json::to_writer(&mut out, r).expect("JSON serialises");
            out.push(b'\n');
        }
        out
    }
}

/// The first `timestamp` in any namespace of `_meta` maps
/// ([`crate::kit::conversation::meta_time`]), as Qwen Code writes a time.
fn meta_time<'a>(metas: impl IntoIterator<Item = &'a Map<String, Value>>) -> Option<String> {
    crate::kit::conversation::meta_time(metas).map(|ms| time::format_millis(time::from_millis(ms)))
}

/// A message's content blocks as Gemini parts (images inline; links and resources as text).
fn user_parts(m: &Message) -> Vec<Value> {
    let mut parts = Vec::new();
    for b in &m.blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => {
                let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                if !t.is_empty() {
                    parts.push(json!({"text": t}));
                }
            }
            Some("image") => parts.push(json!({"inlineData": {
                "mimeType": b.get("mimeType").cloned().unwrap_or(json!("image/png")),
                "data": b.get("data").cloned().unwrap_or(json!("")),
            }})),
            Some("resource_link") => {
                let uri = b.get("uri").and_then(Value::as_str).unwrap_or("");
                parts.push(json!({"text": format!("[{uri}]")}));
            }
            Some("resource") => {
                let r = b.get("resource");
                let t = match r.and_then(|r| r.get("text")).and_then(Value::as_str) {
                    Some(t) => t.to_owned(),
                    None => format!(
                        "[{}]",
                        r.and_then(|r| r.get("uri"))
                            .and_then(Value::as_str)
                            .unwrap_or("resource")
                    ),
                };
                parts.push(json!({"text": t}));
            }
            _ => {}
        }
    }
    parts
}

/// The function name of a carried call: Qwen's own, else the tool name its harness recorded,
/// else the ACP kind.
fn call_name(call: &ToolCall) -> String {
    let own = |ns: &str| {
        call.meta
            .get(ns)
            .and_then(|v| {
                ["toolName", "name", "tool"]
                    .iter()
                    .find_map(|k| v.get(*k).and_then(Value::as_str))
            })
            .filter(|n| !n.is_empty())
            .map(str::to_owned)
    };
    if let Some(n) = own("qwen") {
        return n;
    }
    match crate::kit::tool_names::source_name(&call.meta) {
        Some(n) => calls::function_name(n),
        None => calls::generic_name(call.kind).to_owned(),
    }
}

/// A diff content item as the FileDiff Qwen's edit tools display.
fn file_diff(item: &Value) -> Value {
    let path = item.get("path").and_then(Value::as_str).unwrap_or("");
    let name = path.rsplit('/').next().unwrap_or(path);
    let old = item.get("oldText").and_then(Value::as_str);
    let new = item.get("newText").and_then(Value::as_str).unwrap_or("");
    let mut patch = format!(
        "Index: {name}\n===================================================================\n--- {name}\tCurrent\n+++ {name}\tProposed\n"
    );
    for l in old.unwrap_or("").lines() {
        patch.push_str(&format!("-{l}\n"));
    }
    for l in new.lines() {
        patch.push_str(&format!("+{l}\n"));
    }
    json!({"fileDiff": patch, "fileName": name, "filePath": path, "originalContent": old, "newContent": new})
}

struct Builder<'a> {
    header: &'a Header<'a>,
    chat: Chat,
    last_time: String,
    /// The model response being assembled: parts, then its calls' result records.
    parts: Vec<Value>,
    results: Vec<Value>,
    usage: Option<(Value, Option<Value>)>,
    turn_time: Option<String>,
}

impl Builder<'_> {
    fn time(&mut self, own: Option<String>) -> String {
        if let Some(t) = own {
            self.last_time = t;
        }
        self.last_time.clone()
    }

    fn push(&mut self, kind: &str, body: Map<String, Value>, time: String) {
        let n = self.chat.records.len();
        let parent = self
            .chat
            .records
            .last()
            .and_then(|r| r.get("uuid").cloned())
            .unwrap_or(Value::Null);
        let mut rec = Map::new();
        rec.insert(
            "uuid".into(),
            json!(name_uuid(&format!("{}/record/{n}", self.header.session_id))),
        );
        rec.insert("parentUuid".into(), parent);
        rec.insert("sessionId".into(), json!(self.header.session_id));
        rec.insert("timestamp".into(), json!(time));
        rec.insert("type".into(), json!(kind));
        rec.insert("cwd".into(), json!(self.header.cwd));
        rec.insert("version".into(), json!(VERSION));
        if let Some(branch) = self.header.git_branch {
            rec.insert("gitBranch".into(), json!(branch));
        }
        rec.extend(body);
        self.chat.records.push(Value::Object(rec));
    }

    fn flush(&mut self) {
        if self.parts.is_empty() {
            return;
        }
        let time = self
            .turn_time
            .take()
            .unwrap_or_else(|| self.last_time.clone());
        let mut body = Map::new();
        if let Some((_, Some(model))) = &self.usage {
            body.insert("model".into(), model.clone());
        }
        body.insert(
            "message".into(),
            json!({"role": "model", "parts": std::mem::take(&mut self.parts)}),
        );
        if let Some((u, _)) = self.usage.take() {
            body.insert("usageMetadata".into(), u);
        }
        self.push("assistant", body, time.clone());
        self.chat.has_conversation = true;
        for r in std::mem::take(&mut self.results) {
            let Value::Object(body) = r else { continue };
            self.push("tool_result", body, time.clone());
        }
    }

    /// Starts a new response when the current one already has calls (their results must
    /// follow the response that made them).
    fn before_text(&mut self) {
        if !self.results.is_empty() {
            self.flush();
        }
    }

    fn call(&mut self, call: &ToolCall) {
        let name = call_name(call);
        let args = match &call.raw_input {
            Some(Value::Object(o)) => Value::Object(o.clone()),
            Some(Value::Null) | None => json!({}),
            Some(v) => json!({"input": v}),
        };
        let native = call.meta.get("qwen").and_then(|q| q.get("toolCallResult"));
        let status = match call.status {
            Some(ToolStatus::Completed) => "success",
            Some(ToolStatus::Failed) => {
                match native.and_then(|n| n.get("status")).and_then(Value::as_str) {
                    Some("cancelled") => "cancelled",
                    _ => "error",
                }
            }
            _ => "cancelled",
        };
        let text = match &call.raw_output {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Object(o)) => match o
                .get("output")
                .or_else(|| o.get("error"))
                .and_then(Value::as_str)
            {
                Some(s) => s.to_owned(),
                None => call.content_text(),
            },
            Some(Value::Null) | None => call.content_text(),
            Some(v) => v.to_string(),
        };
        let text = if status == "cancelled" && text.is_empty() {
            "[Operation Cancelled] The call had not finished when the conversation was carried."
                .to_owned()
        } else {
            text
        };
        let response = if status == "success" {
            json!({"output": text})
        } else {
            json!({"error": text})
        };
        let display = native
            .and_then(|n| n.get("resultDisplay"))
            .cloned()
            .or_else(|| {
                call.content
                    .iter()
                    .find(|c| c.get("type").and_then(Value::as_str) == Some("diff"))
                    .map(file_diff)
            })
            .unwrap_or_else(|| json!(call.content_text()));
        self.parts
            .push(json!({"functionCall": {"id": call.id, "name": name, "args": args}}));
        let mut result = json!({"callId": call.id, "status": status, "resultDisplay": display});
        if status != "success" {
            result["error"] = json!({"message": text});
        }
        self.results.push(json!({
            "message": {"role": "user", "parts": [{"functionResponse": {"id": call.id, "name": name, "response": response}}]},
            "toolCallResult": result,
        }));
    }
}

/// Builds the chat of a conversation.
pub fn build(items: &[Item], header: &Header<'_>) -> Chat {
    let mut b = Builder {
        header,
        chat: Chat::default(),
        last_time: header.default_time.clone(),
        parts: Vec::new(),
        results: Vec::new(),
        usage: None,
        turn_time: None,
    };
    let mut plans = 0usize;
    for item in items {
        match item {
            Item::User(m) => {
                b.flush();
                let parts = user_parts(m);
                let t = b.time(meta_time(&m.metas));
                if parts.is_empty() {
                    continue;
                }
                let mut body = Map::new();
                body.insert("message".into(), json!({"role": "user", "parts": parts}));
                b.push("user", body, t);
                b.chat.has_conversation = true;
            }
            Item::Agent(m) | Item::Thought(m) => {
                let text = m.text();
                let t = b.time(meta_time(&m.metas));
                if text.trim().is_empty() {
                    continue;
                }
                b.before_text();
                b.turn_time.get_or_insert(t);
                if matches!(item, Item::Thought(_)) {
                    b.parts.push(json!({"text": text, "thought": true}));
                } else {
                    b.parts.push(json!({"text": text}));
                }
            }
            Item::Tool(call) => {
                let t = b.time(meta_time([&call.meta]));
                b.turn_time.get_or_insert(t);
                b.call(call);
            }
            Item::Plan { entries, .. } => {
                b.flush();
                let id = format!("todo_write_asp_plan_{plans}");
                plans += 1;
                let todos: Vec<Value> = entries
                    .iter()
                    .enumerate()
                    .map(|(i, e)| {
                        json!({
                            "id": format!("{}", i + 1),
                            "content": e.get("content").and_then(Value::as_str).unwrap_or(""),
                            "status": e.get("status").and_then(Value::as_str).unwrap_or("pending"),
                        })
                    })
                    .collect();
                let t = b.last_time.clone();
                b.turn_time = Some(t);
                b.parts.push(json!({"functionCall": {"id": id, "name": "todo_write", "args": {"todos": todos}}}));
                b.results.push(json!({
                    "message": {"role": "user", "parts": [{"functionResponse": {"id": id, "name": "todo_write", "response": {"output": "Todos have been modified successfully."}}}]},
                    "toolCallResult": {"callId": id, "status": "success", "resultDisplay": {"type": "todo_list", "todos": todos}},
                }));
                b.flush();
            }
            Item::Other(v) => match v.get("sessionUpdate").and_then(Value::as_str) {
                Some("usage_update") => {
                    let q = v.pointer("/_meta/qwen");
                    if let Some(u) = q.and_then(|q| q.get("usageMetadata")) {
                        b.usage = Some((u.clone(), q.and_then(|q| q.get("model")).cloned()));
                        b.flush();
                    } else {
                        // Another harness's usage: Qwen Code's record of it is its own
                        // `usageMetadata`, which this one does not give.
                        b.chat.dropped.insert("usage_update".to_owned());
                    }
                }
                Some("session_info_update") => {}
                Some(k) => {
                    b.chat.dropped.insert(k.to_owned());
                }
                None => {}
            },
        }
    }
    b.flush();
    if let Some(title) = header.title.filter(|t| !t.trim().is_empty()) {
        let t = b.last_time.clone();
        let mut body = Map::new();
        body.insert("subtype".into(), json!("custom_title"));
        body.insert(
            "systemPayload".into(),
            json!({"customTitle": title, "titleSource": if header.title_origin == Some(TitleOrigin::Generated) { "auto" } else { "manual" }}),
        );
        b.push("system", body, t);
    }
    b.chat
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::conversation::fold;

    #[test]
    fn calls_are_followed_by_their_results_and_the_title_is_last() {
        let updates = vec![
            json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "reading"}}),
            json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read", "kind": "read", "status": "pending", "rawInput": {"file_path": "/w/a"}}),
            json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "failed", "rawOutput": "nope"}),
            json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "done"}}),
        ];
        let items = fold(
            updates
                .into_iter()
                .map(|u| json!({"sessionId": "s", "update": u})),
        );
        let h = Header {
            session_id: "s",
            cwd: "/w",
            title: Some("T"),
            title_origin: None,
            default_time: "2026-01-01T00:00:00.000Z".into(),
            git_branch: None,
        };
        let chat = build(&items, &h);
        let kinds: Vec<&str> = chat
            .records
            .iter()
            .map(|r| r["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            ["user", "assistant", "tool_result", "assistant", "system"]
        );
        assert_eq!(chat.records[2]["toolCallResult"]["status"], "error");
        assert_eq!(chat.records[4]["parentUuid"], chat.records[3]["uuid"]);
        let text = String::from_utf8(chat.bytes()).unwrap();
        assert!(text.contains("\"subtype\":\"custom_title\""));
    }
}
