//! A JSON configuration file that holds credentials among its settings (Pi's `models.json`,
//! Qwen Code's `settings.json`): kept whole by a backup when it holds none, else as a part
//! without them, restored as the file where there is none (mode 0600: the user puts the keys
//! back). A file with comments is never kept whole: a commented-out key is a key.

use std::path::{Path, PathBuf};

use crate::error::ConvertError;
use crate::kit::config::{PLACEHOLDER, relative};
use crate::kit::fsops::{Created, Writer};
use crate::kit::placement::Placement;

/// How a JSON configuration file that may hold credentials is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Keep {
    /// It holds none: kept whole, byte for byte, with the other files.
    Whole,
    /// It holds some (or has comments, which may hold an old one): kept as a part, this
    /// document with them masked or removed (two-space indents, members in their order).
    Part(Vec<u8>),
    /// Not there, or not a JSON object: not kept (the kinds' read reports a broken file).
    Not,
}

/// A member of a JSON configuration file that holds a credential.
#[derive(Debug, Clone, Copy)]
pub struct Secret {
    /// Its member path; `*` stands for any member name or array element.
    pub at: &'static [&'static str],
    /// Kept as [`PLACEHOLDER`] rather than removed, where the harness refuses the file
    /// without the member (Pi: a provider that defines models must have an `apiKey`).
    pub masked: bool,
}

/// How to keep the JSON (or JSONC) file at `path` whose `secrets` are credentials. A file
/// with comments is never kept whole: a commented-out key is still a key.
pub fn keep_json(path: &Path, secrets: &[Secret]) -> Keep {
    if !path.is_file() {
        return Keep::Not;
    }
    let Ok(file) = crate::kit::settings_json::File::load(path) else {
        return Keep::Not;
    };
    let mut doc = serde_json::Value::Object(file.doc);
    let mut found = file.has_comments;
    for secret in secrets {
        found |= hide_at(&mut doc, secret.at, secret.masked);
    }
    if !found {
        return Keep::Whole;
    }
    let mut bytes = serde_json::to_vec_pretty(&doc).expect("values serialize");
    bytes.push(b'\n');
    Keep::Part(bytes)
}

/// Masks or removes the members at `path` (`*`: any member or element); whether any was
/// there.
fn hide_at(v: &mut serde_json::Value, path: &[&str], masked: bool) -> bool {
    use serde_json::Value;
    let children: Vec<&mut Value> = match (v, path.first()) {
        (_, None) => return false,
        (Value::Array(items), Some(&"*")) if path.len() > 1 => items.iter_mut().collect(),
        (Value::Object(map), Some(&"*")) if path.len() > 1 => map.values_mut().collect(),
        (Value::Object(map), Some(name)) if path.len() > 1 => {
            map.get_mut(*name).into_iter().collect()
        }
        (Value::Object(map), Some(name)) => {
            let names: Vec<String> = if *name == "*" {
                map.keys().cloned().collect()
            } else {
                map.contains_key(*name)
                    .then(|| (*name).to_owned())
                    .into_iter()
                    .collect()
            };
            // A reference (`${VAR}`, `{env:VAR}`), an empty value or a scheme alone holds no
            // credential: the file keeps it.
            let names: Vec<String> = names
                .into_iter()
                .filter(|n| holds_a_credential(&map[n.as_str()]))
                .collect();
            for n in &names {
                if masked {
                    map[n.as_str()] = Value::String(PLACEHOLDER.to_owned());
                } else {
                    map.shift_remove(n.as_str());
                }
            }
            return !names.is_empty();
        }
        _ => return false,
    };
    children
        .into_iter()
        .fold(false, |any, child| hide_at(child, &path[1..], masked) | any)
}

/// Whether a value at a credential's place holds one: a string that is not a reference
/// ([`crate::kit::secrets::holds_no_secret`]), or an object or array with one in it.
fn holds_a_credential(v: &serde_json::Value) -> bool {
    use serde_json::Value;
    match v {
        Value::String(s) => !crate::kit::secrets::holds_no_secret(s),
        Value::Object(m) => m.values().any(holds_a_credential),
        Value::Array(a) => a.iter().any(holds_a_credential),
        Value::Null | Value::Bool(_) => false,
        Value::Number(_) => true,
    }
}

