//! The initialize rewrite: reading what the agent behind offers, and advertising exactly what
//! the hub can do with it under `agentCapabilities._meta.asp`.

use asp_format::{KindSet, StateKind};
use serde_json::Value;

use super::HubOptions;
use super::steering::SteerMechanism;
use asp_protocol::busy::BusyMode;
use asp_protocol::capabilities::{AgentStateCapability, AspCapabilities, SteeringCapability};

/// What the agent behind said it offers, as far as the hub cares.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct AgentOffers {
    /// `agentCapabilities.loadSession`: sessions can be replayed.
    pub load_session: bool,
    /// `sessionCapabilities.list`: sessions can be enumerated.
    pub list: bool,
    /// `sessionCapabilities.close`: a session the hub loaded for an export can be let go.
    pub close: bool,
    /// A way to put a prompt into the answer under way, if the agent has one.
    pub steering: Option<SteerMechanism>,
}

impl AgentOffers {
    /// Reads the agent's raw initialize answer.
    pub(crate) fn of_initialize_answer(answer: &Value) -> Self {
        let caps = &answer["agentCapabilities"];
        let has = |pointer: &str| caps.pointer(pointer).is_some_and(|v| !v.is_null());
        AgentOffers {
            load_session: caps["loadSession"] == Value::Bool(true),
            list: has("/sessionCapabilities/list"),
            close: has("/sessionCapabilities/close"),
            steering: SteerMechanism::offered_by(answer),
        }
    }
}

/// What the hub advertised, and what it is based on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Advertised {
    pub agent: AgentOffers,
    pub caps: AspCapabilities,
}

impl Advertised {
    /// The hub's capabilities in front of an agent offering `agent`:
    ///
    /// - `steering.busy`: `queue` and `interrupt` always (the hub holds prompts itself, and
    ///   `session/cancel` is baseline ACP); `steer` only when the agent has a way to take a
    ///   prompt into the answer under way.
    /// - `agentState`: the converter's kinds when there is one; otherwise `sessions` export
    ///   only, by replay, when the agent offers `session/load`; otherwise left out.
    pub(crate) fn new(agent: AgentOffers, options: &HubOptions) -> Self {
        let busy = BusyMode::ALL
            .into_iter()
            .filter(|m| *m != BusyMode::Steer || agent.steering.is_some())
            .collect();
        let agent_state = match &options.converter {
            Some(c) => Some(AgentStateCapability {
                export: c.exports(),
                import: c.imports(),
            }),
            None if agent.load_session => Some(AgentStateCapability {
                export: KindSet::EMPTY.with(StateKind::Sessions),
                import: KindSet::EMPTY,
            }),
            None => None,
        };
        Advertised {
            agent,
            caps: AspCapabilities {
                steering: Some(SteeringCapability { busy }),
                agent_state,
            },
        }
    }

    /// The agent's initialize answer with the hub's `_meta.asp` in it (replacing any the agent
    /// wrote: the hub answers `_asp/*` itself, so only its own advertisement is true).
    pub(crate) fn rewrite(&self, mut answer: Value) -> Value {
        self.caps.advertise_in_json(&mut answer);
        answer
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn advertised(answer: Value) -> Value {
        let a = Advertised::new(
            AgentOffers::of_initialize_answer(&answer),
            &HubOptions::default(),
        );
        a.rewrite(answer)
    }

    #[test]
    fn an_agent_with_load_session_gets_sessions_export_and_queue_interrupt() {
        let out = advertised(json!({
            "protocolVersion": 1,
            "agentCapabilities": {"loadSession": true, "_meta": {"vendor": 1}},
            "futureField": true
        }));
        assert_eq!(
            out,
            json!({
                "protocolVersion": 1,
                "agentCapabilities": {"loadSession": true, "_meta": {"vendor": 1, "asp": {
                    "steering": {"busy": ["queue", "interrupt"]},
                    "agentState": {"export": ["sessions"], "import": []}
                }}},
                "futureField": true
            })
        );
    }

    #[test]
    fn an_agent_without_load_session_gets_no_agent_state_layer() {
        let out = advertised(json!({"protocolVersion": 1, "agentCapabilities": {}}));
        assert_eq!(
            out["agentCapabilities"]["_meta"]["asp"],
            json!({"steering": {"busy": ["queue", "interrupt"]}})
        );
        let none = advertised(json!({"protocolVersion": 1}));
        assert!(
            none["agentCapabilities"]["_meta"]["asp"]
                .get("agentState")
                .is_none()
        );
    }

    #[test]
    fn steer_is_offered_only_when_the_agent_has_a_way() {
        for answer in [
            json!({"agentCapabilities": {}, "_meta": {"steering": {"supported": true}}}),
            json!({"agentCapabilities": {"_meta": {"claudeCode": {"promptQueueing": true}}}}),
        ] {
            let out = advertised(answer);
            assert_eq!(
                out["agentCapabilities"]["_meta"]["asp"]["steering"]["busy"],
                json!(["steer", "queue", "interrupt"])
            );
        }
        let out = advertised(
            json!({"agentCapabilities": {}, "_meta": {"steering": {"supported": false}}}),
        );
        assert_eq!(
            out["agentCapabilities"]["_meta"]["asp"]["steering"]["busy"],
            json!(["queue", "interrupt"])
        );
    }

    #[test]
    fn the_agents_own_asp_advertisement_is_replaced() {
        let out = advertised(
            json!({"agentCapabilities": {"_meta": {"asp": {"agentState": {"export": ["memory"]}}}}}),
        );
        assert_eq!(
            out["agentCapabilities"]["_meta"]["asp"],
            json!({"steering": {"busy": ["queue", "interrupt"]}})
        );
    }
}
