//! A deterministic generator of realistic Claude Code homes (`~/.claude/projects/...`).
//!
//! Shape, after real homes: 20 projects; session sizes log-normal with median about 250 KB,
//! 10th percentile about 60 KB and 95th percentile about 1.6 MB, plus one session of 20 to
//! 35 MB per 256 MiB of store. Most bytes are Read, Edit and Bash results of source code made
//! by a small grammar over a project vocabulary (so it deflates about 3 to 5 times, like real
//! code, not 20 times like repeated words). Records follow Claude Code 2.1.x field by field
//! (`spec/harnesses/claude-code.md` §2): a Read result appears twice per line (the numbered
//! `tool_result` text and `toolUseResult.file.content`), an Edit carries `originalFile` whole,
//! Bash calls leave `progress` rows, long sessions are compacted, some prompts are rewound
//! (an abandoned branch), some sessions start subagents (`subagents/agent-<id>.jsonl` and
//! `.meta.json`), and a few prompts carry a pasted image.
//!
//! The other harnesses' homes (`codex.rs`, `gemini.rs`) take their shape from here:
//! [`Project`], [`Rng`], [`sessions`] and [`Project::read_by_shell`].

use std::fmt::Write as _;
use std::fs;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

/// splitmix64: small, fast, deterministic.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    /// A value in `lo..=hi` (`lo` when the range is empty).
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.below(hi.saturating_sub(lo) + 1)
    }

    pub fn chance(&mut self, per_mille: u64) -> bool {
        self.below(1000) < per_mille
    }

    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// A standard normal sample (Box-Muller).
    pub fn normal(&mut self) -> f64 {
        let u1 = self.unit().max(1e-12);
        let u2 = self.unit();
        (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }

    /// Index into a list of `n`, favouring the first ones (Zipf-like).
    pub fn zipf(&mut self, n: usize) -> usize {
        let u = self.unit();
        ((n as f64).powf(u) - 1.0) as usize % n.max(1)
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len() as u64) as usize]
    }

    pub fn uuid(&mut self) -> String {
        let a = self.next();
        let b = self.next();
        format!(
            "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
            a >> 32,
            (a >> 16) & 0xffff,
            a & 0xfff,
            0x8000 | (b >> 48) & 0x3fff,
            b & 0xffff_ffff_ffff
        )
    }

    pub fn token(&mut self, len: usize) -> String {
        const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
        (0..len)
            .map(|_| ALNUM[self.below(ALNUM.len() as u64) as usize] as char)
            .collect()
    }

    pub fn hex(&mut self, len: usize) -> String {
        (0..len)
            .map(|_| char::from_digit(self.below(16) as u32, 16).expect("hex digit"))
            .collect()
    }
}

const SYLLABLES: &[&str] = &[
    "ac", "al", "an", "ar", "at", "ba", "be", "bi", "bo", "ca", "ce", "ch", "co", "cu", "da", "de",
    "di", "do", "el", "em", "en", "er", "es", "ex", "fa", "fe", "fi", "fo", "ga", "ge", "gr", "ha",
    "he", "hi", "ho", "id", "il", "im", "in", "io", "is", "it", "ja", "ka", "la", "le", "li", "lo",
    "lu", "ma", "me", "mi", "mo", "mu", "na", "ne", "ni", "no", "nu", "ob", "oc", "od", "of", "ol",
    "om", "on", "op", "or", "os", "ou", "pa", "pe", "pi", "po", "pr", "qu", "ra", "re", "ri", "ro",
    "ru", "sa", "se", "sh", "si", "so", "st", "su", "ta", "te", "th", "ti", "to", "tr", "tu", "ul",
    "um", "un", "up", "ur", "us", "ut", "va", "ve", "vi", "vo", "wa", "we", "wi", "xe", "ya", "ze",
];

const DEV_WORDS: &[&str] = &[
    "user", "order", "cart", "total", "price", "item", "line", "config", "client", "server",
    "request", "response", "handler", "error", "result", "value", "state", "cache", "store",
    "token", "session", "query", "index", "buffer", "stream", "event", "message", "payload",
    "limit", "count", "offset", "key", "path", "file", "name", "id", "status", "retry", "timeout",
    "context", "options", "params", "schema", "record", "entry", "batch", "queue", "worker",
    "task", "job", "route", "auth", "policy", "rule", "coupon", "invoice", "payment", "refund",
    "account", "profile", "image", "product", "shipping", "address", "metric", "log", "trace",
    "span", "node", "tree", "graph", "map", "list", "set", "pool", "conn", "socket", "frame",
];

