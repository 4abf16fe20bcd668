//! `asp forget`: which snapshots a keep policy drops, and dropping sessions gone from the
//! source from the newest snapshots.
//!
//! Snapshots are grouped by harness and home, as restic groups by host and paths; a policy
//! applies within each group, and the newest snapshot of a group is always kept: it is the
//! next backup's parent and holds every session ever backed up, so no keep policy can lose a
//! session. Only [`drop_sessions`] (`--gone-before DATE`, `--session ID`) lets one go, or
//! naming a series' newest snapshot itself ([`plan_named`], `--snapshot ID`), which says what
//! goes with it.
//! Forgetting only edits `index.json`; `asp prune` then deletes the blobs nothing names.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::Read as _;

use asp_convert::kit::time;
use asp_format::blob::{BlobSink as _, BlobSource as _};
use asp_format::bundle::Documents;
use asp_format::bundle::layers::{LayerOptions, LayerStore, Layers};
use asp_format::digest::{Descriptor, Digest};
use asp_format::state::{Session, State};
use asp_registry::manifest::{IMAGE_MANIFEST, ImageManifest, OciDescriptor};

use crate::backup::content_options;
use crate::blobs::SnapshotBlobs;
use crate::error::RepoError;
use crate::repository::Repository;
use crate::snapshot::{Snapshot, SnapshotInfo};

/// A keep policy: a snapshot is kept when any rule keeps it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeepPolicy {
    /// The newest N.
    pub last: Option<usize>,
    /// The newest of each of the newest N days (UTC) that have snapshots.
    pub daily: Option<usize>,
    /// The newest of each of the newest N weeks (Monday to Sunday, UTC) that have snapshots.
    pub weekly: Option<usize>,
}

impl KeepPolicy {
    pub fn is_empty(&self) -> bool {
        self.last.is_none() && self.daily.is_none() && self.weekly.is_none()
    }
}

/// What a policy does to the snapshots of a repository.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ForgetPlan {
    pub keep: Vec<SnapshotInfo>,
    pub remove: Vec<SnapshotInfo>,
}

/// `snapshots` by series (harness and home), each in the order given.
fn series_of(snapshots: &[SnapshotInfo]) -> BTreeMap<(&str, &str), Vec<&SnapshotInfo>> {
    let mut series: BTreeMap<(&str, &str), Vec<&SnapshotInfo>> = BTreeMap::new();
    for s in snapshots {
        series
            .entry((s.harness.as_str(), s.home.as_str()))
            .or_default()
            .push(s);
    }
    series
}

/// Applies `policy` to `snapshots` (oldest first, as [`Repository::snapshots`] gives them).
pub fn plan(snapshots: &[SnapshotInfo], policy: &KeepPolicy) -> ForgetPlan {
    let groups = series_of(snapshots);
    let mut keep: BTreeSet<Digest> = BTreeSet::new();
    for group in groups.values() {
        let newest_first: Vec<&SnapshotInfo> = group.iter().rev().copied().collect();
        if let Some(first) = newest_first.first() {
            keep.insert(first.digest);
        }
        if let Some(n) = policy.last {
            keep.extend(newest_first.iter().take(n).map(|s| s.digest));
        }
        let days = |s: &SnapshotInfo| s.created_ns().div_euclid(86_400_000_000_000);
        if let Some(n) = policy.daily {
            keep.extend(newest_per(&newest_first, days, n));
        }
        if let Some(n) = policy.weekly {
            // 1970-01-01 was a Thursday: day + 3 counts weeks from Monday.
            keep.extend(newest_per(
                &newest_first,
                |s| (days(s) + 3).div_euclid(7),
                n,
            ));
        }
    }
    let (keep, remove) = snapshots
        .iter()
        .cloned()
        .partition(|s| keep.contains(&s.digest));
    ForgetPlan { keep, remove }
}

/// A snapshot a keep policy would forget that [`plan_keeping_sessions`] keeps, and why.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HeldBack {
    pub snapshot: SnapshotInfo,
    /// The sessions (by id) no other snapshot the plan keeps of its series holds.
    pub sessions: Vec<String>,
}

