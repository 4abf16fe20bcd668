//! The git branch a session was on, as the harness it came from kept it: what a writer puts
//! where its own harness keeps one (Claude Code's `gitBranch` on every row, Codex's
//! `session_meta.git.branch` and its index's `git_branch`, Qwen Code's `gitBranch` on every
//! record, Copilot CLI's `workspace.yaml` `branch` and `session.start` `context.branch`), so
//! a session carried from one to another keeps showing its branch in the resume picker.
//!
//! Each reader keeps it under its own `_meta` namespace: Claude Code and Qwen Code
//! `gitBranch`, Copilot CLI `branch`, Codex `sessionMeta.git.branch` (its `session_meta`
//! line's payload). Gemini CLI, OpenCode and Pi keep none in their sessions.

use asp_format::state::Meta;
use serde_json::Value;

/// The branch the session's reader kept under `_meta` (the first namespace that has one, `asp`
/// passed over); `None` when none did, or it is no branch: empty (Claude Code writes `""`
/// outside git) or `HEAD` (Claude Code's word for a detached head, which Codex never writes as
/// a branch: its `collect_git_info` drops it).
pub fn source_branch(meta: Option<&Meta>) -> Option<&str> {
    meta?
        .iter()
        .filter(|(ns, _)| ns.as_str() != crate::kit::meta::ASP)
        .find_map(|(_, v)| {
            v.get("gitBranch")
                .or_else(|| v.get("branch"))
                .or_else(|| v.pointer("/sessionMeta/git/branch"))
                .and_then(Value::as_str)
                .filter(|b| !b.is_empty() && *b != "HEAD")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_readers_place_gives_the_branch_and_an_empty_one_gives_none() {
        let meta = |v: Value| v.as_object().unwrap().clone();
        for (m, branch) in [
            (json!({"claudeCode": {"gitBranch": "main"}}), Some("main")),
            (json!({"qwen": {"gitBranch": "feat/x"}}), Some("feat/x")),
            (json!({"copilot": {"branch": "oc2"}}), Some("oc2")),
            (
                json!({"codex": {"sessionMeta": {"git": {"branch": "dev", "commit_hash": "a"}}}}),
                Some("dev"),
            ),
            (json!({"claudeCode": {"gitBranch": ""}}), None),
            (json!({"claudeCode": {"gitBranch": "HEAD"}}), None),
            (
                json!({"asp": {"gitBranch": "no"}, "gemini": {"file": "x"}}),
                None,
            ),
        ] {
            assert_eq!(source_branch(Some(&meta(m.clone()))), branch, "{m}");
        }
        assert_eq!(source_branch(None), None);
    }
}
