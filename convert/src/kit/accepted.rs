//! Which session settings a harness accepts: one rule for every pair of harnesses.
//!
//! A setting is written into a harness only with a value that harness accepts: a model of its
//! own provider (or one of its own aliases), a mode from its own list for the version the spec
//! names. A Claude Code that finds `"model": "gpt-5.3-codex"` sends every prompt to Anthropic
//! asking for a GPT model; one that finds `"permissions": {"defaultMode": "auto"}` (2.1.83)
//! refuses to load any session. Everything else is not taken, with a reason that says why
//! ("gpt-5.3-codex is an OpenAI model; Claude Code runs Anthropic models").
//!
//! Each converter declares its table ([`Accepts`]) and asks it before writing a model or a
//! mode; the rule itself is here, so it is the same for every pair.

use std::fmt;

/// Whether a session mode, as any harness spells it (an ACP mode id), lets the agent act
/// without asking: file edits accepted (Claude Code's `acceptEdits`, Gemini CLI's and Qwen
/// Code's `autoEdit`), every tool run (`yolo`, `bypassPermissions`, Claude Code's classifier
/// `auto`), or Codex writing without asking (`auto`: workspace-write; `full-access`; a policy and
/// sandbox pair that is not read-only, or whose policy is `never`). `asp restore --no-grants`
/// leaves such a mode out, as it leaves out the folder trust a backup holds: on another machine
/// a person may not want it before they look (new-user trial helper-136, 4).
pub fn approves_unasked(mode: &str) -> bool {
    if let Some((approval, sandbox)) = mode.split_once('/') {
        return approval == "never" || sandbox != "read-only";
    }
    let plain: String = mode
        .trim()
        .chars()
        .filter(|c| !matches!(c, '-' | '_'))
        .flat_map(char::to_lowercase)
        .collect();
    matches!(
        plain.as_str(),
        "acceptedits"
            | "autoedit"
            | "yolo"
            | "bypasspermissions"
            | "bypass"
            | "auto"
            | "fullaccess"
    )
}

/// Who serves a model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Provider {
    Anthropic,
    OpenAi,
    Google,
    /// Alibaba's Qwen models (Qwen Code).
    Alibaba,
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Provider::Anthropic => "Anthropic",
            Provider::OpenAi => "OpenAI",
            Provider::Google => "Google",
            Provider::Alibaba => "Alibaba",
        })
    }
}

impl Provider {
    /// The provider a model id names by its own spelling (`claude-…`, `gpt-…`, `gemini-…`, and
    /// the aliases that stand for one provider only: `opus`, `sonnet`, `haiku`); `None` for an
    /// id that names none (`auto`, `default`).
    pub fn of(model: &str) -> Option<Provider> {
        let m = model.trim().to_ascii_lowercase();
        // `provider/model` spellings name the model after the slash.
        let m = m.rsplit('/').next().unwrap_or(&m);
        // `opus[1m]`: a context-size suffix of Claude Code's aliases.
        let base = m.split('[').next().unwrap_or(m);
        let starts = |ps: &[&str]| ps.iter().any(|p| m.starts_with(p));
        if starts(&["claude-"]) || matches!(base, "opus" | "sonnet" | "haiku" | "opusplan") {
            Some(Provider::Anthropic)
        } else if starts(&["gpt-", "o1", "o3", "o4", "codex-", "chatgpt-"]) {
            Some(Provider::OpenAi)
        } else if starts(&["gemini-", "gemma-", "auto-gemini"]) {
            Some(Provider::Google)
        } else if starts(&["qwen", "qwq-"]) {
            Some(Provider::Alibaba)
        } else {
            None
        }
    }
}

/// The setting that says which provider the model ran through: Codex's `model_provider`.
pub const MODEL_PROVIDER: &str = "model_provider";

/// The provider the carried settings say the model ran through: Codex's `model_provider`.
pub fn through(settings: &asp_format::state::Settings) -> Option<&str> {
    match settings.get(MODEL_PROVIDER) {
        Some(asp_format::state::SettingValue::Select(p)) => Some(p.as_str()),
        _ => None,
    }
}

/// Whether the carried [`MODEL_PROVIDER`] went into `written`, the model a harness that keeps
/// models as `provider/model` wrote (or found there already) from the same settings: Codex's
/// `gpt-5.5` through `openai` is `openai/gpt-5.5` in OpenCode and Pi. That setting is then
/// taken with the model; when the model was not written, or not with that provider, it is not.
pub fn provider_carried(settings: &asp_format::state::Settings, written: Option<&str>) -> bool {
    match (through(settings), written.and_then(|w| w.split_once('/'))) {
        (Some(t), Some((p, _))) => t.eq_ignore_ascii_case(p),
        _ => false,
    }
}

