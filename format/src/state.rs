//! The portable state: six kinds, named as the protocol names them, with every file body held
//! as a [`Descriptor`] of a blob.
//!
//! This is exactly the `state` object of a bundle's `manifest.json`, and the `_asp/state/export`
//! answer with its bodies moved into blobs (see [`crate::export`] for the inline form). Keeping
//! bodies out of the model is what lets a store larger than memory be packed: the model holds
//! metadata only, and bodies stream through a [`crate::blob::BlobSink`].
//!
//! A kind left out is `None`, never an empty collection: `Some(vec![])` means "this kind was
//! given, and there is none of it", which a destination may act on.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::digest::Descriptor;
use crate::kind::{KindSet, StateKind};
use crate::name::{HarnessName, RelPath, SessionId, SkillName};

/// Free-form metadata, as ACP's `_meta`: a JSON object whose keys are namespaced by whoever
/// wrote them (`claudeCode`, `codex`, `asp`, ...).
pub type Meta = serde_json::Map<String, serde_json::Value>;

/// The six kinds of portable state. `None` = not given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct State {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sessions: Option<Vec<Session>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<Instructions>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skills: Option<Vec<Skill>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Vec<McpServer>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<Vec<MemoryNote>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settings: Option<Settings>,
}

/// One conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub id: SessionId,
    pub title: String,
    /// The harness the conversation was carried from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<HarnessName>,
    /// The working directory the conversation ran in, as an absolute path of its machine.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// RFC 3339 time of the last activity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<String>,
    /// The JSONL stream of ACP `session/update` notification params, one per line, as
    /// `session/load` would replay them.
    pub updates: Descriptor,
    /// The harness's own files for this conversation, byte for byte, so a restore into the same
    /// harness gives back exactly what was packed. Bundle-only: never part of the export form.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub native: Option<Native>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

impl Session {
    /// Every body the session refers to: its update stream, then its native files.
    pub fn bodies(&self) -> impl Iterator<Item = &Descriptor> + '_ {
        std::iter::once(&self.updates).chain(
            self.native
                .iter()
                .flat_map(|n| &n.files)
                .map(|f| &f.content),
        )
    }
}

/// A harness's native files for one session, by path relative to the harness's home directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Native {
    pub harness: HarnessName,
    pub files: Vec<FileEntry>,
}

/// A file by relative path: its body, and whether it is executable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileEntry {
    pub path: RelPath,
    #[serde(default, skip_serializing_if = "is_false")]
    pub executable: bool,
    pub content: Descriptor,
}

impl FileEntry {
    /// The content of the file at `path` among `files`, if both are given and it is there: the
    /// blob a session's update stream derives from (see [`crate::update::UpdateWriter::derived`]).
    pub fn find(files: &Option<Vec<FileEntry>>, path: &Option<String>) -> Option<Descriptor> {
        FileEntry::at(files.as_deref()?, path.as_deref()?)
    }

    /// The content of the file at `path` among `files`.
    pub fn at(files: &[FileEntry], path: &str) -> Option<Descriptor> {
        files
            .iter()
            .find(|f| f.path.as_str() == path)
            .map(|f| f.content)
    }
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// The agent's AGENTS.md, whole.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Instructions {
    pub text: Descriptor,
}

/// One Agent Skills folder.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Skill {
    pub name: SkillName,
    pub files: Vec<FileEntry>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// A `{name, value}` pair, as ACP's `EnvVariable` and `HttpHeader`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NameValue {
    pub name: String,
    pub value: String,
}

