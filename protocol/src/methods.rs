//! The three extension methods, as typed JSON-RPC requests and answers for ACP's SDK.
//!
//! | method | asked | answered |
//! | --- | --- | --- |
//! | `_asp/state/describe` | `{}` | `{"kinds": {kind: count}}` |
//! | `_asp/state/export` | `{"kinds": [kind...]}` | `{"state": {...}}` |
//! | `_asp/state/import` | `{"state": {...}}` | `{"taken", "notTaken", "sessions"}` |
//!
//! The state and the import answer are the format crate's types
//! ([`asp_format::export::ExportState`], [`asp_format::answer::ImportAnswer`]); the answers
//! here are transparent wrappers, there only because the SDK's traits must be implemented on
//! a type of this crate. Every request also takes ACP's `_meta`.
//!
//! Params that do not parse are refused with -32602 naming what is wrong and where, as a JSON
//! Pointer into the params ([`parse_params`]); unlike the SDK's derived parsers, the params are
//! never echoed back (an import's params are a whole state).

use agent_client_protocol::{
    Error, JsonRpcMessage, JsonRpcRequest, JsonRpcResponse, UntypedMessage,
};
use asp_format::answer::ImportAnswer;
use asp_format::export::{self, ExportState};
use asp_format::state::KindCounts;
use asp_format::{KindSet, StateKind};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

use crate::errors::AspError;

/// Reads a request's params as `T`. A failure is [`AspError::InvalidParams`]: the parser's
/// words and the JSON Pointer of the value it failed on (as deep as it can be told; `""` for
/// the params as a whole).
pub fn parse_params<T: DeserializeOwned>(params: &Value) -> Result<T, AspError> {
    // ASP's params are named: serde would take a struct from a list by position (`[]` as a
    // describe or an import), which no schema of spec/schemas allows.
    if !matches!(params, Value::Object(_) | Value::Null) {
        return Err(AspError::InvalidParams {
            path: String::new(),
            error: format!("params must be an object, not {}", json_kind(params)),
        });
    }
    serde_path_to_error::deserialize(params).map_err(|e| AspError::InvalidParams {
        path: pointer(e.path()),
        error: concise(e.into_inner().to_string()),
    })
}

/// What a JSON value is, for messages: `a list`, `a string`.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The longest error text an invalid-params answer carries: a parser's words quote the value
/// they failed on, which can be a whole state sent as a string.
pub const MAX_ERROR_CHARS: usize = 500;

/// `text` cut to [`MAX_ERROR_CHARS`] characters, marked with `…` when cut.
pub fn concise(text: String) -> String {
    match text.char_indices().nth(MAX_ERROR_CHARS) {
        None => text,
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

/// A JSON Pointer for a parse path, up to the first step that cannot be told (inside a
/// flattened or untagged value).
fn pointer(path: &serde_path_to_error::Path) -> String {
    use serde_path_to_error::Segment;
    let mut out = String::new();
    for segment in path {
        let step = match segment {
            Segment::Seq { index } => index.to_string(),
            Segment::Map { key } => key.clone(),
            Segment::Enum { variant } => variant.clone(),
            Segment::Unknown => break,
        };
        out.push('/');
        out.push_str(&step.replace('~', "~0").replace('/', "~1"));
    }
    out
}

/// The SDK's request traits, with [`parse_params`] as the parser.
macro_rules! asp_request {
    ($ty:ty, $method:expr, $response:ty) => {
        impl JsonRpcMessage for $ty {
            fn matches_method(method: &str) -> bool {
                method == $method
            }

            fn method(&self) -> &str {
                $method
            }

            fn to_untyped_message(&self) -> Result<UntypedMessage, Error> {
                UntypedMessage::new($method, self)
            }

            fn parse_message(method: &str, params: &Value) -> Result<Self, Error> {
                if method != $method {
                    return Err(Error::method_not_found());
                }
                parse_params(params).map_err(Error::from)
            }
        }

        impl JsonRpcRequest for $ty {
            type Response = $response;
        }
    };
}

/// `_asp/state/describe`.
pub const DESCRIBE: &str = "_asp/state/describe";
/// `_asp/state/export`.
pub const EXPORT: &str = "_asp/state/export";
/// `_asp/state/import`.
pub const IMPORT: &str = "_asp/state/import";
/// Every ASP method starts with this.
pub const PREFIX: &str = "_asp/";

/// `_asp/state/describe`: how many of each kind the agent holds now.
///
/// Asked `{}`; absent or `null` params are taken as `{}` too, since a request with nothing to
/// say often carries no params at all.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct DescribeRequest {
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl<'de> Deserialize<'de> for DescribeRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Params {
            #[serde(default, rename = "_meta")]
            meta: Option<Map<String, Value>>,
        }
        let params = Option::<Params>::deserialize(d)?;
        Ok(DescribeRequest {
            meta: params.and_then(|p| p.meta),
        })
    }
}

/// The describe answer: a count for each kind held; a kind not held is left out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonRpcResponse)]
pub struct DescribeResponse {
    #[serde(deserialize_with = "known_counts")]
    pub kinds: KindCounts,
}

