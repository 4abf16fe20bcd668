//! A deterministic generator of realistic Codex CLI homes
//! (`~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl`).
//!
//! The same shape as [`super::claude`]'s homes: 20 projects, session sizes log-normal with
//! median about 250 KB (10th percentile about 60 KB, 95th about 1.6 MB), one session of 20 to
//! 35 MB per 256 MiB of store, most bytes source code read by `exec_command` (`cat`, `sed -n`)
//! from the project's files. Records follow Codex 0.142 field by field, taken from the
//! checked sample rollout (`samples/codex/.codex/sessions/2026/11/21/…`, `spec/harnesses/
//! codex.md`): the `session_meta` with its base instructions (about 20 KB in every rollout, as
//! Codex writes them; the sample keeps only their opening, the rest is made up to that size),
//! the first turn's developer and `AGENTS.md` messages, a `turn_context` per turn, each model
//! step as an `event_msg` and its `response_item` (reasoning, commentary, the final answer),
//! `exec_command` calls and their output, `apply_patch` custom tool calls with their
//! `patch_apply_end`, a `token_count` after every step, and every few megabytes a compaction
//! turn (the model's summary, `compacted` with the prompts since the last one as its
//! replacement history, `context_compacted`).

use std::fmt::Write as _;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use serde_json::{Value, json};

use super::claude::{Project, Rng, Shell, Summary, sessions};
use super::clock::Millis;

/// How Codex's model reads files: `sed -n` 200 lines, `rg` naming the file.
const SHELL: Shell = Shell {
    range: 200,
    stride: 7,
    search: "rg",
    named: true,
};

/// The sample rollout the fixed texts come from.
const SAMPLE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../samples/codex/.codex/sessions/2026/11/21/",
    "rollout-2026-11-21T14-03-20-01a1fe6b-30a4-77a2-b12a-76a63dd1d7e5.jsonl"
);

/// What every rollout repeats, from the sample: the base instructions, the first turn's
/// developer message and the `turn_context` (with the sample's `cwd` to replace).
struct Templates {
    base_instructions: Value,
    developer: Value,
    turn_context: Value,
}

impl Templates {
    fn load() -> Self {
        let text = fs::read_to_string(SAMPLE).expect("the Codex sample rollout");
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("sample line"))
            .collect();
        let find = |pred: &dyn Fn(&Value) -> bool| {
            lines
                .iter()
                .find(|l| pred(l))
                .expect("the sample has it")
                .clone()
        };
        let meta = find(&|l| l["type"] == "session_meta");
        let developer = find(&|l| l["payload"]["role"] == "developer");
        let turn_context = find(&|l| l["type"] == "turn_context");
        // Codex's base instructions run to about 20 KB (the sample keeps only their opening):
        // the same text in every rollout of a home, made up here to that size.
        let mut text = meta["payload"]["base_instructions"]["text"]
            .as_str()
            .expect("the sample's base instructions")
            .to_owned();
        let mut rng = Rng::new(0xba5e_1257);
        let words = Project::new(0, 0xba5e_1257);
        while text.len() < 20_000 {
            let _ = write!(text, "\n\n## {}\n", words.prose(&mut rng, 1, 3));
            for _ in 0..rng.range(3, 8) {
                let _ = write!(text, "\n- {}.", words.prose(&mut rng, 8, 30));
            }
        }
        Templates {
            base_instructions: json!({ "text": text }),
            developer: developer["payload"]["content"].clone(),
            turn_context: turn_context["payload"].clone(),
        }
    }
}

/// A UUIDv7: `millis` first, the rest random.
fn uuid_v7(rng: &mut Rng, millis: i64) -> String {
    let hex = format!("{:012x}", millis as u64 & 0xffff_ffff_ffff);
    let r = rng.next();
    let s = rng.next();
    format!(
        "{}-{}-7{:03x}-{:04x}-{:012x}",
        &hex[..8],
        &hex[8..],
        r & 0xfff,
        0x8000 | (r >> 16) & 0x3fff,
        s & 0xffff_ffff_ffff
    )
}

