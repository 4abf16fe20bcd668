//! Reading one surveyed session: the file is streamed once (into its blob when native files
//! are kept, and into the [`Indexer`]), the current branch is found from the skeletons, and
//! the branch's entries are read back one at a time by offset for the replay.

use asp_format::Descriptor;
use asp_format::name::{HarnessName, RelPath};
use asp_format::state::{FileEntry, Meta, Native, Session};
use asp_format::update::UpdateWriter;
use serde_json::{Value, json};

use super::NAME;
use super::entries::{self, Indexer, Lines};
use super::layout::Layout;
use super::replay;
use super::survey::Plan;
use crate::error::ConvertError;
use crate::harness::{SessionContext, Surveyed};
use crate::kit::fsops::is_executable;
use crate::kit::source::read_into;

/// The native transcript of a session as its state holds it (see
/// [`crate::Harness::transcript`]): the native file at `_meta.pi.file`, which [`read_session`]
/// sets to the path of the session file it replayed and derived the update stream from.
pub fn transcript(native: &Native, meta: Option<&Meta>) -> Option<Descriptor> {
    crate::kit::meta::native_file(native, meta, "pi", "file")
}

pub fn read_session(
    layout: &Layout,
    ctx: &SessionContext<'_>,
    entry: &Surveyed,
) -> Result<Vec<Session>, ConvertError> {
    let plan: &Plan = entry.plan();
    let path = &plan.source.path;
    let d = ctx.diagnostics;
    let mut file = match plan.source.open() {
        Ok(f) => f,
        Err(e) => {
            d.lost(path, None, format!("cannot be read ({e}); not carried"));
            return Ok(Vec::new());
        }
    };
    let exec = file
        .file_mut()
        .metadata()
        .map(|m| is_executable(&m))
        .unwrap_or(false);
    let blob = if ctx.options.native {
        Some(ctx.blobs.begin_transcript(path, file.len())?)
    } else {
        None
    };
    let mut ix = Indexer::new(path, d);
    let content = match read_into(&mut file, blob, |c| ix.feed(c))? {
        Ok(content) => content,
        Err(e) => {
            d.lost(path, None, format!("cannot be read ({e}); not carried"));
            return Ok(Vec::new());
        }
    };
    let index = ix.finish();
    let Some(header) = index.header.clone() else {
        // Reported by the indexer; the survey saw a header, so the file was replaced since.
        return Ok(Vec::new());
    };
    let rel = layout.virtual_path(path);
    let files = match content {
        Some(content) => match rel.as_deref().map(RelPath::new) {
            Some(Ok(p)) => Some(vec![FileEntry {
                path: p,
                executable: exec,
                content,
            }]),
            _ => {
                d.lost(
                    path,
                    None,
                    "this file's name cannot be carried portably; left out of the session's \
                         native files",
                );
                None
            }
        },
        None => None,
    };

    let branch = entries::branch(&index, path, d);
    let mut raw = file.into_file();
    let mut lines = Lines {
        path,
        file: &mut raw,
        diagnostics: d,
    };
    let records = &index.records;
    let loaded = branch.path.iter().filter_map(|&i| lines.load(&records[i]));
    let mut w = UpdateWriter::derived(ctx.blobs, FileEntry::find(&files, &rel))?;
    let sid = entry.id.as_str().to_owned();
    let summary = replay::replay(loaded, Some(&header.cwd), &mut |u| {
        w.push(&u.notification(&sid))?;
        Ok(())
    })?;
    let updates = w.finish()?;

    let updated_at = records
        .iter()
        .rev()
        .take(64)
        .filter_map(|r| lines.load(r))
        .find_map(|v| {
            v.get("timestamp")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .or_else(|| header.timestamp.clone())
        .filter(|t| crate::kit::time::parse(t).is_some());

    let mut pi = summary.meta;
    if let Some(v) = header.version {
        pi.insert("version".into(), json!(v));
    }
    if let Some(p) = &header.parent_session {
        pi.insert("parentSession".into(), json!(p));
    }
    if let Some(t) = &header.timestamp {
        pi.insert("startedAt".into(), json!(t));
    }
    if let Some(r) = &rel {
        pi.insert("file".into(), json!(r));
    }
    if let Some(l) = &branch.leaf {
        pi.insert("leafId".into(), json!(l));
    }
    if branch.abandoned > 0 {
        pi.insert("abandonedEntries".into(), json!(branch.abandoned));
    }
    if let Some(m) = &summary.model {
        pi.insert("model".into(), json!(m));
    }
    if let Some(t) = &summary.thinking_level {
        pi.insert("thinkingLevel".into(), json!(t));
    }
    let mut meta = Meta::new();
    meta.insert("pi".into(), Value::Object(pi));
    let harness = HarnessName::new(NAME).expect("a valid harness name");
    Ok(vec![Session {
        id: entry.id.clone(),
        title: summary.title.unwrap_or_default(),
        harness: Some(harness.clone()),
        cwd: Some(header.cwd),
        updated_at,
        updates,
        native: files.map(|files| Native { harness, files }),
        meta: Some(meta),
    }])
}
