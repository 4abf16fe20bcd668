//! One session's messages and parts as the ACP stream of what OpenCode shows its user
//! (spec/harnesses/opencode.md §8, §15): prompts, reasoning, answers and tool calls in the
//! order OpenCode loads them; the turns from a pending revert on, compaction requests and
//! summaries, and synthetic text are not turns (they go to `_meta.opencode`).

use serde_json::{Map, Value, json};

use crate::kit::acp::{
    self, Chunk, Location, PlanEntry, PlanStatus, Priority, ToolFields, ToolKind, ToolStatus,
    Update,
};
use crate::kit::meta;

/// What the replay found beside the conversation, for the session's `_meta.opencode`.
#[derive(Debug, Default)]
pub struct Summary {
    pub meta: Map<String, Value>,
    /// Child sessions started by `task` calls.
    pub children: Vec<String>,
}

/// The ACP kind of an OpenCode tool (its ACP agent's own table).
pub fn kind_of(tool: &str) -> ToolKind {
    match tool {
        "read" => ToolKind::Read,
        "edit" | "write" | "patch" | "multiedit" | "apply_patch" => ToolKind::Edit,
        "grep" | "glob" | "list" | "ls" | "codesearch" | "websearch" => ToolKind::Search,
        "bash" => ToolKind::Execute,
        "webfetch" => ToolKind::Fetch,
        "task" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

fn str_of<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

/// A user `file` part as a content block: an image from a `data:` URL, else a link.
fn file_block(p: &Value) -> Value {
    let mime = str_of(p, "mime").unwrap_or("application/octet-stream");
    let url = str_of(p, "url").unwrap_or("");
    if mime.starts_with("image/")
        && let Some(rest) = url.strip_prefix("data:")
        && let Some((_, data)) = rest.split_once(";base64,")
    {
        let mut b = acp::image(data, mime);
        if let Some(f) = str_of(p, "filename") {
            b["_meta"] = json!({"opencode": {"filename": f}});
        }
        return b;
    }
    json!({"type": "resource_link", "uri": url, "name": str_of(p, "filename").unwrap_or(url),
           "mimeType": mime})
}

/// The `tool_call` and `tool_call_update` of a `tool` part, and a plan for `todowrite`.
/// An OpenCode time (epoch milliseconds) as the `timestamp` writers read from `_meta`.
fn at(ms: Option<&Value>) -> Option<String> {
    let ms = ms?.as_i64()?;
    Some(crate::kit::time::format_millis(
        crate::kit::time::from_millis(ms),
    ))
}

fn tool(
    p: &Value,
    cwd: Option<&str>,
    when: Option<String>,
    out: &mut Vec<Update>,
    s: &mut Summary,
) {
    let name = str_of(p, "tool").unwrap_or("tool");
    let call = str_of(p, "callID").unwrap_or("").to_owned();
    let state = p.get("state").cloned().unwrap_or(Value::Null);
    let input = state.get("input").cloned().unwrap_or(json!({}));
    let kind = kind_of(name);
    let title = if name == "bash" {
        str_of(&input, "command").map(str::to_owned)
    } else {
        None
    }
    .or_else(|| {
        str_of(&state, "title")
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
    })
    .unwrap_or_else(|| name.to_owned());
    let mut locations = Vec::new();
    for k in ["filePath", "path"] {
        if let Some(path) = str_of(&input, k) {
            locations.push(Location {
                path: path.to_owned(),
                line: None,
            });
        }
    }
    if name == "bash"
        && let Some(c) = cwd
    {
        locations.push(Location {
            path: c.to_owned(),
            line: None,
        });
    }
    let mut raw_input = input.clone();
    if name == "bash"
        && let (Some(o), Some(c)) = (raw_input.as_object_mut(), cwd)
    {
        o.entry("cwd").or_insert(json!(c));
    }
    let mut native = json!({"tool": name, "partId": p["id"]});
    // When it ran (`state.time.start`), else when its message was made.
    if let Some(t) = at(state.pointer("/time/start")).or(when) {
        native["timestamp"] = json!(t);
    }
    let mut call_meta = acp::meta("opencode", native);
    let child = state
        .get("metadata")
        .and_then(|m| m.get("sessionId"))
        .and_then(Value::as_str);
    if let Some(c) = child {
        meta::set_subagent_session_id(&mut call_meta, c);
        s.children.push(c.to_owned());
    }
    out.push(Update::ToolCall {
        tool_call_id: call.clone(),
        fields: ToolFields {
            title: Some(title),
            kind: Some(kind),
            status: Some(ToolStatus::Pending),
            locations: (!locations.is_empty()).then_some(locations),
            raw_input: Some(raw_input),
            ..ToolFields::default()
        },
        meta: call_meta,
    });
    let status = str_of(&state, "status").unwrap_or("");
    let mut content = Vec::new();
    if matches!(name, "edit" | "write")
        && let Some(path) = str_of(&input, "filePath")
    {
        let new = str_of(&input, "newString").or_else(|| str_of(&input, "content"));
        if let Some(new) = new {
            content.push(acp::diff(
                path,
                str_of(&input, "oldString").map(str::to_owned),
                new,
            ));
        }
    }
    let (st, raw_output) = match status {
        "completed" => {
            let text = str_of(&state, "output").unwrap_or("");
            content.insert(0, acp::tool_content(acp::text(text)));
            (
                ToolStatus::Completed,
                json!({"output": text, "metadata": state.get("metadata").cloned().unwrap_or(Value::Null)}),
            )
        }
        "error" => {
            let err = str_of(&state, "error").unwrap_or("");
            content = vec![acp::tool_content(acp::text(err))];
            (
                ToolStatus::Failed,
                json!({"error": err, "metadata": state.get("metadata").cloned().unwrap_or(Value::Null)}),
            )
        }
        // A call that never finished (OpenCode was stopped): it has no result.
        _ => (
            ToolStatus::Failed,
            json!({"error": "[Tool execution was interrupted]"}),
        ),
    };
    out.push(Update::ToolCallUpdate {
        tool_call_id: call,
        fields: ToolFields {
            status: Some(st),
            content: Some(content),
            raw_output: Some(raw_output),
            ..ToolFields::default()
        },
        meta: acp::meta("opencode", json!({"state": status})),
    });
    if name == "todowrite"
        && let Some(todos) = input.get("todos").and_then(Value::as_array)
    {
        let entries = todos
            .iter()
            .map(|t| {
                let st = str_of(t, "status").unwrap_or("pending");
                PlanEntry {
                    content: str_of(t, "content").unwrap_or("").to_owned(),
                    priority: match str_of(t, "priority") {
                        Some("high") => Priority::High,
                        Some("low") => Priority::Low,
                        _ => Priority::Medium,
                    },
                    status: match st {
                        "in_progress" => PlanStatus::InProgress,
                        "completed" | "cancelled" => PlanStatus::Completed,
                        _ => PlanStatus::Pending,
                    },
                    meta: (st == "cancelled")
                        .then(|| acp::meta("opencode", json!({"status": "cancelled"})))
                        .flatten(),
                }
            })
            .collect();
        out.push(Update::Plan {
            entries,
            meta: None,
        });
    }
}

/// The updates of one message (`info` is its `data` with `id`), given its parts in order.
pub fn message(info: &Value, parts: &[Value], out: &mut Vec<Update>, s: &mut Summary) {
    let id = str_of(info, "id").unwrap_or("").to_owned();
    let role = str_of(info, "role").unwrap_or("");
    // When the message was made: each of its turns carries it, so a conversation carried
    // elsewhere keeps its times (writers read `_meta.*.timestamp`).
    let when = at(info.pointer("/time/created"));
    let stamped = || {
        when.as_ref()
            .and_then(|t| acp::meta("opencode", json!({ "timestamp": t })))
    };
    let chunk = |content: Value, meta: Option<acp::Meta>| Chunk {
        content,
        message_id: Some(id.clone()),
        meta,
    };
    if role == "user" {
        if parts
            .iter()
            .any(|p| str_of(p, "type") == Some("compaction"))
        {
            push(s, "compactionRequests", json!(id));
            return;
        }
        for p in parts {
            match str_of(p, "type") {
                Some("text") if p.get("synthetic").and_then(Value::as_bool) == Some(true) => {
                    push(s, "synthetic", json!({"messageId": id, "text": p["text"]}));
                }
                Some("text") => out.push(Update::UserMessageChunk(chunk(
                    acp::text(str_of(p, "text").unwrap_or("")),
                    stamped(),
                ))),
                Some("file") => out.push(Update::UserMessageChunk(chunk(file_block(p), stamped()))),
                _ => {}
            }
        }
        return;
    }
    if info.get("summary").and_then(Value::as_bool) == Some(true) {
        let text: String = parts
            .iter()
            .filter(|p| str_of(p, "type") == Some("text"))
            .filter_map(|p| str_of(p, "text"))
            .collect();
        push(s, "compaction", json!({"messageId": id, "summary": text}));
        return;
    }
    if let Some(e) = info.get("error") {
        push(s, "errors", json!({"messageId": id, "error": e}));
    }
    let cwd = info.get("path").and_then(|p| str_of(p, "cwd"));
    for p in parts {
        match str_of(p, "type") {
            Some("reasoning") => {
                let mut m = serde_json::Map::new();
                if let Some(meta) = p.get("metadata") {
                    m.insert("metadata".into(), meta.clone());
                }
                if let Some(t) = at(p.pointer("/time/start")).or_else(|| when.clone()) {
                    m.insert("timestamp".into(), json!(t));
                }
                out.push(Update::AgentThoughtChunk(Chunk {
                    content: acp::text(str_of(p, "text").unwrap_or("")),
                    message_id: Some(str_of(p, "id").unwrap_or(&id).to_owned()),
                    meta: (!m.is_empty())
                        .then(|| acp::meta("opencode", Value::Object(m)))
                        .flatten(),
                }))
            }
            Some("text") if p.get("synthetic").and_then(Value::as_bool) != Some(true) => {
                let when = at(p.pointer("/time/start")).or_else(|| when.clone());
                let meta = when.and_then(|t| acp::meta("opencode", json!({ "timestamp": t })));
                out.push(Update::AgentMessageChunk(chunk(
                    acp::text(str_of(p, "text").unwrap_or("")),
                    meta,
                )))
            }
            Some("tool") => tool(p, cwd, when.clone(), out, s),
            _ => {}
        }
    }
}

fn push(s: &mut Summary, key: &str, v: Value) {
    s.meta
        .entry(key)
        .or_insert_with(|| json!([]))
        .as_array_mut()
        .expect("an array")
        .push(v);
}
