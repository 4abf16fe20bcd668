//! `asp prune`: deletes every blob no entry of `index.json` names, and what interrupted
//! writes left behind, under the exclusive repository lock, so no backup is running (a backup
//! holds the lock shared from before it reads its parent until its snapshot is in the index).
//! A snapshot that cannot be read stops the prune before anything is deleted: a blob is
//! removed only when every snapshot is known not to need it. So does an entry of the index
//! that is not a snapshot (another tool's image) whose manifest cannot be read: what it
//! names is kept whole ([`other_entries`]).

use std::collections::BTreeSet;
use std::fs;

use asp_format::bundle::oci::ARTIFACT_TYPE as STATE_ARTIFACT;
use asp_format::digest::{Descriptor, Digest};
use asp_registry::manifest::{DOCKER_MANIFEST, DOCKER_MANIFEST_LIST, IMAGE_INDEX, IMAGE_MANIFEST};

use crate::error::RepoError;
use crate::repository::Repository;
use crate::snapshot::{SNAPSHOT_ARTIFACT, Snapshot};

/// What a prune removed (or would).
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PruneReport {
    /// Nothing was removed: the counts are what a prune would remove.
    pub dry_run: bool,
    pub snapshots: usize,
    /// Entries of the index that are not snapshots (another tool's images), whose blobs are
    /// kept.
    pub other_entries: usize,
    pub kept_blobs: usize,
    pub removed_blobs: usize,
    pub removed_bytes: u64,
    /// Temporary files and staging directories of interrupted writes.
    pub removed_leftovers: usize,
}

/// Every blob the index names, and how many snapshots and other entries name them.
#[derive(Debug, Default)]
pub struct Referenced {
    pub snapshots: usize,
    /// Entries of the index that are not snapshots.
    pub other_entries: usize,
    pub named: BTreeSet<Digest>,
}

/// Every blob the index names: what the snapshots name (snapshot manifests, their config and
/// source records, content manifests, their config and layers), and what its other entries
/// name ([`other_entries`]). An entry of either kind that cannot be read is an error: what it
/// needs cannot be told.
pub fn referenced(repo: &Repository) -> Result<Referenced, RepoError> {
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
    let others = other_entries(repo)?;
    if let Some(first) = others.unreadable.first() {
        return Err(RepoError::Integrity(format!(
            "{first}; nothing is deleted while what an entry of index.json names cannot be told \
             (`asp check` names each such entry)"
        )));
    }
    named.extend(others.named);
    Ok(Referenced {
        snapshots: infos.len(),
        other_entries: others.entries,
        named,
    })
}

/// What the entries of `index.json` that are not asp snapshots name.
#[derive(Debug, Default)]
pub struct OtherEntries {
    /// How many entries there are.
    pub entries: usize,
    /// Every blob reachable from them.
    pub named: BTreeSet<Digest>,
    /// Their manifests that are in `blobs/` but cannot be read (damaged, cut short, not
    /// JSON), each said with its entry: what such a manifest names is not known.
    pub unreadable: Vec<String>,
}

/// The largest manifest read while following another tool's entries (what a registry takes
/// in one manifest).
const LARGEST_MANIFEST: u64 = 4 << 20;

/// Whether `media_type` is that of a manifest or an index, whose own descriptors are followed.
fn is_manifest(media_type: &str) -> bool {
    [
        IMAGE_MANIFEST,
        IMAGE_INDEX,
        DOCKER_MANIFEST,
        DOCKER_MANIFEST_LIST,
        "application/vnd.oci.artifact.manifest.v1+json",
    ]
    .contains(&media_type)
}

/// How a blob was reached while following another tool's entries ([`other_entries`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Via {
    /// An entry of `index.json`: a manifest or an index by definition, with a media type or
    /// without one.
    Entry,
    /// A manifest's config, layer or blob, or an index's manifest.
    Child,
    /// A manifest's `subject`: what it is a referrer of.
    Subject,
}

/// Whether the manifest `doc` is asp's own: a snapshot manifest (S) or the state it records
/// (M), which only a snapshot of the index keeps.
fn is_asp_document(doc: &serde_json::Value) -> bool {
    matches!(
        doc.get("artifactType").and_then(serde_json::Value::as_str),
        Some(SNAPSHOT_ARTIFACT | STATE_ARTIFACT)
    )
}

/// The descriptors a manifest or index names: its config, layers, manifests (an index's),
/// blobs (an artifact manifest's) and subject. Digests of another algorithm than sha256 are
/// passed over: their blobs are not under `blobs/sha256/`, which is all prune deletes from.
fn named_by(doc: &serde_json::Value) -> Vec<(Digest, Option<u64>, String, Via)> {
    let one = |v: &serde_json::Value, via| {
        let digest = v.get("digest")?.as_str()?.parse::<Digest>().ok()?;
        let size = v.get("size").and_then(serde_json::Value::as_u64);
        let media_type = v
            .get("mediaType")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_owned();
        Some((digest, size, media_type, via))
    };
    let mut out = Vec::new();
    out.extend(doc.get("config").and_then(|v| one(v, Via::Child)));
    out.extend(doc.get("subject").and_then(|v| one(v, Via::Subject)));
    for key in ["layers", "manifests", "blobs"] {
        if let Some(list) = doc.get(key).and_then(serde_json::Value::as_array) {
            out.extend(list.iter().filter_map(|v| one(v, Via::Child)));
        }
    }
    out
}

