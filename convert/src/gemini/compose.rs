//! A conversation from any harness as a Gemini JSONL chat that `gemini --resume` lists and
//! loads.
//!
//! The file is the legacy-compatible subset of the log (`spec/harnesses/gemini.md` §12.3):
//! a metadata line (`sessionId`, `projectHash` = sha256 of the root, `startTime`,
//! `lastUpdated`, `kind`, `summary` = the title, so the listing needs no model call), then
//! one line per message, each id once, no `$set`/`$rewindTo`, no `<session_context>`, and no
//! separate functionResponse records: every tool call carries its own `result`, which the CLI
//! turns into the matching `functionResponse` when it resumes (the Gemini API rejects a call
//! without one).
//!
//! ACP's stream is folded back into messages first ([`crate::kit::conversation`]). A Gemini model
//! message is thoughts, then text, then tool calls, so a thought or text that follows a tool
//! call starts a new message; consecutive texts of one turn are joined with a blank line.
//! Foreign tool calls keep their harness's tool name (a valid function name) and get the ACP
//! title as `displayName`; Gemini never re-runs them. A plan with no tool call of its own
//! becomes a `write_todos` call, the only form Gemini keeps plans in, marked by its id so that
//! reading it back gives the plan alone.

use std::collections::{BTreeSet, HashMap, HashSet};

use serde_json::{Map, Value, json};

use crate::kit::acp::ToolStatus;
use crate::kit::conversation::{Item, Message, ToolCall};

use super::calls;
use super::ids::name_uuid;
use super::projects::project_hash;
use super::time;

/// What a chat is written from, besides the conversation.
#[derive(Debug, Clone)]
pub struct Header<'a> {
    pub session_id: &'a str,
    pub cwd: &'a str,
    pub title: &'a str,
    /// The session's `updatedAt`, parsed; the time of messages with none of their own.
    pub updated_ms: i64,
    /// A subagent's chat (`kind: "subagent"`, `directories: [cwd]`), never listed by Gemini.
    pub subagent: bool,
    /// The harness the conversation came from, for messages about what could not be carried.
    pub harness: &'a str,
    /// Gemini ids of subagent sessions written in this run, by their id in the state.
    pub child_ids: &'a HashMap<String, String>,
}

/// A built chat.
#[derive(Debug, Clone)]
pub struct Chat {
    /// Metadata line first, then the messages.
    pub records: Vec<Value>,
    pub start_ms: i64,
    /// Update kinds that have no place in a Gemini chat and were left out.
    pub dropped: BTreeSet<String>,
    /// Whether Gemini would list it (a typed prompt, or a model message with something in it).
    pub resumable: bool,
}

impl Chat {
    /// The file's bytes: one compact JSON record per line.
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for r in &self.records {
            serde_json::to_writer(&mut out, r).expect("JSON serialises");
            out.push(b'\n');
        }
        out
    }
}

/// The first string `key` in any namespace of `_meta` maps.
fn meta_str<'a>(
    metas: impl IntoIterator<Item = &'a Map<String, Value>>,
    key: &str,
) -> Option<&'a str> {
    metas
        .into_iter()
        .flat_map(|m| m.values())
        .find_map(|ns| ns.get(key).and_then(Value::as_str))
}

fn gemini_meta<'a>(
    metas: impl IntoIterator<Item = &'a Map<String, Value>>,
) -> Option<&'a Map<String, Value>> {
    metas
        .into_iter()
        .find_map(|m| m.get("gemini").and_then(Value::as_object))
}

/// A readable thought back into Gemini's `{subject, description}`: the `**subject**` line
/// Gemini's own replay produces, else no subject.
fn thought_of(text: &str, timestamp: &str) -> Value {
    let parsed = text.strip_prefix("**").and_then(|rest| {
        let (subject, after) = rest.split_once("**")?;
        let description = if after.is_empty() {
            after
        } else {
            after.strip_prefix('\n')?
        };
        (!subject.contains('\n')).then_some((subject, description))
    });
    let (subject, description) = parsed.unwrap_or(("", text));
    json!({"subject": subject, "description": description, "timestamp": timestamp})
}