/// `_asp/state/export`: the kinds asked for, with no turn running.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportRequest {
    /// Kinds asked for. A name this side does not know is skipped: it is a kind not given,
    /// like any other the agent does not export.
    #[serde(deserialize_with = "known_kinds")]
    pub kinds: KindSet,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ExportRequest {
    pub fn new(kinds: KindSet) -> Self {
        ExportRequest { kinds, meta: None }
    }
}

/// The export answer, `{"state": {...}}`: each kind given under its name, a kind not given
/// left out (never given empty).
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonRpcResponse)]
#[serde(transparent)]
pub struct ExportResponse(pub export::ExportResponse);

impl ExportResponse {
    pub fn new(state: ExportState) -> Self {
        ExportResponse(export::ExportResponse { state })
    }

    pub fn state(&self) -> &ExportState {
        &self.0.state
    }

    pub fn into_state(self) -> ExportState {
        self.0.state
    }
}

/// `_asp/state/import`: a state to take.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ImportRequest {
    #[serde(deserialize_with = "object_state")]
    pub state: ExportState,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ImportRequest {
    pub fn new(state: ExportState) -> Self {
        ImportRequest { state, meta: None }
    }
}

asp_request!(DescribeRequest, DESCRIBE, DescribeResponse);
asp_request!(ExportRequest, EXPORT, ExportResponse);
asp_request!(ImportRequest, IMPORT, ImportResponse);

/// The import answer: what was taken, what was not and why, each session's new id by its old.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonRpcResponse)]
#[serde(transparent)]
pub struct ImportResponse(pub ImportAnswer);

/// The kinds named: a name this side does not know is skipped (a kind not given), but an item
/// that is not a name at all (`1`) is a request that does not decode.
fn known_kinds<'de, D: Deserializer<'de>>(d: D) -> Result<KindSet, D::Error> {
    let names = Vec::<Value>::deserialize(d)?;
    let mut kinds = KindSet::EMPTY;
    for v in &names {
        let Some(name) = v.as_str() else {
            return Err(serde::de::Error::custom(format!(
                "kinds holds {v}, not a kind's name"
            )));
        };
        if let Ok(kind) = name.parse::<StateKind>() {
            kinds.insert(kind);
        }
    }
    Ok(kinds)
}

/// The state to import, which must be an object: serde alone would take a struct from a list
/// by position, and `"state": []` imported nothing without a word.
fn object_state<'de, D: Deserializer<'de>>(d: D) -> Result<ExportState, D::Error> {
    struct Object;
    impl<'de> serde::de::Visitor<'de> for Object {
        type Value = ExportState;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a state object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<ExportState, A::Error> {
            ExportState::deserialize(serde::de::value::MapAccessDeserializer::new(map))
        }
    }
    d.deserialize_map(Object)
}

