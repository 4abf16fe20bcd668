//! `--redact-secrets`: blanking tokens in MCP server descriptors; and the notes that name the
//! credentials a bundle or a backup carries in full (an MCP server's, a settings file's `env`).
//!
//! Env values and HTTP header values are where MCP configurations keep API tokens; they also
//! turn up as command-line options (`--api-key=…`, `--token …`) and in URL query strings
//! (`?api_key=…`). A value that is only a reference to a variable (`${GITHUB_TOKEN}`,
//! `$TOKEN`, `${env:TOKEN}`, `${input:token}`, OpenCode's `{env:TOKEN}` and `{file:path}`) holds no secret and is kept, so the
//! destination still knows what to set; every other such value is blanked and listed under
//! `_meta.asp.redacted` (`env.NAME`, `headers.NAME`, `args.INDEX`, `url.NAME`).

use std::path::Path;

use asp_format::state::{McpServer, NameValue};

use crate::kit::report::Diagnostics;

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
        // `${NAME:-DEFAULT}`: a default written out is the value wherever NAME is unset, so
        // only an empty one leaves it a reference.
        let (name, default) = name.split_once(":-").unwrap_or((name, ""));
        return default.is_empty()
            && !name.is_empty()
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

/// Whether an option, parameter, variable or header name says its value is a credential,
/// read word by word (`-`, `_`, `.` and a lower-to-upper case change part words; a trailing
/// number is not a word: `API_KEY_2`):
/// - a word that ends in `token` (`GH_TOKEN`, `--slacktoken`), or begins or ends in `secret`,
///   `password`, `passwd` or `apikey` (`clientSecret`, `secretkey`);
/// - `auth` and its compounds (`authkey`, `authorization`, `oauth`), but not `author`;
/// - `credential(s)`, or a last word `key` (`OPENAI_API_KEY`, `--key`).
///
/// Whole words, so that `--max-tokens 4096`, `--tokens design/tokens.json` and `--author x`
/// are not taken for credentials (substrings were).
fn names_a_secret(name: &str) -> bool {
    let mut words = words(name);
    while words.len() > 1
        && words
            .last()
            .is_some_and(|w| w.bytes().all(|b| b.is_ascii_digit()))
    {
        words.pop();
    }
    let secret_word = |w: &String| {
        w.ends_with("token")
            || ["secret", "password", "passwd", "apikey"]
                .iter()
                .any(|s| w.starts_with(s) || w.ends_with(s))
            || (w.starts_with("auth") && !w.starts_with("author"))
            || w.starts_with("authoriz")
            || w.ends_with("auth")
            || w == "credential"
            || w == "credentials"
    };
    words.iter().any(secret_word) || words.last().is_some_and(|w| w == "key")
}

