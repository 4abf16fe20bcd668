//! Session ids in a Gemini store.
//!
//! Gemini names every session with a v4 UUID, and chat file names end in the first 8
//! characters of it (`session-<time>-<8>.jsonl`); the CLI's session cleanup groups files by
//! those 8 characters. A state's ids are any text (`telegram:42`), so an id that is not a UUID
//! is given a *name-based* UUID: the first 16 bytes of `sha256("asp:gemini:" + id)` with the
//! RFC 9562 version 8 (custom) bits. The same id always gives the same UUID, so carrying a
//! session again finds the copy written last time, and a `<thread>~<harness>` copy gets a UUID
//! of its own.

pub use crate::kit::uuid::is_uuid;

/// The name-based UUID (version 8) of `name`.
pub fn name_uuid(name: &str) -> String {
    crate::kit::uuid::name_based("asp:gemini:", name)
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

/// The time a time-based UUID carries, in epoch milliseconds: version 7 (Unix milliseconds),
/// version 1 and 6 (100 ns intervals since 1582-10-15). `None` for any other id.
pub fn time_of(id: &str) -> Option<i64> {
    if !is_uuid(id) {
        return None;
    }
    let hex: String = id.chars().filter(|c| *c != '-').collect();
    let field = |from: usize, to: usize| u64::from_str_radix(&hex[from..to], 16).ok();
    const GREGORIAN_TO_UNIX_100NS: u64 = 0x01B2_1DD2_1381_4000;
    let gregorian = |t: u64| {
        t.checked_sub(GREGORIAN_TO_UNIX_100NS)
            .map(|t| (t / 10_000) as i64)
    };
    match &hex[12..13] {
        "7" => field(0, 12).map(|ms| ms as i64),
        "1" => {
            let (low, mid, high) = (field(0, 8)?, field(8, 12)?, field(13, 16)?);
            gregorian((high << 48) | (mid << 32) | low)
        }
        "6" => {
            let (high, mid, low) = (field(0, 8)?, field(8, 12)?, field(13, 16)?);
            gregorian((high << 28) | (mid << 12) | low)
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn time_based_uuids_tell_their_time() {
        // RFC 9562's examples: all three name 2022-02-22T19:22:22Z (v1/v6 to the 100 ns).
        assert_eq!(
            time_of("017f22e2-79b0-7cc3-98c4-dc0c0c07398f"),
            Some(1_645_557_742_000)
        );
        assert_eq!(
            time_of("c232ab00-9414-11ec-b3c8-9f6bdeced846"),
            Some(1_645_557_742_000)
        );
        assert_eq!(
            time_of("1ec9414c-232a-6b00-b3c8-9f6bdeced846"),
            Some(1_645_557_742_000)
        );
        assert_eq!(time_of("fed50604-91d7-43a0-ae1f-8998673c3ced"), None, "v4");
        assert_eq!(time_of("telegram:42"), None);
    }

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
