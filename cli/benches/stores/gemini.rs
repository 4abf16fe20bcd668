//! A deterministic generator of realistic Gemini CLI homes
//! (`~/.gemini/tmp/<project>/chats/session-<YYYY-MM-DDTHH-MM>-<id prefix>.jsonl`).
//!
//! The same shape as [`super::claude`]'s homes: 20 projects, session sizes log-normal with
//! median about 250 KB (10th percentile about 60 KB, 95th about 1.6 MB), one session of 20 to
//! 35 MB per 256 MiB of store, most bytes source code the model read (`read_file`, a shell's
//! `cat`, `grep -n`, `sed -n`) or edited (`replace`) in the project's files. Records follow
//! Gemini CLI 0.61 field by field, as the checked sample chats have them
//! (`samples/gemini/.gemini/tmp/*/chats/`, `spec/harnesses/gemini.md`): the metadata line,
//! the `<session_context>` checkpoint (`$set.messages`), each prompt, each model step written
//! twice (first with its thoughts and tokens, then again with its `toolCalls`, whose `result`
//! holds each tool's output), the tool results again as a user record of `functionResponse`
//! parts, a `$set.lastUpdated` after each record, and the project registry
//! (`projects.json`, `.project_root` markers) that gives each chat directory its root.
//!
//! Not generated: `/rewind` (a `$rewindTo` and the whole history again as a checkpoint),
//! subagent chats, `info`/`warning`/`error` records, `logs.json` (the prompt log); the
//! converter's tests cover them on the sample.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;

use asp_format::digest::Digest;
use serde_json::{Value, json};

use super::claude::{Project, Rng, Shell, Summary, sessions};
use super::clock::Millis;

/// How Gemini CLI's model reads files through its shell: `sed -n` 120 lines, `grep -n` of one
/// file.
const SHELL: Shell = Shell {
    range: 120,
    stride: 6,
    search: "grep",
    named: false,
};

/// The model every step names.
const MODEL: &str = "gemini-3.1-pro-preview";

/// The chat directory Gemini CLI gives a project root (0.29 on): its lowercased base name,
/// anything but `[a-z0-9]` turned into `-`, `-1`, `-2`, ... when that is taken.
fn slug(root: &str, taken: &mut BTreeMap<String, String>) -> String {
    let base: String = root
        .rsplit('/')
        .next()
        .unwrap_or("project")
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut name = base.clone();
    let mut n = 0;
    while taken.values().any(|s| *s == name) {
        n += 1;
        name = format!("{base}-{n}");
    }
    taken.insert(root.to_owned(), name.clone());
    name
}

/// One tool call of a model step: the call as `toolCalls` holds it, and its output.
struct Call {
    record: Value,
    response: Value,
}

/// Writes one chat log record by record.
struct Chat<'a> {
    out: BufWriter<fs::File>,
    bytes: u64,
    project: &'a Project,
    now: i64,
    /// The index of the next tool call in its step (see [`Chat::call_id`]).
    calls: u64,
}

