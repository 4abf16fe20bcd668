//! A rollout Codex lists and resumes, built from a conversation carried from elsewhere
//! (spec/harnesses/codex.md §12).
//!
//! The shape is the legacy one Codex 0.142 writes (no `ordinal`, no `history_mode`), which
//! every build measured lists and reads:
//!
//! ```text
//! session_meta                       first line, interactive `source: "cli"`
//! per turn: event_msg task_started, turn_context,
//!           response_item message (user) + event_msg user_message
//!           ... agent messages (item + event), reasoning (event only),
//!           function_call + function_call_output (same call_id), ...
//!           event_msg task_complete
//! ```
//!
//! Rules that keep the model API and Codex's reader happy: `arguments` is a JSON string, every
//! call has exactly one output, reasoning from elsewhere is never sent back to the model as a
//! `reasoning` item (only shown, through `agent_reasoning` events) and no `encrypted_content`
//! is made up. A call from another harness is named `<harness>__<tool>`, never a Codex tool
//! name Codex could run again; its ACP title, kind, content and status travel in the item's
//! `_meta` (Codex ignores fields it does not know), so reading the rollout back gives the same
//! tool call.

use serde_json::{Map, Value, json};

use super::ids;
use super::settings::{self, TurnSettings};
use super::time::{self, Nanos};
use crate::kit::acp::ToolStatus;
use crate::kit::conversation::{Item, Message, ToolCall};

/// The Codex version whose rollout format is written.
pub const FORMAT_VERSION: &str = "0.142.5";
/// The `originator` of rollouts asp writes.
pub const ORIGINATOR: &str = "asp";
/// A model for `turn_context` when neither the session nor the destination's config names
/// one Codex can run (the default of the Codex builds measured).
pub const DEFAULT_MODEL: &str = "gpt-5.5";

/// What the destination's `config.toml` would start a new session with.
#[derive(Debug, Clone, Default)]
pub struct Defaults {
    pub settings: TurnSettings,
    pub model_provider: Option<String>,
}

/// A rollout ready to write, and what the thread index needs to know about it.
#[derive(Debug, Clone)]
pub struct Built {
    pub bytes: Vec<u8>,
    /// Kinds of `session/update` a rollout has no place for, left out (in stream order).
    pub dropped: Vec<String>,
    /// Settings the stream chose that Codex cannot run (`model "claude-opus-4-6"`), in stream
    /// order, each once: the thread runs with [`Built::settings`] instead.
    pub not_run: Vec<String>,
    pub start: Nanos,
    pub end: Nanos,
    pub first_prompt: Option<String>,
    pub settings: TurnSettings,
    pub model_provider: String,
    pub user_turns: usize,
}

/// The `sandbox_policy` of `turn_context` for a sandbox mode.
pub fn sandbox_policy(mode: &str) -> Value {
    match mode {
        "workspace-write" => json!({"type": "workspace-write", "writable_roots": [],
            "network_access": false, "exclude_tmpdir_env_var": false, "exclude_slash_tmp": false}),
        other => json!({ "type": other }),
    }
}

/// The first RFC 3339 `timestamp` in any `_meta` namespace of a list of metas.
fn meta_time<'a>(metas: impl IntoIterator<Item = &'a Map<String, Value>>) -> Option<Nanos> {
    metas.into_iter().find_map(|m| {
        m.values().find_map(|ns| {
            ns.get("timestamp")
                .and_then(Value::as_str)
                .and_then(time::parse)
        })
    })
}

fn item_time(item: &Item) -> Option<Nanos> {
    match item {
        Item::User(m) | Item::Agent(m) | Item::Thought(m) => meta_time(&m.metas),
        Item::Tool(t) => meta_time([&t.meta]),
        Item::Plan { meta, .. } => meta_time(meta.as_ref()),
        Item::Other(v) => meta_time(v.get("_meta").and_then(Value::as_object)),
    }
}

/// The first time a conversation records (a `timestamp` in some update's `_meta`).
pub fn first_time(items: &[Item]) -> Option<Nanos> {
    items.iter().find_map(item_time)
}

struct Builder {
    lines: Vec<u8>,
    now: Nanos,
    thread_id: String,
    turn: usize,
    cwd: String,
    settings: TurnSettings,
    codex_origin: bool,
    harness: String,
    plans: usize,
}

