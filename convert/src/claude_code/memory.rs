//! Auto memory: `projects/<bucket>/memory/*.md`, one folder per project (its git root).
//!
//! Reading: every Markdown file in a memory folder is a note. Its path in the state is
//! `<bucket>/<path inside memory/>` (unique across projects; the bucket is only a label, never
//! decoded); its origin names the file relative to the home and the project, found by encoding
//! every known project path (transcript cwds, `.claude.json` project keys) and matching.
//!
//! Writing: a note goes to the memory folder of its origin's project (or, for a note Claude
//! Code kept, the folder it came from), and gets a `MEMORY.md` index line if none links to it,
//! because Claude Code only loads the index. A carried `MEMORY.md` is merged line by line into
//! the one there. A tombstone removes the note (a Markdown file, only if it is there; what was
//! removed is reported) and every index line linking to it; `MEMORY.md` itself is never
//! removed. An existing note with different text is never replaced.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use asp_format::answer::ImportAnswer;
use asp_format::blob::BlobSource;
use asp_format::kind::StateKind;
use asp_format::name::{HarnessName, RelPath};
use asp_format::state::{MemoryNote, NoteBody, Origin};
use serde_json::Value;

use super::NAME;
use super::layout::{self, Layout, bucket_matches};
use crate::error::ConvertError;
use crate::harness::{ReadContext, WriteContext};
use crate::kit::fsops::Created;
use crate::kit::pathmap::PathMap;
use crate::kit::placement::{Placement, Tally};
use crate::kit::skills::{parse_front_matter, split_front_matter};

const INDEX: &str = "MEMORY.md";

/// Project paths `.claude.json` knows.
pub fn global_projects(layout: &Layout) -> BTreeSet<String> {
    super::jsonfile::read(&layout.global)
        .ok()
        .and_then(|f| {
            f.object
                .get("projects")
                .and_then(Value::as_object)
                .map(|p| p.keys().cloned().collect())
        })
        .unwrap_or_default()
}

/// Reads every memory folder.
pub fn read(
    layout: &Layout,
    known: &BTreeSet<String>,
    ctx: &ReadContext<'_>,
) -> Result<Vec<MemoryNote>, ConvertError> {
    let mut notes = Vec::new();
    let Ok(buckets) = fs::read_dir(layout.projects()) else {
        return Ok(notes);
    };
    let mut buckets: Vec<_> = buckets.flatten().collect();
    buckets.sort_by_key(fs::DirEntry::file_name);
    for b in buckets {
        let dir = b.path().join("memory");
        if !dir.is_dir() {
            continue;
        }
        let Some(bucket) = b.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        let project = known.iter().find(|p| bucket_matches(&bucket, p)).cloned();
        for entry in walkdir::WalkDir::new(&dir)
            .follow_links(false)
            .sort_by_file_name()
            .min_depth(1)
        {
            let entry = entry.map_err(|e| ConvertError::Io {
                path: dir.clone(),
                source: e.into(),
            })?;
            if !entry.file_type().is_file() {
                continue;
            }
            let p = entry.path();
            let rel = p.strip_prefix(&dir).expect("walked under dir");
            if p.extension().and_then(|e| e.to_str()) != Some("md") {
                ctx.diagnostics
                    .left_out(p, None, "not a Markdown note; not carried as memory");
                continue;
            }
            let Ok(rel) = RelPath::from_path(rel) else {
                ctx.diagnostics.lost(
                    p,
                    None,
                    "this note's name cannot be carried portably; skipped",
                );
                continue;
            };
            let bytes = fs::read(p).map_err(ConvertError::io(p))?;
            if std::str::from_utf8(&bytes).is_err() {
                ctx.diagnostics
                    .lost(p, None, "a memory note must be UTF-8 text; skipped");
                continue;
            }
            let Ok(path) = RelPath::new(&format!("{bucket}/{rel}")) else {
                continue;
            };
            notes.push(MemoryNote {
                path,
                origin: Origin {
                    harness: Some(HarnessName::new(NAME).expect("valid")),
                    path: Some(format!("{}/projects/{bucket}/memory/{rel}", layout::CONFIG)),
                    project: project.clone(),
                },
                body: NoteBody::Text(ctx.blobs.put(&bytes)?),
            });
        }
    }
    Ok(notes)
}

/// `(bucket, path inside memory/)` of a note Claude Code kept, from its origin.
fn claude_origin(o: &Origin) -> Option<(String, RelPath)> {
    if o.harness.as_ref().map(HarnessName::as_str) != Some(NAME) {
        return None;
    }
    let rest = o.path.as_deref()?.strip_prefix(".claude/projects/")?;
    let (bucket, rel) = rest.split_once("/memory/")?;
    let bucket = RelPath::new(bucket)
        .ok()
        .filter(|b| !b.as_str().contains('/'))?;
    Some((bucket.as_str().to_owned(), RelPath::new(rel).ok()?))
}