impl Chat<'_> {
    fn tick(&mut self, rng: &mut Rng, max_ms: u64) -> String {
        self.now += rng.range(2, max_ms) as i64;
        Millis(self.now).rfc3339()
    }

    fn record(&mut self, v: &Value) {
        let s = serde_json::to_string(v).expect("serialises");
        self.out.write_all(s.as_bytes()).expect("write");
        self.out.write_all(b"\n").expect("write");
        self.bytes += s.len() as u64 + 1;
    }

    /// The `$set` of `lastUpdated` Gemini appends after every record.
    fn touch(&mut self) {
        let now = Millis(self.now).rfc3339();
        self.record(&json!({"$set": {"lastUpdated": now}}));
    }

    /// A step's token counts (`thoughts` only when it thought).
    fn tokens(rng: &mut Rng, thought: bool) -> Value {
        let input = rng.range(8_000, 120_000);
        let output = rng.range(20, 1_500);
        let cached = input * rng.below(95) / 100;
        let thoughts = if thought { rng.range(40, 600) } else { 0 };
        json!({"input": input, "output": output, "cached": cached, "thoughts": thoughts,
            "tool": 0, "total": input + output + thoughts})
    }

    /// A model step: what it says and thinks, and its tool calls with their results.
    fn step(&mut self, rng: &mut Rng, content: &str, calls: Vec<Call>) {
        let id = rng.uuid();
        let timestamp = self.tick(rng, 3_000);
        let thoughts: Vec<Value> = (0..rng.below(2))
            .map(|_| {
                json!({"subject": self.project.prose(rng, 2, 5),
                    "description": format!("{}.", self.project.prose(rng, 8, 40)),
                    "timestamp": timestamp})
            })
            .collect();
        let tokens = Self::tokens(rng, !thoughts.is_empty());
        let mut record = json!({"id": id, "timestamp": timestamp, "type": "gemini",
            "content": content, "thoughts": thoughts, "tokens": tokens,
            "model": MODEL});
        self.record(&record);
        self.touch();
        if calls.is_empty() {
            return;
        }
        let mut responses = Vec::new();
        let mut records = Vec::new();
        for mut c in calls {
            self.tick(rng, 400);
            let at = Millis(self.now).rfc3339();
            let call_id = c.record["id"].clone();
            let name = c.record["name"].clone();
            let response = json!({"functionResponse": {"id": call_id, "name": name,
                "response": c.response}});
            // `id, name, args, result, status, timestamp, resultDisplay, ...`, as the CLI
            // orders them.
            let mut call = serde_json::Map::new();
            let fields = c.record.as_object_mut().expect("a call is an object");
            for k in ["id", "name", "args"] {
                call.insert(k.into(), fields.remove(k).expect("set by the tool"));
            }
            call.insert("result".into(), json!([response.clone()]));
            call.insert("status".into(), json!("success"));
            call.insert("timestamp".into(), json!(at));
            call.extend(std::mem::take(fields));
            records.push(Value::Object(call));
            responses.push(response);
        }
        record["toolCalls"] = Value::Array(records);
        self.record(&record);
        let user = rng.uuid();
        let at = self.tick(rng, 30);
        self.record(&json!({"id": user, "timestamp": at, "type": "user",
            "content": responses}));
        self.touch();
    }

    /// A tool call's id as the CLI makes it: `<name>__<name>_<ms>_<index in the step>` (the
    /// calls of one step a few milliseconds apart).
    fn call_id(&self, name: &str) -> String {
        let ms = self.now + 4 * self.calls as i64;
        format!("{name}__{name}_{ms}_{}", self.calls)
    }

    fn read_file(&mut self, rng: &mut Rng) -> Call {
        let (_, rel, content) = self.project.pick_file(rng);
        let id = self.call_id("read_file");
        Call {
            record: json!({"id": id, "name": "read_file", "args": {"file_path": rel},
                "resultDisplay": "", "description": rel, "displayName": "ReadFile",
                "renderOutputAsMarkdown": true}),
            response: json!({"output": content}),
        }
    }

    /// A shell command over a project file (`cat`, `sed -n`, `grep -n`) and its output.
    fn shell(&mut self, rng: &mut Rng) -> Call {
        let (_, rel, content) = self.project.pick_file(rng);
        let (command, body) = self.project.read_by_shell(rng, &rel, content, &SHELL);
        let body = body.trim_end().to_owned();
        let pgid = rng.range(1_000, 60_000);
        let id = self.call_id("run_shell_command");
        let description = self.project.prose(rng, 3, 9);
        Call {
            record: json!({"id": id, "name": "run_shell_command",
                "args": {"command": command, "description": description},
                "resultDisplay": body, "description": command, "displayName": "Shell",
                "renderOutputAsMarkdown": false}),
            response: json!({"output": format!(
                "<untrusted_context>\nOutput: {body}\nProcess Group PGID: {pgid}\n</untrusted_context>"
            )}),
        }
    }

    /// A `replace` of a few lines of a project file: its result display carries the file
    /// before and after, whole.
    fn replace(&mut self, rng: &mut Rng) -> Call {
        let (path, rel, content) = self.project.pick_file(rng);
        let lines: Vec<&str> = content.lines().collect();
        let at = rng.below(lines.len() as u64) as usize;
        let end = (at + 3).min(lines.len());
        let old = lines[at..end].join("\n") + "\n";
        let lines_new = rng.range(2, 25) as usize;
        let new = self.project.source(rng, lines_new);
        let new_content = format!(
            "{}{}{}",
            lines[..at]
                .iter()
                .map(|l| format!("{l}\n"))
                .collect::<String>(),
            new,
            lines[end..]
                .iter()
                .map(|l| format!("{l}\n"))
                .collect::<String>()
        );
        let name = rel.rsplit('/').next().unwrap_or(&rel).to_owned();
        // The hunk with three lines of context each side, as the CLI's diff library makes it.
        let from = at.saturating_sub(3);
        let to = (end + 3).min(lines.len());
        let added = new.lines().count();
        let mut diff = format!(
            "Index: {name}\n===================================================================\n--- {name}\tCurrent\n+++ {name}\tProposed\n@@ -{},{} +{},{} @@\n",
            from + 1,
            to - from,
            from + 1,
            to - from - (end - at) + added
        );
        for l in &lines[from..at] {
            let _ = writeln!(diff, " {l}");
        }
        for l in &lines[at..end] {
            let _ = writeln!(diff, "-{l}");
        }
        for l in new.lines() {
            let _ = writeln!(diff, "+{l}");
        }
        for l in &lines[end..to] {
            let _ = writeln!(diff, " {l}");
        }
        let chars = |text: &str| text.lines().map(str::len).sum::<usize>();
        let head = |text: &str| text.chars().take(30).collect::<String>();
        let snippet: String = new_content
            .lines()
            .skip(at.saturating_sub(3))
            .take(new.lines().count() + 6)
            .map(|l| format!("{l}\n"))
            .collect();
        let instruction = format!("{}.", self.project.prose(rng, 8, 24));
        let id = self.call_id("replace");
        Call {
            record: json!({"id": id, "name": "replace",
                "args": {"file_path": rel, "instruction": instruction, "old_string": old,
                    "new_string": new},
                "resultDisplay": {"fileDiff": diff, "fileName": name, "filePath": path,
                    "originalContent": content, "newContent": new_content,
                    "diffStat": {"model_added_lines": added,
                        "model_removed_lines": end - at, "model_added_chars": chars(&new),
                        "model_removed_chars": chars(&old), "user_added_lines": 0,
                        "user_removed_lines": 0, "user_added_chars": 0,
                        "user_removed_chars": 0},
                    "isNewFile": false, "isBuildFile": false},
                "description": format!("{rel}: {}... => {}...", head(&old), head(&new)),
                "displayName": "Edit", "renderOutputAsMarkdown": true}),
            response: json!({"output": format!(
                "Successfully modified file: {path} (1 replacements). Here is the updated code:\n...\n{snippet}"
            )}),
        }
    }

    fn write_todos(&mut self, rng: &mut Rng) -> Call {
        let todos: Vec<Value> = (0..rng.range(2, 6))
            .map(|i| {
                let status = ["completed", "in_progress", "pending"][(i as usize).min(2)];
                json!({"description": self.project.prose(rng, 4, 10), "status": status})
            })
            .collect();
        let mut output =
            String::from("Successfully updated the todo list. The current list is now:");
        for (i, t) in todos.iter().enumerate() {
            let _ = write!(
                output,
                "\n{}. [{}] {}",
                i + 1,
                t["status"].as_str().unwrap_or(""),
                t["description"].as_str().unwrap_or("")
            );
        }
        let id = self.call_id("write_todos");
        let n = todos.len();
        Call {
            record: json!({"id": id, "name": "write_todos", "args": {"todos": todos},
                "resultDisplay": {"todos": todos}, "description": format!("Set {n} todo(s)"),
                "displayName": "WriteTodos", "renderOutputAsMarkdown": true}),
            response: json!({"output": output}),
        }
    }
}

