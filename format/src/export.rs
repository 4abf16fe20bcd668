//! The inline form of the state: the `{"state": {...}}` that `_asp/state/export` answers and
//! `_asp/state/import` takes, with every body inside the JSON.
//!
//! ```json
//! {"state": {
//!   "sessions": [{"id", "title", "harness"?, "cwd"?, "updatedAt"?, "updates": [params...], "_meta"?}],
//!   "instructions": {"text": "..."},
//!   "skills": [{"name", "files": [{"path", "text" | "base64", "executable"?}], "_meta"?}],
//!   "tools": [McpServer...],
//!   "memory": [{"path", "origin", "text"} | {"path", "origin", "deleted": true}],
//!   "settings": {"<option id>": "<value>" | true | false}
//! }}
//! ```
//!
//! [`write_export`] streams it from a [`State`] and its blobs without holding a session in
//! memory; [`ExportState`] is the same form as a value, for protocol messages, which arrive
//! whole. Native files ([`crate::state::Native`]) belong to bundles only and are not part of
//! this form.

use std::io::{self, Write};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;

use crate::blob::{BlobError, BlobSink, BlobSource};
use crate::kind::{KindSet, StateKind};
use crate::name::{HarnessName, RelPath, SessionId, SkillName};
use crate::state::{
    FileEntry, Instructions, McpServer, MemoryNote, Meta, NoteBody, Origin, Session, Settings,
    Skill, State,
};
use crate::update::{UpdateLines, UpdateWriter, check_line};

/// The whole answer of `_asp/state/export`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ExportResponse {
    pub state: ExportState,
}

/// The state with bodies inline. `None` = kind not given.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportState {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<Vec<ExportSession>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<ExportInstructions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<ExportSkill>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<McpServer>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Vec<ExportNote>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Settings>,
}

