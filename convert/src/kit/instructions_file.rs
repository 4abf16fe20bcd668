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
    write_unless_read_instead(path, None, aside, ctx, i, answer)
}

/// [`write`] for a harness that, while `path` is absent, reads `instead` as its instructions
/// (OpenCode reads `~/.claude/CLAUDE.md` while it has no `AGENTS.md`). Then `instead` holds the
/// instructions already there: the same text is already there, and different text is never
/// replaced by writing `path` (the harness would stop reading the user's live instructions);
/// the carried text is saved as `aside` and answered as not taken, naming `instead`. Restoring
/// the harness's own backup (`restoring`), the text is its own `path` as it was: written where
/// `path` is absent, as the backed-up home had it, whatever `instead` holds (left as it is and
/// named in a note: the harness reads `path` again, as it did).
pub fn write_unless_read_instead(
    path: &Path,
    instead: Option<&Path>,
    aside: &Path,
    ctx: &WriteContext<'_>,
    i: &Instructions,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let writer = ctx.writer;
    let mut tally = Tally::new(answer, StateKind::Instructions, 1);
    let text = ctx.blobs.read_all(&i.text)?;
    // The file the harness reads now: `path`, or while it is absent the one it reads instead.
    let read_instead = instead.filter(|other| !crate::kit::fsops::exists(path) && other.is_file());
    let live = match read_instead {
        Some(other) if !ctx.options.restoring => other,
        _ => path,
    };
    let placed = match crate::kit::fsops::read(live) {
        Ok(existing) if existing == text => Some(Placement::AlreadyThere),
        Ok(_) => None,
        Err(_) if live == path => {
            (writer.create_new(path, &text, false)? == Created::New).then_some(Placement::New)
        }
        Err(e) => return Err(ConvertError::io(live)(e)),
    };
    if let Some(p) = placed {
        if let (Placement::New, Some(other)) = (&p, read_instead) {
            ctx.diagnostics.note(
                path,
                None,
                format!(
                    "restored as the backed-up home had it; the harness reads it, not {} \
                     (left as it is), as it did there",
                    other.display()
                ),
            );
        }
        tally.place(p);
        tally.finish();
        return Ok(());
    }
    let saved = match fs::read(aside) {
        Ok(existing) => existing == text,
        Err(_) => writer.create_new(aside, &text, false)? == Created::New,
    };
    let name = live
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    let holder = if live == path {
        format!(
            "{} already holds different instructions, so it was left as it is",
            path.display()
        )
    } else {
        format!(
            "{} is read as the instructions while {} is absent, and it holds different ones, so \
             {} was not written (that would replace them)",
            live.display(),
            path.display(),
            path.display()
        )
    };
    tally.place(Placement::Refused(if saved {
        format!(
            "{holder}; the carried ones are in {} (merge them into {name} by hand to use them)",
            aside.display()
        )
    } else {
        format!(
            "{holder}; {} holds other instructions too, so nothing was written",
            aside.display()
        )
    }));
    tally.finish();
    Ok(())
}
