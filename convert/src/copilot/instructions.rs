//! Instructions: `C/copilot-instructions.md`, the user's personal instructions (spec §1).
//!
//! `C/instructions/*.instructions.md` apply only to files matching their `applyTo` glob, which
//! the one instructions text of the portable state cannot say: reported, not carried.
//! Read and written by [`crate::kit::instructions_file`]: different instructions already there
//! are never replaced, the carried ones are saved beside them as
//! `copilot-instructions.imported.md` and reported as not taken.

use std::fs;

use asp_format::answer::ImportAnswer;
use asp_format::state::Instructions;

use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};

const FILE: &str = "copilot-instructions.md";
const IMPORTED: &str = "copilot-instructions.imported.md";

pub fn read(layout: &Layout, ctx: &ReadContext<'_>) -> Result<Option<Instructions>, ConvertError> {
    if let Ok(rd) = fs::read_dir(layout.root.join("instructions")) {
        let mut scoped: Vec<_> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.to_string_lossy().ends_with(".instructions.md"))
            .collect();
        scoped.sort();
        for p in scoped {
            ctx.diagnostics.left_out(
                &p,
                None,
                "instructions that apply only to files matching their applyTo glob have no \
                 place in the portable instructions; not carried",
            );
        }
    }
    crate::kit::instructions_file::read(&layout.root.join(FILE), ctx)
}

pub fn write(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    i: &Instructions,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    crate::kit::instructions_file::write(
        &layout.root.join(FILE),
        &layout.root.join(IMPORTED),
        ctx,
        i,
        answer,
    )
}