/// [`plan`], and then every snapshot it would forget that holds a session (by id, gone from
/// the source or not) that no snapshot it keeps of the same series holds is kept too, newest
/// first. The newest snapshot of a series holds every session of it when each backup was made
/// from the one before; this keeps the promise that no keep policy loses a session when one
/// was not: a backup that could not read its parent's source records (damaged) made its
/// snapshot from an older one, and a series of `--from-bundle` backups records no session as
/// gone (found by review helper-123, reproduced with `asp forget --keep-last 1` and `asp
/// prune`). Reads the state of every snapshot of a series the plan forgets one of (not their
/// bodies); a snapshot whose state cannot be read is kept, as one that may hold any session.
pub fn plan_keeping_sessions(
    repo: &Repository,
    snapshots: &[SnapshotInfo],
    policy: &KeepPolicy,
) -> Result<(ForgetPlan, Vec<HeldBack>), RepoError> {
    let planned = plan(snapshots, policy);
    if planned.remove.is_empty() {
        return Ok((planned, Vec::new()));
    }
    let ids = |info: &SnapshotInfo| -> Result<Option<BTreeSet<String>>, RepoError> {
        match Snapshot::load_for_reading(repo, info) {
            Ok(snap) => Ok(Some(
                snap.state
                    .sessions
                    .iter()
                    .flatten()
                    .map(|s| s.id.to_string())
                    .collect(),
            )),
            Err(e) if asp_format::Classify::class(&e) == asp_format::ErrorClass::Integrity => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    };
    let removed: HashSet<Digest> = planned.remove.iter().map(|s| s.digest).collect();
    let mut held = Vec::new();
    for group in series_of(snapshots).values() {
        if !group.iter().any(|s| removed.contains(&s.digest)) {
            continue;
        }
        let mut kept: BTreeSet<String> = BTreeSet::new();
        for s in group.iter().filter(|s| !removed.contains(&s.digest)) {
            kept.extend(ids(s)?.unwrap_or_default());
        }
        // Sessions a snapshot newer than the one at hand was made without on purpose (`asp
        // forget --session`): the owner asked for them to go, so no older snapshot is held
        // back for them.
        let mut dropped_since: BTreeSet<&str> = BTreeSet::new();
        for s in group.iter().rev() {
            if removed.contains(&s.digest) {
                match ids(s)? {
                    None => held.push(HeldBack {
                        snapshot: (*s).clone(),
                        sessions: Vec::new(),
                    }),
                    Some(own) => {
                        let alone: Vec<String> = own
                            .iter()
                            .filter(|id| {
                                !kept.contains(*id) && !dropped_since.contains(id.as_str())
                            })
                            .cloned()
                            .collect();
                        if !alone.is_empty() {
                            kept.extend(own);
                            held.push(HeldBack {
                                snapshot: (*s).clone(),
                                sessions: alone,
                            });
                        }
                    }
                }
            }
            dropped_since.extend(s.dropped.iter().map(String::as_str));
        }
    }
    let back: HashSet<Digest> = held.iter().map(|h| h.snapshot.digest).collect();
    let (keep, remove) = snapshots
        .iter()
        .cloned()
        .partition(|s| !removed.contains(&s.digest) || back.contains(&s.digest));
    Ok((ForgetPlan { keep, remove }, held))
}

/// The newest snapshot of each of the newest `n` buckets.
fn newest_per(
    newest_first: &[&SnapshotInfo],
    bucket: impl Fn(&SnapshotInfo) -> i128,
    n: usize,
) -> Vec<Digest> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for s in newest_first {
        if seen.len() == n && !seen.contains(&bucket(s)) {
            break;
        }
        if seen.insert(bucket(s)) {
            out.push(s.digest);
        }
    }
    out
}

/// Removes snapshots from the index.
pub fn forget(repo: &Repository, remove: &[SnapshotInfo]) -> Result<(), RepoError> {
    let _lock = repo.lock_shared()?;
    repo.remove_snapshots(&remove.iter().map(|s| s.digest).collect::<Vec<_>>())
}

