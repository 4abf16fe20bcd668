//! Whether a session was archived: one rule, read from what every reader records, so a writer
//! into a harness that keeps an archive puts an archived session there too.
//!
//! Archiving takes a session out of the harness's list without deleting it: Codex moves the
//! rollout into `archived_sessions/` (and marks its `threads` row), Qwen Code moves the chat
//! into `chats/archive/`, OpenCode sets the session's `time_archived`. Carried without that,
//! every thread a person had archived in Codex came back into OpenCode's list, and the other way
//! round. Claude Code, Gemini CLI, Copilot CLI and Pi keep no archive: the session is listed
//! with the others there, and the write says so ([`crate::harness::Harness::keeps_an_archive`]).

use asp_format::state::Session;
use serde_json::Value;

use super::time::{self, Nanos};

/// A session archived where it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Archived {
    /// When, where the harness records it (OpenCode); else `None`, and a writer that needs a
    /// time takes the session's last update.
    pub at: Option<Nanos>,
}

/// What `s`'s reader recorded of it being archived; `None` for a session in the list.
pub fn archived(s: &Session) -> Option<Archived> {
    let ns = |name: &str| s.meta.as_ref().and_then(|m| m.get(name));
    let flag = |name: &str| {
        ns(name)
            .and_then(|v| v.get("archived"))
            .and_then(Value::as_bool)
    };
    if let Some(at) = ns("opencode").and_then(|v| v.get("archivedAt")) {
        return Some(Archived {
            at: at.as_str().and_then(time::parse),
        });
    }
    (flag("codex") == Some(true) || flag("qwen") == Some(true)).then_some(Archived { at: None })
}

/// When a writer records `s` as archived: when it was, else its last update, else `fallback`.
pub fn archived_at(s: &Session, archived: Archived, fallback: Nanos) -> Nanos {
    archived
        .at
        .or_else(|| s.updated_at.as_deref().and_then(time::parse))
        .unwrap_or(fallback)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn session(meta: Value) -> Session {
        serde_json::from_value(json!({
            "id": "s", "title": "t", "updatedAt": "2026-11-02T10:00:00.000Z",
            "updates": {"digest": format!("sha256:{}", "0".repeat(64)), "size": 0},
            "_meta": meta,
        }))
        .unwrap()
    }

    #[test]
    fn every_readers_record_of_an_archive_says_it_is_archived() {
        let at = time::parse("2026-11-01T09:00:00.000Z");
        for (meta, want) in [
            (
                json!({"codex": {"archived": true}}),
                Some(Archived { at: None }),
            ),
            (
                json!({"qwen": {"archived": true}}),
                Some(Archived { at: None }),
            ),
            (
                json!({"opencode": {"archivedAt": "2026-11-01T09:00:00.000Z"}}),
                Some(Archived { at }),
            ),
            (json!({"codex": {"archived": false}}), None),
            (json!({"codex": {"archived": "yes"}}), None),
            (json!({"claudeCode": {"archived": true}}), None),
            (json!({}), None),
        ] {
            assert_eq!(archived(&session(meta.clone())), want, "{meta}");
        }
    }

    #[test]
    fn an_archive_without_its_time_is_dated_by_the_last_update() {
        let s = session(json!({"codex": {"archived": true}}));
        let a = archived(&s).unwrap();
        assert_eq!(
            Some(archived_at(&s, a, 0)),
            time::parse("2026-11-02T10:00:00.000Z")
        );
        let s = session(json!({"opencode": {"archivedAt": "2026-11-01T09:00:00.000Z"}}));
        let a = archived(&s).unwrap();
        assert_eq!(
            Some(archived_at(&s, a, 0)),
            time::parse("2026-11-01T09:00:00.000Z")
        );
    }
}
