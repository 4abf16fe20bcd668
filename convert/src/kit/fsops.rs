//! Writing into a user's store without ever losing what is there.
//!
//! Every write goes to a temporary file in the destination directory and is renamed into
//! place after it is complete and synced, so a crash leaves either the old file or the new one.
//! New files are never renamed over existing ones. In dry-run mode the same calls check
//! everything (including whether a file exists) and record what they would do.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};

use crate::error::ConvertError;

/// One planned or performed change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    Create(PathBuf),
    Replace(PathBuf),
    Append(PathBuf),
    Remove(PathBuf),
    /// A transaction on a database, committed (or, in a dry run, rolled back).
    Database(PathBuf),
}

/// What a regular file was when it was looked at: its size and inode.
/// [`Writer::bring_up_to_date`] replaces a file only while it is still what it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub len: u64,
    inode: u64,
}

impl Stamp {
    /// `None` for anything but a regular file (a link is not followed).
    pub fn of(path: &Path) -> Option<Stamp> {
        let m = fs::symlink_metadata(path)
            .ok()
            .filter(fs::Metadata::is_file)?;
        Some(Stamp {
            len: m.len(),
            inode: inode(&m),
        })
    }

    /// Whether an open file (its metadata) is still the file this was, at the same size.
    fn is(&self, m: &fs::Metadata) -> bool {
        m.len() == self.len && inode(m) == self.inode
    }
}

/// A file's inode (0 where the platform has none).
fn inode(m: &fs::Metadata) -> u64 {
    #[cfg(unix)]
    return std::os::unix::fs::MetadataExt::ino(m);
    #[cfg(not(unix))]
    {
        let _ = m;
        0
    }
}

/// What [`Writer::create_new`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Created {
    /// The file was written (or would be, in a dry run).
    New,
    /// A file was already there; nothing was written.
    AlreadyExists,
}

/// The files a dry run's earlier steps would have written, with their bytes, in view of its
/// later steps: a whole restore writes the backup's configuration before the state, and the
/// state is judged against the configuration as restored (a server already there with the
/// `trust` the backup gave it, the session retention the restored settings set), and one
/// configuration file merged into another is merged into what the first left. A dry run
/// writes nothing, so without this it judged against the home as it is, and said other things
/// than the restore (found by a new user's trial: `--dry-run --strict` exited 3 where the
/// restore exited 0).
///
/// While a view lives, a [`Writer::planning`] writer's dry run keeps there the bytes each file
/// would be left with, [`read`] and [`read_to_string`] read them in place of the file, and
/// every dry run's writer counts them as there. Process-wide, since the reads are deep in every
/// converter: the restore that holds the view is the only thing the process does then.
#[derive(Debug)]
#[must_use = "the planned files are in view only while this lives"]
pub struct PlannedView(Arc<Mutex<Files>>);

/// Files by path, with their bytes.
type Files = BTreeMap<PathBuf, Vec<u8>>;

static IN_VIEW: RwLock<Option<Arc<Mutex<Files>>>> = RwLock::new(None);

impl PlannedView {
    /// Begins a view, with no file planned yet (in place of one begun before, which then
    /// shows nothing).
    pub fn begin() -> PlannedView {
        let files = Arc::new(Mutex::new(Files::new()));
        *IN_VIEW.write().unwrap_or_else(|e| e.into_inner()) = Some(Arc::clone(&files));
        PlannedView(files)
    }
}

impl Drop for PlannedView {
    fn drop(&mut self) {
        let mut shown = IN_VIEW.write().unwrap_or_else(|e| e.into_inner());
        if shown.as_ref().is_some_and(|s| Arc::ptr_eq(s, &self.0)) {
            *shown = None;
        }
    }
}

/// The files in view, locked, if a view lives. (A panic while one was held leaves files
/// whole: each is inserted or removed in one call.)
fn with_view<R>(f: impl FnOnce(&mut Files) -> R) -> Option<R> {
    let view = IN_VIEW.read().unwrap_or_else(|e| e.into_inner()).clone()?;
    let mut files = view.lock().unwrap_or_else(|e| e.into_inner());
    Some(f(&mut files))
}

/// The bytes a dry run's earlier step would have left at `path` ([`PlannedView`]), if any.
pub fn planned(path: &Path) -> Option<Vec<u8>> {
    with_view(|files| files.get(path).cloned()).flatten()
}

/// The bytes of the file at `path`: those a dry run's earlier step would have written there
/// ([`PlannedView`]), else the file's. For the configuration files a write reads to judge
/// what it writes.
pub fn read(path: &Path) -> io::Result<Vec<u8>> {
    match planned(path) {
        Some(bytes) => Ok(bytes),
        None => fs::read(path),
    }
}

/// Whether something is at `path` (a link counts, wherever it leads), or a dry run's earlier
/// step would have written a file there ([`PlannedView`]).
pub fn exists(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok() || with_view(|files| files.contains_key(path)) == Some(true)
}

