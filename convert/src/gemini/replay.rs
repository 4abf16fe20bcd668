//! A replayed Gemini chat as an ACP `session/update` stream.
//!
//! The mapping is cleaner than Gemini's own replay (`acpSession.streamHistory`), which shows
//! injected context and tool results as user messages and every tool call once with its final
//! status. Here: typed prompts → `user_message_chunk`; each gemini message → its thoughts
//! (`**subject**\ndescription`), its text, then per tool call a `pending` `tool_call` with the
//! arguments and a `tool_call_update` with status, content and raw result (a successful
//! `write_todos` adds a `plan`), then `usage_update` from its `tokens`. UI lines
//! (`info`/`warning`/`error`) are not conversation and go under the session's `_meta.gemini`.
//! Native detail ACP cannot hold goes under `_meta.gemini`; subagent links under `_meta.asp`.

use std::collections::{HashMap, HashSet};

use asp_format::blob::BlobSink;
use asp_format::update::UpdateWriter;
use serde_json::{Map, Value, json};

use crate::error::ConvertError;
use crate::kit::acp::{self, Chunk, ToolFields, ToolStatus, Update};
use crate::kit::text::collapse_whitespace;

use super::calls;
use super::log::{Chat, TitleEvent, is_injected, parts_text, type_of, user_prompt_text};

/// The context window `usage_update.size` reports: `tokenLimit()` of every current Gemini
/// model (Gemma 4 models have 256k).
fn context_size(model: Option<&str>) -> u64 {
    match model {
        Some(m) if m.starts_with("gemma-4") => 256_000,
        _ => 1_048_576,
    }
}

/// What converting one chat found out besides its updates.
#[derive(Debug, Default)]
pub struct Converted {
    /// The stream's blob.
    pub updates: Option<asp_format::Descriptor>,
    pub title: String,
    /// The session's `_meta.gemini`.
    pub meta: Map<String, Value>,
    /// Every `invoke_agent` call with a subagent chat.
    pub subagent_calls: Vec<SubagentCall>,
}

/// A call that started a subagent whose chat is stored under this chat.
#[derive(Debug, Clone)]
pub struct SubagentCall {
    /// The subagent's `agentId`: its chat's session id.
    pub agent: String,
    /// The tool call id.
    pub call: String,
    /// The task the call gave the subagent (its `prompt`), on one line: the subagent's title.
    pub task: Option<String>,
}

/// Converts a replayed chat into its update stream. `subagent_chats` holds the session ids of
/// the subagent chats stored under this chat, so calls that started one link to it.
pub fn convert(
    chat: &Chat,
    session_id: &str,
    cwd: Option<&str>,
    subagent_chats: &HashSet<String>,
    sink: &dyn BlobSink,
    base: Option<asp_format::Descriptor>,
) -> Result<Converted, ConvertError> {
    let mut out = Converted::default();
    let mut w = Stream {
        writer: UpdateWriter::derived(sink, base)?,
        session_id,
    };
    let responses = function_responses(&chat.messages);
    let present: HashSet<&str> = chat
        .messages
        .iter()
        .filter_map(|m| m.get("id").and_then(Value::as_str))
        .collect();
    let mut ui = Vec::new();
    let titles = stream_titles(chat);

    for t in titles.iter().filter(|t| t.after.is_none()) {
        w.push(&title_update(&t.title))?;
    }
    for m in &chat.messages {
        match type_of(m) {
            "user" => {
                for u in stamped(user_updates(m), m) {
                    w.push(&u)?;
                }
            }
            "gemini" => {
                let updates = gemini_updates(m, &responses, cwd, subagent_chats, &mut out);
                // A message with tool calls is dated by them (each carries its own time).
                let calls = m
                    .get("toolCalls")
                    .and_then(Value::as_array)
                    .is_some_and(|c| !c.is_empty());
                for u in if calls { updates } else { stamped(updates, m) } {
                    w.push(&u)?;
                }
            }
            // `info`, `warning`, `error`: UI lines, not conversation (and anything newer).
            _ => ui.push(Value::Object(m.clone())),
        }
        let id = m.get("id").and_then(Value::as_str);
        for t in titles
            .iter()
            .filter(|t| t.after.as_deref() == id && id.is_some())
        {
            w.push(&title_update(&t.title))?;
        }
    }
    // Titles set after messages that were later rewound away still hold.
    for t in &titles {
        if let Some(after) = &t.after
            && !present.contains(after.as_str())
        {
            w.push(&title_update(&t.title))?;
        }
    }
    out.updates = Some(w.writer.finish()?);
    out.title = title_of(chat);

    let meta = &mut out.meta;
    for key in [
        "projectHash",
        "startTime",
        "kind",
        "directories",
        "memoryScratchpad",
    ] {
        if let Some(v) = chat.meta.get(key) {
            meta.insert(key.to_owned(), v.clone());
        }
    }
    if !ui.is_empty() {
        meta.insert("uiMessages".to_owned(), Value::Array(ui));
    }
    Ok(out)
}