/// A session's fields besides its updates, in the order they are written.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHead {
    pub id: SessionId,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<HarnessName>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportSession {
    #[serde(flatten)]
    pub head: SessionHead,
    /// `session/update` notification params, raw.
    pub updates: Vec<Box<RawValue>>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExportInstructions {
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportSkill {
    pub name: SkillName,
    pub files: Vec<ExportFile>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// A file with its bytes as `text` when they are UTF-8, else as `base64`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportFile {
    pub path: RelPath,
    pub bytes: Vec<u8>,
    pub executable: bool,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileRepr {
    path: RelPath,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    base64: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    executable: bool,
}

impl Serialize for ExportFile {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (text, base64) = match std::str::from_utf8(&self.bytes) {
            Ok(t) => (Some(t.to_owned()), None),
            Err(_) => (None, Some(BASE64.encode(&self.bytes))),
        };
        FileRepr {
            path: self.path.clone(),
            text,
            base64,
            executable: self.executable,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ExportFile {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = FileRepr::deserialize(d)?;
        let bytes = match (r.text, r.base64) {
            (Some(t), None) => t.into_bytes(),
            (None, Some(b)) => BASE64
                .decode(b.as_bytes())
                .map_err(|e| D::Error::custom(format!("file {}: bad base64: {e}", r.path)))?,
            _ => {
                return Err(D::Error::custom(format!(
                    "file {} must have exactly one of `text` and `base64`",
                    r.path
                )));
            }
        };
        Ok(ExportFile {
            path: r.path,
            bytes,
            executable: r.executable,
        })
    }
}

/// A note with its text inline, or a tombstone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportNote {
    pub path: RelPath,
    pub origin: Origin,
    /// `None` for a deleted note.
    pub text: Option<String>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct NoteRepr {
    path: RelPath,
    #[serde(default)]
    origin: Origin,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deleted: Option<bool>,
}

impl Serialize for ExportNote {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        NoteRepr {
            path: self.path.clone(),
            origin: self.origin.clone(),
            deleted: self.text.is_none().then_some(true),
            text: self.text.clone(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for ExportNote {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let r = NoteRepr::deserialize(d)?;
        match (&r.text, r.deleted) {
            (Some(_), None | Some(false)) | (None, Some(true)) => Ok(ExportNote {
                path: r.path,
                origin: r.origin,
                text: r.text,
            }),
            (Some(_), Some(true)) => Err(D::Error::custom(format!(
                "memory note {} is both deleted and has text",
                r.path
            ))),
            (None, _) => Err(D::Error::custom(format!(
                "memory note {} has no text and is not marked deleted",
                r.path
            ))),
        }
    }
}

/// Errors converting between the inline form and a [`State`] with blobs.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("{what}: {source}")]
    Blob {
        what: String,
        #[source]
        source: BlobError,
    },
    #[error("session {session:?}, update {line}: {message}")]
    BadUpdate {
        session: String,
        line: u64,
        message: String,
    },
    #[error("{what} is not UTF-8 text")]
    NotText { what: String },
    #[error("writing the export: {0}")]
    Io(#[from] io::Error),
    /// What [`ExportState::into_checked_state`] found wrong: every problem, in the order found.
    #[error("{}", Invalid::list(.0))]
    Invalid(Vec<Invalid>),
}

/// One thing that makes a state in the inline form not valid, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid {
    /// A JSON Pointer (RFC 6901) into the state object: `/sessions/1/updates/3` for an update,
    /// the kind (`/sessions`) for a duplicate entry.
    pub path: String,
    /// What is wrong, in words.
    pub error: String,
}

impl Invalid {
    fn list(problems: &[Invalid]) -> String {
        problems
            .iter()
            .map(|p| format!("at {}: {}", p.path, p.error))
            .collect::<Vec<_>>()
            .join("; ")
    }
}

fn blob_err(what: impl Into<String>) -> impl FnOnce(BlobError) -> ExportError {
    let what = what.into();
    move |source| ExportError::Blob { what, source }
}

fn read_text(
    blobs: &dyn BlobSource,
    d: &crate::digest::Descriptor,
    what: &str,
) -> Result<String, ExportError> {
    let bytes = blobs.read_all(d).map_err(blob_err(what))?;
    String::from_utf8(bytes).map_err(|_| ExportError::NotText {
        what: what.to_owned(),
    })
}

impl ExportState {
    /// Everything but the sessions, inline. Sessions are streamed separately by
    /// [`write_export`] and materialised by [`ExportState::from_state`].
    fn small_kinds(state: &State, blobs: &dyn BlobSource) -> Result<ExportState, ExportError> {
        let instructions = match &state.instructions {
            Some(i) => Some(ExportInstructions {
                text: read_text(blobs, &i.text, "the instructions")?,
            }),
            None => None,
        };
        let skills = match &state.skills {
            Some(skills) => Some(
                skills
                    .iter()
                    .map(|s| {
                        let files = s
                            .files
                            .iter()
                            .map(|f| {
                                Ok(ExportFile {
                                    path: f.path.clone(),
                                    bytes: blobs.read_all(&f.content).map_err(blob_err(
                                        format!("file {} of skill {}", f.path, s.name),
                                    ))?,
                                    executable: f.executable,
                                })
                            })
                            .collect::<Result<_, ExportError>>()?;
                        Ok(ExportSkill {
                            name: s.name.clone(),
                            files,
                            meta: s.meta.clone(),
                        })
                    })
                    .collect::<Result<_, ExportError>>()?,
            ),
            None => None,
        };
        let memory = match &state.memory {
            Some(notes) => Some(
                notes
                    .iter()
                    .map(|n| {
                        let text = match n.body {
                            NoteBody::Text(d) => {
                                Some(read_text(blobs, &d, &format!("memory note {}", n.path))?)
                            }
                            NoteBody::Deleted => None,
                        };
                        Ok(ExportNote {
                            path: n.path.clone(),
                            origin: n.origin.clone(),
                            text,
                        })
                    })
                    .collect::<Result<_, ExportError>>()?,
            ),
            None => None,
        };
        Ok(ExportState {
            sessions: None,
            instructions,
            skills,
            tools: state.tools.clone(),
            memory,
            settings: state.settings.clone(),
        })
    }

    /// The whole state inline, sessions included. For protocol answers, which are sent as one
    /// message anyway; to print a large state, prefer [`write_export`].
    pub fn from_state(state: &State, blobs: &dyn BlobSource) -> Result<ExportState, ExportError> {
        let mut out = ExportState::small_kinds(state, blobs)?;
        if let Some(sessions) = &state.sessions {
            let mut list = Vec::with_capacity(sessions.len());
            for s in sessions {
                let mut updates = Vec::new();
                for_each_update(blobs, s, |_, line| {
                    updates.push(RawValue::from_string(line.to_owned()).expect("checked JSON"));
                    Ok(())
                })?;
                list.push(ExportSession {
                    head: head_of(s),
                    updates,
                    meta: s.meta.clone(),
                });
            }
            out.sessions = Some(list);
        }
        Ok(out)
    }

    /// Moves every body into `sink`, giving the state with descriptors. Update lines are
    /// checked ([`check_line`]) and compacted.
    pub fn into_state(self, sink: &dyn BlobSink) -> Result<State, ExportError> {
        self.convert(sink, None)
    }

    /// [`Self::into_state`] for a state handed over by someone else, which must be valid
    /// whole: instead of stopping at the first update that is not its session's, it names
    /// every one, and then what [`State::validate`] finds (a duplicate entry), all in one
    /// [`ExportError::Invalid`]. Nothing it finds wrong is written anywhere but `sink`.
    pub fn into_checked_state(self, sink: &dyn BlobSink) -> Result<State, ExportError> {
        let mut problems = Vec::new();
        let state = self.convert(sink, Some(&mut problems))?;
        if let Err(found) = state.validate() {
            problems.extend(found.into_iter().map(|e| Invalid {
                path: format!("/{}", e.kind()),
                error: e.to_string(),
            }));
        }
        if problems.is_empty() {
            Ok(state)
        } else {
            Err(ExportError::Invalid(problems))
        }
    }

    /// The state with its bodies in `sink`. An update that is not its session's fails the
    /// conversion, or, given `problems`, is put there and left out, so every one is found.
    fn convert(
        self,
        sink: &dyn BlobSink,
        mut problems: Option<&mut Vec<Invalid>>,
    ) -> Result<State, ExportError> {
        let mut state = State {
            tools: self.tools,
            settings: self.settings,
            ..State::default()
        };
        if let Some(sessions) = self.sessions {
            let mut list = Vec::with_capacity(sessions.len());
            for (n, s) in sessions.into_iter().enumerate() {
                let what = format!("the updates of session {:?}", s.head.id.as_str());
                let mut w = UpdateWriter::new(sink).map_err(blob_err(&what))?;
                for (i, raw) in s.updates.iter().enumerate() {
                    let line = match check_line(raw.get(), &s.head.id) {
                        Ok(line) => line,
                        Err(e) => {
                            let bad = ExportError::BadUpdate {
                                session: s.head.id.to_string(),
                                line: i as u64 + 1,
                                message: e.0,
                            };
                            match problems.as_deref_mut() {
                                None => return Err(bad),
                                Some(problems) => {
                                    problems.push(Invalid {
                                        path: format!("/sessions/{n}/updates/{i}"),
                                        error: bad.to_string(),
                                    });
                                    continue;
                                }
                            }
                        }
                    };
                    w.push_raw(&line).map_err(blob_err(&what))?;
                }
                let updates = w.finish().map_err(blob_err(&what))?;
                list.push(Session {
                    id: s.head.id,
                    title: s.head.title,
                    harness: s.head.harness,
                    cwd: s.head.cwd,
                    updated_at: s.head.updated_at,
                    updates,
                    native: None,
                    meta: s.meta,
                });
            }
            state.sessions = Some(list);
        }
        if let Some(i) = self.instructions {
            state.instructions = Some(Instructions {
                text: sink
                    .put(i.text.as_bytes())
                    .map_err(blob_err("the instructions"))?,
            });
        }
        if let Some(skills) = self.skills {
            let mut list = Vec::with_capacity(skills.len());
            for s in skills {
                let mut files = Vec::with_capacity(s.files.len());
                for f in s.files {
                    let content = sink
                        .put(&f.bytes)
                        .map_err(blob_err(format!("file {} of skill {}", f.path, s.name)))?;
                    files.push(FileEntry {
                        path: f.path,
                        executable: f.executable,
                        content,
                    });
                }
                list.push(Skill {
                    name: s.name,
                    files,
                    meta: s.meta,
                });
            }
            state.skills = Some(list);
        }
        if let Some(notes) = self.memory {
            let mut list = Vec::with_capacity(notes.len());
            for n in notes {
                let body = match n.text {
                    Some(t) => NoteBody::Text(
                        sink.put(t.as_bytes())
                            .map_err(blob_err(format!("memory note {}", n.path)))?,
                    ),
                    None => NoteBody::Deleted,
                };
                list.push(MemoryNote {
                    path: n.path,
                    origin: n.origin,
                    body,
                });
            }
            state.memory = Some(list);
        }
        Ok(state)
    }
}

fn head_of(s: &Session) -> SessionHead {
    SessionHead {
        id: s.id.clone(),
        title: s.title.clone(),
        harness: s.harness.clone(),
        cwd: s.cwd.clone(),
        updated_at: s.updated_at.clone(),
    }
}

/// Calls `f` with each checked, compact update line of a session, with its line number.
pub fn for_each_update(
    blobs: &dyn BlobSource,
    session: &Session,
    mut f: impl FnMut(u64, &str) -> Result<(), ExportError>,
) -> Result<(), ExportError> {
    let what = || format!("the updates of session {:?}", session.id.as_str());
    let mut lines = UpdateLines::open(blobs, &session.updates).map_err(blob_err(what()))?;
    loop {
        match lines.next_line() {
            Ok(None) => return Ok(()),
            Ok(Some((n, line))) => {
                let line = check_line(line, &session.id).map_err(|e| ExportError::BadUpdate {
                    session: session.id.to_string(),
                    line: n,
                    message: e.0,
                })?;
                f(n, &line)?;
            }
            Err((_, e)) => {
                return Err(ExportError::Blob {
                    what: what(),
                    source: BlobError::Other(e),
                });
            }
        }
    }
}

/// Streams `{"state": {...}}` for the kinds in `kinds` that `state` gives, followed by a
/// newline. Byte for byte what serialising [`ExportResponse`] with
/// [`ExportState::from_state`] gives, without holding a session in memory.
pub fn write_export(
    out: &mut dyn Write,
    state: &State,
    blobs: &dyn BlobSource,
    kinds: KindSet,
) -> Result<(), ExportError> {
    let mut state = state.clone();
    state.retain_kinds(kinds);
    let small = ExportState::small_kinds(&state, blobs)?;
    out.write_all(b"{\"state\":{")?;
    let mut first = true;
    let mut key = |out: &mut dyn Write, kind: StateKind| -> io::Result<()> {
        if !first {
            out.write_all(b",")?;
        }
        first = false;
        write!(out, "\"{}\":", kind.as_str())
    };
    if let Some(sessions) = &state.sessions {
        key(out, StateKind::Sessions)?;
        out.write_all(b"[")?;
        for (i, s) in sessions.iter().enumerate() {
            if i > 0 {
                out.write_all(b",")?;
            }
            let head = serde_json::to_string(&head_of(s)).map_err(io::Error::from)?;
            out.write_all(&head.as_bytes()[..head.len() - 1])?;
            out.write_all(b",\"updates\":[")?;
            let mut n = 0u64;
            for_each_update(blobs, s, |_, line| {
                if n > 0 {
                    out.write_all(b",")?;
                }
                n += 1;
                out.write_all(line.as_bytes())?;
                Ok(())
            })?;
            out.write_all(b"]")?;
            if let Some(meta) = &s.meta {
                out.write_all(b",\"_meta\":")?;
                serde_json::to_writer(&mut *out, meta).map_err(io::Error::from)?;
            }
            out.write_all(b"}")?;
        }
        out.write_all(b"]")?;
    }
    let rest = serde_json::to_value(&small).map_err(io::Error::from)?;
    for kind in StateKind::ALL.into_iter().skip(1) {
        if let Some(v) = rest.get(kind.as_str()) {
            key(out, kind)?;
            serde_json::to_writer(&mut *out, v).map_err(io::Error::from)?;
        }
    }
    out.write_all(b"}}\n")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::MemoryStore;
    use serde_json::json;

    fn sample() -> serde_json::Value {
        json!({"state": {
            "sessions": [{
                "id": "telegram:42", "title": "Skip the tests", "harness": "claude-code",
                "cwd": "/home/dev/shop", "updatedAt": "2026-11-29T17:02:11Z",
                "updates": [
                    {"sessionId": "telegram:42", "update": {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}},
                    {"sessionId": "telegram:42", "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "hello"}, "futureField": [1, 2]}}
                ],
                "_meta": {"asp": {"lines": 2}}
            }],
            "instructions": {"text": "# Rules\nBe brief.\n"},
            "skills": [{"name": "pdf", "files": [
                {"path": "SKILL.md", "text": "---\nname: pdf\n---\n"},
                {"path": "bin/tool", "base64": "/wABAg==", "executable": true}
            ]}],
            "tools": [{"name": "fs", "command": "npx", "args": [], "env": [{"name": "TOKEN", "value": "${TOKEN}"}]}],
            "memory": [
                {"path": "prefs.md", "origin": {"harness": "gemini"}, "text": "Use tabs."},
                {"path": "old.md", "origin": {}, "deleted": true}
            ],
            "settings": {"model": "opus", "thinking": true}
        }})
    }

    #[test]
    fn the_inline_form_round_trips_through_blobs() {
        let store = MemoryStore::new();
        let parsed: ExportResponse = serde_json::from_value(sample()).unwrap();
        let state = parsed.state.into_state(&store).unwrap();
        assert_eq!(state.kinds(), KindSet::ALL);
        let back = ExportState::from_state(&state, &store).unwrap();
        let json = serde_json::to_value(ExportResponse { state: back }).unwrap();
        assert_eq!(json, sample());
    }

    #[test]
    fn streaming_export_equals_the_serialised_value() {
        let store = MemoryStore::new();
        let parsed: ExportResponse = serde_json::from_value(sample()).unwrap();
        let state = parsed.state.into_state(&store).unwrap();
        for kinds in [
            KindSet::ALL,
            KindSet::EMPTY.with(StateKind::Sessions),
            KindSet::EMPTY
                .with(StateKind::Memory)
                .with(StateKind::Settings),
            KindSet::EMPTY,
        ] {
            let mut streamed = Vec::new();
            write_export(&mut streamed, &state, &store, kinds).unwrap();
            let mut narrowed = state.clone();
            narrowed.retain_kinds(kinds);
            let whole = ExportState::from_state(&narrowed, &store).unwrap();
            let mut expected = serde_json::to_vec(&ExportResponse { state: whole }).unwrap();
            expected.push(b'\n');
            assert_eq!(
                String::from_utf8(streamed).unwrap(),
                String::from_utf8(expected).unwrap(),
                "{kinds:?}"
            );
        }
    }

    #[test]
    fn a_kind_not_given_is_absent_not_empty() {
        let store = MemoryStore::new();
        let state = State {
            tools: Some(vec![]),
            ..State::default()
        };
        let mut out = Vec::new();
        write_export(&mut out, &state, &store, KindSet::ALL).unwrap();
        assert_eq!(out, b"{\"state\":{\"tools\":[]}}\n");
    }

    #[test]
    fn a_checked_state_names_every_problem_with_its_place() {
        let mut v = sample();
        let session = v["state"]["sessions"][0].clone();
        v["state"]["sessions"][0]["updates"][1]["sessionId"] = json!("other");
        v["state"]["sessions"]
            .as_array_mut()
            .unwrap()
            .extend([session.clone(), session]);
        v["state"]["sessions"][2]["updates"][0]["sessionId"] = json!("third");
        let parsed: ExportResponse = serde_json::from_value(v).unwrap();
        let Err(ExportError::Invalid(problems)) =
            parsed.state.into_checked_state(&MemoryStore::new())
        else {
            panic!("not refused with every problem");
        };
        let places: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(
            places,
            [
                "/sessions/0/updates/1",
                "/sessions/2/updates/0",
                "/sessions",
                "/sessions"
            ],
            "{problems:?}"
        );
        assert!(
            problems[3].error.contains("appears more than once"),
            "{problems:?}"
        );

        let parsed: ExportResponse = serde_json::from_value(sample()).unwrap();
        assert!(parsed.state.into_checked_state(&MemoryStore::new()).is_ok());
    }

    #[test]
    fn bad_updates_are_named_by_session_and_line() {
        let mut v = sample();
        v["state"]["sessions"][0]["updates"][1]["sessionId"] = json!("other");
        let parsed: ExportResponse = serde_json::from_value(v).unwrap();
        let err = parsed.state.into_state(&MemoryStore::new()).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("session \"telegram:42\", update 2:"),
            "{err}"
        );
    }
}
