//! Steering: what the hub does with a `session/prompt` that arrives while a turn of its
//! session runs, as the prompt's `_meta.asp.busy` asks.
//!
//! Per session the hub counts the prompts it has forwarded and not yet seen answered (the
//! running turn; more than one when prompts without a busy mode were sent on beside it, which
//! is the agent's own business) and keeps the prompts that wait, in order:
//!
//! - no mode: sent on at once, as the agent would have received it; it counts as running.
//! - `queue`: waits at the back; sent on when the session has nothing running.
//! - `interrupt`: the hub sends `session/cancel` for the running turn (its request ends
//!   `cancelled`, from the agent) and the prompt waits at the front, behind earlier
//!   interrupts, so it is the next turn.
//! - `steer`: see [`super::steering`].
//!
//! A client's `session/cancel` is sent on and answers every waiting prompt of the session with
//! `stopReason: "cancelled"`; a `$/cancel_request` for a waiting prompt drops it from the
//! queue and answers it -32800.

use std::collections::VecDeque;
use std::sync::Arc;

use agent_client_protocol::v1::{self, Dispatch};
use agent_client_protocol::{Error, UntypedMessage};
use serde_json::{Value, json};
use tokio::sync::oneshot;

use super::AgentExit;
use super::shared::{Ended, HubShared, Inner};
use super::steering;
use asp_protocol::busy::{BusyMode, busy_of_params};
use asp_protocol::errors::AspError;

/// One session's turns, as the hub sees them.
#[derive(Debug, Default)]
pub(crate) struct SessionTurns {
    /// Prompts forwarded to the agent and not yet answered.
    pub running: usize,
    /// Prompts held by the hub, the next one first.
    waiting: VecDeque<Waiting>,
    /// `_session/steering` requests sent and not yet answered.
    pub steering_inflight: usize,
    /// Steering prompts the agent took into the running answer; answered when it ends.
    pub attached: Vec<v1::Responder<Value>>,
    /// Answers to earlier prompts of a joint answer (prompt-queueing agents end the earlier
    /// request as soon as they take the steering prompt up); given when the joint answer ends.
    pub held: Vec<(v1::Responder<Value>, Value)>,
    /// A steering prompt was sent into the running answer (prompt-queueing agents).
    pub joined: bool,
    /// How the last answer of the session ended, for a steer the agent took just as it ended.
    pub last_end: Option<Result<Value, Error>>,
}

impl SessionTurns {
    fn is_idle(&self) -> bool {
        self.running == 0 && self.waiting.is_empty() && self.steering_inflight == 0
    }

    /// True while anything of the session is running or waiting.
    pub(crate) fn is_busy(&self) -> bool {
        !self.is_idle() || !self.attached.is_empty() || !self.held.is_empty()
    }
}

/// A prompt the hub holds.
#[derive(Debug)]
struct Waiting {
    id: u64,
    mode: BusyMode,
    msg: UntypedMessage,
    responder: v1::Responder<Value>,
    /// Dropped with the entry, which ends the task watching for its `$/cancel_request`.
    _watch: oneshot::Sender<()>,
}

pub(crate) fn session_id(params: &Value) -> Option<String> {
    params
        .get("sessionId")
        .and_then(Value::as_str)
        .map(str::to_owned)
}

/// The answer to a request the agent can no longer answer: it has exited, and how, when the
/// hub ran it (`exit`).
pub(crate) fn agent_gone(exit: Option<&AgentExit>) -> Error {
    match exit {
        None => Error::new(-32603, "the agent behind the hub has exited"),
        Some(exit) => Error::new(
            -32603,
            format!("the agent behind the hub has exited ({exit})"),
        )
        .data(json!({"exit": exit.to_json()})),
    }
}

/// Answers a client request, logging (not failing) when the client can no longer hear it:
/// a callback that returned an error would take the whole connection down.
pub(crate) fn answer(
    hub: &HubShared,
    responder: v1::Responder<Value>,
    result: Result<Value, Error>,
) {
    let method = responder.method().to_owned();
    if let Err(e) = responder.respond_with_result(result) {
        hub.log.warn(format!("could not answer {method}: {e}"));
    }
}

fn cancelled() -> Value {
    json!({"stopReason": "cancelled"})
}