struct Stream<'a> {
    writer: UpdateWriter<'a>,
    session_id: &'a str,
}

impl Stream<'_> {
    fn push(&mut self, u: &Update) -> Result<(), ConvertError> {
        Ok(self.writer.push(&u.notification(self.session_id))?)
    }
}

fn title_update(title: &str) -> Update {
    Update::SessionInfoUpdate {
        title: Some(title.to_owned()),
        updated_at: None,
        meta: None,
    }
}

/// The `summary` events the stream carries as `session_info_update`s. A subagent chat's
/// `$set` after its messages is its result, not a title ([`summary_title`]): left out, so
/// the stream never ends on a title the session's own (its task) contradicts. Nothing reads
/// a title back from the stream where the session has one (every writer takes the session's
/// title, the hub's fallback is the first prompt, which is the task), so no task title is
/// put in its place: Gemini recorded none.
fn stream_titles(chat: &Chat) -> Vec<&TitleEvent> {
    let subagent = chat.str_meta("kind") == Some("subagent");
    chat.titles
        .iter()
        .filter(|t| !subagent || t.after.is_none())
        .collect()
}

/// The session's title: the last `summary` ([`summary_title`]), else the first prompt that
/// survived the replay (what the person typed, `displayContent`, when it differs from what was
/// sent), on one line. A subagent's chat without a title of its own is titled with its first
/// prompt, the task it was given (the reader prefers the task as the parent's call states it,
/// [`SubagentCall::task`]).
pub fn title_of(chat: &Chat) -> String {
    if let Some(s) = summary_title(chat) {
        return s.to_owned();
    }
    chat.messages
        .iter()
        .filter(|m| type_of(m) == "user")
        .find_map(|m| {
            let typed = m
                .get("displayContent")
                .map(|d| parts_text(Some(d), true))
                .filter(|t| !t.trim().is_empty());
            typed.or_else(|| user_prompt_text(m))
        })
        .map(|t| collapse_whitespace(&t))
        .unwrap_or_default()
}

/// The chat's `summary` when it is a title. Gemini sets a subagent chat's `summary` when the
/// subagent finishes, by a `$set` after its messages, to its result (the report, often JSON, cut
/// to 197 characters): not a title. A subagent chat's title is a `summary` its metadata holds
/// before any message, where a writer puts the title of a session it composes.
pub fn summary_title(chat: &Chat) -> Option<&str> {
    if chat.str_meta("kind") == Some("subagent") {
        chat.titles
            .iter()
            .rev()
            .find(|t| t.after.is_none())
            .map(|t| t.title.as_str())
    } else {
        chat.str_meta("summary")
    }
}

/// The task a call that starts a subagent gives it, on one line: `invoke_agent`'s `prompt`
/// (an agent called as a tool of its own name took an `objective` or a `task`).
fn subagent_task(args: &Value) -> Option<String> {
    ["prompt", "objective", "task"]
        .iter()
        .find_map(|k| args.get(*k).and_then(Value::as_str))
        .map(collapse_whitespace)
        .filter(|t| !t.is_empty())
}

/// The `functionResponse` parts of a chat's user records, by call id.
type Responses<'a> = HashMap<&'a str, &'a Value>;

/// Every `functionResponse` part in user records, by call id (the first wins): tool results
/// recorded beside the call (since May 2026) or by a checkpoint's `<id>_response` record.
/// Borrowed from the chat: a response is cloned only into the one update that carries it.
fn function_responses(messages: &[Map<String, Value>]) -> Responses<'_> {
    let mut out = HashMap::new();
    for m in messages.iter().filter(|m| type_of(m) == "user") {
        if let Some(Value::Array(parts)) = m.get("content") {
            for p in parts {
                if let Some(fr) = p.get("functionResponse")
                    && let Some(id) = fr.get("id").and_then(Value::as_str)
                {
                    out.entry(id).or_insert(fr);
                }
            }
        }
    }
    out
}

fn chunk(content: Value, message_id: Option<&str>) -> Chunk {
    Chunk {
        content,
        message_id: message_id.map(str::to_owned),
        meta: None,
    }
}

