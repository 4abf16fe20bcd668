//! OpenCode's global config files, `<config>/config.json`, `opencode.json` and
//! `opencode.jsonc` (spec §1, §9): JSON with comments and trailing commas, merged in that order,
//! each key of a later file over the same key of an earlier one, objects key by key [bin
//! `Config`: `mergeDeep`]. MCP servers ([`super::tools`]) and the model ([`super::settings`])
//! are read from the merged document and written into one file: the first of `opencode.jsonc`,
//! `opencode.json`, `config.json` that exists (the one OpenCode's own config edits go to), else
//! a new `opencode.json`; never into a file with comments (kit::settings_json).

use std::path::PathBuf;

use serde_json::{Map, Value};

use super::layout::Layout;
use crate::kit::jsonc::Jsonc;
use crate::kit::settings_json::{File, Unusable};

/// The global config as OpenCode merges it, and the files it came from.
#[derive(Debug)]
pub struct Global {
    /// Every file that exists, in merge order.
    pub files: Vec<File>,
    /// The merged document.
    pub merged: Map<String, Value>,
}

/// `b` merged into `a`: objects key by key, anything else replaced.
fn merge_deep(a: &mut Map<String, Value>, b: &Map<String, Value>) {
    for (k, v) in b {
        match (a.get_mut(k), v) {
            (Some(Value::Object(x)), Value::Object(y)) => merge_deep(x, y),
            _ => {
                a.insert(k.clone(), v.clone());
            }
        }
    }
}

impl Global {
    /// Reads every global config file there is; the first that cannot be read is the error.
    pub fn load(layout: &Layout) -> Result<Global, Unusable> {
        let mut files = Vec::new();
        let mut merged = Map::new();
        for path in layout.config_files() {
            // (In a dry run of a whole restore, the files its configuration would write too.)
            if !path.exists() && crate::kit::fsops::planned(&path).is_none() {
                continue;
            }
            let f = File::load_as(&path, Jsonc::CommentsAndTrailingCommas)?;
            merge_deep(&mut merged, &f.doc);
            files.push(f);
        }
        Ok(Global { files, merged })
    }

    /// The merged document as a file named after the one that wins (for reading); `None`
    /// when there is no global config file.
    pub fn as_file(&self) -> Option<File> {
        let mut f = self.files.last()?.clone();
        f.doc = self.merged.clone();
        Some(f)
    }

    /// What the files other than `written` set at `/section/key` when merged, and the last
    /// of them that sets it: a value asp would override by writing `written`.
    pub fn elsewhere(
        &self,
        written: &std::path::Path,
        section: &str,
        key: &str,
    ) -> Option<(PathBuf, Value)> {
        let mut merged = Map::new();
        let mut from = None;
        for f in self.files.iter().filter(|f| f.path != written) {
            if let Some(v) = f.doc.get(section).and_then(|s| s.get(key)) {
                let mut one = Map::new();
                one.insert(key.to_owned(), v.clone());
                merge_deep(&mut merged, &one);
                from = Some(f.path.clone());
            }
        }
        Some((from?, merged.remove(key)?))
    }

    /// What the files other than `written` set at top-level `key`, and the last that sets it.
    pub fn top_elsewhere(&self, written: &std::path::Path, key: &str) -> Option<(PathBuf, Value)> {
        self.files
            .iter()
            .rev()
            .filter(|f| f.path != written)
            .find_map(|f| Some((f.path.clone(), f.doc.get(key)?.clone())))
    }
}

/// The file asp writes into: the first of `opencode.jsonc`, `opencode.json`, `config.json`
/// that exists [bin: the global config update picks it so], else `opencode.json` (what
/// `opencode mcp add` makes).
pub fn target(layout: &Layout) -> PathBuf {
    let [config, json, jsonc] = layout.config_files();
    [jsonc, json.clone(), config]
        .into_iter()
        .find(|p| p.exists())
        .unwrap_or(json)
}
