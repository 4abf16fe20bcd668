//! Settings: `settings.json` keys that are session config options, by the option ids Claude
//! Code's ACP adapter (claude-agent-acp) gives them.
//!
//! | option id | category | `settings.json` |
//! |---|---|---|
//! | `model` | `model` | `model` |
//! | `mode` | `mode` | `permissions.defaultMode` |
//! | `effort` (also taken as Codex's `reasoning_effort`, or `thought_level`) | `thought_level` | `effortLevel` (a `modelSettings["<model>"].effortLevel` wins for that model) |
//!
//! Everything else in `settings.json` (permission rules, hooks, env, ...) configures the
//! harness, not a session, and stays where it is.

use asp_format::answer::ImportAnswer;
use asp_format::kind::StateKind;
use asp_format::state::{SettingValue, Settings};
use serde_json::{Map, Value, json};

use super::jsonfile;
use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::accepted::{Accepts, Provider, Runs};
use crate::kit::placement::Tally;

/// Permission modes Claude Code knows, by the adapter's lower-case aliases.
fn canonical_mode(mode: &str) -> Option<&'static str> {
    Some(match mode.trim().to_ascii_lowercase().as_str() {
        "default" | "manual" => "default",
        // Gemini's `auto_edit` (ACP `autoEdit`) is the same: file edits approved, other tools asked.
        "acceptedits" | "autoedit" | "auto_edit" => "acceptEdits",
        "plan" => "plan",
        "auto" => "auto",
        "dontask" => "dontAsk",
        "bypasspermissions" | "bypass" => "bypassPermissions",
        _ => return None,
    })
}

/// What Claude Code accepts (2.1.83, the version the spec pins): Anthropic models and the
/// `permissions.defaultMode` values its settings validation takes. `auto` is a mode of the ACP
/// adapter's newer builds, but 2.1.83 answers every `session/load` with "Invalid
/// permissions.defaultMode: auto" when settings.json holds it, so it is never written.
pub const ACCEPTS: Accepts = Accepts {
    harness: "Claude Code",
    runs: Runs::One(Provider::Anthropic),
    model_aliases: &["default"],
    modes: &[
        "default",
        "acceptEdits",
        "plan",
        "dontAsk",
        "bypassPermissions",
    ],
};

const EFFORTS: &[&str] = &["low", "medium", "high", "xhigh", "max"];

fn settings_path(layout: &Layout) -> std::path::PathBuf {
    layout.config.join("settings.json")
}

/// Reads the config option values. `None` when `settings.json` cannot be read (reported).
pub fn read(layout: &Layout, ctx: &ReadContext<'_>) -> Option<Settings> {
    let path = settings_path(layout);
    let file = match jsonfile::read(&path) {
        Ok(f) => f,
        Err(e) => {
            ctx.diagnostics
                .lost(&path, None, format!("settings not read: {e}"));
            return None;
        }
    };
    let o = &file.object;
    let mut out = Settings::new();
    let model = o.get("model").and_then(Value::as_str);
    if let Some(m) = model {
        out.insert("model".into(), SettingValue::Select(m.to_owned()));
    }
    if let Some(m) = o
        .get("permissions")
        .and_then(|p| p.get("defaultMode"))
        .and_then(Value::as_str)
    {
        let canonical = canonical_mode(m).map_or_else(|| m.to_owned(), str::to_owned);
        out.insert("mode".into(), SettingValue::Select(canonical));
    }
    let per_model =
        model.and_then(|m| o.get("modelSettings")?.get(m)?.get("effortLevel")?.as_str());
    if let Some(e) = per_model.or_else(|| o.get("effortLevel").and_then(Value::as_str)) {
        out.insert("effort".into(), SettingValue::Select(e.to_owned()));
    }
    let others: Vec<&str> = o
        .keys()
        .map(String::as_str)
        .filter(|k| !matches!(*k, "model" | "effortLevel" | "$schema"))
        .filter(|k| {
            *k != "permissions"
                || o.get("permissions")
                    .and_then(Value::as_object)
                    .is_some_and(|p| p.keys().any(|pk| pk != "defaultMode"))
        })
        .collect();
    let others: Vec<String> = others.into_iter().map(str::to_owned).collect();
    crate::kit::settings_json::report_own_settings(ctx.diagnostics, &path, "Claude Code", &others);
    Some(out)
}

/// Permission modes Claude Code treats as skipping its permission checks: a carried state may
/// never switch them on.
fn skips_permissions(canonical: &str) -> bool {
    canonical == "bypassPermissions"
}