/// An MCP server in ACP's `McpServer` shape: stdio untagged, `http` and `sse` tagged by `type`.
#[derive(Debug, Clone, PartialEq)]
pub enum McpServer {
    Stdio(McpStdio),
    Http(McpRemote),
    Sse(McpRemote),
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpStdio {
    pub name: String,
    pub command: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub args: Vec<String>,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub env: Vec<NameValue>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpRemote {
    pub name: String,
    pub url: String,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub headers: Vec<NameValue>,
    #[serde(default, rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub meta: Option<Meta>,
}

/// ACP reads a `null` list as empty.
fn null_as_empty<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Vec<T>, D::Error> {
    Ok(Option::<Vec<T>>::deserialize(d)?.unwrap_or_default())
}

impl McpServer {
    pub fn name(&self) -> &str {
        match self {
            McpServer::Stdio(s) => &s.name,
            McpServer::Http(r) | McpServer::Sse(r) => &r.name,
        }
    }

    pub fn meta(&self) -> Option<&Meta> {
        match self {
            McpServer::Stdio(s) => s.meta.as_ref(),
            McpServer::Http(r) | McpServer::Sse(r) => r.meta.as_ref(),
        }
    }

    pub fn meta_mut(&mut self) -> &mut Option<Meta> {
        match self {
            McpServer::Stdio(s) => &mut s.meta,
            McpServer::Http(r) | McpServer::Sse(r) => &mut r.meta,
        }
    }

    /// The transport's name as ACP spells it (`stdio` for the untagged form).
    pub fn transport(&self) -> &'static str {
        match self {
            McpServer::Stdio(_) => "stdio",
            McpServer::Http(_) => "http",
            McpServer::Sse(_) => "sse",
        }
    }
}

impl Serialize for McpServer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Tagged<'a> {
            #[serde(rename = "type")]
            kind: &'static str,
            #[serde(flatten)]
            remote: &'a McpRemote,
        }
        match self {
            McpServer::Stdio(stdio) => stdio.serialize(s),
            McpServer::Http(remote) => Tagged {
                kind: "http",
                remote,
            }
            .serialize(s),
            McpServer::Sse(remote) => Tagged {
                kind: "sse",
                remote,
            }
            .serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for McpServer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let mut obj = serde_json::Map::deserialize(d)?;
        let kind = match obj.remove("type") {
            None => None,
            Some(serde_json::Value::String(t)) => Some(t),
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "MCP server `type` {other} is not a string"
                )));
            }
        };
        let value = serde_json::Value::Object(obj);
        match kind.as_deref() {
            None => serde_json::from_value(value).map(McpServer::Stdio),
            Some("http") => serde_json::from_value(value).map(McpServer::Http),
            Some("sse") => serde_json::from_value(value).map(McpServer::Sse),
            Some(other) => {
                return Err(D::Error::custom(format!(
                    "unknown MCP server type {other:?} (ACP knows stdio without a type, \"http\" and \"sse\")"
                )));
            }
        }
        .map_err(D::Error::custom)
    }
}

/// Where a memory note came from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Origin {
    /// The harness that kept the note.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<HarnessName>,
    /// Where the harness kept it, relative to its home (`.claude/projects/x/memory/a.md`,
    /// `.gemini/GEMINI.md#gemini-added-memories`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The project the note belongs to, as an absolute path, when it is not global.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
}

/// A Markdown note, or the tombstone of a deleted one.
#[derive(Debug, Clone, PartialEq)]
pub struct MemoryNote {
    pub path: RelPath,
    pub origin: Origin,
    pub body: NoteBody,
}

/// A note's text, or the fact that it was deleted (so the agent taking it forgets it too).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteBody {
    Text(Descriptor),
    Deleted,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct NoteRepr {
    path: RelPath,
    #[serde(default)]
    origin: Origin,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    text: Option<Descriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    deleted: Option<bool>,
}

impl Serialize for MemoryNote {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (text, deleted) = match self.body {
            NoteBody::Text(d) => (Some(d), None),
            NoteBody::Deleted => (None, Some(true)),
        };
        NoteRepr {
            path: self.path.clone(),
            origin: self.origin.clone(),
            text,
            deleted,
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for MemoryNote {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let r = NoteRepr::deserialize(d)?;
        let body = match (r.text, r.deleted) {
            (Some(t), None | Some(false)) => NoteBody::Text(t),
            (None, Some(true)) => NoteBody::Deleted,
            (Some(_), Some(true)) => {
                return Err(D::Error::custom(format!(
                    "memory note {} is both deleted and has text",
                    r.path
                )));
            }
            (None, _) => {
                return Err(D::Error::custom(format!(
                    "memory note {} has no text and is not marked deleted",
                    r.path
                )));
            }
        };
        Ok(MemoryNote {
            path: r.path,
            origin: r.origin,
            body,
        })
    }
}

/// A session config option's value: ACP's select options take a value id, boolean options a
/// boolean.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SettingValue {
    Boolean(bool),
    Select(String),
}

