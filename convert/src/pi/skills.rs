//! Skills: `~/.agents/skills/` (shared with other harnesses) and `A/skills/` (Pi's own), read
//! and written by [`crate::kit::skills`]. A skill from `A/skills` says so in `_meta.pi.dir`
//! and goes back there; any other goes to `A/skills`, unless the shared folder has it.

use asp_format::answer::ImportAnswer;
use asp_format::state::{Meta, Skill};
use serde_json::json;

use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::skills;

use crate::kit::skills::AGENTS_SKILLS;
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
    // Skills read from `~/.agents/skills` carry no `dir`, so they go back there (the first).
    let folders = [
        ("agents", layout.root.join(AGENTS_SKILLS)),
        (OWN, layout.agent.join("skills")),
    ];
    skills::write_to_folders(ctx, list, answer, "pi", "Pi", &folders)
}
