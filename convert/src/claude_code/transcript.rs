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

/// One line as the first pass keeps it: its number and its [`Skeleton`].
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// 1-based line number in the file.
    pub line: u64,
    pub skeleton: Skeleton,
}

/// The small part of a line the tree, the leaf, the chain and the session facts read:
/// [`SKELETON_KEYS`], `snipMetadata.removedUuids`, `compactMetadata.preservedSegment`,
/// `toolUseResult.agentId`, `message.id`, and [`BLOCK_KEYS`] of each content block that ties a
/// tool ([`Block::ties_a_tool`]). Each is the member's value when the line has it (`null`
/// included); a nested one only when what holds it is an object, as `Value::get` and
/// `Value::pointer` see them.
///
/// Typed rather than a `Value` tree: every line of every transcript gets one, and a tree
/// spent an object map and an owned key per member on it, built, looked up and freed again
/// (some 8 % of packing's CPU time in a profile before; spec/aspstate.md §13.3 has what
/// changed). The members are packed ([`Members`]): their text in one allocation, each a
/// 12-byte [`Slot`] of it. A record takes 264 bytes and one allocation for its text (392 bytes
/// and one allocation per string member before stop 46, 1.3 KB as a tree): the index of a
/// 300 MiB transcript's 100,000 lines is a few tens of megabytes, what the replay must hold to
/// find the conversation's tree.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Skeleton {
    /// [`SKELETON_KEYS`]' members, then `toolUseResult.agentId` and `message.id`.
    members: Members,
    removed_uuids: Option<Box<Value>>,
    preserved_segment: Option<Box<Value>>,
    /// `message.content`'s blocks that tie a tool, when `message` is an object and its
    /// `content` an array.
    blocks: Option<Box<[Block]>>,
}

/// Where `toolUseResult.agentId` is among a skeleton's members, after [`SKELETON_KEYS`].
const AGENT_ID: usize = SKELETON_KEYS.len();
/// Where `message.id` is.
const MESSAGE_ID: usize = SKELETON_KEYS.len() + 1;
/// How many members a skeleton keeps.
const MEMBERS: usize = SKELETON_KEYS.len() + 2;

/// A skeleton's members, packed: the text of those that are strings one after another in one
/// allocation, each member a [`Slot`].
#[derive(Debug, Clone, PartialEq, Default)]
struct Members {
    text: Box<str>,
    slots: [Slot; MEMBERS],
    /// The members that are neither text, a flag nor `null` (a number, an object: rare), whole.
    others: Box<[Value]>,
}

/// One member of [`Members`].
#[derive(Debug, Clone, Copy, PartialEq, Default)]
enum Slot {
    /// The line has no such member.
    #[default]
    Absent,
    Null,
    Bool(bool),
    /// Text at `text[at..at + len]`.
    Str {
        at: u32,
        len: u32,
    },
    /// `others[i]`.
    Other(u32),
}

impl Members {
    fn pack(values: [Option<Kept>; MEMBERS]) -> Members {
        let mut text = String::with_capacity(
            values
                .iter()
                .map(|v| match v {
                    Some(Kept::Str(s)) => s.len(),
                    _ => 0,
                })
                .sum(),
        );
        let mut others = Vec::new();
        let slots = values.map(|v| match v {
            None => Slot::Absent,
            Some(Kept::Null) => Slot::Null,
            Some(Kept::Bool(b)) => Slot::Bool(b),
            Some(Kept::Str(s)) => match (u32::try_from(text.len()), u32::try_from(s.len())) {
                (Ok(at), Ok(len)) if at.checked_add(len).is_some() => {
                    text.push_str(&s);
                    Slot::Str { at, len }
                }
                // Past 4 GiB of one line's members: whole, as anything else.
                _ => {
                    others.push(Value::String(s.into()));
                    Slot::Other(u32::try_from(others.len() - 1).unwrap_or(u32::MAX))
                }
            },
            Some(Kept::Other(v)) => {
                others.push(*v);
                Slot::Other(u32::try_from(others.len() - 1).unwrap_or(u32::MAX))
            }
        });
        Members {
            text: text.into_boxed_str(),
            slots,
            others: others.into_boxed_slice(),
        }
    }

    fn get(&self, i: usize) -> Option<Member<'_>> {
        match self.slots[i] {
            Slot::Absent => None,
            Slot::Null => Some(Member::Null),
            Slot::Bool(b) => Some(Member::Bool(b)),
            Slot::Str { at, len } => {
                let at = at as usize;
                Some(Member::Str(&self.text[at..at + len as usize]))
            }
            Slot::Other(i) => Some(match &self.others[i as usize] {
                Value::String(s) => Member::Str(s),
                v => Member::Other(v),
            }),
        }
    }
}

