//! The one command that takes a person back into a session written into a harness.
//!
//! After an import, the summary names, for each session written, the command that resumes it
//! as the target harness spells it (each converter's [`crate::Harness::resume_command`]); a
//! harness that finds sessions per project is run in the session's directory, which is said
//! here the same way for every harness: `cd <cwd> && <command>`.

/// `command`, run in `cwd` when one is given: `cd '/home/me/my shop' && claude --resume <id>`.
pub fn in_dir(cwd: Option<&str>, command: String) -> String {
    match cwd {
        Some(dir) if !dir.is_empty() => format!("cd {} && {command}", shell_word(dir)),
        _ => command,
    }
}

/// `word` as one POSIX shell word: as it is when it needs no quoting, else in single quotes.
pub fn shell_word(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/._-+=:@,%~".contains(&b))
        && !word.starts_with('~');
    if plain {
        word.to_owned()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// The directory a session from another harness is filed under: its own working directory, or,
/// for one that names none, the home the import writes into (said as a note at `at`, since a
/// harness that finds sessions per project resumes it only there).
pub fn cwd_or_home(
    s: &asp_format::state::Session,
    ctx: &crate::harness::WriteContext<'_>,
    at: &std::path::Path,
) -> String {
    if let Some(c) = &s.cwd {
        return c.clone();
    }
    let home = ctx.home.absolute_dir().to_string_lossy().into_owned();
    ctx.diagnostics.note(
        at,
        None,
        format!(
            "session {} has no working directory; it was filed under the home directory {home} \
             (resume it there)",
            s.id
        ),
    );
    home
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn directories_are_quoted_only_when_they_need_it() {
        assert_eq!(
            in_dir(Some("/home/dev/shop"), "claude --resume x".into()),
            "cd /home/dev/shop && claude --resume x"
        );
        assert_eq!(
            in_dir(Some("/home/me/it's here"), "gemini --resume x".into()),
            r"cd '/home/me/it'\''s here' && gemini --resume x"
        );
        assert_eq!(in_dir(None, "codex resume x".into()), "codex resume x");
    }
}
