//! Gemini's tool vocabulary: names, ACP kinds, statuses and result displays.
//!
//! The CLI decides a call's ACP kind by looking its *name* up in the live tool registry
//! (`toAcpToolKind` of the tool's `Kind`); a name it does not know gives `other`. A chat file
//! records only the name, so the table below is that registry for the built-in tools. Calls
//! asp wrote from another harness keep that harness's tool name (rewriting `Read` into
//! `read_file` would invite the model to re-run it with the wrong arguments); the few foreign
//! names every converter produces are listed too, so reading such a chat back keeps its kinds.

use serde_json::{Value, json};

use crate::kit::acp::{self, Location, ToolKind, ToolStatus};

/// The id prefix of a `write_todos` call asp made up to carry a plan that had no tool call of
/// its own (Gemini keeps plans only as `write_todos` calls). Reading such a call gives back the
/// plan alone.
pub const PLAN_CALL_PREFIX: &str = "write_todos__asp_plan_";

/// The ACP kind of a Gemini (or carried foreign) tool name.
pub fn kind_of(name: &str) -> ToolKind {
    match name {
        "read_file" | "read_many_files" | "read_mcp_resource" => ToolKind::Read,
        "list_directory" | "glob" | "grep_search" | "google_web_search" | "list_mcp_resources" => {
            ToolKind::Search
        }
        "web_fetch" => ToolKind::Fetch,
        "run_shell_command" => ToolKind::Execute,
        "replace" | "write_file" => ToolKind::Edit,
        // Kind.Agent and Kind.Think both become `think`.
        "invoke_agent" | "update_topic" | "get_internal_docs" | "save_memory" => ToolKind::Think,
        _ => foreign_kind(name),
    }
}

/// Kinds of the tool names other harnesses' converters carry, and of the generic names asp
/// gives a call whose harness named no tool.
fn foreign_kind(name: &str) -> ToolKind {
    match name {
        "Read" | "NotebookRead" | "read" | "view_image" => ToolKind::Read,
        "Edit" | "MultiEdit" | "Write" | "NotebookEdit" | "apply_patch" | "edit" => ToolKind::Edit,
        "Bash" | "BashOutput" | "KillShell" | "shell" | "exec_command" | "local_shell"
        | "write_stdin" | "execute" => ToolKind::Execute,
        "Grep" | "Glob" | "LS" | "WebSearch" | "web_search" | "search" => ToolKind::Search,
        "WebFetch" | "fetch" => ToolKind::Fetch,
        "Task" | "Agent" | "think" => ToolKind::Think,
        "delete" => ToolKind::Delete,
        "move" => ToolKind::Move,
        "ExitPlanMode" | "switch_mode" => ToolKind::SwitchMode,
        _ => ToolKind::Other,
    }
}

/// The function name asp gives a carried call whose harness named no tool: the ACP kind.
pub fn generic_name(kind: ToolKind) -> &'static str {
    match kind {
        ToolKind::Read => "read",
        ToolKind::Edit => "edit",
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

/// A name the Gemini API accepts for a function (`^[a-zA-Z_][a-zA-Z0-9_\-.:]{0,63}$`).
pub fn function_name(name: &str) -> String {
    let mut out: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':') {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if !out
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
    {
        out.insert(0, '_');
        out.truncate(64);
    }
    out
}

/// The display name the CLI gives its built-in tools (the title of a call it did not record
/// one for).
pub fn display_name(name: &str) -> Option<&'static str> {
    Some(match name {
        "read_file" => "ReadFile",
        "read_many_files" => "ReadManyFiles",
        "list_directory" => "ReadFolder",
        "glob" => "FindFiles",
        "grep_search" => "SearchText",
        "google_web_search" => "GoogleSearch",
        "web_fetch" => "WebFetch",
        "run_shell_command" => "Shell",
        "replace" => "Edit",
        "write_file" => "WriteFile",
        "write_todos" => "WriteTodos",
        "invoke_agent" => "Invoke Subagent",
        "complete_task" => "Complete Task",
        "activate_skill" => "Activate Skill",
        "ask_user" => "Ask User",
        _ => return None,
    })
}

/// A recorded tool status as ACP says it. A shell command that exits non-zero is still
/// `success` in Gemini: only the tool itself failing is `error`.
pub fn status_of(status: &str) -> ToolStatus {
    match status {
        "success" => ToolStatus::Completed,
        "error" | "cancelled" => ToolStatus::Failed,
        "executing" => ToolStatus::InProgress,
        _ => ToolStatus::Pending,
    }
}

/// Whether a `resultDisplay` is a FileDiff.
pub fn is_file_diff(v: &Value) -> bool {
    v.get("fileDiff").is_some() && v.get("fileName").is_some()
}

/// `path` made absolute against `cwd` (paths in tool arguments are often relative).
pub fn absolute(path: &str, cwd: Option<&str>) -> String {
    match cwd {
        Some(c) if !path.starts_with('/') => {
            let rel = path.strip_prefix("./").unwrap_or(path);
            format!("{}/{rel}", c.trim_end_matches('/'))
        }
        _ => path.to_owned(),
    }
}

