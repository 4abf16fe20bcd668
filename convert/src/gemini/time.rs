//! The few time operations the Gemini store needs, on top of [`crate::kit::time`].
//!
//! Gemini writes every time as JavaScript's `toISOString()` (`2026-11-23T09:14:39.806Z`, UTC,
//! milliseconds) and names chat files after the first 16 characters of it with `:` → `-`.
//! A state carries RFC 3339 times that may have an offset, so they are parsed to epoch
//! milliseconds and formatted back the way Gemini does.

use crate::kit::time;

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    time::millis(time::now())
}

/// Parses an RFC 3339 date-time (`2026-11-23T09:14:39.806Z`, `2026-11-23 09:14:39+02:00`) into
/// epoch milliseconds. Fractions beyond milliseconds are dropped.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    time::parse(s).map(time::millis)
}

/// Formats epoch milliseconds as Gemini does: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn iso(ms: i64) -> String {
    time::format_millis(time::from_millis(ms))
}

/// The time part of a chat file name: `YYYY-MM-DDTHH-MM` in UTC.
pub fn file_stamp(ms: i64) -> String {
    iso(ms)[..16].replace(':', "-")
}

/// Parses Gemini's retention durations (`30d`, `12h`, `4w`, `6m`) into milliseconds.
pub fn parse_duration(s: &str) -> Option<i64> {
    let s = s.trim();
    let unit = s.chars().last()?;
    let n = &s[..s.len() - unit.len_utf8()];
    if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let n: i64 = n.parse().ok()?;
    let per = match unit {
        'h' => 3_600_000,
        'd' => 86_400_000,
        'w' => 7 * 86_400_000,
        'm' => 30 * 86_400_000,
        _ => return None,
    };
    n.checked_mul(per)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_times_round_trip_through_epoch_milliseconds() {
        let t = "2026-11-23T09:14:39.806Z";
        let ms = parse_rfc3339(t).unwrap();
        assert_eq!(iso(ms), t);
        assert_eq!(file_stamp(ms), "2026-11-23T09-14");
        assert_eq!(iso(0), "1970-01-01T00:00:00.000Z");
    }

    #[test]
    fn offsets_and_missing_fractions_are_understood() {
        assert_eq!(
            parse_rfc3339("2026-11-23T11:14:39+02:00"),
            parse_rfc3339("2026-11-23T09:14:39.000Z")
        );
        assert_eq!(
            iso(parse_rfc3339("2024-02-29 23:59:59.123456-01:30").unwrap()),
            "2024-03-01T01:29:59.123Z"
        );
        assert_eq!(parse_rfc3339("yesterday"), None);
        assert_eq!(parse_rfc3339("2026-13-01T00:00:00Z"), None);
    }

    #[test]
    fn retention_durations() {
        assert_eq!(parse_duration("30d"), Some(30 * 86_400_000));
        assert_eq!(parse_duration("12h"), Some(12 * 3_600_000));
        assert_eq!(parse_duration("d"), None);
        assert_eq!(parse_duration("forever"), None);
    }
}
