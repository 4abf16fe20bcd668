//! MCP server entries of a JSON config file ↔ ACP `McpServer`: `mcpServers` of Gemini CLI's and
//! Qwen Code's `settings.json`, `mcp` of OpenCode's `opencode.json` ([`Shape`]).
//!
//! Gemini and Qwen use the same keys (`command`, `args`, `env`, `url`, `httpUrl`, `headers`,
//! `trust`, `authProviderType`, ...) but not the same meaning of `url` ([`UrlRule`]); OpenCode
//! types each entry (`local`: `command` as one argv array and `environment`; `remote`: `url`
//! and `headers`, spoken as streamable HTTP, then SSE). The mapping, the merge and the answer
//! are shared; the shape is each converter's [`Dialect`]. Keys ACP's `McpServer` has no
//! field for (`cwd`, `trust`, `timeout`, `includeTools`, `excludeTools`, `description`, an
//! explicit `type`, OAuth settings, ...) are kept under `_meta.<harness>`, so writing a server
//! back gives the same entry.
//!
//! Writing a server never grants it more than the home already does: `trust: true` and
//! credential-sending `authProviderType`s are left out of what comes from a bundle
//! ([`Dialect::withhold_grants`]) and answered as not taken.

use asp_format::state::{McpRemote, McpServer, McpStdio, NameValue};
use serde_json::{Map, Value, json};

use super::settings_json::{File, Merged};
use crate::harness::{ReadContext, WriteContext};
use crate::kit::placement::Placement;
use crate::kit::report::Diagnostics;
use crate::kit::secrets;

/// How one harness reads a remote server's URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlRule {
    /// Gemini CLI (0.61): `httpUrl` → streamable HTTP; `url` with `"type": "sse"` → SSE; `url`
    /// with `"type": "http"` or no type → HTTP. Which field a server used is kept
    /// (`urlField`), and a foreign server is written as `url` with an explicit `type`.
    TypedUrl,
    /// Qwen Code (0.24): `httpUrl` → streamable HTTP; `url` → SSE, whatever `type` says. A
    /// server is written by its transport: HTTP as `httpUrl`, SSE as `url`.
    UrlIsSse,
}

/// How a harness matches a server's name against `mcp.allowed` and `mcp.excluded`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// Gemini CLI (0.61): the whole name, trimmed and in any case (`Tracker` is `tracker `).
    Folded,
    /// Qwen Code (0.24): a pattern where `*` stands for any run of characters and `?` for one
    /// (`*puppeteer*`); a pattern without them is the whole name, case as written.
    Glob,
}

impl NameRule {
    /// Whether `list` (the strings of `mcp.allowed` or `mcp.excluded`) names `name`.
    pub fn lists(self, list: &[String], name: &str) -> bool {
        match self {
            NameRule::Folded => {
                let fold = |s: &str| s.trim().to_lowercase();
                list.iter().any(|n| fold(n) == fold(name))
            }
            NameRule::Glob => list.iter().any(|p| glob(p, name)),
        }
    }
}

/// Whether `pattern` (`*` any run, `?` one character) matches the whole of `name`: the
/// usual backtracking to the last `*`, so linear in practice.
fn glob(pattern: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pattern.chars().collect(), name.chars().collect());
    let (mut pi, mut ni) = (0, 0);
    // Where the last `*` was, and the name position it stands for up to.
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            // The `*` takes one character more.
            star = Some((sp, sn + 1));
            pi = sp + 1;
            ni = sn + 1;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == '*')
}

/// A file's `mcp.allowed` (a list that is there, even empty, lets only what it names start)
/// and `mcp.excluded`, as [`Dialect::gates`] read them.
struct Gates {
    rule: NameRule,
    allowed: Option<Vec<String>>,
    excluded: Vec<String>,
}