/// A user message's content blocks as Gemini parts. Images travel as `inlineData`; links and
/// embedded resources become text (a `fileData` part with a foreign URI would make the Gemini
/// API refuse the resumed history).
fn user_parts(m: &Message) -> Vec<Value> {
    let mut parts: Vec<Value> = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, parts: &mut Vec<Value>| {
        if !text.is_empty() {
            parts.push(json!({"text": std::mem::take(text)}));
        }
    };
    for b in &m.blocks {
        match b.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(b.get("text").and_then(Value::as_str).unwrap_or("")),
            Some("image") => {
                flush(&mut text, &mut parts);
                parts.push(json!({"inlineData": {
                    "mimeType": b.get("mimeType").cloned().unwrap_or(json!("image/png")),
                    "data": b.get("data").cloned().unwrap_or(json!("")),
                }}));
            }
            Some("resource_link") => {
                let uri = b.get("uri").and_then(Value::as_str).unwrap_or("");
                text.push_str(&format!("[{uri}]"));
            }
            Some("resource") => {
                let r = b.get("resource");
                match r.and_then(|r| r.get("text")).and_then(Value::as_str) {
                    Some(t) => text.push_str(t),
                    None => {
                        let uri = r.and_then(|r| r.get("uri")).and_then(Value::as_str);
                        text.push_str(&format!("[{}]", uri.unwrap_or("resource")));
                    }
                }
            }
            _ => {}
        }
    }
    flush(&mut text, &mut parts);
    parts
}

/// The Gemini function name of a carried call: Gemini's own when it came from Gemini, else
/// the tool name its harness recorded, else the ACP kind.
fn call_name(call: &ToolCall) -> String {
    if let Some(n) = gemini_meta([&call.meta])
        .and_then(|g| g.get("name"))
        .and_then(Value::as_str)
    {
        return n.to_owned();
    }
    let foreign = call
        .meta
        .iter()
        .filter(|(ns, _)| ns.as_str() != "asp")
        .find_map(|(_, v)| {
            ["toolName", "tool", "name"]
                .iter()
                .find_map(|k| v.get(*k).and_then(Value::as_str))
        })
        .filter(|n| !n.is_empty());
    match foreign {
        Some(n) => calls::function_name(n),
        None => calls::generic_name(call.kind).to_owned(),
    }
}

/// A diff content item as Gemini's FileDiff display. The patch is one whole-file hunk (the
/// CLI's replay and asp's reader use the contents, not the patch).
fn file_diff(item: &Value) -> Value {
    let path = item.get("path").and_then(Value::as_str).unwrap_or("");
    let name = path.rsplit('/').next().unwrap_or(path);
    let old = item.get("oldText").and_then(Value::as_str);
    let new = item.get("newText").and_then(Value::as_str).unwrap_or("");
    let lines = |s: &str| s.lines().count();
    let mut patch = format!(
        "Index: {name}\n===================================================================\n--- {name}\tCurrent\n+++ {name}\tProposed\n@@ -{},{} +1,{} @@\n",
        if old.is_some_and(|o| !o.is_empty()) {
            1
        } else {
            0
        },
        old.map_or(0, lines),
        lines(new)
    );
    for l in old.unwrap_or("").lines() {
        patch.push_str(&format!("-{l}\n"));
    }
    for l in new.lines() {
        patch.push_str(&format!("+{l}\n"));
    }
    json!({
        "fileDiff": patch,
        "fileName": name,
        "filePath": path,
        "originalContent": old,
        "newContent": new,
        "isNewFile": old.is_none(),
    })
}

/// The `result` response object of a call: its raw output when that is an object, else the
/// output (or error) text under `output` (`error`).
fn response_of(call: &ToolCall, status: &str, harness: &str) -> Value {
    if let Some(Value::Object(o)) = &call.raw_output {
        return Value::Object(o.clone());
    }
    let text = match &call.raw_output {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => call.content_text(),
        Some(v) => v.to_string(),
    };
    match status {
        "success" => json!({"output": text}),
        "error" => json!({"error": text}),
        _ => json!({"error": format!(
            "[Operation Cancelled] The call had not finished when the conversation was carried from {harness}.{}",
            if text.is_empty() { String::new() } else { format!(" {text}") }
        )}),
    }
}

