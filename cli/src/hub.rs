//! `asp hub`: ASP in front of any ACP agent, on stdio.

use std::path::PathBuf;
use std::time::Duration;

use asp_hub::HubConfig;

use crate::exit::{Context, Failure};
use clap::Parser;

use crate::exit::Exit;

/// Serve the Agent State Protocol in front of an ACP agent, on stdin/stdout
#[derive(Debug, Clone, Parser)]
#[command(after_help = "\
Runs AGENT_COMMAND as an ACP agent subprocess and acts as an ACP agent on stdin/stdout in front
of it. Every ACP message passes through unchanged, both ways, except:
  - the initialize answer gains agentCapabilities._meta.asp, saying what the hub can do;
  - _asp/state/describe, _asp/state/export and _asp/state/import are answered by the hub:
    with --harness, from that harness's store under --home; without, sessions are exported by
    replaying each through the agent's own session/list and session/load;
  - a session/prompt arriving while a turn of its session runs does what its
    _meta.asp.busy asks: queue, interrupt, or steer (when the agent offers a way to steer).
Logs go to stderr; the agent's own stderr is shown with an [agent] prefix.

With --home, the agent runs with that home too (HOME, or its harness's own variable such as
CODEX_HOME, unless AGENT_COMMAND starts with NAME=VALUE words setting it), so the store the
hub reads and writes is the one the agent serves. A variable the agent reads in its place that
this environment sets (CLAUDE_CONFIG_DIR, QWEN_HOME, OPENCODE_DB) still wins: unset it.

A client sends initialize first and waits for its answer, as ACP asks: the hub answers the
_asp/state/* methods only after it (-32600 before). Without --harness, an agent without
session/list is exported only for the sessions its client opened through the hub.

The hub ends when its client closes stdin, or when it is told to stop (SIGTERM, SIGINT,
SIGHUP): exit 0, the agent ended with it. When the agent exits, every request still owed is
answered with -32603 and the hub exits 1, saying how the agent ended. An agent command that
cannot start is exit 1; usage errors are exit 2.

Examples:
  asp hub -- gemini --acp
  asp hub --harness claude-code -- claude-agent-acp
  asp hub --harness codex --home /srv/backup-home -- codex-acp

In an editor's agent settings (Zed's agent_servers, for one), the command is asp and its
arguments the hub's, then --, then the agent's own command:
  \"command\": \"asp\", \"args\": [\"hub\", \"--harness\", \"gemini\", \"--\", \"gemini\", \"--acp\"]")]
pub struct HubArgs {
    /// Answer the agent-state methods from this harness's native store
    #[arg(long, value_name = "NAME")]
    pub harness: Option<String>,

    /// The home directory holding the harness's store, the agent's home too (with --harness;
    /// default: the user's home)
    #[arg(long, value_name = "DIR", requires = "harness")]
    pub home: Option<PathBuf>,

    /// After the agent answers session/load, how long its replay must stay quiet before the
    /// hub takes it as complete, in milliseconds
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    pub replay_quiet_ms: u64,

    /// Log every routing decision and every line to and from the agent on stderr
    #[arg(short, long)]
    pub verbose: bool,

    /// The ACP agent to run, and its arguments (after `--`)
    #[arg(last = true, required = true, value_name = "AGENT_COMMAND")]
    pub agent: Vec<String>,
}

pub fn run(args: HubArgs) -> crate::exit::Result<Exit> {
    let mut config = HubConfig::new(args.agent);
    if let Some(name) = &args.harness {
        config = config.with_harness(name, args.home)?;
    }
    config.options.replay_quiet = Duration::from_millis(args.replay_quiet_ms);
    config.options.verbose = args.verbose;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(Failure::source)
        .context("starting the async runtime")?;
    let result = runtime.block_on(asp_hub::run_hub(config));
    // Nothing left to wait for: stdin's reader thread may still be blocked on a read.
    runtime.shutdown_background();
    result?;
    Ok(Exit::Ok)
}
