//! A memories section inside an instructions file: `## Gemini Added Memories` in Gemini CLI's
//! `GEMINI.md`, `## Qwen Added Memories` in Qwen Code's `QWEN.md` (Qwen Code is a Gemini CLI
//! fork and kept the rules, `spec/harnesses/qwen.md` §8.1, §11).
//!
//! The memory tool keeps memories as one-line bullets under that heading in the global
//! instructions file, which the harness loads whole as instructions. asp carries the two apart:
//! the file without the section is the instructions, each bullet a memory note. The section is
//! found with a Markdown parser, not by line prefixes, so a `## ` line inside a fenced code
//! block is not mistaken for a heading. Writing back follows the tool's own rules: bullets
//! appended after the section's last line, the header created at the end of the file when
//! missing, one line per memory. What differs between harnesses is only the heading and where
//! the notes live in the state: a [`Section`].

use std::collections::HashSet;
use std::fs;
use std::io;
use std::ops::Range;
use std::path::Path;

use asp_format::StateKind;
use asp_format::answer::ImportAnswer;
use asp_format::blob::{BlobSink, BlobSource};
use asp_format::name::{HarnessName, RelPath};
use asp_format::state::{Instructions, MemoryNote, NoteBody, Origin};

use crate::error::ConvertError;
use crate::kit::fsops::Writer;
use crate::kit::placement::DifferentInstructions;
use crate::kit::report::Diagnostics;
use crate::kit::text::collapse_whitespace;

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// One harness's memories section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Section {
    /// The heading line the memory tool writes (`## Gemini Added Memories`).
    pub header: &'static str,
    /// The heading's text (`Gemini Added Memories`).
    pub title: &'static str,
    /// Where the section's notes live in the state (`gemini-added-memories`).
    pub note_dir: &'static str,
}

/// One memory of the section.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Memory {
    /// The memory without its list marker.
    pub text: String,
    /// Its note path in the state, derived from the text (see [`note_paths`]).
    pub path: String,
    /// The bytes of the file it occupies (whole lines).
    range: Range<usize>,
}

/// An instructions file taken apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// The file without the memories section.
    pub instructions: String,
    /// The section's entries: each list item, and any other block, in order.
    pub memories: Vec<Memory>,
    /// The section's byte range (heading to the next heading of level 1 or 2), if present.
    section: Option<Range<usize>>,
}

/// A block's range as whole lines, without the blank lines a parser counts into it.
fn whole_lines(text: &str, r: Range<usize>) -> Range<usize> {
    let start = text[..r.start].rfind('\n').map_or(0, |i| i + 1);
    let last = r.start + text[r.clone()].trim_end().len();
    let end = text[last..].find('\n').map_or(text.len(), |i| last + i + 1);
    start..end
}

/// The text of a list item without its marker (`-`, `*`, `+`, `1.`, `1)`), trimmed.
fn item_text(src: &str) -> String {
    let t = src.trim_start();
    let rest = if let Some(r) = t.strip_prefix(['-', '*', '+']) {
        r
    } else {
        let digits = t.bytes().take_while(u8::is_ascii_digit).count();
        t[digits..].strip_prefix(['.', ')']).unwrap_or(t)
    };
    rest.trim().to_owned()
}

