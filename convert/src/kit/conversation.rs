//! A session's update stream folded back into a conversation, for writers.
//!
//! Writing a native transcript from ACP updates needs messages, not chunks: consecutive chunks
//! of one kind (and one `messageId`) are one message, and a tool call is its `tool_call` with
//! every later `tool_call_update` merged in (ACP says `content` and `locations` replace, other
//! fields overwrite). Everything else is kept in order as it came, so a writer can decide what
//! its format can say.

use serde_json::{Map, Value};

use crate::kit::acp::{ToolKind, ToolStatus};

/// One step of a conversation.
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A user message: its content blocks, in order.
    User(Message),
    /// An agent message.
    Agent(Message),
    /// Agent reasoning shown as text.
    Thought(Message),
    /// A tool call with its final state.
    Tool(Box<ToolCall>),
    /// A plan (the whole list; it replaces the previous one).
    Plan {
        entries: Vec<Value>,
        meta: Option<Map<String, Value>>,
    },
    /// Any other update (`usage_update`, `current_mode_update`, `config_option_update`,
    /// `session_info_update`, kinds this crate does not know), as it came.
    Other(Value),
}

impl Item {
    /// The time a message's or a tool call's updates carry ([`meta_time`]), in epoch ms;
    /// `None` for the other items, which are not turns of the conversation.
    pub fn time(&self) -> Option<i64> {
        match self {
            Item::User(m) | Item::Agent(m) | Item::Thought(m) => meta_time(&m.metas),
            Item::Tool(t) => meta_time(std::slice::from_ref(&t.meta)),
            Item::Plan { .. } | Item::Other(_) => None,
        }
    }
}

/// What a harness lists a session without a title by: the first line of its first prompt
/// with text, as the user typed it (a skill's block given back as its command,
/// [`crate::kit::skill_block`]), trimmed, cut after 100 characters (`…`). `None` when no
/// prompt has text.
pub fn prompt_title(items: &[Item]) -> Option<String> {
    const LONGEST: usize = 100;
    items.iter().find_map(|i| {
        let Item::User(m) = i else { return None };
        let text = m.text();
        let text = crate::kit::skill_block::as_typed(&text);
        let line = text.lines().map(str::trim).find(|l| !l.is_empty())?;
        Some(match line.char_indices().nth(LONGEST) {
            Some((end, _)) => format!("{}…", line[..end].trim_end()),
            None => line.to_owned(),
        })
    })
}

/// The title a copy kept beside is marked from ([`crate::kit::beside::marked_title`]): the
/// session's own, else its first prompt's ([`prompt_title`]), so a copy of an untitled session
/// is listed as the conversation it is, not as the bare `~<harness>` marker.
pub fn title_or_prompt(title: &str, items: &[Item]) -> String {
    match title.trim() {
        "" => prompt_title(items).unwrap_or_default(),
        _ => title.to_owned(),
    }
}

/// The time an update carries, in epoch ms: the first `timestamp` in any namespace of its
/// `_meta` maps that reads as one (RFC 3339 text, or epoch ms), as the readers put them
/// (`_meta.claudeCode.timestamp`, `_meta.opencode.timestamp`, ...). The time a writer gives
/// what it composes, where the source had one. A number before 1970 or after 9999 is none.
pub fn meta_time<'a>(metas: impl IntoIterator<Item = &'a Map<String, Value>>) -> Option<i64> {
    metas
        .into_iter()
        .flat_map(|m| m.values())
        .filter_map(|ns| ns.get("timestamp"))
        .find_map(|t| match t {
            Value::String(s) => crate::kit::time::parse(s).map(crate::kit::time::millis),
            // Epoch ms of the years RFC 3339 can write (0000 to 9999): a number outside them
            // is not a time, and arithmetic on it could overflow.
            Value::Number(n) => n
                .as_i64()
                .filter(|ms| (0..=253_402_300_799_999).contains(ms)),
            _ => None,
        })
}

/// The time an item carries ([`meta_time`] of its updates' `_meta`), in epoch ms.
pub fn item_millis(item: &Item) -> Option<i64> {
    match item {
        Item::User(m) | Item::Agent(m) | Item::Thought(m) => meta_time(&m.metas),
        Item::Tool(t) => meta_time([&t.meta]),
        Item::Plan { meta, .. } => meta_time(meta.as_ref()),
        Item::Other(v) => meta_time(v.get("_meta").and_then(Value::as_object)),
    }
}

