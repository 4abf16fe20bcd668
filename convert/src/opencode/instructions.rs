//! Instructions: `<config>/AGENTS.md`, OpenCode's global instructions (spec §1) [bin
//! `Instruction.systemPaths`: the first of `<config>/AGENTS.md` and `~/.claude/CLAUDE.md` that
//! exists]. `~/.claude/CLAUDE.md` is Claude Code's file, carried by the Claude Code converter,
//! so it is not read here; but while there is no `AGENTS.md` it is OpenCode's live
//! instructions, and writing an `AGENTS.md` would silently replace them. So it counts as the
//! instructions already there. Read and written by [`crate::kit::instructions_file`]: different
//! instructions already there are kept, the carried ones saved beside them as
//! `AGENTS.imported.md`.

use asp_format::answer::ImportAnswer;
use asp_format::state::Instructions;

use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::instructions_file;

const FILE: &str = "AGENTS.md";
const IMPORTED: &str = "AGENTS.imported.md";

pub fn read(layout: &Layout, ctx: &ReadContext<'_>) -> Result<Option<Instructions>, ConvertError> {
    instructions_file::read(&layout.config.join(FILE), ctx)
}

pub fn write(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    i: &Instructions,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    instructions_file::write_unless_read_instead(
        &layout.config.join(FILE),
        Some(&layout.home.join(".claude/CLAUDE.md")),
        &layout.config.join(IMPORTED),
        ctx,
        i,
        answer,
    )
}
