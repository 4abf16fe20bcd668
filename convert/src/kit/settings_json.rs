//! `settings.json` of Gemini CLI and Qwen Code (a Gemini fork), and OpenCode's
//! `opencode.json(c)`: JSON with comments, read the way each harness reads it ([`Jsonc`]), and
//! written back only when it has none.
//!
//! These harnesses read the file with `//` and `/* */` comments allowed (OpenCode also trailing
//! commas); asp reads such a file too ([`crate::kit::jsonc`]), but never rewrites one (the
//! comments would be lost): [`write_merged`] refuses instead.
//! What each harness keeps in it (its session options, its `mcpServers` transport rules) is
//! the converter's; the MCP entry mapping the two share is [`super::mcp_json`].

use std::io;
use std::path::{Path, PathBuf};

use asp_format::answer::ImportAnswer;
use asp_format::kind::StateKind;
use serde_json::{Map, Value};

use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::fsops::Writer;
use crate::kit::jsonc::{Jsonc, parse};
use crate::kit::placement::{Placement, Tally};

/// Why settings.json cannot be used: the file, where in it (1-based line and column, when it
/// does not parse), and what is wrong.
#[derive(Debug)]
pub struct Unusable {
    pub path: PathBuf,
    pub line: Option<u64>,
    pub column: Option<u64>,
    pub why: String,
}

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, ":{l}:{c}")?;
        }
        write!(f, ": {}", self.why)
    }
}

impl From<Unusable> for ConvertError {
    fn from(u: Unusable) -> Self {
        let message = match (u.line, u.column) {
            (Some(l), Some(c)) => format!("line {l} column {c}: {}", u.why),
            _ => u.why,
        };
        ConvertError::invalid(u.path, message)
    }
}

/// settings.json as read: the document and whether it had comments (or trailing commas),
/// which rewriting it would lose.
#[derive(Debug, Clone)]
pub struct File {
    pub path: PathBuf,
    pub doc: Map<String, Value>,
    pub has_comments: bool,
    /// Whether the file was there (a missing one is read as an empty document).
    pub existed: bool,
    trailing_newline: bool,
}

impl File {
    /// Reads settings.json; a missing file is an empty document. A file that is not a JSON
    /// object (even without comments) is an error, as it is for the CLI.
    pub fn load(path: &Path) -> Result<File, Unusable> {
        File::load_as(path, Jsonc::Comments)
    }

    /// Reads a JSONC file as `dialect` allows; a missing file is an empty document.
    pub fn load_as(path: &Path, dialect: Jsonc) -> Result<File, Unusable> {
        let unusable = |line: Option<u64>, column: Option<u64>, why: String| Unusable {
            path: path.to_path_buf(),
            line,
            column,
            why,
        };
        let text = match crate::kit::fsops::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(File {
                    path: path.to_path_buf(),
                    doc: Map::new(),
                    has_comments: false,
                    existed: false,
                    trailing_newline: true,
                });
            }
            Err(e) => return Err(unusable(None, None, format!("cannot be read ({e})"))),
        };
        let parsed = if text.trim().is_empty() {
            Ok((Value::Object(Map::new()), false))
        } else {
            parse(&text, dialect)
        };
        match parsed {
            Ok((Value::Object(doc), has_comments)) => Ok(File {
                path: path.to_path_buf(),
                doc,
                has_comments,
                existed: true,
                trailing_newline: text.ends_with('\n'),
            }),
            Ok(_) => Err(unusable(None, None, "is not a JSON object".to_owned())),
            // Comments are blanked line for line, so the position is the file's own.
            Err(e) => Err(unusable(
                Some(e.line() as u64),
                Some(e.column() as u64),
                format!("is not JSON ({})", strip_position(&e.to_string())),
            )),
        }
    }

    /// The value at `/a/b` (a JSON pointer without escapes), if any.
    pub fn get(&self, pointer: &str) -> Option<&Value> {
        let mut parts = pointer.trim_start_matches('/').split('/');
        let mut cur = self.doc.get(parts.next()?)?;
        for p in parts {
            cur = cur.get(p)?;
        }
        Some(cur)
    }
}

