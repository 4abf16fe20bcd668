//! `config.toml`: session settings and `[mcp_servers.*]`, read into ACP shapes and merged back
//! without disturbing the user's file (spec/harnesses/codex.md §10).
//!
//! Edits go through `toml_edit`, which keeps comments, key order and formatting: only the
//! tables and keys asp adds are new. Nothing already there is changed: a setting the user set
//! stays as it is, a server of the same name that differs is left alone and reported.
//!
//! Codex validates an MCP server by its transport: a key of the other transport (`url` beside
//! `command`, `env` on an HTTP server) makes the *whole* config fail to load. So a server is
//! written only with keys of its own transport, from an allow-list; keys ACP cannot express
//! come back from `_meta.codex` only when they are on that list.
//!
//! Two more rules keep a bundle from doing what the user never chose in Codex:
//!
//! - Codex starts only servers named `^[A-Za-z0-9_-]+$` (`is_valid_mcp_server_name` in
//!   codex-rs); any other name is not written.
//! - Approval modes that let Codex run a server's tools without asking
//!   (`default_tools_approval_mode`, `tools.<tool>.approval_mode` other than `auto`/`prompt`)
//!   are written only for a server that comes, unchanged, from a Codex `config.toml`: the
//!   reader records [`NATIVE_DIGEST`] beside them, a digest of the server as it was read
//!   (its name, program, arguments, URL, the names of its env and headers, and its Codex
//!   keys). A server from anywhere else, or one changed since, gets them left out and listed
//!   in `notTaken`. This is provenance, not authentication: it stops approvals from being
//!   made up or moved to another server by other tools, not a bundle forged on purpose (which
//!   could name any program to run anyway).

use std::path::{Path, PathBuf};

use asp_format::state::{McpRemote, McpServer, McpStdio, Meta, NameValue, SettingValue, Settings};
use serde_json::{Map, Value as Json, json};
use toml_edit::{Array, DocumentMut, InlineTable, Item, Table, Value as Toml};

use super::settings::{self as codex_settings, EFFORT, EFFORTS, MODE, MODEL};
use crate::error::ConvertError;
use crate::kit::report::Diagnostics;
use crate::kit::secrets;

pub const FILE: &str = "config.toml";

/// Keys only a stdio server may have.
const STDIO_ONLY: &[&str] = &["env_vars", "cwd"];
/// Keys only a streamable-HTTP server may have.
const HTTP_ONLY: &[&str] = &[
    "bearer_token_env_var",
    "env_http_headers",
    "http_headers_helper",
    "oauth",
    "oauth_resource",
    "auth",
];
/// Keys either transport may have.
const SHARED: &[&str] = &[
    "enabled",
    "required",
    "startup_timeout_sec",
    "startup_timeout_ms",
    "tool_timeout_sec",
    "enabled_tools",
    "disabled_tools",
    "scopes",
    "supports_parallel_tool_calls",
    "omit_tools_from",
    "default_tools_approval_mode",
    "environment_id",
    "tools",
];

/// Approval modes that ask at least as often as Codex's default (`auto`); any other value
/// (`approve`, `writes`, or one this converter does not know) needs [`NATIVE_DIGEST`].
const SAFE_APPROVAL_MODES: &[&str] = &["auto", "prompt"];

/// The `_meta.codex` key under which the reader records where a server's approval modes come
/// from (see the module documentation). Not a Codex key; never written to `config.toml`.
pub const NATIVE_DIGEST: &str = "nativeDigest";

/// Whether Codex starts an MCP server of this name (`is_valid_mcp_server_name` in codex-rs:
/// `^[A-Za-z0-9_-]+$`, because the name becomes part of the tool names the model sees).
pub fn is_valid_server_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn is_safe_approval(v: &Json) -> bool {
    v.as_str().is_some_and(|m| SAFE_APPROVAL_MODES.contains(&m))
}

/// The approval settings of a server's Codex keys that let tools run without asking:
/// `(key path, value)`.
fn widening_approvals(codex: &Map<String, Json>) -> Vec<(String, Json)> {
    let mut out = Vec::new();
    if let Some(v) = codex.get("default_tools_approval_mode")
        && !is_safe_approval(v)
    {
        out.push(("default_tools_approval_mode".to_owned(), v.clone()));
    }
    if let Some(Json::Object(tools)) = codex.get("tools") {
        for (tool, cfg) in tools {
            if let Some(v) = cfg.get("approval_mode")
                && !is_safe_approval(v)
            {
                out.push((format!("tools.{tool}.approval_mode"), v.clone()));
            }
        }
    }
    out
}

