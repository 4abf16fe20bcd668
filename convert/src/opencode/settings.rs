//! Settings: the session option OpenCode keeps in its global config as the user's default
//! (spec §9): `model`, `"<providerID>/<modelID>"` ([`super::ACCEPTS`]). The rest of the config
//! (providers, permissions, agents, `small_model`, share, autoupdate, ...) configures OpenCode
//! itself and stays where it is; a model the user has set in any global config file is never
//! replaced.

use asp_format::state::{SettingValue, Settings};
use serde_json::{Value, json};

use super::config::Global;
use crate::kit::placement::Placement;
use crate::kit::settings_json::{File, Merged};

pub fn read(global: &Global) -> Option<Settings> {
    global.as_file()?;
    let mut out = Settings::new();
    if let Some(m) = global.merged.get("model").and_then(Value::as_str) {
        out.insert("model".into(), SettingValue::Select(m.to_owned()));
    }
    Some(out)
}

/// Sets the carried model in the file being written (in memory) unless a global config file
/// already sets another; whether the file changed.
pub fn merge(global: &Global, file: &mut File, settings: &Settings, out: &mut Merged) -> bool {
    let mut changed = false;
    for (id, value) in settings {
        let placed = match (id.as_str(), value) {
            ("model", SettingValue::Select(v)) => {
                match super::ACCEPTS.spelled(v, crate::kit::accepted::through(settings)) {
                    Err(why) => Placement::Refused(why),
                    Ok(v) => {
                        let v = v.as_str();
                        let set = file
                            .doc
                            .get("model")
                            .map(|m| (file.path.clone(), m.clone()))
                            .or_else(|| global.top_elsewhere(&file.path, "model"));
                        match set {
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
                        }
                    }
                }
            }
            (other, v) => Placement::Refused(format!(
                "OpenCode keeps no session option {other:?} (value {v}) where asp can write \
                 it; not written"
            )),
        };
        out.placed.push(placed);
    }
    changed
}
