//! OpenAI Codex CLI: `$CODEX_HOME` (default `~/.codex`) and the shared `~/.agents/skills`.
//!
//! | kind | read from | written to | module |
//! |---|---|---|---|
//! | sessions | `sessions/**/rollout-*.jsonl[.zst]`, `archived_sessions/` | native rollouts back in place, others composed; named in `session_index.jsonl`, indexed in `state_<N>.sqlite` | [`survey`], [`read`] → [`first_pass`], [`replay`]; [`write`](mod@write) ← [`compose`] |
//! | instructions | `AGENTS.override.md` else `AGENTS.md` | the same file, merged | [`instructions`] |
//! | skills | `~/.agents/skills`, `$CODEX_HOME/skills` (not `.system`) | `~/.agents/skills` (or the root it came from) | [`skills`] |
//! | tools | `config.toml` `[mcp_servers.*]` | merged into `config.toml` | [`tools`] |
//! | memory | `memories/**/*.md` | `memories/` (foreign notes under `extensions/ad_hoc/notes/`) | [`memory`] |
//! | settings | `config.toml` | merged into `config.toml` | [`settings`] |
//!
//! Where things are: [`layout`]; ids: [`ids`]; the native formats: [`rollout`] (+ [`zstd`]),
//! [`config`], [`index`], [`state_db`]; tool calls: [`calls`] (+ [`patch`], [`message`]).
//! Facts and decisions are in `spec/harnesses/codex.md`.

mod calls;
mod compose;
mod config;
mod first_pass;
mod ids;
mod index;
mod instructions;
mod layout;
mod memory;
mod message;
mod patch;
mod read;
mod replay;
mod rollout;
mod settings;
mod skills;
mod state_db;
mod survey;
mod time;
mod tools;
mod write;
mod zstd;

use asp_format::KindSet;
use asp_format::StateKind;
use asp_format::answer::ImportAnswer;
use asp_format::name::HarnessName;
use asp_format::state::{Session, State};

use crate::error::ConvertError;
use crate::harness::{
    Capabilities, Harness, Home, ReadContext, SessionContext, Survey, SurveyContext, Surveyed,
    WriteContext,
};
use crate::kit::placement::{Placement, Tally};
use layout::Layout;

/// The harness's name.
pub const NAME: &str = "codex";

/// The Codex converter.
#[derive(Debug, Default, Clone, Copy)]
pub struct Codex;

impl Harness for Codex {
    fn keeps_an_archive(&self) -> bool {
        true
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

    /// Codex 0.171: `codex resume [SESSION_ID]` finds a thread by id wherever it was started.
    fn resume_command(&self, id: &str, cwd: Option<&str>) -> Option<String> {
        Some({
            let _ = cwd;
            format!("codex resume {id}")
        })
    }

    fn resume_env(&self, home: &Home) -> Vec<(&'static str, std::path::PathBuf)> {
        vec![("CODEX_HOME", home.absolute_dir().join(".codex"))]
    }

    fn store_paths(&self, home: &Home) -> Vec<std::path::PathBuf> {
        vec![layout::Layout::of(home).codex]
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

    /// A thread's first rollout, when it is plain JSONL (a `.jsonl.zst` one is compressed
    /// bytes, no transcript, spec/aspstate.md §4).
    fn surveyed_transcript<'a>(
        &self,
        entry: &'a Surveyed,
    ) -> Option<&'a crate::kit::source::SourceFile> {
        let plan: &survey::Plan = entry.plan();
        plan.candidates
            .first()
            .filter(|f| !f.compressed)?
            .source
            .as_ref()
    }