/// The lower-case words of a name: parted at every character other than a letter or a digit,
/// and where a lower-case letter is followed by an upper-case one (`apiKey`: `api`, `key`).
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut lower_before = false;
    for c in name.chars() {
        if !c.is_alphanumeric() {
            out.extend((!word.is_empty()).then(|| std::mem::take(&mut word)));
            lower_before = false;
            continue;
        }
        if c.is_uppercase() && lower_before {
            out.push(std::mem::take(&mut word));
        }
        lower_before = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    out.extend((!word.is_empty()).then_some(word));
    out
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

/// The values of `server` that are literal credentials by their names (an env variable or a
/// header named like a token or a key, and the options and query parameters [`redact`]
/// blanks), as [`redact`] names them. Narrower than what [`redact`] blanks, which is every
/// literal env and header value: this is what a note may call a credential without crying
/// wolf over `LOG_LEVEL=debug`.
pub fn literal_credentials(server: &McpServer) -> Vec<String> {
    let named = |list: &[NameValue], prefix: &str, out: &mut Vec<String>| {
        for nv in list {
            if names_a_secret(&nv.name) && !holds_no_secret(&nv.value) {
                out.push(format!("{prefix}.{}", nv.name));
            }
        }
    };
    let mut found = Vec::new();
    match server {
        McpServer::Stdio(s) => {
            named(&s.env, "env", &mut found);
            blank_args(&mut s.args.clone(), &mut found);
        }
        McpServer::Http(r) | McpServer::Sse(r) => {
            named(&r.headers, "headers", &mut found);
            blank_url(&mut r.url.clone(), &mut found);
        }
    }
    found
}

/// The literal credentials ([`literal_credentials`]) of every server of a state's tools, each
/// as `MCP server "NAME" env.TOKEN`: what a command sending the state elsewhere says it sends.
pub fn credentials_of(servers: &[McpServer]) -> Vec<String> {
    servers
        .iter()
        .flat_map(|s| {
            literal_credentials(s)
                .into_iter()
                .map(move |c| format!("MCP server {:?} {c}", s.name()))
        })
        .collect()
}

/// Carries `server`, read from `file`: with `redact`, its secrets blanked ([`redact`]) and a
/// note naming what was blanked;
/// without, as it is, with a note naming the values that are credentials by their names, so
/// that whoever packs or backs it up knows the bundle or repository holds them (and that
/// `--redact-secrets` would blank them) before sharing it.
pub fn carry(server: &mut McpServer, redact_secrets: bool, file: &Path, diagnostics: &Diagnostics) {
    if redact_secrets {
        let blanked = redact(server);
        if !blanked.is_empty() {
            diagnostics.note(
                file,
                None,
                format!(
                    "MCP server {:?}: blanked {} (--redact-secrets; the bundle lists them in \
                     the server's _meta.asp.redacted)",
                    server.name(),
                    blanked.join(", "),
                ),
            );
        }
        return;
    }
    let found = literal_credentials(server);
    let (what, carried) = match found.len() {
        0 => return,
        1 => ("a credential", "it is"),
        _ => ("credentials", "they are"),
    };
    diagnostics.note(
        file,
        None,
        format!(
            "MCP server {:?} holds {what} written out in full ({}): carried as {carried} \
             (a bundle packed with asp-pack --redact-secrets leaves such values out; a backup, \
             and the snapshots asp push sends, keep them)",
            server.name(),
            found.join(", "),
        ),
    );
}

/// The literal credentials a configuration file holds written out, by whose they are: what a
/// backup notes it keeps (the file's own: its MCP servers are named when the tools are read)
/// and what a push names as sent (all of them).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct ConfigCredentials {
    /// The file's own, by key: `env.NAME`, a model provider's token.
    pub own: Vec<String>,
    /// Its MCP servers', `MCP server "x" env.NAME` (`… of the project P` for a project's).
    pub servers: Vec<String>,
}

impl ConfigCredentials {
    /// Whether the file holds none.
    pub fn is_empty(&self) -> bool {
        self.own.is_empty() && self.servers.is_empty()
    }

    /// All of them, the file's own named with its `file` name (`FILE env.NAME`).
    pub fn named(self, file: &str) -> Vec<String> {
        let own = self.own.into_iter().map(|c| format!("{file} {c}"));
        own.chain(self.servers).collect()
    }
}

/// What reads the [`ConfigCredentials`] of one kind of configuration file
/// (`Harness::credentials_reader`).
pub type CredentialsReader = fn(&[u8]) -> ConfigCredentials;

/// The reader of the credentials of a harness's JSON configuration file (or part of one,
/// `FILE#PART`) named `rel`: [`json_config_credentials`]; `None` for a file that is not JSON
/// (a prompt history, Markdown), which is not read for them.
pub fn json_credentials_reader(rel: &str) -> Option<CredentialsReader> {
    let json = [".json", ".jsonc"]
        .iter()
        .any(|x| rel.ends_with(x) || rel.contains(&format!("{x}#")));
    json.then_some(json_config_credentials)
}

/// The literal credentials a harness's JSON configuration file holds written out: its `env`
/// (Claude Code's and Qwen Code's `settings.json` set the harness's environment there), and
/// the `env` and `headers` of the MCP servers it configures, for the user (`mcpServers`) or
/// by project (`projects.<path>.mcpServers`, Claude Code's `.claude.json`). The file may be
/// JSONC, as Gemini CLI, Qwen Code and OpenCode read theirs ([`crate::kit::jsonc`]); none
/// for a file that is not JSON.
pub fn json_config_credentials(bytes: &[u8]) -> ConfigCredentials {
    use crate::kit::jsonc::{Jsonc, parse};
    let Some((file, _)) = std::str::from_utf8(bytes)
        .ok()
        .and_then(|t| parse(t, Jsonc::CommentsAndTrailingCommas).ok())
    else {
        return ConfigCredentials::default();
    };
    let mut found = ConfigCredentials {
        own: members_credentials(&file, &["env"]),
        servers: Vec::new(),
    };
    let mut servers = |holder: &serde_json::Value, of: &str| {
        let entries = holder
            .get("mcpServers")
            .and_then(serde_json::Value::as_object);
        for (server, entry) in entries.into_iter().flatten() {
            found.servers.extend(
                members_credentials(entry, &["env", "headers"])
                    .into_iter()
                    .map(|c| format!("MCP server {server:?}{of} {c}")),
            );
        }
    };
    servers(&file, "");
    let projects = file.get("projects").and_then(serde_json::Value::as_object);
    for (project, p) in projects.into_iter().flatten() {
        servers(p, &format!(" of the project {project}"));
    }
    found
}