/// Whether `path` exists (through links), or a dry run's earlier step would have written a
/// file at it or under it ([`PlannedView`]): a store folder the restore's configuration would
/// make is there for the dry run of its state.
pub fn exists_or_planned_under(path: &Path) -> bool {
    path.exists() || with_view(|files| files.keys().any(|f| f.starts_with(path))) == Some(true)
}

/// [`read`], as UTF-8 text.
pub fn read_to_string(path: &Path) -> io::Result<String> {
    String::from_utf8(read(path)?).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Atomic, no-clobber file operations with a dry-run mode.
#[derive(Debug, Default)]
pub struct Writer {
    dry_run: bool,
    changes: Mutex<Vec<Change>>,
    /// The folders every path must stay inside (empty: anywhere, for scratch writers).
    roots: Vec<PathBuf>,
    /// In a dry run, whether to keep the bytes each write would leave ([`Writer::planning`]).
    planning: bool,
}

impl Writer {
    pub fn new(dry_run: bool) -> Self {
        Writer {
            dry_run,
            changes: Mutex::new(Vec::new()),
            roots: Vec::new(),
            planning: false,
        }
    }

    /// A writer whose dry run keeps in the [`PlannedView`], while one lives, the bytes of each
    /// file it would make, for the steps after it to read (every dry run keeps those of the
    /// files it would replace or append to). Only for the few files of a configuration, not a
    /// store's sessions.
    pub fn planning(mut self) -> Self {
        self.planning = true;
        self
    }

    /// Reads what a dry run would leave at `path`, and keeps it in the view while one lives:
    /// a file replaced always (a state's write edits configuration files one after another,
    /// each reading what the one before left), a file `made` only when planning.
    fn plan(&self, path: &Path, reader: &mut dyn Read, made: bool) -> Result<(), ConvertError> {
        if (made && !self.planning) || with_view(|_| ()).is_none() {
            io::copy(reader, &mut io::sink()).map_err(ConvertError::write(path))?;
            return Ok(());
        }
        let mut bytes = Vec::new();
        reader
            .read_to_end(&mut bytes)
            .map_err(ConvertError::write(path))?;
        with_view(|files| files.insert(path.to_path_buf(), bytes));
        Ok(())
    }

    /// Whether a dry run's earlier step has planned a file at `path` ([`PlannedView`]).
    fn is_planned(&self, path: &Path) -> bool {
        self.dry_run && with_view(|files| files.contains_key(path)) == Some(true)
    }

    /// A writer that refuses every path outside `roots` (the home and the harness's store
    /// folders). Converters build paths from names a bundle carries; each is checked where it
    /// is made, and this is the second line: a name that slipped through (a `..`, an absolute
    /// path, a `/` in an id) can never reach a file outside the store it was given. The check
    /// is on the path as spelled, `..` resolved without following links, so a store the user
    /// linked elsewhere (a dotfile manager) is still written.
    pub fn confined_to(mut self, roots: impl IntoIterator<Item = PathBuf>) -> Self {
        self.roots = roots.into_iter().map(|r| lexical(&r)).collect();
        self
    }

    /// Refuses `path` when it leads outside every root.
    fn inside(&self, path: &Path) -> Result<(), ConvertError> {
        if let Some(file) = file_in_the_way(path) {
            return Err(ConvertError::invalid(
                file,
                "is a file where a folder is expected; nothing is written under it",
            ));
        }
        if self.roots.is_empty() {
            return Ok(());
        }
        let p = lexical(path);
        if self.roots.iter().any(|r| p.starts_with(r) && p != *r) {
            return Ok(());
        }
        Err(ConvertError::Outside {
            path: path.to_path_buf(),
            roots: self.roots.clone(),
        })
    }

    pub fn is_dry_run(&self) -> bool {
        self.dry_run
    }

    /// Every change made (or planned, in a dry run), in order.
    pub fn changes(&self) -> Vec<Change> {
        self.changes.lock().expect("changes poisoned").clone()
    }

    fn record(&self, c: Change) {
        self.changes.lock().expect("changes poisoned").push(c);
    }

    /// Creates `path` with `bytes`, unless something is already there.
    pub fn create_new(
        &self,
        path: &Path,
        bytes: &[u8],
        executable: bool,
    ) -> Result<Created, ConvertError> {
        self.create_new_from(path, &mut &bytes[..], executable)
    }

    /// Creates `path` with everything `reader` yields, unless something is already there. If
    /// the reader fails (a blob that does not match its digest), nothing is left behind.
    pub fn create_new_from(
        &self,
        path: &Path,
        reader: &mut dyn Read,
        executable: bool,
    ) -> Result<Created, ConvertError> {
        self.create_new_as(path, reader, Mode::New { executable })
    }

    /// [`Writer::create_new_from`] for a file only its owner may read (mode 0600): what a
    /// person typed or pasted (a prompt history), a configuration file kept without its keys
    /// (the user puts them back).
    pub fn create_private_from(
        &self,
        path: &Path,
        reader: &mut dyn Read,
    ) -> Result<Created, ConvertError> {
        self.create_new_as(path, reader, Mode::Private)
    }

    /// [`Writer::create_new_from`] with the file's [`Mode`] chosen by the caller.
    pub fn create_new_as(
        &self,
        path: &Path,
        reader: &mut dyn Read,
        mode: Mode,
    ) -> Result<Created, ConvertError> {
        self.inside(path)?;
        if fs::symlink_metadata(path).is_ok() || self.is_planned(path) {
            return Ok(Created::AlreadyExists);
        }
        if self.dry_run {
            // Still read everything, so a bad blob fails the dry run as it would the real one.
            self.plan(path, reader, true)?;
            self.record(Change::Create(path.to_path_buf()));
            return Ok(Created::New);
        }
        let dir = parent_of(path);
        make_dirs(dir).map_err(ConvertError::write(dir))?;
        let mut tmp = temp_in(dir, mode)?;
        io::copy(reader, tmp.as_file_mut()).map_err(ConvertError::write(path))?;
        finish_file(tmp.as_file(), path, None)?;
        match tmp.persist_noclobber(path) {
            Ok(_) => {}
            Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => {
                return Ok(Created::AlreadyExists);
            }
            Err(e) => return Err(ConvertError::write(path)(e.error)),
        }
        sync_dir(dir);
        self.record(Change::Create(path.to_path_buf()));
        Ok(Created::New)
    }

    /// Creates every one of `files`, or none: each is first written whole and synced under a
    /// temporary name in its directory (`.asp-*.partial`), and only then are they renamed into
    /// place one by one, never over an existing file. When one of the paths is taken (before or
    /// during the renames), the files this call already put in place are removed again and
    /// the answer is [`Created::AlreadyExists`]; directories it created are removed when empty.
    /// Only if a crash or a failing removal interrupts the renames can some of the files be
    /// left, and a failing removal names them in the error.
    pub fn create_all_new(&self, files: &[(&Path, &[u8])]) -> Result<Created, ConvertError> {
        for (path, _) in files {
            self.inside(path)?;
        }
        if files
            .iter()
            .any(|(path, _)| fs::symlink_metadata(path).is_ok() || self.is_planned(path))
        {
            return Ok(Created::AlreadyExists);
        }
        if self.dry_run {
            for (path, bytes) in files {
                self.plan(path, &mut &bytes[..], true)?;
                self.record(Change::Create(path.to_path_buf()));
            }
            return Ok(Created::New);
        }
        let mut made_dirs = Vec::new();
        let mut staged = Vec::with_capacity(files.len());
        for (path, bytes) in files {
            match stage(path, bytes, &mut made_dirs) {
                Ok(tmp) => staged.push((tmp, *path)),
                Err(e) => {
                    drop(staged);
                    remove_empty_dirs(&made_dirs);
                    return Err(e);
                }
            }
        }
        let mut placed: Vec<&Path> = Vec::with_capacity(staged.len());
        for (tmp, path) in staged {
            let failure = match tmp.persist_noclobber(path) {
                Ok(_) => {
                    placed.push(path);
                    continue;
                }
                Err(e) if e.error.kind() == io::ErrorKind::AlreadyExists => None,
                Err(e) => Some(ConvertError::write(path)(e.error)),
            };
            // Undo: these files are this call's own, put in place a moment ago.
            let left: Vec<String> = placed
                .iter()
                .filter(|p| fs::remove_file(p).is_err())
                .map(|p| p.display().to_string())
                .collect();
            remove_empty_dirs(&made_dirs);
            if !left.is_empty() {
                let why = failure.map_or_else(
                    || format!("{} appeared while asp was writing", path.display()),
                    |e| e.to_string(),
                );
                return Err(ConvertError::Partial(format!(
                    "{why}; of the files to write together, these were written and could not be \
                     taken out again: {}",
                    left.join(", ")
                )));
            }
            return match failure {
                None => Ok(Created::AlreadyExists),
                Some(e) => Err(e),
            };
        }
        for path in placed {
            sync_dir(parent_of(path));
            self.record(Change::Create(path.to_path_buf()));
        }
        Ok(Created::New)
    }

    /// Writes `bytes` to `path`, replacing what is there atomically. When `path` is a symlink
    /// (dotfile managers link config files), the file it points to is replaced and the link
    /// kept. The old file's permissions are kept.
    pub fn replace(&self, path: &Path, bytes: &[u8]) -> Result<(), ConvertError> {
        self.replace_from(path, &mut &bytes[..], None)
    }

    /// Like [`Writer::replace`], streaming from `reader`; `executable` sets the mode (`None`
    /// keeps the old file's).
    pub fn replace_from(
        &self,
        path: &Path,
        reader: &mut dyn Read,
        executable: Option<bool>,
    ) -> Result<(), ConvertError> {
        self.inside(path)?;
        let target = match fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                fs::canonicalize(path).map_err(ConvertError::write(path))?
            }
            _ => path.to_path_buf(),
        };
        if self.dry_run {
            self.plan(path, reader, false)?;
            self.record(Change::Replace(path.to_path_buf()));
            return Ok(());
        }
        let dir = parent_of(&target);
        make_dirs(dir).map_err(ConvertError::write(dir))?;
        // A replaced file keeps its mode (a config file the user made private stays private);
        // a new one gets the usual mode less the user's umask.
        let keep = match executable {
            Some(_) => None,
            None => existing_mode(&target),
        };
        let mut tmp = temp_in(
            dir,
            Mode::New {
                executable: executable.unwrap_or(false),
            },
        )?;
        io::copy(reader, tmp.as_file_mut()).map_err(ConvertError::write(&target))?;
        finish_file(tmp.as_file(), &target, keep)?;
        tmp.persist(&target)
            .map_err(|e| ConvertError::write(&target)(e.error))?;
        sync_dir(dir);
        self.record(Change::Replace(path.to_path_buf()));
        Ok(())
    }

    /// Brings the file at `path`, which was `was` when it was compared, up to what `reader`
    /// yields: a version of it that holds every byte it holds and more after them (a session
    /// continued on another machine and carried back), so nothing there is lost, only
    /// continued. What follows those bytes is appended to the file itself, in one write, as
    /// the harness appends to it: a harness that still holds the file open (an idle Codex
    /// session keeps its rollout open to append) goes on writing into the same file, where a
    /// new file renamed over it would have taken its later lines into a file with no name
    /// (review helper-138, 2). Only if the file is still `was` when opened (same inode, same
    /// size): `Ok(false)` when it changed meanwhile, and nothing was written. A crash part way
    /// leaves the file's own bytes as they were, and at most the start of a line after them.
    pub fn bring_up_to_date(
        &self,
        path: &Path,
        reader: &mut dyn Read,
        was: Stamp,
    ) -> Result<bool, ConvertError> {
        self.inside(path)?;
        if self.dry_run {
            self.plan(path, reader, true)?;
            self.record(Change::Append(path.to_path_buf()));
            return Ok(true);
        }
        // The bytes the file has (compared by the caller), then what follows them.
        io::copy(&mut reader.take(was.len), &mut io::sink()).map_err(ConvertError::write(path))?;
        let mut tail = Vec::new();
        reader
            .read_to_end(&mut tail)
            .map_err(ConvertError::write(path))?;
        let mut file = OpenOptions::new()
            .append(true)
            .open(path)
            .map_err(ConvertError::write(path))?;
        let now = file.metadata().map_err(ConvertError::write(path))?;
        if !was.is(&now) {
            return Ok(false);
        }
        file.write_all(&tail).map_err(ConvertError::write(path))?;
        file.sync_all().map_err(ConvertError::write(path))?;
        self.record(Change::Append(path.to_path_buf()));
        Ok(true)
    }

    /// Appends `bytes` to `path` (created if missing), as harnesses append to their own
    /// indexes. The bytes are written in one call so a concurrent appender cannot interleave
    /// inside them.
    pub fn append(&self, path: &Path, bytes: &[u8]) -> Result<(), ConvertError> {
        self.inside(path)?;
        if self.dry_run {
            // Appended in place, under the view's lock: no copy of the file per line.
            let appended = with_view(|files| -> io::Result<()> {
                let there = match files.entry(path.to_path_buf()) {
                    std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::btree_map::Entry::Vacant(e) => {
                        e.insert(match fs::read(path) {
                            Ok(b) => b,
                            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
                            Err(e) => return Err(e),
                        })
                    }
                };
                there.extend_from_slice(bytes);
                Ok(())
            });
            if let Some(Err(e)) = appended {
                return Err(ConvertError::write(path)(e));
            }
            self.record(Change::Append(path.to_path_buf()));
            return Ok(());
        }
        let dir = parent_of(path);
        make_dirs(dir).map_err(ConvertError::write(dir))?;
        let mut f = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(ConvertError::write(path))?;
        f.write_all(bytes).map_err(ConvertError::write(path))?;
        f.sync_data().map_err(ConvertError::write(path))?;
        self.record(Change::Append(path.to_path_buf()));
        Ok(())
    }

    /// Removes a file if it is there. Returns whether it was.
    pub fn remove(&self, path: &Path) -> Result<bool, ConvertError> {
        self.inside(path)?;
        match fs::symlink_metadata(path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(e) => return Err(ConvertError::write(path)(e)),
            Ok(_) => {}
        }
        if !self.dry_run {
            fs::remove_file(path).map_err(ConvertError::write(path))?;
        } else {
            with_view(|files| files.remove(path));
        }
        self.record(Change::Remove(path.to_path_buf()));
        Ok(true)
    }
}