/// Writes one rollout line by line.
struct Rollout<'a> {
    out: BufWriter<fs::File>,
    bytes: u64,
    project: &'a Project,
    now: i64,
    turn_id: String,
    /// The user's prompts so far, for a compaction's replacement history.
    prompts: Vec<Value>,
    /// Tokens used so far.
    tokens: u64,
    window: (String, String),
    windows: u64,
}

impl Rollout<'_> {
    fn tick(&mut self, rng: &mut Rng, max_ms: u64) -> String {
        self.now += rng.range(20, max_ms) as i64;
        Millis(self.now).rfc3339()
    }

    fn line(&mut self, rng: &mut Rng, kind: &str, payload: Value) {
        let v = json!({"timestamp": self.tick(rng, 400), "type": kind, "payload": payload});
        let s = serde_json::to_string(&v).expect("serialises");
        self.out.write_all(s.as_bytes()).expect("write");
        self.out.write_all(b"\n").expect("write");
        self.bytes += s.len() as u64 + 1;
    }

    fn passthrough(&self) -> Value {
        json!({"turn_id": self.turn_id})
    }

    fn token_count(&mut self, rng: &mut Rng) {
        let input = rng.range(18_000, 90_000);
        let cached = input * 7 / 10;
        let output = rng.range(80, 1_500);
        let reasoning = output / 5;
        self.tokens += input + output;
        let last = json!({"input_tokens": input, "cached_input_tokens": cached,
            "output_tokens": output, "reasoning_output_tokens": reasoning,
            "total_tokens": input + output});
        let total = json!({"input_tokens": self.tokens, "cached_input_tokens": self.tokens * 7 / 10,
            "output_tokens": self.tokens / 60, "reasoning_output_tokens": self.tokens / 300,
            "total_tokens": self.tokens + self.tokens / 60});
        self.line(
            rng,
            "event_msg",
            json!({"type": "token_count", "info": {"total_token_usage": total,
                "last_token_usage": last, "model_context_window": 258_400},
                "rate_limits": {"limit_id": "codex", "limit_name": null, "primary": null,
                "secondary": null, "credits": null, "individual_limit": null,
                "plan_type": null, "rate_limit_reached_type": null}}),
        );
    }

    /// A model step's reasoning: the event, then the item with its encrypted content.
    fn reasoning(&mut self, rng: &mut Rng) {
        let title = self.project.prose(rng, 2, 5);
        let text = format!("**{title}**\n\n{}.", self.project.prose(rng, 8, 40));
        self.line(
            rng,
            "event_msg",
            json!({"type": "agent_reasoning", "text": text}),
        );
        let id = format!("rs_{}", rng.hex(48));
        let len = rng.range(60, 1200) as usize;
        let encrypted = format!("gAAAAAB{}==", rng.token(len));
        let p = self.passthrough();
        self.line(
            rng,
            "response_item",
            json!({"type": "reasoning", "id": id,
                "summary": [{"type": "summary_text", "text": text}], "content": null,
                "encrypted_content": encrypted, "internal_chat_message_metadata_passthrough": p}),
        );
    }

    /// What the agent says: the event, then the assistant message.
    fn agent_message(&mut self, rng: &mut Rng, text: &str, phase: &str) {
        self.line(
            rng,
            "event_msg",
            json!({"type": "agent_message", "message": text, "phase": phase,
                "memory_citation": null}),
        );
        self.assistant_item(rng, text, Some(phase));
    }

    /// The assistant's message as a `response_item` (`phase` as Codex sets it, none for a
    /// compaction's summary).
    fn assistant_item(&mut self, rng: &mut Rng, text: &str, phase: Option<&str>) {
        let id = format!("msg_{}", rng.hex(48));
        let mut item = json!({"type": "message", "id": id, "role": "assistant",
            "content": [{"type": "output_text", "text": text}]});
        if let Some(phase) = phase {
            item["phase"] = json!(phase);
        }
        item["internal_chat_message_metadata_passthrough"] = self.passthrough();
        self.line(rng, "response_item", item);
    }

    /// An `exec_command` reading a project file (whole, or a range of it), and its output.
    fn exec(&mut self, rng: &mut Rng) {
        let (_, rel, content) = self.project.pick_file(rng);
        let (cmd, body) = self.project.read_by_shell(rng, &rel, content, &SHELL);
        let call_id = format!("call_{}", rng.token(16));
        let args = serde_json::to_string(&json!({"cmd": cmd, "workdir": self.project.cwd,
            "yield_time_ms": 1000, "max_output_tokens": 12_000}))
        .expect("serialises");
        let p = self.passthrough();
        self.line(
            rng,
            "response_item",
            json!({"type": "function_call", "name": "exec_command", "arguments": args,
                "call_id": call_id, "internal_chat_message_metadata_passthrough": p}),
        );
        let output = format!(
            "Chunk ID: {}\nWall time: 0.0{:03} seconds\nProcess exited with code 0\nOriginal token count: {}\nOutput:\n{body}",
            rng.hex(6),
            rng.below(1000),
            body.len() / 4
        );
        let p = self.passthrough();
        self.line(
            rng,
            "response_item",
            json!({"type": "function_call_output", "call_id": call_id, "output": output,
                "internal_chat_message_metadata_passthrough": p}),
        );
    }

    /// An `apply_patch` of a few lines of a project file, and what it did.
    fn patch(&mut self, rng: &mut Rng) {
        let (path, rel, content) = self.project.pick_file(rng);
        let lines: Vec<&str> = content.lines().collect();
        let at = rng.below(lines.len() as u64) as usize;
        let old: Vec<&str> = lines[at..(at + 3).min(lines.len())].to_vec();
        let lines_new = rng.range(3, 30) as usize;
        let new = self.project.source(rng, lines_new);
        let mut hunk = String::from("@@\n");
        for l in &old {
            let _ = writeln!(hunk, "-{l}");
        }
        for l in new.lines() {
            let _ = writeln!(hunk, "+{l}");
        }
        let input = format!("*** Begin Patch\n*** Update File: {rel}\n{hunk}*** End Patch");
        let call_id = format!("call_{}", rng.token(16));
        let p = self.passthrough();
        self.line(
            rng,
            "response_item",
            json!({"type": "custom_tool_call", "status": "completed", "call_id": call_id,
                "name": "apply_patch", "input": input,
                "internal_chat_message_metadata_passthrough": p}),
        );
        let stdout = format!("Success. Updated the following files:\nM {rel}\n");
        let diff = format!(
            "@@ -{},{} +{},{} @@\n{}",
            at + 1,
            old.len(),
            at + 1,
            new.lines().count(),
            &hunk[3..]
        );
        let turn = self.turn_id.clone();
        self.line(
            rng,
            "event_msg",
            json!({"type": "patch_apply_end", "call_id": call_id, "turn_id": turn,
                "stdout": stdout, "stderr": "", "success": true,
                "changes": {path: {"type": "update", "unified_diff": diff, "move_path": null}},
                "status": "completed"}),
        );
        let p = self.passthrough();
        self.line(
            rng,
            "response_item",
            json!({"type": "custom_tool_call_output", "call_id": call_id,
                "output": format!("Exit code: 0\nWall time: 0 seconds\nOutput:\n{stdout}"),
                "internal_chat_message_metadata_passthrough": p}),
        );
    }

    /// A turn of its own in which Codex compacts the conversation: the model's summary, then
    /// the history replaced by the prompts since the last compaction and the summary.
    fn compact(&mut self, rng: &mut Rng) {
        self.turn_id = uuid_v7(rng, self.now);
        let turn = self.turn_id.clone();
        let started = self.now / 1000;
        self.line(
            rng,
            "event_msg",
            json!({"type": "task_started", "turn_id": turn, "started_at": started,
                "model_context_window": 258_400, "collaboration_mode_kind": "default"}),
        );
        self.token_count(rng);
        let said = format!(
            "Summary of the conversation so far: {}",
            self.project.prose(rng, 60, 200)
        );
        self.assistant_item(rng, &said, None);
        self.token_count(rng);
        let summary = format!(
            "Another language model started to solve this problem and produced a summary of its thinking process. {said}"
        );
        let mut history = std::mem::take(&mut self.prompts);
        let compacted = json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": summary}],
            "internal_chat_message_metadata_passthrough": self.passthrough()});
        history.push(compacted.clone());
        self.prompts.push(compacted);
        self.windows += 1;
        let previous = self.window.1.clone();
        let id = uuid_v7(rng, self.now);
        self.window.1 = id.clone();
        let first = self.window.0.clone();
        let n = self.windows;
        self.line(
            rng,
            "compacted",
            json!({"message": summary, "replacement_history": history, "window_number": n,
                "first_window_id": first, "previous_window_id": previous, "window_id": id}),
        );
        self.token_count(rng);
        self.line(rng, "event_msg", json!({"type": "context_compacted"}));
        let duration = rng.range(1_000, 6_000);
        let completed = (self.now + duration as i64) / 1000;
        self.line(
            rng,
            "event_msg",
            json!({"type": "task_complete", "turn_id": turn, "last_agent_message": null,
                "completed_at": completed, "duration_ms": duration}),
        );
    }
}

