//! Agent Skills folders on disk: reading them byte for byte, writing them without clobbering.
//!
//! Every harness keeps skills the same way (`<root>/<name>/SKILL.md` plus any files), only
//! the roots differ. A skill is carried whole even when its `SKILL.md` front matter is not
//! valid YAML (hand-written skills often are not: `description: Use when: ...`); that is
//! reported, never a reason to leave the skill behind.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use asp_format::StateKind;
use asp_format::answer::ImportAnswer;
use asp_format::blob::{BlobSink, BlobSource};
use asp_format::name::{RelPath, SkillName};
use asp_format::state::{FileEntry, Skill};

use crate::error::ConvertError;
use crate::harness::WriteContext;
use crate::kit::fsops::{Created, Writer, is_executable};
use crate::kit::placement::{Placement, Tally};
use crate::kit::report::Diagnostics;

/// The YAML front matter of a SKILL.md, split off by the Agent Skills rules: the file starts
/// with a `---` line (a BOM and CRLF endings are tolerated) and the block ends at the next
/// line that is exactly `---`. `None` when there is none.
pub fn split_front_matter(text: &str) -> Option<&str> {
    let t = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = t
        .strip_prefix("---\r\n")
        .or_else(|| t.strip_prefix("---\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\r', '\n']) == "---" {
            return Some(&rest[..offset]);
        }
        offset += line.len();
    }
    None
}

/// Parses front matter as YAML into JSON values; the error says why it is not valid.
pub fn parse_front_matter(
    yaml: &str,
) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    serde_saphyr::from_str::<serde_json::Map<String, serde_json::Value>>(yaml)
        .map_err(|e| e.to_string().lines().next().unwrap_or_default().to_owned())
}

/// Checks a SKILL.md against the Agent Skills rules, reporting (never refusing) what is off.
fn check_skill_md(path: &Path, name: &str, bytes: &[u8], diagnostics: &Diagnostics) {
    let Ok(text) = std::str::from_utf8(bytes) else {
        diagnostics.note(path, None, "SKILL.md is not UTF-8; carried as is");
        return;
    };
    let Some(yaml) = split_front_matter(text) else {
        diagnostics.note(
            path,
            None,
            "SKILL.md has no YAML front matter; carried as is",
        );
        return;
    };
    match parse_front_matter(yaml) {
        Err(e) => diagnostics.note(
            path,
            None,
            format!("SKILL.md front matter is not valid YAML ({e}); carried byte for byte"),
        ),
        Ok(fm) => {
            match fm.get("name").and_then(|v| v.as_str()) {
                None => diagnostics.note(path, None, "SKILL.md front matter has no `name`"),
                Some(n) if n != name => diagnostics.note(
                    path,
                    None,
                    format!("SKILL.md names the skill {n:?} but its folder is {name:?}"),
                ),
                Some(_) => {}
            }
            if fm
                .get("description")
                .and_then(|v| v.as_str())
                .is_none_or(str::is_empty)
            {
                diagnostics.note(path, None, "SKILL.md front matter has no `description`");
            }
        }
    }
}

/// Reads one skill folder: every regular file, byte for byte, with its executable bit.
/// A symlink to a file inside the skill is carried as that file's content (and noted); a
/// symlink to a folder is not followed (it may lead anywhere, or loop) and is reported.
pub fn read_skill(
    dir: &Path,
    sink: &dyn BlobSink,
    diagnostics: &Diagnostics,
) -> Result<Option<Skill>, ConvertError> {
    let Some(folder) = dir.file_name().and_then(|n| n.to_str()) else {
        diagnostics.lost(dir, None, "skill folder name is not UTF-8; skipped");
        return Ok(None);
    };
    let name = match SkillName::new(folder) {
        Ok(n) => n,
        Err(e) => {
            diagnostics.lost(dir, None, format!("skipped: {e}"));
            return Ok(None);
        }
    };
    let mut files = Vec::new();
    // The skill folder itself may be a link (the root's entry was resolved by the caller);
    // nothing below it is followed.
    for entry in walkdir::WalkDir::new(dir)
        .follow_links(false)
        .follow_root_links(true)
        .min_depth(1)
    {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let p = e.path().unwrap_or(dir).to_path_buf();
                diagnostics.lost(&p, None, format!("cannot be read ({e}); skipped"));
                continue;
            }
        };
        if entry.file_type().is_dir() {
            continue;
        }
        if entry.file_type().is_symlink() {
            match fs::metadata(entry.path()) {
                Ok(m) if m.is_file() => diagnostics.note(
                    entry.path(),
                    None,
                    "a symbolic link; the file it points to is carried as a plain file",
                ),
                Ok(m) if m.is_dir() => {
                    diagnostics.lost(
                        entry.path(),
                        None,
                        "a symbolic link to a folder; not followed, not carried",
                    );
                    continue;
                }
                _ => {
                    diagnostics.lost(entry.path(), None, "a broken symbolic link; skipped");
                    continue;
                }
            }
        } else if !entry.file_type().is_file() {
            diagnostics.lost(entry.path(), None, "not a regular file; skipped");
            continue;
        }
        let rel = entry.path().strip_prefix(dir).expect("walked under dir");
        let rel = match RelPath::from_path(rel) {
            Ok(r) => r,
            Err(e) => {
                diagnostics.lost(entry.path(), None, format!("skipped: {e}"));
                continue;
            }
        };
        let bytes = fs::read(entry.path()).map_err(ConvertError::io(entry.path()))?;
        if rel.as_str() == "SKILL.md" {
            check_skill_md(entry.path(), folder, &bytes, diagnostics);
        }
        let meta = fs::metadata(entry.path()).map_err(ConvertError::io(entry.path()))?;
        files.push(FileEntry {
            path: rel,
            executable: is_executable(&meta),
            content: sink.put(&bytes)?,
        });
    }
    if !files.iter().any(|f| f.path.as_str() == "SKILL.md") {
        diagnostics.note(dir, None, "skill folder has no SKILL.md; carried as is");
    }
    files.sort_by(|a, b| a.path.as_str().cmp(b.path.as_str()));
    Ok(Some(Skill {
        name,
        files,
        meta: None,
    }))
}

