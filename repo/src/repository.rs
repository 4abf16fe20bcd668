//! The repository directory: an OCI image layout (through `asp_registry::layout`, the same
//! code `asp push --layout` and `asp pull --layout` use) plus `locks/`.
//!
//! Writes follow one order, so a process killed at any point leaves a repository that passes
//! `asp check`: layers first (each to a temporary file, synced, renamed), then the manifests
//! that name them, then `index.json` (replaced atomically under `locks/index`). At worst a
//! killed backup leaves blobs nothing names, which `asp prune` removes.
//!
//! Locks are `flock(2)` locks (`File::lock`), which the kernel releases when their process
//! dies: a backup, restore or check holds `locks/repo` shared, prune holds it exclusive, so
//! prune never deletes a blob a running backup is about to name. A command that only reads
//! takes its lock through a read-only handle when the repository cannot be written here (a
//! read-only mount, another user's repository): see [`Repository::lock_to_read`].

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use asp_format::bundle::layers::{Layers, StagedLayer};
use asp_format::digest::{Descriptor, Digest, HashingWriter, VerifyingReader};
use asp_registry::layout::{Layout, sync_dir};
use asp_registry::manifest::{IMAGE_MANIFEST, OciDescriptor};

use crate::error::RepoError;
use crate::snapshot::{SNAPSHOT_ARTIFACT, SnapshotInfo};

/// The environment variable naming the repository.
pub const REPO_ENV: &str = "ASP_REPO";
const LOCKS: &str = "locks";

/// What [`Repository::rebuild_index`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RebuiltIndex {
    /// Snapshots the new index lists.
    pub snapshots: usize,
    /// Blobs that looked like snapshot manifests but whose bytes do not match their name, or
    /// whose annotations are not a snapshot's: not listed.
    pub damaged: Vec<Digest>,
    /// Where the index there before was kept, when there was one.
    pub kept_aside: Option<PathBuf>,
    /// Entries of the index there before that are not snapshots and could not be read, so
    /// are not listed again (they are in `kept_aside`; a prune would delete their blobs).
    pub entries_unread: usize,
    /// The index there before could not be read whole (then `entries_unread` counts what of
    /// it could not be read at all; an index that is not JSON gives nothing to count).
    pub unreadable_before: bool,
}

/// A snapshot repository.
#[derive(Debug, Clone)]
pub struct Repository {
    layout: Layout,
    waiting: WaitNotice,
    /// How long to wait for `locks/repo` before giving up; `None`: as long as it takes
    /// ([`Repository::with_lock_wait`]).
    lock_wait: Option<std::time::Duration>,
    /// The layout is another tool's, said with what its index lists: no `locks/` folder, and
    /// an index listing entries but no snapshot ([`Repository::refuse_foreign`]). Nothing is
    /// made in it, and no command writes into it.
    foreign: Option<String>,
}

/// What to tell the person when a lock is held by another process and this one waits for it
/// ([`Repository::with_wait_notice`]): a wait can last as long as a prune, and a command that
/// says nothing meanwhile looks hung. (Also what a read without any lock says,
/// [`Repository::lock_to_read`].)
#[derive(Clone, Default)]
struct WaitNotice(Option<std::sync::Arc<Notice>>);

/// How a [`WaitNotice`] says it.
type Notice = dyn Fn(&str) + Send + Sync;

impl std::fmt::Debug for WaitNotice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "WaitNotice(set)"
        } else {
            "WaitNotice(none)"
        })
    }
}

/// Takes the lock of `f` (at `path`) if no other process holds it: `false` when one does.
fn try_take(f: &File, exclusive: bool, path: &Path) -> Result<bool, RepoError> {
    let tried = if exclusive {
        f.try_lock()
    } else {
        f.try_lock_shared()
    };
    match tried {
        Ok(()) => Ok(true),
        Err(std::fs::TryLockError::WouldBlock) => Ok(false),
        Err(std::fs::TryLockError::Error(e)) => Err(RepoError::io(path)(e)),
    }
}

/// A duration in seconds, as `--lock-wait` takes it back: `90s`, `1.5s` (`10m` is `600s`).
fn seconds(d: std::time::Duration) -> String {
    let ms = d.as_millis();
    if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// Stored blobs by digest, each read as a reader that checks its size and digest: the
/// repository's own, or those of a pull staged beside it and checked before they join it.
pub trait RawBlobs: std::fmt::Debug + Send + Sync {
    fn open_raw(&self, d: &Descriptor) -> Result<Box<dyn Read + Send>, RepoError>;
}

impl RawBlobs for Repository {
    fn open_raw(&self, d: &Descriptor) -> Result<Box<dyn Read + Send>, RepoError> {
        Repository::open_raw(self, d)
    }
}

/// A held lock; released when dropped (or when the process dies). `None`: a read of a
/// repository that has no lock file and cannot be given one here, or of another tool's layout
/// ([`Repository::lock_to_read`]).
#[derive(Debug)]
pub struct Lock {
    _file: Option<File>,
}

/// Whether an error opening or making a file of the repository says that it cannot be written
/// here (a read-only mount; a directory or lock file of another user's), rather than that
/// something failed.
fn cannot_write(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::ReadOnlyFilesystem | io::ErrorKind::PermissionDenied
    )
}

/// The lock file at `path`, opened to be written (made, with `locks/`, when it is not there:
/// [`Repository::open`] goes on without `locks/` where it cannot make it).
fn open_lock(path: &Path) -> io::Result<File> {
    let open = || {
        OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(path)
    };
    match open() {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if let Some(locks) = path.parent() {
                fs::create_dir_all(locks)?;
            }
            open()
        }
        opened => opened,
    }
}

