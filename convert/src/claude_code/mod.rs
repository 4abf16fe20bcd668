//! Claude Code: `~/.claude/` and `~/.claude.json` as portable state, and back.
//!
//! | kind | Claude Code | module |
//! |---|---|---|
//! | sessions | `projects/<bucket>/<id>.jsonl` (+ `<id>/subagents/`, `<id>/tool-results/`) | [`survey`], [`read`] → [`replay`]; [`write`](mod@write) ← [`compose`] |
//! | instructions | `CLAUDE.md` | [`instructions`] |
//! | skills | `skills/<name>/` | [`skills`] |
//! | tools | `.claude.json` user-scope `mcpServers` | [`tools`] |
//! | (backup only) | `.claude.json` `projects.*.mcpServers` | [`local_mcp`] |
//! | (backup only) | `.claude.json` preferences (`theme`, `editorMode`, ...) | [`preferences`] |
//! | memory | `projects/<bucket>/memory/*.md` | [`memory`] |
//! | settings | `settings.json` `model`, `permissions.defaultMode`, `effortLevel` | [`settings`] |
//!
//! Where things are: [`layout`]; ids: [`ids`]; the transcript format: [`transcript`], tool
//! calls: [`calls`], JSON files edited in place: [`jsonfile`]. The mapping decisions, and what
//! cannot be carried, are written down in `spec/harnesses/claude-code.md`.

mod calls;
mod compose;
mod ids;
mod instructions;
mod jsonfile;
mod layout;
mod line;
mod local_mcp;
mod memory;
mod pasted;
mod preferences;
mod project_settings;
mod projects_part;
mod read;
mod replay;
mod settings;
mod skills;
mod survey;
mod tools;
mod transcript;
mod write;

use asp_format::Descriptor;
use asp_format::KindSet;
use asp_format::StateKind;
use asp_format::answer::ImportAnswer;
use asp_format::name::{HarnessName, SessionId};
use asp_format::state::{Meta, Native, Session, State};

use crate::error::ConvertError;
use crate::harness::{
    Capabilities, Harness, Home, ReadContext, SessionContext, Survey, SurveyContext, Surveyed,
    WriteContext,
};
use crate::kit::source::SourceFile;
use layout::Layout;

/// The harness's name.
pub const NAME: &str = "claude-code";

/// The Claude Code converter.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClaudeCode;

/// `paste-cache/` relative to the home (`None` outside it).
fn paste_cache_rel(home: &crate::Home) -> Option<String> {
    crate::kit::config::relative(&home.dir, &Layout::of(home).paste_cache())
}

/// Whether configuration file `rel` (relative to the home) is in `dir`, the pasted texts'
/// folder relative to the home.
fn in_paste_cache_of(dir: Option<&str>, rel: &str) -> bool {
    dir.is_some_and(|d| rel.strip_prefix(d).is_some_and(|r| r.starts_with('/')))
}

/// Whether configuration file `rel` (relative to the home) is a pasted text of `paste-cache/`.
fn in_paste_cache(home: &crate::Home, rel: &str) -> bool {
    in_paste_cache_of(paste_cache_rel(home).as_deref(), rel)
}

