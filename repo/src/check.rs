//! `asp check`: every snapshot's documents, every layer they name present with its size, and
//! with `read_data` every body decoded and every layer's digest recomputed.

use asp_format::bundle::windows::Base;
use asp_format::error::{Classify as _, ErrorClass};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use asp_convert::reading::{READING_BUDGET, ReadingBudget};
use asp_format::bundle::oci::{LayerRef, MAX_CHAIN};
use asp_format::bundle::recent::Recent;
use asp_format::digest::{Descriptor, Digest, VerifyingReader};
use asp_format::progress::Progress;

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
    /// Entries of the index that are not snapshots (another tool's images), and the blobs of
    /// `blobs/` only they name: not checked, and kept by prune.
    pub other_entries: usize,
    pub other_blobs: usize,
    /// Temporary files and staging folders of interrupted writes, or of a backup running now
    /// (check holds the lock shared, as a backup does; prune, holding it alone, removes them).
    pub leftovers: usize,
    pub problems: Vec<String>,
    /// Layers moved into `<repo>/damaged/` (with `repair`).
    pub moved_aside: Vec<String>,
    /// Layers whose bytes do not match their name, left where they are (without `repair`):
    /// what `--repair` would move aside.
    pub damaged_layers: usize,
}

impl CheckReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Moves the blob `d` into `<repo>/damaged/` (under a name of its own: an earlier copy moved
/// aside stays), so the next backup, finding it missing, stores it again. Nothing is deleted.
fn move_aside(repo: &Repository, d: &Digest) -> Result<String, RepoError> {
    let aside = repo.root().join("damaged");
    std::fs::create_dir_all(&aside).map_err(RepoError::io(&aside))?;
    let mut to = aside.join(d.hex());
    let mut n = 1;
    while to.exists() {
        to = aside.join(format!("{}.{n}", d.hex()));
        n += 1;
    }
    std::fs::rename(repo.blob_path(d), &to).map_err(RepoError::io(&to))?;
    Ok(d.to_string())
}

/// Whether the blob file `d` names holds bytes whose sha256 is `d`, read as it streams through
/// the repository's own verifying reader ([`Repository::open_raw`], at the file's size).
fn blob_matches_its_name(
    repo: &Repository,
    path: &std::path::Path,
    d: &Digest,
) -> Result<bool, RepoError> {
    let size = std::fs::metadata(path).map_err(RepoError::io(path))?.len();
    let mut r = repo.open_raw(&Descriptor { digest: *d, size })?;
    match std::io::copy(&mut r, &mut std::io::sink()) {
        Ok(_) => Ok(true),
        Err(e) if asp_format::digest::is_integrity_error(&e) => Ok(false),
        Err(e) => Err(RepoError::io(path)(e)),
    }
}

/// What needs one layer.
#[derive(Debug, Default)]
struct Needers {
    /// Session id → the snapshots (short ids) that hold it.
    sessions: BTreeMap<String, BTreeSet<String>>,
    /// Configuration files (paths as kept).
    files: BTreeSet<String>,
    /// The other kinds' bodies: `file SKILL.md of skill deploy-check`, `the instructions`,
    /// `memory note …`.
    others: BTreeSet<String>,
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
        said.extend(self.others.iter().cloned());
        if said.is_empty() {
            String::new()
        } else {
            format!("; needed by {}", said.join(", "))
        }
    }
}