/// `updates` of message `m`, the first one carrying the message's time as
/// `_meta.gemini.timestamp` (as a tool call carries its own), so a harness the conversation is
/// carried into dates each turn, not only the first. (Each costs the bundle about 0.2 %; a
/// gemini message with tool calls is not stamped, since they date it.)
fn stamped(mut updates: Vec<Update>, m: &Map<String, Value>) -> Vec<Update> {
    let (Some(first), Some(Value::String(t))) = (updates.first_mut(), m.get("timestamp")) else {
        return updates;
    };
    let meta = first.meta_mut().get_or_insert_with(acp::Meta::new);
    let gemini = meta.entry("gemini").or_insert_with(|| json!({}));
    if let Some(g) = gemini.as_object_mut() {
        g.entry("timestamp").or_insert_with(|| json!(t));
    }
    updates
}

/// A user record's updates: nothing for tool results and injected context; otherwise text
/// parts (adjacent ones joined), images, and files, in order.
fn user_updates(m: &Map<String, Value>) -> Vec<Update> {
    let id = m.get("id").and_then(Value::as_str);
    let content = m.get("content");
    let parts: Vec<Value> = match content {
        Some(Value::Array(a)) => a.clone(),
        Some(Value::String(s)) => vec![json!({"text": s})],
        Some(p @ Value::Object(_)) => vec![p.clone()],
        _ => Vec::new(),
    };
    let only_results =
        !parts.is_empty() && parts.iter().all(|p| p.get("functionResponse").is_some());
    if only_results || id.is_some_and(|i| i.ends_with("_response")) {
        return Vec::new();
    }
    if is_injected(&parts_text(content, true)) {
        return Vec::new();
    }
    let mut blocks = Vec::new();
    let mut text = String::new();
    let flush = |text: &mut String, blocks: &mut Vec<Value>| {
        if !text.trim().is_empty() {
            blocks.push(acp::text(std::mem::take(text)));
        }
        text.clear();
    };
    for p in &parts {
        if let Some(t) = p.get("text").and_then(Value::as_str) {
            text.push_str(t);
        } else if let Some(d) = p.get("inlineData") {
            flush(&mut text, &mut blocks);
            let mime = d.get("mimeType").and_then(Value::as_str).unwrap_or("");
            let data = d.get("data").and_then(Value::as_str).unwrap_or("");
            if mime.starts_with("image/") {
                blocks.push(acp::image(data, mime));
            } else {
                blocks.push(json!({"type": "resource", "resource": {
                    "uri": format!("data:{mime};base64,"), "mimeType": mime, "blob": data}}));
            }
        } else if let Some(f) = p.get("fileData") {
            flush(&mut text, &mut blocks);
            let uri = f.get("fileUri").and_then(Value::as_str).unwrap_or("");
            let name = uri.rsplit('/').next().unwrap_or(uri);
            let mut link = json!({"type": "resource_link", "uri": uri, "name": name});
            if let Some(mime) = f.get("mimeType") {
                link["mimeType"] = mime.clone();
            }
            blocks.push(link);
        }
    }
    flush(&mut text, &mut blocks);
    let mut updates: Vec<Update> = blocks
        .into_iter()
        .map(|b| Update::UserMessageChunk(chunk(b, id)))
        .collect();
    if let (Some(first), Some(dc)) = (updates.first_mut(), m.get("displayContent")) {
        *first = first
            .clone()
            .with_meta("gemini", json!({"displayContent": dc}));
    }
    updates
}

/// A gemini record's updates: thoughts, text, tool calls (with plans), usage.
fn gemini_updates(
    m: &Map<String, Value>,
    responses: &Responses<'_>,
    cwd: Option<&str>,
    subagent_chats: &HashSet<String>,
    out: &mut Converted,
) -> Vec<Update> {
    let id = m.get("id").and_then(Value::as_str);
    let mut updates = Vec::new();
    let thoughts = m
        .get("thoughts")
        .and_then(Value::as_array)
        .filter(|t| !t.is_empty());
    if let Some(thoughts) = thoughts {
        for t in thoughts {
            let subject = t.get("subject").and_then(Value::as_str).unwrap_or("");
            let description = t.get("description").and_then(Value::as_str).unwrap_or("");
            let text = if subject.is_empty() {
                description.to_owned()
            } else {
                format!("**{subject}**\n{description}")
            };
            updates.push(Update::AgentThoughtChunk(chunk(acp::text(text), id)));
        }
    } else if let Some(Value::Array(parts)) = m.get("content") {
        // After a checkpoint the content is the Part list sent to the model; readable
        // thoughts are text parts marked `thought`.
        for p in parts {
            if p.get("thought").and_then(Value::as_bool) == Some(true)
                && let Some(t) = p.get("text").and_then(Value::as_str)
            {
                updates.push(Update::AgentThoughtChunk(chunk(acp::text(t), id)));
            }
        }
    }
    let text = parts_text(m.get("content"), false);
    if !text.trim().is_empty() {
        updates.push(Update::AgentMessageChunk(chunk(acp::text(text), id)));
    }
    for call in m
        .get("toolCalls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        tool_updates(call, responses, cwd, subagent_chats, out, &mut updates);
    }
    if let Some(tokens) = m.get("tokens").filter(|t| t.is_object()) {
        let n = |k: &str| tokens.get(k).and_then(Value::as_u64).unwrap_or(0);
        let model = m.get("model").and_then(Value::as_str);
        let mut native = json!({"tokens": tokens});
        if let Some(model) = model {
            native["model"] = json!(model);
        }
        updates.push(
            Update::UsageUpdate {
                used: n("input") + n("output"),
                size: context_size(model),
                cost: None,
                meta: None,
            }
            .with_meta("gemini", native),
        );
    }
    updates
}

