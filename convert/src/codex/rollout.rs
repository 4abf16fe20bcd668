//! Rollout files: finding them, opening them (plain or zstd), and reading their lines in every
//! format Codex has written (spec/harnesses/codex.md §3, §5).
//!
//! Lines are normalised into [`Record`]s: the current envelope `{timestamp, type, payload}`
//! (legacy and paginated alike), the transitional `{timestamp, record_type, ...}` form, and the
//! early flat form (a bare meta first line, then bare response items and `record_type: state`
//! markers). Damage never stops a read: a line that is not JSON is reported with its file and
//! line and skipped, as Codex itself skips it.

use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::ids::is_uuid;
use super::zstd::Frames;
use crate::error::ConvertError;
use crate::kit::json_scan::reads_as_value;
use crate::kit::report::Diagnostics;
use crate::kit::source::SourceFile;

/// Rollouts of live threads, in date directories.
pub const SESSIONS_DIR: &str = "sessions";
/// Rollouts of archived threads, flat.
pub const ARCHIVED_DIR: &str = "archived_sessions";

/// One rollout file found in a Codex home.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RolloutFile {
    pub path: PathBuf,
    /// Path relative to `CODEX_HOME`, `/`-separated.
    pub rel: String,
    pub compressed: bool,
    pub archived: bool,
    /// The thread UUID at the end of the file name.
    pub name_id: Option<String>,
    /// The file as the survey saw it; reads take no more than that.
    pub source: Option<SourceFile>,
}

impl RolloutFile {
    /// The rollout's JSONL, decompressed if needed, as the survey saw it.
    pub fn open(&self) -> Result<Box<dyn BufRead + Send>, ConvertError> {
        match &self.source {
            Some(src) => {
                let file = src.open().map_err(ConvertError::io(&self.path))?;
                Ok(decoded(file, self.compressed))
            }
            None => open(&self.path),
        }
    }
}

/// The thread UUID of a rollout file name `rollout-<time>-<uuid>.jsonl[.zst]`. Any name
/// (non-ASCII included) is safe to ask about: the last 36 bytes are taken only when they are
/// whole characters.
pub fn id_from_name(name: &str) -> Option<String> {
    let stem = name
        .strip_suffix(".jsonl.zst")
        .or_else(|| name.strip_suffix(".jsonl"))?;
    if !stem.starts_with("rollout-") {
        return None;
    }
    let id = stem.get(stem.len().checked_sub(36)?..)?;
    is_uuid(id).then(|| id.to_owned())
}

fn is_rollout_name(name: &str) -> bool {
    name.starts_with("rollout-") && (name.ends_with(".jsonl") || name.ends_with(".jsonl.zst"))
}