/// Whether `root` holds nothing but a `locks/` folder of files: a repository a failed first
/// pull took away again (see `RepoSink::discard`).
fn only_locks(root: &Path) -> Result<bool, RepoError> {
    let Ok(entries) = fs::read_dir(root) else {
        return Ok(false);
    };
    let mut seen = false;
    for e in entries {
        let e = e.map_err(RepoError::io(root))?;
        if e.file_name() != LOCKS || !e.file_type().map_err(RepoError::io(root))?.is_dir() {
            return Ok(false);
        }
        seen = true;
    }
    if !seen {
        return Ok(false);
    }
    let locks = root.join(LOCKS);
    for e in fs::read_dir(&locks).map_err(RepoError::io(&locks))? {
        let e = e.map_err(RepoError::io(&locks))?;
        if !e.file_type().map_err(RepoError::io(&locks))?.is_file() {
            return Ok(false);
        }
    }
    Ok(true)
}

/// What a blob of `blobs/` is to `--rebuild-index` ([`snapshot_manifest_at`]).
#[derive(Debug)]
pub(crate) enum ManifestAt {
    /// A snapshot manifest whose bytes match its name, and its size.
    Snapshot(Box<asp_registry::manifest::ImageManifest>, u64),
    /// It names the snapshot artifact type but its bytes do not match its name.
    Damaged,
    /// Anything else (a layer, a content manifest, a link, a file too large to be one).
    NotOne,
}

/// The newest of each series (harness, home) of `snapshots`, an index's listing oldest first,
/// in (harness, home) order.
pub fn newest_of_each_series(snapshots: &[SnapshotInfo]) -> Vec<SnapshotInfo> {
    let mut newest = std::collections::BTreeMap::new();
    for s in snapshots {
        newest.insert((&s.harness, &s.home), s);
    }
    newest.into_values().cloned().collect()
}

/// Whether the blob at `path`, named `digest`, is a snapshot manifest: what
/// `--rebuild-index` lists again and `asp check` looks for when the index names a manifest
/// `blobs/` lacks. A link is never one.
pub(crate) fn snapshot_manifest_at(path: &Path, digest: Digest) -> Result<ManifestAt, RepoError> {
    // Snapshot manifests are small (a few layers' descriptors); a registry takes at most
    // 4 MiB in one manifest.
    const LARGEST: u64 = 4 << 20;
    let io_err = |source| RepoError::Io {
        path: path.to_path_buf(),
        source,
    };
    let meta = fs::symlink_metadata(path).map_err(io_err)?;
    if !meta.is_file() || meta.len() > LARGEST {
        return Ok(ManifestAt::NotOne);
    }
    let bytes = fs::read(path).map_err(io_err)?;
    if !bytes
        .windows(SNAPSHOT_ARTIFACT.len())
        .any(|w| w == SNAPSHOT_ARTIFACT.as_bytes())
    {
        return Ok(ManifestAt::NotOne);
    }
    // The digest first: a cut manifest does not parse, and must be counted, not passed over.
    if Digest::of(&bytes) != digest {
        return Ok(ManifestAt::Damaged);
    }
    Ok(
        match serde_json::from_slice::<asp_registry::manifest::ImageManifest>(&bytes) {
            Ok(m) if m.artifact_type.as_deref() == Some(SNAPSHOT_ARTIFACT) => {
                ManifestAt::Snapshot(Box::new(m), bytes.len() as u64)
            }
            _ => ManifestAt::NotOne,
        },
    )
}

/// What the index of the layout at `root` lists, said for [`Repository::refuse_foreign`],
/// when the layout is another tool's: it has no `locks/` folder, and its index lists entries
/// and none of them an asp snapshot. `None` for an asp repository (`locks/` there, a snapshot
/// listed, or an index with no entries, as a first backup or pull makes), and for an index
/// that cannot be read (named by the command that reads it).
fn foreign_entries(root: &Path, layout: &Layout) -> Option<String> {
    if root.join(LOCKS).is_dir() {
        return None;
    }
    let index = layout.index().ok()?;
    if index.manifests.is_empty()
        || index
            .manifests
            .iter()
            .any(|d| d.artifact_type.as_deref() == Some(SNAPSHOT_ARTIFACT))
    {
        return None;
    }
    let named: Vec<String> = index
        .manifests
        .iter()
        .take(3)
        .map(|d| {
            d.annotations
                .get(asp_registry::manifest::REF_NAME)
                .cloned()
                .unwrap_or_else(|| d.digest.to_string())
        })
        .collect();
    let more = match index.manifests.len() {
        n if n > 3 => format!(", … {n} in all"),
        _ => String::new(),
    };
    // asp's own state artifacts (what `asp pull --layout` writes) are not another tool's, but
    // not a repository either: said as what they are, and what reads them.
    let whose = match index
        .manifests
        .iter()
        .all(|d| d.artifact_type.as_deref() == Some(asp_registry::manifest::ARTIFACT_TYPE))
    {
        true => {
            "asp state artifacts (as `asp pull --layout` writes them; `asp push --layout` \
                 pushes from it)"
        }
        false => "another tool",
    };
    Some(format!(
        "an OCI image layout of {whose}, not an asp repository: its index.json lists {}{more}",
        named.join(", ")
    ))
}