/// Every blob the entries of `index.json` that are not asp snapshots name, followed down:
/// an image manifest's config and layers, an index's manifests and theirs, a subject. Another
/// tool's image in the layout is not asp's to delete (found by a new user's trial: `asp
/// prune` on such a layout deleted the image's blobs as unreferenced). A manifest missing
/// from `blobs/` (a partial copy of a multi-platform image lists manifests it does not hold)
/// names nothing that can be known; one there that cannot be read is said in `unreadable`.
///
/// What is a manifest, to be read and followed: an entry of `index.json` (one without a media
/// type too), and a descriptor of a manifest's or index's media type. A descriptor within
/// one that has no media type (the OCI descriptor requires one; some tools leave it out) is
/// read as a manifest when it can be (JSON of at most 4 MiB whose digest matches), else it is
/// a blob of its own, kept and not followed: a config or layer without a media type, large or
/// not JSON, was said to be an unreadable manifest, and stopped every prune.
///
/// A `subject` is followed (a referrer keeps what it refers to: a signature or an SBOM put in
/// with its image, whose image is not listed itself, keeps the image), unless it is asp's
/// own: a snapshot manifest or the state it records is kept only while the index lists that
/// snapshot, so a snapshot a referrer was attached to can still be forgotten and pruned (the
/// referrer stays, naming a subject that is gone, which OCI allows).
pub fn other_entries(repo: &Repository) -> Result<OtherEntries, RepoError> {
    let entries = repo.other_entries()?;
    let mut out = OtherEntries {
        entries: entries.len(),
        ..OtherEntries::default()
    };
    let mut todo: Vec<(String, Digest, Option<u64>, String, Via)> = entries
        .into_iter()
        .map(|d| {
            let name = match d.annotations.get(asp_registry::manifest::REF_NAME) {
                Some(n) => format!("{n} ({})", d.digest),
                None => d.digest.to_string(),
            };
            (name, d.digest, Some(d.size), d.media_type, Via::Entry)
        })
        .collect();
    while let Some((entry, digest, size, media_type, via)) = todo.pop() {
        if out.named.contains(&digest) {
            continue;
        }
        // Known by its media type to be a blob, not a manifest: kept, not read.
        let untyped = media_type.is_empty();
        if !untyped && !is_manifest(&media_type) {
            out.named.insert(digest);
            continue;
        }
        let Ok(meta) = fs::symlink_metadata(repo.blob_path(&digest)) else {
            // Not in `blobs/`: names nothing that can be known.
            out.named.insert(digest);
            continue;
        };
        let blob = Descriptor {
            digest,
            size: size.unwrap_or(meta.len()),
        };
        let doc = repo
            .read_blob(&blob, LARGEST_MANIFEST)
            .map_err(|e| e.to_string())
            .and_then(|b| {
                serde_json::from_slice::<serde_json::Value>(&b).map_err(|e| e.to_string())
            });
        match doc {
            // A subject that is asp's own is not kept by a referrer: see above.
            Ok(doc) if via == Via::Subject && is_asp_document(&doc) => {}
            Ok(doc) => {
                out.named.insert(digest);
                todo.extend(
                    named_by(&doc)
                        .into_iter()
                        .map(|(d, size, media_type, via)| {
                            (entry.clone(), d, size, media_type, via)
                        }),
                );
            }
            // Within a manifest, without a media type: a blob of its own, not a manifest.
            Err(_) if untyped && via != Via::Entry => {
                out.named.insert(digest);
            }
            Err(e) => {
                out.named.insert(digest);
                out.unreadable.push(format!(
                    "index.json's entry {entry}, not an asp snapshot: its manifest {digest} \
                     cannot be read ({e})"
                ));
            }
        }
    }
    Ok(out)
}

pub fn prune(repo: &Repository, dry_run: bool) -> Result<PruneReport, RepoError> {
    // A dry run only reads: it takes the lock as a reader does, so it runs beside a backup
    // and on a repository it cannot write (new-user trial helper-130, 5: refused on a
    // read-only mount, "this command writes into the repository"). What a backup adds while
    // it counts may make its count a little off; the prune itself waits for the backup.
    // (Another tool's layout is refused either way: prune is not for it.)
    let _lock = match dry_run {
        true => {
            repo.refuse_foreign()?;
            repo.lock_to_read()?
        }
        false => repo.lock_exclusive()?,
    };
    let Referenced {
        snapshots,
        other_entries,
        named,
    } = referenced(repo)?;
    let mut report = PruneReport {
        dry_run,
        snapshots,
        other_entries,
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
        repo.sync_blobs()?;
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
