//! Claude Code's tools as ACP tool calls: title, kind, content and locations.
//!
//! Titles and kinds follow what Claude Code's own ACP adapter (claude-agent-acp) shows for the
//! same call, so a client sees a carried session as it saw the live one. Paths under the
//! session's cwd are shown relative to it.

use serde_json::{Value, json};

use crate::kit::acp::{self, Location, ToolKind};

/// What ACP says about one `tool_use`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolInfo {
    pub title: String,
    pub kind: ToolKind,
    pub content: Vec<Value>,
    pub locations: Vec<Location>,
}

fn s<'a>(input: &'a Value, key: &str) -> Option<&'a str> {
    input
        .get(key)
        .and_then(Value::as_str)
        .filter(|v| !v.is_empty())
}

/// A number or a numeric string as the adapter prints it.
fn num(input: &Value, key: &str) -> Option<String> {
    match input.get(key)? {
        Value::Number(n) => Some(n.to_string()),
        Value::String(t) if !t.is_empty() => Some(t.clone()),
        _ => None,
    }
}

/// `path` relative to `cwd` when it lies inside it, else unchanged.
pub fn display_path(path: &str, cwd: Option<&str>) -> String {
    let Some(cwd) = cwd else {
        return path.to_owned();
    };
    let cwd = cwd.trim_end_matches('/');
    if path == cwd {
        return ".".to_owned();
    }
    match path.strip_prefix(cwd).and_then(|r| r.strip_prefix('/')) {
        Some(rel) if !cwd.is_empty() => rel.to_owned(),
        _ => path.to_owned(),
    }
}

fn text_content(t: &str) -> Value {
    acp::tool_content(acp::text(t))
}

/// Title, kind, content and locations for a call of `name` with `input`.
pub fn tool_info(name: &str, input: &Value, cwd: Option<&str>) -> ToolInfo {
    let mut info = ToolInfo {
        title: name.to_owned(),
        kind: ToolKind::Other,
        content: Vec::new(),
        locations: Vec::new(),
    };
    match name {
        "Agent" | "Task" => {
            info.kind = ToolKind::Think;
            info.title = s(input, "description").unwrap_or("Task").to_owned();
            if let Some(p) = input.get("prompt").and_then(Value::as_str) {
                info.content.push(text_content(p));
            }
        }
        "Bash" => {
            info.kind = ToolKind::Execute;
            info.title = s(input, "command").unwrap_or("Terminal").to_owned();
            if let Some(d) = s(input, "description") {
                info.content.push(text_content(d));
            }
        }
        "BashOutput" | "KillShell" | "KillBash" => info.kind = ToolKind::Execute,
        "Read" | "NotebookRead" => {
            info.kind = ToolKind::Read;
            let path = s(input, "file_path").or_else(|| s(input, "notebook_path"));
            let offset = input.get("offset").and_then(Value::as_u64);
            let limit = input
                .get("limit")
                .and_then(Value::as_u64)
                .filter(|l| *l > 0);
            let range = match (offset, limit) {
                (o, Some(l)) => {
                    let start = o.unwrap_or(1);
                    format!(" ({start} - {})", start + l - 1)
                }
                (Some(o), None) if o > 0 => format!(" (from line {o})"),
                _ => String::new(),
            };
            info.title = format!(
                "Read {}{range}",
                path.map_or_else(|| "File".to_owned(), |p| display_path(p, cwd))
            );
            if let Some(p) = path {
                info.locations.push(Location {
                    path: p.to_owned(),
                    line: Some(offset.unwrap_or(1)),
                });
            }
        }
        "Write" => {
            info.kind = ToolKind::Edit;
            let path = s(input, "file_path");
            let body = input.get("content").and_then(Value::as_str);
            match (path, body) {
                (Some(p), b) => info.content.push(acp::diff(p, None, b.unwrap_or_default())),
                (None, Some(b)) => info.content.push(text_content(b)),
                (None, None) => {}
            }
            info.title = path.map_or_else(
                || "Write".to_owned(),
                |p| format!("Write {}", display_path(p, cwd)),
            );
            info.locations.extend(path.map(|p| Location {
                path: p.to_owned(),
                line: None,
            }));
        }
        "Edit" | "MultiEdit" | "NotebookEdit" => {
            info.kind = ToolKind::Edit;
            let path = s(input, "file_path").or_else(|| s(input, "notebook_path"));
            if let Some(p) = path {
                let old = s(input, "old_string");
                let new = input.get("new_string").and_then(Value::as_str);
                if old.is_some() || new.is_some_and(|n| !n.is_empty()) {
                    info.content.push(acp::diff(
                        p,
                        old.map(str::to_owned),
                        new.unwrap_or_default(),
                    ));
                }
            }
            info.title = path.map_or_else(
                || name.to_owned(),
                |p| format!("{name} {}", display_path(p, cwd)),
            );
            info.locations.extend(path.map(|p| Location {
                path: p.to_owned(),
                line: None,
            }));
        }
        "Glob" => {
            info.kind = ToolKind::Search;
            let mut t = "Find".to_owned();
            if let Some(p) = s(input, "path") {
                t.push_str(&format!(" `{p}`"));
                info.locations.push(Location {
                    path: p.to_owned(),
                    line: None,
                });
            }
            if let Some(p) = s(input, "pattern") {
                t.push_str(&format!(" `{p}`"));
            }
            info.title = t;
        }
        "Grep" => {
            info.kind = ToolKind::Search;
            info.title = grep_title(input);
        }
        "LS" => {
            info.kind = ToolKind::Search;
            if let Some(p) = s(input, "path") {
                info.title = format!("List {}", display_path(p, cwd));
            }
        }
        "WebFetch" => {
            info.kind = ToolKind::Fetch;
            info.title =
                s(input, "url").map_or_else(|| "Fetch".to_owned(), |u| format!("Fetch {u}"));
            if let Some(p) = s(input, "prompt") {
                info.content.push(text_content(p));
            }
        }
        "WebSearch" => {
            info.kind = ToolKind::Fetch;
            let mut t = format!("\"{}\"", s(input, "query").unwrap_or_default());
            for (key, label) in [
                ("allowed_domains", "allowed"),
                ("blocked_domains", "blocked"),
            ] {
                let list: Vec<&str> = input
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                    .collect();
                if !list.is_empty() {
                    t.push_str(&format!(" ({label}: {})", list.join(", ")));
                }
            }
            info.title = t;
        }
        "ExitPlanMode" => {
            info.kind = ToolKind::SwitchMode;
            info.title = "Ready to code?".to_owned();
            if let Some(p) = s(input, "plan") {
                info.content.push(text_content(p));
            }
        }
        "Skill" => {
            if let Some(n) = s(input, "skill").or_else(|| s(input, "name")) {
                info.title = format!("Load skill: {n}");
            }
        }
        _ => {}
    }
    info
}

