//! A conversation from another harness written as a Claude Code transcript.
//!
//! The rules are Claude Code's own (spec §6): one linear `parentUuid` chain; every row with
//! the full envelope; assistant rows with the full API message envelope; each response's
//! `tool_result`s in the user row right after it; a title record; a newline after every line.
//! Reasoning is written as a `thinking` block only when it came from Anthropic with its
//! signature (a Claude Code session carried without its native file); any other reasoning
//! becomes a text block saying whose it was, because the API rejects thinking it did not sign.
//! Foreign tool calls stay what they were (their own name and input), history the model
//! reads, never a Claude tool it would believe it ran.

use std::collections::{BTreeMap, HashMap};

use serde_json::{Map, Value, json};

use super::ids::{format_time, name_uuid, parse_time, tag};
use crate::kit::acp;
use crate::kit::conversation::{Item, Message, ToolCall};
use crate::kit::title::TitleOrigin;

/// The Claude Code version written into rows: a real 2.1.x release (the one the judge runs).
pub const VERSION: &str = "2.1.83";

/// What `TodoWrite` answers; written as the result of a carried plan.
const TODO_RESULT: &str = "Todos have been modified successfully. Ensure that you continue to use the todo list to track your progress. Please proceed with the current tasks if applicable";

/// A transcript to write, and what Claude Code should replay from it.
#[derive(Debug, Clone, PartialEq)]
pub struct Composed {
    pub bytes: Vec<u8>,
    /// Kinds of `session/update` a transcript has no place for, left out (in stream order).
    pub dropped: Vec<String>,
    /// `session/update` kinds and how many of each a replay of this transcript gives.
    pub intended: BTreeMap<&'static str, u64>,
}

/// The session being written.
#[derive(Debug, Clone)]
pub struct Target<'a> {
    /// The session id inside the lines (the file stem).
    pub id: &'a str,
    pub cwd: &'a str,
    pub title: &'a str,
    /// Who gave it: written as a `custom-title` record (chosen, or nothing says), an
    /// `ai-title` one (generated), or not at all (only the first prompt stood for one, which
    /// Claude Code shows anyway).
    pub title_origin: Option<TitleOrigin>,
    /// The harness the conversation came from.
    pub harness: &'a str,
    /// Its last activity; the last row gets this time.
    pub updated_at: Option<&'a str>,
    /// The git branch it was on, when its harness kept one ([`crate::kit::git_branch`]).
    pub git_branch: Option<&'a str>,
}

/// When each tool call was announced and when it last changed, and where each plan was, by
/// position in the update stream. A call announced after an earlier call finished is the next
/// step of the turn (a new response), not a parallel call of the same response.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Timeline {
    pub tools: HashMap<String, (usize, usize)>,
    pub plans: Vec<usize>,
}

impl Timeline {
    /// Notes update `i` of the stream.
    pub fn note(&mut self, i: usize, update: &Value) {
        match update.get("sessionUpdate").and_then(Value::as_str) {
            Some("tool_call" | "tool_call_update") => {
                if let Some(id) = update.get("toolCallId").and_then(Value::as_str) {
                    let span = self.tools.entry(id.to_owned()).or_insert((i, i));
                    span.1 = i;
                }
            }
            Some("plan") => self.plans.push(i),
            _ => {}
        }
    }
}

struct Composer<'a> {
    t: &'a Target<'a>,
    timeline: &'a Timeline,
    next_plan: usize,
    rows: Vec<Map<String, Value>>,
    parent: Option<String>,
    model: String,
    /// Blocks of the response being built, and the results its tool calls got.
    response: Vec<Value>,
    /// Each pending result with the stream position where its call finished.
    results: Vec<(Value, Option<Value>, usize)>,
    usage: Option<Value>,
    /// The latest time the source recorded for what has been read so far (epoch ms).
    at: Option<i64>,
    /// Each row's [`Composer::at`] when it was made.
    times: Vec<Option<i64>>,
    intended: BTreeMap<&'static str, u64>,
    dropped: Vec<String>,
}