/// The skill folders under `shadowed` that a folder of the same name under `winner` hides
/// from the harness (its reader carries the winner and says this copy was not): a backup keeps
/// them as the harness's own configuration (`Harness::config_files`), so a copy the harness
/// does not use is still never lost. Sorted; none when either root is missing.
///
/// A folder that is the winner itself, reached through a link (`~/.gemini/skills` linked to
/// `~/.agents/skills`), hides nothing. A skill folder that is itself a link is not followed,
/// as the reader does not follow it.
pub fn shadowed(winner: &Path, shadowed: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(shadowed) else {
        return Vec::new();
    };
    let same = |a: &Path, b: &Path| match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    let mut out: Vec<PathBuf> = entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| {
            let other = winner.join(e.file_name());
            other.is_dir() && !same(&other, &e.path())
        })
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// The folders, relative to the home, where a backup keeps a skill folder another hides
/// ([`shadowed`]) with the harness's own configuration: Gemini CLI's own behind
/// `~/.agents/skills`', `~/.agents/skills`' behind Pi's and Copilot CLI's own. A restore
/// writes what is under them after the state (`asp restore`).
pub const HIDDEN_COPIES_UNDER: [&str; 2] = [".agents/skills/", ".gemini/skills/"];

/// The skills folder several harnesses share under the home (Codex, Gemini CLI, Qwen Code, Pi
/// and Copilot CLI read it): the Agent Skills convention's.
pub const AGENTS_SKILLS: &str = ".agents/skills";

/// Whether `rel`, a configuration file's path relative to the home, is in a skill folder
/// another hid ([`HIDDEN_COPIES_UNDER`]).
pub fn is_hidden_copy(rel: &str) -> bool {
    HIDDEN_COPIES_UNDER.iter().any(|r| rel.starts_with(r))
}

/// Reads every skill folder directly under `root`, skipping names in `exclude` (such as
/// Codex's bundled `.system`). A missing root gives no skills.
pub fn read_root(
    root: &Path,
    exclude: &[&str],
    sink: &dyn BlobSink,
    diagnostics: &Diagnostics,
) -> Result<Vec<Skill>, ConvertError> {
    let entries = match fs::read_dir(root) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(ConvertError::io(root)(e)),
    };
    let mut dirs = Vec::new();
    for entry in entries {
        let entry = entry.map_err(ConvertError::io(root))?;
        let path = entry.path();
        let name = entry.file_name();
        if exclude.iter().any(|x| name == *x) {
            continue;
        }
        // A skill may be a symlink to a folder kept elsewhere (dotfiles); follow it.
        if fs::metadata(&path).map(|m| m.is_dir()).unwrap_or(false) {
            dirs.push(path);
        }
    }
    dirs.sort();
    let mut skills = Vec::new();
    for d in dirs {
        if let Some(s) = read_skill(&d, sink, diagnostics)? {
            skills.push(s);
        }
    }
    Ok(skills)
}

