//! Session update streams: JSONL of ACP `session/update` notification params.
//!
//! Each line of a session's `updates` blob is one `{"sessionId": ..., "update": {...}}` object in
//! compact form (no whitespace outside strings) followed by `\n`. The JSON is kept as written,
//! never re-serialised through typed ACP structs, which drop unknown fields and normalise
//! defaults; compacting only removes insignificant whitespace, so every token survives byte for
//! byte.

use std::borrow::Cow;
use std::io::{self, BufRead, BufReader, Read, Write};

use serde::Serialize;

use crate::blob::{BlobError, BlobSink, BlobSource, BlobWrite};
use crate::digest::Descriptor;
use crate::name::SessionId;

/// Why an update line was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct UpdateError(pub String);

/// Removes whitespace outside JSON strings, keeping every other byte as it is.
///
/// Works on bytes: `"`, `\\` and JSON whitespace are ASCII, and no byte of a multi-byte UTF-8
/// sequence is ASCII, so removing them never splits a character.
pub fn compact(json: &str) -> String {
    let b = json.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let mut run = 0;
    let mut in_string = false;
    let mut escaped = false;
    for (i, &c) in b.iter().enumerate() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == b'\\' {
                escaped = true;
            } else if c == b'"' {
                in_string = false;
            }
        } else if c == b'"' {
            in_string = true;
        } else if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
            let o = out.get_or_insert_with(|| Vec::with_capacity(b.len()));
            o.extend_from_slice(&b[run..i]);
            run = i + 1;
        }
    }
    match out {
        None => json.to_owned(),
        Some(mut o) => {
            o.extend_from_slice(&b[run..]);
            String::from_utf8(o).expect("only ASCII bytes were removed")
        }
    }
}

/// Checks that `line` is a `session/update` notification's params for `session`, and returns it
/// compacted.
///
/// Required: a JSON object with `sessionId` equal to the session's id and an `update` object
/// whose `sessionUpdate` is a string. The update kind itself is not restricted: ACP grows new
/// kinds, and a stream is carried whole.
pub fn check_line(line: &str, session: &SessionId) -> Result<String, UpdateError> {
    validate_line(line, session)?;
    Ok(compact(line))
}

/// Checks what [`check_line`] checks, without making the compact copy (for verifying).
pub fn validate_line(line: &str, session: &SessionId) -> Result<(), UpdateError> {
    // Only the two members that matter are decoded; serde_json still checks that the whole
    // line is valid JSON while it skips the rest, without building a tree of it.
    #[derive(serde::Deserialize)]
    struct Params<'a> {
        #[serde(rename = "sessionId", borrow)]
        session_id: Option<Cow<'a, str>>,
        #[serde(borrow)]
        update: Option<Head<'a>>,
    }
    #[derive(serde::Deserialize)]
    struct Head<'a> {
        #[serde(rename = "sessionUpdate", borrow)]
        kind: Option<Cow<'a, str>>,
    }
    let first = line.trim_start().as_bytes().first().copied();
    let params: Params<'_> = serde_json::from_str(line).map_err(|e| {
        if e.is_syntax() || e.is_eof() {
            UpdateError(format!("not JSON: {}", why_line_is_not_json(&e)))
        } else if first != Some(b'{') {
            UpdateError("not a JSON object".to_owned())
        } else {
            UpdateError(format!("`sessionId` or `update` has the wrong type: {e}"))
        }
    })?;
    if first != Some(b'{') {
        return Err(UpdateError("not a JSON object".to_owned()));
    }
    match params.session_id.as_deref() {
        Some(id) if id == session.as_str() => {}
        Some(id) => {
            return Err(UpdateError(format!(
                "sessionId {id:?} is not the session's id {:?}",
                session.as_str()
            )));
        }
        None => return Err(UpdateError("no string `sessionId`".to_owned())),
    }
    if params.update.and_then(|u| u.kind).is_none() {
        return Err(UpdateError(
            "no `update` object with a string `sessionUpdate`".to_owned(),
        ));
    }
    Ok(())
}

/// Writes a session's update stream into a blob, one compact line per update.
pub struct UpdateWriter<'a> {
    /// Buffered: serde writes a line in many small pieces (each quote, key and escape), and
    /// each piece would otherwise be a dynamic call into the sink and its hasher.
    out: io::BufWriter<Box<dyn BlobWrite + 'a>>,
    lines: u64,
}

