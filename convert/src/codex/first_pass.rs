//! The first of two passes over a rollout: what the second pass needs to know ahead.
//!
//! Codex writes most messages twice, a `response_item` (what the model saw) and an `event_msg`
//! or `item_completed` (what the UI showed), and not always in the same order: the user's
//! message comes before its event, the agent's after. Some files have only one of the two
//! (early builds only items, some events lack items). Reading the file once for hashes of those
//! texts lets the second pass emit each message exactly once, in place, while holding no more
//! than a hash per message. The same pass finds compaction summaries (an assistant message that
//! is the model's summary for a `compacted` line, not an answer) and the first `session_meta`.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::message::{self, hash};
use super::rollout::{Kind, Lines, Next, Record, RolloutFile};
use super::time;
use crate::error::ConvertError;
use crate::kit::report::Diagnostics;

/// What pass one learned about a rollout.
#[derive(Debug, Default)]
#[cfg_attr(test, derive(PartialEq))]
pub struct FirstPass {
    /// The first `session_meta` payload: it defines the thread.
    pub meta: Option<Value>,
    /// Texts of `user_message` events and `item_completed` user messages.
    pub user_events: HashSet<u64>,
    /// Texts of role-`user` response items that do not look injected.
    pub user_items: HashSet<u64>,
    /// Texts of assistant response items (compaction summaries excluded).
    pub agent_items: HashSet<u64>,
    /// Texts of reasoning response items: each summary part, and each content part.
    pub reasoning_items: HashSet<u64>,
    /// Lines of assistant messages that are compaction summaries.
    pub compaction_summaries: HashSet<u64>,
    /// Names given by `thread_name_updated` events.
    pub renames: HashSet<String>,
    /// A working directory found in the content, for rollouts whose meta has none.
    pub cwd_hint: Option<String>,
    pub first_time: Option<time::Nanos>,
    pub last_time: Option<time::Nanos>,
    /// The `total_tokens` of the last `token_count` with usage.
    pub tokens_used: Option<i64>,
    /// The first `turn_context` payload.
    pub first_turn_context: Option<Value>,
    /// The last `turn_context` payload.
    pub last_turn_context: Option<Value>,
    /// Records seen (after skipping damaged lines).
    pub records: u64,
    /// The first text that looks like a user prompt (a non-injected user item or a user
    /// event), for index previews.
    pub first_user_text: Option<String>,
    /// Calls that started a known child thread: call id → child thread id.
    pub spawned: HashMap<String, String>,
    /// Ids of `spawn_agent`-like calls, until their output is seen.
    spawn_calls: HashSet<String>,
}

impl FirstPass {
    /// Whether the file has any user-message events (if not, every non-injected user item is
    /// the user's).
    pub fn has_user_events(&self) -> bool {
        !self.user_events.is_empty()
    }

    /// Whether a non-injected role-`user` response item is a real user message.
    pub fn is_real_user_item(&self, payload: &Value) -> bool {
        if message::is_injected(payload) {
            return false;
        }
        if !self.has_user_events() {
            return true;
        }
        let parts = message::text_parts(payload);
        self.user_events.contains(&hash(&parts.join("\n")))
            || parts.iter().any(|p| self.user_events.contains(&hash(p)))
    }

    /// Reads `path` once, silently (the second pass reports damage). `children` are the ids
    /// of threads that name this one as their parent.
    pub fn of_file(
        file: &RolloutFile,
        children: &[String],
        diagnostics: &Diagnostics,
    ) -> Result<FirstPass, ConvertError> {
        Ok(Self::of_lines(
            Lines::open(file, false)?,
            children,
            diagnostics,
        ))
    }

    /// Reads a rollout already open.
    pub fn of_lines(lines: Lines, children: &[String], diagnostics: &Diagnostics) -> FirstPass {
        Self::reading(lines, children, diagnostics, reads)
    }

    /// [`FirstPass::of_lines`], parsing the lines `wanted` takes (the others give their time
    /// only): [`reads`], or every line in the test that holds `reads` to what
    /// [`FirstPass::add`] and [`FirstPass::link_children`] look at.
    fn reading(
        mut lines: Lines,
        children: &[String],
        diagnostics: &Diagnostics,
        wanted: fn(&Kind, &str, bool) -> bool,
    ) -> FirstPass {
        let mut s = FirstPass::default();
        let mut turn = TurnWatch::default();
        let linking = !children.is_empty();
        while let Some(next) = lines.next(diagnostics, |k, t| wanted(k, t, linking)) {
            match next {
                Next::Record(r) => {
                    s.add(&r, &mut turn);
                    if linking {
                        s.link_children(&r, children);
                    }
                }
                Next::Passed(p) => {
                    s.records += 1;
                    s.saw_time(Some(&p.timestamp));
                }
            }
        }
        s
    }

