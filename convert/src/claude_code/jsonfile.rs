//! Editing Claude Code's JSON files (`.claude.json`, `settings.json`) without disturbing them.
//!
//! Claude Code writes these with `JSON.stringify(value, null, 2)`; serde_json's pretty printer
//! gives the same text for the same value, and object keys keep their order (the workspace
//! builds serde_json with `preserve_order`), so keys this converter does not touch come back
//! byte for byte and new keys go at the end.

use std::io;
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::ConvertError;
use crate::kit::fsops::{Created, Mode, Writer};

/// A JSON object file as read.
#[derive(Debug, Clone, PartialEq)]
pub struct ObjectFile {
    pub object: Map<String, Value>,
    /// Whether the file existed.
    pub existed: bool,
    /// Whether its text ended with a newline (kept as it was).
    pub trailing_newline: bool,
}

/// Why a file cannot be edited safely.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct NotEditable(pub String);

/// Reads `path` as a JSON object; a missing file is an empty object.
pub fn read(path: &Path) -> Result<ObjectFile, NotEditable> {
    let bytes = match crate::kit::fsops::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Ok(ObjectFile {
                object: Map::new(),
                existed: false,
                trailing_newline: false,
            });
        }
        Err(e) => {
            return Err(NotEditable(format!(
                "{} cannot be read: {e}",
                path.display()
            )));
        }
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(ObjectFile {
            object: Map::new(),
            existed: true,
            trailing_newline: bytes.ends_with(b"\n"),
        });
    }
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(object)) => Ok(ObjectFile {
            object,
            existed: true,
            trailing_newline: bytes.ends_with(b"\n"),
        }),
        Ok(_) => Err(NotEditable(format!(
            "{} does not hold a JSON object; left as it is",
            path.display()
        ))),
        Err(e) => Err(NotEditable(format!(
            "{} is not valid JSON ({e}); left as it is",
            path.display()
        ))),
    }
}

/// Places `value` under `key` of `object` for a restore: set where absent (`New`), already
/// there when equal, and else the user's, kept (`Refused` with `differs`).
pub fn place(
    object: &mut Map<String, Value>,
    key: &str,
    value: Value,
    differs: impl FnOnce() -> String,
) -> crate::kit::placement::Placement {
    use crate::kit::placement::Placement;
    match object.get(key) {
        Some(old) if *old == value => Placement::AlreadyThere,
        Some(_) => Placement::Refused(differs()),
        None => {
            object.insert(key.to_owned(), value);
            Placement::New
        }
    }
}

/// Writes `file` back to `path`, 0600 when new, if any of `placed` is new.
pub fn write_placed(
    writer: &Writer,
    path: &Path,
    file: &ObjectFile,
    placed: &[(String, crate::kit::placement::Placement)],
) -> Result<(), ConvertError> {
    if placed.iter().any(|(_, p)| p.is_written()) {
        write_private(writer, path, file)?;
    }
    Ok(())
}

/// Writes the object back atomically (a new file if there was none).
pub fn write(writer: &Writer, path: &Path, file: &ObjectFile) -> Result<(), ConvertError> {
    write_as(writer, path, file, false)
}

/// [`write`], a new file readable by its owner alone, as Claude Code creates `.claude.json`
/// (mode 0600: the account, and MCP servers' keys).
pub fn write_private(writer: &Writer, path: &Path, file: &ObjectFile) -> Result<(), ConvertError> {
    write_as(writer, path, file, true)
}

fn write_as(
    writer: &Writer,
    path: &Path,
    file: &ObjectFile,
    private: bool,
) -> Result<(), ConvertError> {
    let mut text = serde_json::to_vec_pretty(&Value::Object(file.object.clone()))
        .expect("JSON values serialise");
    if file.trailing_newline || !file.existed {
        text.push(b'\n');
    }
    if file.existed {
        writer.replace(path, &text)
    } else if writer.create_new_as(path, &mut &text[..], Mode::of(false, private))?
        == Created::AlreadyExists
    {
        Err(ConvertError::invalid(
            path,
            "appeared while it was being written; not replaced",
        ))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn untouched_keys_come_back_byte_for_byte() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.json");
        let original = "{\n  \"z\": 1,\n  \"a\": {\n    \"k\": [\n      \"v\"\n    ]\n  },\n  \"e\": [],\n  \"n\": 0.4127\n}";
        fs::write(&p, original).unwrap();
        let f = read(&p).unwrap();
        write(&Writer::new(false), &p, &f).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), original);
        fs::write(&p, "{ nope").unwrap();
        assert!(read(&p).is_err());
    }
}
