//! `asp hub`: ASP in front of any ACP agent, built on the typed forms of [`asp_protocol`] and the
//! stores of [`asp_convert`].
//!
//! ```text
//!   client  <-- Agent.v1() -->  HUB  <-- Client.v1() -->  agent (subprocess)
//! ```
//!
//! The hub is an ACP agent toward its client and an ACP client toward the agent behind it.
//! Every message passes through as raw JSON (`UntypedMessage`), both ways, so nothing the hub
//! does not understand is lost or reshaped. On top of that it:
//!
//! - adds `agentCapabilities._meta.asp` to the initialize answer ([`advertise`]), saying
//!   exactly what it can do for the agent behind it;
//! - answers `_asp/state/describe|export|import` itself ([`state_methods`]), from the native
//!   store through a harness converter ([`converter`]) or, for sessions without one, by
//!   replaying each session through the agent's `session/load` ([`replay`]);
//! - takes charge of a `session/prompt` that arrives while a turn of its session runs, as the
//!   prompt's `_meta.asp.busy` asks ([`turns`], [`steering`]).
//!
//! Nothing blocks a connection's dispatch loop: decisions are taken synchronously under one
//! lock, and anything that waits (a state operation, a replay) runs in a spawned task. Logs go
//! to stderr; stdout is the protocol's.

// Module docs link to the private modules they describe, for `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

mod advertise;
mod agent_process;
mod agent_side;
mod client_side;
mod converter;
mod listening;
mod log;
mod replay;
mod shared;
mod state_methods;
mod steering;
mod turns;
mod wire;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::{self, Dispatch};
use agent_client_protocol::{Agent, Client, ConnectTo};
use asp_convert::{ConvertError, Home, Store};

use agent_process::AgentEnd;
pub use agent_process::AgentExit;

use asp_protocol::methods::{DescribeRequest, ExportRequest, ImportRequest};
use shared::{Ended, HubShared};
use state_methods::Asked;

/// The store the hub answers the agent-state methods from: a harness converter and the home
/// whose native store it reads and writes.
pub type Converter = Store;

/// How the hub behaves, whatever it is connected to.
#[derive(Debug, Clone)]
pub struct HubOptions {
    /// Answers the agent-state methods from the native store. Without one, only sessions are
    /// exported, by replay, and only when the agent offers `session/load`.
    pub converter: Option<Converter>,
    /// After an agent answers `session/load`, how long its replay must stay quiet before the
    /// hub takes it as complete. Agents that answer before their replay ends (Gemini CLI)
    /// need it; for the others it only adds this much, once per export.
    pub replay_quiet: Duration,
    /// Log each routing decision to stderr.
    pub verbose: bool,
}

impl Default for HubOptions {
    fn default() -> Self {
        HubOptions {
            converter: None,
            replay_quiet: Duration::from_millis(1000),
            verbose: false,
        }
    }
}

/// `asp hub [--harness NAME] [--home DIR] -- AGENT_COMMAND [ARGS...]`, resolved.
#[derive(Debug, Clone)]
pub struct HubConfig {
    pub options: HubOptions,
    /// The agent to run behind the hub: program and arguments. Leading `NAME=VALUE` words set
    /// its environment (the SDK's `AcpAgent` convention).
    pub agent: Vec<String>,
}

impl HubConfig {
    pub fn new(agent: Vec<String>) -> Self {
        HubConfig {
            options: HubOptions::default(),
            agent,
        }
    }

    /// Uses the registered converter `name` on `home` (the user's home when `None`). A home
    /// named is the agent's too: it runs with the environment that makes the harness use that
    /// store (`CODEX_HOME`, else `HOME`: [`asp_convert::harness::Harness::resume_env`]), unless
    /// the command sets that variable itself; else the hub would import into one store while
    /// the agent serves another, and the session ids it answers would name sessions the agent
    /// cannot load.
    pub fn with_harness(mut self, name: &str, home: Option<PathBuf>) -> Result<Self, HubError> {
        let harness = asp_convert::harness(name).ok_or_else(|| HubError::UnknownHarness {
            name: name.to_owned(),
            known: asp_convert::harnesses()
                .iter()
                .map(|h| h.name().to_string())
                .collect(),
        })?;
        let named = home.is_some();
        let home = Home::resolve(home).map_err(HubError::Home)?;
        if named {
            let given: Vec<&str> = self
                .agent
                .iter()
                .take_while(|w| is_env_assignment(w))
                .filter_map(|w| w.split_once('=').map(|(n, _)| n))
                .collect();
            let env: Vec<String> = harness
                .resume_env(&home)
                .into_iter()
                .filter(|(n, _)| !given.contains(n))
                .map(|(n, p)| format!("{n}={}", p.display()))
                .collect();
            self.agent.splice(0..0, env);
        }
        let store = Store::Harness {
            harness: Arc::from(harness),
            home,
        };
        // A typo in --home is said at once. A home without the store yet is fine: an import
        // creates it, and an export or describe before that finds nothing held.
        store.check_home().map_err(HubError::Home)?;
        self.options.converter = Some(store);
        Ok(self)
    }
}

