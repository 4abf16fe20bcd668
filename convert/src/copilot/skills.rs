//! Skills: `C/skills/` (Copilot's own) and `~/.agents/skills/` (shared with other harnesses),
//! read and written by [`crate::kit::skills`] (spec §1). A skill from `C/skills` says so in
//! `_meta.copilot.dir` and goes back there; any other goes to `~/.agents/skills/`. When both
//! hold a skill of one name, Copilot uses the one in `C/skills` (measured with Copilot 1.0.102:
//! `copilot skill list --json` gave `dup` from `~/.copilot/skills/dup`, source
//! `personal-copilot`, whichever file was newer), so that one is carried.

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

const OWN: &str = "copilot";

pub fn read(layout: &Layout, ctx: &ReadContext<'_>) -> Result<Vec<Skill>, ConvertError> {
    let own_root = layout.skills();
    let mut out = skills::read_root(&own_root, &[], ctx.blobs, ctx.diagnostics)?;
    for s in &mut out {
        let mut m = Meta::new();
        m.insert("copilot".into(), json!({"dir": OWN}));
        s.meta = Some(m);
    }
    let shared = skills::read_root(&layout.shared_skills(), &[], ctx.blobs, ctx.diagnostics)?;
    for s in shared {
        if out.iter().any(|o| o.name == s.name) {
            ctx.diagnostics.left_out(
                &layout.shared_skills().join(s.name.as_str()),
                None,
                format!(
                    "skill {} is also in {}, which Copilot uses instead; this copy was not carried",
                    s.name,
                    own_root.display()
                ),
            );
            continue;
        }
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
    let own_root = layout.skills();
    let shared_root = layout.shared_skills();
    let mut tally = Tally::new(answer, StateKind::Skills, list.len());
    for s in list {
        let own = s
            .meta
            .as_ref()
            .and_then(|m| m.get("copilot"))
            .and_then(|g| g.get("dir"))
            .and_then(|d| d.as_str())
            == Some(OWN);
        let (to, other) = if own {
            (&own_root, &shared_root)
        } else {
            (&shared_root, &own_root)
        };
        let probe = Writer::new(true);
        if skills::write_skill(&probe, other, s, ctx.blobs)? == Placement::AlreadyThere {
            tally.place(Placement::AlreadyThere);
            continue;
        }
        tally.place(match skills::write_skill(ctx.writer, to, s, ctx.blobs)? {
            Placement::Refused(why) => {
                Placement::Refused(format!("skill {}: {why}; it was left as it is", s.name))
            }
            p => p,
        });
    }
    tally.finish();
    Ok(())
}
