//! A Gemini chat file replayed into the conversation it describes.
//!
//! Since v0.39 a chat is a JSONL *log*, not a document (`loadConversationRecord`): a metadata
//! line, message records where the same `id` written again replaces the earlier value but
//! keeps its position, `{"$set": {...}}` metadata patches (whose `messages` is a checkpoint that
//! replaces everything so far), and `{"$rewindTo": id}` which drops that message and every
//! later one (an unknown id drops them all). Older chats are one JSON document. This module
//! applies those rules exactly as the CLI does, so the conversation we carry is the one Gemini
//! resumes, and reports the damage the CLI skips in silence.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde_json::{Map, Value};

use crate::error::ConvertError;
use crate::kit::report::Diagnostics;
use crate::kit::source::SourceFile;

/// A `summary` set by a `$set` record: the store's one title event.
#[derive(Debug, Clone, PartialEq)]
pub struct TitleEvent {
    /// The id of the last message in the conversation when it was set (`None`: before any).
    pub after: Option<String>,
    pub title: String,
}

/// A chat as Gemini resumes it.
#[derive(Debug, Clone, Default)]
pub struct Chat {
    /// Metadata after every patch: `sessionId`, `projectHash`, `startTime`, `lastUpdated`,
    /// `kind`, `summary`, `directories`, `memoryScratchpad`, ...
    pub meta: Map<String, Value>,
    /// The surviving message records, in order.
    pub messages: Vec<Map<String, Value>>,
    pub titles: Vec<TitleEvent>,
    /// The first resumable user text seen while reading, before rewinds and checkpoints:
    /// what `gemini --list-sessions` titles an unsummarised session with.
    pub first_seen_prompt: Option<String>,
}

impl Chat {
    pub fn session_id(&self) -> Option<&str> {
        self.meta.get("sessionId").and_then(Value::as_str)
    }

    pub fn str_meta(&self, key: &str) -> Option<&str> {
        self.meta.get(key).and_then(Value::as_str)
    }

    /// Whether Gemini would list the chat: a prompt a person typed, or a model turn with
    /// text, tool calls or thoughts (and not a subagent's chat).
    pub fn resumable(&self) -> bool {
        self.str_meta("kind") != Some("subagent") && self.has_content()
    }

    /// Whether a person's prompt or a model turn with something in it survives the replay.
    pub fn has_content(&self) -> bool {
        self.messages.iter().any(|m| match type_of(m) {
            "user" => user_prompt_text(m).is_some(),
            "gemini" => {
                !parts_text(m.get("content"), false).trim().is_empty()
                    || m.get("toolCalls")
                        .and_then(Value::as_array)
                        .is_some_and(|a| !a.is_empty())
                    || m.get("thoughts")
                        .and_then(Value::as_array)
                        .is_some_and(|a| !a.is_empty())
            }
            _ => false,
        })
    }
}

/// A message's `type`.
pub fn type_of(m: &Map<String, Value>) -> &str {
    m.get("type").and_then(Value::as_str).unwrap_or("")
}

/// The text of a `PartListUnion`: a string, one part, or an array of parts. With
/// `thoughts` false, parts marked `"thought": true` are left out.
pub fn parts_text(content: Option<&Value>, thoughts: bool) -> String {
    fn part(p: &Value, thoughts: bool, out: &mut String) {
        match p {
            Value::String(s) => out.push_str(s),
            Value::Object(o) => {
                let is_thought = o.get("thought").and_then(Value::as_bool) == Some(true);
                if is_thought && !thoughts {
                    return;
                }
                if let Some(t) = o.get("text").and_then(Value::as_str) {
                    out.push_str(t);
                }
            }
            _ => {}
        }
    }
    let mut out = String::new();
    match content {
        Some(Value::Array(a)) => a.iter().for_each(|p| part(p, thoughts, &mut out)),
        Some(p) => part(p, thoughts, &mut out),
        None => {}
    }
    out
}

/// Text the CLI injects as a user turn (environment and hook context), never typed by a person.
pub fn is_injected(text: &str) -> bool {
    let t = text.trim_start();
    t.starts_with("<session_context>") || t.starts_with("<hook_context>")
}

/// The prompt a person typed in a `user` record, if it is one: not a tool result, not
/// injected context, not a slash or `?` command, not blank.
pub fn user_prompt_text(m: &Map<String, Value>) -> Option<String> {
    let text = parts_text(m.get("content"), true);
    let t = text.trim();
    (!t.is_empty() && !t.starts_with('/') && !t.starts_with('?') && !is_injected(t)).then_some(text)
}

