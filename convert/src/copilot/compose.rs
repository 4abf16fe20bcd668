//! A conversation from another harness as Copilot's `events.jsonl` (spec §7): `session.start`
//! first, then per prompt a `user.message` (images as `session.binary_asset` events before it,
//! referred to by `assetId`), per answer an `assistant.message` with its `toolRequests`, and
//! per call a `tool.execution_start` / `tool.execution_complete` pair: a call without its
//! completion is not replayed by Copilot, so every call gets one. Reasoning goes into
//! `reasoningText` only; nothing provider-bound (`reasoningOpaque`) is ever written. Event ids
//! are name-based UUIDs of the session id and the event's number, and times come from the
//! carried updates, so the same session always gives the same bytes.

use serde_json::{Value, json};

use crate::kit::acp::ToolKind;
use crate::kit::conversation::{Item, Message, ToolCall};
use crate::kit::{time, uuid};

/// The Copilot version whose records these are (spec §0).
pub const COPILOT_VERSION: &str = "1.0.102";

pub struct Header<'a> {
    pub id: &'a str,
    pub cwd: &'a str,
    pub start_ms: i64,
    pub model: Option<&'a str>,
    /// The git branch it was on, when its harness kept one ([`crate::kit::git_branch`]):
    /// `session.start`'s `context.branch`, and `workspace.yaml`'s `branch`.
    pub branch: Option<&'a str>,
}

pub struct Composed {
    pub lines: Vec<Value>,
    /// Kinds of updates with no place in `events.jsonl`.
    pub dropped: Vec<String>,
    /// Whether a prompt or an answer was written (Copilot shows nothing else).
    pub resumable: bool,
    /// The time of the last event (ms).
    pub last_ms: i64,
}

impl Composed {
    pub fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for l in &self.lines {
            out.extend_from_slice(&serde_json::to_vec(l).expect("events serialise"));
            out.push(b'\n');
        }
        out
    }
}

use crate::kit::conversation::meta_time;

/// The Copilot tool a call of another harness is written as: Copilot's own name when the
/// call came from Copilot; else the source's name ([`crate::kit::tool_names`]), as Copilot
/// calls that tool when it has it; else the tool of its kind.
fn tool_name(t: &ToolCall) -> String {
    use crate::kit::tool_names::{self, Common};
    if let Some(n) = t
        .meta
        .get("copilot")
        .and_then(|c| c.get("name"))
        .and_then(Value::as_str)
    {
        return n.to_owned();
    }
    // Another harness's tool: as Copilot calls it when Copilot has it, else as it was.
    if let Some(name) = tool_names::source_name(&t.meta) {
        let own = Common::of(name).and_then(|c| match c {
            Common::Read => Some("view"),
            Common::Write => Some("create"),
            Common::Edit => Some("edit"),
            Common::Shell => Some("bash"),
            Common::Grep => Some("grep"),
            Common::Glob => Some("glob"),
            Common::Fetch => Some("web_fetch"),
            Common::List => None,
        });
        if let Some(own) = own {
            return own.to_owned();
        }
        if let Some(safe) = tool_names::api_safe(name) {
            return safe;
        }
    }
    match t.kind {
        ToolKind::Read => "view",
        ToolKind::Edit => "edit",
        ToolKind::Execute => "bash",
        ToolKind::Search => "grep",
        ToolKind::Fetch => "web_fetch",
        _ => "tool",
    }
    .to_owned()
}

struct Builder<'a> {
    h: &'a Header<'a>,
    lines: Vec<Value>,
    parent: Option<String>,
    now: i64,
    /// The answer being built: reasoning, text, calls.
    thought: String,
    text: String,
    calls: Vec<ToolCall>,
    dropped: Vec<String>,
    resumable: bool,
}

