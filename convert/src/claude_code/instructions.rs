//! Instructions: `CLAUDE.md` in the config dir.
//!
//! User rules (`rules/*.md`) are loaded by Claude Code beside `CLAUDE.md` but are not part of
//! the one AGENTS.md the protocol carries: reported. Different instructions already there are
//! never replaced: the carried ones are saved beside them as `CLAUDE.imported.md` and reported
//! as not taken, with how to use them.

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

/// Where carried instructions go when `CLAUDE.md` already holds different ones.
const IMPORTED_INSTRUCTIONS: &str = "CLAUDE.imported.md";

/// Reads `CLAUDE.md`; `None` when there is none (or it is not text, reported).
pub fn read(layout: &Layout, ctx: &ReadContext<'_>) -> Result<Option<Instructions>, ConvertError> {
    let path = layout.config.join("CLAUDE.md");
    if let Ok(rules) = fs::read_dir(layout.config.join("rules")) {
        let mut names: Vec<_> = rules.flatten().map(|e| e.path()).collect();
        names.sort();
        for r in names
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
        {
            ctx.diagnostics.left_out(
                &r,
                None,
                "user rules are loaded by Claude Code beside CLAUDE.md, but the instructions kind is one AGENTS.md; not carried",
            );
        }
    }
    match fs::read(&path) {
        Ok(bytes) => {
            if std::str::from_utf8(&bytes).is_err() {
                ctx.diagnostics
                    .lost(&path, None, "CLAUDE.md is not UTF-8 text; not carried");
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

/// Writes `CLAUDE.md`, or the carried instructions beside a different one.
pub fn write(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    i: &Instructions,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let writer = ctx.writer;
    let mut tally = Tally::new(answer, StateKind::Instructions, 1);
    let path = layout.config.join("CLAUDE.md");
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
    let aside = layout.config.join(IMPORTED_INSTRUCTIONS);
    let saved = match fs::read(&aside) {
        Ok(existing) => existing == text,
        Err(_) => writer.create_new(&aside, &text, false)? == Created::New,
    };
    tally.place(Placement::Refused(if saved {
        format!(
            "{} already holds different instructions, so it was left as it is; the carried ones are in {} (add the line `@~/.claude/{IMPORTED_INSTRUCTIONS}` to CLAUDE.md to use them)",
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
