//! A harness's own configuration (issue 13's native layer): which files it is, read whole into
//! blobs, and restored whole into the same harness, never over a file that is there.
//!
//! Each converter names its files and folders ([`crate::Harness::config_files`]); this module
//! walks them the same way for every harness: regular files, and symbolic links to regular
//! files (read through), never a file whose name says it holds credentials, and only files
//! under the home (a store the environment moved elsewhere is not the home's to restore).
//! What is found and not kept is returned with why, for the backup to say.

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

/// The configuration files a harness keeps under a home, and the ones found among them that
/// are left out, each with why (a backup says so rather than leave them out silently).
#[derive(Debug, Default)]
pub struct ConfigFiles {
    /// Each file kept: its path relative to the home (`/`-separated) and where it is.
    pub keep: Vec<(String, PathBuf)>,
    /// Each file found and left out: where it is, and why.
    pub withheld: Vec<(PathBuf, &'static str)>,
    /// The relative paths of `withheld` (`None` outside the home), for [`ConfigFiles::only`].
    withheld_rel: Vec<Option<String>>,
}

impl ConfigFiles {
    /// Keeps only the files whose relative path `keep` accepts; the others are not
    /// configuration (a converter's finer rule: Markdown files only, no `node_modules/`) and
    /// are not reported.
    pub fn only(mut self, keep: impl Fn(&str) -> bool) -> Self {
        self.keep.retain(|(rel, _)| keep(rel));
        let mut rel = std::mem::take(&mut self.withheld_rel).into_iter();
        self.withheld
            .retain(|_| rel.next().flatten().is_none_or(|r| keep(&r)));
        self
    }

    /// The relative paths kept.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.keep.iter().map(|(rel, _)| rel.as_str())
    }
}

/// Why a file whose name says it holds credentials is left out.
pub const HOLDS_CREDENTIALS: &str =
    "its name says it holds credentials: never backed up (set them again after a restore)";

/// Every configuration file of `files` (single files) and `dirs` (walked), under `home`.
///
/// A symbolic link is followed to the regular file it leads to (people keep `settings.json`
/// in a dotfiles repository and link it), and the file's content is kept; a restore writes
/// it as a file. A link that leads nowhere or to something else, a file outside the home and
/// a file whose name says it holds credentials are withheld and reported. Links to folders
/// below `dirs` are not walked.
pub fn collect(home: &Path, files: &[PathBuf], dirs: &[PathBuf]) -> ConfigFiles {
    let mut out = ConfigFiles::default();
    let mut take = |p: &Path| {
        let Ok(m) = fs::symlink_metadata(p) else {
            return;
        };
        if m.is_dir() {
            return;
        }
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let target = fs::metadata(p);
        let why = if holds_credentials(name) {
            Some(HOLDS_CREDENTIALS)
        } else if m.is_symlink() {
            match &target {
                Ok(t) if t.is_file() => fs::canonicalize(p)
                    .ok()
                    .and_then(|t| {
                        t.file_name()
                            .and_then(|n| n.to_str())
                            .map(holds_credentials)
                    })
                    .unwrap_or(false)
                    .then_some(HOLDS_CREDENTIALS),
                Ok(t) if t.is_dir() => {
                    Some("a symbolic link to a folder: not followed, not backed up")
                }
                _ => Some("a symbolic link that leads to no regular file: not backed up"),
            }
        } else if !m.is_file() {
            Some("not a regular file: not backed up")
        } else {
            None
        };
        let rel = relative(home, p);
        match (why, rel) {
            (None, Some(rel)) => out.keep.push((rel, p.to_path_buf())),
            (why, rel) => {
                out.withheld.push((
                    p.to_path_buf(),
                    why.unwrap_or("outside the home: not backed up"),
                ));
                out.withheld_rel.push(rel);
            }
        }
    };
    for f in files {
        take(f);
    }
    for d in dirs {
        // (The folder itself, link or not, is walked.)
        for e in walkdir::WalkDir::new(d)
            .follow_links(false)
            .sort_by_file_name()
            .min_depth(1)
            .into_iter()
            .flatten()
        {
            take(e.path());
        }
    }
    out.keep.sort();
    out.keep.dedup();
    out
}

/// Whether a file named `name` holds credentials by its name (`auth.json`,
/// `mcp-oauth-tokens.json`, ...). A Markdown file is a prompt, a command or a rule, whatever
/// its name (`commands/tokenize.md`).
fn holds_credentials(name: &str) -> bool {
    CREDENTIALS.contains(&name)
        || (name.to_ascii_lowercase().contains("token") && !name.ends_with(".md"))
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
/// (`log` says which file is one), into which the carried records are merged. A file
/// `private` names holds what the person typed or pasted: it is created theirs alone to read.
pub fn write(
    home: &Path,
    config: &Native,
    blobs: &dyn BlobSource,
    writer: &Writer,
    log: &dyn Fn(&str) -> Option<PromptLog>,
    private: &dyn Fn(&str) -> bool,
) -> Result<Vec<(String, Placement)>, ConvertError> {
    let mut out = Vec::new();
    for f in &config.files {
        let path = home.join(f.path.as_str());
        let mut r = blobs.open(&f.content)?;
        let log = log(f.path.as_str());
        let created = if private(f.path.as_str()) {
            writer.create_private_from(&path, &mut r)?
        } else {
            writer.create_new_from(&path, &mut r, f.executable)?
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