/// As the state writes it: `"auto"` (a value id, quoted) or `true`.
impl std::fmt::Display for SettingValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingValue::Boolean(b) => write!(f, "{b}"),
            SettingValue::Select(id) => write!(f, "{id:?}"),
        }
    }
}

/// Config option values by option id, sorted by id.
pub type Settings = BTreeMap<String, SettingValue>;

/// A problem that makes a state unusable as it stands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StateError {
    #[error("{kind}: {entry} appears more than once")]
    Duplicate { kind: StateKind, entry: String },
    #[error("settings: the option id is empty")]
    EmptySettingId,
    #[error("tools: an MCP server has an empty name")]
    EmptyToolName,
}

impl StateError {
    /// The kind the problem is in.
    pub fn kind(&self) -> StateKind {
        match self {
            StateError::Duplicate { kind, .. } => *kind,
            StateError::EmptySettingId => StateKind::Settings,
            StateError::EmptyToolName => StateKind::Tools,
        }
    }
}

/// How many entries of each kind are present, as `_asp/state/describe` answers.
pub type KindCounts = BTreeMap<StateKind, u64>;

impl State {
    /// The kinds that are given (present, possibly empty).
    pub fn kinds(&self) -> KindSet {
        let mut set = KindSet::EMPTY;
        if self.sessions.is_some() {
            set.insert(StateKind::Sessions);
        }
        if self.instructions.is_some() {
            set.insert(StateKind::Instructions);
        }
        if self.skills.is_some() {
            set.insert(StateKind::Skills);
        }
        if self.tools.is_some() {
            set.insert(StateKind::Tools);
        }
        if self.memory.is_some() {
            set.insert(StateKind::Memory);
        }
        if self.settings.is_some() {
            set.insert(StateKind::Settings);
        }
        set
    }

    /// Keeps only the kinds in `kinds`; the others become "not given".
    pub fn retain_kinds(&mut self, kinds: KindSet) {
        if !kinds.contains(StateKind::Sessions) {
            self.sessions = None;
        }
        if !kinds.contains(StateKind::Instructions) {
            self.instructions = None;
        }
        if !kinds.contains(StateKind::Skills) {
            self.skills = None;
        }
        if !kinds.contains(StateKind::Tools) {
            self.tools = None;
        }
        if !kinds.contains(StateKind::Memory) {
            self.memory = None;
        }
        if !kinds.contains(StateKind::Settings) {
            self.settings = None;
        }
    }

    /// Counts per given kind: sessions, skills, tools, notes (tombstones included) and settings
    /// by entry; instructions as 1.
    pub fn counts(&self) -> KindCounts {
        let mut c = KindCounts::new();
        let n = |len: usize| len as u64;
        if let Some(s) = &self.sessions {
            c.insert(StateKind::Sessions, n(s.len()));
        }
        if self.instructions.is_some() {
            c.insert(StateKind::Instructions, 1);
        }
        if let Some(s) = &self.skills {
            c.insert(StateKind::Skills, n(s.len()));
        }
        if let Some(t) = &self.tools {
            c.insert(StateKind::Tools, n(t.len()));
        }
        if let Some(m) = &self.memory {
            c.insert(StateKind::Memory, n(m.len()));
        }
        if let Some(s) = &self.settings {
            c.insert(StateKind::Settings, n(s.len()));
        }
        c
    }

    /// Keeps only the sessions named in `ids` and their subagent sessions (those whose
    /// `_meta.asp.parent.sessionId` is a kept session, at any depth). Returns the ids that
    /// name no session.
    pub fn retain_sessions(&mut self, ids: &[String]) -> Vec<String> {
        let Some(sessions) = &mut self.sessions else {
            return ids.to_vec();
        };
        let (keep, missing) = kept_sessions(sessions, ids);
        sessions.retain(|s| keep.contains(s.id.as_str()));
        missing
    }