/// How long a write waits for a harness that holds its database's lock.
#[cfg(feature = "sqlite")]
const BUSY_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

#[cfg(feature = "sqlite")]
impl Writer {
    /// Runs `work` in one `IMMEDIATE` transaction on the SQLite database at `path`, waiting
    /// politely for a harness that holds the lock. The transaction is committed in a real run
    /// and rolled back in a dry run, so a dry run makes exactly the checks and inserts of the
    /// real one and leaves the database as it was. The database must exist: a harness's
    /// database is made by the harness, with its migrations, never by a writer.
    pub fn sqlite<T>(
        &self,
        path: &Path,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> rusqlite::Result<T>,
    ) -> rusqlite::Result<T> {
        if self.inside(path).is_err() {
            return Err(rusqlite::Error::InvalidPath(path.to_path_buf()));
        }
        use rusqlite::{Connection, OpenFlags, TransactionBehavior};
        let mut conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        conn.busy_timeout(BUSY_TIMEOUT)?;
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let out = work(&tx)?;
        if self.dry_run {
            tx.rollback()?;
        } else {
            tx.commit()?;
        }
        self.record(Change::Database(path.to_path_buf()));
        Ok(out)
    }
}

impl Writer {
    /// Records a change made by a caller that wrote `path` its own way (a folder renamed into
    /// place as a whole).
    pub fn record_created(&self, path: &Path) {
        debug_assert!(
            self.inside(path).is_ok(),
            "{} is outside the store",
            path.display()
        );
        self.record(Change::Create(path.to_path_buf()));
    }
}

