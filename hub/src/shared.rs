//! What both sides of the hub share: the two connections and one lock over everything the
//! hub decides.
//!
//! One `std::sync::Mutex` on purpose: every decision (forward a prompt now or hold it, capture
//! an update or pass it on) is taken, and the messages it causes are enqueued, while holding
//! it. Enqueuing never blocks, so the lock is never held across an await, and what the agent
//! receives is in the order the decisions were taken (a queued prompt can never overtake the
//! `session/cancel` that should have ended it).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use agent_client_protocol::v1::{self, Dispatch};
use agent_client_protocol::{Agent, Client};
use serde_json::value::RawValue;

use super::HubOptions;
use super::advertise::Advertised;
use super::log::Log;
use super::turns::SessionTurns;

/// How the hub's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    /// The client closed its side: waiting prompts are dropped, never sent on.
    ClientLeft,
    /// The agent behind went away: waiting prompts are answered with an error.
    AgentLeft,
}

/// A session the hub saw the client use (so a replay knows its cwd, and does not close it).
#[derive(Debug, Clone, Default)]
pub(crate) struct KnownSession {
    pub cwd: Option<String>,
}

/// A session's `session/update`s being recorded for an export instead of forwarded.
#[derive(Debug)]
pub(crate) struct Capture {
    pub updates: Vec<Box<RawValue>>,
    /// When the last update arrived (or the capture began).
    pub last: tokio::time::Instant,
}

/// Everything the hub decides on, under one lock.
#[derive(Debug, Default)]
pub(crate) struct Inner {
    /// What the agent behind offers and what the hub advertised, once initialized.
    pub advertised: Option<Advertised>,
    /// Per-session turn bookkeeping, for steering.
    pub turns: HashMap<String, SessionTurns>,
    /// Sessions the client created, loaded or resumed through the hub.
    pub known: BTreeMap<String, KnownSession>,
    /// `session/load`s the client has in flight, by session.
    pub client_loads: HashMap<String, usize>,
    /// Sessions whose updates are being recorded for an export.
    pub captures: HashMap<String, Capture>,
    /// The state operation running (`export`, `import`), during which the client's messages
    /// about sessions wait in `deferred`.
    pub state_op: Option<&'static str>,
    pub deferred: Vec<Dispatch>,
    pub ended: Option<Ended>,
    pub next_id: u64,
}

/// The hub's shared state.
pub(crate) struct HubShared {
    pub options: HubOptions,
    pub log: Log,
    client: OnceLock<v1::ConnectionTo<Client>>,
    agent: OnceLock<v1::ConnectionTo<Agent>>,
    inner: Mutex<Inner>,
    /// Held by the state operation running: one export or import at a time.
    pub state_lock: Arc<tokio::sync::Mutex<()>>,
}

impl std::fmt::Debug for HubShared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubShared")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl HubShared {
    pub(crate) fn new(options: HubOptions) -> Arc<Self> {
        Arc::new(HubShared {
            log: Log {
                verbose: options.verbose,
            },
            options,
            client: OnceLock::new(),
            agent: OnceLock::new(),
            inner: Mutex::new(Inner::default()),
            state_lock: Arc::new(tokio::sync::Mutex::new(())),
        })
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock is a bug; keep serving with the state as it is rather
        // than taking every later message down with it.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Remembers the connection to the client. Called by every client-side handler before it
    /// forwards anything, so the agent side can always reach the client.
    pub(crate) fn set_client(&self, cx: &v1::ConnectionTo<Client>) {
        self.client.get_or_init(|| cx.clone());
    }

    pub(crate) fn set_agent(&self, cx: v1::ConnectionTo<Agent>) {
        let _ = self.agent.set(cx);
    }

    pub(crate) fn client(&self) -> Option<&v1::ConnectionTo<Client>> {
        self.client.get()
    }

    /// The connection to the agent; set before the client side starts.
    pub(crate) fn agent(&self) -> &v1::ConnectionTo<Agent> {
        self.agent
            .get()
            .expect("the agent connection is set before the client side is served")
    }

    /// Ends the run: nothing waiting is sent on; what waits is answered if the client can
    /// still hear it.
    pub(crate) fn close(&self, ended: Ended) {
        let mut inner = self.lock();
        inner.ended = Some(ended);
        let deferred = std::mem::take(&mut inner.deferred);
        super::turns::close_all(self, &mut inner, ended);
        drop(inner);
        for d in deferred {
            if let (Dispatch::Request(_, responder), Ended::AgentLeft) = (d, ended) {
                let _ = responder.respond_with_error(super::turns::agent_gone());
            }
        }
        self.log.debug(|| format!("run ended: {ended:?}"));
    }
}