impl Repository {
    /// Where the repository is when none is named: `$ASP_REPO`, else
    /// `$XDG_DATA_HOME/asp/repo`, else `~/.local/share/asp/repo`.
    pub fn default_location() -> Option<PathBuf> {
        let var = |k: &str| {
            std::env::var_os(k)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        if let Some(r) = var(REPO_ENV) {
            return Some(r);
        }
        if let Some(d) = var("XDG_DATA_HOME") {
            return Some(d.join("asp").join("repo"));
        }
        var("HOME").map(|h| h.join(".local").join("share").join("asp").join("repo"))
    }

    /// Whether a repository is at `root` (its `oci-layout` file, written last when one is
    /// made).
    pub fn is_at(root: &Path) -> bool {
        root.join("oci-layout").exists()
    }

    /// Whether the layout at `root` is a snapshot repository, not only an OCI image layout: it
    /// has the `locks/` folder every backup and pull makes, or its index lists a snapshot (by
    /// its home annotation: a snapshot record, which a plain layout may hold, has the same
    /// artifact type and no home). What writes a plain layout (`asp pull --layout`) refuses
    /// one: it would change the index without the repository's lock, and a backup made
    /// meanwhile would lose its entry.
    pub fn is_snapshot_repository(root: &Path) -> bool {
        Repository::is_at(root)
            && (root.join(LOCKS).is_dir()
                || Layout::open(root).and_then(|l| l.index()).is_ok_and(|i| {
                    i.manifests
                        .iter()
                        .any(|d| d.annotations.contains_key(crate::snapshot::HOME_ANNOTATION))
                }))
    }

    /// Opens the repository at `root`, which must exist.
    pub fn open(root: &Path) -> Result<Self, RepoError> {
        if !Repository::is_at(root) {
            // `asp backup` makes a repository only where nothing is: say so only there.
            let empty = std::fs::read_dir(root).map_or(true, |mut d| d.next().is_none());
            let hint = if root.is_dir() && !empty && only_locks(root).unwrap_or(false) {
                // What a failed first pull or backup leaves: ours, and no repository yet.
                format!(
                    " (it holds only the locks/ folder a backup or pull that failed before \
                     making one left: `asp backup --from HARNESS --repo {0}` or `asp pull REF --repo {0}` \
                     makes it there)",
                    root.display()
                )
            } else if root.is_dir() && !empty {
                " (a directory with other files: give another --repo)".to_owned()
            } else if root.exists() && !root.is_dir() {
                " (it is a file: give a directory)".to_owned()
            } else {
                format!(
                    "; `asp backup --from HARNESS --repo {0}` creates one, `asp pull REF --repo \
                     {0}` brings one from a registry",
                    root.display()
                )
            };
            return Err(RepoError::NotARepository(format!(
                "{} is not an asp repository (no oci-layout file){hint}",
                root.display()
            )));
        }
        let layout = Layout::open(root)?;
        let foreign = foreign_entries(root, &layout);
        let repo = Repository {
            layout,
            waiting: WaitNotice::default(),
            lock_wait: None,
            foreign,
        };
        if repo.foreign.is_none() {
            repo.ensure_dirs()?;
        }
        Ok(repo)
    }

    /// Opens the repository at `root`, creating it when the directory is missing, empty, or
    /// holds only the lock files a failed first pull leaves.
    /// The layout is made in a directory beside `root` and renamed into place, so two
    /// processes creating the same repository at once both end up opening one.
    /// An OCI image layout there already is opened only when it is an asp repository: one
    /// with no `locks/` folder whose index lists entries but no snapshot is another tool's
    /// ([`Repository::refuse_foreign`]).
    pub fn open_or_init(root: &Path) -> Result<Self, RepoError> {
        Repository::open_or_make(root).map(|(repo, _)| repo)
    }

    /// [`Repository::open_or_init`], and whether this call made it: of two first backups at
    /// once, one makes it and the other opens it (both said they made it: new-user trial
    /// helper-130, 6).
    pub fn open_or_make(root: &Path) -> Result<(Self, bool), RepoError> {
        if Repository::is_at(root) {
            let repo = Repository::open(root)?;
            repo.refuse_foreign()?;
            return Ok((repo, false));
        }
        if fs::metadata(root).is_ok_and(|m| !m.is_dir()) {
            // (It was "Not a directory (os error 20)": new-user trial helper-137, 11.)
            return Err(RepoError::NotARepository(format!(
                "{} is a file, not an asp repository (a directory): give --repo a directory",
                root.display()
            )));
        }
        if only_locks(root)? {
            // What a failed first pull leaves: the lock files, never unlinked (another process
            // may hold one). The layout is made in place under the lock, `oci-layout` last.
            let path = root.join(LOCKS).join("repo");
            let f = OpenOptions::new()
                .create(true)
                .truncate(false)
                .read(true)
                .write(true)
                .open(&path)
                .map_err(RepoError::io(&path))?;
            f.lock().map_err(RepoError::io(&path))?;
            let made = !root.join("oci-layout").exists();
            if made {
                Layout::init(root)?;
                sync_dir(root).map_err(RepoError::io(root))?;
            }
            drop(f);
            return Ok((Repository::open(root)?, made));
        }
        if root.exists()
            && fs::read_dir(root)
                .map_err(RepoError::io(root))?
                .next()
                .is_some()
        {
            return Err(RepoError::NotARepository(format!(
                "{} exists, is not empty and is not an asp repository",
                root.display()
            )));
        }
        let parent = match root.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&parent).map_err(RepoError::io(&parent))?;
        let staging = tempfile::Builder::new()
            .prefix(".asp-repo-")
            .tempdir_in(&parent)
            .map_err(RepoError::io(&parent))?;
        Layout::init(staging.path())?;
        fs::create_dir_all(staging.path().join(LOCKS)).map_err(RepoError::io(staging.path()))?;
        // Onto a missing or empty directory; fails when another process got there first.
        let staged = staging.keep();
        let made = fs::rename(&staged, root).is_ok();
        if made {
            sync_dir(&parent).map_err(RepoError::io(&parent))?;
        } else {
            let _ = fs::remove_dir_all(&staged);
        }
        Ok((Repository::open(root)?, made))
    }

