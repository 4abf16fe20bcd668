//! MCP servers a harness keeps configured but does not start.
//!
//! Codex (`enabled = false`), OpenCode (`"enabled": false`), Gemini CLI and Qwen Code (the
//! server's name in `mcp.excluded`, or not in `mcp.allowed`; Gemini's `gemini mcp disable`)
//! can switch a server off without removing it. ACP's `McpServer` has no such
//! flag, so their readers say it under their own `_meta` namespace, and their writers give it
//! back. Carried into another harness, that key was read by nobody: a server the user had
//! switched off came back on, and started with the next session. [`carry`] keeps it off: into a
//! harness that can switch servers off, the server is written switched off there; into one that
//! cannot (Claude Code, Pi, Copilot CLI), it is left out and said, since starting
//! a program the user stopped is not what carrying their configuration means.

use asp_format::state::McpServer;
use serde_json::Value;

/// The state's convention for a server switched off (spec/aspstate.md §10): the `_meta`
/// namespace of the harness that can say so (its name), the key, the value meaning "off", and
/// how that harness's own file says it, for the notes.
const SWITCHES: [(&str, &str, bool, &str); 4] = [
    ("codex", "enabled", false, "Codex (`enabled = false`)"),
    (
        "opencode",
        "enabled",
        false,
        "OpenCode (`\"enabled\": false`)",
    ),
    // Read off also when `mcp.allowed` does not name it (and, in Gemini CLI, after `gemini
    // mcp disable`): named by the file where asp writes it back.
    (
        "qwen",
        "excluded",
        true,
        "Qwen Code (`mcp.excluded`, or left out of `mcp.allowed`)",
    ),
    (
        "gemini",
        "excluded",
        true,
        "Gemini CLI (`mcp.excluded`, left out of `mcp.allowed`, or `gemini mcp disable`)",
    ),
];

/// How the harness that switched `server` off says it, when one did.
pub fn switched_off(server: &McpServer) -> Option<&'static str> {
    let meta = server.meta()?;
    SWITCHES.iter().find_map(|&(ns, key, off, said)| {
        (meta.get(ns).and_then(|m| m.get(key)) == Some(&Value::Bool(off))).then_some(said)
    })
}

/// Keeps the servers switched off in their harness off in `target` (a harness's name): each is
/// marked the way `target` says it when `target` can, else taken out of `servers`. Returns a
/// note for each one taken out, naming it.
pub fn carry(servers: &mut Vec<McpServer>, target: &str) -> Vec<String> {
    let own = SWITCHES.iter().find(|(ns, ..)| *ns == target);
    let mut notes = Vec::new();
    servers.retain_mut(|server| {
        let Some(said) = switched_off(server) else {
            return true;
        };
        match own {
            Some(&(ns, key, off, _)) => {
                let meta = server.meta_mut().get_or_insert_with(Default::default);
                let mine = meta
                    .entry(ns.to_owned())
                    .or_insert_with(|| Value::Object(Default::default()));
                if let Value::Object(mine) = mine {
                    mine.insert(key.to_owned(), Value::Bool(off));
                    true
                } else {
                    // A namespace that is not an object: the key cannot be said there.
                    notes.push(format!(
                        "MCP server {} is switched off in {said}, but its `_meta.{ns}` is not \
                         an object, so it cannot say so for {target}; left out rather than started",
                        server.name()
                    ));
                    false
                }
            }
            None => {
                notes.push(left_out(server, said, target));
                false
            }
        }
    });
    notes
}

/// The note for a server `target` (a harness's name, as `--to` takes it) would start.
fn left_out(server: &McpServer, said: &str, target: &str) -> String {
    format!(
        "MCP server {} is switched off in {said}, and {target} cannot keep a server configured \
         but off: left out rather than started (add it there by hand to use it)",
        server.name()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::state::McpStdio;
    use serde_json::json;

    fn server(name: &str, meta: Value) -> McpServer {
        McpServer::Stdio(McpStdio {
            name: name.to_owned(),
            command: "docs-mcp".to_owned(),
            args: Vec::new(),
            env: Vec::new(),
            meta: meta.as_object().cloned(),
        })
    }

    fn meta_of(s: &McpServer) -> Value {
        Value::Object(s.meta().cloned().unwrap_or_default())
    }

    #[test]
    fn a_server_switched_off_stays_off_or_is_left_out_and_said() {
        let all = || {
            vec![
                server("on", json!({"codex": {"enabled": true}})),
                server("plain", json!({})),
                server("codex-off", json!({"codex": {"enabled": false}})),
                server(
                    "opencode-off",
                    json!({"opencode": {"enabled": false, "timeout": 5}}),
                ),
                server("qwen-off", json!({"qwen": {"excluded": true}})),
            ]
        };
        // Into a harness that cannot switch a server off: the three are left out, and said.
        let mut servers = all();
        let notes = carry(&mut servers, "claude-code");
        let names: Vec<&str> = servers.iter().map(McpServer::name).collect();
        assert_eq!(names, ["on", "plain"]);
        assert_eq!(notes.len(), 3, "{notes:?}");
        assert!(
            notes[0].starts_with("MCP server codex-off is switched off in Codex (`enabled = false`), and claude-code cannot keep"),
            "{notes:?}"
        );
        // Into each that can: every one kept, off in that harness's own words.
        for (target, key, off) in [
            ("codex", "enabled", false),
            ("opencode", "enabled", false),
            ("qwen", "excluded", true),
            ("gemini", "excluded", true),
        ] {
            let mut servers = all();
            assert!(carry(&mut servers, target).is_empty());
            assert_eq!(servers.len(), 5);
            for s in &servers[2..] {
                assert_eq!(meta_of(s)[target][key], json!(off), "{target}: {s:?}");
            }
            assert_eq!(meta_of(&servers[1]), json!({}), "untouched");
        }
        // What the source said stays beside (OpenCode's own timeout too).
        let mut servers = all();
        carry(&mut servers, "codex");
        assert_eq!(
            meta_of(&servers[3]),
            json!({"opencode": {"enabled": false, "timeout": 5}, "codex": {"enabled": false}})
        );
    }
}
