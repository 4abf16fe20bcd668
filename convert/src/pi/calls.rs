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

/// The Pi tool name for a call from another harness: its own when it is one of Pi's, else
/// a name made from ACP's kind (Pi only shows the name; a resumed model sees it as history).
pub fn foreign_name(title: &str, kind: ToolKind, raw_input: Option<&Value>) -> String {
    let word = title.split_whitespace().next().unwrap_or("");
    let pi = ["read", "bash", "edit", "write", "grep", "find", "ls"];
    if pi.contains(&word) {
        return word.to_owned();
    }
    let has = |k: &str| raw_input.is_some_and(|v| v.get(k).is_some());
    match kind {
        ToolKind::Execute if has("command") => "bash".to_owned(),
        ToolKind::Read if has("path") => "read".to_owned(),
        _ => {
            let clean: String = word
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
                .collect();
            if clean.is_empty() {
                serde_json::to_value(kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "tool".to_owned())
            } else {
                clean
            }
        }
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
        assert_eq!(
            foreign_name("Read cart.py", ToolKind::Read, Some(&json!({"path": "x"}))),
            "read"
        );
        assert_eq!(foreign_name("bash ls", ToolKind::Execute, None), "bash");
        assert_eq!(foreign_name("", ToolKind::Fetch, None), "fetch");
    }
}
