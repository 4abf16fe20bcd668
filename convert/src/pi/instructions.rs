//! Instructions: `A/AGENTS.md` (Pi reads `A/CLAUDE.md` when there is no `AGENTS.md`).
//!
//! Different instructions already there (in `AGENTS.md`, or in `CLAUDE.md` while Pi reads it
//! instead) are never replaced: the carried ones are saved beside them as
//! `AGENTS.imported.md` and reported as not taken (`kit::instructions_file`). `SYSTEM.md` and
//! `APPEND_SYSTEM.md` change Pi's system prompt rather than give it instructions: reported,
//! not carried.

use asp_format::answer::ImportAnswer;
use asp_format::state::Instructions;

use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::instructions_file;

const IMPORTED: &str = "AGENTS.imported.md";

pub fn read(layout: &Layout, ctx: &ReadContext<'_>) -> Result<Option<Instructions>, ConvertError> {
    for other in ["SYSTEM.md", "APPEND_SYSTEM.md"] {
        let p = layout.agent.join(other);
        if p.is_file() {
            ctx.diagnostics.left_out(
                &p,
                None,
                "this file changes Pi's system prompt itself, which is not the instructions kind; \
                 not carried",
            );
        }
    }
    for name in ["AGENTS.md", "CLAUDE.md"] {
        let path = layout.agent.join(name);
        if path.exists() {
            return instructions_file::read(&path, ctx);
        }
    }
    Ok(None)
}

pub fn write(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    i: &Instructions,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    // While there is no `AGENTS.md`, Pi reads `CLAUDE.md`: writing `AGENTS.md` then would hide
    // the user's live instructions, so `CLAUDE.md` counts as the instructions already there.
    instructions_file::write_unless_read_instead(
        &layout.agent.join("AGENTS.md"),
        Some(&layout.agent.join("CLAUDE.md")),
        &layout.agent.join(IMPORTED),
        ctx,
        i,
        answer,
    )
}
