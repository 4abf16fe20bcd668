//! Steering: what a prompt that arrives while a turn of its session runs asks for, in the
//! prompt's `_meta.asp.busy`.
//!
//! ```json
//! {"sessionId": "telegram:42", "prompt": [{"type": "text", "text": "Skip the tests."}],
//!  "_meta": {"asp": {"busy": "interrupt"}}}
//! ```

use std::fmt;
use std::str::FromStr;

use agent_client_protocol::v1::schema::PromptRequest;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::meta;

/// A busy mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum BusyMode {
    /// The prompt joins the answer under way, at the agent's next step, and that one answer
    /// answers both.
    Steer,
    /// The prompt waits for the running turn to end, then gets a turn and an answer of its
    /// own.
    Queue,
    /// The prompt cancels the running turn where it is, and starts the next one, its own.
    Interrupt,
}

impl BusyMode {
    /// Every mode, in the order they are advertised.
    pub const ALL: [BusyMode; 3] = [BusyMode::Steer, BusyMode::Queue, BusyMode::Interrupt];

    /// The protocol's name for the mode.
    pub fn as_str(self) -> &'static str {
        match self {
            BusyMode::Steer => "steer",
            BusyMode::Queue => "queue",
            BusyMode::Interrupt => "interrupt",
        }
    }
}

impl fmt::Display for BusyMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `_meta.asp.busy` that names no busy mode.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("_meta.asp.busy is {value}, which is not one of \"steer\", \"queue\", \"interrupt\"")]
pub struct UnknownBusyMode {
    /// The value as the prompt gave it.
    pub value: Value,
}

impl FromStr for BusyMode {
    type Err = UnknownBusyMode;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BusyMode::ALL
            .into_iter()
            .find(|m| m.as_str() == s)
            .ok_or_else(|| UnknownBusyMode {
                value: Value::String(s.to_owned()),
            })
    }
}

/// Reads `_meta.asp.busy` from a `_meta` object.
///
/// `None` when the prompt says nothing: no `_meta.asp`, no `busy` in it, `busy: null`, or a
/// `_meta`/`_meta.asp` that is not an object (ACP's SDK reads a malformed `_meta` as absent,
/// and a prompt that says nothing gets the agent's default). A `busy` that is there but names
/// no mode is an error: the prompt asked for something, and it must not silently get another.
pub fn busy_of_meta(meta: &Map<String, Value>) -> Result<Option<BusyMode>, UnknownBusyMode> {
    match meta::asp(meta).and_then(|asp| asp.get("busy")) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => s.parse().map(Some),
        Some(other) => Err(UnknownBusyMode {
            value: other.clone(),
        }),
    }
}

/// Reads `_meta.asp.busy` from a typed prompt.
pub fn busy_of(prompt: &PromptRequest) -> Result<Option<BusyMode>, UnknownBusyMode> {
    prompt.meta.as_ref().map_or(Ok(None), busy_of_meta)
}

/// Reads `_meta.asp.busy` from a `session/prompt`'s raw params, as a hub that passes messages
/// through unparsed sees them.
pub fn busy_of_params(params: &Value) -> Result<Option<BusyMode>, UnknownBusyMode> {
    params
        .get("_meta")
        .and_then(Value::as_object)
        .map_or(Ok(None), busy_of_meta)
}

/// The prompt with `_meta.asp.busy` set to `mode`, every other `_meta` key kept.
#[must_use]
pub fn with_busy(mut prompt: PromptRequest, mode: BusyMode) -> PromptRequest {
    let meta = prompt.meta.get_or_insert_with(Map::new);
    meta::asp_mut(meta).insert("busy".to_owned(), Value::String(mode.as_str().to_owned()));
    prompt
}

/// Sets `_meta.asp.busy` in a `session/prompt`'s raw params, every other key kept.
pub fn set_busy_in_params(params: &mut Value, mode: BusyMode) {
    if let Some(obj) = params.as_object_mut() {
        let meta = meta::object_entry(obj, "_meta");
        meta::asp_mut(meta).insert("busy".to_owned(), Value::String(mode.as_str().to_owned()));
    }
}

impl asp_format::Classify for UnknownBusyMode {
    fn class(&self) -> asp_format::ErrorClass {
        asp_format::ErrorClass::Usage
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::v1::schema::ContentBlock;
    use serde_json::json;

    /// The seed's own prompt, byte for byte.
    const SEED_PROMPT: &str = r#"{"sessionId": "telegram:42", "prompt": [{"type": "text", "text": "Skip the tests."}], "_meta": {"asp": {"busy": "interrupt"}}}"#;

    #[test]
    fn the_seed_prompt_asks_to_interrupt() {
        let raw: Value = serde_json::from_str(SEED_PROMPT).unwrap();
        assert_eq!(busy_of_params(&raw), Ok(Some(BusyMode::Interrupt)));
        let typed: PromptRequest = serde_json::from_str(SEED_PROMPT).unwrap();
        assert_eq!(busy_of(&typed), Ok(Some(BusyMode::Interrupt)));
    }

    #[test]
    fn setting_the_mode_writes_the_seed_prompt_byte_for_byte() {
        let prompt = PromptRequest::new(
            "telegram:42",
            vec![ContentBlock::from("Skip the tests.".to_owned())],
        );
        let prompt = with_busy(prompt, BusyMode::Interrupt);
        assert_eq!(crate::seed_json::to_string(&prompt), SEED_PROMPT);
        let mut raw = json!({"sessionId": "telegram:42", "prompt": [{"type": "text", "text": "Skip the tests."}]});
        set_busy_in_params(&mut raw, BusyMode::Interrupt);
        assert_eq!(crate::seed_json::to_string(&raw), SEED_PROMPT);
    }

    #[test]
    fn other_meta_keys_survive_setting_the_mode() {
        let mut params = json!({"sessionId": "s", "prompt": [], "_meta": {"traceparent": "00-x", "asp": {"future": 1}}});
        set_busy_in_params(&mut params, BusyMode::Queue);
        assert_eq!(
            params["_meta"],
            json!({"traceparent": "00-x", "asp": {"future": 1, "busy": "queue"}})
        );
    }

    #[test]
    fn a_prompt_that_says_nothing_gets_the_default() {
        for params in [
            json!({"sessionId": "s", "prompt": []}),
            json!({"_meta": {}}),
            json!({"_meta": {"asp": {}}}),
            json!({"_meta": {"asp": {"busy": null}}}),
            json!({"_meta": "not an object"}),
            json!({"_meta": {"asp": 7}}),
        ] {
            assert_eq!(busy_of_params(&params), Ok(None), "{params}");
        }
    }

    #[test]
    fn a_busy_that_names_no_mode_is_an_error_naming_it() {
        let err = busy_of_params(&json!({"_meta": {"asp": {"busy": "later"}}})).unwrap_err();
        assert_eq!(err.value, json!("later"));
        assert!(err.to_string().contains("\"later\""), "{err}");
        assert!(busy_of_params(&json!({"_meta": {"asp": {"busy": 1}}})).is_err());
    }

    #[test]
    fn modes_serialise_by_their_protocol_names() {
        assert_eq!(
            serde_json::to_string(&BusyMode::ALL).unwrap(),
            r#"["steer","queue","interrupt"]"#
        );
    }
}
