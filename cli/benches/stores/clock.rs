//! Dates and times as the generated homes write them (UTC, no time zone database).

/// Days since 1970-01-01 as a civil date (Howard Hinnant's algorithm).
fn civil(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Milliseconds since the epoch, as the harnesses' timestamps and file names spell them.
#[derive(Clone, Copy)]
pub struct Millis(pub i64);

impl Millis {
    pub fn parts(self) -> (i64, u32, u32, i64, i64, i64, i64) {
        let secs = self.0.div_euclid(1000);
        let (y, m, d) = civil(secs.div_euclid(86_400));
        let rem = secs.rem_euclid(86_400);
        (
            y,
            m,
            d,
            rem / 3600,
            rem % 3600 / 60,
            rem % 60,
            self.0 % 1000,
        )
    }

    pub fn rfc3339(self) -> String {
        let (y, m, d, h, mi, s, ms) = self.parts();
        format!("{y:04}-{m:02}-{d:02}T{h:02}:{mi:02}:{s:02}.{ms:03}Z")
    }

    /// The date as Gemini CLI's session context says it: `Monday, November 23, 2026`.
    pub fn long_date(self) -> String {
        const DAYS: [&str; 7] = [
            "Thursday",
            "Friday",
            "Saturday",
            "Sunday",
            "Monday",
            "Tuesday",
            "Wednesday",
        ];
        const MONTHS: [&str; 12] = [
            "January",
            "February",
            "March",
            "April",
            "May",
            "June",
            "July",
            "August",
            "September",
            "October",
            "November",
            "December",
        ];
        let days = self.0.div_euclid(86_400_000);
        let (y, m, d, ..) = self.parts();
        let weekday = DAYS[days.rem_euclid(7) as usize];
        format!("{weekday}, {} {d}, {y}", MONTHS[m as usize - 1])
    }
}