/// A bare model id (`gpt-5.5`, `claude-opus-4-5`, `gemini-2.5-pro`) as a multi-provider
/// harness names it, `provider/model`, when its provider is one that OpenCode (models.dev's
/// provider ids) and Pi (pi-ai's) both know by the same name: `anthropic`, `openai`,
/// `google`. Not an alias (`opus`, `auto-gemini-2.5`), which only its own harness resolves,
/// nor a model of another provider (Qwen's, which those harnesses reach through providers of
/// the user's choosing).
pub fn with_provider(model: &str) -> Option<String> {
    let lower = model.trim().to_ascii_lowercase();
    // `claude-sonnet-4-5[1m]`: a context-size suffix only Claude Code reads.
    if model.contains(['/', '[', ':']) || model.trim().is_empty() {
        return None;
    }
    let provider = match Provider::of(model)? {
        // Anthropic's ids are dashed (`claude-sonnet-4-5`); `claude-sonnet-4.5` is Copilot's
        // own catalog name, which Anthropic's API does not know.
        Provider::Anthropic if lower.starts_with("claude-") && !lower.contains('.') => "anthropic",
        Provider::OpenAi => "openai",
        Provider::Google if lower.starts_with("gemini-") || lower.starts_with("gemma-") => "google",
        _ => return None,
    };
    Some(format!("{provider}/{}", model.trim()))
}

/// `Anthropic, OpenAI and Google`.
fn names(all: &[Provider]) -> String {
    let v: Vec<String> = all.iter().map(ToString::to_string).collect();
    match v.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => v.join(""),
    }
}

/// What one harness accepts as session settings.
#[derive(Debug, Clone, Copy)]
pub struct Accepts {
    /// The harness as people call it ("Claude Code").
    pub harness: &'static str,
    /// Whose models it runs.
    pub runs: Runs,
    /// Its own model ids that name no provider (`default`, `auto`, `pro`).
    pub model_aliases: &'static [&'static str],
    /// Its modes, as written into its own settings (after its own spelling rules).
    pub modes: &'static [&'static str],
}

/// Whose models a harness runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runs {
    /// One provider's models, named by their own ids (Claude Code, Codex, Gemini CLI, Qwen Code).
    One(Provider),
    /// Models of whichever providers the user has set up, always named `provider/model` (Pi):
    /// which providers those are is the user's (built in or from their own `models.json`), so
    /// any provider is taken, and a bare model id only when [`with_provider`] can name its
    /// provider.
    ProviderSlashModel,
    /// Models of several providers, each named by its own bare id (Copilot CLI runs Anthropic's,
    /// OpenAI's and Google's from one catalog): a model is taken when its id names one of them.
    Several(&'static [Provider]),
}

impl Accepts {
    /// Whether `model` can be written into this harness, or why not.
    pub fn model(&self, model: &str) -> Result<(), String> {
        if self.model_aliases.contains(&model) {
            return Ok(());
        }
        if self.runs != Runs::ProviderSlashModel && model.contains('/') {
            // `anthropic/claude-…` is how multi-provider harnesses (Pi, OpenCode) name a model;
            // a harness that names models by their own ids would send the whole string as the
            // model id.
            return Err(format!(
                "{model} names its provider as provider/model; {} names models without one",
                self.harness
            ));
        }
        let own = match self.runs {
            Runs::One(own) => own,
            Runs::Several(all) => {
                return match Provider::of(model) {
                    Some(p) if all.contains(&p) => Ok(()),
                    Some(p) => Err(format!(
                        "{model} is {} {p} model; {} runs {} models",
                        if matches!(p, Provider::Google) {
                            "a"
                        } else {
                            "an"
                        },
                        self.harness,
                        names(all)
                    )),
                    None => Err(format!(
                        "{model:?} is not a model {} is known to run (it runs {} models)",
                        self.harness,
                        names(all)
                    )),
                };
            }
            Runs::ProviderSlashModel => {
                return match model.split_once('/') {
                    Some((p, m)) if !p.is_empty() && !m.is_empty() => Ok(()),
                    _ if with_provider(model).is_some() => Ok(()),
                    _ => Err(format!(
                        "{model:?} names no provider, and {} keeps a model as provider/model",
                        self.harness
                    )),
                };
            }
        };
        match Provider::of(model) {
            Some(p) if p == own => Ok(()),
            Some(p) => Err(format!(
                "{model} is {} {p} model; {} runs {own} models",
                if matches!(p, Provider::Google) {
                    "a"
                } else {
                    "an"
                },
                self.harness
            )),
            None => Err(format!(
                "{model:?} is not a model {} is known to run (it runs {own} models)",
                self.harness
            )),
        }
    }

    /// `model` as this harness writes it, or why it cannot be written: a harness that keeps
    /// models as `provider/model` gets a bare id of a provider it knows by name with that
    /// name before it ([`with_provider`]: Codex's `gpt-5.5` is `openai/gpt-5.5` in OpenCode and
    /// Pi); every other model as it is. `through` is the provider the source ran the model
    /// through (the `model_provider` setting Codex carries): a bare id that ran through
    /// another provider than the one its name says (`gpt-5.5` through `azure`, `gpt-oss:20b`
    /// through `ollama`) is not given a provider it did not run through.
    pub fn spelled(&self, model: &str, through: Option<&str>) -> Result<String, String> {
        self.model(model)?;
        Ok(match self.runs {
            Runs::ProviderSlashModel if !model.contains('/') => {
                let spelled = with_provider(model).unwrap_or_else(|| model.to_owned());
                match (through, spelled.split_once('/')) {
                    (Some(t), Some((p, _))) if !t.eq_ignore_ascii_case(p) => {
                        return Err(format!(
                            "{model:?} ran through the model provider {t:?}, and {} keeps a \
                             model as provider/model of a provider the user set up there",
                            self.harness
                        ));
                    }
                    _ => spelled,
                }
            }
            _ => model.to_owned(),
        })
    }

