//! Codex tool calls and their outputs as ACP `tool_call` / `tool_call_update`, and
//! `update_plan` as ACP `plan` (spec/harnesses/codex.md §7.3).

use serde_json::{Map, Value, json};

use super::message;
use super::patch::{self, Op};
use crate::kit::acp::{
    Location, Meta, PlanEntry, PlanStatus, Priority, ToolFields, ToolKind, ToolStatus, Update,
    diff, text, tool_content,
};

/// What the reader remembers about a call until its output arrives.
#[derive(Debug, Clone)]
pub struct CallInfo {
    /// `update_plan`: its output ("Plan updated") gives no update of its own.
    pub is_plan: bool,
    /// The call shows diffs (`apply_patch`): its output must not replace them, since an
    /// update's `content` replaces the call's.
    pub has_diffs: bool,
}

/// A call item read into ACP.
#[derive(Debug)]
pub enum Call {
    Plan(Update),
    Tool {
        id: String,
        update: Update,
        info: CallInfo,
    },
}

fn string_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// The ACP kind of a Codex tool name.
pub fn kind_of(name: &str) -> ToolKind {
    match name {
        "exec_command" | "shell" | "shell_command" | "local_shell_call" | "write_stdin"
        | "container.exec" | "exec" | "unified_exec" => ToolKind::Execute,
        "apply_patch" => ToolKind::Edit,
        "view_image" | "read_file" | "read_mcp_resource" | "list_dir" => ToolKind::Read,
        "tool_search" | "grep_files" | "file_search" => ToolKind::Search,
        "web_search" | "web_search_call" | "web_fetch" => ToolKind::Fetch,
        "spawn_agent"
        | "spawn_agents_on_csv"
        | "send_message"
        | "send_input"
        | "wait"
        | "wait_agent"
        | "close_agent"
        | "list_agents"
        | "interrupt_agent"
        | "followup_task"
        | "resume_agent" => ToolKind::Think,
        _ => ToolKind::Other,
    }
}

/// Whether a tool starts a subagent thread (its output names the child).
pub fn spawns_agent(name: &str) -> bool {
    matches!(name, "spawn_agent" | "spawn_agents_on_csv")
}

/// A command line as one string: `bash -lc 'x'` shows as `x`.
fn command_title(cmd: &Value) -> Option<String> {
    match cmd {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => {
            let parts: Vec<&str> = a.iter().filter_map(Value::as_str).collect();
            if parts.len() == 3
                && matches!(parts[0].rsplit('/').next(), Some("bash" | "sh" | "zsh"))
                && matches!(parts[1], "-lc" | "-c")
            {
                return Some(parts[2].to_owned());
            }
            (!parts.is_empty()).then(|| parts.join(" "))
        }
        _ => None,
    }
}

/// The MCP server and tool of a call: `namespace: "mcp__<server>"` + `name: "<tool>"` (0.142+),
/// or `name: "mcp__<server>__<tool>"` (older).
fn mcp_parts<'a>(name: &'a str, namespace: Option<&'a str>) -> Option<(&'a str, &'a str)> {
    if let Some(server) = namespace.and_then(|n| n.strip_prefix("mcp__")) {
        return Some((server.trim_end_matches('_'), name));
    }
    name.strip_prefix("mcp__")?.split_once("__")
}

fn edit_fields(input: &str, cwd: Option<&str>) -> (String, Vec<Value>, Vec<Location>) {
    let files = patch::parse(input);
    let mut content = Vec::new();
    let mut locations = Vec::new();
    let mut names = Vec::new();
    for f in &files {
        let target = match &f.op {
            Op::Update {
                move_to: Some(to), ..
            } => to.as_str(),
            _ => f.path.as_str(),
        };
        let path = patch::absolute(target, cwd);
        names.push(target.rsplit('/').next().unwrap_or(target).to_owned());
        match f.op {
            Op::Add => {
                let new = f.hunks.first().map(|h| h.1.clone()).unwrap_or_default();
                content.push(diff(path.clone(), None, new));
            }
            Op::Delete => content.push(diff(path.clone(), Some(String::new()), "")),
            Op::Update { .. } => {
                for (old, new) in &f.hunks {
                    content.push(diff(path.clone(), Some(old.clone()), new.clone()));
                }
            }
        }
        locations.push(Location { path, line: None });
    }
    let title = if names.is_empty() {
        "Apply patch".to_owned()
    } else {
        format!("Edit {}", names.join(", "))
    };
    (title, content, locations)
}