/// Takes an instructions file apart. The section is the first level-2 heading reading the
/// section's title and runs to the next heading of level 1 or 2 (or the end).
pub fn split(text: &str, sec: &Section) -> Split {
    let mut section: Option<Range<usize>> = None;
    let mut heading: Option<(HeadingLevel, usize, String)> = None;
    let mut depth = 0usize;
    let mut blocks: Vec<(Range<usize>, bool)> = Vec::new();
    let mut in_section = false;
    let mut list_depth: Option<usize> = None;
    for (event, range) in Parser::new_ext(text, Options::empty()).into_offset_iter() {
        match event {
            Event::Start(Tag::Heading { level, .. }) if depth == 0 => {
                if in_section && level <= HeadingLevel::H2 {
                    if let Some(s) = &mut section {
                        s.end = range.start;
                    }
                    in_section = false;
                } else if in_section {
                    blocks.push((range.clone(), false));
                }
                heading = Some((level, range.start, String::new()));
                depth += 1;
            }
            Event::End(TagEnd::Heading(level)) if depth == 1 => {
                depth -= 1;
                if let Some((_, start, title)) = heading.take()
                    && section.is_none()
                    && level == HeadingLevel::H2
                    && title.trim() == sec.title
                {
                    section = Some(start..text.len());
                    in_section = true;
                }
            }
            Event::Text(t) | Event::Code(t) if heading.is_some() => {
                if let Some((_, _, title)) = &mut heading {
                    title.push_str(&t);
                }
            }
            Event::Start(tag) => {
                if in_section {
                    match (&tag, depth) {
                        (Tag::List(_), 0) => list_depth = Some(1),
                        (Tag::Item, d) if list_depth == Some(d) => blocks.push((range, true)),
                        (_, 0) => blocks.push((range, false)),
                        _ => {}
                    }
                }
                depth += 1;
            }
            Event::End(end) => {
                depth = depth.saturating_sub(1);
                if matches!(end, TagEnd::List(_)) && depth == 0 {
                    list_depth = None;
                }
            }
            Event::Html(_) | Event::Rule if in_section && depth == 0 => {
                blocks.push((range, false));
            }
            _ => {}
        }
    }
    let Some(section) = section else {
        return Split {
            instructions: text.to_owned(),
            memories: Vec::new(),
            section: None,
        };
    };
    let texts: Vec<(String, Range<usize>)> = blocks
        .into_iter()
        .filter(|(r, _)| r.start >= section.start && r.end <= section.end)
        .map(|(r, item)| {
            let lines = whole_lines(text, r.clone());
            let t = if item {
                item_text(&text[r])
            } else {
                text[r].trim().to_owned()
            };
            (t, lines)
        })
        .filter(|(t, _)| !t.is_empty())
        .collect();
    let paths = note_paths(texts.iter().map(|(t, _)| t.as_str()), sec);
    let memories = texts
        .into_iter()
        .zip(paths)
        .map(|((text, range), path)| Memory { text, path, range })
        .collect();
    let mut instructions = format!("{}{}", &text[..section.start], &text[section.end..]);
    if section.end == text.len() {
        // The section was last: drop the blank lines that separated it.
        let kept = instructions.trim_end().len();
        instructions.truncate(kept);
        if !instructions.is_empty() {
            instructions.push('\n');
        }
    }
    Split {
        instructions,
        memories,
        section: Some(section),
    }
}

/// Note paths for memories, in order: `<note dir>/<words of the text>.md`, cut at
/// 60 characters, `-2`, `-3`, ... for repeats. The path is a function of the text so that a
/// tombstone (which has no text) still names the bullet it deletes.
pub fn note_paths<'a>(texts: impl IntoIterator<Item = &'a str>, sec: &Section) -> Vec<String> {
    let mut used = HashSet::new();
    texts
        .into_iter()
        .map(|t| {
            let mut slug = String::new();
            for word in t
                .to_lowercase()
                .split(|c: char| !c.is_ascii_alphanumeric())
                .filter(|w| !w.is_empty())
            {
                if !slug.is_empty() && slug.len() + 1 + word.len() > 60 {
                    break;
                }
                if !slug.is_empty() {
                    slug.push('-');
                }
                slug.push_str(&word[..word.len().min(60)]);
            }
            if slug.is_empty() {
                slug.push_str("note");
            }
            let mut candidate = slug.clone();
            let mut n = 1;
            while !used.insert(candidate.clone()) {
                n += 1;
                candidate = format!("{slug}-{n}");
            }
            format!("{}/{candidate}.md", sec.note_dir)
        })
        .collect()
}

