//! `~/.gemini/GEMINI.md`: instructions with a `## Gemini Added Memories` section inside.
//!
//! Gemini's `save_memory` tool (until May 2026) kept memories as one-line bullets under that
//! heading in the global instructions file; the CLI still loads the section as instructions.
//! asp carries the two apart: the file without the section is the instructions, each bullet a
//! memory note. The section is found with a Markdown parser, not by line prefixes, so a
//! `## ` line inside a fenced code block is not mistaken for a heading (the sample's commit
//! example has one). Writing back follows the tool's own rules: bullets appended after the
//! section's last line, the header created at the end of the file when missing, one line per
//! memory.

use std::collections::HashSet;
use std::ops::Range;

use pulldown_cmark::{Event, HeadingLevel, Options, Parser, Tag, TagEnd};

/// The heading `save_memory` wrote.
pub const HEADER: &str = "## Gemini Added Memories";
const TITLE: &str = "Gemini Added Memories";
/// The `#fragment` memory origins name the section with.
pub const FRAGMENT: &str = "gemini-added-memories";
/// Where the notes of the section live in the state.
pub const NOTE_DIR: &str = "gemini-added-memories";

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

/// A GEMINI.md taken apart.
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

/// Takes GEMINI.md apart. The section is the first level-2 heading reading
/// `Gemini Added Memories` and runs to the next heading of level 1 or 2 (or the end).
pub fn split(text: &str) -> Split {
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
                    && title.trim() == TITLE
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
    let paths = note_paths(texts.iter().map(|(t, _)| t.as_str()));
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

/// Note paths for memories, in order: `gemini-added-memories/<words of the text>.md`, cut at
/// 60 characters, `-2`, `-3`, ... for repeats. The path is a function of the text so that a
/// tombstone (which has no text) still names the bullet it deletes.
pub fn note_paths<'a>(texts: impl IntoIterator<Item = &'a str>) -> Vec<String> {
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
            format!("{NOTE_DIR}/{candidate}.md")
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
    let joined = body.split_whitespace().collect::<Vec<_>>().join(" ");
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
pub fn merge(text: &str, add: &[String], remove: &[String]) -> Merged {
    let mut out = Merged {
        text: text.to_owned(),
        ..Merged::default()
    };
    for path in remove {
        let split = split(&out.text);
        match split.memories.iter().find(|m| &m.path == path) {
            Some(m) => {
                out.text.replace_range(m.range.clone(), "");
                out.removed += 1;
                let after = self::split(&out.text);
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
        let split = split(&out.text);
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
                out.text.push_str(&format!("{sep}{HEADER}\n{line}"));
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

/// Merges carried instructions into an existing GEMINI.md without disturbing it: already
/// contained → unchanged (`None`); otherwise appended after what is there (before the
/// memories section when that is the end of the file, so the memories stay last).
pub fn merge_instructions(existing: &str, incoming: &str) -> Option<String> {
    let incoming_t = incoming.trim();
    if incoming_t.is_empty() || existing.contains(incoming_t) {
        return None;
    }
    let s = split(existing);
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

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "# Personal\n\n- Prefer small diffs.\n\n```text\nfix: x\n\n## Why\nbecause\n```\n\n## Gemini Added Memories\n- Shell is zsh (`zsh`).\n- Tests: `python3 -m unittest -q`.\n\n## Reminders\n\n- Rotate tokens.\n";

    #[test]
    fn a_heading_inside_a_fence_is_not_the_section_end_and_bullets_are_notes() {
        let s = split(SAMPLE);
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
        let s = split(text);
        assert!(s.memories.is_empty());
        assert_eq!(s.instructions, text);
    }

    #[test]
    fn a_section_at_the_end_leaves_the_instructions_ending_in_one_newline() {
        let s = split("# A\n\ntext\n\n## Gemini Added Memories\n- one\n");
        assert_eq!(s.instructions, "# A\n\ntext\n");
        assert_eq!(s.memories.len(), 1);
    }

    #[test]
    fn repeated_texts_get_distinct_paths() {
        assert_eq!(
            note_paths(["Same thing.", "same  thing", "!!!"]),
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
        let m = merge("# A\n", &["One.".to_owned()], &[]);
        assert_eq!(m.text, "# A\n\n## Gemini Added Memories\n- One.\n");
        let gone = merge(&m.text, &[], &["gemini-added-memories/one.md".to_owned()]);
        assert_eq!(gone.text, "# A\n");
        assert_eq!(
            merge("", &["One.".to_owned()], &[]).text,
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
        let merged = merge_instructions(SAMPLE, rules).unwrap();
        assert!(
            merged.ends_with("- Rotate tokens.\n\n# Team rules\n\n- Be kind.\n"),
            "{merged}"
        );
        assert_eq!(merge_instructions(&merged, rules), None);
        let last = "# A\n\n## Gemini Added Memories\n- one\n";
        assert_eq!(
            merge_instructions(last, rules).unwrap(),
            "# A\n\n# Team rules\n\n- Be kind.\n\n## Gemini Added Memories\n- one\n"
        );
    }
}
