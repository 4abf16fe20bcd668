//! What the per-project parts of `.claude.json` share ([`super::local_mcp`],
//! [`super::project_settings`]): a part is `{"projects": {"<path>": {…}}}`, taken from
//! `projects` project by project, and merged back into each project's entry, the rest of the
//! file untouched, written once.

use serde_json::{Map, Value, json};

use super::jsonfile;
use super::layout::Layout;
use crate::error::ConvertError;
use crate::kit::fsops::Writer;
use crate::kit::pathmap::PathMap;
use crate::kit::placement::Placement;

/// The part, pretty JSON: each project for which `take` gives something; `None` when none
/// does (or `.claude.json` cannot be read: the `tools` read reports that).
pub fn extract(layout: &Layout, take: impl Fn(&Value) -> Option<Value>) -> Option<Vec<u8>> {
    let file = jsonfile::read(&layout.global).ok()?;
    let projects: Map<String, Value> = file
        .object
        .get("projects")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(path, p)| Some((path.clone(), take(p)?)))
        .collect();
    if projects.is_empty() {
        return None;
    }
    let mut bytes =
        serde_json::to_vec_pretty(&json!({ "projects": projects })).expect("JSON serialises");
    bytes.push(b'\n');
    Some(bytes)
}

/// One project of a part being merged: where it goes, what the part has for it, and its entry
/// in the file (`None` when that entry is not an object, which is the user's and kept).
pub struct Project<'a> {
    /// The project's path, `--map-path` applied.
    pub path: String,
    pub wanted: &'a Value,
    pub entry: Option<&'a mut Map<String, Value>>,
}

/// Places one item of a part: `value`, its paths mapped, under `key` in `slot` (the object of
/// the project's entry it belongs in; `None` when that is not an object, which `not_object`
/// says, and it is kept as it is). A different value already there is the user's and stays
/// (`differs` says so).
pub fn place(
    slot: Option<&mut Map<String, Value>>,
    key: &str,
    value: &Value,
    path_map: &PathMap,
    not_object: impl FnOnce() -> String,
    differs: impl FnOnce() -> String,
) -> Placement {
    let Some(slot) = slot else {
        return Placement::Refused(not_object());
    };
    let mut value = value.clone();
    path_map.map_json(&mut value);
    jsonfile::place(slot, key, value, differs)
}

/// Merges the part `name` (`bytes`) into `.claude.json`: `merge_one` places what the part has
/// for each project into its entry (made when missing) and says how each item went. Every
/// other key of the file stays as it is; the file is written once, atomically, when something
/// was placed (a missing file is created). A file that cannot be read or whose `projects` is
/// not an object is left alone: the whole part is refused, saying `what` was not restored.
pub fn merge(
    layout: &Layout,
    name: &str,
    what: &str,
    bytes: &[u8],
    path_map: &PathMap,
    writer: &Writer,
    mut merge_one: impl FnMut(Project<'_>, &mut Vec<(String, Placement)>),
) -> Result<Vec<(String, Placement)>, ConvertError> {
    let part: Value = serde_json::from_slice(bytes)
        .map_err(|e| ConvertError::invalid(name, format!("not valid JSON: {e}")))?;
    let Some(wanted) = part.get("projects").and_then(Value::as_object) else {
        return Err(ConvertError::invalid(name, "has no `projects` object"));
    };
    let refuse_all = |why: String| {
        Ok(vec![(
            name.to_owned(),
            Placement::Refused(format!("{why}; {what} not restored")),
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
        return refuse_all(format!(
            "`projects` in {} is not an object",
            layout.global.display()
        ));
    };
    let mut out = Vec::new();
    for (path, wanted) in wanted {
        let path = path_map.map_path(path).unwrap_or_else(|| path.clone());
        let entry = projects
            .entry(path.clone())
            .or_insert_with(|| json!({}))
            .as_object_mut();
        merge_one(
            Project {
                path,
                wanted,
                entry,
            },
            &mut out,
        );
    }
    jsonfile::write_placed(writer, &layout.global, &file, &out)?;
    Ok(out)
}
