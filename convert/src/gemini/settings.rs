//! `~/.gemini/settings.json`: MCP servers (the tools kind) and session settings.
//!
//! MCP: `command` → stdio; `httpUrl` → streamable HTTP; `url` with `"type": "sse"` → SSE;
//! `url` with `"type": "http"` or **no type** → HTTP. The issue asked for `url` → SSE, but the
//! CLI (verified with 0.61.0, `spec/harnesses/gemini.md` §10) treats an untyped `url` as
//! streamable HTTP with an SSE fallback, so asp follows the CLI. Keys ACP's `McpServer` has no
//! field for (`cwd`, `trust`, `timeout`, `includeTools`, `excludeTools`, `description`, an
//! explicit `type`, OAuth settings, ...) are kept under `_meta.gemini`, so writing a server back
//! gives the same entry.
//!
//! Settings: Gemini's ACP agent has no config options; it offers *modes* (`default`,
//! `autoEdit`, `yolo`, `plan`) and *models* (`gemini-2.5-pro`, `auto`, ...). asp names them
//! with the option ids the other converters use: `mode` (from `general.defaultApprovalMode`,
//! whose `auto_edit` is ACP's `autoEdit`) and `model` (from `model.name`). Nothing else in
//! settings.json is a session option.
//!
//! Gemini reads settings.json with comments allowed; asp reads such a file too, but never
//! rewrites one (the comments would be lost).
//!
//! Writing a server never grants it more than the home already does: `trust: true` and
//! credential-sending `authProviderType`s are left out of what comes from a bundle
//! ([`withhold_grants`]) and answered as not taken.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use crate::kit::accepted::{Accepts, Provider, Runs};
use asp_format::state::{McpRemote, McpServer, McpStdio, NameValue, SettingValue, Settings};
use serde_json::{Map, Value, json};

use crate::error::ConvertError;
use crate::kit::fsops::Writer;
use crate::kit::placement::Placement;
use crate::kit::report::Diagnostics;
use crate::kit::secrets;

/// The JSON text with `//` and `/* */` comments (outside strings) blanked out, byte for byte
/// and line for line, so a parse error's line and column are the file's own; `None` if it had
/// none.
fn strip_comments(text: &str) -> Option<String> {
    let blank = |out: &mut String, c: char| {
        if c == '\n' {
            out.push('\n');
        } else {
            out.extend(std::iter::repeat_n(' ', c.len_utf8()));
        }
    };
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut in_str, mut esc, mut any) = (false, false, false);
    while let Some(c) = chars.next() {
        if in_str {
            out.push(c);
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_str = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                any = true;
                blank(&mut out, c);
                for n in chars.by_ref() {
                    blank(&mut out, n);
                    if n == '\n' {
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                any = true;
                blank(&mut out, c);
                blank(&mut out, chars.next().expect("peeked"));
                let mut prev = ' ';
                for n in chars.by_ref() {
                    blank(&mut out, n);
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
            }
            _ => out.push(c),
        }
    }
    any.then_some(out)
}

/// Why settings.json cannot be used: the file, where in it (1-based line and column, when it
/// does not parse), and what is wrong.
#[derive(Debug)]
pub struct Unusable {
    pub path: PathBuf,
    pub line: Option<u64>,
    pub column: Option<u64>,
    pub why: String,
}

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let (Some(l), Some(c)) = (self.line, self.column) {
            write!(f, ":{l}:{c}")?;
        }
        write!(f, ": {}", self.why)
    }
}

impl From<Unusable> for ConvertError {
    fn from(u: Unusable) -> Self {
        let message = match (u.line, u.column) {
            (Some(l), Some(c)) => format!("line {l} column {c}: {}", u.why),
            _ => u.why,
        };
        ConvertError::invalid(u.path, message)
    }
}

/// settings.json as read: the document and whether it had comments.
#[derive(Debug, Clone)]
pub struct File {
    pub path: PathBuf,
    pub doc: Map<String, Value>,
    pub has_comments: bool,
    trailing_newline: bool,
}

