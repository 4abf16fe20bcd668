//! The person's decisions about each project in `.claude.json` (`projects["<path>"]`: the
//! tools allowed without asking, the trust dialog accepted, the project's `.mcp.json` servers
//! approved or refused), kept by a backup as a part of `.claude.json` and merged back into the
//! same harness.
//!
//! `.claude.json` cannot be kept whole (the account, caches), and a project's entry holds
//! counters and the last session's costs beside these decisions. Without them a restored
//! home asks again whether to trust each folder and for every tool that was allowed. The part
//! is an allowlist ([`KEYS`]), as the preferences are ([`super::preferences`]).

use serde_json::{Map, Value};

use super::layout::Layout;
use super::projects_part;
use crate::error::ConvertError;
use crate::kit::fsops::Writer;
use crate::kit::pathmap::PathMap;
use crate::kit::placement::{Grants, Placement};

/// The part's name in a backup's configuration.
pub const PART: &str = ".claude.json#projects.settings";

/// The keys kept: Claude Code's `PROJECT_CONFIG_KEYS` (what `claude config set` sets for a
/// project; its `cli.js`, 2.1.83) and the approvals of the project's `.mcp.json` servers,
/// which its dialog records beside them. Not kept: `mcpServers` (the local-scope servers, a
/// part of their own, [`super::local_mcp`]), the counters and the last session's figures
/// (`projectOnboardingSeenCount`, `lastCost`, `lastSessionId`, ...).
pub const KEYS: &[&str] = &[
    "allowedTools",
    "hasTrustDialogAccepted",
    "hasCompletedProjectOnboarding",
    "enabledMcpjsonServers",
    "disabledMcpjsonServers",
];

/// What Claude Code writes into a new project's entry: a key holding it decides nothing, so
/// the part leaves it out and a merge sets the backup's value over it.
fn is_default(value: &Value) -> bool {
    matches!(value, Value::Bool(false) | Value::Null) || value.as_array().is_some_and(Vec::is_empty)
}

/// What setting `key` to `value` grants in the project at `path`, said for its owner: trust
/// and permissions go by the folder's path, and whatever sits there on this machine gets
/// them (spec/harnesses/claude-code.md, "project settings").
fn granted(key: &str, value: &Value, path: &str) -> Option<String> {
    let list = || {
        value
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|v| v.as_str().map_or_else(|| v.to_string(), str::to_owned))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    match key {
        "hasTrustDialogAccepted" if value == &Value::Bool(true) => Some(format!(
            "the folder {path} is trusted (Claude Code asks no more)"
        )),
        "allowedTools" => Some(format!(
            "Claude Code runs {} in {path} without asking",
            list()
        )),
        "enabledMcpjsonServers" => Some(format!(
            "the .mcp.json servers {} of {path} are approved",
            list()
        )),
        _ => None,
    }
}

/// The part, pretty JSON: `{"projects": {"<path>": {<kept keys>}}}`, only the keys that hold a
/// decision and the projects that have one; `None` when none does.
pub fn extract(layout: &Layout) -> Option<Vec<u8>> {
    projects_part::extract(layout, |p| {
        let kept: Map<String, Value> = p
            .as_object()?
            .iter()
            .filter(|(k, v)| KEYS.contains(&k.as_str()) && !is_default(v))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        (!kept.is_empty()).then_some(Value::Object(kept))
    })
}

