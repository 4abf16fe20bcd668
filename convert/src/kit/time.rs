//! RFC 3339 times, without a date-time dependency.
//!
//! Every store keeps times differently: Claude Code and Gemini stamp records
//! `YYYY-MM-DDThh:mm:ss.mmmZ`, Codex writes `session_index.jsonl` times with up to nine fraction
//! digits and keeps epoch seconds and milliseconds in its SQLite index, and file names carry
//! times in yet other shapes. Comparing such strings goes wrong as soon as the fraction widths
//! differ, so times are parsed into nanoseconds since the epoch ([`Nanos`]) and formatted back
//! from their [`Civil`] parts.

use std::time::{SystemTime, UNIX_EPOCH};

/// Nanoseconds since 1970-01-01T00:00:00Z.
pub type Nanos = i128;

const NANOS_PER_SEC: i128 = 1_000_000_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day number (inverse of [`days_from_civil`]).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

fn digits(s: &str) -> Option<i64> {
    (!s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// Parses `YYYY-MM-DDThh:mm:ss[.fraction](Z|±hh:mm)` (also with a space or lowercase `t`).
pub fn parse(s: &str) -> Option<Nanos> {
    let s = s.trim();
    if s.len() < 20 || !s.is_char_boundary(10) || !s.is_char_boundary(19) {
        return None;
    }
    let (date, rest) = s.split_at(10);
    let sep = rest.as_bytes()[0];
    if !matches!(sep, b'T' | b't' | b' ') {
        return None;
    }
    let (clock, mut rest) = rest[1..].split_at(8);
    let mut dp = date.split('-');
    let (y, mo, d) = (
        digits(dp.next()?)?,
        digits(dp.next()?)?,
        digits(dp.next()?)?,
    );
    let mut cp = clock.split(':');
    let (h, mi, sec) = (
        digits(cp.next()?)?,
        digits(cp.next()?)?,
        digits(cp.next()?)?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut frac: i128 = 0;
    if let Some(r) = rest.strip_prefix('.') {
        let n = r.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return None;
        }
        let mut scaled = r[..n.min(9)].to_owned();
        while scaled.len() < 9 {
            scaled.push('0');
        }
        frac = scaled.parse().ok()?;
        rest = &r[n..];
    }
    let offset_secs: i64 = match rest {
        "Z" | "z" => 0,
        o if o.len() == 6
            && (o.starts_with('+') || o.starts_with('-'))
            && o.as_bytes()[3] == b':' =>
        {
            let oh = digits(o.get(1..3)?)?;
            let om = digits(o.get(4..6)?)?;
            let v = oh * 3600 + om * 60;
            if o.starts_with('-') { -v } else { v }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo as u32, d as u32);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_secs;
    Some(i128::from(secs) * NANOS_PER_SEC + frac)
}

/// A time's UTC calendar parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Civil {
    pub year: i64,
    pub month: u32,
    pub day: u32,
    pub hour: i64,
    pub minute: i64,
    pub second: i64,
    /// Nanoseconds within the second.
    pub nanos: i128,
}

/// The UTC calendar parts of `n`.
pub fn civil(n: Nanos) -> Civil {
    let secs = n.div_euclid(NANOS_PER_SEC);
    let nanos = n.rem_euclid(NANOS_PER_SEC);
    let days = secs.div_euclid(86_400) as i64;
    let sod = secs.rem_euclid(86_400) as i64;
    let (year, month, day) = civil_from_days(days);
    Civil {
        year,
        month,
        day,
        hour: sod / 3600,
        minute: (sod % 3600) / 60,
        second: sod % 60,
        nanos,
    }
}

/// `YYYY-MM-DDThh:mm:ss.mmmZ`: how Claude Code, Codex and Gemini stamp their records.
pub fn format_millis(n: Nanos) -> String {
    let c = civil(n);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        c.year,
        c.month,
        c.day,
        c.hour,
        c.minute,
        c.second,
        c.nanos / 1_000_000
    )
}

/// `YYYY-MM-DDThh:mm:ssZ`, whole seconds.
pub fn format_secs(n: Nanos) -> String {
    let c = civil(n);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

/// `YYYY-MM-DDThh:mm:ss.fffffffffZ` with trailing zeros of the fraction dropped, as Codex writes
/// `session_index.jsonl` times.
pub fn format_nanos(n: Nanos) -> String {
    let c = civil(n);
    let mut f = format!("{:09}", c.nanos);
    while f.len() > 1 && f.ends_with('0') {
        f.pop();
    }
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{f}Z",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

/// The time `ms` milliseconds after the epoch.
pub fn from_millis(ms: i64) -> Nanos {
    i128::from(ms) * 1_000_000
}

/// The time `s` seconds after the epoch.
pub fn from_secs(s: i64) -> Nanos {
    i128::from(s) * NANOS_PER_SEC
}

/// Whole seconds since the epoch.
pub fn secs(n: Nanos) -> i64 {
    n.div_euclid(NANOS_PER_SEC) as i64
}

/// Whole milliseconds since the epoch.
pub fn millis(n: Nanos) -> i64 {
    n.div_euclid(1_000_000) as i64
}

/// The current time.
pub fn now() -> Nanos {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip() {
        let n = parse("2026-11-21T14:03:26.640Z").unwrap();
        assert_eq!(format_millis(n), "2026-11-21T14:03:26.640Z");
        assert_eq!(format_secs(n), "2026-11-21T14:03:26Z");
        assert_eq!(secs(n), 1_795_269_806);
        assert_eq!(from_millis(millis(n)), n);
        assert_eq!(format_secs(from_secs(951_782_400)), "2000-02-29T00:00:00Z");
        let idx = parse("2026-11-20T09:15:08.73494046Z").unwrap();
        assert_eq!(format_nanos(idx), "2026-11-20T09:15:08.73494046Z");
        assert!(
            parse("2026-11-20T09:15:08.7Z").unwrap() > parse("2026-11-20T09:15:08.640Z").unwrap()
        );
        assert_eq!(
            parse("2026-11-20T10:15:08+01:00"),
            parse("2026-11-20T09:15:08Z")
        );
        assert_eq!(parse("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(format_millis(-1_000_000), "1969-12-31T23:59:59.999Z");
        for bad in [
            "",
            "2026-11-28T16:20:0é",
            "2026-11-28T16:20:00+0é:0",
            "2026-11-28T16:20:00+01-00",
            "2026-13-01T00:00:00Z",
            "2026-11-20 09:15",
            "2026-11-20T09:15:08",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn parsing_never_panics_and_round_trips_milliseconds(s in "\\PC{0,40}", ms in -10_000_000_000_000i64..10_000_000_000_000) {
            let _ = parse(&s);
            let n = from_millis(ms);
            proptest::prop_assert_eq!(parse(&format_millis(n)), Some(n));
        }
    }
}