/// A JSON configuration file that may hold credentials (Pi's `models.json`, Qwen Code's
/// `settings.json`): kept whole when it holds none, else as the part `part`, the document
/// without them ([`keep_json`]), restored as the file where there is none.
#[derive(Debug, Clone, Copy)]
pub struct CredentialedJson {
    /// The file's name relative to the home, where the part is restored.
    pub file: &'static str,
    /// The part's name: `file` and [`WITHOUT_CREDENTIALS`](crate::kit::config::WITHOUT_CREDENTIALS).
    pub part: &'static str,
    pub secrets: &'static [Secret],
}

impl CredentialedJson {
    /// `path` (the file where the harness has it), to be kept whole: when it holds no
    /// credential.
    pub fn whole(&self, path: PathBuf) -> Option<PathBuf> {
        (keep_json(&path, self.secrets) == Keep::Whole).then_some(path)
    }

    /// The part, when the file at `path` holds credentials and is where the part is restored
    /// (`home`/`file`; elsewhere it is not the home's to restore).
    pub fn part(&self, home: &Path, path: &Path) -> Option<(String, Vec<u8>)> {
        if relative(home, path).as_deref() != Some(self.file) {
            return None;
        }
        match keep_json(path, self.secrets) {
            Keep::Part(bytes) => Some((self.part.to_owned(), bytes)),
            Keep::Whole | Keep::Not => None,
        }
    }

    /// Restores part `name`, if it is this file's, as the file where there is none.
    pub fn restore(
        &self,
        home: &Path,
        name: &str,
        bytes: &[u8],
        writer: &Writer,
    ) -> Option<Result<Vec<(String, Placement)>, ConvertError>> {
        (name == self.part).then(|| write_part_as_file(home, name, self.file, bytes, writer))
    }
}

/// Restores a part [`keep_json`] made as the file at `home`/`rel`, where there is none; the
/// same bytes there are already there, a different file is the user's and is kept.
fn write_part_as_file(
    home: &Path,
    name: &str,
    rel: &str,
    bytes: &[u8],
    writer: &Writer,
) -> Result<Vec<(String, Placement)>, ConvertError> {
    let path = home.join(rel);
    let placed = match writer.create_private_from(&path, &mut &bytes[..])? {
        Created::New => Placement::New,
        Created::AlreadyExists if crate::kit::fsops::read(&path).ok().as_deref() == Some(bytes) => {
            Placement::AlreadyThere
        }
        Created::AlreadyExists => Placement::Refused(format!(
            "{} is there; kept as it is (the backup kept it without its credentials, which yours has)",
            path.display()
        )),
    };
    Ok(vec![(name.to_owned(), placed)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn keep(text: &str, secrets: &[Secret]) -> Keep {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        fs::write(&path, text).unwrap();
        keep_json(&path, secrets)
    }

    const SECRETS: &[Secret] = &[
        Secret {
            at: &["providers", "*", "apiKey"],
            masked: true,
        },
        Secret {
            at: &["providers", "*", "models", "*", "headers"],
            masked: false,
        },
        Secret {
            at: &["env"],
            masked: false,
        },
    ];

    #[test]
    fn a_file_without_credentials_is_kept_whole_and_one_with_them_without_them() {
        assert_eq!(
            keep("{\"providers\": {\"a\": {\"baseUrl\": \"u\"}}}\n", SECRETS),
            Keep::Whole
        );
        let Keep::Part(bytes) = keep(
            r#"{"env": {"K": "v"}, "providers": {"a": {"baseUrl": "u", "apiKey": "sk-1", "models": [{"id": "m", "headers": {"X-Key": "sk-3"}}]}, "b": {"apiKey": "sk-2"}}, "theme": "dark"}"#,
            SECRETS,
        ) else {
            panic!("a part");
        };
        let text = String::from_utf8(bytes).unwrap();
        assert!(!text.contains("sk-"), "{text}");
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            doc,
            serde_json::json!({"providers": {"a": {"baseUrl": "u", "apiKey": PLACEHOLDER, "models": [{"id": "m"}]}, "b": {"apiKey": PLACEHOLDER}}, "theme": "dark"})
        );
        // The members keep their order.
        assert!(text.find("\"providers\"").unwrap() < text.find("\"theme\"").unwrap());
        assert_eq!(keep("not json", SECRETS), Keep::Not);
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(keep_json(&dir.path().join("none.json"), SECRETS), Keep::Not);
    }

    #[test]
    fn a_file_with_comments_is_never_kept_whole() {
        let Keep::Part(bytes) = keep(
            "{\n  // \"apiKey\": \"sk-old-key\",\n  \"theme\": \"dark\"\n}\n",
            SECRETS,
        ) else {
            panic!("a part");
        };
        assert!(!String::from_utf8(bytes).unwrap().contains("sk-old"));
    }
}
