//! A transcript file as records, and the conversation tree its rows form.
//!
//! Claude Code appends one JSON object per line. Conversational rows (`user`, `assistant`,
//! `system`, `attachment`, `progress`) carry a `uuid` and a `parentUuid` and form a tree:
//! editing a prompt, `/rewind` and retries start new branches, and compaction starts a new root
//! that points back through `logicalParentUuid`. What a session *is* is the chain from the
//! newest leaf back to the first prompt; everything else is history kept in the native file.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::kit::report::Diagnostics;

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

/// Parses a transcript held in memory. Lines that are not JSON objects (a truncated last line,
/// binary garbage) are reported with file and line and skipped; blank lines are ignored, as
/// Claude Code itself does. Readers of real stores use [`Indexer`], which keeps only what the
/// tree needs; this is the same parse, keeping every record whole.
#[cfg(test)]
pub fn parse(bytes: &[u8], file: &Path, diagnostics: &Diagnostics) -> Vec<Record> {
    let mut out = Vec::new();
    let mut ix = Indexer::new(file, diagnostics, |r: &Record| out.push(r.clone()));
    ix.feed(bytes);
    ix.finish();
    out
}

/// The first pass over a transcript: every line parsed once, handed whole to a callback, and
/// kept only as a *skeleton* (the few small fields the tree, the leaf and the session facts
/// need) plus where the line is in the file. The second pass ([`Lines`]) reads the lines the
/// replay needs again, one at a time, so a transcript full of base64 images is never held in
/// memory as parsed JSON.
pub struct Indexer<'d, F: FnMut(&Record)> {
    file: PathBuf,
    diagnostics: &'d Diagnostics,
    on_record: F,
    pending: Vec<u8>,
    /// Offset of `pending`'s first byte in the file.
    pending_at: u64,
    line: u64,
    index: Index,
}

impl<F: FnMut(&Record)> std::fmt::Debug for Indexer<'_, F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Indexer")
            .field("file", &self.file)
            .field("line", &self.line)
            .finish_non_exhaustive()
    }
}

/// What the first pass keeps.
#[derive(Debug, Default)]
pub struct Index {
    /// One skeleton per record, in file order (see [`skeleton`]).
    pub records: Vec<Record>,
    /// `(offset, length)` of each record's line in the file, without its `\n`.
    pub spans: Vec<(u64, usize)>,
}

/// Keys of a record the tree, the leaf, the chain and the session facts read.
const SKELETON_KEYS: &[&str] = &[
    "type",
    "subtype",
    "uuid",
    "parentUuid",
    "logicalParentUuid",
    "timestamp",
    "isMeta",
    "isSidechain",
    "cwd",
    "relocatedCwd",
    "version",
    "gitBranch",
    "leafUuid",
    "explicit",
];

/// The small part of a record: [`SKELETON_KEYS`], `snipMetadata.removedUuids`,
/// `compactMetadata.preservedSegment`, `message.id`, and the `type` of each content block.
pub fn skeleton(v: &Value) -> Value {
    let mut out = serde_json::Map::new();
    for k in SKELETON_KEYS {
        if let Some(x) = v.get(*k) {
            out.insert((*k).to_owned(), x.clone());
        }
    }
    if let Some(x) = v.pointer("/snipMetadata/removedUuids") {
        out.insert(
            "snipMetadata".into(),
            serde_json::json!({ "removedUuids": x }),
        );
    }
    if let Some(x) = v.pointer("/compactMetadata/preservedSegment") {
        out.insert(
            "compactMetadata".into(),
            serde_json::json!({ "preservedSegment": x }),
        );
    }
    if let Some(m) = v.get("message").and_then(Value::as_object) {
        let mut msg = serde_json::Map::new();
        if let Some(id) = m.get("id") {
            msg.insert("id".into(), id.clone());
        }
        if let Some(blocks) = m.get("content").and_then(Value::as_array) {
            let types = blocks
                .iter()
                .map(|b| match b.get("type") {
                    Some(t) => serde_json::json!({ "type": t }),
                    None => Value::Object(serde_json::Map::new()),
                })
                .collect();
            msg.insert("content".into(), Value::Array(types));
        }
        out.insert("message".into(), Value::Object(msg));
    }
    Value::Object(out)
}