/// What forgetting snapshots named by id does ([`plan_named`]).
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NamedPlan {
    /// The snapshots named, oldest first.
    pub remove: Vec<SnapshotInfo>,
    /// Each series (harness and home) whose newest snapshot is among them.
    pub newest_forgotten: Vec<NewestForgotten>,
    /// Those whose state cannot be read (`asp check` names them): which sessions only they
    /// hold cannot be told, and a session gone from the source that only one of them holds
    /// goes with it at the next prune, though its own blobs may be sound.
    pub unreadable: Vec<SnapshotInfo>,
}

/// A series losing its newest snapshot: the one snapshot that held every session it ever
/// backed up, so what only it held goes with it.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NewestForgotten {
    pub harness: String,
    pub home: String,
    /// The snapshot that becomes the series' newest, and the next backup's parent; `None` when
    /// every snapshot of the series is forgotten.
    pub newest: Option<SnapshotInfo>,
    /// Sessions the forgotten newest held and the new newest does not (with no new newest, all
    /// of them); `None` when a snapshot's state cannot be read to tell.
    pub sessions_only_it_held: Option<Vec<String>>,
}

/// Which snapshots `ids` name (each a digest or a unique hex prefix,
/// [`Repository::find`]), and what goes with each series' newest among them. A snapshot is
/// named by its entry in the index: one whose manifest cannot be read can be forgotten, which
/// is what `asp check` advises for it.
pub fn plan_named(repo: &Repository, ids: &[String]) -> Result<NamedPlan, RepoError> {
    let mut named = BTreeSet::new();
    for id in ids {
        named.insert(repo.find(id)?.digest);
    }
    let all = repo.snapshots()?;
    let remove: Vec<SnapshotInfo> = all
        .iter()
        .filter(|s| named.contains(&s.digest))
        .cloned()
        .collect();
    let series = series_of(&all);
    // Each snapshot named is read once: whether it can be, and the sessions it holds.
    let ids_of = |snap: &Snapshot| -> BTreeSet<String> {
        snap.state
            .sessions
            .iter()
            .flatten()
            .map(|s| s.id.as_str().to_owned())
            .collect()
    };
    let mut read: BTreeMap<_, Option<Snapshot>> = BTreeMap::new();
    for s in &remove {
        read.insert(s.digest, readable(Snapshot::load_for_reading(repo, s))?);
    }
    let sessions_of = |info: &SnapshotInfo| -> Result<Option<BTreeSet<String>>, RepoError> {
        Ok(match read.get(&info.digest) {
            Some(snap) => snap.as_ref().map(ids_of),
            None => readable(Snapshot::load_for_reading(repo, info))?.map(|s| ids_of(&s)),
        })
    };
    let unreadable = remove
        .iter()
        .filter(|s| {
            read[&s.digest]
                .as_ref()
                .is_none_or(|snap| snap.sources_damage.is_some())
        })
        .cloned()
        .collect();
    let mut newest_forgotten = Vec::new();
    for ((harness, home), oldest_first) in series {
        let Some(newest) = oldest_first.last() else {
            continue;
        };
        if !named.contains(&newest.digest) {
            continue;
        }
        let next = oldest_first
            .iter()
            .rev()
            .find(|s| !named.contains(&s.digest))
            .map(|s| (*s).clone());
        // The next snapshot is read only when the newest could be: without what the newest
        // held there is nothing to compare.
        let sessions_only_it_held = match sessions_of(newest)? {
            None => None,
            Some(held) => match &next {
                Some(n) => sessions_of(n)?,
                None => Some(BTreeSet::new()),
            }
            .map(|kept| held.difference(&kept).cloned().collect()),
        };
        newest_forgotten.push(NewestForgotten {
            harness: harness.to_owned(),
            home: home.to_owned(),
            newest: next,
            sessions_only_it_held,
        });
    }
    Ok(NamedPlan {
        remove,
        newest_forgotten,
        unreadable,
    })
}