/// The ordered id → message map of `loadConversationRecord`.
#[derive(Debug, Default)]
struct Replay {
    order: Vec<(String, Map<String, Value>)>,
    index: HashMap<String, usize>,
}

impl Replay {
    fn set(&mut self, id: String, m: Map<String, Value>) {
        match self.index.get(&id) {
            Some(&i) => self.order[i].1 = m,
            None => {
                self.index.insert(id.clone(), self.order.len());
                self.order.push((id, m));
            }
        }
    }

    fn truncate(&mut self, at: usize) {
        for (id, _) in self.order.drain(at..) {
            self.index.remove(&id);
        }
    }

    fn rewind(&mut self, id: &str) {
        let at = self.index.get(id).copied().unwrap_or(0);
        self.truncate(at);
    }

    fn checkpoint(&mut self, messages: &[Value]) {
        self.truncate(0);
        self.insert_all(messages);
    }

    fn insert_all(&mut self, messages: &[Value]) {
        for m in messages {
            if let Some(o) = m.as_object()
                && let Some(id) = o.get("id").and_then(Value::as_str)
            {
                self.set(id.to_owned(), o.clone());
            }
        }
    }

    fn last_id(&self) -> Option<String> {
        self.order.last().map(|(id, _)| id.clone())
    }
}

/// Damage found while reading, kept back until it is known that the line reading stands
/// (a file that turns out to be a legacy document reports nothing about its lines).
#[derive(Debug)]
struct Damage {
    line: u64,
    message: String,
    skipped: bool,
}

/// Why a file is not a chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAChat(pub String);

/// Reads one chat file. `Ok(Err(_))` is a file Gemini cannot read either (reported by the
/// caller); line damage is reported here, with line numbers.
pub fn read_chat(
    path: &Path,
    diagnostics: &Diagnostics,
) -> Result<Result<Chat, NotAChat>, ConvertError> {
    read_from(path, diagnostics, || {
        crate::kit::source::open_regular(path).map(|f| Box::new(f) as Box<dyn Read>)
    })
}

/// Reads one chat file as the survey saw it (see [`crate::kit::source`]).
pub fn read_surveyed(
    src: &SourceFile,
    diagnostics: &Diagnostics,
) -> Result<Result<Chat, NotAChat>, ConvertError> {
    read_from(&src.path, diagnostics, || {
        src.open().map(|f| Box::new(f) as Box<dyn Read>)
    })
}

fn read_from(
    path: &Path,
    diagnostics: &Diagnostics,
    open: impl Fn() -> std::io::Result<Box<dyn Read>>,
) -> Result<Result<Chat, NotAChat>, ConvertError> {
    let read_all = || -> Result<Vec<u8>, ConvertError> {
        let mut bytes = Vec::new();
        open()
            .and_then(|mut r| r.read_to_end(&mut bytes))
            .map_err(ConvertError::io(path))?;
        Ok(bytes)
    };
    let is_json = path.extension().is_some_and(|e| e == "json");
    // Why the file is not a single-document chat, when it was read as one: a damaged
    // document is named with serde's line and column.
    let mut not_a_document = None;
    if is_json {
        match legacy_document(&read_all()?) {
            Ok(chat) => return Ok(Ok(chat)),
            Err(why) => not_a_document = Some(why),
        }
    }
    let file = open().map_err(ConvertError::io(path))?;
    let (chat, damage) = replay_lines(BufReader::new(file)).map_err(ConvertError::io(path))?;
    if chat.meta.get("sessionId").and_then(Value::as_str).is_some()
        && chat
            .meta
            .get("projectHash")
            .and_then(Value::as_str)
            .is_some()
    {
        for d in damage {
            if d.skipped {
                diagnostics.damaged(path, Some(d.line), d.message);
            } else {
                diagnostics.note(path, Some(d.line), d.message);
            }
        }
        return Ok(Ok(chat));
    }
    // What the CLI does next: the whole file as one legacy document.
    if !is_json {
        match legacy_document(&read_all()?) {
            Ok(chat) => return Ok(Ok(chat)),
            Err(why) => not_a_document = Some(why),
        }
    }
    let why = not_a_document.map_or_else(String::new, |w| format!(" ({w})"));
    Ok(Err(NotAChat(format!(
        "no metadata record with `sessionId` and `projectHash`, and not a single-document chat \
         either{why}: Gemini cannot read it (and its session cleanup deletes it)"
    ))))
}