/// Why the hub could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("no agent command: give one after `--`, e.g. `asp hub -- gemini --acp`")]
    NoAgentCommand,
    #[error("unknown harness {name:?}; this build knows: {}", if known.is_empty() { "none yet".to_owned() } else { known.join(", ") })]
    UnknownHarness { name: String, known: Vec<String> },
    #[error(transparent)]
    Home(ConvertError),
    #[error("cannot start the agent {command:?}")]
    Spawn {
        command: String,
        #[source]
        source: Box<agent_client_protocol::Error>,
    },
    #[error(
        "the agent exited{}{}",
        exit.as_ref().map(|e| format!(" ({e})")).unwrap_or_default(),
        detail.as_ref().map(|d| format!(": {d}")).unwrap_or_default()
    )]
    AgentExited {
        /// How its process ended, when the hub ran it (`asp hub`); in process, not known.
        exit: Option<AgentExit>,
        /// Why its connection failed, when it did.
        detail: Option<String>,
    },
    #[error("ACP connection failed: {0}")]
    Acp(Box<agent_client_protocol::Error>),
}

impl asp_format::Classify for HubError {
    fn class(&self) -> asp_format::ErrorClass {
        use asp_format::ErrorClass;
        match self {
            HubError::NoAgentCommand | HubError::UnknownHarness { .. } => ErrorClass::Usage,
            HubError::Home(e) => e.class(),
            HubError::Spawn { .. } | HubError::AgentExited { .. } | HubError::Acp(_) => {
                ErrorClass::Source
            }
        }
    }
}

impl From<agent_client_protocol::Error> for HubError {
    fn from(e: agent_client_protocol::Error) -> Self {
        HubError::Acp(Box::new(e))
    }
}

/// Runs the hub on this process's stdio, in front of the agent `config.agent` started as a
/// subprocess. Returns when the client closes its side (or the agent goes away).
pub async fn run_hub(config: HubConfig) -> Result<(), HubError> {
    if config.agent.is_empty() {
        return Err(HubError::NoAgentCommand);
    }
    let command = config.agent.join(" ");
    let program = config
        .agent
        .iter()
        .find(|w| !is_env_assignment(w))
        .ok_or(HubError::NoAgentCommand)?;
    if find_program(program).is_none() {
        return Err(HubError::Spawn {
            command,
            source: Box::new(agent_client_protocol::Error::internal_error().data(format!(
                "{program}: no such program (not a file, not on PATH)"
            ))),
        });
    }
    // Listened for before the agent starts, so no signal finds the hub without its handler.
    let stop = told_to_stop();
    let (agent, end) = agent_process::spawn(&config.agent, config.options.verbose)?;
    serve_with(config.options, listening::stdio(), agent, Some(end), stop).await
}

/// When the hub's process is told to stop (SIGTERM, SIGINT, SIGHUP: an editor stopping its
/// agent server, Ctrl-C, a closed terminal): then it ends as when its client leaves, the agent
/// with it. Killed by the signal instead, it left the agent running, adopted by init (new-user
/// trial helper-129, 2). Never, when no signal can be listened for.
fn told_to_stop() -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut listening = Vec::new();
        for (kind, name) in [
            (SignalKind::terminate(), "SIGTERM"),
            (SignalKind::interrupt(), "SIGINT"),
            (SignalKind::hangup(), "SIGHUP"),
        ] {
            if let Ok(s) = signal(kind) {
                listening.push((s, name));
            }
        }
        Box::pin(async move {
            if listening.is_empty() {
                return std::future::pending().await;
            }
            let received = futures::future::select_all(
                listening
                    .iter_mut()
                    .map(|(s, name)| Box::pin(async move { s.recv().await.map(|_| *name) })),
            )
            .await
            .0;
            if let Some(name) = received {
                log::line(format_args!(
                    "asp hub: {name}: ending, and the agent with it"
                ));
            }
        })
    }
    #[cfg(not(unix))]
    {
        Box::pin(async {
            if tokio::signal::ctrl_c().await.is_err() {
                std::future::pending::<()>().await;
            }
        })
    }
}

