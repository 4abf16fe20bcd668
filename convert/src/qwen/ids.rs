//! Session and record ids in a Qwen store.
//!
//! Qwen lists and loads only `chats/<uuid>.jsonl` (names matching `^[0-9a-fA-F-]{32,36}\.jsonl$`)
//! whose first record's `sessionId` is that name. A state id that is a UUID is kept; any other
//! gets a name-based UUID in the `asp/qwen/` namespace, so carrying a session again finds the
//! copy written last time. Record `uuid`s of a composed file are name-based too (session id and
//! position), so a second import writes the same bytes.

pub use crate::kit::uuid::is_uuid;

/// The name-based UUID of `name`.
pub fn name_uuid(name: &str) -> String {
    crate::kit::uuid::name_based("asp/qwen/", name)
}

/// The Qwen session id for a state id: itself when it is a UUID, else its name-based UUID.
pub fn qwen_id(id: &str) -> String {
    if is_uuid(id) {
        id.to_owned()
    } else {
        name_uuid(id)
    }
}

/// Whether a file name is one Qwen lists (`SESSION_FILE_PATTERN`).
pub fn is_session_file(name: &str) -> bool {
    name.strip_suffix(".jsonl").is_some_and(|stem| {
        (32..=36).contains(&stem.len()) && stem.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-')
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_uuid_file_names_are_sessions() {
        assert!(is_session_file(
            "a9e019a0-3eca-408b-9ff8-0a0b4be0bc99.jsonl"
        ));
        assert!(!is_session_file("telegram-42.jsonl"));
        assert!(!is_session_file(
            "a9e019a0-3eca-408b-9ff8-0a0b4be0bc99.json"
        ));
        assert_eq!(
            qwen_id("a9e019a0-3eca-408b-9ff8-0a0b4be0bc99"),
            "a9e019a0-3eca-408b-9ff8-0a0b4be0bc99"
        );
        assert!(is_uuid(&qwen_id("telegram:42")));
    }
}