/// The `<session_context>` Gemini CLI starts every chat with.
fn session_context(project: &Project, tmp: &str, start: i64) -> String {
    let mut tree = String::new();
    let mut tops: Vec<&str> = project
        .files
        .iter()
        .filter_map(|f| f.strip_prefix(&format!("{}/", project.cwd)))
        .filter_map(|f| f.split('/').next())
        .collect();
    tops.sort_unstable();
    tops.dedup();
    for t in &tops {
        let _ = writeln!(tree, "├───{t}/...");
    }
    format!(
        "<session_context>\nThis is the Gemini CLI. We are setting up the context for our chat.\nToday's date is {} (formatted according to the user's locale).\nMy operating system is: linux\nThe project's temporary directory is: {tmp}\n- **Workspace Directories:**\n  - {cwd}\n- **Directory Structure:**\n\nShowing up to 200 items (files + folders). Folders or files indicated with ... contain more items not shown, were ignored, or the display limit (200 items) was reached.\n\n{cwd}/\n├───README.md\n{tree}└───.git/...\n\n\n</session_context>",
        Millis(start).long_date(),
        cwd = project.cwd,
    )
}

/// Writes one chat of about `size` bytes in `project` (chat directory `slug`), starting at
/// `start` (ms).
fn session(
    gemini: &Path,
    project: &Project,
    slug: &str,
    rng: &mut Rng,
    start: i64,
    size: u64,
    summary: &mut Summary,
) -> u64 {
    let id = rng.uuid();
    let (y, m, d, h, mi, ..) = Millis(start).parts();
    let dir = gemini.join("tmp").join(slug).join("chats");
    fs::create_dir_all(&dir).expect("chats dir");
    let file = dir.join(format!(
        "session-{y:04}-{m:02}-{d:02}T{h:02}-{mi:02}-{}.jsonl",
        &id[..8]
    ));
    let mut c = Chat {
        out: BufWriter::new(fs::File::create(&file).expect("chat")),
        bytes: 0,
        project,
        now: start,
        calls: 0,
    };
    let started = Millis(start).rfc3339();
    let hash = Digest::of(project.cwd.as_bytes()).hex();
    c.record(
        &json!({"sessionId": id, "projectHash": hash, "startTime": started,
        "lastUpdated": started, "kind": "main"}),
    );
    let tmp = format!("/home/dev/.gemini/tmp/{slug}");
    // The id Gemini CLI gives the context message of every chat (the same in each sample).
    let context_id = "d04923d38bb0f6017037e74183378ef4";
    let at = c.tick(rng, 3);
    c.record(
        &json!({"$set": {"messages": [{"id": context_id, "timestamp": at, "type": "user",
        "content": [{"text": session_context(project, &tmp, start)}]}], "lastUpdated": at}}),
    );
    while c.bytes < size {
        let prompt = project.prose(rng, 6, 60);
        let user = rng.uuid();
        let at = c.tick(rng, 40_000);
        c.record(&json!({"id": user, "timestamp": at, "type": "user",
            "content": [{"text": prompt}]}));
        c.touch();
        if rng.chance(150) {
            c.calls = 0;
            let todos = c.write_todos(rng);
            c.step(rng, "", vec![todos]);
        }
        for _ in 0..rng.range(2, 9) {
            let mut calls = Vec::new();
            for n in 0..1 + u64::from(rng.chance(250)) {
                c.calls = n;
                calls.push(match rng.below(10) {
                    0..=4 => c.read_file(rng),
                    5..=7 => c.shell(rng),
                    _ => c.replace(rng),
                });
            }
            let say = match rng.chance(300) {
                true => project.prose(rng, 5, 25),
                false => String::new(),
            };
            c.step(rng, &say, calls);
            if c.bytes >= size {
                break;
            }
        }
        let answer = project.prose(rng, 20, 120);
        c.step(rng, &answer, Vec::new());
    }
    c.out.flush().expect("flush");
    summary.sessions += 1;
    c.bytes
}