/// Sets each kept key of each project that the project's entry does not set (or sets to
/// Claude Code's default); the same value is already there, a different one is the user's on
/// this machine and is kept. A key outside [`KEYS`] (a tampered part) is refused. Every other
/// key stays as it is ([`projects_part::merge`]). `--map-path` rewrites the project paths, and
/// a value that is a path; a path inside a permission rule (an allowed
/// `Read(/home/me/app/**)`) stays as written.
pub fn merge(
    layout: &Layout,
    bytes: &[u8],
    path_map: &PathMap,
    grants: Grants,
    writer: &Writer,
) -> Result<Vec<(String, Placement)>, ConvertError> {
    let global = layout.global.display().to_string();
    projects_part::merge(
        layout,
        PART,
        "project settings",
        bytes,
        path_map,
        writer,
        |mut project, out| {
            for (key, value) in project.wanted.as_object().into_iter().flatten() {
                let label = format!("Claude Code setting {key} of the project {}", project.path);
                if !KEYS.contains(&key.as_str()) {
                    out.push((
                        label,
                        Placement::Refused("not a project setting a backup keeps".to_owned()),
                    ));
                    continue;
                }
                let grant = granted(key, value, &project.path);
                if let (Grants::Leave, Some(what)) = (grants, &grant) {
                    out.push((
                        label,
                        Placement::Refused(format!("not granted (--no-grants): {what}")),
                    ));
                    continue;
                }
                let mut entry = project.entry.as_deref_mut();
                if let Some(e) = entry.as_deref_mut()
                    && e.get(key).is_some_and(is_default)
                {
                    e.remove(key);
                }
                let placed = projects_part::place(
                    entry,
                    key,
                    value,
                    path_map,
                    || format!("the project's entry in {global} is not an object; kept as it is"),
                    || format!("set differently in {global}; kept yours"),
                );
                let placed = match (placed, grant) {
                    (Placement::New, Some(what)) => Placement::Granted(what),
                    (p, _) => p,
                };
                out.push((label, placed));
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_decisions_are_kept_and_merging_keeps_what_the_user_decided_there() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::with_config_dir(dir.path(), None);
        std::fs::write(
            &layout.global,
            r#"{"oauthAccount": {"emailAddress": "a@b"},
                "projects": {
                  "/w/a": {"allowedTools": ["Bash(npm test:*)", "Read(/w/a/**)"],
                           "hasTrustDialogAccepted": true, "lastCost": 1.5,
                           "projectOnboardingSeenCount": 3, "enabledMcpjsonServers": [],
                           "mcpServers": {"x": {"command": "x"}}},
                  "/w/b": {"allowedTools": [], "hasTrustDialogAccepted": false, "lastCost": 0}}}"#,
        )
        .unwrap();
        let part = extract(&layout).unwrap();
        let v: Value = serde_json::from_slice(&part).unwrap();
        assert_eq!(
            v,
            json!({"projects": {"/w/a": {"allowedTools": ["Bash(npm test:*)", "Read(/w/a/**)"],
                                         "hasTrustDialogAccepted": true}}})
        );

        // Into a machine where the project is elsewhere and Claude Code made its entry with
        // its defaults: the defaults give way, the rest of the entry stays.
        let other = tempfile::tempdir().unwrap();
        let to = Layout::with_config_dir(other.path(), None);
        std::fs::write(
            &to.global,
            r#"{"userID": "v", "projects": {"/x/a": {"allowedTools": [], "hasTrustDialogAccepted": false, "lastCost": 2}}}"#,
        )
        .unwrap();
        let mut map = PathMap::default();
        map.add("/w/a=/x/a").unwrap();
        let placed = merge(&to, &part, &map, Grants::Carry, &Writer::new(false)).unwrap();
        // What they grant here is said, at the path they now go by.
        let granted: Vec<&str> = placed
            .iter()
            .filter_map(|(_, p)| match p {
                Placement::Granted(what) => Some(what.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            granted,
            [
                "Claude Code runs Bash(npm test:*), Read(/w/a/**) in /x/a without asking",
                "the folder /x/a is trusted (Claude Code asks no more)",
            ],
            "{placed:?}"
        );
        assert_eq!(placed.len(), 2, "{placed:?}");
        let after: Value = serde_json::from_slice(&std::fs::read(&to.global).unwrap()).unwrap();
        assert_eq!(
            after,
            json!({"userID": "v", "projects": {"/x/a": {
                "allowedTools": ["Bash(npm test:*)", "Read(/w/a/**)"],
                "hasTrustDialogAccepted": true, "lastCost": 2}}})
        );
        let again = merge(&to, &part, &map, Grants::Carry, &Writer::new(false)).unwrap();
        assert!(again.iter().all(|(_, p)| *p == Placement::AlreadyThere));

        // Told to leave grants out (`asp restore --no-grants`): each is said, none written.
        let before = r#"{"userID": "v", "projects": {"/x/a": {"hasTrustDialogAccepted": false}}}"#;
        std::fs::write(&to.global, before).unwrap();
        let left = merge(&to, &part, &map, Grants::Leave, &Writer::new(false)).unwrap();
        assert_eq!(left.len(), 2, "{left:?}");
        assert!(
            left.iter().all(|(_, p)| matches!(p,
                Placement::Refused(why) if why.starts_with("not granted (--no-grants): "))),
            "{left:?}"
        );
        assert_eq!(std::fs::read_to_string(&to.global).unwrap(), before);

        // A decision made differently on this machine is kept; a tampered part cannot set
        // anything else.
        std::fs::write(
            &to.global,
            r#"{"projects": {"/x/a": {"allowedTools": ["Bash(make:*)"]}}}"#,
        )
        .unwrap();
        let placed = merge(&to, &part, &map, Grants::Carry, &Writer::new(false)).unwrap();
        assert!(
            placed
                .iter()
                .any(|(l, p)| l.contains("allowedTools") && matches!(p, Placement::Refused(_)))
        );
        let tampered = br#"{"projects": {"/x/a": {"mcpServers": {"evil": {"command": "sh"}}}}}"#;
        let refused = merge(&to, tampered, &map, Grants::Carry, &Writer::new(false)).unwrap();
        assert!(matches!(refused[0].1, Placement::Refused(_)));
        let after: Value = serde_json::from_slice(&std::fs::read(&to.global).unwrap()).unwrap();
        assert!(
            after["projects"]["/x/a"].get("mcpServers").is_none(),
            "{after}"
        );
    }
}
