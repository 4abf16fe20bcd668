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

/// A `trustedFolders.json` as Gemini CLI and Qwen Code write it: `{"<abs path>":
/// "TRUST_FOLDER" | "TRUST_PARENT" | "DO_NOT_TRUST"}`, two-space JSON. Every entry but
/// `DO_NOT_TRUST` grants. `None` when the file grants nothing (or is not such a file: it is
/// then restored as it is, as before).
pub fn trusted_folders(harness: &str, bytes: &[u8]) -> Option<Granting> {
    let Ok(Value::Object(all)) = serde_json::from_slice::<Value>(bytes) else {
        return None;
    };
    let (granted, kept): (Map<String, Value>, Map<String, Value>) = all
        .into_iter()
        .partition(|(_, v)| v.as_str() != Some("DO_NOT_TRUST"));
    if granted.is_empty() {
        return None;
    }
    let folders: Vec<&str> = granted.keys().map(String::as_str).collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trusted_folders_grant_all_but_do_not_trust() {
        let file = br#"{"/a": "TRUST_FOLDER", "/b": "DO_NOT_TRUST", "/c": "TRUST_PARENT"}"#;
        let g = trusted_folders("Gemini CLI", file).unwrap();
        assert_eq!(g.what, "Gemini CLI trusts /a, /c");
        let rest: Value = serde_json::from_slice(&g.rest.unwrap()).unwrap();
        assert_eq!(rest, serde_json::json!({"/b": "DO_NOT_TRUST"}));
        let only = trusted_folders("Qwen Code", br#"{"/a": "TRUST_FOLDER"}"#).unwrap();
        assert_eq!(only.rest, None, "nothing else: the file is left out");
        assert_eq!(
            trusted_folders("Gemini CLI", br#"{"/b": "DO_NOT_TRUST"}"#),
            None
        );
        assert_eq!(trusted_folders("Gemini CLI", b"not json"), None);
    }
}