    /// A copy of the state with only `kinds`, and, when `ids` is given, only those sessions
    /// and their subagent sessions (as [`State::retain_sessions`]); the ids that name no
    /// session. Only what is kept is cloned, so picking one session of thousands costs that
    /// session.
    pub fn select(&self, kinds: KindSet, ids: Option<&[String]>) -> (State, Vec<String>) {
        let want = |k: StateKind| kinds.contains(k);
        let mut missing = Vec::new();
        let sessions = match (&self.sessions, ids) {
            (Some(all), Some(ids)) if want(StateKind::Sessions) => {
                let (keep, m) = kept_sessions(all, ids);
                missing = m;
                Some(
                    all.iter()
                        .filter(|s| keep.contains(s.id.as_str()))
                        .cloned()
                        .collect(),
                )
            }
            (None, Some(ids)) if want(StateKind::Sessions) => {
                missing = ids.to_vec();
                None
            }
            (s, _) if want(StateKind::Sessions) => s.clone(),
            _ => None,
        };
        fn kept<T: Clone>(wanted: bool, kind: &Option<T>) -> Option<T> {
            if wanted { kind.clone() } else { None }
        }
        let state = State {
            sessions,
            instructions: kept(want(StateKind::Instructions), &self.instructions),
            skills: kept(want(StateKind::Skills), &self.skills),
            tools: kept(want(StateKind::Tools), &self.tools),
            memory: kept(want(StateKind::Memory), &self.memory),
            settings: kept(want(StateKind::Settings), &self.settings),
        };
        (state, missing)
    }

    /// Whether a kind other than `sessions` is given. Spelled out, so that a kind added to the
    /// state is counted here too (a layout 3 part may hold only sessions).
    pub fn has_kinds_besides_sessions(&self) -> bool {
        let State {
            sessions: _,
            instructions,
            skills,
            tools,
            memory,
            settings,
        } = self;
        instructions.is_some()
            || skills.is_some()
            || tools.is_some()
            || memory.is_some()
            || settings.is_some()
    }

    /// Puts every list in its canonical order (sessions by id, skills and tools by name, files
    /// and notes by bytewise path), so equal states serialise to equal bytes.
    pub fn normalize(&mut self) {
        if let Some(s) = &mut self.sessions {
            s.sort_by(|a, b| a.id.cmp(&b.id));
            for session in s.iter_mut() {
                if let Some(n) = &mut session.native {
                    n.files.sort_by(|a, b| a.path.as_str().cmp(b.path.as_str()));
                }
            }
        }
        if let Some(skills) = &mut self.skills {
            skills.sort_by(|a, b| a.name.cmp(&b.name));
            for skill in skills.iter_mut() {
                skill
                    .files
                    .sort_by(|a, b| a.path.as_str().cmp(b.path.as_str()));
            }
        }
        if let Some(t) = &mut self.tools {
            t.sort_by(|a, b| a.name().cmp(b.name()));
        }
        if let Some(m) = &mut self.memory {
            m.sort_by(|a, b| a.path.as_str().cmp(b.path.as_str()));
        }
    }

    /// Checks what the types alone cannot: unique ids, names and paths.
    pub fn validate(&self) -> Result<(), Vec<StateError>> {
        let mut errors = Vec::new();
        let mut dup = |kind, seen: &mut BTreeSet<String>, entry: &str| {
            if !seen.insert(entry.to_owned()) {
                errors.push(StateError::Duplicate {
                    kind,
                    entry: entry.to_owned(),
                });
            }
        };
        if let Some(sessions) = &self.sessions {
            let mut seen = BTreeSet::new();
            for s in sessions {
                dup(
                    StateKind::Sessions,
                    &mut seen,
                    &format!("session {:?}", s.id.as_str()),
                );
                if let Some(n) = &s.native {
                    let mut files = BTreeSet::new();
                    for f in &n.files {
                        dup(
                            StateKind::Sessions,
                            &mut files,
                            &format!("native file {} of session {:?}", f.path, s.id.as_str()),
                        );
                    }
                }
            }
        }
        if let Some(skills) = &self.skills {
            let mut seen = BTreeSet::new();
            for s in skills {
                dup(StateKind::Skills, &mut seen, &format!("skill {}", s.name));
                let mut files = BTreeSet::new();
                for f in &s.files {
                    dup(
                        StateKind::Skills,
                        &mut files,
                        &format!("file {} of skill {}", f.path, s.name),
                    );
                }
            }
        }
        if let Some(tools) = &self.tools {
            let mut seen = BTreeSet::new();
            for t in tools {
                dup(
                    StateKind::Tools,
                    &mut seen,
                    &format!("MCP server {:?}", t.name()),
                );
            }
        }
        if let Some(notes) = &self.memory {
            let mut seen = BTreeSet::new();
            for n in notes {
                dup(StateKind::Memory, &mut seen, &format!("note {}", n.path));
            }
        }
        if self.tools.iter().flatten().any(|t| t.name().is_empty()) {
            errors.push(StateError::EmptyToolName);
        }
        if self.settings.iter().flatten().any(|(k, _)| k.is_empty()) {
            errors.push(StateError::EmptySettingId);
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(errors)
        }
    }

