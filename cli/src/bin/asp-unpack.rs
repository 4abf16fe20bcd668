use std::process::ExitCode;

use asp_cli::unpack::{UnpackArgs, run};

fn main() -> ExitCode {
    asp_cli::memory::for_batch_work();
    asp_cli::stop::remove_temporaries_on_stop();
    let args: UnpackArgs = asp_cli::parse_args();
    let json = args.common.json;
    asp_cli::finish("asp-unpack", json, run(args))
}
