//! Gemini CLI (`google-gemini/gemini-cli`): `~/.gemini/` and the shared `~/.agents/skills/`.
//!
//! | kind | where | module |
//! |---|---|---|
//! | sessions | `.gemini/tmp/<project>/chats/session-*.jsonl` (log) and `*.json` (legacy), subagent chats in `chats/<parent>/` | [`survey`], [`read`] → [`replay`]; [`write`](mod@write) ← [`compose`] (+ [`place`]) |
//! | instructions | `.gemini/GEMINI.md` without its `## Gemini Added Memories` section | [`instructions`] |
//! | memory | that section's bullets ([`instructions`]); `.gemini/tmp/<project>/memory/*.md` | [`memory`] |
//! | skills | `.gemini/skills/`, `.agents/skills/` | [`skills`] |
//! | tools | `mcpServers` in `.gemini/settings.json` | [`tools`] |
//! | settings | `model.name`, `general.defaultApprovalMode` in `.gemini/settings.json` | [`settings`] |
//!
//! Where things are: [`layout`], and the project registry: [`projects`]; ids: [`ids`]; the
//! native formats: [`log`] (chats), [`gemini_md`] (GEMINI.md), [`settings`] (settings.json);
//! tool calls: [`calls`]. The facts behind every rule are in `spec/harnesses/gemini.md`
//! (verified against the real CLI 0.61.0).

mod calls;
mod compose;
mod gemini_md;
mod ids;
mod instructions;
mod layout;
mod log;
mod memory;
mod place;
mod projects;
mod read;
mod replay;
mod settings;
mod skills;
mod survey;
mod time;
mod tools;
mod write;

use asp_format::answer::ImportAnswer;
use asp_format::kind::{KindSet, StateKind};
use asp_format::name::HarnessName;
use asp_format::state::{Session, State};

use crate::error::ConvertError;
use crate::harness::{
    Capabilities, Harness, Home, ReadContext, SessionContext, Survey, SurveyContext, Surveyed,
    WriteContext,
};
use crate::kit::placement::Tally;
use crate::kit::settings_json::{File, report_unreadable, write_merged};
use crate::kit::source::SourceFile;
use layout::Layout;
use projects::Projects;

/// The harness's name.
pub const NAME: &str = "gemini";

/// The Gemini CLI converter.
#[derive(Debug, Default, Clone, Copy)]
pub struct Gemini;

