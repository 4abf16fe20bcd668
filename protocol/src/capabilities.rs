//! What an agent says it speaks of ASP, in its initialize answer's
//! `agentCapabilities._meta.asp`.
//!
//! ```json
//! {"protocolVersion": 1, "agentCapabilities": {"_meta": {"asp": {
//!   "steering": {"busy": ["queue", "interrupt"]},
//!   "agentState": {"export": ["sessions", "instructions"], "import": ["sessions"]}}}}}
//! ```
//!
//! Steering and agent state are independent layers; either may be left out. Reading is
//! lenient about what a newer agent may add (an unknown busy mode or kind is skipped, unknown
//! keys are ignored), so an older client still uses what it understands.

use agent_client_protocol::v1::schema::InitializeResponse;
use asp_format::{KindSet, StateKind};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::busy::BusyMode;
use crate::meta;

/// `agentCapabilities._meta.asp`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AspCapabilities {
    /// The steering layer: which busy modes the agent honours.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steering: Option<SteeringCapability>,
    /// The agent-state layer: which kinds the agent exports and imports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_state: Option<AgentStateCapability>,
}

/// `steering`: the busy modes a prompt may ask for. A mode not listed is refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SteeringCapability {
    #[serde(default, deserialize_with = "known_modes")]
    pub busy: Vec<BusyMode>,
}

/// `agentState`: kinds given by `_asp/state/export` and taken by `_asp/state/import`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AgentStateCapability {
    #[serde(default, deserialize_with = "known_kinds")]
    pub export: KindSet,
    #[serde(default, deserialize_with = "known_kinds")]
    pub import: KindSet,
}

/// A `_meta.asp` that is there but is not a capability object.
#[derive(Debug, thiserror::Error)]
#[error("agentCapabilities._meta.asp is not ASP's capability object: {0}")]
pub struct CapabilityError(#[from] serde_json::Error);

fn known_modes<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<BusyMode>, D::Error> {
    let names = Vec::<Value>::deserialize(d)?;
    let mut modes = Vec::new();
    for mode in names
        .iter()
        .filter_map(|v| v.as_str()?.parse::<BusyMode>().ok())
    {
        if !modes.contains(&mode) {
            modes.push(mode);
        }
    }
    Ok(modes)
}

fn known_kinds<'de, D: Deserializer<'de>>(d: D) -> Result<KindSet, D::Error> {
    let names = Vec::<Value>::deserialize(d)?;
    Ok(names
        .iter()
        .filter_map(|v| v.as_str()?.parse::<StateKind>().ok())
        .collect())
}

impl AspCapabilities {
    /// Reads `asp` from a capabilities `_meta` object. `Ok(None)` when the agent does not
    /// advertise ASP (a client then speaks plain ACP to it).
    pub fn from_meta(meta: &Map<String, Value>) -> Result<Option<Self>, CapabilityError> {
        match meta.get(meta::ASP) {
            None => Ok(None),
            Some(v) => Ok(Some(serde_json::from_value(v.clone())?)),
        }
    }

    /// Reads what a typed initialize answer advertises.
    pub fn of_initialize_response(
        answer: &InitializeResponse,
    ) -> Result<Option<Self>, CapabilityError> {
        answer
            .agent_capabilities
            .meta
            .as_ref()
            .map_or(Ok(None), Self::from_meta)
    }

    /// Reads what a raw initialize answer (the JSON-RPC `result`) advertises.
    pub fn of_initialize_json(answer: &Value) -> Result<Option<Self>, CapabilityError> {
        answer
            .pointer("/agentCapabilities/_meta")
            .and_then(Value::as_object)
            .map_or(Ok(None), Self::from_meta)
    }

    /// The typed initialize answer advertising these capabilities, every other key kept.
    #[must_use]
    pub fn advertise_in(&self, mut answer: InitializeResponse) -> InitializeResponse {
        let meta = answer.agent_capabilities.meta.get_or_insert_with(Map::new);
        meta.insert(meta::ASP.to_owned(), self.to_value());
        answer
    }

    /// Advertises these capabilities in a raw initialize answer, replacing any `asp` already
    /// there and keeping every other key as it is.
    pub fn advertise_in_json(&self, answer: &mut Value) {
        if let Some(obj) = answer.as_object_mut() {
            let caps = meta::object_entry(obj, "agentCapabilities");
            let meta = meta::object_entry(caps, "_meta");
            meta.insert(meta::ASP.to_owned(), self.to_value());
        }
    }

    fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("capabilities serialise")
    }

    /// The busy modes offered (none when the steering layer is left out).
    pub fn busy_modes(&self) -> &[BusyMode] {
        self.steering.as_ref().map_or(&[], |s| &s.busy)
    }

    /// True when a prompt may ask for `mode`.
    pub fn offers_busy(&self, mode: BusyMode) -> bool {
        self.busy_modes().contains(&mode)
    }

    /// Kinds `_asp/state/export` gives.
    pub fn exports(&self) -> KindSet {
        self.agent_state.map_or(KindSet::EMPTY, |s| s.export)
    }

    /// Kinds `_asp/state/import` takes.
    pub fn imports(&self) -> KindSet {
        self.agent_state.map_or(KindSet::EMPTY, |s| s.import)
    }
}

