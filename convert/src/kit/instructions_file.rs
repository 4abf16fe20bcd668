//! Instructions kept in one Markdown file of the harness (Copilot CLI's
//! `copilot-instructions.md`, OpenCode's `AGENTS.md`): read as it is, written only where there
//! is none.
//!
//! Different instructions already there are never replaced: the carried ones are saved beside
//! them (`<name>.imported.md`) and answered as not taken, so a person merges them by hand.

use std::fs;
use std::io;
use std::path::Path;

use asp_format::StateKind;
use asp_format::answer::ImportAnswer;
use asp_format::state::Instructions;

use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::fsops::Created;
use crate::kit::placement::{Placement, Tally};

/// The instructions in `path`; none when there is no such file. A file that is not UTF-8 text
/// is reported as lost (a harness reads it as text, so what it means is not known).
pub fn read(path: &Path, ctx: &ReadContext<'_>) -> Result<Option<Instructions>, ConvertError> {
    match fs::read(path) {
        Ok(bytes) => {
            if std::str::from_utf8(&bytes).is_err() {
                ctx.diagnostics
                    .lost(path, None, "not UTF-8 text; not carried");
                return Ok(None);
            }
            Ok(Some(Instructions {
                text: ctx.blobs.put(&bytes)?,
            }))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConvertError::io(path)(e)),
    }
}

/// Writes `i` as `path` when there is none; the same text already there is already there;
/// different text keeps the file and saves the carried text as `aside` (never over a third
/// version), answered as not taken with where it went.
pub fn write(
    path: &Path,
    aside: &Path,
    ctx: &WriteContext<'_>,
    i: &Instructions,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let writer = ctx.writer;
    let mut tally = Tally::new(answer, StateKind::Instructions, 1);
    let text = ctx.blobs.read_all(&i.text)?;
    let placed = match fs::read(path) {
        Ok(existing) if existing == text => Some(Placement::AlreadyThere),
        Ok(_) => None,
        Err(_) => {
            (writer.create_new(path, &text, false)? == Created::New).then_some(Placement::New)
        }
    };
    if let Some(p) = placed {
        tally.place(p);
        tally.finish();
        return Ok(());
    }
    let saved = match fs::read(aside) {
        Ok(existing) => existing == text,
        Err(_) => writer.create_new(aside, &text, false)? == Created::New,
    };
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    tally.place(Placement::Refused(if saved {
        format!(
            "{} already holds different instructions, so it was left as it is; the carried ones \
             are in {} (merge them into {name} by hand to use them)",
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
