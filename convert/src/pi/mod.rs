//! Pi (`@mariozechner/pi-coding-agent`, ACP through `pi-acp`): the agent dir `~/.pi/agent/`
//! (`$PI_CODING_AGENT_DIR`) and the shared `~/.agents/skills/`.
//!
//! | kind | where | module |
//! |---|---|---|
//! | sessions | `A/sessions/--<cwd>--/<time>_<id>.jsonl`, a tree of entries | [`survey`], [`read`] ([`entries`]) → [`replay`]; [`write`](mod@write) ← [`compose`] |
//! | instructions | `A/AGENTS.md` (else `A/CLAUDE.md`) | [`instructions`] |
//! | skills | `A/skills/`, `.agents/skills/` | [`skills`] |
//! | settings | `defaultProvider`/`defaultModel`, `defaultThinkingLevel` in `A/settings.json` | [`settings`] |
//!
//! Pi has no MCP servers and no memory store, so this converter neither gives nor takes
//! those kinds; `auth.json` and the keys in `models.json` are credentials and never read.
//! Where things are: [`layout`]; ids and names: [`ids`]; tool calls: [`calls`]. The facts
//! behind every rule are in `spec/harnesses/pi.md` (verified against Pi 0.73.1 and pi-acp
//! 0.0.24).

mod calls;
mod compose;
mod entries;
mod ids;
mod instructions;
mod layout;
mod read;
mod replay;
mod settings;
mod skills;
mod survey;
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
use crate::kit::credentialed_json::{CredentialedJson, Secret};
use crate::kit::placement::Tally;
use crate::kit::source::SourceFile;
use layout::Layout;

/// The harness's name.
pub const NAME: &str = "pi";

/// The Pi converter.
#[derive(Debug, Default, Clone, Copy)]
pub struct Pi;

/// What Pi keeps: everything but MCP servers and memory, which it has no place for.
fn kinds() -> KindSet {
    KindSet::EMPTY
        .with(StateKind::Sessions)
        .with(StateKind::Instructions)
        .with(StateKind::Skills)
        .with(StateKind::Settings)
}

/// `models.json`: its providers' `apiKey` (a key, an environment variable's name or a
/// `!command`; masked, as Pi refuses a provider that defines models without one) and the
/// `headers` of a provider or a model are credentials (spec §1.1).
const MODELS: CredentialedJson = CredentialedJson {
    file: ".pi/agent/models.json",
    part: ".pi/agent/models.json#withoutCredentials",
    secrets: &[
        Secret {
            at: &["providers", "*", "apiKey"],
            masked: true,
        },
        Secret {
            at: &["providers", "*", "headers"],
            masked: false,
        },
        Secret {
            at: &["providers", "*", "models", "*", "headers"],
            masked: false,
        },
    ],
};

impl Harness for Pi {
    /// A session's one file, in its working directory's folder (`sessions/<cwd>/`).
    fn surveyed_transcript<'a>(&self, entry: &'a Surveyed) -> Option<&'a SourceFile> {
        entry.files.first()
    }

    fn name(&self) -> HarnessName {
        HarnessName::new(NAME).expect("a valid harness name")
    }

    fn resume_env(&self, home: &crate::Home) -> Vec<(&'static str, std::path::PathBuf)> {
        vec![("PI_CODING_AGENT_DIR", home.absolute_dir().join(".pi/agent"))]
    }

    fn store_paths(&self, home: &crate::Home) -> Vec<std::path::PathBuf> {
        vec![Layout::of(home).agent]
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

    /// Pi finds `--session <id prefix>` among the sessions of the directory it runs in (spec/harnesses/pi.md §2).
    fn resume_command(&self, id: &str, cwd: Option<&str>) -> Option<String> {
        Some(crate::kit::resume::in_dir(
            cwd,
            format!("pi --session {id}"),
        ))
    }

    fn capabilities(&self) -> Capabilities {
        Capabilities {
            export: kinds(),
            import: kinds(),
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
        read::read_session(&Layout::of(ctx.home), ctx, entry)
    }

    /// The native file `_meta.pi.file` names.
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
            // Pi's own slash commands, as Claude Code's rules are reported with its
            // instructions: found, and said not to travel, rather than dropped unsaid.
            for p in files_in(&layout.agent.join("prompts"), "md") {
                ctx.diagnostics.left_out(
                    &p,
                    None,
                    "a prompt template (a /command of Pi's own), not a skill; the portable state has no place for it; not carried",
                );
            }
        }
        if wants(StateKind::Settings) {
            state.settings = settings::read(&layout, ctx);
            for p in files_in(&layout.agent.join("themes"), "json") {
                ctx.diagnostics.left_out(
                    &p,
                    None,
                    "a theme of Pi's own; the portable settings have no place for it; not carried",
                );
            }
            // File by file, as a backup keeps them (and says so of each).
            let extensions = layout.agent.join("extensions");
            for (_, p) in self.config_files(ctx.home).keep {
                if p.starts_with(&extensions) {
                    ctx.diagnostics.left_out(
                        &p,
                        None,
                        "a file of Pi's own extensions (code it loads); the portable state has no place for it; not carried",
                    );
                }
            }
        }
        Ok(state)
    }

    /// `settings.json`, the prompt templates `prompts/*.md`, the themes `themes/*.json`, the
    /// user's own extensions `extensions/**` (not their installed packages, `node_modules/`),
    /// and the custom model providers `models.json` (whole when it holds no credential, else
    /// as a part without each provider's `apiKey` and `headers`); never `auth.json`, nor the
    /// managed tools `bin/` or the installed packages `npm/` and `git/`.
    fn config_files(&self, home: &crate::Home) -> crate::kit::config::ConfigFiles {
        let a = Layout::of(home).agent;
        let mut files = vec![a.join("settings.json")];
        files.extend(MODELS.whole(a.join("models.json")));
        files.extend(files_in(&a.join("prompts"), "md"));
        files.extend(files_in(&a.join("themes"), "json"));
        let mut dirs = vec![a.join("extensions")];
        // A skill of `~/.agents/skills` that one of Pi's own hides (skills.rs).
        dirs.extend(crate::kit::skills::shadowed(
            &a.join("skills"),
            &home.dir.join(crate::kit::skills::AGENTS_SKILLS),
        ));
        crate::kit::config::collect(&home.dir, &files, &dirs)
            .only(|rel| !rel.split('/').any(|c| c == "node_modules" || c == ".git"))
    }

    fn credentialed_json(&self) -> &'static [CredentialedJson] {
        &[MODELS]
    }

    fn config_parts(&self, home: &crate::Home) -> Vec<(String, Vec<u8>)> {
        let models = Layout::of(home).agent.join("models.json");
        MODELS.part(&home.dir, &models).into_iter().collect()
    }

    fn write(&self, ctx: &WriteContext<'_>) -> Result<ImportAnswer, ConvertError> {
        let layout = Layout::of(ctx.home);
        let mut answer = ImportAnswer::default();
        let state = ctx.state;
        if let Some(list) = &state.sessions {
            let mut tally = Tally::new(&mut answer, StateKind::Sessions, list.len());
            write::Sessions::new(&layout, ctx).write_all(list, &mut tally)?;
            tally.finish();
        }
        if let Some(i) = &state.instructions {
            instructions::write(&layout, ctx, i, &mut answer)?;
        }
        if let Some(list) = &state.skills {
            skills::write(&layout, ctx, list, &mut answer)?;
        }
        if let Some(s) = &state.settings {
            settings::write(&layout, ctx, s, &mut answer)?;
        }
        Ok(answer)
    }
}

