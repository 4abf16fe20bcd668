//! Qwen Code's tool vocabulary: names, ACP kinds, titles, statuses and result displays.
//!
//! Qwen's own ACP replay derives a call's kind and title from the live tool registry; a chat
//! records only the name and arguments, so the table below is that registry for the built-in
//! tools (`spec/harnesses/qwen.md` §3.2, §16.2). Calls carried in from another harness keep
//! that harness's tool name; the foreign names asp's converters produce are listed too, so
//! reading such a chat back keeps their kinds.

use serde_json::Value;

use crate::kit::acp::{self, Location, ToolKind, ToolStatus};

/// The ACP kind of a Qwen (or carried foreign) tool name.
pub fn kind_of(name: &str) -> ToolKind {
    match name {
        "read_file" | "read_many_files" | "list_directory" | "Read" | "read" | "view_image" => {
            ToolKind::Read
        }
        "edit" | "write_file" | "notebook_edit" | "replace" | "Edit" | "MultiEdit" | "Write"
        | "NotebookEdit" | "apply_patch" => ToolKind::Edit,
        "run_shell_command" | "Bash" | "shell" | "exec_command" | "local_shell" | "execute" => {
            ToolKind::Execute
        }
        "grep_search" | "glob" | "tool_search" | "Grep" | "Glob" | "LS" | "WebSearch"
        | "web_search" | "google_web_search" | "search" => ToolKind::Search,
        "web_fetch" | "WebFetch" | "fetch" => ToolKind::Fetch,
        "agent" | "Task" | "Agent" | "invoke_agent" | "think" => ToolKind::Think,
        "enter_plan_mode" | "exit_plan_mode" | "ExitPlanMode" | "switch_mode" => {
            ToolKind::SwitchMode
        }
        "delete" => ToolKind::Delete,
        "move" => ToolKind::Move,
        _ => ToolKind::Other,
    }
}

/// The function name asp gives a carried call whose harness named no tool: the ACP kind.
pub fn generic_name(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "read",
        ToolKind::Edit => "edit_file",
        ToolKind::Delete => "delete",
        ToolKind::Move => "move",
        ToolKind::Search => "search",
        ToolKind::Execute => "execute",
        ToolKind::Think => "think",
        ToolKind::Fetch => "fetch",
        ToolKind::SwitchMode => "switch_mode",
        ToolKind::Other => "tool",
    }
}

/// A function name the OpenAI-compatible APIs Qwen talks to accept
/// (`^[a-zA-Z0-9_-]{1,64}$`).
pub fn function_name(name: &str) -> String {
    let out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if out.is_empty() {
        "tool".to_owned()
    } else {
        out
    }
}

fn file_name(p: &str) -> &str {
    p.rsplit('/').next().unwrap_or(p)
}

/// The title Qwen's replay gives a call (`ReadFile: cart.py`, `Shell: <cmd> (<description>)`).
pub fn title(name: &str, args: &Value) -> String {
    let s = |k: &str| args.get(k).and_then(Value::as_str).unwrap_or("");
    let with = |label: &str, what: &str| {
        if what.is_empty() {
            label.to_owned()
        } else {
            format!("{label}: {what}")
        }
    };
    match name {
        "read_file" => with("ReadFile", file_name(s("file_path"))),
        "edit" => with("Edit", file_name(s("file_path"))),
        "write_file" => with("WriteFile", file_name(s("file_path"))),
        "run_shell_command" => {
            let d = s("description");
            let c = s("command");
            if d.is_empty() {
                with("Shell", c)
            } else {
                format!("Shell: {c} ({d})")
            }
        }
        "grep_search" => with("Grep", s("pattern")),
        "glob" => with("Glob", s("pattern")),
        "agent" => with("Agent", s("description")),
        "web_fetch" => with("WebFetch", s("url")),
        "skill" => with("Skill", s("skill")),
        _ => name.to_owned(),
    }
}

