//! `~/.gemini/GEMINI.md`: instructions with a `## Gemini Added Memories` section inside.
//!
//! Gemini's `save_memory` tool (until May 2026) kept memories as one-line bullets under that
//! heading in the global instructions file; the CLI still loads the section as instructions.
//! asp carries the two apart: the file without the section is the instructions, each bullet a
//! memory note. The rules (a Markdown parser finds the section, so a `## ` line inside a fenced
//! code block is not mistaken for a heading; bullets appended after the section's last line,
//! the header created at the end of the file when missing) are Qwen Code's too, so they live in
//! [`crate::kit::memory_section`]; this module names Gemini's section.

use crate::kit::memory_section::Section;

/// The heading `save_memory` wrote.
pub const HEADER: &str = "## Gemini Added Memories";
/// The `#fragment` memory origins name the section with.
pub const FRAGMENT: &str = "gemini-added-memories";
/// Where the notes of the section live in the state.
pub const NOTE_DIR: &str = "gemini-added-memories";

/// Gemini's section.
pub const SECTION: Section = Section {
    header: HEADER,
    title: "Gemini Added Memories",
    note_dir: NOTE_DIR,
};
