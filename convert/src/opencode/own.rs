//! What OpenCode reads in its config dir beside the kinds asp carries (spec §1), by OpenCode's
//! own globs [bin: `ConfigAgentPlugin` `{agent,agents}/**/*.md`, `{mode,modes}/*.md`; the
//! command loader `{command,commands}/**/*.md`; `ConfigPlugin` `{plugin,plugins}/*.{ts,js}`;
//! the tool registry `{tool,tools}/*.{js,ts}`; the TUI's `themes/*.json` and `tui.json(c)`]:
//! custom agents, modes and commands, plugins, custom tools, themes and the TUI settings. The
//! portable state has no place for any of them, so a read reports each file as left out,
//! with the kind it would belong to (agents, modes and commands with the skills, custom tools
//! with the tools, the rest with the settings), as Pi and Copilot report theirs. Agents, modes
//! and commands are also the configuration a backup keeps ([`is_kept`]), which then says so.

use std::path::{Path, PathBuf};

use asp_format::kind::StateKind;

use crate::harness::ReadContext;

/// One kind of file OpenCode reads in its config dir and asp does not carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Own {
    Agent,
    Mode,
    Command,
    Plugin,
    Tool,
    Theme,
    Tui,
}

impl Own {
    /// What `rel` (relative to the config dir, `/`-separated) is to OpenCode, if anything.
    pub fn of(rel: &str) -> Option<Own> {
        let parts: Vec<&str> = rel.split('/').collect();
        let ext = |e: &[&str]| {
            let name = parts.last().copied().unwrap_or("");
            e.iter().any(|x| name.ends_with(&format!(".{x}")))
        };
        let direct = parts.len() == 2;
        let nested = parts.len() >= 2;
        match parts[0] {
            "agent" | "agents" if nested && ext(&["md"]) => Some(Own::Agent),
            "mode" | "modes" if direct && ext(&["md"]) => Some(Own::Mode),
            "command" | "commands" if nested && ext(&["md"]) => Some(Own::Command),
            "plugin" | "plugins" if direct && ext(&["ts", "js"]) => Some(Own::Plugin),
            "tool" | "tools" if direct && ext(&["ts", "js"]) => Some(Own::Tool),
            "themes" if direct && ext(&["json"]) => Some(Own::Theme),
            "tui.json" | "tui.jsonc" if parts.len() == 1 => Some(Own::Tui),
            _ => None,
        }
    }

    /// The kind whose read reports it.
    fn kind(self) -> StateKind {
        match self {
            Own::Agent | Own::Mode | Own::Command => StateKind::Skills,
            Own::Tool => StateKind::Tools,
            Own::Plugin | Own::Theme | Own::Tui => StateKind::Settings,
        }
    }

    /// Why it is not carried.
    fn why(self) -> &'static str {
        match self {
            Own::Agent => {
                "a custom agent of OpenCode's own, not a skill; the portable state has no place for it; not carried"
            }
            Own::Mode => {
                "a custom primary agent (mode) of OpenCode's own, not a skill; the portable state has no place for it; not carried"
            }
            Own::Command => {
                "a custom command (a /command of OpenCode's own), not a skill; the portable state has no place for it; not carried"
            }
            Own::Plugin => {
                "a plugin of OpenCode's own (code it loads); the portable state has no place for it; not carried"
            }
            Own::Tool => {
                "a custom tool of OpenCode's own (code it loads), not an MCP server; the portable state has no place for it; not carried"
            }
            Own::Theme => {
                "a theme of OpenCode's own; the portable settings have no place for it; not carried"
            }
            Own::Tui => {
                "OpenCode's TUI settings (theme, keybinds, ...); the portable settings have no place for them; not carried"
            }
        }
    }
}

/// Whether a backup keeps the file at `rel` (relative to the config dir) as OpenCode's own
/// configuration: the agents, modes and commands.
pub fn is_kept(rel: &str) -> bool {
    matches!(Own::of(rel), Some(Own::Agent | Own::Mode | Own::Command))
}

/// Every file (or link to one) in `config` that OpenCode reads as one of [`Own`], in path
/// order. Links to folders are not walked.
fn found(config: &Path) -> Vec<(PathBuf, Own)> {
    let mut out: Vec<(PathBuf, Own)> = walkdir::WalkDir::new(config)
        .follow_links(false)
        .sort_by_file_name()
        .min_depth(1)
        .into_iter()
        // Only the folders OpenCode looks in: not `node_modules/`, nor a skill's files.
        .filter_entry(|e| {
            e.depth() > 1
                || !e.file_type().is_dir()
                || matches!(
                    e.file_name().to_str(),
                    Some(
                        "agent"
                            | "agents"
                            | "mode"
                            | "modes"
                            | "command"
                            | "commands"
                            | "plugin"
                            | "plugins"
                            | "tool"
                            | "tools"
                            | "themes"
                    )
                )
        })
        .flatten()
        .filter(|e| e.path().is_file())
        .filter_map(|e| {
            let rel = e.path().strip_prefix(config).ok()?;
            let rel: Vec<&str> = rel.iter().map(|c| c.to_str()).collect::<Option<_>>()?;
            Some((e.path().to_path_buf(), Own::of(&rel.join("/"))?))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// Reports each file of [`found`] whose kind the read asked for as left out, naming the file.
pub fn report(config: &Path, ctx: &ReadContext<'_>) {
    for (path, own) in found(config) {
        if ctx.kinds.contains(own.kind()) {
            ctx.diagnostics.left_out(&path, None, own.why());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_opencode_reads_is_named_by_its_own_globs() {
        let of = Own::of;
        assert_eq!(of("agent/review.md"), Some(Own::Agent));
        assert_eq!(of("agents/team/review.md"), Some(Own::Agent));
        assert_eq!(of("mode/focus.md"), Some(Own::Mode));
        assert_eq!(of("modes/x/focus.md"), None, "modes are not nested");
        assert_eq!(of("commands/git/ship.md"), Some(Own::Command));
        assert_eq!(of("command/notes.txt"), None);
        assert_eq!(of("plugin/notify.ts"), Some(Own::Plugin));
        assert_eq!(of("plugins/notify.mjs"), None);
        assert_eq!(of("plugins/lib/util.ts"), None);
        assert_eq!(of("tools/jira.js"), Some(Own::Tool));
        assert_eq!(of("themes/night.json"), Some(Own::Theme));
        assert_eq!(of("tui.json"), Some(Own::Tui));
        assert_eq!(of("opencode.json"), None, "read as settings and tools");
        assert_eq!(of("AGENTS.md"), None, "read as instructions");
        assert_eq!(of("skills/x/SKILL.md"), None, "read as skills");
        assert_eq!(of("mcp/issues.py"), None, "not OpenCode's to read");
        assert_eq!(of("agent.md"), None);
    }
}