/// The plan of an `update_plan` call's arguments.
pub fn plan_update(args: &Value) -> Update {
    let entries = args
        .get("plan")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|s| PlanEntry {
            content: string_at(s, "step").unwrap_or_default().to_owned(),
            priority: Priority::Medium,
            status: match string_at(s, "status") {
                Some("completed") => PlanStatus::Completed,
                Some("in_progress") => PlanStatus::InProgress,
                _ => PlanStatus::Pending,
            },
            meta: None,
        })
        .collect();
    Update::Plan {
        entries,
        meta: None,
    }
}

/// Reads a call item (`function_call`, `custom_tool_call`, `local_shell_call`,
/// `web_search_call`, `tool_search_call`, `image_generation_call`).
pub fn read_call(p: &Value, cwd: Option<&str>) -> Call {
    let item_type = string_at(p, "type").unwrap_or("");
    let namespace = string_at(p, "namespace");
    let id = string_at(p, "call_id")
        .or_else(|| string_at(p, "id"))
        .unwrap_or_default()
        .to_owned();
    let name = match item_type {
        "local_shell_call" | "web_search_call" | "tool_search_call" | "image_generation_call" => {
            item_type.trim_end_matches("_call").to_owned()
        }
        _ => string_at(p, "name").unwrap_or(item_type).to_owned(),
    };
    let mut codex = Map::new();
    codex.insert("type".into(), json!(item_type));
    codex.insert("name".into(), json!(name));
    if let Some(ns) = namespace {
        codex.insert("namespace".into(), json!(ns));
    }
    // Arguments: a JSON string (function calls), raw text (custom tools), an object (tool
    // search), or an action (shell, web search).
    let raw_input = match item_type {
        "function_call" => {
            let a = string_at(p, "arguments").unwrap_or("");
            match serde_json::from_str::<Value>(a) {
                Ok(v) => v,
                Err(_) => {
                    codex.insert("argumentsNotJson".into(), json!(true));
                    Value::String(a.to_owned())
                }
            }
        }
        "custom_tool_call" => p.get("input").cloned().unwrap_or(Value::Null),
        "tool_search_call" => p.get("arguments").cloned().unwrap_or(Value::Null),
        _ => p.get("action").cloned().unwrap_or(Value::Null),
    };
    if name == "update_plan" && namespace.is_none() {
        let mut u = plan_update(&raw_input);
        if let Some(e) = raw_input.get("explanation").filter(|e| !e.is_null()) {
            codex.insert("explanation".into(), e.clone());
        }
        codex.insert("callId".into(), json!(id));
        *u.meta_mut() = Some(Meta::from_iter([(
            "codex".to_owned(),
            Value::Object(codex),
        )]));
        return Call::Plan(u);
    }
    let mut kind = kind_of(&name);
    let mut title = name.clone();
    let mut content = Vec::new();
    let mut locations = Vec::new();
    match (item_type, name.as_str()) {
        (_, "apply_patch") => {
            let input = match &raw_input {
                Value::String(s) => s.clone(),
                v => string_at(v, "input").unwrap_or("").to_owned(),
            };
            (title, content, locations) = edit_fields(&input, cwd);
        }
        ("local_shell_call", _) => {
            title = raw_input
                .get("command")
                .and_then(command_title)
                .unwrap_or(title);
        }
        ("web_search_call", _) => {
            title = match string_at(&raw_input, "type") {
                Some("open_page") => format!("Open {}", string_at(&raw_input, "url").unwrap_or("")),
                Some("find_in_page") => format!(
                    "Find {:?} in {}",
                    string_at(&raw_input, "pattern").unwrap_or(""),
                    string_at(&raw_input, "url").unwrap_or("")
                ),
                _ => format!(
                    "Search the web: {}",
                    string_at(&raw_input, "query").unwrap_or("")
                ),
            };
        }
        ("tool_search_call", _) => {
            title = format!(
                "Search tools: {}",
                string_at(&raw_input, "query").unwrap_or("")
            );
        }
        ("image_generation_call", _) => title = "Generate an image".to_owned(),
        (_, "exec_command" | "shell" | "shell_command" | "container.exec") => {
            if let Some(t) = raw_input
                .get("cmd")
                .or_else(|| raw_input.get("command"))
                .and_then(command_title)
            {
                title = t;
            }
        }
        (_, "write_stdin") => {
            title = match raw_input.get("session_id") {
                Some(s) => format!("Write to process {s}"),
                None => "Write to a process".to_owned(),
            };
        }
        (_, "view_image") => {
            if let Some(path) = string_at(&raw_input, "path") {
                let path = patch::absolute(path, cwd);
                title = format!("View {path}");
                locations.push(Location { path, line: None });
            }
        }
        _ => {
            if let Some((server, tool)) = mcp_parts(&name, namespace) {
                title = format!("{server}.{tool}");
                kind = ToolKind::Other;
                codex.insert("mcpServer".into(), json!(server));
                codex.insert("mcpTool".into(), json!(tool));
            }
        }
    }
    let mut meta = Meta::new();
    // A call asp wrote from another harness carries its ACP fields (see write.rs).
    if let Some(Value::Object(carried)) = p.get("_meta") {
        for (ns, v) in carried {
            if ns == "asp" {
                if let Some(t) = string_at(v, "title") {
                    title = t.to_owned();
                }
                if let Some(k) = string_at(v, "kind") {
                    kind = ToolKind::parse(k);
                }
                if let Some(Value::Array(c)) = v.get("content") {
                    content = c.clone();
                }
                if let Some(Value::Array(l)) = v.get("locations") {
                    locations = l
                        .iter()
                        .filter_map(|l| {
                            Some(Location {
                                path: string_at(l, "path")?.to_owned(),
                                line: l.get("line").and_then(Value::as_u64),
                            })
                        })
                        .collect();
                }
            } else {
                meta.insert(ns.clone(), v.clone());
            }
        }
    }
    meta.insert("codex".into(), Value::Object(codex));
    let has_diffs = content
        .iter()
        .any(|c| c.get("type").and_then(Value::as_str) == Some("diff"));
    let update = Update::ToolCall {
        tool_call_id: id.clone(),
        fields: ToolFields {
            title: Some(title),
            // ACP's default kind is `other`; it is left out, as ACP itself leaves it out.
            kind: (kind != ToolKind::Other).then_some(kind),
            status: Some(ToolStatus::InProgress),
            content: (!content.is_empty()).then_some(content),
            locations: (!locations.is_empty()).then_some(locations),
            raw_input: Some(raw_input),
            raw_output: None,
        },
        meta: Some(meta),
    };
    Call::Tool {
        id,
        update,
        info: CallInfo {
            is_plan: false,
            has_diffs,
        },
    }
}

