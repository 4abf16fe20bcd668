//! Instructions, and the legacy memories that share their file: `~/.qwen/QWEN.md`.
//!
//! Qwen's global instructions file is the first name of `context.fileName` in the global dir
//! (default `["QWEN.md", "AGENTS.md"]`, so `QWEN.md`). Its `## Qwen Added Memories` section is
//! where the bare `/remember` (and the workspace-context writer) keep one-line memories, by
//! the rules Gemini CLI's `save_memory` had ([`crate::kit::memory_section`]): the file without
//! the section is the instructions, each entry a memory note
//! (`qwen-added-memories/<words>.md`, origin `.qwen/QWEN.md#qwen-added-memories`). Writing
//! merges instructions after what is there (never replacing the user's own) and global notes
//! from elsewhere into the section, in one write.

use std::path::{Path, PathBuf};

use asp_format::answer::ImportAnswer;
use asp_format::blob::{BlobSink, BlobSource};
use asp_format::name::HarnessName;
use asp_format::state::{Instructions, MemoryNote};
use serde_json::Value;

use super::layout::{Layout, QWEN};
use crate::error::ConvertError;
use crate::kit::fsops::Writer;
use crate::kit::memory_section::{self as section, Section};
use crate::kit::report::Diagnostics;

/// The `#fragment` memory origins name the section with, and the notes' folder in the state.
pub const FRAGMENT: &str = "qwen-added-memories";

/// Qwen's section (`memory-constants.ts`).
pub const SECTION: Section = Section {
    header: "## Qwen Added Memories",
    title: "Qwen Added Memories",
    note_dir: FRAGMENT,
};

fn name() -> HarnessName {
    HarnessName::new(super::NAME).expect("a valid name")
}

/// The global instructions file: the first `context.fileName` of `settings.json` (a string or
/// a list), else `QWEN.md`. settings.json is read as Qwen reads it, comments allowed.
pub fn file(layout: &Layout) -> PathBuf {
    let configured = crate::kit::settings_json::File::load(&super::settings::path(layout))
        .ok()
        .and_then(|f| match f.get("/context/fileName") {
            Some(Value::String(s)) => Some(s.clone()),
            Some(Value::Array(a)) => a.first().and_then(Value::as_str).map(str::to_owned),
            _ => None,
        })
        .filter(|n| !n.is_empty() && !n.contains('/'));
    layout.qwen.join(configured.as_deref().unwrap_or("QWEN.md"))
}

/// The instructions and the section's memories.
pub fn read(
    layout: &Layout,
    sink: &dyn BlobSink,
    diagnostics: &Diagnostics,
) -> Result<(Option<Instructions>, Vec<MemoryNote>), ConvertError> {
    let f = file(layout);
    let name_in_home = f.file_name().and_then(|n| n.to_str()).unwrap_or("QWEN.md");
    let origin = format!("{QWEN}/{name_in_home}#{FRAGMENT}");
    section::read_file(&f, &SECTION, &name(), &origin, sink, diagnostics)
}

/// Carried instructions and global notes for the section merged into the file.
#[allow(clippy::too_many_arguments)]
pub fn write(
    path: &Path,
    different: crate::kit::placement::DifferentInstructions,
    instructions: Option<&Instructions>,
    notes: &[&MemoryNote],
    blobs: &dyn BlobSource,
    writer: &Writer,
    diagnostics: &Diagnostics,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    section::write_file(
        path,
        &SECTION,
        "Qwen Code",
        different,
        instructions,
        notes,
        blobs,
        writer,
        diagnostics,
        answer,
    )
}
