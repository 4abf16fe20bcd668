//! `-` as a file name: bundles from standard input and to standard output.
//!
//! A bundle is a zip, read through its central directory at the end, so input from a pipe is
//! spooled into a temporary file first; output to a pipe is written to a temporary file and
//! copied out, so the bytes are exactly those of a seekable write.

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::exit::{Context, Failure, Result};

/// A bundle path ready to open: the given file, or a spooled copy of standard input.
#[derive(Debug)]
pub enum Input {
    File(PathBuf),
    /// Removed when dropped, or when the process is told to stop ([`crate::stop`]).
    Spooled(tempfile::NamedTempFile, asp_format::on_stop::Guard),
}

impl Input {
    /// A directory given as the bundle is a usage error (exit 2) for every command that reads
    /// one, naming what reads a directory of state (it was exit 2 for `asp inspect` and 1 for
    /// `asp export` and `asp verify`: new-user trial helper-122, 9).
    pub fn open(arg: &Path) -> Result<Input> {
        if arg.as_os_str() != "-" {
            if arg.is_dir() {
                crate::bail_usage!(
                    "{} is a directory, not a bundle (a .aspstate file); a state directory that \
                     asp-unpack --to-dir wrote is read with `asp inspect --from-dir` and \
                     `asp-pack --from-dir`, a backup repository with `asp snapshots --repo` \
                     and `asp check --repo`",
                    arg.display()
                );
            }
            return Ok(Input::File(arg.to_path_buf()));
        }
        let mut tmp = tempfile::Builder::new()
            .prefix("asp-stdin-")
            .suffix(".aspstate")
            .tempfile()
            .map_err(Failure::store)
            .context("cannot create a temporary file for standard input")?;
        let on_stop = asp_format::on_stop::remove_on_stop(tmp.path());
        io::copy(&mut io::stdin().lock(), tmp.as_file_mut())
            .map_err(Failure::source)
            .context("cannot read the bundle from standard input")?;
        Ok(Input::Spooled(tmp, on_stop))
    }

    pub fn path(&self) -> &Path {
        match self {
            Input::File(p) => p,
            Input::Spooled(t, _) => t.path(),
        }
    }

    /// `e`, naming the bundle as [`Input::display`] does (not the spooled copy's path).
    pub fn own(&self, e: asp_format::bundle::ReadError) -> asp_format::bundle::ReadError {
        match self {
            Input::File(_) => e,
            Input::Spooled(..) => e.named(self.display()),
        }
    }

    /// The name to show in messages.
    pub fn display(&self) -> String {
        match self {
            Input::File(p) => p.display().to_string(),
            Input::Spooled(..) => "<stdin>".to_owned(),
        }
    }
}

/// Refuses `-o -` when standard output is a terminal, before any work: a bundle is binary
/// (a zip), which a terminal shows as noise and may take for control sequences (new-user
/// trial helper-137, 9; `gzip` and `zstd` refuse the same).
pub fn refuse_a_terminal() -> Result<()> {
    use std::io::IsTerminal as _;
    if io::stdout().is_terminal() {
        crate::bail_usage!(
            "-o - writes the bundle (binary zip data) to standard output, which is a terminal \
             here; redirect it (> FILE, or | asp-unpack - ...) or give -o FILE"
        );
    }
    Ok(())
}

/// Copies a finished bundle file to standard output.
pub fn copy_to_stdout(path: &Path) -> Result<()> {
    let mut f = File::open(path)
        .map_err(Failure::store)
        .with_context(|| format!("cannot reopen {}", path.display()))?;
    crate::stdout_used();
    let mut out = io::stdout().lock();
    io::copy(&mut f, &mut out)
        .and_then(|_| out.flush())
        .map_err(Failure::store)
        .context("cannot write the bundle to standard output")
}