/// The project folder a note without a project names in its path, and the note's path after
/// it: a Claude Code note carried through a harness that keeps no projects (Codex files it as
/// `memories/extensions/ad_hoc/notes/-home-dev-shop/MEMORY.md`) comes back with the folder it
/// had in its path. Only a folder of a project this write knows (`projects`: those of the
/// sessions it writes, so a dry run answers as the write does) or this home has: a component
/// that merely looks like one names no project. With `--map-path OLD=NEW` the folder is named
/// after the old path (`-home-dev-shop`) while the sessions moved to the new one's
/// (`-home-me-shop`): the name is mapped as its path would be, and the mapped one is taken
/// when it is a known project.
fn named_project(
    layout: &Layout,
    projects: &BTreeSet<String>,
    path_map: &PathMap,
    path: &RelPath,
) -> Option<(String, RelPath)> {
    let parts: Vec<&str> = path.components().collect();
    let known = |b: &str| projects.contains(b) || layout.projects().join(b).is_dir();
    parts.iter().enumerate().find_map(|(i, part)| {
        let rest = parts.get(i + 1..).filter(|r| !r.is_empty())?.join("/");
        if !part.starts_with('-') {
            return None;
        }
        let bucket = std::iter::once((*part).to_owned())
            .chain(mapped_buckets(path_map, part))
            .find(|b| known(b))?;
        RelPath::new(&rest).ok().map(|rel| (bucket, rel))
    })
}

/// `bucket` as each rule of `path_map` maps it: a bucket is its project's path with every
/// character but letters and digits a dash, so `OLD`'s bucket, whole or followed by a dash
/// (a folder under it), becomes `NEW`'s. Lossy as buckets are (`/home/dev-old` is under
/// `-home-dev` too): [`named_project`] takes a mapped name only when it is a known project.
fn mapped_buckets<'a>(path_map: &'a PathMap, bucket: &'a str) -> impl Iterator<Item = String> + 'a {
    path_map.rules().filter_map(move |(old, new)| {
        let (from, to) = (layout::bucket(old), layout::bucket(new));
        if bucket == from {
            return Some(to);
        }
        let under = bucket.strip_prefix(&from)?.strip_prefix('-')?;
        Some(format!("{to}-{under}"))
    })
}

/// Where a note goes: its memory folder and its path inside it.
fn target(
    layout: &Layout,
    projects: &BTreeSet<String>,
    path_map: &PathMap,
    note: &MemoryNote,
) -> Result<(PathBuf, RelPath), String> {
    let kept = claude_origin(&note.origin);
    let last =
        || RelPath::new(note.path.components().last().unwrap_or(INDEX)).map_err(|e| e.to_string());
    let (bucket, rel) = match (&note.origin.project, kept) {
        (Some(p), Some((_, rel))) => (layout::bucket(p), rel),
        (Some(p), None) => (layout::bucket(p), last()?),
        (None, Some(kept)) => kept,
        (None, None) => named_project(layout, projects, path_map, &note.path).ok_or_else(|| {
            format!(
                "memory note {} belongs to no project; Claude Code keeps auto memory per project, so it was not written",
                note.path
            )
        })?,
    };
    Ok((layout.projects().join(bucket).join("memory"), rel))
}

#[derive(Default)]
struct Folder<'a> {
    index: Option<&'a MemoryNote>,
    notes: Vec<(RelPath, &'a MemoryNote)>,
    tombstones: Vec<RelPath>,
}

/// The index line for a note: `- [Title](file.md) — hook`.
fn index_line(rel: &RelPath, text: &str) -> String {
    let fm = split_front_matter(text).and_then(|y| parse_front_matter(y).ok());
    let get = |k: &str| {
        fm.as_ref()
            .and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
    };
    let stem = rel
        .components()
        .last()
        .unwrap_or("")
        .trim_end_matches(".md")
        .to_owned();
    let title = get("name").unwrap_or(stem);
    let body = match split_front_matter(text) {
        Some(y) => text
            .split_once(y)
            .map(|(_, rest)| rest.trim_start_matches("---").to_owned())
            .unwrap_or_default(),
        None => text.to_owned(),
    };
    let hook = get("description").or_else(|| {
        body.lines()
            .map(|l| l.trim().trim_start_matches('#').trim())
            .find(|l| !l.is_empty())
            .map(str::to_owned)
    });
    let mut line = format!("- [{title}]({rel})");
    if let Some(h) = hook {
        let h: String = h.chars().take(150).collect();
        line.push_str(" — ");
        line.push_str(&h);
    }
    line
}