/// The nearest existing ancestor of `path` when it is not a folder (links followed): a file
/// where a store keeps a folder, under which nothing can be written. Said as such, rather than
/// as "File exists" from making the folder, or as a name already taken.
pub fn file_in_the_way(path: &Path) -> Option<PathBuf> {
    let mut up = path.parent();
    while let Some(dir) = up.filter(|d| !d.as_os_str().is_empty()) {
        match fs::metadata(dir) {
            Ok(m) => return (!m.is_dir()).then(|| dir.to_path_buf()),
            Err(_) => up = dir.parent(),
        }
    }
    None
}

/// Renames the folder `from` to `to`, failing with `AlreadyExists` if `to` exists (a racing
/// writer is never overwritten: `rename(2)` would replace an empty folder silently).
pub fn rename_noclobber_dir(from: &Path, to: &Path) -> io::Result<()> {
    if fs::symlink_metadata(to).is_ok() {
        return Err(io::ErrorKind::AlreadyExists.into());
    }
    fs::rename(from, to)?;
    if let Some(parent) = to.parent() {
        sync_dir(parent);
    }
    Ok(())
}

/// Puts the folder `staged` in place of the folder `dir`, with `dir`'s permissions, and
/// removes what `dir` held. Where the system can, the two are exchanged in one step (Linux's
/// `renameat2(RENAME_EXCHANGE)`), so a crash at any point leaves one or the other whole at
/// `dir`; elsewhere `dir` is renamed aside to `<staged>.old` first, and for a moment is
/// missing (a crash then leaves both, under those names).
///
/// Once the new folder is in place the replacement has happened: old files that cannot be
/// removed after it are not an error but said in what comes back (`Some`: what is left and
/// where), for the caller to tell.
pub fn replace_dir(staged: &Path, dir: &Path) -> io::Result<Option<String>> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(dir)?.permissions().mode() & 0o7777;
        fs::set_permissions(staged, fs::Permissions::from_mode(mode))?;
    }
    let old = match exchange(staged, dir) {
        Ok(()) => staged.to_path_buf(),
        Err(_) => {
            let mut aside = staged.as_os_str().to_owned();
            aside.push(".old");
            let aside = PathBuf::from(aside);
            fs::rename(dir, &aside)?;
            if let Err(e) = fs::rename(staged, dir) {
                let _ = fs::rename(&aside, dir);
                return Err(e);
            }
            aside
        }
    };
    sync_dir(parent_of(dir));
    Ok(fs::remove_dir_all(&old).err().map(|e| {
        format!(
            "{} was replaced, but its old files could not all be removed from {} ({e}); \
             remove that folder when you no longer need them",
            dir.display(),
            old.display()
        )
    }))
}