/// Who needs each layer of `bad`, over every snapshot, read again: only when something is
/// missing or damaged, so a sound repository's check keeps neither the snapshots nor a map of
/// every session of every snapshot.
fn needers(
    repo: &Repository,
    infos: &[crate::snapshot::SnapshotInfo],
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
        // A skill's files, the instructions, a note: named as a restore names them.
        for (d, what) in snap.state.references() {
            if matches!(
                what,
                asp_format::state::Reference::Updates(_)
                    | asp_format::state::Reference::Native { .. }
            ) {
                continue;
            }
            let Some(r) = snap.table.get(&d.digest) else {
                continue;
            };
            let through_dictionary = r
                .dictionary
                .and_then(|x| snap.table.get(&x))
                .map(|x| x.layer)
                .filter(|l| bad.contains(l));
            for layer in [
                Some(r.layer).filter(|l| bad.contains(l)),
                through_dictionary,
            ]
            .into_iter()
            .flatten()
            {
                out.entry(layer)
                    .or_default()
                    .others
                    .insert(what.to_string());
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
    for info in infos {
        if let Ok(snap) = Snapshot::load(repo, info) {
            note(&snap);
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
        // Only read: a repository that cannot be written here is checked all the same.
        repo.lock_to_read()?
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
    let mut bodies = Bodies::default();
    // Problems about a layer, by their index in `report.problems`: who needs the layer is
    // added to them at the end.
    let mut about_layer: Vec<(usize, Digest)> = Vec::new();
    // Snapshots whose manifest is not in `blobs/` at all, by their problem's index: the
    // index may name them wrong (a damaged `index.json`), which `--rebuild-index` mends and
    // `forget` then `prune` would make worse.
    let mut manifest_missing: Vec<usize> = Vec::new();
    // The manifests of the snapshots said above to be unreadable: when it is the manifest
    // itself that is damaged, that problem names it, and it is not said again as a blob.
    let mut unreadable: BTreeSet<Digest> = BTreeSet::new();
    progress.begin("checking snapshots", Some(infos.len() as u64));
    for info in &infos {
        progress.advance(1);
        let loaded = match Snapshot::load_unsaid(repo, info) {
            // The index is what is wrong, and the error says how to mend it; the snapshot
            // itself is checked all the same, as its manifest says it is.
            Err(RepoError::IndexDiffers(said)) => {
                report.problems.push(said);
                Snapshot::load_unsaid_as_its_manifest_says(repo, info)
            }
            other => other,
        };
        // Source records that cannot be read leave the state whole: a restore takes it, and
        // the next backup reads every session again (review of a new user's trial,
        // helper-130, 2: check called such a snapshot unreadable and offered to forget it,
        // which would have let go of the sessions only it holds).
        let loaded = match loaded {
            Err(e) if e.class() == ErrorClass::Integrity => {
                match Snapshot::load_for_reading(repo, info) {
                    Ok(snap) => {
                        // A shard (the entries), or the head (the sessions gone and the
                        // configuration), which a backup cannot build on.
                        let (damage, next) = match &snap.sources_damage {
                            None => (
                                crate::backup::records_damage(&e),
                                "The next `asp backup` of that home builds on it, reads every \
                                 session again and writes new records",
                            ),
                            Some(d) => (
                                d.clone(),
                                "The next `asp backup` of that home builds on an older snapshot: \
                                 what only this one holds stays here",
                            ),
                        };
                        report.problems.push(format!(
                            "snapshot {} ({} of {} in {}): its source records cannot be read \
                             ({damage}); its state is whole, and its sessions restore. {next}; \
                             do not `asp forget` it for this: it may hold sessions gone from \
                             the home",
                            info.short_id(),
                            info.created,
                            info.harness,
                            info.home,
                        ));
                        Ok(snap)
                    }
                    Err(_) => Err(e),
                }
            }
            other => other,
        };
        let snap = match loaded {
            Ok(s) => s,
            Err(e) => {
                if !repo.has_blob(&Descriptor {
                    digest: info.digest,
                    size: info.size,
                }) {
                    manifest_missing.push(report.problems.len());
                }
                unreadable.insert(info.digest);
                // Named, so the person knows which snapshot it costs; what only it holds is
                // counted below as unreferenced, which it is not.
                report.problems.push(format!(
                    "snapshot {} ({} of {} in {}) cannot be read: {e}; the blobs only it \
                     holds are counted as unreferenced (`asp forget --snapshot {}` lets it go, and with it \
                     whatever only it holds)",
                    info.short_id(),
                    info.created,
                    info.harness,
                    info.home,
                    info.short_id(),
                ));
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
        // The configuration files' layers are S's to list: what S does not list, prune does
        // not keep (review helper-133, 8).
        let listed: BTreeSet<Digest> = snap.manifest.layers.iter().map(|l| l.digest).collect();
        for f in snap.sources.config.iter().flat_map(|c| &c.files) {
            match snap.sources.config_layers.get(&f.content.digest) {
                Some(r) if !listed.contains(&r.layer) => report.problems.push(format!(
                    "snapshot {}: configuration file {} is stored in layer {}, which its \
                     manifest does not list",
                    info.short_id(),
                    f.path,
                    r.layer
                )),
                Some(_) => {}
                None => report.problems.push(format!(
                    "snapshot {}: configuration file {} has no layer in its records",
                    info.short_id(),
                    f.path
                )),
            }
        }
        if opts.read_data {
            bodies.add(&snap);
        }
    }
    progress.finish();
    for (d, size) in &sized {
        named.insert(*d);
        let blob = Descriptor {
            digest: *d,
            size: *size,
        };
        let there = std::fs::metadata(repo.blob_path(d)).ok().map(|m| m.len());
        if let Some(n) = there.filter(|n| n != size) {
            // Cut short (or grown): its bytes cannot be its name's, so it is damaged as one
            // with a flipped byte is, and moved aside the same way.
            about_layer.push((report.problems.len(), *d));
            report
                .problems
                .push(format!("blob {d} has {n} bytes, not {size}: it is damaged"));
            if opts.repair {
                report.moved_aside.push(move_aside(repo, d)?);
            } else {
                report.damaged_layers += 1;
            }
        } else if !repo.has_blob(&blob) {
            about_layer.push((report.problems.len(), *d));
            // One an earlier `--repair` moved aside is missing until a backup stores it again.
            let aside = repo.root().join("damaged").join(d.hex());
            report.problems.push(if aside.exists() {
                format!(
                    "blob {d} ({size} bytes) is missing: `asp check --repair` moved it into {} \
                     as damaged; the next `asp backup` of the home it came from stores it again \
                     while the source still has what needs it",
                    aside.display()
                )
            } else {
                format!("blob {d} ({size} bytes) is missing")
            });
        } else if opts.read_data {
            let mut r = repo.open_raw(&blob)?;
            if let Err(e) = std::io::copy(&mut r, &mut std::io::sink()) {
                about_layer.push((report.problems.len(), *d));
                report.problems.push(format!("{e}"));
                if opts.repair {
                    drop(r);
                    report.moved_aside.push(move_aside(repo, d)?);
                } else {
                    report.damaged_layers += 1;
                }
            }
        }
    }
    report.blobs = named.len();
    if opts.read_data {
        // A body that cannot be read because a layer said above is missing or damaged is
        // counted with that layer, not said again: one damaged blob is one problem.
        let said: BTreeMap<Digest, usize> = about_layer.iter().map(|(i, d)| (*d, *i)).collect();
        let mut without: BTreeMap<usize, usize> = BTreeMap::new();
        let (read, problems) = bodies.read(repo, progress);
        report.bodies_read = read;
        for (layer, m) in problems {
            if let Some(&i) = layer.as_ref().and_then(|l| said.get(l)) {
                *without.entry(i).or_default() += 1;
                continue;
            }
            if let Some(layer) = layer {
                about_layer.push((report.problems.len(), layer));
            }
            report.problems.push(m);
        }
        for (i, n) in without {
            report.problems[i].push_str(&format!(
                "; {} cannot be read without it",
                count(n, "a body", "bodies")
            ));
        }
    }
    if !about_layer.is_empty() {
        let bad: BTreeSet<Digest> = about_layer.iter().map(|(_, d)| *d).collect();
        let needed_by = needers(repo, &infos, &bad);
        for (i, d) in &about_layer {
            if let Some(who) = needed_by.get(d) {
                report.problems[*i].push_str(&who.describe());
            }
        }
    }
    // What the index's other entries name is another tool's, not unreferenced: prune keeps
    // it, and stops while an entry's manifest cannot be read.
    let others = crate::prune::other_entries(repo)?;
    report.other_entries = others.entries;
    for p in others.unreadable {
        report.problems.push(format!(
            "{p}: `asp prune` deletes nothing until it can be read or the entry is taken out \
             of index.json"
        ));
    }
    let dir = repo.blobs_dir();
    let mut unnamed_manifests: Vec<String> = Vec::new();
    for entry in std::fs::read_dir(&dir).map_err(RepoError::io(&dir))? {
        let entry = entry.map_err(RepoError::io(&dir))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if name.starts_with('.') {
            if crate::prune::is_partial_blob(name) {
                report.leftovers += 1;
            }
            continue;
        }
        match Digest::from_hex(name) {
            Ok(d) if named.contains(&d) => {}
            Ok(d) if others.named.contains(&d) => report.other_blobs += 1,
            Ok(d) => {
                // Not named by a snapshot that can be read: a leftover, or a document of one
                // that cannot be (a damaged state manifest's part makes every snapshot that
                // shares it unreadable). Read, with the data, so such damage is named and
                // moved aside like any other (then it is a damaged blob, not an unreferenced
                // one prune would delete).
                if opts.read_data && !blob_matches_its_name(repo, &entry.path(), &d)? {
                    if !unreadable.contains(&d) {
                        report.problems.push(format!(
                            "blob {d} (which no snapshot that can be read names) holds other \
                             bytes than its name says: it is damaged"
                        ));
                    }
                    if opts.repair {
                        report.moved_aside.push(move_aside(repo, &d)?);
                    } else {
                        report.damaged_layers += 1;
                    }
                    continue;
                }
                report.unreferenced += 1;
                if !manifest_missing.is_empty()
                    && matches!(
                        crate::repository::snapshot_manifest_at(&entry.path(), d),
                        Ok(crate::repository::ManifestAt::Snapshot(..))
                    )
                {
                    unnamed_manifests.push(d.short());
                }
            }
            Err(_) => report
                .problems
                .push(format!("{} is not a blob name", entry.path().display())),
        }
    }
    // Staging folders and temporary files a killed backup left at the top (as prune finds
    // them).
    for entry in std::fs::read_dir(repo.root()).map_err(RepoError::io(repo.root()))? {
        let name = entry.map_err(RepoError::io(repo.root()))?.file_name();
        let name = name.to_string_lossy();
        if crate::prune::is_staging_leftover(&name) {
            report.leftovers += 1;
        }
    }
    unnamed_manifests.sort();
    if !unnamed_manifests.is_empty() {
        for &i in &manifest_missing {
            // Not "forget it": that, then a prune, would delete the manifest it should name.
            let p = &mut report.problems[i];
            if let Some(at) = p.find(" (`asp forget --snapshot") {
                p.truncate(at);
            }
            p.push_str(
                " (index.json may be what is damaged: see the last problem before letting it go)",
            );
        }
        report.problems.push(format!(
            "index.json names {} whose manifest blobs/ does not have, and blobs/ holds {} it \
             does not name ({}): index.json itself may be damaged. `asp check --rebuild-index` \
             lists every snapshot manifest in blobs/ again; run it before `asp forget` or `asp \
             prune`, which would delete them",
            count(manifest_missing.len(), "a snapshot", "snapshots"),
            count(
                unnamed_manifests.len(),
                "a snapshot manifest",
                "snapshot manifests"
            ),
            unnamed_manifests.join(", "),
        ));
    }
    Ok(report)
}

/// `n` things, as `a thing` or `N things`.
fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        one.to_owned()
    } else {
        format!("{n} {many}")
    }
}

/// The bodies every snapshot names, each once, for `--read-data`: what a body is checked
/// against (its size, from the state; a dictionary only a layer table names has none, and its
/// layer bounds it) and the layer it is stored in (the first snapshot's entry). Only these are
/// kept, not the snapshots, so a check of many snapshots holds one entry per distinct body.
#[derive(Debug, Default)]
struct Bodies {
    bodies: BTreeMap<Digest, (Option<u64>, LayerRef)>,
    /// The layer of each dictionary, as the table of the snapshot that named it first gives
    /// it (`None`: that table has no entry for it).
    dictionaries: BTreeMap<Digest, Option<LayerRef>>,
    /// Every other layer a snapshot stores a body in, by (body, layer). A body has another
    /// layer when snapshots compressed it against different dictionaries: a transcript read
    /// again after its project's dictionary changed (layout 4), or written by another
    /// version. Each is decoded too, or its bytes would be checked only against their name.
    others: BTreeMap<(Digest, Digest), (Option<u64>, LayerRef)>,
}

impl Bodies {
    fn add(&mut self, snap: &Snapshot) {
        // The configuration files too: `--read-data` decodes every body (spec/repository.md
        // §4); they were hashed as layers, never decoded against their digest (review
        // helper-133, 8). Stored alone: no dictionary to walk.
        for f in snap.sources.config.iter().flat_map(|c| &c.files) {
            if let Some(r) = snap.sources.config_layers.get(&f.content.digest) {
                self.note(f.content.digest, (Some(f.content.size), *r));
            }
        }
        for d in snap.state.descriptors() {
            // A body without an entry was reported with the snapshot's documents.
            let Some(r) = snap.table.get(&d.digest) else {
                continue;
            };
            self.note(d.digest, (Some(d.size), *r));
            // Its dictionary, and that one's own (layout 4).
            let mut next = r.dictionary;
            for _ in 0..MAX_CHAIN {
                let Some(dict) = next else { break };
                let entry = snap.table.get(&dict).copied();
                match self.dictionaries.get(&dict) {
                    None => {
                        self.dictionaries.insert(dict, entry);
                    }
                    Some(Some(first)) => {
                        if let Some(e) = entry.filter(|e| e.layer != first.layer) {
                            // A body the state also names (a transcript, its stream's
                            // dictionary) keeps the size the state gives it.
                            self.others
                                .entry((dict, e.layer))
                                .or_insert((e.body_size, e));
                        }
                    }
                    Some(None) => {}
                }
                next = entry.and_then(|e| e.dictionary).filter(|x| *x != dict);
            }
        }
    }

    /// Body `d` in layer `r`: the first layer seen is the body's, another goes to `others`.
    fn note(&mut self, d: Digest, (size, r): (Option<u64>, LayerRef)) {
        match self.bodies.get(&d) {
            None => {
                self.bodies.insert(d, (size, r));
            }
            Some((_, first)) if first.layer != r.layer => {
                // The state's size wins over a dictionary walk's (which has none for a body
                // the state names).
                let e = self.others.entry((d, r.layer)).or_insert((size, r));
                if size.is_some() {
                    e.0 = size;
                }
            }
            Some(_) => {}
        }
    }

    /// Decodes each of `others` against the bytes of its dictionary (decoded from the body's
    /// own layer, against its own dictionary in turn): one at a time, as they are few.
    fn read_others(
        &self,
        repo: &Repository,
        progress: &dyn Progress,
        read: &AtomicUsize,
        problems: &mut Vec<(Digest, String)>,
    ) {
        // (Problems here are about the other layer, by its digest.)
        let kept = Recent::new(2);
        // The bytes of body `x`, decoded whole from its first layer, against its chain.
        let bodies = &self.bodies;
        let whole = |x: &Digest| {
            kept.chained(
                x,
                &|x| {
                    bodies
                        .get(x)
                        .map(|b| b.1.dictionary)
                        .ok_or_else(|| format!("no layer table names a layer of {x}"))
                },
                &|x, base| {
                    Ok(decode(repo, x, &bodies[x], base.map(Base::Borrowed), true)?
                        .unwrap_or_default())
                },
                &|m| m,
            )
        };
        for ((d, _), b) in &self.others {
            let dict = match b.1.dictionary {
                Some(x) => match whole(&x) {
                    Ok(v) => Some(v),
                    Err(e) => {
                        problems.push((
                            b.1.layer,
                            format!(
                                "body {d} (layer {}): its dictionary {x} cannot be read: {e}",
                                b.1.layer
                            ),
                        ));
                        progress.advance(1);
                        continue;
                    }
                },
                None => None,
            };
            match decode(repo, d, b, dict.map(Base::Shared), false) {
                Ok(_) => {
                    read.fetch_add(usize::from(b.0.is_some()), Ordering::Relaxed);
                }
                Err(e) => problems.push((b.1.layer, format!("{e} (layer {})", b.1.layer))),
            }
            progress.advance(1);
        }
    }

    /// Decodes every body and checks it against its digest, on every core: a dictionary once,
    /// kept in memory while the bodies compressed against it are decoded (a transcript is not
    /// decoded again for its update stream), every other body as it streams. The number of
    /// bodies read whole, and the problems, each with the layer it is about when known.
    fn read(
        mut self,
        repo: &Repository,
        progress: &dyn Progress,
    ) -> (usize, Vec<(Option<Digest>, String)>) {
        let mut problems: Vec<(Digest, String)> = Vec::new();
        for (d, r) in std::mem::take(&mut self.dictionaries) {
            match r {
                Some(r) => {
                    self.bodies.entry(d).or_insert((r.body_size, r));
                }
                None => problems.push((
                    d,
                    format!("dictionary body {d}: no layer table names its layer"),
                )),
            }
        }
        // Each body with the ones compressed against it. A body with a dictionary of its own
        // (layout 4: a transcript, against its project's) is its own group's base when
        // something is compressed against it, decoded against its dictionary, and otherwise a
        // member of its dictionary's group.
        let before_grouping = problems.len();
        let mut groups: BTreeMap<Digest, Vec<Digest>> = BTreeMap::new();
        let is_base: BTreeSet<Digest> = self
            .bodies
            .values()
            .filter_map(|(_, r)| r.dictionary)
            .collect();
        for (d, (_, r)) in &self.bodies {
            let dict = match r.dictionary {
                None => {
                    groups.entry(*d).or_default().push(*d);
                    continue;
                }
                Some(dict) => dict,
            };
            let deeper = self.bodies.get(&dict).and_then(|(_, b)| b.dictionary);
            match (self.bodies.get(&dict), deeper) {
                (None, _) => problems.push((
                    *d,
                    format!("body {d}: its dictionary {dict} cannot be read"),
                )),
                (Some(_), Some(x))
                    if self.bodies.get(&x).is_none_or(|(_, b)| b.dictionary.is_some()) =>
                {
                    problems.push((
                        *d,
                        format!("body {d}: its dictionaries go more than {MAX_CHAIN} deep ({dict}, then {x})"),
                    ))
                }
                (Some(_), _) if is_base.contains(d) => groups.entry(*d).or_default().push(*d),
                (Some(_), _) => groups.entry(dict).or_default().push(*d),
            }
        }
        // The groups of one dictionary's bases one after another, so the few kept decoded
        // serve them all.
        let mut groups: Vec<(Digest, Vec<Digest>)> = groups.into_iter().collect();
        groups.sort_by_key(|(b, _)| (self.bodies.get(b).and_then(|(_, r)| r.dictionary), *b));
        // Bases' own dictionaries, decoded (each is checked in its own group): the last few.
        let kept = Recent::new(4);
        let base_dictionary = |x: &Digest| -> Result<Arc<Vec<u8>>, String> {
            kept.get_or_make(x, || {
                Ok(decode(repo, x, &self.bodies[x], None, true)?.unwrap_or_default())
            })
        };
        progress.begin(
            "reading bodies",
            Some((self.bodies.len() + self.others.len()) as u64),
        );
        // The bodies refused above are done with.
        progress.advance((problems.len() - before_grouping) as u64);
        let next = AtomicUsize::new(0);
        let read = AtomicUsize::new(0);
        let found = Mutex::new(problems);
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(groups.len().max(1));
        let bodies = &self.bodies;
        // Memory follows the largest group, not the number of cores: a thread holds its
        // group's base while the members decode against it, and each decoder a window up to
        // its body's size (a transcript over 2 MiB is one frame with a window that large), so
        // at most a budget's worth of groups is read at once, a larger one alone.
        let reading = ReadingBudget::new(READING_BUDGET);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    while let Some((base, members)) =
                        groups.get(next.fetch_add(1, Ordering::Relaxed))
                    {
                        let mut local = Vec::new();
                        // The base's bytes are kept only when something decodes against them.
                        let keep = members.iter().any(|m| m != base);
                        let weight = group_weight(bodies, base, members, keep);
                        let _admitted = (weight > 0).then(|| reading.admit(weight));
                        // A base with a dictionary of its own decodes against it; one whose
                        // dictionary cannot be read is said once, and not decoded.
                        let own = match bodies[base].1.dictionary {
                            // Said about the dictionary, whose layer is what is damaged.
                            Some(x) => base_dictionary(&x).map(Some).map_err(|e| {
                                local.push((
                                    x,
                                    format!("body {base}: its dictionary cannot be read: {e}"),
                                ));
                            }),
                            None => Ok(None),
                        };
                        let decoded = own.ok().and_then(|own| {
                            decode(repo, base, &bodies[base], own.map(Base::Shared), keep)
                                .map_err(|e| local.push((*base, e)))
                                .ok()
                        });
                        let dict = decoded.and_then(|kept| {
                            read.fetch_add(
                                usize::from(bodies[base].0.is_some()),
                                Ordering::Relaxed,
                            );
                            // Shared with the windowed layers that read their windows from it.
                            kept.map(Arc::new)
                        });
                        progress.advance(1);
                        for m in members.iter().filter(|m| *m != base) {
                            match &dict {
                                Some(dict) => {
                                    let shared = Some(Base::Shared(Arc::clone(dict)));
                                    match decode(repo, m, &bodies[m], shared, false) {
                                        Ok(_) => {
                                            read.fetch_add(1, Ordering::Relaxed);
                                        }
                                        Err(e) => local.push((*m, e)),
                                    }
                                }
                                None => local.push((
                                    *base,
                                    format!("body {m}: its dictionary {base} cannot be read"),
                                )),
                            }
                            progress.advance(1);
                        }
                        found.lock().expect("problems").extend(local);
                    }
                });
            }
        });
        let mut problems = found.into_inner().expect("problems");
        problems.sort();
        let mut others = Vec::new();
        self.read_others(repo, progress, &read, &mut others);
        progress.finish();
        // Each problem with the layer it comes from (the body's, or the dictionary's it could
        // not be decoded without), so the check can say who needs it and fold it into what
        // it said of that layer already.
        let mut out: Vec<(Option<Digest>, String)> = problems
            .into_iter()
            .map(|(d, m)| (self.bodies.get(&d).map(|b| b.1.layer), m))
            .collect();
        out.extend(others.into_iter().map(|(l, m)| (Some(l), m)));
        (read.into_inner(), out)
    }
}

