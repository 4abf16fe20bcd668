use std::process::ExitCode;

use asp_cli::pack::{PackArgs, run};
use clap::Parser;

fn main() -> ExitCode {
    asp_cli::memory::for_batch_work();
    asp_cli::finish("asp-pack", run(PackArgs::parse()))
}
