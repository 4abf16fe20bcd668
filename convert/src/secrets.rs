//! `--redact-secrets`: blanking tokens in MCP server descriptors.
//!
//! Env values and HTTP header values are where MCP configurations keep API tokens. A value
//! that is only a reference to a variable (`${GITHUB_TOKEN}`, `$TOKEN`, `${env:TOKEN}`,
//! `${input:token}`) holds no secret and is kept, so the destination still knows what to
//! set; every other value is blanked and its name listed under `_meta.asp.redacted`
//! (`env.NAME`, `headers.NAME`).

use asp_format::state::{McpServer, NameValue};
use serde_json::{Value, json};

/// Whether `value` is nothing but a variable reference.
pub fn is_reference(value: &str) -> bool {
    let v = value.trim();
    if let Some(inner) = v.strip_prefix("${").and_then(|r| r.strip_suffix('}')) {
        let name = inner
            .strip_prefix("env:")
            .or_else(|| inner.strip_prefix("input:"))
            .unwrap_or(inner);
        let name = name.split(":-").next().unwrap_or(name);
        return !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.' || b == b'-');
    }
    if let Some(name) = v.strip_prefix('$') {
        return !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    }
    false
}

/// Whether `value` holds no literal secret: it is a reference, or an auth scheme word
/// followed by one (`Bearer ${DOCS_TOKEN}`).
pub fn holds_no_secret(value: &str) -> bool {
    if value.is_empty() || is_reference(value) {
        return true;
    }
    match value.trim().split_once(char::is_whitespace) {
        Some((scheme, rest)) => {
            matches!(
                scheme.to_ascii_lowercase().as_str(),
                "bearer" | "basic" | "token"
            ) && is_reference(rest)
        }
        None => false,
    }
}

fn blank(list: &mut [NameValue], prefix: &str, out: &mut Vec<String>) {
    for nv in list {
        if !holds_no_secret(&nv.value) {
            nv.value.clear();
            out.push(format!("{prefix}.{}", nv.name));
        }
    }
}

/// Blanks the secrets of `server` and records what was blanked; returns those names.
pub fn redact(server: &mut McpServer) -> Vec<String> {
    let mut blanked = Vec::new();
    match server {
        McpServer::Stdio(s) => blank(&mut s.env, "env", &mut blanked),
        McpServer::Http(r) | McpServer::Sse(r) => blank(&mut r.headers, "headers", &mut blanked),
    }
    if !blanked.is_empty() {
        let meta = server.meta_mut().get_or_insert_with(Default::default);
        let asp = meta.entry("asp").or_insert_with(|| json!({}));
        if let Value::Object(o) = asp {
            o.insert("redacted".to_owned(), json!(blanked));
        }
    }
    blanked
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::state::McpStdio;

    #[test]
    fn literal_values_are_blanked_and_references_kept() {
        let mut s = McpServer::Stdio(McpStdio {
            name: "github".into(),
            command: "npx".into(),
            args: vec![],
            env: vec![
                NameValue {
                    name: "GITHUB_TOKEN".into(),
                    value: "ghp_abc123".into(),
                },
                NameValue {
                    name: "REF".into(),
                    value: "${GITHUB_TOKEN}".into(),
                },
                NameValue {
                    name: "DEFAULTED".into(),
                    value: "${X:-fallback}".into(),
                },
                NameValue {
                    name: "EMPTY".into(),
                    value: "".into(),
                },
            ],
            meta: None,
        });
        assert_eq!(redact(&mut s), vec!["env.GITHUB_TOKEN".to_owned()]);
        let v = serde_json::to_value(&s).unwrap();
        assert_eq!(v["env"][0]["value"], "");
        assert_eq!(v["env"][1]["value"], "${GITHUB_TOKEN}");
        assert_eq!(v["_meta"]["asp"]["redacted"], json!(["env.GITHUB_TOKEN"]));
    }

    #[test]
    fn references() {
        for r in ["${A}", "$A_B", "${env:TOKEN}", "${input:tok}", "${X:-y}"] {
            assert!(is_reference(r), "{r}");
        }
        for v in ["Bearer ${A}", "abc", "$", "${}", "ghp_x"] {
            assert!(!is_reference(v), "{v}");
        }
        assert!(holds_no_secret("Bearer ${DOCS_TOKEN}"));
        assert!(!holds_no_secret("Bearer sk-live-123"));
        assert!(!holds_no_secret("x-key ${A}"));
    }
}
