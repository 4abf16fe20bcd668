//! Settings: the session options pi-acp offers, kept in `A/settings.json`.
//!
//! | option id | `settings.json` | values |
//! |---|---|---|
//! | `model` | `defaultProvider` + `defaultModel` | `provider/modelId` (pi-acp's model ids) |
//! | `mode` | `defaultThinkingLevel` | `off`, `minimal`, `low`, `medium`, `high`, `xhigh` |
//! | `reasoning_effort`, `effort` (written from other harnesses) | `defaultThinkingLevel` | those of the levels above |
//!
//! Everything else (theme, compaction, retry, packages, ...) configures Pi itself and stays
//! where it is. A value the user has set is never replaced.

use asp_format::answer::ImportAnswer;
use asp_format::kind::StateKind;
use asp_format::state::{SettingValue, Settings};
use serde_json::{Map, Value, json};

use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::accepted::{Accepts, MODEL_PROVIDER, Runs, provider_carried, through};
use crate::kit::placement::Tally;

pub const LEVELS: &[&str] = &["off", "minimal", "low", "medium", "high", "xhigh"];

/// What Pi takes as session settings: a model as `provider/modelId` (pi-acp's model ids; the
/// provider may be one of pi-ai's or one the user defined in `models.json`, so none is
/// refused by name), and a thinking level as its mode.
pub const ACCEPTS: Accepts = Accepts {
    harness: "Pi",
    runs: Runs::ProviderSlashModel,
    model_aliases: &[],
    modes: LEVELS,
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
        "Pi",
        &crate::kit::settings_json::own_keys(
            &o,
            &[
                "defaultProvider",
                "defaultModel",
                "defaultThinkingLevel",
                "$schema",
            ],
        ),
    );
    let s = |k: &str| o.get(k).and_then(Value::as_str);
    let mut out = Settings::new();
    if let (Some(p), Some(m)) = (s("defaultProvider"), s("defaultModel")) {
        out.insert("model".into(), SettingValue::Select(format!("{p}/{m}")));
    }
    if let Some(l) = s("defaultThinkingLevel") {
        out.insert("mode".into(), SettingValue::Select(l.to_owned()));
    }
    Some(out)
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
    let set = |o: &mut Map<String, Value>, pairs: &[(&str, &str)], tally: &mut Tally<'_>| {
        let clash: Vec<String> = pairs
            .iter()
            .filter_map(|(k, v)| match o.get(*k) {
                Some(old) if old.as_str() != Some(v) => Some(format!("{k} = {old}")),
                _ => None,
            })
            .collect();
        if clash.is_empty() {
            for (k, v) in pairs {
                o.insert((*k).to_owned(), json!(v));
            }
            tally.taken();
            true
        } else {
            tally.refuse(format!(
                "{} already sets {}, so that was kept; the carried {} was not written",
                path.display(),
                clash.join(", "),
                pairs.iter().map(|(_, v)| *v).collect::<Vec<_>>().join("/")
            ));
            false
        }
    };
    // The model as written (or found there already), which may carry Codex's model_provider.
    let mut written_model = None;
    for (id, value) in settings {
        if id == MODEL_PROVIDER && matches!(value, SettingValue::Select(_)) {
            // Said after the model: taken when it went into the model written.
            continue;
        }
        let SettingValue::Select(v) = value else {
            tally.refuse(format!(
                "Pi has no on/off session option {id:?}; not written"
            ));
            continue;
        };
        match id.as_str() {
            "model" => match ACCEPTS.spelled(v, through(settings)) {
                Ok(v) => {
                    // Pi's accepted models are always `provider/modelId`.
                    let (p, m) = v.split_once('/').unwrap_or((&v, ""));
                    if set(
                        &mut o,
                        &[("defaultProvider", p), ("defaultModel", m)],
                        &mut tally,
                    ) {
                        written_model = Some(v.clone());
                    }
                }
                Err(why) => tally.refuse(why),
            },
            "mode" => match ACCEPTS.mode(v) {
                Ok(()) => {
                    set(&mut o, &[("defaultThinkingLevel", v)], &mut tally);
                }
                Err(why) => tally.refuse(why),
            },
            // Another harness's reasoning effort (Codex's `reasoning_effort`, Claude Code's
            // `effort`) is what Pi calls its thinking level, when Pi has that level.
            "reasoning_effort" | "effort" if LEVELS.contains(&v.as_str()) => {
                set(&mut o, &[("defaultThinkingLevel", v)], &mut tally);
            }
            "reasoning_effort" | "effort" => tally.refuse(format!(
                "Pi has no thinking level {v:?} for the carried {id} ({}); not written",
                LEVELS.join(", ")
            )),
            other => tally.refuse(format!(
                "Pi has no session option {other:?} (value {v:?}); not written"
            )),
        }
    }
    // Codex's model_provider: taken with the model when it went into the model written
    // (`openai/gpt-5.5`), else not written.
    if let Some(v) = through(settings)
        && !provider_carried(settings, written_model.as_deref())
    {
        tally.refuse(format!(
            "Pi has no session option {MODEL_PROVIDER:?} (value {v:?}); not written"
        ));
    }
    save_object(&path, existed, &before, o, ctx, &mut tally)?;
    tally.finish();
    Ok(())
}
