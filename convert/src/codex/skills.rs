//! Skills: `~/.agents/skills` (shared with Gemini and OpenCode) and `$CODEX_HOME/skills`
//! (spec/harnesses/codex.md §11.2), read and written by [`crate::kit::skills`].

use crate::kit::skills::AGENTS_SKILLS;
use std::path::{Path, PathBuf};

use asp_format::blob::{BlobSink, BlobSource};
use asp_format::state::Skill;
use serde_json::json;

use crate::error::ConvertError;
use crate::kit::fsops::Writer;
use crate::kit::placement::Placement;
use crate::kit::report::Diagnostics;
use crate::kit::skills;

/// Codex re-installs its bundled skills here at every start: never carried, never written to.
pub const SYSTEM_SKILLS: &str = ".system";

/// The two user skill roots, newest convention first: `~/.agents/skills` (shared with Gemini
/// and OpenCode) and `$CODEX_HOME/skills` (deprecated but still read).
pub fn skill_roots(home: &Path, codex_home: &Path) -> [(PathBuf, &'static str); 2] {
    [
        (home.join(AGENTS_SKILLS), AGENTS_SKILLS),
        (codex_home.join("skills"), ".codex/skills"),
    ]
}

/// Every user skill. A name in both roots is read from `~/.agents/skills` (the current
/// convention, where asp also writes); the other copy is reported, not carried.
pub fn read(
    home: &Path,
    codex_home: &Path,
    sink: &dyn BlobSink,
    diagnostics: &Diagnostics,
) -> Result<Vec<Skill>, ConvertError> {
    let mut out: Vec<Skill> = Vec::new();
    for (root, label) in skill_roots(home, codex_home) {
        for mut skill in skills::read_root(&root, &[SYSTEM_SKILLS], sink, diagnostics)? {
            let dir = root.join(skill.name.as_str());
            if let Some(kept) = out.iter().find(|s| s.name == skill.name) {
                let same = kept.files.len() == skill.files.len()
                    && kept.files.iter().zip(&skill.files).all(|(a, b)| {
                        a.path == b.path && a.content == b.content && a.executable == b.executable
                    });
                let how = if same {
                    "an identical copy"
                } else {
                    "a different skill"
                };
                diagnostics.note(
                    &dir,
                    None,
                    format!(
                        "{how} named {} is also in {}; that one was carried",
                        skill.name,
                        kept.meta
                            .as_ref()
                            .and_then(|m| m.get("codex"))
                            .and_then(|c| c.get("root"))
                            .and_then(|r| r.as_str())
                            .unwrap_or("the other root")
                    ),
                );
                continue;
            }
            skill
                .meta
                .get_or_insert_with(Default::default)
                .insert("codex".into(), json!({"root": label}));
            out.push(skill);
        }
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(out)
}

/// Writes a skill into the root it came from (a Codex skill from `.codex/skills` goes back
/// there), else `~/.agents/skills`. A skill of that name in the other root counts: the same
/// skill there is "already there", a different one is a conflict.
pub fn write(
    writer: &Writer,
    home: &Path,
    codex_home: &Path,
    skill: &Skill,
    blobs: &dyn BlobSource,
) -> Result<Placement, ConvertError> {
    let roots = skill_roots(home, codex_home);
    let from_codex_root = skill
        .meta
        .as_ref()
        .and_then(|m| m.get("codex"))
        .and_then(|c| c.get("root"))
        .and_then(|r| r.as_str())
        == Some(".codex/skills");
    let (primary, other) = if from_codex_root {
        (&roots[1].0, &roots[0].0)
    } else {
        (&roots[0].0, &roots[1].0)
    };
    if skill.name.as_str() == SYSTEM_SKILLS {
        return Ok(Placement::Refused(
            "`.system` is where Codex keeps its bundled skills".into(),
        ));
    }
    if other.join(skill.name.as_str()).exists() {
        // Compare without writing anything there.
        let dry = Writer::new(true);
        return skills::write_skill(&dry, other, skill, blobs);
    }
    skills::write_skill(writer, primary, skill, blobs)
}