impl Builder<'_> {
    fn at(&mut self, ms: Option<i64>) {
        if let Some(ms) = ms
            && ms > self.now
        {
            self.now = ms;
        }
    }

    fn push(&mut self, kind: &str, data: Value) {
        let id = uuid::name_based(
            "copilot-event",
            &format!("{}/{}", self.h.id, self.lines.len()),
        );
        self.lines.push(json!({
            "type": kind,
            "data": data,
            "id": id,
            "timestamp": time::format_millis(time::from_millis(self.now)),
            "parentId": self.parent,
        }));
        self.parent = Some(id);
    }

    fn message_id(&self) -> String {
        uuid::name_based(
            "copilot-message",
            &format!("{}/{}", self.h.id, self.lines.len()),
        )
    }

    fn user(&mut self, m: &Message) {
        self.flush();
        self.at(meta_time(&m.metas));
        let mut attachments = Vec::new();
        for b in &m.blocks {
            if b.get("type").and_then(Value::as_str) != Some("image") {
                continue;
            }
            let (Some(data), Some(mime)) = (
                b.get("data").and_then(Value::as_str),
                b.get("mimeType").and_then(Value::as_str),
            ) else {
                continue;
            };
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(data)
                .unwrap_or_default();
            let asset = format!("sha256:{}", asp_format::digest::Digest::of(&bytes).hex());
            self.push(
                "session.binary_asset",
                json!({"assetId": asset, "type": "image", "mimeType": mime,
                       "byteLength": bytes.len(), "data": data}),
            );
            attachments.push(
                json!({"type": "file", "path": format!("/tmp/{}", &asset[7..]),
                "displayName": "image", "assetId": asset, "mimeType": mime,
                "byteLength": bytes.len()}),
            );
        }
        let text = m.text();
        if text.is_empty() && attachments.is_empty() {
            return;
        }
        let mut data = json!({"content": text, "messageId": self.message_id()});
        if !attachments.is_empty() {
            data["attachments"] = Value::Array(attachments);
        }
        self.push("user.message", data);
        self.resumable = true;
    }

    /// Writes the answer built so far, then its calls with their results.
    fn flush(&mut self) {
        if self.thought.is_empty() && self.text.is_empty() && self.calls.is_empty() {
            return;
        }
        let calls = std::mem::take(&mut self.calls);
        let requests: Vec<Value> = calls
            .iter()
            .map(|t| {
                json!({"toolCallId": t.id, "name": tool_name(t),
                       "arguments": t.raw_input.clone().unwrap_or_else(|| json!({})),
                       "type": "function", "intentionSummary": t.title, "toolTitle": t.title})
            })
            .collect();
        let mut data = json!({"messageId": self.message_id(),
                              "content": std::mem::take(&mut self.text),
                              "toolRequests": requests});
        let thought = std::mem::take(&mut self.thought);
        if !thought.is_empty() {
            data["reasoningText"] = json!(thought);
        }
        if let Some(m) = self.h.model {
            data["model"] = json!(m);
        }
        self.push("assistant.message", data);
        self.resumable = true;
        for t in &calls {
            let name = tool_name(t);
            let args = t.raw_input.clone().unwrap_or_else(|| json!({}));
            self.at(meta_time(std::slice::from_ref(&t.meta)));
            self.push(
                "tool.execution_start",
                json!({"toolCallId": t.id, "toolName": name, "arguments": args, "toolTitle": t.title}),
            );
            let mut text = t.content_text();
            if text.is_empty() {
                text = match &t.raw_output {
                    Some(Value::String(s)) => s.clone(),
                    Some(v) if !v.is_null() => v.to_string(),
                    _ => String::new(),
                };
            }
            let done = json!({"toolCallId": t.id});
            let mut done = done;
            if t.failed() || t.status.is_none() {
                let msg = if t.status.is_none() {
                    "no result of this call was carried".to_owned()
                } else if text.is_empty() {
                    "the call failed".to_owned()
                } else {
                    text
                };
                done["success"] = json!(false);
                done["error"] = json!({"message": msg});
            } else {
                done["success"] = json!(true);
                done["result"] = json!({"content": text});
            }
            self.push("tool.execution_complete", done);
        }
    }

    fn item(&mut self, item: &Item) {
        match item {
            Item::User(m) => self.user(m),
            Item::Thought(m) => {
                if !self.calls.is_empty() || !self.text.is_empty() {
                    self.flush();
                }
                self.at(meta_time(&m.metas));
                self.thought.push_str(&m.text());
            }
            Item::Agent(m) => {
                if !self.calls.is_empty() {
                    self.flush();
                }
                self.at(meta_time(&m.metas));
                self.text.push_str(&m.text());
            }
            Item::Tool(t) => self.calls.push((**t).clone()),
            Item::Plan { .. } => {
                if !self.dropped.iter().any(|d| d == "plan") {
                    self.dropped.push("plan".into());
                }
            }
            Item::Other(v) => {
                let k = v
                    .get("sessionUpdate")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown");
                // (Usage is said as left out, as every other harness says it: Copilot keeps
                // none in a session's events a writer can give; new-user trial helper-131, 4.)
                if !matches!(k, "session_info_update" | "config_option_update")
                    && !self.dropped.iter().any(|d| d == k)
                {
                    self.dropped.push(k.to_owned());
                }
            }
        }
    }
}

pub fn build(items: &[Item], h: &Header<'_>) -> Composed {
    let mut b = Builder {
        h,
        lines: Vec::new(),
        parent: None,
        now: h.start_ms,
        thought: String::new(),
        text: String::new(),
        calls: Vec::new(),
        dropped: Vec::new(),
        resumable: false,
    };
    let start = time::format_millis(time::from_millis(h.start_ms));
    let mut data = json!({"sessionId": h.id, "version": 1, "producer": "copilot-agent",
        "copilotVersion": COPILOT_VERSION, "startTime": start, "context": {"cwd": h.cwd}});
    if let Some(m) = h.model {
        data["selectedModel"] = json!(m);
    }
    if let Some(branch) = h.branch {
        data["context"]["branch"] = json!(branch);
    }
    b.push("session.start", data);
    for i in items {
        b.item(i);
    }
    b.flush();
    Composed {
        last_ms: b.now,
        lines: b.lines,
        dropped: b.dropped,
        resumable: b.resumable,
    }
}