/// One tool call record, with its result.
fn call_record(call: &ToolCall, header: &Header<'_>, timestamp: &str) -> Value {
    let name = call_name(call);
    let native = gemini_meta([&call.meta]);
    let status = match call.status {
        Some(ToolStatus::Completed) => "success",
        Some(ToolStatus::Failed) => {
            if native.and_then(|g| g.get("status")).and_then(Value::as_str) == Some("cancelled") {
                "cancelled"
            } else {
                "error"
            }
        }
        _ => "cancelled",
    };
    let args = match &call.raw_input {
        Some(Value::Object(o)) => Value::Object(o.clone()),
        Some(Value::Null) | None => json!({}),
        Some(v) => json!({"input": v}),
    };
    let display = if let Some(d) = native.and_then(|g| g.get("resultDisplay")) {
        d.clone()
    } else if let Some(diff) = call
        .content
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some("diff"))
    {
        file_diff(diff)
    } else {
        json!(call.content_text())
    };
    let mut rec = Map::new();
    rec.insert("id".into(), json!(call.id));
    rec.insert("name".into(), json!(name));
    rec.insert("args".into(), args);
    rec.insert(
        "result".into(),
        json!([{"functionResponse": {"id": call.id, "name": name, "response": response_of(call, status, header.harness)}}]),
    );
    rec.insert("status".into(), json!(status));
    rec.insert(
        "timestamp".into(),
        json!(meta_str([&call.meta], "timestamp").unwrap_or(timestamp)),
    );
    let agent = call
        .meta
        .get("asp")
        .and_then(|a| a.get("subagentSessionId"))
        .and_then(Value::as_str)
        .and_then(|child| header.child_ids.get(child))
        .map(|gid| json!(gid))
        .or_else(|| native.and_then(|g| g.get("agentId")).cloned());
    if let Some(agent) = agent {
        rec.insert("agentId".into(), agent);
    }
    rec.insert("resultDisplay".into(), display);
    if let Some(d) = native.and_then(|g| g.get("description")) {
        rec.insert("description".into(), d.clone());
    }
    let title = if call.title.is_empty() {
        calls::display_name(&name).unwrap_or(&name).to_owned()
    } else {
        call.title.clone()
    };
    rec.insert("displayName".into(), json!(title));
    if let Some(r) = native.and_then(|g| g.get("renderOutputAsMarkdown")) {
        rec.insert("renderOutputAsMarkdown".into(), r.clone());
    }
    Value::Object(rec)
}

/// A plan as the `write_todos` call Gemini would have made.
fn plan_call(entries: &[Value], id: String, timestamp: &str) -> Value {
    let todos: Vec<Value> = entries
        .iter()
        .map(|e| {
            let status = e
                .pointer("/_meta/gemini/status")
                .or_else(|| e.get("status"))
                .and_then(Value::as_str)
                .unwrap_or("pending");
            json!({"description": e.get("content").and_then(Value::as_str).unwrap_or(""), "status": status})
        })
        .collect();
    let mut listing = String::from("Successfully updated the todo list. The current list is now:");
    for (i, t) in todos.iter().enumerate() {
        listing.push_str(&format!(
            "\n{}. [{}] {}",
            i + 1,
            t["status"].as_str().unwrap_or(""),
            t["description"].as_str().unwrap_or("")
        ));
    }
    json!({
        "id": id, "name": "write_todos", "args": {"todos": todos},
        "result": [{"functionResponse": {"id": id, "name": "write_todos", "response": {"output": listing}}}],
        "status": "success", "timestamp": timestamp,
        "resultDisplay": {"todos": todos}, "displayName": "WriteTodos",
    })
}

/// A model message being assembled.
#[derive(Debug, Default)]
struct Turn {
    thoughts: Vec<Value>,
    text: String,
    calls: Vec<Value>,
    tokens: Option<Value>,
    model: Option<Value>,
    timestamp: Option<String>,
    /// The `messageId` of the turn's first chunk.
    message_id: Option<String>,
}

impl Turn {
    fn is_empty(&self) -> bool {
        self.thoughts.is_empty() && self.text.is_empty() && self.calls.is_empty()
    }
}

struct Builder<'a> {
    header: &'a Header<'a>,
    records: Vec<Value>,
    turn: Turn,
    plans: usize,
    default_time: String,
    first_ms: Option<i64>,
    last_ms: Option<i64>,
    dropped: BTreeSet<String>,
    used_ids: HashSet<String>,
}

