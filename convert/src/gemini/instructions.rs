//! Instructions, and the global memories that share their file: `~/.gemini/GEMINI.md`.
//!
//! Reading: GEMINI.md without its `## Gemini Added Memories` section is the instructions; each
//! entry of the section is a memory note (`gemini-added-memories/<words>.md`, origin
//! `.gemini/GEMINI.md#gemini-added-memories`). Project memory is [`super::memory`]'s.
//!
//! Writing: instructions are merged into GEMINI.md (added after what is there unless already
//! contained; never replacing the user's own); global notes become bullets of the section (a
//! tombstone removes its bullet). Both are written in one go, since they are one file.

use std::path::{Path, PathBuf};

use asp_format::answer::ImportAnswer;
use asp_format::blob::BlobSink;
use asp_format::name::HarnessName;
use asp_format::state::{Instructions, MemoryNote};

use super::gemini_md::{self, FRAGMENT};
use super::memory::project_note;
use crate::error::ConvertError;
use crate::kit::memory_section as section;
pub(super) use crate::kit::memory_section::read_text;
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

/// Reads the instructions and the section's memories from the instruction file.
pub fn read_global(
    gemini: &Path,
    file: &Path,
    sink: &dyn BlobSink,
    diagnostics: &Diagnostics,
) -> Result<(Option<Instructions>, Vec<MemoryNote>), ConvertError> {
    let rel = file
        .strip_prefix(gemini.parent().unwrap_or(gemini))
        .unwrap_or(file);
    let origin_path = format!("{}#{FRAGMENT}", rel.to_string_lossy().replace('\\', "/"));
    section::read_file(
        file,
        &gemini_md::SECTION,
        &gemini_name(),
        &origin_path,
        sink,
        diagnostics,
    )
}

/// The instruction file with carried instructions and global memories merged in. Returns
/// whether instructions and memory were taken.
pub fn write_global(
    file: &Path,
    ctx: &crate::harness::WriteContext<'_>,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let notes = ctx.state.memory.as_deref().unwrap_or(&[]);
    let global: Vec<&MemoryNote> = notes.iter().filter(|n| project_note(n).is_none()).collect();
    section::write_file(
        file,
        &gemini_md::SECTION,
        "Gemini",
        ctx.options.different_instructions(),
        ctx.state.instructions.as_ref(),
        &global,
        ctx.blobs,
        ctx.writer,
        ctx.diagnostics,
        answer,
    )
}
