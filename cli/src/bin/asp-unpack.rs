use std::process::ExitCode;

use asp_cli::unpack::{UnpackArgs, run};
use clap::Parser;

fn main() -> ExitCode {
    asp_cli::memory::bound_arenas();
    asp_cli::finish("asp-unpack", run(UnpackArgs::parse()))
}
