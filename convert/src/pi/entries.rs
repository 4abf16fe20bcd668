//! Pi's session file (format v3): a header line, then one JSON entry per line forming a tree
//! by `id`/`parentId` (spec/harnesses/pi.md §3, §4).
//!
//! A file is read in two passes so a long one is never held whole: [`Indexer`] keeps a
//! skeleton of every line (where it is, its type, id and parent), [`Tree`] finds the current
//! branch from it the way Pi does (the walk from the **last entry in file order**), and the
//! replay then reads back only the branch's lines by offset ([`Lines`]).

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::kit::report::Diagnostics;

/// The first line of a session file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub id: String,
    pub cwd: String,
    pub timestamp: Option<String>,
    pub version: Option<u64>,
    pub parent_session: Option<String>,
}

impl Header {
    /// The header in `line`, when it is one: `{type:"session", id, cwd}` (what pi-acp's
    /// listing requires).
    pub fn parse(line: &[u8]) -> Option<Header> {
        let text = String::from_utf8_lossy(line);
        let v: Value = serde_json::from_str(text.trim_end()).ok()?;
        if v.get("type")?.as_str()? != "session" {
            return None;
        }
        let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
        Some(Header {
            id: s("id")?,
            cwd: s("cwd")?,
            timestamp: s("timestamp"),
            version: v.get("version").and_then(Value::as_u64),
            parent_session: s("parentSession"),
        })
    }
}

/// The skeleton of one line.
#[derive(Debug, Clone)]
pub struct Record {
    /// 1-based line number.
    pub line: u64,
    pub offset: u64,
    pub len: u64,
    pub kind: String,
    pub id: Option<String>,
    pub parent: Option<String>,
    /// The line is not UTF-8 and is read with U+FFFD in place of what is not.
    pub lossy: bool,
}

#[derive(Deserialize)]
struct Skeleton {
    #[serde(rename = "type")]
    kind: Option<String>,
    id: Option<String>,
    #[serde(rename = "parentId")]
    parent: Option<String>,
}

/// A file after the first pass.
#[derive(Debug, Default)]
pub struct Index {
    pub header: Option<Header>,
    /// Every entry line (not the header), in file order.
    pub records: Vec<Record>,
    /// Lines in all, whole or not.
    pub lines: u64,
}

/// The first pass: fed the file's bytes in order, keeps a skeleton of each line and reports
/// the lines that cannot be read.
pub struct Indexer<'a> {
    path: PathBuf,
    diagnostics: &'a Diagnostics,
    buf: Vec<u8>,
    offset: u64,
    index: Index,
}

impl<'a> Indexer<'a> {
    pub fn new(path: &Path, diagnostics: &'a Diagnostics) -> Self {
        Indexer {
            path: path.to_path_buf(),
            diagnostics,
            buf: Vec::new(),
            offset: 0,
            index: Index::default(),
        }
    }

    pub fn feed(&mut self, mut chunk: &[u8]) {
        while let Some(i) = memchr::memchr(b'\n', chunk) {
            self.buf.extend_from_slice(&chunk[..i]);
            self.line(true);
            chunk = &chunk[i + 1..];
        }
        self.buf.extend_from_slice(chunk);
    }

    pub fn finish(mut self) -> Index {
        if !self.buf.is_empty() {
            self.line(false);
        }
        self.index
    }

