//! A transcript file as records, and the conversation tree its rows form.
//!
//! Claude Code appends one JSON object per line. Conversational rows (`user`, `assistant`,
//! `system`, `attachment`, `progress`) carry a `uuid` and a `parentUuid` and form a tree:
//! editing a prompt, `/rewind` and retries start new branches, and compaction starts a new root
//! that points back through `logicalParentUuid`. What a session *is* is the chain from the
//! newest leaf back to the first prompt; everything else is history kept in the native file.

use std::collections::{HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use crate::report::Diagnostics;

/// One parsed line.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// 1-based line number in the file.
    pub line: u64,
    pub value: Value,
}

impl Record {
    pub fn kind(&self) -> &str {
        str_at(&self.value, "type").unwrap_or("")
    }

    pub fn uuid(&self) -> Option<&str> {
        str_at(&self.value, "uuid")
    }

    pub fn parent_uuid(&self) -> Option<&str> {
        str_at(&self.value, "parentUuid")
    }

    pub fn timestamp(&self) -> &str {
        str_at(&self.value, "timestamp").unwrap_or("")
    }

    pub fn flag(&self, key: &str) -> bool {
        self.value.get(key).and_then(Value::as_bool) == Some(true)
    }

    /// Whether this is a row of the conversation tree.
    pub fn is_row(&self) -> bool {
        matches!(
            self.kind(),
            "user" | "assistant" | "system" | "attachment" | "progress"
        ) && self.uuid().is_some()
    }

    /// `message.id` of an assistant row: the API response it belongs to.
    pub fn message_id(&self) -> Option<&str> {
        if self.kind() != "assistant" {
            return None;
        }
        self.value.pointer("/message/id").and_then(Value::as_str)
    }

    /// `message.content` as blocks: a string content is one text block.
    pub fn content(&self) -> Option<&Value> {
        self.value.pointer("/message/content")
    }

    /// Whether a user row carries tool results.
    pub fn has_tool_result(&self) -> bool {
        self.content()
            .and_then(Value::as_array)
            .is_some_and(|blocks| {
                blocks
                    .iter()
                    .any(|b| str_at(b, "type") == Some("tool_result"))
            })
    }
}

pub fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Parses a transcript. Lines that are not JSON objects (a truncated last line, binary
/// garbage) are reported with file and line and skipped; blank lines are ignored, as Claude
/// Code itself does.
pub fn parse(bytes: &[u8], file: &Path, diagnostics: &Diagnostics) -> Vec<Record> {
    let mut out = Vec::new();
    let ends_with_newline = bytes.ends_with(b"\n");
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let last = lines.len();
    for (i, raw) in lines.into_iter().enumerate() {
        let line = i as u64 + 1;
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match serde_json::from_slice::<Value>(raw) {
            Ok(v @ Value::Object(_)) => out.push(Record { line, value: v }),
            Ok(_) => diagnostics.skipped(
                file,
                Some(line),
                "a line that is a JSON value but not an object; skipped",
            ),
            Err(e) if i + 1 == last && !ends_with_newline && e.is_eof() => diagnostics.skipped(
                file,
                Some(line),
                "the last line is cut off (the file ends mid-record); skipped",
            ),
            Err(e) => {
                // serde's position is inside the line; the line number is what matters.
                let why = e.to_string();
                let why = why.split(" at line ").next().unwrap_or(&why).to_owned();
                diagnostics.skipped(
                    file,
                    Some(line),
                    format!("a line that is not JSON ({why}); skipped"),
                );
            }
        }
    }
    out
}

/// The conversation tree of one transcript.
#[derive(Debug)]
pub struct Tree<'a> {
    records: &'a [Record],
    /// uuid → index of the record that holds it (a later duplicate wins).
    by_uuid: HashMap<&'a str, usize>,
    /// Effective parent of each row (after snips and partial-compaction relinks).
    parent: HashMap<usize, usize>,
    children: HashMap<usize, Vec<usize>>,
    rows: Vec<usize>,
}

/// The chain a session replays, and what fell off it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Chain {
    /// Record indices, oldest first.
    pub rows: Vec<usize>,
    /// The live leaf's uuid.
    pub leaf: Option<String>,
    /// Rows not on the chain (edited prompts, rewinds, retries), in file order.
    pub abandoned: Vec<usize>,
    /// Rows whose parent is not in the file: the history before them is cut off.
    pub broken_at: Option<usize>,
}