/// The files directly in `dir` whose extension is `ext`, in name order (none when `dir` is not
/// there).
fn files_in(dir: &std::path::Path, ext: &str) -> Vec<std::path::PathBuf> {
    let mut found: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|e| e == ext))
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kit::report::Diagnostics;
    use asp_format::blob::MemoryStore;
    use asp_format::progress::Quiet;

    fn sample() -> crate::harness::Home {
        crate::harness::Home::at(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/pi"),
        )
    }

    #[test]
    fn the_sample_reads_as_expected_md_says() {
        let home = sample();
        let d = Diagnostics::new();
        let survey = Pi
            .survey(&SurveyContext {
                home: &home,
                diagnostics: &d,
            })
            .unwrap();
        assert_eq!(survey.sessions.len(), 6);
        let blobs = MemoryStore::new();
        let ctx = SessionContext {
            home: &home,
            blobs: &blobs,
            diagnostics: &d,
            progress: &Quiet,
            options: crate::harness::ReadOptions::default(),
        };
        let mut counts = std::collections::BTreeMap::new();
        for e in &survey.sessions {
            let s = Pi.read_session(&ctx, e).unwrap().remove(0);
            let text = asp_format::blob::BlobSource::read_all(&blobs, &s.updates).unwrap();
            let mut c = [0usize; 5];
            for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
                let v: serde_json::Value = serde_json::from_slice(line).unwrap();
                let k = [
                    "user_message_chunk",
                    "agent_thought_chunk",
                    "agent_message_chunk",
                    "tool_call",
                    "tool_call_update",
                ];
                if let Some(i) = k.iter().position(|k| v["update"]["sessionUpdate"] == *k) {
                    c[i] += 1;
                }
            }
            counts.insert(s.id.to_string(), (s.title.clone(), c));
        }
        assert!(d.is_empty(), "{:?}", d.items());
        let expect = [
            (
                "01a23401-fede-73bb-a519-9d9e83d26f55",
                "Fix discount codes in checkout",
                [3, 5, 5, 7, 7],
            ),
            (
                "01a23402-0d6b-74ff-8fad-ba5741d5af9e",
                "Where the discount table lives",
                [2, 2, 2, 1, 1],
            ),
            (
                "01a23402-1481-743f-af52-78f1c73ba8d2",
                "Document the discount codes (fork)",
                [2, 1, 3, 1, 1],
            ),
            ("01a23402-1d89-7140-8970-cd7348199b16", "", [3, 0, 3, 4, 4]),
            ("01a23402-2afd-777f-8a31-54819d5a97b9", "", [2, 1, 1, 0, 0]),
            ("01a23402-34b7-7388-8129-ef78ff38aa87", "", [3, 1, 3, 4, 4]),
        ];
        for (id, title, c) in expect {
            assert_eq!(counts[id], (title.to_owned(), c), "{id}");
        }
    }
}
