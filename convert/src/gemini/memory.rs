//! Project memory: `~/.gemini/tmp/<project>/memory/*.md`, the private notes of one project.
//!
//! Reading: each Markdown file of a project's memory directory is a note by path
//! (`<project dir>/<file>`, origin that file, `project` its root). Global memories live in
//! GEMINI.md ([`super::instructions`]).
//!
//! Writing: project notes become files in the project's memory directory, pointed to from its
//! `MEMORY.md` index as the CLI's memory command does, and a tombstone removes the file and its
//! pointer. An existing file with different content is never overwritten: the carried note is
//! kept beside it under [`kept_beside`]'s name (`<name>~<harness>.md`).

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

use asp_format::blob::{BlobSink, BlobSource};
use asp_format::name::RelPath;
use asp_format::state::{MemoryNote, NoteBody, Origin};

use super::instructions::{gemini_name, read_text};
use super::projects::Projects;
use crate::error::ConvertError;
use crate::kit::beside::kept_beside;
use crate::kit::fsops::{Created, Writer};
use crate::kit::placement::{Placement, Tally};
use crate::kit::report::Diagnostics;

/// Reads every project's private memory files.
pub fn read_projects(
    gemini: &Path,
    projects: &Projects,
    sink: &dyn BlobSink,
    diagnostics: &Diagnostics,
) -> Result<Vec<MemoryNote>, ConvertError> {
    let mut dirs: Vec<PathBuf> = fs::read_dir(gemini.join("tmp"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join("memory"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    let mut notes = Vec::new();
    for memdir in dirs {
        let dir = memdir
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_owned();
        let root = if super::projects::is_hash_dir(&dir) {
            projects.root_of_hash(&dir, &[])
        } else {
            projects.root_of_dir(&dir)
        };
        let mut files: Vec<PathBuf> = fs::read_dir(&memdir)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == "md"))
            .collect();
        files.sort();
        for f in files {
            let Some(name) = f.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let Ok(path) = RelPath::new(&format!("{dir}/{name}")) else {
                diagnostics.lost(&f, None, "its name cannot be carried portably; skipped");
                continue;
            };
            let Some(text) = read_text(&f, diagnostics)? else {
                continue;
            };
            if root.is_none() {
                diagnostics.note(
                    &f,
                    None,
                    "the project this memory belongs to cannot be found; carried without one",
                );
            }
            notes.push(MemoryNote {
                path,
                origin: Origin {
                    harness: Some(gemini_name()),
                    path: Some(format!(".gemini/tmp/{dir}/memory/{name}")),
                    project: root.clone(),
                },
                body: NoteBody::Text(sink.put(text.as_bytes())?),
            });
        }
    }
    Ok(notes)
}

/// A note that lives in a project's memory directory: where, and under which file name.
pub(super) struct ProjectNote<'a> {
    note: &'a MemoryNote,
    /// The `tmp/` directory it came from, when it came from Gemini.
    native_dir: Option<String>,
    name: String,
}

/// `.gemini/tmp/<dir>/memory/<file>`, taken apart.
fn native_memory_path(p: &str) -> Option<(String, String)> {
    let parts: Vec<&str> = p.split('/').collect();
    match parts.as_slice() {
        [".gemini", "tmp", dir, "memory", file] => Some((dir.to_string(), file.to_string())),
        _ => None,
    }
}

pub(super) fn project_note(n: &MemoryNote) -> Option<ProjectNote<'_>> {
    let native = n
        .origin
        .path
        .as_deref()
        .filter(|_| {
            n.origin
                .harness
                .as_ref()
                .is_some_and(|h| h.as_str() == super::NAME)
        })
        .and_then(native_memory_path);
    if n.origin.project.is_none() && native.is_none() {
        return None;
    }
    let name = native.as_ref().map(|(_, f)| f.clone()).unwrap_or_else(|| {
        n.path
            .components()
            .last()
            .expect("a path has components")
            .to_owned()
    });
    Some(ProjectNote {
        note: n,
        native_dir: native.map(|(d, _)| d),
        name,
    })
}

/// `- See <abs path> for <words> notes.`: how the CLI's memory index points to a sibling file.
fn pointer_line(abs: &Path, name: &str) -> String {
    let stem = name.strip_suffix(".md").unwrap_or(name);
    format!(
        "- See {} for {} notes.\n",
        abs.display(),
        stem.replace(['-', '_'], " ")
    )
}