impl Builder {
    fn line(&mut self, ty: &str, payload: Value) {
        let v = json!({"timestamp": time::format_millis(self.now), "type": ty, "payload": payload});
        self.lines.extend_from_slice(v.to_string().as_bytes());
        self.lines.push(b'\n');
    }

    fn advance(&mut self, item: &Item) {
        if let Some(t) = item_time(item) {
            self.now = self.now.max(t);
        }
    }

    fn turn_id(&self) -> String {
        let ms = time::millis(self.now);
        ids::derive_v7(
            ms,
            format!("{}\0turn\0{}", self.thread_id, self.turn).as_bytes(),
        )
    }

    fn begin_turn(&mut self) -> String {
        self.turn += 1;
        let turn_id = self.turn_id();
        self.line(
            "event_msg",
            json!({"type": "task_started", "turn_id": turn_id,
            "collaboration_mode_kind": "default"}),
        );
        let s = &self.settings;
        let mut tc = json!({
            "turn_id": turn_id,
            "cwd": self.cwd,
            "approval_policy": s.approval.as_deref().unwrap_or("on-request"),
            "sandbox_policy": sandbox_policy(s.sandbox.as_deref().unwrap_or("workspace-write")),
            "model": s.model.as_deref().unwrap_or(DEFAULT_MODEL),
        });
        if let Some(e) = &s.effort {
            tc["effort"] = json!(e);
        }
        tc["summary"] = json!("auto");
        self.line("turn_context", tc);
        turn_id
    }

    fn end_turn(&mut self, turn_id: &str, last_agent: Option<&str>) {
        self.line(
            "event_msg",
            json!({"type": "task_complete", "turn_id": turn_id,
            "last_agent_message": last_agent}),
        );
    }

    fn user(&mut self, m: &Message) -> String {
        let mut content = Vec::new();
        let mut texts = Vec::new();
        let mut images = Vec::new();
        for b in &m.blocks {
            match b.get("type").and_then(Value::as_str) {
                Some("text") => {
                    let t = b.get("text").and_then(Value::as_str).unwrap_or("");
                    texts.push(t.to_owned());
                    content.push(json!({"type": "input_text", "text": t}));
                }
                Some("image") => {
                    let data = b.get("data").and_then(Value::as_str).unwrap_or("");
                    let mime = b
                        .get("mimeType")
                        .and_then(Value::as_str)
                        .unwrap_or("image/png");
                    let url = format!("data:{mime};base64,{data}");
                    images.push(url.clone());
                    content.push(json!({"type": "input_image", "image_url": url}));
                }
                _ => {
                    let t = placeholder(b);
                    texts.push(t.clone());
                    content.push(json!({"type": "input_text", "text": t}));
                }
            }
        }
        let text = texts.join("\n");
        self.line(
            "response_item",
            json!({"type": "message", "role": "user", "content": content}),
        );
        self.line(
            "event_msg",
            json!({"type": "user_message", "message": text,
            "images": images, "local_images": [], "text_elements": []}),
        );
        text
    }

