//! MCP servers: `mcpServers` of `~/.gemini/settings.json`, mapped by the kit
//! ([`crate::kit::mcp_json`]) with Gemini's transport rule ([`super::settings::DIALECT`]).
//!
//! Gemini CLI 0.61 leaves a configured server stopped three ways, each read here as switched
//! off: `mcp.allowed` does not name it, `mcp.excluded` does (both in `settings.json`, names
//! matched trimmed and in any case), or `gemini mcp disable NAME` wrote it into
//! [`ENABLEMENT`].

use std::path::Path;

use asp_format::state::McpServer;
use serde_json::Value;

use super::layout::Layout;
use super::settings::DIALECT;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::settings_json::{File, Merged};

/// What `gemini mcp disable NAME` writes, in the Gemini directory: `{"name": {"enabled":
/// false}}`, each name trimmed and lowercased (`gemini mcp enable` deletes the entry).
pub const ENABLEMENT: &str = "mcp-server-enablement.json";

/// The servers of the settings file, one Gemini CLI does not start marked switched off
/// ([`crate::kit::mcp_json::Dialect::read_switchable`]).
pub fn read(file: &File, layout: &Layout, ctx: &ReadContext<'_>) -> Option<Vec<McpServer>> {
    let disabled = disabled(&layout.gemini.join(ENABLEMENT), ctx);
    let fold = |n: &str| n.trim().to_lowercase();
    DIALECT.read_switchable(file, ctx, &|name| disabled.contains(&fold(name)))
}

/// The names [`ENABLEMENT`] switches off, as Gemini CLI looks them up (the key is the name
/// trimmed and lowercased). A file that is not there switches none off; one that cannot be
/// read neither, as Gemini CLI reads it (it says so and starts every server), said here too.
fn disabled(path: &Path, ctx: &ReadContext<'_>) -> Vec<String> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            ctx.diagnostics.note(
                path,
                None,
                format!("cannot be read ({e}); Gemini CLI then starts every MCP server, so none is read as switched off"),
            );
            return Vec::new();
        }
    };
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(m)) => m
            .into_iter()
            .filter(|(_, v)| v.get("enabled") == Some(&Value::Bool(false)))
            .map(|(k, _)| k)
            .collect(),
        Ok(_) => {
            ctx.diagnostics.note(
                path,
                None,
                "is not a JSON object; Gemini CLI then starts every MCP server, so none is read as switched off",
            );
            Vec::new()
        }
        Err(e) => {
            ctx.diagnostics.note(
                path,
                Some(e.line() as u64),
                format!("is not JSON ({e}); Gemini CLI then starts every MCP server, so none is read as switched off"),
            );
            Vec::new()
        }
    }
}

/// Adds `servers` to the settings file (in memory), a server switched off where it was read
/// named in `mcp.excluded`; see [`crate::kit::mcp_json::Dialect::merge_switchable`].
pub fn merge(
    file: &mut File,
    servers: &[McpServer],
    ctx: &WriteContext<'_>,
    out: &mut Merged,
) -> bool {
    DIALECT.merge_switchable(file, servers, ctx, out)
}
