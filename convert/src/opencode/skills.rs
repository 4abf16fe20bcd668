//! Skills: OpenCode's own `<config>/skills/` and `<config>/skill/`, and `~/.agents/skills/`
//! (shared with other harnesses), read and written by [`crate::kit::skills`] (spec §1) [bin
//! `Skill.discovery`: `~/.claude/skills` and `~/.agents/skills` (`skills/**/SKILL.md`), then
//! each config dir's `{skill,skills}/**/SKILL.md`, then config `skills.paths`].
//!
//! `~/.claude/skills/` is Claude Code's and carried by its converter. A skill says where it came
//! from in `_meta.opencode.dir` (`skills`, `skill`, `agents`) and goes back there; a skill from
//! another harness goes to `<config>/skills/`. OpenCode keys skills by their front matter name
//! and parses them concurrently, so of two folders with one name which it uses is not defined
//! (it logs "duplicate skill name"): asp carries the first of `skills/`, `skill/`,
//! `~/.agents/skills/` and reports the others.

use std::path::PathBuf;

use asp_format::answer::ImportAnswer;
use asp_format::state::{Meta, Skill};
use serde_json::json;

use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::skills;

/// Where OpenCode reads skills from (under the home), by the name `_meta.opencode.dir` gives.
fn roots(layout: &Layout) -> [(&'static str, PathBuf); 3] {
    [
        ("skills", layout.config.join("skills")),
        ("skill", layout.config.join("skill")),
        ("agents", layout.shared_skills()),
    ]
}

pub fn read(layout: &Layout, ctx: &ReadContext<'_>) -> Result<Vec<Skill>, ConvertError> {
    let mut out: Vec<Skill> = Vec::new();
    for (dir, root) in roots(layout) {
        for mut s in skills::read_root(&root, &[], ctx.blobs, ctx.diagnostics)? {
            if let Some(first) = out.iter().find(|o| o.name == s.name) {
                let at = roots(layout)
                    .into_iter()
                    .find(|(d, _)| Some(*d) == dir_of(first))
                    .map(|(_, p)| p.display().to_string())
                    .unwrap_or_default();
                ctx.diagnostics.left_out(
                    &root.join(s.name.as_str()),
                    None,
                    format!(
                        "skill {} is also in {at} (OpenCode uses one of the two, which one is \
                         not defined); that one is carried, this copy is not",
                        s.name
                    ),
                );
                continue;
            }
            let mut m = Meta::new();
            m.insert("opencode".into(), json!({"dir": dir}));
            s.meta = Some(m);
            out.push(s);
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// `_meta.opencode.dir` of a skill read from OpenCode.
fn dir_of(s: &Skill) -> Option<&str> {
    s.meta.as_ref()?.get("opencode")?.get("dir")?.as_str()
}

pub fn write(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    list: &[Skill],
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    skills::write_to_folders(ctx, list, answer, "opencode", "OpenCode", &roots(layout))
}
