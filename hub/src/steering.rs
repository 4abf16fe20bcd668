//! `steer`: a prompt that joins the answer under way. The hub cannot do this by itself; it
//! maps the mode onto what the agent behind offers, and offers `steer` only when there is
//! something to map it onto.
//!
//! - The `_session/steering` request ([`SteerMechanism::SessionSteering`]) of codex-acp and
//!   claude-agent-acp, advertised as `_meta.steering.supported: true` at the root of the
//!   initialize answer. The hub sends the prompt's content as `_session/steering` with
//!   `_meta.steering.idleBehavior: "promptRequired"`. `injected`: the agent put it into the
//!   running turn, which it keeps open; the steering prompt's request is answered when that
//!   answer ends, with the same `stopReason`. `promptRequired`: the turn had ended under it;
//!   the prompt is sent on as an ordinary prompt, first in line. `failed`, an error, or an
//!   outcome the hub does not know: the prompt is refused (-31003), never silently run some
//!   other way.
//! - Prompt queueing ([`SteerMechanism::PromptQueueing`]), claude-agent-acp's
//!   `agentCapabilities._meta.claudeCode.promptQueueing`. The agent itself feeds a second
//!   prompt into the running turn; the hub sends it on at once and, because such an agent
//!   ends the earlier request `end_turn` as soon as it takes the new message up, holds that
//!   earlier answer back until the joint answer ends, and gives both requests its
//!   `stopReason`.
//!
//! Either way the rule the client sees is the same: the running prompt and the steering
//! prompt both end when the one answer that answers both ends, with its `stopReason`.

use std::sync::Arc;

use agent_client_protocol::v1;
use agent_client_protocol::{Error, UntypedMessage};
use serde_json::{Value, json};

use super::shared::{Ended, HubShared, Inner};
use super::turns::{self, answer};
use asp_protocol::busy::BusyMode;
use asp_protocol::errors::AspError;

/// `_session/steering`, the codex-acp / claude-agent-acp extension request.
pub(crate) const SESSION_STEERING: &str = "_session/steering";

/// How the agent behind takes a prompt into the answer under way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SteerMechanism {
    SessionSteering,
    PromptQueueing,
}

impl SteerMechanism {
    /// What the agent's raw initialize answer offers; `_session/steering` preferred, since
    /// with it the agent keeps the running request open itself.
    pub(crate) fn offered_by(answer: &Value) -> Option<Self> {
        let on = |pointer: &str| answer.pointer(pointer) == Some(&Value::Bool(true));
        if on("/_meta/steering/supported") || on("/agentCapabilities/_meta/steering/supported") {
            Some(SteerMechanism::SessionSteering)
        } else if on("/agentCapabilities/_meta/claudeCode/promptQueueing") {
            Some(SteerMechanism::PromptQueueing)
        } else {
            None
        }
    }
}

/// A `steer` prompt for a busy session.
pub(crate) fn steer(
    hub: &Arc<HubShared>,
    inner: &mut Inner,
    sid: &str,
    msg: UntypedMessage,
    responder: v1::Responder<Value>,
) -> Result<(), Error> {
    let mechanism = inner.advertised.as_ref().and_then(|a| a.agent.steering);
    match mechanism {
        Some(SteerMechanism::PromptQueueing) => {
            inner.turns.entry(sid.to_owned()).or_default().joined = true;
            turns::forward(hub, inner, sid, msg, responder)
        }
        Some(SteerMechanism::SessionSteering) => {
            inner
                .turns
                .entry(sid.to_owned())
                .or_default()
                .steering_inflight += 1;
            let params = json!({
                "sessionId": sid,
                "prompt": msg.params().get("prompt").cloned().unwrap_or(Value::Null),
                // If the turn ended under us, leave the prompt to the hub to send, so it is
                // answered like any other prompt.
                "_meta": {"steering": {"idleBehavior": "promptRequired"}},
            });
            let (hub2, sid2) = (hub.clone(), sid.to_owned());
            let sent = hub
                .agent()
                .send_request(UntypedMessage::new(SESSION_STEERING, params)?)
                .on_receiving_result(move |result| {
                    steering_answered(&hub2, &sid2, msg, responder, result);
                    std::future::ready(Ok(()))
                });
            if let Err(e) = sent {
                if let Some(t) = inner.turns.get_mut(sid) {
                    t.steering_inflight = t.steering_inflight.saturating_sub(1);
                }
                hub.log.warn(format!(
                    "could not send {SESSION_STEERING} for session {sid}: {e}"
                ));
            }
            Ok(())
        }
        // Not reached: `steer` is only accepted when offered, and offered only with a
        // mechanism. Refuse rather than do something else.
        None => {
            answer(
                hub,
                responder,
                Err(AspError::BusyModeNotOffered {
                    asked: json!("steer"),
                    offered: vec![BusyMode::Queue, BusyMode::Interrupt],
                }
                .into()),
            );
            Ok(())
        }
    }
}

