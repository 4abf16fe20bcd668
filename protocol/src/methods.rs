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
use asp_format::blob::MemoryStore;
use asp_format::export::{self, ExportState, Invalid};
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

/// -32602 for a state that is not valid, naming every problem in it (spec/protocol.md §4).
/// Each problem's `path` points into the state object; the answer's `path` is the first
/// one's, into the params (`/state/...`). Its `error` gives the first one's words, then each
/// other one with its own place (`; at /state/skills/1/name: ...`) as long as the whole stays
/// within [`MAX_ERROR_CHARS`], and then how many more there are (`; and 12 more problems`).
pub fn invalid_state(problems: &[Invalid]) -> AspError {
    let Some(first) = problems.first() else {
        return AspError::InvalidParams {
            path: "/state".to_owned(),
            error: "the state is not valid".to_owned(),
        };
    };
    AspError::InvalidParams {
        path: format!("/state{}", first.path),
        error: name_all(problems),
    }
}

/// The words of every problem, within [`MAX_ERROR_CHARS`] when there are several.
fn name_all(problems: &[Invalid]) -> String {
    let [first, others @ ..] = problems else {
        return String::new();
    };
    if others.is_empty() {
        return concise(first.error.clone());
    }
    let more = |n: usize| match n {
        1 => "; and 1 more problem".to_owned(),
        n => format!("; and {n} more problems"),
    };
    // Room kept for the longest count of the rest there can be.
    let reserve = more(others.len()).chars().count();
    let mut out = first.error.clone();
    let mut len = out.chars().count();
    if len + reserve > MAX_ERROR_CHARS {
        let keep = MAX_ERROR_CHARS - reserve - 1;
        out = format!("{}…", first.error.chars().take(keep).collect::<String>());
        len = keep + 1;
    }
    let mut named = 1;
    for p in others {
        let part = format!("; at /state{}: {}", p.path, p.error);
        let n = part.chars().count();
        let room = if named == others.len() {
            MAX_ERROR_CHARS
        } else {
            MAX_ERROR_CHARS - reserve
        };
        if len + n > room {
            break;
        }
        out.push_str(&part);
        len += n;
        named += 1;
    }
    if named < problems.len() {
        out.push_str(&more(problems.len() - named));
    }
    out
}

/// Reads an import's params. A state the parser stops in is read again entry by entry, so the
/// answer names every problem in it (§4), not only the first the parser met: each entry that
/// does not read, and what [`ExportState::into_checked_state`] finds in the entries that do
/// (an update that is another session's, a duplicate).
pub fn parse_import(params: &Value) -> Result<ImportRequest, AspError> {
    let refused = match parse_params::<ImportRequest>(params) {
        Ok(request) => return Ok(request),
        Err(e) => e,
    };
    let in_state = matches!(&refused, AspError::InvalidParams { path, .. }
        if path == "/state" || path.starts_with("/state/"));
    let Some(Value::Object(state)) = params.get("state").filter(|_| in_state) else {
        return Err(refused);
    };
    let problems = state_problems(state);
    if problems.is_empty() {
        // The entries read one by one where the whole did not: say what the parser said.
        return Err(refused);
    }
    Err(invalid_state(&problems))
}

/// Every problem of a state object, each with its place in it, in the order of the state
/// (kinds in canonical order, entries in theirs; a duplicate after the entries of its kind).
fn state_problems(state: &Map<String, Value>) -> Vec<Invalid> {
    let mut problems = Vec::new();
    let mut partial = ExportState::default();
    // Where each entry of `partial`'s lists is in `state`.
    let mut places: Vec<(StateKind, Vec<usize>)> = Vec::new();
    for kind in StateKind::ALL {
        // Absent and `null` are the same to the parser: the kind is not given.
        let Some(value) = state.get(kind.as_str()).filter(|v| !v.is_null()) else {
            continue;
        };
        let at = format!("/{kind}");
        let mut entries = Entries {
            kind,
            at: &at,
            problems: &mut problems,
            places: &mut places,
        };
        match kind {
            StateKind::Sessions => partial.sessions = entries.read(value),
            StateKind::Skills => partial.skills = entries.read(value),
            StateKind::Tools => partial.tools = entries.read(value),
            StateKind::Memory => partial.memory = entries.read(value),
            StateKind::Instructions => partial.instructions = read(value, &at, &mut problems),
            StateKind::Settings => partial.settings = read(value, &at, &mut problems),
        }
    }
    match partial.into_checked_state(&MemoryStore::new()) {
        Ok(_) => {}
        Err(export::ExportError::Invalid(found)) => {
            problems.extend(found.into_iter().map(|p| Invalid {
                path: placed(&p.path, &places),
                error: p.error,
            }))
        }
        Err(other) => problems.push(Invalid {
            path: String::new(),
            error: other.to_string(),
        }),
    }
    problems.sort_by_key(|p| order(&p.path));
    problems
}

/// A value of one kind as a whole; what does not read goes to `problems`.
fn read<T: DeserializeOwned>(value: &Value, at: &str, problems: &mut Vec<Invalid>) -> Option<T> {
    serde_path_to_error::deserialize(value)
        .map_err(|e| {
            problems.push(Invalid {
                path: format!("{at}{}", pointer(e.path())),
                error: concise(e.into_inner().to_string()),
            })
        })
        .ok()
}

/// Reading the entries of one list kind.
struct Entries<'a> {
    kind: StateKind,
    /// The kind's place in the state: `/sessions`.
    at: &'a str,
    problems: &'a mut Vec<Invalid>,
    places: &'a mut Vec<(StateKind, Vec<usize>)>,
}