#[cfg(any(target_os = "linux", target_os = "android"))]
fn exchange(a: &Path, b: &Path) -> io::Result<()> {
    use rustix::fs::{CWD, RenameFlags, renameat_with};
    renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).map_err(io::Error::from)
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn exchange(_: &Path, _: &Path) -> io::Result<()> {
    Err(io::ErrorKind::Unsupported.into())
}

/// `path` made absolute (against the current directory) with `.` and `..` resolved by
/// spelling alone, never by following links.
pub(crate) fn lexical(path: &Path) -> PathBuf {
    resolved(&std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()))
}

/// `path` with `.` and `..` resolved by spelling alone, never by following links.
pub(crate) fn resolved(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn parent_of(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// How a file being written gets its permissions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Created as 0666 (0777 if executable) less the process umask, like any file a program
    /// creates: tempfile's own default, 0600, would hide the user's files from themselves
    /// across tools, and a fixed 0644 would ignore a umask of 077.
    New { executable: bool },
    /// 0600, whatever the umask.
    Private,
}

impl Mode {
    /// A private file (one the harness itself keeps owner-only) is 0600; any other is made
    /// as a program makes files, executable or not.
    pub fn of(executable: bool, private: bool) -> Mode {
        if private {
            Mode::Private
        } else {
            Mode::New { executable }
        }
    }
}

/// `bytes` written and synced under a temporary name in `path`'s directory, which is created
/// (and each directory made remembered in `made_dirs`, outermost first) when missing.
fn stage(path: &Path, bytes: &[u8], made_dirs: &mut Vec<PathBuf>) -> Result<Temp, ConvertError> {
    let dir = parent_of(path);
    let mut new_dirs: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|a| !a.as_os_str().is_empty() && fs::symlink_metadata(a).is_err())
        .map(Path::to_path_buf)
        .collect();
    make_dirs(dir).map_err(ConvertError::write(dir))?;
    new_dirs.reverse();
    made_dirs.extend(new_dirs);
    let mut tmp = temp_in(dir, Mode::New { executable: false })?;
    tmp.as_file_mut()
        .write_all(bytes)
        .map_err(ConvertError::write(path))?;
    finish_file(tmp.as_file(), path, None)?;
    Ok(tmp)
}

