//! The command-line faces of `asp`: `asp-pack`, `asp-unpack` and `asp`.
//!
//! Thin on purpose: argument parsing, progress, output and exit codes live here; everything
//! else is a call into `asp-format`, the stores of `asp-convert` and `asp-hub`. The argument structs are defined once
//! and shared, so `asp pack` and `asp-pack` cannot drift apart.

pub mod args;
pub mod exit;
pub mod export;
pub mod hub;
pub mod human;
pub mod inspect;
pub mod pack;
pub mod progress;
pub mod registry;
pub mod stdio;
pub mod unpack;
pub mod verify;

use std::process::ExitCode;

pub use exit::Exit;

/// Runs a command and turns its outcome into an exit code, printing the error (with its
/// causes) on stderr. The code is the error's class ([`exit::Failure`]).
pub fn finish(program: &str, result: exit::Result<Exit>) -> ExitCode {
    match result {
        Ok(code) => code.into(),
        Err(err) => {
            eprintln!("{program}: error: {err}");
            err.exit().into()
        }
    }
}
