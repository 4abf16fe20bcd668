//! A scripted ACP agent, built with the same SDK as the hub, for testing the hub against
//! something whose every move a test controls.
//!
//! It speaks raw JSON (`UntypedMessage`) end to end, so what it sends is exactly what a test
//! wrote and what it records is exactly what reached it: typed ACP values would drop unknown
//! fields and normalise defaults, which is what the hub's fidelity tests look for.
//!
//! # Prompts
//!
//! The first text block of a `session/prompt` is a script:
//!
//! - `hold KEY`: says `KEY started`, then holds the turn open until the client sends the
//!   notification `_scripted/release {"key": KEY}` (the turn ends `end_turn`, saying
//!   `KEY done`) or cancels it (`KEY cancelled`, stopReason `cancelled`). Content steered into
//!   the turn is acknowledged at once as `KEY joined: TEXT`. A release that arrives before the
//!   turn starts is remembered, so a test never races the agent.
//! - `wait KEY`: like `hold`, but the turn takes no steering (as between two steps of an
//!   agent that only looks at new input at the end of its turn).
//! - `steps N MS`: says `step i/N` N times, MS milliseconds apart, honouring cancel.
//! - `weird`: sends what typed round trips lose (an unknown `sessionUpdate` kind, unknown
//!   fields, explicit defaults), an unknown notification `_scripted/note` and an unknown
//!   request `_scripted/ask` to the client, and says what the client answered.
//! - `permission`: asks `session/request_permission` and says the outcome.
//! - `fail`: answers the prompt with a JSON-RPC error (code 4242, with data).
//! - anything else: says it back and ends the turn.
//!
//! Every agent message is an `agent_message_chunk` whose text is the line above, so a test
//! reads the conversation as lines.
//!
//! # A native store
//!
//! With `--store HARNESS=HOME` the agent also serves the sessions of that harness's store,
//! read through asp's converter whenever it is listed or loaded: it stands in for the harness
//! itself, so a test can import state through a hub and then load it back.
//!
//! # Extension methods (all pass through a transparent hub)
//!
//! - `_scripted/release {"key"}` (notification): ends a held turn, or answers a held request.
//! - `_scripted/log` (request): `{"events": [...], "received": [{"method", "params"}]}`,
//!   what the agent saw, in order.
//! - `_scripted/echo` (request): answers its params unchanged.
//! - `_scripted/stderr {"bytes": [..]}` (request): writes the bytes to stderr as they are;
//!   answered `{"written": null}`, or the write's error.
//! - `_scripted/hold {"key"}` (request): answered `{"released": KEY}` when the notification
//!   `_scripted/release {"key": KEY}` arrives, and not before: a request the agent has in
//!   hand for as long as a test wants.
//! - `_scripted/exit` (notification): the agent ends its connection, as if it crashed. Run as
//!   its own process ([`run_stdio`]), `{"code": N}` makes it exit with status N instead.
//! - `_scripted/pid` (request): `{"pid"}`, the process the agent runs in (its own, run by
//!   [`run_stdio`]), for a test that kills it.
//! - `_session/steering` when [`Steering::SessionSteering`] (the codex-acp / claude-agent-acp
//!   extension).

mod agent;
pub mod client;
mod store;
mod turn;

pub use agent::{AgentHandle, agent, agent_with_handle, run_stdio};

use serde::Deserialize;
use serde_json::Value;

/// How the agent takes a prompt that arrives while a turn of its session runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Steering {
    /// Runs it as a turn of its own, beside the running one (goose's behaviour).
    #[default]
    None,
    /// Offers the `_session/steering` request, advertised as `_meta.steering.supported` at the
    /// root of the initialize answer (codex-acp, later claude-agent-acp).
    SessionSteering,
    /// Advertises `agentCapabilities._meta.claudeCode.promptQueueing` and, like
    /// claude-agent-acp 0.25, feeds a second prompt into the running turn: the earlier request
    /// ends `end_turn` when the message is taken up, the new one carries the rest of the turn.
    PromptQueueing,
}

