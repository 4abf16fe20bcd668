//! Who gave a session its title: one rule, read from what every reader records, so a writer
//! into any harness keeps the difference its own store makes.
//!
//! Harnesses tell a title someone chose from one made for them: Claude Code's `custom-title`
//! against its `ai-title` and `summary` records, Copilot CLI's `user_named`, Qwen Code's
//! `titleSource` `manual` against `auto`, Codex's thread names (set by `/rename`) against the
//! first prompt it lists an unnamed thread by. Carried without that, a chosen name reached
//! Copilot as one it may replace, and a first prompt reached Claude Code and Codex as a name the
//! user gave (new-user trial helper-122, 2 and 4).

use asp_format::state::Session;
use serde_json::Value;

/// Where a session's title comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TitleOrigin {
    /// A name someone gave it (a rename, a name given at the start).
    Chosen,
    /// A name the harness or its model made (a summary, a generated title).
    Generated,
    /// No title of its own: the first prompt (or a placeholder) stands in for one, as a
    /// harness lists an unnamed session. A writer writes no title for it.
    Prompt,
}

/// What `s`'s readers recorded of its title's origin, by the harness it was read from; `None`
/// when nothing says (an untitled session, a harness that does not tell the two apart).
pub fn origin(s: &Session) -> Option<TitleOrigin> {
    let ns = |name: &str| s.meta.as_ref().and_then(|m| m.get(name));
    let field = |name: &str, key: &str| ns(name).and_then(|v| v.get(key)).and_then(Value::as_str);
    if let Some(source) = field("claudeCode", "titleSource") {
        return match source {
            "custom-title" => Some(TitleOrigin::Chosen),
            // A subagent is titled by the description the model gave its task.
            "ai-title" | "summary" | "agent-description" => Some(TitleOrigin::Generated),
            "first_prompt" => Some(TitleOrigin::Prompt),
            _ => None,
        };
    }
    if let Some(source) = field("codex", "titleSource") {
        return match source {
            // Named by `/rename` or the app server's `thread/name/set`.
            "session_index" | "thread_name_updated" | "state_db" => Some(TitleOrigin::Chosen),
            "first_prompt" | "none" => Some(TitleOrigin::Prompt),
            _ => None,
        };
    }
    if let Some(source) = field("qwen", "titleSource") {
        return match source {
            "manual" => Some(TitleOrigin::Chosen),
            "auto" => Some(TitleOrigin::Generated),
            "prompt" => Some(TitleOrigin::Prompt),
            _ => None,
        };
    }
    // Pi's only title is the name `/name` gives a session.
    if s.harness.as_ref().is_some_and(|h| h.as_str() == "pi") && !s.title.is_empty() {
        return Some(TitleOrigin::Chosen);
    }
    if let Some(copilot) = ns("copilot").filter(|_| !s.title.is_empty()) {
        return Some(
            if copilot.get("userNamed").and_then(Value::as_bool) == Some(true) {
                TitleOrigin::Chosen
            } else {
                TitleOrigin::Generated
            },
        );
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn session(title: &str, meta: Value) -> Session {
        serde_json::from_value(json!({
            "id": "s", "title": title,
            "updates": {"digest": format!("sha256:{}", "0".repeat(64)), "size": 0},
            "_meta": meta,
        }))
        .unwrap()
    }

    #[test]
    fn every_readers_record_of_a_title_says_who_gave_it() {
        use TitleOrigin::*;
        for (meta, want) in [
            (
                json!({"claudeCode": {"titleSource": "custom-title"}}),
                Some(Chosen),
            ),
            (
                json!({"claudeCode": {"titleSource": "ai-title"}}),
                Some(Generated),
            ),
            (
                json!({"claudeCode": {"titleSource": "summary"}}),
                Some(Generated),
            ),
            (
                json!({"claudeCode": {"titleSource": "first_prompt"}}),
                Some(Prompt),
            ),
            (
                json!({"codex": {"titleSource": "session_index"}}),
                Some(Chosen),
            ),
            (
                json!({"codex": {"titleSource": "thread_name_updated"}}),
                Some(Chosen),
            ),
            (
                json!({"codex": {"titleSource": "first_prompt"}}),
                Some(Prompt),
            ),
            (json!({"codex": {"titleSource": "none"}}), Some(Prompt)),
            (json!({"qwen": {"titleSource": "manual"}}), Some(Chosen)),
            (json!({"qwen": {"titleSource": "auto"}}), Some(Generated)),
            (json!({"qwen": {"titleSource": "prompt"}}), Some(Prompt)),
            (json!({"copilot": {"userNamed": true}}), Some(Chosen)),
            (json!({"copilot": {}}), Some(Generated)),
            (json!({"gemini": {}}), None),
            (json!({}), None),
        ] {
            assert_eq!(origin(&session("T", meta.clone())), want, "{meta}");
        }
        assert_eq!(origin(&session("", json!({"copilot": {}}))), None);
    }
}