    /// The thread's `cwd`, as [`survey::project_key`] names it: Codex's folders are days, not
    /// projects.
    fn surveyed_project(&self, entry: &Surveyed) -> Option<std::path::PathBuf> {
        self.surveyed_transcript(entry)?;
        let plan: &survey::Plan = entry.plan();
        plan.project.clone()
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
        let mut state = State::default();
        let wants = |k| ctx.kinds.contains(k);
        if wants(StateKind::Instructions) {
            state.instructions = instructions::read(&layout.codex, ctx.blobs, ctx.diagnostics)?;
        }
        if wants(StateKind::Skills) {
            state.skills = Some(skills::read(
                &layout.home,
                &layout.codex,
                ctx.blobs,
                ctx.diagnostics,
            )?);
        }
        if wants(StateKind::Tools) || wants(StateKind::Settings) {
            match config::Config::load(&layout.codex) {
                Ok(c) => {
                    if wants(StateKind::Tools) {
                        state.tools =
                            Some(c.mcp_servers(ctx.diagnostics, ctx.options.redact_secrets));
                    }
                    if wants(StateKind::Settings) {
                        state.settings = Some(c.settings());
                        crate::kit::settings_json::report_own_settings(
                            ctx.diagnostics,
                            &c.path,
                            "Codex",
                            &c.own_keys(),
                        );
                    }
                }
                Err(e) => ctx.diagnostics.lost(
                    &layout.codex.join(config::FILE),
                    None,
                    format!("{}; no MCP servers or settings were read", e.without_path()),
                ),
            }
        }
        if wants(StateKind::Memory) {
            state.memory = Some(memory::read(&layout.codex, ctx.blobs, ctx.diagnostics)?);
        }
        Ok(state)
    }

    /// `config.toml`, `rules/`, `prompts/`, the prompt history `history.jsonl` (what ↑
    /// recalls) and the thread names `session_index.jsonl`; never `auth.json`.
    ///
    /// The thread names are state too (each session's title and its renames), but the state
    /// carries them as each session's `session_info_update`s, to the millisecond and without
    /// the namings of threads the state does not hold: a restore that only appended a line per
    /// thread gave back one naming of each, dated to its last turn (found by a new user's
    /// trial: `updated_at` moved earlier and the renames were gone). Kept whole, the file comes
    /// back as it was, and the state's write then finds each thread named already.
    fn config_files(&self, home: &crate::Home) -> crate::kit::config::ConfigFiles {
        let c = layout::Layout::of(home).codex;
        crate::kit::config::collect(
            &home.dir,
            &[
                c.join("config.toml"),
                c.join("history.jsonl"),
                c.join(index::FILE),
            ],
            &[c.join("rules"), c.join("prompts")],
        )
    }

    /// `config.toml` is TOML ([`config::credentials`]); the others are JSON, if any.
    fn credentials_reader(&self, rel: &str) -> Option<crate::kit::secrets::CredentialsReader> {
        if rel.rsplit('/').next() == Some(config::FILE) {
            return Some(config::credentials);
        }
        crate::kit::secrets::json_credentials_reader(rel)
    }

    /// `config.toml`: its projects' `trust_level`.
    fn grant_files(&self, home: &crate::Home) -> Vec<String> {
        let file = layout::Layout::of(home).codex.join("config.toml");
        crate::kit::config::relative(&home.dir, &file)
            .into_iter()
            .collect()
    }

    fn grants_in(&self, _rel: &str, bytes: &[u8]) -> Option<crate::kit::grants::Granting> {
        config::trusted_projects(bytes)
    }

    /// `history.jsonl`: `{session_id, ts (epoch s), text}` per line; `session_index.jsonl`:
    /// `{id, thread_name, updated_at (RFC 3339)}` per line, appended to as threads are named.
    fn appended_log(
        &self,
        home: &crate::Home,
        rel: &str,
    ) -> Option<crate::kit::appended_log::AppendedLog> {
        let codex = layout::Layout::of(home).codex;
        let is = |name: &str| {
            crate::kit::config::relative(&home.dir, &codex.join(name)).as_deref() == Some(rel)
        };
        if is("history.jsonl") {
            Some(crate::kit::appended_log::AppendedLog::prompts("ts"))
        } else if is(index::FILE) {
            // The last naming of a thread is its name: one the new machine named keeps it.
            // Codex makes the file readable by others, as any file it writes, and a name that
            // reads like a path is a name.
            Some(crate::kit::appended_log::AppendedLog {
                time: "updated_at",
                owner: Some("id"),
                private: false,
                moves_paths: false,
            })
        } else {
            None
        }
    }