    /// Every blob reference with a description of what refers to it, in manifest order.
    pub fn references(&self) -> Vec<(Descriptor, Reference<'_>)> {
        let mut out = Vec::new();
        for s in self.sessions.iter().flatten() {
            out.push((s.updates, Reference::Updates(&s.id)));
            for f in s.native.iter().flat_map(|n| &n.files) {
                out.push((
                    f.content,
                    Reference::Native {
                        path: &f.path,
                        session: &s.id,
                    },
                ));
            }
        }
        if let Some(i) = &self.instructions {
            out.push((i.text, Reference::Instructions));
        }
        for s in self.skills.iter().flatten() {
            for f in &s.files {
                out.push((
                    f.content,
                    Reference::SkillFile {
                        path: &f.path,
                        skill: &s.name,
                    },
                ));
            }
        }
        for n in self.memory.iter().flatten() {
            if let NoteBody::Text(d) = n.body {
                out.push((d, Reference::Note(&n.path)));
            }
        }
        out
    }

    /// Every blob the state refers to, each once, in ascending digest order.
    pub fn descriptors(&self) -> Vec<Descriptor> {
        let mut all = BTreeSet::new();
        for s in self.sessions.iter().flatten() {
            all.extend(s.bodies().copied());
        }
        if let Some(i) = &self.instructions {
            all.insert(i.text);
        }
        for f in self.skills.iter().flatten().flat_map(|s| &s.files) {
            all.insert(f.content);
        }
        for n in self.memory.iter().flatten() {
            if let NoteBody::Text(d) = n.body {
                all.insert(d);
            }
        }
        all.into_iter().collect()
    }
}

/// What refers to a body, for messages: written out only when a message needs it, since a
/// state refers to thousands of bodies and most reads report none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reference<'a> {
    Updates(&'a SessionId),
    Native {
        path: &'a RelPath,
        session: &'a SessionId,
    },
    Instructions,
    SkillFile {
        path: &'a RelPath,
        skill: &'a SkillName,
    },
    Note(&'a RelPath),
}

impl std::fmt::Display for Reference<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Reference::Updates(id) => write!(f, "the updates of session {:?}", id.as_str()),
            Reference::Native { path, session } => {
                write!(f, "native file {path} of session {:?}", session.as_str())
            }
            Reference::Instructions => f.write_str("the instructions"),
            Reference::SkillFile { path, skill } => write!(f, "file {path} of skill {skill}"),
            Reference::Note(path) => write!(f, "memory note {path}"),
        }
    }
}

/// The ids of the sessions `ids` names and of their subagent sessions at any depth, and the
/// ids that name no session: what [`State::select`] keeps, and what `asp-pack --session`
/// keeps of a store's read.
pub fn kept_sessions(sessions: &[Session], ids: &[String]) -> (BTreeSet<String>, Vec<String>) {
    let pairs: Vec<(&str, Option<&str>)> = sessions
        .iter()
        .map(|s| (s.id.as_str(), parent_of(s)))
        .collect();
    kept_ids(&pairs, ids)
}

