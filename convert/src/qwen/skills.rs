//! Skills: `~/.qwen/skills/` (`$QWEN_HOME/skills`) and the shared `~/.agents/skills/`, read and
//! written by [`crate::kit::skills`] (`SKILL.md` with its files, the format every harness
//! shares). A skill from `.agents/skills` says so in `_meta.qwen.dir` and goes back there; any
//! other goes into Qwen's own folder.

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

use crate::kit::skills::AGENTS_SKILLS;

fn skill_meta(dir: &str) -> Meta {
    let mut m = Meta::new();
    m.insert("qwen".into(), json!({"dir": dir}));
    m
}

/// Every skill of both folders; `None` when neither folder exists (the kind is not there).
pub fn read(layout: &Layout, ctx: &ReadContext<'_>) -> Result<Option<Vec<Skill>>, ConvertError> {
    let own_dir = layout.qwen.join("skills");
    let shared_dir = layout.root.join(AGENTS_SKILLS);
    if !own_dir.is_dir() && !shared_dir.is_dir() {
        return Ok(None);
    }
    let mut out = skills::read_root(&own_dir, &[], ctx.blobs, ctx.diagnostics)?;
    for mut s in skills::read_root(&shared_dir, &[], ctx.blobs, ctx.diagnostics)? {
        if out.iter().any(|o| o.name == s.name) {
            ctx.diagnostics.left_out(
                &shared_dir.join(s.name.as_str()),
                None,
                format!(
                    "skill {} is also in {}; that one was carried, not this copy",
                    s.name,
                    own_dir.display()
                ),
            );
            continue;
        }
        s.meta = Some(skill_meta(AGENTS_SKILLS));
        out.push(s);
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok((!out.is_empty()).then_some(out))
}

pub fn write(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    list: &[Skill],
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let own_dir = layout.qwen.join("skills");
    let shared_dir = layout.root.join(AGENTS_SKILLS);
    let mut tally = Tally::new(answer, StateKind::Skills, list.len());
    for s in list {
        let shared = s
            .meta
            .as_ref()
            .and_then(|m| m.get("qwen"))
            .and_then(|g| g.get("dir"))
            .and_then(|d| d.as_str())
            == Some(AGENTS_SKILLS);
        let (dir, other) = if shared {
            (&shared_dir, &own_dir)
        } else {
            (&own_dir, &shared_dir)
        };
        // Already in the other folder, file for file: Qwen sees it there.
        if skills::write_skill(&Writer::new(true), other, s, ctx.blobs)? == Placement::AlreadyThere
        {
            tally.place(Placement::AlreadyThere);
            continue;
        }
        tally.place(match skills::write_skill(ctx.writer, dir, s, ctx.blobs)? {
            Placement::Refused(why) => {
                Placement::Refused(format!("skill {}: {why}; it was left as it is", s.name))
            }
            p => p,
        });
    }
    tally.finish();
    Ok(())
}
