//! Gemini CLI (`google-gemini/gemini-cli`): `~/.gemini/` and the shared `~/.agents/skills/`.
//!
//! | kind | where | module |
//! |---|---|---|
//! | sessions | `.gemini/tmp/<project>/chats/session-*.jsonl` (log) and `*.json` (legacy), subagent chats in `chats/<parent>/` | [`scan`], [`log`], [`read`]; writing [`sessions`], [`write`], [`place`] |
//! | instructions | `.gemini/GEMINI.md` without its `## Gemini Added Memories` section | [`notes`], [`memory`] |
//! | memory | that section's bullets; `.gemini/tmp/<project>/memory/*.md` | [`notes`], [`memory`] |
//! | skills | `.gemini/skills/`, `.agents/skills/` | [`crate::skills`] |
//! | tools | `mcpServers` in `.gemini/settings.json` | [`settings`] |
//! | settings | `model.name`, `general.defaultApprovalMode` | [`settings`] |
//!
//! Project directories are resolved and registered by [`projects`]. The facts behind every
//! rule are in `spec/harnesses/gemini.md` (verified against the real CLI 0.61.0).

pub mod ids;
pub mod log;
pub mod memory;
pub mod notes;
pub mod place;
pub mod projects;
pub mod read;
pub mod scan;
pub mod sessions;
pub mod settings;
pub mod time;
pub mod tools;
pub mod write;

use std::path::{Path, PathBuf};

use asp_format::answer::ImportAnswer;
use asp_format::kind::{KindSet, StateKind};
use asp_format::name::HarnessName;
use asp_format::state::{Meta, Skill, State};
use serde_json::json;

use crate::fsops::Writer;
use crate::harness::{Capabilities, ConvertError, Harness, Home, ReadContext, WriteContext};
use crate::skills::{self, SkillWrite};

use projects::Projects;

/// The Gemini CLI converter.
#[derive(Debug, Default, Clone, Copy)]
pub struct Gemini;

/// Where skills live relative to the home, and how a skill says it came from `.gemini`.
const GEMINI_SKILLS: &str = ".gemini/skills";
const AGENTS_SKILLS: &str = ".agents/skills";

/// The directory holding `.gemini/` and `.agents/`: the named home, else `$GEMINI_CLI_HOME`
/// (which the CLI uses in place of the OS home), else the user's home.
pub fn root_of(home: &Home) -> PathBuf {
    if !home.explicit
        && let Some(h) = std::env::var_os("GEMINI_CLI_HOME").filter(|h| !h.is_empty())
    {
        return PathBuf::from(h);
    }
    home.dir.clone()
}

fn skill_meta(dir: &str) -> Meta {
    let mut m = Meta::new();
    m.insert("gemini".into(), json!({"dir": dir}));
    m
}