/// For session ids given that name none, the ids they are the start of (as a snapshot id may
/// be given): `; a session id is given whole: did you mean 71958462-…?` to add to the error,
/// or nothing. At most three are named; a start shared by more is said to be.
pub fn whole_ids_hint<'a>(missing: &[&str], known: impl IntoIterator<Item = &'a str>) -> String {
    const NAMED: usize = 3;
    let known: Vec<&str> = known.into_iter().collect();
    let meant: BTreeSet<&str> = known
        .iter()
        .copied()
        .filter(|k| {
            missing
                .iter()
                .any(|m| !m.is_empty() && k.len() > m.len() && k.starts_with(m))
        })
        .collect();
    match meant.len() {
        0 => near_ids_hint(missing, known),
        n if n <= NAMED => format!(
            "; a session id is given whole: did you mean {}?",
            meant.into_iter().collect::<Vec<_>>().join(" or ")
        ),
        n => format!("; a session id is given whole, and {n} begin so"),
    }
}

/// For session ids given that name none and are not the start of one (`whole_ids_hint`):
/// the ids they nearly are, in another letter case (`71958462-4BB8-…`, as some tools print
/// UUIDs) or one character off (a typo): `; did you mean 71958462-…?`, or nothing (new-user
/// trial helper-136, 11).
fn near_ids_hint<'a>(missing: &[&str], known: impl IntoIterator<Item = &'a str>) -> String {
    let near = |k: &str, m: &str| {
        k.len() == m.len()
            && (k.eq_ignore_ascii_case(m)
                || k.bytes().zip(m.bytes()).filter(|(a, b)| a != b).count() == 1)
    };
    let meant: BTreeSet<&str> = known
        .into_iter()
        .filter(|k| missing.iter().any(|m| !m.is_empty() && near(k, m)))
        .collect();
    match meant.len() {
        0 => String::new(),
        n if n <= 3 => format!(
            "; did you mean {}?",
            meant.into_iter().collect::<Vec<_>>().join(" or ")
        ),
        _ => String::new(),
    }
}

/// The session a subagent session belongs to: `_meta.asp.parent.sessionId`.
pub fn parent_of(s: &Session) -> Option<&str> {
    s.meta
        .as_ref()
        .and_then(|m| m.get("asp"))
        .and_then(|a| a.get("parent"))
        .and_then(|p| p.get("sessionId"))
        .and_then(serde_json::Value::as_str)
}

