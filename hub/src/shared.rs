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
use agent_client_protocol::{Agent, Client, Error};
use serde_json::value::RawValue;
use tokio::sync::watch;

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
    /// Requests the agent had in hand when it went away, answered when the hub has said why
    /// ([`HubShared::owe`]).
    pub owed: Vec<Owed>,
    pub ended: Option<Ended>,
    pub next_id: u64,
}

/// Answers a request with the error it is owed.
pub(crate) struct Owed(Box<dyn FnOnce(Error) + Send>);

impl std::fmt::Debug for Owed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Owed")
    }
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
    /// Once the agent has gone and the hub has said why: the error every request still
    /// waiting for the agent is answered with. Set under the lock.
    gone: watch::Sender<Option<Error>>,
    /// The hub's own requests (`_asp/*`) still working on their answer.
    working: watch::Sender<usize>,
}

/// An `_asp/*` request being worked on ([`HubShared::begin_work`]); dropped once answered.
pub(crate) struct Working(Arc<HubShared>);

impl Drop for Working {
    fn drop(&mut self) {
        self.0.working.send_modify(|n| *n = n.saturating_sub(1));
    }
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
            gone: watch::Sender::new(None),
            working: watch::Sender::new(0),
        })
    }

    /// The error requests get now that the agent has gone, once the hub has said why.
    pub(crate) fn gone_error(&self) -> Option<Error> {
        self.gone.borrow().clone()
    }

    /// Waits until the agent has gone and the hub has said why; the error to answer with.
    pub(crate) async fn gone(&self) -> Error {
        let mut rx = self.gone.subscribe();
        match rx.wait_for(Option::is_some).await {
            Ok(e) => e.clone().unwrap_or_else(|| super::turns::agent_gone(None)),
            // Not reached: the sender lives as long as the hub.
            Err(_) => super::turns::agent_gone(None),
        }
    }

    /// `work`, unless the agent goes away first: for what needs the agent to answer (a
    /// replay), which would otherwise wait for it forever (a quiet time, an answer).
    pub(crate) async fn unless_gone<T>(
        &self,
        work: impl std::future::Future<Output = Result<T, Error>>,
    ) -> Result<T, Error> {
        tokio::select! {
            result = work => result,
            e = self.gone() => Err(e),
        }
    }

    /// `error` as the agent having gone, when it is (its connection closed with the request in
    /// hand, or the request was sent after): such a request is answered why the agent left,
    /// once the hub knows it ([`Self::owe`]).
    pub(crate) fn lost_with_agent(error: &Error) -> bool {
        agent_client_protocol::is_incoming_transport_closed(error)
    }

    /// Answers with the error owed once the agent has gone: now if the hub has said why, else
    /// when it does ([`Self::close`]).
    pub(crate) fn owe(&self, answer: impl FnOnce(Error) + Send + 'static) {
        let mut inner = self.lock();
        match self.gone_error() {
            Some(e) => {
                drop(inner);
                answer(e);
            }
            None => inner.owed.push(Owed(Box::new(answer))),
        }
    }

    /// Starts an `_asp/*` request's work, which the hub waits for before it ends after its
    /// agent left (a converter still writing answers how it went); refused once the agent has
    /// gone.
    pub(crate) fn begin_work(self: &Arc<Self>) -> Result<Working, Error> {
        let _inner = self.lock();
        if let Some(e) = self.gone_error() {
            return Err(e);
        }
        self.working.send_modify(|n| *n += 1);
        Ok(Working(self.clone()))
    }

    /// Waits until every `_asp/*` request begun has been answered.
    pub(crate) async fn work_done(&self) {
        let _ = self.working.subscribe().wait_for(|n| *n == 0).await;
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

    /// Ends the run: nothing waiting is sent on. When the agent left, every request still
    /// owed an answer gets `gone` (those in the agent's hands, those waiting in the hub);
    /// requests the hub is working on itself get it when they need the agent.
    pub(crate) fn close(&self, ended: Ended, gone: Error) {
        let mut inner = self.lock();
        inner.ended = Some(ended);
        let deferred = std::mem::take(&mut inner.deferred);
        let owed = std::mem::take(&mut inner.owed);
        if ended == Ended::AgentLeft {
            self.gone.send_replace(Some(gone.clone()));
        }
        super::turns::close_all(self, &mut inner, ended, &gone);
        drop(inner);
        if ended == Ended::AgentLeft {
            for d in deferred {
                if let Dispatch::Request(_, responder) = d {
                    let _ = responder.respond_with_error(gone.clone());
                }
            }
            for Owed(answer) in owed {
                answer(gone.clone());
            }
        }
        self.log.debug(|| format!("run ended: {ended:?}"));
    }
}