fn count(m: &mut BTreeMap<&'static str, u64>, k: &'static str) {
    *m.entry(k).or_default() += 1;
}

/// Writes `items` (a folded update stream) as transcript lines.
pub fn compose(t: &Target<'_>, items: &[Item], timeline: &Timeline) -> Composed {
    let mut c = Composer {
        t,
        timeline,
        next_plan: 0,
        rows: Vec::new(),
        parent: None,
        model: "unknown".to_owned(),
        response: Vec::new(),
        results: Vec::new(),
        usage: None,
        at: None,
        times: Vec::new(),
        intended: BTreeMap::new(),
        dropped: Vec::new(),
    };
    for item in items {
        // A user message begins a turn: what was built before it is written at the time it
        // had, not at this message's.
        if matches!(item, Item::User(_)) {
            c.flush();
        }
        if let Some(t) = crate::kit::conversation::item_millis(item) {
            c.at = Some(c.at.map_or(t, |a| a.max(t)));
        }
        match item {
            Item::User(m) => c.user(m),
            Item::Agent(m) => {
                c.before_text();
                c.agent_text(&m.text(), m);
            }
            Item::Thought(m) => {
                c.before_text();
                c.thought(m);
            }
            Item::Tool(call) => c.tool(call),
            Item::Plan { entries, meta } => c.plan(entries, meta.as_ref()),
            Item::Other(u) => c.other(u),
        }
    }
    c.flush();
    c.finish()
}

fn claude_meta<'v>(
    metas: impl IntoIterator<Item = &'v Map<String, Value>>,
    key: &str,
) -> Option<&'v Value> {
    metas
        .into_iter()
        .find_map(|m| m.get("claudeCode").and_then(|c| c.get(key)))
}

