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
