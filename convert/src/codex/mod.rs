//! OpenAI Codex CLI: `$CODEX_HOME` (default `~/.codex`) and the shared `~/.agents/skills`.
//!
//! Facts and decisions are in `spec/harnesses/codex.md`; the modules here follow it:
//!
//! | kind | read from | written to |
//! |---|---|---|
//! | sessions | `sessions/**/rollout-*.jsonl[.zst]`, `archived_sessions/` ([`sessions`]) | native rollouts back in place, others built ([`write`], [`build`]); `session_index.jsonl`, `state_<N>.sqlite` |
//! | instructions | `AGENTS.override.md` else `AGENTS.md` | the same file, merged |
//! | skills | `~/.agents/skills`, `$CODEX_HOME/skills` (not `.system`) | `~/.agents/skills` (or the root it came from) |
//! | tools | `config.toml` `[mcp_servers.*]` | merged into `config.toml` |
//! | memory | `memories/**/*.md` | `memories/` (foreign notes under `extensions/ad_hoc/notes/`) |
//! | settings | `config.toml` | merged into `config.toml` |

mod agents;
mod build;
mod config;
mod ids;
mod index;
mod memory;
mod message;
mod patch;
mod read;
mod rollout;
mod sessions;
mod settings;
mod state_db;
mod survey;
mod time;
mod tools;
mod write;
mod zstd;

use std::path::PathBuf;

use asp_format::KindSet;
use asp_format::StateKind;
use asp_format::answer::ImportAnswer;
use asp_format::name::HarnessName;
use asp_format::state::State;

use crate::fsops::Writer;
use crate::harness::{Capabilities, ConvertError, Harness, Home, ReadContext, WriteContext};
use crate::skills::SkillWrite;

/// The harness name.
pub const NAME: &str = "codex";

/// Where a home keeps Codex's state.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Paths {
    /// The user's home (holds `.agents/skills`).
    pub home: PathBuf,
    /// `CODEX_HOME`.
    pub codex: PathBuf,
}

impl Paths {
    /// `CODEX_HOME` when set and the user did not name a home (`--home`), else `<home>/.codex`.
    pub fn of(home: &Home) -> Paths {
        let env = (!home.explicit)
            .then(|| std::env::var_os("CODEX_HOME"))
            .flatten()
            .filter(|v| !v.is_empty());
        Paths {
            home: home.dir.clone(),
            codex: env
                .map(PathBuf::from)
                .unwrap_or_else(|| home.join(".codex")),
        }
    }
}

/// The Codex converter.
#[derive(Debug, Default, Clone, Copy)]
pub struct Codex;

