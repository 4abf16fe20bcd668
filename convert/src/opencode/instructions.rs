//! Instructions: `<config>/AGENTS.md`, OpenCode's global instructions (spec §1) [bin
//! `Instruction.systemPaths`: the first of `<config>/AGENTS.md` and `~/.claude/CLAUDE.md` that
//! exists]. `~/.claude/CLAUDE.md` is Claude Code's file, carried by the Claude Code converter;
//! OpenCode falls back on it only while it has no `AGENTS.md` of its own, so writing one makes
//! OpenCode stop reading it (said in a note). Read and written by
//! [`crate::kit::instructions_file`]: different instructions already there are kept, the
//! carried ones saved beside them as `AGENTS.imported.md`.

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
    let path = layout.config.join(FILE);
    let claude = layout.home.join(".claude/CLAUDE.md");
    if !path.exists() && claude.is_file() {
        ctx.diagnostics.note(
            &path,
            None,
            format!(
                "OpenCode read {} while it had no AGENTS.md of its own; with this one it reads \
                 AGENTS.md instead",
                claude.display()
            ),
        );
    }
    instructions_file::write(&path, &layout.config.join(IMPORTED), ctx, i, answer)
}
