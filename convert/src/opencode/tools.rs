//! MCP servers: `mcp` of the global config ([`super::config`], spec §9), mapped by
//! [`crate::kit::mcp_json`] ([`DIALECT`]): `local` servers as stdio, `remote` ones as HTTP
//! (OpenCode tries streamable HTTP, then SSE, so an SSE server is written as `remote` too);
//! `enabled`, `timeout`, `cwd` and `oauth` travel under `_meta.opencode`. A server of the same
//! name already configured in any global config file is never replaced.

use asp_format::state::{McpServer, Meta};
use serde_json::Value;

use super::config::Global;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::mcp_json::{Dialect, Shape};
use crate::kit::placement::Placement;
use crate::kit::settings_json::{File, Merged};

pub const DIALECT: Dialect = Dialect {
    meta_key: "opencode",
    harness: "OpenCode",
    shape: Shape::OpenCode,
    bare_env_refs: false,
};

/// With `--redact-secrets`, an OAuth client secret kept under `_meta.opencode.oauth` is
/// blanked too (env values and headers are blanked by the kit).
fn redact_oauth(meta: Option<&mut Meta>) {
    if let Some(secret) = meta
        .and_then(|m| m.get_mut("opencode"))
        .and_then(|o| o.get_mut("oauth"))
        .and_then(|o| o.get_mut("clientSecret"))
    {
        *secret = Value::String(String::new());
    }
}

pub fn read(global: &Global, ctx: &ReadContext<'_>) -> Option<Vec<McpServer>> {
    let file = global.as_file()?;
    let mut list = DIALECT.read(&file, ctx)?;
    if ctx.options.redact_secrets {
        for s in &mut list {
            redact_oauth(match s {
                McpServer::Stdio(x) => x.meta.as_mut(),
                McpServer::Http(r) | McpServer::Sse(r) => r.meta.as_mut(),
            });
        }
    }
    Some(list)
}

/// Adds `servers` to the file being written (in memory). A server another global config file
/// already configures is there when it is the same, else refused: OpenCode merges the files
/// key by key, so writing it here would change the other file's server.
pub fn merge(
    global: &Global,
    file: &mut File,
    servers: &[McpServer],
    ctx: &WriteContext<'_>,
    out: &mut Merged,
) -> bool {
    let mut rest = Vec::new();
    for s in servers {
        let in_file = file
            .doc
            .get(DIALECT.key())
            .and_then(|m| m.get(s.name()))
            .is_some();
        match global.elsewhere(&file.path, DIALECT.key(), s.name()) {
            Some((from, there)) if !in_file => out.placed.push(if there == DIALECT.server_to(s) {
                Placement::AlreadyThere
            } else {
                Placement::Refused(format!(
                    "an MCP server named {:?} is already configured differently in {}; it was \
                     left as it is",
                    s.name(),
                    from.display()
                ))
            }),
            _ => rest.push(s.clone()),
        }
    }
    DIALECT.merge(file, &rest, ctx, out)
}