/// Every rollout under `sessions/` and `archived_sessions/`, sorted by relative path. When a
/// plain file and its `.zst` sibling both exist, the plain one is the thread (Codex ignores the
/// sibling); the TypeScript-era `.json` rollouts are reported, not read.
pub fn discover(codex_home: &Path, diagnostics: &Diagnostics) -> Vec<RolloutFile> {
    let mut out = Vec::new();
    for (dir, archived) in [(SESSIONS_DIR, false), (ARCHIVED_DIR, true)] {
        let root = codex_home.join(dir);
        if !root.is_dir() {
            continue;
        }
        for entry in walkdir::WalkDir::new(&root)
            .follow_links(false)
            .min_depth(1)
        {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    let p = e.path().unwrap_or(&root).to_path_buf();
                    diagnostics.lost(&p, None, format!("cannot be read ({e}); skipped"));
                    continue;
                }
            };
            if entry.file_type().is_dir() {
                continue;
            }
            let rollout_named = entry
                .file_name()
                .as_encoded_bytes()
                .starts_with(b"rollout-");
            if !entry.file_type().is_file() {
                if rollout_named && !entry.path_is_symlink() {
                    diagnostics.lost(
                        entry.path(),
                        None,
                        "named like a rollout but not a regular file (a FIFO, socket or device); skipped",
                    );
                }
                continue;
            }
            let Some(name) = entry.file_name().to_str() else {
                if rollout_named {
                    diagnostics.lost(
                        entry.path(),
                        None,
                        "named like a rollout, but the name is not valid UTF-8 (Codex does not list it); skipped",
                    );
                }
                continue;
            };
            if name.starts_with("rollout-") && name.ends_with(".json") {
                diagnostics.lost(
                    entry.path(),
                    None,
                    "a rollout of the TypeScript Codex CLI (2025); this format is not read",
                );
                continue;
            }
            if !is_rollout_name(name) {
                continue;
            }
            // Codex lists a rollout by the thread UUID at the end of its name
            // (`parse_timestamp_uuid_from_filename`); a file without one is not a thread.
            let Some(name_id) = id_from_name(name) else {
                diagnostics.lost(
                    entry.path(),
                    None,
                    "named like a rollout, but the name does not end in a thread UUID (Codex does not list it); skipped",
                );
                continue;
            };
            let compressed = name.ends_with(".zst");
            if compressed && entry.path().with_extension("").is_file() {
                // `x.jsonl.zst` beside `x.jsonl`: Codex reads the plain one.
                continue;
            }
            let Ok(rel) = entry.path().strip_prefix(codex_home) else {
                continue;
            };
            let Some(rel) = rel
                .iter()
                .map(|c| c.to_str())
                .collect::<Option<Vec<&str>>>()
            else {
                diagnostics.lost(
                    entry.path(),
                    None,
                    "the path of this rollout is not valid UTF-8; skipped",
                );
                continue;
            };
            out.push(RolloutFile {
                path: entry.path().to_path_buf(),
                rel: rel.join("/"),
                compressed,
                archived,
                name_id: Some(name_id),
                source: None,
            });
        }
    }
    out.sort_by(|a, b| a.rel.cmp(&b.rel));
    out
}

/// A rollout's JSONL, decompressed if needed.
pub fn open(path: &Path) -> Result<Box<dyn BufRead + Send>, ConvertError> {
    let file = crate::kit::source::open_regular(path).map_err(ConvertError::io(path))?;
    Ok(decoded(file, path.extension().is_some_and(|e| e == "zst")))
}

fn decoded(file: impl Read + Send + 'static, compressed: bool) -> Box<dyn BufRead + Send> {
    let buffered = BufReader::with_capacity(64 * 1024, file);
    if compressed {
        Box::new(BufReader::with_capacity(64 * 1024, Frames::new(buffered)))
    } else {
        Box::new(buffered)
    }
}

/// The JSONL of rollout bytes, decompressed when `compressed`.
pub fn decode_bytes(bytes: &[u8], compressed: bool) -> io::Result<Vec<u8>> {
    if !compressed {
        return Ok(bytes.to_vec());
    }
    let mut out = Vec::new();
    Frames::new(bytes).read_to_end(&mut out)?;
    Ok(out)
}

/// What a line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    SessionMeta,
    TurnContext,
    ResponseItem,
    EventMsg,
    Compacted,
    /// A line type this reader does not map (`world_state`, `token_usage_record`, newer ones):
    /// kept verbatim under `_meta`.
    Other(String),
}

/// One rollout line, normalised.
#[derive(Debug, Clone)]
pub struct Record {
    /// 1-based line number in the (decompressed) file.
    pub line: u64,
    pub timestamp: Option<String>,
    pub kind: Kind,
    /// The line as written, for `_meta`.
    pub raw: Value,
    /// Where the payload is: in the envelope, `raw.payload` itself, not a copy of it (copying
    /// every line's payload was 3 % of a Codex pack's time).
    payload: Payload,
}