/// A client's `session/prompt`.
pub(crate) fn prompt(
    hub: &Arc<HubShared>,
    msg: UntypedMessage,
    responder: v1::Responder<Value>,
) -> Result<(), Error> {
    let Some(sid) = session_id(msg.params()) else {
        // Not a prompt the hub can place: the agent answers it as it would.
        return super::client_side::forward(hub, msg, responder);
    };
    let asked = busy_of_params(msg.params());
    let mut inner = hub.lock();
    let offered = inner
        .advertised
        .as_ref()
        .map(|a| a.caps.busy_modes().to_vec())
        .unwrap_or_default();
    // Refused whether or not a turn runs, so a client learns at once, not only when it
    // happens to be busy.
    let mode = match asked {
        Ok(None) => None,
        Ok(Some(m)) if offered.contains(&m) => Some(m),
        Ok(Some(m)) => {
            return refuse(
                hub,
                responder,
                Value::String(m.as_str().to_owned()),
                offered,
            );
        }
        Err(e) => return refuse(hub, responder, e.value, offered),
    };
    if inner.ended.is_some() {
        // The agent has gone (or the run is over): answered why, once the hub knows.
        drop(inner);
        let hub2 = hub.clone();
        hub.owe(move |e| answer(&hub2, responder, Err(e)));
        return Ok(());
    }
    let turns = inner.turns.entry(sid.clone()).or_default();
    if turns.is_idle() {
        return forward(hub, &mut inner, &sid, msg, responder);
    }
    hub.log
        .debug(|| format!("session {sid} is busy; prompt asks for {mode:?}"));
    match mode {
        None => forward(hub, &mut inner, &sid, msg, responder),
        Some(BusyMode::Queue) => {
            hold(hub, &mut inner, &sid, BusyMode::Queue, msg, responder);
            Ok(())
        }
        Some(BusyMode::Interrupt) => {
            hold(hub, &mut inner, &sid, BusyMode::Interrupt, msg, responder);
            // Under the lock, after the prompt is held: the cancel reaches the agent before the
            // prompt can be sent on.
            hub.agent().send_notification(UntypedMessage::new(
                "session/cancel",
                json!({"sessionId": sid}),
            )?)
        }
        Some(BusyMode::Steer) => steering::steer(hub, &mut inner, &sid, msg, responder),
    }
}

fn refuse(
    hub: &HubShared,
    responder: v1::Responder<Value>,
    asked: Value,
    offered: Vec<BusyMode>,
) -> Result<(), Error> {
    answer(
        hub,
        responder,
        Err(AspError::BusyModeNotOffered { asked, offered }.into()),
    );
    Ok(())
}

/// Sends a prompt on to the agent; its answer comes back through [`prompt_ended`].
pub(crate) fn forward(
    hub: &Arc<HubShared>,
    inner: &mut Inner,
    sid: &str,
    msg: UntypedMessage,
    responder: v1::Responder<Value>,
) -> Result<(), Error> {
    inner.turns.entry(sid.to_owned()).or_default().running += 1;
    let (hub2, sid2) = (hub.clone(), sid.to_owned());
    let sent = hub
        .agent()
        .send_request(msg)
        // The client's `$/cancel_request` goes on with the agent's request id.
        .forward_cancellation_from(responder.cancellation())
        .on_receiving_result(move |result| {
            prompt_ended(&hub2, &sid2, responder, result);
            std::future::ready(Ok(()))
        });
    if let Err(e) = sent {
        // Not sent: the callback (and with it the responder, which answers -32603) is gone.
        if let Some(t) = inner.turns.get_mut(sid) {
            t.running = t.running.saturating_sub(1);
        }
        hub.log
            .warn(format!("could not send a prompt of session {sid} on: {e}"));
    }
    Ok(())
}

/// The agent answered a prompt the hub sent on.
fn prompt_ended(
    hub: &Arc<HubShared>,
    sid: &str,
    responder: v1::Responder<Value>,
    result: Result<Value, Error>,
) {
    let mut inner = hub.lock();
    if let Err(e) = &result
        && HubShared::lost_with_agent(e)
    {
        // The agent is gone: nothing more is sent to it; this prompt, and what joined or
        // waits behind it, are answered why, once the hub knows (`HubShared::close`).
        inner.ended.get_or_insert(Ended::AgentLeft);
        if let Some(t) = inner.turns.get_mut(sid) {
            t.running = t.running.saturating_sub(1);
        }
        drop(inner);
        let hub2 = hub.clone();
        hub.owe(move |e| answer(&hub2, responder, Err(e)));
        return;
    }
    let Some(t) = inner.turns.get_mut(sid) else {
        answer(hub, responder, result);
        return;
    };
    t.running = t.running.saturating_sub(1);
    if t.running > 0 {
        match result {
            Ok(v) if t.joined => t.held.push((responder, v)),
            other => answer(hub, responder, other),
        }
        return;
    }
    // The session's answer is over: everything that joined it ends with it.
    let stop = result
        .as_ref()
        .ok()
        .and_then(|v| v.get("stopReason").cloned());
    for (r, mut v) in std::mem::take(&mut t.held) {
        if let (Some(stop), Some(obj)) = (&stop, v.as_object_mut()) {
            obj.insert("stopReason".to_owned(), stop.clone());
        }
        answer(hub, r, Ok(v));
    }
    let joint = match &result {
        Ok(v) => Ok(json!({"stopReason": v.get("stopReason").cloned().unwrap_or(Value::Null)})),
        Err(e) => Err(e.clone()),
    };
    answer(hub, responder, result);
    for r in std::mem::take(&mut t.attached) {
        answer(hub, r, joint.clone());
    }
    t.joined = false;
    t.last_end = Some(joint);
    start_next(hub, &mut inner, sid);
}

