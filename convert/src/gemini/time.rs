//! The few time operations the Gemini store needs, without a date crate.
//!
//! Gemini writes every time as JavaScript's `toISOString()` (`2026-11-23T09:14:39.806Z`, UTC,
//! milliseconds) and names chat files after the first 16 characters of it with `:` → `-`.
//! A state carries RFC 3339 times that may have an offset, so they are parsed to epoch
//! milliseconds and formatted back the way Gemini does.

use std::time::{SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch, now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

fn digits(s: &str) -> Option<i64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Parses an RFC 3339 date-time (`2026-11-23T09:14:39.806Z`, `2026-11-23 09:14:39+02:00`) into
/// epoch milliseconds. Fractions beyond milliseconds are dropped.
pub fn parse_rfc3339(s: &str) -> Option<i64> {
    let s = s.trim();
    if s.len() < 19 || !s.is_char_boundary(10) || !s.is_char_boundary(19) {
        return None;
    }
    let (date, rest) = s.split_at(10);
    let sep = rest.as_bytes()[0];
    if !matches!(sep, b'T' | b't' | b' ') {
        return None;
    }
    let mut d = date.split('-');
    let (y, mo, da) = (digits(d.next()?)?, digits(d.next()?)?, digits(d.next()?)?);
    let time = &rest[1..9];
    let mut t = time.split(':');
    let (h, mi, se) = (digits(t.next()?)?, digits(t.next()?)?, digits(t.next()?)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&da) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut tail = &rest[9..];
    let mut ms = 0;
    if let Some(frac) = tail.strip_prefix('.') {
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        let mut f = frac[..n.min(3)].to_owned();
        while f.len() < 3 {
            f.push('0');
        }
        ms = digits(&f)?;
        tail = &frac[n..];
    }
    let offset_min = match tail {
        "Z" | "z" => 0,
        _ => {
            let sign = match tail.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let (oh, om) = tail[1..].split_once(':')?;
            sign * (digits(oh)? * 60 + digits(om)?)
        }
    };
    let days = days_from_civil(y, mo, da);
    let secs = days * 86_400 + h * 3600 + mi * 60 + se - offset_min * 60;
    Some(secs * 1000 + ms)
}

/// Formats epoch milliseconds as Gemini does: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn iso(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let milli = ms.rem_euclid(1000);
    let (y, m, d) = civil_from_days(secs.div_euclid(86_400));
    let sod = secs.rem_euclid(86_400);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{milli:03}Z",
        sod / 3600,
        sod % 3600 / 60,
        sod % 60
    )
}

/// The time part of a chat file name: `YYYY-MM-DDTHH-MM` in UTC.
pub fn file_stamp(ms: i64) -> String {
    iso(ms)[..16].replace(':', "-")
}

/// Parses Gemini's retention durations (`30d`, `12h`, `4w`, `6m`) into milliseconds.
pub fn parse_duration(s: &str) -> Option<i64> {
    let s = s.trim();
    let unit = s.chars().last()?;
    let n = digits(&s[..s.len() - unit.len_utf8()])?;
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
