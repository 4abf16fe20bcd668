//! The ACP `session/update` vocabulary converters emit, as typed values.
//!
//! Reading a native store means producing these; the exact JSON shapes follow ACP schema 1.17
//! (see `spec/aspstate.md` and ACP's `SessionUpdate`). Every update can carry `_meta`, where
//! converters keep native detail under their own namespace (`claudeCode`, `codex`,
//! `gemini`) and cross-harness links under `asp`.

use serde::Serialize;
use serde_json::{Map, Value, json};

/// Free-form `_meta`.
pub type Meta = Map<String, Value>;

/// ACP's `ToolKind`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolKind {
    Read,
    Edit,
    Delete,
    Move,
    Search,
    Execute,
    Think,
    Fetch,
    SwitchMode,
    Other,
}

impl ToolKind {
    /// Parses ACP's spelling; unknown kinds read as `Other`, as ACP itself does.
    pub fn parse(s: &str) -> ToolKind {
        match s {
            "read" => ToolKind::Read,
            "edit" => ToolKind::Edit,
            "delete" => ToolKind::Delete,
            "move" => ToolKind::Move,
            "search" => ToolKind::Search,
            "execute" => ToolKind::Execute,
            "think" => ToolKind::Think,
            "fetch" => ToolKind::Fetch,
            "switch_mode" => ToolKind::SwitchMode,
            _ => ToolKind::Other,
        }
    }
}

/// ACP's `ToolCallStatus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolStatus {
    Pending,
    InProgress,
    Completed,
    Failed,
}

impl ToolStatus {
    pub fn parse(s: &str) -> Option<ToolStatus> {
        Some(match s {
            "pending" => ToolStatus::Pending,
            "in_progress" => ToolStatus::InProgress,
            "completed" => ToolStatus::Completed,
            "failed" => ToolStatus::Failed,
            _ => return None,
        })
    }
}

/// A plan entry's priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Priority {
    High,
    Medium,
    Low,
}

/// A plan entry's status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    Pending,
    InProgress,
    Completed,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PlanEntry {
    pub content: String,
    pub priority: Priority,
    pub status: PlanStatus,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// `{"path", "line"?}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Location {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

/// The fields of a `tool_call`, and the changed fields of a `tool_call_update`.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolFields {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ToolKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<ToolStatus>,
    /// `ToolCallContent` items: `{"type":"content","content":block}`,
    /// `{"type":"diff","path","oldText","newText"}`, `{"type":"terminal","terminalId"}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub content: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub locations: Option<Vec<Location>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_input: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub raw_output: Option<Value>,
}

