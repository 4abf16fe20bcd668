//! Qwen Code's chat file (`chats/<sessionId>.jsonl`): records, the tolerant line reader, the
//! `uuid`/`parentUuid` chain and the title, as Qwen 0.24 reads them
//! (`spec/harnesses/qwen.md` §3–5).
//!
//! - A line that is not JSON is recovered when it holds balanced `{…}` objects (two records
//!   glued on one line after a crash: both are kept), else skipped; either way it is reported
//!   with its file and line. Bytes that are not UTF-8 are decoded as U+FFFD, as Qwen does.
//! - A record without a string `uuid` and `sessionId`, a `parentUuid` that is neither a string
//!   nor null, or an unknown `type`, is skipped (Qwen's `validateTranscriptRecord`).
//! - The leaf is the last record in file order that is part of the conversation (system
//!   bookkeeping such as `session_artifact_*` is not); the conversation is the walk up its
//!   parents. Records sharing a `uuid` are fragments of one record. A missing parent ends the
//!   walk (a gap), as does a cycle.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::{Map, Value};

use crate::kit::report::Diagnostics;

/// The four record types Qwen's reader accepts.
const TYPES: [&str; 4] = ["user", "assistant", "tool_result", "system"];

/// How far from either end of the file Qwen looks for a title (`sessionStorageUtils`).
const TITLE_WINDOW: u64 = 64 * 1024;

/// The bytes Qwen's title search looks for: compact JSON only.
pub const TITLE_MARK: &[u8] = b"\"subtype\":\"custom_title\"";

/// One valid record, with where it came from.
#[derive(Debug, Clone)]
pub struct Record {
    /// 1-based line in the file.
    pub line: u64,
    pub value: Map<String, Value>,
}

impl Record {
    pub fn str(&self, key: &str) -> Option<&str> {
        self.value.get(key).and_then(Value::as_str)
    }
    pub fn uuid(&self) -> &str {
        self.str("uuid").unwrap_or("")
    }
    pub fn parent(&self) -> Option<&str> {
        self.str("parentUuid")
    }
    pub fn kind(&self) -> &str {
        self.str("type").unwrap_or("")
    }
    pub fn subtype(&self) -> Option<&str> {
        self.str("subtype")
    }
    pub fn session_id(&self) -> &str {
        self.str("sessionId").unwrap_or("")
    }
    pub fn timestamp(&self) -> Option<&str> {
        self.str("timestamp")
    }
    /// `systemPayload[key]`.
    pub fn payload(&self, key: &str) -> Option<&Value> {
        self.value.get("systemPayload").and_then(|p| p.get(key))
    }
    /// The `message.parts` of the record.
    pub fn parts(&self) -> &[Value] {
        self.value
            .get("message")
            .and_then(|m| m.get("parts"))
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }
    /// Whether the record can be the leaf of the conversation (Qwen's
    /// `isConversationRecord`): all but the daemon's bookkeeping system records.
    pub fn is_conversation(&self) -> bool {
        match (self.kind(), self.subtype()) {
            ("system", Some(s)) => {
                s != "session_sources_snapshot"
                    && !s.starts_with("session_artifact_")
                    && !s.starts_with("managed_session_")
            }
            _ => true,
        }
    }
}

/// A whole chat file, read.
#[derive(Debug, Default)]
pub struct Transcript {
    /// Every valid record in file order.
    pub records: Vec<Record>,
    /// The custom title as Qwen finds it (byte search in the tail, then the head).
    pub title: Option<String>,
    pub title_source: Option<String>,
    /// File bytes (what was read).
    pub len: u64,
}

/// The conversation: the records on the walk from the leaf, root first, fragments merged.
#[derive(Debug, Default)]
pub struct Chain {
    pub records: Vec<Record>,
    /// The walk stopped at a parent that is not in the file (line of the record naming it).
    pub gap: Option<(u64, String)>,
    /// Records of the file not on the chain (rewound turns, abandoned branches).
    pub off_chain: usize,
}

/// The whole `{…}` objects of a damaged line: from each `{`, the longest JSON object that
/// parses there (then on after it). A cut record parses nowhere; a record glued after it does.
/// What is left between them is lost.
pub fn recover_objects(line: &str) -> Vec<Map<String, Value>> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(off) = line[at..].find('{') {
        let start = at + off;
        let mut it = serde_json::Deserializer::from_str(&line[start..]).into_iter::<Value>();
        match it.next() {
            Some(Ok(Value::Object(o))) => {
                out.push(o);
                at = start + it.byte_offset();
            }
            _ => at = start + 1,
        }
    }
    out
}

