//! Local-scope MCP servers (`projects["<path>"].mcpServers` in `.claude.json`), kept by a
//! backup as a part of `.claude.json` and merged back into the same harness.
//!
//! `.claude.json` cannot be kept whole: it also holds the account (`oauthAccount`, `userID`)
//! and caches. The `tools` kind carries only the user-scope servers (ACP's `McpServer` has no
//! project), so the per-project ones travel as this part: `{"projects": {"<path>":
//! {"mcpServers": {...}}}}`, only projects that have servers, entries exactly as Claude Code
//! wrote them (env values included, as the user-scope servers in `tools` are; `${VAR}`
//! references stay references).

use serde_json::{Value, json};

use super::layout::Layout;
use super::projects_part;
use crate::error::ConvertError;
use crate::kit::fsops::Writer;
use crate::kit::pathmap::PathMap;
use crate::kit::placement::Placement;

/// The part's name in a backup's configuration.
pub const PART: &str = ".claude.json#projects.mcpServers";

/// The part, pretty JSON; `None` when no project has a server (or `.claude.json` cannot be
/// read: the `tools` read reports that).
pub fn extract(layout: &Layout) -> Option<Vec<u8>> {
    projects_part::extract(layout, |p| {
        let servers = p.get("mcpServers").and_then(Value::as_object)?;
        (!servers.is_empty()).then(|| json!({ "mcpServers": servers }))
    })
}

/// Adds every server of the part that its project does not have; one there with the same
/// entry is already there, one there configured differently is the user's and is kept. Every
/// other key of `.claude.json` stays as it is ([`projects_part::merge`]).
pub fn merge(
    layout: &Layout,
    bytes: &[u8],
    path_map: &PathMap,
    writer: &Writer,
) -> Result<Vec<(String, Placement)>, ConvertError> {
    let global = layout.global.display().to_string();
    projects_part::merge(
        layout,
        PART,
        "local-scope MCP servers",
        bytes,
        path_map,
        writer,
        |project, out| {
            let servers = project.wanted.get("mcpServers").and_then(Value::as_object);
            let mut slot = project.entry.and_then(|p| {
                p.entry("mcpServers")
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
            });
            for (name, server) in servers.into_iter().flatten() {
                let label = format!("MCP server {name:?} of the project {}", project.path);
                let placed = projects_part::place(
                    slot.as_deref_mut(),
                    name,
                    server,
                    path_map,
                    || {
                        format!(
                            "the project's entry in {global} is not an object with an `mcpServers` object; kept as it is"
                        )
                    },
                    || format!("configured differently in {global}; kept yours"),
                );
                out.push((label, placed));
            }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_local_servers_are_extracted_and_merging_keeps_what_is_there() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::with_config_dir(dir.path(), None);
        std::fs::write(
            &layout.global,
            r#"{"userID": "u", "oauthAccount": {"emailAddress": "a@b"}, "mcpServers": {"g": {"command": "g"}},
                "projects": {"/w/a": {"allowedTools": [], "mcpServers": {"x": {"command": "x", "args": ["/w/a/s.js"]}}},
                             "/w/b": {"mcpServers": {}}}}"#,
        )
        .unwrap();
        let part = extract(&layout).unwrap();
        let v: Value = serde_json::from_slice(&part).unwrap();
        assert_eq!(
            v,
            json!({"projects": {"/w/a": {"mcpServers": {"x": {"command": "x", "args": ["/w/a/s.js"]}}}}})
        );
        assert!(!String::from_utf8_lossy(&part).contains("oauthAccount"));

        // Into another home, with the project moved; a server of the same name configured
        // differently stays the user's.
        let other = tempfile::tempdir().unwrap();
        let to = Layout::with_config_dir(other.path(), None);
        std::fs::write(
            &to.global,
            r#"{"userID": "v", "projects": {"/n/a": {"mcpServers": {"y": {"command": "mine"}}}}}"#,
        )
        .unwrap();
        let map: PathMap = "/w=/n".parse().unwrap();
        let placed = merge(&to, &part, &map, &Writer::new(false)).unwrap();
        assert_eq!(placed.len(), 1);
        assert_eq!(placed[0].1, Placement::New);
        let after: Value = serde_json::from_slice(&std::fs::read(&to.global).unwrap()).unwrap();
        assert_eq!(after["userID"], "v");
        assert_eq!(
            after["projects"]["/n/a"]["mcpServers"]["y"]["command"],
            "mine"
        );
        assert_eq!(
            after["projects"]["/n/a"]["mcpServers"]["x"]["args"],
            json!(["/n/a/s.js"])
        );
        let again = merge(&to, &part, &map, &Writer::new(false)).unwrap();
        assert_eq!(again[0].1, Placement::AlreadyThere);
        let mut changed: Value = serde_json::from_slice(&part).unwrap();
        changed["projects"]["/w/a"]["mcpServers"]["x"]["command"] = json!("other");
        let bytes = serde_json::to_vec(&changed).unwrap();
        let refused = merge(&to, &bytes, &map, &Writer::new(false)).unwrap();
        assert!(matches!(refused[0].1, Placement::Refused(_)));
    }
}
