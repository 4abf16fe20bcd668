//! `events.jsonl` → ACP updates: the conversation Copilot's own `session/load` replays
//! (spec §6), plus the reasoning it keeps and does not replay (`reasoningText`), with what it
//! keeps beside the conversation under `_meta.copilot` rather than as turns.
//!
//! | event | becomes |
//! |---|---|
//! | `user.message` | `user_message_chunk` (`content`, not `transformedContent`), its attached images from `session.binary_asset` as image blocks |
//! | `assistant.message` | `agent_thought_chunk` (`reasoningText`), `agent_message_chunk` (`content`), a `tool_call` per `toolRequests` entry |
//! | `tool.execution_complete` | the call's `tool_call_update` (`completed`/`failed`; a diff for `edit`/`create`) |
//! | events with `agentId` | the sub-agent's own stream, under the caller's `task` call (`_meta.copilot.subagent`) |
//! | `session.model_change`, `session.start.selectedModel` | `config_option_update` `model` |
//! | `system.message`, usage, `model.*`, `session.info`, `abort`, compaction | not turns: the session's `_meta.copilot` keeps the notes, aborts and summaries |

use std::collections::HashMap;

use asp_format::blob::BlobError;
use serde_json::{Map, Value, json};

use crate::kit::acp::{self, Location, ToolFields, ToolKind, ToolStatus, Update};

/// The ACP kind of a Copilot tool (spec §6).
pub fn kind_of(tool: &str) -> ToolKind {
    match tool {
        "view" | "glob" | "grep" => ToolKind::Read,
        "edit" | "create" => ToolKind::Edit,
        "bash" => ToolKind::Execute,
        _ => ToolKind::Other,
    }
}

/// A requested call waiting for its completion.
struct Pending {
    name: String,
    arguments: Value,
}

/// A sub-agent's stream, kept until its caller's call completes.
#[derive(Default)]
struct Child {
    call: Option<String>,
    name: Option<String>,
    updates: Vec<Value>,
}

/// What the replay found besides the updates.
#[derive(Debug, Default)]
pub struct Summary {
    pub model: Option<String>,
    pub reasoning_effort: Option<String>,
    pub start_cwd: Option<String>,
    pub started_at: Option<String>,
    pub last_time: Option<String>,
    pub first_prompt: Option<String>,
    pub has_start: bool,
    /// `_meta.copilot` of the session.
    pub meta: Map<String, Value>,
}

pub struct Replay {
    pending: HashMap<String, Pending>,
    /// Order of the pending calls, for the ones never completed.
    order: Vec<String>,
    assets: HashMap<String, (String, String)>,
    children: HashMap<String, Child>,
    /// Sub-agent of a call: `toolCallId` → `agentId`.
    call_child: HashMap<String, String>,
    pub summary: Summary,
    notes: Vec<Value>,
    aborts: Vec<Value>,
    compactions: Vec<Value>,
}

type Emit<'a> = &'a mut dyn FnMut(Update) -> Result<(), BlobError>;

fn str_at<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get(key).and_then(Value::as_str)
}

impl Replay {
    pub fn new() -> Self {
        Replay {
            pending: HashMap::new(),
            order: Vec::new(),
            assets: HashMap::new(),
            children: HashMap::new(),
            call_child: HashMap::new(),
            summary: Summary::default(),
            notes: Vec::new(),
            aborts: Vec::new(),
            compactions: Vec::new(),
        }
    }

    /// Takes one event; `emit` gets the main agent's updates in order.
    pub fn event(&mut self, e: &Value, emit: Emit<'_>) -> Result<(), BlobError> {
        let Some(kind) = str_at(e, "type") else {
            return Ok(());
        };
        let null = Value::Null;
        let data = e.get("data").unwrap_or(&null);
        let time = str_at(e, "timestamp");
        if let Some(t) = time {
            self.summary.last_time = Some(t.to_owned());
        }
        if let Some(agent) = str_at(e, "agentId") {
            return self.child_event(agent, kind, data, time);
        }
        match kind {
            "session.start" => {
                self.summary.has_start = true;
                self.summary.started_at = str_at(data, "startTime").map(str::to_owned);
                self.summary.start_cwd = data
                    .pointer("/context/cwd")
                    .and_then(Value::as_str)
                    .map(str::to_owned);
                if let Some(m) = str_at(data, "selectedModel") {
                    self.model(m, emit)?;
                }
                if let Some(r) = str_at(data, "reasoningEffort") {
                    self.summary.reasoning_effort = Some(r.to_owned());
                }
                for k in ["copilotVersion", "producer"] {
                    if let Some(v) = data.get(k) {
                        self.summary.meta.insert(k.into(), v.clone());
                    }
                }
            }
            "session.resume" => {
                if let Some(m) = str_at(data, "selectedModel") {
                    self.model(m, emit)?;
                }
            }
            "session.model_change" => {
                if let Some(m) = str_at(data, "newModel") {
                    self.model(m, emit)?;
                }
                if let Some(r) = str_at(data, "reasoningEffort") {
                    self.summary.reasoning_effort = Some(r.to_owned());
                }
            }
            "session.binary_asset" => {
                if let (Some(id), Some(mime), Some(b64)) = (
                    str_at(data, "assetId"),
                    str_at(data, "mimeType"),
                    str_at(data, "data"),
                ) {
                    self.assets
                        .insert(id.to_owned(), (mime.to_owned(), b64.to_owned()));
                }
            }
            "user.message" => {
                for u in self.user(data, time) {
                    emit(u)?;
                }
            }
            "assistant.message" => {
                for u in self.assistant(data, time) {
                    emit(u)?;
                }
            }
            "tool.execution_complete" => {
                if let Some(u) = self.complete(data, time) {
                    emit(u)?;
                }
            }
            "session.info" | "session.warning" | "session.error" => {
                self.notes
                    .push(json!({"type": kind, "data": data, "timestamp": time}));
            }
            "abort" => self
                .aborts
                .push(json!({"reason": data.get("reason"), "timestamp": time})),
            "session.compaction_complete" => self.compactions.push(json!({
                "summaryContent": data.get("summaryContent"),
                "messagesRemoved": data.get("messagesRemoved"),
                "checkpointNumber": data.get("checkpointNumber"),
                "timestamp": time,
            })),
            _ => {}
        }
        Ok(())
    }

