//! `asp backup --from-bundle FILE`: a bundle as a snapshot. Its layers are taken as they are
//! stored (a layout 1 bundle's bodies become identity layers), every body checked first.
//!
//! The snapshot's harness is the one every session's native files come from (else `bundle`),
//! its home `bundle:<absolute path of the file>`, its time the bundle's creation time when it
//! has one; it has no source records, and the same bundle added twice is nothing changed.

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use asp_convert::kit::time;
use asp_format::bundle::{Bundle, Documents};
use asp_format::digest::{Descriptor, Digest};
use asp_format::progress::Progress;

use crate::backup::{BackupOutcome, content_options, host_name, write_snapshot};
use crate::error::RepoError;
use crate::repository::Repository;
use crate::snapshot::{SnapshotInfo, Sources};
use crate::sources::StoredShards;

pub fn backup_bundle(
    repo: &Repository,
    path: &Path,
    host: Option<String>,
    progress: &dyn Progress,
) -> Result<BackupOutcome, RepoError> {
    let _lock = repo.lock_shared()?;
    let bundle = Bundle::open(path)?;
    let state = bundle.manifest().state.clone();
    bundle.check_data(&state, progress)?;
    let harness = harness_of(&state);
    let home = format!(
        "bundle:{}",
        std::path::absolute(path)
            .unwrap_or_else(|_| path.to_path_buf())
            .display()
    );
    let _series = repo.lock_series(&harness, &home)?;
    let parent = repo.latest(&harness, &home)?;
    let docs = Documents::plan(&state, &|d| bundle.layer_ref(d), &content_options())?;
    let mut outcome = BackupOutcome {
        harness: harness.clone(),
        home: home.clone(),
        parent: parent.as_ref().map(|p| p.digest),
        new: docs.state.sessions.as_ref().map_or(0, Vec::len),
        ..BackupOutcome::default()
    };
    if parent
        .as_ref()
        .is_some_and(|p| p.content == docs.manifest.digest)
    {
        outcome.new = 0;
        return Ok(outcome);
    }
    let mut done = BTreeSet::new();
    for (body, r) in &docs.table {
        if !done.insert(r.layer) {
            continue;
        }
        let d = Descriptor {
            digest: r.layer,
            size: r.size,
        };
        let mut raw = bundle.open_layer(body)?;
        if repo.put_with(&d, &mut |w| std::io::copy(&mut raw.by_ref(), w).map(|_| ()))? {
            outcome.blobs_added += 1;
            outcome.bytes_added += r.size;
        }
    }
    repo.sync_blobs()?;
    let now = time::now();
    let created = bundle.created().and_then(time::parse).unwrap_or(now);
    let sources = Sources {
        started_ns: now,
        ..Sources::default()
    };
    let info = SnapshotInfo {
        digest: Digest::of(b""),
        size: 0,
        created: time::format_millis(created),
        harness,
        home,
        host: host.unwrap_or_else(host_name),
        parent: parent.map(|p| p.digest),
        content: docs.manifest.digest,
        sessions: docs.state.sessions.as_ref().map_or(0, Vec::len) as u64,
        gone: 0,
        dropped: Vec::new(),
        backed_up: None,
    };
    outcome.snapshot = Some(write_snapshot(
        repo,
        &docs,
        &sources,
        &StoredShards::default(),
        info,
        &mut outcome,
    )?);
    Ok(outcome)
}

/// The harness every session's native files come from, else `bundle`: whose state a bundle
/// (or a pulled artifact) holds.
pub fn harness_of(state: &asp_format::state::State) -> String {
    sole_harness(state).unwrap_or_else(|| "bundle".to_owned())
}

/// The harness every session's native files come from, when they name exactly one.
pub fn sole_harness(state: &asp_format::state::State) -> Option<String> {
    let harnesses: BTreeSet<String> = state
        .sessions
        .iter()
        .flatten()
        .filter_map(|s| s.native.as_ref().map(|n| n.harness.to_string()))
        .collect();
    match harnesses.len() {
        1 => harnesses.into_iter().next(),
        _ => None,
    }
}