/// A snapshot read, `None` when it cannot be because of damage (a blob missing or not what
/// its name says): that is what forgetting it can mend. Any other failure stops the plan: an
/// I/O error says nothing of the snapshot, and an index that differs from the snapshot's own
/// manifest is the index's damage (`asp check --rebuild-index` mends it, as its error says),
/// not the snapshot's.
fn readable(read: Result<Snapshot, RepoError>) -> Result<Option<Snapshot>, RepoError> {
    match read {
        Ok(snap) => Ok(Some(snap)),
        Err(RepoError::Integrity(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Which sessions to drop from the newest snapshots.
#[derive(Debug, Clone, Default)]
pub struct DropSessions {
    /// Sessions gone from the source before this time (ns since the epoch).
    pub gone_before: Option<i128>,
    /// These sessions, gone or not (a live one comes back with the next backup).
    pub sessions: Vec<String>,
    pub dry_run: bool,
}

/// What dropping sessions did: per new snapshot, the sessions it left out.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Dropped {
    pub snapshots: Vec<SnapshotInfo>,
    pub sessions: Vec<String>,
    /// Those the source still had when its newest snapshot was made (not marked gone): the
    /// next backup of that home reads them again while the harness keeps them (found by a new
    /// user's trial: a session dropped for a secret in it came back with no word).
    #[serde(rename = "stillInSource", skip_serializing_if = "Vec::is_empty")]
    pub still_in_source: Vec<String>,
    /// The same, by series: one id can be held by several homes' or harnesses' snapshots.
    pub from: Vec<DroppedFrom>,
    /// Sessions kept whose transcripts were compressed again, because their project's
    /// dictionary was made of a dropped session's transcript ([`compressed_again`]).
    #[serde(rename = "compressedAgain", skip_serializing_if = "Vec::is_empty")]
    pub compressed_again: Vec<String>,
}

/// The sessions dropped from one series' newest snapshot.
#[derive(Debug, Clone, serde::Serialize)]
pub struct DroppedFrom {
    pub harness: String,
    pub home: String,
    /// The newest snapshot they were dropped from.
    pub snapshot: Digest,
    pub sessions: Vec<String>,
    /// The snapshot made without them (none in a dry run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub new: Option<Digest>,
}

/// Writes, for each harness and home whose newest snapshot holds sessions to drop, a new
/// snapshot without them (its parent the newest). Older snapshots keep them until a policy
/// forgets those snapshots and prune runs.
pub fn drop_sessions(repo: &Repository, what: &DropSessions) -> Result<Dropped, RepoError> {
    let _lock = repo.lock_shared()?;
    // Every series this may add a snapshot to, locked before its newest is read
    // ([`Repository::lock_series`]), in one order (the index's), so two such commands never
    // wait for each other in a circle; a backup takes only its own.
    let _series = repo
        .newest_of_each_series()?
        .iter()
        .map(|s| repo.lock_series(&s.harness, &s.home))
        .collect::<Result<Vec<_>, _>>()?;
    let newest = repo.newest_of_each_series()?;
    // Every snapshot is read before any is written: a session named that no newest
    // snapshot holds (a typo, a subagent's id mistyped) is an error that changes nothing.
    let snaps = newest
        .iter()
        .map(|info| Snapshot::load(repo, info).map(|snap| (info, snap)))
        .collect::<Result<Vec<_>, _>>()?;
    let unknown: Vec<&str> = what
        .sessions
        .iter()
        .filter(|id| {
            !snaps.iter().any(|(_, snap)| {
                snap.state
                    .sessions
                    .iter()
                    .flatten()
                    .any(|s| s.id.as_str() == id.as_str())
            })
        })
        .map(String::as_str)
        .collect();
    if !unknown.is_empty() {
        let known = snaps
            .iter()
            .flat_map(|(_, snap)| snap.state.sessions.iter().flatten())
            .map(|s| s.id.as_str());
        return Err(RepoError::Usage(format!(
            "no newest snapshot holds session {} (`asp sessions` lists them){}",
            unknown.join(", "),
            asp_format::state::whole_ids_hint(&unknown, known)
        )));
    }
    let mut out = Dropped::default();
    for (info, snap) in snaps {
        // A session named goes with its subagent sessions, at any depth, as `--session`
        // restores them with it: left behind, they would be listed as conversations of their
        // own (new-user trial helper-124, 10).
        let named = asp_format::state::kept_sessions(
            snap.state.sessions.as_deref().unwrap_or_default(),
            &what.sessions,
        )
        .0;
        let drop: BTreeSet<String> = snap
            .state
            .sessions
            .iter()
            .flatten()
            .map(|s| s.id.to_string())
            .filter(|id| {
                named.contains(id)
                    || what.gone_before.is_some_and(|t| {
                        snap.sources
                            .gone
                            .get(id)
                            .and_then(|since| time::parse(since))
                            .is_some_and(|since| since < t)
                    })
            })
            .collect();
        if drop.is_empty() {
            continue;
        }
        out.sessions.extend(drop.iter().cloned());
        out.from.push(DroppedFrom {
            harness: info.harness.clone(),
            home: info.home.clone(),
            snapshot: info.digest,
            sessions: drop.iter().cloned().collect(),
            new: None,
        });
        // (A series made from a bundle or a pull has no source a backup reads again.)
        if !snap.sources.entries.is_empty() {
            out.still_in_source.extend(
                drop.iter()
                    .filter(|id| !snap.sources.gone.contains_key(id.as_str()))
                    .cloned(),
            );
        }
        let mut state = snap.state.clone();
        if let Some(s) = &mut state.sessions {
            s.retain(|s| !drop.contains(s.id.as_str()));
        }
        let dropped: Vec<&Session> = snap
            .state
            .sessions
            .iter()
            .flatten()
            .filter(|s| drop.contains(s.id.as_str()))
            .collect();
        let (bodies, sessions) = made_of_dropped(repo, &snap, &state, &dropped)?;
        if what.dry_run {
            // (Which would be compressed again is known without compressing them.)
            out.compressed_again.extend(sessions);
            continue;
        }
        let again = match bodies.is_empty() {
            true => None,
            false => Some((compressed_again(repo, &snap, &state, &bodies)?, sessions)),
        };
        let layer_of = |d: &Digest| {
            again
                .as_ref()
                .and_then(|(layers, _)| layers.blobs.get(d).map(|s| s.layer))
                .or_else(|| snap.table.get(d).copied())
        };
        let docs = Documents::plan(&state, &layer_of, &content_options())?;
        if let Some((layers, sessions)) = &again {
            let mut written = HashSet::new();
            // By the stored layer alone, as a backup matches them: the plan leaves `bodySize`
            // to a dictionary no state document names, so a new dictionary that is also a kept
            // body (a transcript of exactly 256 KiB) has an entry unlike its staged one, and
            // went unwritten (review helper-134, 1).
            let todo: Vec<_> = docs
                .table
                .iter()
                .filter_map(|(body, r)| layers.blobs.get(body).filter(|s| s.layer.layer == r.layer))
                .filter(|s| written.insert(s.layer.layer))
                .collect();
            crate::backup::write_layers(repo, layers, &todo)?;
            out.compressed_again.extend(sessions.iter().cloned());
        }
        // Every layer the new snapshot names is there before it is written: one missing would
        // make a kept session unreadable, and the snapshot before it is the one a policy
        // forgets.
        if let Some((body, r)) = docs.table.iter().find(|(_, r)| {
            !repo.has_blob(&Descriptor {
                digest: r.layer,
                size: r.size,
            })
        }) {
            return Err(RepoError::Integrity(format!(
                "the snapshot without {} would name layer {} (of body {body}), which {} does \
                 not hold; no snapshot was written (`asp check --read-data` says more)",
                drop.iter().cloned().collect::<Vec<_>>().join(", "),
                r.layer,
                repo.root().display()
            )));
        }
        for b in docs.blobs() {
            repo.put_bytes(b)?;
        }
        let mut sources = snap.sources.clone();
        sources.gone.retain(|id, _| !drop.contains(id));
        sources
            .entries
            .retain(|e| !e.sessions.iter().any(|s| drop.contains(s)));
        let layers = crate::backup::put_sources(repo, &sources, &snap.shards, &mut |bytes| {
            repo.put_bytes(bytes)
        })?;
        let mut new = SnapshotInfo {
            created: time::format_millis(time::now()),
            parent: Some(info.digest),
            content: docs.manifest.digest,
            sessions: docs.state.sessions.as_ref().map_or(0, Vec::len) as u64,
            gone: sources.gone.len() as u64,
            dropped: drop.iter().cloned().collect(),
            ..info.clone()
        };
        let mut subject = OciDescriptor::new(IMAGE_MANIFEST, docs.manifest);
        subject.artifact_type = Some(asp_format::bundle::oci::ARTIFACT_TYPE.to_owned());
        let mut manifest = snap.manifest.clone();
        manifest.layers = layers;
        manifest.subject = Some(subject);
        manifest.annotations = new.annotations();
        let s = repo.put_bytes(&ImageManifest::to_bytes(&manifest))?;
        new.digest = s.digest;
        new.size = s.size;
        repo.add_snapshot(&new)?;
        if let Some(from) = out.from.last_mut() {
            from.new = Some(new.digest);
        }
        out.snapshots.push(new);
    }
    // One id several series held is one session dropped (`from` says where).
    out.sessions.sort();
    out.sessions.dedup();
    out.still_in_source.sort();
    out.still_in_source.dedup();
    out.compressed_again.sort();
    out.compressed_again.dedup();
    Ok(out)
}

/// `bodies` (kept bodies of `state`, [`made_of_dropped`]) compressed again without the
/// dictionary made of a dropped session they were compressed against.
///
/// A project's dictionary is the first 256 KiB to 1 MiB of one of its transcripts, stored as a
/// body of its own (spec/aspstate.md §4.1), and a transcript may be compressed against
/// another session's whole transcript. Kept for the layers that name it, a dictionary made of
/// a dropped session would keep that session's text in every later snapshot, past `asp
/// prune`, and `asp push` would upload it: a session let go for a secret in it would not be
/// gone (review helper-133, 2). The bodies compressed against such a dictionary are read back
/// and compressed again as a backup would compress them with the state kept, so their project
/// takes a dictionary of a kept transcript, or none.
fn compressed_again(
    repo: &Repository,
    snap: &Snapshot,
    state: &State,
    bodies: &[Descriptor],
) -> Result<Layers, RepoError> {
    let blobs = SnapshotBlobs::new(repo, &snap.table);
    let staging = LayerStore::new_in(repo.root(), LayerOptions::default())?;
    for b in bodies {
        let mut w = staging.begin_sized(b.size)?;
        std::io::copy(&mut blobs.open(b)?, &mut w)
            .map_err(|e| RepoError::Integrity(format!("body {}: {e}", b.digest)))?;
        w.finish()?;
    }
    Ok(staging.finish_for(state, &asp_convert::transcript_of, Some(&blobs))?)
}

/// The kept bodies of `state` compressed against a dictionary made of a `dropped` session (a
/// dropped body itself, or the first bytes of one: a project's dictionary), and the kept
/// sessions they belong to; none when no kept layer names such a dictionary.
fn made_of_dropped(
    repo: &Repository,
    snap: &Snapshot,
    state: &State,
    dropped: &[&Session],
) -> Result<(Vec<Descriptor>, BTreeSet<String>), RepoError> {
    let blobs = SnapshotBlobs::new(repo, &snap.table);
    let kept: HashMap<Digest, Descriptor> = state
        .descriptors()
        .into_iter()
        .map(|d| (d.digest, d))
        .collect();
    let dropped_bodies: Vec<&Descriptor> = dropped.iter().flat_map(|s| s.bodies()).collect();
    let dictionaries: BTreeSet<Digest> = snap
        .table
        .values()
        .filter_map(|r| r.dictionary)
        .filter(|d| !kept.contains_key(d))
        .collect();
    let mut made_of_dropped = BTreeSet::new();
    for d in dictionaries {
        // A dropped body itself, or the first bytes of one (a project's dictionary, whose
        // table entry gives its size).
        if dropped_bodies.iter().any(|b| b.digest == d) {
            made_of_dropped.insert(d);
            continue;
        }
        let Some(size) = snap.table.get(&d).and_then(|r| r.body_size) else {
            continue;
        };
        let dictionary = blobs.read_all(&Descriptor { digest: d, size })?;
        for b in dropped_bodies.iter().filter(|b| b.size >= size) {
            let mut head = Vec::with_capacity(size as usize);
            blobs
                .open(b)?
                .take(size)
                .read_to_end(&mut head)
                .map_err(|e| {
                    RepoError::Integrity(format!("body {} of a dropped session: {e}", b.digest))
                })?;
            if head == dictionary {
                made_of_dropped.insert(d);
                break;
            }
        }
    }
    let mut again: Vec<Descriptor> = kept
        .values()
        .filter(|b| {
            snap.table
                .get(&b.digest)
                .and_then(|r| r.dictionary)
                .is_some_and(|d| made_of_dropped.contains(&d))
        })
        .copied()
        .collect();
    again.sort_by_key(|b| b.digest);
    let bodies: HashSet<Digest> = again.iter().map(|b| b.digest).collect();
    let sessions = state
        .sessions
        .iter()
        .flatten()
        .filter(|s| s.bodies().any(|b| bodies.contains(&b.digest)))
        .map(|s| s.id.to_string())
        .collect();
    Ok((again, sessions))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap(n: u8, created: &str, home: &str) -> SnapshotInfo {
        SnapshotInfo {
            digest: Digest::of(&[n]),
            size: 1,
            created: created.to_owned(),
            harness: "claude-code".to_owned(),
            home: home.to_owned(),
            host: "h".to_owned(),
            parent: None,
            content: Digest::of(b"m"),
            sessions: 0,
            gone: 0,
            dropped: Vec::new(),
            backed_up: None,
        }
    }

    fn kept(p: &ForgetPlan) -> Vec<String> {
        p.keep.iter().map(|s| s.created.clone()).collect()
    }

    #[test]
    fn policies_keep_the_newest_of_each_bucket_per_harness_and_home() {
        let all = vec![
            snap(1, "2026-11-02T10:00:00.000Z", "/a"), // Monday, week 1
            snap(2, "2026-11-02T11:00:00.000Z", "/a"),
            snap(3, "2026-11-08T09:00:00.000Z", "/a"), // Sunday, still week 1
            snap(4, "2026-11-09T09:00:00.000Z", "/a"), // Monday, week 2
            snap(5, "2026-11-09T12:00:00.000Z", "/a"),
            snap(6, "2026-11-01T12:00:00.000Z", "/b"), // another home: its newest stays
        ];
        let daily = plan(
            &all,
            &KeepPolicy {
                daily: Some(2),
                ..KeepPolicy::default()
            },
        );
        assert_eq!(
            kept(&daily),
            [
                "2026-11-08T09:00:00.000Z",
                "2026-11-09T12:00:00.000Z",
                "2026-11-01T12:00:00.000Z"
            ]
        );
        let weekly = plan(
            &all,
            &KeepPolicy {
                weekly: Some(2),
                ..KeepPolicy::default()
            },
        );
        assert_eq!(
            kept(&weekly),
            [
                "2026-11-08T09:00:00.000Z",
                "2026-11-09T12:00:00.000Z",
                "2026-11-01T12:00:00.000Z"
            ]
        );
        let last = plan(
            &all,
            &KeepPolicy {
                last: Some(3),
                ..KeepPolicy::default()
            },
        );
        assert_eq!(last.remove.len(), 2);
        // Keep nothing by rule: the newest of each group still stays.
        let none = plan(
            &all,
            &KeepPolicy {
                last: Some(0),
                ..KeepPolicy::default()
            },
        );
        assert_eq!(
            kept(&none),
            ["2026-11-09T12:00:00.000Z", "2026-11-01T12:00:00.000Z"]
        );
    }
}