/// [`kept_sessions`] over `(id, parent)` pairs, so a reader that has not parsed the sessions
/// (`bundle::Part`) keeps the same ones.
pub(crate) fn kept_ids(
    sessions: &[(&str, Option<&str>)],
    ids: &[String],
) -> (BTreeSet<String>, Vec<String>) {
    let mut keep: BTreeSet<String> = BTreeSet::new();
    let missing = ids
        .iter()
        .filter(|id| !sessions.iter().any(|(s, _)| *s == id.as_str()))
        .cloned()
        .collect();
    keep.extend(ids.iter().cloned());
    loop {
        let before = keep.len();
        for (id, parent) in sessions {
            if parent.is_some_and(|p| keep.contains(p)) && !keep.contains(*id) {
                keep.insert((*id).to_owned());
            }
        }
        if keep.len() == before {
            break;
        }
    }
    (keep, missing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn d(bytes: &[u8]) -> Descriptor {
        Descriptor::of(bytes)
    }

    #[test]
    fn the_whole_ids_a_given_start_names_are_suggested() {
        let known = [
            "71958462-aa",
            "71958462-bb",
            "0e06340e-cc",
            "0e06-dd",
            "0e-ee",
            "0f-ff",
        ];
        let hint = |m: &[&str]| whole_ids_hint(m, known);
        assert_eq!(
            hint(&["7195"]),
            "; a session id is given whole: did you mean 71958462-aa or 71958462-bb?"
        );
        // Each named once, from every start given; a whole id is no start of itself.
        assert_eq!(
            hint(&["71958462-aa", "0e06340e", "0e06340e"]),
            "; a session id is given whole: did you mean 0e06340e-cc?"
        );
        assert_eq!(
            hint(&["0"]),
            "; a session id is given whole, and 4 begin so"
        );
        assert_eq!(hint(&["", "zz"]), "");
        // Not a start of one, but nearly one: another letter case, or one character off.
        assert_eq!(hint(&["71958462-AA"]), "; did you mean 71958462-aa?");
        assert_eq!(hint(&["0e06340e-cd"]), "; did you mean 0e06340e-cc?");
        assert_eq!(hint(&["0e06340e-xy"]), "");
    }

    #[test]
    fn a_kind_left_out_is_not_serialised_and_an_empty_one_is() {
        let state = State {
            sessions: Some(vec![]),
            ..State::default()
        };
        assert_eq!(
            serde_json::to_value(&state).unwrap(),
            json!({"sessions": []})
        );
        let back: State = serde_json::from_value(json!({"sessions": []})).unwrap();
        assert_eq!(back.kinds(), KindSet::EMPTY.with(StateKind::Sessions));
        assert_eq!(back.counts().get(&StateKind::Sessions), Some(&0));
        assert_eq!(back.counts().get(&StateKind::Tools), None);
    }

    #[test]
    fn mcp_servers_use_acps_shapes() {
        let servers = json!([
            {"name": "fs", "command": "/usr/bin/mcp", "args": ["--x"], "env": [{"name": "K", "value": "V"}]},
            {"type": "http", "name": "h", "url": "https://x", "headers": [{"name": "A", "value": "B"}]},
            {"type": "sse", "name": "s", "url": "https://y", "headers": []}
        ]);
        let parsed: Vec<McpServer> = serde_json::from_value(servers.clone()).unwrap();
        assert!(matches!(parsed[0], McpServer::Stdio(_)));
        assert!(matches!(parsed[1], McpServer::Http(_)));
        assert!(matches!(parsed[2], McpServer::Sse(_)));
        assert_eq!(serde_json::to_value(&parsed).unwrap(), servers);
    }

    #[test]
    fn mcp_null_lists_read_as_empty_and_unknown_types_are_refused() {
        let s: McpServer =
            serde_json::from_value(json!({"name": "a", "command": "b", "args": null, "env": null}))
                .unwrap();
        assert_eq!(
            serde_json::to_value(&s).unwrap(),
            json!({"name": "a", "command": "b", "args": [], "env": []})
        );
        let err =
            serde_json::from_value::<McpServer>(json!({"type": "ws", "name": "a", "url": "x"}))
                .unwrap_err();
        assert!(
            err.to_string().contains("unknown MCP server type \"ws\""),
            "{err}"
        );
    }

    #[test]
    fn notes_are_text_or_tombstones() {
        let text = d(b"remember");
        let v = json!([
            {"path": "a.md", "origin": {"harness": "gemini"}, "text": text},
            {"path": "b.md", "origin": {}, "deleted": true}
        ]);
        let notes: Vec<MemoryNote> = serde_json::from_value(v.clone()).unwrap();
        assert_eq!(notes[0].body, NoteBody::Text(text));
        assert_eq!(notes[1].body, NoteBody::Deleted);
        assert_eq!(serde_json::to_value(&notes).unwrap(), v);
        assert!(serde_json::from_value::<MemoryNote>(json!({"path": "c.md"})).is_err());
        assert!(
            serde_json::from_value::<MemoryNote>(
                json!({"path": "c.md", "text": text, "deleted": true})
            )
            .is_err()
        );
    }

    #[test]
    fn settings_values_are_select_ids_or_booleans() {
        let s: Settings =
            serde_json::from_value(json!({"model": "opus", "thinking": true})).unwrap();
        assert_eq!(s["model"], SettingValue::Select("opus".into()));
        assert_eq!(s["thinking"], SettingValue::Boolean(true));
        assert!(serde_json::from_value::<Settings>(json!({"n": 3})).is_err());
    }

    #[test]
    fn validation_names_duplicates() {
        let skill = |name: &str| Skill {
            name: SkillName::new(name).unwrap(),
            files: vec![],
            meta: None,
        };
        let state = State {
            skills: Some(vec![skill("pdf"), skill("pdf")]),
            ..State::default()
        };
        let errs = state.validate().unwrap_err();
        assert_eq!(errs.len(), 1);
        assert!(errs[0].to_string().contains("skill pdf"), "{}", errs[0]);
    }
}
