//! Scanning JSON text without parsing it: where a string's plain run ends, and whether a line
//! that parses at all parses into a `Value`.

/// Where the first `"` or `\\` of `text` is (its length when there is none). A string's body
/// is most of a transcript's text: `memchr2` looks at it a vector at a time.
pub fn plain_run(text: &[u8]) -> usize {
    memchr::memchr2(b'"', b'\\', text).unwrap_or(text.len())
}

/// serde_json's nesting limit: a value nested this deep does not parse into a `Value`.
pub const VALUE_DEPTH: usize = 128;

/// Whether `text` surely parses into a `Value` when it parses at all. The typed views skip
/// members without reading them as a `Value` does, and so take lines a `Value` parse refuses:
/// nested more than [`VALUE_DEPTH`] deep, a number out of `f64`'s range, a `\u` escape of half
/// a surrogate pair, bytes that are not UTF-8 in a skipped string. `false` when the line might
/// be one of these (an exponent, any surrogate escape, deep nesting): the reader then asks a
/// `Value` parse. So a line a typed view (or `IgnoredAny`) parses, and this takes, parses into a
/// `Value` too: the readers of Claude Code transcripts and Codex rollouts skim lines without
/// building their values, and still take exactly the lines a `Value` parse takes.
pub fn reads_as_value(text: &[u8]) -> bool {
    if std::str::from_utf8(text).is_err() {
        return false;
    }
    let mut depth = 0usize;
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                i += 1;
                loop {
                    i += plain_run(&text[i..]);
                    match text.get(i) {
                        Some(b'"') => {
                            i += 1;
                            break;
                        }
                        Some(b'\\') => {
                            if text.get(i + 1) == Some(&b'u')
                                && matches!(text.get(i + 2), Some(b'd' | b'D'))
                            {
                                return false;
                            }
                            i += 2;
                        }
                        _ => return false,
                    }
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth >= VALUE_DEPTH - 1 {
                    return false;
                }
                i += 1;
            }
            b']' | b'}' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'0'..=b'9' => {
                let start = i;
                while i < text.len() && text[i].is_ascii_digit() {
                    i += 1;
                }
                if i - start > 300 || matches!(text.get(i), Some(b'e' | b'E')) {
                    return false;
                }
                // A fraction: its digits, then maybe an exponent.
                if text.get(i) == Some(&b'.') {
                    i += 1;
                    while i < text.len() && text[i].is_ascii_digit() {
                        i += 1;
                    }
                    if matches!(text.get(i), Some(b'e' | b'E')) {
                        return false;
                    }
                }
            }
            _ => i += 1,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_run_finds_the_first_quote_or_backslash() {
        // Every place in and around a vector's width (memchr looks at 16 or 32 bytes at a
        // time), with the other byte, or bytes that are neither (0x01, 0x80, 0xc3), around
        // the first.
        for len in 0..70 {
            for at in 0..=len {
                for (first, then) in [(b'"', b'\\'), (b'\\', b'"'), (b'"', 1), (b'\\', 0x80)] {
                    let mut t = vec![b'a'; len];
                    if at < len {
                        t[at] = first;
                        if at + 1 < len {
                            t[at + 1] = then;
                        }
                        t[..at].iter_mut().step_by(3).for_each(|b| *b = 0xc3);
                    }
                    assert_eq!(plain_run(&t), at, "{t:?}");
                }
            }
        }
    }
}