    fn line(&mut self, ended: bool) {
        let bytes = std::mem::take(&mut self.buf);
        let n = self.index.lines + 1;
        self.index.lines = n;
        let offset = self.offset;
        self.offset += bytes.len() as u64 + u64::from(ended);
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return;
        }
        let (text, lossy) = match std::str::from_utf8(&bytes) {
            Ok(t) => (std::borrow::Cow::Borrowed(t), false),
            Err(_) => (String::from_utf8_lossy(&bytes), true),
        };
        if n == 1 {
            match Header::parse(&bytes) {
                Some(h) => self.index.header = Some(h),
                // The survey saw a header, so the file was replaced since; nothing of it is
                // carried (its session is dropped, native file included).
                None => self.diagnostics.lost(
                    &self.path,
                    Some(1),
                    "not a Pi session (any more): the first line is not a session header; \
                     nothing of the file was carried",
                ),
            }
            return;
        }
        if self.index.header.is_none() {
            return;
        }
        let skel: Skeleton = match serde_json::from_str(&text) {
            Ok(s) => s,
            Err(e) => {
                let why = if ended {
                    format!(
                        "not a JSON entry ({}); skipped, as Pi skips it",
                        crate::kit::report::why_line_is_not_json(&e)
                    )
                } else {
                    // Whether the line is kept in the native file is the porcelain's to say
                    // (`store::resolve_damage`, as of every damaged record here): a read without
                    // native files keeps it nowhere.
                    format!(
                        "the last line is cut off ({e}), as by a crash while Pi wrote it; \
                         skipped, as Pi skips it"
                    )
                };
                self.diagnostics.damaged(&self.path, Some(n), why);
                return;
            }
        };
        if lossy {
            self.diagnostics.note(
                &self.path,
                Some(n),
                "bytes that are not UTF-8, read as U+FFFD as Pi reads them; the native file \
                 keeps them as they are",
            );
        }
        self.index.records.push(Record {
            line: n,
            offset,
            len: bytes.len() as u64,
            kind: skel.kind.unwrap_or_default(),
            id: skel.id,
            parent: skel.parent,
            lossy,
        });
    }
}

/// The current branch of a file's tree.
#[derive(Debug, Default)]
pub struct Branch {
    /// Indexes into the records, root first.
    pub path: Vec<usize>,
    /// The leaf's id.
    pub leaf: Option<String>,
    /// Entries with an id off the branch: abandoned branches (native only).
    pub abandoned: usize,
}

/// The current branch: the `parentId` walk from the last entry with an id. A parent that is
/// not in the file, or a loop, ends the walk as it ends Pi's (what is before it is not
/// replayed; reported).
pub fn branch(index: &Index, path: &Path, diagnostics: &Diagnostics) -> Branch {
    let records = &index.records;
    let mut by_id: HashMap<&str, usize> = HashMap::new();
    for (i, r) in records.iter().enumerate() {
        match &r.id {
            Some(id) => {
                // A later entry with the same id wins, as in Pi's index.
                by_id.insert(id.as_str(), i);
            }
            None => diagnostics.note(
                path,
                Some(r.line),
                format!(
                    "a {:?} entry without an id is not part of Pi's tree; kept in the native \
                     file only",
                    r.kind
                ),
            ),
        }
    }
    let Some(leaf) = records.iter().rposition(|r| r.id.is_some()) else {
        return Branch::default();
    };
    let mut seen = HashSet::new();
    let mut path_rev = Vec::new();
    let mut at = leaf;
    loop {
        if !seen.insert(at) {
            diagnostics.damaged(
                path,
                Some(records[at].line),
                "the parent chain loops here; what is before it is not replayed",
            );
            break;
        }
        path_rev.push(at);
        let Some(p) = &records[at].parent else { break };
        match by_id.get(p.as_str()) {
            Some(&i) => at = i,
            None => {
                diagnostics.damaged(
                    path,
                    Some(records[at].line),
                    format!(
                        "broken parent chain: parentId {p:?} is not in the file, so Pi shows \
                         nothing before this entry; the earlier entries are not replayed"
                    ),
                );
                break;
            }
        }
    }
    path_rev.reverse();
    let on: HashSet<usize> = path_rev.iter().copied().collect();
    let abandoned = records
        .iter()
        .enumerate()
        .filter(|(i, r)| r.id.is_some() && !on.contains(i))
        .count();
    Branch {
        leaf: records[leaf].id.clone(),
        path: path_rev,
        abandoned,
    }
}

