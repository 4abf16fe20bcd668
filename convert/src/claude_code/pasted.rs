//! The long pasted texts of Claude Code's prompt history.
//!
//! A text of over 1,024 characters pasted into a prompt is written to
//! `<config>/paste-cache/<the first 16 hex digits of its sha256>.txt`, and the prompt's line in
//! `history.jsonl` names it in `pastedContents` as `{"id", "type": "text", "contentHash"}`
//! instead of holding it (cc83). The cleanup deletes the files by age; the history stays.

use std::collections::HashSet;

/// The `contentHash` of every pasted text the lines of `history` (a `history.jsonl`) name.
/// A line that is not a JSON object is passed over.
pub fn named_in_history(history: &[u8]) -> HashSet<String> {
    let mut named = HashSet::new();
    for line in history.split(|b| *b == b'\n') {
        // Most lines paste nothing long: only those naming a hash are parsed.
        if memchr::memmem::find(line, b"contentHash").is_none() {
            continue;
        }
        let Ok(serde_json::Value::Object(record)) = serde_json::from_slice(line) else {
            continue;
        };
        let pasted = record.get("pastedContents").and_then(|p| p.as_object());
        for entry in pasted.into_iter().flat_map(|p| p.values()) {
            if let Some(hash) = entry.get("contentHash").and_then(|h| h.as_str()) {
                named.insert(hash.to_owned());
            }
        }
    }
    named
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hashes_the_history_names_are_found() {
        let history = br#"{"display":"hi","pastedContents":{},"timestamp":1,"project":"/p","sessionId":"s"}
{"display":"why? [Pasted text #1 +41 lines]","pastedContents":{"1":{"id":1,"type":"text","contentHash":"0123456789abcdef"}},"timestamp":2,"project":"/p","sessionId":"s"}
not json but "contentHash"
{"display":"short","pastedContents":{"1":{"id":1,"type":"text","content":"a short paste"}},"timestamp":3}
"#;
        let named = named_in_history(history);
        assert_eq!(named, HashSet::from(["0123456789abcdef".to_owned()]));
    }
}
