//! Session settings as ACP config options, with the ids Codex's ACP adapter uses.
//!
//! `codex-acp` (zed-industries) advertises three session config options: `mode` (category
//! `mode`; the approval presets `read-only`, `auto`, `full-access`), `model` (category `model`)
//! and `reasoning_effort` (category `thought_level`). A preset is an approval policy paired with
//! a sandbox: `read-only` = `on-request` + `read-only`, `auto` = `on-request` +
//! `workspace-write`, `full-access` = `never` + `danger-full-access`. Codex also runs pairs that
//! are no preset (sample A: `on-request` + `danger-full-access`); such a mode is spelled
//! `<approval_policy>/<sandbox_mode>` so it can be written back exactly.

use serde_json::Value;

use crate::kit::accepted::{Accepts, Provider, Runs};
use crate::kit::acp::select_option;

/// Option ids.
pub const MODE: &str = "mode";
pub const MODEL: &str = "model";
pub const EFFORT: &str = "reasoning_effort";

/// Codex's approval presets: (mode id, approval policy, sandbox mode).
const PRESETS: &[(&str, &str, &str)] = &[
    ("read-only", "on-request", "read-only"),
    ("auto", "on-request", "workspace-write"),
    ("full-access", "never", "danger-full-access"),
];

pub const APPROVALS: &[&str] = &["untrusted", "on-failure", "on-request", "never"];
pub const SANDBOXES: &[&str] = &["read-only", "workspace-write", "danger-full-access"];
pub const EFFORTS: &[&str] = &["none", "minimal", "low", "medium", "high", "xhigh"];

/// The mode id of an approval policy and a sandbox mode.
pub fn mode_id(approval: &str, sandbox: &str) -> String {
    PRESETS
        .iter()
        .find(|(_, a, s)| *a == approval && *s == sandbox)
        .map(|(id, ..)| (*id).to_owned())
        .unwrap_or_else(|| format!("{approval}/{sandbox}"))
}

/// The approval policy and sandbox mode of a mode id, if it is one Codex can run.
pub fn parse_mode(id: &str) -> Option<(&'static str, &'static str)> {
    if let Some((_, a, s)) = PRESETS.iter().find(|(p, ..)| *p == id) {
        return Some((a, s));
    }
    let (a, s) = id.split_once('/')?;
    let a = APPROVALS.iter().find(|x| **x == a)?;
    let s = SANDBOXES.iter().find(|x| **x == s)?;
    Some((a, s))
}

/// What Codex accepts: OpenAI models (it is an OpenAI Responses client; `opus` or
/// `gemini-2.5-pro` would make every resumed turn fail), and its approval presets or an
/// approval/sandbox pair of its own vocabulary.
pub const ACCEPTS: Accepts = Accepts {
    harness: "Codex",
    runs: Runs::One(Provider::OpenAi),
    model_aliases: &[],
    modes: &[
        "read-only",
        "auto",
        "full-access",
        "untrusted/read-only",
        "untrusted/workspace-write",
        "untrusted/danger-full-access",
        "on-failure/read-only",
        "on-failure/workspace-write",
        "on-failure/danger-full-access",
        "on-request/read-only",
        "on-request/workspace-write",
        "on-request/danger-full-access",
        "never/read-only",
        "never/workspace-write",
        "never/danger-full-access",
    ],
};

/// Whether a model name is one Codex can run ([`ACCEPTS`]).
pub fn is_codex_model(model: &str) -> bool {
    ACCEPTS.model(model).is_ok()
}

/// The settings one `turn_context` records.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnSettings {
    pub model: Option<String>,
    pub effort: Option<String>,
    pub approval: Option<String>,
    pub sandbox: Option<String>,
}

impl TurnSettings {
    /// Reads a `turn_context` payload of any era: `effort` or the collaboration mode's
    /// `reasoning_effort`; `sandbox_policy.type`, or a permission profile `disabled` (0.16x+
    /// writes no sandbox policy) as `danger-full-access`.
    pub fn of_turn_context(tc: &Value) -> TurnSettings {
        let s = |p: &str| tc.pointer(p).and_then(Value::as_str).map(str::to_owned);
        let approval = match tc.get("approval_policy") {
            Some(Value::String(a)) => Some(a.clone()),
            // Newer builds have structured policies (`{"granular": {...}}`): name them by key.
            Some(Value::Object(o)) => o.keys().next().cloned(),
            _ => None,
        };
        let sandbox = s("/sandbox_policy/type").or_else(|| {
            s("/permission_profile/type").map(|t| match t.as_str() {
                "disabled" => "danger-full-access".to_owned(),
                _ => t,
            })
        });
        TurnSettings {
            model: s("/model").or_else(|| s("/collaboration_mode/settings/model")),
            effort: s("/effort").or_else(|| s("/collaboration_mode/settings/reasoning_effort")),
            approval,
            sandbox,
        }
    }