    /// Whether `mode` (in this harness's own spelling) can be written into it, or why not.
    pub fn mode(&self, mode: &str) -> Result<(), String> {
        if self.modes.contains(&mode) {
            Ok(())
        } else {
            Err(format!(
                "mode {mode:?} is not one {} accepts ({})",
                self.harness,
                self.modes.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn modes_that_act_without_asking_are_told_from_those_that_ask() {
        for m in [
            "acceptEdits",
            "autoEdit",
            "auto_edit",
            "yolo",
            "bypassPermissions",
            "auto",
            "full-access",
            "never/read-only",
            "on-request/workspace-write",
        ] {
            assert!(approves_unasked(m), "{m}");
        }
        for m in [
            "default",
            "plan",
            "read-only",
            "dontAsk",
            "on-request/read-only",
        ] {
            assert!(!approves_unasked(m), "{m}");
        }
    }
    use super::*;

    #[test]
    fn a_bare_model_of_a_known_provider_gets_its_provider_where_models_are_provider_slash_model() {
        for (bare, spelled) in [
            ("gpt-5.5", Some("openai/gpt-5.5")),
            ("o3", Some("openai/o3")),
            ("claude-opus-4-6", Some("anthropic/claude-opus-4-6")),
            ("gemini-2.5-pro", Some("google/gemini-2.5-pro")),
            ("opus", None),
            ("auto-gemini-2.5", None),
            ("qwen3-coder-plus", None),
            ("llama3.3", None),
            ("openai/gpt-5.5", None),
            ("claude-sonnet-4-5[1m]", None),
            ("claude-sonnet-4.5", None),
            ("gpt-oss:20b", None),
        ] {
            assert_eq!(with_provider(bare).as_deref(), spelled, "{bare}");
        }
        let pi = Accepts {
            harness: "Pi",
            runs: Runs::ProviderSlashModel,
            model_aliases: &[],
            modes: &[],
        };
        assert_eq!(pi.spelled("gpt-5.5", None).unwrap(), "openai/gpt-5.5");
        assert_eq!(
            pi.spelled("gpt-5.5", Some("openai")).unwrap(),
            "openai/gpt-5.5"
        );
        assert!(pi.spelled("gpt-5.5", Some("azure")).is_err());
        assert_eq!(
            pi.spelled("ollama/llama3.3", Some("ollama")).unwrap(),
            "ollama/llama3.3"
        );
        assert!(pi.spelled("llama3.3", None).is_err());
        assert_eq!(
            T.spelled("claude-opus-4-6", None).unwrap(),
            "claude-opus-4-6"
        );
    }

    #[test]
    fn the_provider_is_carried_only_in_a_model_written_with_it() {
        use asp_format::state::{SettingValue, Settings};
        let through = |p: &str| {
            Settings::from([(
                MODEL_PROVIDER.to_owned(),
                SettingValue::Select(p.to_owned()),
            )])
        };
        assert!(provider_carried(&through("openai"), Some("openai/gpt-5.5")));
        assert!(provider_carried(&through("OpenAI"), Some("openai/gpt-5.5")));
        assert!(!provider_carried(&through("openai"), None));
        assert!(!provider_carried(&through("azure"), Some("openai/gpt-5.5")));
        assert!(!provider_carried(&through("openai"), Some("gpt-5.5")));
        assert!(!provider_carried(&Settings::new(), Some("openai/gpt-5.5")));
    }

    const T: Accepts = Accepts {
        harness: "Claude Code",
        runs: Runs::One(Provider::Anthropic),
        model_aliases: &["default"],
        modes: &["default", "plan"],
    };

    #[test]
    fn a_model_of_another_provider_is_refused_with_the_reason() {
        assert_eq!(
            T.model("gpt-5.3-codex").unwrap_err(),
            "gpt-5.3-codex is an OpenAI model; Claude Code runs Anthropic models"
        );
        assert_eq!(
            T.model("gemini-2.5-pro").unwrap_err(),
            "gemini-2.5-pro is a Google model; Claude Code runs Anthropic models"
        );
        assert!(T.model("claude-opus-4-6").is_ok());
        assert!(T.model("opus[1m]").is_ok());
        assert!(T.model("anthropic/claude-opus-4-6").is_err());
        assert!(T.model("default").is_ok());
        assert!(T.model("auto").is_err());
        assert!(T.mode("plan").is_ok());
        assert!(T.mode("auto").unwrap_err().contains("default, plan"));
    }
}
