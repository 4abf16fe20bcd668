//! MCP servers: `mcpServers` of `C/mcp-config.json` (spec §8): `{"type": "local"|"stdio",
//! "command", "args", "env", "tools", "cwd"?}` or `{"type": "http"|"sse", "url", "headers",
//! "tools"}`. `tools` (which of the server's tools Copilot offers) and `cwd` travel under
//! `_meta.copilot`; a carried server without them offers all its tools (`["*"]`), as
//! `copilot mcp add` does. A server already there under the same name is never replaced.

use std::fs;
use std::io;

use asp_format::StateKind;
use asp_format::answer::ImportAnswer;
use asp_format::state::{McpRemote, McpServer, McpStdio, Meta, NameValue};
use serde_json::{Map, Value, json};

use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::placement::{Placement, Tally};

fn load(layout: &Layout) -> Result<Option<Map<String, Value>>, String> {
    let path = layout.mcp_config();
    let bytes = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot be read ({e})")),
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(o)) => Ok(Some(o)),
        Ok(_) => Err("is not a JSON object".into()),
        Err(e) => Err(format!(
            "is not JSON (line {}, column {}: {e})",
            e.line(),
            e.column()
        )),
    }
}

fn pairs(v: Option<&Value>) -> Vec<NameValue> {
    v.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            Some(NameValue {
                name: k.clone(),
                value: v.as_str()?.to_owned(),
            })
        })
        .collect()
}

/// One server of the file as ACP's shape; `None` (reported by the caller) when it has neither
/// a command nor a URL.
fn server(name: &str, v: &Value) -> Option<McpServer> {
    let mut own = Map::new();
    for k in ["tools", "cwd", "type"] {
        if let Some(x) = v.get(k) {
            own.insert(k.into(), x.clone());
        }
    }
    let mut meta = Meta::new();
    meta.insert("copilot".into(), Value::Object(own));
    let kind = v.get("type").and_then(Value::as_str).unwrap_or("");
    if let Some(command) = v.get("command").and_then(Value::as_str) {
        return Some(McpServer::Stdio(McpStdio {
            name: name.to_owned(),
            command: command.to_owned(),
            args: v
                .get("args")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|a| a.as_str().map(str::to_owned))
                .collect(),
            env: pairs(v.get("env")),
            meta: Some(meta),
        }));
    }
    let url = v.get("url").and_then(Value::as_str)?;
    let remote = McpRemote {
        name: name.to_owned(),
        url: url.to_owned(),
        headers: pairs(v.get("headers")),
        meta: Some(meta),
    };
    Some(if kind == "sse" {
        McpServer::Sse(remote)
    } else {
        McpServer::Http(remote)
    })
}

pub fn read(layout: &Layout, ctx: &ReadContext<'_>) -> Option<Vec<McpServer>> {
    let path = layout.mcp_config();
    let o = match load(layout) {
        Ok(Some(o)) => o,
        Ok(None) => return None,
        Err(why) => {
            ctx.diagnostics
                .lost(&path, None, format!("{why}; MCP servers not read"));
            return None;
        }
    };
    let mut out = Vec::new();
    for (name, v) in o
        .get("mcpServers")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        match server(name, v) {
            Some(mut s) => {
                crate::kit::secrets::carry(
                    &mut s,
                    ctx.options.redact_secrets,
                    &path,
                    ctx.diagnostics,
                );
                out.push(s);
            }
            None => ctx.diagnostics.lost(
                &path,
                None,
                format!("MCP server {name:?} has neither a command nor a url; not carried"),
            ),
        }
    }
    out.sort_by(|a, b| a.name().cmp(b.name()));
    Some(out)
}

/// A server as Copilot writes it.
fn native(s: &McpServer) -> Value {
    // Environment references as Copilot CLI expands them (`kit::env_refs`).
    let s = &crate::kit::env_refs::respelled(s, crate::kit::env_refs::Spelling::Dollar);
    let own = s
        .meta()
        .and_then(|m| m.get("copilot"))
        .cloned()
        .unwrap_or_else(|| json!({}));
    let map = |v: &[NameValue]| -> Map<String, Value> {
        v.iter().map(|p| (p.name.clone(), json!(p.value))).collect()
    };
    let mut o = match s {
        McpServer::Stdio(x) => json!({
            "type": own.get("type").cloned().unwrap_or_else(|| json!("local")),
            "command": x.command, "args": x.args, "env": map(&x.env),
        }),
        McpServer::Http(r) => json!({"type": "http", "url": r.url, "headers": map(&r.headers)}),
        McpServer::Sse(r) => json!({"type": "sse", "url": r.url, "headers": map(&r.headers)}),
    };
    o["tools"] = own.get("tools").cloned().unwrap_or_else(|| json!(["*"]));
    if let Some(c) = own.get("cwd") {
        o["cwd"] = c.clone();
    }
    o
}

/// Whether the server `there` in the file is `want` as [`native`] writes it: a member Copilot
/// CLI leaves out reads as the one [`native`] writes (`env` and `headers` empty, `args` none,
/// `tools` all, `type` local, which `stdio` is too), so a server configured without an `env` is the same server carried back (found
/// by a new user's trial: it was refused as "another configuration", and `--strict` exited 3
/// on a restore into its own home).
fn same_server(there: &Value, want: &Value) -> bool {
    let filled = |v: &Value| -> Value {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            let stdio = o.contains_key("command");
            let defaults = [
                ("env", json!({}), stdio),
                ("args", json!([]), stdio),
                ("headers", json!({}), !stdio),
                ("tools", json!(["*"]), true),
                ("type", json!("local"), stdio),
            ];
            for (key, empty, applies) in defaults {
                if applies && !o.contains_key(key) {
                    o.insert(key.to_owned(), empty);
                }
            }
            // Copilot CLI reads `stdio` as `local`.
            if o.get("type") == Some(&json!("stdio")) {
                o.insert("type".to_owned(), json!("local"));
            }
        }
        v
    };
    filled(there) == filled(want)
}

pub fn write(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    list: &[McpServer],
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let mut tally = Tally::new(answer, StateKind::Tools, list.len());
    let path = layout.mcp_config();
    let (mut o, existed) = match load(layout) {
        Ok(Some(o)) => (o, true),
        Ok(None) => (Map::new(), false),
        Err(why) => {
            for _ in list {
                tally.refuse(format!(
                    "{} {why}; asp does not edit a file it cannot read",
                    path.display()
                ));
            }
            tally.finish();
            return Ok(());
        }
    };
    let mut servers = match o.get("mcpServers") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    let mut added = Vec::new();
    for s in list {
        let want = native(s);
        match servers.get(s.name()) {
            Some(there) if same_server(there, &want) => tally.place(Placement::AlreadyThere),
            Some(_) => tally.place(Placement::Refused(format!(
                "MCP server {:?} is already in {} with another configuration; it was left as it is",
                s.name(),
                path.display()
            ))),
            None => {
                servers.insert(s.name().to_owned(), want);
                added.push(s.name().to_owned());
                tally.place(Placement::New);
            }
        }
    }
    if !added.is_empty() {
        o.insert("mcpServers".into(), Value::Object(servers));
        let mut bytes = serde_json::to_vec_pretty(&Value::Object(o)).expect("serialises");
        bytes.push(b'\n');
        if existed {
            ctx.writer.replace(&path, &bytes)?;
            tally.servers_into(&path, &added, ctx.writer.is_dry_run());
        } else {
            ctx.writer.create_new(&path, &bytes, false)?;
        }
    }
    tally.finish();
    Ok(())
}