/// `v` with every object's keys sorted, so a digest does not depend on key order.
fn canonical(v: &Json) -> Json {
    match v {
        Json::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            Json::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), canonical(&o[k])))
                    .collect(),
            )
        }
        Json::Array(a) => Json::Array(a.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// The digest recorded as [`NATIVE_DIGEST`]: the server's name, transport, program,
/// arguments, URL, env and header *names* (values are secrets that `--redact-secrets` blanks,
/// and a digest of a short secret would give it away) and its other Codex keys.
fn native_digest(server: &McpServer, codex: &Map<String, Json>) -> String {
    let mut keys = codex.clone();
    keys.remove(NATIVE_DIGEST);
    let names = |list: &[NameValue]| {
        let mut n: Vec<&str> = list.iter().map(|nv| nv.name.as_str()).collect();
        n.sort_unstable();
        json!(n)
    };
    let shape = match server {
        McpServer::Stdio(s) => json!({"transport": "stdio", "name": s.name,
            "command": s.command, "args": s.args, "env": names(&s.env)}),
        McpServer::Http(r) => json!({"transport": "http", "name": r.name,
            "url": r.url, "headers": names(&r.headers)}),
        McpServer::Sse(r) => json!({"transport": "sse", "name": r.name,
            "url": r.url, "headers": names(&r.headers)}),
    };
    let text = canonical(&json!({"server": shape, "codex": keys})).to_string();
    asp_format::Digest::of(format!("asp/codex/mcp-server\0{text}").as_bytes()).hex()
}

/// Whether `server`'s Codex keys are the record this converter made when reading it from a
/// Codex `config.toml`, for exactly this server.
fn is_native_record(server: &McpServer, codex: &Map<String, Json>) -> bool {
    codex
        .get(NATIVE_DIGEST)
        .and_then(Json::as_str)
        .is_some_and(|d| d == native_digest(server, codex))
}

/// Codex-only settings carried by their config key as the option id (no ACP adapter has them).
const PLAIN_SETTINGS: &[(&str, &[&str])] = &[
    (
        "model_reasoning_summary",
        &["auto", "concise", "detailed", "none"],
    ),
    ("model_verbosity", &["low", "medium", "high"]),
    ("model_provider", &[]),
];

/// A TOML value as JSON.
pub fn to_json(v: &Toml) -> Json {
    match v {
        Toml::String(s) => json!(s.value()),
        Toml::Integer(i) => json!(i.value()),
        Toml::Float(f) => serde_json::Number::from_f64(*f.value()).map_or(Json::Null, Json::Number),
        Toml::Boolean(b) => json!(b.value()),
        Toml::Datetime(d) => json!(d.value().to_string()),
        Toml::Array(a) => Json::Array(a.iter().map(to_json).collect()),
        Toml::InlineTable(t) => {
            Json::Object(t.iter().map(|(k, v)| (k.to_owned(), to_json(v))).collect())
        }
    }
}

/// An item (value or table) as JSON.
pub fn item_json(item: &Item) -> Option<Json> {
    match item {
        Item::None => None,
        Item::Value(v) => Some(to_json(v)),
        Item::Table(t) => Some(Json::Object(
            t.iter()
                .filter_map(|(k, i)| Some((k.to_owned(), item_json(i)?)))
                .collect(),
        )),
        Item::ArrayOfTables(a) => Some(Json::Array(
            a.iter()
                .map(|t| item_json(&Item::Table(t.clone())).unwrap_or(Json::Null))
                .collect(),
        )),
    }
}

/// A JSON value as TOML (`null` has none).
pub fn from_json(v: &Json) -> Option<Toml> {
    Some(match v {
        Json::Null => return None,
        Json::Bool(b) => (*b).into(),
        Json::Number(n) => match n.as_i64() {
            Some(i) => i.into(),
            None => n.as_f64()?.into(),
        },
        Json::String(s) => s.as_str().into(),
        Json::Array(a) => Toml::Array(a.iter().filter_map(from_json).collect::<Array>()),
        Json::Object(o) => {
            let mut t = InlineTable::new();
            for (k, v) in o {
                if let Some(v) = from_json(v) {
                    t.insert(k, v);
                }
            }
            Toml::InlineTable(t)
        }
    })
}

/// The user's `config.toml`, parsed for editing.
#[derive(Debug)]
pub struct Config {
    pub path: PathBuf,
    pub doc: DocumentMut,
    original: Option<String>,
}

impl Config {
    /// Reads `codex_home/config.toml`; a missing file is an empty one. A file that is not valid
    /// TOML is an error: it must not be rewritten.
    pub fn load(codex_home: &Path) -> Result<Config, ConvertError> {
        let path = codex_home.join(FILE);
        let original = match crate::kit::fsops::read_to_string(&path) {
            Ok(s) => Some(s),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(ConvertError::io(&path)(e)),
        };
        let doc = match &original {
            Some(s) => s.parse::<DocumentMut>().map_err(|e| {
                ConvertError::invalid(
                    &path,
                    format!(
                        "not valid TOML: {}",
                        e.to_string().lines().next().unwrap_or("")
                    ),
                )
            })?,
            None => DocumentMut::new(),
        };
        Ok(Config {
            path,
            doc,
            original,
        })
    }

    /// Whether edits changed the file. A missing file nothing was put in is unchanged: an
    /// import of sessions alone must not leave an empty `config.toml` behind.
    pub fn changed(&self) -> bool {
        let now = self.doc.to_string();
        match &self.original {
            Some(was) => *was != now,
            None => !now.trim().is_empty(),
        }
    }

    pub fn existed(&self) -> bool {
        self.original.is_some()
    }

    /// A top-level string value, with the active `profile` applied.
    fn effective(&self, key: &str) -> Option<String> {
        let root = self.doc.as_table();
        let profile = root.get("profile").and_then(Item::as_str);
        profile
            .and_then(|p| root.get("profiles")?.get(p)?.get(key)?.as_str())
            .or_else(|| root.get(key)?.as_str())
            .map(str::to_owned)
    }

    /// The top-level keys that configure Codex itself, not a session: what [`Config::settings`]
    /// and [`Config::mcp_servers`] do not read (`features`, `sandbox_workspace_write`,
    /// `projects`' trust, `model_providers`, `notify`, ...). A profile's keys are the settings'
    /// (`profile` chooses among them).
    pub fn own_keys(&self) -> Vec<String> {
        const READ: &[&str] = &[
            "model",
            "model_reasoning_effort",
            "approval_policy",
            "sandbox_mode",
            "mcp_servers",
            "profile",
            "profiles",
        ];
        self.doc
            .as_table()
            .iter()
            .map(|(k, _)| k)
            .filter(|k| !READ.contains(k) && !PLAIN_SETTINGS.iter().any(|(p, _)| p == k))
            .map(str::to_owned)
            .collect()
    }

    /// Settings as ACP config option values (see `settings.rs` for the ids).
    pub fn settings(&self) -> Settings {
        let mut s = Settings::new();
        if let Some(m) = self.effective("model") {
            s.insert(MODEL.into(), SettingValue::Select(m));
        }
        if let Some(e) = self.effective("model_reasoning_effort") {
            s.insert(EFFORT.into(), SettingValue::Select(e));
        }
        if let (Some(a), Some(sb)) = (
            self.effective("approval_policy"),
            self.effective("sandbox_mode"),
        ) {
            s.insert(
                MODE.into(),
                SettingValue::Select(codex_settings::mode_id(&a, &sb)),
            );
        }
        for (key, _) in PLAIN_SETTINGS {
            if let Some(v) = self.effective(key) {
                s.insert((*key).into(), SettingValue::Select(v));
            }
        }
        s
    }

    /// `[mcp_servers.*]` as ACP `McpServer`s.
    pub fn mcp_servers(&self, diagnostics: &Diagnostics, redact: bool) -> Vec<McpServer> {
        let Some(servers) = self.doc.get("mcp_servers").and_then(Item::as_table_like) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (name, item) in servers.iter() {
            let Some(Json::Object(mut cfg)) = item_json(item) else {
                diagnostics.lost(
                    &self.path,
                    None,
                    format!("[mcp_servers.{name}] is not a table; skipped"),
                );
                continue;
            };
            let pairs = |v: Option<Json>| -> Vec<NameValue> {
                let mut list: Vec<NameValue> = v
                    .and_then(|v| v.as_object().cloned())
                    .into_iter()
                    .flatten()
                    .map(|(k, v)| NameValue {
                        name: k,
                        value: v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                    })
                    .collect();
                list.sort_by(|a, b| a.name.cmp(&b.name));
                list
            };
            let mut server = if let Some(Json::String(command)) = cfg.remove("command") {
                let args = cfg
                    .remove("args")
                    .and_then(|a| a.as_array().cloned())
                    .unwrap_or_default()
                    .into_iter()
                    .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned))
                    .collect();
                McpServer::Stdio(McpStdio {
                    name: name.to_owned(),
                    command,
                    args,
                    env: pairs(cfg.remove("env")),
                    meta: None,
                })
            } else if let Some(Json::String(url)) = cfg.remove("url") {
                let mut headers = pairs(cfg.remove("http_headers"));
                // A literal token: carried as the header it stands for, so --redact-secrets
                // blanks it and other harnesses can use it.
                if let Some(Json::String(token)) = cfg.remove("bearer_token") {
                    headers.push(NameValue {
                        name: "Authorization".into(),
                        value: format!("Bearer {token}"),
                    });
                }
                headers_from_variables(&mut cfg, &mut headers);
                McpServer::Http(McpRemote {
                    name: name.to_owned(),
                    url,
                    headers,
                    meta: None,
                })
            } else {
                diagnostics.left_out(
                    &self.path,
                    None,
                    format!("[mcp_servers.{name}] has neither `command` nor `url` (Codex refuses it too); skipped"),
                );
                continue;
            };
            cfg.remove("name");
            cfg.remove(NATIVE_DIGEST);
            if !widening_approvals(&cfg).is_empty() {
                // The user chose these approvals in Codex, for this server: say so, so that
                // writing it back (and only it) keeps them.
                let digest = native_digest(&server, &cfg);
                cfg.insert(NATIVE_DIGEST.into(), json!(digest));
            }
            if !cfg.is_empty() {
                let mut meta = Meta::new();
                meta.insert("codex".into(), Json::Object(cfg));
                *server.meta_mut() = Some(meta);
            }
            secrets::carry(&mut server, redact, &self.path, diagnostics);
            out.push(server);
        }
        out
    }
}