/// A note's text as one memory line, as `save_memory` sanitised facts: front matter dropped,
/// line breaks joined with spaces, leading list markers removed. `None` when nothing is left.
pub fn fact_of(note: &str) -> Option<String> {
    let body = match crate::kit::skills::split_front_matter(note) {
        Some(fm) => {
            let t = note.strip_prefix('\u{feff}').unwrap_or(note);
            let after = &t[t.find(fm).map_or(0, |i| i + fm.len())..];
            after.split_once('\n').map_or("", |(_, rest)| rest)
        }
        None => note,
    };
    let joined = collapse_whitespace(body);
    let fact = joined
        .trim_start_matches(|c: char| c == '-' || c.is_whitespace())
        .trim()
        .to_owned();
    (!fact.is_empty()).then_some(fact)
}

/// What merging did to the memories.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Merged {
    pub text: String,
    /// Facts appended, and facts that were there already.
    pub added: usize,
    pub already: usize,
    /// Tombstoned bullets removed, and tombstones with no bullet to remove.
    pub removed: usize,
    pub absent: usize,
}

/// Removes the memories whose note path is in `remove`, then appends each fact of `add` not
/// already in the section, as the `save_memory` tool did. The header goes too when the
/// section has nothing left.
pub fn merge(text: &str, add: &[String], remove: &[String], sec: &Section) -> Merged {
    let mut out = Merged {
        text: text.to_owned(),
        ..Merged::default()
    };
    for path in remove {
        let split = split(&out.text, sec);
        match split.memories.iter().find(|m| &m.path == path) {
            Some(m) => {
                out.text.replace_range(m.range.clone(), "");
                out.removed += 1;
                let after = self::split(&out.text, sec);
                if let Some(section) = after.section
                    && after.memories.is_empty()
                {
                    let body = &out.text[section.clone()];
                    let rest = body.split_once('\n').map_or("", |(_, r)| r);
                    if rest.trim().is_empty() {
                        out.text.replace_range(section, "");
                    }
                }
            }
            None => out.absent += 1,
        }
    }
    for fact in add {
        let split = split(&out.text, sec);
        if split.memories.iter().any(|m| &m.text == fact) {
            out.already += 1;
            continue;
        }
        out.added += 1;
        let line = format!("- {fact}\n");
        match split.section {
            Some(section) => {
                let body = &out.text[section.clone()];
                let last = body.trim_end().len();
                let at = section.start + last;
                let at = out.text[at..]
                    .find('\n')
                    .map_or(out.text.len(), |i| at + i + 1);
                if !out.text[..at].ends_with('\n') {
                    out.text.insert(at, '\n');
                    out.text.insert_str(at + 1, &line);
                } else {
                    out.text.insert_str(at, &line);
                }
            }
            None => {
                let sep = if out.text.is_empty() || out.text.ends_with("\n\n") {
                    ""
                } else if out.text.ends_with('\n') {
                    "\n"
                } else {
                    "\n\n"
                };
                out.text.push_str(&format!("{sep}{}\n{line}", sec.header));
            }
        }
    }
    if out.added > 0 || out.removed > 0 {
        let kept = out.text.trim_end_matches('\n').len();
        out.text.truncate(kept);
        if !out.text.is_empty() {
            out.text.push('\n');
        }
    }
    out
}

/// Merges carried instructions into an existing instructions file without disturbing it: already
/// contained → unchanged (`None`); otherwise appended after what is there (before the
/// memories section when that is the end of the file, so the memories stay last).
pub fn merge_instructions(existing: &str, incoming: &str, sec: &Section) -> Option<String> {
    let incoming_t = incoming.trim();
    let s = split(existing, sec);
    // The file's own instructions are its text without the memory section, which may sit
    // between them: what a read of this very file carries is already there.
    if incoming_t.is_empty() || existing.contains(incoming_t) || s.instructions.contains(incoming_t)
    {
        return None;
    }
    let block = format!("{incoming_t}\n");
    let mut out = existing.to_owned();
    match s.section.filter(|r| r.end == existing.len()) {
        Some(section) => {
            let before = &out[..section.start];
            let sep = if before.is_empty() || before.ends_with("\n\n") {
                ""
            } else if before.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            out.insert_str(section.start, &format!("{sep}{block}\n"));
        }
        None => {
            let sep = if out.is_empty() || out.ends_with("\n\n") {
                ""
            } else if out.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            out.push_str(&format!("{sep}{block}"));
        }
    }
    Some(out)
}