/// The raw result of a call: the `response` of its `functionResponse` (from the call's own
/// `result`, else from the user record that carried it), or the whole `result` when it is
/// something else.
fn raw_output(call: &Value, call_id: &str, responses: &Responses<'_>) -> Option<Value> {
    let result = call.get("result").filter(|r| !r.is_null());
    let parts: Vec<&Value> = match result {
        Some(Value::Array(a)) => a.iter().collect(),
        Some(v) => vec![v],
        None => Vec::new(),
    };
    let matching = parts
        .iter()
        .filter_map(|p| p.get("functionResponse"))
        .find(|fr| fr.get("id").and_then(Value::as_str) == Some(call_id))
        .or_else(|| {
            let frs: Vec<&Value> = parts
                .iter()
                .filter_map(|p| p.get("functionResponse"))
                .collect();
            (frs.len() == 1 && parts.len() == 1).then(|| frs[0])
        })
        .or_else(|| {
            parts
                .is_empty()
                .then(|| responses.get(call_id).copied())
                .flatten()
        });
    match matching {
        Some(fr) => fr.get("response").cloned(),
        None => result.cloned(),
    }
}

fn tool_updates(
    call: &Value,
    responses: &Responses<'_>,
    cwd: Option<&str>,
    subagent_chats: &HashSet<String>,
    out: &mut Converted,
    updates: &mut Vec<Update>,
) {
    let s = |k: &str| call.get(k).and_then(Value::as_str);
    let id = s("id").unwrap_or_default().to_owned();
    let name = s("name").unwrap_or_default();
    let args = call.get("args").cloned().unwrap_or_else(|| json!({}));
    let display = call.get("resultDisplay").filter(|d| !d.is_null());
    let title = s("displayName")
        .filter(|t| !t.is_empty())
        .or_else(|| calls::display_name(name))
        .unwrap_or(name)
        .to_owned();
    let kind = calls::kind_of(name);
    if name == "write_todos" && id.starts_with(calls::PLAN_CALL_PREFIX) {
        if let Some(entries) = calls::plan_entries(&args) {
            updates.push(Update::Plan {
                entries,
                meta: None,
            });
        }
        return;
    }

    let mut native = Map::new();
    native.insert("name".into(), json!(name));
    for key in [
        "description",
        "timestamp",
        "agentId",
        "renderOutputAsMarkdown",
    ] {
        if let Some(v) = call.get(key) {
            native.insert(key.into(), v.clone());
        }
    }
    let mut start = Update::ToolCall {
        tool_call_id: id.clone(),
        fields: ToolFields {
            title: Some(title),
            kind: Some(kind),
            status: Some(ToolStatus::Pending),
            locations: Some(calls::locations(&args, display, cwd)).filter(|l| !l.is_empty()),
            raw_input: Some(args.clone()),
            ..ToolFields::default()
        },
        meta: None,
    }
    .with_meta("gemini", Value::Object(native.clone()));
    let call_native = native;
    if let Some(agent) = s("agentId")
        && subagent_chats.contains(agent)
    {
        start = start.with_meta("asp", json!({"subagentSessionId": agent}));
        out.subagent_calls.push(SubagentCall {
            agent: agent.to_owned(),
            call: id.clone(),
            task: subagent_task(&args),
        });
    }
    updates.push(start);

    let raw_status = s("status").unwrap_or("");
    let status = calls::status_of(raw_status);
    let content = display.map_or(Some(Vec::new()), |d| calls::display_content(d, cwd));
    // Consumers fold a call's updates with `_meta` merged per namespace, later wins: the
    // update's `gemini` object therefore repeats the call's and adds to it.
    let mut native = call_native.clone();
    if !matches!(raw_status, "success" | "error") {
        native.insert("status".into(), json!(raw_status));
    }
    if let (None, Some(d)) = (&content, display) {
        native.insert("resultDisplay".into(), d.clone());
    }
    let extra = native.len() > call_native.len();
    let mut end = Update::ToolCallUpdate {
        tool_call_id: id.clone(),
        fields: ToolFields {
            status: Some(status),
            content: content.filter(|c| !c.is_empty()),
            raw_output: raw_output(call, &id, responses),
            ..ToolFields::default()
        },
        meta: None,
    };
    if extra {
        end = end.with_meta("gemini", Value::Object(native));
    }
    updates.push(end);

    if name == "write_todos"
        && status == ToolStatus::Completed
        && let Some(entries) = calls::plan_entries(&args)
    {
        updates.push(Update::Plan {
            entries,
            meta: None,
        });
    }
}

