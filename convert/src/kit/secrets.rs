//! `--redact-secrets`: blanking tokens in MCP server descriptors.
//!
//! Env values and HTTP header values are where MCP configurations keep API tokens; they also
//! turn up as command-line options (`--api-key=…`, `--token …`) and in URL query strings
//! (`?api_key=…`). A value that is only a reference to a variable (`${GITHUB_TOKEN}`,
//! `$TOKEN`, `${env:TOKEN}`, `${input:token}`, OpenCode's `{env:TOKEN}` and `{file:path}`) holds no secret and is kept, so the
//! destination still knows what to set; every other such value is blanked and listed under
//! `_meta.asp.redacted` (`env.NAME`, `headers.NAME`, `args.INDEX`, `url.NAME`).

use asp_format::state::{McpServer, NameValue};

/// Whether `value` is nothing but a variable reference.
pub fn is_reference(value: &str) -> bool {
    let v = value.trim();
    // OpenCode's substitutions: `{env:NAME}` (a variable) and `{file:path}` (a file's text).
    if let Some(inner) = v.strip_prefix('{').and_then(|r| r.strip_suffix('}')) {
        if let Some(name) = inner.strip_prefix("env:") {
            return !name.is_empty()
                && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
        }
        if let Some(path) = inner.strip_prefix("file:") {
            return !path.is_empty() && !path.contains(['{', '}']);
        }
        return false;
    }
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

/// Whether an option or parameter name says its value is a credential.
fn names_a_secret(name: &str) -> bool {
    let n = name.trim_start_matches('-').to_ascii_lowercase();
    [
        "token",
        "secret",
        "password",
        "passwd",
        "apikey",
        "api-key",
        "api_key",
        "auth",
        "credential",
    ]
    .iter()
    .any(|w| n.contains(w))
        || n == "key"
        || n.ends_with("-key")
        || n.ends_with("_key")
}

/// Blanks `--name=value` and `--name value` arguments whose name says they hold a secret.
fn blank_args(args: &mut [String], out: &mut Vec<String>) {
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if let Some((name, value)) = arg.split_once('=')
            && name.starts_with('-')
            && names_a_secret(name)
        {
            if !holds_no_secret(value) {
                args[i] = format!("{name}=");
                out.push(format!("args.{i}"));
            }
        } else if arg.starts_with('-')
            && names_a_secret(arg)
            && i + 1 < args.len()
            && !args[i + 1].starts_with('-')
        {
            if !holds_no_secret(&args[i + 1]) {
                args[i + 1].clear();
                out.push(format!("args.{}", i + 1));
            }
            i += 1;
        }
        i += 1;
    }
}

/// Blanks query parameters whose name says they hold a secret.
fn blank_url(url: &mut String, out: &mut Vec<String>) {
    let Some((base, query)) = url.split_once('?') else {
        return;
    };
    let (query, fragment) = match query.split_once('#') {
        Some((q, f)) => (q, Some(f)),
        None => (query, None),
    };
    let mut changed = false;
    let parts: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, v)) if names_a_secret(k) && !holds_no_secret(v) => {
                changed = true;
                out.push(format!("url.{k}"));
                format!("{k}=")
            }
            _ => p.to_owned(),
        })
        .collect();
    if changed {
        let mut u = format!("{base}?{}", parts.join("&"));
        if let Some(f) = fragment {
            u.push('#');
            u.push_str(f);
        }
        *url = u;
    }
}

/// What `--redact-secrets` blanked in `server` (its `_meta.asp.redacted`), empty if nothing.
pub fn redacted(server: &McpServer) -> Vec<String> {
    crate::kit::meta::redacted(server.meta())
}

/// Blanks the secrets of `server` and records what was blanked; returns those names.
pub fn redact(server: &mut McpServer) -> Vec<String> {
    let mut blanked = Vec::new();
    match server {
        McpServer::Stdio(s) => {
            blank(&mut s.env, "env", &mut blanked);
            blank_args(&mut s.args, &mut blanked);
        }
        McpServer::Http(r) | McpServer::Sse(r) => {
            blank(&mut r.headers, "headers", &mut blanked);
            blank_url(&mut r.url, &mut blanked);
        }
    }
    crate::kit::meta::add_redacted(server.meta_mut(), &blanked);
    blanked
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::state::McpStdio;
    use serde_json::json;

    #[test]
    fn opencode_substitutions_are_references() {
        assert!(holds_no_secret("Bearer {env:DOCS_MCP_TOKEN}"));
        assert!(holds_no_secret("{file:~/.secrets/docs}"));
        assert!(!holds_no_secret("{env:}"));
        assert!(!holds_no_secret("{not-a-ref}"));
        assert!(!holds_no_secret("Bearer sk-live-123"));
    }

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
    fn tokens_in_arguments_and_urls_are_blanked_too() {
        let mut s = McpServer::Stdio(McpStdio {
            name: "x".into(),
            command: "srv".into(),
            args: vec![
                "--api-key=sk-live-1".into(),
                "--token".into(),
                "abc123".into(),
                "--verbose".into(),
                "--key=${KEY}".into(),
                "--port=8080".into(),
            ],
            env: vec![],
            meta: None,
        });
        assert_eq!(
            redact(&mut s),
            vec!["args.0".to_owned(), "args.2".to_owned()]
        );
        let McpServer::Stdio(st) = &s else { panic!() };
        assert_eq!(
            st.args,
            [
                "--api-key=",
                "--token",
                "",
                "--verbose",
                "--key=${KEY}",
                "--port=8080"
            ]
        );
        let mut h = McpServer::Http(asp_format::state::McpRemote {
            name: "h".into(),
            url: "https://mcp.example.com/mcp?api_key=sk1&region=eu#top".into(),
            headers: vec![],
            meta: None,
        });
        assert_eq!(redact(&mut h), vec!["url.api_key".to_owned()]);
        let McpServer::Http(r) = &h else { panic!() };
        assert_eq!(r.url, "https://mcp.example.com/mcp?api_key=&region=eu#top");
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