impl File {
    /// Reads settings.json; a missing file is an empty document. A file that is not a JSON
    /// object (even without comments) is an error, as it is for the CLI.
    pub fn load(path: &Path) -> Result<File, Unusable> {
        let unusable = |line: Option<u64>, column: Option<u64>, why: String| Unusable {
            path: path.to_path_buf(),
            line,
            column,
            why,
        };
        let text = match fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Ok(File {
                    path: path.to_path_buf(),
                    doc: Map::new(),
                    has_comments: false,
                    trailing_newline: true,
                });
            }
            Err(e) => return Err(unusable(None, None, format!("cannot be read ({e})"))),
        };
        let stripped = strip_comments(&text);
        let parsed = if text.trim().is_empty() {
            Ok(Value::Object(Map::new()))
        } else {
            serde_json::from_str::<Value>(stripped.as_deref().unwrap_or(&text))
        };
        match parsed {
            Ok(Value::Object(doc)) => Ok(File {
                path: path.to_path_buf(),
                doc,
                has_comments: stripped.is_some(),
                trailing_newline: text.ends_with('\n'),
            }),
            Ok(_) => Err(unusable(None, None, "is not a JSON object".to_owned())),
            // Comments are blanked line for line, so the position is the file's own.
            Err(e) => Err(unusable(
                Some(e.line() as u64),
                Some(e.column() as u64),
                format!("is not JSON ({})", strip_position(&e.to_string())),
            )),
        }
    }

    fn get(&self, pointer: &str) -> Option<&Value> {
        let mut parts = pointer.trim_start_matches('/').split('/');
        let mut cur = self.doc.get(parts.next()?)?;
        for p in parts {
            cur = cur.get(p)?;
        }
        Some(cur)
    }

    /// The instruction file names (`context.fileName`: a string or a list), default
    /// `GEMINI.md`.
    pub fn context_file_names(&self) -> Vec<String> {
        match self.get("/context/fileName") {
            Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
            Some(Value::Array(a)) => {
                let names: Vec<String> = a
                    .iter()
                    .filter_map(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .map(str::to_owned)
                    .collect();
                if names.is_empty() {
                    vec!["GEMINI.md".to_owned()]
                } else {
                    names
                }
            }
            _ => vec!["GEMINI.md".to_owned()],
        }
    }

    /// Session retention: `None` when disabled, else the maximum age (default 30 days).
    pub fn retention_max_age(&self) -> Option<(String, i64)> {
        if self.get("/general/sessionRetention/enabled") == Some(&Value::Bool(false)) {
            return None;
        }
        let age = self
            .get("/general/sessionRetention/maxAge")
            .and_then(Value::as_str)
            .unwrap_or("30d");
        super::time::parse_duration(age).map(|ms| (age.to_owned(), ms))
    }

    /// The session settings: `model` and `mode`.
    pub fn settings(&self) -> Settings {
        let mut out = Settings::new();
        let model = self
            .get("/model/name")
            .or_else(|| self.doc.get("model").filter(|m| m.is_string()));
        if let Some(Value::String(m)) = model {
            out.insert("model".into(), SettingValue::Select(m.clone()));
        }
        if let Some(Value::String(mode)) = self.get("/general/defaultApprovalMode") {
            let id = match mode.as_str() {
                "auto_edit" => "autoEdit",
                other => other,
            };
            out.insert("mode".into(), SettingValue::Select(id.to_owned()));
        }
        out
    }

    /// The MCP servers as ACP describes them, in the file's order; `None` (reported) when
    /// `mcpServers` is there but not an object, since then what the servers are is not known.
    pub fn mcp_servers(&self, redact: bool, diagnostics: &Diagnostics) -> Option<Vec<McpServer>> {
        let servers = match self.doc.get("mcpServers") {
            None => return Some(Vec::new()),
            Some(Value::Object(servers)) => servers,
            Some(_) => {
                diagnostics.lost(
                    &self.path,
                    None,
                    "`mcpServers` is not an object; the MCP servers were not read",
                );
                return None;
            }
        };
        let mut out = Vec::new();
        for (name, cfg) in servers {
            let Some(cfg) = cfg.as_object() else {
                diagnostics.lost(
                    &self.path,
                    None,
                    format!("MCP server {name:?} is not an object; skipped"),
                );
                continue;
            };
            match server_from(name, cfg) {
                Some(mut s) => {
                    if redact {
                        secrets::redact(&mut s);
                    }
                    out.push(s);
                }
                None => diagnostics.left_out(
                    &self.path,
                    None,
                    format!(
                        "MCP server {name:?} has no `command`, `url` or `httpUrl` (ACP cannot \
                         describe a `tcp` server); skipped"
                    ),
                ),
            }
        }
        Some(out)
    }
}

