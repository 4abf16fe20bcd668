//! Skills: `~/.agents/skills/` (shared, where Gemini looks first) and `~/.gemini/skills/`, read
//! and written by [`crate::kit::skills`]. A skill from `.gemini/skills` says so in
//! `_meta.gemini.dir` and goes back there.

use asp_format::StateKind;
use asp_format::answer::ImportAnswer;
use asp_format::state::{Meta, Skill};
use serde_json::json;

use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::fsops::Writer;
use crate::kit::placement::{Placement, Tally};
use crate::kit::skills;

/// Where skills live relative to the home, and how a skill says it came from `.gemini`.
const GEMINI_SKILLS: &str = ".gemini/skills";
const AGENTS_SKILLS: &str = ".agents/skills";

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
    let root = &layout.root;
    let mut tally = Tally::new(answer, StateKind::Skills, list.len());
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
        // Already in the other location, file for file: nothing to do. A different skill of
        // that name there is refused: Gemini lets `.agents` win over `.gemini`, so writing
        // this one would hide the user's own, or be hidden by it.
        let probe = Writer::new(true);
        match skills::write_skill(&probe, &root.join(other), s, ctx.blobs)? {
            Placement::AlreadyThere => {
                tally.place(Placement::AlreadyThere);
                continue;
            }
            Placement::Refused(_) => {
                tally.place(Placement::Refused(format!(
                    "skill {}: a different skill of that name is already in ~/{other}, and \
                     Gemini would see only one of the two; it was left as it is",
                    s.name
                )));
                continue;
            }
            _ => {}
        }
        tally.place(
            match skills::write_skill(ctx.writer, &root.join(home_dir), s, ctx.blobs)? {
                Placement::Refused(why) => {
                    Placement::Refused(format!("skill {}: {why}; it was left as it is", s.name))
                }
                p => p,
            },
        );
    }
    tally.finish();
    Ok(())
}
