//! `~/.gemini/settings.json`: MCP servers (the tools kind) and session settings.
//!
//! MCP: `command` → stdio; `httpUrl` → streamable HTTP; `url` with `"type": "sse"` → SSE;
//! `url` with `"type": "http"` or **no type** → HTTP. The issue asked for `url` → SSE, but the
//! CLI (verified with 0.61.0, `spec/harnesses/gemini.md` §10) treats an untyped `url` as
//! streamable HTTP with an SSE fallback, so asp follows the CLI. Keys ACP's `McpServer` has no
//! field for (`cwd`, `trust`, `timeout`, `includeTools`, `excludeTools`, `description`, an
//! explicit `type`, OAuth settings, ...) are kept under `_meta.gemini`, so writing a server back
//! gives the same entry.
//!
//! Settings: Gemini's ACP agent has no config options; it offers *modes* (`default`,
//! `autoEdit`, `yolo`, `plan`) and *models* (`gemini-2.5-pro`, `auto`, ...). asp names them
//! with the option ids the other converters use: `mode` (from `general.defaultApprovalMode`,
//! whose `auto_edit` is ACP's `autoEdit`) and `model` (from `model.name`). Nothing else in
//! settings.json is a session option.
//!
//! Gemini reads settings.json with comments allowed; asp reads such a file too, but never
//! rewrites one (the comments would be lost): [`crate::kit::settings_json`], shared with Qwen
//! Code, as is the `mcpServers` mapping ([`crate::kit::mcp_json`], with Gemini's [`DIALECT`]).
//!
//! Writing a server never grants it more than the home already does: `trust: true` and
//! credential-sending `authProviderType`s are left out of what comes from a bundle
//! ([`withhold_grants`]) and answered as not taken.

use asp_format::state::{SettingValue, Settings};
use serde_json::{Value, json};

use crate::kit::accepted::{Accepts, Provider, Runs};
use crate::kit::mcp_json::{Dialect, NameRule, Shape, UrlRule};
use crate::kit::settings_json::{File, Merged};

/// Gemini's `mcpServers`: an untyped `url` is streamable HTTP.
pub const DIALECT: Dialect = Dialect {
    meta_key: "gemini",
    harness: "Gemini",
    shape: Shape::McpServers(UrlRule::TypedUrl, NameRule::Folded),
    bare_env_refs: true,
};

/// The instruction file names (`context.fileName`: a string or a list), default `GEMINI.md`.
pub fn context_file_names(file: &File) -> Vec<String> {
    match file.get("/context/fileName") {
        Some(Value::String(s)) if !s.is_empty() => vec![s.clone()],
        Some(Value::Array(a)) => {
            let names: Vec<String> = a
                .iter()
                .filter_map(Value::as_str)
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .collect();
            if names.is_empty() {
                vec!["GEMINI.md".to_owned()]
            } else {
                names
            }
        }
        _ => vec!["GEMINI.md".to_owned()],
    }
}

/// Session retention: `None` when disabled, else the maximum age (default 30 days).
pub fn retention_max_age(file: &File) -> Option<(String, i64)> {
    if file.get("/general/sessionRetention/enabled") == Some(&Value::Bool(false)) {
        return None;
    }
    let age = file
        .get("/general/sessionRetention/maxAge")
        .and_then(Value::as_str)
        .unwrap_or("30d");
    super::time::parse_duration(age).map(|ms| (age.to_owned(), ms))
}

/// The session settings: `model` and `mode`.
pub fn settings(file: &File) -> Settings {
    let mut out = Settings::new();
    let model = file
        .get("/model/name")
        .or_else(|| file.doc.get("model").filter(|m| m.is_string()));
    if let Some(Value::String(m)) = model {
        out.insert("model".into(), SettingValue::Select(m.clone()));
    }
    if let Some(Value::String(mode)) = file.get("/general/defaultApprovalMode") {
        let id = match mode.as_str() {
            "auto_edit" => "autoEdit",
            other => other,
        };
        out.insert("mode".into(), SettingValue::Select(id.to_owned()));
    }
    out
}

/// What Gemini CLI accepts: Google models and the CLI's own aliases, and the
/// `general.defaultApprovalMode` values its settings take (YOLO only from the command line).
pub const ACCEPTS: Accepts = Accepts {
    harness: "Gemini CLI",
    runs: Runs::One(Provider::Google),
    model_aliases: &["auto", "pro", "flash", "flash-lite"],
    modes: &["default", "auto_edit", "plan"],
};