impl Gates {
    /// Why the harness does not start the server `name` it configures; `None` when it starts
    /// it. Names are matched by the dialect's [`NameRule`], as the harness matches them.
    fn why_off(&self, name: &str) -> Option<&'static str> {
        if self
            .allowed
            .as_ref()
            .is_some_and(|l| !self.rule.lists(l, name))
        {
            return Some("`mcp.allowed` does not name it");
        }
        self.rule
            .lists(&self.excluded, name)
            .then_some("`mcp.excluded` names it")
    }
}

/// How a harness's file spells its MCP servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `mcpServers` (Gemini CLI, Qwen Code): `command` + `args` + `env`, or a URL by the rule;
    /// `mcp.allowed` and `mcp.excluded` name servers by the [`NameRule`].
    McpServers(UrlRule, NameRule),
    /// `mcp` (OpenCode 1.18): `{"type": "local", "command": [argv…], "environment": {…}}` or
    /// `{"type": "remote", "url", "headers"}`; a remote server is tried as streamable HTTP,
    /// then SSE, so both ACP transports are written as `remote`.
    OpenCode,
}

/// One harness's MCP server dialect.
#[derive(Debug, Clone, Copy)]
pub struct Dialect {
    /// The `_meta` key of what ACP has no field for (the harness name: `gemini`, `qwen`).
    pub meta_key: &'static str,
    /// The harness as people call it, for messages ("Gemini", "Qwen Code").
    pub harness: &'static str,
    pub shape: Shape,
    /// Whether the harness expands a bare `$NAME` in its settings file as it does `${NAME}`
    /// (Gemini CLI, Qwen Code): a server read from it is marked so, for writers of the
    /// others ([`crate::kit::env_refs::mark_bare`]).
    pub bare_env_refs: bool,
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

fn object_of(list: &[NameValue]) -> Value {
    Value::Object(
        list.iter()
            .map(|nv| (nv.name.clone(), Value::String(nv.value.clone())))
            .collect(),
    )
}

/// An ACP `McpServer` as an OpenCode `mcp` entry; what `_meta.opencode` kept goes back.
fn opencode_to(server: &McpServer, native: Option<Map<String, Value>>) -> Value {
    let mut out = Map::new();
    match server {
        McpServer::Stdio(s) => {
            out.insert("type".into(), json!("local"));
            let mut argv = vec![s.command.clone()];
            argv.extend(s.args.iter().cloned());
            out.insert("command".into(), json!(argv));
            if !s.env.is_empty() {
                out.insert("environment".into(), object_of(&s.env));
            }
        }
        McpServer::Http(r) | McpServer::Sse(r) => {
            out.insert("type".into(), json!("remote"));
            out.insert("url".into(), json!(r.url));
            if !r.headers.is_empty() {
                out.insert("headers".into(), object_of(&r.headers));
            }
        }
    }
    for (k, v) in native.into_iter().flatten() {
        if !matches!(
            k.as_str(),
            "type" | "command" | "environment" | "url" | "headers"
        ) {
            out.insert(k, v);
        }
    }
    Value::Object(out)
}

impl Dialect {
    /// The key of the file holding the servers by name.
    pub fn key(&self) -> &'static str {
        match self.shape {
            Shape::McpServers(..) => "mcpServers",
            Shape::OpenCode => "mcp",
        }
    }