/// One `session/update` payload (the `update` of the notification params).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "sessionUpdate", rename_all = "snake_case")]
pub enum Update {
    UserMessageChunk(Chunk),
    AgentMessageChunk(Chunk),
    AgentThoughtChunk(Chunk),
    #[serde(rename_all = "camelCase")]
    ToolCall {
        tool_call_id: String,
        #[serde(flatten)]
        fields: ToolFields,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    #[serde(rename_all = "camelCase")]
    ToolCallUpdate {
        tool_call_id: String,
        #[serde(flatten)]
        fields: ToolFields,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    Plan {
        entries: Vec<PlanEntry>,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    #[serde(rename_all = "camelCase")]
    CurrentModeUpdate {
        current_mode_id: String,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    /// `configOptions` is the full set of `SessionConfigOption`s (see [`select_option`]).
    #[serde(rename_all = "camelCase")]
    ConfigOptionUpdate {
        config_options: Vec<Value>,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    #[serde(rename_all = "camelCase")]
    SessionInfoUpdate {
        #[serde(skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        updated_at: Option<String>,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
    UsageUpdate {
        used: u64,
        size: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        cost: Option<Cost>,
        #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
        meta: Option<Meta>,
    },
}

/// A message chunk: one content block.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Chunk {
    pub content: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message_id: Option<String>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Cost {
    pub amount: f64,
    pub currency: String,
}

/// The notification params `{"sessionId", "update"}` that a session's stream holds.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Notification<'a> {
    pub session_id: &'a str,
    pub update: &'a Update,
}

/// A text content block.
pub fn text(t: impl Into<String>) -> Value {
    json!({"type": "text", "text": t.into()})
}

/// An image content block from base64 data.
pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Value {
    json!({"type": "image", "data": data.into(), "mimeType": mime_type.into()})
}

/// A `{"type":"content","content":block}` tool call content item.
pub fn tool_content(block: Value) -> Value {
    json!({"type": "content", "content": block})
}

/// A `{"type":"diff"}` tool call content item; `old_text` `None` for a new file.
pub fn diff(
    path: impl Into<String>,
    old_text: Option<String>,
    new_text: impl Into<String>,
) -> Value {
    json!({"type": "diff", "path": path.into(), "oldText": old_text, "newText": new_text.into()})
}

/// A `select` `SessionConfigOption` with its current value, for `config_option_update`.
pub fn select_option(id: &str, name: &str, category: Option<&str>, current: &str) -> Value {
    let mut o = json!({
        "id": id, "name": name, "type": "select", "currentValue": current,
        "options": [{"value": current, "name": current}],
    });
    if let Some(c) = category {
        o["category"] = json!(c);
    }
    o
}

/// The value a `config_option_update` gives the option `id` (`"model"`), if it gives one:
/// what a composing writer follows to say which model answered each turn.
pub fn chosen<'u>(update: &'u Value, id: &str) -> Option<&'u str> {
    if update.get("sessionUpdate").and_then(Value::as_str) != Some("config_option_update") {
        return None;
    }
    update
        .get("configOptions")
        .and_then(Value::as_array)?
        .iter()
        .find(|o| o.get("id").and_then(Value::as_str) == Some(id))?
        .get("currentValue")
        .and_then(Value::as_str)
}

/// `{namespace: value}` as `_meta`.
pub fn meta(namespace: &str, value: Value) -> Option<Meta> {
    let mut m = Meta::new();
    m.insert(namespace.to_owned(), value);
    Some(m)
}

impl Update {
    pub fn user(content: Value) -> Update {
        Update::UserMessageChunk(Chunk {
            content,
            message_id: None,
            meta: None,
        })
    }

    pub fn agent(content: Value) -> Update {
        Update::AgentMessageChunk(Chunk {
            content,
            message_id: None,
            meta: None,
        })
    }

    pub fn thought(content: Value) -> Update {
        Update::AgentThoughtChunk(Chunk {
            content,
            message_id: None,
            meta: None,
        })
    }

    /// A chunk as part of message `id`: chunks of one kind are one message while their
    /// `messageId` is the same, so without one, two prompts in a row (a turn that failed
    /// between them) read as one. Other updates are returned as they are.
    pub fn in_message(mut self, id: Option<&str>) -> Update {
        if let Update::UserMessageChunk(c)
        | Update::AgentMessageChunk(c)
        | Update::AgentThoughtChunk(c) = &mut self
        {
            c.message_id = id.map(str::to_owned);
        }
        self
    }

    /// The update's `_meta`.
    pub fn meta(&self) -> Option<&Meta> {
        match self {
            Update::UserMessageChunk(c)
            | Update::AgentMessageChunk(c)
            | Update::AgentThoughtChunk(c) => c.meta.as_ref(),
            Update::ToolCall { meta, .. }
            | Update::ToolCallUpdate { meta, .. }
            | Update::Plan { meta, .. }
            | Update::CurrentModeUpdate { meta, .. }
            | Update::ConfigOptionUpdate { meta, .. }
            | Update::SessionInfoUpdate { meta, .. }
            | Update::UsageUpdate { meta, .. } => meta.as_ref(),
        }
    }

    /// The update's `_meta`, to add native detail to.
    pub fn meta_mut(&mut self) -> &mut Option<Meta> {
        match self {
            Update::UserMessageChunk(c)
            | Update::AgentMessageChunk(c)
            | Update::AgentThoughtChunk(c) => &mut c.meta,
            Update::ToolCall { meta, .. }
            | Update::ToolCallUpdate { meta, .. }
            | Update::Plan { meta, .. }
            | Update::CurrentModeUpdate { meta, .. }
            | Update::ConfigOptionUpdate { meta, .. }
            | Update::SessionInfoUpdate { meta, .. }
            | Update::UsageUpdate { meta, .. } => meta,
        }
    }

    /// Sets `_meta[namespace] = value`, keeping other namespaces.
    #[must_use]
    pub fn with_meta(mut self, namespace: &str, value: Value) -> Update {
        self.meta_mut()
            .get_or_insert_with(Meta::new)
            .insert(namespace.to_owned(), value);
        self
    }

    /// The notification params for `session_id`, to serialise as they are: writing them
    /// straight to a stream gives the bytes [`Update::to_params`] would, without building a
    /// `Value` tree first (a tenth of a Codex pack's time went to that tree and its drop).
    pub fn notification<'a>(&'a self, session_id: &'a str) -> Notification<'a> {
        Notification {
            session_id,
            update: self,
        }
    }

    /// The notification params for `session_id`, as a value.
    pub fn to_params(&self, session_id: &str) -> Value {
        serde_json::to_value(self.notification(session_id)).expect("updates serialise")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn updates_serialise_as_acp_params() {
        let u = Update::ToolCall {
            tool_call_id: "tc1".into(),
            fields: ToolFields {
                title: Some("Read file".into()),
                kind: Some(ToolKind::Read),
                status: Some(ToolStatus::InProgress),
                locations: Some(vec![Location {
                    path: "/home/user/project/a.rs".into(),
                    line: Some(3),
                }]),
                raw_input: Some(json!({"path": "/home/user/project/a.rs"})),
                ..ToolFields::default()
            },
            meta: None,
        };
        assert_eq!(
            serde_json::to_string(&u.to_params("s")).unwrap(),
            r#"{"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"tc1","title":"Read file","kind":"read","status":"in_progress","locations":[{"path":"/home/user/project/a.rs","line":3}],"rawInput":{"path":"/home/user/project/a.rs"}}}"#
        );
        let chunk = Update::agent(text("hi")).with_meta("codex", json!({"phase": "final_answer"}));
        assert_eq!(
            serde_json::to_string(&chunk.to_params("s")).unwrap(),
            r#"{"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"},"_meta":{"codex":{"phase":"final_answer"}}}}"#
        );
        let usage = Update::UsageUpdate {
            used: 1000,
            size: 200000,
            cost: None,
            meta: None,
        };
        assert_eq!(
            serde_json::to_string(&usage).unwrap(),
            r#"{"sessionUpdate":"usage_update","used":1000,"size":200000}"#
        );
    }

    /// Writers serialise [`Update::notification`] straight into the stream; readers and
    /// tests see [`Update::to_params`]: the two must be the same bytes for every shape of
    /// update (flattened tool fields, `_meta`, floats, escapes).
    #[test]
    fn a_notification_serialises_as_its_params_value() {
        let updates = [
            Update::ToolCallUpdate {
                tool_call_id: "tc\u{1}\"1".into(),
                fields: ToolFields {
                    status: Some(ToolStatus::Completed),
                    content: Some(vec![tool_content(text("line\n\ttab \u{7f} é 😀"))]),
                    raw_output: Some(json!({"b": 2, "a": [1.5, null, true]})),
                    ..ToolFields::default()
                },
                meta: meta("codex", json!({"records": [{"z": 1, "y": {}}]})),
            },
            Update::user(image("AAAA", "image/png")).with_meta("x", json!("y")),
            Update::UsageUpdate {
                used: 1,
                size: 2,
                cost: Some(Cost {
                    amount: 0.1 + 0.2,
                    currency: "USD".into(),
                }),
                meta: None,
            },
            Update::Plan {
                entries: vec![PlanEntry {
                    content: "do it".into(),
                    priority: Priority::High,
                    status: PlanStatus::Pending,
                    meta: None,
                }],
                meta: None,
            },
        ];
        for u in &updates {
            assert_eq!(
                serde_json::to_string(&u.notification("s")).unwrap(),
                serde_json::to_string(&u.to_params("s")).unwrap(),
            );
        }
    }
}
