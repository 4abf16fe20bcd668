//! Qwen Code (`QwenLM/qwen-code`, a Gemini CLI fork): `~/.qwen/` and the shared
//! `~/.agents/skills/`.
//!
//! | kind | where | module |
//! |---|---|---|
//! | sessions | `.qwen/projects/<sanitized cwd>/chats/<uuid>.jsonl` (+ `subagents/<id>/`, `file-history/<id>/`) | [`survey`], [`read`] → [`replay`]; [`write`](mod@write) ← [`compose`] |
//! | instructions | `.qwen/QWEN.md` without its `## Qwen Added Memories` section | [`instructions`] |
//! | memory | that section's bullets ([`instructions`]); managed memory `.qwen/memories/`, `.qwen/projects/<dir>/memory/` | [`memory`] |
//! | skills | `.qwen/skills/`, `.agents/skills/` | [`skills`] |
//! | tools | `mcpServers` in `.qwen/settings.json` (`url` = SSE, `httpUrl` = HTTP) | [`settings`] |
//! | settings | `model.name`, `tools.approvalMode` in `.qwen/settings.json` | [`settings`] |
//!
//! Where things are: [`layout`]; ids: [`ids`]; the chat format: [`transcript`]; tool calls:
//! [`calls`]. The facts behind every rule are in `spec/harnesses/qwen.md` (verified against
//! Qwen Code 0.24.4).

mod calls;
mod compose;
mod ids;
mod instructions;
mod layout;
mod memory;
mod read;
mod replay;
mod settings;
mod skills;
mod survey;
mod transcript;
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
use crate::kit::credentialed_json::{CredentialedJson, Secret};
use crate::kit::placement::Tally;
use crate::kit::settings_json::{File, report_unreadable, write_merged};
use layout::Layout;

/// The harness's name.
pub const NAME: &str = "qwen";

/// `settings.json`: `security.auth.apiKey`, the `env` block and the web search providers'
/// keys are credentials (the spec's §1 table); Qwen falls back to the environment without
/// them.
const SETTINGS: CredentialedJson = CredentialedJson {
    file: ".qwen/settings.json",
    part: ".qwen/settings.json#withoutCredentials",
    secrets: &[
        Secret {
            at: &["security", "auth", "apiKey"],
            masked: false,
        },
        Secret {
            at: &["env"],
            masked: false,
        },
        // Web search providers' keys (Tavily, Google), which Qwen keeps in settings too.
        Secret {
            at: &["webSearch", "provider", "*", "apiKey"],
            masked: false,
        },
        Secret {
            at: &["advanced", "tavilyApiKey"],
            masked: false,
        },
    ],
};

/// The Qwen Code converter.
#[derive(Debug, Default, Clone, Copy)]
pub struct Qwen;

impl Harness for Qwen {
    fn keeps_an_archive(&self) -> bool {
        true
    }

    fn name(&self) -> HarnessName {
        HarnessName::new(NAME).expect("a valid harness name")
    }

    fn store_paths(&self, home: &crate::Home) -> Vec<std::path::PathBuf> {
        let layout = Layout::of(home);
        let mut paths = vec![layout.qwen];
        if !paths.contains(&layout.runtime) {
            paths.push(layout.runtime);
        }
        paths
    }