    /// An OpenCode `mcp` entry: `local` (argv, `environment`) or `remote` (`url`, `headers`);
    /// the rest (`enabled`, `timeout`, `cwd`, `oauth`) under `_meta.opencode`.
    fn opencode_from(&self, name: &str, cfg: &Map<String, Value>) -> Option<McpServer> {
        let keep = |used: &[&str]| -> Option<Map<String, Value>> {
            let rest: Map<String, Value> = cfg
                .iter()
                .filter(|(k, _)| !used.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            (!rest.is_empty()).then(|| {
                let mut meta = Map::new();
                meta.insert(self.meta_key.into(), Value::Object(rest));
                meta
            })
        };
        match cfg.get("type").and_then(Value::as_str)? {
            "local" => {
                let argv: Vec<String> = cfg
                    .get("command")?
                    .as_array()?
                    .iter()
                    .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned))
                    .collect();
                let (command, args) = argv.split_first()?;
                Some(McpServer::Stdio(McpStdio {
                    name: name.to_owned(),
                    command: command.clone(),
                    args: args.to_vec(),
                    env: pairs(cfg.get("environment")),
                    meta: keep(&["type", "command", "environment"]),
                }))
            }
            "remote" => Some(McpServer::Http(McpRemote {
                name: name.to_owned(),
                url: cfg.get("url")?.as_str()?.to_owned(),
                headers: pairs(cfg.get("headers")),
                meta: keep(&["type", "url", "headers"]),
            })),
            _ => None,
        }
    }

    /// One `mcpServers` entry as an ACP `McpServer`, by the harness's transport precedence
    /// (`httpUrl`, then `url`, then `command`).
    pub fn server_from(&self, name: &str, cfg: &Map<String, Value>) -> Option<McpServer> {
        let mut server = self.server_from_entry(name, cfg)?;
        if self.bare_env_refs {
            crate::kit::env_refs::mark_bare(&mut server);
        }
        Some(server)
    }

    fn server_from_entry(&self, name: &str, cfg: &Map<String, Value>) -> Option<McpServer> {
        let url_rule = match self.shape {
            Shape::McpServers(rule, _) => rule,
            Shape::OpenCode => return self.opencode_from(name, cfg),
        };
        let s = |k: &str| cfg.get(k).and_then(Value::as_str);
        let keep = |used: &[&str]| -> Option<Map<String, Value>> {
            let rest: Map<String, Value> = cfg
                .iter()
                .filter(|(k, _)| !used.contains(&k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let mut meta = Map::new();
            (!rest.is_empty()).then(|| {
                meta.insert(self.meta_key.into(), Value::Object(rest));
                meta
            })
        };
        // Gemini: which field held the URL (both can mean HTTP); it also marks the server as
        // Gemini's own, so an untyped `url` stays untyped. Qwen: the transport says it.
        let remote = |field: &str| {
            let mut meta = keep(&[field, "headers"]).unwrap_or_default();
            if url_rule == UrlRule::TypedUrl {
                let g = meta.entry(self.meta_key).or_insert_with(|| json!({}));
                g["urlField"] = json!(field);
            }
            McpRemote {
                name: name.to_owned(),
                url: s(field).unwrap_or_default().to_owned(),
                headers: pairs(cfg.get("headers")),
                meta: (!meta.is_empty()).then_some(meta),
            }
        };
        if s("httpUrl").is_some() {
            return Some(McpServer::Http(remote("httpUrl")));
        }
        if s("url").is_some() {
            let sse = match url_rule {
                UrlRule::TypedUrl => s("type") == Some("sse"),
                UrlRule::UrlIsSse => true,
            };
            let r = remote("url");
            return Some(if sse {
                McpServer::Sse(r)
            } else {
                McpServer::Http(r)
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

    /// An ACP `McpServer` as an `mcpServers` entry. A server read from this harness comes back
    /// as it was (its `_meta.<harness>` holds the rest); a foreign one gets the field its
    /// transport needs ([`UrlRule`]).
    pub fn server_to(&self, server: &McpServer) -> Value {
        // Environment references in this harness's spelling (`kit::env_refs`).
        let server = &crate::kit::env_refs::respelled_for(
            server,
            match self.shape {
                Shape::McpServers(..) => crate::kit::env_refs::Spelling::Dollar,
                Shape::OpenCode => crate::kit::env_refs::Spelling::Braces,
            },
            self.bare_env_refs,
        );
        let native = server
            .meta()
            .and_then(|m| m.get(self.meta_key))
            .and_then(Value::as_object)
            .cloned();
        let url_rule = match self.shape {
            Shape::McpServers(rule, _) => rule,
            Shape::OpenCode => return opencode_to(server, native),
        };
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
                let field = match url_rule {
                    UrlRule::TypedUrl => native
                        .as_ref()
                        .and_then(|n| n.get("urlField"))
                        .and_then(Value::as_str)
                        .unwrap_or("url"),
                    // Qwen speaks SSE to any `url`: an HTTP server must be `httpUrl`.
                    UrlRule::UrlIsSse if matches!(server, McpServer::Http(_)) => "httpUrl",
                    UrlRule::UrlIsSse => "url",
                };
                out.insert(field.into(), json!(r.url));
                if native.is_none() && url_rule == UrlRule::TypedUrl {
                    out.insert("type".into(), json!(server.transport()));
                }
                if !r.headers.is_empty() {
                    out.insert("headers".into(), object_of(&r.headers));
                }
            }
        }
        for (k, v) in native.into_iter().flatten() {
            // An `httpUrl` kept beside an SSE server would make Qwen speak HTTP to it.
            let stale = url_rule == UrlRule::UrlIsSse
                && matches!(server, McpServer::Sse(_))
                && k == "httpUrl";
            if k != "urlField" && !stale {
                out.insert(k, v);
            }
        }
        Value::Object(out)
    }

    /// Takes out of an entry what lets a server act without the user: `trust: true` (every
    /// tool call runs without confirmation) and an `authProviderType` other than the default
    /// `dynamic_discovery` (the harness then sends the user's Google credentials to the
    /// server; `targetAudience` and `targetServiceAccount` go with it). A bundle can say
    /// anything, and a server read from the harness keeps these under `_meta`, so asp never
    /// writes them from a bundle: only a home that already grants them keeps them. Returns
    /// what was taken out, in words.
    pub fn withhold_grants(&self, entry: &mut Map<String, Value>) -> Vec<String> {
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
                "authProviderType {auth} ({} would send your Google credentials to it)",
                self.harness
            ));
        }
        out
    }

    /// The MCP servers of the file as ACP describes them, in the file's order; `None`
    /// (reported) when `mcpServers` is there but not an object, since then what the servers
    /// are is not known.
    pub fn servers(
        &self,
        file: &File,
        redact: bool,
        diagnostics: &Diagnostics,
    ) -> Option<Vec<McpServer>> {
        let key = self.key();
        let servers = match file.doc.get(key) {
            None => return Some(Vec::new()),
            Some(Value::Object(servers)) => servers,
            Some(_) => {
                diagnostics.lost(
                    &file.path,
                    None,
                    format!("`{key}` is not an object; the MCP servers were not read"),
                );
                return None;
            }
        };
        let mut out = Vec::new();
        for (name, cfg) in servers {
            let Some(cfg) = cfg.as_object() else {
                diagnostics.lost(
                    &file.path,
                    None,
                    format!("MCP server {name:?} is not an object; skipped"),
                );
                continue;
            };
            match self.server_from(name, cfg) {
                Some(mut s) => {
                    secrets::carry(&mut s, redact, &file.path, diagnostics);
                    out.push(s);
                }
                None => diagnostics.left_out(
                    &file.path,
                    None,
                    match self.shape {
                        Shape::McpServers(..) => format!(
                            "MCP server {name:?} has no `command`, `url` or `httpUrl` (ACP \
                             cannot describe a `tcp` server); skipped"
                        ),
                        Shape::OpenCode => format!(
                            "MCP server {name:?} is neither `local` with a `command` nor \
                             `remote` with a `url`; skipped"
                        ),
                    },
                ),
            }
        }
        Some(out)
    }

    /// The servers of the settings file, for a read.
    pub fn read(&self, file: &File, ctx: &ReadContext<'_>) -> Option<Vec<McpServer>> {
        self.servers(file, ctx.options.redact_secrets, ctx.diagnostics)
    }

    /// Adds `server` to `mcpServers` unless one of that name is there, never with the grants
    /// [`Dialect::withhold_grants`] takes out: what it came to, and the grants withheld (a
    /// server already configured with the grants the home itself gave it withholds nothing).
    pub fn add_server(&self, file: &mut File, server: &McpServer) -> (Placement, Vec<String>) {
        let full = self.server_to(server);
        let mut entry = full.clone();
        let withheld = entry
            .as_object_mut()
            .map(|e| self.withhold_grants(e))
            .unwrap_or_default();
        let path = file.path.clone();
        let key = self.key();
        let servers = file
            .doc
            .entry(key)
            .or_insert_with(|| Value::Object(Map::new()));
        if !servers.is_object() {
            return (
                Placement::Refused(format!("`{key}` in {} is not an object", path.display())),
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
                    path.display()
                )),
                Vec::new(),
            ),
            None => {
                servers.insert(server.name().to_owned(), entry);
                (Placement::New, withheld)
            }
        }
    }

    /// The strings of `mcp.<key>` (`allowed`, `excluded`), or `None` when the file has no
    /// such list.
    fn list(file: &File, key: &str) -> Option<Vec<String>> {
        let list = file.get(&format!("/mcp/{key}"))?.as_array()?;
        Some(
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect(),
        )
    }

    /// The file's `mcp.allowed` and `mcp.excluded`, read once for all its servers (Gemini CLI,
    /// Qwen Code; `None` for a dialect without them).
    fn gates(&self, file: &File) -> Option<Gates> {
        let Shape::McpServers(_, rule) = self.shape else {
            return None;
        };
        Some(Gates {
            rule,
            allowed: Self::list(file, "allowed"),
            excluded: Self::list(file, "excluded").unwrap_or_default(),
        })
    }

    /// [`Dialect::read`], a server the harness does not start (its `mcp.allowed` or
    /// `mcp.excluded`, as [`Gates`] tell, or `off_elsewhere`: Gemini CLI's `gemini mcp
    /// disable`) saying so as
    /// `_meta.<meta_key>.excluded`, so it is switched off again where it is written
    /// ([`Dialect::merge_switchable`], [`crate::kit::mcp_switch`]).
    pub fn read_switchable(
        &self,
        file: &File,
        ctx: &ReadContext<'_>,
        off_elsewhere: &dyn Fn(&str) -> bool,
    ) -> Option<Vec<McpServer>> {
        let mut servers = self.read(file, ctx)?;
        let gates = self.gates(file);
        let gated = |name: &str| gates.as_ref().and_then(|g| g.why_off(name)).is_some();
        for s in servers
            .iter_mut()
            .filter(|s| gated(s.name()) || off_elsewhere(s.name()))
        {
            let meta = s.meta_mut().get_or_insert_with(Default::default);
            let own = meta.entry(self.meta_key).or_insert_with(|| json!({}));
            if let Some(own) = own.as_object_mut() {
                own.insert("excluded".into(), Value::Bool(true));
            }
        }
        Some(servers)
    }

    /// [`Dialect::merge`], and a server switched off where it was read
    /// (`_meta.<meta_key>.excluded`) switched off here too: its name added to `mcp.excluded`,
    /// which only narrows what runs. Returns whether the file changed.
    pub fn merge_switchable(
        &self,
        file: &mut File,
        servers: &[McpServer],
        ctx: &WriteContext<'_>,
        out: &mut Merged,
    ) -> bool {
        let mut off = Vec::new();
        let entries: Vec<McpServer> = servers
            .iter()
            .map(|s| {
                let mut s = s.clone();
                if let Some(own) = s
                    .meta_mut()
                    .as_mut()
                    .and_then(|m| m.get_mut(self.meta_key))
                    .and_then(Value::as_object_mut)
                    && own.remove("excluded") == Some(Value::Bool(true))
                {
                    off.push(s.name().to_owned());
                }
                s
            })
            .collect();
        let first = out.placed.len();
        let mut changed = self.merge(file, &entries, ctx, out);
        let Some(gates) = self.gates(file) else {
            return changed;
        };
        for (s, placed) in entries.iter().zip(&out.placed[first..]) {
            let name = s.name();
            if !placed.is_written() {
                continue;
            }
            let off_here = off.iter().any(|n| n == name);
            // The user's lists are theirs to change: a server carried switched on is written,
            // and they are told it will not start until they do.
            if !off_here && let Some(why) = gates.why_off(name) {
                out.notes.push(format!(
                    "MCP server {name:?} was written to {}, but {why} there, so {} will not \
                     start it until that changes",
                    file.path.display(),
                    self.harness
                ));
            }
            if !off_here || gates.rule.lists(&gates.excluded, name) {
                continue;
            }
            let mcp = file.doc.entry("mcp").or_insert_with(|| json!({}));
            let Some(list) = mcp
                .as_object_mut()
                .map(|m| m.entry("excluded").or_insert_with(|| json!([])))
                .and_then(Value::as_array_mut)
            else {
                out.notes.push(format!(
                    "MCP server {name:?} was switched off (mcp.excluded) where it was read, but \
                     `mcp.excluded` in {} is not a list; it is configured switched on",
                    file.path.display()
                ));
                continue;
            };
            list.push(json!(name));
            changed = true;
        }
        changed
    }

    /// Adds `servers` to the settings file (in memory), each with what it came to; what a
    /// server could not keep (a grant a carried state never gives) is said as a refusal beside
    /// it. Returns whether the file changed.
    pub fn merge(
        &self,
        file: &mut File,
        servers: &[McpServer],
        ctx: &WriteContext<'_>,
        out: &mut Merged,
    ) -> bool {
        let path = file.path.clone();
        let mut changed = false;
        for server in servers {
            let (placed, withheld) = self.add_server(file, server);
            if !withheld.is_empty() {
                out.notes.push(format!(
                    "MCP server {:?}: {} not carried; asp never grants that from a \
                     carried state (anyone can write one), so the server is configured \
                     without it (set it in {} yourself if you want it)",
                    server.name(),
                    withheld.join(" and "),
                    path.display()
                ));
            }
            if placed.is_written() {
                changed = true;
                let r = secrets::redacted(server);
                if !r.is_empty() {
                    ctx.diagnostics.note(
                        &path,
                        None,
                        format!(
                            "MCP server {:?} was packed with secrets blanked ({}); fill them in \
                             before using it",
                            server.name(),
                            r.join(", ")
                        ),
                    );
                }
            }
            out.placed.push(placed);
        }
        changed
    }
}

