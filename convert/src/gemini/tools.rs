//! MCP servers: `mcpServers` of `~/.gemini/settings.json`, mapped by the kit
//! ([`crate::kit::mcp_json`]) with Gemini's transport rule ([`super::settings::DIALECT`]).

use asp_format::state::McpServer;

use super::settings::DIALECT;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::settings_json::{File, Merged};

/// The servers of the settings file, one named in `mcp.excluded` marked switched off
/// ([`crate::kit::mcp_json::Dialect::read_switchable`]).
pub fn read(file: &File, ctx: &ReadContext<'_>) -> Option<Vec<McpServer>> {
    DIALECT.read_switchable(file, ctx)
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
