//! MCP servers: `mcpServers` of `~/.gemini/settings.json` ([`super::settings::File`] reads
//! and edits the document; the transport rules are in its module doc).

use asp_format::state::McpServer;

use super::settings::File;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::placement::Placement;

/// The servers of the settings file.
pub fn read(file: &File, ctx: &ReadContext<'_>) -> Option<Vec<McpServer>> {
    file.mcp_servers(ctx.options.redact_secrets, ctx.diagnostics)
}

/// Adds `servers` to the settings file (in memory), each with what it came to; what a server
/// could not keep (a grant a carried state never gives) is said as a refusal beside it.
/// Returns whether the file changed.
pub fn merge(
    file: &mut File,
    servers: &[McpServer],
    ctx: &WriteContext<'_>,
    out: &mut Vec<Placement>,
    notes: &mut Vec<String>,
) -> bool {
    let path = file.path.clone();
    let mut changed = false;
    for server in servers {
        let (placed, withheld) = file.add_server(server);
        if !withheld.is_empty() {
            notes.push(format!(
                "MCP server {:?}: {} not carried; asp never grants that from a \
                 carried state (anyone can write one), so the server is configured \
                 without it (set it in {} yourself if you want it)",
                server.name(),
                withheld.join(" and "),
                path.display()
            ));
        }
        if placed == Placement::New {
            changed = true;
            let r = crate::kit::secrets::redacted(server);
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
        out.push(placed);
    }
    changed
}