    fn agent(&mut self, m: &Message) -> String {
        let text: Vec<String> = m
            .blocks
            .iter()
            .map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b
                    .get("text")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
                _ => placeholder(b),
            })
            .collect();
        let text = text.concat();
        let phase = m.meta("codex").and_then(|c| c.get("phase")).cloned();
        let mut item = json!({"type": "message", "role": "assistant",
            "content": [{"type": "output_text", "text": text}]});
        let mut event = json!({"type": "agent_message", "message": text});
        if let Some(p) = phase.filter(|p| !p.is_null()) {
            item["phase"] = p.clone();
            event["phase"] = p;
        }
        self.line("response_item", item);
        self.line("event_msg", event);
        text
    }

    fn thought(&mut self, m: &Message) {
        let text = m.text();
        if !text.trim().is_empty() {
            self.line(
                "event_msg",
                json!({"type": "agent_reasoning", "text": text}),
            );
        }
    }

    fn plan(&mut self, entries: &[Value], meta: Option<&Map<String, Value>>) {
        self.plans += 1;
        let codex = meta.and_then(|m| m.get("codex"));
        let call_id = codex
            .and_then(|c| c.get("callId"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("plan-{}", self.plans));
        let steps: Vec<Value> = entries
            .iter()
            .map(|e| {
                json!({"step": e.get("content").and_then(Value::as_str).unwrap_or(""),
                "status": e.get("status").and_then(Value::as_str)
                        .filter(|s| matches!(*s, "completed" | "in_progress"))
                        .unwrap_or("pending")})
            })
            .collect();
        let mut args = json!({"plan": steps});
        if let Some(e) = codex.and_then(|c| c.get("explanation")) {
            args["explanation"] = e.clone();
        }
        self.line(
            "response_item",
            json!({"type": "function_call", "name": "update_plan",
            "arguments": args.to_string(), "call_id": call_id}),
        );
        self.line(
            "response_item",
            json!({"type": "function_call_output", "call_id": call_id,
            "output": "Plan updated"}),
        );
    }

    /// A Codex compaction read from a rollout goes back as a `compacted` line.
    fn compaction(&mut self, t: &ToolCall) -> bool {
        let Some(payload) = t.meta.get("codex").and_then(|c| c.get("compacted")) else {
            return false;
        };
        if !self.codex_origin {
            return false;
        }
        self.line("compacted", payload.clone());
        self.line("event_msg", json!({"type": "context_compacted"}));
        true
    }

    fn tool(&mut self, t: &ToolCall) {
        if self.compaction(t) {
            return;
        }
        let codex = t.meta.get("codex").and_then(Value::as_object);
        let native_type = codex.and_then(|c| c.get("type")).and_then(Value::as_str);
        let output_text = tool_output_text(t);
        let status = t.status.unwrap_or(ToolStatus::Failed);
        let finished = matches!(status, ToolStatus::Completed | ToolStatus::Failed);
        let output_text = if finished {
            output_text
        } else {
            "The tool call did not finish; no result was recorded.".to_owned()
        };
        if self.codex_origin
            && let (Some(ty), Some(name)) = (
                native_type,
                codex.and_then(|c| c.get("name")).and_then(Value::as_str),
            )
            && self.codex_call(t, ty, name, &output_text)
        {
            return;
        }
        // A call from another harness: history only, under a name Codex has no tool for.
        let tool = crate::kit::tool_names::source_name(&t.meta)
            .map(str::to_owned)
            .unwrap_or_else(|| {
                serde_json::to_value(t.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_else(|| "tool".into())
            });
        let name = crate::kit::tool_names::api_safe(&format!("{}__{tool}", self.harness))
            .unwrap_or_else(|| "tool".to_owned());
        let arguments = match &t.raw_input {
            Some(v) => v.to_string(),
            None => "{}".to_owned(),
        };
        let mut call_meta = Map::new();
        let mut asp = json!({"title": t.title, "kind": t.kind});
        if !t.content.is_empty() {
            asp["content"] = Value::Array(t.content.clone());
        }
        if !t.locations.is_empty() {
            asp["locations"] = Value::Array(t.locations.clone());
        }
        call_meta.insert("asp".into(), asp);
        for (ns, v) in &t.meta {
            if ns != "asp" && ns != "codex" {
                call_meta.insert(ns.clone(), v.clone());
            }
        }
        self.line(
            "response_item",
            json!({"type": "function_call", "name": name,
            "arguments": arguments, "call_id": t.id, "_meta": call_meta}),
        );
        let mut out_asp =
            json!({"status": status_name(if finished { status } else { ToolStatus::Failed })});
        if !t.content.is_empty() {
            out_asp["content"] = Value::Array(t.content.clone());
        }
        if let Some(r) = &t.raw_output
            && r.as_str() != Some(output_text.as_str())
        {
            out_asp["rawOutput"] = r.clone();
        }
        self.line(
            "response_item",
            json!({"type": "function_call_output", "call_id": t.id,
            "output": output_text, "_meta": {"asp": out_asp}}),
        );
    }

    /// A call read from a Codex rollout goes back under its own item type and name.
    fn codex_call(&mut self, t: &ToolCall, ty: &str, name: &str, output: &str) -> bool {
        let ns = t
            .meta
            .get("codex")
            .and_then(|c| c.get("namespace"))
            .cloned();
        let input = t.raw_input.clone().unwrap_or(Value::Null);
        let raw_out = t.raw_output.clone().unwrap_or_else(|| json!(output));
        let out = if raw_out.is_string() || raw_out.is_array() {
            raw_out.clone()
        } else {
            json!(raw_out.to_string())
        };
        match ty {
            "function_call" => {
                let args = match &input {
                    Value::String(s) => s.clone(),
                    v => v.to_string(),
                };
                let mut call = json!({"type": "function_call", "name": name, "arguments": args, "call_id": t.id});
                if let Some(ns) = ns {
                    call["namespace"] = ns;
                }
                self.line("response_item", call);
                self.line(
                    "response_item",
                    json!({"type": "function_call_output", "call_id": t.id, "output": out}),
                );
            }
            "custom_tool_call" => {
                let input = input
                    .as_str()
                    .map_or_else(|| input.to_string(), str::to_owned);
                self.line(
                    "response_item",
                    json!({"type": "custom_tool_call", "status": "completed",
                    "call_id": t.id, "name": name, "input": input}),
                );
                self.line(
                    "response_item",
                    json!({"type": "custom_tool_call_output", "call_id": t.id, "output": out}),
                );
            }
            "local_shell_call" => {
                self.line(
                    "response_item",
                    json!({"type": "local_shell_call", "call_id": t.id,
                    "status": "completed", "action": input}),
                );
                self.line(
                    "response_item",
                    json!({"type": "function_call_output", "call_id": t.id, "output": out}),
                );
            }
            "web_search_call" => {
                let status = if t.failed() { "failed" } else { "completed" };
                self.line(
                    "response_item",
                    json!({"type": "web_search_call", "id": t.id,
                    "status": status, "action": input}),
                );
            }
            "tool_search_call" => {
                self.line(
                    "response_item",
                    json!({"type": "tool_search_call", "call_id": t.id,
                    "status": "completed", "execution": "client", "arguments": input}),
                );
                self.line(
                    "response_item",
                    json!({"type": "tool_search_output", "call_id": t.id,
                    "status": "completed", "execution": "client",
                    "tools": t.raw_output.clone().unwrap_or_else(|| json!([]))}),
                );
            }
            _ => return false,
        }
        true
    }
}

fn status_name(s: ToolStatus) -> &'static str {
    match s {
        ToolStatus::Pending => "pending",
        ToolStatus::InProgress => "in_progress",
        ToolStatus::Completed => "completed",
        ToolStatus::Failed => "failed",
    }
}