/// The headers Codex makes of environment variables, as the headers every other harness
/// spells with a `${VAR}` in their value (Claude Code, Gemini CLI, Qwen Code and OpenCode
/// expand it when they start the server): `bearer_token_env_var = "VAR"` is `Authorization:
/// Bearer ${VAR}`, `env_http_headers = { H = "VAR" }` is `H: ${VAR}`. Left under
/// `_meta.codex` they reached no other harness, and a server carried into one lost its token
/// without a word. Writing into Codex gives the keys back ([`server_table`]). A header already
/// given literally, or a value that is not a variable's name, keeps its key in `_meta.codex`.
fn headers_from_variables(cfg: &mut Map<String, Json>, headers: &mut Vec<NameValue>) {
    let has = |headers: &[NameValue], name: &str| {
        headers.iter().any(|h| h.name.eq_ignore_ascii_case(name))
    };
    if let Some(Json::String(var)) = cfg.get("bearer_token_env_var")
        && is_variable_name(var)
        && !has(headers, "Authorization")
    {
        headers.push(NameValue {
            name: "Authorization".into(),
            value: format!("Bearer ${{{var}}}"),
        });
        cfg.remove("bearer_token_env_var");
    }
    if let Some(Json::Object(by_name)) = cfg.get_mut("env_http_headers") {
        by_name.retain(|header, var| match var {
            Json::String(var) if is_variable_name(var) && !has(headers, header) => {
                headers.push(NameValue {
                    name: header.clone(),
                    value: format!("${{{var}}}"),
                });
                false
            }
            _ => true,
        });
        if by_name.is_empty() {
            cfg.remove("env_http_headers");
        }
    }
}

/// What merging one MCP server did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Merge {
    Added {
        notes: Vec<String>,
    },
    AlreadyThere,
    /// Not taken, with the reason.
    Refused(String),
}