impl<'a> Tree<'a> {
    /// Builds the tree. `sidechain` is true for a subagent transcript, whose rows are all
    /// sidechain rows.
    pub fn new(records: &'a [Record]) -> Tree<'a> {
        let mut by_uuid = HashMap::new();
        for (i, r) in records.iter().enumerate() {
            if r.is_row() {
                by_uuid.insert(r.uuid().expect("rows have uuids"), i);
            }
        }
        let mut rows: Vec<usize> = by_uuid.values().copied().collect();
        rows.sort_unstable();

        // Snipped rows disappear and their children hang off the snipped row's parent.
        let removed: HashSet<&str> = rows
            .iter()
            .filter_map(|&i| records[i].value.pointer("/snipMetadata/removedUuids"))
            .filter_map(Value::as_array)
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        rows.retain(|&i| !removed.contains(records[i].uuid().unwrap_or("")));

        // Partial compaction: the preserved segment's head goes under the anchor, the anchor's
        // other children under the segment's tail.
        let mut relink: HashMap<&str, &str> = HashMap::new();
        for &i in &rows {
            let r = &records[i];
            if let Some(seg) = r.value.pointer("/compactMetadata/preservedSegment") {
                let (Some(head), Some(anchor), Some(tail)) = (
                    str_at(seg, "headUuid"),
                    str_at(seg, "anchorUuid"),
                    str_at(seg, "tailUuid"),
                ) else {
                    continue;
                };
                for &j in &rows {
                    let rj = &records[j];
                    let u = rj.uuid().unwrap_or("");
                    if rj.parent_uuid() == Some(anchor) && u != head {
                        relink.insert(u, tail);
                    }
                }
                relink.insert(head, anchor);
            }
        }

        let mut parent = HashMap::new();
        let mut children: HashMap<usize, Vec<usize>> = HashMap::new();
        for &i in &rows {
            let r = &records[i];
            let mut p = relink
                .get(r.uuid().unwrap_or(""))
                .copied()
                .or_else(|| r.parent_uuid());
            let mut hops = 0;
            while let Some(pu) = p {
                if removed.contains(pu) && hops < records.len() {
                    hops += 1;
                    p = by_uuid.get(pu).and_then(|&j| records[j].parent_uuid());
                    continue;
                }
                break;
            }
            if let Some(&pi) = p.and_then(|pu| by_uuid.get(pu)) {
                parent.insert(i, pi);
                children.entry(pi).or_default().push(i);
            }
        }
        Tree {
            records,
            by_uuid,
            parent,
            children,
            rows,
        }
    }

    pub fn index_of(&self, uuid: &str) -> Option<usize> {
        self.by_uuid.get(uuid).copied()
    }

    /// The live leaf: the row named by the last `last-prompt` checkpoint, else the newest
    /// childless row that is not injected (`isMeta`) and, outside subagent transcripts, not a
    /// sidechain row (ties: later in the file).
    pub fn leaf(&self, subagent: bool) -> Option<usize> {
        let checkpoint = self
            .records
            .iter()
            .rev()
            .find(|r| r.kind() == "last-prompt" && r.value.get("leafUuid").is_some());
        if let Some(cp) = checkpoint {
            match cp.value.get("leafUuid") {
                Some(Value::String(u)) => {
                    if let Some(i) = self.index_of(u).filter(|i| self.rows.contains(i)) {
                        return Some(i);
                    }
                }
                Some(Value::Null) if cp.flag("explicit") => return None,
                _ => {}
            }
        }
        self.rows
            .iter()
            .copied()
            .filter(|i| !self.children.contains_key(i))
            .filter(|&i| {
                let r = &self.records[i];
                !r.flag("isMeta") && (subagent || !r.flag("isSidechain"))
            })
            .max_by(|&a, &b| {
                let (ra, rb) = (&self.records[a], &self.records[b]);
                ra.timestamp().cmp(rb.timestamp()).then(a.cmp(&b))
            })
    }

    /// The logical chain ending at `leaf`: parents back to a root, crossing compaction
    /// boundaries through `logicalParentUuid`, with tool results of parallel tool calls (which
    /// hang off their own `tool_use` row, off the path) put back after their response.
    pub fn chain(&self, leaf: Option<usize>, subagent: bool) -> Chain {
        let mut chain = Chain::default();
        let Some(leaf) = leaf else {
            chain.abandoned = self.rows.clone();
            return chain;
        };
        chain.leaf = self.records[leaf].uuid().map(str::to_owned);
        let mut seen = HashSet::new();
        let mut cur = Some(leaf);
        let mut path = Vec::new();
        while let Some(i) = cur {
            if !seen.insert(i) {
                break;
            }
            path.push(i);
            let r = &self.records[i];
            cur = match self.parent.get(&i) {
                Some(&p) => Some(p),
                None => {
                    let logical = r
                        .value
                        .get("logicalParentUuid")
                        .and_then(Value::as_str)
                        .and_then(|u| self.index_of(u));
                    match (r.parent_uuid(), logical) {
                        (_, Some(l)) if r.parent_uuid().is_none() => Some(l),
                        (Some(_), _) => {
                            chain.broken_at = Some(i);
                            None
                        }
                        _ => None,
                    }
                }
            };
        }
        path.reverse();
        chain.rows = self.recover_parallel_results(path);
        let on: HashSet<usize> = chain.rows.iter().copied().collect();
        chain.abandoned = self
            .rows
            .iter()
            .copied()
            .filter(|i| !on.contains(i))
            .filter(|&i| subagent || !self.records[i].flag("isSidechain"))
            .collect();
        chain
    }

    fn recover_parallel_results(&self, path: Vec<usize>) -> Vec<usize> {
        let on: HashSet<usize> = path.iter().copied().collect();
        let mut by_message: HashMap<&str, Vec<usize>> = HashMap::new();
        for &i in &self.rows {
            if let Some(m) = self.records[i].message_id() {
                by_message.entry(m).or_default().push(i);
            }
        }
        // The last chain row of each response that has rows or results off the chain.
        let mut insert_after: HashMap<usize, Vec<usize>> = HashMap::new();
        let mut handled = HashSet::new();
        for &i in path.iter().rev() {
            let Some(m) = self.records[i].message_id() else {
                continue;
            };
            if !handled.insert(m) {
                continue;
            }
            let members = &by_message[m];
            let sort = |v: &mut Vec<usize>| {
                v.sort_by(|&a, &b| {
                    self.records[a]
                        .timestamp()
                        .cmp(self.records[b].timestamp())
                        .then(a.cmp(&b))
                })
            };
            let mut siblings: Vec<usize> = members
                .iter()
                .copied()
                .filter(|j| !on.contains(j))
                .collect();
            sort(&mut siblings);
            let mut results: Vec<usize> = members
                .iter()
                .filter_map(|m| self.children.get(m))
                .flatten()
                .copied()
                .filter(|j| !on.contains(j))
                .filter(|&j| self.records[j].kind() == "user" && self.records[j].has_tool_result())
                .collect();
            sort(&mut results);
            siblings.extend(results);
            if !siblings.is_empty() {
                insert_after.insert(i, siblings);
            }
        }
        let mut out = Vec::with_capacity(path.len());
        for i in path {
            out.push(i);
            if let Some(extra) = insert_after.remove(&i) {
                out.extend(extra);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(line: u64, v: Value) -> Record {
        Record { line, value: v }
    }

    fn row(line: u64, kind: &str, uuid: &str, parent: Option<&str>, ts: &str) -> Record {
        rec(
            line,
            json!({"type": kind, "uuid": uuid, "parentUuid": parent, "timestamp": ts}),
        )
    }

    #[test]
    fn damaged_lines_are_reported_with_their_line_and_skipped() {
        let d = Diagnostics::new();
        let bytes =
            b"{\"type\":\"a\"}\n\x00\x01 garbage\n\n[1]\n{\"type\":\"b\"}\n{\"type\":\"c\",\"x\":";
        let recs = parse(bytes, Path::new("t.jsonl"), &d);
        assert_eq!(recs.iter().map(|r| r.line).collect::<Vec<_>>(), vec![1, 5]);
        let lines: Vec<_> = d.items().iter().map(|i| i.line).collect();
        assert_eq!(lines, vec![Some(2), Some(4), Some(6)]);
        assert!(d.items()[2].message.contains("cut off"), "{}", d.items()[2]);
    }

    #[test]
    fn the_chain_follows_the_newest_leaf_and_crosses_compaction() {
        let recs = vec![
            row(1, "user", "a", None, "2026-01-01T00:00:01.000Z"),
            row(2, "assistant", "b", Some("a"), "2026-01-01T00:00:02.000Z"),
            // an abandoned edit of the next prompt
            row(3, "user", "x", Some("b"), "2026-01-01T00:00:03.000Z"),
            rec(
                4,
                json!({"type": "system", "subtype": "compact_boundary", "uuid": "c", "parentUuid": null, "logicalParentUuid": "b", "timestamp": "2026-01-01T00:00:04.000Z"}),
            ),
            row(5, "user", "d", Some("c"), "2026-01-01T00:00:05.000Z"),
        ];
        let t = Tree::new(&recs);
        let leaf = t.leaf(false);
        assert_eq!(leaf, Some(4));
        let chain = t.chain(leaf, false);
        assert_eq!(chain.rows, vec![0, 1, 3, 4]);
        assert_eq!(chain.abandoned, vec![2]);
    }

    #[test]
    fn a_last_prompt_checkpoint_names_the_leaf() {
        let recs = vec![
            row(1, "user", "a", None, "2026-01-01T00:00:01.000Z"),
            row(2, "assistant", "b", Some("a"), "2026-01-01T00:00:09.000Z"),
            row(3, "assistant", "c", Some("a"), "2026-01-01T00:00:02.000Z"),
            rec(4, json!({"type": "last-prompt", "leafUuid": "c"})),
        ];
        let t = Tree::new(&recs);
        assert_eq!(t.leaf(false), Some(2));
    }
}
