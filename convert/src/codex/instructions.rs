//! Instructions: `AGENTS.md` (or `AGENTS.override.md`) in `CODEX_HOME`
//! (spec/harnesses/codex.md §11.1).

use std::fs;
use std::path::{Path, PathBuf};

use asp_format::blob::BlobSink;
use asp_format::state::Instructions;

use crate::error::ConvertError;
use crate::kit::fsops::{Created, Writer};
use crate::kit::placement::{DifferentInstructions, Placement};
use crate::kit::report::Diagnostics;

pub const AGENTS_MD: &str = "AGENTS.md";
pub const AGENTS_OVERRIDE_MD: &str = "AGENTS.override.md";

/// The file Codex reads its global instructions from: the override when there is one.
pub fn instructions_file(codex_home: &Path) -> PathBuf {
    let over = codex_home.join(AGENTS_OVERRIDE_MD);
    if over.is_file() {
        over
    } else {
        codex_home.join(AGENTS_MD)
    }
}

/// The global instructions. Instructions are text (ASP carries them as UTF-8 Markdown, and the
/// export and directory forms hold them as text), so a file that is not UTF-8 is reported and
/// not carried.
pub fn read(
    codex_home: &Path,
    sink: &dyn BlobSink,
    diagnostics: &Diagnostics,
) -> Result<Option<Instructions>, ConvertError> {
    let path = instructions_file(codex_home);
    match fs::read(&path) {
        Ok(b) => {
            if let Err(e) = std::str::from_utf8(&b) {
                diagnostics.lost(
                    &path,
                    None,
                    format!(
                        "not UTF-8 text (invalid byte at offset {}); instructions not carried",
                        e.valid_up_to()
                    ),
                );
                return Ok(None);
            }
            Ok(Some(Instructions {
                text: sink.put(&b)?,
            }))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConvertError::io(&path)(e)),
    }
}

/// The line that opens instructions asp added to an existing file.
const MARKER: &str = "<!-- Added by asp: instructions carried from another agent. -->";

/// Writes the instructions into the file Codex reads. A file that is there and differs keeps
/// every byte; the incoming text is added at its end under a marker line (once: a second run
/// finds it there), which is said, or, restoring Codex's own backup (`different`), written
/// beside it.
pub fn write(
    writer: &Writer,
    codex_home: &Path,
    text: &[u8],
    different: DifferentInstructions,
    diagnostics: &crate::kit::report::Diagnostics,
    tally: &mut crate::kit::placement::Tally<'_>,
) -> Result<Placement, ConvertError> {
    let path = instructions_file(codex_home);
    let existing = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(match writer.create_new(&path, text, false)? {
                Created::New => Placement::New,
                Created::AlreadyExists => Placement::AlreadyThere,
            });
        }
        Err(e) => return Err(ConvertError::io(&path)(e)),
    };
    let incoming = String::from_utf8_lossy(text);
    let have = String::from_utf8_lossy(&existing);
    if incoming.trim().is_empty() || have.contains(incoming.trim()) {
        return Ok(Placement::AlreadyThere);
    }
    if different == DifferentInstructions::KeepBeside && !have.trim().is_empty() {
        return Ok(Placement::Refused(DifferentInstructions::keep_beside(
            &path, text, writer,
        )));
    }
    let mut merged = existing.clone();
    if !merged.ends_with(b"\n") {
        merged.push(b'\n');
    }
    merged.extend_from_slice(format!("\n{MARKER}\n\n").as_bytes());
    merged.extend_from_slice(text);
    writer.replace(&path, &merged)?;
    // The file was there (an empty one too): what was added to it is said.
    tally.wrote_into(
        &path,
        &[format!(
            "the carried instructions, after what it held, under the line {MARKER}"
        )],
        writer.is_dry_run(),
    );
    if !have.trim().is_empty() {
        diagnostics.note(
            &path,
            None,
            format!(
                "it already had instructions; the carried ones {} after them, under the line \
                 {MARKER}",
                if writer.is_dry_run() {
                    "would be added"
                } else {
                    "were added"
                }
            ),
        );
    }
    Ok(Placement::New)
}
