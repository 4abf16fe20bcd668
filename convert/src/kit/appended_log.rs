//! A log a harness appends to (its prompt history, what ↑ recalls; Codex's thread names)
//! merged into one that is already there.
//!
//! Prompt histories are logs the harness appends to, a JSON object per line: Claude Code's
//! and Codex's `history.jsonl`; Codex's thread names (`session_index.jsonl`) are another. A
//! backup keeps them with the harness's configuration.
//! Restored onto a machine where the harness already ran, one is there: keeping it would leave
//! the backup's prompts out, and replacing it would lose the new machine's. So the two are
//! merged: every line of both, each once (the same bytes are the same record), in time order,
//! the file's own lines in their order (on equal times the file's line comes first).
//!
//! A line without a time (or whose time is not comparable with its neighbour's) keeps its
//! place after the lines before it; a line that is not JSON is kept as it is. A file none of
//! whose lines is JSON is no log and is not touched: [`merge`] gives the reason and the caller
//! keeps the file as it is.

use serde_json::Value;

/// A log the harness appends to: the member of each line that holds its time (epoch
/// milliseconds, epoch seconds or RFC 3339 text: compared as times, text that is not one as
/// text), and, for a log whose last line of a key is what the harness shows (Codex's thread
/// names: the last naming of a thread is its name), that key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AppendedLog {
    pub time: &'static str,
    /// The member naming what a line is about, when the file there must keep the last word on
    /// it: a carried line is added only for what the file there says nothing about, so a
    /// restore never renames a thread the new machine named (a carried naming dated later
    /// would have come last).
    pub owner: Option<&'static str>,
    /// Whether it holds what the person typed (a prompt history): a restore creates it
    /// readable by its owner alone, as the harness does.
    pub private: bool,
    /// Whether its lines name folders `--map-path` moves (a prompt history's project), which
    /// a restore rewrites; thread names are prose, restored as they are.
    pub moves_paths: bool,
}

impl AppendedLog {
    /// A prompt history: private, its folders moved with `--map-path`, timed by `time`.
    pub const fn prompts(time: &'static str) -> AppendedLog {
        AppendedLog {
            time,
            owner: None,
            private: true,
            moves_paths: true,
        }
    }
}

/// One line, without its newline, its time and what it is about.
struct Record<'b> {
    text: &'b [u8],
    time: Option<Value>,
    owner: Option<String>,
}

/// Whether time `a` is strictly before `b` (both numbers, or both text). RFC 3339 text is
/// compared as the times it gives: Codex drops a fraction's trailing zeros, so `…:08.7Z` is
/// before `…:08.73Z`, which a comparison of the text has the other way round.
fn before(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(Value::Number(a)), Some(Value::Number(b))) => {
            a.as_f64().zip(b.as_f64()).is_some_and(|(a, b)| a < b)
        }
        (Some(Value::String(a)), Some(Value::String(b))) => {
            match (crate::kit::time::parse(a), crate::kit::time::parse(b)) {
                (Some(a), Some(b)) => a < b,
                _ => a < b,
            }
        }
        _ => false,
    }
}

/// The lines of `bytes` (blank ones dropped); `None` when none of them is JSON.
fn records<'b>(log: &AppendedLog, bytes: &'b [u8]) -> Option<Vec<Record<'b>>> {
    let mut json = false;
    let records: Vec<Record> = bytes
        .split(|b| *b == b'\n')
        .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
        .map(|text| {
            let mut value = serde_json::from_slice::<Value>(text).ok();
            json |= value.is_some();
            let owner = log
                .owner
                .and_then(|k| value.as_ref()?.get(k)?.as_str().map(str::to_owned));
            let time = value
                .as_mut()
                .and_then(|v| v.get_mut(log.time).map(Value::take))
                .filter(|t| t.is_number() || t.is_string());
            Record { text, time, owner }
        })
        .collect();
    // Damaged lines are kept, but a file none of whose lines is JSON is no log.
    (records.is_empty() || json).then_some(records)
}