/// A member of a line's skeleton, as [`Record::get`] gives it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Member<'a> {
    Str(&'a str),
    Bool(bool),
    Null,
    Other(&'a Value),
}

impl<'a> Member<'a> {
    pub fn as_str(self) -> Option<&'a str> {
        match self {
            Member::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(self) -> Option<bool> {
        match self {
            Member::Bool(b) => Some(b),
            _ => None,
        }
    }

    pub fn is_null(self) -> bool {
        matches!(self, Member::Null)
    }
}

/// A kept member's value: a string (nearly every member is one) as its text, a flag or `null`
/// as itself, anything else whole. A third of the size of a `Value`, and a flag (every line's
/// `isSidechain`) allocates nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum Kept {
    Str(Box<str>),
    Bool(bool),
    Null,
    Other(Box<Value>),
}

impl From<Value> for Kept {
    fn from(v: Value) -> Kept {
        match v {
            Value::String(s) => Kept::Str(s.into_boxed_str()),
            Value::Bool(b) => Kept::Bool(b),
            Value::Null => Kept::Null,
            other => Kept::Other(Box::new(other)),
        }
    }
}

impl Kept {
    fn of(v: Option<&Value>) -> Option<Kept> {
        v.cloned().map(Kept::from)
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            Kept::Str(s) => Some(s),
            _ => None,
        }
    }
}

/// [`BLOCK_KEYS`]' members of one content block (none for a block that is not an object).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Block([Option<Kept>; BLOCK_KEYS.len()]);

/// Block types that call a tool: what the first pass learns tool names from.
pub const TOOL_CALLS: [&str; 3] = ["tool_use", "server_tool_use", "mcp_tool_use"];

impl Block {
    fn of(b: &Value) -> Block {
        Block(BLOCK_KEYS.map(|k| Kept::of(b.get(k))))
    }

    /// Whether the index keeps it: a tool call (its id and name), or a block that answers
    /// one (a `tool_result`, or any block with a `tool_use_id`). The first pass reads nothing
    /// else of a block, and text and thinking blocks are most of them: kept, they took
    /// a third of a large transcript's index (stop 46; spec/aspstate.md §13.3).
    fn ties_a_tool(&self) -> bool {
        let kind = self.str("type");
        kind.is_some_and(|k| TOOL_CALLS.contains(&k) || k == "tool_result")
            || self.str("tool_use_id").is_some()
    }

    /// The block's member `key` (one of [`BLOCK_KEYS`]) when it is a string.
    pub fn str(&self, key: &str) -> Option<&str> {
        let i = BLOCK_KEYS.iter().position(|k| *k == key);
        debug_assert!(i.is_some(), "{key} is not kept in a block's skeleton");
        self.0[i?].as_ref().and_then(Kept::as_str)
    }
}

impl Skeleton {
    /// The skeleton of a whole parsed line.
    pub fn of(v: &Value) -> Skeleton {
        let boxed = |p: &str| v.pointer(p).cloned().map(Box::new);
        let message = v.get("message").and_then(Value::as_object);
        let mut members: [Option<Kept>; MEMBERS] = Default::default();
        for (i, k) in SKELETON_KEYS.iter().enumerate() {
            members[i] = Kept::of(v.get(*k));
        }
        members[AGENT_ID] = Kept::of(v.pointer("/toolUseResult/agentId"));
        members[MESSAGE_ID] = Kept::of(message.and_then(|m| m.get("id")));
        Skeleton {
            members: Members::pack(members),
            removed_uuids: boxed("/snipMetadata/removedUuids"),
            preserved_segment: boxed("/compactMetadata/preservedSegment"),
            blocks: message
                .and_then(|m| m.get("content"))
                .and_then(Value::as_array)
                .map(|blocks| {
                    blocks
                        .iter()
                        .map(Block::of)
                        .filter(Block::ties_a_tool)
                        .collect()
                }),
        }
    }
}

