use std::process::ExitCode;

use asp_cli::exit::EXIT_CODES_HELP;
use asp_cli::{
    backup, check, export, forget, hub, inspect, pack, prune, registry, restore, sessions,
    snapshots, unpack, verify,
};
use clap::{Parser, Subcommand};

/// Portable agent state: back up AI coding agents' sessions, instructions, skills, MCP
/// servers, memory and settings, and carry them between harnesses
#[derive(Debug, Parser)]
#[command(name = "asp", version, after_help = format!("\
Examples:
  asp pack --from claude-code -o claude.aspstate     (same as asp-pack)
  asp inspect claude.aspstate
  asp export claude.aspstate --kinds tools
  asp verify claude.aspstate
  asp unpack claude.aspstate --to codex --dry-run    (same as asp-unpack)
  asp hub -- gemini --acp                            (ASP in front of an ACP agent)
  asp push claude.aspstate localhost:5000/me/state:v1
  asp pull localhost:5000/me/state:v1 -o claude.aspstate
  asp backup --from claude-code                      (incremental; every hour)
  asp sessions                                       (every session ever backed up)
  asp restore --session ID --to claude-code
  asp push latest ghcr.io/me/agent-state:laptop      (the newest backed up here, thin)
  asp pull ghcr.io/me/agent-state:laptop             (into the repository; then asp restore)

{EXIT_CODES_HELP}"))]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Pack agent state into a bundle (as asp-pack)
    Pack(pack::PackArgs),
    /// Unpack a bundle into an agent's store or a directory (as asp-unpack)
    Unpack(unpack::UnpackArgs),
    Inspect(inspect::InspectArgs),
    Export(export::ExportArgs),
    Verify(verify::VerifyArgs),
    Hub(hub::HubArgs),
    Push(registry::PushArgs),
    Pull(registry::PullArgs),
    Backup(backup::BackupArgs),
    Snapshots(snapshots::SnapshotsArgs),
    Sessions(sessions::SessionsArgs),
    Restore(restore::RestoreArgs),
    Check(check::CheckArgs),
    Forget(forget::ForgetArgs),
    Prune(prune::PruneArgs),
}

impl Command {
    /// Whether `--json` was asked, so an error is put on stdout as JSON too.
    fn json(&self) -> bool {
        match self {
            Command::Pack(a) => a.common.json,
            Command::Unpack(a) => a.common.json,
            Command::Inspect(a) => a.common.json,
            Command::Verify(a) => a.common.json,
            Command::Push(a) => a.common.json,
            Command::Pull(a) => a.common.json,
            Command::Backup(a) => a.common.json,
            Command::Snapshots(a) => a.common.json,
            Command::Sessions(a) => a.common.json,
            Command::Restore(a) => a.common.json,
            Command::Check(a) => a.common.json,
            Command::Forget(a) => a.common.json,
            Command::Prune(a) => a.common.json,
            // Its output is JSON already (the export form); the hub's stdout is ACP.
            Command::Export(_) | Command::Hub(_) => false,
        }
    }
}

fn main() -> ExitCode {
    let command = asp_cli::parse_args::<Cli>().command;
    let json = command.json();
    // Before any thread starts. The hub runs for hours: it gives back what a burst freed.
    match command {
        Command::Hub(_) => asp_cli::memory::bound_arenas(),
        _ => {
            asp_cli::memory::for_batch_work();
            asp_cli::stop::remove_temporaries_on_stop();
        }
    }
    let result = match command {
        Command::Pack(a) => pack::run(a),
        Command::Unpack(a) => unpack::run(a),
        Command::Inspect(a) => inspect::run(a),
        Command::Export(a) => export::run(a),
        Command::Verify(a) => verify::run(a),
        Command::Hub(a) => hub::run(a),
        Command::Push(a) => registry::run_push(a),
        Command::Pull(a) => registry::run_pull(a),
        Command::Backup(a) => backup::run(a),
        Command::Snapshots(a) => snapshots::run(a),
        Command::Sessions(a) => sessions::run(a),
        Command::Restore(a) => restore::run(a),
        Command::Check(a) => check::run(a),
        Command::Forget(a) => forget::run(a),
        Command::Prune(a) => prune::run(a),
    };
    asp_cli::finish("asp", json, result)
}
