//! RFC 3339 times as Codex writes them, without a date-time dependency.
//!
//! Codex stamps every rollout line `YYYY-MM-DDThh:mm:ss.mmmZ` (UTC, milliseconds), names files
//! `rollout-YYYY-MM-DDThh-mm-ss-<uuid>`, writes `session_index.jsonl` times with up to nine
//! fraction digits, and keeps epoch seconds and milliseconds in `state_<N>.sqlite`. Comparing
//! those as strings goes wrong as soon as the fraction widths differ, so they are compared as
//! nanoseconds since the epoch.

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
        o if o.len() == 6 && (o.starts_with('+') || o.starts_with('-')) => {
            let oh = digits(&o[1..3])?;
            let om = digits(&o[4..6])?;
            let v = oh * 3600 + om * 60;
            if o.starts_with('-') { -v } else { v }
        }
        _ => return None,
    };
    let days = days_from_civil(y, mo as u32, d as u32);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_secs;
    Some(i128::from(secs) * NANOS_PER_SEC + frac)
}

fn split(n: Nanos) -> (i64, u32, u32, i64, i64, i64, i128) {
    let secs = n.div_euclid(NANOS_PER_SEC);
    let frac = n.rem_euclid(NANOS_PER_SEC);
    let days = secs.div_euclid(86_400) as i64;
    let sod = secs.rem_euclid(86_400) as i64;
    let (y, m, d) = civil_from_days(days);
    (y, m, d, sod / 3600, (sod % 3600) / 60, sod % 60, frac)
}

/// `YYYY-MM-DDThh:mm:ss.mmmZ`, the form of every rollout `timestamp`.
pub fn format_millis(n: Nanos) -> String {
    let (y, mo, d, h, mi, s, frac) = split(n);
    format!(
        "{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{:03}Z",
        frac / 1_000_000
    )
}

/// `YYYY-MM-DDThh:mm:ss.fffffffffZ` with trailing zeros of the fraction dropped, as Codex writes
/// `session_index.jsonl` times.
pub fn format_nanos(n: Nanos) -> String {
    let (y, mo, d, h, mi, s, frac) = split(n);
    let mut f = format!("{frac:09}");
    while f.len() > 1 && f.ends_with('0') {
        f.pop();
    }
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{f}Z")
}

/// `YYYY-MM-DDThh-mm-ss`, the time in a rollout file name.
pub fn file_stamp(n: Nanos) -> String {
    let (y, mo, d, h, mi, s, _) = split(n);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}-{mi:02}-{s:02}")
}

/// `YYYY/MM/DD`, the date directories of `sessions/`.
pub fn date_dirs(n: Nanos) -> String {
    let (y, mo, d, ..) = split(n);
    format!("{y:04}/{mo:02}/{d:02}")
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
    fn codex_times_round_trip() {
        let n = parse("2026-11-21T14:03:26.640Z").unwrap();
        assert_eq!(format_millis(n), "2026-11-21T14:03:26.640Z");
        assert_eq!(file_stamp(n), "2026-11-21T14-03-26");
        assert_eq!(date_dirs(n), "2026/11/21");
        assert_eq!(secs(n), 1_795_269_806);
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
            "2026-13-01T00:00:00Z",
            "2026-11-20 09:15",
            "2026-11-20T09:15:08",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
    }
}