/// Why a record is not one Qwen reads; `None` when it is.
fn invalid(v: &Map<String, Value>) -> Option<&'static str> {
    if !v.get("uuid").is_some_and(Value::is_string) {
        return Some("has no string uuid");
    }
    if !matches!(v.get("parentUuid"), Some(Value::String(_) | Value::Null)) {
        return Some("has a parentUuid that is neither a string nor null");
    }
    if !v.get("sessionId").is_some_and(Value::is_string) {
        return Some("has no string sessionId");
    }
    match v.get("type").and_then(Value::as_str) {
        Some(t) if TYPES.contains(&t) => None,
        _ => Some("has a type Qwen does not read"),
    }
}

/// Reads a chat file's bytes. Damage is reported against `path` with its line.
#[cfg(test)]
pub fn parse(bytes: &[u8], path: &Path, diagnostics: &Diagnostics) -> Transcript {
    read(bytes, bytes.len() as u64, path, diagnostics).expect("reading from memory does not fail")
}

/// Reads a chat line by line from `reader` (`len` bytes: what the survey saw), holding the
/// records, never the file's bytes.
pub fn read(
    mut reader: impl std::io::BufRead,
    len: u64,
    path: &Path,
    diagnostics: &Diagnostics,
) -> std::io::Result<Transcript> {
    let mut t = Transcript {
        len,
        ..Transcript::default()
    };
    let mut titles: Vec<(u64, u64, u64)> = Vec::new(); // (start, end, record index + 1)
    let mut offset = 0u64;
    let mut buf = Vec::new();
    for i in 0.. {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        let raw = buf.as_slice();
        let no = i as u64 + 1;
        let start = offset;
        offset += raw.len() as u64;
        let body = raw.strip_suffix(b"\n").unwrap_or(raw);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        if body.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let text = match std::str::from_utf8(body) {
            Ok(s) => std::borrow::Cow::Borrowed(s),
            Err(_) => {
                diagnostics.note(
                    path,
                    Some(no),
                    "holds bytes that are not UTF-8; they were read as U+FFFD, as Qwen Code \
                     reads them (the file itself is carried unchanged)",
                );
                String::from_utf8_lossy(body)
            }
        };
        let found: Vec<Map<String, Value>> = match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(o)) => vec![o],
            Ok(_) => {
                diagnostics.damaged(path, Some(no), "not a JSON object; skipped");
                continue;
            }
            Err(e) => {
                let got = recover_objects(&text);
                let e = crate::kit::report::why_line_is_not_json(&e);
                let valid = got.iter().filter(|o| invalid(o).is_none()).count();
                if valid == 0 {
                    let what = if raw.ends_with(b"\n") {
                        "not JSON"
                    } else {
                        "cut off (the file ends inside it)"
                    };
                    diagnostics.damaged(path, Some(no), format!("{what} ({e}); skipped"));
                    continue;
                }
                diagnostics.damaged(
                    path,
                    Some(no),
                    format!(
                        "not JSON ({e}); {valid} whole record(s) recovered from it as Qwen Code \
                         does, the rest of the line is lost"
                    ),
                );
                got
            }
        };
        for o in found {
            if let Some(why) = invalid(&o) {
                diagnostics.note(
                    path,
                    Some(no),
                    format!("a record that {why}; Qwen Code skips it, and so does asp"),
                );
                continue;
            }
            t.records.push(Record { line: no, value: o });
            if body.windows(TITLE_MARK.len()).any(|w| w == TITLE_MARK)
                && t.records
                    .last()
                    .is_some_and(|r| r.subtype() == Some("custom_title"))
            {
                titles.push((start, offset, t.records.len() as u64));
            }
        }
    }
    // Qwen reads the last title line in the last 64 KiB, else in the first 64 KiB.
    let len = t.len;
    let tail = titles
        .iter()
        .rev()
        .find(|(_, end, _)| *end + TITLE_WINDOW > len);
    let head = || titles.iter().rev().find(|(s, _, _)| *s < TITLE_WINDOW);
    if let Some((_, _, idx)) = tail.or_else(head) {
        let r = &t.records[*idx as usize - 1];
        let payload = r.value.get("systemPayload");
        t.title = payload
            .and_then(|p| p.get("customTitle"))
            .and_then(Value::as_str)
            .map(str::to_owned);
        t.title_source = payload
            .and_then(|p| p.get("titleSource"))
            .and_then(Value::as_str)
            .map(str::to_owned);
    }
    Ok(t)
}

impl Transcript {
    /// The cwd that decides the project: the first record's.
    pub fn cwd(&self) -> Option<&str> {
        self.records.first().and_then(|r| r.str("cwd"))
    }

