//! `Q/settings.json`: MCP servers (the tools kind) and session settings.
//!
//! The file is JSONC like Gemini's and read and merged the same way
//! ([`crate::kit::settings_json`]: a file with comments is never rewritten). `mcpServers` has
//! Gemini's keys ([`crate::kit::mcp_json`]) but not its meaning of `url`: Qwen Code 0.24 always
//! speaks SSE to a `url` and streamable HTTP to an `httpUrl` (`spec/harnesses/qwen.md` §9), so
//! an HTTP server is written as `httpUrl` ([`DIALECT`]).
//!
//! Settings (§10): `model` is `model.name`, `mode` is `tools.approvalMode` (`plan`, `default`,
//! `auto-edit`, `auto`, `yolo`; Qwen's ACP mode ids are the same strings). Nothing else in the
//! file is a session option, and credentials (`security.auth.*`, `env`, API keys) are never
//! read. A value the user already has is never replaced, and `yolo` (every tool call runs
//! without asking) is never written from a carried state.

use std::path::PathBuf;

use asp_format::state::{McpServer, SettingValue, Settings};
use serde_json::{Value, json};

use super::layout::Layout;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::accepted::{Accepts, Provider, Runs};
use crate::kit::mcp_json::{Dialect, NameRule, Shape, UrlRule};
use crate::kit::placement::Placement;
use crate::kit::settings_json::{File, Merged};

/// What Qwen Code 0.24 accepts: Qwen models, and its approval modes.
pub const ACCEPTS: Accepts = Accepts {
    harness: "Qwen Code",
    runs: Runs::One(Provider::Alibaba),
    model_aliases: &[],
    modes: &["plan", "default", "auto-edit", "auto", "yolo"],
};

/// Qwen's `mcpServers`: `url` is SSE, `httpUrl` streamable HTTP.
pub const DIALECT: Dialect = Dialect {
    meta_key: "qwen",
    harness: "Qwen Code",
    shape: Shape::McpServers(UrlRule::UrlIsSse, NameRule::Glob),
    bare_env_refs: true,
};

const MODEL: [&str; 2] = ["model", "name"];
const MODE: [&str; 2] = ["tools", "approvalMode"];

/// The global settings file.
pub fn path(layout: &Layout) -> PathBuf {
    layout.qwen.join("settings.json")
}

/// The MCP servers, one Qwen Code does not start (`mcp.allowed` names it by no pattern, or
/// `mcp.excluded` by one) saying so ([`Dialect::read_switchable`]).
pub fn read_servers(file: &File, ctx: &ReadContext<'_>) -> Option<Vec<McpServer>> {
    DIALECT.read_switchable(file, ctx, &|_| false)
}

/// Adds `servers` to the file (in memory); see [`Dialect::merge_switchable`].
pub fn merge_servers(
    file: &mut File,
    servers: &[McpServer],
    ctx: &WriteContext<'_>,
    out: &mut Merged,
) -> bool {
    DIALECT.merge_switchable(file, servers, ctx, out)
}

/// The session settings the file sets: `model` and `mode`.
pub fn read(file: &File) -> Settings {
    let mut out = Settings::new();
    for (id, at) in [("model", MODEL), ("mode", MODE)] {
        if let Some(Value::String(v)) = file.get(&format!("/{}", at.join("/")))
            && !v.is_empty()
        {
            out.insert(id.into(), SettingValue::Select(v.clone()));
        }
    }
    out
}

/// What the settings file holds that configures Qwen Code itself (providers, credentials'
/// place, the UI, ...), said as left out; `context.fileName` names the instructions file, and
/// `mcp` which servers run (the tools kind).
pub fn report_own(file: &File, ctx: &ReadContext<'_>) {
    crate::kit::settings_json::report_own_settings(
        ctx.diagnostics,
        &file.path,
        "Qwen Code",
        &crate::kit::settings_json::own_keys(
            &file.doc,
            &[
                "mcpServers",
                "mcp",
                "$schema",
                "$version",
                "model.name",
                "tools.approvalMode",
                "context.fileName",
            ],
        ),
    );
}

