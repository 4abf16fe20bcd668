//! Instructions, and the global memories that share their file: `~/.gemini/GEMINI.md`.
//!
//! Reading: GEMINI.md without its `## Gemini Added Memories` section is the instructions; each
//! entry of the section is a memory note (`gemini-added-memories/<words>.md`, origin
//! `.gemini/GEMINI.md#gemini-added-memories`). Project memory is [`super::memory`]'s.
//!
//! Writing: instructions are merged into GEMINI.md (added after what is there unless already
//! contained; never replacing the user's own); global notes become bullets of the section (a
//! tombstone removes its bullet). Both are written in one go, since they are one file.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use asp_format::StateKind;
use asp_format::answer::ImportAnswer;
use asp_format::blob::{BlobSink, BlobSource};
use asp_format::name::{HarnessName, RelPath};
use asp_format::state::{Instructions, MemoryNote, NoteBody, Origin};

use super::gemini_md::{self, FRAGMENT};
use super::memory::project_note;
use crate::error::ConvertError;
use crate::kit::fsops::Writer;
use crate::kit::report::Diagnostics;

pub(super) fn gemini_name() -> HarnessName {
    HarnessName::new(super::NAME).expect("a valid name")
}

/// The instruction file: the first configured name that exists, else the first name.
pub fn instructions_file(gemini: &Path, names: &[String]) -> PathBuf {
    names
        .iter()
        .map(|n| gemini.join(n))
        .find(|p| p.is_file())
        .unwrap_or_else(|| gemini.join(&names[0]))
}

pub(super) fn read_text(
    path: &Path,
    diagnostics: &Diagnostics,
) -> Result<Option<String>, ConvertError> {
    match fs::read(path) {
        Ok(b) => match String::from_utf8(b) {
            Ok(t) => Ok(Some(t)),
            Err(_) => {
                diagnostics.lost(path, None, "not UTF-8 text; skipped");
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
    let split = gemini_md::split(&text);
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
            ConvertError::carried(
                "the carried instructions",
                io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"),
            )
        })?;
        if text.trim().is_empty() {
            text = incoming;
        } else if let Some(merged) = gemini_md::merge_instructions(&text, &incoming) {
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
                match gemini_md::fact_of(&body) {
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
        let merged = gemini_md::merge(&text, &add, &remove);
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