    fn model(&mut self, m: &str, emit: Emit<'_>) -> Result<(), BlobError> {
        if self.summary.model.as_deref() == Some(m) {
            return Ok(());
        }
        self.summary.model = Some(m.to_owned());
        emit(Update::ConfigOptionUpdate {
            config_options: vec![acp::select_option("model", "Model", Some("model"), m)],
            meta: None,
        })
    }

    fn user(&mut self, data: &Value, time: Option<&str>) -> Vec<Update> {
        let content = str_at(data, "content").unwrap_or("");
        if self.summary.first_prompt.is_none() && !content.is_empty() {
            self.summary.first_prompt = Some(content.to_owned());
        }
        let message_id = str_at(data, "messageId");
        let meta = json!({"messageId": data.get("messageId"), "timestamp": time});
        let mut out = vec![
            Update::user(acp::text(content))
                .in_message(message_id)
                .with_meta("copilot", meta.clone()),
        ];
        for a in data
            .get("attachments")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match str_at(a, "assetId").and_then(|id| self.assets.get(id)) {
                Some((mime, b64)) => out.push(
                    Update::user(acp::image(b64.clone(), mime.clone()))
                        .in_message(message_id)
                        .with_meta("copilot", json!({"attachment": a, "timestamp": time})),
                ),
                None => out.push(
                    Update::user(json!({
                        "type": "resource_link",
                        "uri": format!("file://{}", str_at(a, "path").unwrap_or("")),
                        "name": str_at(a, "displayName").or(str_at(a, "path")).unwrap_or(""),
                    }))
                    .in_message(message_id)
                    .with_meta("copilot", json!({"attachment": a, "timestamp": time})),
                ),
            }
        }
        out
    }

    fn assistant(&mut self, data: &Value, time: Option<&str>) -> Vec<Update> {
        let mut out = Vec::new();
        let mut meta = json!({"messageId": data.get("messageId"), "timestamp": time});
        if let Some(m) = data.get("model") {
            meta["model"] = m.clone();
        }
        for k in ["reasoningOpaque", "encryptedContent", "reasoningWireField"] {
            if let Some(v) = data.get(k) {
                meta[k] = v.clone();
            }
        }
        if let Some(r) = str_at(data, "reasoningText").filter(|r| !r.is_empty()) {
            out.push(
                Update::thought(acp::text(r))
                    .in_message(str_at(data, "messageId"))
                    .with_meta("copilot", meta.clone()),
            );
        }
        if let Some(c) = str_at(data, "content").filter(|c| !c.is_empty()) {
            out.push(
                Update::agent(acp::text(c))
                    .in_message(str_at(data, "messageId"))
                    .with_meta("copilot", meta.clone()),
            );
        }
        for r in data
            .get("toolRequests")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let Some(id) = str_at(r, "toolCallId") else {
                continue;
            };
            let name = str_at(r, "name").unwrap_or("tool");
            let arguments = r.get("arguments").cloned().unwrap_or(Value::Null);
            let title = title_of(name, r, &arguments);
            let locations = str_at(&arguments, "path").map(|p| {
                vec![Location {
                    path: p.to_owned(),
                    line: None,
                }]
            });
            out.push(Update::ToolCall {
                tool_call_id: id.to_owned(),
                fields: ToolFields {
                    title: Some(title),
                    kind: Some(kind_of(name)),
                    status: Some(ToolStatus::Pending),
                    locations,
                    raw_input: Some(arguments.clone()),
                    ..ToolFields::default()
                },
                meta: acp::meta("copilot", json!({"name": name, "timestamp": time})),
            });
            self.order.push(id.to_owned());
            self.pending.insert(
                id.to_owned(),
                Pending {
                    name: name.to_owned(),
                    arguments,
                },
            );
        }
        out
    }

    fn complete(&mut self, data: &Value, time: Option<&str>) -> Option<Update> {
        let id = str_at(data, "toolCallId")?;
        let p = self.pending.remove(id)?;
        let ok = data
            .get("success")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        let mut content = Vec::new();
        let raw_output = if ok {
            let result = data.get("result").cloned().unwrap_or(Value::Null);
            if matches!(p.name.as_str(), "edit" | "create")
                && let Some(path) = str_at(&p.arguments, "path")
            {
                let old = str_at(&p.arguments, "old_str").map(str::to_owned);
                let new = str_at(&p.arguments, "new_str")
                    .or(str_at(&p.arguments, "file_text"))
                    .unwrap_or("");
                content.push(acp::diff(path, old, new));
            } else if p.name != "view"
                && let Some(t) = str_at(&result, "content").filter(|t| !t.is_empty())
            {
                content.push(acp::tool_content(acp::text(t)));
            }
            result
        } else {
            let error = data.get("error").cloned().unwrap_or(Value::Null);
            if let Some(m) = str_at(&error, "message") {
                content.push(acp::tool_content(acp::text(m)));
            }
            json!({"error": error})
        };
        let mut meta = json!({"timestamp": time});
        if let Some(x) = data.pointer("/shellExecution/exitCode") {
            meta["exitCode"] = x.clone();
        }
        if let Some(child) = self
            .call_child
            .get(id)
            .and_then(|a| self.children.remove(a))
        {
            meta["subagent"] = json!({
                "agentId": self.call_child.get(id),
                "agentName": child.name,
                "updates": child.updates,
            });
        }
        Some(Update::ToolCallUpdate {
            tool_call_id: id.to_owned(),
            fields: ToolFields {
                status: Some(if ok {
                    ToolStatus::Completed
                } else {
                    ToolStatus::Failed
                }),
                content: Some(content),
                raw_output: Some(raw_output),
                ..ToolFields::default()
            },
            meta: acp::meta("copilot", meta),
        })
    }

    /// An event of a sub-agent: its stream goes under its caller's call.
    fn child_event(
        &mut self,
        agent: &str,
        kind: &str,
        data: &Value,
        time: Option<&str>,
    ) -> Result<(), BlobError> {
        if kind == "subagent.started"
            && let Some(call) = str_at(data, "toolCallId")
        {
            self.call_child.insert(call.to_owned(), agent.to_owned());
            let c = self.children.entry(agent.to_owned()).or_default();
            c.call = Some(call.to_owned());
            c.name = str_at(data, "agentName").map(str::to_owned);
            return Ok(());
        }
        let updates = match kind {
            "user.message" => self.user(data, time),
            "assistant.message" => {
                // A sub-agent's call never completed stays in its own stream: only the main
                // agent's open calls are closed in the main stream.
                let open = self.order.len();
                let u = self.assistant(data, time);
                self.order.truncate(open);
                u
            }
            "tool.execution_complete" => self.complete(data, time).into_iter().collect(),
            _ => Vec::new(),
        };
        let c = self.children.entry(agent.to_owned()).or_default();
        for u in updates {
            c.updates
                .push(serde_json::to_value(&u).expect("updates serialise"));
        }
        Ok(())
    }

    /// Ends the replay: every call that never completed is closed as failed (Copilot itself
    /// does not replay it), and the notes go into the summary.
    pub fn finish(mut self, emit: Emit<'_>) -> Result<Summary, BlobError> {
        let mut open = 0;
        for id in std::mem::take(&mut self.order) {
            if self.pending.remove(&id).is_some() {
                open += 1;
                emit(Update::ToolCallUpdate {
                    tool_call_id: id,
                    fields: ToolFields {
                        status: Some(ToolStatus::Failed),
                        ..ToolFields::default()
                    },
                    meta: acp::meta(
                        "copilot",
                        json!({"note": "no tool.execution_complete was stored for this call"}),
                    ),
                })?;
            }
        }
        let mut s = self.summary;
        if open > 0 {
            s.meta.insert("incompleteCalls".into(), json!(open));
        }
        for (k, v) in [
            ("notes", self.notes),
            ("aborts", self.aborts),
            ("compactions", self.compactions),
        ] {
            if !v.is_empty() {
                s.meta.insert(k.into(), Value::Array(v));
            }
        }
        let orphans: Vec<Value> = self
            .children
            .into_iter()
            .filter(|(_, c)| !c.updates.is_empty())
            .map(|(a, c)| json!({"agentId": a, "call": c.call, "agentName": c.name, "updates": c.updates}))
            .collect();
        if !orphans.is_empty() {
            let mut orphans = orphans;
            orphans.sort_by(|a, b| a["agentId"].as_str().cmp(&b["agentId"].as_str()));
            s.meta.insert("subagents".into(), Value::Array(orphans));
        }
        Ok(s)
    }
}

/// The call's title as Copilot's replay gives it: a shell command's description, else the
/// request's intention, else its tool title, else the tool's name.
fn title_of(name: &str, request: &Value, arguments: &Value) -> String {
    str_at(arguments, "description")
        .filter(|_| name == "bash")
        .or(str_at(request, "intentionSummary"))
        .or(str_at(request, "toolTitle"))
        .unwrap_or(name)
        .to_owned()
}
