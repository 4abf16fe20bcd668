//! `asp check`: every snapshot's documents, every layer they name present with its size, and
//! with `read_data` every body decoded and every layer's digest recomputed.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use asp_format::blob::BlobSource;
use asp_format::digest::{Descriptor, Digest};
use asp_format::progress::Progress;

use crate::blobs::SnapshotBlobs;
use crate::error::RepoError;
use crate::repository::Repository;
use crate::snapshot::Snapshot;

/// What to check.
#[derive(Debug, Clone, Copy, Default)]
pub struct CheckOptions {
    /// Read every layer and decode every body (else: documents and sizes only).
    pub read_data: bool,
    /// Move each layer whose bytes do not match its name (found with `read_data`) into
    /// `<repo>/damaged/`, so that the next backup, finding it missing, stores it again from
    /// the source that still has its sessions. Nothing is deleted.
    pub repair: bool,
}

/// What a check found.
#[derive(Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckReport {
    pub snapshots: usize,
    /// Blobs some snapshot names.
    pub blobs: usize,
    /// Bodies decoded and checked (with `read_data`).
    pub bodies_read: usize,
    /// Blobs nothing names (left by an interrupted backup or by forget; prune removes them).
    pub unreferenced: usize,
    pub problems: Vec<String>,
    /// Layers moved into `<repo>/damaged/` (with `repair`).
    pub moved_aside: Vec<String>,
}

impl CheckReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// What needs one layer.
#[derive(Debug, Default)]
struct Needers {
    /// Session id → the snapshots (short ids) that hold it.
    sessions: BTreeMap<String, BTreeSet<String>>,
    /// Configuration files (paths as kept).
    files: BTreeSet<String>,
}

impl Needers {
    /// `; needed by session ID (snapshots a1b2c3d4, e5f6a7b8)`, for a problem's message, so a
    /// person knows what was lost and what to forget.
    fn describe(&self) -> String {
        let mut said: Vec<String> = self
            .sessions
            .iter()
            .map(|(id, snaps)| {
                // (Snapshot ids sort as hex, not by time: the first three and how many.)
                let shown: Vec<&str> = snaps.iter().take(3).map(String::as_str).collect();
                let more = match snaps.len() {
                    n if n > 3 => format!(", … {n} in all"),
                    _ => String::new(),
                };
                let n = if snaps.len() == 1 { "" } else { "s" };
                format!("session {id} (snapshot{n} {}{more})", shown.join(", "))
            })
            .collect();
        said.extend(self.files.iter().map(|f| format!("configuration file {f}")));
        if said.is_empty() {
            String::new()
        } else {
            format!("; needed by {}", said.join(", "))
        }
    }
}

/// Who needs each layer of `bad`, over every snapshot (read again unless `loaded` holds them
/// all): only when something is missing or damaged, so a sound repository's check keeps no
/// map of every session of every snapshot.
fn needers(
    repo: &Repository,
    infos: &[crate::snapshot::SnapshotInfo],
    loaded: &[Snapshot],
    bad: &BTreeSet<Digest>,
) -> BTreeMap<Digest, Needers> {
    let mut out: BTreeMap<Digest, Needers> = BTreeMap::new();
    let mut note = |snap: &Snapshot| {
        let short = snap.info.short_id();
        let needing =
            crate::backup::sessions_needing(&snap.state, &snap.table, |l| bad.contains(l));
        for (session, layers) in needing {
            for layer in layers {
                let n = out.entry(layer).or_default();
                let snaps = n.sessions.entry(session.id.to_string()).or_default();
                snaps.insert(short.clone());
            }
        }
        for f in snap.sources.config.iter().flat_map(|c| &c.files) {
            if let Some(r) = snap
                .sources
                .config_layers
                .get(&f.content.digest)
                .filter(|r| bad.contains(&r.layer))
            {
                out.entry(r.layer)
                    .or_default()
                    .files
                    .insert(f.path.to_string());
            }
        }
    };
    if loaded.len() == infos.len() {
        loaded.iter().for_each(&mut note);
    } else {
        for info in infos {
            if let Ok(snap) = Snapshot::load(repo, info) {
                note(&snap);
            }
        }
    }
    out
}