fn known_counts<'de, D: Deserializer<'de>>(d: D) -> Result<KindCounts, D::Error> {
    let counts = Map::<String, Value>::deserialize(d)?;
    let mut out = KindCounts::new();
    for (name, count) in counts {
        let Ok(kind) = name.parse::<StateKind>() else {
            continue;
        };
        let n = count.as_u64().ok_or_else(|| {
            serde::de::Error::custom(format!("count of {name} is {count}, not a whole number"))
        })?;
        out.insert(kind, n);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use agent_client_protocol::JsonRpcMessage;
    use asp_format::blob::MemoryStore;
    use serde_json::json;

    #[test]
    fn describe_is_asked_empty_and_answers_the_seed_example() {
        let asked: DescribeRequest = serde_json::from_str("{}").unwrap();
        assert_eq!(serde_json::to_string(&asked).unwrap(), "{}");
        assert_eq!(asked.method(), DESCRIBE);
        assert_eq!(
            DescribeRequest::parse_message(DESCRIBE, &Value::Null).unwrap(),
            asked
        );

        let seed = r#"{"kinds": {"sessions": 3, "instructions": 1}}"#;
        let answer: DescribeResponse = serde_json::from_str(seed).unwrap();
        assert_eq!(answer.kinds[&StateKind::Sessions], 3);
        assert_eq!(answer.kinds[&StateKind::Instructions], 1);
        assert_eq!(crate::seed_json::to_string(&answer), seed);
    }

    #[test]
    fn describe_counts_come_out_in_canonical_order_whatever_order_they_were_built_in() {
        let mut kinds = KindCounts::new();
        kinds.insert(StateKind::Settings, 2);
        kinds.insert(StateKind::Sessions, 0);
        let json = serde_json::to_string(&DescribeResponse { kinds }).unwrap();
        assert_eq!(json, r#"{"kinds":{"sessions":0,"settings":2}}"#);
    }

    #[test]
    fn export_asks_for_kinds_and_skips_names_it_does_not_know() {
        let asked = ExportRequest::new(
            KindSet::EMPTY
                .with(StateKind::Instructions)
                .with(StateKind::Sessions),
        );
        assert_eq!(
            serde_json::to_string(&asked).unwrap(),
            r#"{"kinds":["sessions","instructions"]}"#
        );
        assert_eq!(asked.method(), EXPORT);
        let lenient: ExportRequest =
            serde_json::from_value(json!({"kinds": ["memory", "dreams"]})).unwrap();
        assert_eq!(lenient.kinds, KindSet::EMPTY.with(StateKind::Memory));
        assert!(
            ExportRequest::parse_message(EXPORT, &json!({})).is_err(),
            "kinds is required"
        );
    }

    #[test]
    fn the_export_answer_is_the_formats_state_form() {
        let answer = json!({"state": {
            "sessions": [{"id": "s1", "title": "T", "updates": [
                {"sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hi"}, "futureField": 1}}
            ]}],
            "settings": {"model": "opus"}
        }});
        let typed: ExportResponse = serde_json::from_value(answer.clone()).unwrap();
        assert!(
            typed.state().instructions.is_none(),
            "a kind left out is not given"
        );
        assert_eq!(serde_json::to_value(&typed).unwrap(), answer);
        let state = typed.into_state().into_state(&MemoryStore::new()).unwrap();
        assert_eq!(
            state.kinds(),
            KindSet::EMPTY
                .with(StateKind::Sessions)
                .with(StateKind::Settings)
        );
    }

    #[test]
    fn params_that_do_not_parse_name_the_json_pointer_of_the_value_at_fault() {
        let refused = |method: &str, params: Value| match method {
            EXPORT => ExportRequest::parse_message(method, &params).unwrap_err(),
            _ => ImportRequest::parse_message(method, &params).unwrap_err(),
        };
        let e = refused(EXPORT, json!({"kinds": ["sessions"], "_meta": 5}));
        assert_eq!(i32::from(e.code), -32602);
        assert_eq!(
            e.data,
            Some(json!({"error": "invalid type: integer `5`, expected a map", "path": "/_meta"}))
        );
        let e = refused(
            IMPORT,
            json!({"state": {"settings": {"a/b": 1, "c~d": {"x": [true]}}}}),
        );
        assert_eq!(e.data.unwrap()["path"], "/state/settings/a~1b");
        let e = refused(
            IMPORT,
            json!({"state": {"skills": [{"name": "ok", "files": []}, {"name": "../x", "files": []}]}}),
        );
        assert_eq!(e.data.unwrap()["path"], "/state/skills/1/name");
        assert_eq!(
            refused(IMPORT, Value::Null).data.unwrap()["path"],
            "",
            "the params as a whole"
        );
        let e = refused(IMPORT, json!({"state": "x".repeat(1_000_000)}));
        let error = e.data.unwrap()["error"].as_str().unwrap().to_owned();
        assert!(error.starts_with("invalid type: string \"xxx"), "{error}");
        assert_eq!(
            error.chars().count(),
            MAX_ERROR_CHARS + 1,
            "cut, and marked"
        );
        assert!(e.message.len() < 1_000);
    }

    /// Params of the wrong shape are refused, not taken by position or skipped: a list as the
    /// params (or as the state to import) and a kind that is not a name; each with where.
    #[test]
    fn params_of_the_wrong_shape_are_refused_not_guessed() {
        let data = |e: Error| {
            assert_eq!(i32::from(e.code), -32602);
            e.data.unwrap()
        };
        let e = DescribeRequest::parse_message(DESCRIBE, &json!([])).unwrap_err();
        assert_eq!(
            data(e),
            json!({"error": "params must be an object, not a list", "path": ""})
        );
        assert!(DescribeRequest::parse_message(DESCRIBE, &Value::Null).is_ok());
        let e = ImportRequest::parse_message(IMPORT, &json!({"state": []})).unwrap_err();
        let d = data(e);
        assert_eq!(d["path"], "/state", "{d}");
        assert!(
            d["error"].as_str().unwrap().contains("a state object"),
            "{d}"
        );
        let e =
            ExportRequest::parse_message(EXPORT, &json!({"kinds": ["sessions", 1]})).unwrap_err();
        let d = data(e);
        assert_eq!(d["path"], "/kinds", "{d}");
        assert!(
            d["error"].as_str().unwrap().contains("kinds holds 1"),
            "{d}"
        );
        // A name this side does not know is still a kind not given.
        assert!(ExportRequest::parse_message(EXPORT, &json!({"kinds": ["later"]})).is_ok());
    }

    #[test]
    fn import_takes_a_state_and_answers_the_seed_example() {
        let asked: ImportRequest =
            serde_json::from_value(json!({"state": {"instructions": {"text": "Be brief."}}}))
                .unwrap();
        assert_eq!(asked.state.instructions.as_ref().unwrap().text, "Be brief.");
        assert_eq!(asked.method(), IMPORT);

        let seed = r#"{"taken": ["sessions", "instructions"], "notTaken": [{"kind": "memory", "reason": "this agent keeps no memory"}], "sessions": {"sess_789xyz": "sess_a1b2c3"}}"#;
        let answer: ImportResponse = serde_json::from_str(seed).unwrap();
        assert_eq!(answer.0.sessions["sess_789xyz"], "sess_a1b2c3");
        assert_eq!(crate::seed_json::to_string(&answer), seed);
    }
}