/// A serde_json message without its trailing ` at line L column C` (reported on its own).
fn strip_position(message: &str) -> &str {
    message
        .rsplit_once(" at line ")
        .map_or(message, |(head, _)| head)
}

fn pairs(v: Option<&Value>) -> Vec<NameValue> {
    v.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| NameValue {
            name: k.clone(),
            value: v.as_str().map_or_else(|| v.to_string(), str::to_owned),
        })
        .collect()
}

/// One `mcpServers` entry as an ACP `McpServer`, by the CLI's transport precedence.
fn server_from(name: &str, cfg: &Map<String, Value>) -> Option<McpServer> {
    let s = |k: &str| cfg.get(k).and_then(Value::as_str);
    let keep = |used: &[&str]| -> Option<Map<String, Value>> {
        let rest: Map<String, Value> = cfg
            .iter()
            .filter(|(k, _)| !used.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut meta = Map::new();
        (!rest.is_empty()).then(|| {
            meta.insert("gemini".into(), Value::Object(rest));
            meta
        })
    };
    if let Some(url) = s("httpUrl") {
        let mut meta = keep(&["httpUrl", "headers"]).unwrap_or_default();
        let g = meta.entry("gemini").or_insert_with(|| json!({}));
        g["urlField"] = json!("httpUrl");
        return Some(McpServer::Http(McpRemote {
            name: name.to_owned(),
            url: url.to_owned(),
            headers: pairs(cfg.get("headers")),
            meta: Some(meta),
        }));
    }
    if let Some(url) = s("url") {
        // `urlField` also marks the server as Gemini's own, so an untyped `url` stays untyped.
        let mut meta = keep(&["url", "headers"]).unwrap_or_default();
        let g = meta.entry("gemini").or_insert_with(|| json!({}));
        g["urlField"] = json!("url");
        let remote = McpRemote {
            name: name.to_owned(),
            url: url.to_owned(),
            headers: pairs(cfg.get("headers")),
            meta: Some(meta),
        };
        return Some(if s("type") == Some("sse") {
            McpServer::Sse(remote)
        } else {
            McpServer::Http(remote)
        });
    }
    let command = s("command")?;
    Some(McpServer::Stdio(McpStdio {
        name: name.to_owned(),
        command: command.to_owned(),
        args: cfg
            .get("args")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned))
            .collect(),
        env: pairs(cfg.get("env")),
        meta: keep(&["command", "args", "env"]),
    }))
}

fn object_of(list: &[NameValue]) -> Value {
    Value::Object(
        list.iter()
            .map(|nv| (nv.name.clone(), Value::String(nv.value.clone())))
            .collect(),
    )
}

/// An ACP `McpServer` as a Gemini `mcpServers` entry. A server read from Gemini comes back as
/// it was (its `_meta.gemini` holds the rest); a foreign one gets `url` with an explicit
/// `type` (never the deprecated `httpUrl`).
pub fn server_to(server: &McpServer) -> Value {
    let native = server
        .meta()
        .and_then(|m| m.get("gemini"))
        .and_then(Value::as_object)
        .cloned();
    let mut out = Map::new();
    match server {
        McpServer::Stdio(s) => {
            out.insert("command".into(), json!(s.command));
            if !s.args.is_empty() {
                out.insert("args".into(), json!(s.args));
            }
            if !s.env.is_empty() {
                out.insert("env".into(), object_of(&s.env));
            }
        }
        McpServer::Http(r) | McpServer::Sse(r) => {
            let field = native
                .as_ref()
                .and_then(|n| n.get("urlField"))
                .and_then(Value::as_str)
                .unwrap_or("url");
            out.insert(field.into(), json!(r.url));
            if native.is_none() {
                out.insert("type".into(), json!(server.transport()));
            }
            if !r.headers.is_empty() {
                out.insert("headers".into(), object_of(&r.headers));
            }
        }
    }
    for (k, v) in native.into_iter().flatten() {
        if k != "urlField" {
            out.insert(k, v);
        }
    }
    Value::Object(out)
}

/// What Gemini CLI accepts: Google models and the CLI's own aliases, and the
/// `general.defaultApprovalMode` values its settings take (YOLO only from the command line).
pub const ACCEPTS: Accepts = Accepts {
    harness: "Gemini CLI",
    runs: Runs::One(Provider::Google),
    model_aliases: &["auto", "pro", "flash", "flash-lite"],
    modes: &["default", "auto_edit", "plan"],
};

