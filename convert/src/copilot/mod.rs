//! GitHub Copilot CLI (`@github/copilot`, ACP through `copilot --acp`): the Copilot dir
//! `~/.copilot/` (`$COPILOT_HOME`).
//!
//! | kind | where | module |
//! |---|---|---|
//! | sessions | `C/session-state/<id>/`: `workspace.yaml` (cwd, title) and `events.jsonl` | [`survey`], [`read`] ([`workspace`]) → [`replay`]; [`write`](mod@write) ← [`compose`] |
//! | instructions | `C/copilot-instructions.md` | [`instructions`] |
//! | skills | `C/skills/`, `~/.agents/skills/` | [`skills`] |
//! | MCP servers | `C/mcp-config.json` | [`tools`] |
//! | settings | `model` in `C/settings.json` | [`settings`] |
//!
//! Custom agents (`C/agents/**/*.md`), the user's settings, prompt history and path-scoped
//! instructions are Copilot's own configuration, carried to Copilot only
//! ([`Harness::config_files`]). Credentials (the OS keychain, `GH_TOKEN`, BYOK keys) are never
//! read; `config.json`
//! (trusted folders) and `session-store.db` (a derived search index Copilot's listing does not
//! use) are neither read nor written. Where things are: [`layout`]. The facts behind every
//! rule are in `spec/harnesses/copilot.md` (verified against Copilot CLI 1.0.102).

/// The prompt history (what ↑ recalls), in the Copilot dir.
const HISTORY: &str = "command-history-state.json";

mod compose;
mod instructions;
mod layout;
mod read;
mod replay;
mod settings;
mod skills;
mod survey;
mod tools;
mod workspace;
mod write;

use asp_format::Descriptor;
use asp_format::answer::ImportAnswer;
use asp_format::kind::{KindSet, StateKind};
use asp_format::name::{HarnessName, SessionId};
use asp_format::state::{Meta, Native, Session, State};

use crate::error::ConvertError;
use crate::harness::{
    Capabilities, Harness, ReadContext, SessionContext, Survey, SurveyContext, Surveyed,
    WriteContext,
};
use crate::kit::placement::Tally;
use layout::Layout;

/// The harness's name.
pub const NAME: &str = "copilot";

/// The Copilot CLI converter.
#[derive(Debug, Default, Clone, Copy)]
pub struct Copilot;

fn kinds() -> KindSet {
    KindSet::EMPTY
        .with(StateKind::Sessions)
        .with(StateKind::Instructions)
        .with(StateKind::Skills)
        .with(StateKind::Tools)
        .with(StateKind::Settings)
}

impl Harness for Copilot {
    fn name(&self) -> HarnessName {
        HarnessName::new(NAME).expect("a valid harness name")
    }

    fn resume_env(&self, home: &crate::Home) -> Vec<(&'static str, std::path::PathBuf)> {
        vec![("COPILOT_HOME", home.absolute_dir().join(".copilot"))]
    }

    fn store_paths(&self, home: &crate::Home) -> Vec<std::path::PathBuf> {
        vec![Layout::of(home).root]
    }

    /// And `~/.agents/skills`, where a backup keeps a skill folder this harness's own hides
    /// (`kit::skills::shadowed`).
    fn config_folders(&self, home: &crate::Home) -> Vec<std::path::PathBuf> {
        let mut out = self.store_paths(home);
        out.push(home.dir.join(crate::kit::skills::AGENTS_SKILLS));
        out
    }