impl Harness for Codex {
    fn name(&self) -> HarnessName {
        HarnessName::new(NAME).expect("a valid harness name")
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            export: KindSet::ALL,
            import: KindSet::ALL,
        }
    }

    fn read(&self, ctx: &ReadContext<'_>) -> Result<State, ConvertError> {
        let paths = Paths::of(ctx.home);
        let mut state = State::default();
        let wants = |k| ctx.kinds.contains(k);
        if wants(StateKind::Sessions) {
            ctx.progress.begin("Codex sessions", None);
            state.sessions = Some(sessions::read_all(&paths, ctx)?);
            ctx.progress.finish();
        }
        if wants(StateKind::Instructions) {
            state.instructions =
                agents::read_instructions(&paths.codex, ctx.blobs, ctx.diagnostics)?;
        }
        if wants(StateKind::Skills) {
            state.skills = Some(agents::read_skills(
                &paths.home,
                &paths.codex,
                ctx.blobs,
                ctx.diagnostics,
            )?);
        }
        if wants(StateKind::Tools) || wants(StateKind::Settings) {
            match config::Config::load(&paths.codex) {
                Ok(c) => {
                    if wants(StateKind::Tools) {
                        state.tools =
                            Some(c.mcp_servers(ctx.diagnostics, ctx.options.redact_secrets));
                    }
                    if wants(StateKind::Settings) {
                        state.settings = Some(c.settings());
                    }
                }
                Err(e) => ctx.diagnostics.skipped(
                    &paths.codex.join(config::FILE),
                    None,
                    format!("{e}; no MCP servers or settings were read"),
                ),
            }
        }
        if wants(StateKind::Memory) {
            state.memory = Some(memory::read(&paths.codex, ctx.blobs, ctx.diagnostics)?);
        }
        Ok(state)
    }

    fn write(&self, ctx: &WriteContext<'_>) -> Result<ImportAnswer, ConvertError> {
        let paths = Paths::of(ctx.home);
        let writer = Writer::new(ctx.options.dry_run);
        let mut answer = ImportAnswer::default();
        let state = ctx.state;
        let config = config::Config::load(&paths.codex);
        let defaults = match &config {
            Ok(c) => defaults_of(c),
            Err(_) => build::Defaults::default(),
        };

        if let Some(list) = &state.sessions {
            let mut w = write::SessionWriter::new(
                &paths,
                &writer,
                ctx.blobs,
                ctx.diagnostics,
                &ctx.options.path_map,
                defaults,
            )?;
            let mut any = list.is_empty();
            for s in list {
                ctx.progress.item(s.id.as_str());
                match w.write(s)? {
                    write::Written::New { id, .. } | write::Written::AlreadyThere { id } => {
                        answer.sessions.insert(s.id.to_string(), id);
                        any = true;
                    }
                    write::Written::Refused(reason) => {
                        answer.refuse(StateKind::Sessions, format!("session {}: {reason}", s.id));
                    }
                }
            }
            if any {
                answer.take(StateKind::Sessions);
            }
        }

        if let Some(i) = &state.instructions {
            let text = ctx.blobs.read_all(&i.text)?;
            agents::write_instructions(&writer, &paths.codex, &text)?;
            answer.take(StateKind::Instructions);
        }

        if let Some(skills) = &state.skills {
            let mut any = skills.is_empty();
            for s in skills {
                match agents::write_skill(&writer, &paths.home, &paths.codex, s, ctx.blobs)? {
                    SkillWrite::Written | SkillWrite::AlreadyThere => any = true,
                    SkillWrite::Conflict(reason) => answer.refuse(
                        StateKind::Skills,
                        format!("skill {}: {reason}; left as it is", s.name),
                    ),
                }
            }
            if any {
                answer.take(StateKind::Skills);
            }
        }

        if state.tools.is_some() || state.settings.is_some() {
            match config {
                Ok(mut c) => {
                    merge_config(&mut c, state, &mut answer)?;
                    if c.changed() {
                        let text = c.doc.to_string();
                        if c.existed() {
                            writer.replace(&c.path, text.as_bytes())?;
                        } else {
                            writer.create_new(&c.path, text.as_bytes(), false)?;
                        }
                    }
                }
                Err(e) => {
                    for kind in [StateKind::Tools, StateKind::Settings] {
                        let given = match kind {
                            StateKind::Tools => state.tools.is_some(),
                            _ => state.settings.is_some(),
                        };
                        if given {
                            answer.refuse(kind, format!("{e}; it was left as it is"));
                        }
                    }
                }
            }
        }

        if let Some(notes) = &state.memory {
            let mut any = notes.is_empty();
            for n in notes {
                match memory::write(&writer, &paths.codex, n, ctx.blobs)? {
                    memory::Outcome::Refused(reason) => answer.refuse(StateKind::Memory, reason),
                    _ => any = true,
                }
            }
            if any {
                answer.take(StateKind::Memory);
            }
            if !notes.is_empty() && !memories_enabled(&paths) {
                ctx.diagnostics.note(
                    &paths.codex.join(config::FILE),
                    None,
                    "Codex reads memories only with `[features] memories = true`; the notes were written, but Codex will not use them until it is turned on",
                );
            }
        }
        Ok(answer)
    }
}

/// What a new session in this home would run with.
fn defaults_of(c: &config::Config) -> build::Defaults {
    use asp_format::state::SettingValue;
    let s = c.settings();
    let get = |k: &str| match s.get(k) {
        Some(SettingValue::Select(v)) => Some(v.clone()),
        _ => None,
    };
    let mode = get(settings::MODE).and_then(|m| settings::parse_mode(&m));
    build::Defaults {
        settings: settings::TurnSettings {
            model: get(settings::MODEL).filter(|m| settings::is_codex_model(m)),
            effort: get(settings::EFFORT),
            approval: mode.map(|(a, _)| a.to_owned()),
            sandbox: mode.map(|(_, s)| s.to_owned()),
        },
        model_provider: get("model_provider"),
    }
}

fn memories_enabled(paths: &Paths) -> bool {
    config::Config::load(&paths.codex).is_ok_and(|c| {
        c.doc
            .get("features")
            .and_then(|f| f.get("memories"))
            .and_then(|m| m.as_bool())
            == Some(true)
    })
}

fn merge_config(
    c: &mut config::Config,
    state: &State,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    if let Some(tools) = &state.tools {
        let mut any = tools.is_empty();
        for server in tools {
            match c.merge_mcp(server) {
                config::Merge::Added { notes } => {
                    any = true;
                    for n in notes {
                        answer.refuse(
                            StateKind::Tools,
                            format!("MCP server {}: {n}", server.name()),
                        );
                    }
                }
                config::Merge::AlreadyThere => any = true,
                config::Merge::Refused(reason) => answer.refuse(StateKind::Tools, reason),
            }
        }
        if any {
            answer.take(StateKind::Tools);
        }
    }
    if let Some(settings) = &state.settings {
        let mut any = settings.is_empty();
        for (id, value) in settings {
            match c.merge_setting(id, value) {
                Ok(()) => any = true,
                Err(reason) => answer.refuse(StateKind::Settings, reason),
            }
        }
        if any {
            answer.take(StateKind::Settings);
        }
    }
    Ok(())
}