/// A carried index with its links to the notes carried with it made to name them where they
/// are written: another harness's index links to its notes by their path under its memory
/// folder (Qwen Code's `project/deploy-freeze.md`), and [`target`] writes such a note flat in
/// the project's folder (`deploy-freeze.md`). Unchanged, the line named a file that is not
/// there, and the note got a second line of its own.
fn relinked(incoming: &str, index: &MemoryNote, notes: &[(RelPath, &MemoryNote)]) -> String {
    let base = index
        .path
        .as_str()
        .rsplit_once('/')
        .map_or(String::new(), |(dir, _)| format!("{dir}/"));
    let mut text = incoming.to_owned();
    for (rel, n) in notes {
        let Some(linked) = n.path.as_str().strip_prefix(&base) else {
            continue;
        };
        if linked != rel.as_str() {
            // As Markdown links it: plain, `./`-relative, with a fragment or a title.
            for (from, to) in [
                (format!("]({linked})"), format!("]({rel})")),
                (format!("](./{linked})"), format!("]({rel})")),
                (format!("]({linked}#"), format!("]({rel}#")),
                (format!("]({linked} "), format!("]({rel} ")),
            ] {
                text = text.replace(&from, &to);
            }
        }
    }
    text
}

fn links_to(line: &str, rel: &RelPath) -> bool {
    line.contains(&format!("]({rel})"))
}

/// Writes notes and applies tombstones.
pub fn write(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    notes: &[MemoryNote],
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let mut tally = Tally::new(answer, StateKind::Memory, notes.len());
    let mut folders: BTreeMap<PathBuf, Folder> = BTreeMap::new();
    // The project folders of the sessions this write carries (written before the notes).
    let projects: BTreeSet<String> = ctx
        .state
        .sessions
        .iter()
        .flatten()
        .filter_map(|s| s.cwd.as_deref())
        .map(layout::bucket)
        .collect();
    for n in notes {
        let (dir, rel) = match target(layout, &projects, &ctx.options.path_map, n) {
            Ok(t) => t,
            Err(why) => {
                tally.place(Placement::Refused(why));
                continue;
            }
        };
        let is_index = rel.components().last() == Some(INDEX);
        if n.body == NoteBody::Deleted && is_index {
            tally.place(Placement::Refused(format!(
                    "memory note {} is deleted in the carried state, but {} is Claude Code's index of a project's memory, not a note; it was not removed",
                    n.path,
                    rel.under(&dir).display()
                )));
            continue;
        }
        if n.body == NoteBody::Deleted && !rel.as_str().ends_with(".md") {
            tally.place(Placement::Refused(format!(
                    "memory note {} is deleted in the carried state, but {} is not a Markdown note; it was not removed",
                    n.path,
                    rel.under(&dir).display()
                )));
            continue;
        }
        let f = folders.entry(dir).or_default();
        match (n.body, rel.as_str() == INDEX) {
            (NoteBody::Deleted, _) => f.tombstones.push(rel),
            (NoteBody::Text(_), true) => f.index = Some(n),
            (NoteBody::Text(_), false) => f.notes.push((rel, n)),
        }
    }
    for (dir, f) in folders {
        write_folder(&dir, &f, ctx, &mut tally)?;
    }
    tally.finish();
    Ok(())
}

fn text_of(blobs: &dyn BlobSource, n: &MemoryNote) -> Result<String, ConvertError> {
    let NoteBody::Text(d) = n.body else {
        return Ok(String::new());
    };
    String::from_utf8(blobs.read_all(&d)?).map_err(|_| {
        ConvertError::carried(
            format!("memory note {}", n.path),
            std::io::Error::new(std::io::ErrorKind::InvalidData, "not UTF-8 text"),
        )
    })
}