/// The environment variable a value is nothing but a reference to: `${NAME}`, `${env:NAME}`
/// or `$NAME`, with `NAME` a POSIX variable name.
///
/// Not [`secrets::is_reference`]: that one asks whether a value holds no secret, so it also
/// accepts `${input:token}` (an editor prompt, no variable at all), `${NAME:-default}` (a
/// default Codex has no way to express) and dotted names. Codex can only pass a variable on
/// by its name (`env_vars`, `bearer_token_env_var`, `env_http_headers`), so it needs the name
/// and the narrower grammar; values `is_reference` accepts and this does not are left out and
/// reported.
fn env_reference(value: &str) -> Option<&str> {
    let v = value.trim();
    let name = match v.strip_prefix("${") {
        Some(rest) => {
            let inner = rest.strip_suffix('}')?;
            inner.strip_prefix("env:").unwrap_or(inner)
        }
        None => v.strip_prefix('$')?,
    };
    is_variable_name(name).then_some(name)
}

/// Whether `name` is a POSIX variable name, the only kind Codex passes on by name.
fn is_variable_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|first| first.is_ascii_alphabetic() || first == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

use crate::kit::secrets::redacted;

/// The table Codex would load for `server`, or why it cannot be written.
fn server_table(server: &McpServer) -> Result<(Table, Vec<String>), String> {
    // OpenCode's `{env:VAR}` read as the `${VAR}` the rules below know (`kit::env_refs`).
    let server = &crate::kit::env_refs::respelled(server, crate::kit::env_refs::Spelling::Dollar);
    let name = server.name();
    let blanked = redacted(server);
    let mut notes = Vec::new();
    let mut t = Table::new();
    let mut extra: Map<String, Json> = Map::new();
    let allowed: Vec<&str> = match server {
        McpServer::Stdio(s) => {
            t.insert("command", toml_edit::value(s.command.as_str()));
            if !s.args.is_empty() {
                t.insert(
                    "args",
                    toml_edit::value(s.args.iter().map(String::as_str).collect::<Array>()),
                );
            }
            let mut env = InlineTable::new();
            let mut pass = Vec::new();
            for nv in &s.env {
                if blanked.contains(&format!("env.{}", nv.name)) {
                    notes.push(format!(
                        "env {} was blanked when the bundle was packed (--redact-secrets); set it in [mcp_servers.{name}.env] by hand",
                        nv.name
                    ));
                } else if let Some(var) = env_reference(&nv.value) {
                    if var == nv.name {
                        pass.push(var.to_owned());
                    } else {
                        notes.push(format!(
                            "env {} refers to ${{{var}}}; Codex passes env values literally and can only pass variables through under their own name, so the server was written without that env entry",
                            nv.name
                        ));
                    }
                } else if nv.value.contains("${") || secrets::is_reference(&nv.value) {
                    notes.push(format!(
                        "env {} is {:?}, which another agent would expand; Codex passes env values literally, so the server was written without that env entry",
                        nv.name, nv.value
                    ));
                } else {
                    env.insert(&nv.name, nv.value.as_str().into());
                }
            }
            if !env.is_empty() {
                t.insert("env", toml_edit::value(env));
            }
            if !pass.is_empty() {
                extra.insert("env_vars".into(), json!(pass));
            }
            SHARED.iter().chain(STDIO_ONLY).copied().collect()
        }
        McpServer::Http(r) => {
            t.insert("url", toml_edit::value(r.url.as_str()));
            let mut headers = InlineTable::new();
            let mut env_headers = Map::new();
            for h in &r.headers {
                let value = h.value.trim();
                if blanked.contains(&format!("headers.{}", h.name)) {
                    notes.push(format!(
                        "header {} was blanked when the bundle was packed (--redact-secrets); set it by hand",
                        h.name
                    ));
                } else if h.name.eq_ignore_ascii_case("authorization")
                    && let Some(var) = value
                        .split_once(char::is_whitespace)
                        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
                        .and_then(|(_, rest)| env_reference(rest))
                {
                    extra.insert("bearer_token_env_var".into(), json!(var));
                } else if let Some(var) = env_reference(value) {
                    env_headers.insert(h.name.clone(), json!(var));
                } else if value.contains("${") || secrets::is_reference(value) {
                    notes.push(format!(
                        "header {} mixes text and a variable ({value}); Codex cannot expand that, so the server was written without that header",
                        h.name
                    ));
                } else {
                    headers.insert(&h.name, h.value.as_str().into());
                }
            }
            if !headers.is_empty() {
                t.insert("http_headers", toml_edit::value(headers));
            }
            if !env_headers.is_empty() {
                extra.insert("env_http_headers".into(), Json::Object(env_headers));
            }
            SHARED.iter().chain(HTTP_ONLY).copied().collect()
        }
        McpServer::Sse(_) => {
            return Err(format!(
                "MCP server {name} uses the SSE transport; Codex speaks MCP over stdio and streamable HTTP only"
            ));
        }
    };
    if let Some(Json::Object(codex)) = server.meta().and_then(|m| m.get("codex")) {
        for (k, v) in codex {
            if allowed.contains(&k.as_str()) {
                match (extra.get_mut(k), v) {
                    // What the reader could not make a header of (`env_http_headers` entries
                    // beside a literal header of that name, or naming no plain variable) joins
                    // what the headers give back.
                    (Some(Json::Object(have)), Json::Object(more)) => {
                        for (mk, mv) in more {
                            have.entry(mk.clone()).or_insert_with(|| mv.clone());
                        }
                    }
                    (Some(_), _) => {}
                    (None, _) => {
                        extra.insert(k.clone(), v.clone());
                    }
                }
            } else if k != "bearer_token" && k != NATIVE_DIGEST {
                notes.push(format!(
                    "`{k}` is not a key Codex takes for this transport; left out"
                ));
            }
        }
        if !is_native_record(server, codex) {
            for (key, value) in widening_approvals(codex) {
                drop_setting(&mut extra, &key);
                notes.push(format!(
                    "`{key} = {value}` would let Codex run this server's tools without asking, and the server does not come unchanged from a Codex config.toml; left out (set it by hand if you trust the server)"
                ));
            }
        }
    }
    for key in allowed {
        if let Some(v) = extra.get(key).and_then(from_json) {
            t.insert(key, Item::Value(v));
        }
    }
    Ok((t, notes))
}