/// A UTF-8 text file; `None` when it is not there (or not UTF-8: reported).
pub fn read_text(path: &Path, diagnostics: &Diagnostics) -> Result<Option<String>, ConvertError> {
    match fs::read(path) {
        Ok(b) => match String::from_utf8(b) {
            Ok(t) => Ok(Some(t)),
            Err(_) => {
                diagnostics.lost(path, None, "not UTF-8 text; skipped");
                Ok(None)
            }
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(ConvertError::io(path)(e)),
    }
}

/// Reads the instructions and the section's memories from the instruction file.
pub fn read_file(
    file: &Path,
    sec: &Section,
    harness: &HarnessName,
    origin_path: &str,
    sink: &dyn BlobSink,
    diagnostics: &Diagnostics,
) -> Result<(Option<Instructions>, Vec<MemoryNote>), ConvertError> {
    let Some(text) = read_text(file, diagnostics)? else {
        return Ok((None, Vec::new()));
    };
    let split = split(&text, sec);
    let instructions = if split.instructions.trim().is_empty() {
        None
    } else {
        Some(Instructions {
            text: sink.put(split.instructions.as_bytes())?,
        })
    };
    let mut notes = Vec::new();
    for m in split.memories {
        let path = RelPath::new(&m.path).expect("derived note paths are portable");
        notes.push(MemoryNote {
            path,
            origin: Origin {
                harness: Some(harness.clone()),
                path: Some(origin_path.to_owned()),
                project: None,
            },
            body: NoteBody::Text(sink.put(format!("{}\n", m.text).as_bytes())?),
        });
    }
    Ok((instructions, notes))
}

/// The instructions file with carried instructions and global memories merged in: the
/// instructions added after what is there unless already contained (or, restoring the
/// harness's own backup, written beside it: `different`), each note a bullet of the section
/// (a tombstone removes its bullet), in one write. `harness` names the harness in notes.
#[allow(clippy::too_many_arguments)]
pub fn write_file(
    file: &Path,
    sec: &Section,
    harness: &str,
    different: DifferentInstructions,
    instructions: Option<&Instructions>,
    global: &[&MemoryNote],
    blobs: &dyn BlobSource,
    writer: &Writer,
    diagnostics: &Diagnostics,
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    if instructions.is_none() && global.is_empty() {
        return Ok(());
    }
    let existing = match fs::read(file) {
        Ok(b) => match String::from_utf8(b) {
            Ok(t) => Some(t),
            Err(_) => {
                let why = format!(
                    "{} is not UTF-8 text, so asp does not edit it",
                    file.display()
                );
                if instructions.is_some() {
                    answer.refuse(StateKind::Instructions, why.clone());
                }
                if !global.is_empty() {
                    answer.refuse(StateKind::Memory, why);
                }
                return Ok(());
            }
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(e) => return Err(ConvertError::io(file)(e)),
    };
    let mut text = existing.clone().unwrap_or_default();
    if let Some(i) = instructions {
        let incoming = String::from_utf8(blobs.read_all(&i.text)?).map_err(|_| {
            ConvertError::carried(
                "the carried instructions",
                io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"),
            )
        })?;
        if text.trim().is_empty() {
            text = incoming;
            answer.take(StateKind::Instructions);
        } else if let Some(merged) = merge_instructions(&text, &incoming, sec) {
            match different {
                DifferentInstructions::AddAfter => {
                    diagnostics.note(
                        file,
                        None,
                        "it already had instructions; the carried ones were added after them",
                    );
                    answer
                        .written_into
                        .push(crate::kit::placement::written_into(
                            StateKind::Instructions,
                            file,
                            &["the carried instructions, after the ones it had".to_owned()],
                            writer.is_dry_run(),
                        ));
                    text = merged;
                    answer.take(StateKind::Instructions);
                }
                DifferentInstructions::KeepBeside => {
                    answer.refuse(
                        StateKind::Instructions,
                        DifferentInstructions::keep_beside(file, incoming.as_bytes(), writer),
                    );
                }
            }
        } else {
            answer.take(StateKind::Instructions);
        }
    }
    let mut add = Vec::new();
    let mut remove = Vec::new();
    for n in global {
        match n.body {
            NoteBody::Deleted => remove.push(n.path.as_str().to_owned()),
            NoteBody::Text(d) => {
                let body = String::from_utf8_lossy(&blobs.read_all(&d)?).into_owned();
                match fact_of(&body) {
                    Some(fact) => {
                        if body.trim().lines().count() > 1 {
                            diagnostics.note(
                                file,
                                None,
                                format!(
                                    "memory note {} has several lines; {harness} keeps a memory on \
                                     one line, so they were joined",
                                    n.path
                                ),
                            );
                        }
                        add.push(fact);
                    }
                    None => diagnostics.note(
                        file,
                        None,
                        format!("memory note {} is empty; nothing to remember", n.path),
                    ),
                }
            }
        }
    }
    if !global.is_empty() {
        let merged = merge(&text, &add, &remove, sec);
        text = merged.text;
        answer.take(StateKind::Memory);
        // The owner's own file: what changed in its section is said.
        if existing.is_some() {
            let count = |n: usize| match n {
                1 => "1 memory".to_owned(),
                n => format!("{n} memories"),
            };
            let under = format!("under {:?}", sec.header);
            use crate::kit::placement::{removed_from, written_into};
            for (n, said) in [
                (merged.added, written_into as fn(_, &_, &_, _) -> _),
                (merged.removed, removed_from),
            ] {
                if n > 0 {
                    answer.written_into.push(said(
                        StateKind::Memory,
                        file,
                        &[format!("{} {under}", count(n))],
                        writer.is_dry_run(),
                    ));
                }
            }
        }
    }
    match existing {
        None => {
            writer.create_new(file, text.as_bytes(), false)?;
        }
        Some(old) if old != text => writer.replace(file, text.as_bytes())?,
        Some(_) => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Gemini's section: the rules were pinned on it (Qwen's differs only in its names).
    const SEC: Section = Section {
        header: "## Gemini Added Memories",
        title: "Gemini Added Memories",
        note_dir: "gemini-added-memories",
    };

    const SAMPLE: &str = "# Personal\n\n- Prefer small diffs.\n\n```text\nfix: x\n\n## Why\nbecause\n```\n\n## Gemini Added Memories\n- Shell is zsh (`zsh`).\n- Tests: `python3 -m unittest -q`.\n\n## Reminders\n\n- Rotate tokens.\n";

    #[test]
    fn a_heading_inside_a_fence_is_not_the_section_end_and_bullets_are_notes() {
        let s = split(SAMPLE, &SEC);
        let texts: Vec<&str> = s.memories.iter().map(|m| m.text.as_str()).collect();
        assert_eq!(
            texts,
            ["Shell is zsh (`zsh`).", "Tests: `python3 -m unittest -q`."]
        );
        assert_eq!(
            s.instructions,
            "# Personal\n\n- Prefer small diffs.\n\n```text\nfix: x\n\n## Why\nbecause\n```\n\n## Reminders\n\n- Rotate tokens.\n"
        );
        assert_eq!(
            s.memories[0].path,
            "gemini-added-memories/shell-is-zsh-zsh.md"
        );
    }

    #[test]
    fn a_fenced_header_is_not_the_section() {
        let text = "```\n## Gemini Added Memories\n- not a memory\n```\n";
        let s = split(text, &SEC);
        assert!(s.memories.is_empty());
        assert_eq!(s.instructions, text);
    }

    #[test]
    fn a_section_at_the_end_leaves_the_instructions_ending_in_one_newline() {
        let s = split("# A\n\ntext\n\n## Gemini Added Memories\n- one\n", &SEC);
        assert_eq!(s.instructions, "# A\n\ntext\n");
        assert_eq!(s.memories.len(), 1);
    }

    #[test]
    fn repeated_texts_get_distinct_paths() {
        assert_eq!(
            note_paths(["Same thing.", "same  thing", "!!!"], &SEC),
            [
                "gemini-added-memories/same-thing.md",
                "gemini-added-memories/same-thing-2.md",
                "gemini-added-memories/note.md"
            ]
        );
    }

    #[test]
    fn merging_appends_after_the_last_bullet_and_removes_tombstoned_ones() {
        let m = merge(
            SAMPLE,
            &["New fact.".to_owned(), "Shell is zsh (`zsh`).".to_owned()],
            &["gemini-added-memories/tests-python3-m-unittest-q.md".to_owned()],
            &SEC,
        );
        assert_eq!((m.added, m.already, m.removed, m.absent), (1, 1, 1, 0));
        assert!(
            m.text.contains(
                "## Gemini Added Memories\n- Shell is zsh (`zsh`).\n- New fact.\n\n## Reminders"
            ),
            "{}",
            m.text
        );
    }

    #[test]
    fn the_header_is_created_at_the_end_and_removed_when_empty() {
        let m = merge("# A\n", &["One.".to_owned()], &[], &SEC);
        assert_eq!(m.text, "# A\n\n## Gemini Added Memories\n- One.\n");
        let gone = merge(
            &m.text,
            &[],
            &["gemini-added-memories/one.md".to_owned()],
            &SEC,
        );
        assert_eq!(gone.text, "# A\n");
        assert_eq!(
            merge("", &["One.".to_owned()], &[], &SEC).text,
            "## Gemini Added Memories\n- One.\n"
        );
    }

    #[test]
    fn facts_are_one_line_without_markers_or_front_matter() {
        assert_eq!(
            fact_of("- The user prefers tabs.\n").as_deref(),
            Some("The user prefers tabs.")
        );
        assert_eq!(
            fact_of("---\nname: deploy\n---\n\nProduction is `prod`.\nNo staging.\n").as_deref(),
            Some("Production is `prod`. No staging.")
        );
        assert_eq!(fact_of("  \n"), None);
    }

    #[test]
    fn instructions_merge_before_the_memories_and_only_once() {
        let rules = "# Team rules\n\n- Be kind.\n";
        let merged = merge_instructions(SAMPLE, rules, &SEC).unwrap();
        assert!(
            merged.ends_with("- Rotate tokens.\n\n# Team rules\n\n- Be kind.\n"),
            "{merged}"
        );
        assert_eq!(merge_instructions(&merged, rules, &SEC), None);
        let last = "# A\n\n## Gemini Added Memories\n- one\n";
        assert_eq!(
            merge_instructions(last, rules, &SEC).unwrap(),
            "# A\n\n# Team rules\n\n- Be kind.\n\n## Gemini Added Memories\n- one\n"
        );
    }

    /// A file's own instructions, read with the memory section between them taken out, are
    /// already in it: restoring a backup of the same file adds nothing.
    #[test]
    fn a_files_own_instructions_around_its_memories_are_already_there() {
        let own = split(SAMPLE, &SEC).instructions;
        assert!(
            !SAMPLE.contains(own.trim()),
            "the section sits between them"
        );
        assert_eq!(merge_instructions(SAMPLE, &own, &SEC), None);
    }
}
