//! Instructions and memory: `~/.gemini/GEMINI.md` and the private project memory
//! `~/.gemini/tmp/<project>/memory/*.md`.
//!
//! Reading: GEMINI.md without its `## Gemini Added Memories` section is the instructions; each
//! entry of the section is a note (`gemini-added-memories/<words>.md`, origin
//! `.gemini/GEMINI.md#gemini-added-memories`); each Markdown file of a project's memory
//! directory is a note by path (`<project dir>/<file>`, origin that file, `project` its root).
//!
//! Writing: instructions are merged into GEMINI.md (added after what is there unless already
//! contained; never replacing the user's own); global notes become bullets of the section (a
//! tombstone removes its bullet); project notes become files in the project's memory directory,
//! pointed to from its `MEMORY.md` index as the CLI's memory command does, and a tombstone
//! removes the file and its pointer. An existing file with different content is never
//! overwritten: the carried note is kept beside it as `<name>~<harness>.md`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use asp_format::StateKind;
use asp_format::answer::ImportAnswer;
use asp_format::blob::{BlobSink, BlobSource};
use asp_format::name::{HarnessName, RelPath};
use asp_format::state::{Instructions, MemoryNote, NoteBody, Origin};

use crate::fsops::{Created, Writer};
use crate::harness::ConvertError;
use crate::report::Diagnostics;

use super::memory::{self, FRAGMENT};
use super::projects::Projects;

fn gemini_name() -> HarnessName {
    HarnessName::new("gemini").expect("a valid name")
}

/// The instruction file: the first configured name that exists, else the first name.
pub fn instructions_file(gemini: &Path, names: &[String]) -> PathBuf {
    names
        .iter()
        .map(|n| gemini.join(n))
        .find(|p| p.is_file())
        .unwrap_or_else(|| gemini.join(&names[0]))
}

fn read_text(path: &Path, diagnostics: &Diagnostics) -> Result<Option<String>, ConvertError> {
    match fs::read(path) {
        Ok(b) => match String::from_utf8(b) {
            Ok(t) => Ok(Some(t)),
            Err(_) => {
                diagnostics.skipped(path, None, "not UTF-8 text; skipped");
                Ok(None)
            }
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConvertError::io(path)(e)),
    }
}

/// Reads the instructions and the section's memories from the instruction file.
pub fn read_global(
    gemini: &Path,
    file: &Path,
    sink: &dyn BlobSink,
    diagnostics: &Diagnostics,
) -> Result<(Option<Instructions>, Vec<MemoryNote>), ConvertError> {
    let Some(text) = read_text(file, diagnostics)? else {
        return Ok((None, Vec::new()));
    };
    let split = memory::split(&text);
    let instructions = if split.instructions.trim().is_empty() {
        None
    } else {
        Some(Instructions {
            text: sink.put(split.instructions.as_bytes())?,
        })
    };
    let rel = file
        .strip_prefix(gemini.parent().unwrap_or(gemini))
        .unwrap_or(file);
    let origin_path = format!("{}#{FRAGMENT}", rel.to_string_lossy().replace('\\', "/"));
    let mut notes = Vec::new();
    for m in split.memories {
        let path = RelPath::new(&m.path).expect("derived note paths are portable");
        notes.push(MemoryNote {
            path,
            origin: Origin {
                harness: Some(gemini_name()),
                path: Some(origin_path.clone()),
                project: None,
            },
            body: NoteBody::Text(sink.put(format!("{}\n", m.text).as_bytes())?),
        });
    }
    Ok((instructions, notes))
}

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
                diagnostics.skipped(&f, None, "its name cannot be carried portably; skipped");
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
struct ProjectNote<'a> {
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