impl Builder<'_> {
    /// The record id: the message's own id when it has one not used yet (a Gemini record id
    /// carried as ACP `messageId`), else one derived from the session and position. Gemini
    /// keys messages by id, so an id must never repeat.
    fn message_id(&mut self, own: Option<&str>) -> String {
        if let Some(id) = own.filter(|id| !id.is_empty())
            && self.used_ids.insert(id.to_owned())
        {
            return id.to_owned();
        }
        loop {
            let id = name_uuid(&format!(
                "{}/message/{}/{}",
                self.header.session_id,
                self.records.len(),
                self.used_ids.len()
            ));
            if self.used_ids.insert(id.clone()) {
                return id;
            }
        }
    }

    /// The time of an item: its own (any `_meta` namespace's `timestamp`), else the last seen.
    fn time(&mut self, own: Option<&str>) -> String {
        if let Some(t) = own
            && let Some(ms) = time::parse_rfc3339(t)
        {
            self.first_ms.get_or_insert(ms);
            self.last_ms = Some(ms);
            self.default_time = time::iso(ms);
        }
        self.default_time.clone()
    }

    fn flush(&mut self) {
        let turn = std::mem::take(&mut self.turn);
        if turn.is_empty() {
            return;
        }
        let mut rec = Map::new();
        rec.insert(
            "id".into(),
            json!(self.message_id(turn.message_id.as_deref())),
        );
        let ts = turn.timestamp.unwrap_or_else(|| self.default_time.clone());
        rec.insert("timestamp".into(), json!(ts));
        rec.insert("type".into(), json!("gemini"));
        rec.insert("content".into(), json!(turn.text));
        rec.insert("thoughts".into(), Value::Array(turn.thoughts));
        rec.insert("tokens".into(), turn.tokens.unwrap_or(Value::Null));
        if let Some(m) = turn.model {
            rec.insert("model".into(), m);
        }
        if !turn.calls.is_empty() {
            rec.insert("toolCalls".into(), Value::Array(turn.calls));
        }
        self.records.push(Value::Object(rec));
    }

    fn turn_time(&mut self, own: Option<&str>) -> String {
        let t = self.time(own);
        self.turn.timestamp.get_or_insert_with(|| t.clone());
        t
    }

    fn push(&mut self, item: &Item) {
        match item {
            Item::User(m) => {
                self.flush();
                let ts = self.time(meta_str(&m.metas, "timestamp"));
                let parts = user_parts(m);
                if parts.is_empty() {
                    return;
                }
                let mut rec = Map::new();
                rec.insert("id".into(), json!(self.message_id(m.message_id.as_deref())));
                rec.insert("timestamp".into(), json!(ts));
                rec.insert("type".into(), json!("user"));
                rec.insert("content".into(), Value::Array(parts));
                if let Some(dc) = gemini_meta(&m.metas).and_then(|g| g.get("displayContent")) {
                    rec.insert("displayContent".into(), dc.clone());
                }
                self.records.push(Value::Object(rec));
            }
            Item::Thought(m) => {
                if !self.turn.text.is_empty() || !self.turn.calls.is_empty() {
                    self.flush();
                }
                let ts = self.turn_time(meta_str(&m.metas, "timestamp"));
                if self.turn.message_id.is_none() {
                    self.turn.message_id.clone_from(&m.message_id);
                }
                for b in &m.blocks {
                    if let Some(t) = b.get("text").and_then(Value::as_str)
                        && !t.trim().is_empty()
                    {
                        self.turn.thoughts.push(thought_of(t, &ts));
                    }
                }
            }
            Item::Agent(m) => {
                if !self.turn.calls.is_empty() {
                    self.flush();
                }
                self.turn_time(meta_str(&m.metas, "timestamp"));
                if self.turn.message_id.is_none() {
                    self.turn.message_id.clone_from(&m.message_id);
                }
                let text = m.text();
                if text.trim().is_empty() {
                    return;
                }
                if !self.turn.text.is_empty() {
                    self.turn.text.push_str("\n\n");
                }
                self.turn.text.push_str(&text);
                if let Some(model) = gemini_meta(&m.metas).and_then(|g| g.get("model")) {
                    self.turn.model = Some(model.clone());
                }
            }
            Item::Tool(call) => {
                let ts = self.turn_time(meta_str([&call.meta], "timestamp"));
                let rec = call_record(call, self.header, &ts);
                self.turn.calls.push(rec);
            }
            Item::Plan { entries, .. } => {
                // The plan a carried `write_todos` call produced is that call's own.
                let own = self.turn.calls.last().is_some_and(|c| {
                    c["name"] == "write_todos"
                        && c.pointer("/args/todos")
                            .and_then(Value::as_array)
                            .map(Vec::len)
                            == Some(entries.len())
                });
                if own {
                    return;
                }
                let ts = self.turn_time(None);
                self.plans += 1;
                let id = format!("{}{}", calls::PLAN_CALL_PREFIX, self.plans);
                self.turn.calls.push(plan_call(entries, id, &ts));
            }
            Item::Other(v) => {
                let kind = v.get("sessionUpdate").and_then(Value::as_str).unwrap_or("");
                match kind {
                    "session_info_update" => {}
                    "usage_update" => {
                        let native = v.pointer("/_meta/gemini");
                        if let Some(tokens) = native.and_then(|g| g.get("tokens")) {
                            let target = if self.turn.is_empty() {
                                self.records
                                    .iter_mut()
                                    .rev()
                                    .find(|r| r["type"] == "gemini")
                                    .and_then(Value::as_object_mut)
                            } else {
                                None
                            };
                            let model = native.and_then(|g| g.get("model")).cloned();
                            match target {
                                Some(rec) => {
                                    rec.insert("tokens".into(), tokens.clone());
                                    if let Some(m) = model {
                                        rec.insert("model".into(), m);
                                    }
                                }
                                None => {
                                    // Gemini reports usage once per model message, at its end.
                                    self.turn.tokens = Some(tokens.clone());
                                    if model.is_some() {
                                        self.turn.model = model;
                                    }
                                    self.flush();
                                }
                            }
                        } else {
                            self.dropped.insert(kind.to_owned());
                        }
                    }
                    other => {
                        self.dropped.insert(other.to_owned());
                    }
                }
            }
        }
    }
}