/// The session id a chat file's first line names (its metadata record), without reading the
/// rest: what a survey may read. `None` when the first line names none (a legacy document, a
/// damaged file): then only reading the whole file says.
pub fn header_session_id(src: &SourceFile) -> Option<String> {
    let mut r = BufReader::new(src.open().ok()?);
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).ok()?;
    let v: Value = serde_json::from_slice(&line).ok()?;
    Some(v.get("sessionId")?.as_str()?.to_owned())
}

/// A single-document chat (`JSON.stringify(record, null, 2)`), or why `bytes` is not one.
fn legacy_document(bytes: &[u8]) -> Result<Chat, String> {
    let mut record = match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(record)) => record,
        Ok(_) => return Err("not a JSON object".to_owned()),
        Err(e) => return Err(format!("not JSON: {e}")),
    };
    if record.get("sessionId").and_then(Value::as_str).is_none() {
        return Err("no `sessionId`".to_owned());
    }
    let messages = match record.remove("messages") {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    let mut replay = Replay::default();
    replay.insert_all(&messages);
    let first_seen_prompt = replay
        .order
        .iter()
        .filter(|(_, m)| type_of(m) == "user")
        .find_map(|(_, m)| user_prompt_text(m));
    let titles = record
        .get("summary")
        .and_then(Value::as_str)
        .map(|s| TitleEvent {
            after: replay.last_id(),
            title: s.to_owned(),
        })
        .into_iter()
        .collect();
    Ok(Chat {
        meta: record,
        messages: replay.order.into_iter().map(|(_, m)| m).collect(),
        titles,
        first_seen_prompt,
    })
}

/// A JSONL log in memory, replayed; for tests of what reads a chat. Panics on damage.
#[cfg(test)]
pub(super) fn replay_text(text: &str) -> Chat {
    let (chat, damage) = replay_lines(BufReader::new(text.as_bytes())).expect("in memory");
    assert!(damage.is_empty(), "{damage:?}");
    chat
}

/// Replays a JSONL log line by line; only one line is held at a time besides the replay.
fn replay_lines<R: Read>(mut reader: BufReader<R>) -> std::io::Result<(Chat, Vec<Damage>)> {
    let mut chat = Chat::default();
    let mut replay = Replay::default();
    let mut damage = Vec::new();
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        if reader.read_until(b'\n', &mut buf)? == 0 {
            break;
        }
        n += 1;
        let ended = buf.ends_with(b"\n");
        let raw = buf.strip_suffix(b"\n").unwrap_or(&buf);
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        if raw.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let value: Value = match serde_json::from_slice(raw) {
            Ok(v) => v,
            Err(e) => {
                let message = if ended {
                    format!(
                        "not JSON ({}); the line is skipped, as Gemini skips it",
                        crate::kit::report::why_line_is_not_json(&e)
                    )
                } else {
                    "the last line is cut off (no newline at the end: the CLI was stopped while \
                     writing it); skipped, as Gemini skips it"
                        .to_owned()
                };
                damage.push(Damage {
                    line: n,
                    message,
                    skipped: true,
                });
                continue;
            }
        };
        let Value::Object(record) = value else {
            damage.push(Damage {
                line: n,
                message: "a JSON value that is not a chat record; ignored, as Gemini ignores it"
                    .to_owned(),
                skipped: false,
            });
            continue;
        };
        apply(&mut chat, &mut replay, record, n, &mut damage);
    }
    chat.messages = replay.order.into_iter().map(|(_, m)| m).collect();
    Ok((chat, damage))
}