/// Checks the repository; problems are reported, not returned as errors.
pub fn check(
    repo: &Repository,
    opts: &CheckOptions,
    progress: &dyn Progress,
) -> Result<CheckReport, RepoError> {
    // Repairing moves blobs: no backup may count on one meanwhile.
    let _lock = if opts.repair {
        repo.lock_exclusive()?
    } else {
        repo.lock_shared()?
    };
    let mut report = CheckReport::default();
    let infos = match repo.snapshots() {
        Ok(i) => i,
        Err(e) => {
            report.problems.push(e.to_string());
            return Ok(report);
        }
    };
    report.snapshots = infos.len();
    let mut named: BTreeSet<Digest> = BTreeSet::new();
    let mut sized: BTreeMap<Digest, u64> = BTreeMap::new();
    let mut bodies: BTreeMap<Digest, (u64, usize)> = BTreeMap::new();
    let mut loaded: Vec<Snapshot> = Vec::new();
    // Problems about a layer, by their index in `report.problems`: who needs the layer is
    // added to them at the end.
    let mut about_layer: Vec<(usize, Digest)> = Vec::new();
    progress.begin("checking snapshots", Some(infos.len() as u64));
    for info in &infos {
        progress.advance(1);
        let snap = match Snapshot::load(repo, info) {
            Ok(s) => s,
            Err(e) => {
                report.problems.push(e.to_string());
                continue;
            }
        };
        named.insert(info.digest);
        named.insert(snap.content.digest);
        for l in snap.manifest.layers.iter().chain([&snap.manifest.config]) {
            sized.insert(l.digest, l.size);
        }
        for l in snap
            .content_manifest
            .layers
            .iter()
            .chain([&snap.content_manifest.config])
        {
            sized.insert(l.digest, l.size);
        }
        let layers: BTreeSet<Digest> = snap
            .content_manifest
            .layers
            .iter()
            .map(|l| l.digest)
            .collect();
        for (body, r) in &snap.table {
            if !layers.contains(&r.layer) {
                report.problems.push(format!(
                    "snapshot {}: body {body} is stored in layer {}, which its manifest does not list",
                    info.short_id(),
                    r.layer
                ));
            }
        }
        for d in snap.state.descriptors() {
            if !snap.table.contains_key(&d.digest) {
                report.problems.push(format!(
                    "snapshot {}: body {} has no entry in the layer table",
                    info.short_id(),
                    d.digest
                ));
            }
        }
        if opts.read_data {
            for d in snap.state.descriptors() {
                bodies.entry(d.digest).or_insert((d.size, loaded.len()));
            }
            loaded.push(snap);
        }
    }
    progress.finish();
    for (d, size) in &sized {
        named.insert(*d);
        let blob = Descriptor {
            digest: *d,
            size: *size,
        };
        if !repo.has_blob(&blob) {
            about_layer.push((report.problems.len(), *d));
            report.problems.push(format!(
                "blob {d} ({size} bytes) is missing or has another size"
            ));
        } else if opts.read_data {
            let mut r = repo.open_raw(&blob)?;
            if let Err(e) = std::io::copy(&mut r, &mut std::io::sink()) {
                about_layer.push((report.problems.len(), *d));
                report.problems.push(format!("{e}"));
                if opts.repair {
                    drop(r);
                    let aside = repo.root().join("damaged");
                    std::fs::create_dir_all(&aside).map_err(RepoError::io(&aside))?;
                    // A name of its own: an earlier copy moved aside stays.
                    let mut to = aside.join(d.hex());
                    let mut n = 1;
                    while to.exists() {
                        to = aside.join(format!("{}.{n}", d.hex()));
                        n += 1;
                    }
                    std::fs::rename(repo.blob_path(d), &to).map_err(RepoError::io(&to))?;
                    report.moved_aside.push(d.to_string());
                }
            }
        }
    }
    report.blobs = named.len();
    if !about_layer.is_empty() {
        let bad: BTreeSet<Digest> = about_layer.iter().map(|(_, d)| *d).collect();
        let needed_by = needers(repo, &infos, &loaded, &bad);
        for (i, d) in &about_layer {
            if let Some(who) = needed_by.get(d) {
                report.problems[*i].push_str(&who.describe());
            }
        }
    }
    if opts.read_data {
        progress.begin("reading bodies", Some(bodies.len() as u64));
        for (digest, (size, i)) in &bodies {
            progress.advance(1);
            let src = SnapshotBlobs::new(repo, &loaded[*i].table);
            let blob = Descriptor {
                digest: *digest,
                size: *size,
            };
            let res = src
                .open(&blob)
                .map_err(|e| e.to_string())
                .and_then(|mut r| {
                    let mut sink = std::io::sink();
                    std::io::copy(&mut r.by_ref(), &mut sink).map_err(|e| e.to_string())
                });
            match res {
                Ok(_) => report.bodies_read += 1,
                Err(e) => report.problems.push(format!("body {digest}: {e}")),
            }
        }
        progress.finish();
    }
    let dir = repo.blobs_dir();
    for entry in std::fs::read_dir(&dir).map_err(RepoError::io(&dir))? {
        let entry = entry.map_err(RepoError::io(&dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') {
            continue;
        }
        match Digest::from_hex(name) {
            Ok(d) if named.contains(&d) => {}
            Ok(_) => report.unreferenced += 1,
            Err(_) => report
                .problems
                .push(format!("{} is not a blob name", entry.path().display())),
        }
    }
    Ok(report)
}