    /// Refuses to make a repository of another tool's OCI image layout, or to write into one:
    /// a layout with no `locks/` folder whose `index.json` lists entries and none of them an
    /// asp snapshot (an image a container tool keeps there). `asp backup` makes a repository
    /// only where nothing is, but the layout's `oci-layout` file made any such folder look
    /// like one, and its images were then only "unreferenced" blobs to `asp check` (found by a
    /// new user's trial, whose `asp prune` then deleted them; prune now keeps what such entries
    /// name, see [`crate::prune::other_entries`]).
    ///
    /// `locks/` tells an asp repository whose snapshots were all forgotten, beside an image put
    /// into it by hand, from another tool's layout: asp makes it when it makes a repository,
    /// and every command that writes into one needs it; and asp makes nothing in a layout
    /// this refuses, not even for a command that only reads it (`asp check` on another tool's
    /// layout made `locks/`, and the layout then passed for a repository). An empty index is a
    /// repository a first backup or pull has just made; an index that cannot be read is named
    /// by the command that reads it.
    pub fn refuse_foreign(&self) -> Result<(), RepoError> {
        match &self.foreign {
            None => Ok(()),
            Some(named) => Err(RepoError::NotARepository(format!(
                "{} is {named} and no asp snapshot, and it has no locks/ folder, which asp makes \
                 in each repository; asp makes no repository in it and writes nothing into it \
                 (give another --repo: an empty or missing directory; `asp check` reads it as it \
                 is. An asp repository whose snapshots were all forgotten has its locks/ folder: \
                 if this is one that lost it, `mkdir {}` makes it one again)",
                self.root().display(),
                self.root().join(LOCKS).display()
            ))),
        }
    }

    /// The entries of `index.json` that are not asp snapshots: another tool's images (put
    /// into the layout by hand, say), never read as snapshots, and kept with everything they
    /// name by prune and check ([`crate::prune::other_entries`]).
    pub fn other_entries(&self) -> Result<Vec<OciDescriptor>, RepoError> {
        let mut index = self.index()?;
        index
            .manifests
            .retain(|d| d.artifact_type.as_deref() != Some(SNAPSHOT_ARTIFACT));
        Ok(index.manifests)
    }

    /// `locks/repo`, exclusive, without waiting: `None` while another process holds it.
    pub fn try_lock_exclusive(&self) -> Result<Option<Lock>, RepoError> {
        let f = self.lock_file("repo")?;
        let path = self.root().join(LOCKS).join("repo");
        Ok(try_take(&f, true, &path)?.then_some(Lock { _file: Some(f) }))
    }

    /// Makes `locks/` and `blobs/sha256/` when they are missing. A repository that cannot be
    /// written here is opened all the same: the commands that only read it need neither made,
    /// and one that writes says it cannot when it takes its lock ([`RepoError::ReadOnly`]).
    fn ensure_dirs(&self) -> Result<(), RepoError> {
        for d in [self.root().join(LOCKS), self.blobs_dir()] {
            match fs::create_dir_all(&d) {
                Err(e) if !cannot_write(&e) => return Err(RepoError::io(&d)(e)),
                _ => {}
            }
        }
        Ok(())
    }

    pub fn root(&self) -> &Path {
        self.layout.root()
    }

