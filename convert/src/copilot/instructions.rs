//! Instructions: `C/copilot-instructions.md`, the user's personal instructions (spec §1).
//!
//! `C/instructions/*.instructions.md` apply only to files matching their `applyTo` glob, which
//! the one instructions text of the portable state cannot say: reported, not carried.
//! Different instructions already there are never replaced: the carried ones are saved beside
//! them as `copilot-instructions.imported.md` and reported as not taken.

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
    let path = layout.root.join(FILE);
    match fs::read(&path) {
        Ok(bytes) => {
            if std::str::from_utf8(&bytes).is_err() {
                ctx.diagnostics
                    .lost(&path, None, "not UTF-8 text; not carried");
                return Ok(None);
            }
            Ok(Some(Instructions {
                text: ctx.blobs.put(&bytes)?,
            }))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConvertError::io(&path)(e)),
    }
}

pub fn write(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    i: &Instructions,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let writer = ctx.writer;
    let mut tally = Tally::new(answer, StateKind::Instructions, 1);
    let path = layout.root.join(FILE);
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
    let aside = layout.root.join(IMPORTED);
    let saved = match fs::read(&aside) {
        Ok(existing) => existing == text,
        Err(_) => writer.create_new(&aside, &text, false)? == Created::New,
    };
    tally.place(Placement::Refused(if saved {
        format!(
            "{} already holds different instructions, so it was left as it is; the carried ones \
             are in {} (merge them into {FILE} by hand to use them)",
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
