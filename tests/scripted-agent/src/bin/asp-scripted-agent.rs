//! `asp-scripted-agent [OPTIONS]`: the scripted ACP agent on stdio (see the library docs).

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let options = match asp_scripted_agent::Options::from_args(std::env::args().skip(1)) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("asp-scripted-agent: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    match asp_scripted_agent::run_stdio(options).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("asp-scripted-agent: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