/// Removes `default_tools_approval_mode` or `tools.<tool>.approval_mode` (and a tool table
/// left empty) from the keys to write.
fn drop_setting(extra: &mut Map<String, Json>, key: &str) {
    if key == "default_tools_approval_mode" {
        extra.remove(key);
        return;
    }
    let Some(Json::Object(tools)) = extra.get_mut("tools") else {
        return;
    };
    let tool = key
        .strip_prefix("tools.")
        .and_then(|k| k.strip_suffix(".approval_mode"))
        .unwrap_or_default();
    if let Some(Json::Object(cfg)) = tools.get_mut(tool) {
        cfg.remove("approval_mode");
        if cfg.is_empty() {
            tools.remove(tool);
        }
    }
    if tools.is_empty() {
        extra.remove("tools");
    }
}

impl Config {
    /// Adds `server` as `[mcp_servers.<name>]` unless a server of that name is there.
    pub fn merge_mcp(&mut self, server: &McpServer) -> Merge {
        let name = server.name();
        if !is_valid_server_name(name) {
            return Merge::Refused(format!(
                "MCP server {name:?}: Codex starts only servers named with letters, digits, `_` and `-`; left out"
            ));
        }
        let (table, notes) = match server_table(server) {
            Ok(t) => t,
            Err(reason) => return Merge::Refused(reason),
        };
        let root = self.doc.as_table_mut();
        let servers = root.entry("mcp_servers").or_insert_with(|| {
            let mut t = Table::new();
            t.set_implicit(true);
            Item::Table(t)
        });
        let Some(servers) = servers.as_table_like_mut() else {
            return Merge::Refused(
                "`mcp_servers` in config.toml is not a table; left as it is".into(),
            );
        };
        let candidate = Item::Table(table);
        if let Some(existing) = servers.get(name) {
            let same = item_json(existing) == item_json(&candidate);
            return if same {
                Merge::AlreadyThere
            } else {
                Merge::Refused(format!(
                    "a different MCP server named {name} is already in config.toml; left as it is"
                ))
            };
        }
        servers.insert(name, candidate);
        Merge::Added { notes }
    }

    /// Sets a top-level key if it is not set; says what happened.
    fn set_if_absent(&mut self, key: &str, value: &str) -> Result<bool, String> {
        match self.doc.get(key).and_then(Item::as_str) {
            Some(v) if v == value => Ok(false),
            Some(v) => Err(format!(
                "config.toml already sets {key} = {v:?}; {value:?} was not written over it"
            )),
            None if self.doc.contains_key(key) => {
                Err(format!("config.toml already sets {key}; left as it is"))
            }
            None => {
                self.doc.insert(key, toml_edit::value(value));
                Ok(true)
            }
        }
    }

