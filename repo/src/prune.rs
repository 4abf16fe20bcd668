//! `asp prune`: deletes every blob no snapshot in `index.json` names, and what interrupted
//! writes left behind, under the exclusive repository lock, so no backup is running (a backup
//! holds the lock shared from before it reads its parent until its snapshot is in the index).
//! A snapshot that cannot be read stops the prune before anything is deleted: a blob is
//! removed only when every snapshot is known not to need it.

use std::collections::BTreeSet;
use std::fs;

use asp_format::digest::Digest;

use crate::error::RepoError;
use crate::repository::Repository;
use crate::snapshot::Snapshot;

/// What a prune removed (or would).
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PruneReport {
    /// Nothing was removed: the counts are what a prune would remove.
    pub dry_run: bool,
    pub snapshots: usize,
    pub kept_blobs: usize,
    pub removed_blobs: usize,
    pub removed_bytes: u64,
    /// Temporary files and staging directories of interrupted writes.
    pub removed_leftovers: usize,
}

/// Every blob the snapshots of the index name: snapshot manifests, their config and source
/// records, content manifests, their config and layers.
pub fn referenced(repo: &Repository) -> Result<(usize, BTreeSet<Digest>), RepoError> {
    let infos = repo.snapshots()?;
    let mut named = BTreeSet::new();
    for info in &infos {
        let snap = Snapshot::load(repo, info)?;
        named.insert(info.digest);
        named.insert(snap.content.digest);
        named.insert(snap.manifest.config.digest);
        named.extend(snap.manifest.layers.iter().map(|l| l.digest));
        named.insert(snap.content_manifest.config.digest);
        named.extend(snap.content_manifest.layers.iter().map(|l| l.digest));
    }
    Ok((infos.len(), named))
}

pub fn prune(repo: &Repository, dry_run: bool) -> Result<PruneReport, RepoError> {
    let _lock = repo.lock_exclusive()?;
    let (snapshots, named) = referenced(repo)?;
    let mut report = PruneReport {
        dry_run,
        snapshots,
        ..PruneReport::default()
    };
    let dir = repo.blobs_dir();
    for entry in fs::read_dir(&dir).map_err(RepoError::io(&dir))? {
        let entry = entry.map_err(RepoError::io(&dir))?;
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let leftover = is_partial_blob(&name);
        let keep = match Digest::from_hex(&name) {
            Ok(d) => named.contains(&d),
            Err(_) => !leftover,
        };
        if keep {
            if !leftover {
                report.kept_blobs += 1;
            }
            continue;
        }
        let len = entry.metadata().map_err(RepoError::io(&path))?.len();
        if leftover {
            report.removed_leftovers += 1;
        } else {
            report.removed_blobs += 1;
            report.removed_bytes += len;
        }
        if !dry_run {
            fs::remove_file(&path).map_err(RepoError::io(&path))?;
        }
    }
    // Staging directories of backups that were killed (a running one holds the lock shared).
    let root = repo.root();
    for entry in fs::read_dir(root).map_err(RepoError::io(root))? {
        let entry = entry.map_err(RepoError::io(root))?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if is_staging_leftover(&name) {
            report.removed_leftovers += 1;
            if !dry_run {
                let p = entry.path();
                let r = if p.is_dir() {
                    fs::remove_dir_all(&p)
                } else {
                    fs::remove_file(&p)
                };
                r.map_err(RepoError::io(&p))?;
            }
        }
    }
    if !dry_run {
        repo.sync_blobs();
    }
    Ok(report)
}

/// A blob being written under `blobs/sha256/` (renamed to its digest when whole): one a write
/// that was cut off left behind, when no backup holds the lock.
pub(crate) fn is_partial_blob(name: &str) -> bool {
    name.starts_with(".asp-") && name.ends_with(".partial")
}

/// A backup's staging folder or temporary file at the top of the repository: one a backup that
/// was killed left behind, when no backup holds the lock.
pub(crate) fn is_staging_leftover(name: &str) -> bool {
    name.starts_with(".aspstate-layers-") || name.starts_with(".asp-")
}
