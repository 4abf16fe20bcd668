//! A tool call's name in the harness it came from, and the tools every coding harness has
//! under names of its own: what a writer names a carried call (Pi and Copilot CLI keep a
//! tool name with each call, which a resumed model reads as its history).
//!
//! A call's title is for people ("cart.py", "3 todos"), never a name: the name is the one
//! its reader kept under `_meta` (Claude Code, Pi and Qwen Code `toolName`, OpenCode `tool`,
//! Gemini CLI and Copilot CLI `name`), else what its ACP kind says.

use serde_json::{Map, Value};

/// A tool most coding harnesses have, each under its own name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Common {
    /// Reads a file.
    Read,
    /// Writes a whole file.
    Write,
    /// Replaces text in a file.
    Edit,
    /// Runs a shell command.
    Shell,
    /// Searches file contents.
    Grep,
    /// Finds files by a glob.
    Glob,
    /// Lists a directory.
    List,
    /// Fetches a URL.
    Fetch,
}

impl Common {
    /// What `name`, a harness's own tool name, is, if it is one of these (names from Claude
    /// Code, Codex, Gemini CLI, Qwen Code, OpenCode, Pi and Copilot CLI; case ignored).
    pub fn of(name: &str) -> Option<Common> {
        Some(match name.to_ascii_lowercase().as_str() {
            "read" | "view" | "read_file" | "readfile" => Common::Read,
            "write" | "write_file" | "create" => Common::Write,
            "edit" | "replace" | "str_replace" | "str_replace_editor" => Common::Edit,
            "bash" | "shell" | "run_shell_command" | "exec_command" | "local_shell" => {
                Common::Shell
            }
            "grep" | "search_file_content" | "grep_search" | "rg" => Common::Grep,
            "glob" | "find" => Common::Glob,
            "ls" | "list" | "list_directory" => Common::List,
            "webfetch" | "web_fetch" | "fetch" => Common::Fetch,
            _ => return None,
        })
    }
}

/// The name the call's source harness gave its tool, as its reader kept it under `_meta`
/// (the first namespace that has one, `asp` passed over).
pub fn source_name(meta: &Map<String, Value>) -> Option<&str> {
    meta.iter()
        .filter(|(ns, _)| ns.as_str() != "asp")
        .find_map(|(_, v)| {
            ["toolName", "tool", "name"]
                .iter()
                .find_map(|k| v.get(*k).and_then(Value::as_str))
        })
        .filter(|n| !n.is_empty())
}

/// `name` as a tool name every API takes: ASCII letters, digits, `_` and `-`, at most 64
/// (each other character a `_`); `None` when nothing is left.
pub fn api_safe(name: &str) -> Option<String> {
    let clean: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    (!clean.trim_matches('_').is_empty()).then_some(clean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_source_name_is_the_readers_not_the_title() {
        let meta = |v: Value| v.as_object().unwrap().clone();
        for (m, name) in [
            (
                json!({"opencode": {"tool": "todowrite", "partId": "p"}}),
                "todowrite",
            ),
            (json!({"claudeCode": {"toolName": "Grep"}}), "Grep"),
            (
                json!({"asp": {"name": "x"}, "gemini": {"name": "glob"}}),
                "glob",
            ),
        ] {
            assert_eq!(source_name(&meta(m)), Some(name));
        }
        assert_eq!(
            source_name(&meta(json!({"opencode": {"partId": "p"}}))),
            None
        );
        assert_eq!(Common::of("Glob"), Some(Common::Glob));
        assert_eq!(Common::of("run_shell_command"), Some(Common::Shell));
        assert_eq!(Common::of("todowrite"), None);
        assert_eq!(
            api_safe("mcp__docs.search"),
            Some("mcp__docs_search".to_owned())
        );
        assert_eq!(api_safe("..."), None);
    }
}