/// The exit code a tool output reports: unified exec `Process exited with code N`, freeform
/// tools `Exit code: N`, older shell JSON `{"metadata": {"exit_code": N}}`.
pub fn exit_code(output: &str) -> Option<i64> {
    for line in output.lines() {
        let l = line.trim();
        if let Some(n) = l
            .strip_prefix("Process exited with code ")
            .or_else(|| l.strip_prefix("Exit code: "))
        {
            return n.trim().parse().ok();
        }
        if l.starts_with("Output:") {
            break;
        }
    }
    serde_json::from_str::<Value>(output)
        .ok()?
        .pointer("/metadata/exit_code")?
        .as_i64()
}

/// What a person would call the output: the part after `Output:` of unified exec, the
/// `output` of older shell JSON, else all of it.
pub fn display_output(output: &str) -> String {
    if let Some(i) = output.find("\nOutput:\n") {
        return output[i + "\nOutput:\n".len()..].to_owned();
    }
    if let Some(rest) = output.strip_prefix("Output:\n") {
        return rest.to_owned();
    }
    if let Ok(v) = serde_json::from_str::<Value>(output)
        && let Some(s) = v.get("output").and_then(Value::as_str)
    {
        return s.to_owned();
    }
    output.to_owned()
}

/// The output's text: a string, or the text items of a content array.
fn output_text(output: &Value) -> String {
    match output {
        Value::String(s) => s.clone(),
        Value::Array(_) => message::text(&json!({ "content": output })),
        Value::Object(o) => o
            .get("content")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_default(),
        _ => String::new(),
    }
}