fn project_note(n: &MemoryNote) -> Option<ProjectNote<'_>> {
    let native = n
        .origin
        .path
        .as_deref()
        .filter(|_| {
            n.origin
                .harness
                .as_ref()
                .is_some_and(|h| h.as_str() == "gemini")
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

/// The instruction file with carried instructions and global memories merged in. Returns
/// whether instructions and memory were taken.
pub fn write_global(
    file: &Path,
    instructions: Option<&Instructions>,
    notes: &[MemoryNote],
    blobs: &dyn BlobSource,
    writer: &Writer,
    diagnostics: &Diagnostics,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let global: Vec<&MemoryNote> = notes.iter().filter(|n| project_note(n).is_none()).collect();
    if instructions.is_none() && global.is_empty() {
        return Ok(());
    }
    let existing = match fs::read(file) {
        Ok(b) => match String::from_utf8(b) {
            Ok(t) => Some(t),
            Err(_) => {
                let why = format!(
                    "{} is not UTF-8 text, so asp does not edit it",
                    file.display()
                );
                if instructions.is_some() {
                    answer.refuse(StateKind::Instructions, why.clone());
                }
                if !global.is_empty() {
                    answer.refuse(StateKind::Memory, why);
                }
                return Ok(());
            }
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(ConvertError::io(file)(e)),
    };
    let mut text = existing.clone().unwrap_or_default();
    if let Some(i) = instructions {
        let incoming = String::from_utf8(blobs.read_all(&i.text)?).map_err(|_| {
            ConvertError::Other("the carried instructions are not UTF-8 text".to_owned())
        })?;
        if text.trim().is_empty() {
            text = incoming;
        } else if let Some(merged) = memory::merge_instructions(&text, &incoming) {
            diagnostics.note(
                file,
                None,
                "it already had instructions; the carried ones were added after them",
            );
            text = merged;
        }
        answer.take(StateKind::Instructions);
    }
    let mut add = Vec::new();
    let mut remove = Vec::new();
    for n in &global {
        match n.body {
            NoteBody::Deleted => remove.push(n.path.as_str().to_owned()),
            NoteBody::Text(d) => {
                let body = String::from_utf8_lossy(&blobs.read_all(&d)?).into_owned();
                match memory::fact_of(&body) {
                    Some(fact) => {
                        if body.trim().lines().count() > 1 {
                            diagnostics.note(
                                file,
                                None,
                                format!(
                                    "memory note {} has several lines; Gemini keeps a memory on one \
                                     line, so they were joined",
                                    n.path
                                ),
                            );
                        }
                        add.push(fact);
                    }
                    None => diagnostics.note(
                        file,
                        None,
                        format!("memory note {} is empty; nothing to remember", n.path),
                    ),
                }
            }
        }
    }
    if !global.is_empty() {
        let merged = memory::merge(&text, &add, &remove);
        text = merged.text;
        answer.take(StateKind::Memory);
    }
    match existing {
        None => {
            writer.create_new(file, text.as_bytes(), false)?;
        }
        Some(old) if old != text => writer.replace(file, text.as_bytes())?,
        Some(_) => {}
    }
    Ok(())
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
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let mut list: Vec<ProjectNote<'_>> = notes.iter().filter_map(project_note).collect();
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
        answer.take(StateKind::Memory);
        match p.note.body {
            NoteBody::Deleted => {
                writer.remove(&target)?;
                if p.name != "MEMORY.md" {
                    remove_pointer(&memdir.join("MEMORY.md"), &p.name, writer)?;
                }
            }
            NoteBody::Text(d) => {
                let bytes = blobs.read_all(&d)?;
                let harness = p
                    .note
                    .origin
                    .harness
                    .as_ref()
                    .map_or("unknown", |h| h.as_str());
                let stem = p.name.strip_suffix(".md").unwrap_or(&p.name);
                let beside = memdir.join(format!("{stem}~{harness}.md"));
                let mut written_as = None;
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
                                break;
                            }
                        }
                    }
                }
                let Some(at) = written_as else {
                    answer.refuse(
                        StateKind::Memory,
                        format!(
                            "memory note {}: {} and {} already hold other notes; not written",
                            p.note.path,
                            target.display(),
                            beside.display()
                        ),
                    );
                    continue;
                };
                let at_name = at.file_name().and_then(|n| n.to_str()).unwrap_or("");
                if at_name != "MEMORY.md" && !(from_gemini && at == target) {
                    add_pointer(&memdir.join("MEMORY.md"), &at, at_name, writer)?;
                }
            }
        }
    }
    Ok(())
}

fn add_pointer(index: &Path, file: &Path, name: &str, writer: &Writer) -> Result<(), ConvertError> {
    let abs = std::path::absolute(file).unwrap_or_else(|_| file.to_path_buf());
    let line = pointer_line(&abs, name);
    match fs::read_to_string(index) {
        Ok(text) if text.contains(name) => Ok(()),
        Ok(mut text) => {
            if !text.is_empty() && !text.ends_with('\n') {
                text.push('\n');
            }
            text.push_str(&line);
            writer.replace(index, text.as_bytes())
        }
        Err(_) => writer
            .create_new(
                index,
                format!("# Project Memory\n\n{line}").as_bytes(),
                false,
            )
            .map(|_| ()),
    }
}

fn remove_pointer(index: &Path, name: &str, writer: &Writer) -> Result<(), ConvertError> {
    let Ok(text) = fs::read_to_string(index) else {
        return Ok(());
    };
    let needle = format!("/{name} ");
    let kept: String = text
        .split_inclusive('\n')
        .filter(|l| !(l.trim_start().starts_with("- See ") && l.contains(&needle)))
        .collect();
    if kept != text {
        writer.replace(index, kept.as_bytes())?;
    }
    Ok(())
}