/// Generates a Gemini CLI home of about `total` bytes of chats under `home`
/// (`home/.gemini/tmp/<project>/chats/...`, with `projects.json` and the `.project_root`
/// markers). Deterministic in `seed` and `total`.
pub fn generate(home: &Path, total: u64, seed: u64) -> Summary {
    let mut rng = Rng::new(seed);
    let projects: Vec<Project> = (0..20).map(|i| Project::new(i, seed)).collect();
    let gemini = home.join(".gemini");
    let mut registry = BTreeMap::new();
    let slugs: Vec<String> = projects
        .iter()
        .map(|p| slug(&p.cwd, &mut registry))
        .collect();
    for (p, s) in projects.iter().zip(&slugs) {
        for dir in ["tmp", "history"] {
            let d = gemini.join(dir).join(s);
            fs::create_dir_all(&d).expect("project dir");
            fs::write(d.join(".project_root"), &p.cwd).expect("marker");
        }
    }
    let registry = json!({ "projects": registry });
    fs::write(
        gemini.join("projects.json"),
        serde_json::to_string_pretty(&registry).expect("serialises"),
    )
    .expect("projects.json");
    fs::write(
        gemini.join("settings.json"),
        "{\n  \"model\": {\n    \"name\": \"gemini-3.1-pro-preview\"\n  }\n}",
    )
    .expect("settings");
    let mut summary = Summary::default();
    // 2026-01-05 09:00 UTC, then a session every 20 minutes to 5 hours.
    let mut start: i64 = 1_767_603_600_000;
    let mut write = |p: usize, size: u64, rng: &mut Rng, summary: &mut Summary| {
        start += rng.range(1_200_000, 18_000_000) as i64;
        let n = session(&gemini, &projects[p], &slugs[p], rng, start, size, summary);
        summary.bytes += n;
        n
    };
    sessions(total, projects.len(), &mut rng, |p, size, rng| {
        write(p, size, rng, &mut summary)
    });
    summary
}