/// `there` with every line of `carried` it does not have, in time order; `Ok(None)` when it
/// has them all (nothing to write). `Err` with the reason when either is not a log (an
/// unreadable backup copy is not merged into a good file).
pub fn merge(log: &AppendedLog, there: &[u8], carried: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let Some(mine) = records(log, there) else {
        return Err("the file there is not JSON lines".to_owned());
    };
    let Some(theirs) = records(log, carried) else {
        return Err("the backed-up file is not JSON lines".to_owned());
    };
    let mut seen: std::collections::HashSet<&[u8]> = mine.iter().map(|r| r.text).collect();
    let owned: std::collections::HashSet<&str> =
        mine.iter().filter_map(|r| r.owner.as_deref()).collect();
    let added: Vec<Record> = theirs
        .into_iter()
        .filter(|r| !r.owner.as_deref().is_some_and(|o| owned.contains(o)))
        .filter(|r| seen.insert(r.text))
        .collect();
    if added.is_empty() {
        return Ok(None);
    }
    // Both are in time order already (each was appended to as prompts came): merge them.
    let mut out = Vec::with_capacity(there.len() + carried.len());
    let (mut mine, mut added) = (mine.into_iter().peekable(), added.into_iter().peekable());
    loop {
        let take_added = match (mine.peek(), added.peek()) {
            (Some(m), Some(a)) => before(a.time.as_ref(), m.time.as_ref()),
            (None, Some(_)) => true,
            (_, None) => false,
        };
        let next = if take_added {
            added.next()
        } else {
            mine.next()
        };
        let Some(r) = next else { break };
        out.extend_from_slice(r.text);
        out.push(b'\n');
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLAUDE: AppendedLog = AppendedLog::prompts("timestamp");
    const CODEX_NAMES: AppendedLog = AppendedLog {
        time: "updated_at",
        owner: Some("id"),
        private: false,
        moves_paths: false,
    };

    fn naming(id: &str, name: &str, at: &str) -> String {
        format!("{{\"id\":\"{id}\",\"thread_name\":\"{name}\",\"updated_at\":\"{at}\"}}\n")
    }

    /// The new machine's naming of a thread stays its name: the backup's namings of it are not
    /// added, even dated later; those of other threads join in time order, and RFC 3339 times
    /// are compared as times (`:08.7Z` is before `:08.73Z`, though its text sorts after).
    #[test]
    fn a_thread_the_file_there_names_keeps_its_name() {
        let there = [
            naming("a", "renamed here", "2026-11-20T09:00:05Z"),
            naming("c", "c", "2026-11-20T09:00:08.73Z"),
        ]
        .concat();
        let carried = [
            naming("a", "old", "2026-11-20T09:00:03Z"),
            naming("b", "b", "2026-11-20T09:00:04Z"),
            naming("a", "old, later", "2026-11-20T09:00:07Z"),
            naming("d", "d", "2026-11-20T09:00:08.7Z"),
        ]
        .concat();
        let merged = merge(&CODEX_NAMES, there.as_bytes(), carried.as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(
            String::from_utf8(merged).unwrap(),
            [
                naming("b", "b", "2026-11-20T09:00:04Z"),
                naming("a", "renamed here", "2026-11-20T09:00:05Z"),
                naming("d", "d", "2026-11-20T09:00:08.7Z"),
                naming("c", "c", "2026-11-20T09:00:08.73Z"),
            ]
            .concat()
        );
    }

    fn line(display: &str, t: u64) -> String {
        format!("{{\"display\":\"{display}\",\"pastedContents\":{{}},\"timestamp\":{t}}}\n")
    }

    #[test]
    fn the_backups_prompts_join_the_files_in_time_order() {
        let there = [line("new machine", 30), line("later", 50)].concat();
        let carried = [line("old 1", 10), line("old 2", 40), line("later", 50)].concat();
        let merged = merge(&CLAUDE, there.as_bytes(), carried.as_bytes()).unwrap();
        assert_eq!(
            String::from_utf8(merged.unwrap()).unwrap(),
            [
                line("old 1", 10),
                line("new machine", 30),
                line("old 2", 40),
                line("later", 50)
            ]
            .concat()
        );
    }

    #[test]
    fn a_file_that_has_every_record_is_left_alone() {
        let there = [line("a", 1), line("b", 2)].concat();
        assert_eq!(
            merge(&CLAUDE, there.as_bytes(), line("b", 2).as_bytes()),
            Ok(None)
        );
    }

    #[test]
    fn records_without_a_time_keep_their_place_and_damaged_lines_are_kept() {
        let there = format!("{}not json\n{}", line("a", 10), line("c", 30));
        let carried = [line("b", 20), "{\"display\":\"no time\"}\n".to_owned()].concat();
        let merged = merge(&CLAUDE, there.as_bytes(), carried.as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(
            String::from_utf8(merged).unwrap(),
            format!(
                "{}not json\n{}{}{{\"display\":\"no time\"}}\n",
                line("a", 10),
                line("b", 20),
                line("c", 30)
            )
        );
    }

    #[test]
    fn what_is_not_a_log_is_not_merged() {
        assert!(merge(&CLAUDE, b"\x00\x01binary\n", line("a", 1).as_bytes()).is_err());
        assert!(merge(&CLAUDE, line("a", 1).as_bytes(), b"garbage\nmore\n").is_err());
        // An empty file is a log with no record yet.
        assert!(merge(&CLAUDE, b"", line("a", 1).as_bytes()).is_ok_and(|m| m.is_some()));
    }

    #[test]
    fn two_histories_of_50_000_lines_merge_whole() {
        let there: String = (0..50_000).map(|i| line("mine", i)).collect();
        let carried: String = (0..50_000).map(|i| line("theirs", i)).collect();
        let merged = merge(&CLAUDE, there.as_bytes(), carried.as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(merged.iter().filter(|b| **b == b'\n').count(), 100_000);
    }
}