/// Writes `skill` as `root/<name>/`, never touching an existing skill of the same name: a
/// different skill of that name is [`Placement::Refused`] with the reason.
pub fn write_skill(
    writer: &Writer,
    root: &Path,
    skill: &Skill,
    blobs: &dyn BlobSource,
) -> Result<Placement, ConvertError> {
    let dir = root.join(skill.name.as_str());
    if dir.exists() {
        for f in &skill.files {
            let p = f.path.under(&dir);
            let same = match fs::read(&p) {
                Ok(existing) => existing == blobs.read_all(&f.content)?,
                Err(_) => false,
            };
            if !same {
                return Ok(Placement::Refused(format!(
                    "a different skill named {} is already in {}",
                    skill.name,
                    dir.display()
                )));
            }
        }
        return Ok(Placement::AlreadyThere);
    }
    if writer.is_dry_run() {
        for f in &skill.files {
            writer.create_new_from(
                &f.path.under(&dir),
                &mut blobs.open(&f.content)?,
                f.executable,
            )?;
        }
        return Ok(Placement::New);
    }
    // All or nothing: the files go into a hidden sibling folder, which is renamed into place
    // once every file is written, so an interrupted write never leaves half a skill.
    fs::create_dir_all(root).map_err(ConvertError::io(root))?;
    let staging = tempfile::Builder::new()
        .prefix(".asp-skill-")
        .tempdir_in(root)
        .map_err(ConvertError::io(root))?;
    let scratch = Writer::new(false);
    for f in &skill.files {
        let p = f.path.under(staging.path());
        let mut r = blobs.open(&f.content)?;
        if scratch.create_new_from(&p, &mut r, f.executable)? == Created::AlreadyExists {
            return Ok(Placement::Refused(format!(
                "skill {} lists {} twice",
                skill.name, f.path
            )));
        }
    }
    let staged = staging.keep();
    if let Err(e) = crate::kit::fsops::rename_noclobber_dir(&staged, &dir) {
        let _ = fs::remove_dir_all(&staged);
        if e.kind() == io::ErrorKind::AlreadyExists {
            return Ok(Placement::Refused(format!(
                "{} appeared while the skill was being written",
                dir.display()
            )));
        }
        return Err(ConvertError::io(&dir)(e));
    }
    writer.record_created(&dir);
    Ok(Placement::New)
}

