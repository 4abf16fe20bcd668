//! Skills: `skills/<name>/` in the config dir, read and written by [`crate::kit::skills`].

use asp_format::StateKind;
use asp_format::answer::ImportAnswer;
use asp_format::state::Skill;

use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::placement::{Placement, Tally};
use crate::kit::skills;

pub fn read(layout: &Layout, ctx: &ReadContext<'_>) -> Result<Vec<Skill>, ConvertError> {
    skills::read_root(
        &layout.config.join("skills"),
        &[],
        ctx.blobs,
        ctx.diagnostics,
    )
}

pub fn write(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    list: &[Skill],
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let root = layout.config.join("skills");
    let mut tally = Tally::new(answer, StateKind::Skills, list.len());
    for s in list {
        tally.place(
            match skills::write_skill(ctx.writer, &root, s, ctx.blobs)? {
                Placement::Refused(why) => Placement::Refused(format!("{why}; kept yours")),
                p => p,
            },
        );
    }
    tally.finish();
    Ok(())
}
