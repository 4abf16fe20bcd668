//! OpenCode (`opencode-ai`, ACP through `opencode acp`): the SQLite database
//! `$XDG_DATA_HOME/opencode/opencode.db` (`$OPENCODE_DB`).
//!
//! | kind | where | module |
//! |---|---|---|
//! | sessions | tables `session`, `message`, `part`, `todo` ... of `opencode.db` | [`survey`], [`read`] → [`replay`]; [`write`](mod@write) |
//! | instructions | `<config>/AGENTS.md` | [`instructions`] |
//! | skills | `<config>/skills/`, `<config>/skill/`, `~/.agents/skills/` | [`skills`] |
//! | MCP servers | `mcp` of `<config>/opencode.json(c)`, `config.json` | [`tools`] ([`config`]) |
//! | settings | `model` of the same files | [`settings`] ([`config`]) |
//!
//! OpenCode has no memory of its own. Custom agents, modes and commands (`<config>/agent/`,
//! `command/`, ...), plugins, custom tools, themes and the TUI settings have no place in the
//! portable state: a read reports each file as left out ([`own`]), and the settings of the
//! config it does not map ([`settings`]). Agents, modes and commands are its own
//! configuration, kept by a backup and restored into OpenCode only ([`Harness::config_files`]).
//!
//! A session's native layer is its rows, as row documents ([`rows`], spec/aspstate.md §8.1),
//! so a restore into OpenCode is row-exact; other harnesses' sessions are composed into rows.
//! The database is read in place with its WAL (the main file alone may hold none of the
//! latest rows) and written one transaction per session. Credentials (`auth.json`,
//! `mcp-auth.json`, the `account`, `control_account`, `credential` and `session_share`
//! tables) are never read. Where things are: [`layout`]; ids: [`ids`]. The facts behind every
//! rule are in `spec/harnesses/opencode.md` (verified against OpenCode 1.18.33).

mod config;
mod ids;
mod instructions;
mod layout;
mod migrations;
mod own;

use crate::kit::credentialed_json::{CredentialedJson, Secret};
mod read;
mod replay;
mod rows;
mod settings;
mod skills;
mod survey;
mod tools;
mod write;

use asp_format::answer::ImportAnswer;
use asp_format::kind::{KindSet, StateKind};
use asp_format::name::HarnessName;
use asp_format::state::{Session, State};

use crate::error::ConvertError;
use crate::harness::{
    Capabilities, Harness, ReadContext, SessionContext, Survey, SurveyContext, Surveyed,
    WriteContext,
};
use crate::kit::accepted::{Accepts, Runs};
use crate::kit::jsonc::Jsonc;
use crate::kit::placement::Tally;
use crate::kit::settings_json::{report_unreadable, write_merged_as};
use layout::Layout;

/// The harness's name.
pub const NAME: &str = "opencode";

/// What OpenCode takes as session settings: a model as `provider/model` of whichever provider
/// the user configured, and an agent (`build`, `plan`) as its mode.
pub static ACCEPTS: Accepts = Accepts {
    harness: "OpenCode",
    runs: Runs::ProviderSlashModel,
    model_aliases: &[],
    modes: &["build", "plan"],
};

/// The OpenCode converter.
#[derive(Debug, Default, Clone, Copy)]
pub struct OpenCode;

fn kinds() -> KindSet {
    KindSet::EMPTY
        .with(StateKind::Sessions)
        .with(StateKind::Instructions)
        .with(StateKind::Skills)
        .with(StateKind::Tools)
        .with(StateKind::Settings)
}

/// The global configuration files, as OpenCode reads them (`~/.config/opencode/`): a
/// provider's `options.apiKey` and `options.headers` written out are credentials (OpenCode
/// falls back to `auth.json` and the environment without them); `{env:VAR}` references stay.
const GLOBAL: [CredentialedJson; 3] = {
    const SECRETS: &[Secret] = &[
        Secret {
            at: &["provider", "*", "options", "apiKey"],
            masked: false,
        },
        Secret {
            at: &["provider", "*", "options", "headers"],
            masked: false,
        },
    ];
    [
        CredentialedJson {
            file: ".config/opencode/opencode.json",
            part: ".config/opencode/opencode.json#withoutCredentials",
            secrets: SECRETS,
        },
        CredentialedJson {
            file: ".config/opencode/opencode.jsonc",
            part: ".config/opencode/opencode.jsonc#withoutCredentials",
            secrets: SECRETS,
        },
        CredentialedJson {
            file: ".config/opencode/config.json",
            part: ".config/opencode/config.json#withoutCredentials",
            secrets: SECRETS,
        },
    ]
};

impl Harness for OpenCode {
    fn name(&self) -> HarnessName {
        HarnessName::new(NAME).expect("a valid harness name")
    }

    fn resume_env(&self, home: &crate::Home) -> Vec<(&'static str, std::path::PathBuf)> {
        let dir = home.absolute_dir();
        vec![
            ("XDG_CONFIG_HOME", dir.join(".config")),
            ("XDG_DATA_HOME", dir.join(".local/share")),
        ]
    }

    fn store_paths(&self, home: &crate::Home) -> Vec<std::path::PathBuf> {
        let l = Layout::of(home);
        vec![l.db, l.data, l.config]
    }

