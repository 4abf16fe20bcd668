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
use asp_format::name::RelPath;
use asp_format::state::{FileEntry, Native};

use crate::error::ConvertError;
use crate::kit::appended_log::{self, AppendedLog};
use crate::kit::fsops::{Created, Mode, Writer, is_executable};
use crate::kit::placement::Placement;

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
    /// Each file found and left out.
    pub withheld: Vec<Withheld>,
    /// Each symbolic link kept as the file it leads to: the link, and that file.
    pub followed: Vec<(PathBuf, PathBuf)>,
    /// What each kept path was when it was screened (device and inode of the file itself, or
    /// of the file a link leads to): [`read`] reads only that file, so a link retargeted, or a
    /// file swapped for a link, a FIFO or a device, between the screening and the reading
    /// is not read.
    identity: std::collections::BTreeMap<PathBuf, (u64, u64)>,
}

/// A file found where a harness keeps its configuration and left out.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Withheld {
    /// Where it is.
    pub path: PathBuf,
    /// Its path relative to the home (its whole path outside the home; empty for a folder
    /// outside the home): what [`ConfigFiles::only`] looks at.
    rel: String,
    /// Why it is left out.
    pub why: &'static str,
}

impl ConfigFiles {
    /// Keeps only the files whose relative path `keep` accepts; the others are not
    /// configuration (a converter's finer rule: Markdown files only, no `node_modules/`) and
    /// are neither kept nor reported.
    pub fn only(mut self, keep: impl Fn(&str) -> bool) -> Self {
        self.keep.retain(|(rel, _)| keep(rel));
        // (A folder outside the home, reported once, is about every file in it.)
        self.withheld.retain(|w| w.rel.is_empty() || keep(&w.rel));
        self.followed
            .retain(|(link, _)| self.keep.iter().any(|(_, p)| p == link));
        self
    }

    /// Keeps `paths` too (files under `home` the harness's folders hold that its own rule did
    /// not name: [`crate::kit::server_files`]), screened as every other file is.
    pub fn keep_also(&mut self, home: &Path, paths: &[PathBuf]) {
        for p in paths {
            if !self.keep.iter().any(|(_, k)| k == p) {
                take(self, p, relative(home, p));
            }
        }
        self.keep.sort();
        self.keep.dedup();
        self.withheld.sort();
        self.withheld.dedup();
        self.followed.sort();
        self.followed.dedup();
    }

    /// The relative paths kept.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.keep.iter().map(|(rel, _)| rel.as_str())
    }
}

/// Why a file whose name says it holds credentials is left out.
pub const HOLDS_CREDENTIALS: &str =
    "its name says it holds credentials: never backed up (set them again after a restore)";

/// Folders whose files hold keys (a link into one is never followed), as path components of
/// the file a link leads to.
const SECRET_FOLDERS: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".kube",
    ".docker",
    ".password-store",
];

/// The same, under `.config/`.
const SECRET_CONFIG_FOLDERS: &[&str] = &["gh", "gcloud"];

/// Names of files that hold keys wherever they are (a link to one is never followed), besides
/// `id_*` and certificate and key files.
const SECRET_NAMES: &[&str] = &[".netrc", ".git-credentials", ".npmrc", ".pypirc"];