/// Where a [`Record`]'s payload is.
#[derive(Debug, Clone)]
enum Payload {
    /// `raw.payload` (the envelope).
    Member,
    /// The whole line (the early flat form).
    Whole,
    /// Built from the line (the transitional form: the line without `record_type` and
    /// `timestamp`).
    Built(Value),
}

impl Record {
    /// The line's item or event, whatever form the line has.
    pub fn payload(&self) -> &Value {
        match &self.payload {
            Payload::Member => &self.raw["payload"],
            Payload::Whole => &self.raw,
            Payload::Built(v) => v,
        }
    }

    /// `payload.type`, for response items and events.
    pub fn payload_type(&self) -> &str {
        self.payload()
            .get("type")
            .and_then(Value::as_str)
            .unwrap_or("")
    }
}

const RESPONSE_ITEM_TYPES: &[&str] = &[
    "message",
    "reasoning",
    "function_call",
    "function_call_output",
    "custom_tool_call",
    "custom_tool_call_output",
    "local_shell_call",
    "web_search_call",
    "image_generation_call",
    "tool_search_call",
    "tool_search_output",
    "ghost_snapshot",
    "compaction",
    "compaction_summary",
    "context_compaction",
];

fn kind_of(t: &str) -> Kind {
    match t {
        "session_meta" => Kind::SessionMeta,
        "turn_context" => Kind::TurnContext,
        "response_item" => Kind::ResponseItem,
        "event_msg" => Kind::EventMsg,
        "compacted" => Kind::Compacted,
        other => Kind::Other(other.to_owned()),
    }
}

fn without(obj: &Map<String, Value>, keys: &[&str]) -> Value {
    Value::Object(
        obj.iter()
            .filter(|(k, _)| !keys.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect(),
    )
}

/// Normalises one parsed line; `None` for lines that carry nothing (`record_type: state`).
/// `first` says whether this is the first record of the file (where the early flat format keeps
/// its bare meta).
pub fn normalise(line: u64, value: Value, first: bool) -> Option<Record> {
    let obj = value.as_object()?;
    let timestamp = obj
        .get("timestamp")
        .and_then(Value::as_str)
        .map(str::to_owned);
    let (timestamp, kind, payload) =
        if let (Some(Value::String(t)), Some(_)) = (obj.get("type"), obj.get("payload")) {
            // The envelope of every build since mid-2025.
            (timestamp, kind_of(t), Payload::Member)
        } else if let Some(Value::String(rt)) = obj.get("record_type") {
            // The transitional form: `record_type` beside the flattened item.
            let kind = match rt.as_str() {
                "state" => return None,
                "session_meta" => Kind::SessionMeta,
                "prev_session_meta" => Kind::Other("prev_session_meta".to_owned()),
                "response" => Kind::ResponseItem,
                "event" => Kind::EventMsg,
                other => Kind::Other(other.to_owned()),
            };
            let payload = without(obj, &["record_type", "timestamp"]);
            (timestamp, kind, Payload::Built(payload))
        } else if let Some(Value::String(t)) = obj.get("type")
            && RESPONSE_ITEM_TYPES.contains(&t.as_str())
        {
            // The early flat form: a bare response item...
            (None, Kind::ResponseItem, Payload::Whole)
        } else if first && obj.contains_key("id") && obj.contains_key("timestamp") {
            // ...after a bare meta line.
            (timestamp, Kind::SessionMeta, Payload::Whole)
        } else {
            (timestamp, Kind::Other(String::new()), Payload::Whole)
        };
    // The line itself is kept as `raw`, moved.
    Some(Record {
        line,
        timestamp,
        kind,
        payload,
        raw: value,
    })
}

/// What [`Lines::next`] gives: a record, or a line it only checked.
#[derive(Debug)]
pub enum Next {
    Record(Record),
    Passed(Passed),
}

/// A line in the envelope form that was checked, not parsed: what a reader that does not want
/// its payload still needs of it.
#[derive(Debug)]
pub struct Passed {
    pub timestamp: String,
}

/// The time, kind and `payload.type` of a line in the envelope form as Codex writes it
/// (`{"timestamp":"…","type":"…","payload":{"type":"…"`), read off its opening bytes; `None`
/// when it does not open so, with strings that need no escape.
fn sniff(text: &str) -> Option<(&str, Kind, &str)> {
    let word = |s: &str, ok: fn(u8) -> bool| -> Option<usize> {
        let end = s.bytes().position(|b| b == b'"')?;
        s.as_bytes()[..end].iter().all(|&b| ok(b)).then_some(end)
    };
    let name = |b: u8| b.is_ascii_lowercase() || b == b'_';
    let rest = text.strip_prefix(r#"{"timestamp":""#)?;
    let end = word(rest, |b| b.is_ascii_alphanumeric() || b":.+-".contains(&b))?;
    let (timestamp, rest) = rest.split_at(end);
    let rest = rest.strip_prefix(r#"","type":""#)?;
    let end = word(rest, name)?;
    let (kind, rest) = rest.split_at(end);
    let rest = rest.strip_prefix(r#"","payload":{"type":""#)?;
    let end = word(rest, name)?;
    Some((timestamp, kind_of(kind), &rest[..end]))
}

/// Whether `text`, which [`sniff`] read as `timestamp`, `kind` and `payload_type`, is a line a
/// `Value` parse takes and [`normalise`] reads so: it parses, each of those members once (a
/// member given twice is read as its last by a `Value` parse; then the line is parsed whole).
fn passes(text: &str, timestamp: &str, kind: &Kind, payload_type: &str) -> bool {
    use serde::Deserialize;
    use std::borrow::Cow;
    #[derive(Deserialize)]
    struct Envelope<'a> {
        #[serde(borrow)]
        timestamp: Cow<'a, str>,
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
        #[serde(borrow)]
        payload: Typed<'a>,
    }
    #[derive(Deserialize)]
    struct Typed<'a> {
        #[serde(rename = "type", borrow)]
        kind: Cow<'a, str>,
    }
    if !reads_as_value(text.as_bytes()) {
        return false;
    }
    serde_json::from_str::<Envelope<'_>>(text).is_ok_and(|e| {
        e.timestamp == timestamp && &kind_of(&e.kind) == kind && e.payload.kind == payload_type
    })
}