    /// A record's time, into the first and last.
    fn saw_time(&mut self, timestamp: Option<&str>) {
        if let Some(t) = timestamp.and_then(time::parse) {
            self.first_time = Some(self.first_time.map_or(t, |f| f.min(t)));
            self.last_time = Some(self.last_time.map_or(t, |l| l.max(t)));
        }
    }

    fn add(&mut self, r: &Record, turn: &mut TurnWatch) {
        self.records += 1;
        self.saw_time(r.timestamp.as_deref());
        match &r.kind {
            Kind::SessionMeta => {
                if self.meta.is_none() {
                    self.meta = Some(r.payload().clone());
                    if let Some(t) = r
                        .payload()
                        .get("timestamp")
                        .and_then(Value::as_str)
                        .and_then(time::parse)
                    {
                        self.first_time = Some(self.first_time.map_or(t, |f| f.min(t)));
                    }
                }
            }
            Kind::TurnContext => {
                if self.first_turn_context.is_none() {
                    self.first_turn_context = Some(r.payload().clone());
                }
                self.last_turn_context = Some(r.payload().clone());
                if self.cwd_hint.is_none() {
                    self.cwd_hint = str_at(r.payload(), "/cwd");
                }
            }
            Kind::ResponseItem => self.add_item(r, turn),
            Kind::EventMsg => self.add_event(r, turn),
            Kind::Compacted => {
                let summary = r
                    .payload()
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if let Some((line, text)) = turn.phaseless_assistant.take()
                    && (!turn.user_seen || summary.trim_end().ends_with(text.trim()))
                {
                    self.compaction_summaries.insert(line);
                    self.agent_items.remove(&hash(&text));
                }
            }
            Kind::Other(_) => {}
        }
    }

    /// Finds which call spawned which child: the child's id appears in the output of a
    /// `spawn_agent`-like call.
    fn link_children(&mut self, r: &Record, children: &[String]) {
        if r.kind != Kind::ResponseItem {
            return;
        }
        let p = &r.payload();
        let call_id = p.get("call_id").and_then(Value::as_str).unwrap_or("");
        match r.payload_type() {
            "function_call" | "custom_tool_call" => {
                let name = p.get("name").and_then(Value::as_str).unwrap_or("");
                if super::calls::spawns_agent(name) {
                    self.spawn_calls.insert(call_id.to_owned());
                }
            }
            "function_call_output" | "custom_tool_call_output"
                if self.spawn_calls.remove(call_id) =>
            {
                let out = p.get("output").map(Value::to_string).unwrap_or_default();
                if let Some(child) = children.iter().find(|c| out.contains(c.as_str())) {
                    self.spawned.insert(call_id.to_owned(), child.clone());
                }
            }
            _ => {}
        }
    }