    /// The OCI image layout underneath.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn blobs_dir(&self) -> PathBuf {
        self.root().join("blobs").join("sha256")
    }

    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.layout.blob_path(digest)
    }

    /// Whether the blob is stored with the right size.
    pub fn has_blob(&self, blob: &Descriptor) -> bool {
        self.layout.has_blob(blob)
    }

    /// A lock file, for a command that writes into the repository: one that cannot be opened
    /// to be written (or made) says the repository cannot be written here.
    fn lock_file(&self, name: &str) -> Result<File, RepoError> {
        self.refuse_foreign()?;
        let path = self.root().join(LOCKS).join(name);
        open_lock(&path).map_err(|source| {
            if cannot_write(&source) {
                RepoError::ReadOnly {
                    root: self.root().to_path_buf(),
                    path: path.clone(),
                    source,
                }
            } else {
                RepoError::io(&path)(source)
            }
        })
    }

    /// Says `notice` once each time a lock of the repository is held by another process and
    /// this one waits for it (a backup while a prune runs, a prune while backups run).
    #[must_use]
    pub fn with_wait_notice(mut self, notice: impl Fn(&str) + Send + Sync + 'static) -> Self {
        self.waiting = WaitNotice(Some(std::sync::Arc::new(notice)));
        self
    }

    /// Gives up waiting for `locks/repo` after `limit` ([`RepoError::Locked`]; at once for
    /// zero): a cron job behind a prune that hangs should fail and mail, not pile up.
    #[must_use]
    pub fn with_lock_wait(mut self, limit: std::time::Duration) -> Self {
        self.lock_wait = Some(limit);
        self
    }

    /// `locks/repo`, shared, for a command that writes into the repository (backup, pull,
    /// forget, `check --rebuild-index`): backups, restores and checks run side by side; waits
    /// while a prune runs. A repository that cannot be written here is an error
    /// ([`RepoError::ReadOnly`]).
    pub fn lock_shared(&self) -> Result<Lock, RepoError> {
        self.lock_repo(false, self.lock_file("repo")?)
    }

    /// `locks/repo`, shared, for a command that only reads the repository (restore, check,
    /// `asp sessions`, pack, push): as [`Repository::lock_shared`], but a repository this
    /// process cannot write (a read-only mount, one of another user's) is read all the same.
    /// `flock(2)` takes a lock through a read-only handle, so the lock file there is opened
    /// read-only and locked as ever: a prune that can write there, through another mount or
    /// as its owner, is still waited for (found by a new user's trial: a restore from a
    /// read-only mount failed on making the lock file, before reading anything). When there is
    /// no lock file and none can be made, or the one there cannot be opened even to be read (a
    /// lock file of another user's, mode 0600), nothing is locked, and that is said: whoever could
    /// write there could have made it, so nothing that writes is likely to run, but a
    /// repository whose permissions differ between users, or that is mounted read-write
    /// elsewhere, is not proof of it. Another tool's layout is read without a lock, and
    /// without a word: no asp command writes into it ([`Repository::refuse_foreign`]).
    pub fn lock_to_read(&self) -> Result<Lock, RepoError> {
        if self.foreign.is_some() {
            // Another tool's layout: no asp command writes into it (they refuse it), so
            // nothing is waited for, and no `locks/` is made that would pass it for a
            // repository ([`Repository::refuse_foreign`]).
            return Ok(Lock { _file: None });
        }
        let path = self.root().join(LOCKS).join("repo");
        let unlocked = |why: String| {
            if let Some(say) = &self.waiting.0 {
                say(&format!(
                    "note: {} is read without a lock: {why}; an asp command writing into it \
                     meanwhile (as another user, or through a writable mount of it) is not \
                     waited for",
                    self.root().display(),
                ));
            }
            Ok(Lock { _file: None })
        };
        let f = match open_lock(&path) {
            Ok(f) => f,
            Err(e) if cannot_write(&e) => match File::open(&path) {
                Ok(f) => f,
                Err(missing) if missing.kind() == io::ErrorKind::NotFound => {
                    return unlocked(format!(
                        "it has no lock file and none can be made here ({}: {e})",
                        path.display()
                    ));
                }
                // A lock file (or a locks/ folder) of another user's that this one may not
                // read either (mode 0600, say): a bare "Permission denied" stopped the read.
                Err(denied) if cannot_write(&denied) => {
                    return unlocked(format!(
                        "its lock file cannot be opened here, not even to be read ({}: {denied})",
                        path.display()
                    ));
                }
                Err(other) => return Err(RepoError::io(&path)(other)),
            },
            Err(e) => return Err(RepoError::io(&path)(e)),
        };
        self.lock_repo(false, f)
    }

    /// `locks/repo`, exclusive: what prune holds while it deletes blobs.
    pub fn lock_exclusive(&self) -> Result<Lock, RepoError> {
        self.lock_repo(true, self.lock_file("repo")?)
    }

    /// `locks/repo`, through its file `f`, at once when it is free, else after saying why it
    /// waits.
    fn lock_repo(&self, exclusive: bool, f: File) -> Result<Lock, RepoError> {
        let path = self.root().join(LOCKS).join("repo");
        let holder = if exclusive {
            format!(
                "the other asp commands using {} (backups, restores, checks)",
                self.root().display()
            )
        } else {
            format!(
                "the asp prune (or check --repair) running on {}",
                self.root().display()
            )
        };
        self.take_waiting(f, exclusive, path, holder)
    }

    /// The lock of one series (a harness's store in one home, as [`Repository::latest`]
    /// names it), exclusive, held by whatever adds a snapshot to the series (a backup, a
    /// backup of a bundle, `asp forget --session` / `--gone-before`) from the moment it picks
    /// the series' newest snapshot as its parent until its own is in the index. Two at once
    /// would each build on the same parent, and the one that started later, the newest, would
    /// not hold what the other saw: a session the source deleted in between would be only in
    /// the other, which a keep policy forgets (found by review helper-123). Waits, as for
    /// `locks/repo`, while another holds it. `locks/series-<hex>`, named by the sha256 of
    /// harness and home.
    pub fn lock_series(&self, harness: &str, home: &str) -> Result<Lock, RepoError> {
        let key = Digest::of(format!("{harness}\0{home}").as_bytes()).hex();
        let name = format!("series-{}", &key[..16]);
        let f = self.lock_file(&name)?;
        let path = self.root().join(LOCKS).join(&name);
        let holder = format!("the other asp backup (or forget) of {harness} in {home}");
        self.take_waiting(f, true, path, holder)
    }

    /// The lock `asp forget` holds from reading the index to writing it (`locks/forget`), so
    /// that two forgets never plan on what the other is removing: a policy that kept a
    /// series' newest because it was the newest, and a `--snapshot` that forgot that newest,
    /// left the series empty between them (review helper-133, 4). Backups do not take it:
    /// a snapshot they add is newer than any a plan removes.
    pub fn lock_forget(&self) -> Result<Lock, RepoError> {
        let name = "forget";
        let f = self.lock_file(name)?;
        let path = self.root().join(LOCKS).join(name);
        self.take_waiting(f, true, path, "another asp forget".to_owned())
    }

    /// Takes the lock on `f` (at `path`), waiting while `holder` has it, as long as
    /// [`Repository::with_lock_wait`] allows, saying so through the wait notice.
    fn take_waiting(
        &self,
        f: File,
        exclusive: bool,
        path: PathBuf,
        holder: String,
    ) -> Result<Lock, RepoError> {
        if try_take(&f, exclusive, &path)? {
            return Ok(Lock { _file: Some(f) });
        }
        let Some(limit) = self.lock_wait else {
            if let Some(say) = &self.waiting.0 {
                say(&format!(
                    "waiting for {holder} to end ({} is locked)",
                    path.display()
                ));
            }
            if exclusive { f.lock() } else { f.lock_shared() }.map_err(RepoError::io(&path))?;
            return Ok(Lock { _file: Some(f) });
        };
        if let Some(say) = self.waiting.0.as_ref().filter(|_| !limit.is_zero()) {
            say(&format!(
                "waiting up to {} for {holder} to end ({} is locked)",
                seconds(limit),
                path.display()
            ));
        }
        // `flock(2)` has no timeout: tried again every 50 ms until the limit.
        let start = std::time::Instant::now();
        loop {
            if try_take(&f, exclusive, &path)? {
                return Ok(Lock { _file: Some(f) });
            }
            let waited = start.elapsed();
            if waited >= limit {
                return Err(RepoError::Locked {
                    path,
                    waited: seconds(limit),
                    holder,
                });
            }
            std::thread::sleep((limit - waited).min(std::time::Duration::from_millis(50)));
        }
    }

    fn lock_index(&self) -> Result<Lock, RepoError> {
        let f = self.lock_file("index")?;
        f.lock()
            .map_err(RepoError::io(self.root().join(LOCKS).join("index")))?;
        Ok(Lock { _file: Some(f) })
    }

    /// The index; one that cannot be read is named with the way back.
    fn index(&self) -> Result<asp_registry::manifest::ImageIndex, RepoError> {
        const WAY_BACK: &str =
            "the snapshots are still in blobs/: `asp check --rebuild-index` lists them again";
        let path = self.root().join("index.json");
        self.layout.index().map_err(|e| match e {
            asp_registry::Error::Integrity(m) => RepoError::Integrity(format!("{m}; {WAY_BACK}")),
            _ if !path.exists() => {
                RepoError::Integrity(format!("{} is missing; {WAY_BACK}", path.display()))
            }
            e => e.into(),
        })
    }

    /// Writes a new `index.json` that lists every snapshot manifest in `blobs/`: the way back
    /// from an index that was damaged or deleted, since every snapshot's manifest carries
    /// what the index says of it (its annotations). A snapshot forgotten but not yet pruned
    /// is listed again. The index there before, readable or not, is kept beside as
    /// `index.json.before-rebuild` (`.1`, `.2`, … when that is taken); what it listed that is not a
    /// snapshot of this repository (an image put into the layout by hand) is listed again.
    /// Blobs whose bytes do not match their name are passed over and counted.
    pub fn rebuild_index(&self) -> Result<RebuiltIndex, RepoError> {
        // Shared, as a backup holds it: a prune (exclusive) is not deleting the blobs of a
        // snapshot this lists again.
        let _repo = self.lock_shared()?;
        let _lock = self.lock_index()?;
        let mut rebuilt = RebuiltIndex::default();
        let mut kept = match self.layout.index() {
            Ok(old) => old,
            // What can be read of it, entry by entry: another tool's image listed there must
            // stay listed, or a prune deletes its blobs.
            Err(_) => {
                let (index, unread) = salvaged_index(&self.root().join("index.json"));
                rebuilt.entries_unread = unread;
                rebuilt.unreadable_before = self.root().join("index.json").exists();
                index
            }
        };
        kept.manifests
            .retain(|d| d.artifact_type.as_deref() != Some(SNAPSHOT_ARTIFACT));
        let dir = self.blobs_dir();
        let io_err = |path: &Path, source| RepoError::Io {
            path: path.to_path_buf(),
            source,
        };
        let mut names: Vec<PathBuf> = fs::read_dir(&dir)
            .map_err(|e| io_err(&dir, e))?
            .map(|e| e.map(|e| e.path()))
            .collect::<Result<_, _>>()
            .map_err(|e| io_err(&dir, e))?;
        names.sort();
        let mut found = Vec::new();
        for path in names {
            let Some(digest) = path
                .file_name()
                .and_then(|n| n.to_str())
                .and_then(|n| format!("sha256:{n}").parse::<Digest>().ok())
            else {
                continue;
            };
            let (m, size) = match snapshot_manifest_at(&path, digest)? {
                ManifestAt::Snapshot(m, size) => (m, size),
                ManifestAt::Damaged => {
                    rebuilt.damaged.push(digest);
                    continue;
                }
                ManifestAt::NotOne => continue,
            };
            let mut d = OciDescriptor::new(IMAGE_MANIFEST, Descriptor { digest, size });
            d.artifact_type = Some(SNAPSHOT_ARTIFACT.to_owned());
            d.annotations = m.annotations;
            match SnapshotInfo::from_descriptor(&d) {
                Ok(info) => found.push((info, d)),
                Err(_) => rebuilt.damaged.push(digest),
            }
        }
        found.sort_by(|(a, _), (b, _)| (&a.created, a.digest).cmp(&(&b.created, b.digest)));
        let index_path = self.root().join("index.json");
        if index_path.exists() {
            // Never over an earlier copy: it may be the only one of a damaged index.
            let aside = (0..)
                .map(|n| match n {
                    0 => self.root().join("index.json.before-rebuild"),
                    n => self.root().join(format!("index.json.before-rebuild.{n}")),
                })
                .find(|p| !p.exists())
                .expect("a free name");
            fs::copy(&index_path, &aside).map_err(|e| io_err(&aside, e))?;
            rebuilt.kept_aside = Some(aside);
        }
        rebuilt.snapshots = found.len();
        kept.manifests.extend(found.into_iter().map(|(_, d)| d));
        self.layout.write_index(&kept)?;
        Ok(rebuilt)
    }

    /// Every snapshot the index lists, oldest first (by time, then digest).
    pub fn snapshots(&self) -> Result<Vec<SnapshotInfo>, RepoError> {
        let index = self.index()?;
        let mut out = Vec::new();
        for d in &index.manifests {
            if d.artifact_type.as_deref() != Some(SNAPSHOT_ARTIFACT) {
                continue;
            }
            out.push(SnapshotInfo::from_descriptor(d)?);
        }
        out.sort_by(|a, b| (&a.created, a.digest).cmp(&(&b.created, b.digest)));
        Ok(out)
    }

    /// The newest snapshot of `harness` in `home` (as [`crate::backup::home_name`] names it).
    /// The name is compared as it is recorded, as `forget` and `asp sessions` group snapshots:
    /// a chain recorded under another spelling of the same directory by an earlier version
    /// stays a chain of its own, so that no keep policy ever sees one home as two.
    pub fn latest(&self, harness: &str, home: &str) -> Result<Option<SnapshotInfo>, RepoError> {
        Ok(self
            .snapshots()?
            .into_iter()
            .rev()
            .find(|s| s.harness == harness && s.home == home))
    }

    /// The newest snapshot of each series (harness and home), ordered by harness then home.
    /// The newest snapshot of a series holds every session of it (one the source deleted is
    /// kept as gone), so these together hold every session the repository has.
    pub fn newest_of_each_series(&self) -> Result<Vec<SnapshotInfo>, RepoError> {
        Ok(newest_of_each_series(&self.snapshots()?))
    }

    /// The snapshot an id names: its digest (`sha256:…` or hex) or a unique prefix of the hex
    /// of at least 4 characters.
    pub fn find(&self, id: &str) -> Result<SnapshotInfo, RepoError> {
        let hex = id
            .strip_prefix("sha256:")
            .unwrap_or(id)
            .to_ascii_lowercase();
        if hex.len() < 4 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(RepoError::Usage(format!(
                "{id:?} is not a snapshot id (its digest, or the first 4 or more hex digits)"
            )));
        }
        let all = self.snapshots()?;
        let found: Vec<&SnapshotInfo> = all
            .iter()
            .filter(|s| s.digest.hex().starts_with(&hex))
            .collect();
        match found.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(RepoError::Usage(format!(
                "{} has no snapshot {id} (`asp snapshots` lists them)",
                self.root().display()
            ))),
            many => Err(RepoError::Usage(format!(
                "{id} names {} snapshots; give more digits",
                many.len()
            ))),
        }
    }

    /// Lists a stored snapshot manifest in the index (under `locks/index`).
    pub fn add_snapshot(&self, info: &SnapshotInfo) -> Result<(), RepoError> {
        let _lock = self.lock_index()?;
        let mut index = self.index()?;
        if index.manifests.iter().any(|m| m.digest == info.digest) {
            return Ok(());
        }
        let mut d = OciDescriptor::new(
            IMAGE_MANIFEST,
            Descriptor {
                digest: info.digest,
                size: info.size,
            },
        );
        d.artifact_type = Some(SNAPSHOT_ARTIFACT.to_owned());
        d.annotations = info.annotations();
        index.manifests.push(d);
        self.layout.write_index(&index)?;
        Ok(())
    }

    /// Drops snapshots from the index (under `locks/index`); their blobs stay until prune.
    pub fn remove_snapshots(&self, digests: &[Digest]) -> Result<(), RepoError> {
        let _lock = self.lock_index()?;
        let mut index = self.index()?;
        index.manifests.retain(|m| !digests.contains(&m.digest));
        self.layout.write_index(&index)?;
        Ok(())
    }

    /// Stores `bytes` as a blob; see [`Repository::put_document`].
    pub fn put_bytes(&self, bytes: &[u8]) -> Result<Descriptor, RepoError> {
        Ok(self.put_document(bytes)?.0)
    }

    /// Stores `bytes` (a document: a manifest, a state manifest's part, a record, all held
    /// in memory) as a blob, and says how. A blob already there is read back and kept when
    /// it holds these bytes; one that does not (a bit flipped on disk: same name and size,
    /// other bytes) is replaced by them, atomically. Trusting the name alone would make every
    /// later snapshot that writes the same document name the damaged copy, unreadable from
    /// the moment it is written (found by a new user's trial: one flipped byte in a state
    /// manifest's part shared by every snapshot of a home). Reading a document back costs
    /// what writing it would, a few megabytes a backup at most.
    pub fn put_document(&self, bytes: &[u8]) -> Result<(Descriptor, Put), RepoError> {
        let d = Descriptor::of(bytes);
        let path = self.blob_path(&d.digest);
        // A file of that name, whatever its size (one cut short is damaged too); read back
        // only at the right size, so never more than the document itself.
        if std::fs::metadata(&path).is_ok_and(|m| m.is_file()) {
            if self.has_blob(&d) {
                match std::fs::read(&path) {
                    Ok(there) if there == bytes => return Ok((d, Put::Kept)),
                    Ok(_) => {}
                    Err(e) => return Err(RepoError::io(&path)(e)),
                }
            }
            let pending = self.write_new(&d, &mut |w| w.write_all(bytes), true)?;
            pending.persist()?;
            self.sync_blobs()?;
            return Ok((d, Put::Mended));
        }
        self.layout.put_blob(bytes)?;
        Ok((d, Put::Stored))
    }

    /// Writes a staged layer as a blob unless it is there already, not yet in place: see
    /// [`Repository::write_pending`].
    pub fn put_staged(
        &self,
        layers: &Layers,
        staged: &StagedLayer,
    ) -> Result<Option<PendingBlob>, RepoError> {
        let d = Descriptor {
            digest: staged.layer.layer,
            size: staged.layer.size,
        };
        self.write_pending(&d, &mut |w| layers.copy_to(staged, w).map(|_| ()))
    }

    /// Stores the blob `d` unless it is there already, its bytes written by `write`; true when
    /// it was written. Written to a temporary file in `blobs/sha256/`, its digest checked,
    /// synced, then renamed into place: a blob file is whole or absent.
    pub fn put_with(
        &self,
        d: &Descriptor,
        write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> Result<bool, RepoError> {
        let Some(pending) = self.write_blob(d, write, true)? else {
            return Ok(false);
        };
        pending.persist()?;
        Ok(true)
    }

    /// Writes the blob `d` to a temporary file in `blobs/sha256/` and checks its digest, unless
    /// the blob is there already (`None`). It is not in place until
    /// [`Repository::commit_blobs`] makes it durable and renames it; dropped, it is removed.
    pub fn write_pending(
        &self,
        d: &Descriptor,
        write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
    ) -> Result<Option<PendingBlob>, RepoError> {
        // Only Linux can sync a whole batch at once (`syncfs`); elsewhere each file is synced
        // as it is written, as `put_with` does.
        self.write_blob(d, write, !cfg!(target_os = "linux"))
    }

    fn write_blob(
        &self,
        d: &Descriptor,
        write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
        sync: bool,
    ) -> Result<Option<PendingBlob>, RepoError> {
        if self.has_blob(d) {
            return Ok(None);
        }
        self.write_new(d, write, sync).map(Some)
    }

    /// Writes the blob `d` to a temporary file in `blobs/sha256/` and checks its digest,
    /// whether or not a blob of that name is there: [`PendingBlob::persist`] puts it in place.
    fn write_new(
        &self,
        d: &Descriptor,
        write: &mut dyn FnMut(&mut dyn Write) -> io::Result<()>,
        sync: bool,
    ) -> Result<PendingBlob, RepoError> {
        let dir = self.blobs_dir();
        let path = self.blob_path(&d.digest);
        let mut tmp = tempfile::Builder::new()
            .prefix(".asp-")
            .suffix(".partial")
            .tempfile_in(&dir)
            .map_err(RepoError::io(&dir))?;
        let on_stop = asp_format::on_stop::remove_on_stop(tmp.path());
        let written = {
            let mut w =
                HashingWriter::new(io::BufWriter::with_capacity(256 << 10, tmp.as_file_mut()));
            write(&mut w).map_err(RepoError::io(&path))?;
            let (mut w, written) = w.finish();
            w.flush().map_err(RepoError::io(&path))?;
            written
        };
        if written != *d {
            return Err(RepoError::Integrity(format!(
                "blob {} came out as {} ({} bytes, not {})",
                d.digest, written.digest, written.size, d.size
            )));
        }
        if sync {
            tmp.as_file().sync_data().map_err(RepoError::io(&path))?;
        }
        // Closed now: a backup holds thousands of pending blobs, more than a process may
        // have files open.
        Ok(PendingBlob {
            tmp: tmp.into_temp_path(),
            path,
            _on_stop: on_stop,
        })
    }

    /// Makes written blobs durable, then puts them in place: the data of every one reaches
    /// the disk before any is renamed, so a crash (or power loss) leaves each blob whole or
    /// absent, never a blob file whose bytes were not written. On Linux one `syncfs` of the
    /// repository's file system does it: a backup writes thousands of small layers, and an
    /// fsync each cost about 0.6 ms of waiting per file even 32 at a time (about 2.8 s for
    /// the 4,700 layers of a 1 GiB Claude Code home).
    pub fn commit_blobs(&self, pending: Vec<PendingBlob>) -> Result<(), RepoError> {
        if pending.is_empty() {
            return Ok(());
        }
        #[cfg(target_os = "linux")]
        {
            let dir = self.blobs_dir();
            let d = File::open(&dir).map_err(RepoError::io(&dir))?;
            rustix::fs::syncfs(&d).map_err(|e| RepoError::io(&dir)(e.into()))?;
        }
        for p in pending {
            p.persist()?;
        }
        self.sync_blobs()
    }

    /// Makes the renames into `blobs/sha256/` durable.
    pub fn sync_blobs(&self) -> Result<(), RepoError> {
        let dir = self.blobs_dir();
        sync_dir(&dir).map_err(RepoError::io(&dir))
    }

    /// A whole blob of at most `max` bytes, its size and digest checked.
    pub fn read_blob(&self, d: &Descriptor, max: u64) -> Result<Vec<u8>, RepoError> {
        if d.size > max {
            return Err(RepoError::Integrity(format!(
                "blob {} in {} has {} bytes, over the limit of {max}",
                d.digest,
                self.root().display(),
                d.size
            )));
        }
        let mut out = Vec::with_capacity(d.size as usize);
        self.open_raw(d)?
            .read_to_end(&mut out)
            .map_err(|e| self.read_error(&d.digest, e))?;
        Ok(out)
    }

    /// A blob's stored bytes as a reader that checks their size and digest at the end.
    pub fn open_raw(&self, d: &Descriptor) -> Result<Box<dyn Read + Send>, RepoError> {
        let path = self.blob_path(&d.digest);
        let file = File::open(&path).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                RepoError::Integrity(format!(
                    "blob {} is missing from {}",
                    d.digest,
                    self.root().display()
                ))
            } else {
                RepoError::io(&path)(e)
            }
        })?;
        let len = file.metadata().map_err(RepoError::io(&path))?.len();
        if len != d.size {
            return Err(RepoError::Integrity(format!(
                "blob {} has {len} bytes, not {}",
                path.display(),
                d.size
            )));
        }
        Ok(Box::new(VerifyingReader::new(
            io::BufReader::with_capacity(256 << 10, file),
            *d,
        )))
    }

    fn read_error(&self, digest: &Digest, e: io::Error) -> RepoError {
        if asp_format::digest::is_integrity_error(&e) {
            RepoError::Integrity(format!("{}: {e}", self.blob_path(digest).display()))
        } else {
            RepoError::io(self.blob_path(digest))(e)
        }
    }
}

