//! The one name of a copy kept beside a different version of the same thread.
//!
//! An existing session is never overwritten. A destination that holds the carried log, or
//! that log and more (the session resumed there since, [`holds_all_of`]), already has it.
//! When a destination already holds a different version of a thread, the carried one is written beside it under the name
//! `<thread>~<harness>` (`<harness>` is the harness the carried session came from), then
//! `<thread>~<harness>~2`, `~3`, ... should that name be taken by yet other content. Its title
//! carries the same marker (`Fix checkout rounding ~claude-code`), so a person who lists the
//! sessions can tell the two apart.
//!
//! Harnesses that find sessions only by UUID turn the name into one of their own (a name-based
//! UUID, see each converter's `ids.rs`); the answer maps the old id to whatever id that is.

/// How many names a thread's copies are tried under (the thread's own, then its copies')
/// before a converter gives up and refuses the version, naming the limit.
pub const MAX_COPIES: u32 = 100;

/// Whether `have`, a file a destination holds, holds every line of `carried`: the same bytes,
/// or those bytes and more after them (the session was resumed there since: every harness
/// with a JSONL log appends to the one it resumes). Then the carried version is already there,
/// not a different one to keep beside it. What follows must start a line (a carried last line
/// cut short and completed there is a different line), and nothing carried is held only by an
/// empty file.
pub fn holds_all_of(have: &[u8], carried: &[u8]) -> bool {
    if have.len() == carried.len() || carried.is_empty() {
        return have == carried;
    }
    have.starts_with(carried) && (carried.ends_with(b"\n") || have[carried.len()] == b'\n')
}

/// The harness named in the marker when a session does not say where it came from.
pub const UNKNOWN_HARNESS: &str = "asp";

/// The name and title of a copy kept beside a different version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptBeside {
    /// `<thread>~<harness>`, or `<thread>~<harness>~<n>` for the `n`-th name tried (n >= 2).
    pub name: String,
    /// The title with the marker: `<title> ~<harness>` (just the marker for an empty title).
    pub title: String,
}

/// The `attempt`-th name (from 1) of a copy of thread `id`, titled `title`, that came from
/// `harness`.
pub fn kept_beside(id: &str, title: &str, harness: Option<&str>, attempt: u32) -> KeptBeside {
    let harness = harness.unwrap_or(UNKNOWN_HARNESS);
    let name = if attempt <= 1 {
        format!("{id}~{harness}")
    } else {
        format!("{id}~{harness}~{attempt}")
    };
    KeptBeside {
        name,
        title: marked_title(title, harness),
    }
}

/// `title` with the `~<harness>` marker, once (a copy of a copy is not marked twice).
pub fn marked_title(title: &str, harness: &str) -> String {
    let marker = format!("~{harness}");
    let t = title.trim_end();
    if t.ends_with(&format!(" {marker}")) || t == marker {
        t.to_owned()
    } else if t.is_empty() {
        marker
    } else {
        format!("{t} {marker}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_holds_what_it_starts_with_up_to_a_line_end() {
        assert!(holds_all_of(b"a\nb\n", b"a\nb\n"));
        assert!(holds_all_of(b"a\nb\nc\n", b"a\nb\n"));
        // A last line without its newline, which the log there ends.
        assert!(holds_all_of(b"a\nb\nc\n", b"a\nb"));
        // Cut short and then completed otherwise: a different line.
        assert!(!holds_all_of(b"a\nbc\n", b"a\nb"));
        assert!(!holds_all_of(b"a\nX\n", b"a\nb\n"));
        assert!(!holds_all_of(b"a\n", b"a\nb\n"));
        assert!(!holds_all_of(b"a\n", b""));
        assert!(holds_all_of(b"", b""));
    }

    #[test]
    fn copies_are_named_thread_tilde_harness() {
        let k = kept_beside("t1", "Fix checkout rounding", Some("claude-code"), 1);
        assert_eq!(k.name, "t1~claude-code");
        assert_eq!(k.title, "Fix checkout rounding ~claude-code");
        assert_eq!(kept_beside("t1", "", None, 3).name, "t1~asp~3");
        assert_eq!(kept_beside("t1", "", None, 3).title, "~asp");
        assert_eq!(
            marked_title("Fix checkout rounding ~codex", "codex"),
            "Fix checkout rounding ~codex"
        );
    }
}