/// Text for a content block a Codex message cannot hold.
fn placeholder(b: &Value) -> String {
    match b.get("type").and_then(Value::as_str) {
        Some("resource_link") => format!(
            "[{}]",
            b.get("uri").and_then(Value::as_str).unwrap_or("resource")
        ),
        Some("resource") => b
            .pointer("/resource/text")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| {
                format!(
                    "[{}]",
                    b.pointer("/resource/uri")
                        .and_then(Value::as_str)
                        .unwrap_or("resource")
                )
            }),
        Some("image") => "[image]".to_owned(),
        Some("audio") => "[audio]".to_owned(),
        _ => String::new(),
    }
}

/// What the model is shown as a call's result.
fn tool_output_text(t: &ToolCall) -> String {
    let text = t.content_text();
    if !text.is_empty() {
        return text;
    }
    match &t.raw_output {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Null) | None => {
            if t.failed() {
                "The tool call failed.".to_owned()
            } else {
                String::new()
            }
        }
        Some(v) => v.to_string(),
    }
}

/// Settings changes recorded in the stream, kept when Codex can run them; a model, effort or
/// mode it cannot is added to `not_run` (once).
fn apply_settings(s: &mut TurnSettings, update: &Value, not_run: &mut Vec<String>) {
    let mut set = |id: &str, v: &str| {
        let ran = match id {
            settings::MODEL if settings::is_codex_model(v) => {
                s.model = Some(v.to_owned());
                true
            }
            settings::EFFORT if settings::EFFORTS.contains(&v) => {
                s.effort = Some(v.to_owned());
                true
            }
            settings::MODE => match settings::parse_mode(v) {
                Some((a, sb)) => {
                    s.approval = Some(a.to_owned());
                    s.sandbox = Some(sb.to_owned());
                    true
                }
                None => false,
            },
            // Another harness's option (Claude Code's `effort`): nothing in Codex takes it.
            _ => false,
        };
        let said = format!("{} {v:?}", if id == settings::MODE { "mode" } else { id });
        if !ran && !not_run.contains(&said) {
            not_run.push(said);
        }
    };
    match update.get("sessionUpdate").and_then(Value::as_str) {
        Some("current_mode_update") => {
            if let Some(m) = update.get("currentModeId").and_then(Value::as_str) {
                set(settings::MODE, m);
            }
        }
        Some("config_option_update") => {
            for o in update
                .get("configOptions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let (Some(id), Some(v)) = (
                    o.get("id").and_then(Value::as_str),
                    o.get("currentValue").and_then(Value::as_str),
                ) {
                    set(id, v);
                }
            }
        }
        _ => {}
    }
}