    fn add_item(&mut self, r: &Record, turn: &mut TurnWatch) {
        let p = &r.payload();
        match r.payload_type() {
            "message" => match message::role(p) {
                "user" => {
                    if message::is_injected(p) {
                        if self.cwd_hint.is_none() {
                            self.cwd_hint = message::text_parts(p)
                                .iter()
                                .find_map(|t| message::cwd_in_context(t));
                        }
                    } else {
                        let parts = message::text_parts(p);
                        if self.first_user_text.is_none() {
                            self.first_user_text = Some(parts.join("\n").trim().to_owned());
                        }
                        self.user_items.insert(hash(&parts.join("\n")));
                        for part in parts {
                            self.user_items.insert(hash(part));
                        }
                        turn.user_seen = true;
                    }
                }
                "assistant" => {
                    let text = message::text(p);
                    self.agent_items.insert(hash(&text));
                    if p.get("phase").is_none() {
                        turn.phaseless_assistant = Some((r.line, text));
                    }
                }
                _ => {}
            },
            "reasoning" => {
                for key in ["summary", "content"] {
                    let parts: Vec<&str> = p
                        .get(key)
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|s| s.get("text").and_then(Value::as_str))
                        .collect();
                    self.reasoning_items.insert(hash(&parts.join("\n\n")));
                    for part in parts {
                        self.reasoning_items.insert(hash(part));
                    }
                }
            }
            "function_call" | "local_shell_call" if self.cwd_hint.is_none() => {
                let args = p
                    .get("arguments")
                    .and_then(Value::as_str)
                    .and_then(|a| serde_json::from_str::<Value>(a).ok());
                self.cwd_hint = args
                    .as_ref()
                    .and_then(|a| str_at(a, "/workdir"))
                    .or_else(|| str_at(p, "/action/working_directory"));
            }
            _ => {}
        }
    }

    fn add_event(&mut self, r: &Record, turn: &mut TurnWatch) {
        let p = &r.payload();
        match r.payload_type() {
            "task_started" | "turn_started" | "task_complete" | "turn_complete" => {
                *turn = TurnWatch::default();
            }
            "user_message" => {
                if let Some(m) = p.get("message").and_then(Value::as_str) {
                    if self.first_user_text.is_none() {
                        self.first_user_text = Some(m.trim().to_owned());
                    }
                    self.user_events.insert(hash(m));
                    turn.user_seen = true;
                }
            }
            "item_completed" => {
                let item = p.get("item").unwrap_or(&Value::Null);
                if item.get("type").and_then(Value::as_str) == Some("UserMessage") {
                    self.user_events.insert(hash(&message::text(item)));
                    turn.user_seen = true;
                }
            }
            "token_count" => {
                if let Some(t) = p
                    .pointer("/info/total_token_usage/total_tokens")
                    .and_then(Value::as_i64)
                {
                    self.tokens_used = Some(t);
                }
            }
            "thread_name_updated" => {
                if let Some(n) = p.get("thread_name").and_then(Value::as_str) {
                    self.renames.insert(n.to_owned());
                }
            }
            _ => {}
        }
    }
}

/// Whether the first pass reads a record of `kind` and `payload_type` (what [`FirstPass::add`]
/// and, when `linking` children, [`FirstPass::link_children`] look at); of the others it needs
/// only the time. Most of a rollout's bytes are tool output the first pass never reads; the
/// lines are still read twice and checked, but not built into values twice: on the bench's
/// 256 MiB Codex home, 3-4 % less user time (alternated: 6.3-7.0 -> 6.35-6.6 s, so within the
/// machine's noise at its worst). A case [`FirstPass::add`] or [`FirstPass::link_children`]
/// learns to look at must be added here: the test
/// `skimming_learns_what_reading_every_line_learns` holds the two together on the samples.
fn reads(kind: &Kind, payload_type: &str, linking: bool) -> bool {
    match kind {
        Kind::ResponseItem => match payload_type {
            "function_call_output" | "custom_tool_call_output" | "custom_tool_call" => linking,
            _ => true,
        },
        Kind::EventMsg => matches!(
            payload_type,
            "task_started"
                | "turn_started"
                | "task_complete"
                | "turn_complete"
                | "user_message"
                | "item_completed"
                | "token_count"
                | "thread_name_updated"
        ),
        _ => true,
    }
}

/// Per-turn facts for telling a compaction summary from an answer.
#[derive(Debug, Default)]
struct TurnWatch {
    user_seen: bool,
    phaseless_assistant: Option<(u64, String)>,
}

/// A string at a JSON pointer.
pub fn str_at(v: &Value, pointer: &str) -> Option<String> {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codex::rollout::discover;

    /// The first pass learns the same from a rollout whether it parses every line or only the
    /// lines [`reads`] takes, linking children or not: on every rollout of the Codex sample
    /// (every format Codex has written, subagent threads, compactions, a `.zst` one).
    #[test]
    fn skimming_learns_what_reading_every_line_learns() {
        let home = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/codex/.codex");
        let diagnostics = Diagnostics::new();
        let files = discover(&home, &diagnostics);
        assert!(files.len() >= 4, "{files:?}");
        let every = |_: &Kind, _: &str, _: bool| true;
        for f in &files {
            let ids: Vec<String> = files.iter().filter_map(|f| f.name_id.clone()).collect();
            for children in [&[][..], &ids[..]] {
                let open = || Lines::open(f, false).unwrap();
                let skimmed = FirstPass::reading(open(), children, &diagnostics, reads);
                let read = FirstPass::reading(open(), children, &diagnostics, every);
                assert!(skimmed == read, "{}: {skimmed:#?} against {read:#?}", f.rel);
            }
        }
    }
}
