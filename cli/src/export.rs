//! `asp export`: a bundle's state as `_asp/state/export` answers it.

use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

use crate::exit::{Context, Failure};
use asp_format::KindSet;
use asp_format::error::ErrorClass;
use asp_format::export::{ExportError, write_export};
use clap::Parser;

use crate::args::parse_kinds;
use crate::exit::Exit;
use crate::stdio::Input;

/// Print a bundle's state as the _asp/state/export answer: {"state": {...}}
#[derive(Debug, Clone, Parser)]
#[command(after_help = "\
Sessions stream line by line, so a large bundle prints without being loaded whole. Every body
printed is read and checked first (its sha256, its update lines), so nothing damaged is
printed: a damaged body leaves out what needs it, the rest is printed, the damage is said and
the exit code is 4. Native harness files (kept for byte-exact restores) are not part of this
form.

Examples:
  asp export backup.aspstate --kinds tools,settings
  asp export backup.aspstate --session 71958462-4bb8-46b6-a36a-1becf56c22dc
  asp export backup.aspstate | jq '.state.sessions[0].updates | length'")]
pub struct ExportArgs {
    /// The bundle (`-` for standard input)
    #[arg(value_name = "BUNDLE")]
    pub bundle: PathBuf,

    /// Export only these kinds, comma-separated [default: all the bundle gives; only
    /// sessions with --session]
    #[arg(long, value_name = "KINDS", value_parser = parse_kinds)]
    pub kinds: Option<KindSet>,

    /// Export only this session and its subagent sessions (repeatable); no other session's
    /// data is read. What is printed is checked first; `asp verify` checks the whole bundle
    #[arg(long = "session", value_name = "ID")]
    pub sessions: Vec<String>,
}

pub fn run(args: ExportArgs) -> crate::exit::Result<Exit> {
    let input = Input::open(&args.bundle)?;
    let part = crate::unpack::part(args.kinds, &args.sessions)?;
    let (bundle, mut state) = crate::unpack::open_part(&input, &part)?;
    let kinds = part.kinds;
    state.retain_kinds(kinds);
    // Native files are not part of this form: they are not printed, and read only where a
    // stream needs one as its dictionary (so a damaged transcript leaves its session out).
    for s in state.sessions.iter_mut().flatten() {
        s.native = None;
    }
    // What is printed is checked first, as `asp-unpack` checks what it writes: a stream read
    // while it prints could only fail part way, after printing what a damaged body decoded
    // to (a new user's trial: text with a flipped byte, then cut-off JSON, then exit 4). A
    // body that does not check out leaves out what needs it, and the rest is printed. Each
    // body is read twice so, never held: the second read streams as before.
    let quiet = crate::progress::Bar::new(true);
    let damaged = crate::salvage::check_bundle(&mut state, &bundle, &input, None, &quiet)?;
    crate::stdout_used();
    let stdout = io::stdout();
    let mut out = BufWriter::with_capacity(256 * 1024, stdout.lock());
    write_export(&mut out, &state, &bundle, kinds)
        .map_err(|e| match e {
            // Writing failed (a closed pipe, a full disk): the bundle is not at fault.
            ExportError::Io(io) => Failure::store(io),
            // Reading failed: a body that does not check out, a stream that is not update
            // lines, text that is not UTF-8. The bundle is damaged or hostile.
            other => Failure::new(ErrorClass::Integrity, other.to_string()),
        })
        .with_context(|| format!("cannot export {}", input.display()))?;
    out.flush()
        .map_err(Failure::store)
        .context("cannot write to standard output")?;
    if damaged.is_empty() {
        return Ok(Exit::Ok);
    }
    for line in damaged.lines() {
        crate::errln!("damaged: {}: {line}", input.display());
    }
    crate::errln!(
        "left out, their data in the bundle being damaged: {}",
        damaged.summary()
    );
    Ok(Exit::Integrity)
}
