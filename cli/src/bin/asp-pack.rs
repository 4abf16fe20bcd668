use std::process::ExitCode;

use asp_cli::pack::{PackArgs, run};

fn main() -> ExitCode {
    asp_cli::memory::for_batch_work();
    asp_cli::stop::remove_temporaries_on_stop();
    let args: PackArgs = asp_cli::parse_args();
    let json = args.common.json;
    asp_cli::finish("asp-pack", json, run(args))
}
