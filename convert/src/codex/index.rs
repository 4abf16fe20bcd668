//! `session_index.jsonl`: thread names, append-only, one `{"id","thread_name","updated_at"}`
//! per line. Codex reads it from the end, so the last line for an id names the thread; empty
//! names do not count (spec/harnesses/codex.md §8, §9.1).

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::time;
use crate::error::ConvertError;
use crate::kit::fsops::Writer;
use crate::kit::report::Diagnostics;

pub const FILE: &str = "session_index.jsonl";

/// One naming of a thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub at: Option<time::Nanos>,
}

/// Every naming of every thread, in file order.
#[derive(Debug, Default)]
pub struct SessionIndex {
    path: PathBuf,
    by_id: HashMap<String, Vec<Entry>>,
}

impl SessionIndex {
    /// Reads the index of `codex_home`; a missing file is an empty index. The file is read
    /// byte-wise: a damaged line (not UTF-8, not JSON, no id and name) is reported with its line
    /// and skipped, and an I/O error part-way keeps what was read before it.
    pub fn load(codex_home: &Path, diagnostics: &Diagnostics) -> Result<Self, ConvertError> {
        let path = codex_home.join(FILE);
        let mut index = SessionIndex {
            path: path.clone(),
            by_id: HashMap::new(),
        };
        // (In a dry run of a whole restore, as the restore's configuration would leave it.)
        let mut reader: Box<dyn BufRead> = match crate::kit::fsops::planned(&path) {
            Some(bytes) => Box::new(std::io::Cursor::new(bytes)),
            None => match crate::kit::source::open_regular(&path) {
                Ok(f) => Box::new(BufReader::new(f)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(index),
                Err(e) => return Err(ConvertError::io(&path)(e)),
            },
        };
        let mut buf = Vec::new();
        let mut n: u64 = 0;
        loop {
            buf.clear();
            n += 1;
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) => {
                    diagnostics.lost(
                        &path,
                        Some(n),
                        format!("cannot be read from here on ({e}); the rest is skipped"),
                    );
                    break;
                }
            }
            let Ok(line) = std::str::from_utf8(&buf) else {
                diagnostics.lost(&path, Some(n), "not UTF-8; skipped");
                continue;
            };
            if line.trim().is_empty() {
                continue;
            }
            let v: Value = match serde_json::from_str(line) {
                Ok(v) => v,
                Err(e) => {
                    diagnostics.lost(
                        &path,
                        Some(n),
                        format!(
                            "not JSON ({}); skipped",
                            crate::kit::report::why_line_is_not_json(&e)
                        ),
                    );
                    continue;
                }
            };
            let (Some(id), Some(name)) = (
                v.get("id").and_then(Value::as_str),
                v.get("thread_name").and_then(Value::as_str),
            ) else {
                diagnostics.lost(&path, Some(n), "no `id` and `thread_name`; skipped");
                continue;
            };
            if name.trim().is_empty() {
                continue;
            }
            index.by_id.entry(id.to_owned()).or_default().push(Entry {
                name: name.to_owned(),
                at: v
                    .get("updated_at")
                    .and_then(Value::as_str)
                    .and_then(time::parse),
            });
        }
        Ok(index)
    }

    /// The name Codex shows for `id`.
    pub fn name(&self, id: &str) -> Option<&str> {
        self.by_id.get(id)?.last().map(|e| e.name.as_str())
    }

    /// Every naming of `id`, oldest first.
    pub fn entries(&self, id: &str) -> &[Entry] {
        self.by_id.get(id).map(Vec::as_slice).unwrap_or_default()
    }

    /// Names `id` (appends a line), unless the index already names it so. The line is written
    /// in one append, as Codex writes its own. Its `updated_at` is `at`: when the state says
    /// the thread was named so, else its last activity; never the time of the import, so no
    /// line depends on when an import runs (spec/harnesses/codex.md §16.4), and an old
    /// conversation does not look renamed today.
    pub fn name_thread(
        &mut self,
        writer: &Writer,
        id: &str,
        name: &str,
        at: time::Nanos,
    ) -> Result<bool, ConvertError> {
        if self.name(id) == Some(name) || name.trim().is_empty() {
            return Ok(false);
        }
        // A naming the file has made later stays the thread's name: appended last, an older
        // one would take its place (an independent review).
        if self
            .entries(id)
            .last()
            .and_then(|e| e.at)
            .is_some_and(|newest| newest > at)
        {
            return Ok(false);
        }
        // A file whose last line lacks its newline (cut off) must not swallow ours.
        let needs_newline = crate::kit::fsops::read(&self.path)
            .map(|b| !b.is_empty() && !b.ends_with(b"\n"))
            .unwrap_or(false);
        let mut line = if needs_newline {
            "\n".to_owned()
        } else {
            String::new()
        };
        line += &json!({"id": id, "thread_name": name, "updated_at": time::format_nanos(at)})
            .to_string();
        line.push('\n');
        writer.append(&self.path, line.as_bytes())?;
        self.by_id.entry(id.to_owned()).or_default().push(Entry {
            name: name.to_owned(),
            at: Some(at),
        });
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A thread is named again only when the file does not name it so, and not over a later
    /// naming of its own.
    #[test]
    fn a_later_naming_in_the_file_is_not_named_over() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join(FILE),
            "{\"id\":\"a\",\"thread_name\":\"mine\",\"updated_at\":\"2026-11-21T14:00:00Z\"}\n",
        )
        .unwrap();
        let d = Diagnostics::new();
        let mut index = SessionIndex::load(home.path(), &d).unwrap();
        let w = Writer::new(false);
        let at = |t: &str| time::parse(t).unwrap();
        assert!(
            !index
                .name_thread(&w, "a", "older", at("2026-11-21T13:00:00Z"))
                .unwrap()
        );
        assert_eq!(index.name("a"), Some("mine"));
        assert!(
            index
                .name_thread(&w, "a", "newer", at("2026-11-21T15:00:00Z"))
                .unwrap()
        );
        assert_eq!(index.name("a"), Some("newer"));
        let again = SessionIndex::load(home.path(), &d).unwrap();
        assert_eq!(again.name("a"), Some("newer"));
        assert_eq!(again.entries("a").len(), 2);
    }

    #[test]
    fn a_line_that_is_not_utf8_is_reported_and_the_others_are_read() {
        let home = tempfile::tempdir().unwrap();
        let mut bytes = b"{\"id\":\"a\",\"thread_name\":\"\xff\"}\n".to_vec();
        bytes.extend_from_slice(b"{\"id\":\"b\",\"thread_name\":\"Bee\"}\n");
        std::fs::write(home.path().join(FILE), bytes).unwrap();
        let d = Diagnostics::new();
        let index = SessionIndex::load(home.path(), &d).unwrap();
        assert_eq!(index.name("a"), None);
        assert_eq!(index.name("b"), Some("Bee"));
        let items = d.items();
        assert_eq!(items.len(), 1, "{items:?}");
        assert_eq!(items[0].line, Some(1));
        assert_eq!(items[0].file(), Some(home.path().join(FILE).as_path()));
        assert!(items[0].message.contains("not UTF-8"), "{}", items[0]);
    }
}
