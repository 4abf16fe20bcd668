//! The current branch of a Pi session as an ACP `session/update` stream (spec §14.2).
//!
//! What the user saw and the store keeps, in branch order: prompts (text and images),
//! reasoning, answers, tool calls with their results, and the `!` commands the user ran.
//! pi-acp's own replay drops reasoning, images, tool arguments and `!` commands; they are
//! kept here. What Pi keeps beside the conversation (model and thinking-level switches,
//! compactions, branch summaries, labels, failed API calls) is not a turn: it goes into the
//! session's `_meta.pi`. The whole branch replays, also what a compaction summarised: it is
//! the user's conversation, kept in the store.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::calls;
use crate::error::ConvertError;
use crate::kit::acp::{self, ToolFields, ToolKind, ToolStatus, Update};

/// What a replay found besides its updates.
#[derive(Debug, Default)]
pub struct Summary {
    /// The last `session_info` name (an empty one clears it).
    pub title: Option<String>,
    /// `provider/modelId` of the last `model_change` or assistant message.
    pub model: Option<String>,
    pub thinking_level: Option<String>,
    /// Native detail for the session's `_meta.pi`, by key.
    pub meta: Map<String, Value>,
}

fn push_meta(s: &mut Summary, key: &str, v: Value) {
    if let Value::Array(a) = s
        .meta
        .entry(key.to_owned())
        .or_insert_with(|| Value::Array(Vec::new()))
    {
        a.push(v);
    }
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// `{"pi": {...}}` with the entry's id and time, plus `extra`.
fn pi_meta(entry: &Value, extra: &[(&str, Option<&Value>)]) -> Value {
    let mut m = Map::new();
    for k in ["id", "timestamp"] {
        if let Some(v) = entry.get(k) {
            m.insert(if k == "id" { "entryId" } else { k }.into(), v.clone());
        }
    }
    for (k, v) in extra {
        if let Some(v) = v {
            m.insert((*k).into(), (*v).clone());
        }
    }
    Value::Object(m)
}

/// A content block of a Pi message as an ACP content block (`None` for what ACP has no
/// block for).
fn block(b: &Value) -> Option<Value> {
    match str_of(b, "type")? {
        "text" => Some(acp::text(str_of(b, "text").unwrap_or(""))),
        "image" => Some(acp::image(
            str_of(b, "data").unwrap_or(""),
            str_of(b, "mimeType").unwrap_or("image/png"),
        )),
        _ => None,
    }
}

/// The name and location of a `/skill:` invocation's `<skill name=… location=…>` block.
fn skill_of(text: &str) -> Option<Value> {
    let b = crate::kit::skill_block::parse(text)?;
    Some(json!({"name": b.name, "location": b.location}))
}

/// Replays one session's branch. `entries` are the branch's entries, root first; `emit`
/// takes each update as it is made.
pub fn replay(
    entries: impl Iterator<Item = Value>,
    cwd: Option<&str>,
    emit: &mut dyn FnMut(Update) -> Result<(), ConvertError>,
) -> Result<Summary, ConvertError> {
    let mut s = Summary::default();
    let mut announced: HashSet<String> = HashSet::new();
    for e in entries {
        match str_of(&e, "type").unwrap_or("") {
            "message" => {
                let Some(m) = e.get("message") else { continue };
                message(&e, m, cwd, &mut s, &mut announced, emit)?;
            }
            "custom_message" if e.get("display").and_then(Value::as_bool) == Some(true) => {
                for b in content_blocks(e.get("content")) {
                    let meta = pi_meta(&e, &[("customType", e.get("customType"))]);
                    emit(
                        Update::agent(b)
                            .in_message(str_of(&e, "id"))
                            .with_meta("pi", meta),
                    )?;
                }
            }
            "session_info" => {
                let name = str_of(&e, "name").unwrap_or("").trim().to_owned();
                s.title = (!name.is_empty()).then_some(name);
            }
            "model_change" => {
                if let (Some(p), Some(m)) = (str_of(&e, "provider"), str_of(&e, "modelId")) {
                    s.model = Some(format!("{p}/{m}"));
                }
            }
            "thinking_level_change" => {
                s.thinking_level = str_of(&e, "thinkingLevel").map(str::to_owned);
            }
            "compaction" => {
                let mut c = e.clone();
                if let Value::Object(o) = &mut c {
                    o.remove("type");
                    o.remove("parentId");
                }
                push_meta(&mut s, "compactions", c);
            }
            "branch_summary" => {
                let mut c = e.clone();
                if let Value::Object(o) = &mut c {
                    o.remove("type");
                    o.remove("parentId");
                }
                push_meta(&mut s, "branchSummaries", c);
            }
            "label" => {
                push_meta(
                    &mut s,
                    "labels",
                    json!({"targetId": e.get("targetId"), "label": e.get("label")}),
                );
            }
            _ => {}
        }
    }
    Ok(s)
}

fn content_blocks(c: Option<&Value>) -> Vec<Value> {
    match c {
        Some(Value::String(t)) => vec![acp::text(t.clone())],
        Some(Value::Array(a)) => a.iter().filter_map(block).collect(),
        _ => Vec::new(),
    }
}

fn message(
    e: &Value,
    m: &Value,
    cwd: Option<&str>,
    s: &mut Summary,
    announced: &mut HashSet<String>,
    emit: &mut dyn FnMut(Update) -> Result<(), ConvertError>,
) -> Result<(), ConvertError> {
    match str_of(m, "role").unwrap_or("") {
        "user" => {
            let mut first = true;
            for b in content_blocks(m.get("content")) {
                let skill = b.get("text").and_then(Value::as_str).and_then(skill_of);
                let mut u = Update::user(b).in_message(str_of(e, "id"));
                if first || skill.is_some() {
                    u = u.with_meta("pi", pi_meta(e, &[("skill", skill.as_ref())]));
                }
                first = false;
                emit(u)?;
            }
        }
        "assistant" => {
            if let (Some(p), Some(md)) = (str_of(m, "provider"), str_of(m, "model")) {
                s.model = Some(format!("{p}/{md}"));
            }
            if str_of(m, "stopReason") == Some("error") || m.get("errorMessage").is_some() {
                push_meta(
                    s,
                    "errors",
                    json!({"entryId": e.get("id"), "timestamp": e.get("timestamp"),
                           "errorMessage": m.get("errorMessage")}),
                );
            }
            let detail = [
                ("api", m.get("api")),
                ("provider", m.get("provider")),
                ("model", m.get("model")),
                ("stopReason", m.get("stopReason")),
                ("usage", m.get("usage")),
                ("responseId", m.get("responseId")),
            ];
            let mut first = true;
            let mut meta_for = |extra: &[(&str, Option<&Value>)]| {
                let mut all: Vec<(&str, Option<&Value>)> = extra.to_vec();
                if first {
                    all.extend_from_slice(&detail);
                }
                first = false;
                pi_meta(e, &all)
            };
            for b in m
                .get("content")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match str_of(b, "type").unwrap_or("") {
                    "thinking" => {
                        let t = str_of(b, "thinking").unwrap_or("");
                        if t.is_empty() {
                            continue;
                        }
                        let meta = meta_for(&[
                            ("thinkingSignature", b.get("thinkingSignature")),
                            ("redacted", b.get("redacted")),
                        ]);
                        emit(
                            Update::thought(acp::text(t))
                                .in_message(str_of(e, "id"))
                                .with_meta("pi", meta),
                        )?;
                    }
                    "text" => {
                        let meta = meta_for(&[("textSignature", b.get("textSignature"))]);
                        emit(
                            Update::agent(acp::text(str_of(b, "text").unwrap_or("")))
                                .in_message(str_of(e, "id"))
                                .with_meta("pi", meta),
                        )?;
                    }
                    "toolCall" => {
                        let id = str_of(b, "id").unwrap_or("").to_owned();
                        let name = str_of(b, "name").unwrap_or("tool");
                        let args = b.get("arguments").cloned().unwrap_or(json!({}));
                        announced.insert(id.clone());
                        let meta = meta_for(&[("toolName", b.get("name"))]);
                        emit(Update::ToolCall {
                            tool_call_id: id,
                            fields: ToolFields {
                                title: Some(calls::title(name, &args)),
                                kind: Some(calls::kind(name)),
                                status: Some(ToolStatus::Pending),
                                locations: calls::locations(&args, cwd),
                                raw_input: Some(args),
                                ..ToolFields::default()
                            },
                            meta: acp::meta("pi", meta),
                        })?;
                    }
                    _ => {}
                }
            }
        }
        "toolResult" => {
            let id = str_of(m, "toolCallId").unwrap_or("").to_owned();
            let name = str_of(m, "toolName").unwrap_or("tool");
            if !announced.contains(&id) {
                announced.insert(id.clone());
                emit(Update::ToolCall {
                    tool_call_id: id.clone(),
                    fields: ToolFields {
                        title: Some(name.to_owned()),
                        kind: Some(calls::kind(name)),
                        status: Some(ToolStatus::Pending),
                        ..ToolFields::default()
                    },
                    meta: None,
                })?;
            }
            let failed = m.get("isError").and_then(Value::as_bool) == Some(true);
            let content = content_blocks(m.get("content"))
                .into_iter()
                .map(acp::tool_content)
                .collect();
            let mut raw = Map::new();
            for k in ["content", "details"] {
                if let Some(v) = m.get(k) {
                    raw.insert(k.into(), v.clone());
                }
            }
            emit(Update::ToolCallUpdate {
                tool_call_id: id,
                fields: ToolFields {
                    status: Some(if failed {
                        ToolStatus::Failed
                    } else {
                        ToolStatus::Completed
                    }),
                    content: Some(content),
                    raw_output: Some(Value::Object(raw)),
                    ..ToolFields::default()
                },
                meta: acp::meta("pi", pi_meta(e, &[])),
            })?;
        }
        "bashExecution" => {
            let id = format!("bash-{}", str_of(e, "id").unwrap_or(""));
            let command = str_of(m, "command").unwrap_or("");
            let exit = m.get("exitCode").and_then(Value::as_i64);
            let failed = m.get("cancelled").and_then(Value::as_bool) == Some(true)
                || exit.is_some_and(|c| c != 0);
            let meta = pi_meta(
                e,
                &[
                    ("userBash", Some(&Value::Bool(true))),
                    ("excludeFromContext", m.get("excludeFromContext")),
                ],
            );
            emit(Update::ToolCall {
                tool_call_id: id.clone(),
                fields: ToolFields {
                    title: Some(format!("! {command}")),
                    kind: Some(ToolKind::Execute),
                    status: Some(ToolStatus::Pending),
                    raw_input: Some(json!({"command": command})),
                    ..ToolFields::default()
                },
                meta: acp::meta("pi", meta),
            })?;
            let mut raw = Map::new();
            for k in [
                "output",
                "exitCode",
                "cancelled",
                "truncated",
                "fullOutputPath",
            ] {
                if let Some(v) = m.get(k) {
                    raw.insert(k.into(), v.clone());
                }
            }
            emit(Update::ToolCallUpdate {
                tool_call_id: id,
                fields: ToolFields {
                    status: Some(if failed {
                        ToolStatus::Failed
                    } else {
                        ToolStatus::Completed
                    }),
                    content: Some(vec![acp::tool_content(acp::text(
                        str_of(m, "output").unwrap_or(""),
                    ))]),
                    raw_output: Some(Value::Object(raw)),
                    ..ToolFields::default()
                },
                meta: None,
            })?;
        }
        "custom" if m.get("display").and_then(Value::as_bool) == Some(true) => {
            for b in content_blocks(m.get("content")) {
                let meta = pi_meta(e, &[("customType", m.get("customType"))]);
                emit(
                    Update::agent(b)
                        .in_message(str_of(e, "id"))
                        .with_meta("pi", meta),
                )?;
            }
        }
        _ => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_invocation_names_its_skill() {
        let t = "<skill name=\"route-check\" location=\"/h/.pi/agent/skills/route-check/SKILL.md\">\nx\n</skill>\n\nAdd";
        assert_eq!(
            skill_of(t).unwrap(),
            json!({"name": "route-check", "location": "/h/.pi/agent/skills/route-check/SKILL.md"})
        );
        assert!(skill_of("plain").is_none());
    }

    #[test]
    fn errors_are_not_turns_and_calls_have_their_results() {
        let entries = vec![
            json!({"type":"message","id":"a","timestamp":"t","message":{"role":"user","content":"hi"}}),
            json!({"type":"message","id":"b","message":{"role":"assistant","content":[],"stopReason":"error","errorMessage":"400"}}),
            json!({"type":"message","id":"c","message":{"role":"assistant","content":[{"type":"toolCall","id":"t1","name":"bash","arguments":{"command":"ls"}}]}}),
            json!({"type":"message","id":"d","message":{"role":"toolResult","toolCallId":"t1","toolName":"bash","content":[{"type":"text","text":"x"}],"isError":true}}),
            json!({"type":"session_info","id":"e","name":"Named"}),
        ];
        let mut out = Vec::new();
        let s = replay(entries.into_iter(), Some("/w"), &mut |u| {
            out.push(u);
            Ok(())
        })
        .unwrap();
        assert_eq!(s.title.as_deref(), Some("Named"));
        assert_eq!(s.meta["errors"].as_array().unwrap().len(), 1);
        assert_eq!(out.len(), 3);
        assert!(
            matches!(&out[2], Update::ToolCallUpdate { fields, .. } if fields.status == Some(ToolStatus::Failed))
        );
    }
}