/// How [`Repository::put_document`] stored a document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    /// The repository held it, byte for byte.
    Kept,
    /// Written: the repository did not hold it.
    Stored,
    /// The repository held a blob of its name with other bytes (damaged): replaced.
    Mended,
}

/// A blob written to a temporary file next to its place and checked, not yet renamed into it
/// ([`Repository::write_pending`]).
#[derive(Debug)]
pub struct PendingBlob {
    tmp: tempfile::TempPath,
    path: PathBuf,
    /// Removed if the process is told to stop first (`asp_format::on_stop`).
    _on_stop: asp_format::on_stop::Guard,
}

impl PendingBlob {
    fn persist(self) -> Result<(), RepoError> {
        let path = self.path;
        self.tmp
            .persist(&path)
            .map_err(|e| RepoError::io(&path)(e.error))?;
        Ok(())
    }
}

/// The entries of an index that cannot be read whole (damaged, or written by a tool that
/// breaks its format), each that can be read as a descriptor, with how many could not; an
/// index that is not JSON at all gives none.
fn salvaged_index(path: &Path) -> (asp_registry::manifest::ImageIndex, usize) {
    let mut index = asp_registry::manifest::ImageIndex::default();
    let Some(entries) = fs::read(path)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|mut v| v.get_mut("manifests").map(serde_json::Value::take))
        .and_then(|m| match m {
            serde_json::Value::Array(a) => Some(a),
            _ => None,
        })
    else {
        return (index, 0);
    };
    let mut unread = 0;
    for e in entries {
        match serde_json::from_value::<OciDescriptor>(e) {
            Ok(d) => index.manifests.push(d),
            Err(_) => unread += 1,
        }
    }
    (index, unread)
}
