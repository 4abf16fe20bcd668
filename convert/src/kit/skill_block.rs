//! A skill invoked by a command, as a prompt's text holds it.
//!
//! Pi expands `/skill:<name> <args>` into the skill's text in a block, then what was typed
//! after the command: `<skill name="…" location="…">\n…\n</skill>\n\n<args>`
//! (spec/harnesses/pi.md §3). The block is what the model reads; the command is what the user
//! typed, and what a title made of the prompt says (as Claude Code's reader titles a command by
//! `/name args`, not by its `<command-name>` markup). The stream carries the text as it was, so
//! a writer titling a session by its first prompt meets the block whatever the harness.

/// A `<skill …>` block opening a prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkillBlock<'a> {
    pub name: &'a str,
    pub location: Option<&'a str>,
    /// What was typed after the command: the text after `</skill>`, trimmed (empty when the
    /// block is not closed).
    pub args: &'a str,
}

impl SkillBlock<'_> {
    /// The command that was typed: `/skill:<name> <args>`.
    pub fn command(&self) -> String {
        match self.args {
            "" => format!("/skill:{}", self.name),
            args => format!("/skill:{} {args}", self.name),
        }
    }
}

/// The skill block `text` opens with, when it opens with one that names its skill.
pub fn parse(text: &str) -> Option<SkillBlock<'_>> {
    let (head, body) = text.strip_prefix("<skill ")?.split_once('>')?;
    let attr = |k: &str| {
        let from = head.find(&format!("{k}=\""))? + k.len() + 2;
        let len = head[from..].find('"')?;
        Some(&head[from..from + len])
    };
    Some(SkillBlock {
        name: attr("name")?,
        location: attr("location"),
        args: body.split_once("</skill>").map_or("", |(_, a)| a.trim()),
    })
}

/// The prompt `text` as the user typed it: a skill block opening it given back as its command.
pub fn as_typed(text: &str) -> std::borrow::Cow<'_, str> {
    match parse(text) {
        Some(b) => b.command().into(),
        None => text.into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_skill_block_is_the_command_typed() {
        let t = "<skill name=\"route-check\" location=\"/h/.pi/agent/skills/route-check/SKILL.md\">\nReferences are relative to /h.\n\n# Route check\n</skill>\n\nAdd an /orders route.";
        let b = parse(t).unwrap();
        assert_eq!(b.name, "route-check");
        assert_eq!(b.location, Some("/h/.pi/agent/skills/route-check/SKILL.md"));
        assert_eq!(b.args, "Add an /orders route.");
        assert_eq!(as_typed(t), "/skill:route-check Add an /orders route.");
        // Without arguments, or a block never closed: the command alone.
        assert_eq!(
            as_typed("<skill name=\"x\" location=\"/s\">\nbody\n</skill>\n"),
            "/skill:x"
        );
        assert_eq!(as_typed("<skill name=\"x\">\nbody"), "/skill:x");
        // Anything else is the text itself.
        assert_eq!(as_typed("plain"), "plain");
        assert_eq!(as_typed("<skill>no name</skill>"), "<skill>no name</skill>");
        assert!(parse("a <skill name=\"x\"> later").is_none());
    }
}
