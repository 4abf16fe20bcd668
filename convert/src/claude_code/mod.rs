//! Claude Code: `~/.claude/` and `~/.claude.json` as portable state, and back.
//!
//! | kind | Claude Code |
//! |---|---|
//! | sessions | `projects/<bucket>/<id>.jsonl` (+ `<id>/subagents/`), replayed as ACP ([`replay`]) |
//! | instructions | `CLAUDE.md` |
//! | skills | `skills/<name>/` |
//! | tools | `.claude.json` user-scope `mcpServers` ([`mcp`]) |
//! | memory | `projects/<bucket>/memory/*.md` ([`memory`]) |
//! | settings | `settings.json` `model`, `permissions.defaultMode`, `effortLevel` ([`settings`]) |
//!
//! The mapping decisions, and what cannot be carried, are written down in
//! `spec/harnesses/claude-code.md`.

pub mod compose;
pub mod ids;
pub mod jsonfile;
pub mod layout;
pub mod mcp;
pub mod memory;
pub mod read;
pub mod replay;
pub mod settings;
pub mod tools;
pub mod transcript;
pub mod write;

use std::collections::BTreeSet;
use std::fs;
use std::io;

use asp_format::KindSet;
use asp_format::StateKind;
use asp_format::answer::ImportAnswer;
use asp_format::name::HarnessName;
use asp_format::state::{Instructions, State};

use crate::fsops::{Created, Writer};
use crate::harness::{Capabilities, ConvertError, Harness, ReadContext, WriteContext};
use crate::skills::{self, SkillWrite};
use layout::Layout;

/// The harness's name.
pub const HARNESS: &str = "claude-code";

/// Where carried instructions go when `CLAUDE.md` already holds different ones.
const IMPORTED_INSTRUCTIONS: &str = "CLAUDE.imported.md";

/// The Claude Code converter.
#[derive(Debug, Default, Clone, Copy)]
pub struct ClaudeCode;

impl Harness for ClaudeCode {
    fn name(&self) -> HarnessName {
        HarnessName::new(HARNESS).expect("a valid harness name")
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            export: KindSet::ALL,
            import: KindSet::ALL,
        }
    }

    fn read(&self, ctx: &ReadContext<'_>) -> Result<State, ConvertError> {
        let layout = Layout::of(ctx.home);
        let mut state = State::default();
        let mut known: BTreeSet<String> = memory::global_projects(&layout);
        if ctx.kinds.contains(StateKind::Sessions) {
            let read = read::read_sessions(&layout, ctx)?;
            known.extend(read.cwds);
            state.sessions = Some(read.sessions);
        } else if ctx.kinds.contains(StateKind::Memory) {
            known.extend(read::scan_cwds(&layout));
        }
        if ctx.kinds.contains(StateKind::Instructions) {
            state.instructions = read_instructions(&layout, ctx)?;
        }
        if ctx.kinds.contains(StateKind::Skills) {
            state.skills = Some(skills::read_root(
                &layout.config.join("skills"),
                &[],
                ctx.blobs,
                ctx.diagnostics,
            )?);
        }
        if ctx.kinds.contains(StateKind::Tools) {
            state.tools = mcp::read(&layout, ctx);
        }
        if ctx.kinds.contains(StateKind::Memory) {
            state.memory = Some(memory::read(&layout, &known, ctx)?);
        }
        if ctx.kinds.contains(StateKind::Settings) {
            state.settings = settings::read(&layout, ctx);
        }
        state.normalize();
        Ok(state)
    }

    fn write(&self, ctx: &WriteContext<'_>) -> Result<ImportAnswer, ConvertError> {
        let layout = Layout::of(ctx.home);
        let writer = Writer::new(ctx.options.dry_run);
        let mut answer = ImportAnswer::default();
        let state = ctx.state;
        if let Some(sessions) = &state.sessions {
            write::write_sessions(&layout, &writer, ctx, sessions, &mut answer)?;
        }
        if let Some(i) = &state.instructions {
            write_instructions(&layout, &writer, ctx, i, &mut answer)?;
        }
        if let Some(list) = &state.skills {
            let root = layout.config.join("skills");
            let mut any = list.is_empty();
            for s in list {
                match skills::write_skill(&writer, &root, s, ctx.blobs)? {
                    SkillWrite::Written | SkillWrite::AlreadyThere => any = true,
                    SkillWrite::Conflict(why) => {
                        answer.refuse(StateKind::Skills, format!("{why}; kept yours"))
                    }
                }
            }
            if any {
                answer.take(StateKind::Skills);
            }
        }
        if let Some(tools) = &state.tools {
            mcp::write(&layout, &writer, tools, &mut answer, ctx.diagnostics)?;
        }
        if let Some(notes) = &state.memory {
            memory::write(
                &layout,
                &writer,
                notes,
                ctx.blobs,
                &mut answer,
                ctx.diagnostics,
            )?;
        }
        if let Some(s) = &state.settings {
            settings::write(&layout, &writer, s, &mut answer)?;
        }
        Ok(answer)
    }
}