impl Record {
    /// The line's member `key`, one of [`SKELETON_KEYS`] (any other is never kept).
    pub fn get(&self, key: &str) -> Option<Member<'_>> {
        let i = SKELETON_KEYS.iter().position(|k| *k == key);
        debug_assert!(i.is_some(), "{key} is not kept in a skeleton");
        self.skeleton.members.get(i?)
    }

    /// The line's member `key` (one of [`SKELETON_KEYS`]) when it is a string.
    pub fn str(&self, key: &str) -> Option<&str> {
        self.get(key).and_then(Member::as_str)
    }

    pub fn kind(&self) -> &str {
        self.str("type").unwrap_or("")
    }

    pub fn uuid(&self) -> Option<&str> {
        self.str("uuid")
    }

    pub fn parent_uuid(&self) -> Option<&str> {
        self.str("parentUuid")
    }

    pub fn timestamp(&self) -> &str {
        self.str("timestamp").unwrap_or("")
    }

    pub fn flag(&self, key: &str) -> bool {
        self.get(key).and_then(Member::as_bool) == Some(true)
    }

    /// `snipMetadata.removedUuids`: the rows a snip took out.
    pub fn removed_uuids(&self) -> Option<&Value> {
        self.skeleton.removed_uuids.as_deref()
    }

    /// `compactMetadata.preservedSegment` of a partial compaction.
    pub fn preserved_segment(&self) -> Option<&Value> {
        self.skeleton.preserved_segment.as_deref()
    }

    /// `toolUseResult.agentId`: the subagent a Task/Agent call's result names.
    pub fn agent_id(&self) -> Option<&str> {
        self.skeleton.members.get(AGENT_ID).and_then(Member::as_str)
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
        self.skeleton
            .members
            .get(MESSAGE_ID)
            .and_then(Member::as_str)
    }

    /// `message.content`'s blocks that tie a tool call to its name or its result (none when it
    /// is not an array): what the index keeps of a line's blocks ([`Block::ties_a_tool`]).
    pub fn tool_blocks(&self) -> &[Block] {
        self.skeleton.blocks.as_deref().unwrap_or_default()
    }

    /// Whether a user row carries tool results.
    pub fn has_tool_result(&self) -> bool {
        self.tool_blocks()
            .iter()
            .any(|b| b.str("type") == Some("tool_result"))
    }
}

pub fn str_at<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// Parses a transcript held in memory into its lines whole, with their numbers. Lines that
/// are not JSON objects (a truncated last line, binary garbage) are reported with file and
/// line and skipped; blank lines are ignored, as Claude Code itself does. Readers of real
/// stores use [`Indexer`] and [`Lines`], which keep only what the tree needs; this is the
/// same two passes, keeping every line whole.
#[cfg(test)]
pub fn parse(bytes: &[u8], file: &Path, diagnostics: &Diagnostics) -> Vec<(u64, Value)> {
    let mut ix = Indexer::new(file, diagnostics, |_: &Record| {});
    ix.feed(bytes);
    let index = ix.finish();
    let mut lines = Lines::new(file, bytes, diagnostics);
    (0..index.records.len())
        .filter_map(|i| lines.load(&index, i))
        .collect()
}

/// The first pass over a transcript: every line parsed once into its *skeleton*, handed to a
/// callback and kept (the few small fields the tree, the leaf and the session facts
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
    /// One record per line that is a JSON object, in file order (see [`Skeleton`]).
    pub records: Vec<Record>,
    /// Where each record's line is in the file.
    pub spans: Vec<Span>,
}

/// A line's place in the file (without its `\n`) and the CRC-32 of its bytes, so the second
/// pass knows the line it reads back is the one the first pass saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    pub at: u64,
    pub len: usize,
    pub crc: u32,
}

/// Keys of a record the tree, the leaf, the chain and the session facts read.
const SKELETON_KEYS: [&str; 14] = [
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

/// Keys of a content block the skeleton keeps: its type, and what ties a tool call to its
/// name and its result (the first pass learns tool names and subagent calls from them).
const BLOCK_KEYS: [&str; 4] = ["type", "id", "name", "tool_use_id"];

/// The skeleton of one line, parsed straight from its bytes: serde skips every other member
/// without building it, so the first pass never allocates a tool result or an image. `None`
/// when the fast form does not apply (not an object, a member given twice, invalid JSON): the
/// caller then parses the line whole, which gives the same skeleton or the same error.
fn skim(raw: &[u8]) -> Option<Skeleton> {
    if raw.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return None;
    }
    serde_json::from_slice::<skim::Line>(raw)
        .ok()
        .map(skim::Line::into_skeleton)
}