/// What a built rollout is about.
#[derive(Debug, Clone)]
pub struct Source<'a> {
    pub thread_id: &'a str,
    pub cwd: &'a str,
    /// The harness the conversation came from (`claude-code`); `codex` for a Codex session
    /// that lost its native file.
    pub harness: &'a str,
    pub start: Nanos,
    pub defaults: &'a Defaults,
    /// The git branch it was on, when its harness kept one ([`crate::kit::git_branch`]):
    /// `session_meta.git.branch`, as Codex writes it in a repository.
    pub git_branch: Option<&'a str>,
}

/// Builds the rollout of a conversation.
pub fn build(src: &Source<'_>, items: &[Item]) -> Built {
    let codex_origin = src.harness == super::NAME;
    // Settings: the destination's defaults, then what the conversation itself says (where
    // Codex can run it), applied from the turn they change.
    let mut b = Builder {
        lines: Vec::new(),
        now: src.start,
        thread_id: src.thread_id.to_owned(),
        turn: 0,
        cwd: src.cwd.to_owned(),
        settings: src.defaults.settings.clone(),
        codex_origin,
        harness: src.harness.to_owned(),
        plans: 0,
    };
    let model_provider = src
        .defaults
        .model_provider
        .clone()
        .unwrap_or_else(|| "openai".into());
    // Settings before the first user message apply from the first turn.
    let mut not_run = Vec::new();
    for item in items.iter().take_while(|i| !matches!(i, Item::User(_))) {
        if let Item::Other(v) = item {
            apply_settings(&mut b.settings, v, &mut not_run);
        }
    }
    let mut meta = json!({
        "id": src.thread_id,
        "timestamp": time::format_millis(src.start),
        "cwd": src.cwd,
        "originator": ORIGINATOR,
        "cli_version": FORMAT_VERSION,
        "source": "cli",
        "thread_source": "user",
        "model_provider": model_provider,
    });
    if let Some(branch) = src.git_branch {
        // Codex writes `git` only in a repository, with what it knows of it; the branch is
        // what a carried session knows.
        meta["git"] = json!({"branch": branch});
    }
    b.line("session_meta", meta);
    let mut first_prompt = None;
    let mut dropped: Vec<String> = Vec::new();
    let mut user_turns = 0;
    let mut turn: Option<String> = None;
    let mut last_agent: Option<String> = None;
    for item in items {
        b.advance(item);
        if let Item::User(m) = item {
            if let Some(t) = turn.take() {
                b.end_turn(&t, last_agent.take().as_deref());
            }
            turn = Some(b.begin_turn());
            let text = b.user(m);
            user_turns += 1;
            if first_prompt.is_none() && !text.trim().is_empty() {
                first_prompt = Some(text.trim().to_owned());
            }
            continue;
        }
        if let Item::Other(v) = item {
            let kind = v
                .get("sessionUpdate")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            if matches!(kind, "current_mode_update" | "config_option_update") {
                apply_settings(&mut b.settings, v, &mut not_run);
            } else if kind != "session_info_update" && !dropped.iter().any(|k| k == kind) {
                // (The title travels as the session's own field, into the thread name.)
                dropped.push(kind.to_owned());
            }
            continue;
        }
        if turn.is_none() {
            turn = Some(b.begin_turn());
        }
        match item {
            Item::Agent(m) => last_agent = Some(b.agent(m)),
            Item::Thought(m) => b.thought(m),
            Item::Tool(t) => b.tool(t),
            Item::Plan { entries, meta } => b.plan(entries, meta.as_ref()),
            Item::User(_) | Item::Other(_) => {}
        }
    }
    if let Some(t) = turn.take() {
        b.end_turn(&t, last_agent.as_deref());
    }
    Built {
        bytes: b.lines,
        start: src.start,
        end: b.now,
        first_prompt,
        settings: b.settings,
        model_provider,
        user_turns,
        dropped,
        not_run,
    }
}