impl<'d, F: FnMut(&Record)> Indexer<'d, F> {
    pub fn new(file: &Path, diagnostics: &'d Diagnostics, on_record: F) -> Self {
        Indexer {
            file: file.to_path_buf(),
            diagnostics,
            on_record,
            pending: Vec::new(),
            pending_at: 0,
            line: 0,
            index: Index::default(),
        }
    }

    /// The next bytes of the file.
    pub fn feed(&mut self, mut chunk: &[u8]) {
        while let Some(nl) = chunk.iter().position(|b| *b == b'\n') {
            let at = self.pending_at;
            let len = if self.pending.is_empty() {
                self.line(&chunk[..nl], at, false);
                nl
            } else {
                self.pending.extend_from_slice(&chunk[..nl]);
                let raw = std::mem::take(&mut self.pending);
                self.line(&raw, at, false);
                raw.len()
            };
            self.pending_at = at + len as u64 + 1;
            chunk = &chunk[nl + 1..];
        }
        self.pending.extend_from_slice(chunk);
    }

    /// The end of the file: a last line without `\n` is parsed too.
    pub fn finish(mut self) -> Index {
        if !self.pending.is_empty() {
            let raw = std::mem::take(&mut self.pending);
            self.line(&raw, self.pending_at, true);
        }
        self.index
    }

    fn line(&mut self, raw: &[u8], at: u64, unterminated: bool) {
        self.line += 1;
        let line = self.line;
        let file = self.file.as_path();
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        match serde_json::from_slice::<Value>(raw) {
            Ok(v @ Value::Object(_)) => {
                let r = Record { line, value: v };
                (self.on_record)(&r);
                self.index.records.push(Record {
                    line,
                    value: skeleton(&r.value),
                });
                self.index.spans.push((at, raw.len()));
            }
            Ok(_) => self.diagnostics.damaged(
                file,
                Some(line),
                "a line that is a JSON value but not an object; skipped",
            ),
            Err(e) if unterminated && e.is_eof() => self.diagnostics.damaged(
                file,
                Some(line),
                "the last line is cut off (the file ends mid-record); skipped",
            ),
            Err(e) => {
                // serde's position is inside the line; the line number is what matters.
                let why = e.to_string();
                let why = why.split(" at line ").next().unwrap_or(&why).to_owned();
                self.diagnostics.damaged(
                    file,
                    Some(line),
                    format!("a line that is not JSON ({why}); skipped"),
                );
            }
        }
    }
}

/// The second pass: records read back whole, one at a time, from where the first pass found
/// them. Claude Code only appends to a transcript, so the offsets stay good while it runs; a
/// line that no longer parses to the record the first pass saw is reported and skipped.
pub struct Lines<'d> {
    file: PathBuf,
    reader: Box<dyn ReadAt + 'd>,
    diagnostics: &'d Diagnostics,
}

impl std::fmt::Debug for Lines<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lines")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

/// Something lines can be read back from by offset.
pub trait ReadAt {
    fn read_at(&mut self, at: u64, buf: &mut [u8]) -> std::io::Result<()>;
}

impl<R: ReadAt + ?Sized> ReadAt for &mut R {
    fn read_at(&mut self, at: u64, buf: &mut [u8]) -> std::io::Result<()> {
        (**self).read_at(at, buf)
    }
}

impl ReadAt for std::fs::File {
    fn read_at(&mut self, at: u64, buf: &mut [u8]) -> std::io::Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        self.seek(SeekFrom::Start(at))?;
        self.read_exact(buf)
    }
}