    /// What `qwen sessions list` shows when there is no title: the first prompt within the
    /// first 10 lines (`displayText`, else its first text part), cut to 200 characters.
    pub fn first_prompt(&self) -> Option<String> {
        let r = self
            .records
            .iter()
            .take_while(|r| r.line <= 10)
            .find(|r| r.kind() == "user" && r.subtype().is_none())?;
        let text = r
            .value
            .get("systemPayload")
            .and_then(|p| p.get("displayText"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| {
                r.parts()
                    .iter()
                    .find_map(|p| p.get("text").and_then(Value::as_str))
                    .map(str::to_owned)
            })?;
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let n = text.chars().count();
        Some(if n > 200 {
            format!("{}...", text.chars().take(200).collect::<String>())
        } else {
            text.to_owned()
        })
    }

    /// The conversation Qwen shows: the walk from the leaf, root first.
    pub fn chain(&self) -> Chain {
        let mut by_uuid: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, r) in self.records.iter().enumerate() {
            by_uuid.entry(r.uuid()).or_default().push(i);
        }
        let Some(leaf) = self.records.iter().rposition(Record::is_conversation) else {
            return Chain {
                off_chain: self.records.len(),
                ..Chain::default()
            };
        };
        let mut seen: HashSet<&str> = HashSet::new();
        let mut order: Vec<&str> = Vec::new();
        let mut gap = None;
        let mut at = self.records[leaf].uuid();
        loop {
            if !seen.insert(at) {
                break; // a cycle
            }
            order.push(at);
            let first = &self.records[by_uuid[at][0]];
            match first.parent() {
                None => break,
                Some(p) if by_uuid.contains_key(p) => at = p,
                Some(p) => {
                    gap = Some((first.line, p.to_owned()));
                    break;
                }
            }
        }
        order.reverse();
        let mut on = 0;
        let records = order
            .into_iter()
            .map(|u| {
                let idx = &by_uuid[u];
                on += idx.len();
                merge(idx.iter().map(|&i| &self.records[i]))
            })
            .collect();
        Chain {
            records,
            gap,
            off_chain: self.records.len() - on,
        }
    }
}

/// Fragments of one record: the first one, with the parts of the others appended.
fn merge<'a>(mut frags: impl Iterator<Item = &'a Record>) -> Record {
    let mut out = frags.next().expect("at least one fragment").clone();
    for f in frags {
        let extra = f.parts().to_vec();
        if let Some(Value::Array(parts)) = out
            .value
            .get_mut("message")
            .and_then(|m| m.get_mut("parts"))
        {
            parts.extend(extra);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(uuid: &str, parent: Option<&str>, kind: &str) -> String {
        serde_json::json!({"uuid": uuid, "parentUuid": parent, "sessionId": "s", "type": kind, "cwd": "/w"})
            .to_string()
    }

    #[test]
    fn the_chain_is_the_walk_from_the_last_record() {
        let lines = [
            rec("a", None, "user"),
            rec("b", Some("a"), "assistant"),
            rec("c", Some("b"), "user"),
            rec("d", Some("a"), "user"),
            rec("e", Some("d"), "assistant"),
        ];
        let d = Diagnostics::new();
        let t = parse(
            format!("{}\n", lines.join("\n")).as_bytes(),
            Path::new("f"),
            &d,
        );
        let c = t.chain();
        let ids: Vec<&str> = c.records.iter().map(Record::uuid).collect();
        assert_eq!(ids, ["a", "d", "e"]);
        assert_eq!(c.off_chain, 2);
        assert!(c.gap.is_none());
        assert!(d.is_empty());
    }

    #[test]
    fn glued_records_are_recovered_and_gaps_found() {
        let cut = &rec("b", Some("a"), "assistant")[..30];
        let text = format!(
            "{}\n{}{}\n{}\n",
            rec("a", None, "user"),
            cut,
            rec("c", Some("b"), "user"),
            rec("d", Some("c"), "assistant")
        );
        let d = Diagnostics::new();
        let t = parse(text.as_bytes(), Path::new("f"), &d);
        assert_eq!(t.records.len(), 3);
        let c = t.chain();
        let ids: Vec<&str> = c.records.iter().map(Record::uuid).collect();
        assert_eq!(ids, ["c", "d"]);
        assert_eq!(c.gap, Some((2, "b".to_owned())));
        assert_eq!(d.items()[0].line, Some(2));
    }

    #[test]
    fn titles_are_found_by_their_compact_bytes_only() {
        let title = |t: &str, compact: bool| {
            let v = serde_json::json!({"uuid": t, "parentUuid": null, "sessionId": "s", "type": "system",
                "subtype": "custom_title", "systemPayload": {"customTitle": t, "titleSource": "manual"}});
            if compact {
                v.to_string()
            } else {
                serde_json::to_string_pretty(&v).unwrap().replace('\n', "")
            }
        };
        let d = Diagnostics::new();
        let text = format!("{}\n{}\n", title("one", true), title("two", false));
        let t = parse(text.as_bytes(), Path::new("f"), &d);
        assert_eq!(t.title.as_deref(), Some("one"));
    }
}