/// The `general.defaultApprovalMode` for an ACP mode id, or why there is none. Gemini's own ids
/// (`default`, `autoEdit`, `plan`) and the settings spelling `auto_edit` are taken; Claude
/// Code's `acceptEdits` means the same as `autoEdit`. YOLO cannot be a default in settings.
pub fn approval_mode(mode: &str) -> Result<&'static str, String> {
    match mode {
        "default" => Ok("default"),
        "autoEdit" | "auto_edit" | "acceptEdits" => Ok("auto_edit"),
        "plan" => Ok("plan"),
        "yolo" | "bypassPermissions" => Err(format!(
            "mode {mode:?}: Gemini starts in YOLO mode only from the command line (--yolo), \
             never from settings"
        )),
        other => Err(format!(
            "mode {other:?} has no Gemini approval mode (Gemini has default, autoEdit and plan)"
        )),
    }
}

/// Takes out of a `mcpServers` entry what lets a server act without the user: `trust: true`
/// (every tool call runs without confirmation) and an `authProviderType` other than the
/// default `dynamic_discovery` (Gemini then sends the user's Google credentials to the server;
/// `targetAudience` and `targetServiceAccount` go with it). A bundle can say anything, and a
/// server read from Gemini keeps these under `_meta.gemini`, so asp never writes them from a
/// bundle: only a home that already grants them keeps them. Returns what was taken out, in
/// words.
pub fn withhold_grants(entry: &mut Map<String, Value>) -> Vec<String> {
    let mut out = Vec::new();
    if entry.get("trust").is_some_and(|t| *t != Value::Bool(false)) {
        entry.remove("trust");
        out.push("trust: true (its tool calls would run without asking)".to_owned());
    }
    if let Some(auth) = entry
        .get("authProviderType")
        .filter(|a| a.as_str() != Some("dynamic_discovery"))
        .cloned()
    {
        for k in ["authProviderType", "targetAudience", "targetServiceAccount"] {
            entry.remove(k);
        }
        out.push(format!(
            "authProviderType {auth} (Gemini would send your Google credentials to it)"
        ));
    }
    out
}

impl File {
    /// Adds `server` to `mcpServers` unless one of that name is there, never with the grants
    /// [`withhold_grants`] takes out: what it came to, and the grants withheld (a server
    /// already configured with the grants the home itself gave it withholds nothing).
    pub fn add_server(&mut self, server: &McpServer) -> (Placement, Vec<String>) {
        let full = server_to(server);
        let mut entry = full.clone();
        let withheld = entry
            .as_object_mut()
            .map(withhold_grants)
            .unwrap_or_default();
        let servers = self
            .doc
            .entry("mcpServers")
            .or_insert_with(|| Value::Object(Map::new()));
        if !servers.is_object() {
            return (
                Placement::Refused("`mcpServers` in settings.json is not an object".to_owned()),
                Vec::new(),
            );
        }
        let servers = servers.as_object_mut().expect("checked");
        match servers.get(server.name()) {
            // The home's own record grants what the bundle asks for: nothing is widened.
            Some(existing) if *existing == full => (Placement::AlreadyThere, Vec::new()),
            Some(existing) if *existing == entry => (Placement::AlreadyThere, withheld),
            Some(_) => (
                Placement::Refused(format!(
                    "an MCP server named {:?} is already configured differently in {}; it was \
                     left as it is",
                    server.name(),
                    self.path.display()
                )),
                Vec::new(),
            ),
            None => {
                servers.insert(server.name().to_owned(), entry);
                (Placement::New, withheld)
            }
        }
    }

