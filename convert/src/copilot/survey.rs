//! Listing Copilot's sessions without reading them: every directory of `session-state/`
//! (Copilot's own listing scans them too; `session-store.db` is a derived index it does not
//! consult, spec §4.1). A session's read depends on every regular file under its directory
//! except the lock, hold and in-use files of a running process.

use std::path::{Path, PathBuf};

use asp_format::name::SessionId;

use super::layout::{Layout, is_transient};
use crate::error::ConvertError;
use crate::harness::{Survey, SurveyContext, Surveyed};
use crate::kit::source::SourceFile;

/// What reading one session needs.
#[derive(Debug)]
pub struct Plan {
    /// The session directory.
    pub dir: PathBuf,
    /// Every file of it, sorted by path (`events.jsonl` among them, marked appended).
    pub files: Vec<SourceFile>,
}

impl Plan {
    pub fn file(&self, name: &str) -> Option<&SourceFile> {
        let p = self.dir.join(name);
        self.files.iter().find(|f| f.path == p)
    }
}

/// The session directories, sorted by name (names starting with `.` are Copilot's own:
/// `.session-operation-locks/`, and `asp`'s staging).
pub fn session_dirs(layout: &Layout) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(layout.sessions()) else {
        return Vec::new();
    };
    let mut out: Vec<PathBuf> = rd
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter(|e| e.path().is_dir())
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// The files of a session directory a read depends on, sorted.
pub fn files_of(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter(|e| !is_transient(&e.file_name().to_string_lossy()))
        .map(walkdir::DirEntry::into_path)
        .collect();
    out.sort();
    out
}

pub fn survey(layout: &Layout, ctx: &SurveyContext<'_>) -> Result<Survey, ConvertError> {
    let d = ctx.diagnostics;
    let mut out = Vec::new();
    for dir in session_dirs(layout) {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let id = match SessionId::new(&name) {
            Ok(id) => id,
            Err(e) => {
                d.lost(&dir, None, format!("{e}; skipped"));
                continue;
            }
        };
        let mut files = Vec::new();
        let mut unreadable = false;
        for p in files_of(&dir) {
            let appended = p.file_name().is_some_and(|n| n == "events.jsonl");
            match SourceFile::stat(&p, appended) {
                Ok(s) => files.push(s),
                Err(e) => {
                    d.lost(&p, None, format!("cannot be read ({e}); session skipped"));
                    unreadable = true;
                }
            }
        }
        if unreadable {
            continue;
        }
        let events = dir.join("events.jsonl");
        if !events.is_file() && std::fs::symlink_metadata(&events).is_ok() {
            // Something is there that is not a file to read (a FIFO, which opening would wait
            // on, a socket, a device, a folder, a link to nowhere): named as such, as the other
            // surveys name it, not as a session without its events.
            let why = SourceFile::stat(&events, true)
                .err()
                .map_or_else(|| "it is not a regular file".to_owned(), |e| e.to_string());
            d.lost(
                &events,
                None,
                format!("cannot be read ({why}); session skipped"),
            );
            continue;
        }
        if !events.is_file() {
            d.left_out(
                &dir,
                None,
                "a session directory without events.jsonl holds no conversation (Copilot \
                 cannot load it); not read",
            );
            continue;
        }
        let source: Vec<SourceFile> = files.clone();
        out.push(Surveyed::new(id, source, b"", Plan { dir, files }));
    }
    Ok(Survey::of(out))
}