/// Consecutive chunks of one message.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Message {
    pub message_id: Option<String>,
    /// The content blocks of every chunk, in order.
    pub blocks: Vec<Value>,
    /// The `_meta` of every chunk that had one, in order.
    pub metas: Vec<Map<String, Value>>,
}

impl Message {
    /// The text of all text blocks, concatenated (chunks are pieces of one text).
    pub fn text(&self) -> String {
        self.blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect()
    }

    /// Looks up `_meta[namespace]` in the chunks, first hit wins.
    pub fn meta(&self, namespace: &str) -> Option<&Value> {
        self.metas.iter().find_map(|m| m.get(namespace))
    }
}

/// A tool call as it finally stood.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub title: String,
    pub kind: ToolKind,
    /// The last status given; `None` if none ever was.
    pub status: Option<ToolStatus>,
    pub content: Vec<Value>,
    pub locations: Vec<Value>,
    pub raw_input: Option<Value>,
    pub raw_output: Option<Value>,
    /// `_meta` of the `tool_call`, then each update's, merged per namespace (an object's
    /// members merged, later ones winning).
    pub meta: Map<String, Value>,
}

impl ToolCall {
    /// The text of the call's `content` items that are text blocks.
    pub fn content_text(&self) -> String {
        self.content
            .iter()
            .filter(|c| c.get("type").and_then(Value::as_str) == Some("content"))
            .filter_map(|c| c.pointer("/content/text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// Whether the call ended in failure.
    pub fn failed(&self) -> bool {
        self.status == Some(ToolStatus::Failed)
    }
}

/// Folds a stream of `update` objects (the `update` member of each notification) into items.
#[derive(Debug, Default)]
pub struct Folder {
    items: Vec<Item>,
    /// Index into `items` of each tool call by id.
    tools: std::collections::HashMap<String, usize>,
}

impl Folder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one update (the `update` object, not the notification params).
    pub fn push(&mut self, update: Value) {
        let kind = update
            .get("sessionUpdate")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_owned();
        match kind.as_str() {
            "user_message_chunk" => self.chunk(update, Item::User, |i| match i {
                Item::User(m) => Some(m),
                _ => None,
            }),
            "agent_message_chunk" => self.chunk(update, Item::Agent, |i| match i {
                Item::Agent(m) => Some(m),
                _ => None,
            }),
            "agent_thought_chunk" => self.chunk(update, Item::Thought, |i| match i {
                Item::Thought(m) => Some(m),
                _ => None,
            }),
            "tool_call" => self.tool_call(update),
            "tool_call_update" => self.tool_update(update),
            "plan" => {
                let entries = update
                    .get("entries")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let meta = update.get("_meta").and_then(Value::as_object).cloned();
                self.items.push(Item::Plan { entries, meta });
            }
            _ => self.items.push(Item::Other(update)),
        }
    }

    fn chunk(
        &mut self,
        update: Value,
        make: fn(Message) -> Item,
        as_msg: fn(&mut Item) -> Option<&mut Message>,
    ) {
        let id = update
            .get("messageId")
            .and_then(Value::as_str)
            .map(str::to_owned);
        let block = update.get("content").cloned().unwrap_or(Value::Null);
        let meta = update.get("_meta").and_then(Value::as_object).cloned();
        if let Some(last) = self.items.last_mut().and_then(as_msg)
            && last.message_id == id
        {
            last.blocks.push(block);
            last.metas.extend(meta);
            return;
        }
        self.items.push(make(Message {
            message_id: id,
            blocks: vec![block],
            metas: meta.into_iter().collect(),
        }));
    }

    fn tool_call(&mut self, update: Value) {
        let id = str_of(&update, "toolCallId").unwrap_or_default();
        let mut call = ToolCall {
            id: id.clone(),
            title: String::new(),
            kind: ToolKind::Other,
            status: None,
            content: Vec::new(),
            locations: Vec::new(),
            raw_input: None,
            raw_output: None,
            meta: Map::new(),
        };
        merge(&mut call, &update);
        match self.tools.get(&id) {
            // A repeated tool_call for a known id updates it, as ACP allows.
            Some(&i) => {
                if let Item::Tool(t) = &mut self.items[i] {
                    merge(t, &update);
                }
            }
            None => {
                self.tools.insert(id, self.items.len());
                self.items.push(Item::Tool(Box::new(call)));
            }
        }
    }

    fn tool_update(&mut self, update: Value) {
        let id = str_of(&update, "toolCallId").unwrap_or_default();
        match self.tools.get(&id) {
            Some(&i) => {
                if let Item::Tool(t) = &mut self.items[i] {
                    merge(t, &update);
                }
            }
            // An update for a call never announced: treat it as the call.
            None => self.tool_call(update),
        }
    }

    pub fn finish(self) -> Vec<Item> {
        self.items
    }
}

fn str_of(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

fn merge(t: &mut ToolCall, u: &Value) {
    if let Some(s) = str_of(u, "title") {
        t.title = s;
    }
    if let Some(k) = u.get("kind").and_then(Value::as_str) {
        t.kind = ToolKind::parse(k);
    }
    if let Some(s) = u
        .get("status")
        .and_then(Value::as_str)
        .and_then(ToolStatus::parse)
    {
        t.status = Some(s);
    }
    if let Some(c) = u.get("content").and_then(Value::as_array) {
        t.content = c.clone();
    }
    if let Some(l) = u.get("locations").and_then(Value::as_array) {
        t.locations = l.clone();
    }
    if let Some(v) = u.get("rawInput") {
        t.raw_input = Some(v.clone());
    }
    if let Some(v) = u.get("rawOutput") {
        t.raw_output = Some(v.clone());
    }
    if let Some(m) = u.get("_meta").and_then(Value::as_object) {
        for (k, v) in m {
            // An update's namespace adds to the call's (later members win): OpenCode names
            // the tool on the call only, and its updates' `partId` must not drop the name.
            match (t.meta.get_mut(k), v) {
                (Some(Value::Object(was)), Value::Object(more)) => {
                    for (mk, mv) in more {
                        was.insert(mk.clone(), mv.clone());
                    }
                }
                _ => {
                    t.meta.insert(k.clone(), v.clone());
                }
            }
        }
    }
}

/// Folds a whole stream of notification params (each `{"sessionId", "update"}`).
pub fn fold<I: IntoIterator<Item = Value>>(params: I) -> Vec<Item> {
    let mut f = Folder::new();
    for p in params {
        if let Some(u) = p.get("update") {
            f.push(u.clone());
        }
    }
    f.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(u: Value) -> Value {
        json!({"sessionId": "s", "update": u})
    }

    #[test]
    fn chunks_fold_into_messages_and_tool_updates_into_calls() {
        let items = fold([
            p(
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "Hi "}}),
            ),
            p(
                json!({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "there"}}),
            ),
            p(
                json!({"sessionUpdate": "agent_thought_chunk", "content": {"type": "text", "text": "hmm"}}),
            ),
            p(
                json!({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read a.rs", "kind": "read", "status": "pending", "rawInput": {"p": 1}}),
            ),
            p(
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "Reading"}, "messageId": "m1"}),
            ),
            p(
                json!({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "..."}, "messageId": "m2"}),
            ),
            p(
                json!({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed", "rawOutput": "fn main", "_meta": {"x": 1}}),
            ),
            p(json!({"sessionUpdate": "usage_update", "used": 1, "size": 2})),
        ]);
        assert_eq!(items.len(), 6);
        let Item::User(u) = &items[0] else { panic!() };
        assert_eq!(u.text(), "Hi there");
        let Item::Tool(t) = &items[2] else { panic!() };
        assert_eq!(t.title, "Read a.rs");
        assert_eq!(t.kind, ToolKind::Read);
        assert_eq!(t.status, Some(ToolStatus::Completed));
        assert_eq!(t.raw_output, Some(json!("fn main")));
        assert_eq!(t.meta["x"], 1);
        assert!(matches!(&items[3], Item::Agent(m) if m.text() == "Reading"));
        assert!(matches!(&items[4], Item::Agent(m) if m.text() == "..."));
        assert!(matches!(&items[5], Item::Other(v) if v["sessionUpdate"] == "usage_update"));
    }
}