/// A recorded `toolCallResult.status` as ACP says it. A shell command that exits non-zero is
/// `error` in Qwen (unlike Gemini); a result record without `toolCallResult` replays as
/// completed, as Qwen replays it.
pub fn status_of(status: Option<&str>) -> ToolStatus {
    match status {
        Some("error" | "cancelled") => ToolStatus::Failed,
        _ => ToolStatus::Completed,
    }
}

/// Whether a `resultDisplay` is a FileDiff.
pub fn is_file_diff(v: &Value) -> bool {
    v.get("fileDiff").is_some() && v.get("fileName").is_some()
}

/// ACP tool call content for a `resultDisplay`: a string as text, a FileDiff as a diff, a
/// shell result as its output, a subagent's `task_execution` as its result text. `None` when
/// nothing can be shown.
pub fn display_content(display: &Value) -> Option<Vec<Value>> {
    let text = |t: &str| Some(vec![acp::tool_content(acp::text(t))]);
    match display {
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => text(s),
        Value::Object(o) if is_file_diff(display) => {
            let path = o
                .get("filePath")
                .or_else(|| o.get("fileName"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let old = o
                .get("originalContent")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let new = o.get("newContent").and_then(Value::as_str).unwrap_or("");
            Some(vec![acp::diff(path, old, new)])
        }
        Value::Object(o) => match o.get("type").and_then(Value::as_str) {
            Some("shell_result") => o
                .get("output")
                .or_else(|| o.get("text"))
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .and_then(text),
            Some("task_execution") => o
                .get("result")
                .and_then(Value::as_str)
                .filter(|t| !t.is_empty())
                .and_then(text),
            _ => None,
        },
        _ => None,
    }
}

/// Where a call works, from its arguments.
pub fn locations(args: &Value) -> Vec<Location> {
    let line = args.get("offset").and_then(Value::as_u64);
    for key in ["file_path", "absolute_path", "path", "directory"] {
        if let Some(p) = args
            .get(key)
            .and_then(Value::as_str)
            .filter(|p| p.starts_with('/'))
        {
            return vec![Location {
                path: p.to_owned(),
                line,
            }];
        }
    }
    Vec::new()
}

/// A `todo_write` list as ACP plan entries.
pub fn plan_entries(args: &Value) -> Option<Vec<acp::PlanEntry>> {
    let todos = args.get("todos")?.as_array()?;
    Some(
        todos
            .iter()
            .map(|t| {
                let status = match t.get("status").and_then(Value::as_str) {
                    Some("in_progress") => acp::PlanStatus::InProgress,
                    Some("completed") => acp::PlanStatus::Completed,
                    _ => acp::PlanStatus::Pending,
                };
                let priority = match t.get("priority").and_then(Value::as_str) {
                    Some("high") => acp::Priority::High,
                    Some("low") => acp::Priority::Low,
                    _ => acp::Priority::Medium,
                };
                acp::PlanEntry {
                    content: t
                        .get("content")
                        .or_else(|| t.get("description"))
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    priority,
                    status,
                    meta: None,
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn titles_and_kinds_are_qwens() {
        assert_eq!(
            title("read_file", &json!({"file_path": "/home/dev/shop/cart.py"})),
            "ReadFile: cart.py"
        );
        assert_eq!(
            title(
                "run_shell_command",
                &json!({"command": "python3 -m unittest -q", "description": "Run the unit tests"})
            ),
            "Shell: python3 -m unittest -q (Run the unit tests)"
        );
        assert_eq!(kind_of("edit"), ToolKind::Edit);
        assert_eq!(kind_of("agent"), ToolKind::Think);
        assert_eq!(kind_of("mcp__x"), ToolKind::Other);
        assert_eq!(status_of(None), ToolStatus::Completed);
        assert_eq!(
            function_name("mcp__github__get issue"),
            "mcp__github__get_issue"
        );
    }
}