impl Composer<'_> {
    fn envelope(&mut self, kind: &str, body: Map<String, Value>) -> String {
        let n = self.rows.len();
        let uuid = name_uuid(&format!("{}/row/{n}", self.t.id));
        let mut row = Map::new();
        row.insert("parentUuid".into(), json!(self.parent));
        row.insert("isSidechain".into(), json!(false));
        if kind == "assistant" {
            row.extend(body);
            row.insert("type".into(), json!(kind));
        } else {
            row.insert("type".into(), json!(kind));
            row.extend(body);
        }
        row.insert("uuid".into(), json!(uuid));
        row.insert("timestamp".into(), json!(""));
        row.insert("userType".into(), json!("external"));
        row.insert("entrypoint".into(), json!("cli"));
        row.insert("cwd".into(), json!(self.t.cwd));
        row.insert("sessionId".into(), json!(self.t.id));
        row.insert("version".into(), json!(VERSION));
        row.insert(
            "gitBranch".into(),
            json!(self.t.git_branch.unwrap_or_default()),
        );
        self.rows.push(row);
        self.times.push(self.at);
        self.parent = Some(uuid.clone());
        uuid
    }

    fn user(&mut self, m: &Message) {
        let mut blocks: Vec<Value> = Vec::new();
        let mut last_was_text = false;
        for b in &m.blocks {
            let is_text = b.get("type").and_then(Value::as_str) == Some("text");
            let block = match b.get("type").and_then(Value::as_str) {
                Some("text") => {
                    json!({"type": "text", "text": b.get("text").and_then(Value::as_str).unwrap_or("")})
                }
                Some("image") => image(b),
                Some("resource_link") => json!({"type": "text", "text": format!(
                    "[{}]({})",
                    b.get("name").and_then(Value::as_str).unwrap_or("resource"),
                    b.get("uri").and_then(Value::as_str).unwrap_or("")
                )}),
                Some("resource") => json!({"type": "text", "text": b
                    .pointer("/resource/text")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
                    .unwrap_or_else(|| format!("[resource {}]", b.pointer("/resource/uri").and_then(Value::as_str).unwrap_or("")))}),
                _ => json!({"type": "text", "text": b.to_string()}),
            };
            // Text chunks of one message are pieces of one text: join them.
            if is_text
                && last_was_text
                && let Some(last) = blocks.last_mut()
            {
                let joined = format!(
                    "{}{}",
                    last["text"].as_str().unwrap_or(""),
                    block["text"].as_str().unwrap_or("")
                );
                last["text"] = json!(joined);
                continue;
            }
            last_was_text = is_text;
            blocks.push(block);
        }
        blocks.retain(|b| {
            b.get("type").and_then(Value::as_str) != Some("text")
                || b["text"].as_str().is_some_and(|t| !t.trim().is_empty())
        });
        if blocks.is_empty() {
            return;
        }
        for _ in &blocks {
            count(&mut self.intended, "user_message_chunk");
        }
        let content = match blocks.as_slice() {
            [only] if only["type"] == "text" => only["text"].clone(),
            _ => Value::Array(blocks),
        };
        let mut body = Map::new();
        body.insert(
            "message".into(),
            json!({"role": "user", "content": content}),
        );
        self.envelope("user", body);
    }

    /// Text after tool calls starts a new response (the results go first).
    fn before_text(&mut self) {
        if !self.results.is_empty() {
            self.flush();
        }
    }

    fn agent_text(&mut self, text: &str, m: &Message) {
        if text.is_empty() {
            return;
        }
        if let Some(u) = claude_meta(&m.metas, "usage") {
            self.usage = Some(u.clone());
        }
        if let Some(model) = claude_meta(&m.metas, "model").and_then(Value::as_str) {
            model.clone_into(&mut self.model);
        }
        count(&mut self.intended, "agent_message_chunk");
        self.response.push(json!({"type": "text", "text": text}));
    }

    fn thought(&mut self, m: &Message) {
        let text = m.text();
        if text.is_empty() {
            return;
        }
        let signature = claude_meta(&m.metas, "signature").and_then(Value::as_str);
        match signature {
            Some(sig) if self.t.harness == super::NAME => {
                count(&mut self.intended, "agent_thought_chunk");
                self.response
                    .push(json!({"type": "thinking", "thinking": text, "signature": sig}));
            }
            _ => {
                count(&mut self.intended, "agent_message_chunk");
                self.response.push(json!({
                    "type": "text",
                    "text": foreign_reasoning_text(self.t.harness, &text),
                }));
            }
        }
    }

    /// A step that starts after a pending call finished begins a new response.
    fn step_at(&mut self, start: usize) {
        if self.results.iter().any(|(_, _, end)| *end < start) {
            self.flush();
        }
    }

    fn tool(&mut self, call: &ToolCall) {
        let (start, end) = self
            .timeline
            .tools
            .get(&call.id)
            .copied()
            .unwrap_or((0, usize::MAX));
        self.step_at(start);
        if let Some(m) = call
            .meta
            .get("claudeCode")
            .and_then(|c| c.get("model"))
            .and_then(Value::as_str)
        {
            m.clone_into(&mut self.model);
        }
        let name = tool_name(call);
        let id = tool_id(&call.id, self.t.id, self.rows.len() + self.response.len());
        let input = match &call.raw_input {
            Some(Value::Object(o)) => Value::Object(o.clone()),
            Some(Value::Null) | None => json!({}),
            Some(other) => json!({"input": other}),
        };
        self.response
            .push(json!({"type": "tool_use", "id": id, "name": name, "input": input}));
        count(&mut self.intended, "tool_call");
        count(&mut self.intended, "tool_call_update");
        let (content, is_error) = match call.status {
            Some(crate::kit::acp::ToolStatus::Completed) => (result_content(call), false),
            Some(crate::kit::acp::ToolStatus::Failed) => (result_content(call), true),
            _ => (json!("[Tool execution was interrupted]"), true),
        };
        let mut block = Map::new();
        block.insert("tool_use_id".into(), json!(id));
        block.insert("type".into(), json!("tool_result"));
        block.insert("content".into(), content);
        if is_error {
            block.insert("is_error".into(), json!(true));
        }
        let response = call
            .meta
            .get("claudeCode")
            .and_then(|c| c.get("toolResponse"))
            .cloned();
        self.results.push((Value::Object(block), response, end));
    }

    fn plan(&mut self, entries: &[Value], meta: Option<&Map<String, Value>>) {
        let at = self
            .timeline
            .plans
            .get(self.next_plan)
            .copied()
            .unwrap_or(0);
        self.next_plan += 1;
        self.step_at(at);
        let id = meta
            .and_then(|m| m.get("claudeCode"))
            .and_then(|c| c.get("toolUseId"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| {
                format!(
                    "toolu_asp{}",
                    tag(
                        &format!(
                            "{}/plan/{}",
                            self.t.id,
                            self.rows.len() + self.response.len()
                        ),
                        20
                    )
                )
            });
        let todos: Vec<Value> = entries
            .iter()
            .map(|e| {
                let content = e.get("content").and_then(Value::as_str).unwrap_or("");
                let active = e
                    .pointer("/_meta/claudeCode/activeForm")
                    .and_then(Value::as_str)
                    .unwrap_or(content);
                json!({"content": content, "status": e.get("status").and_then(Value::as_str).unwrap_or("pending"), "activeForm": active})
            })
            .collect();
        self.response.push(
            json!({"type": "tool_use", "id": id, "name": "TodoWrite", "input": {"todos": todos}}),
        );
        count(&mut self.intended, "plan");
        self.results.push((
            json!({"tool_use_id": id, "type": "tool_result", "content": TODO_RESULT}),
            None,
            at,
        ));
    }

    fn other(&mut self, u: &Value) {
        let kind = u
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .unwrap_or("unknown");
        // The title and times travel as the session's own fields (the title record).
        if kind == "session_info_update" {
            return;
        }
        if kind != "config_option_update" {
            if !self.dropped.iter().any(|k| k == kind) {
                self.dropped.push(kind.to_owned());
            }
            return;
        }
        if let Some(m) = acp::chosen(u, "model") {
            m.clone_into(&mut self.model);
        }
    }

    /// Writes the response being built and the results of its tool calls.
    fn flush(&mut self) {
        if self.response.is_empty() && self.results.is_empty() {
            return;
        }
        let n = self.rows.len();
        let stop = if self.results.is_empty() {
            "end_turn"
        } else {
            "tool_use"
        };
        let usage = self.usage.take().unwrap_or_else(|| {
            json!({"input_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 0})
        });
        let mut message = Map::new();
        message.insert("model".into(), json!(self.model));
        message.insert(
            "id".into(),
            json!(format!(
                "msg_asp{}",
                tag(&format!("{}/msg/{n}", self.t.id), 21)
            )),
        );
        message.insert("type".into(), json!("message"));
        message.insert("role".into(), json!("assistant"));
        message.insert(
            "content".into(),
            Value::Array(std::mem::take(&mut self.response)),
        );
        message.insert("stop_reason".into(), json!(stop));
        message.insert("stop_sequence".into(), Value::Null);
        message.insert("usage".into(), usage);
        let mut body = Map::new();
        body.insert("message".into(), Value::Object(message));
        body.insert(
            "requestId".into(),
            json!(format!(
                "req_asp{}",
                tag(&format!("{}/req/{n}", self.t.id), 19)
            )),
        );
        let assistant = self.envelope("assistant", body);
        if self.results.is_empty() {
            return;
        }
        let results = std::mem::take(&mut self.results);
        let response = match results.as_slice() {
            [(_, Some(r), _)] => Some(r.clone()),
            _ => None,
        };
        let mut body = Map::new();
        body.insert(
            "message".into(),
            json!({"role": "user", "content": results.into_iter().map(|(b, _, _)| b).collect::<Vec<_>>()}),
        );
        self.envelope("user", body);
        let row = self.rows.last_mut().expect("just written");
        // `toolUseResult` and `sourceToolAssistantUUID` follow `timestamp`, as Claude Code
        // writes them.
        let tail: Vec<(String, Value)> = [
            "userType",
            "entrypoint",
            "cwd",
            "sessionId",
            "version",
            "gitBranch",
        ]
        .iter()
        .filter_map(|k| row.shift_remove(*k).map(|v| ((*k).to_owned(), v)))
        .collect();
        if let Some(r) = response {
            row.insert("toolUseResult".into(), r);
        }
        row.insert("sourceToolAssistantUUID".into(), json!(assistant));
        row.extend(tail);
    }

    fn finish(mut self) -> Composed {
        for (row, ms) in self
            .rows
            .iter_mut()
            .zip(row_times(&self.times, self.t.updated_at))
        {
            row.insert("timestamp".into(), json!(format_time(ms)));
        }
        let mut bytes = Vec::new();
        for row in &self.rows {
            serde_json::to_writer(&mut bytes, row).expect("rows serialise");
            bytes.push(b'\n');
        }
        let title = match self.t.title_origin {
            _ if self.t.title.is_empty() => None,
            Some(TitleOrigin::Prompt) => None,
            Some(TitleOrigin::Generated) => {
                Some(json!({"type": "ai-title", "aiTitle": self.t.title, "sessionId": self.t.id}))
            }
            Some(TitleOrigin::Chosen) | None => Some(
                json!({"type": "custom-title", "customTitle": self.t.title, "sessionId": self.t.id}),
            ),
        };
        if let Some(title) = title {
            serde_json::to_writer(&mut bytes, &title).expect("serialises");
            bytes.push(b'\n');
        }
        Composed {
            bytes,
            intended: std::mem::take(&mut self.intended),
            dropped: std::mem::take(&mut self.dropped),
        }
    }
}

/// Each row's time, in epoch ms, from the time the source recorded for what it holds (`times`,
/// the latest recorded up to that row): a row is never earlier than the one before it, and a
/// row with the same time as the one before it is 1 ms after it, so the rows keep their order
/// and their source's times. Rows before the first recorded time end 1 ms apart at it; a
/// conversation that records none ends 1 ms apart at the session's `updatedAt`.
fn row_times(times: &[Option<i64>], updated_at: Option<&str>) -> Vec<i64> {
    let total = times.len() as i64;
    let Some((first_at, first)) = times
        .iter()
        .enumerate()
        .find_map(|(i, t)| t.map(|t| (i as i64, t)))
    else {
        let end = updated_at.and_then(parse_time).unwrap_or(0);
        return (0..total).map(|i| end - (total - 1 - i)).collect();
    };
    let mut out = Vec::with_capacity(times.len());
    for (i, t) in times.iter().enumerate() {
        let i = i as i64;
        let ms = match (*t, out.last()) {
            (None, None) => first - (first_at - i),
            (None, Some(&prev)) => prev + 1,
            (Some(t), None) => t,
            (Some(t), Some(&prev)) => t.max(prev + 1),
        };
        out.push(ms);
    }
    out
}

fn image(b: &Value) -> Value {
    let data = b.get("data").and_then(Value::as_str).unwrap_or("");
    let mime = b
        .get("mimeType")
        .and_then(Value::as_str)
        .unwrap_or("image/png");
    let uri = b.get("uri").and_then(Value::as_str).unwrap_or("");
    if !data.is_empty() {
        json!({"type": "image", "source": {"type": "base64", "media_type": mime, "data": data}})
    } else if uri.starts_with("https://") || uri.starts_with("http://") {
        json!({"type": "image", "source": {"type": "url", "url": uri}})
    } else {
        json!({"type": "text", "text": format!("[image {uri}]")})
    }
}

/// The tool's name as its harness gave it (`_meta.<ns>.toolName`/`name`), else its ACP kind;
/// made valid for the Anthropic API (`[a-zA-Z0-9_-]{1,64}`).
fn tool_name(call: &ToolCall) -> String {
    use crate::kit::tool_names::{api_safe, source_name};
    let own = call
        .meta
        .get("claudeCode")
        .and_then(|c| c.get("toolName"))
        .and_then(Value::as_str);
    let raw = own.or_else(|| source_name(&call.meta)).map_or_else(
        || {
            serde_json::to_value(call.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_else(|| "tool".to_owned())
        },
        str::to_owned,
    );
    api_safe(&raw).unwrap_or_else(|| "tool".to_owned())
}

/// The call's id when the API accepts it, else one derived from it.
fn tool_id(id: &str, session: &str, n: usize) -> String {
    let ok = !id.is_empty()
        && id.len() <= 64
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
    if ok {
        id.to_owned()
    } else {
        format!("toolu_asp{}", tag(&format!("{session}/tool/{n}/{id}"), 20))
    }
}

/// The result as the model saw it: text, or text and image blocks.
fn result_content(call: &ToolCall) -> Value {
    match &call.raw_output {
        Some(Value::String(s)) => json!(s),
        Some(Value::Array(blocks))
            if !blocks.is_empty()
                && blocks.iter().all(|b| {
                    matches!(
                        b.get("type").and_then(Value::as_str),
                        Some("text" | "image")
                    )
                }) =>
        {
            Value::Array(blocks.clone())
        }
        Some(Value::Null) | None => json!(call.content_text()),
        // `{"output": "..."}` and the like (Gemini's function responses): the one text is
        // what the model read.
        Some(Value::Object(o)) if o.len() == 1 && o.values().all(Value::is_string) => {
            o.values().next().cloned().unwrap_or_default()
        }
        Some(other) => json!(other.to_string()),
    }
}

/// Reasoning from another harness cannot be a `thinking` block (Anthropic verifies their
/// signatures), so it is written as a text block with this marker; reading it back turns it
/// into an `agent_thought_chunk` again.
const FOREIGN_REASONING: &str = "[reasoning from ";

fn foreign_reasoning_text(harness: &str, text: &str) -> String {
    format!("{FOREIGN_REASONING}{harness}]\n{text}")
}

/// The harness and text of a text block written by [`foreign_reasoning_text`].
pub(super) fn parse_foreign_reasoning(text: &str) -> Option<(&str, &str)> {
    let rest = text.strip_prefix(FOREIGN_REASONING)?;
    let (harness, body) = rest.split_once("]\n")?;
    (!harness.is_empty()
        && harness
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'))
    .then_some((harness, body))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::conversation::fold;

    fn p(u: Value) -> Value {
        json!({"sessionId": "s", "update": u})
    }

    #[test]
    fn a_foreign_conversation_becomes_a_linear_chain_with_adjacent_results() {
        let items = fold([
            p(
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Which tests?"}}),
            ),
            p(
                json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "look"}}),
            ),
            p(
                json!({"sessionUpdate": "tool_call", "toolCallId": "call 1", "title": "rg", "kind": "search", "status": "pending", "rawInput": {"cmd": "rg"}}),
            ),
            p(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "call 1", "status": "completed", "rawOutput": "a\n"}),
            ),
            p(
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Two."}}),
            ),
        ]);
        let t = Target {
            id: "01a1f83a-cfc8-7f41-a357-d22735d28371",
            cwd: "/home/dev/shop",
            title: "Which tests?",
            title_origin: None,
            harness: "codex",
            updated_at: Some("2026-11-28T16:20:00.000Z"),
            git_branch: None,
        };
        let c = compose(&t, &items, &Timeline::default());
        let text = String::from_utf8(c.bytes.clone()).unwrap();
        assert!(text.ends_with('\n'));
        let rows: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(rows.len(), 5);
        assert_eq!(rows[0]["parentUuid"], Value::Null);
        for w in rows[..4].windows(2) {
            assert_eq!(w[1]["parentUuid"], w[0]["uuid"]);
        }
        assert_eq!(
            rows[1]["message"]["content"][0]["text"],
            "[reasoning from codex]\nlook"
        );
        assert_eq!(rows[1]["message"]["content"][1]["type"], "tool_use");
        assert!(
            rows[1]["message"]["content"][1]["id"]
                .as_str()
                .unwrap()
                .starts_with("toolu_asp")
        );
        assert_eq!(rows[2]["message"]["content"][0]["type"], "tool_result");
        assert_eq!(rows[2]["sourceToolAssistantUUID"], rows[1]["uuid"]);
        assert_eq!(rows[3]["message"]["stop_reason"], "end_turn");
        assert_eq!(rows[3]["timestamp"], "2026-11-28T16:20:00.000Z");
        assert_eq!(rows[4]["type"], "custom-title");
        assert_eq!(c.intended["tool_call"], 1);
        assert_eq!(c.intended["agent_message_chunk"], 2);
        assert_eq!(
            compose(&t, &items, &Timeline::default()),
            c,
            "deterministic"
        );
    }

    #[test]
    fn each_row_keeps_the_time_its_source_recorded() {
        let at = |t: &str| json!({"codex": {"timestamp": t}});
        let items = fold([
            p(
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Which tests?"}, "_meta": at("2026-11-21T14:03:26.740Z")}),
            ),
            p(
                json!({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "rg", "kind": "search", "status": "pending", "_meta": at("2026-11-21T14:03:30.000Z")}),
            ),
            p(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed", "rawOutput": "a\n"}),
            ),
            p(
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Two."}, "_meta": at("2026-11-21T14:03:31.500Z")}),
            ),
            p(
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "And now?"}, "_meta": at("2026-11-23T09:00:00.000Z")}),
            ),
        ]);
        let t = Target {
            id: "01a1f83a-cfc8-7f41-a357-d22735d28371",
            cwd: "/home/dev/shop",
            title: "",
            title_origin: None,
            harness: "codex",
            updated_at: Some("2026-11-28T16:20:00.000Z"),
            git_branch: None,
        };
        let text = String::from_utf8(compose(&t, &items, &Timeline::default()).bytes).unwrap();
        let times: Vec<String> = text
            .lines()
            .map(|l| {
                serde_json::from_str::<Value>(l).unwrap()["timestamp"]
                    .as_str()
                    .unwrap()
                    .to_owned()
            })
            .collect();
        // The prompt; the response's rows (its call, the call's result, its text: written
        // when the response ended, 1 ms apart); the next prompt, two days later.
        assert_eq!(
            times,
            [
                "2026-11-21T14:03:26.740Z",
                "2026-11-21T14:03:31.500Z",
                "2026-11-21T14:03:31.501Z",
                "2026-11-21T14:03:31.502Z",
                "2026-11-23T09:00:00.000Z",
            ]
        );
    }

    #[test]
    fn rows_without_a_recorded_time_are_placed_around_those_with_one() {
        let ms = |t: &str| parse_time(t).unwrap();
        let t0 = ms("2026-11-21T14:03:26.740Z");
        // Before the first time, 1 ms apart up to it; after one, 1 ms after the row before;
        // never before the row before, even when the source's times go back.
        assert_eq!(
            row_times(
                &[
                    None,
                    None,
                    Some(t0),
                    None,
                    Some(t0 - 5_000),
                    Some(t0 + 60_000)
                ],
                None
            ),
            [t0 - 2, t0 - 1, t0, t0 + 1, t0 + 2, t0 + 60_000]
        );
        // No time at all: 1 ms apart, ending at updatedAt.
        let end = ms("2026-11-28T16:20:00.000Z");
        assert_eq!(
            row_times(&[None, None, None], Some("2026-11-28T16:20:00.000Z")),
            [end - 2, end - 1, end]
        );
    }
}
