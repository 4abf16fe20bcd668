use std::process::ExitCode;

use asp_cli::pack::{PackArgs, run};
use clap::Parser;

fn main() -> ExitCode {
    asp_cli::memory::bound_arenas();
    asp_cli::finish("asp-pack", run(PackArgs::parse()))
}