/// Merges config option values into `settings.json`, keeping every other key. A value is set
/// only where the user has none: a value already there is kept (and the carried one reported),
/// and a permission mode that skips permission checks is never written.
pub fn write(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    settings: &Settings,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let mut tally = Tally::new(answer, StateKind::Settings, settings.len());
    let path = settings_path(layout);
    let mut file = match jsonfile::read(&path) {
        Ok(f) => f,
        Err(e) => {
            tally.refuse(format!("settings not written: {e}"));
            tally.finish();
            return Ok(());
        }
    };
    let before = file.object.clone();
    // The user's value of a key, if any; `Ok` = set it (or it is already this value).
    let kept = |key: &str, existing: Option<&Value>, carried: &str| -> Result<bool, String> {
        match existing {
            None => Ok(true),
            Some(v) if v.as_str() == Some(carried) => Ok(false),
            Some(v) => Err(format!(
                "{} already sets {key} to {v}, so that value was kept; the carried {carried:?} was not written",
                path.display()
            )),
        }
    };
    for (id, value) in settings {
        let v = match value {
            SettingValue::Select(s) => s.as_str(),
            SettingValue::Boolean(b) => {
                tally.refuse(format!(
                    "Claude Code has no on/off session option {id:?} (value {b}); not written"
                ));
                continue;
            }
        };
        match id.as_str() {
            "model" if ACCEPTS.model(v).is_err() => {
                tally.refuse(ACCEPTS.model(v).unwrap_err());
            }
            "model" => match kept("model", file.object.get("model"), v) {
                Ok(set) => {
                    if set {
                        file.object.insert("model".into(), json!(v));
                    }
                    tally.taken();
                }
                Err(why) => tally.refuse(why),
            },
            "mode" => match canonical_mode(v) {
                Some(m) if skips_permissions(m) => tally.refuse(format!(
                        "the carried permission mode {v:?} lets Claude Code run every tool without asking; a carried state never turns that on, so it was not written"
                    ),
                ),
                Some(m) if ACCEPTS.mode(m).is_err() => {
                    tally.refuse(ACCEPTS.mode(m).unwrap_err());
                }
                Some(m) => {
                    let perms = file
                        .object
                        .entry("permissions")
                        .or_insert_with(|| Value::Object(Map::new()));
                    match perms.as_object_mut() {
                        // The user's spelling of the same mode is the same mode.
                        Some(p)
                            if p.get("defaultMode")
                                .and_then(Value::as_str)
                                .and_then(canonical_mode)
                                == Some(m) =>
                        {
                            tally.taken();
                        }
                        Some(p) => match kept("permissions.defaultMode", p.get("defaultMode"), m) {
                            Ok(set) => {
                                if set {
                                    p.insert("defaultMode".into(), json!(m));
                                }
                                tally.taken();
                            }
                            Err(why) => tally.refuse(why),
                        },
                        None => tally.refuse("`permissions` in settings.json is not an object; the mode was not written",
                        ),
                    }
                }
                None => tally.refuse(format!("Claude Code has no permission mode {v:?}; the mode was not written"),
                ),
            },
            // Codex's `reasoning_effort` and the ACP category `thought_level` are the same
            // setting (as the Codex writer takes `effort`).
            "effort" | "reasoning_effort" | "thought_level"
                if v == "default" || EFFORTS.contains(&v) =>
            {
                // A per-model level for the model in use wins over the top-level one.
                let model = file.object.get("model").and_then(Value::as_str);
                let (key, existing) = match model.and_then(|m| {
                    file.object
                        .get("modelSettings")?
                        .get(m)?
                        .get("effortLevel")
                }) {
                    Some(e) => (
                        format!("modelSettings[{:?}].effortLevel", model.unwrap_or("")),
                        Some(e),
                    ),
                    None => ("effortLevel".to_owned(), file.object.get("effortLevel")),
                };
                match (existing, v) {
                    // `default` is "no level set": nothing to do when none is.
                    (None, "default") => tally.taken(),
                    (Some(e), "default") => tally.refuse(format!(
                            "{} already sets {key} to {e}, so that value was kept; the carried effort \"default\" (no level) was not applied",
                            path.display()
                        ),
                    ),
                    _ => match kept(&key, existing, v) {
                        Ok(set) => {
                            if set {
                                file.object.insert("effortLevel".into(), json!(v));
                            }
                            tally.taken();
                        }
                        Err(why) => tally.refuse(why),
                    },
                }
            }
            "effort" | "reasoning_effort" | "thought_level" => tally.refuse(format!("Claude Code has no effort level {v:?}; not written"),
            ),
            other => tally.refuse(format!("Claude Code has no session option {other:?} (value {v:?}); not written"),
            ),
        }
    }
    if file.object != before {
        if file.existed {
            tally.wrote_into_json(&path, &before, &file.object, ctx.writer.is_dry_run());
        }
        jsonfile::write(ctx.writer, &path, &file)?;
    }
    tally.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_matched_like_the_adapter_does() {
        assert_eq!(canonical_mode("AcceptEdits"), Some("acceptEdits"));
        assert_eq!(canonical_mode("bypass"), Some("bypassPermissions"));
        assert_eq!(canonical_mode("manual"), Some("default"));
        assert_eq!(canonical_mode("yolo"), None);
    }

    #[test]
    fn only_bypass_skips_permission_checks() {
        for m in ["bypass", "BYPASSPERMISSIONS", "bypassPermissions"] {
            assert!(skips_permissions(canonical_mode(m).unwrap()), "{m}");
        }
        for m in ["default", "acceptEdits", "plan", "auto", "dontAsk"] {
            assert!(!skips_permissions(canonical_mode(m).unwrap()), "{m}");
        }
    }
}
