//! MCP servers: the `[mcp_servers.<name>]` tables of `config.toml` ([`super::config`] reads
//! and edits the document; spec/harnesses/codex.md §11.4).

use asp_format::StateKind;
use asp_format::answer::ImportAnswer;
use asp_format::state::McpServer;

use super::config::{Config, Merge};
use crate::kit::placement::{Placement, Tally};

/// Merges `servers` into the configuration; what a server could not keep is said, and so is
/// each one added to a `config.toml` that was there (`dry_run`: would be).
pub fn merge(c: &mut Config, servers: &[McpServer], answer: &mut ImportAnswer, dry_run: bool) {
    let mut tally = Tally::new(answer, StateKind::Tools, servers.len());
    let mut added = Vec::new();
    for server in servers {
        match c.merge_mcp(server) {
            Merge::Added { notes } => {
                tally.place(Placement::New);
                added.push(server.name().to_owned());
                for n in notes {
                    tally.refuse(format!("MCP server {}: {n}", server.name()));
                }
            }
            Merge::AlreadyThere => tally.place(Placement::AlreadyThere),
            Merge::Refused(reason) => tally.place(Placement::Refused(reason)),
        }
    }
    if c.existed() {
        tally.servers_into(&c.path, &added, dry_run);
    }
    tally.finish();
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::state::McpStdio;

    fn server(name: &str) -> McpServer {
        McpServer::Stdio(McpStdio {
            name: name.to_owned(),
            command: "npx".to_owned(),
            args: vec!["-y".to_owned(), format!("@example/{name}")],
            env: Vec::new(),
            meta: None,
        })
    }

    #[test]
    fn servers_added_to_a_config_toml_that_was_there_are_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config.toml");
        std::fs::write(&path, "[mcp_servers.docs]\ncommand = \"docs-mcp\"\n").unwrap();
        let mut c = Config::load(dir.path()).unwrap();
        let mut answer = ImportAnswer::default();
        merge(
            &mut c,
            &[server("docs"), server("linear")],
            &mut answer,
            true,
        );
        assert_eq!(answer.written_into.len(), 1, "{answer:?}");
        assert_eq!(
            answer.written_into[0].what,
            format!(
                "would be added to {}, a file that was there: MCP server \"linear\"",
                path.display()
            )
        );
        // Into a config.toml that was not there: nothing of the user's changed.
        let empty = tempfile::tempdir().unwrap();
        let mut c = Config::load(empty.path()).unwrap();
        let mut answer = ImportAnswer::default();
        merge(&mut c, &[server("linear")], &mut answer, false);
        assert!(answer.written_into.is_empty(), "{answer:?}");
    }
}