    pub fn mode(&self) -> Option<String> {
        Some(mode_id(self.approval.as_deref()?, self.sandbox.as_deref()?))
    }

    /// The full set of config options, for `config_option_update`.
    pub fn config_options(&self) -> Vec<Value> {
        let mut out = Vec::new();
        if let Some(m) = self.mode() {
            out.push(select_option(MODE, "Approval Preset", Some("mode"), &m));
        }
        if let Some(m) = &self.model {
            out.push(select_option(MODEL, "Model", Some("model"), m));
        }
        if let Some(e) = &self.effort {
            out.push(select_option(
                EFFORT,
                "Reasoning Effort",
                Some("thought_level"),
                e,
            ));
        }
        out
    }
}

/// Merges carried option values into the configuration, each one or the reason it was not;
/// what is added to a `config.toml` that was there is said (`dry_run`: it would be).
pub fn merge(
    c: &mut super::config::Config,
    settings: &asp_format::state::Settings,
    answer: &mut asp_format::answer::ImportAnswer,
    dry_run: bool,
) {
    use crate::kit::placement::{Placement, Tally};
    let mut tally = Tally::new(answer, asp_format::StateKind::Settings, settings.len());
    let before: std::collections::BTreeSet<String> =
        c.doc.iter().map(|(k, _)| k.to_owned()).collect();
    for (id, value) in settings {
        tally.place(match c.merge_setting(id, value) {
            Ok(()) => Placement::New,
            Err(reason) => Placement::Refused(reason),
        });
    }
    if c.existed() {
        // Options are set only where absent, as top-level keys: the new keys are what changed.
        let added: Vec<String> = c
            .doc
            .iter()
            .filter(|(k, _)| !before.contains(*k))
            .map(|(k, v)| format!("{k} = {}", v.to_string().trim()))
            .collect();
        tally.wrote_into(&c.path, &added, dry_run);
    }
    tally.finish();
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_is_added_to_a_config_toml_that_was_there_is_said() {
        use asp_format::state::SettingValue;
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("config.toml"), "model = \"gpt-5.4\"\n").unwrap();
        let mut c = super::super::config::Config::load(dir.path()).unwrap();
        let settings: asp_format::state::Settings = [
            (MODEL.to_owned(), SettingValue::Select("gpt-5.5".into())),
            (EFFORT.to_owned(), SettingValue::Select("high".into())),
        ]
        .into();
        let mut answer = asp_format::answer::ImportAnswer::default();
        merge(&mut c, &settings, &mut answer, false);
        assert_eq!(answer.not_taken.len(), 1, "the model there is kept");
        assert_eq!(answer.written_into.len(), 1);
        assert_eq!(
            answer.written_into[0].what,
            format!(
                "added to {}, a file that was there: model_reasoning_effort = \"high\"",
                dir.path().join("config.toml").display()
            )
        );
        // Into a config.toml that was not there: nothing of the user's changed.
        let empty = tempfile::tempdir().unwrap();
        let mut c = super::super::config::Config::load(empty.path()).unwrap();
        let mut answer = asp_format::answer::ImportAnswer::default();
        merge(&mut c, &settings, &mut answer, false);
        assert!(answer.written_into.is_empty() && answer.not_taken.is_empty());
    }

    #[test]
    fn presets_and_other_pairs_have_reversible_mode_ids() {
        assert_eq!(mode_id("never", "danger-full-access"), "full-access");
        assert_eq!(mode_id("on-request", "workspace-write"), "auto");
        assert_eq!(
            mode_id("on-request", "danger-full-access"),
            "on-request/danger-full-access"
        );
        assert_eq!(parse_mode("auto"), Some(("on-request", "workspace-write")));
        assert_eq!(
            parse_mode("on-request/danger-full-access"),
            Some(("on-request", "danger-full-access"))
        );
        assert_eq!(parse_mode("acceptEdits"), None);
        assert_eq!(parse_mode("sometimes/workspace-write"), None);
    }

    #[test]
    fn turn_contexts_of_every_era_give_settings() {
        let legacy = json!({"approval_policy": "on-request", "sandbox_policy": {"type": "danger-full-access"},
            "model": "gpt-5.5", "collaboration_mode": {"settings": {"reasoning_effort": "medium"}}});
        let s = TurnSettings::of_turn_context(&legacy);
        assert_eq!(s.mode().as_deref(), Some("on-request/danger-full-access"));
        assert_eq!(s.effort.as_deref(), Some("medium"));
        let paginated = json!({"approval_policy": "never", "permission_profile": {"type": "disabled"},
            "model": "gpt-5.4", "effort": "high"});
        let s = TurnSettings::of_turn_context(&paginated);
        assert_eq!(s.mode().as_deref(), Some("full-access"));
        assert_eq!(s.config_options().len(), 3);
        assert!(is_codex_model("gpt-5.5") && !is_codex_model("opus"));
    }
}
