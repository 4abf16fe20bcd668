//! Temporary files and folders removed when the process is told to stop.
//!
//! A bundle, a staging folder or a harness's file is written under a temporary name first
//! and renamed once whole. Ctrl-C (SIGINT), SIGTERM or SIGHUP end the process without
//! unwinding, so the temporaries' own cleanup never runs: a pack stopped half way left its
//! staging folder of decompressed transcripts beside the bundle it was writing, and an
//! unpack its `.asp-*.partial` in the harness's own folders (new-user trials helper-137, 1;
//! helper-136, 9). Each writer registers what it makes here for as long as the temporary
//! lives ([`make_registered`], or [`remove_on_stop`] after the fact where a temporary outside
//! the user's folders may be left for an instant); the binaries' signal handler
//! ([`remove_all`]) removes what is registered before the process ends. A `kill -9` or a power cut still leaves them, for the
//! next write there to sweep (`bundle::leftovers`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// The temporaries registered, by their guards' ids.
type Registry = BTreeMap<u64, PathBuf>;

static REGISTERED: Mutex<Registry> = Mutex::new(BTreeMap::new());
static NEXT: AtomicU64 = AtomicU64::new(0);

/// A temporary path registered for removal on stop; dropping it unregisters the path (the
/// temporary was renamed into place or removed by its owner).
#[derive(Debug)]
#[must_use = "the path is unregistered when this is dropped"]
pub struct Guard(u64);

impl Guard {
    /// Runs `put_in_place` (the rename that makes the temporary what it was written to be)
    /// and unregisters the path, both while no removal can run: a stop that came meanwhile
    /// would otherwise empty a folder just renamed into place, or the old one exchanged to
    /// the temporary name (review helper-138, 5). A removal already under way holds the lock
    /// until the process ends, so this waits for that end. `put_in_place` must not call into
    /// this module (the lock is not reentrant), and a stop waits for it to end.
    pub fn settle<T>(self, put_in_place: impl FnOnce() -> T) -> T {
        let held = REGISTERED.lock();
        let done = put_in_place();
        if let Ok(mut all) = held {
            all.remove(&self.0);
        }
        done
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Ok(mut all) = REGISTERED.lock() {
            all.remove(&self.0);
        }
    }
}

/// Makes a temporary (`make`) and registers it (`path_of`) in one step that no removal can
/// come between: a temporary made after [`remove_all`] looked would be left, and the writer
/// waiting to register it would never give it up (review helper-140, 1). When the process is
/// being told to stop, nothing is made: this waits for its end.
pub fn make_registered<T>(
    make: impl FnOnce() -> std::io::Result<T>,
    path_of: impl Fn(&T) -> &Path,
) -> std::io::Result<(T, Guard)> {
    let held = lock_unless_stopping();
    let made = make()?;
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut all) = held {
        all.insert(id, path_of(&made).to_path_buf());
    }
    Ok((made, Guard(id)))
}

/// The registry, locked; when the process is being told to stop, never: this waits for the
/// end instead.
fn lock_unless_stopping() -> std::sync::LockResult<std::sync::MutexGuard<'static, Registry>> {
    let held = REGISTERED.lock();
    if stopping() {
        drop(held);
        wait_for_the_end();
    }
    held
}

/// Runs `make` (a folder made where temporaries are written) in a step no removal can come
/// between, so a folder [`remove_all`] removed is not made again; when the process is being
/// told to stop, waits for its end instead. `make` must not call into this module.
pub fn make_unless_stopping<T>(make: impl FnOnce() -> T) -> T {
    let _held = lock_unless_stopping();
    make()
}

/// Registers `path` (a file, or a folder removed with all it holds) to be removed if the
/// process is told to stop before the returned guard is dropped.
pub fn remove_on_stop(path: &Path) -> Guard {
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    if let Ok(mut all) = REGISTERED.lock() {
        all.insert(id, path.to_path_buf());
    }
    Guard(id)
}

/// Whether [`remove_all`] has begun: the process is ending by a signal, and a failure a
/// thread meets now (its temporary removed under it) is not to be said as the command's.
pub fn stopping() -> bool {
    STOPPING.load(Ordering::Relaxed)
}

static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Parks this thread for good: the process is ending by a signal ([`remove_all`]'s thread
/// raises it).
fn wait_for_the_end() -> ! {
    loop {
        std::thread::park();
    }
}

/// Waits for the end of the process when it is being told to stop (a command that failed
/// meanwhile, its temporary removed under it, does not end it first); returns at once
/// otherwise.
pub fn wait_if_stopping() {
    if stopping() {
        wait_for_the_end();
    }
}

/// Removes everything registered, and lets nothing be registered after: for a signal
/// handler, just before the process ends. Whatever cannot be removed is left (there is no one
/// left to tell).
pub fn remove_all() {
    STOPPING.store(true, Ordering::Relaxed);
    // Held to the end: a writer that makes a temporary meanwhile waits, and the process ends.
    let Ok(all) = REGISTERED.lock() else { return };
    let remove = |path: &PathBuf| match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => {
            let _ = std::fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(path);
        }
        Err(_) => {}
    };
    // Every temporary is made and registered under this lock ([`make_registered`]), and no
    // folder for one is made while it is held ([`make_unless_stopping`]): what is removed
    // stays removed.
    all.values().for_each(remove);
    std::mem::forget(all);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_guard_unregisters_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let kept = dir.path().join("kept");
        std::fs::write(&kept, b"x").unwrap();
        drop(remove_on_stop(&kept));
        assert!(!REGISTERED.lock().unwrap().values().any(|p| p == &kept));
        let g = remove_on_stop(&kept);
        assert!(REGISTERED.lock().unwrap().values().any(|p| p == &kept));
        drop(g);
        assert!(kept.exists());
    }
}