/// The content an MCP tool returned (`mcp_tool_call_end.result.Ok.content`): MCP content
/// blocks, which are ACP content blocks.
fn mcp_content(hints: &[Value]) -> Option<Vec<Value>> {
    let blocks = hints
        .iter()
        .find_map(|h| h.get("payload").unwrap_or(h).pointer("/result/Ok/content"))?
        .as_array()?;
    Some(blocks.iter().cloned().map(tool_content).collect())
}

/// An output that is a JSON list of content blocks (MCP results as Codex prints them) as
/// those blocks, else as one text block.
fn blocks_or_text(out: &str) -> Vec<Value> {
    if let Ok(Value::Array(items)) = serde_json::from_str::<Value>(out.trim())
        && !items.is_empty()
        && items.iter().all(|i| {
            i.get("type").and_then(Value::as_str) == Some("text") && i.get("text").is_some()
        })
    {
        return items.into_iter().map(tool_content).collect();
    }
    vec![tool_content(text(out))]
}

/// Whether an event (a rollout line or its payload) that reports on a call says it failed
/// (`None`: it does not say).
pub fn hint_failed(event: &Value) -> Option<bool> {
    let event = event.get("payload").unwrap_or(event);
    match string_at(event, "type")? {
        "patch_apply_end" => event.get("success").and_then(Value::as_bool).map(|s| !s),
        "mcp_tool_call_end" => {
            let r = event.get("result")?;
            if r.get("Err").is_some() {
                Some(true)
            } else {
                r.pointer("/Ok/isError")
                    .or_else(|| r.pointer("/Ok/is_error"))
                    .and_then(Value::as_bool)
            }
        }
        "exec_command_end" => event
            .get("exit_code")
            .and_then(Value::as_i64)
            .map(|c| c != 0),
        "item_completed" => {
            let item = event.get("item")?;
            if let Some(c) = item.get("exit_code").and_then(Value::as_i64) {
                return Some(c != 0);
            }
            match string_at(item, "status")? {
                "completed" => Some(false),
                "failed" | "declined" => Some(true),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Reads an output item (`function_call_output`, `custom_tool_call_output`,
/// `tool_search_output`) into a `tool_call_update`. `hints` are events about the same call
/// that came before it (`patch_apply_end`, `mcp_tool_call_end`, `item_completed`).
pub fn read_output(p: &Value, call: Option<&CallInfo>, hints: Vec<Value>) -> Update {
    let id = string_at(p, "call_id").unwrap_or_default().to_owned();
    let mut codex = Map::new();
    codex.insert("type".into(), json!(string_at(p, "type").unwrap_or("")));
    let (raw_output, text_out) = if string_at(p, "type") == Some("tool_search_output") {
        (p.get("tools").cloned().unwrap_or(Value::Null), None)
    } else {
        let out = p.get("output").cloned().unwrap_or(Value::Null);
        let t = output_text(&out);
        (out, Some(t))
    };
    let mut failed = match string_at(p, "status") {
        Some("failed" | "incomplete") => Some(true),
        _ => None,
    };
    if let Some(t) = &text_out {
        failed = failed.or_else(|| exit_code(t).map(|c| c != 0));
    }
    for h in &hints {
        if let Some(f) = hint_failed(h) {
            failed = Some(f);
        }
    }
    let mut status = if failed == Some(true) {
        ToolStatus::Failed
    } else {
        ToolStatus::Completed
    };
    let mut content = if call.is_some_and(|c| c.has_diffs) {
        None
    } else {
        mcp_content(&hints).or_else(|| {
            text_out
                .filter(|t| !t.is_empty())
                .map(|t| blocks_or_text(&display_output(&t)))
        })
    };
    if !hints.is_empty() {
        codex.insert("events".into(), Value::Array(hints));
    }
    let mut raw_output = raw_output;
    let mut meta = Meta::new();
    if let Some(Value::Object(carried)) = p.get("_meta") {
        for (ns, v) in carried {
            if ns == "asp" {
                if let Some(s) = string_at(v, "status").and_then(ToolStatus::parse) {
                    status = s;
                }
                if let Some(r) = v.get("rawOutput") {
                    raw_output = r.clone();
                }
                if let Some(Value::Array(c)) = v.get("content") {
                    content = Some(c.clone());
                }
            } else {
                meta.insert(ns.clone(), v.clone());
            }
        }
    }
    meta.insert("codex".into(), Value::Object(codex));
    Update::ToolCallUpdate {
        tool_call_id: id,
        fields: ToolFields {
            status: Some(status),
            content,
            raw_output: Some(raw_output),
            ..ToolFields::default()
        },
        meta: Some(meta),
    }
}

/// A call that never got an output (the turn was aborted or the file ends): failed, and said
/// so, with no invented output.
pub fn missing_output(id: &str) -> Update {
    Update::ToolCallUpdate {
        tool_call_id: id.to_owned(),
        fields: ToolFields {
            status: Some(ToolStatus::Failed),
            ..ToolFields::default()
        },
        meta: crate::kit::acp::meta("codex", json!({"missingOutput": true})),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_and_outputs_of_every_tool_era() {
        let unified = "Chunk ID: 6e2393\nWall time: 0.0000 seconds\nProcess exited with code 127\nOriginal token count: 11\nOutput:\n/bin/bash: pnpm: command not found\n";
        assert_eq!(exit_code(unified), Some(127));
        assert_eq!(
            display_output(unified),
            "/bin/bash: pnpm: command not found\n"
        );
        let freeform = "Exit code: 0\nWall time: 0 seconds\nOutput:\nSuccess.\n";
        assert_eq!(exit_code(freeform), Some(0));
        let json_out =
            r#"{"output":"index.html\n","metadata":{"exit_code":0,"duration_seconds":0.1}}"#;
        assert_eq!(exit_code(json_out), Some(0));
        assert_eq!(display_output(json_out), "index.html\n");
        // An exit line inside the output does not count.
        assert_eq!(exit_code("Output:\nExit code: 3\n"), None);
    }

    #[test]
    fn calls_get_kinds_and_titles() {
        let Call::Tool { update, .. } = read_call(
            &json!({"type": "function_call", "name": "exec_command", "call_id": "c1",
                "arguments": "{\"cmd\":\"cat deploy.sh\",\"workdir\":\"/home/dev/shop\"}"}),
            None,
        ) else {
            panic!()
        };
        let v = serde_json::to_value(&update).unwrap();
        assert_eq!(v["title"], "cat deploy.sh");
        assert_eq!(v["kind"], "execute");
        assert_eq!(v["rawInput"]["workdir"], "/home/dev/shop");
        let Call::Tool { update, .. } = read_call(
            &json!({"type": "function_call", "name": "search_docs", "namespace": "mcp__docs",
                "call_id": "c2", "arguments": "{\"query\":\"x\"}"}),
            None,
        ) else {
            panic!()
        };
        let v = serde_json::to_value(&update).unwrap();
        assert_eq!(v["title"], "docs.search_docs");
        assert!(v.get("kind").is_none(), "other is the default kind");
        assert!(matches!(
            read_call(
                &json!({"type": "function_call", "name": "update_plan", "call_id": "p",
                    "arguments": "{\"plan\":[{\"step\":\"a\",\"status\":\"completed\"}]}"}),
                None
            ),
            Call::Plan(_)
        ));
    }
}