/// Writes one rollout of about `size` bytes in `project`, starting at `start` (ms).
fn session(
    codex: &Path,
    templates: &Templates,
    project: &Project,
    rng: &mut Rng,
    start: i64,
    size: u64,
    summary: &mut Summary,
) -> u64 {
    let id = uuid_v7(rng, start);
    let (y, m, d, h, mi, s, _) = Millis(start).parts();
    let dir = codex.join(format!("sessions/{y:04}/{m:02}/{d:02}"));
    fs::create_dir_all(&dir).expect("day dir");
    let file = dir.join(format!(
        "rollout-{y:04}-{m:02}-{d:02}T{h:02}-{mi:02}-{s:02}-{id}.jsonl"
    ));
    let window = uuid_v7(rng, start);
    let mut w = Rollout {
        out: BufWriter::new(fs::File::create(&file).expect("rollout")),
        bytes: 0,
        project,
        now: start + 6_000,
        turn_id: String::new(),
        prompts: Vec::new(),
        tokens: 0,
        window: (window.clone(), window),
        windows: 0,
    };
    let started = Millis(start).rfc3339();
    let commit = rng.hex(40);
    w.line(
        rng,
        "session_meta",
        json!({"session_id": id, "id": id, "timestamp": started, "cwd": project.cwd,
            "originator": "codex-tui", "cli_version": "0.142.5", "source": "cli",
            "thread_source": "user", "model_provider": "openai",
            "base_instructions": templates.base_instructions,
            "git": {"commit_hash": commit, "branch": project.branch,
                "repository_url": format!("git@github.com:acme/{}.git",
                    project.cwd.rsplit('/').next().unwrap_or("repo"))}}),
    );
    let mut first = true;
    let mut next_compaction = 3_000_000;
    while w.bytes < size {
        w.turn_id = uuid_v7(rng, w.now);
        let turn_started = w.now / 1000;
        let turn = w.turn_id.clone();
        w.line(
            rng,
            "event_msg",
            json!({"type": "task_started", "turn_id": turn, "started_at": turn_started,
                "model_context_window": 258_400, "collaboration_mode_kind": "default"}),
        );
        if first {
            let p = w.passthrough();
            w.line(
                rng,
                "response_item",
                json!({"type": "message", "role": "developer", "content": templates.developer,
                    "internal_chat_message_metadata_passthrough": p}),
            );
            let agents = format!(
                "# AGENTS.md instructions for {cwd}\n\n<INSTRUCTIONS>\n# {name}\n\n- {}\n- {}\n</INSTRUCTIONS>",
                project.prose(rng, 6, 14),
                project.prose(rng, 6, 14),
                cwd = project.cwd,
                name = project.cwd.rsplit('/').next().unwrap_or("repo"),
            );
            let env = format!(
                "<environment_context>\n  <cwd>{}</cwd>\n  <shell>bash</shell>\n  <current_date>{y:04}-{m:02}-{d:02}</current_date>\n  <timezone>Etc/UTC</timezone>\n</environment_context>",
                project.cwd
            );
            let p = w.passthrough();
            w.line(
                rng,
                "response_item",
                json!({"type": "message", "role": "user",
                    "content": [{"type": "input_text", "text": agents},
                        {"type": "input_text", "text": env}],
                    "internal_chat_message_metadata_passthrough": p}),
            );
            first = false;
        }
        let mut context = templates.turn_context.clone();
        context["turn_id"] = json!(w.turn_id);
        context["cwd"] = json!(project.cwd);
        context["workspace_roots"] = json!([project.cwd]);
        context["current_date"] = json!(format!("{y:04}-{m:02}-{d:02}"));
        w.line(rng, "turn_context", context);
        let prompt = project.prose(rng, 6, 60);
        let p = w.passthrough();
        let item = json!({"type": "message", "role": "user",
            "content": [{"type": "input_text", "text": prompt}],
            "internal_chat_message_metadata_passthrough": p});
        w.prompts.push(item.clone());
        w.line(rng, "response_item", item);
        w.line(
            rng,
            "event_msg",
            json!({"type": "user_message", "message": prompt, "images": [],
                "local_images": [], "text_elements": []}),
        );
        for _ in 0..rng.range(2, 9) {
            w.reasoning(rng);
            if rng.chance(400) {
                let say = project.prose(rng, 5, 25);
                w.agent_message(rng, &say, "commentary");
            }
            match rng.below(10) {
                0..=6 => w.exec(rng),
                _ => w.patch(rng),
            }
            w.token_count(rng);
            if w.bytes >= size {
                break;
            }
        }
        let answer = project.prose(rng, 20, 120);
        w.agent_message(rng, &answer, "final_answer");
        w.token_count(rng);
        let duration = rng.range(3_000, 90_000);
        let first_token = rng.range(400, 4_000);
        let completed = (w.now + duration as i64) / 1000;
        let turn = w.turn_id.clone();
        w.line(
            rng,
            "event_msg",
            json!({"type": "task_complete", "turn_id": turn, "last_agent_message": answer,
                "completed_at": completed, "duration_ms": duration,
                "time_to_first_token_ms": first_token}),
        );
        w.now += rng.range(20_000, 600_000) as i64;
        if w.bytes >= next_compaction {
            w.compact(rng);
            next_compaction += 3_000_000;
        }
    }
    w.out.flush().expect("flush");
    summary.sessions += 1;
    w.bytes
}

