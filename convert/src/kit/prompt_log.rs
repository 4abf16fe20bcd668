//! A harness's prompt history (what ↑ recalls) merged into one that is already there.
//!
//! Prompt histories are logs the harness appends to: Claude Code's and Codex's `history.jsonl`
//! (a JSON object per line), or one JSON array rewritten whole (Gemini CLI's per-project
//! `logs.json`, which backups do not keep yet: spec/harnesses/gemini.md). A backup keeps them with the harness's configuration. Restored onto a machine where the
//! harness already ran, one is there: keeping it would leave the backup's prompts out, and
//! replacing it would lose the new machine's. So the two are merged: every record of both,
//! each once, in time order, the file's own records in their order (a record the backup
//! also has is not added again; on equal times the file's record comes first).
//!
//! A record without a time (or whose time is not comparable with its neighbour's) keeps its
//! place after the records before it. A file that is not a log of that shape (not a JSON
//! array; JSON lines none of which is JSON) is not touched: [`merge`] gives the reason and the
//! caller keeps the file as it is.

use serde_json::Value;

/// How a harness writes its prompt history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A JSON object per line (`history.jsonl`).
    Lines,
    /// One JSON array of objects (Gemini CLI's `logs.json`), written with two-space indents.
    Array,
}

/// A prompt history: its shape and the member that holds each record's time (epoch
/// milliseconds, epoch seconds or RFC 3339 text, compared as they are).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PromptLog {
    pub shape: Shape,
    pub time: &'static str,
}

/// One record: its bytes as they will be written, its value (for equality) and its time.
struct Record {
    text: Vec<u8>,
    value: Option<Value>,
}

impl Record {
    fn time<'a>(&'a self, key: &str) -> Option<&'a Value> {
        self.value
            .as_ref()
            .and_then(|v| v.get(key))
            .filter(|t| t.is_number() || t.is_string())
    }

    /// What makes two records the same: the value as serde_json writes it (members in their
    /// order), or the bytes of a line that is not JSON.
    fn key(&self) -> Vec<u8> {
        match &self.value {
            Some(v) => serde_json::to_vec(v).expect("values serialize"),
            None => self.text.clone(),
        }
    }
}

/// Whether time `a` is strictly before `b` (both numbers, or both text).
fn before(a: Option<&Value>, b: Option<&Value>) -> bool {
    match (a, b) {
        (Some(Value::Number(a)), Some(Value::Number(b))) => {
            a.as_f64().zip(b.as_f64()).is_some_and(|(a, b)| a < b)
        }
        (Some(Value::String(a)), Some(Value::String(b))) => a < b,
        _ => false,
    }
}

fn records(log: &PromptLog, bytes: &[u8]) -> Option<Vec<Record>> {
    match log.shape {
        Shape::Lines => {
            let records: Vec<Record> = bytes
                .split(|b| *b == b'\n')
                .filter(|l| !l.iter().all(u8::is_ascii_whitespace))
                .map(|l| Record {
                    text: l.to_vec(),
                    value: serde_json::from_slice(l).ok(),
                })
                .collect();
            // Damaged lines are kept, but a file none of whose lines is JSON is no log.
            (records.is_empty() || records.iter().any(|r| r.value.is_some())).then_some(records)
        }
        Shape::Array => match serde_json::from_slice::<Value>(bytes).ok()? {
            Value::Array(items) => Some(
                items
                    .into_iter()
                    .map(|v| Record {
                        text: Vec::new(),
                        value: Some(v),
                    })
                    .collect(),
            ),
            _ => None,
        },
    }
}

/// `there` with every record of `carried` it does not have, in time order; `Ok(None)` when it
/// has them all (nothing to write). `Err` with the reason when either is not a log of that
/// shape (an unreadable backup copy is not merged into a good file).
pub fn merge(log: &PromptLog, there: &[u8], carried: &[u8]) -> Result<Option<Vec<u8>>, String> {
    let shape = match log.shape {
        Shape::Lines => "JSON lines",
        Shape::Array => "a JSON array",
    };
    let Some(mine) = records(log, there) else {
        return Err(format!("the file there is not {shape}"));
    };
    let Some(theirs) = records(log, carried) else {
        return Err(format!("the backed-up file is not {shape}"));
    };
    let mut seen: std::collections::HashSet<Vec<u8>> = mine.iter().map(Record::key).collect();
    let added: Vec<Record> = theirs
        .into_iter()
        .filter(|r| seen.insert(r.key()))
        .collect();
    if added.is_empty() {
        return Ok(None);
    }
    // Both are in time order already (each was appended to as prompts came): merge them.
    let mut merged: Vec<Record> = Vec::with_capacity(mine.len() + added.len());
    let (mut mine, mut added) = (mine.into_iter().peekable(), added.into_iter().peekable());
    loop {
        let take_added = match (mine.peek(), added.peek()) {
            (Some(m), Some(a)) => before(a.time(log.time), m.time(log.time)),
            (None, Some(_)) => true,
            (_, None) => false,
        };
        let next = if take_added {
            added.next()
        } else {
            mine.next()
        };
        match next {
            Some(r) => merged.push(r),
            None => break,
        }
    }
    Ok(Some(match log.shape {
        Shape::Lines => {
            let mut out = Vec::new();
            for r in merged {
                out.extend_from_slice(&r.text);
                out.push(b'\n');
            }
            out
        }
        Shape::Array => {
            let items: Vec<Value> = merged.into_iter().filter_map(|r| r.value).collect();
            let mut out = serde_json::to_vec_pretty(&items).expect("values serialize");
            out.push(b'\n');
            out
        }
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CLAUDE: PromptLog = PromptLog {
        shape: Shape::Lines,
        time: "timestamp",
    };
    const GEMINI: PromptLog = PromptLog {
        shape: Shape::Array,
        time: "timestamp",
    };

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
    fn gemini_logs_merge_as_one_array_by_their_text_times() {
        let there = br#"[{"sessionId":"s2","messageId":0,"type":"user","message":"new","timestamp":"2026-11-02T10:00:00.000Z"}]"#;
        let carried = br#"[{"sessionId":"s1","messageId":0,"type":"user","message":"old","timestamp":"2026-11-01T10:00:00.000Z"}]"#;
        let merged: Value =
            serde_json::from_slice(&merge(&GEMINI, there, carried).unwrap().unwrap()).unwrap();
        let messages: Vec<&str> = merged
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["message"].as_str().unwrap())
            .collect();
        assert_eq!(messages, ["old", "new"]);
    }

    #[test]
    fn what_is_not_a_log_is_not_merged() {
        assert!(merge(&GEMINI, b"{}", b"[]").is_err());
        assert!(merge(&GEMINI, b"[]", b"not json").is_err());
        assert!(merge(&CLAUDE, b"\x00\x01binary\n", line("a", 1).as_bytes()).is_err());
        assert!(merge(&CLAUDE, line("a", 1).as_bytes(), b"garbage\nmore\n").is_err());
        // An empty file is a log with no record yet.
        assert!(merge(&CLAUDE, b"", line("a", 1).as_bytes()).is_ok_and(|m| m.is_some()));
    }

    #[test]
    fn a_large_history_merges_in_linear_time() {
        let there: String = (0..50_000).map(|i| line("mine", i)).collect();
        let carried: String = (0..50_000).map(|i| line("theirs", i)).collect();
        let merged = merge(&CLAUDE, there.as_bytes(), carried.as_bytes())
            .unwrap()
            .unwrap();
        assert_eq!(merged.iter().filter(|b| **b == b'\n').count(), 100_000);
    }
}