#[cfg(test)]
mod tests {
    use super::NameRule;

    fn lists(rule: NameRule, list: &[&str], name: &str) -> bool {
        let list: Vec<String> = list.iter().map(|s| (*s).to_owned()).collect();
        rule.lists(&list, name)
    }

    /// Qwen Code's `matchesServerPattern`: `*` any run (none too), `?` one character, the
    /// whole name, case as written; no wildcard, the name itself.
    #[test]
    fn glob_patterns_match_as_qwen_code_matches_them() {
        let yes = [
            ("*", ""),
            ("*", "anything"),
            ("api*", "api"),
            ("api*", "api-v2"),
            ("*-old", "x-old"),
            ("*pup*eer*", "my-puppeteer-server"),
            ("a?c", "abc"),
            ("a*b*c", "aXXbYYbZc"),
            ("ü?", "üx"),
        ];
        let no = [
            ("api", "Api"),
            ("api", "api2"),
            ("api*", "xapi"),
            ("a?c", "ac"),
            ("*-old", "x-old2"),
            ("a*b*c", "aXXbYYbZ"),
        ];
        for (p, n) in yes {
            assert!(lists(NameRule::Glob, &[p], n), "{p} {n}");
        }
        for (p, n) in no {
            assert!(!lists(NameRule::Glob, &[p], n), "{p} {n}");
        }
    }

    /// Gemini CLI's `isInSettingsList`: names trimmed and lowercased on both sides, no
    /// wildcards.
    #[test]
    fn folded_names_match_as_gemini_cli_matches_them() {
        assert!(lists(NameRule::Folded, &[" Docs "], "docs"));
        assert!(lists(NameRule::Folded, &["docs"], "DOCS"));
        assert!(!lists(NameRule::Folded, &["doc*"], "docs"));
        assert!(!lists(NameRule::Folded, &[], "docs"));
    }
}
