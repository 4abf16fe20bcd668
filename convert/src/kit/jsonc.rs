//! JSON with comments (JSONC), read the way the harnesses that allow it read it ([`Jsonc`]):
//! Gemini CLI's and Qwen Code's `settings.json`, OpenCode's `opencode.json(c)`. Comments (and
//! trailing commas) are blanked byte for byte and line for line, then the text is parsed as
//! JSON, so a parse error's line and column are the file's own. The one JSONC reader: the
//! settings files (`kit::settings_json`) and the credential note on a kept configuration
//! file ([`super::secrets::json_config_credentials`]) both read through it.

use serde_json::Value;

/// Which JSON with comments a harness reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Jsonc {
    /// `//` and `/* */` comments (Gemini CLI, Qwen Code: comments stripped, then `JSON.parse`).
    Comments,
    /// Comments and trailing commas (OpenCode: `jsonc-parser` with `allowTrailingComma`).
    CommentsAndTrailingCommas,
}

/// The JSON text with `//` and `/* */` comments (outside strings) blanked out, byte for byte
/// and line for line, so a parse error's line and column are the file's own; `None` if it had
/// none.
fn strip_comments(text: &str) -> Option<String> {
    let blank = |out: &mut String, c: char| {
        if c == '\n' {
            out.push('\n');
        } else {
            out.extend(std::iter::repeat_n(' ', c.len_utf8()));
        }
    };
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let (mut in_str, mut esc, mut any) = (false, false, false);
    while let Some(c) = chars.next() {
        if in_str {
            out.push(c);
            if esc {
                esc = false;
            } else if c == '\\' {
                esc = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_str = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                any = true;
                blank(&mut out, c);
                for n in chars.by_ref() {
                    blank(&mut out, n);
                    if n == '\n' {
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                any = true;
                blank(&mut out, c);
                blank(&mut out, chars.next().expect("peeked"));
                let mut prev = ' ';
                for n in chars.by_ref() {
                    blank(&mut out, n);
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
            }
            _ => out.push(c),
        }
    }
    any.then_some(out)
}

/// The JSON text with every comma that ends an object or array (`[1, 2,]`, allowed by
/// OpenCode's JSONC reader) blanked, byte for byte; `None` if it had none. Run on text whose
/// comments are already blanked.
fn blank_trailing_commas(text: &str) -> Option<String> {
    let mut out = text.as_bytes().to_vec();
    let (mut in_str, mut esc, mut any) = (false, false, false);
    let mut comma: Option<usize> = None;
    for (i, &b) in text.as_bytes().iter().enumerate() {
        if in_str {
            if esc {
                esc = false;
            } else if b == b'\\' {
                esc = true;
            } else if b == b'"' {
                in_str = false;
            }
            continue;
        }
        match b {
            b'"' => {
                in_str = true;
                comma = None;
            }
            b',' => comma = Some(i),
            b'}' | b']' => {
                if let Some(c) = comma.take() {
                    out[c] = b' ';
                    any = true;
                }
            }
            b' ' | b'\t' | b'\n' | b'\r' => {}
            _ => comma = None,
        }
    }
    any.then(|| String::from_utf8(out).expect("only an ASCII comma was replaced"))
}

/// `text` parsed as `dialect` allows: the value, and whether the text had comments (or, for
/// [`Jsonc::CommentsAndTrailingCommas`], trailing commas), which rewriting it would lose. Both
/// are blanked byte for byte and line for line, so an error's line and column are the text's
/// own.
pub fn parse(text: &str, dialect: Jsonc) -> serde_json::Result<(Value, bool)> {
    let mut stripped = strip_comments(text);
    if dialect == Jsonc::CommentsAndTrailingCommas
        && let Some(t) = blank_trailing_commas(stripped.as_deref().unwrap_or(text))
    {
        stripped = Some(t);
    }
    let value = serde_json::from_str(stripped.as_deref().unwrap_or(text))?;
    Ok((value, stripped.is_some()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn comments_are_stripped_outside_strings() {
        let t = "{\n  // a comment\n  \"a\": \"http://x\", /* b */ \"c\": 1\n}";
        let s = strip_comments(t).unwrap();
        assert_eq!(
            serde_json::from_str::<Value>(&s).unwrap(),
            json!({"a": "http://x", "c": 1})
        );
        assert_eq!(strip_comments("{\"a\": \"//not\"}"), None);
        let t = "{ /* é\n */ \"a\": 1, // x\n \"b\": }";
        let s = strip_comments(t).unwrap();
        assert_eq!(s.len(), t.len(), "blanked byte for byte");
        assert_eq!(s.lines().count(), t.lines().count(), "and line for line");
    }
}