/// The `general.defaultApprovalMode` for an ACP mode id, or why there is none. Gemini's own ids
/// (`default`, `autoEdit`, `plan`) and the settings spelling `auto_edit` are taken; Claude
/// Code's `acceptEdits` means the same as `autoEdit`. YOLO cannot be a default in settings.
pub fn approval_mode(mode: &str) -> Result<&'static str, String> {
    match mode {
        "default" => Ok("default"),
        "autoEdit" | "auto_edit" | "acceptEdits" => Ok("auto_edit"),
        "plan" => Ok("plan"),
        "yolo" | "bypassPermissions" => Err(format!(
            "mode {mode:?}: Gemini starts in YOLO mode only from the command line (--yolo), \
             never from settings"
        )),
        other => Err(format!(
            "mode {other:?} has no Gemini approval mode (Gemini has default, autoEdit and plan)"
        )),
    }
}

/// Sets carried option values in the settings file (in memory), each with what it came to.
/// Returns whether the file changed.
pub fn merge(file: &mut File, values: &asp_format::state::Settings, out: &mut Merged) -> bool {
    use crate::kit::placement::Placement;
    use asp_format::state::SettingValue;
    let mut changed = false;
    for (id, value) in values {
        let result = match (id.as_str(), value) {
            ("model", SettingValue::Select(m)) => ACCEPTS
                .model(m)
                .map(|()| file.set(&["model", "name"], json!(m))),
            ("mode", SettingValue::Select(mode)) => approval_mode(mode)
                .and_then(|m| ACCEPTS.mode(m).map(|()| m))
                .map(|m| file.set(&["general", "defaultApprovalMode"], json!(m))),
            (other, _) => Err(format!(
                "setting {other:?}: Gemini has no session option of that name (it has \
                 model and mode)"
            )),
        };
        out.placed.push(match result {
            Ok(c) => {
                changed |= c;
                Placement::New
            }
            Err(why) => Placement::Refused(why),
        });
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::state::McpServer;
    use serde_json::Value;

    fn server_from(name: &str, cfg: &serde_json::Map<String, Value>) -> Option<McpServer> {
        DIALECT.server_from(name, cfg)
    }

    fn server_to(s: &McpServer) -> Value {
        DIALECT.server_to(s)
    }

    #[test]
    fn transports_follow_the_cli_not_the_old_docs() {
        let http = server_from("a", json!({"url": "https://x"}).as_object().unwrap()).unwrap();
        assert!(matches!(http, McpServer::Http(_)));
        assert_eq!(http.meta().unwrap()["gemini"], json!({"urlField": "url"}));
        let sse = server_from(
            "b",
            json!({"url": "https://y", "type": "sse"})
                .as_object()
                .unwrap(),
        )
        .unwrap();
        assert!(matches!(sse, McpServer::Sse(_)));
        let old = server_from("c", json!({"httpUrl": "https://z"}).as_object().unwrap()).unwrap();
        assert!(matches!(old, McpServer::Http(_)));
        for (s, native) in [
            (http, json!({"url": "https://x"})),
            (sse, json!({"url": "https://y", "type": "sse"})),
            (old, json!({"httpUrl": "https://z"})),
        ] {
            assert_eq!(server_to(&s), native);
        }
    }

    #[test]
    fn foreign_servers_get_an_explicit_type() {
        let s: McpServer = serde_json::from_value(
            json!({"type": "http", "name": "docs", "url": "https://d", "headers": [{"name": "A", "value": "b"}]}),
        )
        .unwrap();
        assert_eq!(
            server_to(&s),
            json!({"url": "https://d", "type": "http", "headers": {"A": "b"}})
        );
    }

    #[test]
    fn modes_map_to_approval_modes() {
        assert_eq!(approval_mode("autoEdit"), Ok("auto_edit"));
        assert_eq!(approval_mode("acceptEdits"), Ok("auto_edit"));
        assert!(approval_mode("yolo").unwrap_err().contains("--yolo"));
        assert!(approval_mode("on-request").is_err());
        assert!(ACCEPTS.model("gemini-2.5-pro").is_ok());
        assert!(ACCEPTS.model("opus").is_err());
    }
}