/// One log record, classified as the CLI classifies it (first match wins).
fn apply(
    chat: &mut Chat,
    replay: &mut Replay,
    mut record: Map<String, Value>,
    line: u64,
    damage: &mut Vec<Damage>,
) {
    if let Some(Value::String(target)) = record.get("$rewindTo") {
        replay.rewind(target);
    } else if let Some(Value::String(id)) = record.get("id") {
        let id = id.clone();
        if chat.first_seen_prompt.is_none() && type_of(&record) == "user" {
            chat.first_seen_prompt = user_prompt_text(&record);
        }
        replay.set(id, record);
    } else if let Some(Value::Object(_)) = record.get("$set") {
        let Some(Value::Object(mut patch)) = record.remove("$set") else {
            unreachable!("checked above");
        };
        if let Some(Value::Array(messages)) = patch.remove("messages") {
            replay.checkpoint(&messages);
        }
        if let Some(Value::String(summary)) = patch.get("summary") {
            chat.titles.push(TitleEvent {
                after: replay.last_id(),
                title: summary.clone(),
            });
        }
        chat.meta.extend(patch);
    } else if record.get("sessionId").is_some_and(Value::is_string)
        && record.get("projectHash").is_some_and(Value::is_string)
    {
        if let Some(Value::Array(messages)) = record.remove("messages") {
            replay.insert_all(&messages);
        }
        if let Some(Value::String(summary)) = record.get("summary") {
            chat.titles.push(TitleEvent {
                after: replay.last_id(),
                title: summary.clone(),
            });
        }
        chat.meta.extend(record);
    } else {
        damage.push(Damage {
            line,
            message: "not a chat record Gemini knows (no `id`, `$set`, `$rewindTo` or session \
                      metadata); ignored, as Gemini ignores it"
                .to_owned(),
            skipped: false,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replay(text: &str) -> (Chat, Vec<Damage>) {
        replay_lines(BufReader::new(text.as_bytes())).unwrap()
    }

    fn ids(chat: &Chat) -> Vec<&str> {
        chat.messages
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect()
    }

    const META: &str = r#"{"sessionId":"s","projectHash":"h","startTime":"t0","lastUpdated":"t0"}"#;

    #[test]
    fn a_damaged_single_document_chat_is_named_with_its_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("session-2026-11-20T10-00-3b9e1f0a.json");
        std::fs::write(
            &path,
            "{\n  \"sessionId\": \"s\",\n  \"messages\": [\n    {\"id\": \"a\",, }\n  ]\n}\n",
        )
        .unwrap();
        let Err(NotAChat(why)) = read_chat(&path, &Diagnostics::new()).unwrap() else {
            panic!("a damaged document is not a chat");
        };
        assert!(why.contains("(not JSON: "), "{why}");
        assert!(why.contains("at line 4 column"), "{why}");
    }

    #[test]
    fn the_last_write_of_an_id_wins_and_keeps_its_first_position() {
        let (chat, _) = replay(&format!(
            "{META}\n{}\n{}\n{}\n",
            r#"{"id":"a","type":"user","content":[{"text":"hi"}]}"#,
            r#"{"id":"b","type":"gemini","content":""}"#,
            r#"{"id":"a","type":"user","content":[{"text":"hello"}]}"#,
        ));
        assert_eq!(ids(&chat), ["a", "b"]);
        assert_eq!(parts_text(chat.messages[0].get("content"), true), "hello");
    }

    #[test]
    fn set_patches_metadata_and_a_messages_checkpoint_replaces_everything() {
        let (chat, _) = replay(&format!(
            "{META}\n{}\n{}\n{}\n{}\n",
            r#"{"id":"a","type":"user","content":"x"}"#,
            r#"{"$set":{"lastUpdated":"t1","summary":"Title"}}"#,
            r#"{"$set":{"messages":[{"id":"c","type":"user","content":"c"},{"no":"id"}]}}"#,
            r#"{"id":"d","type":"gemini","content":"d"}"#,
        ));
        assert_eq!(ids(&chat), ["c", "d"]);
        assert_eq!(chat.str_meta("lastUpdated"), Some("t1"));
        assert_eq!(
            chat.titles,
            [TitleEvent {
                after: Some("a".into()),
                title: "Title".into()
            }]
        );
    }

    #[test]
    fn rewinding_drops_the_target_and_everything_after_an_unknown_target_everything() {
        let lines = [
            r#"{"id":"a","type":"user","content":"a"}"#,
            r#"{"id":"b","type":"gemini","content":"b"}"#,
            r#"{"id":"c","type":"user","content":"c"}"#,
        ]
        .join("\n");
        let (chat, _) = replay(&format!("{META}\n{lines}\n{}\n", r#"{"$rewindTo":"b"}"#));
        assert_eq!(ids(&chat), ["a"]);
        let (chat, _) = replay(&format!("{META}\n{lines}\n{}\n", r#"{"$rewindTo":"zz"}"#));
        assert!(chat.messages.is_empty());
    }

    #[test]
    fn damaged_lines_are_counted_not_fatal() {
        let (chat, damage) = replay(&format!(
            "{META}\n{{\"id\":\"a\",\"ty\n{}\n[1]\n{{\"other\":1}}\n{{\"id\":\"b\"",
            r#"{"id":"a","type":"user","content":"a"}"#
        ));
        assert_eq!(ids(&chat), ["a"]);
        let lines: Vec<(u64, bool)> = damage.iter().map(|d| (d.line, d.skipped)).collect();
        assert_eq!(lines, [(2, true), (4, false), (5, false), (6, true)]);
        assert!(damage[3].message.contains("cut off"));
    }
}