/// A serde_json message without its trailing ` at line L column C` (reported on its own).
fn strip_position(message: &str) -> &str {
    message
        .rsplit_once(" at line ")
        .map_or(message, |(head, _)| head)
}

impl File {
    /// Sets `/a/b` to `value`, creating objects on the way; whether it changed.
    pub fn set(&mut self, path: &[&str], value: Value) -> bool {
        let (last, parents) = path.split_last().expect("a non-empty path");
        let mut cur = &mut self.doc;
        for p in parents {
            let v = cur
                .entry(p.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !v.is_object() {
                *v = Value::Object(Map::new());
            }
            cur = v.as_object_mut().expect("made an object");
        }
        if cur.get(*last) == Some(&value) {
            return false;
        }
        cur.insert(last.to_string(), value);
        true
    }

    /// Writes the document back as `JSON.stringify(…, null, 2)`, keeping whether the file
    /// ended in a newline.
    pub fn save(&self, writer: &Writer) -> Result<(), ConvertError> {
        let mut text =
            serde_json::to_string_pretty(&Value::Object(self.doc.clone())).expect("serialises");
        if self.trailing_newline {
            text.push('\n');
        }
        writer.replace(&self.path, text.as_bytes())
    }
}

/// The settings of `doc` no session option carries: its top-level keys but those `carried`
/// names, and of a key `carried` names as `parent.member`, the parent's other members (as
/// `parent.other`). In the file's order.
pub fn own_keys(doc: &Map<String, Value>, carried: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    for (k, v) in doc {
        if carried.contains(&k.as_str()) {
            continue;
        }
        let members: Vec<&str> = carried
            .iter()
            .filter_map(|c| c.strip_prefix(k.as_str())?.strip_prefix('.'))
            .collect();
        match v.as_object() {
            Some(o) if !members.is_empty() => out.extend(
                o.keys()
                    .filter(|m| !members.contains(&m.as_str()))
                    .map(|m| format!("{k}.{m}")),
            ),
            _ => out.push(k.clone()),
        }
    }
    out
}

/// Says the settings of `path` that configure `harness` itself, not a session (`keys`, from
/// [`own_keys`]): a pack carries the model and the mode and leaves the theme, the providers,
/// the UI and the like, which is left out by design and said as such (without it, Copilot
/// CLI, Pi, Qwen Code, Gemini CLI and Codex dropped them with no word: new-user trial
/// helper-131, 6). Nothing when `keys` is empty.
pub fn report_own_settings(
    diagnostics: &crate::kit::report::Diagnostics,
    path: &Path,
    harness: &str,
    keys: &[String],
) {
    if keys.is_empty() {
        return;
    }
    diagnostics.left_out(
        path,
        None,
        format!(
            "these settings configure {harness} itself, not a session, and are not carried as \
             session options: {}",
            keys.join(", ")
        ),
    );
}

/// Reports why a settings file that cannot be read gives neither MCP servers nor settings,
/// when either was asked for: "none" would be a claim the file does not make.
pub fn report_unreadable(e: &Unusable, ctx: &ReadContext<'_>) {
    if ctx.kinds.contains(StateKind::Tools) || ctx.kinds.contains(StateKind::Settings) {
        let at = e
            .column
            .map(|c| format!("column {c}: "))
            .unwrap_or_default();
        ctx.diagnostics.lost(
            &e.path,
            e.line,
            format!(
                "{at}{}; its MCP servers (tools) and settings were not read, and are \
                 left out rather than given as none",
                e.why
            ),
        );
    }
}

/// What merging one kind into the file came to: a placement per item, and refusals beside them.
#[derive(Debug, Default)]
pub struct Merged {
    pub placed: Vec<Placement>,
    pub notes: Vec<String>,
}

/// MCP servers and settings, merged into `path` in one write. A file asp cannot read, or one
/// with comments that rewriting would lose, is left as it is and both kinds refused.
/// `tools` and `settings` merge the carried items into the document (in memory) and say
/// whether it changed.
pub fn write_merged(
    path: &Path,
    ctx: &WriteContext<'_>,
    answer: &mut ImportAnswer,
    tools: impl FnOnce(&mut File, &mut Merged) -> bool,
    settings: impl FnOnce(&mut File, &mut Merged) -> bool,
) -> Result<(), ConvertError> {
    write_merged_as(path, Jsonc::Comments, ctx, answer, tools, settings)
}

/// [`write_merged`] for a file read as `dialect` allows.
pub fn write_merged_as(
    path: &Path,
    dialect: Jsonc,
    ctx: &WriteContext<'_>,
    answer: &mut ImportAnswer,
    tools: impl FnOnce(&mut File, &mut Merged) -> bool,
    settings: impl FnOnce(&mut File, &mut Merged) -> bool,
) -> Result<(), ConvertError> {
    let state = ctx.state;
    if state.tools.is_none() && state.settings.is_none() {
        return Ok(());
    }
    let refuse_both = |answer: &mut ImportAnswer, why: String| {
        if state.tools.is_some() {
            answer.refuse(StateKind::Tools, why.clone());
        }
        if state.settings.is_some() {
            answer.refuse(StateKind::Settings, why);
        }
    };
    let mut file = match File::load_as(path, dialect) {
        Ok(f) => f,
        Err(e) => {
            refuse_both(
                answer,
                format!("{e}; asp does not edit a settings file it cannot read"),
            );
            return Ok(());
        }
    };
    let (mut servers, mut values) = (Merged::default(), Merged::default());
    let mut changed = false;
    // The servers added to a file that was there are said by name: an entry's second-level
    // key, under `mcpServers` (Gemini CLI, Qwen Code) or `mcp` (OpenCode).
    let mut servers_added = Vec::new();
    if state.tools.is_some() {
        let before = file.existed.then(|| file.doc.clone());
        changed |= tools(&mut file, &mut servers);
        if let Some(before) = before {
            servers_added = new_entries(&before, &file.doc);
        }
    }
    // What the settings add to a file that was there is said ([`Tally::wrote_into_json`]).
    let before = (state.settings.is_some() && file.existed).then(|| file.doc.clone());
    if state.settings.is_some() {
        changed |= settings(&mut file, &mut values);
    }
    if changed && file.has_comments {
        refuse_both(
            answer,
            format!(
                "{} has comments (or trailing commas), which rewriting it would lose; add the \
                 carried entries by hand",
                path.display()
            ),
        );
        return Ok(());
    }
    for (kind, given, merged) in [
        (
            StateKind::Tools,
            state.tools.as_ref().map(Vec::len),
            servers,
        ),
        (
            StateKind::Settings,
            state.settings.as_ref().map(|s| s.len()),
            values,
        ),
    ] {
        let Some(given) = given else {
            continue;
        };
        let mut tally = Tally::new(answer, kind, given);
        for p in merged.placed {
            tally.place(p);
        }
        for n in merged.notes {
            tally.refuse(n);
        }
        if let (StateKind::Settings, Some(before)) = (kind, &before) {
            tally.wrote_into_json(path, before, &file.doc, ctx.writer.is_dry_run());
        }
        if kind == StateKind::Tools {
            tally.servers_into(path, &servers_added, ctx.writer.is_dry_run());
        }
        tally.finish();
    }
    if changed {
        file.save(ctx.writer)?;
    }
    Ok(())
}

/// The keys of `after`'s objects that the same object of `before` does not have, one level
/// down (`{"mcpServers": {"new": …}}` gives `new`), in the order `after` holds them.
fn new_entries(before: &Map<String, Value>, after: &Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    for (key, value) in after {
        let Some(now) = value.as_object() else {
            continue;
        };
        let was = before.get(key).and_then(Value::as_object);
        out.extend(
            now.keys()
                .filter(|k| !was.is_some_and(|w| w.contains_key(*k)))
                .cloned(),
        );
    }
    out
}

/// Writes `o`, a settings file [`load_object`] read (`existed`: it was there) and the carried
/// values merged into it, when it differs from `before`: pretty-printed, a new file ending in a
/// newline. What was added to a file that was there is said ([`Tally::wrote_into_json`]).
pub fn save_object(
    path: &Path,
    existed: bool,
    before: &Map<String, Value>,
    o: Map<String, Value>,
    ctx: &WriteContext<'_>,
    tally: &mut Tally<'_>,
) -> Result<(), ConvertError> {
    if o == *before {
        return Ok(());
    }
    if existed {
        tally.wrote_into_json(path, before, &o, ctx.writer.is_dry_run());
    }
    let mut bytes = serde_json::to_vec_pretty(&Value::Object(o)).expect("serialises");
    if existed {
        ctx.writer.replace(path, &bytes)
    } else {
        bytes.push(b'\n');
        ctx.writer.create_new(path, &bytes, false).map(drop)
    }
}

/// A strict-JSON settings file as an object (Pi's and Copilot CLI's `settings.json`);
/// `Ok(None)` when there is none, else why it cannot be used, naming the file and the line.
pub fn load_object(path: &Path) -> Result<Option<Map<String, Value>>, String> {
    let bytes = match crate::kit::fsops::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{} cannot be read ({e})", path.display())),
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(o)) => Ok(Some(o)),
        Ok(_) => Err(format!("{} is not a JSON object", path.display())),
        Err(e) => Err(format!(
            "{} is not JSON (line {}, column {}: {e})",
            path.display(),
            e.line(),
            e.column()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_keys_are_the_top_level_keys_not_carried_and_the_members_beside_a_carried_one() {
        let doc: Map<String, Value> = serde_json::from_str(
            r#"{"ui": {"theme": "dark"}, "model": {"name": "m", "maxTokens": 9},
                "mcpServers": {}, "tools": {"approvalMode": "plan"}, "general": 1}"#,
        )
        .unwrap();
        assert_eq!(
            own_keys(
                &doc,
                &[
                    "mcpServers",
                    "model.name",
                    "tools.approvalMode",
                    "general.x"
                ]
            ),
            ["ui", "model.maxTokens", "general"]
        );
    }
    use serde_json::json;
    use std::fs;

    #[test]
    fn trailing_commas_are_read_only_where_the_harness_allows_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("opencode.jsonc");
        fs::write(
            &path,
            "{\n  \"a\": [1, \",]\",],\n  \"b\": {\"c\": 2,},\n}\n",
        )
        .unwrap();
        assert!(
            File::load(&path).is_err(),
            "Gemini's reader takes no trailing comma"
        );
        let f = File::load_as(&path, Jsonc::CommentsAndTrailingCommas).unwrap();
        assert_eq!(
            Value::Object(f.doc.clone()),
            json!({"a": [1, ",]"], "b": {"c": 2}})
        );
        assert!(f.has_comments, "so it is never rewritten");
        fs::write(&path, "{\"a\": 1}").unwrap();
        let f = File::load_as(&path, Jsonc::CommentsAndTrailingCommas).unwrap();
        assert!(!f.has_comments);
    }

    #[test]
    fn a_file_that_is_not_json_says_where() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        fs::write(
            &path,
            "{\n  /* a\n  comment */ \"model\": {\"name\": \"x\",}\n}\n",
        )
        .unwrap();
        let e = File::load(&path).unwrap_err();
        assert_eq!(
            (e.line, e.column),
            (Some(3), Some(36)),
            "the `}}` after the comma"
        );
        assert!(
            e.why.starts_with("is not JSON (trailing comma"),
            "{}",
            e.why
        );
        assert!(!e.why.contains(" at line "), "{}", e.why);
    }
}