/// Removes directories, deepest first, where they are empty.
fn remove_empty_dirs(dirs: &[PathBuf]) {
    for d in dirs.iter().rev() {
        let _ = fs::remove_dir(d);
    }
}

/// How old a temporary file of ours must be to be a leftover: no write of one file takes
/// this long, so a younger one may be another process's, being written. (Its age is its own
/// modification time against this machine's clock: a network file system whose clock is an
/// hour off would defeat it.)
const LEFTOVER_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// How old a temporary file of ours that no process holds locked must be to be a leftover:
/// a writer locks its file as soon as it is made ([`temp_in`]), so this only covers that
/// moment.
const UNLOCKED_LEFTOVER_AGE: std::time::Duration = std::time::Duration::from_secs(60);

/// Removes, once per folder and process, the temporary files (`.asp-*.partial`) an earlier
/// write left in `dir` when it was killed (Ctrl-C in the middle of a restore): ours alone by
/// their name, never the user's files. One is a leftover when no process holds it locked and
/// it is older than [`UNLOCKED_LEFTOVER_AGE`] (a writer holds its own locked while it lives),
/// or older than [`LEFTOVER_AGE`] whatever its lock says (a file system whose locks are not
/// shared). By age alone, a restore run again at once left a killed one's files of many
/// megabytes in the user's project folders for an hour (new-user trial helper-130, 4).
fn sweep_leftovers(dir: &Path) {
    static SWEPT: Mutex<Option<std::collections::HashSet<PathBuf>>> = Mutex::new(None);
    {
        let mut swept = SWEPT.lock().unwrap_or_else(|e| e.into_inner());
        if !swept
            .get_or_insert_with(Default::default)
            .insert(dir.to_path_buf())
        {
            return;
        }
    }
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with(".asp-") && name.ends_with(".partial")) {
            continue;
        }
        let Some(age) = e
            .metadata()
            .ok()
            .filter(fs::Metadata::is_file)
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
        else {
            continue;
        };
        let unheld = || File::open(e.path()).is_ok_and(|f| f.try_lock().is_ok());
        if age > LEFTOVER_AGE || (age > UNLOCKED_LEFTOVER_AGE && unheld()) {
            let _ = fs::remove_file(e.path());
        }
    }
}

/// A temporary file being written ([`temp_in`]): removed if the process is told to stop
/// before it is renamed into place ([`asp_format::on_stop`]), as when it is dropped.
struct Temp {
    // Removed (when not persisted) before it is unregistered: fields drop in order.
    file: tempfile::NamedTempFile,
    _on_stop: asp_format::on_stop::Guard,
}

impl Temp {
    fn as_file(&self) -> &File {
        self.file.as_file()
    }

    fn as_file_mut(&mut self) -> &mut File {
        self.file.as_file_mut()
    }

    /// Renamed into place while no removal can run ([`asp_format::on_stop::Guard::settle`]):
    /// a file renamed into a staged folder as a stop removes it kept the folder from going
    /// (re-trial of the stop: one `.D.asp-unpack-*` with one file left in five).
    fn persist(self, path: &Path) -> Result<File, tempfile::PersistError> {
        let Temp { file, _on_stop } = self;
        _on_stop.settle(|| file.persist(path))
    }

    fn persist_noclobber(self, path: &Path) -> Result<File, tempfile::PersistError> {
        let Temp { file, _on_stop } = self;
        _on_stop.settle(|| file.persist_noclobber(path))
    }
}

/// `fs::create_dir_all`, unless the process is being told to stop: then it waits for its end
/// ([`asp_format::on_stop::make_unless_stopping`]), so no folder of a temporary being removed is
/// made again.
pub(crate) fn make_dirs(dir: &Path) -> io::Result<()> {
    asp_format::on_stop::make_unless_stopping(|| fs::create_dir_all(dir))
}