    fn write(&self, ctx: &WriteContext<'_>) -> Result<ImportAnswer, ConvertError> {
        let layout = Layout::of(ctx.home);
        let writer = ctx.writer;
        let mut answer = ImportAnswer::default();
        let state = ctx.state;
        // The carried settings and servers are merged first: a composed session runs with
        // the home's settings as they will be, so importing the same state again composes the
        // same bytes (and finds the sessions already there).
        let mut config = config::Config::load(&layout.codex);
        match &mut config {
            Ok(c) => {
                if let Some(list) = &state.tools {
                    tools::merge(c, list, &mut answer, writer.is_dry_run());
                }
                if let Some(values) = &state.settings {
                    settings::merge(c, values, &mut answer, writer.is_dry_run());
                }
            }
            Err(e) => {
                for (kind, given) in [
                    (StateKind::Tools, state.tools.is_some()),
                    (StateKind::Settings, state.settings.is_some()),
                ] {
                    if given {
                        answer.refuse(kind, format!("{e}; it was left as it is"));
                    }
                }
            }
        }
        let defaults = match &config {
            Ok(c) => defaults_of(c),
            Err(_) => compose::Defaults::default(),
        };

        if let Some(list) = &state.sessions {
            let mut w = write::SessionWriter::new(
                &layout,
                writer,
                ctx.blobs,
                ctx.diagnostics,
                &ctx.options.path_map,
                defaults,
            )?;
            let mut tally = Tally::new(&mut answer, StateKind::Sessions, list.len());
            for s in list {
                ctx.progress.item(s.id.as_str());
                let mut placed = w.write(s)?;
                if let Placement::Refused(reason) = &placed.placement {
                    placed.placement = Placement::Refused(format!("session {}: {reason}", s.id));
                }
                tally.session(s.id.as_str(), placed);
            }
            tally.finish();
        }

        if let Some(i) = &state.instructions {
            let text = ctx.blobs.read_all(&i.text)?;
            let mut tally = Tally::new(&mut answer, StateKind::Instructions, 1);
            let placed = instructions::write(
                writer,
                &layout.codex,
                &text,
                ctx.options.different_instructions(),
                ctx.diagnostics,
                &mut tally,
            )?;
            tally.place(placed);
            tally.finish();
        }

        if let Some(list) = &state.skills {
            let mut tally = Tally::new(&mut answer, StateKind::Skills, list.len());
            for s in list {
                tally.place(
                    match skills::write(writer, &layout.home, &layout.codex, s, ctx.blobs)? {
                        Placement::Refused(reason) => {
                            Placement::Refused(format!("skill {}: {reason}; left as it is", s.name))
                        }
                        p => p,
                    },
                );
            }
            tally.finish();
        }

        if let Ok(c) = &config
            && c.changed()
        {
            let text = c.doc.to_string();
            if c.existed() {
                writer.replace(&c.path, text.as_bytes())?;
            } else {
                writer.create_new(&c.path, text.as_bytes(), false)?;
            }
        }

        if let Some(notes) = &state.memory {
            let mut tally = Tally::new(&mut answer, StateKind::Memory, notes.len());
            for n in notes {
                tally.place(memory::write(writer, &layout.codex, n, ctx.blobs)?);
            }
            tally.finish();
            if !notes.is_empty() && !memories_enabled(&layout) {
                // Neutral in tense: a dry run answers as the real run does.
                ctx.diagnostics.note(
                    &layout.codex.join(config::FILE),
                    None,
                    "Codex reads memories only with `[features] memories = true`: it will not \
                     use the carried notes until that is turned on",
                );
            }
        }
        Ok(answer)
    }
}

/// What a new session in this home would run with.
fn defaults_of(c: &config::Config) -> compose::Defaults {
    use asp_format::state::SettingValue;
    let s = c.settings();
    let get = |k: &str| match s.get(k) {
        Some(SettingValue::Select(v)) => Some(v.clone()),
        _ => None,
    };
    let mode = get(settings::MODE).and_then(|m| settings::parse_mode(&m));
    compose::Defaults {
        settings: settings::TurnSettings {
            model: get(settings::MODEL).filter(|m| settings::is_codex_model(m)),
            effort: get(settings::EFFORT),
            approval: mode.map(|(a, _)| a.to_owned()),
            sandbox: mode.map(|(_, s)| s.to_owned()),
        },
        model_provider: get("model_provider"),
    }
}

fn memories_enabled(layout: &Layout) -> bool {
    config::Config::load(&layout.codex).is_ok_and(|c| {
        c.doc
            .get("features")
            .and_then(|f| f.get("memories"))
            .and_then(|m| m.as_bool())
            == Some(true)
    })
}