impl Harness for Gemini {
    fn name(&self) -> HarnessName {
        HarnessName::new(NAME).expect("a valid harness name")
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            export: KindSet::ALL,
            import: KindSet::ALL,
        }
    }

    fn accepts(&self) -> &'static crate::kit::accepted::Accepts {
        &settings::ACCEPTS
    }

    /// Gemini CLI 0.61: `gemini --resume <uuid>` searches the chats of the project it runs in.
    fn links_composed_subagents(&self) -> bool {
        true
    }

    fn expands_imports(&self) -> bool {
        true
    }

    fn resume_command(&self, id: &str, cwd: Option<&str>) -> Option<String> {
        Some(crate::kit::resume::in_dir(
            cwd,
            format!("gemini --resume {id}"),
        ))
    }

    fn resume_env(&self, home: &Home) -> Vec<(&'static str, std::path::PathBuf)> {
        vec![("GEMINI_CLI_HOME", home.absolute_dir())]
    }

    fn store_paths(&self, home: &Home) -> Vec<std::path::PathBuf> {
        vec![layout::Layout::of(home).gemini]
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

    /// A session's largest chat file, in its project's `chats/` folder (a subagent's is in a
    /// folder of its parent's): of a session in several files (a resume leaves a startup-only
    /// one, an old `.json` continues in a `.jsonl`), the one it is most likely read from,
    /// which only the read knows.
    fn surveyed_transcript<'a>(&self, entry: &'a Surveyed) -> Option<&'a SourceFile> {
        let plan: &survey::Plan = entry.plan();
        plan.mains.iter().map(|c| &c.source).max_by_key(|s| s.size)
    }

    fn transcript(
        &self,
        _: &asp_format::name::SessionId,
        native: &asp_format::state::Native,
        meta: Option<&asp_format::state::Meta>,
    ) -> Option<asp_format::Descriptor> {
        read::transcript(native, meta)
    }

    fn read_kinds(&self, ctx: &ReadContext<'_>) -> Result<State, ConvertError> {
        let layout = Layout::of(ctx.home);
        let gemini = &layout.gemini;
        let settings_path = layout.settings();
        let file = match File::load(&settings_path) {
            Ok(f) => Some(f),
            Err(e) => {
                report_unreadable(&e, ctx);
                None
            }
        };
        let names = file.as_ref().map_or_else(
            || vec!["GEMINI.md".to_owned()],
            settings::context_file_names,
        );
        let mut state = State::default();
        let want = |k| ctx.kinds.contains(k);
        if want(StateKind::Instructions) || want(StateKind::Memory) {
            let f = instructions::instructions_file(gemini, &names);
            let (instructions, mut memory) =
                instructions::read_global(gemini, &f, ctx.blobs, ctx.diagnostics)?;
            if want(StateKind::Instructions) {
                state.instructions = instructions;
            }
            if want(StateKind::Memory) {
                let projects = Projects::load(gemini, &crate::kit::report::Diagnostics::new());
                memory.extend(memory::read_projects(
                    gemini,
                    &projects,
                    ctx.blobs,
                    ctx.diagnostics,
                )?);
                state.memory = Some(memory);
            }
        }
        if want(StateKind::Skills) {
            state.skills = Some(skills::read(&layout, ctx)?);
        }
        // A settings.json that cannot be read leaves both kinds out (reported above): a kind
        // left out is never one given empty.
        if want(StateKind::Tools) {
            state.tools = file.as_ref().and_then(|f| tools::read(f, &layout, ctx));
        }
        if want(StateKind::Settings) {
            state.settings = file.as_ref().map(settings::settings);
            if let Some(f) = &file {
                // (`context.fileName` names the instructions file; `mcp`, which servers run;
                // a `model` that is a string is the model, as older versions wrote it.)
                let model = match f.doc.get("model") {
                    Some(serde_json::Value::String(_)) => "model",
                    _ => "model.name",
                };
                crate::kit::settings_json::report_own_settings(
                    ctx.diagnostics,
                    &f.path,
                    "Gemini CLI",
                    &crate::kit::settings_json::own_keys(
                        &f.doc,
                        &[
                            "mcpServers",
                            "mcp",
                            "$schema",
                            model,
                            "general.defaultApprovalMode",
                            "context.fileName",
                        ],
                    ),
                );
            }
        }
        Ok(state)
    }

    /// `settings.json`, the folder trust decisions (`trustedFolders.json`), the user's policy
    /// rules (`policies/`), custom commands (`commands/`) and subagents (`agents/`), and the
    /// extension settings (`extensions/extension-enablement.json`); never `oauth_creds.json`,
    /// `google_accounts.json`, nor the machine's `installation_id` or the TUI's `state.json`.
    /// (Not the per-project `tmp/<project>/` files, prompt log and saved chats: a restore would
    /// have to place them by the project's root after the sessions made its folder, and
    /// writing into a folder first can stop Gemini CLI from adopting a legacy one; spec.)
    fn config_files(&self, home: &crate::Home) -> crate::kit::config::ConfigFiles {
        let layout = layout::Layout::of(home);
        let g = &layout.gemini;
        let mut dirs = vec![g.join("policies"), g.join("commands"), g.join("agents")];
        // A skill of `.gemini/skills` that one of `.agents/skills` hides (skills.rs).
        dirs.extend(crate::kit::skills::shadowed(
            &layout.root.join(crate::kit::skills::AGENTS_SKILLS),
            &g.join("skills"),
        ));
        crate::kit::config::collect(
            &home.dir,
            &[
                g.join("settings.json"),
                g.join("trustedFolders.json"),
                g.join("extensions").join("extension-enablement.json"),
                // `gemini mcp disable`'s servers: restored with `settings.json`, they stay off
                // (the state's servers are then already there, so nothing else would say so).
                g.join(tools::ENABLEMENT),
            ],
            &dirs,
        )
    }

    /// `trustedFolders.json`: Gemini CLI's trust of each folder it names; `settings.json`: the
    /// MCP servers it runs without asking (`trust: true`).
    fn grant_files(&self, home: &crate::Home) -> Vec<String> {
        let g = layout::Layout::of(home).gemini;
        [g.join("trustedFolders.json"), g.join("settings.json")]
            .iter()
            .filter_map(|f| crate::kit::config::relative(&home.dir, f))
            .collect()
    }

    fn grants_in(&self, rel: &str, bytes: &[u8]) -> Option<crate::kit::grants::Granting> {
        if rel.ends_with("settings.json") {
            crate::kit::grants::trusted_servers("Gemini CLI", bytes)
        } else {
            crate::kit::grants::trusted_folders("Gemini CLI", bytes)
        }
    }

    fn write(&self, ctx: &WriteContext<'_>) -> Result<ImportAnswer, ConvertError> {
        let layout = Layout::of(ctx.home);
        let gemini = &layout.gemini;
        let writer = ctx.writer;
        let mut answer = ImportAnswer::default();
        let mut projects = Projects::load(gemini, ctx.diagnostics);
        let state = ctx.state;
        if let Some(list) = &state.sessions {
            let mut tally = Tally::new(&mut answer, StateKind::Sessions, list.len());
            write::Sessions {
                ctx,
                gemini,
                projects: &mut projects,
                writer,
                tally: &mut tally,
            }
            .write_all(list)?;
            tally.finish();
        }
        let names = File::load(&layout.settings())
            .map(|f| settings::context_file_names(&f))
            .unwrap_or_else(|_| vec!["GEMINI.md".to_owned()]);
        instructions::write_global(
            &instructions::instructions_file(gemini, &names),
            ctx,
            &mut answer,
        )?;
        if let Some(memory) = &state.memory {
            let mut tally = Tally::new(&mut answer, StateKind::Memory, memory.len());
            memory::write_projects(gemini, memory, &mut projects, ctx.blobs, writer, &mut tally)?;
            tally.finish();
        }
        if let Some(list) = &state.skills {
            skills::write(&layout, ctx, list, &mut answer)?;
        }
        write_settings_file(&layout, ctx, &mut answer)?;
        projects.save(writer)?;
        // The project registry the owner had, extended for the sessions and memory written.
        let (registry, added) = projects.added_to_registry();
        if !added.is_empty() {
            let kind = match state.sessions.as_ref().is_some_and(|s| !s.is_empty()) {
                true => StateKind::Sessions,
                false => StateKind::Memory,
            };
            answer
                .written_into
                .push(crate::kit::placement::written_into(
                    kind,
                    &registry,
                    added,
                    writer.is_dry_run(),
                ));
        }
        Ok(answer)
    }
}

/// MCP servers and settings, merged into `settings.json` in one write
/// ([`crate::kit::settings_json::write_merged`]).
fn write_settings_file(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let state = ctx.state;
    write_merged(
        &layout.settings(),
        ctx,
        answer,
        |file, out| tools::merge(file, state.tools.as_deref().unwrap_or(&[]), ctx, out),
        |file, out| match &state.settings {
            Some(list) => settings::merge(file, list, out),
            None => false,
        },
    )
}