/// Every configuration file of `files` (single files) and `dirs` (walked), under `home`.
///
/// A symbolic link is followed to the regular file it leads to (people keep `settings.json`
/// in a dotfiles repository, or home-manager links it from the Nix store), and that file's
/// content is kept; a restore writes it as a file. Not when the file it leads to is readable
/// by its owner alone (a key), is named as holding credentials, lies in a folder of keys
/// (`~/.ssh`, `~/.aws`, ...) or under `/proc`, `/sys`, `/dev` or `/run`, or cannot be
/// resolved. Such links, links that lead nowhere or to a folder, files whose name says they
/// hold credentials and files outside the home are withheld and reported; a folder of `dirs`
/// outside the home is reported once, not walked. Links to folders below `dirs` are not
/// walked.
pub fn collect(home: &Path, files: &[PathBuf], dirs: &[PathBuf]) -> ConfigFiles {
    let mut out = ConfigFiles::default();
    for f in files {
        take(&mut out, f, relative(home, f));
    }
    for d in dirs {
        if relative(home, d).is_none() {
            if d.exists() {
                out.withheld.push(Withheld {
                    path: d.clone(),
                    rel: String::new(),
                    why: "a folder outside the home: not backed up",
                });
            }
            continue;
        }
        // (The folder itself, link or not, is walked.)
        for e in walkdir::WalkDir::new(d)
            .follow_links(false)
            .sort_by_file_name()
            .min_depth(1)
            .into_iter()
            .flatten()
        {
            take(&mut out, e.path(), relative(home, e.path()));
        }
    }
    out.keep.sort();
    out.keep.dedup();
    out.withheld.sort();
    out.withheld.dedup();
    out.followed.sort();
    out.followed.dedup();
    out
}

/// Keeps or withholds the file at `p` (`rel` relative to the home, `None` outside it).
fn take(out: &mut ConfigFiles, p: &Path, rel: Option<String>) {
    let Ok(m) = fs::symlink_metadata(p) else {
        return;
    };
    if m.is_dir() {
        return;
    }
    let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
    // A backed-up copy a restore left beside the user's file is not configuration.
    if name.ends_with(RESTORED_BESIDE) {
        return;
    }
    let mut followed = None;
    // The file as screened: the one `read` may read.
    let mut screened_identity = identity(&m);
    let why = if holds_credentials(name) || holds_keys(name) {
        Some(HOLDS_CREDENTIALS)
    } else if m.is_symlink() {
        match fs::metadata(p) {
            Ok(t) if t.is_file() => match fs::canonicalize(p) {
                Ok(target) => {
                    let why = link_withheld(&target, &t);
                    if why.is_none() {
                        followed = Some(target);
                        screened_identity = identity(&t);
                    }
                    why
                }
                Err(_) => Some("a symbolic link that cannot be resolved: not backed up"),
            },
            Ok(t) if t.is_dir() => Some("a symbolic link to a folder: not followed, not backed up"),
            _ => Some("a symbolic link that leads to no regular file: not backed up"),
        }
    } else if !m.is_file() {
        Some("not a regular file: not backed up")
    } else {
        None
    };
    match (why, rel) {
        (None, Some(rel)) => {
            if let Some(target) = followed {
                out.followed.push((p.to_path_buf(), target));
            }
            if let Some(id) = screened_identity {
                out.identity.insert(p.to_path_buf(), id);
            }
            out.keep.push((rel, p.to_path_buf()));
        }
        (why, rel) => out.withheld.push(Withheld {
            path: p.to_path_buf(),
            rel: rel.unwrap_or_else(|| p.to_string_lossy().into_owned()),
            why: why.unwrap_or("outside the home: not backed up"),
        }),
    }
}

/// The device and inode of a file, where the platform has them.
fn identity(m: &fs::Metadata) -> Option<(u64, u64)> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((m.dev(), m.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = m;
        None
    }
}

/// The bytes of the regular file at `p` (through a link), opened without blocking: a FIFO or
/// a device there is an error, not a hang.
pub fn read_regular(p: &Path) -> std::io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    open_screened(p, None)?.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// The error [`open_screened`] gives for a file that is no longer the regular file screened:
/// told apart from other I/O errors by its type, so only it is screened again.
#[derive(Debug, thiserror::Error)]
#[error("it changed while it was being backed up")]
struct Changed;

fn is_changed(e: &std::io::Error) -> bool {
    e.get_ref().is_some_and(|inner| inner.is::<Changed>())
}