/// Generates a Codex home of about `total` bytes of rollouts under `home`
/// (`home/.codex/sessions/...`). Deterministic in `seed` and `total`.
pub fn generate(home: &Path, total: u64, seed: u64) -> Summary {
    let templates = Templates::load();
    let mut rng = Rng::new(seed);
    let projects: Vec<Project> = (0..20).map(|i| Project::new(i, seed)).collect();
    let codex = home.join(".codex");
    fs::create_dir_all(codex.join("sessions")).expect("sessions dir");
    fs::write(
        codex.join("config.toml"),
        "model = \"gpt-5.5\"\nmodel_reasoning_effort = \"medium\"\n",
    )
    .expect("config");
    let mut summary = Summary::default();
    // 2026-01-05 09:00 UTC, then a session every 20 minutes to 5 hours.
    let mut start: i64 = 1_767_603_600_000;
    // One session in project `p`, some minutes to hours after the one before.
    let mut write = |p: usize, size: u64, rng: &mut Rng, summary: &mut Summary| {
        start += rng.range(1_200_000, 18_000_000) as i64;
        let n = session(&codex, &templates, &projects[p], rng, start, size, summary);
        summary.bytes += n;
        n
    };
    sessions(total, projects.len(), &mut rng, |p, size, rng| {
        write(p, size, rng, &mut summary)
    });
    summary
}