/// Reads a rollout's records one at a time, reporting damaged lines.
pub struct Lines {
    reader: Box<dyn BufRead + Send>,
    path: PathBuf,
    buf: Vec<u8>,
    line: u64,
    seen_record: bool,
    /// Where damage is reported; `None` for a silent pass.
    report: bool,
    /// Lines skipped because they were damaged.
    pub damaged: u64,
}

impl std::fmt::Debug for Lines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lines")
            .field("path", &self.path)
            .field("line", &self.line)
            .finish_non_exhaustive()
    }
}

impl Lines {
    /// Opens a rollout; damage is reported into diagnostics only when `report` is set (a file
    /// read twice reports once).
    pub fn open(file: &RolloutFile, report: bool) -> Result<Self, ConvertError> {
        Ok(Self::from_reader(file.open()?, &file.path, report))
    }

    pub fn from_reader(reader: Box<dyn BufRead + Send>, path: &Path, report: bool) -> Self {
        Lines {
            reader,
            path: path.to_path_buf(),
            buf: Vec::new(),
            line: 0,
            seen_record: false,
            report,
            damaged: 0,
        }
    }

    /// The next record, `None` at the end. I/O errors (a corrupt zstd stream) end the file with
    /// a diagnostic; what was read before stays.
    pub fn next_record(&mut self, diagnostics: &Diagnostics) -> Option<Record> {
        match self.next(diagnostics, |_, _| true)? {
            Next::Record(r) => Some(r),
            Next::Passed(_) => unreachable!("every line is wanted"),
        }
    }