/// Opens the file at `p` for reading without blocking (a FIFO swapped in must not hang the
/// backup) and checks that it is a regular file and, where screened, the one screened.
fn open_screened(p: &Path, screened: Option<(u64, u64)>) -> std::io::Result<fs::File> {
    let changed = || std::io::Error::other(Changed);
    // Not a regular file any more: swapped since it was screened.
    let f = crate::kit::source::open_regular(p).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidInput => changed(),
        _ => e,
    })?;
    let m = f.metadata()?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if screened.is_some_and(|id| id != (m.dev(), m.ino())) {
            return Err(changed());
        }
    }
    #[cfg(not(unix))]
    let _ = screened;
    Ok(f)
}

/// Whether writing `path` (under `folder` as spelled) stays inside where `folder` really is:
/// no link among the folders on the way that exist leads out of it (`~/.claude/keys` linked to
/// `~/.ssh`), though `folder` itself may be a link (a dotfiles manager's). A restore writes
/// names a backup or a pulled record gives; the check on the names alone is by their text.
pub fn really_inside(path: &Path, folder: &Path) -> bool {
    if !path.starts_with(folder) {
        return false;
    }
    // The deepest folder on the way that is there: what a write would go through.
    let mut there = path.parent();
    while let Some(p) = there {
        if fs::symlink_metadata(p).is_ok() {
            break;
        }
        there = p.parent();
    }
    match there {
        // Not yet made down to the folder: nothing under it to lead out.
        Some(p) if !p.starts_with(folder) => true,
        Some(p) => match (fs::canonicalize(p), fs::canonicalize(folder)) {
            (Ok(real), Ok(real_folder)) => real.starts_with(real_folder),
            _ => false,
        },
        None => true,
    }
}

/// Why a symbolic link to the regular file `target` (canonical, with metadata `m`) is not
/// followed, if it is not.
pub(crate) fn link_withheld(target: &Path, m: &fs::Metadata) -> Option<&'static str> {
    let name = target.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let parts: Vec<&str> = target
        .components()
        .filter_map(|c| c.as_os_str().to_str())
        .collect();
    let in_secrets = parts.iter().any(|c| SECRET_FOLDERS.contains(c))
        || parts
            .windows(2)
            .any(|w| w[0] == ".config" && SECRET_CONFIG_FOLDERS.contains(&w[1]));
    let key_name = holds_keys(name)
        || (name.starts_with("id_") && !name.ends_with(".md") && !name.ends_with(".toml"));
    let system = ["/proc", "/sys", "/dev", "/run"]
        .iter()
        .any(|d| target.starts_with(d));
    if holds_credentials(name) || key_name || in_secrets || system {
        return Some(
            "a symbolic link to a file that holds keys or is the system's: not followed, not backed up",
        );
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        if m.permissions().mode() & 0o044 == 0 {
            return Some(
                "a symbolic link to a file only its owner may read (a key, as like as not): not followed, not backed up",
            );
        }
    }
    #[cfg(not(unix))]
    let _ = m;
    None
}

/// Whether a file named `name` holds keys by its name wherever it is: [`SECRET_NAMES`], or a
/// key or certificate file. (An SSH key `id_*` too, for the file a link leads to; a command
/// may well be named `id_generator.md`.)
fn holds_keys(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    SECRET_NAMES.contains(&name)
        || [".pem", ".p12", ".pfx", ".key"]
            .iter()
            .any(|e| lower.ends_with(e))
}