/// Writes skills for a harness that reads them from several folders (its own, and the shared
/// `~/.agents/skills`): each into the folder its `_meta.<harness>.dir` names among `folders`
/// (`(tag, root)`), the first when it names none. Every other folder is probed first: the same
/// skill there is already there; a different skill of that name there is refused, since the
/// carried one would stand beside it under the same name and the harness would use only one
/// of them (the user's may be the one hidden). `label` names the harness in messages.
///
/// Restoring the harness's own backup ([`crate::harness::WriteOptions::restoring`]), a skill
/// whose `dir` names one of `folders` was read from that folder: written back there, where
/// that exact path is free, it is where the harness had it (a restore writes each file where
/// none is), and a different namesake in another folder (Codex's copy in `~/.agents/skills`,
/// written by the same `asp restore --to all` a moment before, as the backed-up home had both)
/// is left as it is and named in a note, not a reason to leave the harness's own skill out.
/// Carried otherwise, such a skill is refused as any other: the namesake may be the user's,
/// and the harness might use the carried one instead.
pub fn write_to_folders(
    ctx: &WriteContext<'_>,
    list: &[Skill],
    answer: &mut ImportAnswer,
    harness: &str,
    label: &str,
    folders: &[(&str, PathBuf)],
) -> Result<(), ConvertError> {
    let mut tally = Tally::new(answer, StateKind::Skills, list.len());
    for s in list {
        let dir = s
            .meta
            .as_ref()
            .and_then(|m| m.get(harness))
            .and_then(|g| g.get("dir"))
            .and_then(serde_json::Value::as_str);
        let to = folders
            .iter()
            .find(|(d, _)| Some(*d) == dir)
            .unwrap_or(&folders[0]);
        // This harness's own backup (`asp restore`), the skill read from the folder it goes
        // back to.
        let own = ctx.options.restoring && dir.is_some_and(|d| d == to.0);
        let probe = Writer::new(true);
        let mut found = None;
        let mut beside = Vec::new();
        for (_, other) in folders.iter().filter(|(d, _)| *d != to.0) {
            match write_skill(&probe, other, s, ctx.blobs)? {
                Placement::Refused(why) if own => beside.push(why),
                Placement::Refused(why) => {
                    found = Some(Placement::Refused(format!(
                        "skill {}: {why}, a folder {label} also reads skills from (of two skills \
                         with one name it uses one); nothing was written",
                        s.name
                    )));
                    break;
                }
                Placement::AlreadyThere if !own => found = Some(Placement::AlreadyThere),
                _ => {}
            }
        }
        if let Some(p) = found {
            tally.place(p);
            continue;
        }
        let placed = write_skill(ctx.writer, &to.1, s, ctx.blobs)?;
        if placed == Placement::New {
            for why in &beside {
                ctx.diagnostics.note(
                    &to.1.join(s.name.as_str()),
                    None,
                    format!(
                        "skill {} is back where {label} had it; {why}, left as it is (of two \
                         skills with one name {label} uses one)",
                        s.name,
                    ),
                );
            }
        }
        tally.place(match placed {
            Placement::Refused(why) => {
                Placement::Refused(format!("skill {}: {why}; it was left as it is", s.name))
            }
            p => p,
        });
    }
    tally.finish();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::blob::MemoryStore;

    /// A skill folder of one root hides its namesake in the other; a root that is the other
    /// through a link hides nothing (each skill would seem to hide itself).
    #[cfg(unix)]
    #[test]
    fn a_folder_is_hidden_by_its_namesake_not_by_itself() {
        let home = tempfile::tempdir().unwrap();
        let (winner, other) = (home.path().join("agents"), home.path().join("gemini"));
        for root in [&winner, &other] {
            std::fs::create_dir_all(root.join("release-notes")).unwrap();
        }
        std::fs::create_dir_all(other.join("only-here")).unwrap();
        assert_eq!(shadowed(&winner, &other), [other.join("release-notes")]);
        let linked = home.path().join("linked");
        std::os::unix::fs::symlink(&winner, &linked).unwrap();
        assert!(shadowed(&winner, &linked).is_empty());
        assert!(
            is_hidden_copy(".agents/skills/x/SKILL.md") && !is_hidden_copy(".pi/agent/skills/x")
        );
    }

    #[test]
    fn front_matter_is_split_by_the_rules() {
        assert_eq!(
            split_front_matter("---\nname: a\n---\nbody\n---\n"),
            Some("name: a\n")
        );
        assert_eq!(
            split_front_matter("\u{feff}---\r\nname: a\r\n---\r\nbody"),
            Some("name: a\r\n")
        );
        assert_eq!(split_front_matter("# no front matter\n"), None);
        assert_eq!(split_front_matter("---\nname: a\n"), None);
    }

    #[test]
    fn invalid_front_matter_is_reported_and_the_skill_carried() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("colon-trap");
        fs::create_dir_all(dir.join("scripts")).unwrap();
        fs::write(
            dir.join("SKILL.md"),
            "---\nname: colon-trap\ndescription: Use when: things\n---\nBody\n",
        )
        .unwrap();
        fs::write(dir.join("scripts/run.sh"), "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(
                dir.join("scripts/run.sh"),
                fs::Permissions::from_mode(0o755),
            )
            .unwrap();
        }
        let store = MemoryStore::new();
        let diags = Diagnostics::new();
        let skills = read_root(root.path(), &[], &store, &diags).unwrap();
        assert_eq!(skills.len(), 1);
        assert_eq!(skills[0].files.len(), 2);
        assert_eq!(skills[0].files[1].executable, cfg!(unix));
        let items = diags.items();
        assert_eq!(items.len(), 1, "{items:?}");
        assert!(items[0].message.contains("not valid YAML"), "{}", items[0]);
        assert!(!diags.any_lost());

        // Writing it elsewhere, then again: the second time it is already there.
        let dest = tempfile::tempdir().unwrap();
        let w = Writer::new(false);
        assert_eq!(
            write_skill(&w, dest.path(), &skills[0], &store).unwrap(),
            Placement::New
        );
        assert_eq!(
            write_skill(&w, dest.path(), &skills[0], &store).unwrap(),
            Placement::AlreadyThere
        );
        fs::write(dest.path().join("colon-trap/SKILL.md"), "changed").unwrap();
        assert!(matches!(
            write_skill(&w, dest.path(), &skills[0], &store).unwrap(),
            Placement::Refused(_)
        ));
    }

    #[cfg(unix)]
    #[test]
    fn links_inside_a_skill_are_not_followed_into_folders() {
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret.txt"), "not yours").unwrap();
        fs::write(outside.path().join("shared.md"), "shared text").unwrap();
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("linky");
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join("SKILL.md"),
            "---\nname: linky\ndescription: d\n---\n",
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("shared.md"), dir.join("shared.md"))
            .unwrap();
        let store = MemoryStore::new();
        let diags = Diagnostics::new();
        let skills = read_root(root.path(), &[], &store, &diags).unwrap();
        let paths: Vec<&str> = skills[0].files.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["SKILL.md", "shared.md"]);
        assert!(diags.any_lost(), "the folder link is reported");
        let dest = tempfile::tempdir().unwrap();
        write_skill(&Writer::new(false), dest.path(), &skills[0], &store).unwrap();
        let left: Vec<_> = fs::read_dir(dest.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        assert_eq!(left, ["linky"], "no staging folder is left behind");
        assert_eq!(
            fs::read_to_string(dest.path().join("linky/shared.md")).unwrap(),
            "shared text"
        );
    }
}
