//! What a harness's own configuration grants by a folder's path: trusting a folder lets the
//! harness run what the folder asks for (its hooks, its MCP servers, commands without asking).
//! A backup keeps those decisions with the configuration; on another machine another
//! repository may sit at that path, so a restore says each one it writes and leaves them out
//! with `asp restore --no-grants` ([`Grants`](super::placement::Grants)).

use serde_json::{Map, Value};

/// What a configuration file grants, and the file without it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Granting {
    /// Said for the owner: `Gemini CLI trusts /home/me/shop, /home/me/api`.
    pub what: String,
    /// The file without what it grants; `None` when nothing else is in it.
    pub rest: Option<Vec<u8>>,
}

/// A `trustedFolders.json` as Gemini CLI and Qwen Code read it: `{"<abs path>":
/// "TRUST_FOLDER" | "TRUST_PARENT" | "DO_NOT_TRUST"}`, JSON with comments (both strip them
/// before parsing). Every entry but `DO_NOT_TRUST` grants; `TRUST_PARENT` trusts the folder
/// that holds the path. `None` when the file grants nothing. A file that cannot be read as
/// that is taken to grant everything it might: said, and left out whole with `--no-grants`.
pub fn trusted_folders(harness: &str, bytes: &[u8]) -> Option<Granting> {
    let parsed = std::str::from_utf8(bytes)
        .ok()
        .and_then(|t| super::jsonc::parse(t, super::jsonc::Jsonc::Comments).ok());
    let Some((Value::Object(all), _)) = parsed else {
        return Some(Granting {
            what: format!(
                "{harness} trusts the folders a trustedFolders.json asp cannot read names"
            ),
            rest: None,
        });
    };
    let (granted, kept): (Map<String, Value>, Map<String, Value>) = all
        .into_iter()
        .partition(|(_, v)| v.as_str() != Some("DO_NOT_TRUST"));
    if granted.is_empty() {
        return None;
    }
    let folders: Vec<String> = granted
        .iter()
        .map(|(path, how)| match how.as_str() {
            Some("TRUST_PARENT") => {
                let parent = std::path::Path::new(path)
                    .parent()
                    .map_or_else(|| path.clone(), |p| p.display().to_string());
                format!("{parent} (the parent of {path})")
            }
            _ => path.clone(),
        })
        .collect();
    let rest = (!kept.is_empty()).then(|| {
        let mut out = serde_json::to_vec_pretty(&Value::Object(kept)).expect("JSON serialises");
        out.push(b'\n');
        out
    });
    Some(Granting {
        what: format!("{harness} trusts {}", folders.join(", ")),
        rest,
    })
}

/// A `settings.json` as Gemini CLI reads it (JSON with comments): each MCP server with
/// `"trust": true` runs its tools without asking for confirmation. `None` when none is
/// trusted so. The rest is the file with those `trust` members taken out, pretty-printed
/// (`asp restore --no-grants` writes it: its comments do not survive).
pub fn trusted_servers(harness: &str, bytes: &[u8]) -> Option<Granting> {
    let parsed = std::str::from_utf8(bytes)
        .ok()
        .and_then(|t| super::jsonc::parse(t, super::jsonc::Jsonc::Comments).ok());
    let Some((Value::Object(mut all), commented)) = parsed else {
        // A settings file that cannot be read is said by the restore that reads it.
        return None;
    };
    let servers = all.get_mut("mcpServers").and_then(Value::as_object_mut)?;
    let mut trusted = Vec::new();
    for (name, entry) in servers.iter_mut() {
        if let Some(e) = entry.as_object_mut()
            && e.get("trust") == Some(&Value::Bool(true))
        {
            e.remove("trust");
            trusted.push(name.clone());
        }
    }
    if trusted.is_empty() {
        return None;
    }
    let mut rest = serde_json::to_vec_pretty(&Value::Object(all)).expect("JSON serialises");
    rest.push(b'\n');
    Some(Granting {
        what: format!(
            "{harness} runs the tools of MCP server {} without asking (trust: true){}",
            trusted.join(", "),
            if commented {
                "; without it the file is written without its comments"
            } else {
                ""
            }
        ),
        rest: Some(rest),
    })
}