impl Gemini {
    fn read_skills(&self, ctx: &ReadContext<'_>, root: &Path) -> Result<Vec<Skill>, ConvertError> {
        let shared = skills::read_root(&root.join(AGENTS_SKILLS), &[], ctx.blobs, ctx.diagnostics)?;
        let own = skills::read_root(&root.join(GEMINI_SKILLS), &[], ctx.blobs, ctx.diagnostics)?;
        let mut out = shared;
        for mut s in own {
            if out.iter().any(|o| o.name == s.name) {
                // Within a tier Gemini lets `.agents` win over `.gemini`.
                ctx.diagnostics.skipped(
                    &root.join(GEMINI_SKILLS).join(s.name.as_str()),
                    None,
                    format!(
                        "skill {} is also in ~/{AGENTS_SKILLS}, which Gemini uses instead; this copy \
                         was not carried",
                        s.name
                    ),
                );
                continue;
            }
            s.meta = Some(skill_meta(GEMINI_SKILLS));
            out.push(s);
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    fn write_skills(
        &self,
        ctx: &WriteContext<'_>,
        root: &Path,
        list: &[Skill],
        writer: &Writer,
        answer: &mut ImportAnswer,
    ) -> Result<(), ConvertError> {
        answer.take(StateKind::Skills);
        for s in list {
            let own = s
                .meta
                .as_ref()
                .and_then(|m| m.get("gemini"))
                .and_then(|g| g.get("dir"))
                .and_then(|d| d.as_str())
                == Some(GEMINI_SKILLS);
            let (home_dir, other) = if own {
                (GEMINI_SKILLS, AGENTS_SKILLS)
            } else {
                (AGENTS_SKILLS, GEMINI_SKILLS)
            };
            // Already in the other location, file for file: nothing to do.
            let probe = Writer::new(true);
            if skills::write_skill(&probe, &root.join(other), s, ctx.blobs)?
                == SkillWrite::AlreadyThere
            {
                continue;
            }
            match skills::write_skill(writer, &root.join(home_dir), s, ctx.blobs)? {
                SkillWrite::Written | SkillWrite::AlreadyThere => {}
                SkillWrite::Conflict(why) => answer.refuse(
                    StateKind::Skills,
                    format!("skill {}: {why}; it was left as it is", s.name),
                ),
            }
        }
        Ok(())
    }

    fn write_settings(
        &self,
        ctx: &WriteContext<'_>,
        gemini: &Path,
        writer: &Writer,
        answer: &mut ImportAnswer,
    ) -> Result<(), ConvertError> {
        let state = ctx.state;
        if state.tools.is_none() && state.settings.is_none() {
            return Ok(());
        }
        let path = gemini.join("settings.json");
        let mut file = match settings::File::load(&path) {
            Ok(f) => f,
            Err(e) => {
                let why = format!("{e}; asp does not edit a settings file it cannot read");
                if state.tools.is_some() {
                    answer.refuse(StateKind::Tools, why.clone());
                }
                if state.settings.is_some() {
                    answer.refuse(StateKind::Settings, why);
                }
                return Ok(());
            }
        };
        let mut changed = false;
        let mut refusals = Vec::new();
        if let Some(tools) = &state.tools {
            for server in tools {
                let added = file.add_server(server);
                if let settings::Added::Added { withheld }
                | settings::Added::AlreadyThere { withheld } = &added
                    && !withheld.is_empty()
                {
                    refusals.push((
                        StateKind::Tools,
                        format!(
                            "MCP server {:?}: {} not carried; asp never grants that from a \
                             carried state (anyone can write one), so the server is configured \
                             without it (set it in {} yourself if you want it)",
                            server.name(),
                            withheld.join(" and "),
                            path.display()
                        ),
                    ));
                }
                match added {
                    settings::Added::Added { .. } => {
                        changed = true;
                        let r = crate::secrets::redacted(server);
                        if !r.is_empty() {
                            ctx.diagnostics.note(
                                &path,
                                None,
                                format!(
                                    "MCP server {:?} was packed with secrets blanked ({}); fill them in \
                                     before using it",
                                    server.name(),
                                    r.join(", ")
                                ),
                            );
                        }
                    }
                    settings::Added::AlreadyThere { .. } => {}
                    settings::Added::Conflict(why) => refusals.push((StateKind::Tools, why)),
                }
            }
        }
        let mut settings_taken = false;
        if let Some(values) = &state.settings {
            settings_taken = values.is_empty();
            for (id, value) in values {
                use asp_format::state::SettingValue;
                let result = match (id.as_str(), value) {
                    ("model", SettingValue::Select(m)) if settings::is_gemini_model(m) => {
                        Ok(file.set(&["model", "name"], json!(m)))
                    }
                    ("model", SettingValue::Select(m)) => Err(format!(
                        "model {m:?} is not a Gemini model; Gemini keeps its own (model.name)"
                    )),
                    ("mode", SettingValue::Select(mode)) => settings::approval_mode(mode)
                        .map(|m| file.set(&["general", "defaultApprovalMode"], json!(m))),
                    (other, _) => Err(format!(
                        "setting {other:?}: Gemini has no session option of that name (it has \
                         model and mode)"
                    )),
                };
                match result {
                    Ok(c) => {
                        settings_taken = true;
                        changed |= c;
                    }
                    Err(why) => refusals.push((StateKind::Settings, why)),
                }
            }
        }
        if changed && file.has_comments {
            let why = format!(
                "{} has comments, which rewriting it would lose; add the carried entries by hand",
                path.display()
            );
            if state.tools.is_some() {
                answer.refuse(StateKind::Tools, why.clone());
            }
            if state.settings.is_some() {
                answer.refuse(StateKind::Settings, why);
            }
            return Ok(());
        }
        if state.tools.is_some() {
            answer.take(StateKind::Tools);
        }
        if settings_taken {
            answer.take(StateKind::Settings);
        }
        for (kind, why) in refusals {
            answer.refuse(kind, why);
        }
        if changed {
            file.save(writer)?;
        }
        Ok(())
    }
}

impl Harness for Gemini {
    fn name(&self) -> HarnessName {
        HarnessName::new("gemini").expect("a valid name")
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            export: KindSet::ALL,
            import: KindSet::ALL,
        }
    }

    fn read(&self, ctx: &ReadContext<'_>) -> Result<State, ConvertError> {
        let root = root_of(ctx.home);
        let gemini = root.join(".gemini");
        let projects = Projects::load(&gemini, ctx.diagnostics);
        let settings_path = gemini.join("settings.json");
        let file = match settings::File::load(&settings_path) {
            Ok(f) => Some(f),
            Err(e) => {
                // Neither kind is given then: "none" would be a claim the file does not make.
                let at = e
                    .column
                    .map(|c| format!("column {c}: "))
                    .unwrap_or_default();
                ctx.diagnostics.skipped(
                    &settings_path,
                    e.line,
                    format!(
                        "{at}{}; its MCP servers (tools) and settings were not read, and are left \
                         out rather than given as none",
                        e.why
                    ),
                );
                None
            }
        };
        let names = file.as_ref().map_or_else(
            || vec!["GEMINI.md".to_owned()],
            settings::File::context_file_names,
        );
        let mut state = State::default();
        let want = |k| ctx.kinds.contains(k);
        if want(StateKind::Sessions) {
            ctx.progress.begin("sessions", None);
            state.sessions = Some(scan::read_sessions(ctx, &root, &gemini, &projects)?);
            ctx.progress.finish();
        }
        if want(StateKind::Instructions) || want(StateKind::Memory) {
            let f = notes::instructions_file(&gemini, &names);
            let (instructions, mut memory) =
                notes::read_global(&gemini, &f, ctx.blobs, ctx.diagnostics)?;
            if want(StateKind::Instructions) {
                state.instructions = instructions;
            }
            if want(StateKind::Memory) {
                memory.extend(notes::read_projects(
                    &gemini,
                    &projects,
                    ctx.blobs,
                    ctx.diagnostics,
                )?);
                state.memory = Some(memory);
            }
        }
        if want(StateKind::Skills) {
            state.skills = Some(self.read_skills(ctx, &root)?);
        }
        // A settings.json that cannot be read leaves both kinds out (reported above): a kind
        // left out is never one given empty.
        if want(StateKind::Tools) {
            state.tools = file
                .as_ref()
                .and_then(|f| f.mcp_servers(ctx.options.redact_secrets, ctx.diagnostics));
        }
        if want(StateKind::Settings) {
            state.settings = file.as_ref().map(settings::File::settings);
        }
        Ok(state)
    }

    fn write(&self, ctx: &WriteContext<'_>) -> Result<ImportAnswer, ConvertError> {
        let root = root_of(ctx.home);
        let gemini = root.join(".gemini");
        let writer = Writer::new(ctx.options.dry_run);
        let mut answer = ImportAnswer::default();
        let mut projects = Projects::load(&gemini, ctx.diagnostics);
        let state = ctx.state;
        if let Some(list) = &state.sessions {
            if list.is_empty() {
                answer.take(StateKind::Sessions);
            }
            sessions::Sessions {
                ctx,
                gemini: &gemini,
                projects: &mut projects,
                writer: &writer,
                answer: &mut answer,
            }
            .write_all(list)?;
        }
        let names = settings::File::load(&gemini.join("settings.json"))
            .map(|f| f.context_file_names())
            .unwrap_or_else(|_| vec!["GEMINI.md".to_owned()]);
        let notes_list = state.memory.as_deref().unwrap_or(&[]);
        notes::write_global(
            &notes::instructions_file(&gemini, &names),
            state.instructions.as_ref(),
            notes_list,
            ctx.blobs,
            &writer,
            ctx.diagnostics,
            &mut answer,
        )?;
        if let Some(memory) = &state.memory {
            if memory.is_empty() {
                answer.take(StateKind::Memory);
            }
            notes::write_projects(
                &gemini,
                memory,
                &mut projects,
                ctx.blobs,
                &writer,
                &mut answer,
            )?;
        }
        if let Some(list) = &state.skills {
            self.write_skills(ctx, &root, list, &writer, &mut answer)?;
        }
        self.write_settings(ctx, &gemini, &writer, &mut answer)?;
        projects.save(&writer)?;
        Ok(answer)
    }
}
