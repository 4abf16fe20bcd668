use std::process::ExitCode;

use asp_cli::unpack::{UnpackArgs, run};
use clap::Parser;

fn main() -> ExitCode {
    asp_cli::memory::for_batch_work();
    asp_cli::finish("asp-unpack", run(UnpackArgs::parse()))
}
