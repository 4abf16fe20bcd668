//! Session ids in a Gemini store.
//!
//! Gemini names every session with a v4 UUID, and chat file names end in the first 8
//! characters of it (`session-<time>-<8>.jsonl`); the CLI's session cleanup groups files by
//! those 8 characters. A state's ids are any text (`telegram:42`), so an id that is not a UUID
//! is given a *name-based* UUID: the first 16 bytes of `sha256("asp:gemini:" + id)` with the
//! RFC 9562 version 8 (custom) bits. The same id always gives the same UUID, so carrying a
//! session again finds the copy written last time, and a `<thread>~<harness>` copy gets a UUID
//! of its own.

pub use crate::uuid::is_uuid;

/// The name-based UUID (version 8) of `name`.
pub fn name_uuid(name: &str) -> String {
    crate::uuid::name_based("asp:gemini:", name)
}

/// The Gemini session id for a state id: itself when it is a UUID, else its name-based UUID.
pub fn gemini_id(id: &str) -> String {
    if is_uuid(id) {
        id.to_owned()
    } else {
        name_uuid(id)
    }
}

/// The CLI's `sanitizeFilenamePart`: `[^a-zA-Z0-9_-]` → `_`.
pub fn file_part(id: &str) -> String {
    id.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// The 8 characters a main chat's file name ends in.
pub fn short(id: &str) -> String {
    file_part(id).chars().take(8).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_kept_and_other_ids_get_stable_name_based_ones() {
        let u = "fed50604-91d7-43a0-ae1f-8998673c3ced";
        assert!(is_uuid(u));
        assert_eq!(gemini_id(u), u);
        let t = gemini_id("telegram:42");
        assert!(is_uuid(&t), "{t}");
        assert_eq!(t, gemini_id("telegram:42"));
        assert_ne!(t, gemini_id("telegram:43"));
        assert_eq!(&t[14..15], "8");
        assert!(matches!(&t[19..20], "8" | "9" | "a" | "b"));
        assert_eq!(short("telegram:42"), "telegram");
        assert_eq!(file_part("a:b/c"), "a_b_c");
    }
}