/// Sends the next waiting prompt on, when the session has nothing running.
pub(crate) fn start_next(hub: &Arc<HubShared>, inner: &mut Inner, sid: &str) {
    if inner.ended.is_some() {
        return;
    }
    loop {
        let Some(t) = inner.turns.get_mut(sid) else {
            return;
        };
        if t.running > 0 || t.steering_inflight > 0 {
            return;
        }
        let Some(next) = t.waiting.pop_front() else {
            return;
        };
        if next.responder.cancellation().is_cancelled() {
            // Dropped: the SDK answers it -32800, as for any cancelled request.
            continue;
        }
        hub.log.debug(|| {
            format!(
                "session {sid}: sending on the {} prompt that waited",
                next.mode
            )
        });
        if let Err(e) = forward(hub, inner, sid, next.msg, next.responder) {
            hub.log.warn(format!("session {sid}: {e}"));
        }
        return;
    }
}

/// Holds a prompt until the session has nothing running: `queue` at the back, `interrupt` at
/// the front behind earlier interrupts, `steer` (one the agent asked to have sent as a prompt
/// after all) first.
pub(crate) fn hold(
    hub: &Arc<HubShared>,
    inner: &mut Inner,
    sid: &str,
    mode: BusyMode,
    msg: UntypedMessage,
    responder: v1::Responder<Value>,
) {
    inner.next_id += 1;
    let id = inner.next_id;
    let (watch, unwatched) = oneshot::channel();
    let cancellation = responder.cancellation();
    let t = inner.turns.entry(sid.to_owned()).or_default();
    let at = match mode {
        BusyMode::Steer => 0,
        BusyMode::Interrupt => t
            .waiting
            .iter()
            .take_while(|w| w.mode == BusyMode::Interrupt)
            .count(),
        BusyMode::Queue => t.waiting.len(),
    };
    t.waiting.insert(
        at,
        Waiting {
            id,
            mode,
            msg,
            responder,
            _watch: watch,
        },
    );
    hub.log
        .debug(|| format!("session {sid}: {mode} prompt waits at {at}"));
    let Some(client) = hub.client() else { return };
    let (hub2, sid2) = (hub.clone(), sid.to_owned());
    let watcher = client.spawn(async move {
        tokio::select! {
            () = cancellation.cancelled() => {
                if cancellation.is_cancelled() {
                    drop_waiting(&hub2, &sid2, id);
                }
            }
            _ = unwatched => {}
        }
        Ok(())
    });
    if let Err(e) = watcher {
        hub.log.warn(format!(
            "cannot watch a waiting prompt for cancellation: {e}"
        ));
    }
}

/// The client sent `$/cancel_request` for a waiting prompt.
fn drop_waiting(hub: &HubShared, sid: &str, id: u64) {
    let mut inner = hub.lock();
    if let Some(t) = inner.turns.get_mut(sid) {
        // Dropping the responder of a cancelled request answers it -32800.
        t.waiting.retain(|w| w.id != id);
    }
}

/// A client's `session/cancel`: sent on (the running turn ends `cancelled`, from the agent),
/// and every prompt waiting in the session is answered `cancelled` without reaching it.
pub(crate) fn cancel(hub: &Arc<HubShared>, n: UntypedMessage) -> Result<(), Error> {
    let mut inner = hub.lock();
    let waiting: Vec<Waiting> = session_id(n.params())
        .and_then(|sid| inner.turns.get_mut(&sid))
        .map(|t| t.waiting.drain(..).collect())
        .unwrap_or_default();
    let sent = hub
        .agent()
        .send_proxied_message(Dispatch::<UntypedMessage, UntypedMessage>::Notification(n));
    drop(inner);
    for w in waiting {
        answer(hub, w.responder, Ok(cancelled()));
    }
    sent
}

/// The run ended: nothing waiting is sent on. When the agent left, what waited is answered
/// with an error; when the client left, there is nobody to answer.
pub(crate) fn close_all(hub: &HubShared, inner: &mut Inner, ended: Ended, gone: &Error) {
    for t in inner.turns.values_mut() {
        let responders = t
            .waiting
            .drain(..)
            .map(|w| w.responder)
            .chain(t.attached.drain(..))
            .chain(t.held.drain(..).map(|(r, _)| r));
        for r in responders {
            if ended == Ended::AgentLeft {
                answer(hub, r, Err(gone.clone()));
            }
        }
    }
}

/// Sessions with something running or waiting, for the methods that need no turn running.
pub(crate) fn busy_sessions(inner: &Inner) -> Vec<String> {
    let mut busy: Vec<String> = inner
        .turns
        .iter()
        .filter(|(_, t)| t.is_busy())
        .map(|(sid, _)| sid.clone())
        .chain(
            inner
                .client_loads
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(sid, _)| sid.clone()),
        )
        .collect();
    busy.sort();
    busy.dedup();
    busy
}
