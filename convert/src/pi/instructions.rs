//! Instructions: `A/AGENTS.md` (Pi reads `A/CLAUDE.md` when there is no `AGENTS.md`).
//!
//! Different instructions already there are never replaced: the carried ones are saved beside
//! them as `AGENTS.imported.md` and reported as not taken. `SYSTEM.md` and `APPEND_SYSTEM.md`
//! change Pi's system prompt rather than give it instructions: reported, not carried.

use std::fs;
use std::io;

use asp_format::StateKind;
use asp_format::answer::ImportAnswer;
use asp_format::state::Instructions;

use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::fsops::Created;
use crate::kit::placement::{Placement, Tally};

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
        match fs::read(&path) {
            Ok(bytes) => {
                if std::str::from_utf8(&bytes).is_err() {
                    ctx.diagnostics
                        .lost(&path, None, "not UTF-8 text; not carried");
                    return Ok(None);
                }
                return Ok(Some(Instructions {
                    text: ctx.blobs.put(&bytes)?,
                }));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(ConvertError::io(&path)(e)),
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
    let writer = ctx.writer;
    let mut tally = Tally::new(answer, StateKind::Instructions, 1);
    let path = layout.agent.join("AGENTS.md");
    let text = ctx.blobs.read_all(&i.text)?;
    let placed = match fs::read(&path) {
        Ok(existing) if existing == text => Some(Placement::AlreadyThere),
        Ok(_) => None,
        Err(_) => {
            (writer.create_new(&path, &text, false)? == Created::New).then_some(Placement::New)
        }
    };
    if let Some(p) = placed {
        tally.place(p);
        tally.finish();
        return Ok(());
    }
    let aside = layout.agent.join(IMPORTED);
    let saved = match fs::read(&aside) {
        Ok(existing) => existing == text,
        Err(_) => writer.create_new(&aside, &text, false)? == Created::New,
    };
    tally.place(Placement::Refused(if saved {
        format!(
            "{} already holds different instructions, so it was left as it is; the carried ones \
             are in {} (merge them into AGENTS.md by hand to use them)",
            path.display(),
            aside.display()
        )
    } else {
        format!(
            "{} already holds different instructions, and so does {}; nothing was written",
            path.display(),
            aside.display()
        )
    }));
    tally.finish();
    Ok(())
}
