//! Instructions (`AGENTS.md`) and skills, the two kinds Codex shares with the `.agents`
//! convention (spec/harnesses/codex.md §11.1–11.2).

use std::fs;
use std::path::{Path, PathBuf};

use asp_format::blob::{BlobSink, BlobSource};
use asp_format::state::{Instructions, Skill};
use serde_json::json;

use crate::fsops::{Created, Writer};
use crate::harness::ConvertError;
use crate::report::Diagnostics;
use crate::skills::{self, SkillWrite};

pub const AGENTS_MD: &str = "AGENTS.md";
pub const AGENTS_OVERRIDE_MD: &str = "AGENTS.override.md";
/// Codex re-installs its bundled skills here at every start: never carried, never written to.
pub const SYSTEM_SKILLS: &str = ".system";

/// The file Codex reads its global instructions from: the override when there is one.
pub fn instructions_file(codex_home: &Path) -> PathBuf {
    let over = codex_home.join(AGENTS_OVERRIDE_MD);
    if over.is_file() {
        over
    } else {
        codex_home.join(AGENTS_MD)
    }
}

/// The global instructions. Instructions are text (ASP carries them as UTF-8 Markdown, and the
/// export and directory forms hold them as text), so a file that is not UTF-8 is reported and
/// not carried.
pub fn read_instructions(
    codex_home: &Path,
    sink: &dyn BlobSink,
    diagnostics: &Diagnostics,
) -> Result<Option<Instructions>, ConvertError> {
    let path = instructions_file(codex_home);
    match fs::read(&path) {
        Ok(b) => {
            if let Err(e) = std::str::from_utf8(&b) {
                diagnostics.skipped(
                    &path,
                    None,
                    format!(
                        "not UTF-8 text (invalid byte at offset {}); instructions not carried",
                        e.valid_up_to()
                    ),
                );
                return Ok(None);
            }
            Ok(Some(Instructions {
                text: sink.put(&b)?,
            }))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConvertError::io(&path)(e)),
    }
}

/// What writing instructions did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InstructionsWrite {
    Created(PathBuf),
    AlreadyThere,
    Appended(PathBuf),
}

/// The line that opens instructions asp added to an existing file.
const MARKER: &str = "<!-- Added by asp: instructions carried from another agent. -->";

/// Writes the instructions into the file Codex reads. A file that is there and differs keeps
/// every byte; the incoming text is added at its end under a marker line (once: a second run
/// finds it there).
pub fn write_instructions(
    writer: &Writer,
    codex_home: &Path,
    text: &[u8],
) -> Result<InstructionsWrite, ConvertError> {
    let path = instructions_file(codex_home);
    let existing = match fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(match writer.create_new(&path, text, false)? {
                Created::New => InstructionsWrite::Created(path),
                Created::AlreadyExists => InstructionsWrite::AlreadyThere,
            });
        }
        Err(e) => return Err(ConvertError::io(&path)(e)),
    };
    let incoming = String::from_utf8_lossy(text);
    let have = String::from_utf8_lossy(&existing);
    if incoming.trim().is_empty() || have.contains(incoming.trim()) {
        return Ok(InstructionsWrite::AlreadyThere);
    }
    let mut merged = existing.clone();
    if !merged.ends_with(b"\n") {
        merged.push(b'\n');
    }
    merged.extend_from_slice(format!("\n{MARKER}\n\n").as_bytes());
    merged.extend_from_slice(text);
    writer.replace(&path, &merged)?;
    Ok(InstructionsWrite::Appended(path))
}

/// The two user skill roots, newest convention first: `~/.agents/skills` (shared with Gemini
/// and OpenCode) and `$CODEX_HOME/skills` (deprecated but still read).
pub fn skill_roots(home: &Path, codex_home: &Path) -> [(PathBuf, &'static str); 2] {
    [
        (home.join(".agents/skills"), ".agents/skills"),
        (codex_home.join("skills"), ".codex/skills"),
    ]
}

/// Every user skill. A name in both roots is read from `~/.agents/skills` (the current
/// convention, where asp also writes); the other copy is reported, not carried.
pub fn read_skills(
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
pub fn write_skill(
    writer: &Writer,
    home: &Path,
    codex_home: &Path,
    skill: &Skill,
    blobs: &dyn BlobSource,
) -> Result<SkillWrite, ConvertError> {
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
        return Ok(SkillWrite::Conflict(
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
