//! Session ids, row ids and timestamps for transcripts this converter writes.
//!
//! Claude Code lists and resumes only transcripts whose file stem is a UUID (its SDK filters
//! names with a UUID pattern), so every id written is one. Ids derived from names are
//! deterministic — the same state written twice gives the same bytes, which is how a second
//! import recognises a session that is already there.

use asp_format::Digest;

/// Whether `s` has the shape Claude Code accepts as a session id.
pub fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// A UUID derived from `name` (SHA-256, RFC 9562 version 8 "custom" layout).
pub fn name_uuid(name: &str) -> String {
    let d = Digest::of(format!("asp/claude-code/{name}").as_bytes());
    let mut b: [u8; 16] = d.as_bytes()[..16].try_into().expect("16 bytes");
    b[6] = (b[6] & 0x0f) | 0x80;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// A hex tag derived from `name`, for `msg_…`/`req_…`/`toolu_…` ids.
pub fn tag(name: &str, len: usize) -> String {
    Digest::of(format!("asp/claude-code/{name}").as_bytes()).hex()[..len].to_owned()
}

/// Days since 1970-01-01 of a civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// Milliseconds since the epoch of an RFC 3339 time (`2026-11-28T16:20:00.000Z`, offsets
/// allowed); `None` if it is not one.
pub fn parse_time(t: &str) -> Option<i64> {
    let b = t.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| t.get(r)?.parse::<i64>().ok();
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, s) = (num(11..13)?, num(14..16)?, num(17..19)?);
    let mut rest = t.get(19..)?;
    let mut ms = 0;
    if let Some(frac) = rest.strip_prefix('.') {
        let digits = frac.bytes().take_while(u8::is_ascii_digit).count();
        let f = &frac[..digits];
        ms = format!("{f:0<3}")[..3].parse().ok()?;
        rest = &frac[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) => {
            let sign = if o.starts_with('-') { -1 } else { 1 };
            let part = |r: std::ops::Range<usize>| o.get(r)?.parse::<i64>().ok();
            sign * (part(1..3)? * 60 + part(4..6)?)
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo, d);
    Some((((days * 24 + h) * 60 + mi - offset) * 60 + s) * 1000 + ms)
}

/// `2026-11-28T16:20:00.000Z`, as Claude Code writes timestamps.
pub fn format_time(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3_600_000,
        rem / 60_000 % 60,
        rem / 1000 % 60,
        rem % 1000
    )
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
