//! Managed auto-memory (on by default in Qwen 0.24): `R/memories/` for the user and
//! `R/projects/<sanitized project root>/memory/` per project, a `MEMORY.md` index and one
//! Markdown file per memory with `name`/`description`/`type` front matter. The legacy
//! `## Qwen Added Memories` section of `QWEN.md` is [`super::instructions`]'s.
//!
//! Reading: every Markdown file of a memory folder is a note: `memories/<path>` (user) or
//! `projects/<dir>/<path>` (project; `origin.project` the cwd its chats name, found by
//! sanitising every chat's cwd, never by decoding the folder name).
//!
//! Writing: a note Qwen kept goes back to its file; a project note from elsewhere goes into its
//! project's memory folder with a `MEMORY.md` index line (Qwen loads the index); a global note
//! from elsewhere goes into the `QWEN.md` section. A file already there with other text is
//! never replaced: the carried note is kept beside it (`<name>~<harness>.md`). A tombstone
//! removes the file it names, if it is there.

use std::collections::BTreeMap;
use std::fs;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};

use asp_format::blob::BlobSink;
use asp_format::name::{HarnessName, RelPath};
use asp_format::state::{MemoryNote, NoteBody, Origin};
use serde_json::Value;

use super::layout::{Layout, QWEN, sanitize_cwd};
use crate::error::ConvertError;
use crate::harness::WriteContext;
use crate::kit::beside::kept_beside;
use crate::kit::fsops::Created;
use crate::kit::placement::{Placement, Tally};
use crate::kit::report::Diagnostics;
use crate::kit::skills::{parse_front_matter, split_front_matter};

const INDEX: &str = "MEMORY.md";

fn name() -> HarnessName {
    HarnessName::new(super::NAME).expect("a valid name")
}

/// The Markdown files under `dir`, by path relative to it, sorted.
fn markdown_files(dir: &Path) -> Vec<(String, PathBuf)> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .flatten()
    {
        let p = e.path();
        if e.file_type().is_file()
            && p.extension().is_some_and(|x| x == "md")
            && let Ok(rel) = p.strip_prefix(dir)
            && let Some(rel) = rel.to_str()
        {
            out.push((rel.replace('\\', "/"), p.to_path_buf()));
        }
    }
    out
}

/// The cwd the chats of a project folder name (first records only).
fn project_of(dir: &Path, name: &str) -> Option<String> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir.join("chats"))
        .ok()?
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    files.into_iter().find_map(|f| {
        let mut line = String::new();
        BufReader::new(crate::kit::source::open_regular(&f).ok()?)
            .read_line(&mut line)
            .ok()?;
        let cwd = serde_json::from_str::<Value>(&line)
            .ok()?
            .get("cwd")?
            .as_str()?
            .to_owned();
        (sanitize_cwd(&cwd) == name).then_some(cwd)
    })
}

fn note(
    path: String,
    origin: String,
    project: Option<String>,
    text: &[u8],
    sink: &dyn BlobSink,
) -> Result<Option<MemoryNote>, ConvertError> {
    let Ok(path) = RelPath::new(&path) else {
        return Ok(None);
    };
    Ok(Some(MemoryNote {
        path,
        origin: Origin {
            harness: Some(name()),
            path: Some(origin),
            project,
        },
        body: NoteBody::Text(sink.put(text)?),
    }))
}

/// Every managed memory file, user then project by project.
pub fn read(
    layout: &Layout,
    sink: &dyn BlobSink,
    diagnostics: &Diagnostics,
) -> Result<Vec<MemoryNote>, ConvertError> {
    let mut out = Vec::new();
    for (rel, p) in markdown_files(&layout.runtime.join("memories")) {
        let text = fs::read(&p).map_err(ConvertError::io(&p))?;
        out.extend(note(
            format!("memories/{rel}"),
            format!("{QWEN}/memories/{rel}"),
            None,
            &text,
            sink,
        )?);
    }
    let mut projects: Vec<PathBuf> = fs::read_dir(layout.projects())
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .collect();
    projects.sort();
    for dir in projects {
        let mem = dir.join("memory");
        if !mem.is_dir() {
            continue;
        }
        let Some(dname) = dir.file_name().and_then(|n| n.to_str()).map(str::to_owned) else {
            continue;
        };
        let project = project_of(&dir, &dname);
        if project.is_none() {
            diagnostics.note(&mem, None, "no chat of this project names its folder, so its project path is not known; its notes are carried without one");
        }
        for (rel, p) in markdown_files(&mem) {
            let text = fs::read(&p).map_err(ConvertError::io(&p))?;
            out.extend(note(
                format!("projects/{dname}/{rel}"),
                format!("{QWEN}/projects/{dname}/memory/{rel}"),
                project.clone(),
                &text,
                sink,
            )?);
        }
    }
    Ok(out)
}

/// Where a note goes: a managed memory file (and its index), or `None` for the `QWEN.md`
/// section.
fn target(layout: &Layout, n: &MemoryNote) -> Option<(PathBuf, String)> {
    let from_qwen = n
        .origin
        .harness
        .as_ref()
        .is_some_and(|h| h.as_str() == super::NAME);
    if from_qwen && let Some(o) = n.origin.path.as_deref().filter(|o| !o.contains('#')) {
        let rest = o.strip_prefix(QWEN)?.strip_prefix('/')?;
        // A project's folder follows its (mapped) project path, as its chats do.
        let rest = match (rest.strip_prefix("projects/"), n.origin.project.as_deref()) {
            (Some(p), Some(project)) => {
                let (_, after) = p.split_once('/')?;
                format!("projects/{}/{after}", sanitize_cwd(project))
            }
            _ => rest.to_owned(),
        };
        let real = layout.runtime.join(rest);
        let dir = real.parent()?.to_path_buf();
        return Some((
            dir.clone(),
            real.strip_prefix(&dir).ok()?.to_string_lossy().into_owned(),
        ));
    }
    let project = n.origin.project.as_deref()?;
    let file = n
        .path
        .as_str()
        .rsplit('/')
        .next()
        .unwrap_or("note.md")
        .to_owned();
    Some((
        layout.projects().join(sanitize_cwd(project)).join("memory"),
        file,
    ))
}