/// Writes project notes into their projects' memory directories.
pub fn write_projects(
    gemini: &Path,
    notes: &[MemoryNote],
    projects: &mut Projects,
    blobs: &dyn BlobSource,
    writer: &Writer,
    tally: &mut Tally<'_>,
) -> Result<(), ConvertError> {
    let mut list: Vec<ProjectNote<'_>> = notes.iter().filter_map(project_note).collect();
    // Indexes this write made: lines added to one later are not added to the owner's file.
    let mut made: BTreeSet<PathBuf> = BTreeSet::new();
    // Indexes first, so the pointers of the notes after them are only added when missing.
    list.sort_by_key(|p| p.name != "MEMORY.md");
    for p in list {
        let dir = match (&p.note.origin.project, &p.native_dir) {
            (Some(root), native) => {
                let d = projects.claim(root, native.as_deref());
                projects.save(writer)?;
                projects.adopt_hash_dir(root, &d, writer)?;
                d
            }
            (None, Some(native)) => native.clone(),
            (None, None) => unreachable!("project_note needs one"),
        };
        let memdir = gemini.join("tmp").join(&dir).join("memory");
        let target = memdir.join(&p.name);
        let from_gemini = p.native_dir.is_some();
        tally.taken();
        match p.note.body {
            NoteBody::Deleted => {
                writer.remove(&target)?;
                if p.name != "MEMORY.md" {
                    let index = memdir.join("MEMORY.md");
                    let removed = remove_pointer(&index, &p.name, writer)?;
                    if !made.contains(&index) {
                        tally.removed_from(&index, &removed, writer.is_dry_run());
                    }
                }
            }
            NoteBody::Text(d) => {
                let bytes = blobs.read_all(&d)?;
                let harness = p.note.origin.harness.as_ref().map(|h| h.as_str());
                let stem = p.name.strip_suffix(".md").unwrap_or(&p.name);
                let beside = memdir.join(format!("{}.md", kept_beside(stem, "", harness, 1).name));
                let mut written_as = None;
                let mut made_now = false;
                for candidate in [&target, &beside] {
                    match fs::read(candidate) {
                        Ok(existing) if existing == bytes => {
                            written_as = Some(candidate.clone());
                            break;
                        }
                        Ok(_) => continue,
                        Err(_) => {
                            if writer.create_new(candidate, &bytes, false)? == Created::New {
                                written_as = Some(candidate.clone());
                                made_now = true;
                                break;
                            }
                        }
                    }
                }
                let Some(at) = written_as else {
                    tally.place(Placement::Refused(format!(
                        "memory note {}: {} and {} already hold other notes; not written",
                        p.note.path,
                        target.display(),
                        beside.display()
                    )));
                    continue;
                };
                let at_name = at.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if at_name == "MEMORY.md" && made_now {
                    made.insert(at.clone());
                }
                if at_name != "MEMORY.md" && !(from_gemini && at == target) {
                    let index = memdir.join("MEMORY.md");
                    match add_pointer(&index, &at, at_name, writer)? {
                        Pointer::Made => {
                            made.insert(index);
                        }
                        Pointer::Added(line) if !made.contains(&index) => {
                            tally.wrote_into(&index, &[format!("{line:?}")], writer.is_dry_run());
                        }
                        Pointer::Added(_) | Pointer::There => {}
                    }
                }
            }
        }
    }
    Ok(())
}

/// What [`add_pointer`] did to a project's `MEMORY.md`.
enum Pointer {
    /// It was not there: made, with the line.
    Made,
    /// The line was added to the index there.
    Added(String),
    /// The index names the note already.
    There,
}

fn add_pointer(
    index: &Path,
    file: &Path,
    name: &str,
    writer: &Writer,
) -> Result<Pointer, ConvertError> {
    let abs = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    let line = pointer_line(&abs, name);
    match fs::read_to_string(index) {
        Ok(text) if text.contains(name) => Ok(Pointer::There),
        Ok(mut text) => {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&line);
            writer.replace(index, text.as_bytes())?;
            Ok(Pointer::Added(line.trim_end().to_owned()))
        }
        Err(_) => {
            writer.create_new(
                index,
                format!("# Project Memory\n\n{line}").as_bytes(),
                false,
            )?;
            Ok(Pointer::Made)
        }
    }
}

/// Takes the lines pointing at `name` out of a project's `MEMORY.md`; the lines taken.
fn remove_pointer(index: &Path, name: &str, writer: &Writer) -> Result<Vec<String>, ConvertError> {
    let Ok(text) = fs::read_to_string(index) else {
        return Ok(Vec::new());
    };
    let needle = format!("/{name} ");
    let is_pointer = |l: &str| l.trim_start().starts_with("- See ") && l.contains(&needle);
    let removed: Vec<String> = text
        .lines()
        .filter(|l| is_pointer(l))
        .map(|l| format!("{l:?}"))
        .collect();
    let kept: String = text
        .split_inclusive('\n')
        .filter(|l| !is_pointer(l))
        .collect();
    if kept != text {
        writer.replace(index, kept.as_bytes())?;
    }
    Ok(removed)
}
