//! Codex's `apply_patch` grammar, read into ACP `diff` content.
//!
//! ```text
//! *** Begin Patch
//! *** Add File: <path>        every following line starts with `+`
//! *** Delete File: <path>
//! *** Update File: <path>
//! *** Move to: <path>         optional, right after Update
//! @@ [context]                a hunk: lines ` ` (context), `-` (old), `+` (new)
//! *** End of File
//! *** End Patch
//! ```
//!
//! Paths are relative to the turn's working directory. A hunk gives fragments, not whole
//! files: `oldText` is its context and removed lines, `newText` its context and added lines.

/// What a patch does to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    Add,
    Delete,
    Update { move_to: Option<String> },
}

/// One file section of a patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilePatch {
    pub path: String,
    pub op: Op,
    /// For `Add`: one hunk with the new text. For `Update`: each `@@` hunk as (old, new).
    pub hunks: Vec<(String, String)>,
}

/// Parses a patch; sections it cannot read are left out (the raw input stays in `rawInput`).
pub fn parse(input: &str) -> Vec<FilePatch> {
    let mut files: Vec<FilePatch> = Vec::new();
    let mut hunk: Option<(String, String)> = None;
    let flush = |files: &mut Vec<FilePatch>, hunk: &mut Option<(String, String)>| {
        if let (Some(h), Some(f)) = (hunk.take(), files.last_mut())
            && !(h.0.is_empty() && h.1.is_empty())
        {
            f.hunks.push(h);
        }
    };
    for line in input.lines() {
        if let Some(p) = line.strip_prefix("*** Add File: ") {
            flush(&mut files, &mut hunk);
            files.push(FilePatch {
                path: p.trim().to_owned(),
                op: Op::Add,
                hunks: Vec::new(),
            });
            hunk = Some((String::new(), String::new()));
        } else if let Some(p) = line.strip_prefix("*** Delete File: ") {
            flush(&mut files, &mut hunk);
            files.push(FilePatch {
                path: p.trim().to_owned(),
                op: Op::Delete,
                hunks: Vec::new(),
            });
        } else if let Some(p) = line.strip_prefix("*** Update File: ") {
            flush(&mut files, &mut hunk);
            files.push(FilePatch {
                path: p.trim().to_owned(),
                op: Op::Update { move_to: None },
                hunks: Vec::new(),
            });
        } else if let Some(p) = line.strip_prefix("*** Move to: ") {
            if let Some(FilePatch {
                op: Op::Update { move_to },
                ..
            }) = files.last_mut()
            {
                *move_to = Some(p.trim().to_owned());
            }
        } else if line.starts_with("@@") {
            flush(&mut files, &mut hunk);
            hunk = Some((String::new(), String::new()));
        } else if line.starts_with("*** ") {
            // Begin/End Patch, End of File.
            if line.starts_with("*** End") && !line.starts_with("*** End of File") {
                flush(&mut files, &mut hunk);
            }
        } else if let Some(f) = files.last() {
            let h = hunk.get_or_insert_with(Default::default);
            let (tag, rest) = line.split_at(line.len().min(1));
            match (tag, &f.op) {
                ("+", _) => {
                    h.1.push_str(rest);
                    h.1.push('\n');
                }
                ("-", Op::Update { .. }) => {
                    h.0.push_str(rest);
                    h.0.push('\n');
                }
                (" ", Op::Update { .. }) | ("", Op::Update { .. }) => {
                    h.0.push_str(rest);
                    h.0.push('\n');
                    h.1.push_str(rest);
                    h.1.push('\n');
                }
                _ => {}
            }
        }
    }
    flush(&mut files, &mut hunk);
    files
}

/// `path` made absolute against `cwd` (paths already absolute are kept).
pub fn absolute(path: &str, cwd: Option<&str>) -> String {
    match cwd {
        Some(c) if !path.starts_with('/') && !c.is_empty() => {
            format!("{}/{}", c.trim_end_matches('/'), path)
        }
        _ => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_update_delete_and_move_are_read() {
        let p = "*** Begin Patch\n*** Update File: deploy.sh\n@@\n set -e\n+echo \"== shop deploy ==\"\n if [ x ]; then\n*** Add File: CHANGELOG.md\n+# Changelog\n+\n+- entry\n*** Delete File: old.txt\n*** Update File: a.rs\n*** Move to: b.rs\n@@ fn main\n-old\n+new\n*** End Patch\n";
        let files = parse(p);
        assert_eq!(files.len(), 4);
        assert_eq!(files[0].path, "deploy.sh");
        assert_eq!(
            files[0].hunks,
            vec![(
                "set -e\nif [ x ]; then\n".to_owned(),
                "set -e\necho \"== shop deploy ==\"\nif [ x ]; then\n".to_owned()
            )]
        );
        assert_eq!(files[1].op, Op::Add);
        assert_eq!(
            files[1].hunks,
            vec![(String::new(), "# Changelog\n\n- entry\n".to_owned())]
        );
        assert_eq!(files[2].op, Op::Delete);
        assert!(files[2].hunks.is_empty());
        assert_eq!(
            files[3].op,
            Op::Update {
                move_to: Some("b.rs".into())
            }
        );
        assert_eq!(
            files[3].hunks,
            vec![("old\n".to_owned(), "new\n".to_owned())]
        );
        assert_eq!(
            absolute("deploy.sh", Some("/home/dev/shop/")),
            "/home/dev/shop/deploy.sh"
        );
        assert_eq!(absolute("/etc/x", Some("/home")), "/etc/x");
    }
}