/// A conversation the agent holds from the start.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SeedSession {
    pub session_id: String,
    pub cwd: String,
    #[serde(default)]
    pub title: Option<String>,
    #[serde(default)]
    pub updated_at: Option<String>,
    /// `session/update` params, replayed as they are by `session/load`.
    pub updates: Vec<Value>,
}

/// What the agent advertises and how it behaves.
#[derive(Debug, Clone)]
pub struct Options {
    pub name: String,
    /// Advertise and answer `session/load`.
    pub load_session: bool,
    /// Advertise `sessionCapabilities.list`.
    pub list_sessions: bool,
    /// Advertise `sessionCapabilities.close`.
    pub close_sessions: bool,
    pub steering: Steering,
    /// Answer every `_session/steering` with this outcome (e.g. `failed`).
    pub steering_outcome: Option<String>,
    /// Answer `session/load` first and replay afterwards, as Gemini CLI does.
    pub late_replay: bool,
    /// Sessions per `session/list` page.
    pub list_page_size: usize,
    /// Answers for `session/list`, given verbatim in the order it is asked (the last one
    /// again once they run out) instead of pages of the seeded sessions: for agents whose
    /// listing misbehaves (a cursor given twice, a session on two pages).
    pub list_script: Vec<Value>,
    /// Sessions whose `session/load` fails (listed, but not replayable).
    pub fail_loads: Vec<String>,
    pub sessions: Vec<SeedSession>,
    /// A native store (`harness`, home) whose sessions `session/list` and `session/load`
    /// also serve, read through the harness's asp converter each time they are asked for.
    pub store: Option<(String, std::path::PathBuf)>,
    /// The agent is a process of its own (set by [`run_stdio`]): `_scripted/exit` may end it.
    pub process: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            name: "asp-scripted-agent".to_owned(),
            load_session: true,
            list_sessions: true,
            close_sessions: true,
            steering: Steering::None,
            steering_outcome: None,
            late_replay: false,
            list_page_size: 50,
            list_script: Vec::new(),
            fail_loads: Vec::new(),
            sessions: Vec::new(),
            store: None,
            process: false,
        }
    }
}

impl Options {
    /// Parses the binary's arguments:
    /// `[--name N] [--no-load] [--no-list] [--no-close] [--steering none|session-steering|prompt-queueing]
    /// [--steering-outcome O] [--late-replay] [--list-page-size N] [--fail-load ID]... [--sessions FILE.json]
    /// [--store HARNESS=HOME]`.
    pub fn from_args(args: impl IntoIterator<Item = String>) -> Result<Options, String> {
        let mut o = Options::default();
        let mut args = args.into_iter();
        while let Some(a) = args.next() {
            let mut value = |what: &str| args.next().ok_or_else(|| format!("{what} needs a value"));
            match a.as_str() {
                "--name" => o.name = value("--name")?,
                "--no-load" => o.load_session = false,
                "--no-list" => o.list_sessions = false,
                "--no-close" => o.close_sessions = false,
                "--late-replay" => o.late_replay = true,
                "--steering" => {
                    o.steering = match value("--steering")?.as_str() {
                        "none" => Steering::None,
                        "session-steering" => Steering::SessionSteering,
                        "prompt-queueing" => Steering::PromptQueueing,
                        other => return Err(format!("unknown --steering {other:?}")),
                    }
                }
                "--steering-outcome" => o.steering_outcome = Some(value("--steering-outcome")?),
                "--list-page-size" => {
                    o.list_page_size = value("--list-page-size")?
                        .parse()
                        .map_err(|e| format!("--list-page-size: {e}"))?
                }
                "--fail-load" => o.fail_loads.push(value("--fail-load")?),
                "--sessions" => {
                    let path = value("--sessions")?;
                    let text =
                        std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
                    o.sessions = serde_json::from_str(&text).map_err(|e| format!("{path}: {e}"))?;
                }
                "--store" => {
                    let spec = value("--store")?;
                    let (h, home) = spec
                        .split_once('=')
                        .ok_or_else(|| format!("--store {spec:?} is not HARNESS=HOME"))?;
                    o.store = Some((h.to_owned(), home.into()));
                }
                other => return Err(format!("unknown argument {other:?}")),
            }
        }
        Ok(o)
    }
}
