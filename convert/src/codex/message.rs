//! Response-item messages: their text, and telling what the user typed from what Codex injected.
//!
//! Codex sends the model, every turn, context it generated itself (permissions, AGENTS.md,
//! `<environment_context>`, skills, ...) as `developer` messages and as `user` messages. Those
//! are model input, not what the user said: they must never become `user_message_chunk`s
//! (spec/harnesses/codex.md §6).

use serde_json::Value;

/// Openings of role-`user` messages that Codex injects.
const INJECTED_PREFIXES: &[&str] = &[
    "# AGENTS.md instructions",
    "<environment_context>",
    "<user_instructions>",
    "<INSTRUCTIONS>",
    "<skill>",
    "<turn_aborted>",
    "<user_shell_command>",
    "<permissions instructions>",
    "<collaboration_mode>",
    "<model_switch>",
    "Another language model started to solve this problem",
];

/// The text parts of a message (`input_text`, `output_text`, `text`), in order.
pub fn text_parts(payload: &Value) -> Vec<&str> {
    payload
        .get("content")
        .and_then(Value::as_array)
        .map(|parts| {
            parts
                .iter()
                .filter(|p| {
                    matches!(
                        p.get("type").and_then(Value::as_str),
                        Some("input_text" | "output_text" | "text" | "Text")
                    )
                })
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect()
        })
        .unwrap_or_default()
}

/// All text of a message, parts joined by newlines.
pub fn text(payload: &Value) -> String {
    text_parts(payload).join("\n")
}

/// A message's role.
pub fn role(payload: &Value) -> &str {
    payload.get("role").and_then(Value::as_str).unwrap_or("")
}

/// Whether a message is context Codex injected rather than something the user typed: any
/// `developer`/`system` message, a `user` message whose paginated metadata says its parts are
/// not `user.text`, or one whose text opens like Codex's injected blocks.
pub fn is_injected(payload: &Value) -> bool {
    match role(payload) {
        "developer" | "system" => return true,
        "user" => {}
        _ => return false,
    }
    if let Some(kinds) = payload
        .pointer("/internal_chat_message_metadata_passthrough/content_item_kinds")
        .and_then(Value::as_array)
        && !kinds.is_empty()
    {
        return !kinds.iter().any(|k| k.as_str() == Some("user.text"));
    }
    let parts = text_parts(payload);
    !parts.is_empty()
        && parts.iter().all(|t| {
            let t = t.trim_start();
            INJECTED_PREFIXES.iter().any(|p| t.starts_with(p))
        })
}

/// A stable hash of a text, for matching a message with its event duplicate without keeping
/// the text.
pub fn hash(text: &str) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    text.trim().hash(&mut h);
    h.finish()
}

/// The working directory named in an injected `<environment_context>` (both the XML form
/// `<cwd>…</cwd>` and the early `Current working directory: …` line), for rollouts whose meta
/// has no `cwd`.
pub fn cwd_in_context(text: &str) -> Option<String> {
    if let Some(start) = text.find("<cwd>") {
        let rest = &text[start + 5..];
        let end = rest.find("</cwd>")?;
        return Some(rest[..end].trim().to_owned()).filter(|s| !s.is_empty());
    }
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Current working directory:"))
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn user(text: &str) -> Value {
        json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
    }

    #[test]
    fn injected_context_is_recognised() {
        assert!(is_injected(&user(
            "# AGENTS.md instructions for /home/dev/shop\n\n<INSTRUCTIONS>"
        )));
        assert!(is_injected(&user("<environment_context>\n  <cwd>/x</cwd>")));
        assert!(is_injected(
            &json!({"type": "message", "role": "developer", "content": []})
        ));
        assert!(!is_injected(&user("Add a --dry-run flag to deploy.sh")));
        assert!(!is_injected(
            &json!({"type": "message", "role": "assistant", "content": []})
        ));
        let paginated = json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": "Which TODO?"}],
            "internal_chat_message_metadata_passthrough": {"content_item_kinds": ["user.text"]}});
        assert!(!is_injected(&paginated));
    }

    #[test]
    fn cwd_is_found_in_both_context_forms() {
        assert_eq!(
            cwd_in_context("<environment_context>\n  <cwd>/home/dev/notes</cwd>").as_deref(),
            Some("/home/dev/notes")
        );
        assert_eq!(
            cwd_in_context("<environment_context>\nCurrent working directory: /home/dev/shop\n")
                .as_deref(),
            Some("/home/dev/shop")
        );
    }
}