/// Whether a built message is something Gemini's listing counts as resumable.
fn resumable(rec: &Value) -> bool {
    match rec["type"].as_str() {
        Some("user") => {
            let text: String = rec["content"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            let t = text.trim();
            !t.is_empty() && !t.starts_with('/') && !t.starts_with('?')
        }
        Some("gemini") => {
            rec["content"]
                .as_str()
                .is_some_and(|c| !c.trim().is_empty())
                || rec["toolCalls"].as_array().is_some_and(|a| !a.is_empty())
                || rec["thoughts"].as_array().is_some_and(|a| !a.is_empty())
        }
        _ => false,
    }
}

/// Builds the chat for a folded conversation.
pub fn build(items: &[Item], header: &Header<'_>) -> Chat {
    let mut b = Builder {
        header,
        records: Vec::new(),
        turn: Turn::default(),
        plans: 0,
        default_time: time::iso(header.updated_ms),
        first_ms: None,
        last_ms: None,
        dropped: BTreeSet::new(),
        used_ids: HashSet::new(),
    };
    for item in items {
        b.push(item);
    }
    b.flush();
    let start_ms = b.first_ms.unwrap_or(header.updated_ms);
    let last_ms = b
        .last_ms
        .unwrap_or(header.updated_ms)
        .max(header.updated_ms);
    let mut meta = Map::new();
    meta.insert("sessionId".into(), json!(header.session_id));
    meta.insert("projectHash".into(), json!(project_hash(header.cwd)));
    meta.insert("startTime".into(), json!(time::iso(start_ms)));
    meta.insert("lastUpdated".into(), json!(time::iso(last_ms)));
    meta.insert(
        "kind".into(),
        json!(if header.subagent { "subagent" } else { "main" }),
    );
    if header.subagent {
        meta.insert("directories".into(), json!([header.cwd]));
    }
    if !header.title.trim().is_empty() {
        meta.insert("summary".into(), json!(header.title));
    }
    let resumable = b.records.iter().any(resumable);
    let mut records = vec![Value::Object(meta)];
    records.append(&mut b.records);
    Chat {
        records,
        start_ms,
        dropped: b.dropped,
        resumable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::conversation::fold;

    fn p(u: Value) -> Value {
        json!({"sessionId": "s", "update": u})
    }

    fn header<'a>(children: &'a HashMap<String, String>) -> Header<'a> {
        Header {
            session_id: "0b7e5a4c-1111-4222-8333-444455556666",
            cwd: "/home/dev/shop",
            title: "Add a flag",
            updated_ms: time::parse_rfc3339("2026-11-29T10:00:09Z").unwrap(),
            subagent: false,
            harness: "claude-code",
            child_ids: children,
        }
    }

    #[test]
    fn every_call_carries_its_result_and_plans_become_write_todos() {
        let items = fold([
            p(
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Add a flag"}}),
            ),
            p(
                json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "Read first."}}),
            ),
            p(
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read deploy.sh", "kind": "read", "rawInput": {"file_path": "/x"}, "_meta": {"claudeCode": {"toolName": "Read"}}}),
            ),
            p(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "rawOutput": "body"}),
            ),
            p(
                json!({"sessionUpdate": "plan", "entries": [{"content": "Do it", "priority": "medium", "status": "pending"}]}),
            ),
            p(
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Done."}}),
            ),
            p(
                json!({"sessionUpdate": "tool_call", "toolCallId": "t2", "title": "ls", "kind": "execute"}),
            ),
            p(json!({"sessionUpdate": "current_mode_update", "currentModeId": "plan"})),
        ]);
        let children = HashMap::new();
        let chat = build(&items, &header(&children));
        let r = &chat.records;
        assert_eq!(r.len(), 4, "{r:#?}");
        assert_eq!(r[0]["summary"], "Add a flag");
        assert_eq!(r[0]["projectHash"], project_hash("/home/dev/shop"));
        assert_eq!(r[1]["content"], json!([{"text": "Add a flag"}]));
        let calls = r[2]["toolCalls"].as_array().unwrap();
        assert_eq!(r[2]["thoughts"][0]["description"], "Read first.");
        assert_eq!(calls[0]["name"], "Read");
        assert_eq!(calls[0]["displayName"], "Read deploy.sh");
        assert_eq!(
            calls[0]["result"][0]["functionResponse"],
            json!({"id": "t1", "name": "Read", "response": {"output": "body"}})
        );
        assert_eq!(calls[1]["name"], "write_todos");
        assert!(
            calls[1]["id"]
                .as_str()
                .unwrap()
                .starts_with(calls::PLAN_CALL_PREFIX)
        );
        assert_eq!(r[3]["content"], "Done.");
        let unfinished = &r[3]["toolCalls"][0];
        assert_eq!(unfinished["status"], "cancelled");
        assert_eq!(unfinished["name"], "execute");
        assert!(
            unfinished["result"][0]["functionResponse"]["response"]["error"]
                .as_str()
                .unwrap()
                .starts_with("[Operation Cancelled]")
        );
        assert!(chat.resumable);
        assert_eq!(
            chat.dropped,
            BTreeSet::from(["current_mode_update".to_owned()])
        );
    }

    #[test]
    fn thoughts_split_back_into_subject_and_description() {
        assert_eq!(
            thought_of("**Planning**\nRead the file.", "t"),
            json!({"subject": "Planning", "description": "Read the file.", "timestamp": "t"})
        );
        assert_eq!(thought_of("plain", "t")["subject"], "");
        let inline = thought_of("**Bold** start of a sentence", "t");
        assert_eq!(
            inline["subject"], "",
            "only a `**subject**` line is a subject"
        );
        assert_eq!(inline["description"], "**Bold** start of a sentence");
    }

    #[test]
    fn diffs_become_file_diffs() {
        let d = file_diff(
            &json!({"type": "diff", "path": "/a/b.sh", "oldText": "x\n", "newText": "y\n"}),
        );
        assert_eq!(d["fileName"], "b.sh");
        assert_eq!(d["originalContent"], "x\n");
        assert!(
            d["fileDiff"]
                .as_str()
                .unwrap()
                .ends_with("@@ -1,1 +1,1 @@\n-x\n+y\n")
        );
        let new =
            file_diff(&json!({"type": "diff", "path": "/a/n", "oldText": null, "newText": "z"}));
        assert_eq!(new["isNewFile"], true);
    }
}