/// What decoding a group holds at once, for the [`ReadingBudget`]: the base kept whole and the
/// decoder's window as large (a dictionary no state sizes counts as the largest a layer may
/// be), then the largest member's window beside it; a body decoded as it streams, only a
/// window over level 3's 2 MiB (its own size, at most 2^27). Zero when nothing is held
/// beyond a few buffers.
fn group_weight(
    bodies: &BTreeMap<Digest, (Option<u64>, LayerRef)>,
    base: &Digest,
    members: &[Digest],
    keep: bool,
) -> u64 {
    const STREAMED: u64 = 2 << 20;
    let size = |d: &Digest| {
        bodies[d]
            .0
            .unwrap_or(crate::blobs::DICTIONARY_LIMIT)
            .min(crate::blobs::DICTIONARY_LIMIT)
    };
    if keep {
        let widest = members
            .iter()
            .filter(|m| *m != base)
            .map(size)
            .max()
            .unwrap_or(0);
        size(base).saturating_mul(2).saturating_add(widest)
    } else if size(base) > STREAMED {
        size(base)
    } else {
        0
    }
}

/// Decodes body `d` from its layer `r` (against `dict`) and checks it against its digest and
/// its size, or, for a dictionary no state names, as [`crate::blobs::read_dictionary`] does;
/// its bytes when `keep`.
fn decode(
    repo: &Repository,
    d: &Digest,
    (size, r): &(Option<u64>, LayerRef),
    dict: Option<Base<'_>>,
    keep: bool,
) -> Result<Option<Vec<u8>>, String> {
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("{what} {d}: {e}");
    let Some(size) = *size else {
        return crate::blobs::read_dictionary(repo, d, r, dict.as_ref().map(Base::bytes))
            .map(Some)
            .map_err(|e| fail("dictionary body", &e));
    };
    let decoded = crate::blobs::decoded(repo, r, dict, size).map_err(|e| fail("body", &e))?;
    let expected = Descriptor { digest: *d, size };
    let mut reader = VerifyingReader::new(decoded.take(size.saturating_add(1)), expected);
    let mut kept = keep.then(Vec::new);
    match &mut kept {
        Some(buf) => reader.read_to_end(buf).map(drop),
        None => std::io::copy(&mut reader, &mut std::io::sink()).map(drop),
    }
    .map_err(|e| fail("body", &e))?;
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::bundle::oci::Encoding;

    const MIB: u64 = 1 << 20;

    fn body(
        n: u8,
        size: Option<u64>,
        dictionary: Option<Digest>,
    ) -> (Digest, (Option<u64>, LayerRef)) {
        let d = Digest::of(&[n]);
        let r = LayerRef {
            layer: Digest::of(&[n, n]),
            size: 1000,
            encoding: Encoding::Zstd,
            dictionary,
            body_size: None,
        };
        (d, (size, r))
    }

    /// A body stored in two layers (compressed against two dictionaries by two snapshots)
    /// has both decoded: a second layer that holds other bytes is found, though its own
    /// bytes match its name.
    #[test]
    fn every_layer_of_a_body_is_decoded() {
        use asp_format::bundle::layers::compress;
        let dir = tempfile::tempdir().unwrap();
        let repo = Repository::open_or_init(&dir.path().join("repo")).unwrap();
        let transcript: Vec<u8> = (0..20_000u32).flat_map(|i| i.to_le_bytes()).collect();
        let t = Descriptor::of(&transcript);
        let mut other = transcript.clone();
        other[1234] ^= 1;
        let dictionary = |n: u8| -> (Digest, (Option<u64>, LayerRef)) {
            let bytes: Vec<u8> = transcript[..4096].iter().map(|b| b ^ n).collect();
            let layer = repo.put_bytes(&compress(&bytes, None, 3).unwrap()).unwrap();
            let r = LayerRef {
                layer: layer.digest,
                size: layer.size,
                encoding: Encoding::Zstd,
                dictionary: None,
                body_size: Some(bytes.len() as u64),
            };
            (Digest::of(&bytes), (None, r))
        };
        let (d1, d1b) = dictionary(1);
        let (d2, d2b) = dictionary(2);
        let against = |body: &[u8], (d, (_, r)): (Digest, (Option<u64>, LayerRef))| {
            let dict = decompress_dictionary(&repo, &r);
            let layer = repo
                .put_bytes(&compress(body, Some(&dict), 3).unwrap())
                .unwrap();
            let r = LayerRef {
                layer: layer.digest,
                size: layer.size,
                encoding: Encoding::Zstd,
                dictionary: Some(d),
                body_size: None,
            };
            (Some(t.size), r)
        };
        let read = |second: &[u8]| {
            let mut b = Bodies::default();
            b.note(t.digest, against(&transcript, (d1, d1b)));
            b.note(t.digest, against(second, (d2, d2b)));
            b.dictionaries = [(d1, Some(d1b.1)), (d2, Some(d2b.1))].into();
            assert_eq!(b.others.len(), 1);
            b.read(&repo, &asp_format::progress::Quiet)
        };
        let (n, problems) = read(&transcript);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            n, 4,
            "the two dictionaries, and the transcript from each layer"
        );
        let (_, problems) = read(&other);
        assert_eq!(problems.len(), 1, "{problems:?}");
        let (layer, message) = &problems[0];
        assert!(message.contains(&t.digest.to_string()), "{message}");
        // About the second layer, so the check names who needs that one.
        let second = against(&other, (d2, d2b)).1.layer;
        assert_eq!(*layer, Some(second));
    }

    fn decompress_dictionary(repo: &Repository, r: &LayerRef) -> Vec<u8> {
        let raw = repo.read_blob(
            &Descriptor {
                digest: r.layer,
                size: r.size,
            },
            1 << 20,
        );
        asp_format::bundle::layers::decompress(&raw.unwrap(), None, r.body_size.unwrap()).unwrap()
    }

    /// A transcript kept for its streams weighs itself twice (its bytes and its decoder's
    /// window) and its widest stream's window; a body decoded as it streams, only its window
    /// when over 2 MiB; a dictionary no state sizes, the largest a layer may be.
    #[test]
    fn a_group_weighs_what_its_decoding_holds_at_once() {
        let (t, tb) = body(1, Some(10 * MIB), None);
        let (s, sb) = body(2, Some(12 * MIB), Some(t));
        let (small, smallb) = body(3, Some(MIB), None);
        let (big, bigb) = body(4, Some(3 * MIB), None);
        let (unsized_, unsizedb) = body(5, None, None);
        let bodies: BTreeMap<_, _> = [
            (t, tb),
            (s, sb),
            (small, smallb),
            (big, bigb),
            (unsized_, unsizedb),
        ]
        .into();
        assert_eq!(group_weight(&bodies, &t, &[t, s], true), 32 * MIB);
        assert_eq!(group_weight(&bodies, &small, &[small], false), 0);
        assert_eq!(group_weight(&bodies, &big, &[big], false), 3 * MIB);
        assert_eq!(
            group_weight(&bodies, &unsized_, &[unsized_, s], true),
            2 * crate::blobs::DICTIONARY_LIMIT + 12 * MIB
        );
    }
}