/// `tools.approvalMode` for a carried mode id, or why there is none. Qwen's own ids are taken
/// as they are; Gemini's `autoEdit`/`auto_edit` and Claude Code's `acceptEdits` mean
/// `auto-edit`. A mode that skips every confirmation (`yolo`, `bypassPermissions`) is never
/// written: anyone can write a carried state.
pub fn approval_mode(mode: &str) -> Result<&'static str, String> {
    let own = match mode {
        "autoEdit" | "auto_edit" | "acceptEdits" => "auto-edit",
        "yolo" | "bypassPermissions" => {
            return Err(format!(
                "mode {mode:?} runs every tool call without asking; asp never sets that from a \
                 carried state (start Qwen Code with --yolo, or set tools.approvalMode yourself)"
            ));
        }
        other => ACCEPTS
            .modes
            .iter()
            .find(|m| **m == other)
            .copied()
            .ok_or_else(|| ACCEPTS.mode(other).unwrap_err())?,
    };
    ACCEPTS.mode(own).map(|()| own)
}

/// Whether `at` can be set without replacing anything: every object on the way is one (or
/// absent). The user's value there, if any, is returned as `Err`.
fn user_value(file: &File, at: &[&str]) -> Result<Option<Value>, String> {
    for i in 1..at.len() {
        let p = format!("/{}", at[..i].join("/"));
        if let Some(v) = file.get(&p).filter(|v| !v.is_object()) {
            return Err(format!(
                "{} sets {} to {v}, not an object, so that was kept",
                file.path.display(),
                at[..i].join(".")
            ));
        }
    }
    Ok(file.get(&format!("/{}", at.join("/"))).cloned())
}

/// Sets carried option values in the settings file (in memory), each with what it came to:
/// only where the user has none (the same value already there is already there; another is
/// kept, and the carried one refused with the reason). Returns whether the file changed.
pub fn merge(file: &mut File, values: &Settings, out: &mut Merged) -> bool {
    let mut changed = false;
    for (id, value) in values {
        let wanted = match (id.as_str(), value) {
            ("model", SettingValue::Select(m)) => ACCEPTS.model(m).map(|()| (MODEL, m.as_str())),
            ("mode", SettingValue::Select(m)) => approval_mode(m).map(|q| (MODE, q)),
            (other, _) => Err(format!(
                "setting {other:?}: Qwen Code has no session option of that name (it has \
                 model and mode)"
            )),
        };
        let placed = wanted.and_then(|(at, v)| match user_value(file, &at)? {
            None => {
                changed |= file.set(&at, json!(v));
                Ok(Placement::New)
            }
            Some(Value::String(s)) if s == v => Ok(Placement::AlreadyThere),
            Some(other) => Err(format!(
                "{} already sets {} to {other}, so that value was kept; the carried {v:?} was \
                 not written",
                file.path.display(),
                at.join(".")
            )),
        });
        out.placed.push(placed.unwrap_or_else(Placement::Refused));
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::state::McpServer;

    #[test]
    fn modes_map_to_approval_modes() {
        assert_eq!(approval_mode("auto-edit"), Ok("auto-edit"));
        assert_eq!(approval_mode("autoEdit"), Ok("auto-edit"));
        assert_eq!(approval_mode("acceptEdits"), Ok("auto-edit"));
        assert_eq!(approval_mode("auto"), Ok("auto"));
        assert_eq!(approval_mode("plan"), Ok("plan"));
        assert!(approval_mode("yolo").unwrap_err().contains("--yolo"));
        assert!(approval_mode("bypassPermissions").is_err());
        assert!(
            approval_mode("on-request")
                .unwrap_err()
                .contains("Qwen Code")
        );
    }

    #[test]
    fn url_is_sse_and_http_is_http_url() {
        let cfg = |v: Value| v.as_object().unwrap().clone();
        let sse = DIALECT
            .server_from("a", &cfg(json!({"url": "https://x", "type": "http"})))
            .unwrap();
        assert!(matches!(sse, McpServer::Sse(_)), "Qwen ignores `type`");
        let http = DIALECT
            .server_from("b", &cfg(json!({"httpUrl": "https://y", "timeout": 5})))
            .unwrap();
        assert!(matches!(http, McpServer::Http(_)));
        for (s, native) in [
            (&sse, json!({"url": "https://x", "type": "http"})),
            (&http, json!({"httpUrl": "https://y", "timeout": 5})),
        ] {
            assert_eq!(DIALECT.server_to(s), native, "written back as it was");
        }
        let foreign: McpServer = serde_json::from_value(
            json!({"type": "http", "name": "d", "url": "https://d", "headers": []}),
        )
        .unwrap();
        assert_eq!(DIALECT.server_to(&foreign), json!({"httpUrl": "https://d"}));
        let foreign: McpServer = serde_json::from_value(
            json!({"type": "sse", "name": "e", "url": "https://e", "headers": []}),
        )
        .unwrap();
        assert_eq!(DIALECT.server_to(&foreign), json!({"url": "https://e"}));
    }
}