/// `NAME=VALUE`, which `AcpAgent` takes as the agent's environment.
fn is_env_assignment(word: &str) -> bool {
    word.split_once('=')
        .is_some_and(|(name, _)| !name.is_empty() && !name.contains('/'))
}

/// Where `program` is: itself when it names a file, else the first match on `PATH`. Checked
/// before serving, so a mistyped agent is an error before any protocol traffic, not an agent
/// that "exited" under a client that already sent `initialize`.
fn find_program(program: &str) -> Option<PathBuf> {
    let path = std::path::Path::new(program);
    if program.contains(std::path::MAIN_SEPARATOR) || program.contains('/') {
        return path.is_file().then(|| path.to_path_buf());
    }
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(program))
        .find(|p| p.is_file())
}

/// Runs the hub between any two transports: `client` is the side the hub serves as an agent,
/// `agent` the agent it fronts.
pub async fn serve(
    options: HubOptions,
    client: impl ConnectTo<Agent> + 'static,
    agent: impl ConnectTo<Client> + 'static,
) -> Result<(), HubError> {
    serve_with(
        options,
        client,
        agent,
        None,
        Box::pin(std::future::pending()),
    )
    .await
}

/// [`serve`], with the agent's process when the hub runs one (`end`), whose exit status the
/// hub says wherever it says the agent has exited, and what ends the hub as its client leaving
/// does (`stop`: the process told to stop).
async fn serve_with(
    options: HubOptions,
    client: impl ConnectTo<Agent> + 'static,
    agent: impl ConnectTo<Client> + 'static,
    end: Option<AgentEnd>,
    stop: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>,
) -> Result<(), HubError> {
    let hub = HubShared::new(options);
    let exit = Arc::new(std::sync::Mutex::new(None));
    let to_agent = Client.v1().name("asp-hub->agent").on_receive_dispatch(
        {
            let hub = hub.clone();
            async move |d: Dispatch, _cx: v1::ConnectionTo<Agent>| agent_side::route(&hub, d)
        },
        agent_client_protocol::on_receive_dispatch!(),
    );
    let failure = Arc::new(std::sync::Mutex::new(None));
    let agent = EndsCleanly {
        agent,
        failure: Failure {
            log: hub.log,
            why: failure.clone(),
        },
    };
    let shared = hub.clone();
    let exited = exit.clone();
    let ended = to_agent
        .connect_with(agent, async move |down: v1::ConnectionTo<Agent>| {
            hub.set_agent(down.clone());
            let to_client = Agent
                .v1()
                .name("asp-hub<-client")
                // Typed ASP handlers first: handlers are tried in registration order, and the
                // catch-all below takes everything else.
                .on_receive_request(
                    {
                        let hub = hub.clone();
                        async move |req: Asked<DescribeRequest>,
                                    responder,
                                    cx: v1::ConnectionTo<Client>| {
                            hub.set_client(&cx);
                            state_methods::describe(&hub, req, responder, &cx)
                        }
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .on_receive_request(
                    {
                        let hub = hub.clone();
                        async move |req: Asked<ExportRequest>,
                                    responder,
                                    cx: v1::ConnectionTo<Client>| {
                            hub.set_client(&cx);
                            state_methods::export(&hub, req, responder, &cx)
                        }
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .on_receive_request(
                    {
                        let hub = hub.clone();
                        async move |req: Asked<ImportRequest>,
                                    responder,
                                    cx: v1::ConnectionTo<Client>| {
                            hub.set_client(&cx);
                            state_methods::import(&hub, req, responder, &cx)
                        }
                    },
                    agent_client_protocol::on_receive_request!(),
                )
                .on_receive_dispatch(
                    {
                        let hub = hub.clone();
                        async move |d: Dispatch, cx: v1::ConnectionTo<Client>| {
                            hub.set_client(&cx);
                            client_side::route(&hub, d)
                        }
                    },
                    agent_client_protocol::on_receive_dispatch!(),
                );
            let client = listening::MayStopListening {
                client,
                log: hub.log,
            };
            to_client
                .connect_with(client, async |up: v1::ConnectionTo<Client>| {
                    hub.set_client(&up);
                    let ended = tokio::select! {
                        () = up.incoming_closed() => Ended::ClientLeft,
                        () = down.incoming_closed() => Ended::AgentLeft,
                        () = stop => Ended::ClientLeft,
                    };
                    // How the agent ended, before anything is answered with it.
                    let exit = match (&end, ended) {
                        (Some(end), Ended::AgentLeft) => Some(end.exited().await),
                        _ => None,
                    };
                    hub.close(ended, turns::agent_gone(exit.as_ref()));
                    *exited.lock().unwrap_or_else(|e| e.into_inner()) = exit;
                    if ended == Ended::AgentLeft {
                        // Every request gets an answer before the client's connection ends:
                        // the hub's own that need the agent fail now, the others (a
                        // converter's export or import) answer how they went.
                        hub.work_done().await;
                    }
                    Ok(ended)
                })
                .await
        })
        .await;
    // The client left while the agent was still answering what it had asked (a script whose
    // input ended after 50 requests): the SDK's forwarding task finds nobody to hand the
    // answer to and fails the connection with "send failed because receiver is gone". Nobody
    // is left to tell, and the run ends as the client leaving (exit 0, spec/protocol.md
    // §5.4.2), not as a failure (found by a new user's trial, exit 1 about half the time).
    let left = shared.lock().ended == Some(Ended::ClientLeft);
    let ended = match ended {
        Err(e) if left => {
            shared
                .log
                .debug(|| format!("after the client left, the connection ended with: {e}"));
            Ended::ClientLeft
        }
        other => other?,
    };
    match ended {
        Ended::ClientLeft => Ok(()),
        // An ACP agent does not end on its own: the client is told (what was waiting was
        // answered), and so is whoever started the hub.
        Ended::AgentLeft => Err(HubError::AgentExited {
            exit: exit.lock().unwrap_or_else(|e| e.into_inner()).take(),
            detail: failure.lock().unwrap_or_else(|e| e.into_inner()).take(),
        }),
    }
}

/// The agent's transport, with a failure turned into an ordinary end of input: the hub then
/// answers what was in flight or waiting (the agent has exited) and ends cleanly, instead of
/// the whole run failing at once and the client's requests going unanswered.
struct EndsCleanly<A> {
    agent: A,
    failure: Failure,
}

/// Where the agent's connection's failure is said and kept.
#[derive(Clone)]
struct Failure {
    log: log::Log,
    /// Why the agent's connection failed, for the hub's own exit.
    why: Arc<std::sync::Mutex<Option<String>>>,
}

impl Failure {
    fn record(&self, connected: Result<(), agent_client_protocol::Error>) {
        if let Err(e) = connected {
            self.log.warn(format!("the agent's connection failed: {e}"));
            *self.why.lock().unwrap_or_else(|e| e.into_inner()) = Some(e.to_string());
        }
    }
}

impl<A: ConnectTo<Client>> ConnectTo<Client> for EndsCleanly<A> {
    async fn connect_to(
        self,
        client: impl ConnectTo<Agent>,
    ) -> Result<(), agent_client_protocol::Error> {
        self.failure.record(self.agent.connect_to(client).await);
        Ok(())
    }

    /// The agent's own channel and driver, so a transport that finishes (writes what it was
    /// given, waits for its process) is let finish when the run ends, not dropped.
    fn into_channel_and_future(
        self,
    ) -> (
        agent_client_protocol::Channel,
        Option<agent_client_protocol::ConnectionDriver>,
    ) {
        let (channel, driver) = self.agent.into_channel_and_future();
        let failure = self.failure;
        let driver = driver.map(|driver| {
            driver.map_future(|work| async move {
                failure.record(work.await);
                Ok(())
            })
        });
        (channel, driver)
    }
}

/// The hub as an in-process component in front of `agent`:
/// `Client.v1().connect_with(Hub::new(options, agent), ..)`.
#[derive(Debug)]
pub struct Hub<A> {
    options: HubOptions,
    agent: A,
}

impl<A> Hub<A> {
    pub fn new(options: HubOptions, agent: A) -> Self {
        Hub { options, agent }
    }
}

impl<A: ConnectTo<Client> + 'static> ConnectTo<Client> for Hub<A> {
    async fn connect_to(
        self,
        client: impl ConnectTo<Agent>,
    ) -> Result<(), agent_client_protocol::Error> {
        serve(self.options, client, self.agent)
            .await
            .map_err(|e| match e {
                HubError::Acp(e) => *e,
                other => agent_client_protocol::Error::internal_error().data(other.to_string()),
            })
    }
}
