//! Skills: `~/.agents/skills/` (shared, where Gemini looks first) and `~/.gemini/skills/`, read
//! and written by [`crate::kit::skills`]. A skill from `.gemini/skills` says so in
//! `_meta.gemini.dir` and goes back there.

use asp_format::answer::ImportAnswer;
use asp_format::state::{Meta, Skill};
use serde_json::json;

use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::skills;

/// Where skills live relative to the home, and how a skill says it came from `.gemini`.
const GEMINI_SKILLS: &str = ".gemini/skills";
use crate::kit::skills::AGENTS_SKILLS;

fn skill_meta(dir: &str) -> Meta {
    let mut m = Meta::new();
    m.insert("gemini".into(), json!({"dir": dir}));
    m
}

pub fn read(layout: &Layout, ctx: &ReadContext<'_>) -> Result<Vec<Skill>, ConvertError> {
    let root = &layout.root;
    let shared = skills::read_root(&root.join(AGENTS_SKILLS), &[], ctx.blobs, ctx.diagnostics)?;
    let own = skills::read_root(&root.join(GEMINI_SKILLS), &[], ctx.blobs, ctx.diagnostics)?;
    let mut out = shared;
    for mut s in own {
        if out.iter().any(|o| o.name == s.name) {
            // Within a tier Gemini lets `.agents` win over `.gemini`.
            ctx.diagnostics.left_out(
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

pub fn write(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    list: &[Skill],
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    // Each into the root it came from (`.agents` unless it says `.gemini`); a different skill
    // of that name in the other root is refused, since Gemini would see only one of the two.
    let root = &layout.root;
    skills::write_to_folders(
        ctx,
        list,
        answer,
        "gemini",
        "Gemini",
        &[
            (AGENTS_SKILLS, root.join(AGENTS_SKILLS)),
            (GEMINI_SKILLS, root.join(GEMINI_SKILLS)),
        ],
    )
}