/// How much of a stream [`UpdateWriter`] gathers before handing it to the sink.
const BUFFER: usize = 64 * 1024;

impl std::fmt::Debug for UpdateWriter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpdateWriter")
            .field("lines", &self.lines)
            .finish_non_exhaustive()
    }
}

impl<'a> UpdateWriter<'a> {
    pub fn new(sink: &'a dyn BlobSink) -> Result<Self, BlobError> {
        Ok(UpdateWriter {
            out: io::BufWriter::with_capacity(BUFFER, sink.begin()?),
            lines: 0,
        })
    }

    /// A writer for a stream derived from the blob `base` (the session's native transcript),
    /// when there is one: see [`BlobSink::begin_derived`].
    pub fn derived(sink: &'a dyn BlobSink, base: Option<Descriptor>) -> Result<Self, BlobError> {
        let out = match base {
            Some(b) => sink.begin_derived(&b)?,
            None => sink.begin()?,
        };
        Ok(UpdateWriter {
            out: io::BufWriter::with_capacity(BUFFER, out),
            lines: 0,
        })
    }

    /// Appends one update, serialised compactly.
    pub fn push<T: Serialize + ?Sized>(&mut self, update: &T) -> Result<(), BlobError> {
        serde_json::to_writer(&mut self.out, update).map_err(io::Error::from)?;
        self.out.write_all(b"\n")?;
        self.lines += 1;
        Ok(())
    }

    /// Appends one line that `write` writes: compact JSON, without its `\n`. For writers
    /// that put a line together from pieces (parts of a transcript carried as they are)
    /// rather than serialise one value.
    pub fn push_with(
        &mut self,
        write: impl FnOnce(&mut dyn Write) -> io::Result<()>,
    ) -> Result<(), BlobError> {
        write(&mut self.out)?;
        self.out.write_all(b"\n")?;
        self.lines += 1;
        Ok(())
    }

    /// Appends one line that is already compact JSON (see [`check_line`]).
    pub fn push_raw(&mut self, line: &str) -> Result<(), BlobError> {
        debug_assert!(!line.contains('\n'));
        self.out.write_all(line.as_bytes())?;
        self.out.write_all(b"\n")?;
        self.lines += 1;
        Ok(())
    }

    /// Lines written so far.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    pub fn finish(self) -> Result<Descriptor, BlobError> {
        self.out
            .into_inner()
            .map_err(io::IntoInnerError::into_error)?
            .finish()
    }
}

/// Appends the next line (with its `\n`, if any) to `buf` and returns its length in bytes;
/// 0 at the end. A line longer than `max` bytes is an `InvalidData` error, found after reading
/// at most `max + 1` bytes of it.
pub fn read_line_bounded(
    reader: &mut impl BufRead,
    buf: &mut Vec<u8>,
    max: usize,
) -> io::Result<usize> {
    let limit = max as u64 + 1;
    let n = reader.take(limit).read_until(b'\n', buf)?;
    if n as u64 == limit && buf.last() != Some(&b'\n') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the line is longer than {max} bytes"),
        ));
    }
    Ok(n)
}

/// Reads a session's update stream line by line, without holding more than one line.
pub struct UpdateLines<'a> {
    reader: BufReader<Box<dyn Read + Send + 'a>>,
    buf: Vec<u8>,
    line: u64,
    max_line: usize,
}

/// The longest update line read. A line is one notification; the largest real ones carry a
/// base64 image or a long tool output, far below this. Without a bound, a small bundle whose
/// Deflate stream expands to one multi-gigabyte line would make a reader allocate all of it.
pub const MAX_LINE: usize = 256 << 20;

impl std::fmt::Debug for UpdateLines<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UpdateLines")
            .field("line", &self.line)
            .finish_non_exhaustive()
    }
}

impl<'a> UpdateLines<'a> {
    pub fn open(blobs: &'a dyn BlobSource, updates: &Descriptor) -> Result<Self, BlobError> {
        Ok(Self::from_reader(blobs.open(updates)?))
    }

    /// Lines of an update stream already open (and checked by whoever opened it).
    pub fn from_reader(reader: Box<dyn Read + Send + 'a>) -> Self {
        UpdateLines {
            reader: BufReader::with_capacity(128 * 1024, reader),
            buf: Vec::new(),
            line: 0,
            max_line: MAX_LINE,
        }
    }

