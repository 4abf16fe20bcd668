//! Pi's built-in tools as ACP tool calls, and back.
//!
//! Pi's tools (`read {path, offset?, limit?}`, `bash {command, timeout?}`, `edit {path,
//! edits}`, `write {path, content}`, and the optional `grep`, `find`, `ls`) carry their
//! arguments as the model gave them; ACP gets a kind, a title a person reads, and the file
//! the call works on.

use serde_json::Value;

use crate::kit::acp::{Location, ToolKind};

/// The ACP kind of a Pi tool.
pub fn kind(tool: &str) -> ToolKind {
    match tool {
        "read" => ToolKind::Read,
        "edit" | "write" => ToolKind::Edit,
        "bash" => ToolKind::Execute,
        "grep" | "find" | "ls" => ToolKind::Search,
        _ => ToolKind::Other,
    }
}

fn arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

/// A title as Pi's TUI heads a call: the tool and its main argument.
pub fn title(tool: &str, args: &Value) -> String {
    let main = match tool {
        "bash" => arg(args, "command"),
        "grep" | "find" => arg(args, "pattern").or_else(|| arg(args, "path")),
        _ => arg(args, "path"),
    };
    match main {
        Some(m) => format!("{tool} {m}"),
        None => tool.to_owned(),
    }
}

/// The file a call works on, absolute against the session's cwd.
pub fn locations(args: &Value, cwd: Option<&str>) -> Option<Vec<Location>> {
    let p = arg(args, "path")?;
    let path = match cwd {
        Some(c) if !p.starts_with('/') => format!("{}/{p}", c.trim_end_matches('/')),
        _ => p.to_owned(),
    };
    let line = args.get("offset").and_then(Value::as_u64);
    Some(vec![Location { path, line }])
}

/// The Pi tool name for a call from another harness: the name its source gave the tool
/// ([`tool_names::source_name`]), as Pi calls that tool when Pi has it (`Glob` is `find`,
/// `run_shell_command` is `bash`), else as it was; without one, what the ACP kind says.
/// Never the title, which is for people ("cart.py", "3 todos").
pub fn foreign_name(meta: &serde_json::Map<String, Value>, kind: ToolKind) -> String {
    use crate::kit::tool_names::{self, Common};
    let pi = |c: Common| match c {
        Common::Read => Some("read"),
        Common::Write => Some("write"),
        Common::Edit => Some("edit"),
        Common::Shell => Some("bash"),
        Common::Grep => Some("grep"),
        Common::Glob => Some("find"),
        Common::List => Some("ls"),
        Common::Fetch => None,
    };
    if let Some(name) = tool_names::source_name(meta) {
        if let Some(own) = Common::of(name).and_then(pi) {
            return own.to_owned();
        }
        if let Some(safe) = tool_names::api_safe(name) {
            return safe;
        }
    }
    match kind {
        ToolKind::Read => "read".to_owned(),
        ToolKind::Edit => "edit".to_owned(),
        ToolKind::Execute => "bash".to_owned(),
        ToolKind::Search => "grep".to_owned(),
        other => serde_json::to_value(other)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_else(|| "tool".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn pi_tools_map_onto_acp() {
        assert_eq!(kind("bash"), ToolKind::Execute);
        assert_eq!(title("bash", &json!({"command": "ls"})), "bash ls");
        let l = locations(&json!({"path": "cart.py"}), Some("/home/dev/shop")).unwrap();
        assert_eq!(l[0].path, "/home/dev/shop/cart.py");
        let meta = |v: Value| v.as_object().unwrap().clone();
        // OpenCode's calls, titled for people: named by the tool each reader kept.
        for (tool, kind, pi) in [
            ("read", ToolKind::Read, "read"),
            ("glob", ToolKind::Search, "find"),
            ("todowrite", ToolKind::Other, "todowrite"),
            ("task", ToolKind::Other, "task"),
        ] {
            let m = meta(json!({"opencode": {"tool": tool, "partId": "p"}}));
            assert_eq!(foreign_name(&m, kind), pi);
        }
        assert_eq!(
            foreign_name(
                &meta(json!({"claudeCode": {"toolName": "Bash"}})),
                ToolKind::Execute
            ),
            "bash"
        );
        assert_eq!(foreign_name(&Default::default(), ToolKind::Read), "read");
        assert_eq!(foreign_name(&Default::default(), ToolKind::Fetch), "fetch");
    }
}