/// The shell-like title the adapter gives a `Grep` call.
fn grep_title(input: &Value) -> String {
    let flag = |k: &str| input.get(k).and_then(Value::as_bool) == Some(true);
    let mut t = "grep".to_owned();
    if flag("-i") {
        t.push_str(" -i");
    }
    if flag("-n") {
        t.push_str(" -n");
    }
    for k in ["-A", "-B", "-C"] {
        if let Some(n) = num(input, k) {
            t.push_str(&format!(" {k} {n}"));
        }
    }
    match input.get("output_mode").and_then(Value::as_str) {
        Some("files_with_matches") => t.push_str(" -l"),
        Some("count") => t.push_str(" -c"),
        _ => {}
    }
    if let Some(n) = num(input, "head_limit") {
        t.push_str(&format!(" | head -{n}"));
    }
    if let Some(g) = s(input, "glob") {
        t.push_str(&format!(" --include=\"{g}\""));
    }
    if let Some(ty) = s(input, "type") {
        t.push_str(&format!(" --type={ty}"));
    }
    if flag("multiline") {
        t.push_str(" -P");
    }
    if let Some(p) = s(input, "pattern") {
        t.push_str(&format!(" \"{p}\""));
    }
    if let Some(p) = s(input, "path") {
        t.push_str(&format!(" {p}"));
    }
    t
}

