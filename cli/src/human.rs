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
        S::Note => "note",
        S::KeptNatively => "kept natively",
        S::LeftOut => "left out",
        S::Damaged | S::Lost => "lost",
    }
}

/// Findings as stderr shows them, one line each, except that the same finding about many
/// files (one per session: "usage_update updates have no place in a Codex rollout") is shown
/// for the first [`SAME_SHOWN`] and then counted, so a 2,000-session import does not print
/// 2,000 alike lines. `--json` lists every one.
pub fn finding_lines<'a>(
    items: impl IntoIterator<Item = &'a asp_convert::kit::report::Diagnostic>,
) -> Vec<String> {
    let items: Vec<_> = items.into_iter().collect();
    fn alike(d: &asp_convert::kit::report::Diagnostic) -> Option<(&'static str, &str)> {
        (d.line.is_none() && d.subject.is_some())
            .then_some((severity(d.severity), d.message.as_str()))
    }
    let mut count = std::collections::HashMap::new();
    for d in &items {
        if let Some(k) = alike(d) {
            *count.entry(k).or_insert(0usize) += 1;
        }
    }
    let mut shown = std::collections::HashMap::new();
    let mut out = Vec::new();
    for d in items {
        let Some(k) = alike(d) else {
            out.push(format!("{}: {d}", severity(d.severity)));
            continue;
        };
        let n = shown.entry(k).or_insert(0usize);
        *n += 1;
        let total = count[&k];
        if total <= SAME_SHOWN + 1 || *n <= SAME_SHOWN {
            out.push(format!("{}: {d}", severity(d.severity)));
        } else if *n == SAME_SHOWN + 1 {
            out.push(format!(
                "{}: the same for {} more ({} in all; `--json` lists each)",
                severity(d.severity),
                total - SAME_SHOWN,
                total
            ));
        }
    }
    out
}

/// How many findings alike [`finding_lines`] shows before it counts the rest.
pub const SAME_SHOWN: usize = 3;

/// A finding as `--json` gives it: `{severity, file, line, message}`, and `session` (its id in the
/// state) for a writer's finding about a session rather than a file (`file` then null).
pub fn finding_json(d: &asp_convert::kit::report::Diagnostic) -> serde_json::Value {
    let mut finding = serde_json::json!({
        "severity": severity(d.severity),
        "file": d.file(),
        "line": d.line,
        "message": d.message,
    });
    if let Some(id) = d.session() {
        finding["session"] = serde_json::Value::from(id);
    }
    finding
}

/// `; 3 not taken (listed above, each with why)`, `; 1 LOST (listed above)`: what the summary
/// line adds when not everything was carried, or nothing. The same words for a pack and an
/// unpack: what was not taken is left out by design, or not possible where it went, and the
/// lines above say which.
pub fn not_carried(left_out: usize, lost: usize, quiet: bool) -> String {
    let mut out = String::new();
    if left_out > 0 && quiet {
        out.push_str(&format!(
            "; {left_out} not taken (-q says only what a command did not take; --json lists each)"
        ));
    } else if left_out > 0 {
        out.push_str(&format!(
            "; {left_out} not taken (listed above, each with why)"
        ));
    }
    if lost > 0 {
        out.push_str(&format!("; {lost} LOST (listed above)"));
    }
    out
}

/// `s` on one line: line breaks, tabs and other control characters become spaces and runs of
/// spaces one, so a title holding JSON or a pasted paragraph keeps a listing one row per line.
pub fn one_line(s: &str) -> String {
    s.split(|c: char| c.is_whitespace() || c.is_control())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// What a listing shows for a session with no title (an unnamed Pi session), whatever its
/// harness.
pub const UNTITLED: &str = "(untitled)";

/// A title in a table cell: on one line ([`one_line`]), [`UNTITLED`] when it is empty.
pub fn title(s: &str) -> String {
    titled(s, |line| line)
}

/// A title in a listing, quoted (so a title that is itself `(untitled)` is told apart), on one
/// line; [`UNTITLED`] when it is empty.
pub fn quoted_title(s: &str) -> String {
    titled(s, |line| format!("{line:?}"))
}

fn titled(s: &str, shown: impl FnOnce(String) -> String) -> String {
    let line = one_line(s);
    if line.is_empty() {
        UNTITLED.to_owned()
    } else {
        shown(line)
    }
}

/// Rows under a header, each column as wide as its widest cell (the last one is not padded),
/// two spaces apart.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> Vec<String> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &mut dyn Iterator<Item = &str>| {
        let mut out = String::new();
        for (i, cell) in cells.enumerate() {
            if i > 0 {
                out.push_str("  ");
            }
            out.push_str(cell);
            if i + 1 < widths.len() {
                let pad = widths[i].saturating_sub(cell.chars().count());
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.trim_end().to_owned()
    };
    let mut out = vec![line(&mut header.iter().copied())];
    out.extend(rows.iter().map(|r| line(&mut r.iter().map(String::as_str))));
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

    #[test]
    fn a_title_over_several_lines_is_listed_on_one() {
        assert_eq!(
            one_line("{\n  \"a\": 1,\r\n\t\"b\"\u{7}}"),
            "{ \"a\": 1, \"b\" }"
        );
        assert_eq!(one_line("plain"), "plain");
    }

    #[test]
    fn table_columns_line_up_whatever_the_cells() {
        let rows = vec![
            vec![
                "agent-a1".to_owned(),
                "claude-code".to_owned(),
                "x".to_owned(),
            ],
            vec![
                "71958462-4bb8".to_owned(),
                "pi".to_owned(),
                "a title".to_owned(),
            ],
        ];
        assert_eq!(
            table(&["ID", "HARNESS", "TITLE"], &rows),
            [
                "ID             HARNESS      TITLE",
                "agent-a1       claude-code  x",
                "71958462-4bb8  pi           a title",
            ]
        );
    }
}