impl asp_format::Classify for CapabilityError {
    /// An agent's initialize answer that does not parse: what was read is not as promised.
    fn class(&self) -> asp_format::ErrorClass {
        asp_format::ErrorClass::Source
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The seed's initialize answer, byte for byte.
    const SEED_INITIALIZE: &str = r#"{"protocolVersion": 1, "agentCapabilities": {"_meta": {"asp": {"steering": {"busy": ["queue", "interrupt"]}, "agentState": {"export": ["sessions", "instructions"], "import": ["sessions"]}}}}}"#;

    fn seed_capabilities() -> AspCapabilities {
        AspCapabilities {
            steering: Some(SteeringCapability {
                busy: vec![BusyMode::Queue, BusyMode::Interrupt],
            }),
            agent_state: Some(AgentStateCapability {
                export: KindSet::EMPTY
                    .with(StateKind::Sessions)
                    .with(StateKind::Instructions),
                import: KindSet::EMPTY.with(StateKind::Sessions),
            }),
        }
    }

    #[test]
    fn the_seed_initialize_answer_reads_as_typed_capabilities() {
        let raw: Value = serde_json::from_str(SEED_INITIALIZE).unwrap();
        assert_eq!(
            AspCapabilities::of_initialize_json(&raw).unwrap(),
            Some(seed_capabilities())
        );
        let typed: InitializeResponse = serde_json::from_str(SEED_INITIALIZE).unwrap();
        assert_eq!(
            AspCapabilities::of_initialize_response(&typed).unwrap(),
            Some(seed_capabilities())
        );
    }

    #[test]
    fn advertising_writes_the_seed_initialize_answer_byte_for_byte() {
        let mut answer = json!({"protocolVersion": 1});
        seed_capabilities().advertise_in_json(&mut answer);
        assert_eq!(crate::seed_json::to_string(&answer), SEED_INITIALIZE);
        assert_eq!(
            serde_json::to_string(&seed_capabilities()).unwrap(),
            r#"{"steering":{"busy":["queue","interrupt"]},"agentState":{"export":["sessions","instructions"],"import":["sessions"]}}"#
        );
    }

    #[test]
    fn advertising_in_a_typed_answer_keeps_the_agents_own_meta() {
        use agent_client_protocol::schema::ProtocolVersion;
        use agent_client_protocol::v1::schema::AgentCapabilities;
        let answer = InitializeResponse::new(ProtocolVersion::V1).agent_capabilities(
            AgentCapabilities::new().load_session(true).meta(
                json!({"claudeCode": {"promptQueueing": true}})
                    .as_object()
                    .cloned(),
            ),
        );
        let answer = seed_capabilities().advertise_in(answer);
        let v = serde_json::to_value(&answer).unwrap();
        assert_eq!(v["agentCapabilities"]["loadSession"], json!(true));
        assert_eq!(
            v["agentCapabilities"]["_meta"]["claudeCode"],
            json!({"promptQueueing": true})
        );
        assert_eq!(
            AspCapabilities::of_initialize_response(&answer).unwrap(),
            Some(seed_capabilities())
        );
    }

    #[test]
    fn each_layer_is_optional_and_an_agent_without_asp_says_none() {
        let steering_only: AspCapabilities =
            serde_json::from_value(json!({"steering": {"busy": ["steer"]}})).unwrap();
        assert_eq!(steering_only.busy_modes(), [BusyMode::Steer]);
        assert_eq!(steering_only.exports(), KindSet::EMPTY);
        assert_eq!(
            serde_json::to_value(&steering_only).unwrap(),
            json!({"steering": {"busy": ["steer"]}})
        );

        let state_only: AspCapabilities =
            serde_json::from_value(json!({"agentState": {"export": ["sessions"]}})).unwrap();
        assert!(!state_only.offers_busy(BusyMode::Queue));
        assert_eq!(
            state_only.exports(),
            KindSet::EMPTY.with(StateKind::Sessions)
        );
        assert_eq!(state_only.imports(), KindSet::EMPTY);

        let plain = json!({"protocolVersion": 1, "agentCapabilities": {"loadSession": true}});
        assert_eq!(AspCapabilities::of_initialize_json(&plain).unwrap(), None);
    }

    #[test]
    fn what_a_newer_agent_adds_is_skipped_not_fatal() {
        let caps: AspCapabilities = serde_json::from_value(json!({
            "steering": {"busy": ["queue", "later", "queue"], "future": true},
            "agentState": {"export": ["sessions", "dreams"], "import": []},
            "futureLayer": {}
        }))
        .unwrap();
        assert_eq!(caps.busy_modes(), [BusyMode::Queue]);
        assert_eq!(caps.exports(), KindSet::EMPTY.with(StateKind::Sessions));
    }

    #[test]
    fn a_malformed_advertisement_is_an_error() {
        let answer =
            json!({"agentCapabilities": {"_meta": {"asp": {"steering": {"busy": "queue"}}}}});
        assert!(AspCapabilities::of_initialize_json(&answer).is_err());
    }
}
