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

/// What a masked credential reads in a backup, and so in the file a restore writes
/// ([`crate::kit::credentialed_json`]).
pub const PLACEHOLDER: &str = "REMOVED-BY-ASP-BACKUP-set-your-key-again";

/// The suffix of a part kept without its credentials: `<file>#withoutCredentials`.
pub const WITHOUT_CREDENTIALS: &str = "#withoutCredentials";

/// Whether configuration file `name` is a part kept without its credentials.
pub fn is_without_credentials(name: &str) -> bool {
    name.ends_with(WITHOUT_CREDENTIALS)
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
        // A record being appended right now (the file ends mid-line): wait for its end.
        let mid_line = now.last().is_some_and(|b| *b != b'\n');
        if now != there || mid_line {
            there = now;
            std::thread::sleep(std::time::Duration::from_millis(50));
            continue;
        }
        writer.replace(path, &merged)?;
        if !writer.is_dry_run() {
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