fn temp_in(dir: &Path, mode: Mode) -> Result<Temp, ConvertError> {
    sweep_leftovers(dir);
    let mut b = tempfile::Builder::new();
    b.prefix(".asp-").suffix(".partial");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        b.permissions(fs::Permissions::from_mode(match mode {
            Mode::New { executable: true } => 0o777,
            Mode::New { executable: false } => 0o666,
            Mode::Private => 0o600,
        }));
    }
    #[cfg(not(unix))]
    let _ = mode;
    let (t, on_stop) = asp_format::on_stop::make_registered(|| b.tempfile_in(dir), |t| t.path())
        .map_err(ConvertError::write(dir))?;
    // Held while this process lives, so a sweep by another tells it from a leftover
    // ([`sweep_leftovers`]); a file system without locks leaves it to the age.
    let _ = t.as_file().try_lock();
    Ok(Temp {
        file: t,
        _on_stop: on_stop,
    })
}

/// Syncs a written file, first giving it `keep` (an existing file's mode) when set.
fn finish_file(file: &File, path: &Path, keep: Option<u32>) -> Result<(), ConvertError> {
    if let Some(mode) = keep {
        set_mode(file, mode).map_err(ConvertError::write(path))?;
    }
    file.sync_all().map_err(ConvertError::write(path))
}

#[cfg(unix)]
fn set_mode(file: &File, mode: u32) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_file: &File, _mode: u32) -> io::Result<()> {
    Ok(())
}

#[cfg(unix)]
fn existing_mode(path: &Path) -> Option<u32> {
    use std::os::unix::fs::PermissionsExt;
    fs::metadata(path)
        .ok()
        .map(|m| m.permissions().mode() & 0o7777)
}

#[cfg(not(unix))]
fn existing_mode(_path: &Path) -> Option<u32> {
    None
}