const PROSE: &[&str] = &[
    "the", "a", "to", "of", "and", "in", "is", "that", "this", "it", "for", "with", "we", "should",
    "can", "when", "so", "not", "be", "on", "now", "first", "then", "instead", "because", "still",
    "test", "tests", "fails", "passes", "change", "fix", "function", "file", "call", "returns",
    "check", "look", "read", "update", "run", "build", "case", "bug", "value", "type", "field",
    "missing", "wrong", "expected", "actual", "before", "after", "only", "also", "every", "each",
    "error", "handle", "edge", "empty", "null", "config", "path", "the", "the", "a", "to", "is",
];

/// A project's words and files: code text comes from here, so a project's files share
/// identifiers the way a real code base does.
#[derive(Debug, Clone)]
pub struct Project {
    pub cwd: String,
    pub bucket: String,
    pub branch: String,
    words: Vec<String>,
    pub files: Vec<String>,
    seed: u64,
    ext: &'static str,
}

fn bucket_of(path: &str) -> String {
    path.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

impl Project {
    pub fn new(index: usize, seed: u64) -> Self {
        let mut rng = Rng::new(seed ^ (index as u64).wrapping_mul(0x2545_f491_4f6c_dd1d));
        let name = format!(
            "{}-{}",
            rng.pick(DEV_WORDS),
            ["api", "web", "svc", "cli", "core", "app", "sdk"][index % 7]
        );
        let cwd = format!("/home/dev/work/{name}");
        let mut words: Vec<String> = DEV_WORDS.iter().map(|w| (*w).to_owned()).collect();
        for _ in 0..260 {
            let n = rng.range(2, 4);
            let w: String = (0..n).map(|_| *rng.pick(SYLLABLES)).collect();
            words.push(w);
        }
        // Shuffle so each project favours different words.
        for i in (1..words.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            words.swap(i, j);
        }
        let ext = ["ts", "rs", "py", "go"][index % 4];
        let dirs = [
            "src",
            "src/lib",
            "src/api",
            "src/util",
            "tests",
            "src/model",
        ];
        let files = (0..120)
            .map(|_| {
                format!(
                    "{cwd}/{}/{}_{}.{ext}",
                    rng.pick(&dirs),
                    words[rng.zipf(120)],
                    words[rng.zipf(words.len())]
                )
            })
            .collect();
        Project {
            bucket: bucket_of(&cwd),
            branch: ["main", "develop", &format!("fix/{}", words[3])][index % 3].to_owned(),
            cwd,
            words,
            files,
            seed: rng.next(),
            ext,
        }
    }

    fn ident(&self, rng: &mut Rng) -> String {
        let a = &self.words[rng.zipf(self.words.len())];
        match rng.below(4) {
            0 => a.clone(),
            1 => format!("{a}_{}", self.words[rng.zipf(self.words.len())]),
            2 => {
                let b = &self.words[rng.zipf(self.words.len())];
                let mut cs = b.chars();
                let cap: String = cs
                    .next()
                    .map(|c| c.to_ascii_uppercase())
                    .into_iter()
                    .chain(cs)
                    .collect();
                format!("{a}{cap}")
            }
            _ => {
                let mut cs = a.chars();
                cs.next()
                    .map(|c| c.to_ascii_uppercase())
                    .into_iter()
                    .chain(cs)
                    .collect()
            }
        }
    }

    fn expr(&self, rng: &mut Rng, depth: u32) -> String {
        match rng.below(if depth > 1 { 4 } else { 7 }) {
            0 => self.ident(rng),
            1 => rng.below(1000).to_string(),
            2 => format!("\"{}\"", self.prose(rng, 1, 5)),
            3 => format!("{}.{}", self.ident(rng), self.ident(rng)),
            4 => format!(
                "{}({})",
                self.ident(rng),
                (0..rng.below(3))
                    .map(|_| self.expr(rng, depth + 1))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            5 => format!(
                "{} {} {}",
                self.expr(rng, depth + 1),
                rng.pick(&["+", "-", "*", "==", "!=", "<", ">=", "&&", "||"]),
                self.expr(rng, depth + 1)
            ),
            _ => format!(
                "{}.{}({})",
                self.ident(rng),
                self.ident(rng),
                self.expr(rng, depth + 1)
            ),
        }
    }

    pub fn prose(&self, rng: &mut Rng, lo: u64, hi: u64) -> String {
        let n = rng.range(lo, hi);
        (0..n)
            .map(|_| {
                if rng.chance(250) {
                    self.words[rng.zipf(self.words.len())].as_str()
                } else {
                    PROSE[rng.zipf(PROSE.len())]
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// A source file of about `lines` lines.
    pub fn source(&self, rng: &mut Rng, lines: usize) -> String {
        let mut out = String::new();
        let (kw_fn, kw_let, kw_ret) = match self.ext {
            "rs" => ("pub fn", "let", "return"),
            "py" => ("def", "", "return"),
            "go" => ("func", "var", "return"),
            _ => ("export function", "const", "return"),
        };
        for _ in 0..rng.range(2, 6) {
            let _ = writeln!(
                out,
                "import {{ {}, {} }} from \"./{}\";",
                self.ident(rng),
                self.ident(rng),
                self.ident(rng)
            );
        }
        out.push('\n');
        let mut indent = 0usize;
        let mut n = 0;
        while n < lines {
            let pad = "  ".repeat(indent);
            let line = match (indent, rng.below(12)) {
                (0, _) => {
                    indent = 1;
                    format!(
                        "{kw_fn} {}({}: {}, {}: {}) {{",
                        self.ident(rng),
                        self.ident(rng),
                        self.ident(rng),
                        self.ident(rng),
                        self.ident(rng)
                    )
                }
                (_, 0) => format!("{pad}// {}", self.prose(rng, 4, 14)),
                (_, 1 | 2) if indent < 4 => {
                    indent += 1;
                    format!("{pad}if ({}) {{", self.expr(rng, 0))
                }
                (_, 3) if indent < 4 => {
                    indent += 1;
                    format!(
                        "{pad}for ({kw_let} {} of {}) {{",
                        self.ident(rng),
                        self.expr(rng, 1)
                    )
                }
                (_, 4 | 5) => {
                    indent -= 1;
                    format!("{}}}", "  ".repeat(indent))
                }
                (_, 6) => format!("{pad}{kw_ret} {};", self.expr(rng, 0)),
                _ => format!("{pad}{kw_let} {} = {};", self.ident(rng), self.expr(rng, 0)),
            };
            out.push_str(&line);
            out.push('\n');
            if indent == 0 {
                out.push('\n');
            }
            n += 1;
        }
        while indent > 0 {
            indent -= 1;
            let _ = writeln!(out, "{}}}", "  ".repeat(indent));
        }
        out
    }

    /// The content of file `i`: always the same for the same file.
    pub fn file(&self, i: usize) -> String {
        let mut rng = Rng::new(self.seed ^ (i as u64).wrapping_mul(0x9e37_79b9));
        let lines = 40 + rng.zipf(700);
        self.source(&mut rng, lines)
    }

    /// A file of the project as a model picks one (Zipf-like: a few files often): its path, its
    /// path in the project and its text.
    pub fn pick_file(&self, rng: &mut Rng) -> (String, String, String) {
        let i = rng.zipf(self.files.len());
        let path = self.files[i].clone();
        let rel = path
            .strip_prefix(&format!("{}/", self.cwd))
            .unwrap_or(&path)
            .to_owned();
        (path, rel, self.file(i))
    }

    /// A shell command reading `content` (the project file at `rel`) and what it prints: the
    /// whole file (`cat`), [`Shell::range`] lines from somewhere in its first half (`sed -n`),
    /// or every [`Shell::stride`]th line numbered (the search).
    pub fn read_by_shell(
        &self,
        rng: &mut Rng,
        rel: &str,
        content: String,
        shell: &Shell,
    ) -> (String, String) {
        match rng.below(3) {
            0 => (format!("cat {rel}"), content),
            1 => {
                let lines: Vec<&str> = content.lines().collect();
                let from = rng.below(lines.len() as u64 / 2 + 1) as usize;
                let to = (from + shell.range).min(lines.len());
                let mut out = String::new();
                for l in &lines[from..to] {
                    let _ = writeln!(out, "{l}");
                }
                (format!("sed -n '{},{}p' {rel}", from + 1, to), out)
            }
            _ => {
                let word = self.prose(rng, 1, 1);
                let mut out = String::new();
                let matched = content.lines().enumerate();
                for (n, l) in matched.filter(|(n, _)| n % shell.stride == 0) {
                    let _ = match shell.named {
                        true => writeln!(out, "{rel}:{}:{l}", n + 1),
                        false => writeln!(out, "{}:{l}", n + 1),
                    };
                }
                (format!("{} -n {word} {rel}", shell.search), out)
            }
        }
    }
}

/// How a harness's model reads files through its shell.
pub struct Shell {
    /// How many lines a `sed -n` prints.
    pub range: usize,
    /// Every how many lines a search matches.
    pub stride: usize,
    /// The search command (`rg`, `grep`).
    pub search: &'static str,
    /// Whether the search names the file on each line (`rg` does, `grep` of one file not).
    pub named: bool,
}

/// Calls `session(project, size, rng)` for each session of a home of about `total` bytes in
/// `projects` projects, until the bytes it returns reach `total`: first one session of 20 to
/// 35 MB per 256 MiB (in projects 0, 7, 14, ...), then sizes log-normal with median 250 KB
/// (sigma 1.12: 10th percentile about 60 KB, 95th about 1.6 MB), projects Zipf-like.
pub fn sessions(
    total: u64,
    projects: usize,
    rng: &mut Rng,
    mut session: impl FnMut(usize, u64, &mut Rng) -> u64,
) {
    let mut written = 0;
    for g in 0..total / (256 << 20) {
        let size = rng.range(20_000_000, 35_000_000);
        written += session((g as usize * 7) % projects, size, rng);
    }
    while written < total {
        let size = (250_000.0 * (1.12 * rng.normal()).exp()).clamp(6_000.0, 12_000_000.0) as u64;
        let p = rng.zipf(projects);
        written += session(p, size, rng);
    }
}

/// What a generated store holds.
#[derive(Debug, Default, Clone)]
pub struct Summary {
    pub sessions: usize,
    pub subagents: usize,
    pub bytes: u64,
    /// The id of a session with a subagent, for one-session reads.
    pub sample_session: Option<String>,
}

struct Clock(u64);

impl Clock {
    /// Advances by 0.2 to `max_ms` milliseconds and gives the RFC 3339 time.
    fn tick(&mut self, rng: &mut Rng, max_ms: u64) -> String {
        self.0 += rng.range(200, max_ms);
        let ms = self.0;
        let secs = ms / 1000;
        let (days, rem) = (secs / 86_400, secs % 86_400);
        // Days since 2026-01-01 within one year; months of 30 days are good enough here
        // as long as times increase, which they do (day-of-year maps monotonically).
        let day = days % 360;
        format!(
            "2026-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            day / 30 + 1,
            day % 30 + 1,
            rem / 3600,
            rem % 3600 / 60,
            rem % 60,
            ms % 1000
        )
    }
}

/// Writes one session's transcript line by line.
struct Writer<'a> {
    out: BufWriter<fs::File>,
    bytes: u64,
    project: &'a Project,
    session: String,
    version: &'static str,
    slug: String,
    agent: Option<String>,
    /// Whether this session starts subagents (about one session in six does).
    agentic: bool,
    clock: Clock,
    parent: Option<String>,
    prompt_id: String,
}

impl Writer<'_> {
    fn line(&mut self, v: &Value) {
        let s = serde_json::to_string(v).expect("serialises");
        self.out.write_all(s.as_bytes()).expect("write");
        self.out.write_all(b"\n").expect("write");
        self.bytes += s.len() as u64 + 1;
    }

    /// A conversational row: the envelope around `body`, in Claude Code's key order.
    fn row(&mut self, rng: &mut Rng, body: Value, user: bool) -> String {
        let uuid = rng.uuid();
        let mut m = serde_json::Map::new();
        m.insert("parentUuid".into(), json!(self.parent));
        m.insert("isSidechain".into(), json!(self.agent.is_some()));
        if user {
            m.insert("promptId".into(), json!(self.prompt_id));
        }
        if let Some(a) = &self.agent {
            m.insert("agentId".into(), json!(a));
        }
        let Value::Object(body) = body else {
            unreachable!("row bodies are objects")
        };
        for (k, v) in body {
            if k == "uuid" {
                continue;
            }
            m.insert(k, v);
        }
        m.insert("uuid".into(), json!(uuid));
        m.insert("timestamp".into(), json!(self.clock.tick(rng, 4000)));
        m.insert("userType".into(), json!("external"));
        m.insert("entrypoint".into(), json!("cli"));
        m.insert("cwd".into(), json!(self.project.cwd));
        m.insert("sessionId".into(), json!(self.session));
        m.insert("version".into(), json!(self.version));
        m.insert("gitBranch".into(), json!(self.project.branch));
        m.insert("slug".into(), json!(self.slug));
        self.line(&Value::Object(m));
        self.parent = Some(uuid.clone());
        uuid
    }

    fn user_text(&mut self, rng: &mut Rng, text: String, image: Option<String>) -> String {
        self.prompt_id = rng.uuid();
        let content = match image {
            None => json!(text),
            Some(data) => json!([
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}},
                {"text": text, "type": "text"}
            ]),
        };
        self.row(
            rng,
            json!({"type": "user", "message": {"role": "user", "content": content},
                   "permissionMode": "acceptEdits"}),
            true,
        )
    }

    fn assistant(
        &mut self,
        rng: &mut Rng,
        msg_id: &str,
        block: Value,
        stop: Option<&str>,
    ) -> String {
        let out = rng.range(20, 900);
        let (cc, cr, req) = (
            rng.range(100, 9000),
            rng.range(10_000, 150_000),
            rng.token(18),
        );
        self.row(
            rng,
            json!({"message": {"model": "claude-opus-4-6", "id": msg_id, "type": "message",
                "role": "assistant", "content": [block], "stop_reason": stop,
                "stop_sequence": null, "stop_details": null,
                "usage": {"input_tokens": 3, "cache_creation_input_tokens": cc,
                    "cache_read_input_tokens": cr, "output_tokens": out,
                    "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
                    "service_tier": "standard",
                    "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 0},
                    "inference_geo": "", "iterations": [], "speed": "standard"}},
                "requestId": format!("req_011C{req}"), "type": "assistant"}),
            false,
        )
    }

    fn tool_result(
        &mut self,
        rng: &mut Rng,
        tool_use_row: &str,
        tool_use_id: &str,
        content: Value,
        result: Value,
    ) -> String {
        self.parent = Some(tool_use_row.to_owned());
        self.row(
            rng,
            json!({"type": "user", "message": {"role": "user", "content": [
                    {"tool_use_id": tool_use_id, "type": "tool_result", "content": content}]},
                   "toolUseResult": result, "sourceToolAssistantUUID": tool_use_row}),
            true,
        )
    }

    fn meta(&mut self, v: Value) {
        self.line(&v);
    }
}

fn numbered(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + text.len() / 8);
    for (i, l) in text.lines().enumerate() {
        let _ = writeln!(out, "{}\t{l}", i + 1);
    }
    out
}

/// A pseudo-PNG of `n` bytes, base64: incompressible, like a real screenshot's data.
fn image(rng: &mut Rng, n: usize) -> String {
    use base64::Engine as _;
    let mut bytes = vec![0x89, b'P', b'N', b'G', 0x0d, 0x0a, 0x1a, 0x0a];
    while bytes.len() < n {
        bytes.extend_from_slice(&rng.next().to_le_bytes());
    }
    base64::engine::general_purpose::STANDARD.encode(&bytes)
}

/// One turn: a prompt, some thinking and text, tool calls with results.
fn turn(w: &mut Writer<'_>, rng: &mut Rng, subagents: &mut Vec<(String, String, String)>) {
    let p = w.project;
    let image = if rng.chance(8) {
        let n = rng.range(20_000, 160_000) as usize;
        Some(image(rng, n))
    } else {
        None
    };
    let prompt = format!(
        "{} in {}? {}",
        p.prose(rng, 6, 30),
        p.files[rng.zipf(p.files.len())]
            .rsplit('/')
            .next()
            .unwrap_or(""),
        p.prose(rng, 0, 20)
    );
    let user_row = w.user_text(rng, prompt, image);
    let ts = w.clock.tick(rng, 400);
    w.meta(
        json!({"type": "file-history-snapshot", "messageId": user_row,
        "snapshot": {"messageId": user_row, "trackedFileBackups": {}, "timestamp": ts},
        "isSnapshotUpdate": false}),
    );
    let calls = rng.range(1, 7);
    for c in 0..=calls {
        let msg = format!("msg_01{}", rng.token(22));
        if rng.chance(400) {
            let thinking = p.prose(rng, 20, 120);
            let sig = rng.token(300);
            w.assistant(
                rng,
                &msg,
                json!({"type": "thinking", "thinking": thinking, "signature": sig}),
                None,
            );
        }
        let text = p.prose(rng, 5, 60);
        let last = c == calls;
        let text_row = w.assistant(
            rng,
            &msg,
            json!({"type": "text", "text": text}),
            last.then_some("end_turn"),
        );
        if last {
            break;
        }
        let _ = text_row;
        let id = format!("toolu_01{}", rng.token(22));
        let fi = rng.zipf(p.files.len());
        let path = p.files[fi].clone();
        let kind = rng.below(100);
        if kind < 40 {
            // Read: the file twice, numbered for the model and raw in toolUseResult.
            let content = p.file(fi);
            let row = w.assistant(
                rng,
                &msg,
                json!({"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": path}}),
                Some("tool_use"),
            );
            let n = content.lines().count();
            w.tool_result(
                rng,
                &row,
                &id,
                json!(numbered(&content)),
                json!({"type": "text", "file": {"filePath": path, "content": content,
                       "numLines": n, "startLine": 1, "totalLines": n}}),
            );
        } else if kind < 65 {
            // Edit: originalFile whole, plus the patch.
            let original = p.file(fi);
            let lines: Vec<&str> = original.lines().collect();
            let at = rng.below(lines.len().max(1) as u64) as usize;
            let old = lines.get(at).copied().unwrap_or("").to_owned();
            let new = format!("{old} // {}", p.prose(rng, 2, 6));
            let row = w.assistant(rng, &msg,
                json!({"type": "tool_use", "id": id, "name": "Edit", "input": {
                    "file_path": path, "old_string": old, "new_string": new, "replace_all": false}}),
                Some("tool_use"));
            let from = at.saturating_sub(3);
            let to = (at + 4).min(lines.len());
            let mut hunk: Vec<String> = Vec::new();
            for (i, l) in lines[from..to].iter().enumerate() {
                if from + i == at {
                    hunk.push(format!("-{l}"));
                    hunk.push(format!("+{new}"));
                } else {
                    hunk.push(format!(" {l}"));
                }
            }
            w.tool_result(rng, &row, &id,
                json!(format!("The file {path} has been updated successfully.")),
                json!({"filePath": path, "oldString": old, "newString": new, "originalFile": original,
                    "structuredPatch": [{"oldStart": from + 1, "oldLines": to - from,
                        "newStart": from + 1, "newLines": to - from, "lines": hunk}],
                    "userModified": false, "replaceAll": false}));
        } else if kind < 88 {
            // Bash: progress rows while it runs, then the output.
            let cmd = format!("cargo test {} -- --nocapture", p.ident(rng));
            let description = p.prose(rng, 3, 8);
            let row = w.assistant(
                rng,
                &msg,
                json!({"type": "tool_use", "id": id, "name": "Bash", "input": {
                    "command": cmd, "description": description}}),
                Some("tool_use"),
            );
            let mut out = String::new();
            let src = p.file(rng.zipf(p.files.len()));
            for l in src.lines().take(rng.range(5, 120) as usize) {
                let _ = writeln!(out, "test {} ... ok  {}", p.ident(rng), l.trim());
            }
            let progress = rng.range(0, 4);
            let mut shown = 0;
            for k in 0..progress {
                shown = (shown + out.len() / (progress as usize + 1)).min(out.len());
                while !out.is_char_boundary(shown) {
                    shown -= 1;
                }
                let saved = w.parent.clone();
                w.parent = Some(row.clone());
                w.row(
                    rng,
                    json!({"type": "progress", "data": {"type": "bash_progress",
                    "output": &out[..shown], "fullOutput": &out[..shown],
                    "elapsedTimeSeconds": k + 1, "totalLines": out[..shown].lines().count(),
                    "totalBytes": shown}, "toolUseID": format!("bash-progress-{k}"),
                    "parentToolUseID": id}),
                    false,
                );
                w.parent = saved;
            }
            w.tool_result(rng, &row, &id, json!(out.trim_end()),
                json!({"stdout": out.trim_end(), "stderr": "", "interrupted": false, "isImage": false,
                       "noOutputExpected": false}));
        } else if kind < 94 {
            let pattern = p.ident(rng);
            let row = w.assistant(
                rng,
                &msg,
                json!({"type": "tool_use", "id": id, "name": "Grep", "input": {
                    "pattern": pattern, "path": p.cwd, "output_mode": "files_with_matches"}}),
                Some("tool_use"),
            );
            let hits: Vec<String> = (0..rng.range(0, 12))
                .map(|_| p.files[rng.zipf(p.files.len())].clone())
                .collect();
            let text = if hits.is_empty() {
                "No files found".to_owned()
            } else {
                format!("Found {} files\n{}", hits.len(), hits.join("\n"))
            };
            w.tool_result(
                rng,
                &row,
                &id,
                json!(text),
                json!({"mode": "files_with_matches", "numFiles": hits.len(), "filenames": hits}),
            );
        } else if w.agentic && subagents.len() < 3 {
            // Agent: a subagent transcript of its own.
            let agent_id = format!("a{}", rng.hex(16));
            let desc = p.prose(rng, 3, 6);
            let prompt = p.prose(rng, 15, 50);
            let row = w.assistant(
                rng,
                &msg,
                json!({"type": "tool_use", "id": id, "name": "Agent", "input": {
                    "description": desc, "prompt": prompt, "subagent_type": "Explore"}}),
                Some("tool_use"),
            );
            let answer = p.prose(rng, 20, 80);
            let tail = format!(
                "agentId: {agent_id} (use SendMessage with to: '{agent_id}' to continue this agent)\n<usage>total_tokens: 6196\ntool_uses: 2\nduration_ms: 8844</usage>"
            );
            w.tool_result(
                rng,
                &row,
                &id,
                json!([{"type": "text", "text": answer}, {"type": "text", "text": tail}]),
                json!({"status": "completed", "prompt": prompt, "agentId": agent_id,
                    "agentType": "Explore", "content": [{"type": "text", "text": answer}],
                    "totalDurationMs": 8844, "totalTokens": 6196, "totalToolUseCount": 2}),
            );
            subagents.push((agent_id, id.clone(), desc));
        } else {
            let row = w.assistant(rng, &msg,
                json!({"type": "tool_use", "id": id, "name": "Glob", "input": {"pattern": "**/*.ts"}}),
                Some("tool_use"));
            let names: Vec<&String> = p.files.iter().take(rng.range(1, 30) as usize).collect();
            w.tool_result(rng, &row, &id,
                json!(names.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n")),
                json!({"filenames": names, "durationMs": 12, "numFiles": names.len(), "truncated": false}));
        }
    }
    if w.agent.is_none() {
        let ms = rng.range(2000, 90_000);
        w.row(
            rng,
            json!({"type": "system", "subtype": "turn_duration",
            "durationMs": ms, "messageCount": calls * 2 + 2, "isMeta": false}),
            false,
        );
    }
}

/// Writes a session of about `target` bytes (and its subagents) under `dir`.
fn session(
    project: &Project,
    dir: &Path,
    rng: &mut Rng,
    target: u64,
    summary: &mut Summary,
) -> u64 {
    let id = rng.uuid();
    let file = dir.join(format!("{id}.jsonl"));
    let mut w = Writer {
        out: BufWriter::new(fs::File::create(&file).expect("create transcript")),
        bytes: 0,
        project,
        session: id.clone(),
        version: "2.1.318",
        slug: format!(
            "{}-{}-{}",
            rng.pick(PROSE),
            rng.pick(DEV_WORDS),
            rng.pick(DEV_WORDS)
        ),
        agent: None,
        agentic: rng.chance(170),
        clock: Clock(rng.below(300 * 86_400_000)),
        parent: None,
        prompt_id: String::new(),
    };
    w.meta(json!({"type": "permission-mode", "permissionMode": "acceptEdits", "sessionId": id}));
    let mut subagents = Vec::new();
    let mut since_compact = 0u64;
    let mut titled = false;
    while w.bytes < target {
        let before = w.bytes;
        if rng.chance(60) && w.parent.is_some() {
            // A rewind: the next prompt branches from an earlier point, abandoning this one.
            let keep = w.parent.clone();
            turn(&mut w, rng, &mut subagents);
            w.parent = keep;
        }
        turn(&mut w, rng, &mut subagents);
        if !titled {
            let t = project.prose(rng, 3, 7);
            w.meta(json!({"type": "ai-title", "aiTitle": t, "sessionId": id}));
            titled = true;
        }
        since_compact += w.bytes - before;
        if since_compact > 900_000 && w.bytes < target {
            let logical = w.parent.take();
            let uuid = rng.uuid();
            let ts = w.clock.tick(rng, 2000);
            w.line(&json!({"parentUuid": null, "logicalParentUuid": logical, "isSidechain": false,
                "type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                "isMeta": false, "timestamp": ts, "uuid": uuid, "level": "info",
                "compactMetadata": {"trigger": "auto", "preTokens": 167_420},
                "userType": "external", "entrypoint": "cli", "cwd": project.cwd, "sessionId": id,
                "version": "2.1.318", "gitBranch": project.branch}));
            w.parent = Some(uuid);
            let text = format!(
                "This session is being continued from a previous conversation that ran out of context. The summary below covers the earlier portion of the conversation.\n\nSummary:\n{}",
                project.prose(rng, 80, 300)
            );
            w.prompt_id = rng.uuid();
            w.row(
                rng,
                json!({"type": "user", "message": {"role": "user", "content": text},
                "isVisibleInTranscriptOnly": true, "isCompactSummary": true}),
                true,
            );
            since_compact = 0;
        }
    }
    let last = w.parent.clone();
    w.meta(json!({"type": "last-prompt", "lastPrompt": project.prose(rng, 3, 20), "leafUuid": last, "sessionId": id}));
    w.out.flush().expect("flush");
    let mut bytes = w.bytes;
    summary.sessions += 1;

    if !subagents.is_empty() {
        let sub_dir = dir.join(&id).join("subagents");
        fs::create_dir_all(&sub_dir).expect("subagents dir");
        for (agent_id, tool_use_id, desc) in &subagents {
            let mut sw = Writer {
                out: BufWriter::new(
                    fs::File::create(sub_dir.join(format!("agent-{agent_id}.jsonl")))
                        .expect("create"),
                ),
                bytes: 0,
                project,
                session: id.clone(),
                version: "2.1.318",
                slug: w.slug.clone(),
                agent: Some(agent_id.clone()),
                agentic: false,
                clock: Clock(w.clock.0),
                parent: None,
                prompt_id: String::new(),
            };
            let t = (target / 8).clamp(8_000, 400_000);
            let mut none = Vec::new();
            while sw.bytes < t {
                turn(&mut sw, rng, &mut none);
            }
            sw.out.flush().expect("flush");
            bytes += sw.bytes;
            let meta = serde_json::to_string(&json!({"agentType": "Explore", "description": desc,
                "toolUseId": tool_use_id, "spawnDepth": 1}))
            .expect("serialises");
            fs::write(sub_dir.join(format!("agent-{agent_id}.meta.json")), &meta).expect("meta");
            bytes += meta.len() as u64;
            summary.subagents += 1;
        }
        if summary.sample_session.is_none() {
            summary.sample_session = Some(id.clone());
        }
    }
    bytes
}

/// The home's 20 projects and their folders of transcripts, made, and its settings.
fn projects_under(home: &Path, seed: u64) -> (Vec<Project>, Vec<PathBuf>) {
    let projects: Vec<Project> = (0..20).map(|i| Project::new(i, seed)).collect();
    let root = home.join(".claude/projects");
    let dirs: Vec<PathBuf> = projects.iter().map(|p| root.join(&p.bucket)).collect();
    for d in &dirs {
        fs::create_dir_all(d).expect("project dir");
    }
    fs::write(
        home.join(".claude/settings.json"),
        "{\n  \"model\": \"opus\"\n}\n",
    )
    .expect("settings");
    (projects, dirs)
}

/// Generates a Claude Code home with one session of about `size` bytes (and its subagents)
/// in its first project: a large session alone, for tests of what depends on its size and
/// for the benchmark's `--one`.
#[allow(dead_code)] // (The tests include this file without `--one`'s caller.)
pub fn generate_one(home: &Path, size: u64, seed: u64) -> Summary {
    let mut rng = Rng::new(seed);
    let (projects, dirs) = projects_under(home, seed);
    let mut summary = Summary::default();
    summary.bytes += session(&projects[0], &dirs[0], &mut rng, size, &mut summary);
    // The session is the project's one transcript.
    summary.sample_session = fs::read_dir(&dirs[0])
        .expect("project dir")
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .find_map(|name| name.strip_suffix(".jsonl").map(str::to_owned));
    summary
}

/// Generates a Claude Code home of about `total` bytes of transcripts under `home`
/// (`home/.claude/projects/...`). Deterministic in `seed` and `total`.
pub fn generate(home: &Path, total: u64, seed: u64) -> Summary {
    let mut rng = Rng::new(seed);
    let (projects, dirs) = projects_under(home, seed);
    let mut summary = Summary::default();
    sessions(total, projects.len(), &mut rng, |p, size, rng| {
        let n = session(&projects[p], &dirs[p], rng, size, &mut summary);
        summary.bytes += n;
        n
    });
    summary
}