    fn accepts(&self) -> &'static crate::kit::accepted::Accepts {
        &settings::ACCEPTS
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            export: kinds(),
            import: kinds(),
        }
    }

    /// Copilot CLI 1.0's `-r, --resume <id>` resumes a session by id (`copilot --help`), in its working directory.
    fn resume_command(&self, id: &str, cwd: Option<&str>) -> Option<String> {
        Some(crate::kit::resume::in_dir(
            cwd,
            format!("copilot --resume {id}"),
        ))
    }

    /// The user's settings (`C/settings.json`: theme, banner, allowed URLs, hooks), the
    /// prompt history (`C/command-history-state.json`, what ↑ recalls), the path-scoped
    /// instructions (`C/instructions/*.instructions.md`, which the instructions kind does not
    /// carry), and the custom agents: every Markdown file under `C/agents/`
    /// (`<name>.agent.md` or `<name>.md`, nested folders too: Copilot 1.0.102 offered `plain`,
    /// `reviewer` and `nested--deep` for `plain.md`, `reviewer.agent.md` and
    /// `nested/deep.agent.md`, measured with `copilot --agent`). Not `config.json` (managed by
    /// Copilot; its `trustedFolders` must be granted again). Restored into Copilot only, never
    /// over a file that is there.
    fn config_files(&self, home: &crate::Home) -> crate::kit::config::ConfigFiles {
        let layout = Layout::of(home);
        let root = layout.root.clone();
        // A skill of `~/.agents/skills` that one of Copilot's own hides (skills.rs), kept
        // whole.
        let shadowed = crate::kit::skills::shadowed(&layout.skills(), &layout.shared_skills());
        let shadowed_rel: Vec<String> = shadowed
            .iter()
            .filter_map(|d| crate::kit::config::relative(&home.dir, d))
            .map(|r| format!("{r}/"))
            .collect();
        let files = [root.join("settings.json"), root.join(HISTORY)];
        let named: Vec<String> = files
            .iter()
            .filter_map(|f| crate::kit::config::relative(&home.dir, f))
            .collect();
        let instructions = crate::kit::config::relative(&home.dir, &root.join("instructions"))
            .map(|r| format!("{r}/"));
        let mut dirs = vec![root.join("agents"), root.join("instructions")];
        dirs.extend(shadowed);
        crate::kit::config::collect(&home.dir, &files, &dirs).only(|rel| {
            let under_instructions = instructions.as_deref().is_some_and(|i| rel.starts_with(i));
            shadowed_rel.iter().any(|d| rel.starts_with(d.as_str()))
                || named.iter().any(|n| n == rel)
                || (under_instructions && rel.ends_with(".instructions.md"))
                || (!under_instructions && rel.ends_with(".md"))
        })
    }

    /// The prompt history holds what the person typed: restored readable by its owner alone.
    fn private_config(&self, home: &crate::Home, rel: &str) -> bool {
        crate::kit::config::relative(&home.dir, &Layout::of(home).root.join(HISTORY)).as_deref()
            == Some(rel)
    }

    /// Not the prompt history, which is what the person typed, not configuration.
    fn credentials_reader(&self, rel: &str) -> Option<crate::kit::secrets::CredentialsReader> {
        if rel.ends_with(HISTORY) {
            return None;
        }
        crate::kit::secrets::json_credentials_reader(rel)
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

    /// `.copilot/session-state/<id>/events.jsonl`.
    fn transcript(&self, id: &SessionId, native: &Native, _: Option<&Meta>) -> Option<Descriptor> {
        read::transcript(id, native)
    }

    fn read_kinds(&self, ctx: &ReadContext<'_>) -> Result<State, ConvertError> {
        let layout = Layout::of(ctx.home);
        let mut state = State::default();
        if ctx.kinds.contains(StateKind::Instructions) {
            state.instructions = instructions::read(&layout, ctx)?;
        }
        if ctx.kinds.contains(StateKind::Skills) {
            state.skills = Some(skills::read(&layout, ctx)?);
            // Copilot's own custom agents: found, and said not to travel.
            let agents = layout.root.join("agents");
            let kept = self.config_files(ctx.home).keep;
            for (_, p) in kept.iter().filter(|(_, p)| p.starts_with(&agents)) {
                ctx.diagnostics.left_out(
                    p,
                    None,
                    "a custom agent of Copilot's own, not a skill; the portable state has no place for it; not carried",
                );
            }
        }
        if ctx.kinds.contains(StateKind::Tools) {
            state.tools = tools::read(&layout, ctx);
        }
        if ctx.kinds.contains(StateKind::Settings) {
            state.settings = settings::read(&layout, ctx);
        }
        Ok(state)
    }

    fn write(&self, ctx: &WriteContext<'_>) -> Result<ImportAnswer, ConvertError> {
        let layout = Layout::of(ctx.home);
        let mut answer = ImportAnswer::default();
        if let Some(list) = &ctx.state.sessions {
            let mut tally = Tally::new(&mut answer, StateKind::Sessions, list.len());
            write::Sessions::new(&layout, ctx).write_all(list, &mut tally)?;
            tally.finish();
        }
        if let Some(i) = &ctx.state.instructions {
            instructions::write(&layout, ctx, i, &mut answer)?;
        }
        if let Some(list) = &ctx.state.skills {
            skills::write(&layout, ctx, list, &mut answer)?;
        }
        if let Some(list) = &ctx.state.tools {
            tools::write(&layout, ctx, list, &mut answer)?;
        }
        if let Some(s) = &ctx.state.settings {
            settings::write(&layout, ctx, s, &mut answer)?;
        }
        Ok(answer)
    }
}