/// Makes a rename in `dir` durable where the platform allows it; failure only costs
/// durability.
pub(crate) fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Whether a file is executable by its owner (always false where there are no modes).
pub fn is_executable(meta: &fs::Metadata) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.permissions().mode() & 0o100 != 0
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (The only test that begins a view: it is process-wide.)
    #[test]
    fn a_dry_runs_later_steps_see_the_files_its_earlier_steps_would_write() {
        let dir = tempfile::tempdir().unwrap();
        let settings = dir.path().join("settings.json");
        let log = dir.path().join("history.jsonl");
        let there = dir.path().join("there.json");
        fs::write(&log, "one\n").unwrap();
        fs::write(&there, "on disk").unwrap();
        {
            let _view = PlannedView::begin();
            let config = Writer::new(true).planning();
            assert_eq!(
                config.create_new(&settings, b"{}", false).unwrap(),
                Created::New
            );
            config.append(&log, b"two\n").unwrap();
            config.replace(&there, b"planned").unwrap();
            // Written over by a later step of the same configuration.
            config.replace(&settings, b"{\"a\": 1}").unwrap();
            assert_eq!(read_to_string(&settings).unwrap(), "{\"a\": 1}");
            assert_eq!(read_to_string(&log).unwrap(), "one\ntwo\n");
            assert_eq!(read_to_string(&there).unwrap(), "planned");
            // Any dry run after it counts the planned file as there; a writer that is not
            // planning keeps nothing.
            let state = Writer::new(true);
            assert_eq!(
                state.create_new(&settings, b"[]", false).unwrap(),
                Created::AlreadyExists
            );
            let other = dir.path().join("other.json");
            state.create_new(&other, b"x", false).unwrap();
            assert!(read(&other).is_err());
        }
        // Nothing was written, and without the view the files read as they are.
        assert!(!settings.exists());
        assert_eq!(fs::read_to_string(&log).unwrap(), "one\n");
        assert_eq!(read_to_string(&there).unwrap(), "on disk");
        assert!(read(&settings).is_err());
    }

    /// A write into a folder removes the temporary files an interrupted write left there an
    /// hour ago or more, and nothing else: not a younger one (another process may be writing
    /// it), not a file of the user's.
    #[test]
    fn a_write_sweeps_old_leftovers_of_interrupted_writes() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join(".asp-Ab12Cd.partial");
        let young = dir.path().join(".asp-Ef34Gh.partial");
        let mine = dir.path().join(".asp-notes.txt");
        for f in [&old, &young, &mine] {
            fs::write(f, b"x").unwrap();
        }
        let hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        for f in [&old, &mine] {
            File::options()
                .write(true)
                .open(f)
                .unwrap()
                .set_modified(hours_ago)
                .unwrap();
        }
        let w = Writer::new(false);
        w.create_new(&dir.path().join("s.jsonl"), b"{}\n", false)
            .unwrap();
        assert!(!old.exists());
        assert!(young.exists() && mine.exists());
    }

    /// A leftover a few minutes old that no process holds locked goes with the next write
    /// there; one a live writer holds stays, however old.
    #[test]
    fn a_write_sweeps_an_unheld_leftover_and_keeps_a_held_one() {
        let dir = tempfile::tempdir().unwrap();
        let unheld = dir.path().join(".asp-Ab12Cd.partial");
        let held = dir.path().join(".asp-Ef34Gh.partial");
        for f in [&unheld, &held] {
            fs::write(f, b"x").unwrap();
            let minutes_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(300);
            File::options()
                .write(true)
                .open(f)
                .unwrap()
                .set_modified(minutes_ago)
                .unwrap();
        }
        let holder = File::open(&held).unwrap();
        holder.lock().unwrap();
        let w = Writer::new(false);
        w.create_new(&dir.path().join("s.jsonl"), b"{}\n", false)
            .unwrap();
        assert!(!unheld.exists());
        assert!(held.exists());
        drop(holder);
    }

    #[test]
    fn create_new_never_clobbers() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a/b.txt");
        let w = Writer::new(false);
        assert_eq!(w.create_new(&p, b"one", false).unwrap(), Created::New);
        assert_eq!(
            w.create_new(&p, b"two", false).unwrap(),
            Created::AlreadyExists
        );
        assert_eq!(fs::read(&p).unwrap(), b"one");
        assert_eq!(w.changes(), vec![Change::Create(p)]);
    }

    #[test]
    fn files_created_together_are_all_written_or_none() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("x/a"), dir.path().join("x/y/b"));
        let w = Writer::new(false);
        assert_eq!(
            w.create_all_new(&[(&a, b"one"), (&b, b"two")]).unwrap(),
            Created::New
        );
        assert_eq!(
            (fs::read(&a).unwrap(), fs::read(&b).unwrap()),
            (b"one".to_vec(), b"two".to_vec())
        );
        // One path taken: nothing of the batch is written, not even the new directories.
        let c = dir.path().join("z/c");
        assert_eq!(
            w.create_all_new(&[(&c, b"three"), (&b, b"other")]).unwrap(),
            Created::AlreadyExists
        );
        assert!(!dir.path().join("z").exists());
        assert_eq!(fs::read(&b).unwrap(), b"two");
        assert_eq!(
            w.changes(),
            vec![Change::Create(a.clone()), Change::Create(b.clone())]
        );
        // A temporary file is never left beside them.
        let names: Vec<_> = fs::read_dir(dir.path().join("x"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
    }

    #[test]
    fn a_batch_that_fails_part_way_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join("blocker"),
            b"a file where a directory should be",
        )
        .unwrap();
        let a = dir.path().join("new/a");
        let b = dir.path().join("blocker/b");
        let w = Writer::new(false);
        assert!(w.create_all_new(&[(&a, b"one"), (&b, b"two")]).is_err());
        assert!(!dir.path().join("new").exists(), "not a, nor its directory");
        assert!(w.changes().is_empty());
    }

    #[test]
    fn a_failing_reader_leaves_nothing_behind() {
        struct Failing;
        impl Read for Failing {
            fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
                Err(io::Error::new(io::ErrorKind::InvalidData, "bad blob"))
            }
        }
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x");
        let w = Writer::new(false);
        assert!(w.create_new_from(&p, &mut Failing, false).is_err());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn dry_run_writes_nothing_but_sees_existing_files() {
        let dir = tempfile::tempdir().unwrap();
        let existing = dir.path().join("there");
        fs::write(&existing, b"x").unwrap();
        let w = Writer::new(true);
        assert_eq!(
            w.create_new(&existing, b"y", false).unwrap(),
            Created::AlreadyExists
        );
        let fresh = dir.path().join("fresh");
        assert_eq!(w.create_new(&fresh, b"y", false).unwrap(), Created::New);
        w.replace(&existing, b"z").unwrap();
        assert!(!fresh.exists());
        assert_eq!(fs::read(&existing).unwrap(), b"x");
    }

    #[test]
    fn a_confined_writer_refuses_every_path_outside_its_roots() {
        let dir = tempfile::tempdir().unwrap();
        let home = dir.path().join("home");
        let w = Writer::new(false).confined_to([home.clone()]);
        let escapes = [
            home.join("../outside"),
            home.join(".qwen/../../outside"),
            dir.path().join("outside"),
            home.clone(),
        ];
        for p in &escapes {
            assert!(
                matches!(
                    w.create_new(p, b"x", false),
                    Err(ConvertError::Outside { .. })
                ),
                "{}",
                p.display()
            );
            assert!(w.create_all_new(&[(p.as_path(), b"x")]).is_err());
            assert!(w.replace(p, b"x").is_err());
            assert!(w.append(p, b"x").is_err());
            assert!(w.remove(p).is_err());
        }
        assert_eq!(
            fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing written"
        );
        let inside = home.join(".qwen/a/../b");
        assert_eq!(w.create_new(&inside, b"x", false).unwrap(), Created::New);
        assert_eq!(fs::read(home.join(".qwen/b")).unwrap(), b"x");
    }

    #[cfg(unix)]
    #[test]
    fn replace_follows_symlinks_and_keeps_modes() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let real = dir.path().join("real.json");
        fs::write(&real, b"{}").unwrap();
        fs::set_permissions(&real, fs::Permissions::from_mode(0o600)).unwrap();
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        Writer::new(false).replace(&link, b"{\"a\":1}").unwrap();
        assert!(
            fs::symlink_metadata(&link)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(&real).unwrap(), b"{\"a\":1}");
        assert_eq!(
            fs::metadata(&real).unwrap().permissions().mode() & 0o777,
            0o600
        );
    }
}