/// The index line Qwen's extractor writes: `- [Title](file.md) — description`.
fn index_line(file: &str, text: &str) -> String {
    let fm = split_front_matter(text).and_then(|f| parse_front_matter(f).ok());
    let get = |k: &str| {
        fm.as_ref()
            .and_then(|m| m.get(k))
            .and_then(|v| v.as_str())
            .map(str::to_owned)
    };
    let title = get("name").unwrap_or_else(|| file.trim_end_matches(".md").to_owned());
    let hook = get("description").unwrap_or_default();
    if hook.is_empty() {
        format!("- [{title}]({file})\n")
    } else {
        format!("- [{title}]({file}) — {hook}\n")
    }
}

/// Writes the notes that go to managed memory files; returns the ones for the `QWEN.md`
/// section.
pub fn write<'n>(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    notes: &'n [MemoryNote],
    tally: &mut Tally<'_>,
) -> Result<Vec<&'n MemoryNote>, ConvertError> {
    let mut section = Vec::new();
    // What to add to each index (carried indexes' texts, then the lines of the notes written
    // beside them), merged once a file after every note is written (so a dry run, which reads
    // the file as it is, adds what the real run adds), and how many carried indexes each
    // holds (each placed as what its file's merge came to).
    let mut indexes: BTreeMap<PathBuf, (Vec<String>, usize)> = BTreeMap::new();
    for n in notes {
        let Some((dir, file)) = target(layout, n) else {
            section.push(n);
            continue;
        };
        let path = dir.join(&file);
        let harness = n
            .origin
            .harness
            .as_ref()
            .map_or("asp", HarnessName::as_str)
            .to_owned();
        let body = match n.body {
            NoteBody::Deleted => {
                if ctx.writer.remove(&path)? {
                    ctx.diagnostics.note(
                        &path,
                        None,
                        format!(
                            "removed: memory note {} was deleted where it came from",
                            n.path
                        ),
                    );
                }
                tally.place(Placement::New);
                continue;
            }
            NoteBody::Text(d) => ctx.blobs.read_all(&d)?,
        };
        if file == INDEX {
            let index = indexes.entry(path).or_default();
            index.0.push(String::from_utf8_lossy(&body).into_owned());
            index.1 += 1;
            continue;
        }
        let mut placed = None;
        for attempt in 1..=100u32 {
            let at = if attempt == 1 {
                path.clone()
            } else {
                let stem = file.trim_end_matches(".md");
                dir.join(format!(
                    "{}.md",
                    kept_beside(stem, "", Some(&harness), attempt - 1).name
                ))
            };
            match fs::read(&at) {
                Ok(b) if b == body => {
                    placed = Some(Placement::AlreadyThere);
                    break;
                }
                Ok(_) => continue,
                Err(_) => {}
            }
            if ctx.writer.create_new(&at, &body, false)? == Created::New {
                let rel = at
                    .strip_prefix(&dir)
                    .map_or(file.clone(), |r| r.to_string_lossy().into_owned());
                if n.origin
                    .harness
                    .as_ref()
                    .is_none_or(|h| h.as_str() != super::NAME)
                {
                    indexes
                        .entry(dir.join(INDEX))
                        .or_default()
                        .0
                        .push(index_line(&rel, &String::from_utf8_lossy(&body)));
                }
                placed = Some(if attempt == 1 {
                    Placement::New
                } else {
                    Placement::Beside
                });
                break;
            }
        }
        tally.place(placed.unwrap_or_else(|| {
            Placement::Refused(format!(
                "memory note {}: 100 different versions are already there",
                n.path
            ))
        }));
    }
    for (path, (texts, carried)) in indexes {
        let placed = merge_index(ctx, tally, &path, &texts)?;
        for _ in 0..carried {
            tally.place(placed.clone());
        }
    }
    Ok(section)
}

/// Adds the lines of `texts` that `MEMORY.md` does not have yet (creating it when missing).
/// The owner's own index, changed, is named in the answer (`tally`), line by line.
fn merge_index(
    ctx: &WriteContext<'_>,
    tally: &mut Tally<'_>,
    path: &Path,
    texts: &[String],
) -> Result<Placement, ConvertError> {
    let old = fs::read_to_string(path).ok();
    // A new index begins as the first text given, byte for byte (a carried index restored
    // into a home without one is the file it was).
    let (mut out, rest) = match (&old, texts.split_first()) {
        (None, Some((first, rest))) => (first.clone(), rest),
        _ => (old.clone().unwrap_or_default(), texts),
    };
    let mut added = Vec::new();
    for line in rest
        .iter()
        .flat_map(|t| t.lines())
        .filter(|l| !l.trim().is_empty())
    {
        if !out.lines().any(|l| l == line) {
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(line);
            out.push('\n');
            added.push(format!("{line:?}"));
        }
    }
    match old {
        None => {
            ctx.writer.create_new(path, out.as_bytes(), false)?;
            Ok(Placement::New)
        }
        Some(_) if !added.is_empty() => {
            tally.wrote_into(path, &added, ctx.writer.is_dry_run());
            ctx.writer.replace(path, out.as_bytes())?;
            Ok(Placement::New)
        }
        Some(_) => Ok(Placement::AlreadyThere),
    }
}
