//! Plain text as one line: a prompt, a title, a task or a remembered fact shown or compared
//! without its line breaks.

/// `text` with every run of whitespace (spaces, tabs, line breaks) collapsed into one space,
/// and none before the first word or after the last: `"  fix\n\tthe  bug "` is
/// `"fix the bug"`.
pub fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_of_whitespace_are_one_space() {
        assert_eq!(collapse_whitespace("  fix\n\tthe  bug \r\n"), "fix the bug");
        assert_eq!(collapse_whitespace("one"), "one");
        assert_eq!(collapse_whitespace(" \n\t "), "");
        assert_eq!(
            collapse_whitespace("a\u{a0}b"),
            "a b",
            "Unicode whitespace too"
        );
    }
}
