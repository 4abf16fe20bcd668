//! Settings: the session option Copilot keeps in `settings.json` as the user's default
//! (spec §7-§8): `model`. Copilot's mode (`agent`/`plan`/`autopilot`) is not stored where a
//! writer needs it, and `allow_all` is a permission that is never carried as on.
//!
//! Everything else in `settings.json` (theme, banner, URLs, hooks, ...) configures Copilot
//! itself and stays where it is. A value the user has set is never replaced.

use asp_format::answer::ImportAnswer;
use asp_format::kind::StateKind;
use asp_format::state::{SettingValue, Settings};
use serde_json::{Map, Value, json};

use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::accepted::{Accepts, Provider, Runs};
use crate::kit::placement::Tally;

/// What Copilot takes as a model: its catalog holds Anthropic's, OpenAI's and Google's models
/// under their own bare ids (`claude-sonnet-4.5`, `gpt-5`, `gemini-3-pro-preview`), so neither
/// one provider nor `provider/model` describes it; `auto` lets Copilot choose. (A BYOK
/// provider takes any id, but a carried model must run without the user setting one up.)
pub const ACCEPTS: Accepts = Accepts {
    harness: "Copilot CLI",
    runs: Runs::Several(&[Provider::Anthropic, Provider::OpenAi, Provider::Google]),
    model_aliases: &["auto"],
    modes: &[],
};

use crate::kit::settings_json::{load_object as load, save_object};

pub fn read(layout: &Layout, ctx: &ReadContext<'_>) -> Option<Settings> {
    let path = layout.settings();
    let o = match load(&path) {
        Ok(Some(o)) => o,
        Ok(None) => return None,
        Err(why) => {
            ctx.diagnostics
                .lost(&path, None, format!("{why}; settings not read"));
            return None;
        }
    };
    crate::kit::settings_json::report_own_settings(
        ctx.diagnostics,
        &path,
        "Copilot CLI",
        &crate::kit::settings_json::own_keys(&o, &["model", "$schema"]),
    );
    let mut out = Settings::new();
    if let Some(m) = o.get("model").and_then(Value::as_str) {
        out.insert("model".into(), SettingValue::Select(m.to_owned()));
    }
    (!out.is_empty()).then_some(out)
}

pub fn write(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    settings: &Settings,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let mut tally = Tally::new(answer, StateKind::Settings, settings.len());
    let path = layout.settings();
    let (mut o, existed) = match load(&path) {
        Ok(Some(o)) => (o, true),
        Ok(None) => (Map::new(), false),
        Err(why) => {
            tally.refuse(format!(
                "{why}; asp does not edit a settings file it cannot read"
            ));
            tally.finish();
            return Ok(());
        }
    };
    let before = o.clone();
    for (id, value) in settings {
        match (id.as_str(), value) {
            ("model", SettingValue::Select(v)) => match ACCEPTS.model(v) {
                Ok(()) => match o.get("model") {
                    Some(old) if old.as_str() != Some(v) => tally.refuse(format!(
                        "{} already sets model = {old}, so that was kept; the carried {v} was \
                         not written",
                        path.display()
                    )),
                    _ => {
                        o.insert("model".into(), json!(v));
                        tally.taken();
                    }
                },
                Err(why) => tally.refuse(why),
            },
            (other, v) => tally.refuse(format!(
                "Copilot CLI keeps no session option {other:?} (value {v}) where asp can \
                 write it; not written"
            )),
        }
    }
    save_object(&path, existed, &before, o, ctx, &mut tally)?;
    tally.finish();
    Ok(())
}
