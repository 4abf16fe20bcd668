//! Navigating ACP `_meta` objects to ASP's key, `asp`.

use serde_json::{Map, Value};

/// The key ASP owns in every `_meta` it uses.
pub const ASP: &str = "asp";

/// `meta.asp`, when it is an object.
pub(crate) fn asp(meta: &Map<String, Value>) -> Option<&Map<String, Value>> {
    meta.get(ASP).and_then(Value::as_object)
}

/// `obj[key]` as an object, created (or replaced, when it is not an object) as needed.
pub(crate) fn object_entry<'a>(
    obj: &'a mut Map<String, Value>,
    key: &str,
) -> &'a mut Map<String, Value> {
    let entry = obj
        .entry(key.to_owned())
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut().expect("made an object above")
}

/// `meta.asp`, created as needed.
pub(crate) fn asp_mut(meta: &mut Map<String, Value>) -> &mut Map<String, Value> {
    object_entry(meta, ASP)
}