impl Entries<'_> {
    /// The entries that read, their places noted; each that does not goes to `problems` (a
    /// value that is not a list at all is one problem, the kind's).
    fn read<T: DeserializeOwned>(&mut self, value: &Value) -> Option<Vec<T>> {
        let Value::Array(items) = value else {
            return read(value, self.at, self.problems);
        };
        let mut indices = Vec::new();
        let mut entries = Vec::new();
        for (i, item) in items.iter().enumerate() {
            if let Some(entry) = read(item, &format!("{}/{i}", self.at), self.problems) {
                indices.push(i);
                entries.push(entry);
            }
        }
        self.places.push((self.kind, indices));
        Some(entries)
    }
}

/// A path into the state of entries that read (`/sessions/1/...`) as a path into the state
/// handed over, where that entry may have had others before it that did not read.
fn placed(path: &str, places: &[(StateKind, Vec<usize>)]) -> String {
    let mut steps = path.splitn(4, '/').skip(1);
    let (Some(kind), Some(index)) = (steps.next(), steps.next()) else {
        return path.to_owned();
    };
    let original = places
        .iter()
        .find(|(k, _)| k.as_str() == kind)
        .zip(index.parse::<usize>().ok())
        .and_then(|((_, indices), i)| indices.get(i));
    match original {
        Some(i) => match steps.next() {
            Some(rest) => format!("/{kind}/{i}/{rest}"),
            None => format!("/{kind}/{i}"),
        },
        None => path.to_owned(),
    }
}

/// Where a path into the state is, for putting problems in the state's order: the kind, then
/// the entry (a problem of the kind as a whole after its entries').
fn order(path: &str) -> (usize, usize) {
    let mut steps = path.split('/').skip(1);
    let kind = steps
        .next()
        .and_then(|k| StateKind::ALL.iter().position(|s| s.as_str() == k))
        .unwrap_or(StateKind::ALL.len());
    let entry = steps
        .next()
        .and_then(|i| i.parse().ok())
        .unwrap_or(usize::MAX);
    (kind, entry)
}

/// How each ASP request's params are read: [`parse_params`], and for an import
/// [`parse_import`], which names every problem of a state that is not valid.
pub trait AspParams: Sized {
    fn parse(params: &Value) -> Result<Self, AspError>;
}

/// The SDK's request traits, with `$parse` as the parser.
macro_rules! asp_request {
    ($ty:ty, $method:expr, $response:ty, $parse:expr) => {
        impl AspParams for $ty {
            fn parse(params: &Value) -> Result<Self, AspError> {
                $parse(params)
            }
        }

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
                <$ty as AspParams>::parse(params).map_err(Error::from)
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

asp_request!(DescribeRequest, DESCRIBE, DescribeResponse, parse_params);
asp_request!(ExportRequest, EXPORT, ExportResponse, parse_params);
asp_request!(ImportRequest, IMPORT, ImportResponse, parse_import);

/// The import answer: what was taken, what was not and why, each session's new id by its old.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonRpcResponse)]
#[serde(transparent)]
pub struct ImportResponse(pub ImportAnswer);

/// The kinds named: a name this side does not know is skipped (a kind not given), but an item
/// that is not a name at all (`1`) is a request that does not decode.
fn known_kinds<'de, D: Deserializer<'de>>(d: D) -> Result<KindSet, D::Error> {
    let names = Vec::<KindName>::deserialize(d)?;
    let mut kinds = KindSet::EMPTY;
    for KindName(name) in &names {
        if let Ok(kind) = name.parse::<StateKind>() {
            kinds.insert(kind);
        }
    }
    Ok(kinds)
}

/// An item of `kinds`, which must be a string: decoded item by item, so a refusal's `path`
/// names the item at fault (`/kinds/1`), as deep as the import's do.
struct KindName(String);

impl<'de> Deserialize<'de> for KindName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        match Value::deserialize(d)? {
            Value::String(name) => Ok(KindName(name)),
            v => Err(serde::de::Error::custom(format!(
                "kinds holds {v}, not a kind's name"
            ))),
        }
    }
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

    /// A state with several problems names them all, within [`MAX_ERROR_CHARS`] however long
    /// one problem's words are: a first one too long to leave room is cut, and the rest
    /// counted.
    #[test]
    fn every_problem_is_named_within_the_bound() {
        let long = format!("{}/x", "a".repeat(5_000));
        let e = ImportRequest::parse_message(
            IMPORT,
            &json!({"state": {"skills": [{"name": long, "files": []}, {"name": "../x", "files": []}]}}),
        )
        .unwrap_err();
        let data = e.data.unwrap();
        assert_eq!(data["path"], "/state/skills/0/name");
        let error = data["error"].as_str().unwrap();
        assert!(error.starts_with("skill name \"aaa"), "{error}");
        assert!(error.ends_with("…; and 1 more problem"), "{error}");
        assert_eq!(error.chars().count(), MAX_ERROR_CHARS);

        let e = ImportRequest::parse_message(
            IMPORT,
            &json!({"state": {"skills": [{"name": "../x", "files": []}], "memory": 7, "settings": {"": true}}}),
        )
        .unwrap_err();
        assert_eq!(
            e.data.unwrap(),
            json!({"path": "/state/skills/0/name", "error": "skill name \"../x\" is not allowed: it \
                contains a `/`; at /state/memory: invalid type: integer `7`, expected a sequence; \
                at /state/settings: settings: the option id is empty"})
        );
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
        assert_eq!(d["path"], "/kinds/1", "{d}");
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
