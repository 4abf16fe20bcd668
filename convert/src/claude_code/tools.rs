//! MCP servers: `.claude.json`'s user-scope `mcpServers` as ACP `McpServer`s, and back.
//!
//! stdio servers become ACP's untagged form, `http`/`sse` its tagged forms; env and header
//! maps become `{name, value}` lists. `${VAR}` references are kept as written (Claude Code
//! expands them when it starts a server; the state never holds what they resolve to). Fields
//! ACP cannot say (`headersHelper`, `oauth`, `timeout`, ...) travel in `_meta.claudeCode`, with
//! `scope: "user"`.

use asp_format::answer::ImportAnswer;
use asp_format::kind::StateKind;
use asp_format::state::{McpRemote, McpServer, McpStdio, NameValue};
use serde_json::{Map, Value, json};

use super::jsonfile;
use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::placement::{Placement, Tally};
use crate::kit::secrets;

/// Fields of a Claude entry that ACP's shapes carry.
const ACP_FIELDS: &[&str] = &["type", "command", "args", "env", "url", "headers"];

fn pairs(v: Option<&Value>) -> Vec<NameValue> {
    v.and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| NameValue {
            name: k.clone(),
            value: match v {
                Value::String(s) => s.clone(),
                other => other.to_string(),
            },
        })
        .collect()
}

/// One Claude entry as an ACP server, or why it cannot be one.
pub fn from_claude(name: &str, entry: &Value) -> Result<McpServer, String> {
    let Some(obj) = entry.as_object() else {
        return Err(format!("MCP server {name:?} is not an object"));
    };
    let mut extra = Map::new();
    extra.insert("scope".into(), json!("user"));
    for (k, v) in obj {
        if !ACP_FIELDS.contains(&k.as_str()) {
            extra.insert(k.clone(), v.clone());
        }
    }
    let meta = Some(Map::from_iter([(
        "claudeCode".to_owned(),
        Value::Object(extra),
    )]));
    let kind = obj.get("type").and_then(Value::as_str);
    let url = || {
        obj.get("url")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| format!("MCP server {name:?} has no url"))
    };
    match kind {
        None | Some("stdio") => {
            let command = obj
                .get("command")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("MCP server {name:?} has no command"))?;
            let args = obj
                .get("args")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|a| a.as_str().map_or_else(|| a.to_string(), str::to_owned))
                .collect();
            Ok(McpServer::Stdio(McpStdio {
                name: name.to_owned(),
                command: command.to_owned(),
                args,
                env: pairs(obj.get("env")),
                meta,
            }))
        }
        Some(t @ ("http" | "sse")) => {
            let remote = McpRemote {
                name: name.to_owned(),
                url: url()?,
                headers: pairs(obj.get("headers")),
                meta,
            };
            Ok(if t == "http" {
                McpServer::Http(remote)
            } else {
                McpServer::Sse(remote)
            })
        }
        Some(other) => Err(format!(
            "MCP server {name:?} uses the {other:?} transport, which ACP cannot describe; not carried"
        )),
    }
}