impl ReadAt for &[u8] {
    fn read_at(&mut self, at: u64, buf: &mut [u8]) -> std::io::Result<()> {
        let at = usize::try_from(at).map_err(std::io::Error::other)?;
        let src = self
            .get(at..at + buf.len())
            .ok_or_else(|| std::io::Error::from(std::io::ErrorKind::UnexpectedEof))?;
        buf.copy_from_slice(src);
        Ok(())
    }
}

impl<'d> Lines<'d> {
    pub fn new(file: &Path, reader: impl ReadAt + 'd, diagnostics: &'d Diagnostics) -> Self {
        Lines {
            file: file.to_path_buf(),
            reader: Box::new(reader),
            diagnostics,
        }
    }

    /// Record `i` of `index`, whole; `None` (reported) when its line cannot be read back.
    pub fn load(&mut self, index: &Index, i: usize) -> Option<Record> {
        let skel = &index.records[i];
        let (at, len) = index.spans[i];
        let mut buf = vec![0; len];
        let why = match self.reader.read_at(at, &mut buf) {
            Err(e) => format!("the line could not be read again ({e}); skipped"),
            Ok(()) => match serde_json::from_slice::<Value>(&buf) {
                Ok(v @ Value::Object(_)) if skeleton(&v) == skel.value => {
                    return Some(Record {
                        line: skel.line,
                        value: v,
                    });
                }
                _ => "the line changed while the transcript was read; skipped".to_owned(),
            },
        };
        self.diagnostics.damaged(&self.file, Some(skel.line), why);
        None
    }
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
    fn the_first_pass_keeps_skeletons_and_the_second_reads_records_back_whole() {
        let bytes: &[u8] = b"{\"type\":\"user\",\"uuid\":\"a\",\"parentUuid\":null,\"message\":{\"content\":[{\"type\":\"image\",\"source\":{\"data\":\"AAAA\"}}]}}\r\n\ngarbage\n{\"type\":\"assistant\",\"uuid\":\"b\",\"parentUuid\":\"a\",\"message\":{\"id\":\"msg_1\",\"content\":[{\"type\":\"text\",\"text\":\"long\"}]}}\n{\"type\":\"x\"";
        // Fed a byte at a time, the index is the same as fed whole.
        let d = Diagnostics::new();
        let mut seen = Vec::new();
        let mut ix = Indexer::new(Path::new("t.jsonl"), &d, |r: &Record| seen.push(r.clone()));
        for b in bytes {
            ix.feed(std::slice::from_ref(b));
        }
        let index = ix.finish();
        assert_eq!(
            seen,
            parse(bytes, Path::new("t.jsonl"), &Diagnostics::new())
        );
        assert_eq!(
            d.items().iter().map(|i| i.line).collect::<Vec<_>>(),
            vec![Some(3), Some(5)]
        );
        // Skeletons keep what the tree needs and drop the bodies.
        assert_eq!(
            index.records[0].value,
            json!({"type": "user", "uuid": "a", "parentUuid": null, "message": {"content": [{"type": "image"}]}})
        );
        assert_eq!(index.records[1].message_id(), Some("msg_1"));
        // The second pass gives the records back whole, one at a time.
        let mut lines = Lines::new(Path::new("t.jsonl"), bytes, &d);
        for (i, r) in seen.iter().enumerate() {
            assert_eq!(lines.load(&index, i).as_ref(), Some(r));
        }
        // A line that changed in between is reported and left out.
        let mut changed = bytes.to_vec();
        changed[23] = b'z';
        let d2 = Diagnostics::new();
        let mut lines = Lines::new(Path::new("t.jsonl"), &changed[..], &d2);
        assert_eq!(lines.load(&index, 0), None);
        assert!(
            d2.items()[0].message.contains("changed"),
            "{}",
            d2.items()[0]
        );
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