/// Whether a configuration value named `name` is a credential written out: named like one
/// (`*_TOKEN`, `Authorization`) and not empty, a `${VAR}` reference or a scheme alone.
pub fn is_literal_credential(name: &str, value: &str) -> bool {
    names_a_secret(name) && !holds_no_secret(value)
}

/// The members of `value`'s objects named `objects` (`env`, `headers`) that are literal
/// credentials by their names, as `env.NAME`: for a configuration file, or an MCP server's
/// entry as a harness writes it.
pub fn members_credentials(value: &serde_json::Value, objects: &[&str]) -> Vec<String> {
    let mut found = Vec::new();
    for object in objects {
        let Some(serde_json::Value::Object(members)) = value.get(*object) else {
            continue;
        };
        found.extend(
            members
                .iter()
                .filter(|(name, value)| {
                    value
                        .as_str()
                        .is_some_and(|v| is_literal_credential(name, v))
                })
                .map(|(name, _)| format!("{object}.{name}")),
        );
    }
    found
}

/// Notes that a configuration file a backup keeps byte for byte, `file`, holds credentials of
/// its own written out (`found`, [`ConfigCredentials::own`]), so that whoever backs it up
/// knows the repository holds them before pushing it anywhere.
pub fn note_kept_credentials(file: &Path, found: &[String], diagnostics: &Diagnostics) {
    let what = match found.len() {
        0 => return,
        1 => "a credential",
        _ => "credentials",
    };
    diagnostics.note(
        file,
        None,
        format!(
            "holds {what} written out in full ({}): the backup keeps the file as it is, and \
             the snapshots asp push sends carry it",
            found.join(", "),
        ),
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configuration_names_its_env_and_its_servers_credentials() {
        let file = br#"{
  // a comment, as Gemini CLI allows
  "env": {"ANTHROPIC_API_KEY": "sk-ant-1234567890", "NODE_OPTIONS": "--max-old-space-size=4096"},
  "mcpServers": {"a": {"command": "a", "env": {"A_TOKEN": "tok_9f8e7d6c5b4a"}}},
  "projects": {"/p": {"mcpServers": {"b": {"url": "u", "headers": {"Authorization": "Bearer abc123def456"}, "env": {"REF_TOKEN": "${REF_TOKEN}"}}}}}
}"#;
        let read = json_credentials_reader(".x/settings.json").expect("a JSON file is read");
        assert_eq!(
            read(file).named(".x/settings.json"),
            [
                ".x/settings.json env.ANTHROPIC_API_KEY",
                "MCP server \"a\" env.A_TOKEN",
                "MCP server \"b\" of the project /p headers.Authorization",
            ]
        );
        assert!(json_credentials_reader("rules.md").is_none());
        assert!(json_credentials_reader(".claude.json#projects").is_some());
        assert!(json_config_credentials(b"# not JSON").is_empty());
    }
    use asp_format::state::McpStdio;
    use serde_json::json;

    #[test]
    fn a_files_own_credentials_are_the_literal_values_named_like_one() {
        let settings = br#"{"model": "opus", "env": {"ANTHROPIC_API_KEY": "sk-ant-x",
            "OPENAI_API_KEY": "${OPENAI_API_KEY}", "DISABLE_TELEMETRY": "1",
            "GITHUB_TOKEN": "ghp_live", "MAX_TOKENS": "4096", "API_KEY_HELPER": 3}}"#;
        assert_eq!(
            json_config_credentials(settings).own,
            ["env.ANTHROPIC_API_KEY", "env.GITHUB_TOKEN"]
        );
        for none in [
            &br#"{"env": ["ANTHROPIC_API_KEY"]}"#[..],
            b"[1]",
            b"not json",
            b"{}",
        ] {
            assert!(json_config_credentials(none).is_empty());
        }
    }

    #[test]
    fn a_files_own_credentials_are_found_in_jsonc_too() {
        let settings = br#"{
            // Gemini CLI and Qwen Code allow comments, OpenCode trailing commas too.
            "env": {
                /* "OLD_API_KEY": "sk-old", */
                "OPENAI_API_KEY": "sk-live", // "GITHUB_TOKEN": "ghp_x"
                "LOG_LEVEL": "debug",
            },
        }"#;
        assert_eq!(
            json_config_credentials(settings).own,
            ["env.OPENAI_API_KEY"]
        );
    }

    #[test]
    fn names_say_credential_word_by_word() {
        for name in [
            "GITHUB_TOKEN",
            "GITHUB_PERSONAL_ACCESS_TOKEN",
            "OPENAI_API_KEY",
            "apiKey",
            "x-api-key",
            "--api-key",
            "--token",
            "--slacktoken",
            "clientSecret",
            "DB_PASSWORD",
            "Authorization",
            "X-Auth-Token",
            "--key",
            "AWS_SECRET_ACCESS_KEY",
            "credentials",
            "secretkey",
            "secretKEY",
            "authkey",
            "authcode",
            "oauth",
            "API_KEY_2",
            "--api-key-1",
            "authorization",
        ] {
            assert!(names_a_secret(name), "{name}");
        }
        for name in [
            "--max-tokens",
            "--tokens",
            "LOG_LEVEL",
            "--port",
            "keyboard",
            "KEY_FILE",
            "--author",
            "monkey",
            "PATH",
            "authors",
            "--tokenizer",
            "v2",
        ] {
            assert!(!names_a_secret(name), "{name}");
        }
        assert_eq!(words("myAPIKey_v2.Token"), ["my", "apikey", "v2", "token"]);
    }

    #[test]
    fn a_note_names_only_what_is_a_credential_by_its_name() {
        let mut s = McpServer::Stdio(McpStdio {
            name: "docs".into(),
            command: "npx".into(),
            args: vec!["--max-tokens".into(), "4096".into(), "--token=abc".into()],
            env: vec![
                NameValue {
                    name: "DOCS_API_KEY".into(),
                    value: "sk-live-1".into(),
                },
                NameValue {
                    name: "LOG_LEVEL".into(),
                    value: "debug".into(),
                },
                NameValue {
                    name: "GH_TOKEN".into(),
                    value: "${GH_TOKEN}".into(),
                },
            ],
            meta: None,
        });
        assert_eq!(literal_credentials(&s), ["env.DOCS_API_KEY", "args.2"]);
        let diagnostics = Diagnostics::new();
        carry(&mut s, false, Path::new("/h/.claude.json"), &diagnostics);
        let items = diagnostics.items();
        assert_eq!(items.len(), 1);
        assert_eq!(items[0].severity, crate::kit::report::Severity::Note);
        assert!(
            items[0].message.starts_with(
                "MCP server \"docs\" holds credentials written out in full (env.DOCS_API_KEY, args.2)"
            ),
            "{}",
            items[0].message
        );
        // Carried as it is: nothing blanked.
        let McpServer::Stdio(st) = &s else { panic!() };
        assert_eq!(st.env[0].value, "sk-live-1");
        // With --redact-secrets: blanked, and the note says what was blanked instead.
        let blanked = Diagnostics::new();
        carry(&mut s, true, Path::new("/h/.claude.json"), &blanked);
        let items = blanked.items();
        assert_eq!(items.len(), 1);
        assert!(
            items[0].message.starts_with(
                "MCP server \"docs\": blanked env.DOCS_API_KEY, env.LOG_LEVEL, args.2 (--redact-secrets;"
            ),
            "{}",
            items[0].message
        );
        let McpServer::Stdio(st) = &s else { panic!() };
        assert_eq!(st.env[0].value, "");
        assert_eq!(st.args, ["--max-tokens", "4096", "--token="]);
    }

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
                    value: "${X:-}".into(),
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
        for r in ["${A}", "$A_B", "${env:TOKEN}", "${input:tok}", "${X:-}"] {
            assert!(is_reference(r), "{r}");
        }
        // A default written out is the value wherever the variable is unset.
        for v in [
            "Bearer ${A}",
            "abc",
            "$",
            "${}",
            "ghp_x",
            "${TOKEN:-sk-live-123}",
        ] {
            assert!(!is_reference(v), "{v}");
        }
        assert!(holds_no_secret("Bearer ${DOCS_TOKEN}"));
        assert!(!holds_no_secret("Bearer sk-live-123"));
        assert!(!holds_no_secret("x-key ${A}"));
    }
}
