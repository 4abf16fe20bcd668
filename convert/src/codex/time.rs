//! The time shapes of Codex file names, on top of [`crate::kit::time`].

pub use crate::kit::time::{
    Nanos, format_millis, format_nanos, from_millis, millis, now, parse, secs,
};

use crate::kit::time::civil;

/// `YYYY-MM-DDThh-mm-ss`, the time in a rollout file name.
pub fn file_stamp(n: Nanos) -> String {
    let c = civil(n);
    format!(
        "{:04}-{:02}-{:02}T{:02}-{:02}-{:02}",
        c.year, c.month, c.day, c.hour, c.minute, c.second
    )
}

/// `YYYY/MM/DD`, the date directories of `sessions/`.
pub fn date_dirs(n: Nanos) -> String {
    let c = civil(n);
    format!("{:04}/{:02}/{:02}", c.year, c.month, c.day)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rollout_names_carry_the_time() {
        let n = parse("2026-11-21T14:03:26.640Z").unwrap();
        assert_eq!(file_stamp(n), "2026-11-21T14-03-26");
        assert_eq!(date_dirs(n), "2026/11/21");
    }
}
