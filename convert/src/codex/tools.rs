//! MCP servers: the `[mcp_servers.<name>]` tables of `config.toml` ([`super::config`] reads
//! and edits the document; spec/harnesses/codex.md §11.4).

use asp_format::StateKind;
use asp_format::answer::ImportAnswer;
use asp_format::state::McpServer;

use super::config::{Config, Merge};
use crate::kit::placement::{Placement, Tally};

/// Merges `servers` into the configuration; what a server could not keep is said.
pub fn merge(c: &mut Config, servers: &[McpServer], answer: &mut ImportAnswer) {
    let mut tally = Tally::new(answer, StateKind::Tools, servers.len());
    for server in servers {
        match c.merge_mcp(server) {
            Merge::Added { notes } => {
                tally.place(Placement::New);
                for n in notes {
                    tally.refuse(format!("MCP server {}: {n}", server.name()));
                }
            }
            Merge::AlreadyThere => tally.place(Placement::AlreadyThere),
            Merge::Refused(reason) => tally.place(Placement::Refused(reason)),
        }
    }
    tally.finish();
}