/// Typed views of the skeleton's members (see [`skim`]). Each member is an `Option`
/// set when the key is present (`null` included), and nested objects are read only when
/// they are objects, as `Value::get` and `Value::pointer` see them.
pub(super) mod skim {
    use serde::de::{Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
    use serde::{Deserialize, de};
    use serde_json::Value;

    use super::{Block as KeptBlock, Kept, Members, Skeleton};

    fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Kept>, D::Error> {
        Value::deserialize(d).map(|v| Some(Kept::from(v)))
    }

    fn present_value<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Box<Value>>, D::Error> {
        Value::deserialize(d).map(|v| Some(Box::new(v)))
    }

    /// A member read as `T` when it is an object, and skipped otherwise.
    #[derive(Debug)]
    pub struct Obj<T>(pub Option<T>);

    impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V<T>(std::marker::PhantomData<T>);
            impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
                type Value = Obj<T>;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("any JSON value")
                }
                fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Obj<T>, A::Error> {
                    T::deserialize(de::value::MapAccessDeserializer::new(map)).map(|t| Obj(Some(t)))
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Obj<T>, A::Error> {
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                    Ok(Obj(None))
                }
                fn visit_str<E: de::Error>(self, _: &str) -> Result<Obj<T>, E> {
                    Ok(Obj(None))
                }
                fn visit_bool<E: de::Error>(self, _: bool) -> Result<Obj<T>, E> {
                    Ok(Obj(None))
                }
                fn visit_i64<E: de::Error>(self, _: i64) -> Result<Obj<T>, E> {
                    Ok(Obj(None))
                }
                fn visit_u64<E: de::Error>(self, _: u64) -> Result<Obj<T>, E> {
                    Ok(Obj(None))
                }
                fn visit_f64<E: de::Error>(self, _: f64) -> Result<Obj<T>, E> {
                    Ok(Obj(None))
                }
                fn visit_unit<E: de::Error>(self) -> Result<Obj<T>, E> {
                    Ok(Obj(None))
                }
            }
            d.deserialize_any(V(std::marker::PhantomData))
        }
    }

    /// `message.content`: its blocks that tie a tool ([`KeptBlock::ties_a_tool`]) when it is
    /// an array, nothing otherwise. The others are dropped as they are read, so a row of text
    /// or thinking keeps nothing of them.
    pub struct Blocks(pub Option<Vec<KeptBlock>>);

    impl<'de> Deserialize<'de> for Blocks {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct V;
            impl<'de> Visitor<'de> for V {
                type Value = Blocks;
                fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                    f.write_str("any JSON value")
                }
                fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Blocks, A::Error> {
                    let mut out = Vec::new();
                    while let Some(b) = seq.next_element::<Obj<Block>>()? {
                        let b = KeptBlock(b.0.map_or_else(Default::default, |b| {
                            [b.kind, b.id, b.name, b.tool_use_id]
                        }));
                        if b.ties_a_tool() {
                            out.push(b);
                        }
                    }
                    Ok(Blocks(Some(out)))
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Blocks, A::Error> {
                    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                    Ok(Blocks(None))
                }
                fn visit_str<E: de::Error>(self, _: &str) -> Result<Blocks, E> {
                    Ok(Blocks(None))
                }
                fn visit_bool<E: de::Error>(self, _: bool) -> Result<Blocks, E> {
                    Ok(Blocks(None))
                }
                fn visit_i64<E: de::Error>(self, _: i64) -> Result<Blocks, E> {
                    Ok(Blocks(None))
                }
                fn visit_u64<E: de::Error>(self, _: u64) -> Result<Blocks, E> {
                    Ok(Blocks(None))
                }
                fn visit_f64<E: de::Error>(self, _: f64) -> Result<Blocks, E> {
                    Ok(Blocks(None))
                }
                fn visit_unit<E: de::Error>(self) -> Result<Blocks, E> {
                    Ok(Blocks(None))
                }
            }
            d.deserialize_any(V)
        }
    }

    #[derive(Deserialize)]
    pub struct Block {
        #[serde(rename = "type", default, deserialize_with = "present")]
        kind: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        id: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        name: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        tool_use_id: Option<Kept>,
    }

    #[derive(Deserialize)]
    pub struct Message {
        #[serde(default, deserialize_with = "present")]
        id: Option<Kept>,
        #[serde(default)]
        content: Option<Blocks>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Snip {
        #[serde(default, deserialize_with = "present_value")]
        removed_uuids: Option<Box<Value>>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Compact {
        #[serde(default, deserialize_with = "present_value")]
        preserved_segment: Option<Box<Value>>,
    }

    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct ToolUseResult {
        #[serde(default, deserialize_with = "present")]
        agent_id: Option<Kept>,
    }

    /// One line's skeleton members, in [`super::SKELETON_KEYS`] order.
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Line {
        #[serde(rename = "type", default, deserialize_with = "present")]
        kind: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        subtype: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        uuid: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        parent_uuid: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        logical_parent_uuid: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        timestamp: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        is_meta: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        is_sidechain: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        cwd: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        relocated_cwd: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        version: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        git_branch: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        leaf_uuid: Option<Kept>,
        #[serde(default, deserialize_with = "present")]
        explicit: Option<Kept>,
        #[serde(default)]
        snip_metadata: Option<Obj<Snip>>,
        #[serde(default)]
        compact_metadata: Option<Obj<Compact>>,
        #[serde(default)]
        tool_use_result: Option<Obj<ToolUseResult>>,
        #[serde(default)]
        message: Option<Obj<Message>>,
    }

    impl Line {
        pub fn into_skeleton(self) -> Skeleton {
            let message = self.message.and_then(|o| o.0);
            let (message_id, blocks) = match message {
                Some(m) => (m.id, m.content.and_then(|b| b.0).map(Vec::into_boxed_slice)),
                None => (None, None),
            };
            Skeleton {
                members: Members::pack([
                    self.kind,
                    self.subtype,
                    self.uuid,
                    self.parent_uuid,
                    self.logical_parent_uuid,
                    self.timestamp,
                    self.is_meta,
                    self.is_sidechain,
                    self.cwd,
                    self.relocated_cwd,
                    self.version,
                    self.git_branch,
                    self.leaf_uuid,
                    self.explicit,
                    self.tool_use_result
                        .and_then(|o| o.0)
                        .and_then(|t| t.agent_id),
                    message_id,
                ]),
                removed_uuids: self
                    .snip_metadata
                    .and_then(|o| o.0)
                    .and_then(|s| s.removed_uuids),
                preserved_segment: self
                    .compact_metadata
                    .and_then(|o| o.0)
                    .and_then(|c| c.preserved_segment),
                blocks,
            }
        }
    }
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
        while let Some(nl) = memchr::memchr(b'\n', chunk) {
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
        // `None`: JSON, but not an object. A line with bytes that are not UTF-8 is read as
        // Claude Code reads it (Node decodes the file with U+FFFD); the replay does the same,
        // and says so.
        let parsed = match skim(raw) {
            Some(skeleton) => Ok(Some(skeleton)),
            None if std::str::from_utf8(raw).is_err() => {
                let text = String::from_utf8_lossy(raw);
                match skim(text.as_bytes()) {
                    Some(skeleton) => Ok(Some(skeleton)),
                    None => serde_json::from_str::<Value>(&text)
                        .map(|v| v.is_object().then(|| Skeleton::of(&v))),
                }
            }
            None => serde_json::from_slice::<Value>(raw)
                .map(|v| v.is_object().then(|| Skeleton::of(&v))),
        };
        match parsed {
            Ok(Some(skeleton)) => {
                let r = Record { line, skeleton };
                (self.on_record)(&r);
                self.index.records.push(r);
                self.index.spans.push(Span {
                    at,
                    len: raw.len(),
                    crc: crc32fast::hash(raw),
                });
            }
            Ok(None) => self.diagnostics.damaged(
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
                let why = crate::kit::report::why_line_is_not_json(&e);
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
/// line whose bytes are not the ones the first pass saw is reported and skipped.
///
/// The replay asks for lines mostly in file order, so they are read through a window of
/// [`WINDOW`] bytes: one read for many lines, and no allocation per line.
pub struct Lines<'d> {
    file: PathBuf,
    reader: Box<dyn ReadAt + 'd>,
    diagnostics: &'d Diagnostics,
    window: Vec<u8>,
    /// Offset of `window`'s first byte in the file.
    window_at: u64,
}

/// How much of the file [`Lines`] reads at once (a longer line is read whole).
const WINDOW: usize = 256 * 1024;

impl std::fmt::Debug for Lines<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lines")
            .field("file", &self.file)
            .finish_non_exhaustive()
    }
}

/// Something lines can be read back from by offset.
pub trait ReadAt {
    /// Fills `buf` from offset `at` as far as the data goes; the bytes read (fewer than
    /// `buf.len()` only at the end of the data).
    fn read_at(&mut self, at: u64, buf: &mut [u8]) -> std::io::Result<usize>;
}

impl<R: ReadAt + ?Sized> ReadAt for &mut R {
    fn read_at(&mut self, at: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        (**self).read_at(at, buf)
    }
}

impl ReadAt for std::fs::File {
    fn read_at(&mut self, at: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let mut done = 0;
        while done < buf.len() {
            #[cfg(unix)]
            let n = std::os::unix::fs::FileExt::read_at(self, &mut buf[done..], at + done as u64);
            #[cfg(windows)]
            let n =
                std::os::windows::fs::FileExt::seek_read(self, &mut buf[done..], at + done as u64);
            match n {
                Ok(0) => break,
                Ok(n) => done += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(done)
    }
}

impl ReadAt for &[u8] {
    fn read_at(&mut self, at: u64, buf: &mut [u8]) -> std::io::Result<usize> {
        let at = usize::try_from(at).map_err(std::io::Error::other)?;
        let src = self.get(at..).unwrap_or_default();
        let n = src.len().min(buf.len());
        buf[..n].copy_from_slice(&src[..n]);
        Ok(n)
    }
}

impl<'d> Lines<'d> {
    pub fn new(file: &Path, reader: impl ReadAt + 'd, diagnostics: &'d Diagnostics) -> Self {
        Lines {
            file: file.to_path_buf(),
            reader: Box::new(reader),
            diagnostics,
            window: Vec::new(),
            window_at: 0,
        }
    }

    /// The bytes of `span`, from the window (read again when the span is not in it).
    fn bytes(&mut self, span: Span) -> std::io::Result<&[u8]> {
        let inside = span.at >= self.window_at
            && span.at + span.len as u64 <= self.window_at + self.window.len() as u64;
        if !inside {
            self.window.resize(span.len.max(WINDOW), 0);
            let n = self.reader.read_at(span.at, &mut self.window)?;
            self.window.truncate(n);
            self.window_at = span.at;
            if n < span.len {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
        }
        let from = (span.at - self.window_at) as usize;
        Ok(&self.window[from..from + span.len])
    }

    /// Record `i` of `index`, whole, with its line number; `None` (reported) when its line
    /// cannot be read back.
    #[cfg(test)]
    pub fn load(&mut self, index: &Index, i: usize) -> Option<(u64, Value)> {
        let line = index.records[i].line;
        let value = serde_json::from_slice::<Value>(self.raw(index, i)?);
        match value {
            Ok(value @ Value::Object(_)) => Some((line, value)),
            _ => {
                self.changed(index, i);
                None
            }
        }
    }

    /// The bytes of record `i`'s line, the ones the first pass saw (same CRC-32); `None`
    /// (reported) when the line cannot be read back or is no longer the same.
    pub fn raw(&mut self, index: &Index, i: usize) -> Option<&[u8]> {
        let line = index.records[i].line;
        let span = index.spans[i];
        let why = match self.bytes(span).map(|raw| crc32fast::hash(raw) == span.crc) {
            // The span is in the window now: this second look neither reads nor moves it.
            Ok(true) => return self.bytes(span).ok(),
            Ok(false) => "the line changed while the transcript was read; skipped".to_owned(),
            Err(e) => format!("the line could not be read again ({e}); skipped"),
        };
        self.diagnostics.damaged(&self.file, Some(line), why);
        None
    }

    /// Notes that record `i`'s line holds bytes that are not UTF-8, read as U+FFFD.
    pub fn not_utf8(&self, index: &Index, i: usize) {
        self.diagnostics.note(
            &self.file,
            Some(index.records[i].line),
            "holds bytes that are not UTF-8; they were read as U+FFFD, as Claude Code reads \
             them (the transcript itself is carried unchanged)",
        );
    }

    /// Reports that record `i`'s line, read back, is not the record the first pass saw.
    pub fn changed(&self, index: &Index, i: usize) {
        self.diagnostics.damaged(
            &self.file,
            Some(index.records[i].line),
            "the line changed while the transcript was read; skipped",
        );
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
            .filter_map(|&i| records[i].removed_uuids())
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
            if let Some(seg) = r.preserved_segment() {
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

    /// Whether row `row` is `ancestor` or below it, following `parentUuid` only.
    fn descends(&self, row: usize, ancestor: usize) -> bool {
        let mut seen = HashSet::new();
        let mut cur = Some(row);
        while let Some(i) = cur {
            if i == ancestor {
                return true;
            }
            if !seen.insert(i) {
                return false;
            }
            cur = self.parent.get(&i).copied();
        }
        false
    }

    /// The live leaf: the row named by the last `last-prompt` checkpoint (or, unless the
    /// checkpoint is `explicit`, the last row in the file when it descends from that row: turns
    /// written after the checkpoint, before Claude Code wrote the next one), else the newest
    /// childless row that is not injected (`isMeta`) and, outside subagent transcripts, not a
    /// sidechain row (ties: later in the file).
    pub fn leaf(&self, subagent: bool) -> Option<usize> {
        let counts = |i: &usize| {
            let r = &self.records[*i];
            !r.flag("isMeta") && (subagent || !r.flag("isSidechain"))
        };
        let checkpoint = self
            .records
            .iter()
            .rev()
            .find(|r| r.kind() == "last-prompt" && r.get("leafUuid").is_some());
        if let Some(cp) = checkpoint {
            match cp.get("leafUuid") {
                Some(Member::Str(u)) => {
                    if let Some(i) = self.index_of(u).filter(|i| self.rows.contains(i)) {
                        // Claude Code 2.1.318 takes the last row instead when it descends
                        // from a checkpoint not set by /rewind (spec/harnesses/claude-code.md
                        // §3.2).
                        let last = self.rows.iter().copied().filter(counts).max();
                        return Some(match last {
                            Some(l) if !cp.flag("explicit") && self.descends(l, i) => l,
                            _ => i,
                        });
                    }
                }
                Some(k) if k.is_null() && cp.flag("explicit") => return None,
                _ => {}
            }
        }
        self.rows
            .iter()
            .copied()
            .filter(|i| !self.children.contains_key(i))
            .filter(counts)
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
                    let logical = r.str("logicalParentUuid").and_then(|u| self.index_of(u));
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
        Record {
            line,
            skeleton: Skeleton::of(&v),
        }
    }

    fn row(line: u64, kind: &str, uuid: &str, parent: Option<&str>, ts: &str) -> Record {
        rec(
            line,
            json!({"type": kind, "uuid": uuid, "parentUuid": parent, "timestamp": ts}),
        )
    }

    /// The index holds one record per line of the session being read: a 34 MB transcript
    /// has 11,000 of them, a 300 MiB one 100,000.
    #[test]
    fn a_record_stays_small() {
        let size = std::mem::size_of::<Record>();
        assert!(size <= 264, "a record takes {size} bytes");
    }

    /// Packed, each member reads back as the line gave it: text (escapes decoded), a flag,
    /// `null`, a number, and an absent member as none.
    #[test]
    fn every_member_reads_back_as_the_line_gave_it() {
        let line = r#"{"type":"assistant","uuid":"u\u00e9\"1","parentUuid":null,"isSidechain":true,"isMeta":false,"timestamp":17,"cwd":"","toolUseResult":{"agentId":"a7"},"message":{"id":"msg_9","content":[{"type":"text","text":"t"},{"type":"tool_use","id":"t1","name":"Read"},{"type":"thinking"},{"type":"web_search_tool_result","tool_use_id":"t2"}]}}"#;
        let d = Diagnostics::new();
        let mut ix = Indexer::new(Path::new("t.jsonl"), &d, |_: &Record| {});
        ix.feed(line.as_bytes());
        let index = ix.finish();
        let r = &index.records[0];
        assert_eq!(r.kind(), "assistant");
        assert_eq!(r.uuid(), Some("u\u{e9}\"1"));
        assert_eq!(r.get("parentUuid"), Some(Member::Null));
        assert_eq!(r.parent_uuid(), None);
        assert!(r.flag("isSidechain") && !r.flag("isMeta"));
        assert_eq!(r.get("isMeta"), Some(Member::Bool(false)));
        assert_eq!(r.get("timestamp"), Some(Member::Other(&json!(17))));
        assert_eq!(r.timestamp(), "");
        assert_eq!(r.str("cwd"), Some(""));
        assert_eq!(r.get("gitBranch"), None);
        assert_eq!(r.agent_id(), Some("a7"));
        assert_eq!(r.message_id(), Some("msg_9"));
        // Of the blocks, those that tie a tool: its call and the result naming one.
        let ids: Vec<_> = r
            .tool_blocks()
            .iter()
            .map(|b| (b.str("type"), b.str("id"), b.str("tool_use_id")))
            .collect();
        assert_eq!(
            ids,
            [
                (Some("tool_use"), Some("t1"), None),
                (Some("web_search_tool_result"), None, Some("t2"))
            ]
        );
        assert_eq!(
            r.skeleton,
            Skeleton::of(&serde_json::from_str(line).unwrap())
        );
    }

    #[test]
    fn damaged_lines_are_reported_with_their_line_and_skipped() {
        let d = Diagnostics::new();
        let bytes =
            b"{\"type\":\"a\"}\n\x00\x01 garbage\n\n[1]\n{\"type\":\"b\"}\n{\"type\":\"c\",\"x\":";
        let recs = parse(bytes, Path::new("t.jsonl"), &d);
        assert_eq!(recs.iter().map(|r| r.0).collect::<Vec<_>>(), vec![1, 5]);
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
        assert_eq!(seen, index.records);
        assert_eq!(
            d.items().iter().map(|i| i.line).collect::<Vec<_>>(),
            vec![Some(3), Some(5)]
        );
        // Skeletons keep what the tree needs and drop the bodies; the typed skim gives what
        // the whole parse gives.
        assert_eq!(
            index.records[0].skeleton,
            Skeleton::of(
                &json!({"type": "user", "uuid": "a", "parentUuid": null, "message": {"content": [{"type": "image"}]}})
            )
        );
        assert_eq!(index.records[1].message_id(), Some("msg_1"));
        for (i, line) in [0usize, 3].into_iter().enumerate() {
            let raw = bytes.split(|b| *b == b'\n').nth(line).unwrap();
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            let whole: Value = serde_json::from_slice(raw).unwrap();
            assert_eq!(index.records[i].skeleton, Skeleton::of(&whole));
        }
        // The second pass gives the records back whole, one at a time.
        let whole = parse(bytes, Path::new("t.jsonl"), &Diagnostics::new());
        assert_eq!(whole.len(), 2);
        assert_eq!(
            whole[0].1.pointer("/message/content/0/source/data"),
            Some(&json!("AAAA"))
        );
        let mut lines = Lines::new(Path::new("t.jsonl"), bytes, &d);
        for (i, r) in whole.iter().enumerate() {
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

    /// The typed first pass and the whole parse agree on every shape a member can take, and
    /// lines the typed form cannot take (a member given twice) fall back to the whole parse.
    #[test]
    fn the_skim_gives_the_skeleton_of_the_whole_parse() {
        let lines = [
            r#"{"type":"user","uuid":"u","parentUuid":null,"isMeta":true,"message":{"role":"user","content":"plain text"}}"#,
            r#"{"type":"assistant","message":{"id":7,"content":[{"type":"tool_use","id":"t1","name":"Read","input":{"x":[1,2]}},"odd",3,null,{"text":"no type"}]}}"#,
            r#"{"type":"user","toolUseResult":{"agentId":"a1","content":[{"k":1}]},"message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}}"#,
            r#"{"type":"user","toolUseResult":"Error: failed","message":[1,2]}"#,
            r#"{"type":"system","subtype":"compact_boundary","compactMetadata":{"trigger":"auto","preservedSegment":{"headUuid":"h","anchorUuid":"a","tailUuid":"t"}},"logicalParentUuid":"p"}"#,
            r#"{"type":"system","snipMetadata":{"removedUuids":["a","b"]},"message":{"content":{"not":"blocks"}}}"#,
            r#"{"type":"summary","leafUuid":"l","summary":"s","snipMetadata":[1],"compactMetadata":null}"#,
            r#"{"type":"user","type":"assistant","uuid":"dup"}"#,
            r#"{"cwd":"/w","gitBranch":"main","version":"2.1.3","relocatedCwd":"/x","explicit":false,"isSidechain":false,"timestamp":"2026-01-01T00:00:00Z"}"#,
        ];
        for line in lines {
            let whole: Value = serde_json::from_str(line).unwrap();
            let d = Diagnostics::new();
            let mut ix = Indexer::new(Path::new("t.jsonl"), &d, |_: &Record| {});
            ix.feed(line.as_bytes());
            let index = ix.finish();
            assert!(d.items().is_empty(), "{line}: {:?}", d.items());
            assert_eq!(index.records[0].skeleton, Skeleton::of(&whole), "{line}");
        }
        assert!(skim(br#"{"type":"user","type":"assistant"}"#).is_none());
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

    /// Turns written after the checkpoint (Claude Code writes the next one later, on exit)
    /// carry the conversation on; after `/rewind` (`explicit`) the checkpoint stands.
    #[test]
    fn rows_after_a_checkpoint_that_descend_from_it_extend_the_leaf() {
        let recs = |explicit: bool| {
            vec![
                row(1, "user", "a", None, "2026-01-01T00:00:01.000Z"),
                row(2, "assistant", "b", Some("a"), "2026-01-01T00:00:02.000Z"),
                rec(
                    3,
                    json!({"type": "last-prompt", "leafUuid": "b", "explicit": explicit}),
                ),
                row(4, "user", "c", Some("b"), "2026-01-01T00:00:03.000Z"),
                row(5, "assistant", "d", Some("c"), "2026-01-01T00:00:04.000Z"),
            ]
        };
        let plain = recs(false);
        let t = Tree::new(&plain);
        assert_eq!(t.leaf(false), Some(4));
        assert_eq!(t.chain(t.leaf(false), false).rows, vec![0, 1, 3, 4]);
        assert_eq!(Tree::new(&recs(true)).leaf(false), Some(1));
        // A last row on another branch leaves the checkpoint where it is.
        let mut other = recs(false);
        other.push(row(6, "user", "e", Some("a"), "2026-01-01T00:00:05.000Z"));
        assert_eq!(Tree::new(&other).leaf(false), Some(1));
    }
}
