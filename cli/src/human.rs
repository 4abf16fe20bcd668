//! Numbers and times for people.

/// Bytes in binary units: `512 B`, `1.5 KiB`, `23.0 MiB`.
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    if n < 1024 {
        return format!("{n} B");
    }
    let mut v = n as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

/// `1 session`, `3 sessions`.
pub fn count(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

/// RFC 3339 UTC time (`2026-11-30T06:48:35Z`) for seconds since the Unix epoch.
pub fn rfc3339(secs: i64) -> String {
    asp_convert::kit::time::format_secs(asp_convert::kit::time::from_secs(secs))
}

/// Whether `s` is an RFC 3339 date-time (`YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)`).
pub fn is_rfc3339(s: &str) -> bool {
    asp_convert::kit::time::parse(s).is_some()
}

/// How a finding is labelled on stderr: what was lost says so.
pub fn severity(s: asp_convert::kit::report::Severity) -> &'static str {
    use asp_convert::kit::report::Severity as S;
    match s {
        S::Note | S::KeptNatively => "note",
        S::LeftOut => "left out",
        S::Damaged | S::Lost => "lost",
    }
}

/// `; 3 left out by design (listed above)`, `; 1 lost (listed above)`: what the summary line
/// adds when not everything was carried, or nothing.
pub fn not_carried(left_out: usize, lost: usize) -> String {
    let mut out = String::new();
    if left_out > 0 {
        out.push_str(&format!(
            "; {left_out} not taken (left out by design or not possible in the target; listed above)"
        ));
    }
    if lost > 0 {
        out.push_str(&format!("; {lost} LOST (listed above)"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_use_binary_units() {
        assert_eq!(bytes(0), "0 B");
        assert_eq!(bytes(1023), "1023 B");
        assert_eq!(bytes(1536), "1.5 KiB");
        assert_eq!(bytes(5 << 30), "5.0 GiB");
    }

    #[test]
    fn epoch_seconds_format_as_utc() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_796_021_315), "2026-11-30T06:48:35Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn rfc3339_shapes() {
        assert!(is_rfc3339("2026-11-30T00:00:00Z"));
        assert!(is_rfc3339("2026-11-30T00:00:00.123+01:00"));
        assert!(!is_rfc3339("2026-11-30"));
        assert!(!is_rfc3339("2026-11-30T00:00:00"));
    }
}
