//! Settings: the session option OpenCode keeps in its global config as the user's default
//! (spec §9): `model`, `"<providerID>/<modelID>"` ([`super::ACCEPTS`]). The rest of the config
//! (providers, permissions, agents, `small_model`, share, autoupdate, ...) configures OpenCode
//! itself: not carried, and reported file by file, naming the settings (`mcp` is the tools
//! kind's, `$schema` only names the format). A model the user has set in any global config file
//! is never replaced.

use asp_format::state::{SettingValue, Settings};
use serde_json::{Value, json};

use super::config::Global;
use crate::harness::ReadContext;
use crate::kit::accepted::{MODEL_PROVIDER, provider_carried, through};
use crate::kit::placement::Placement;
use crate::kit::settings_json::{File, Merged};

/// Top-level keys of a global config file that are carried: the model here, the MCP servers
/// as tools, and the schema reference, which only names the format.
const CARRIED: [&str; 3] = ["model", "mcp", "$schema"];

pub fn read(global: &Global, ctx: &ReadContext<'_>) -> Option<Settings> {
    global.as_file()?;
    for f in &global.files {
        crate::kit::settings_json::report_own_settings(
            ctx.diagnostics,
            &f.path,
            "OpenCode",
            &crate::kit::settings_json::own_keys(&f.doc, &CARRIED),
        );
    }
    let mut out = Settings::new();
    if let Some(m) = global.merged.get("model").and_then(Value::as_str) {
        out.insert("model".into(), SettingValue::Select(m.to_owned()));
    }
    Some(out)
}

/// Sets the carried model in the file being written (in memory) unless a global config file
/// already sets another; whether the file changed. Codex's `model_provider` is taken with the model when it went into the model written
/// (`openai/gpt-5.5`), and placed as the model was; otherwise it is refused like any option
/// OpenCode does not keep.
pub fn merge(global: &Global, file: &mut File, settings: &Settings, out: &mut Merged) -> bool {
    let mut changed = false;
    // The model as written (or found there already), and how it was placed.
    let mut written_model: Option<(String, Placement)> = None;
    for (id, value) in settings {
        if id == MODEL_PROVIDER && matches!(value, SettingValue::Select(_)) {
            // Placed after the model: taken when it went into the model written.
            continue;
        }
        let placed = match (id.as_str(), value) {
            ("model", SettingValue::Select(v)) => {
                match super::ACCEPTS.spelled(v, through(settings)) {
                    Err(why) => Placement::Refused(why),
                    Ok(v) => {
                        let v = v.as_str();
                        let set = file
                            .doc
                            .get("model")
                            .map(|m| (file.path.clone(), m.clone()))
                            .or_else(|| global.top_elsewhere(&file.path, "model"));
                        let placed = match set {
                            Some((_, old)) if old.as_str() == Some(v) => Placement::AlreadyThere,
                            Some((from, old)) => Placement::Refused(format!(
                                "{} already sets model = {old}, so that was kept; the carried {v} \
                             was not written",
                                from.display()
                            )),
                            None => {
                                changed |= file.set(&["model"], json!(v));
                                Placement::New
                            }
                        };
                        if placed.is_placed() {
                            written_model = Some((v.to_owned(), placed.clone()));
                        }
                        placed
                    }
                }
            }
            (other, v) => not_kept(other, v),
        };
        out.placed.push(placed);
    }
    if let Some(v @ SettingValue::Select(_)) = settings.get(MODEL_PROVIDER) {
        out.placed.push(match written_model {
            Some((model, placed)) if provider_carried(settings, Some(&model)) => placed,
            _ => not_kept(MODEL_PROVIDER, v),
        });
    }
    changed
}

fn not_kept(id: &str, value: &SettingValue) -> Placement {
    Placement::Refused(format!(
        "OpenCode keeps no session option {id:?} (value {value}) where asp can write it; not \
         written"
    ))
}