    /// Sets `/a/b` to `value`, creating objects on the way; whether it changed.
    pub fn set(&mut self, path: &[&str], value: Value) -> bool {
        let (last, parents) = path.split_last().expect("a non-empty path");
        let mut cur = &mut self.doc;
        for p in parents {
            let v = cur
                .entry(p.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
            if !v.is_object() {
                *v = Value::Object(Map::new());
            }
            cur = v.as_object_mut().expect("made an object");
        }
        if cur.get(*last) == Some(&value) {
            return false;
        }
        cur.insert(last.to_string(), value);
        true
    }

    /// Writes the document back as `JSON.stringify(…, null, 2)`, keeping whether the file
    /// ended in a newline.
    pub fn save(&self, writer: &Writer) -> Result<(), ConvertError> {
        let mut text =
            serde_json::to_string_pretty(&Value::Object(self.doc.clone())).expect("serialises");
        if self.trailing_newline {
            text.push('\n');
        }
        writer.replace(&self.path, text.as_bytes())
    }
}

/// Sets carried option values in the settings file (in memory), each with what it came to.
/// Returns whether the file changed.
pub fn merge(
    file: &mut File,
    values: &asp_format::state::Settings,
    out: &mut Vec<crate::kit::placement::Placement>,
) -> bool {
    use crate::kit::placement::Placement;
    use asp_format::state::SettingValue;
    let mut changed = false;
    for (id, value) in values {
        let result = match (id.as_str(), value) {
            ("model", SettingValue::Select(m)) => ACCEPTS
                .model(m)
                .map(|()| file.set(&["model", "name"], json!(m))),
            ("mode", SettingValue::Select(mode)) => approval_mode(mode)
                .and_then(|m| ACCEPTS.mode(m).map(|()| m))
                .map(|m| file.set(&["general", "defaultApprovalMode"], json!(m))),
            (other, _) => Err(format!(
                "setting {other:?}: Gemini has no session option of that name (it has \
                 model and mode)"
            )),
        };
        out.push(match result {
            Ok(c) => {
                changed |= c;
                Placement::New
            }
            Err(why) => Placement::Refused(why),
        });
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comments_are_stripped_outside_strings() {
        let t = "{\n  // a comment\n  \"a\": \"http://x\", /* b */ \"c\": 1\n}";
        let s = strip_comments(t).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&s).unwrap(),
            json!({"a": "http://x", "c": 1})
        );
        assert_eq!(strip_comments("{\"a\": \"//not\"}"), None);
        let t = "{ /* é\n */ \"a\": 1, // x\n \"b\": }";
        let s = strip_comments(t).unwrap();
        assert_eq!(s.len(), t.len(), "blanked byte for byte");
        assert_eq!(s.lines().count(), t.lines().count(), "and line for line");
    }

    #[test]
    fn a_file_that_is_not_json_says_where() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        fs::write(
            &path,
            "{\n  /* a\n  comment */ \"model\": {\"name\": \"x\",}\n}\n",
        )
        .unwrap();
        let e = File::load(&path).unwrap_err();
        assert_eq!(
            (e.line, e.column),
            (Some(3), Some(36)),
            "the `}}` after the comma"
        );
        assert!(
            e.why.starts_with("is not JSON (trailing comma"),
            "{}",
            e.why
        );
        assert!(!e.why.contains(" at line "), "{}", e.why);
    }

    #[test]
    fn transports_follow_the_cli_not_the_old_docs() {
        let http = server_from("a", json!({"url": "https://x"}).as_object().unwrap()).unwrap();
        assert!(matches!(http, McpServer::Http(_)));
        assert_eq!(http.meta().unwrap()["gemini"], json!({"urlField": "url"}));
        let sse = server_from(
            "b",
            json!({"url": "https://y", "type": "sse"})
                .as_object()
                .unwrap(),
        )
        .unwrap();
        assert!(matches!(sse, McpServer::Sse(_)));
        let old = server_from("c", json!({"httpUrl": "https://z"}).as_object().unwrap()).unwrap();
        assert!(matches!(old, McpServer::Http(_)));
        for (s, native) in [
            (http, json!({"url": "https://x"})),
            (sse, json!({"url": "https://y", "type": "sse"})),
            (old, json!({"httpUrl": "https://z"})),
        ] {
            assert_eq!(server_to(&s), native);
        }
    }

    #[test]
    fn foreign_servers_get_an_explicit_type() {
        let s: McpServer = serde_json::from_value(
            json!({"type": "http", "name": "docs", "url": "https://d", "headers": [{"name": "A", "value": "b"}]}),
        )
        .unwrap();
        assert_eq!(
            server_to(&s),
            json!({"url": "https://d", "type": "http", "headers": {"A": "b"}})
        );
    }

    #[test]
    fn modes_map_to_approval_modes() {
        assert_eq!(approval_mode("autoEdit"), Ok("auto_edit"));
        assert_eq!(approval_mode("acceptEdits"), Ok("auto_edit"));
        assert!(approval_mode("yolo").unwrap_err().contains("--yolo"));
        assert!(approval_mode("on-request").is_err());
        assert!(ACCEPTS.model("gemini-2.5-pro").is_ok());
        assert!(ACCEPTS.model("opus").is_err());
    }
}