/// Whether a file named `name` holds credentials by its name: one of [`CREDENTIALS`], or a
/// data file (no extension, or a data one) named like a token, in any case
/// (`mcp-oauth-tokens.json`, `GITHUB_TOKEN`, `.github-token`). A prompt, a command, a rule or
/// source code (`commands/tokenize.md`, `commands/count-tokens.toml`,
/// `extensions/x/tokenizer.ts`) is what it is whatever its name.
fn holds_credentials(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    // As `Path::extension` reads it: `.github-token` has none.
    let data = match Path::new(&lower).extension().and_then(|e| e.to_str()) {
        Some(ext) => {
            ext.contains("token")
                || [
                    "json", "txt", "yaml", "yml", "key", "dat", "db", "sqlite", "cache",
                ]
                .contains(&ext)
        }
        None => true,
    };
    CREDENTIALS.contains(&name) || (lower.contains("token") && data)
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

/// The file a part kept without its credentials is of (`models.json` of
/// `models.json#withoutCredentials`); `None` for any other configuration file.
pub fn without_credentials(name: &str) -> Option<&str> {
    name.strip_suffix(WITHOUT_CREDENTIALS)
}

/// What a backup and a restore say of a file kept without its credentials. (Pi's provider
/// keys are replaced by [`PLACEHOLDER`], as Pi refuses a provider without one; Qwen's are
/// removed.)
pub fn without_credentials_said() -> String {
    format!(
        "kept without the credentials it holds (removed, or, where the harness needs one, \
         replaced by {PLACEHOLDER}): set them again after a restore"
    )
}

/// What [`read`] read.
#[derive(Debug)]
pub struct ConfigRead {
    pub native: Native,
    /// The files that could not be read (relative paths), each reported as lost: a backup
    /// keeps the copy its parent snapshot has.
    pub unreadable: Vec<String>,
}

/// Reads the files `collect` kept into `blobs`. A file gone since it was listed (the harness
/// deleted it) is not there to keep; one that cannot be read, or is no longer the file that
/// was screened, is reported as lost and the others are read: one unreadable file must not
/// stop the backup of everything else. A name that cannot be a file name everywhere is left
/// out by design.
/// A file holding credentials of its own written out is noted
/// ([`crate::harness::Harness::credentials_reader`]).
pub fn read(
    harness: &dyn crate::harness::Harness,
    files: &ConfigFiles,
    blobs: &dyn BlobSink,
    diagnostics: &crate::kit::report::Diagnostics,
) -> Result<ConfigRead, ConvertError> {
    let mut entries = Vec::new();
    let mut unreadable = Vec::new();
    for (rel, path) in &files.keep {
        let Ok(path_name) = RelPath::new(rel) else {
            diagnostics.left_out(
                path,
                None,
                "its name cannot be a file name on every system: not backed up",
            );
            continue;
        };
        let read_as = |screened: Option<(u64, u64)>| {
            open_screened(path, screened).and_then(|mut f| {
                let m = f.metadata()?;
                let mut bytes = Vec::new();
                f.read_to_end(&mut bytes)?;
                Ok((is_executable(&m), bytes))
            })
        };
        let mut read = read_as(files.identity.get(path).copied());
        if read.as_ref().is_err_and(is_changed) {
            // Replaced since it was screened (a harness rewrites a file by renaming a new one
            // over it): screened again, and read if it passes; left out, with the screen's
            // reason, if it does not (a link turned towards a key).
            let mut again = ConfigFiles::default();
            take(&mut again, path, Some(rel.clone()));
            if let Some(w) = again.withheld.first() {
                diagnostics.left_out(path, None, w.why);
                continue;
            }
            if !again.keep.is_empty() {
                read = read_as(again.identity.get(path).copied());
            }
        }
        let (executable, bytes) = match read {
            Ok(read) => read,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => {
                diagnostics.lost(path, None, format!("cannot be read ({e})"));
                unreadable.push(rel.clone());
                continue;
            }
        };
        if let Some(credentials) = harness.credentials_reader(rel) {
            let found = credentials(&bytes).own;
            crate::kit::secrets::note_kept_credentials(path, &found, diagnostics);
        }
        entries.push(FileEntry {
            path: path_name,
            executable,
            content: blobs.put(&bytes)?,
        });
    }
    Ok(ConfigRead {
        native: Native {
            harness: harness.name(),
            files: entries,
        },
        unreadable,
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
    log: &dyn Fn(&str) -> Option<AppendedLog>,
    private: &dyn Fn(&str) -> bool,
) -> Result<Vec<(String, Placement)>, ConvertError> {
    let mut out = Vec::new();
    for f in &config.files {
        let path = home.join(f.path.as_str());
        let mut r = blobs.open(&f.content)?;
        let log = log(f.path.as_str());
        let mode = Mode::of(f.executable, private(f.path.as_str()));
        let created = writer.create_new_as(&path, &mut r, mode)?;
        let placed = match created {
            Created::New => Placement::New,
            Created::AlreadyExists => {
                let mut want = Vec::new();
                blobs
                    .open(&f.content)?
                    .read_to_end(&mut want)
                    .map_err(ConvertError::io(&path))?;
                let there = crate::kit::fsops::read(&path).ok();
                if there.as_deref() == Some(&want[..]) {
                    Placement::AlreadyThere
                } else if let (Some(log), Some(there)) = (log, there) {
                    match merge_log(&path, &log, &there, &want, writer)? {
                        // Not merged: the backed-up history is beside it, whole.
                        Placement::Refused(why) => {
                            let side = restored_beside(&path, &want, Mode::Private, writer);
                            Placement::Refused(format!("{why}; {side}"))
                        }
                        placed => placed,
                    }
                } else {
                    Placement::Refused(format!(
                        "there with other content, {}",
                        restored_beside(&path, &want, mode, writer)
                    ))
                }
            }
        };
        out.push((f.path.to_string(), placed));
    }
    Ok(out)
}

/// The suffix of the backed-up copy of a configuration file written beside the user's own
/// different one, as package managers leave `.rpmnew` and `.dpkg-dist`: the harness does not
/// read it (`commands/x.md.asp-restored` is not a command), the person merges what they want.
pub const RESTORED_BESIDE: &str = ".asp-restored";

/// A file of a backup whose place holds the user's own different file: that one is kept, and
/// the backed-up copy is written beside it as `<file>.asp-restored` (once: one there already
/// is kept as it is), so nothing of the backup is out of reach. What became of the copy, said
/// after the refusal of the place itself.
pub(crate) fn restored_beside(path: &Path, want: &[u8], mode: Mode, writer: &Writer) -> String {
    let mut side = path.as_os_str().to_owned();
    side.push(RESTORED_BESIDE);
    let side = PathBuf::from(side);
    let created = writer.create_new_as(&side, &mut &want[..], mode);
    let name = side.file_name().map_or_else(
        || side.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    // (The file is named with the refusal: one reason for many files.)
    match created {
        Ok(Created::New) if writer.is_dry_run() => {
            format!("kept, not replaced; the backed-up copy would be written beside it as {name}")
        }
        Ok(Created::New) => {
            format!("kept, not replaced; the backed-up copy is written beside it as {name}")
        }
        Ok(Created::AlreadyExists)
            if crate::kit::fsops::read(&side).ok().as_deref() == Some(want) =>
        {
            format!("kept, not replaced; the backed-up copy is beside it as {name}")
        }
        Ok(Created::AlreadyExists) => format!(
            "kept, not replaced; the backed-up copy was not written (a different {name} is there)"
        ),
        // A folder that cannot be written to (linked from a read-only store) costs this file
        // its copy, not the restore.
        Err(e) => {
            format!("kept, not replaced; the backed-up copy could not be written beside it ({e})")
        }
    }
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
    log: &AppendedLog,
    there: &[u8],
    want: &[u8],
    writer: &Writer,
) -> Result<Placement, ConvertError> {
    let kept = |why: String| Placement::Refused(format!("{} {why}; kept as it is", path.display()));
    let mut there = there.to_vec();
    let mut waited = false;
    for _ in 0..3 {
        let merged = match appended_log::merge(log, &there, want) {
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
        // A record being appended right now (the file ends mid-line): wait for its end, once;
        // a file that stays as it is simply has no final newline.
        let mid_line = now.last().is_some_and(|b| *b != b'\n');
        if now != there || (mid_line && !waited) {
            waited = mid_line;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A restore never writes through a link that leads out of the harness's folder, though
    /// the folder itself may be a link.
    #[cfg(unix)]
    #[test]
    fn a_write_is_really_inside_only_where_no_link_on_the_way_leads_out() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path();
        fs::create_dir_all(home.join(".ssh")).unwrap();
        fs::create_dir_all(home.join("dotfiles/claude")).unwrap();
        fs::create_dir_all(home.join(".claude")).unwrap();
        std::os::unix::fs::symlink(home.join(".ssh"), home.join(".claude/keys")).unwrap();
        std::os::unix::fs::symlink(home.join("dotfiles/claude"), home.join(".pi")).unwrap();
        let claude = home.join(".claude");
        assert!(!really_inside(
            &claude.join("keys/authorized_keys"),
            &claude
        ));
        assert!(really_inside(&claude.join("mcp/new/x.py"), &claude));
        assert!(really_inside(
            &home.join(".pi/agents/a.md"),
            &home.join(".pi")
        ));
        assert!(really_inside(
            &home.join(".gemini/settings.json"),
            &home.join(".gemini")
        ));
        assert!(!really_inside(&home.join(".bashrc"), &claude));
    }

    #[test]
    fn a_name_holds_credentials_when_it_is_a_data_file_named_so() {
        for yes in [
            ".credentials.json",
            "auth.json",
            "mcp-oauth-tokens.json",
            "github-token",
            "token.txt",
            "Token.json",
            "GITHUB_TOKEN",
            ".github-token",
            "github.token",
        ] {
            assert!(holds_credentials(yes), "{yes}");
        }
        for no in [
            "tokenize.md",
            "count-tokens.toml",
            "tokenizer.ts",
            "settings.json",
            "Tokenize.MD",
        ] {
            assert!(!holds_credentials(no), "{no}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn links_are_followed_to_configuration_and_never_to_keys() {
        use std::os::unix::fs::{PermissionsExt, symlink};
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let c = home.join(".tool");
        fs::create_dir_all(c.join("commands")).unwrap();
        fs::create_dir_all(home.join("dotfiles")).unwrap();
        fs::create_dir_all(home.join(".ssh")).unwrap();
        let write = |p: &Path, mode: u32| {
            fs::write(p, b"x").unwrap();
            fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
        };
        write(&home.join("dotfiles/settings.json"), 0o644);
        write(&home.join("dotfiles/secret.json"), 0o600);
        write(&home.join(".ssh/config"), 0o644);
        write(&home.join("dotfiles/.credentials.json"), 0o644);
        symlink(home.join("dotfiles/settings.json"), c.join("settings.json")).unwrap();
        let cmd = |n: &str| c.join("commands").join(n);
        symlink(home.join("dotfiles/secret.json"), cmd("a.md")).unwrap();
        symlink(home.join(".ssh/config"), cmd("b.md")).unwrap();
        symlink(home.join("dotfiles/.credentials.json"), cmd("c.md")).unwrap();
        symlink(home.join("nowhere"), cmd("d.md")).unwrap();
        symlink(home.join("dotfiles"), cmd("e")).unwrap();
        symlink("/proc/version", cmd("f.md")).unwrap();
        write(&home.join("dotfiles/id_ed25519.pub"), 0o644);
        symlink(home.join("dotfiles/id_ed25519.pub"), cmd("h.md")).unwrap();
        write(&home.join("dotfiles/others-cannot-read"), 0o611);
        symlink(home.join("dotfiles/others-cannot-read"), cmd("i.md")).unwrap();
        write(&cmd("g.md"), 0o644);
        write(&cmd(".npmrc"), 0o644);
        write(&cmd("deploy.pem"), 0o644);
        write(&cmd("notes.txt"), 0o644);

        let found = collect(&home, &[c.join("settings.json")], &[c.join("commands")]);
        let kept: Vec<&str> = found.names().collect();
        assert_eq!(
            kept,
            [
                ".tool/commands/g.md",
                ".tool/commands/notes.txt",
                ".tool/settings.json"
            ]
        );
        assert_eq!(
            found.followed,
            [(
                c.join("settings.json"),
                fs::canonicalize(home.join("dotfiles/settings.json")).unwrap()
            )]
        );
        let names = |withheld: &[Withheld]| -> Vec<String> {
            let name = |w: &Withheld| w.path.file_name().unwrap().to_string_lossy().into_owned();
            withheld.iter().map(name).collect()
        };
        assert_eq!(
            names(&found.withheld),
            [
                ".npmrc",
                "a.md",
                "b.md",
                "c.md",
                "d.md",
                "deploy.pem",
                "e",
                "f.md",
                "h.md",
                "i.md"
            ]
        );

        // A finer rule drops what is not configuration from both lists.
        let md = collect(&home, &[], &[c.join("commands")]).only(|rel| rel.ends_with(".md"));
        assert_eq!(md.names().collect::<Vec<_>>(), [".tool/commands/g.md"]);
        assert_eq!(
            names(&md.withheld),
            ["a.md", "b.md", "c.md", "d.md", "f.md", "h.md", "i.md"]
        );

        // A folder outside the home is said once, not walked.
        let outside = collect(&c.join("commands"), &[], &[home.join("dotfiles")]);
        assert_eq!(outside.withheld.len(), 1);
        assert!(outside.keep.is_empty());
    }

    /// A file swapped between the screening and the reading is not read: a link retargeted at
    /// a key is screened again and left out with the screen's reason, and the others read.
    #[cfg(unix)]
    #[test]
    fn a_file_swapped_after_screening_is_not_read() {
        use std::os::unix::fs::symlink;
        let t = tempfile::tempdir().unwrap();
        let home = t.path();
        let c = home.join(".tool");
        fs::create_dir_all(&c).unwrap();
        fs::write(home.join("settings.real"), b"{}").unwrap();
        symlink(home.join("settings.real"), c.join("settings.json")).unwrap();
        fs::write(c.join("keybindings.json"), b"[]").unwrap();
        let found = collect(
            home,
            &[c.join("settings.json"), c.join("keybindings.json")],
            &[],
        );
        assert_eq!(found.keep.len(), 2);
        // Retargeted at a key after the screening (screened again: a file only its owner
        // may read is not followed).
        fs::write(home.join("key"), b"secret").unwrap();
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(home.join("key"), fs::Permissions::from_mode(0o600)).unwrap();
        }
        fs::remove_file(c.join("settings.json")).unwrap();
        symlink(home.join("key"), c.join("settings.json")).unwrap();
        let blobs = asp_format::blob::MemoryStore::new();
        let diagnostics = crate::kit::report::Diagnostics::new();
        let harness = crate::harness("claude-code").unwrap();
        let read = read(harness.as_ref(), &found, &blobs, &diagnostics).unwrap();
        assert!(read.unreadable.is_empty(), "{:?}", read.unreadable);
        let kept: Vec<&str> = read.native.files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(kept, [".tool/keybindings.json"]);
        assert!(!diagnostics.any_lost());
        let said: Vec<String> = diagnostics
            .items()
            .iter()
            .map(|i| i.message.clone())
            .collect();
        assert!(
            said.len() == 1 && said[0].contains("only its owner may read"),
            "{said:?}"
        );
    }

    /// A prompt history that ends without a newline and stays so is merged, not taken for
    /// one being written forever.
    #[test]
    fn a_history_without_a_final_newline_is_merged() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("history.jsonl");
        let there = b"{\"display\":\"a\",\"timestamp\":1}";
        fs::write(&path, there).unwrap();
        let want = b"{\"display\":\"b\",\"timestamp\":2}\n";
        let log = AppendedLog::prompts("timestamp");
        let placed = merge_log(&path, &log, there, want, &Writer::new(false)).unwrap();
        assert_eq!(placed, Placement::New);
        let merged = fs::read_to_string(&path).unwrap();
        assert!(
            merged.contains("\"a\"") && merged.contains("\"b\""),
            "{merged}"
        );
    }
}
