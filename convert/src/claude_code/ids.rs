//! Session ids, row ids and timestamps for transcripts this converter writes.
//!
//! Claude Code lists and resumes only transcripts whose file stem is a UUID (its SDK filters
//! names with a UUID pattern), so every id written is one. Ids derived from names are
//! deterministic — the same state written twice gives the same bytes, which is how a second
//! import recognises a session that is already there.

use asp_format::Digest;

pub use crate::kit::uuid::is_uuid;

/// A UUID derived from `name` (RFC 9562 version 8, in this converter's namespace).
pub fn name_uuid(name: &str) -> String {
    crate::kit::uuid::name_based("asp/claude-code/", name)
}

/// A hex tag derived from `name`, for `msg_…`/`req_…`/`toolu_…` ids.
pub fn tag(name: &str, len: usize) -> String {
    Digest::of(format!("asp/claude-code/{name}").as_bytes()).hex()[..len].to_owned()
}

/// Milliseconds since the epoch of an RFC 3339 time (`2026-11-28T16:20:00.000Z`, offsets
/// allowed); `None` if it is not one.
pub fn parse_time(t: &str) -> Option<i64> {
    crate::kit::time::parse(t).map(crate::kit::time::millis)
}

/// `2026-11-28T16:20:00.000Z`, as Claude Code writes timestamps.
pub fn format_time(ms: i64) -> String {
    crate::kit::time::format_millis(crate::kit::time::from_millis(ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn derived_ids_are_stable_uuids() {
        let a = name_uuid("telegram:42");
        assert!(is_uuid(&a), "{a}");
        assert_eq!(a, name_uuid("telegram:42"));
        assert_ne!(a, name_uuid("telegram:43"));
        assert_eq!(&a[14..15], "8");
        assert!(is_uuid("71958462-4bb8-46b6-a36a-1becf56c22dc"));
        assert!(!is_uuid("71958462-4bb8-46b6-a36a-1becf56c22dc~codex"));
    }

    #[test]
    fn times_round_trip() {
        let t = "2026-11-28T16:20:00.000Z";
        assert_eq!(format_time(parse_time(t).unwrap()), t);
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_time("2026-03-02T11:00:00.5+01:00"),
            parse_time("2026-03-02T10:00:00.500Z")
        );
        assert_eq!(
            format_time(parse_time("2024-02-29T23:59:59.999Z").unwrap() + 1),
            "2024-03-01T00:00:00.000Z"
        );
        assert_eq!(parse_time("yesterday"), None);
        assert_eq!(parse_time("2026-11-28T16:20:0é"), None);
        assert_eq!(parse_time("2026-11-28T16:20:00+0é:0"), None);
    }
}