    /// Merges one setting; `Err` says why it was not taken.
    pub fn merge_setting(&mut self, id: &str, value: &SettingValue) -> Result<(), String> {
        let SettingValue::Select(v) = value else {
            return Err(format!("Codex has no on/off setting `{id}`"));
        };
        match id {
            MODEL => {
                codex_settings::ACCEPTS.model(v)?;
                self.set_if_absent("model", v).map(drop)
            }
            EFFORT | "effort" | "thought_level" => {
                if !EFFORTS.contains(&v.as_str()) {
                    return Err(format!(
                        "reasoning effort {v:?} is not one Codex knows ({})",
                        EFFORTS.join(", ")
                    ));
                }
                self.set_if_absent("model_reasoning_effort", v).map(drop)
            }
            MODE => {
                codex_settings::ACCEPTS.mode(v)?;
                let (approval, sandbox) =
                    codex_settings::parse_mode(v).expect("every mode Codex accepts parses");
                let a = self.set_if_absent("approval_policy", approval);
                let s = self.set_if_absent("sandbox_mode", sandbox);
                a.and(s).map(drop)
            }
            _ => {
                let Some((key, vocab)) = PLAIN_SETTINGS.iter().find(|(k, _)| *k == id) else {
                    return Err(format!("Codex has no session setting `{id}`"));
                };
                if !vocab.is_empty() && !vocab.contains(&v.as_str()) {
                    return Err(format!(
                        "{key} {v:?} is not one Codex knows ({})",
                        vocab.join(", ")
                    ));
                }
                if *key == "model_provider"
                    && v != "openai"
                    && self
                        .doc
                        .get("model_providers")
                        .and_then(|p| p.get(v))
                        .is_none()
                {
                    return Err(format!(
                        "model provider {v:?} is not defined in this config.toml"
                    ));
                }
                self.set_if_absent(key, v).map(drop)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(text: &str) -> Config {
        Config {
            path: PathBuf::from("config.toml"),
            doc: text.parse().unwrap(),
            original: Some(text.to_owned()),
        }
    }

    #[test]
    fn servers_are_added_with_their_transport_keys_only_and_comments_stay() {
        let mut c =
            config("# mine\nmodel = \"gpt-5.5\" # keep\n\n[mcp_servers.docs]\ncommand = \"npx\"\n");
        let http: McpServer = serde_json::from_value(json!({
            "type": "http", "name": "tracker", "url": "https://t/mcp",
            "headers": [{"name": "Authorization", "value": "Bearer ${TRACKER_TOKEN}"},
                        {"name": "X-Workspace", "value": "acme"}],
            "_meta": {"codex": {"enabled": false, "env_vars": ["NOPE"]}}
        }))
        .unwrap();
        let Merge::Added { notes } = c.merge_mcp(&http) else {
            panic!()
        };
        assert_eq!(notes.len(), 1, "{notes:?}");
        let out = c.doc.to_string();
        assert!(
            out.starts_with("# mine\nmodel = \"gpt-5.5\" # keep\n"),
            "{out}"
        );
        assert!(
            out.contains("[mcp_servers.tracker]\nurl = \"https://t/mcp\"\n"),
            "{out}"
        );
        assert!(
            out.contains("bearer_token_env_var = \"TRACKER_TOKEN\""),
            "{out}"
        );
        assert!(out.contains("enabled = false"), "{out}");
        assert!(!out.contains("env_vars"), "{out}");
        assert_eq!(c.merge_mcp(&http), Merge::AlreadyThere);
        let other: McpServer = serde_json::from_value(
            json!({"name": "docs", "command": "uvx", "args": [], "env": []}),
        )
        .unwrap();
        assert!(matches!(c.merge_mcp(&other), Merge::Refused(_)));
        let sse: McpServer = serde_json::from_value(
            json!({"type": "sse", "name": "s", "url": "https://s", "headers": []}),
        )
        .unwrap();
        assert!(matches!(c.merge_mcp(&sse), Merge::Refused(r) if r.contains("SSE")));
    }

    #[test]
    fn settings_are_set_only_where_absent_and_only_with_codex_values() {
        let mut c = config("model = \"gpt-5.5\"\n[profiles.x]\nmodel = \"o3\"\n");
        assert!(
            c.merge_setting("model", &SettingValue::Select("opus".into()))
                .is_err()
        );
        assert!(
            c.merge_setting("model", &SettingValue::Select("gpt-5.4".into()))
                .is_err()
        );
        assert!(
            c.merge_setting("model", &SettingValue::Select("gpt-5.5".into()))
                .is_ok()
        );
        assert!(
            c.merge_setting("effort", &SettingValue::Select("high".into()))
                .is_ok()
        );
        assert!(
            c.merge_setting("mode", &SettingValue::Select("acceptEdits".into()))
                .is_err()
        );
        assert!(
            c.merge_setting("mode", &SettingValue::Select("auto".into()))
                .is_ok()
        );
        assert!(
            c.merge_setting("thinking", &SettingValue::Boolean(true))
                .is_err()
        );
        let out = c.doc.to_string();
        assert!(out.starts_with("model = \"gpt-5.5\"\nmodel_reasoning_effort = \"high\"\napproval_policy = \"on-request\"\nsandbox_mode = \"workspace-write\"\n"), "{out}");
        assert!(out.contains("[profiles.x]\nmodel = \"o3\""), "{out}");
    }

    #[test]
    fn a_server_name_codex_would_not_start_is_not_written() {
        let mut c = config("");
        for bad in ["my docs.v2", "docs.v2", "d\u{f6}cs", ""] {
            let s: McpServer = serde_json::from_value(
                json!({"name": bad, "command": "npx", "args": [], "env": []}),
            )
            .unwrap();
            assert!(
                matches!(c.merge_mcp(&s), Merge::Refused(r) if r.contains("letters, digits")),
                "{bad:?}"
            );
        }
        assert!(!c.changed(), "{}", c.doc);
        let ok: McpServer = serde_json::from_value(
            json!({"name": "my_docs-v2", "command": "npx", "args": [], "env": []}),
        )
        .unwrap();
        assert!(matches!(c.merge_mcp(&ok), Merge::Added { .. }));
    }

    #[test]
    fn approvals_that_skip_asking_travel_only_with_the_server_codex_approved() {
        let codex_home = config(
            "[mcp_servers.docs]\ncommand = \"npx\"\nargs = [\"docs-mcp\"]\nenv = { TOKEN = \"t\" }\n\
             default_tools_approval_mode = \"approve\"\n\
             [mcp_servers.docs.tools.search]\napproval_mode = \"approve\"\nenabled = true\n\
             [mcp_servers.plain]\ncommand = \"x\"\ndefault_tools_approval_mode = \"prompt\"\n",
        );
        let servers = codex_home.mcp_servers(&Diagnostics::new(), false);
        let docs = servers[0].clone();
        let codex = &docs.meta().unwrap()["codex"];
        assert!(codex[NATIVE_DIGEST].is_string(), "{codex}");
        assert!(
            servers[1].meta().unwrap()["codex"]
                .get(NATIVE_DIGEST)
                .is_none(),
            "`prompt` asks more, not less: nothing to vouch for"
        );

        // Back into a Codex home: the approvals go with it.
        let mut c = config("");
        assert_eq!(c.merge_mcp(&docs), Merge::Added { notes: vec![] });
        let out = c.doc.to_string();
        assert!(
            out.contains("default_tools_approval_mode = \"approve\""),
            "{out}"
        );
        assert!(out.contains("approval_mode = \"approve\""), "{out}");
        assert!(!out.contains(NATIVE_DIGEST), "{out}");
        // Read back, the record is the same.
        assert_eq!(c.mcp_servers(&Diagnostics::new(), false)[0], docs);

        // The same approvals on a server from elsewhere, or on this one with another program:
        // left out and reported; everything else is written.
        let mut foreign = serde_json::to_value(&docs).unwrap();
        foreign["_meta"]["codex"]
            .as_object_mut()
            .unwrap()
            .remove(NATIVE_DIGEST);
        let mut changed = serde_json::to_value(&docs).unwrap();
        changed["command"] = json!("curl");
        for v in [foreign, changed] {
            let s: McpServer = serde_json::from_value(v).unwrap();
            let mut c = config("");
            let Merge::Added { notes } = c.merge_mcp(&s) else {
                panic!()
            };
            assert_eq!(notes.len(), 2, "{notes:?}");
            assert!(
                notes[0].contains("default_tools_approval_mode"),
                "{notes:?}"
            );
            assert!(notes[1].contains("tools.search.approval_mode"), "{notes:?}");
            let out = c.doc.to_string();
            assert!(!out.contains("approve"), "{out}");
            assert!(out.contains("enabled = true"), "{out}");
        }
    }

    /// Headers Codex takes from variables come back as the keys they were, those the reader
    /// made `${VAR}` headers of and those it kept under `_meta.codex` alike.
    #[test]
    fn headers_from_variables_come_back_as_codex_wrote_them() {
        let text = "[mcp_servers.api]\nurl = \"https://x.example/mcp\"\n\
                    bearer_token_env_var = \"API_TOKEN\"\n\
                    http_headers = { X-Lit = \"v\" }\n\
                    env_http_headers = { X-Team = \"TEAM_ID\", X-Lit = \"LIT_VAR\", X-Odd = \"MY-VAR\" }\n";
        let servers = config(text).mcp_servers(&Diagnostics::new(), false);
        let McpServer::Http(r) = &servers[0] else {
            panic!("{servers:?}")
        };
        let headers: Vec<(&str, &str)> = r
            .headers
            .iter()
            .map(|h| (h.name.as_str(), h.value.as_str()))
            .collect();
        assert_eq!(
            headers,
            [
                ("X-Lit", "v"),
                ("Authorization", "Bearer ${API_TOKEN}"),
                ("X-Team", "${TEAM_ID}")
            ]
        );
        assert_eq!(
            r.meta.as_ref().unwrap()["codex"],
            json!({"env_http_headers": {"X-Lit": "LIT_VAR", "X-Odd": "MY-VAR"}})
        );
        let mut c = config("");
        assert!(matches!(c.merge_mcp(&servers[0]), Merge::Added { .. }));
        let again = config(&c.doc.to_string()).mcp_servers(&Diagnostics::new(), false);
        assert_eq!(again, servers, "{}", c.doc);
        // Into the file it came from: the same server, already there.
        assert_eq!(config(text).merge_mcp(&servers[0]), Merge::AlreadyThere);
    }

    #[test]
    fn only_plain_variables_are_passed_on_by_name() {
        for (v, name) in [
            ("${TOKEN}", "TOKEN"),
            ("$TOKEN", "TOKEN"),
            ("${env:_T1}", "_T1"),
        ] {
            assert_eq!(env_reference(v), Some(name), "{v}");
            assert!(secrets::is_reference(v), "{v}");
        }
        // References that hold no secret, but that Codex has no variable name for.
        for v in ["${input:token}", "${TOKEN:-x}", "${a.b}", "${1X}"] {
            assert_eq!(env_reference(v), None, "{v}");
        }
        let s: McpServer = serde_json::from_value(json!({"name": "s", "command": "x", "args": [],
            "env": [{"name": "A", "value": "${input:tok}"}, {"name": "B", "value": "pre-${B}"},
                    {"name": "C", "value": "${C}"}, {"name": "D", "value": "plain"}]}))
        .unwrap();
        let mut c = config("");
        let Merge::Added { notes } = c.merge_mcp(&s) else {
            panic!()
        };
        assert_eq!(notes.len(), 2, "{notes:?}");
        let out = c.doc.to_string();
        assert!(out.contains("env = { D = \"plain\" }"), "{out}");
        assert!(out.contains("env_vars = [\"C\"]"), "{out}");
    }
}

/// The credentials `config.toml` (`bytes`) holds written out: what a push names as sent, and
/// (the file's own) what a backup notes it keeps. Its own: a model provider's
/// `experimental_bearer_token` and `http_headers`, and the `shell_environment_policy.set`
/// environment Codex gives the commands it runs. Its MCP servers', named as the tools read
/// names them ([`secrets::credentials_of`]: a literal `bearer_token` is the `Authorization`
/// header it stands for). What names a variable instead (`env_key`, `bearer_token_env_var`,
/// `env_http_headers`) holds none. None for a file that is not TOML.
pub fn credentials(bytes: &[u8]) -> secrets::ConfigCredentials {
    fn table(item: Option<&Item>) -> Option<&dyn toml_edit::TableLike> {
        item.and_then(Item::as_table_like)
    }
    let Some(doc) = std::str::from_utf8(bytes)
        .ok()
        .and_then(|t| t.parse::<DocumentMut>().ok())
    else {
        return secrets::ConfigCredentials::default();
    };
    // The members of `holder.object` (`object` may be a table or an inline table) that are
    // credentials, as `PREFIX.object.NAME`; `holder.object` itself when it is a string.
    let literal = |holder: &dyn toml_edit::TableLike, object: &str, prefix: &str| {
        let mut found = Vec::new();
        match holder.get(object) {
            Some(Item::Value(Toml::String(v)))
                if secrets::is_literal_credential(object, v.value()) =>
            {
                found.push(format!("{prefix}{object}"));
            }
            item => {
                for (name, value) in table(item).into_iter().flat_map(|t| t.iter()) {
                    if value
                        .as_str()
                        .is_some_and(|v| secrets::is_literal_credential(name, v))
                    {
                        found.push(format!("{prefix}{object}.{name}"));
                    }
                }
            }
        }
        found
    };
    let mut own = Vec::new();
    if let Some(policy) = table(doc.get("shell_environment_policy")) {
        own.extend(literal(policy, "set", "shell_environment_policy."));
    }
    for (provider, entry) in table(doc.get("model_providers"))
        .into_iter()
        .flat_map(|t| t.iter())
    {
        let Some(entry) = entry.as_table_like() else {
            continue;
        };
        let prefix = format!("model_providers.{provider}.");
        own.extend(literal(entry, "experimental_bearer_token", &prefix));
        own.extend(literal(entry, "http_headers", &prefix));
    }
    let config = Config {
        path: PathBuf::from(FILE),
        doc,
        original: None,
    };
    let servers = config.mcp_servers(&Diagnostics::new(), false);
    secrets::ConfigCredentials {
        own,
        servers: secrets::credentials_of(&servers),
    }
}

/// What `config.toml` grants by a folder's path: `[projects."<path>"] trust_level =
/// "trusted"` (Codex then runs there as the user set it, with the project's own
/// `.codex/config.toml`, without asking), and the file without those keys (a project table
/// left empty goes too, with the comments on what is removed; the rest stays). `None` when it
/// trusts no folder. A file that names a `trust_level` but cannot be read is taken to grant:
/// said, and left out whole with `--no-grants`.
pub fn trusted_projects(bytes: &[u8]) -> Option<crate::kit::grants::Granting> {
    let unreadable = || {
        let text = String::from_utf8_lossy(bytes);
        text.contains("trust_level")
            .then(|| crate::kit::grants::Granting {
                what: "Codex trusts the projects a config.toml asp cannot read names".to_owned(),
                rest: None,
            })
    };
    let Some(mut doc) = std::str::from_utf8(bytes)
        .ok()
        .and_then(|t| t.parse::<toml_edit::DocumentMut>().ok())
    else {
        return unreadable();
    };
    let projects = doc.get_mut("projects")?.as_table_like_mut()?;
    let mut trusted = Vec::new();
    let mut emptied = Vec::new();
    for (path, item) in projects.iter_mut() {
        let Some(project) = item.as_table_like_mut() else {
            continue;
        };
        if project.get("trust_level").and_then(|v| v.as_str()) == Some("trusted") {
            project.remove("trust_level");
            trusted.push(path.get().to_owned());
            if project.is_empty() {
                emptied.push(path.get().to_owned());
            }
        }
    }
    if trusted.is_empty() {
        return None;
    }
    for path in &emptied {
        projects.remove(path);
    }
    if projects.is_empty() {
        doc.remove("projects");
    }
    Some(crate::kit::grants::Granting {
        what: format!("Codex trusts {}", trusted.join(", ")),
        rest: Some(doc.to_string().into_bytes()),
    })
}

#[cfg(test)]
mod trust_tests {
    use super::{credentials, trusted_projects};

    /// A push names what `config.toml` sends written out, a backup the file's own; values
    /// that name a variable, or are one, are not credentials.
    #[test]
    fn config_toml_names_its_providers_shell_and_servers_credentials() {
        let file = br#"model_provider = "proxy"
env_key_note = "sk-not-a-credential-name"

[shell_environment_policy]
set = { GITHUB_TOKEN = "ghp_1234567890abcdef", PATH_EXTRA = "/opt/bin", NPM_TOKEN = "${NPM_TOKEN}" }

[model_providers.proxy]
base_url = "https://llm.example.com/v1"
env_key = "PROXY_API_KEY"
experimental_bearer_token = "sk-proxy-0123456789"

[model_providers.proxy.http_headers]
X-Api-Key = "key-abcdef0123456789"
X-Team = "platform"

[mcp_servers.tracker]
url = "https://tracker.example.com/mcp"
bearer_token = "trk_0123456789abcdef"
bearer_token_env_var = "TRACKER_TOKEN"

[mcp_servers.db]
command = "db-mcp"
env = { DB_PASSWORD = "hunter2-but-longer", DB_HOST = "localhost" }
"#;
        let found = credentials(file);
        assert_eq!(
            found.own,
            [
                "shell_environment_policy.set.GITHUB_TOKEN",
                "model_providers.proxy.experimental_bearer_token",
                "model_providers.proxy.http_headers.X-Api-Key",
            ]
        );
        assert_eq!(
            found.servers,
            [
                "MCP server \"tracker\" headers.Authorization",
                "MCP server \"db\" env.DB_PASSWORD",
            ]
        );
        assert!(credentials(b"model = \"gpt-5\"\n").is_empty());
        assert!(credentials(b"[model_providers.x\n").is_empty(), "not TOML");
    }

    #[test]
    fn trusted_projects_are_the_grant_and_the_rest_of_the_file_stays() {
        let file = b"# mine\nmodel = \"gpt-5\"\n\n[projects.\"/a\"]\ntrust_level = \"trusted\"\n\n[projects.\"/b\"]\ntrust_level = \"untrusted\"\n\n[projects.\"/c\"]\ntrust_level = \"trusted\"\nnote = 1\n";
        let g = trusted_projects(file).unwrap();
        assert_eq!(g.what, "Codex trusts /a, /c");
        let rest = String::from_utf8(g.rest.unwrap()).unwrap();
        assert!(rest.starts_with("# mine\nmodel = \"gpt-5\"\n"), "{rest}");
        assert!(
            !rest.contains("\"/a\"") && !rest.contains("\"trusted\""),
            "{rest}"
        );
        assert!(rest.contains("trust_level = \"untrusted\""), "{rest}");
        assert!(rest.contains("[projects.\"/c\"]\nnote = 1"), "{rest}");
        assert_eq!(trusted_projects(b"model = \"gpt-5\"\n"), None);
        let unread = trusted_projects(b"[projects.\"/a\"\ntrust_level = \"trusted\"\n").unwrap();
        assert_eq!(
            unread.rest, None,
            "taken to grant, left out whole with --no-grants"
        );
        assert_eq!(
            trusted_projects(b"[projects.\"/b\"]\ntrust_level = \"untrusted\"\n"),
            None
        );
    }
}