impl Harness for ClaudeCode {
    /// A session's transcript is the first of its files, in its project's folder
    /// (`projects/<folder>/<id>.jsonl`; its subagents' transcripts under it).
    fn surveyed_transcript<'a>(&self, entry: &'a Surveyed) -> Option<&'a SourceFile> {
        entry.files.first()
    }

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

    /// Claude Code 2.1.83: `claude --resume <id>` (`-r`) looks the id up in the project folder of the directory it runs in.
    fn expands_imports(&self) -> bool {
        true
    }

    fn resume_command(&self, id: &str, cwd: Option<&str>) -> Option<String> {
        Some(crate::kit::resume::in_dir(
            cwd,
            format!("claude --resume {id}"),
        ))
    }

    fn store_paths(&self, home: &Home) -> Vec<std::path::PathBuf> {
        let l = Layout::of(home);
        vec![l.config, l.global]
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

    /// The native file `_meta.claudeCode.transcript` names (a subagent's own transcript for a
    /// subagent session).
    fn transcript(
        &self,
        _: &SessionId,
        native: &Native,
        meta: Option<&Meta>,
    ) -> Option<Descriptor> {
        read::transcript(native, meta)
    }

    fn read_kinds(&self, ctx: &ReadContext<'_>) -> Result<State, ConvertError> {
        let layout = Layout::of(ctx.home);
        let wants = |k| ctx.kinds.contains(k);
        let mut state = State::default();
        if wants(StateKind::Instructions) {
            state.instructions = instructions::read(&layout, ctx)?;
        }
        if wants(StateKind::Skills) {
            state.skills = Some(skills::read(&layout, ctx)?);
        }
        if wants(StateKind::Tools) {
            state.tools = tools::read(&layout, ctx);
        }
        if wants(StateKind::Memory) {
            let mut known = memory::global_projects(&layout);
            known.extend(survey::project_paths(&layout));
            state.memory = Some(memory::read(&layout, &known, ctx)?);
        }
        if wants(StateKind::Settings) {
            state.settings = settings::read(&layout, ctx);
        }
        Ok(state)
    }

    /// `settings.json` (permissions, hooks, env), `keybindings.json`, `rules/`, `agents/`,
    /// `commands/`, the plugin settings (`plugins/*.json`, not the plugin caches), the prompt
    /// history `history.jsonl` (what ↑ recalls) with the long pasted texts it names
    /// (`paste-cache/*.txt`, deleted by Claude Code after `cleanupPeriodDays` as transcripts
    /// are) and the plan-mode plans `plans/`; never `.credentials.json`. (A session's
    /// checkpoints and todo lists travel with the session.)
    /// `settings.json`: a `permissions.defaultMode` that acts without asking (`acceptEdits`,
    /// `auto`, `bypassPermissions`).
    fn grant_files(&self, home: &crate::Home) -> Vec<String> {
        crate::kit::config::relative(&home.dir, &Layout::of(home).config.join("settings.json"))
            .into_iter()
            .collect()
    }

    fn grants_in(&self, _rel: &str, bytes: &[u8]) -> Option<crate::kit::grants::Granting> {
        crate::kit::grants::mode_that_acts_unasked(
            "Claude Code",
            bytes,
            &["permissions", "defaultMode"],
        )
    }

    fn config_files(&self, home: &crate::Home) -> crate::kit::config::ConfigFiles {
        let layout = Layout::of(home);
        let c = &layout.config;
        crate::kit::config::collect(
            &home.dir,
            &[
                c.join("settings.json"),
                c.join("keybindings.json"),
                c.join("history.jsonl"),
                c.join("plugins").join("config.json"),
                c.join("plugins").join("installed_plugins.json"),
                c.join("plugins").join("known_marketplaces.json"),
            ],
            &[
                c.join("rules"),
                c.join("agents"),
                c.join("commands"),
                c.join("plans"),
                layout.paste_cache(),
            ],
        )
        .only(|rel| !in_paste_cache(home, rel) || rel.ends_with(".txt"))
    }

    /// Rewind checkpoints, todo lists and tool results: the conversation is whole without
    /// them.
    fn side_file(&self, path: &str) -> bool {
        path.starts_with(".claude/file-history/")
            || path.starts_with(".claude/todos/")
            || path.contains("/tool-results/")
    }

    /// `history.jsonl`: `{display, pastedContents, timestamp (epoch ms), project, sessionId}`
    /// per line.
    fn appended_log(
        &self,
        home: &crate::Home,
        rel: &str,
    ) -> Option<crate::kit::appended_log::AppendedLog> {
        let history = Layout::of(home).config.join("history.jsonl");
        (crate::kit::config::relative(&home.dir, &history).as_deref() == Some(rel))
            .then_some(crate::kit::appended_log::AppendedLog::prompts("timestamp"))
    }

    /// The pasted texts the prompt history still names (`pastedContents.*.contentHash`):
    /// Claude Code's cleanup deletes them by age, but the history a backup keeps outlives it.
    /// None when there is no history; all of them when it cannot be read (the backup then
    /// keeps the history's earlier copy): never fewer than named.
    fn config_to_carry(&self, home: &crate::Home, gone: &[&str]) -> Vec<String> {
        let dir = paste_cache_rel(home);
        let pasted: Vec<&str> = gone
            .iter()
            .copied()
            .filter(|rel| in_paste_cache_of(dir.as_deref(), rel))
            .collect();
        if pasted.is_empty() {
            return Vec::new();
        }
        let history = Layout::of(home).config.join("history.jsonl");
        let text = match crate::kit::config::read_regular(&history) {
            Ok(text) => text,
            // No history: nothing names them.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
            // One that cannot be read (the backup keeps its earlier copy): never fewer.
            Err(_) => return pasted.into_iter().map(str::to_owned).collect(),
        };
        let named = pasted::named_in_history(&text);
        pasted
            .into_iter()
            .filter(|rel| {
                let stem = rel
                    .rsplit('/')
                    .next()
                    .unwrap_or("")
                    .trim_end_matches(".txt");
                named.contains(stem)
            })
            .map(str::to_owned)
            .collect()
    }

    /// The prompt history, and the texts it refers to by hash (`paste-cache/`), which Claude
    /// Code writes with mode 0600.
    fn private_config(&self, home: &crate::Home, rel: &str) -> bool {
        self.appended_log(home, rel).is_some_and(|l| l.private) || in_paste_cache(home, rel)
    }

    /// The per-project (local-scope) MCP servers of `.claude.json` ([`local_mcp`]), the
    /// preferences set there ([`preferences`]) and the decisions about each project
    /// ([`project_settings`]): the rest of that file holds the account and caches, so it is
    /// never kept whole.
    fn config_parts(&self, home: &crate::Home) -> Vec<(String, Vec<u8>)> {
        let layout = Layout::of(home);
        let servers = local_mcp::extract(&layout).map(|b| (local_mcp::PART.to_owned(), b));
        let chosen = preferences::extract(&layout).map(|b| (preferences::PART.to_owned(), b));
        let decided =
            project_settings::extract(&layout).map(|b| (project_settings::PART.to_owned(), b));
        servers.into_iter().chain(chosen).chain(decided).collect()
    }

    fn config_part_names(&self) -> Vec<&'static str> {
        vec![local_mcp::PART, preferences::PART, project_settings::PART]
    }

    fn merge_config_part(
        &self,
        home: &crate::Home,
        name: &str,
        bytes: &[u8],
        path_map: &crate::kit::pathmap::PathMap,
        grants: crate::kit::placement::Grants,
        writer: &crate::kit::fsops::Writer,
    ) -> Option<Result<Vec<(String, crate::kit::placement::Placement)>, ConvertError>> {
        let layout = Layout::of(home);
        match name {
            local_mcp::PART => Some(local_mcp::merge(&layout, bytes, path_map, writer)),
            preferences::PART => Some(preferences::merge(&layout, bytes, writer)),
            project_settings::PART => Some(project_settings::merge(
                &layout, bytes, path_map, grants, writer,
            )),
            _ => None,
        }
    }

    fn write(&self, ctx: &WriteContext<'_>) -> Result<ImportAnswer, ConvertError> {
        let layout = Layout::of(ctx.home);
        let mut answer = ImportAnswer::default();
        let state = ctx.state;
        if let Some(sessions) = &state.sessions {
            write::write_sessions(&layout, ctx, sessions, &mut answer)?;
        }
        if let Some(i) = &state.instructions {
            instructions::write(&layout, ctx, i, &mut answer)?;
        }
        if let Some(list) = &state.skills {
            skills::write(&layout, ctx, list, &mut answer)?;
        }
        if let Some(list) = &state.tools {
            tools::write(&layout, ctx, list, &mut answer)?;
        }
        if let Some(notes) = &state.memory {
            memory::write(&layout, ctx, notes, &mut answer)?;
        }
        if let Some(s) = &state.settings {
            settings::write(&layout, ctx, s, &mut answer)?;
        }
        Ok(answer)
    }
}