    fn accepts(&self) -> &'static Accepts {
        &ACCEPTS
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            export: kinds(),
            import: kinds(),
        }
    }

    fn links_composed_subagents(&self) -> bool {
        true
    }

    fn keeps_an_archive(&self) -> bool {
        true
    }

    /// OpenCode 1.18.33's `-s, --session <id>` continues a session (`opencode --help`); run in the session's project directory.
    fn resume_command(&self, id: &str, cwd: Option<&str>) -> Option<String> {
        Some(crate::kit::resume::in_dir(
            cwd,
            format!("opencode --session {id}"),
        ))
    }

    fn survey(&self, ctx: &SurveyContext<'_>) -> Result<Survey, ConvertError> {
        survey::survey(&Layout::of(ctx.home), ctx)
    }

    fn read_session(
        &self,
        ctx: &SessionContext<'_>,
        entry: &Surveyed,
    ) -> Result<Vec<Session>, ConvertError> {
        read::read_session(&Layout::of(ctx.home), ctx, entry)
    }

    fn read_kinds(&self, ctx: &ReadContext<'_>) -> Result<State, ConvertError> {
        let layout = Layout::of(ctx.home);
        let mut state = State::default();
        let want = |k| ctx.kinds.contains(k);
        if want(StateKind::Instructions) {
            state.instructions = instructions::read(&layout, ctx)?;
        }
        if want(StateKind::Skills) {
            state.skills = Some(skills::read(&layout, ctx)?);
        }
        // OpenCode's own files (agents, commands, plugins, ...): found, and said not to travel,
        // each with the kind it would belong to.
        own::report(&layout.config, ctx);
        if want(StateKind::Tools) || want(StateKind::Settings) {
            // A config file that cannot be read leaves both kinds out (reported): a kind left
            // out is never one given empty.
            match config::Global::load(&layout) {
                Ok(global) => {
                    if want(StateKind::Tools) {
                        state.tools = tools::read(&global, ctx);
                    }
                    if want(StateKind::Settings) {
                        state.settings = settings::read(&global, ctx);
                    }
                }
                Err(e) => report_unreadable(&e, ctx),
            }
        }
        Ok(state)
    }

    /// The global configuration (`opencode.json`, `opencode.jsonc`, `config.json`: its
    /// permissions, providers, sharing; whole when no provider holds a key written out, else
    /// as a part without the keys, [`GLOBAL`]) and the custom agents, modes and commands
    /// (Markdown with front matter, as OpenCode's globs find them, [`own::is_kept`]: nothing
    /// else there is read by OpenCode, so nothing else is kept): OpenCode's own, restored into
    /// OpenCode only.
    fn config_files(&self, home: &crate::Home) -> crate::kit::config::ConfigFiles {
        let layout = Layout::of(home);
        let c = &layout.config;
        let dirs = ["agent", "agents", "mode", "modes", "command", "commands"].map(|d| c.join(d));
        let under = crate::kit::config::relative(&home.dir, c).map(|r| format!("{r}/"));
        // The global files where OpenCode reads them: not kept when `$XDG_CONFIG_HOME` puts
        // its configuration elsewhere (a file at the usual place is then not OpenCode's).
        let usual = layout.config_is_usual();
        let global: Vec<std::path::PathBuf> = GLOBAL
            .iter()
            .filter(|_| usual)
            .filter_map(|g| g.whole(home.dir.join(g.file)))
            .collect();
        crate::kit::config::collect(&home.dir, &global, &dirs).only(|rel| {
            GLOBAL.iter().any(|g| g.file == rel)
                || under
                    .as_deref()
                    .and_then(|u| rel.strip_prefix(u))
                    .is_some_and(own::is_kept)
        })
    }

    fn credentialed_json(&self) -> &'static [CredentialedJson] {
        &GLOBAL
    }

    fn config_parts(&self, home: &crate::Home) -> Vec<(String, Vec<u8>)> {
        if !Layout::of(home).config_is_usual() {
            return Vec::new();
        }
        GLOBAL
            .iter()
            .filter_map(|g| g.part(&home.dir, &home.dir.join(g.file)))
            .collect()
    }

    fn write(&self, ctx: &WriteContext<'_>) -> Result<ImportAnswer, ConvertError> {
        let layout = Layout::of(ctx.home);
        let mut answer = ImportAnswer::default();
        let state = ctx.state;
        if let Some(list) = &state.sessions {
            let mut tally = Tally::new(&mut answer, StateKind::Sessions, list.len());
            write::write_all(&layout, ctx, list, &mut tally)?;
            tally.finish();
        }
        if let Some(i) = &state.instructions {
            instructions::write(&layout, ctx, i, &mut answer)?;
        }
        if let Some(list) = &state.skills {
            skills::write(&layout, ctx, list, &mut answer)?;
        }
        if state.tools.is_some() || state.settings.is_some() {
            write_config(&layout, ctx, &mut answer)?;
        }
        Ok(answer)
    }
}

/// MCP servers and the model, merged into one global config file in one write
/// ([`crate::kit::settings_json::write_merged_as`]); a file that cannot be read, or has comments,
/// refuses both.
fn write_config(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let state = ctx.state;
    let global = match config::Global::load(layout) {
        Ok(g) => g,
        Err(e) => {
            let why = format!("{e}; asp does not edit a config file it cannot read");
            if state.tools.is_some() {
                answer.refuse(StateKind::Tools, why.clone());
            }
            if state.settings.is_some() {
                answer.refuse(StateKind::Settings, why);
            }
            return Ok(());
        }
    };
    write_merged_as(
        &config::target(layout),
        Jsonc::CommentsAndTrailingCommas,
        ctx,
        answer,
        |file, out| {
            tools::merge(
                &global,
                file,
                state.tools.as_deref().unwrap_or(&[]),
                ctx,
                out,
            )
        },
        |file, out| match &state.settings {
            Some(list) => settings::merge(&global, file, list, out),
            None => false,
        },
    )
}

#[cfg(test)]
mod tests;
