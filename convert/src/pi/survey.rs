//! Listing Pi's sessions without reading them: every `*.jsonl` under `A/sessions/`, at any
//! depth (as pi-acp lists them, so a flat `sessionDir` layout or a file in another cwd's
//! directory is found too), whose first line is a session header. The header names the
//! session; the file is all its read depends on.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;

use asp_format::name::SessionId;

use super::entries::Header;
use super::layout::Layout;
use crate::error::ConvertError;
use crate::harness::{Survey, SurveyContext, Surveyed};
use crate::kit::source::SourceFile;

/// What reading one session needs.
#[derive(Debug)]
pub struct Plan {
    pub source: SourceFile,
}

/// How much of the first line is looked at (pi-acp reads 64 KiB).
const HEAD: u64 = 64 * 1024;

fn first_line(path: &std::path::Path) -> std::io::Result<Vec<u8>> {
    let mut r = BufReader::new(crate::kit::source::open_regular(path)?.take(HEAD));
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line)?;
    Ok(line)
}

/// The session files of the agent dir, sorted by path. A folder that cannot be listed (no
/// permission, a link that loops back) is handed to `unlisted` with the error: the sessions in
/// it are not seen, and the caller says so. A missing sessions folder is an empty store.
pub fn session_files(
    layout: &Layout,
    unlisted: &mut dyn FnMut(&std::path::Path, &walkdir::Error),
) -> Vec<PathBuf> {
    let root = layout.sessions();
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(&root).follow_links(true) {
        match e {
            // Not only files: a FIFO or a link to nowhere named like a session is handed on,
            // for the survey to name when it cannot be read.
            Ok(e) if !e.file_type().is_dir() => {
                let p = e.into_path();
                if p.extension().is_some_and(|x| x == "jsonl") {
                    out.push(p);
                }
            }
            Ok(_) => {}
            Err(e)
                if e.depth() == 0
                    && e.io_error()
                        .is_some_and(|io| io.kind() == std::io::ErrorKind::NotFound) => {}
            Err(e) => unlisted(e.path().unwrap_or(&root), &e),
        }
    }
    out.sort();
    out
}

pub fn survey(layout: &Layout, ctx: &SurveyContext<'_>) -> Result<Survey, ConvertError> {
    let d = ctx.diagnostics;
    let mut out = Vec::new();
    let mut seen: HashMap<String, PathBuf> = HashMap::new();
    let files = session_files(layout, &mut |path, e| {
        d.lost(
            path,
            None,
            format!("cannot be listed ({e}); the sessions in it were not carried"),
        );
    });
    for path in files {
        let source = match SourceFile::stat(&path, true) {
            Ok(s) => s,
            Err(e) => {
                d.lost(&path, None, format!("cannot be read ({e}); skipped"));
                continue;
            }
        };
        let line = match first_line(&path) {
            Ok(line) => line,
            Err(e) => {
                d.lost(&path, None, format!("cannot be read ({e}); skipped"));
                continue;
            }
        };
        let Some(header) = Header::parse(&line) else {
            // What it holds is the user's (a header damaged, entries after it): not carried,
            // so a loss, and a backup keeps the copy an earlier one made.
            let what = "the first line is not a session header (Pi neither lists nor loads \
                        it, and opening it with `pi --session` would replace it)";
            // Empty only when nothing follows either: a blanked header before entries is damage.
            if source.size == line.len() as u64 && line.iter().all(u8::is_ascii_whitespace) {
                d.left_out(&path, Some(1), format!("empty: {what}; not read"));
            } else {
                d.lost(
                    &path,
                    Some(1),
                    format!("not a Pi session: {what}; not read"),
                );
            }
            continue;
        };
        let id = match SessionId::new(&header.id) {
            Ok(id) => id,
            Err(e) => {
                d.lost(&path, Some(1), format!("{e}; skipped"));
                continue;
            }
        };
        if let Some(first) = seen.get(&header.id) {
            d.left_out(
                &path,
                Some(1),
                format!(
                    "session {} is also in {}, which pi-acp loads instead; this copy was not read",
                    header.id,
                    first.display()
                ),
            );
            continue;
        }
        seen.insert(header.id.clone(), path.clone());
        let files = vec![source.clone()];
        out.push(Surveyed::new(id, files, b"", Plan { source }));
    }
    Ok(Survey::of(out))
}
