//! A harness's own configuration (issue 13's native layer): which files it is, read whole into
//! blobs, and restored whole into the same harness, never over a file that is there.
//!
//! Each converter names its files and folders ([`crate::Harness::config_files`]); this module
//! walks them the same way for every harness: regular files only (no symlinks), never a file
//! whose name says it holds credentials, and only files under the home (a store the
//! environment moved elsewhere is not the home's to restore).

use std::fs;
use std::io::Read;
use std::path::{Path, PathBuf};

use asp_format::blob::{BlobSink, BlobSource};
use asp_format::name::{HarnessName, RelPath};
use asp_format::state::{FileEntry, Native};

use crate::error::ConvertError;
use crate::kit::fsops::{Created, Writer, is_executable};
use crate::kit::placement::Placement;
use crate::kit::prompt_log::{self, PromptLog};

/// File names that hold credentials, never backed up whatever folder they are in.
const CREDENTIALS: &[&str] = &[
    ".credentials.json",
    "auth.json",
    "oauth_creds.json",
    "google_accounts.json",
    ".env",
];

/// Every configuration file of `files` (single files) and `dirs` (walked), under `home`.
pub fn collect(home: &Path, files: &[PathBuf], dirs: &[PathBuf]) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    let mut take = |p: &Path| {
        let Ok(m) = fs::symlink_metadata(p) else {
            return;
        };
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if !m.is_file() || CREDENTIALS.contains(&name) || name.contains("token") {
            return;
        }
        if let Some(rel) = relative(home, p) {
            out.push((rel, p.to_path_buf()));
        }
    };
    for f in files {
        take(f);
    }
    for d in dirs {
        for e in walkdir::WalkDir::new(d)
            .follow_links(false)
            .sort_by_file_name()
            .into_iter()
            .flatten()
        {
            take(e.path());
        }
    }
    out.sort();
    out.dedup();
    out
}

/// `path` relative to `home`, `/`-separated, as configuration files are named; `None` outside it.
pub fn relative(home: &Path, path: &Path) -> Option<String> {
    let rel = path.strip_prefix(home).ok()?;
    let rel: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    Some(rel.join("/"))
}

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

/// What a masked credential reads in a backup, and so in the file a restore writes.
pub const PLACEHOLDER: &str = "REMOVED-BY-ASP-BACKUP-set-your-key-again";

/// The suffix of a part [`keep_json`] made: `<file>#withoutCredentials`.
pub const WITHOUT_CREDENTIALS: &str = "#withoutCredentials";

/// Whether configuration file `name` is a part kept without its credentials.
pub fn is_without_credentials(name: &str) -> bool {
    name.ends_with(WITHOUT_CREDENTIALS)
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

/// A JSON configuration file that may hold credentials (Pi's `models.json`, Qwen Code's
/// `settings.json`): kept whole when it holds none, else as the part `part`, the document
/// without them ([`keep_json`]), restored as the file where there is none.
#[derive(Debug, Clone, Copy)]
pub struct CredentialedJson {
    /// The file's name relative to the home, where the part is restored.
    pub file: &'static str,
    /// The part's name: `file` and [`WITHOUT_CREDENTIALS`].
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
        Created::AlreadyExists if fs::read(&path).ok().as_deref() == Some(bytes) => {
            Placement::AlreadyThere
        }
        Created::AlreadyExists => Placement::Refused(format!(
            "{} is there; kept as it is (the backup kept it without its credentials, which yours has)",
            path.display()
        )),
    };
    Ok(vec![(name.to_owned(), placed)])
}

/// Reads the files into `blobs`.
pub fn read(
    harness: HarnessName,
    files: &[(String, PathBuf)],
    blobs: &dyn BlobSink,
) -> Result<Native, ConvertError> {
    let mut entries = Vec::new();
    for (rel, path) in files {
        let mut f = fs::File::open(path).map_err(ConvertError::io(path))?;
        let executable = is_executable(&f.metadata().map_err(ConvertError::io(path))?);
        let mut bytes = Vec::new();
        f.read_to_end(&mut bytes).map_err(ConvertError::io(path))?;
        let Ok(path_name) = RelPath::new(rel) else {
            continue;
        };
        entries.push(FileEntry {
            path: path_name,
            executable,
            content: blobs.put(&bytes)?,
        });
    }
    Ok(Native {
        harness,
        files: entries,
    })
}