/// The `.claude.json` entry for an ACP server. Redacted values (`_meta.asp.redacted`) are
/// written as `${NAME}` references so Claude Code takes them from the environment instead of
/// sending an empty token.
pub fn to_claude(server: &McpServer) -> Value {
    // Environment references as Claude Code expands them (`kit::env_refs`).
    let server = &crate::kit::env_refs::respelled(server, crate::kit::env_refs::Spelling::Dollar);
    let redacted = crate::kit::secrets::redacted(server);
    let map = |prefix: &str, list: &[NameValue]| -> Value {
        let mut m = Map::new();
        for nv in list {
            let value =
                if redacted.contains(&format!("{prefix}.{}", nv.name)) && nv.value.is_empty() {
                    format!("${{{}}}", env_name(&nv.name))
                } else {
                    nv.value.clone()
                };
            m.insert(nv.name.clone(), json!(value));
        }
        Value::Object(m)
    };
    let mut entry = Map::new();
    match server {
        McpServer::Stdio(s) => {
            entry.insert("type".into(), json!("stdio"));
            entry.insert("command".into(), json!(s.command));
            entry.insert("args".into(), json!(s.args));
            entry.insert("env".into(), map("env", &s.env));
        }
        McpServer::Http(r) | McpServer::Sse(r) => {
            entry.insert("type".into(), json!(server.transport()));
            entry.insert("url".into(), json!(r.url));
            if !r.headers.is_empty() {
                entry.insert("headers".into(), map("headers", &r.headers));
            }
        }
    }
    if let Some(Value::Object(cc)) = server.meta().and_then(|m| m.get("claudeCode")) {
        for (k, v) in cc {
            if k != "scope" && !ACP_FIELDS.contains(&k.as_str()) {
                entry.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(entry)
}

/// A header or variable name as an environment variable name.
fn env_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// Two Claude entries say the same thing (missing `type`, `args`, `env` read as defaults).
fn same_entry(a: &Value, b: &Value) -> bool {
    let norm = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            if o.get("type").is_none() && o.contains_key("command") {
                o.insert("type".into(), json!("stdio"));
            }
            if o.get("type").and_then(Value::as_str) == Some("stdio") {
                o.entry("args").or_insert_with(|| json!([]));
                o.entry("env").or_insert_with(|| json!({}));
            }
            if o.get("headers").is_some_and(|h| h == &json!({})) {
                o.remove("headers");
            }
        }
        v
    };
    norm(a) == norm(b)
}

/// Reads the user-scope servers. `None` when `.claude.json` cannot be read (reported).
pub fn read(layout: &Layout, ctx: &ReadContext<'_>) -> Option<Vec<McpServer>> {
    let file = match jsonfile::read(&layout.global) {
        Ok(f) => f,
        Err(e) => {
            ctx.diagnostics
                .lost(&layout.global, None, format!("MCP servers not read: {e}"));
            return None;
        }
    };
    let mut out = Vec::new();
    if let Some(servers) = file.object.get("mcpServers").and_then(Value::as_object) {
        for (name, entry) in servers {
            match from_claude(name, entry) {
                Ok(mut s) => {
                    secrets::carry(
                        &mut s,
                        ctx.options.redact_secrets,
                        &layout.global,
                        ctx.diagnostics,
                    );
                    out.push(s);
                }
                Err(why) => ctx.diagnostics.lost(&layout.global, None, why),
            }
        }
    }
    let projects = file.object.get("projects").and_then(Value::as_object);
    for (project, p) in projects.into_iter().flatten() {
        for name in p
            .get("mcpServers")
            .and_then(Value::as_object)
            .into_iter()
            .flat_map(|m| m.keys())
        {
            if ctx.options.configuration_kept {
                ctx.diagnostics.note(
                    &layout.global,
                    None,
                    format!(
                        "MCP server {name:?} is configured for the project {project} only (local scope): kept with Claude Code's configuration, which a restore into Claude Code brings back (the state carries user-scope servers only)"
                    ),
                );
            } else {
                ctx.diagnostics.left_out(
                    &layout.global,
                    None,
                    format!(
                        "MCP server {name:?} is configured for the project {project} only (local scope); only user-scope servers are carried (`asp backup` keeps local-scope ones for Claude Code, with its configuration)"
                    ),
                );
            }
        }
    }
    Some(out)
}

/// Merges `servers` into `.claude.json`'s `mcpServers`, keeping every other key as it is. A
/// server whose name is taken by a different one is left out and reported; those added to a
/// file that was there are said.
pub fn write(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    servers: &[McpServer],
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let mut tally = Tally::new(answer, StateKind::Tools, servers.len());
    let mut file = match jsonfile::read(&layout.global) {
        Ok(f) => f,
        Err(e) => {
            tally.refuse(format!("MCP servers not written: {e}"));
            tally.finish();
            return Ok(());
        }
    };
    let mut added = Vec::new();
    let slot = file
        .object
        .entry("mcpServers")
        .or_insert_with(|| Value::Object(Map::new()));
    let Some(existing) = slot.as_object_mut() else {
        tally.refuse(format!(
            "`mcpServers` in {} is not an object; MCP servers not written",
            layout.global.display()
        ));
        tally.finish();
        return Ok(());
    };
    for s in servers {
        let entry = to_claude(s);
        if !crate::kit::secrets::redacted(s).is_empty() {
            ctx.diagnostics.note(
                &layout.global,
                None,
                format!(
                    "MCP server {:?} came with secrets blanked; they are written as ${{VAR}} references to set in the environment",
                    s.name()
                ),
            );
        }
        tally.place(match existing.get(s.name()) {
            Some(old) if same_entry(old, &entry) => Placement::AlreadyThere,
            Some(_) => Placement::Refused(format!(
                "an MCP server named {:?} is already configured differently in {}; kept yours",
                s.name(),
                layout.global.display()
            )),
            None => {
                existing.insert(s.name().to_owned(), entry);
                added.push(s.name().to_owned());
                Placement::New
            }
        });
    }
    if !added.is_empty() {
        jsonfile::write_private(ctx.writer, &layout.global, &file)?;
        if file.existed {
            tally.servers_into(&layout.global, &added, ctx.writer.is_dry_run());
        }
    }
    tally.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claude_entries_become_acp_servers_and_back() {
        let entry = json!({"type": "stdio", "command": "npx", "args": ["-y", "x"], "env": {"T": "${GITHUB_TOKEN}"}, "timeout": 30});
        let s = from_claude("github", &entry).unwrap();
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["env"], json!([{"name": "T", "value": "${GITHUB_TOKEN}"}]));
        assert_eq!(
            v["_meta"]["claudeCode"],
            json!({"scope": "user", "timeout": 30})
        );
        assert!(same_entry(&to_claude(&s), &entry));
        let http = from_claude(
            "linear",
            &json!({"type": "http", "url": "https://x/mcp", "headers": {"Authorization": "Bearer ${K}"}}),
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&http).unwrap()["headers"],
            json!([{"name": "Authorization", "value": "Bearer ${K}"}])
        );
        assert!(from_claude("ide", &json!({"type": "ws", "url": "ws://x"})).is_err());
    }

    #[test]
    fn redacted_values_are_written_as_references() {
        let mut s = from_claude(
            "gh",
            &json!({"command": "npx", "env": {"GITHUB_TOKEN": "ghp_live"}}),
        )
        .unwrap();
        secrets::redact(&mut s);
        assert_eq!(to_claude(&s)["env"]["GITHUB_TOKEN"], "${GITHUB_TOKEN}");
    }
}