/// `CLAUDE.md`, the user's instructions. User rules (`rules/*.md`) are loaded beside it by
/// Claude Code but are not part of the one AGENTS.md the protocol carries: reported.
fn read_instructions(
    layout: &Layout,
    ctx: &ReadContext<'_>,
) -> Result<Option<Instructions>, ConvertError> {
    let path = layout.config.join("CLAUDE.md");
    if let Ok(rules) = fs::read_dir(layout.config.join("rules")) {
        let mut names: Vec<_> = rules.flatten().map(|e| e.path()).collect();
        names.sort();
        for r in names
            .into_iter()
            .filter(|p| p.extension().is_some_and(|e| e == "md"))
        {
            ctx.diagnostics.skipped(
                &r,
                None,
                "user rules are loaded by Claude Code beside CLAUDE.md, but the instructions kind is one AGENTS.md; not carried",
            );
        }
    }
    match fs::read(&path) {
        Ok(bytes) => {
            if std::str::from_utf8(&bytes).is_err() {
                ctx.diagnostics
                    .skipped(&path, None, "CLAUDE.md is not UTF-8 text; not carried");
                return Ok(None);
            }
            Ok(Some(Instructions {
                text: ctx.blobs.put(&bytes)?,
            }))
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConvertError::io(&path)(e)),
    }
}

/// Writes `CLAUDE.md`. Different instructions already there are never replaced: the carried
/// ones are saved beside them as `CLAUDE.imported.md` and reported as not taken, with how to
/// use them.
fn write_instructions(
    layout: &Layout,
    writer: &Writer,
    ctx: &WriteContext<'_>,
    i: &Instructions,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let path = layout.config.join("CLAUDE.md");
    let text = ctx.blobs.read_all(&i.text)?;
    match fs::read(&path) {
        Ok(existing) if existing == text => {
            answer.take(StateKind::Instructions);
            return Ok(());
        }
        Ok(_) => {}
        Err(_) => {
            if writer.create_new(&path, &text, false)? == Created::New {
                answer.take(StateKind::Instructions);
                return Ok(());
            }
        }
    }
    let aside = layout.config.join(IMPORTED_INSTRUCTIONS);
    let saved = match fs::read(&aside) {
        Ok(existing) => existing == text,
        Err(_) => writer.create_new(&aside, &text, false)? == Created::New,
    };
    answer.refuse(
        StateKind::Instructions,
        if saved {
            format!(
                "{} already holds different instructions, so it was left as it is; the carried ones are in {} (add the line `@~/.claude/{IMPORTED_INSTRUCTIONS}` to CLAUDE.md to use them)",
                path.display(),
                aside.display()
            )
        } else {
            format!(
                "{} already holds different instructions, and so does {}; nothing was written",
                path.display(),
                aside.display()
            )
        },
    );
    Ok(())
}