/// ACP tool call content for a `resultDisplay`: a string as text, a FileDiff as a diff, the
/// TUI's styled shell output as its plain text, a subagent's result or a search summary as
/// text. `None` when nothing can be shown (a TodoList is shown as a plan instead); the raw
/// display is then kept under `_meta`.
pub fn display_content(display: &Value, cwd: Option<&str>) -> Option<Vec<Value>> {
    match display {
        Value::String(s) if s.is_empty() => Some(Vec::new()),
        Value::String(s) => Some(vec![acp::tool_content(acp::text(s.clone()))]),
        Value::Array(lines) => {
            let text = ansi_text(lines);
            Some(if text.is_empty() {
                Vec::new()
            } else {
                vec![acp::tool_content(acp::text(text))]
            })
        }
        Value::Object(o) if is_file_diff(display) => {
            let path = o
                .get("filePath")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .or_else(|| {
                    o.get("fileName")
                        .and_then(Value::as_str)
                        .map(|f| absolute(f, cwd))
                })
                .unwrap_or_default();
            let new_file = o.get("isNewFile").and_then(Value::as_bool) == Some(true);
            let old = if new_file {
                None
            } else {
                o.get("originalContent")
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            let new = o.get("newContent").and_then(Value::as_str).unwrap_or("");
            Some(vec![acp::diff(path, old, new)])
        }
        Value::Object(o) => {
            let text = if o.get("isSubagentProgress").and_then(Value::as_bool) == Some(true) {
                o.get("result").and_then(Value::as_str)
            } else if o.contains_key("todos") {
                return None;
            } else {
                o.get("summary").and_then(Value::as_str)
            }?;
            Some(vec![acp::tool_content(acp::text(text))])
        }
        _ => None,
    }
}

/// The plain text of the TUI's AnsiOutput (`[[{text, bold, fg, ...}]]`): each line's token
/// texts joined and right-trimmed, trailing empty lines dropped.
fn ansi_text(lines: &[Value]) -> String {
    let mut out: Vec<String> = lines
        .iter()
        .map(|line| {
            line.as_array()
                .into_iter()
                .flatten()
                .filter_map(|tok| tok.get("text").and_then(Value::as_str))
                .collect::<String>()
                .trim_end()
                .to_owned()
        })
        .collect();
    while out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out.join("\n")
}

/// Where a call works, from its arguments (`file_path`, `dir_path`, `start_line`) or its diff.
pub fn locations(args: &Value, display: Option<&Value>, cwd: Option<&str>) -> Vec<Location> {
    let line = args.get("start_line").and_then(Value::as_u64);
    for key in ["file_path", "absolute_path", "dir_path", "path"] {
        if let Some(p) = args
            .get(key)
            .and_then(Value::as_str)
            .filter(|p| !p.is_empty())
        {
            return vec![Location {
                path: absolute(p, cwd),
                line,
            }];
        }
    }
    if let Some(p) = display
        .filter(|d| is_file_diff(d))
        .and_then(|d| d.get("filePath"))
        .and_then(Value::as_str)
    {
        return vec![Location {
            path: p.to_owned(),
            line: None,
        }];
    }
    Vec::new()
}

/// A `write_todos` list as ACP plan entries. Gemini's `blocked` has no ACP status and becomes
/// `pending`, `cancelled` becomes `completed`; the original is kept in the entry's
/// `_meta.gemini.status`.
pub fn plan_entries(args: &Value) -> Option<Vec<acp::PlanEntry>> {
    let todos = args.get("todos")?.as_array()?;
    Some(
        todos
            .iter()
            .map(|t| {
                let raw = t.get("status").and_then(Value::as_str).unwrap_or("pending");
                let status = match raw {
                    "in_progress" => acp::PlanStatus::InProgress,
                    "completed" | "cancelled" => acp::PlanStatus::Completed,
                    _ => acp::PlanStatus::Pending,
                };
                let meta = (!matches!(raw, "pending" | "in_progress" | "completed"))
                    .then(|| acp::meta("gemini", json!({"status": raw})))
                    .flatten();
                acp::PlanEntry {
                    content: t
                        .get("description")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    priority: acp::Priority::Medium,
                    status,
                    meta,
                }
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_the_kinds_gemini_replays() {
        assert_eq!(kind_of("run_shell_command"), ToolKind::Execute);
        assert_eq!(kind_of("invoke_agent"), ToolKind::Think);
        assert_eq!(kind_of("mcp_issues_get_issue"), ToolKind::Other);
        assert_eq!(kind_of("write_todos"), ToolKind::Other);
        assert_eq!(kind_of("Read"), ToolKind::Read);
        assert_eq!(kind_of(generic_name(ToolKind::Search)), ToolKind::Search);
    }

    #[test]
    fn function_names_are_what_the_api_accepts() {
        assert_eq!(function_name("Read"), "Read");
        assert_eq!(
            function_name("mcp__github__get issue"),
            "mcp__github__get_issue"
        );
        assert_eq!(function_name("9lives"), "_9lives");
        assert_eq!(function_name(&"x".repeat(80)).len(), 64);
    }

    #[test]
    fn ansi_output_becomes_plain_text() {
        let display = json!([
            [{"text": "Ran 4 tests ", "bold": false}, {"text": "in 0.000s   "}],
            [{"text": ""}],
            [{"text": "OK"}],
            [{"text": "   "}]
        ]);
        let content = display_content(&display, None).unwrap();
        assert_eq!(content[0]["content"]["text"], "Ran 4 tests in 0.000s\n\nOK");
    }
}