    /// The next line as [`Lines::next_record`] reads it, but a line in the envelope form whose
    /// kind and `payload.type` `wanted` refuses is only checked, not parsed into a value:
    /// [`Next::Passed`], with its time. The same lines are records, damaged or passed either
    /// way: a line is passed only when it parses (`serde_json`, every member skipped but the
    /// envelope's) and would parse into a `Value` ([`reads_as_value`]).
    pub fn next(
        &mut self,
        diagnostics: &Diagnostics,
        wanted: impl Fn(&Kind, &str) -> bool,
    ) -> Option<Next> {
        loop {
            self.buf.clear();
            self.line += 1;
            match self.reader.read_until(b'\n', &mut self.buf) {
                Ok(0) => return None,
                Ok(_) => {}
                Err(e) => {
                    if self.report {
                        diagnostics.lost(
                            &self.path,
                            Some(self.line),
                            format!("cannot be read from here on ({e}); the rest is skipped"),
                        );
                    }
                    return None;
                }
            }
            let complete = self.buf.ends_with(b"\n");
            // `from_utf8` checks a line of ASCII words at a time, `from_utf8_lossy` byte by
            // byte (3 % of a Codex pack's time): the lossy copy only for a line that needs it.
            let text = match std::str::from_utf8(&self.buf) {
                Ok(t) => std::borrow::Cow::Borrowed(t),
                Err(_) => String::from_utf8_lossy(&self.buf),
            };
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            if let Some((timestamp, kind, payload_type)) = sniff(text)
                && !wanted(&kind, payload_type)
                && passes(text, timestamp, &kind, payload_type)
            {
                self.seen_record = true;
                return Some(Next::Passed(Passed {
                    timestamp: timestamp.to_owned(),
                }));
            }
            match serde_json::from_str::<Value>(text) {
                Ok(v) => {
                    let first = !self.seen_record;
                    if let Some(r) = normalise(self.line, v, first) {
                        self.seen_record = true;
                        return Some(Next::Record(r));
                    }
                }
                Err(e) => {
                    self.damaged += 1;
                    if self.report {
                        let message = if complete {
                            format!(
                                "not JSON ({}); line skipped, as Codex skips it",
                                crate::kit::report::why_line_is_not_json(&e)
                            )
                        } else {
                            "the last line is incomplete (the file was cut off or was still \
                             being written); skipped"
                                .to_owned()
                        };
                        diagnostics.damaged(&self.path, Some(self.line), message);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A line is passed over unparsed only when reading it whole would give a record (one of
    /// that time), so a reader that skims gets the same records, damage and times.
    #[test]
    fn a_line_is_passed_only_when_it_would_be_read_as_a_record() {
        let head = r#"{"timestamp":"2026-01-01T00:00:00.000Z","type":"response_item","payload":{"type":"function_call_output""#;
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let lines = [
            format!(r#"{head},"output":"x"}}}}"#),
            format!(r#"{head},"output":"\ud800"}}}}"#),
            format!(r#"{head},"n":1e999}}}}"#),
            format!(r#"{head}}},"type":"event_msg"}}"#),
            format!(r#"{head}}},"timestamp":"2027-01-01T00:00:00.000Z"}}"#),
            format!(r#"{head},"output":{deep}}}}}"#),
            format!(r#"{head},"output":"cut"#),
            r#"{"timestamp":"2026-01-01T00:00:00\"","type":"response_item","payload":{"type":"function_call_output"}}"#.to_owned(),
        ];
        let open = |line: &str| {
            Lines::from_reader(
                Box::new(io::Cursor::new(format!("{line}\n").into_bytes())),
                Path::new("r.jsonl"),
                false,
            )
        };
        for line in &lines {
            let read = |skim: bool| {
                let mut l = open(line);
                let got = match l.next(&Diagnostics::new(), |_, _| !skim) {
                    Some(Next::Record(r)) => Some(r.timestamp.unwrap_or_default()),
                    Some(Next::Passed(p)) => Some(p.timestamp),
                    None => None,
                };
                (got, l.damaged)
            };
            assert_eq!(read(true), read(false), "{line}");
        }
        let passed = |line: &str| {
            let next = open(line).next(&Diagnostics::new(), |_, _| false);
            matches!(next, Some(Next::Passed(_)))
        };
        assert!(passed(&lines[0]), "a plain line is passed");
        for odd in &lines[1..] {
            assert!(!passed(odd), "{odd}");
        }
    }

    #[test]
    fn every_format_normalises_to_records() {
        let env = normalise(
            1,
            json!({"timestamp": "t", "type": "session_meta", "payload": {"id": "x"}}),
            true,
        )
        .unwrap();
        assert_eq!(env.kind, Kind::SessionMeta);
        assert_eq!(env.payload()["id"], "x");
        let bare_meta = normalise(
            1,
            json!({"id": "x", "timestamp": "t", "instructions": null}),
            true,
        )
        .unwrap();
        assert_eq!(bare_meta.kind, Kind::SessionMeta);
        assert!(normalise(2, json!({"record_type": "state"}), false).is_none());
        let bare_item = normalise(
            3,
            json!({"type": "message", "role": "user", "content": []}),
            false,
        )
        .unwrap();
        assert_eq!(bare_item.kind, Kind::ResponseItem);
        let transitional = normalise(
            4,
            json!({"timestamp": "t", "record_type": "response", "type": "message", "role": "user"}),
            false,
        )
        .unwrap();
        assert_eq!(transitional.kind, Kind::ResponseItem);
        assert_eq!(
            *transitional.payload(),
            json!({"type": "message", "role": "user"})
        );
        let future = normalise(
            5,
            json!({"timestamp": "t", "type": "world_state", "payload": {}}),
            false,
        )
        .unwrap();
        assert_eq!(future.kind, Kind::Other("world_state".into()));
    }

    #[test]
    fn file_names_carry_the_thread_id() {
        assert_eq!(
            id_from_name(
                "rollout-2026-11-25T16-20-22-01a21382-12a0-7552-982b-fe8c17c720e1.jsonl.zst"
            )
            .as_deref(),
            Some("01a21382-12a0-7552-982b-fe8c17c720e1")
        );
        assert_eq!(id_from_name("rollout-x.jsonl"), None);
        assert_eq!(id_from_name("notes.jsonl"), None);
    }

    #[test]
    fn any_file_name_is_safe_to_ask_about() {
        // 36 bytes from the end fall inside a three-byte character here.
        let name = format!("rollout-a{}b.jsonl", "\u{20ac}".repeat(12));
        assert_eq!(id_from_name(&name), None);
        assert_eq!(id_from_name("rollout-\u{e9}.jsonl"), None);
        assert_eq!(
            id_from_name("rollout-\u{e9}-01a21382-12a0-7552-982b-fe8c17c720e1.jsonl").as_deref(),
            Some("01a21382-12a0-7552-982b-fe8c17c720e1")
        );
    }

    #[test]
    fn a_file_named_like_a_rollout_without_a_thread_id_is_reported_not_read() {
        let home = tempfile::tempdir().unwrap();
        let day = home.path().join("sessions/2026/01/01");
        std::fs::create_dir_all(&day).unwrap();
        let odd = day.join(format!("rollout-a{}b.jsonl", "\u{20ac}".repeat(12)));
        std::fs::write(&odd, "{}\n").unwrap();
        let good =
            day.join("rollout-2026-01-01T00-00-00-01a21382-12a0-7552-982b-fe8c17c720e1.jsonl");
        std::fs::write(&good, "{}\n").unwrap();
        let d = Diagnostics::new();
        let found = discover(home.path(), &d);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, good);
        let items = d.items();
        assert_eq!(items.len(), 1, "{items:?}");
        assert_eq!(items[0].file(), Some(odd.as_path()));
        assert!(items[0].message.contains("thread UUID"), "{}", items[0]);
    }
}
