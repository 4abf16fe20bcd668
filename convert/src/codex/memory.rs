//! Codex memories (`$CODEX_HOME/memories/`, only present when the `memories` feature is on):
//! Markdown notes by path (spec/harnesses/codex.md §11.3).
//!
//! Codex's own notes go back where they came from. Notes from other harnesses go under
//! `memories/extensions/ad_hoc/notes/`, the one place Codex's memory templates invite outside
//! notes; Codex's consolidation regenerates its other files, which would swallow them.

use std::fs;
use std::path::{Path, PathBuf};

use asp_format::blob::{BlobSink, BlobSource};
use asp_format::name::{HarnessName, RelPath};
use asp_format::state::{MemoryNote, NoteBody, Origin};

use crate::error::ConvertError;
use crate::kit::beside::kept_beside;
use crate::kit::fsops::{Created, Writer};
use crate::kit::placement::Placement;
use crate::kit::report::Diagnostics;

pub const DIR: &str = "memories";
/// Where notes from other harnesses go, under [`DIR`].
pub const FOREIGN_DIR: &str = "extensions/ad_hoc/notes";

/// Every Markdown file under `memories/`, as notes with their origin.
pub fn read(
    codex_home: &Path,
    sink: &dyn BlobSink,
    diagnostics: &Diagnostics,
) -> Result<Vec<MemoryNote>, ConvertError> {
    let root = codex_home.join(DIR);
    if !root.is_dir() {
        return Ok(Vec::new());
    }
    let harness = HarnessName::new(super::NAME).expect("a valid harness name");
    let mut notes = Vec::new();
    for entry in walkdir::WalkDir::new(&root)
        .follow_links(false)
        .min_depth(1)
        .sort_by_file_name()
    {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let p = e.path().unwrap_or(&root).to_path_buf();
                diagnostics.lost(&p, None, format!("cannot be read ({e}); skipped"));
                continue;
            }
        };
        if !entry.file_type().is_file() {
            continue;
        }
        let rel = entry.path().strip_prefix(&root).expect("walked under root");
        if rel.extension().is_none_or(|e| e != "md") {
            diagnostics.note(
                entry.path(),
                None,
                "not a Markdown note; left out of memory",
            );
            continue;
        }
        let path = match RelPath::from_path(rel) {
            Ok(p) => p,
            Err(e) => {
                diagnostics.lost(entry.path(), None, format!("skipped: {e}"));
                continue;
            }
        };
        let bytes = match fs::read(entry.path()) {
            Ok(b) => b,
            Err(e) => {
                diagnostics.lost(entry.path(), None, format!("cannot be read ({e}); skipped"));
                continue;
            }
        };
        // Notes are text; the export and directory forms hold them as such.
        if let Err(e) = std::str::from_utf8(&bytes) {
            diagnostics.lost(
                entry.path(),
                None,
                format!(
                    "not UTF-8 text (invalid byte at offset {}); skipped",
                    e.valid_up_to()
                ),
            );
            continue;
        }
        notes.push(MemoryNote {
            origin: Origin {
                harness: Some(harness.clone()),
                path: Some(format!(".codex/{DIR}/{path}")),
                project: None,
            },
            path,
            body: NoteBody::Text(sink.put(&bytes)?),
        });
    }
    Ok(notes)
}

/// Where a note belongs in this home.
fn target(memories: &Path, note: &MemoryNote) -> PathBuf {
    let own = note
        .origin
        .harness
        .as_ref()
        .is_some_and(|h| h.as_str() == super::NAME);
    if own
        && let Some(rel) = note
            .origin
            .path
            .as_deref()
            .and_then(|p| p.strip_prefix(".codex/memories/"))
            .and_then(|p| RelPath::new(p).ok())
    {
        return rel.under(memories);
    }
    note.path.under(&memories.join(FOREIGN_DIR))
}

/// `<stem>~<harness>.<ext>` beside `path`.
fn beside(path: &Path, harness: &str) -> PathBuf {
    let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("note");
    let stem = kept_beside(stem, "", Some(harness), 1).name;
    let name = match path.extension().and_then(|e| e.to_str()) {
        Some(ext) => format!("{stem}.{ext}"),
        None => stem,
    };
    path.with_file_name(name)
}

/// Writes (or, for a tombstone, removes) one note. A different note already at the place is
/// kept; the incoming one goes beside it as `<stem>~<harness>.md`.
pub fn write(
    writer: &Writer,
    codex_home: &Path,
    note: &MemoryNote,
    blobs: &dyn BlobSource,
) -> Result<Placement, ConvertError> {
    let memories = codex_home.join(DIR);
    let path = target(&memories, note);
    let text = match note.body {
        NoteBody::Deleted => {
            return Ok(if writer.remove(&path)? {
                Placement::New
            } else {
                Placement::AlreadyThere
            });
        }
        NoteBody::Text(d) => blobs.read_all(&d)?,
    };
    let harness = note
        .origin
        .harness
        .as_ref()
        .map_or("asp", HarnessName::as_str);
    for (candidate, placement) in [
        (path.clone(), Placement::New),
        (beside(&path, harness), Placement::Beside),
    ] {
        match fs::read(&candidate) {
            Ok(existing) if existing == text => return Ok(Placement::AlreadyThere),
            Ok(_) => continue,
            Err(_) => {}
        }
        if writer.create_new(&candidate, &text, false)? == Created::New {
            return Ok(placement);
        }
    }
    Ok(Placement::Refused(format!(
        "memory note {}: different notes are already at {} and beside it; left as they are",
        note.path,
        path.display()
    )))
}
