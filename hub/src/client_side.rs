//! Messages from the client: all go to the agent as they are, except `initialize` (whose
//! answer gains `_meta.asp`), `session/prompt` (steering), `session/cancel` (which also ends
//! waiting prompts) and `_asp/*` (answered by the hub; the typed handlers take the three it
//! knows, and any other is -32601 here, never passed to an agent that might answer it `{}`).

use std::sync::Arc;

use agent_client_protocol::v1::{self, Dispatch};
use agent_client_protocol::{Error, UntypedMessage};
use serde_json::Value;

use super::advertise::{Advertised, AgentOffers};
use super::shared::{HubShared, KnownSession};
use super::turns::{self, answer, session_id};
use asp_protocol::errors::AspError;
use asp_protocol::methods;

type Forwarded = Dispatch<UntypedMessage, UntypedMessage>;

/// Routes a client message, unless a state operation is running and the message is about a
/// session: then it waits until the operation ends (see [`HubShared`]'s `deferred`).
pub(crate) fn route(hub: &Arc<HubShared>, d: Dispatch) -> Result<(), Error> {
    {
        let mut inner = hub.lock();
        if inner.state_op.is_some() && is_about_a_session(&d) {
            hub.log
                .debug(|| format!("{} waits for the state operation to end", d.method()));
            inner.deferred.push(d);
            return Ok(());
        }
    }
    route_now(hub, d)
}

/// Requests and notifications naming a session. Answers to the agent's own requests (a
/// permission the client granted) never wait: the agent may be blocked on them.
fn is_about_a_session(d: &Dispatch) -> bool {
    match d {
        Dispatch::Request(msg, _) => session_id(msg.params()).is_some(),
        Dispatch::Notification(n) => session_id(n.params()).is_some(),
        Dispatch::Response(..) => false,
    }
}

pub(crate) fn route_now(hub: &Arc<HubShared>, d: Dispatch) -> Result<(), Error> {
    match d {
        Dispatch::Response(result, router) => router.route_with_result(result),
        Dispatch::Request(msg, responder) => match msg.method() {
            "initialize" => initialize(hub, msg, responder),
            "session/prompt" => turns::prompt(hub, msg, responder),
            "session/new" => new_session(hub, msg, responder),
            "session/load" | "session/resume" => open_session(hub, msg, responder),
            m if m.starts_with(methods::PREFIX) => {
                let method = m.to_owned();
                // In JSON-RPC's order, as for the methods ASP defines: before `initialize`
                // was answered -32600, then -32601 (trial helper-129, 4).
                let refused = match hub.lock().advertised.is_none() {
                    true => AspError::NotInitialized {
                        method,
                        reason: "send initialize first; the hub says what it offers in its \
                                 answer"
                            .to_owned(),
                    },
                    false => AspError::NotOffered {
                        method,
                        reason: "ASP defines no such method".to_owned(),
                    },
                };
                answer(hub, responder, Err(refused.into()));
                Ok(())
            }
            _ => forward(hub, msg, responder),
        },
        Dispatch::Notification(n) if n.method() == "session/cancel" => turns::cancel(hub, n),
        Dispatch::Notification(n) => hub.agent().send_proxied_message(Forwarded::Notification(n)),
    }
}

/// Sends a request on and answers the client with the agent's answer, as it is.
pub(crate) fn forward(
    hub: &Arc<HubShared>,
    msg: UntypedMessage,
    responder: v1::Responder<Value>,
) -> Result<(), Error> {
    forward_then(hub, msg, responder, |_, result| result)
}

/// Sends a request on and answers the client with what `then` makes of the agent's answer.
/// A request the agent went away with (or that was sent after) is answered why it went, once
/// the hub knows ([`HubShared::owe`]), not with the SDK's "Incoming transport closed".
fn forward_then(
    hub: &Arc<HubShared>,
    msg: UntypedMessage,
    responder: v1::Responder<Value>,
    then: impl FnOnce(&HubShared, Result<Value, Error>) -> Result<Value, Error> + Send + 'static,
) -> Result<(), Error> {
    let hub2 = hub.clone();
    hub.agent()
        .send_request(msg)
        .forward_cancellation_from(responder.cancellation())
        .on_receiving_result(move |result| {
            match then(&hub2, result) {
                Err(e) if HubShared::lost_with_agent(&e) => {
                    let hub3 = hub2.clone();
                    hub2.owe(move |gone| answer(&hub3, responder, Err(gone)));
                }
                result => answer(&hub2, responder, result),
            }
            std::future::ready(Ok(()))
        })
}

/// `initialize`: the agent's answer, with the hub's `_meta.asp` in it.
fn initialize(
    hub: &Arc<HubShared>,
    msg: UntypedMessage,
    responder: v1::Responder<Value>,
) -> Result<(), Error> {
    forward_then(hub, msg, responder, |hub, result| {
        let answer = result?;
        let advertised = Advertised::new(AgentOffers::of_initialize_answer(&answer), &hub.options);
        let answer = advertised.rewrite(answer);
        hub.log.debug(|| {
            format!(
                "agent offers {:?}; advertising {:?}",
                advertised.agent, advertised.caps
            )
        });
        hub.lock().advertised = Some(advertised);
        Ok(answer)
    })
}

/// `session/new`: remembered, so a replay knows the session's cwd without `session/list`
/// and leaves it open afterwards.
fn new_session(
    hub: &Arc<HubShared>,
    msg: UntypedMessage,
    responder: v1::Responder<Value>,
) -> Result<(), Error> {
    let cwd = msg
        .params()
        .get("cwd")
        .and_then(Value::as_str)
        .map(str::to_owned);
    forward_then(hub, msg, responder, move |hub, result| {
        if let Some(sid) = result.as_ref().ok().and_then(session_id) {
            hub.lock().known.insert(sid, KnownSession { cwd });
        }
        result
    })
}

/// `session/load` and `session/resume`: remembered like a new session once the agent has
/// opened it; a load in flight also counts as activity, so no export replays the session at
/// the same time.
fn open_session(
    hub: &Arc<HubShared>,
    msg: UntypedMessage,
    responder: v1::Responder<Value>,
) -> Result<(), Error> {
    let Some(sid) = session_id(msg.params()) else {
        return forward(hub, msg, responder);
    };
    let cwd = msg
        .params()
        .get("cwd")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let loading = msg.method() == "session/load";
    if loading {
        *hub.lock().client_loads.entry(sid.clone()).or_default() += 1;
    }
    forward_then(hub, msg, responder, move |hub, result| {
        let mut inner = hub.lock();
        if loading && let Some(n) = inner.client_loads.get_mut(&sid) {
            *n = n.saturating_sub(1);
        }
        if result.is_ok() {
            inner.known.insert(sid, KnownSession { cwd });
        }
        drop(inner);
        result
    })
}