/// The second pass: reads a record's line back from the file.
pub struct Lines<'a> {
    pub path: &'a Path,
    pub file: &'a mut File,
    pub diagnostics: &'a Diagnostics,
}

impl Lines<'_> {
    /// The entry on `r`'s line, `None` when it cannot be read again (reported).
    pub fn load(&mut self, r: &Record) -> Option<Value> {
        let mut buf = vec![0; usize::try_from(r.len).unwrap_or(0)];
        let read = self
            .file
            .seek(SeekFrom::Start(r.offset))
            .and_then(|_| self.file.read_exact(&mut buf));
        if let Err(e) = read {
            self.diagnostics.lost(
                self.path,
                Some(r.line),
                format!("cannot be read again ({e}); skipped"),
            );
            return None;
        }
        let parsed = if r.lossy {
            serde_json::from_str(&String::from_utf8_lossy(&buf))
        } else {
            serde_json::from_slice(&buf)
        };
        match parsed {
            Ok(v) => Some(v),
            Err(e) => {
                self.diagnostics.lost(
                    self.path,
                    Some(r.line),
                    format!("changed while it was read ({e}); skipped"),
                );
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index(text: &str, d: &Diagnostics) -> Index {
        let mut ix = Indexer::new(Path::new("s.jsonl"), d);
        for c in text.as_bytes().chunks(7) {
            ix.feed(c);
        }
        ix.finish()
    }

    #[test]
    fn a_file_without_a_header_is_reported_as_not_carried_at_all() {
        let d = Diagnostics::new();
        let ix = index("{\"type\":\"message\",\"id\":\"a\"}\n", &d);
        assert!(ix.header.is_none());
        let items = d.items();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].severity, crate::kit::report::Severity::Lost);
        assert!(!items[0].message.contains("kept"), "{}", items[0].message);
    }

    #[test]
    fn the_branch_is_the_walk_from_the_last_line() {
        let d = Diagnostics::new();
        let ix = index(
            "{\"type\":\"session\",\"id\":\"s\",\"cwd\":\"/w\"}\n\
             {\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n\
             {\"type\":\"message\",\"id\":\"b\",\"parentId\":\"a\"}\n\
             {\"type\":\"message\",\"id\":\"c\",\"parentId\":\"a\"}\n\
             {\"type\":\"message\",\"id\":\"d\",\"parentId\":\"c\"}\n{\"cut",
            &d,
        );
        assert_eq!(ix.header.as_ref().unwrap().id, "s");
        let b = branch(&ix, Path::new("s.jsonl"), &d);
        let ids: Vec<_> = b
            .path
            .iter()
            .map(|&i| ix.records[i].id.clone().unwrap())
            .collect();
        assert_eq!(ids, ["a", "c", "d"]);
        assert_eq!(b.abandoned, 1);
        let items = d.items();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].line, Some(6));
    }

    #[test]
    fn a_broken_chain_stops_where_pi_stops_and_is_named() {
        let d = Diagnostics::new();
        let ix = index(
            "{\"type\":\"session\",\"id\":\"s\",\"cwd\":\"/w\"}\n\
             {\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n\
             {\"type\":\"message\",\"id\":\"b\",\"parentId\":\"gone\"}\n\
             {\"type\":\"message\",\"id\":\"c\",\"parentId\":\"b\"}\n",
            &d,
        );
        let b = branch(&ix, Path::new("s.jsonl"), &d);
        assert_eq!(b.path.len(), 2);
        assert!(d.items()[0].message.contains("\"gone\""));
        assert_eq!(d.items()[0].line, Some(3));
    }

    #[test]
    fn a_file_without_a_header_is_not_read() {
        let d = Diagnostics::new();
        let ix = index(
            "{\"type\":\"message\",\"id\":\"a\",\"parentId\":null}\n",
            &d,
        );
        assert!(ix.header.is_none() && ix.records.is_empty());
        assert!(d.items()[0].message.contains("not a Pi session"));
    }
}
