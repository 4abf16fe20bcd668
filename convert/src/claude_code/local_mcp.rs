//! Local-scope MCP servers (`projects["<path>"].mcpServers` in `.claude.json`), kept by a
//! backup as a part of `.claude.json` and merged back into the same harness.
//!
//! `.claude.json` cannot be kept whole: it also holds the account (`oauthAccount`, `userID`)
//! and caches. The `tools` kind carries only the user-scope servers (ACP's `McpServer` has no
//! project), so the per-project ones travel as this part: `{"projects": {"<path>":
//! {"mcpServers": {...}}}}`, only projects that have servers, entries exactly as Claude Code
//! wrote them (env values included, as the user-scope servers in `tools` are; `${VAR}`
//! references stay references).

use serde_json::{Map, Value, json};

use super::jsonfile;
use super::layout::Layout;
use crate::error::ConvertError;
use crate::kit::fsops::Writer;
use crate::kit::pathmap::PathMap;
use crate::kit::placement::Placement;

/// The part's name in a backup's configuration.
pub const PART: &str = ".claude.json#projects.mcpServers";

/// The part, pretty JSON; `None` when no project has a server (or `.claude.json` cannot be
/// read: the `tools` read reports that).
pub fn extract(layout: &Layout) -> Option<Vec<u8>> {
    let file = jsonfile::read(&layout.global).ok()?;
    let mut projects = Map::new();
    for (path, p) in file
        .object
        .get("projects")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        if let Some(servers) = p.get("mcpServers").and_then(Value::as_object)
            && !servers.is_empty()
        {
            projects.insert(path.clone(), json!({ "mcpServers": servers }));
        }
    }
    if projects.is_empty() {
        return None;
    }
    let mut bytes =
        serde_json::to_vec_pretty(&json!({ "projects": projects })).expect("JSON serialises");
    bytes.push(b'\n');
    Some(bytes)
}

/// Adds every server of the part that its project does not have; one there with the same
/// entry is already there, one there configured differently is the user's and is kept. Every
/// other key of `.claude.json` stays as it is; the file is written once, atomically, when
/// something was added.
pub fn merge(
    layout: &Layout,
    bytes: &[u8],
    path_map: &PathMap,
    writer: &Writer,
) -> Result<Vec<(String, Placement)>, ConvertError> {
    let part: Value = serde_json::from_slice(bytes)
        .map_err(|e| ConvertError::invalid(PART, format!("not valid JSON: {e}")))?;
    let Some(wanted) = part.get("projects").and_then(Value::as_object) else {
        return Err(ConvertError::invalid(PART, "has no `projects` object"));
    };
    let global = layout.global.display().to_string();
    let refuse_all = |why: String| {
        Ok(vec![(
            PART.to_owned(),
            Placement::Refused(format!("{why}; local-scope MCP servers not restored")),
        )])
    };
    let mut file = match jsonfile::read(&layout.global) {
        Ok(f) => f,
        Err(e) => return refuse_all(e.0),
    };
    let Some(projects) = file
        .object
        .entry("projects")
        .or_insert_with(|| json!({}))
        .as_object_mut()
    else {
        return refuse_all(format!("`projects` in {global} is not an object"));
    };
    let mut out = Vec::new();
    for (project, entry) in wanted {
        let project = path_map
            .map_path(project)
            .unwrap_or_else(|| project.clone());
        let servers = entry.get("mcpServers").and_then(Value::as_object);
        let slot = projects
            .entry(project.clone())
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .and_then(|p| {
                p.entry("mcpServers")
                    .or_insert_with(|| json!({}))
                    .as_object_mut()
            });
        let mut slot = slot;
        for (name, server) in servers.into_iter().flatten() {
            let label = format!("MCP server {name:?} of the project {project}");
            let Some(slot) = slot.as_deref_mut() else {
                out.push((
                    label,
                    Placement::Refused(format!(
                        "the project's entry in {global} is not an object with an `mcpServers` object; kept as it is"
                    )),
                ));
                continue;
            };
            let mut server = server.clone();
            path_map.map_json(&mut server);
            let placed = jsonfile::place(slot, name, server, || {
                format!("configured differently in {global}; kept yours")
            });
            out.push((label, placed));
        }
    }
    jsonfile::write_placed(writer, &layout.global, &file, &out)?;
    Ok(out)
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