#[cfg(test)]
mod tests {
    use asp_format::blob::{BlobSource, MemoryStore};

    use super::*;
    use crate::gemini::log::replay_text;

    const TASK: &str = "Find where coupon codes are compared.";
    const RESULT: &str = r#"{\n  \"SummaryOfFindings\": \"Codes are compared case-sensitively in src/coupons.ts...\"\n}"#;

    /// A chat log: its metadata line (with `extra` keys), a prompt, an answer, then a `$set`
    /// of `summary` to `RESULT`, as Gemini appends it when a subagent finishes.
    fn log(extra: &str) -> String {
        [
            format!(r#"{{"sessionId":"s","projectHash":"h","startTime":"t0","lastUpdated":"t0"{extra}}}"#),
            format!(r#"{{"id":"u1","timestamp":"t1","type":"user","content":[{{"text":"{TASK}"}}]}}"#),
            r#"{"id":"g1","timestamp":"t2","type":"gemini","content":"Done."}"#.to_owned(),
            format!(r#"{{"$set":{{"summary":"{RESULT}"}}}}"#),
        ]
        .join("\n")
    }

    /// The chat's title and its stream's updates.
    fn convert_log(text: &str) -> (String, Vec<Value>) {
        let chat = replay_text(text);
        let store = MemoryStore::new();
        let out = convert(&chat, "s", None, &HashSet::new(), &store, None).unwrap();
        let bytes = store.read_all(&out.updates.unwrap()).unwrap();
        let updates = String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap()["update"].clone())
            .collect();
        (out.title, updates)
    }

    fn title_updates(updates: &[Value]) -> Vec<&str> {
        updates
            .iter()
            .filter(|u| u["sessionUpdate"] == "session_info_update")
            .map(|u| u["title"].as_str().unwrap())
            .collect()
    }

    fn kinds(updates: &[Value]) -> Vec<&str> {
        updates
            .iter()
            .map(|u| u["sessionUpdate"].as_str().unwrap())
            .collect()
    }

    #[test]
    fn a_main_chats_summary_is_a_title_update_where_it_was_set() {
        let result = RESULT.replace("\\n", "\n").replace("\\\"", "\"");
        for extra in ["", r#","kind":"main""#] {
            let (title, updates) = convert_log(&log(extra));
            assert_eq!(title, result);
            assert_eq!(
                kinds(&updates),
                [
                    "user_message_chunk",
                    "agent_message_chunk",
                    "session_info_update"
                ]
            );
            assert_eq!(title_updates(&updates), [result.as_str()]);
        }
    }

    #[test]
    fn a_subagents_result_summary_is_no_title_update() {
        let (title, updates) = convert_log(&log(r#","kind":"subagent""#));
        // Its title is its task (the reader prefers the task as its parent's call states it).
        assert_eq!(title, TASK);
        assert_eq!(
            kinds(&updates),
            ["user_message_chunk", "agent_message_chunk"]
        );
        assert!(title_updates(&updates).is_empty());
    }

    #[test]
    fn a_subagents_title_in_its_metadata_line_is_still_a_title_update() {
        // Where asp writes the title of a subagent chat it composes.
        let (title, updates) = convert_log(&log(
            r#","kind":"subagent","summary":"Check coupon lookups""#,
        ));
        assert_eq!(title, "Check coupon lookups");
        assert_eq!(updates[0]["sessionUpdate"], "session_info_update");
        assert_eq!(title_updates(&updates), ["Check coupon lookups"]);
    }
}
