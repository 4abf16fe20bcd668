//! Temporary files and folders removed when the process is told to stop.
//!
//! A bundle, a staging folder or a harness's file is written under a temporary name first
//! and renamed once whole. Ctrl-C (SIGINT), SIGTERM or SIGHUP end the process without
//! unwinding, so the temporaries' own cleanup never runs: a pack stopped half way left its
//! staging folder of decompressed transcripts beside the bundle it was writing, and an
//! unpack its `.asp-*.partial` in the harness's own folders (new-user trials helper-137, 1;
//! helper-136, 9). Each writer registers what it makes here for as long as the temporary
//! lives ([`remove_on_stop`]); the binaries' signal handler ([`remove_all`]) removes what is
//! registered before the process ends. A `kill -9` or a power cut still leaves them, for the
//! next write there to sweep (`bundle::leftovers`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

static REGISTERED: Mutex<BTreeMap<u64, PathBuf>> = Mutex::new(BTreeMap::new());
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
    /// until the process ends, so this waits for that end.
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

/// Waits for the end of the process when it is being told to stop: a writer calls this before
/// it makes a folder or a temporary file, so nothing is made again in a temporary folder
/// [`remove_all`] is removing (a state directory's `sessions/` came back, with a file in it:
/// re-trial helper-139, 2). Returns at once otherwise.
pub fn wait_if_stopping() {
    while stopping() {
        std::thread::park();
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
    all.values().for_each(remove);
    // A writer past its last look at `stopping` as the removal began may have made a file or
    // folder again since; by now each has looked again, and waits.
    std::thread::sleep(std::time::Duration::from_millis(30));
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