    /// The next line without its newline, or `None` at the end. Empty lines are skipped.
    /// Errors carry the 1-based line number: a line that is not UTF-8, or longer than
    /// [`MAX_LINE`].
    pub fn next_line(&mut self) -> Result<Option<(u64, &str)>, (u64, io::Error)> {
        let len = loop {
            self.buf.clear();
            self.line += 1;
            let n = read_line_bounded(&mut self.reader, &mut self.buf, self.max_line)
                .map_err(|e| (self.line, e))?;
            if n == 0 {
                return Ok(None);
            }
            let mut len = self.buf.len();
            while len > 0 && matches!(self.buf[len - 1], b'\n' | b'\r') {
                len -= 1;
            }
            if !self.buf[..len].iter().all(u8::is_ascii_whitespace) {
                break len;
            }
        };
        match std::str::from_utf8(&self.buf[..len]) {
            Ok(line) => Ok(Some((self.line, line))),
            Err(e) => Err((
                self.line,
                io::Error::new(io::ErrorKind::InvalidData, format!("not UTF-8: {e}")),
            )),
        }
    }
}

/// Why one line of a JSON Lines file is not JSON, for a finding that names the line itself:
/// serde's "key must be a string at line 1 column 2" counts lines within the record, which
/// beside the file's own line number read as two places (new-user trial helper-126, 7). The
/// column is kept: in a long line it finds the place.
pub fn why_line_is_not_json(e: &serde_json::Error) -> String {
    let said = e.to_string();
    let what = said
        .rsplit_once(" at line ")
        .map_or(said.as_str(), |(w, _)| w);
    match (e.line(), e.column()) {
        (1, c) if c > 0 => format!("{what} at column {c}"),
        (0, _) => what.to_owned(),
        (l, c) => format!("{what} at its line {l}, column {c}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::MemoryStore;

    fn sid(s: &str) -> SessionId {
        SessionId::new(s).unwrap()
    }

    #[test]
    fn compact_keeps_strings_byte_for_byte() {
        let pretty = "{\n  \"a\" : \"x  y\\\" \\n z\",\n  \"b\": [1, 2.50, -0]\n}";
        assert_eq!(compact(pretty), r#"{"a":"x  y\" \n z","b":[1,2.50,-0]}"#);
    }

    #[test]
    fn lines_must_be_updates_of_their_session() {
        let ok = r#"{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"hi"}}}"#;
        assert_eq!(check_line(ok, &sid("s1")).unwrap(), ok);
        assert!(
            check_line(ok, &sid("s2"))
                .unwrap_err()
                .0
                .contains("not the session's id")
        );
        assert!(check_line("{\"sessionId\":\"s1\"}", &sid("s1")).is_err());
        assert!(check_line("[1]", &sid("s1")).is_err());
        assert!(
            check_line("{\"sessionId\":", &sid("s1"))
                .unwrap_err()
                .0
                .starts_with("not JSON")
        );
    }

    #[test]
    fn an_overlong_line_is_an_error_not_an_allocation() {
        let store = MemoryStore::new();
        let d = crate::blob::BlobSink::put(&store, b"{\"a\":1}\n0123456789abcdef\n").unwrap();
        let mut r = UpdateLines::open(&store, &d).unwrap();
        r.max_line = 10;
        assert_eq!(r.next_line().unwrap().unwrap().1, "{\"a\":1}");
        let (n, e) = r.next_line().unwrap_err();
        assert_eq!(n, 2);
        assert!(e.to_string().contains("longer than 10 bytes"), "{e}");
    }

    #[test]
    fn writer_and_reader_round_trip() {
        let store = MemoryStore::new();
        let mut w = UpdateWriter::new(&store).unwrap();
        w.push(&serde_json::json!({"sessionId": "s", "update": {"sessionUpdate": "plan", "entries": []}}))
            .unwrap();
        w.push_raw(
            r#"{"sessionId":"s","update":{"sessionUpdate":"usage_update","used":1,"size":2}}"#,
        )
        .unwrap();
        let d = w.finish().unwrap();
        let mut r = UpdateLines::open(&store, &d).unwrap();
        let mut seen = Vec::new();
        while let Some((n, line)) = r.next_line().unwrap() {
            seen.push((n, line.to_owned()));
        }
        assert_eq!(seen.len(), 2);
        assert_eq!(seen[1].0, 2);
        assert!(
            seen[0]
                .1
                .starts_with(r#"{"sessionId":"s","update":{"sessionUpdate":"plan""#)
        );
    }
}
