//! Skills: `C/skills/` (Copilot's own) and `~/.agents/skills/` (shared with other harnesses),
//! read and written by [`crate::kit::skills`] (spec §1). A skill from `C/skills` says so in
//! `_meta.copilot.dir` and goes back there; any other goes to `~/.agents/skills/`. When both
//! hold a skill of one name, Copilot uses the one in `C/skills` (measured with Copilot 1.0.102:
//! `copilot skill list --json` gave `dup` from `~/.copilot/skills/dup`, source
//! `personal-copilot`, whichever file was newer), so that one is carried.

use asp_format::answer::ImportAnswer;
use asp_format::state::{Meta, Skill};
use serde_json::json;

use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
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
    // Skills read from `~/.agents/skills` carry no `dir`, so they go back there (the first).
    let folders = [("agents", layout.shared_skills()), (OWN, layout.skills())];
    skills::write_to_folders(ctx, list, answer, "copilot", "Copilot CLI", &folders)
}