fn steering_answered(
    hub: &Arc<HubShared>,
    sid: &str,
    msg: UntypedMessage,
    responder: v1::Responder<Value>,
    result: Result<Value, Error>,
) {
    let mut inner = hub.lock();
    let t = inner.turns.entry(sid.to_owned()).or_default();
    t.steering_inflight = t.steering_inflight.saturating_sub(1);
    if let Err(e) = &result
        && HubShared::lost_with_agent(e)
    {
        // The agent went away with it: answered why, once the hub knows.
        inner.ended.get_or_insert(Ended::AgentLeft);
        drop(inner);
        let hub2 = hub.clone();
        hub.owe(move |e| answer(&hub2, responder, Err(e)));
        return;
    }
    let outcome = result
        .as_ref()
        .ok()
        .and_then(|v| v.get("outcome"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    hub.log
        .debug(|| format!("session {sid}: {SESSION_STEERING} answered {result:?}"));
    match (outcome.as_deref(), result) {
        (Some("injected"), _) => {
            if t.running > 0 {
                t.attached.push(responder);
            } else {
                // The answer it joined ended before this reply was read: it ends the same way.
                let end = t
                    .last_end
                    .clone()
                    .unwrap_or_else(|| Ok(json!({"stopReason": "end_turn"})));
                answer(hub, responder, end);
            }
        }
        (Some("promptRequired"), _) => {
            turns::hold(hub, &mut inner, sid, BusyMode::Steer, msg, responder);
        }
        (Some("startedNewTurn"), _) => {
            // An agent that ignores `idleBehavior` started a turn of its own for the prompt;
            // its end is not observable through ACP v1, so the prompt is answered now.
            hub.log.warn(format!(
                "session {sid}: the agent started a new turn for a steering prompt; answering it now"
            ));
            answer(hub, responder, Ok(json!({"stopReason": "end_turn"})));
        }
        (_, Ok(v)) => answer(
            hub,
            responder,
            Err(AspError::SteeringFailed {
                detail: format!("{SESSION_STEERING} answered {v}"),
                outcome: v.get("outcome").cloned().unwrap_or(Value::Null),
            }
            .into()),
        ),
        (_, Err(e)) => answer(
            hub,
            responder,
            Err(AspError::SteeringFailed {
                detail: format!("{SESSION_STEERING} failed: {e}"),
                outcome: serde_json::to_value(&e).unwrap_or(Value::Null),
            }
            .into()),
        ),
    }
    turns::start_next(hub, &mut inner, sid);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_steering_is_read_at_the_root_or_in_capabilities_and_preferred() {
        let root = json!({"_meta": {"steering": {"supported": true}}});
        assert_eq!(
            SteerMechanism::offered_by(&root),
            Some(SteerMechanism::SessionSteering)
        );
        let caps = json!({"agentCapabilities": {"_meta": {"steering": {"supported": true}}}});
        assert_eq!(
            SteerMechanism::offered_by(&caps),
            Some(SteerMechanism::SessionSteering)
        );
        let both = json!({"_meta": {"steering": {"supported": true}},
                          "agentCapabilities": {"_meta": {"claudeCode": {"promptQueueing": true}}}});
        assert_eq!(
            SteerMechanism::offered_by(&both),
            Some(SteerMechanism::SessionSteering)
        );
        let queueing =
            json!({"agentCapabilities": {"_meta": {"claudeCode": {"promptQueueing": true}}}});
        assert_eq!(
            SteerMechanism::offered_by(&queueing),
            Some(SteerMechanism::PromptQueueing)
        );
        assert_eq!(
            SteerMechanism::offered_by(&json!({"_meta": {"steering": {"supported": "yes"}}})),
            None
        );
    }
}
