//! What a killed write of a bundle leaves beside its output, and how the next one tells it
//! from another write still running there.
//!
//! A bundle is written into `.aspstate-*.partial` beside its path, then renamed, and its
//! layers are staged in a `.aspstate-layers-*` folder there ([`super::layers::LayerStore`]).
//! An unpack whose bodies must be spooled (a restore with `--map-path`) spools them into a
//! `.aspstate-staging-*` folder beside what it writes ([`crate::blob::StagingStore`]): the
//! conversations, decompressed.
//! `kill -9`, a power cut or the out-of-memory killer leave both behind: up to the size of the
//! bundle each time, for good, in a folder a scheduled backup writes to every hour.
//!
//! Each write therefore holds an exclusive `flock(2)` on its own temporary file and staging
//! folder for as long as it runs, which the kernel lets go when the process ends, however it
//! ends. Before writing, [`sweep`] removes those of the folder that no process holds. One made
//! less than [`GRACE`] ago is left alone: its maker may not have locked it yet.

use std::fs::File;
use std::path::Path;
use std::time::Duration;

/// How old an unlocked leftover must be to be removed: far more than the moment between
/// making a temporary file or folder and locking it.
const GRACE: Duration = Duration::from_secs(60);

/// Whether `name` is of a temporary file or staging folder a bundle write makes.
fn is_ours(name: &str) -> bool {
    name.starts_with(".aspstate-layers-")
        || name.starts_with(".aspstate-staging-")
        || (name.starts_with(".aspstate-") && name.ends_with(".partial"))
}

/// Locks `file` (a temporary file, or a staging folder opened as a file) for as long as it is
/// open, so [`sweep`] knows it is in use. Where the platform cannot, nothing is locked, and
/// nothing is swept either. Whatever else writes a bundle through a `.aspstate-*.partial` of
/// its own (`asp pull -o`) holds it with this too.
pub fn hold(file: &File) {
    #[cfg(unix)]
    let _ = file.try_lock();
    #[cfg(not(unix))]
    let _ = file;
}

/// A staging folder ([`staging_dir`]): locked while it lives, removed when dropped.
#[derive(Debug)]
pub(crate) struct StagingDir {
    // Removed before the lock goes (fields drop in order), and unregistered after.
    dir: tempfile::TempDir,
    _held: Option<File>,
    _on_stop: crate::on_stop::Guard,
}

impl StagingDir {
    pub(crate) fn path(&self) -> &Path {
        self.dir.path()
    }
}

/// A new `.aspstate-layers-*` folder in `parent`, locked ([`hold`]), once the leftovers of
/// killed writes there are swept.
pub(crate) fn staging_dir(parent: &Path) -> std::io::Result<StagingDir> {
    staging_dir_named(parent, ".aspstate-layers-")
}

/// [`staging_dir`] with another of [`is_ours`]'s prefixes.
pub(crate) fn staging_dir_named(parent: &Path, prefix: &str) -> std::io::Result<StagingDir> {
    debug_assert!(is_ours(prefix));
    sweep(parent);
    let (dir, on_stop) = crate::on_stop::make_registered(
        || tempfile::Builder::new().prefix(prefix).tempdir_in(parent),
        |d| d.path(),
    )?;
    #[cfg(unix)]
    let held = File::open(dir.path()).ok().inspect(hold);
    #[cfg(not(unix))]
    let held = None;
    Ok(StagingDir {
        dir,
        _held: held,
        _on_stop: on_stop,
    })
}

/// Removes from `dir` the temporary files and staging folders of bundle writes that were
/// killed: ours by their names, unlocked (no process is writing them), and older than
/// [`GRACE`]. Whatever cannot be read or removed is left as it is: this is housekeeping,
/// never a reason for a write to fail.
pub(crate) fn sweep(dir: &Path) {
    #[cfg(unix)]
    {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            if !name.to_str().is_some_and(is_ours) {
                continue;
            }
            let path = e.path();
            // Not followed: a symbolic link of that name is not ours to judge.
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let old = meta
                .modified()
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > GRACE);
            if !old || !(meta.is_dir() || meta.is_file()) {
                continue;
            }
            let Ok(f) = File::open(&path) else { continue };
            if f.try_lock().is_err() {
                continue;
            }
            let _ = match meta.is_dir() {
                true => std::fs::remove_dir_all(&path),
                false => std::fs::remove_file(&path),
            };
        }
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn names_of_a_bundle_writes_temporaries_are_ours_and_no_others() {
        for ours in [
            ".aspstate-layers-Ab12Cd",
            ".aspstate-staging-Ab12Cd",
            ".aspstate-Ab12Cd.partial",
            ".aspstate-.partial",
        ] {
            assert!(is_ours(ours), "{ours}");
        }
        for theirs in [
            "b.aspstate",
            ".aspstate",
            ".aspstate-notes",
            ".asp-Ab12Cd.partial",
            "aspstate-layers-Ab12Cd",
        ] {
            assert!(!is_ours(theirs), "{theirs}");
        }
    }
}