/// Writes one memory folder: its notes, its index, its tombstones.
fn write_folder(
    dir: &Path,
    f: &Folder<'_>,
    ctx: &WriteContext<'_>,
    tally: &mut Tally<'_>,
) -> Result<(), ConvertError> {
    let (writer, blobs) = (ctx.writer, ctx.blobs);
    let index_path = dir.join(INDEX);
    let existing = fs::read_to_string(&index_path).ok();
    let mut index = existing.clone();
    if let Some(n) = f.index {
        let incoming = relinked(&text_of(blobs, n)?, n, &f.notes);
        index = Some(match index {
            None => incoming,
            Some(cur) if cur == incoming => cur,
            Some(mut cur) => {
                let have: BTreeSet<&str> = cur.lines().collect();
                let missing: Vec<&str> = incoming
                    .lines()
                    .filter(|l| !l.trim().is_empty() && !have.contains(l))
                    .collect();
                for l in missing {
                    if !cur.is_empty() && !cur.ends_with('\n') {
                        cur.push('\n');
                    }
                    cur.push_str(l);
                    cur.push('\n');
                }
                cur
            }
        });
        tally.place(Placement::New);
    }
    for (rel, n) in &f.notes {
        let text = text_of(blobs, n)?;
        let path = rel.under(dir);
        match fs::read(&path) {
            Ok(old) if old == text.as_bytes() => tally.place(Placement::AlreadyThere),
            Ok(_) => {
                tally.place(Placement::Refused(format!(
                    "a different memory note is already at {}; kept yours",
                    path.display()
                )));
                continue;
            }
            Err(_) => {
                if writer.create_new(&path, text.as_bytes(), false)? == Created::AlreadyExists {
                    tally.place(Placement::Refused(format!(
                        "{} appeared while memory was written; kept it",
                        path.display()
                    )));
                    continue;
                }
                tally.place(Placement::New);
            }
        }
        let cur = index.get_or_insert_with(String::new);
        if !cur.lines().any(|l| links_to(l, rel)) {
            if !cur.is_empty() && !cur.ends_with('\n') {
                cur.push('\n');
            }
            cur.push_str(&index_line(rel, &text));
            cur.push('\n');
        }
    }
    // Lines of the owner's index a tombstone takes out, said as its additions are.
    let mut removed = Vec::new();
    for rel in &f.tombstones {
        let path = rel.under(dir);
        match fs::symlink_metadata(&path) {
            Ok(m) if m.is_file() => {
                if writer.remove(&path)? {
                    ctx.diagnostics.note(
                        &path,
                        None,
                        "removed: the carried state deletes this memory note",
                    );
                }
            }
            Ok(_) => {
                tally.place(Placement::Refused(format!(
                    "the carried state deletes memory note {rel}, but {} is not a regular file; left as it is",
                    path.display()
                )));
                continue;
            }
            // Not there: nothing to remove, only index lines.
            Err(_) => {}
        }
        if let Some(cur) = index.as_mut()
            && cur.lines().any(|l| links_to(l, rel))
        {
            if let Some(before) = &existing {
                removed.extend(
                    before
                        .lines()
                        .filter(|l| links_to(l, rel))
                        .map(|l| format!("{l:?}")),
                );
            }
            let kept: Vec<&str> = cur.lines().filter(|l| !links_to(l, rel)).collect();
            let mut t = kept.join("\n");
            if cur.ends_with('\n') && !t.is_empty() {
                t.push('\n');
            }
            *cur = t;
        }
        tally.place(Placement::New);
    }
    if index != existing
        && let Some(text) = index
    {
        if let Some(before) = &existing {
            // The owner's own index changed: said line by line, as a settings file is.
            let had: BTreeSet<&str> = before.lines().collect();
            let added: Vec<String> = text
                .lines()
                .filter(|l| !l.trim().is_empty() && !had.contains(l))
                .map(|l| format!("{l:?}"))
                .collect();
            tally.wrote_into(&index_path, &added, writer.is_dry_run());
            tally.removed_from(&index_path, &removed, writer.is_dry_run());
            writer.replace(&index_path, text.as_bytes())?;
        } else {
            writer.create_new(&index_path, text.as_bytes(), false)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_lines_name_the_note_and_its_hook() {
        let rel = RelPath::new("feedback_money.md").unwrap();
        assert_eq!(
            index_line(
                &rel,
                "---\nname: Money in cents\ndescription: Store money as integer cents\ntype: feedback\n---\n\nBody\n"
            ),
            "- [Money in cents](feedback_money.md) — Store money as integer cents"
        );
        assert_eq!(
            index_line(
                &RelPath::new("deploy.md").unwrap(),
                "# Deploy\n\nFreeze on Fridays.\n"
            ),
            "- [deploy](deploy.md) — Deploy"
        );
    }

    #[test]
    fn origins_of_kept_notes_are_parsed_safely() {
        let o = Origin {
            harness: Some(HarnessName::new("claude-code").unwrap()),
            path: Some(".claude/projects/-home-dev-shop/memory/a.md".into()),
            project: None,
        };
        assert_eq!(
            claude_origin(&o).map(|(b, r)| (b, r.to_string())),
            Some(("-home-dev-shop".into(), "a.md".into()))
        );
        let evil = Origin {
            path: Some(".claude/projects/../memory/../../x.md".into()),
            ..o
        };
        assert_eq!(claude_origin(&evil), None);
    }
}