    fn accepts(&self) -> &'static crate::kit::accepted::Accepts {
        &settings::ACCEPTS
    }

    /// Qwen Code 0.24 finds `--resume <id>` among the chats of the project it runs in (its headless docs; spec/harnesses/qwen.md).
    fn expands_imports(&self) -> bool {
        true
    }

    fn resume_command(&self, id: &str, cwd: Option<&str>) -> Option<String> {
        Some(crate::kit::resume::in_dir(
            cwd,
            format!("qwen --resume {id}"),
        ))
    }

    fn capabilities(&self) -> Capabilities {
        let kinds = KindSet::EMPTY
            .with(StateKind::Sessions)
            .with(StateKind::Instructions)
            .with(StateKind::Memory)
            .with(StateKind::Skills)
            .with(StateKind::Tools)
            .with(StateKind::Settings);
        Capabilities {
            export: kinds,
            import: kinds,
        }
    }

    fn survey(&self, ctx: &SurveyContext<'_>) -> Result<Survey, ConvertError> {
        survey::survey(&Layout::of(ctx.home), ctx)
    }

    fn read_session(
        &self,
        ctx: &SessionContext<'_>,
        entry: &Surveyed,
    ) -> Result<Vec<Session>, ConvertError> {
        read::read_session(ctx, entry)
    }

    fn read_kinds(&self, ctx: &ReadContext<'_>) -> Result<State, ConvertError> {
        let layout = Layout::of(ctx.home);
        let mut state = State::default();
        let want = |k| ctx.kinds.contains(k);
        if want(StateKind::Instructions) || want(StateKind::Memory) {
            let (instructions, mut notes) =
                instructions::read(&layout, ctx.blobs, ctx.diagnostics)?;
            if want(StateKind::Instructions) {
                state.instructions = instructions;
            }
            if want(StateKind::Memory) {
                notes.extend(memory::read(&layout, ctx.blobs, ctx.diagnostics)?);
                state.memory = (!notes.is_empty()).then_some(notes);
            }
        }
        if want(StateKind::Skills) {
            state.skills = skills::read(&layout, ctx)?;
        }
        if want(StateKind::Tools) || want(StateKind::Settings) {
            // A settings.json that cannot be read leaves both kinds out (reported): a kind
            // left out is never one given empty.
            match File::load(&settings::path(&layout)) {
                Ok(file) => {
                    if want(StateKind::Tools) {
                        state.tools = settings::read_servers(&file, ctx);
                    }
                    if want(StateKind::Settings) {
                        state.settings = Some(settings::read(&file));
                        settings::report_own(&file, ctx);
                    }
                }
                Err(e) => report_unreadable(&e, ctx),
            }
        }
        Ok(state)
    }

    /// `settings.json` (permissions, hooks, model providers, MCP servers: whole when it holds
    /// no credential, else as a part without `security.auth.apiKey` and `env`), the folder
    /// trust decisions `trustedFolders.json`, subagents `agents/`, custom commands
    /// `commands/`, and the extension settings `extensions/extension-enablement.json`; never
    /// `oauth_creds.json`, `mcp-oauth-tokens.json`, `.env`, nor the machine's `installation_id`.
    fn config_files(&self, home: &crate::Home) -> crate::kit::config::ConfigFiles {
        let q = Layout::of(home).qwen;
        let mut files = vec![
            q.join("trustedFolders.json"),
            q.join("extensions").join("extension-enablement.json"),
        ];
        files.extend(SETTINGS.whole(q.join("settings.json")));
        crate::kit::config::collect(&home.dir, &files, &[q.join("agents"), q.join("commands")])
    }

    /// `trustedFolders.json`: Qwen Code's trust of each folder it names.
    fn grant_files(&self, home: &crate::Home) -> Vec<String> {
        let file = Layout::of(home).qwen.join("trustedFolders.json");
        crate::kit::config::relative(&home.dir, &file)
            .into_iter()
            .collect()
    }

    fn grants_in(&self, _rel: &str, bytes: &[u8]) -> Option<crate::kit::grants::Granting> {
        crate::kit::grants::trusted_folders("Qwen Code", bytes)
    }

    fn credentialed_json(&self) -> &'static [CredentialedJson] {
        &[SETTINGS]
    }

    fn config_parts(&self, home: &crate::Home) -> Vec<(String, Vec<u8>)> {
        let settings = Layout::of(home).qwen.join("settings.json");
        SETTINGS.part(&home.dir, &settings).into_iter().collect()
    }

    fn write(&self, ctx: &WriteContext<'_>) -> Result<ImportAnswer, ConvertError> {
        let layout = Layout::of(ctx.home);
        let mut answer = ImportAnswer::default();
        if let Some(list) = &ctx.state.sessions {
            let mut tally = Tally::new(&mut answer, StateKind::Sessions, list.len());
            write::write_sessions(&layout, ctx, list, &mut tally)?;
            tally.finish();
        }
        let state = ctx.state;
        let mut section = Vec::new();
        if let Some(notes) = &state.memory {
            let mut tally = Tally::new(&mut answer, StateKind::Memory, notes.len());
            section = memory::write(&layout, ctx, notes, &mut tally)?;
            tally.finish();
        }
        instructions::write(
            &instructions::file(&layout),
            ctx.options.different_instructions(),
            state.instructions.as_ref(),
            &section,
            ctx.blobs,
            ctx.writer,
            ctx.diagnostics,
            &mut answer,
        )?;
        if let Some(list) = &ctx.state.skills {
            skills::write(&layout, ctx, list, &mut answer)?;
        }
        write_merged(
            &settings::path(&layout),
            ctx,
            &mut answer,
            |file, out| {
                let servers = state.tools.as_deref().unwrap_or(&[]);
                settings::merge_servers(file, servers, ctx, out)
            },
            |file, out| match &state.settings {
                Some(values) => settings::merge(file, values, out),
                None => false,
            },
        )?;
        Ok(answer)
    }
}
