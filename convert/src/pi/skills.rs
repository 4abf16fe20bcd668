//! Skills: `~/.agents/skills/` (shared with other harnesses) and `A/skills/` (Pi's own), read
//! and written by [`crate::kit::skills`]. A skill from `A/skills` says so in `_meta.pi.dir`
//! and goes back there; any other goes to `A/skills`, unless the shared folder has it.

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

const AGENTS_SKILLS: &str = ".agents/skills";
const OWN: &str = "agent";

pub fn read(layout: &Layout, ctx: &ReadContext<'_>) -> Result<Vec<Skill>, ConvertError> {
    let own_root = layout.agent.join("skills");
    let mut out = skills::read_root(&own_root, &[], ctx.blobs, ctx.diagnostics)?;
    for s in &mut out {
        let mut m = Meta::new();
        m.insert("pi".into(), json!({"dir": OWN}));
        s.meta = Some(m);
    }
    let shared = skills::read_root(
        &layout.root.join(AGENTS_SKILLS),
        &[],
        ctx.blobs,
        ctx.diagnostics,
    )?;
    for s in shared {
        if out.iter().any(|o| o.name == s.name) {
            // Pi loads its own skills first; a later one with the same name is ignored.
            ctx.diagnostics.left_out(
                &layout.root.join(AGENTS_SKILLS).join(s.name.as_str()),
                None,
                format!(
                    "skill {} is also in {}, which Pi uses instead; this copy was not carried",
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
    let own_root = layout.agent.join("skills");
    let shared_root = layout.root.join(AGENTS_SKILLS);
    let mut tally = Tally::new(answer, StateKind::Skills, list.len());
    for s in list {
        let own = s
            .meta
            .as_ref()
            .and_then(|m| m.get("pi"))
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