/// Restores every file that is not there; one already there with the same bytes is already
/// there, a different one is kept as it is (the user's), but for the harness's prompt history
/// (`log` says which file is one), into which the carried records are merged.
pub fn write(
    home: &Path,
    config: &Native,
    blobs: &dyn BlobSource,
    writer: &Writer,
    log: &dyn Fn(&str) -> Option<PromptLog>,
) -> Result<Vec<(String, Placement)>, ConvertError> {
    let mut out = Vec::new();
    for f in &config.files {
        let path = home.join(f.path.as_str());
        let mut r = blobs.open(&f.content)?;
        let log = log(f.path.as_str());
        // A prompt history holds what the person typed and pasted: theirs alone to read.
        let created = match log {
            Some(_) => writer.create_private_from(&path, &mut r)?,
            None => writer.create_new_from(&path, &mut r, f.executable)?,
        };
        let placed = match created {
            Created::New => Placement::New,
            Created::AlreadyExists => {
                let mut want = Vec::new();
                blobs
                    .open(&f.content)?
                    .read_to_end(&mut want)
                    .map_err(ConvertError::io(&path))?;
                let there = fs::read(&path).ok();
                if there.as_deref() == Some(&want[..]) {
                    Placement::AlreadyThere
                } else if let (Some(log), Some(there)) = (log, there) {
                    merge_log(&path, &log, &there, &want, writer)?
                } else {
                    Placement::Refused(format!(
                        "{} is there with other content; the backed-up copy was not written over it",
                        path.display()
                    ))
                }
            }
        };
        out.push((f.path.to_string(), placed));
    }
    Ok(out)
}

/// Merges the carried prompt history `want` into `there`, the file at `path` as it was read,
/// and replaces the file atomically. The harness may be appending a prompt meanwhile: the
/// file is read again just before it is replaced (through a handle kept open on it) and the
/// merge redone if it changed; after the replace, whatever was appended to the old file
/// through that handle's inode since is appended to the new one. (A harness that opened the
/// file before the rename and writes to it after that last read still writes to the old
/// inode: restore with the harness closed to be sure.)
fn merge_log(
    path: &Path,
    log: &PromptLog,
    there: &[u8],
    want: &[u8],
    writer: &Writer,
) -> Result<Placement, ConvertError> {
    let kept = |why: String| Placement::Refused(format!("{} {why}; kept as it is", path.display()));
    let mut there = there.to_vec();
    for _ in 0..3 {
        let merged = match prompt_log::merge(log, &there, want) {
            Ok(Some(merged)) => merged,
            Ok(None) => return Ok(Placement::AlreadyThere),
            Err(why) => {
                return Ok(kept(format!(
                    "is there and cannot be merged with the backed-up prompt history ({why})"
                )));
            }
        };
        let mut old = match fs::File::open(path) {
            Ok(f) => f,
            Err(e) => return Ok(kept(format!("cannot be read again ({e})"))),
        };
        let mut now = Vec::new();
        if let Err(e) = old.read_to_end(&mut now) {
            return Ok(kept(format!("cannot be read again ({e})")));
        }
        if now != there {
            there = now;
            continue;
        }
        writer.replace(path, &merged)?;
        if !writer.is_dry_run() && log.shape == prompt_log::Shape::Lines {
            let mut late = Vec::new();
            if old.read_to_end(&mut late).is_ok() && !late.is_empty() {
                writer.append(path, &late)?;
            }
        }
        return Ok(Placement::New);
    }
    Ok(kept(
        "kept changing while the backed-up prompt history was merged into it".to_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

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