/// The text of a `tool_result`'s content (a string, or text blocks).
pub fn result_text(content: &Value) -> String {
    match content {
        Value::String(t) => t.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A fence longer than any run of backticks in `text`. The backticks are found with
/// `memchr`: file contents have few, and a loop over every byte of every result was 1.5 % of
/// packing a Claude Code home.
fn fenced(text: &str, info: &str) -> String {
    let bytes = text.as_bytes();
    let mut longest = 0;
    // Where the run being counted ends: a backtick found inside it is already counted.
    let mut counted = 0;
    for at in memchr::memchr_iter(b'`', bytes) {
        if at < counted {
            continue;
        }
        let run = bytes[at..].iter().take_while(|&&c| c == b'`').count();
        longest = longest.max(run);
        counted = at + run;
    }
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}{info}\n{text}\n{fence}")
}

/// Whether [`result_content`] shows anything of a result: not for edits (the diff is on the
/// call) and plans, unless it failed.
pub fn result_shown(tool: &str, is_error: bool) -> bool {
    is_error
        || !matches!(
            tool,
            "Edit" | "MultiEdit" | "Write" | "NotebookEdit" | "TodoWrite"
        )
}

/// The `content` of a `tool_call_update` for a result, as the adapter shows it: errors and
/// file reads fenced, shell output as a console block, edits without content (the diff is on
/// the call), everything else block by block.
pub fn result_content(tool: &str, content: &Value, is_error: bool) -> Vec<Value> {
    if !result_shown(tool, is_error) {
        return Vec::new();
    }
    if is_error {
        let t = result_text(content);
        return if t.is_empty() {
            Vec::new()
        } else {
            vec![text_content(&fenced(&t, ""))]
        };
    }
    match tool {
        "Read" => {
            let t = result_text(content);
            if t.is_empty() {
                Vec::new()
            } else {
                vec![text_content(&fenced(&t, ""))]
            }
        }
        "Bash" | "BashOutput" => {
            let t = result_text(content);
            let t = t.trim_end();
            if t.is_empty() {
                Vec::new()
            } else {
                vec![text_content(&format!("```console\n{t}\n```"))]
            }
        }
        _ => blocks_as_content(content),
    }
}

/// Text and image blocks of a result as ACP tool call content.
fn blocks_as_content(content: &Value) -> Vec<Value> {
    match content {
        Value::String(t) if !t.is_empty() => vec![text_content(t)],
        Value::Array(blocks) => blocks
            .iter()
            .filter_map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str).map(text_content),
                Some("image") => image_block(b).map(acp::tool_content),
                _ => Some(text_content(&b.to_string())),
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// An Anthropic image block as an ACP image content block.
pub fn image_block(b: &Value) -> Option<Value> {
    let src = b.get("source")?;
    match src.get("type").and_then(Value::as_str) {
        Some("base64") => Some(acp::image(
            src.get("data").and_then(Value::as_str).unwrap_or_default(),
            src.get("media_type")
                .and_then(Value::as_str)
                .unwrap_or_default(),
        )),
        Some("url") => Some(json!({
            "type": "image", "data": "", "mimeType": "",
            "uri": src.get("url").and_then(Value::as_str).unwrap_or_default(),
        })),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CWD: Option<&str> = Some("/home/dev/shop");

    #[test]
    fn a_fence_is_longer_than_every_run_of_backticks_and_at_least_three() {
        for (text, fence) in [
            ("plain", "```"),
            ("", "```"),
            ("a `b` c", "```"),
            ("``", "```"),
            ("x```y", "````"),
            ("``` and ````` and `", "``````"),
            ("ends with ````", "`````"),
            ("````starts", "`````"),
            ("é`è``ü", "```"),
        ] {
            let got = fenced(text, "ts");
            assert_eq!(got, format!("{fence}ts\n{text}\n{fence}"), "{text:?}");
        }
    }

    #[test]
    fn titles_and_kinds_match_the_adapter() {
        let read = tool_info(
            "Read",
            &json!({"file_path": "/home/dev/shop/src/cart/total.ts"}),
            CWD,
        );
        assert_eq!(read.title, "Read src/cart/total.ts");
        assert_eq!(read.kind, ToolKind::Read);
        assert_eq!(read.locations[0].line, Some(1));
        let grep = tool_info(
            "Grep",
            &json!({"pattern": "applyCoupon\\|findCoupon", "path": "/home/dev/shop/src", "output_mode": "files_with_matches"}),
            CWD,
        );
        assert_eq!(
            grep.title,
            "grep -l \"applyCoupon\\|findCoupon\" /home/dev/shop/src"
        );
        let glob = tool_info(
            "Glob",
            &json!({"pattern": "**/*.{tsx,vue}", "path": "/home/dev/shop/src"}),
            CWD,
        );
        assert_eq!(glob.title, "Find `/home/dev/shop/src` `**/*.{tsx,vue}`");
        let mcp = tool_info("mcp__design-system__get_component", &json!({}), CWD);
        assert_eq!(
            (mcp.title.as_str(), mcp.kind),
            ("mcp__design-system__get_component", ToolKind::Other)
        );
        let read_range = tool_info(
            "Read",
            &json!({"file_path": "/etc/hosts", "offset": 10, "limit": 5}),
            CWD,
        );
        assert_eq!(read_range.title, "Read /etc/hosts (10 - 14)");
    }

    #[test]
    fn results_render_like_the_adapter() {
        assert_eq!(
            result_content("Bash", &json!("ok\n\n"), false),
            vec![text_content("```console\nok\n```")]
        );
        assert_eq!(
            result_content("Read", &json!("a ``` b"), false),
            vec![text_content("````\na ``` b\n````")]
        );
        assert!(result_content("Edit", &json!("done"), false).is_empty());
    }
}