/// A JSON settings file's permission mode at `key` (a path of members: Claude Code's
/// `permissions.defaultMode`) when it lets the agent act without asking
/// ([`crate::kit::accepted::approves_unasked`]): `asp restore --no-grants` writes the file
/// without it. `None` when there is none, or it asks. The rest is pretty-printed (a file with
/// comments loses them, which is said).
pub fn mode_that_acts_unasked(harness: &str, bytes: &[u8], key: &[&str]) -> Option<Granting> {
    let (last, parents) = key.split_last()?;
    let parsed = std::str::from_utf8(bytes)
        .ok()
        .and_then(|t| super::jsonc::parse(t, super::jsonc::Jsonc::Comments).ok());
    let Some((Value::Object(mut all), commented)) = parsed else {
        return None;
    };
    let mut at = &mut all;
    for k in parents {
        at = at.get_mut(*k)?.as_object_mut()?;
    }
    let mode = at.get(*last)?.as_str()?.to_owned();
    if !super::accepted::approves_unasked(&mode) {
        return None;
    }
    at.remove(*last);
    let mut rest = serde_json::to_vec_pretty(&Value::Object(all)).expect("JSON serialises");
    rest.push(b'\n');
    Some(Granting {
        what: format!(
            "{harness} starts every session in mode {mode:?} ({}), which acts without asking{}",
            key.join("."),
            if commented {
                "; without it the file is written without its comments"
            } else {
                ""
            }
        ),
        rest: Some(rest),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trusted_servers_grant_and_the_rest_keeps_everything_else() {
        let file = b"{\n  // mine\n  \"ui\": {\"theme\": \"x\"},\n  \"mcpServers\": {\"a\": {\"command\": \"a\", \"trust\": true}, \"b\": {\"command\": \"b\", \"trust\": false}}\n}";
        let g = trusted_servers("Gemini CLI", file).unwrap();
        assert_eq!(
            g.what,
            "Gemini CLI runs the tools of MCP server a without asking (trust: true); without it \
             the file is written without its comments"
        );
        let rest: Value = serde_json::from_slice(&g.rest.unwrap()).unwrap();
        assert_eq!(
            rest,
            serde_json::json!({"ui": {"theme": "x"}, "mcpServers": {"a": {"command": "a"}, "b": {"command": "b", "trust": false}}})
        );
        assert_eq!(
            trusted_servers("Gemini CLI", br#"{"mcpServers": {"b": {}}}"#),
            None
        );
        assert_eq!(trusted_servers("Gemini CLI", b"{}"), None);
    }

    #[test]
    fn a_mode_that_acts_unasked_grants_and_the_rest_keeps_everything_else() {
        let file = br#"{"model": "opus", "permissions": {"defaultMode": "acceptEdits", "allow": ["Bash(ls)"]}}"#;
        let key = ["permissions", "defaultMode"];
        let g = mode_that_acts_unasked("Claude Code", file, &key).unwrap();
        assert_eq!(
            g.what,
            "Claude Code starts every session in mode \"acceptEdits\" (permissions.defaultMode), \
             which acts without asking"
        );
        let rest: Value = serde_json::from_slice(&g.rest.unwrap()).unwrap();
        assert_eq!(
            rest,
            serde_json::json!({"model": "opus", "permissions": {"allow": ["Bash(ls)"]}})
        );
        let asks = br#"{"permissions": {"defaultMode": "plan"}}"#;
        assert_eq!(mode_that_acts_unasked("Claude Code", asks, &key), None);
        assert_eq!(mode_that_acts_unasked("Claude Code", b"{}", &key), None);
    }

    #[test]
    fn trusted_folders_grant_all_but_do_not_trust() {
        let file = b"{\n  // the work laptop\n  \"/a\": \"TRUST_FOLDER\", \"/b\": \"DO_NOT_TRUST\",\n  \"/c/d\": \"TRUST_PARENT\"\n}";
        let g = trusted_folders("Gemini CLI", file).unwrap();
        assert_eq!(g.what, "Gemini CLI trusts /a, /c (the parent of /c/d)");
        let rest: Value = serde_json::from_slice(&g.rest.unwrap()).unwrap();
        assert_eq!(rest, serde_json::json!({"/b": "DO_NOT_TRUST"}));
        let only = trusted_folders("Qwen Code", br#"{"/a": "TRUST_FOLDER"}"#).unwrap();
        assert_eq!(only.rest, None, "nothing else: the file is left out");
        assert_eq!(
            trusted_folders("Gemini CLI", br#"{"/b": "DO_NOT_TRUST"}"#),
            None
        );
        // What cannot be read is taken to grant, and is left out whole with --no-grants.
        let unread = trusted_folders("Gemini CLI", b"not json").unwrap();
        assert_eq!(unread.rest, None);
    }
}
