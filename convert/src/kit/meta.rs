//! Typed accessors for the `asp` namespace of `_meta` (spec/aspstate.md §8).
//!
//! Every setter merges into the `asp` object that is there: it sets its own member and keeps
//! every other one (a session's `parent` and a server's `redacted` can meet in one object, and
//! other writers may add members this build does not know). A non-object `asp` value, which no
//! writer of this protocol makes, is replaced by an object.

use asp_format::state::Meta;
use serde_json::{Map, Value, json};

/// The namespace.
pub const ASP: &str = "asp";

/// The session a subagent session was started from (`_meta.asp.parent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parent {
    pub session_id: String,
    /// The parent's tool call that started the subagent, when known.
    pub tool_call_id: Option<String>,
}

impl Parent {
    pub fn new(session_id: impl Into<String>) -> Self {
        Parent {
            session_id: session_id.into(),
            tool_call_id: None,
        }
    }

    #[must_use]
    pub fn with_call(mut self, tool_call_id: Option<impl Into<String>>) -> Self {
        self.tool_call_id = tool_call_id.map(Into::into);
        self
    }

    fn to_value(&self) -> Value {
        let mut v = json!({"sessionId": self.session_id});
        if let Some(t) = &self.tool_call_id {
            v["toolCallId"] = json!(t);
        }
        v
    }
}

/// The `asp` object of `meta`, if there is one.
pub fn asp(meta: Option<&Meta>) -> Option<&Map<String, Value>> {
    meta?.get(ASP)?.as_object()
}

/// The `asp` object of `meta`, made when missing; other namespaces are kept.
pub fn asp_mut(meta: &mut Option<Meta>) -> &mut Map<String, Value> {
    let m = meta.get_or_insert_with(Meta::new);
    let v = m.entry(ASP).or_insert_with(|| Value::Object(Map::new()));
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    v.as_object_mut().expect("made an object above")
}

/// `_meta.asp.parent` of a session.
pub fn parent(meta: Option<&Meta>) -> Option<Parent> {
    let p = asp(meta)?.get("parent")?;
    Some(Parent {
        session_id: p.get("sessionId")?.as_str()?.to_owned(),
        tool_call_id: p
            .get("toolCallId")
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

/// The parent's session id, the part writers need most.
pub fn parent_id(meta: Option<&Meta>) -> Option<&str> {
    asp(meta)?.get("parent")?.get("sessionId")?.as_str()
}

/// Sets `_meta.asp.parent`, keeping the rest of `_meta.asp`.
pub fn set_parent(meta: &mut Option<Meta>, parent: &Parent) {
    asp_mut(meta).insert("parent".into(), parent.to_value());
}

/// `_meta.asp.subagentSessionId` of a parent's tool call: the child session it started.
pub fn subagent_session_id(meta: Option<&Meta>) -> Option<&str> {
    asp(meta)?.get("subagentSessionId")?.as_str()
}

/// Sets `_meta.asp.subagentSessionId`, keeping the rest of `_meta.asp`.
pub fn set_subagent_session_id(meta: &mut Option<Meta>, child: &str) {
    asp_mut(meta).insert("subagentSessionId".into(), json!(child));
}

/// `_meta.asp.redacted` of an MCP server: what `--redact-secrets` blanked.
pub fn redacted(meta: Option<&Meta>) -> Vec<String> {
    asp(meta)
        .and_then(|a| a.get("redacted"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// Adds to `_meta.asp.redacted`, keeping what is listed and the rest of `_meta.asp`.
pub fn add_redacted(meta: &mut Option<Meta>, blanked: &[String]) {
    if blanked.is_empty() {
        return;
    }
    let mut all = redacted(meta.as_ref());
    for b in blanked {
        if !all.contains(b) {
            all.push(b.clone());
        }
    }
    asp_mut(meta).insert("redacted".into(), json!(all));
}

/// A place in a session's native file whose record could not be read into the session's
/// updates (`_meta.asp.unreadable`): kept only in that file, so lost wherever the session is
/// written from its updates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    /// The native file's path, relative to the home (as in the session's `native.files`).
    pub path: String,
    /// 1-based line, for line-oriented files.
    pub line: Option<u64>,
}

/// `_meta.asp.unreadable` of a session, in the order recorded.
pub fn unreadable(meta: Option<&Meta>) -> Vec<Unreadable> {
    asp(meta)
        .and_then(|a| a.get("unreadable"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|d| {
            Some(Unreadable {
                path: d.get("path")?.as_str()?.to_owned(),
                line: d.get("line").and_then(Value::as_u64),
            })
        })
        .collect()
}

/// Sets `_meta.asp.unreadable` to `places`, keeping the rest of `_meta.asp`.
pub fn set_unreadable(meta: &mut Option<Meta>, places: &[Unreadable]) {
    let listed: Vec<Value> = places
        .iter()
        .map(|d| match d.line {
            Some(l) => json!({"path": d.path, "line": l}),
            None => json!({"path": d.path}),
        })
        .collect();
    asp_mut(meta).insert("unreadable".into(), Value::Array(listed));
}

/// The native file a converter's own namespace names by path (`_meta.<namespace>.<key>`):
/// the session's transcript among its native files, as Claude Code (`claudeCode.transcript`)
/// and Pi (`pi.file`) record it.
pub fn native_file(
    native: &asp_format::state::Native,
    meta: Option<&Meta>,
    namespace: &str,
    key: &str,
) -> Option<asp_format::digest::Descriptor> {
    let path = meta?.get(namespace)?.get(key)?.as_str()?;
    asp_format::state::FileEntry::at(&native.files, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn setters_merge_into_what_is_there() {
        let mut meta: Option<Meta> = Some(
            json!({"asp": {"future": 1}, "claudeCode": {"x": 2}})
                .as_object()
                .unwrap()
                .clone(),
        );
        set_parent(&mut meta, &Parent::new("p").with_call(Some("call_1")));
        add_redacted(&mut meta, &["env.TOKEN".to_owned()]);
        add_redacted(&mut meta, &["env.TOKEN".to_owned(), "headers.A".to_owned()]);
        assert_eq!(
            Value::Object(meta.clone().unwrap()),
            json!({"asp": {"future": 1, "parent": {"sessionId": "p", "toolCallId": "call_1"},
                           "redacted": ["env.TOKEN", "headers.A"]},
                   "claudeCode": {"x": 2}})
        );
        assert_eq!(
            parent(meta.as_ref()).unwrap().tool_call_id.as_deref(),
            Some("call_1")
        );
        assert_eq!(parent_id(meta.as_ref()), Some("p"));
        let mut none = None;
        set_subagent_session_id(&mut none, "c");
        assert_eq!(subagent_session_id(none.as_ref()), Some("c"));
    }
}
