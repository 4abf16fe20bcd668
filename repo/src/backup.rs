//! `asp backup`: one harness's store in one home into a new snapshot, reading only what
//! changed since the newest snapshot of that harness and home (the parent).
//!
//! - A survey entry whose files (path, size, mtime, inode, device) and facts equal the
//!   parent's record is not read: its sessions and their layers are the parent's. A file whose
//!   mtime is within [`RACY_NS`] of the parent's start is read again, since it may have
//!   changed after the parent read it without its mtime moving (git's and restic's
//!   racy-timestamp rule).
//! - A session the parent held that the source no longer has is carried into the snapshot,
//!   marked gone in the source records, so the newest snapshot holds every session ever
//!   backed up.
//! - When the content manifest comes out identical to the parent's and no session went, there
//!   is nothing to store: no blob, no snapshot.
//! - Layers are written before the manifests that name them, the index last (see
//!   [`crate::repository`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::num::NonZeroUsize;
use std::path::Path;

use asp_convert::harness::{ReadOptions, Surveyed};
use asp_convert::kit::report::{Diagnostic, Diagnostics, Severity};
use asp_convert::kit::source::SourceFile;
use asp_convert::kit::time;
use asp_convert::store::{ReadRequest, Sessions};
use asp_convert::{Home, Store};
use asp_format::KindSet;
use asp_format::blob::BlobSource;
use asp_format::bundle::layers::{LayerOptions, LayerStore, compress};
use asp_format::bundle::oci::{ARTIFACT_TYPE, Encoding, LayerRef, MAX_CHAIN};
use asp_format::bundle::{Documents, Options2};
use asp_format::digest::{Descriptor, Digest};
use asp_format::progress::Progress;
use asp_format::state::{FileEntry, Native, Session, State};
use asp_registry::manifest::{IMAGE_MANIFEST, ImageManifest, OciDescriptor};

use crate::error::RepoError;
use crate::repository::{PendingBlob, Put, Repository};
use crate::snapshot::{
    FileRecord, PassedOver, SNAPSHOT_ARTIFACT, Snapshot, SnapshotInfo, SourceEntry, Sources,
};
use crate::sources::{RecordLayer, StoredShards};

/// The mtime granularity the racy-timestamp rule assumes: 2 s (FAT's, the coarsest in use).
pub const RACY_NS: i128 = 2_000_000_000;

/// What to back up.
#[derive(Debug, Clone)]
pub struct BackupOptions {
    pub harness: String,
    pub home: Home,
    /// Threads reading sessions and compressing; `None` for one per core.
    pub threads: Option<NonZeroUsize>,
    /// The host name recorded; `None` for this machine's.
    pub host: Option<String>,
    /// Make no snapshot when the store gives nothing at all and no earlier snapshot of this
    /// harness and home exists (`--from all`: the harness is not used in this home).
    pub skip_absent: bool,
    /// Read every survey entry again, reusing nothing of the parent's reads (`--force`).
    pub reread_all: bool,
}

/// Where findings and progress go.
#[derive(Clone, Copy)]
pub struct BackupContext<'a> {
    pub diagnostics: &'a Diagnostics,
    pub progress: &'a dyn Progress,
}

impl std::fmt::Debug for BackupContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackupContext").finish_non_exhaustive()
    }
}

/// What a backup did.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BackupOutcome {
    pub harness: String,
    pub home: String,
    /// The new snapshot; `None` when nothing changed.
    pub snapshot: Option<SnapshotInfo>,
    pub parent: Option<Digest>,
    /// Sessions (a subagent counts as one) by what became of them: with `gone` they add up to
    /// the snapshot's sessions.
    pub new: usize,
    pub changed: usize,
    pub unchanged: usize,
    /// Sessions held that are gone from the source.
    pub gone: usize,
    /// Sessions read from the source this time, whatever they came to; the others were
    /// taken from the parent, their files unchanged (all of them with `--force`).
    pub sessions_read: usize,
    /// The source records differ from the parent's (a file's stat changed, its content not
    /// necessarily): a snapshot is made for them even when nothing else changed.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub records_changed: bool,
    /// The ids of the new and changed sessions, and of those this backup found gone (the
    /// ones found gone before are counted in `gone` only), each in reading order.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub new_sessions: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub changed_sessions: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gone_now: Vec<String>,
    /// Sessions the parent held gone that the source has again (a transcript put back from
    /// elsewhere): live again, counted as unchanged or changed as their content says, and
    /// named here.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub back_sessions: Vec<String>,
    /// Sessions the source still has but whose files could not be read this time (a damaged
    /// header, a database that does not open: the read reported them lost), kept as the
    /// parent held them rather than marked gone: nothing deleted them. Counted in neither
    /// `unchanged` nor `gone` (one gone before stays gone, and is counted there).
    pub unreadable: usize,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unreadable_sessions: Vec<String>,
    /// The kinds besides sessions whose content differs from the parent's (`skills`,
    /// `tools`, ...): a snapshot made for them alone says so, not only "0 new, 0 changed".
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kinds_changed: Vec<String>,
    /// The harness's own configuration files new, changed or gone since the parent, by their
    /// path relative to the home (found by a new user's trial: an edited MCP script made a
    /// snapshot that said nothing changed).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub config_changed: Vec<String>,
    /// Newer snapshots of the series that could not be read (a manifest or document damaged),
    /// passed over for the parent: the backup is made from the newest that can be, so an
    /// hourly job goes on. This backup says so (exit 4); the next ones have its snapshot as
    /// their parent, and `asp check` names the damaged one until `asp forget --snapshot`
    /// lets it go.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub passed_over: Vec<PassedOver>,
    /// Why the parent's source records could not be read: its state was built on, every
    /// session read again (exit 4, as for a snapshot passed over; said once, since the
    /// next backup has this one's records).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub records_unread: Option<String>,
    /// Documents this backup wrote whose blob the repository held damaged (its bytes not its
    /// name's), replaced by the right bytes: snapshots that name them (often every one of the
    /// home, passed over above) can be read again.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub mended: Vec<String>,
    /// The harness has no store in this home (with `skip_absent`): nothing was done.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub absent: bool,
    pub blobs_added: usize,
    pub bytes_added: u64,
    /// Layers the parent names that the repository has lost and nothing could store again,
    /// because only sessions gone from the source need them (each such session is reported
    /// as lost).
    #[serde(skip_serializing_if = "is_zero")]
    pub layers_lost: usize,
    /// Layers the parent names that the repository had lost (a damaged one `asp check
    /// --repair` moved aside, one deleted) and this backup stored again from the source.
    #[serde(skip_serializing_if = "is_zero")]
    pub layers_stored_again: usize,
}

/// What a read of a snapshot with its source records' entries found that a read without them
/// did not: damage in those records, said as it is.
pub(crate) fn records_damage(e: &RepoError) -> String {
    match e {
        RepoError::Integrity(m) => m.clone(),
        e => e.to_string(),
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// This machine's host name, as the kernel has it.
pub fn host_name() -> String {
    for p in ["/proc/sys/kernel/hostname", "/etc/hostname"] {
        if let Ok(s) = std::fs::read_to_string(p)
            && !s.trim().is_empty()
        {
            return s.trim().to_owned();
        }
    }
    std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".to_owned())
}

/// How a home is named in snapshots: its canonical path (symbolic links, `.` and `..` resolved,
/// no trailing slash), so every spelling of one home names one chain of snapshots; its absolute
/// path when it cannot be resolved.
pub fn home_name(home: &Home) -> String {
    std::fs::canonicalize(&home.dir)
        .or_else(|_| std::path::absolute(&home.dir))
        .unwrap_or_else(|_| home.dir.clone())
        .display()
        .to_string()
}

fn record(f: &SourceFile, home: &Path) -> FileRecord {
    FileRecord {
        path: f.relative_to(home),
        size: f.size,
        mtime_ns: f.mtime_ns,
        ctime_ns: f.ctime_ns,
        inode: f.inode,
        device: f.device,
    }
}

/// One pass of a backup: done, or stopped before writing anything because layers the parent
/// snapshot names are missing from the repository.
enum Attempt {
    Done(Box<BackupOutcome>),
    Missing {
        layers: HashSet<Digest>,
        /// The parent's sessions that need them.
        sessions: Vec<String>,
    },
}

/// Backs up one harness's store into `repo`.
///
/// A layer the parent names but the repository lacks (a blob deleted by hand, a disk that
/// lost it: `asp check` says which) does not stop every later backup: the sessions that need
/// it are read again from the source, and the backup stores their layers anew. A session the
/// source no longer has cannot be mended that way: it is carried as it is and reported as
/// lost on every run ([`lost_to_gone`]).
pub fn backup(
    repo: &Repository,
    opts: &BackupOptions,
    ctx: &BackupContext<'_>,
) -> Result<BackupOutcome, RepoError> {
    let _lock = repo.lock_shared()?;
    // One backup of a series at a time: the next builds on this one ([`Repository::lock_series`]).
    let _series = repo.lock_series(&opts.harness, &home_name(&opts.home))?;
    // Each pass reports into its own diagnostics, passed on when the pass ends (an error
    // included: they often say why) but for a first pass that a second one does again.
    let pass = |avoid: &HashSet<Digest>| -> (Result<Attempt, RepoError>, Diagnostics) {
        let diagnostics = Diagnostics::new();
        let ctx = BackupContext {
            diagnostics: &diagnostics,
            progress: ctx.progress,
        };
        (backup_once(repo, opts, &ctx, avoid), diagnostics)
    };
    let forward = |from: Diagnostics| {
        for d in from.items() {
            ctx.diagnostics.push(d);
        }
    };
    let missing = match pass(&HashSet::new()) {
        (Ok(Attempt::Missing { layers, .. }), _) => layers,
        (Ok(Attempt::Done(outcome)), diagnostics) => {
            forward(diagnostics);
            return Ok(*outcome);
        }
        (Err(e), diagnostics) => {
            forward(diagnostics);
            return Err(e);
        }
    };
    let (again, diagnostics) = pass(&missing);
    forward(diagnostics);
    match again? {
        Attempt::Done(mut outcome) => {
            let mended = missing.len().saturating_sub(outcome.layers_lost);
            outcome.layers_stored_again = mended;
            if mended > 0 {
                ctx.diagnostics.push(Diagnostic {
                    severity: Severity::Note,
                    subject: None,
                    line: None,
                    message: format!(
                        "{} of the parent snapshot {} missing from {}; the sessions that need \
                         {} were read again from the source and stored anew",
                        count_layers(mended),
                        if mended == 1 { "was" } else { "were" },
                        repo.root().display(),
                        if mended == 1 { "it" } else { "them" },
                    ),
                });
            }
            Ok(*outcome)
        }
        Attempt::Missing {
            layers: missing,
            sessions,
        } => Err(RepoError::Integrity(format!(
            "{} of the parent snapshot {} missing from {} and could not be stored again{}: \
             run `asp check`",
            count_layers(missing.len()),
            if missing.len() == 1 { "is" } else { "are" },
            repo.root().display(),
            if sessions.is_empty() {
                String::new()
            } else {
                format!(" (needed by {})", sessions.join(", "))
            }
        ))),
    }
}

/// The ids of the sessions of `state` a body of which is stored in one of `layers`.
fn needing(
    state: &State,
    table: &BTreeMap<Digest, LayerRef>,
    layers: &HashSet<Digest>,
) -> Vec<String> {
    sessions_needing(state, table, |l| layers.contains(l))
        .map(|(s, _)| s.id.to_string())
        .collect()
}

/// Carries into `config` files of the parent's configuration `old` that the source has no
/// copy of in this backup: those the harness deleted on its own schedule while what names
/// them stays ([`Store::config_to_carry`], as gone sessions are carried), and those that could
/// not be read this time (`unreadable`: the last copy that could is kept). One whose layer the
/// repository has lost cannot be carried: it is said as lost, and is then in no later
/// snapshot.
fn carry_config(
    repo: &Repository,
    ctx: &BackupContext<'_>,
    store: &Store,
    old: &Native,
    old_layers: &BTreeMap<Digest, LayerRef>,
    unreadable: &[String],
    config: &mut Option<Native>,
) {
    let have: HashSet<&str> = config
        .iter()
        .flat_map(|c| &c.files)
        .map(|f| f.path.as_str())
        .collect();
    let gone: Vec<&str> = old
        .files
        .iter()
        .map(|f| f.path.as_str())
        .filter(|p| !have.contains(p) && !unreadable.iter().any(|u| u == p))
        .collect();
    let mut wanted: HashSet<String> = store.config_to_carry(&gone).into_iter().collect();
    wanted.extend(unreadable.iter().cloned());
    let present = |f: &FileEntry| {
        old_layers.get(&f.content.digest).is_some_and(|r| {
            repo.has_blob(&Descriptor {
                digest: r.layer,
                size: r.size,
            })
        })
    };
    let mut carried = Vec::new();
    for f in old
        .files
        .iter()
        .filter(|f| wanted.contains(f.path.as_str()))
    {
        let file = Some(asp_convert::kit::report::Subject::File(
            std::path::PathBuf::from(f.path.as_str()),
        ));
        if !present(f) {
            ctx.diagnostics.push(Diagnostic {
                severity: Severity::Lost,
                subject: file,
                line: None,
                message: format!(
                    "the copy an earlier backup kept is no longer kept: the repository has lost \
                     its layer ({})",
                    repo.root().display()
                ),
            });
            continue;
        }
        if unreadable.iter().any(|u| u == f.path.as_str()) {
            ctx.diagnostics.push(Diagnostic {
                severity: Severity::Note,
                subject: file,
                line: None,
                message: "the copy an earlier backup kept is kept".to_owned(),
            });
        }
        carried.push(f.clone());
    }
    if carried.is_empty() {
        return;
    }
    let config = config.get_or_insert_with(|| Native {
        harness: old.harness.clone(),
        files: Vec::new(),
    });
    config.files.extend(carried);
    config.files.sort_by(|a, b| a.path.cmp(&b.path));
}

/// When every layer of `missing` is needed by sessions gone from the source alone, those
/// sessions, each with how many of the missing layers it needs; `None` when a session the
/// source still has needs one (read again, it stores the layer anew) or none does.
///
/// Nothing can store such a layer again. The sessions are carried as they are: their other
/// layers stay kept, `asp restore` leaves out only what needs the lost ones, and they are
/// said as lost on every run until `asp forget --session` lets them go. The backup goes on,
/// so one damaged session of the past does not stop every session of the present from being
/// kept.
fn lost_to_gone(
    state: &State,
    table: &BTreeMap<Digest, LayerRef>,
    missing: &HashSet<Digest>,
    gone: &BTreeMap<String, String>,
) -> Option<Vec<(String, usize)>> {
    let mut covered = HashSet::new();
    let mut lost = Vec::new();
    for (s, needs) in sessions_needing(state, table, |l| missing.contains(l)) {
        if !gone.contains_key(s.id.as_str()) {
            return None;
        }
        lost.push((s.id.to_string(), needs.len()));
        covered.extend(needs);
    }
    (covered.len() == missing.len()).then_some(lost)
}

/// The files under `home` (relative, `/`-separated, as native paths are named) that the read
/// reported lost as a whole (no line past the first named) and read no session from: a
/// session file whose header is damaged, a database that does not open. (A database some
/// of whose sessions were read opened: a loss there is of one row, and the sessions gone
/// from it are gone.)
fn unreadable_files(diagnostics: &Diagnostics, home: &Path, live: &State) -> Vec<String> {
    let read_from = |u: &str| {
        live.sessions
            .iter()
            .flatten()
            .any(|s| reads_one_of(s, &[u]))
    };
    diagnostics
        .items()
        .into_iter()
        .filter(|d| d.severity == Severity::Lost && d.line.is_none_or(|l| l == 1))
        .filter_map(|d| asp_convert::kit::config::relative(home, d.file()?))
        .filter(|u| !read_from(u))
        .collect()
}

/// Whether session `s` is read from one of `files`: one of its native files is one, or a row
/// of one (`DB/table/key.row.json`, spec/aspstate.md §8.1).
fn reads_one_of(s: &Session, files: &[impl AsRef<str>]) -> bool {
    s.native.iter().flat_map(|n| &n.files).any(|f| {
        let path = f.path.as_str();
        files.iter().any(|u| {
            path.strip_prefix(u.as_ref())
                .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
        })
    })
}

/// Says each session [`lost_to_gone`] found, as lost.
fn report_lost_to_gone(
    repo: &Repository,
    ctx: &BackupContext<'_>,
    lost: &[(String, usize)],
    gone: &BTreeMap<String, String>,
) {
    for (id, n) in lost {
        ctx.diagnostics.push(Diagnostic {
            severity: Severity::Lost,
            subject: None,
            line: None,
            message: format!(
                "session {id} (gone from the source since {}) needs {} the repository has lost \
                 ({}): it is kept as it is, and `asp restore` gives back what does not need {}; \
                 `asp forget --session {id}` lets it go",
                gone[id],
                count_layers(*n),
                repo.root().display(),
                if *n == 1 { "it" } else { "them" },
            ),
        });
    }
}

/// `1 layer`, `3 layers`.
fn count_layers(n: usize) -> String {
    if n == 1 {
        "1 layer".to_owned()
    } else {
        format!("{n} layers")
    }
}

/// One pass of [`backup`]; a surveyed entry whose sessions need a layer in `avoid` is read
/// again instead of taken from the parent.
fn backup_once(
    repo: &Repository,
    opts: &BackupOptions,
    ctx: &BackupContext<'_>,
    avoid: &HashSet<Digest>,
) -> Result<Attempt, RepoError> {
    let store = Store::harness(&opts.harness, opts.home.clone())
        .ok_or_else(|| RepoError::Usage(format!("this build knows no harness {}", opts.harness)))?;
    let home = home_name(&opts.home);
    // A snapshot whose records' entries (a shard) cannot be read is still the parent: its
    // state is whole and its records' head holds the sessions gone and the configuration, so
    // both are carried, and without entries every session is read again (the newest readable
    // before it would have given a snapshot without them). One whose head cannot be read, or
    // that fails otherwise (an I/O error), is passed over as before: without the head, the
    // configuration it carried would be lost (review helper-134, 2).
    let (parent, passed_over) = Snapshot::newest_readable(
        repo,
        &repo.snapshots()?,
        &opts.harness,
        &home,
        |repo, info| {
            Snapshot::load(repo, info).or_else(|e| {
                use asp_format::error::{Classify as _, ErrorClass};
                if e.class() != ErrorClass::Integrity {
                    return Err(e);
                }
                match Snapshot::load_for_reading(repo, info) {
                    Ok(mut snap) if snap.sources_damage.is_none() => {
                        snap.sources_damage = Some(records_damage(&e));
                        Ok(snap)
                    }
                    _ => Err(e),
                }
            })
        },
    )?;
    let started = time::now();
    let staging = LayerStore::new_in(
        repo.root(),
        LayerOptions {
            threads: opts.threads.map_or(0, NonZeroUsize::get),
            ..LayerOptions::default()
        },
    )?;

    let parent_sessions: HashMap<&str, &Session> = parent
        .iter()
        .flat_map(|p| p.state.sessions.iter().flatten())
        .map(|s| (s.id.as_str(), s))
        .collect();
    let records: HashMap<&str, &SourceEntry> = parent
        .iter()
        .flat_map(|p| &p.sources.entries)
        .map(|e| (e.id.as_str(), e))
        .collect();
    let racy_from = parent
        .as_ref()
        .map_or(i128::MIN, |p| p.sources.started_ns.saturating_sub(RACY_NS));
    let home_dir = opts.home.dir.as_path();
    // Whether an entry's files and other facts are as the parent recorded them.
    let as_recorded = |rec: &SourceEntry, facts: &Digest, files: &[SourceFile]| {
        rec.facts == *facts
            && rec.files.len() == files.len()
            && files
                .iter()
                .zip(&rec.files)
                .all(|(f, r)| r.unchanged_as(&record(f, home_dir)))
    };
    // Whether a session of the parent needs a layer of `avoid`.
    let needs_avoided = |s: &Session| {
        !avoid.is_empty()
            && parent
                .as_ref()
                .is_some_and(|p| !layers_of(s, &p.table, |l| avoid.contains(l)).is_empty())
    };
    let reuse = |entry: &Surveyed| -> Option<Vec<Session>> {
        let rec = records.get(entry.id.as_str())?;
        if opts.reread_all
            || !as_recorded(rec, &entry.facts, &entry.files)
            || entry.files.iter().any(|f| f.mtime_ns >= racy_from)
        {
            return None;
        }
        rec.sessions
            .iter()
            .map(|id| {
                parent_sessions
                    .get(id.as_str())
                    .filter(|s| !needs_avoided(s))
                    .map(|s| (*s).clone())
            })
            .collect()
    };
    let read = store.read_reusing(
        &ReadRequest {
            kinds: KindSet::ALL,
            sessions: &Sessions::All,
            options: ReadOptions {
                configuration_kept: true,
                ..ReadOptions::default()
            },
            threads: opts.threads,
            blobs: &staging,
            diagnostics: ctx.diagnostics,
            progress: ctx.progress,
        },
        &reuse,
    )?;
    let mut state = read.state;
    let mut outcome = BackupOutcome {
        harness: opts.harness.clone(),
        home: home.clone(),
        parent: parent.as_ref().map(|p| p.info.digest),
        records_unread: parent.as_ref().and_then(|p| p.sources_damage.clone()),
        passed_over,
        ..BackupOutcome::default()
    };
    let new_sessions: HashMap<&str, &Session> = state
        .sessions
        .iter()
        .flatten()
        .map(|s| (s.id.as_str(), s))
        .collect();
    // Each session counts once, as `asp snapshots` and `asp sessions` count them (a subagent
    // is a session of its own): new when the parent did not hold it, unchanged when it came
    // out as the parent had it (whether taken from the parent or read again, as a file read
    // only for the racy-timestamp rule is), changed otherwise. With the gone ones they add up
    // to the snapshot's sessions.
    for e in &read.entries {
        if !e.reused {
            outcome.sessions_read += e.sessions.len();
        }
        for id in &e.sessions {
            if parent
                .as_ref()
                .is_some_and(|p| p.sources.gone.contains_key(id.as_str()))
            {
                outcome.back_sessions.push(id.to_string());
            }
            match parent_sessions.get(id.as_str()) {
                _ if e.reused => outcome.unchanged += 1,
                None => {
                    outcome.new += 1;
                    outcome.new_sessions.push(id.to_string());
                }
                Some(was) if new_sessions.get(id.as_str()) == Some(was) => outcome.unchanged += 1,
                Some(_) => {
                    outcome.changed += 1;
                    outcome.changed_sessions.push(id.to_string());
                }
            }
        }
    }

    // Sessions the source no longer has are carried, marked gone; those whose files are
    // there but could not be read are carried as they were.
    let now = time::format_millis(started);
    let mut gone = BTreeMap::new();
    if let Some(p) = &parent {
        let live: HashSet<&str> = state
            .sessions
            .iter()
            .flatten()
            .map(|s| s.id.as_str())
            .collect();
        let unreadable = unreadable_files(ctx.diagnostics, home_dir, &state);
        let mut carried = Vec::new();
        for s in p.state.sessions.iter().flatten() {
            if !live.contains(s.id.as_str()) {
                let since = p.sources.gone.get(s.id.as_str()).cloned();
                if since.is_none() && reads_one_of(s, &unreadable) {
                    outcome.unreadable += 1;
                    outcome.unreadable_sessions.push(s.id.to_string());
                    carried.push(s.clone());
                    continue;
                }
                if since.is_none() {
                    outcome.gone_now.push(s.id.to_string());
                }
                gone.insert(s.id.to_string(), since.unwrap_or_else(|| now.clone()));
                carried.push(s.clone());
            }
        }
        if !carried.is_empty() {
            state.sessions.get_or_insert_with(Vec::new).extend(carried);
        }
    }
    outcome.gone = gone.len();

    let read_config = store.read_config(
        &staging,
        state.tools.as_deref().unwrap_or_default(),
        ctx.diagnostics,
    )?;
    let unreadable = read_config
        .as_ref()
        .map(|r| r.unreadable.clone())
        .unwrap_or_default();
    let mut config = read_config.map(|r| r.native);
    if let Some(p) = &parent
        && let Some(old) = &p.sources.config
    {
        carry_config(
            repo,
            ctx,
            &store,
            old,
            &p.sources.config_layers,
            &unreadable,
            &mut config,
        );
    }
    if opts.skip_absent && parent.is_none() && state.kinds().is_empty() && config.is_none() {
        outcome.absent = true;
        return Ok(Attempt::Done(Box::new(outcome)));
    }
    // The parent's state is stored normalised; the same state normalised is the same content
    // manifest, found without serialising and compressing the documents (most of the time a
    // backup with nothing to store took).
    state.normalize();
    // The empty config every manifest names is two known bytes: one missing (moved aside as
    // damaged by `asp check --read-data --repair`, deleted by hand) is written again by any
    // backup, as nothing else would store it.
    let empty = asp_registry::manifest::EMPTY_JSON;
    if !repo.has_blob(&asp_format::digest::Descriptor::of(empty)) {
        repo.put_bytes(empty)?;
    }
    // The source records this backup gives its snapshot. When they differ from the parent's
    // though the content does not (a file's status changed, chmod or a new link; a file copied
    // to a new inode; a record of an older build without status change times), a snapshot is
    // made all the same, for its records: otherwise every later backup would read those
    // sessions again, for good (review helper-125, 1).
    let entries: Vec<SourceEntry> = read
        .entries
        .iter()
        .map(|e| SourceEntry {
            id: e.id.to_string(),
            facts: e.facts,
            sessions: e.sessions.iter().map(ToString::to_string).collect(),
            files: e.files.iter().map(|f| record(f, home_dir)).collect(),
        })
        .collect();
    // By id: the parent's come in shard order, these in survey order.
    outcome.records_changed = parent.as_ref().is_some_and(|p| {
        p.sources.entries.len() != entries.len()
            || entries
                .iter()
                .any(|e| records.get(e.id.as_str()) != Some(&e))
    });
    // (A pass mending missing layers goes on: the layers read again are to be stored.)
    if let Some(p) = &parent
        && avoid.is_empty()
        && !outcome.records_changed
        && p.sources.gone.keys().eq(gone.keys())
        && p.sources.config == config
        && p.state == state
    {
        // Nothing changed, but a layer the snapshot needs may have gone from the repository
        // (deleted by hand, moved aside by `asp check --read-data --repair`): then the
        // sessions that need it are read again and it is stored anew, as when something
        // changed. A stat per layer of the parent (its gone sessions' and checkpoints'
        // included): 10-15 ms for the 5,338 blobs of a 1 GiB bench home's repository on a
        // local disk (a whole nothing-changed backup of it: 0.20 s), more on a network file
        // system.
        let missing: HashSet<Digest> = p
            .table
            .values()
            .chain(p.sources.config_layers.values())
            .filter(|r| {
                !repo.has_blob(&Descriptor {
                    digest: r.layer,
                    size: r.size,
                })
            })
            .map(|r| r.layer)
            .collect();
        if missing.is_empty() {
            return Ok(Attempt::Done(Box::new(outcome)));
        }
        // (A layer that a configuration file also needs is stored again from the source by
        // the pass that mends.)
        let config_needs = p
            .sources
            .config_layers
            .values()
            .any(|r| missing.contains(&r.layer));
        if !config_needs && let Some(lost) = lost_to_gone(&p.state, &p.table, &missing, &gone) {
            report_lost_to_gone(repo, ctx, &lost, &gone);
            outcome.layers_lost = missing.len();
            return Ok(Attempt::Done(Box::new(outcome)));
        }
        let sessions = needing(&p.state, &p.table, &missing);
        return Ok(Attempt::Missing {
            layers: missing,
            sessions,
        });
    }
    if let Some(p) = &parent {
        outcome.kinds_changed = kinds_changed(&p.state, &state);
        outcome.config_changed = config_changed(p.sources.config.as_ref(), config.as_ref());
    }
    // Transcripts read this time go against their project's dictionary; one made from a
    // transcript taken from the parent is read from the repository (spec/aspstate.md §4.1).
    let parent_blobs = parent
        .as_ref()
        .map(|p| crate::blobs::SnapshotBlobs::new(repo, &p.table));
    let layers = staging.finish_for(
        &state,
        &asp_convert::transcript_of,
        parent_blobs.as_ref().map(|b| b as &dyn BlobSource),
    )?;
    let parent_table = parent.as_ref().map(|p| &p.table);
    let layer_of = |d: &Digest| -> Option<LayerRef> {
        layers
            .blobs
            .get(d)
            .map(|s| s.layer)
            .or_else(|| parent_table.and_then(|t| t.get(d).copied()))
    };
    let docs = Documents::plan(&state, &layer_of, &content_options())?;
    // (A file carried from the parent has its layer in the parent's configuration layers.)
    let config_layer =
        |d: &Digest| layer_of(d).or_else(|| parent.as_ref()?.sources.config_layers.get(d).copied());
    let config_layers: BTreeMap<Digest, LayerRef> = config
        .iter()
        .flat_map(|c| &c.files)
        .filter_map(|f| config_layer(&f.content.digest).map(|r| (f.content.digest, r)))
        .collect();
    let same_as_parent = parent.as_ref().is_some_and(|p| {
        p.content.digest == docs.manifest.digest
            && !outcome.records_changed
            && p.sources.gone.keys().eq(gone.keys())
            && p.sources.config == config
    });
    if same_as_parent && avoid.is_empty() {
        return Ok(Attempt::Done(Box::new(outcome)));
    }

    // Layers first: new ones from staging; the parent's must already be there.
    let mut written = HashSet::new();
    let mut to_write = Vec::new();
    let mut missing = HashSet::new();
    for (body, r) in docs.table.iter().chain(&config_layers) {
        if !written.insert(r.layer) {
            continue;
        }
        match layers.blobs.get(body) {
            // The same stored bytes (the plan leaves `bodySize` to bodies no state names).
            Some(s) if s.layer.layer == r.layer => to_write.push(s),
            _ => {
                let d = Descriptor {
                    digest: r.layer,
                    size: r.size,
                };
                if !repo.has_blob(&d) {
                    missing.insert(r.layer);
                }
            }
        }
    }
    if !missing.is_empty() {
        match lost_to_gone(&docs.state, &docs.table, &missing, &gone) {
            Some(lost) => {
                report_lost_to_gone(repo, ctx, &lost, &gone);
                outcome.layers_lost = missing.len();
            }
            None => {
                let sessions = needing(&docs.state, &docs.table, &missing);
                return Ok(Attempt::Missing {
                    layers: missing,
                    sessions,
                });
            }
        }
    }
    let (n, bytes) = write_layers(repo, &layers, &to_write)?;
    outcome.blobs_added += n;
    outcome.bytes_added += bytes;
    if same_as_parent {
        // Missing layers stored again; the parent says all there is to say.
        return Ok(Attempt::Done(Box::new(outcome)));
    }
    let sources = Sources {
        started_ns: started,
        entries,
        gone,
        config,
        config_layers,
    };
    let info = SnapshotInfo {
        digest: Digest::of(b""),
        size: 0,
        created: now,
        harness: opts.harness.clone(),
        home,
        host: opts.host.clone().unwrap_or_else(host_name),
        parent: parent.as_ref().map(|p| p.info.digest),
        content: docs.manifest.digest,
        sessions: docs.state.sessions.as_ref().map_or(0, Vec::len) as u64,
        gone: outcome.gone as u64,
        dropped: Vec::new(),
        backed_up: None,
    };
    // (The parent's shards of the records that did not change are named, not written again.)
    let none = StoredShards::default();
    let shards = parent.as_ref().map_or(&none, |p| &p.shards);
    outcome.snapshot = Some(write_snapshot(
        repo,
        &docs,
        &sources,
        shards,
        info,
        &mut outcome,
    )?);
    Ok(Attempt::Done(Box::new(outcome)))
}

/// The layers of `table` that store a body of session `s` and that `wanted` accepts.
pub(crate) fn layers_of(
    s: &Session,
    table: &BTreeMap<Digest, LayerRef>,
    wanted: impl Fn(&Digest) -> bool,
) -> BTreeSet<Digest> {
    let mut out = BTreeSet::new();
    for d in s.bodies() {
        // The body's layer, then its dictionaries' (layout 4: a transcript's project's).
        let mut next = Some(d.digest);
        for _ in 0..=MAX_CHAIN {
            let Some(r) = next.and_then(|x| table.get(&x)) else {
                break;
            };
            if wanted(&r.layer) {
                out.insert(r.layer);
            }
            next = r.dictionary.filter(|x| Some(*x) != next);
        }
    }
    out
}

/// Each session of `state` with the layers of `table` storing its bodies that `wanted`
/// accepts, when there are any: who needs a missing or damaged layer.
pub(crate) fn sessions_needing<'s>(
    state: &'s State,
    table: &'s BTreeMap<Digest, LayerRef>,
    wanted: impl Fn(&Digest) -> bool + 's,
) -> impl Iterator<Item = (&'s Session, BTreeSet<Digest>)> + 's {
    state.sessions.iter().flatten().filter_map(move |s| {
        let layers = layers_of(s, table, &wanted);
        (!layers.is_empty()).then_some((s, layers))
    })
}

/// Threads writing layers: each layer is its own file; writing many at once keeps the disk
/// busy while another thread copies.
const WRITERS: usize = 4;

/// Stores the staged layers on [`WRITERS`] threads, made durable together
/// ([`Repository::commit_blobs`]); gives how many blobs were written and their bytes.
pub(crate) fn write_layers(
    repo: &Repository,
    layers: &asp_format::bundle::layers::Layers,
    todo: &[&asp_format::bundle::layers::StagedLayer],
) -> Result<(usize, u64), RepoError> {
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || -> Result<(Vec<PendingBlob>, u64), RepoError> {
        let (mut pending, mut bytes) = (Vec::new(), 0);
        loop {
            let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let Some(s) = todo.get(i) else {
                return Ok((pending, bytes));
            };
            if let Some(p) = repo.put_staged(layers, s)? {
                pending.push(p);
                bytes += s.layer.size;
            }
        }
    };
    let threads = WRITERS.min(todo.len()).max(1);
    let per_thread: Vec<Result<(Vec<PendingBlob>, u64), RepoError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads).map(|_| scope.spawn(work)).collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a layer writer panicked"))
            .collect()
    });
    let (mut all, mut bytes) = (Vec::new(), 0);
    for r in per_thread {
        let (p, b) = r?;
        all.extend(p);
        bytes += b;
    }
    let n = all.len();
    repo.commit_blobs(all)?;
    Ok((n, bytes))
}

/// Stores a snapshot whose layers are all stored already: the content manifest's documents,
/// the source records (naming the `shards` stored already that they hold again), the
/// snapshot manifest, then its entry in the index. `info` gives everything but the digest
/// and size.
pub(crate) fn write_snapshot(
    repo: &Repository,
    docs: &Documents,
    sources: &Sources,
    shards: &StoredShards,
    info: SnapshotInfo,
    outcome: &mut BackupOutcome,
) -> Result<SnapshotInfo, RepoError> {
    for b in docs.blobs() {
        put_counted(repo, b, outcome)?;
    }
    write_snapshot_of(repo, docs.manifest, sources, shards, info, outcome)
}

/// Writes the source records and the snapshot manifest of the stored content manifest
/// `content`, then its entry in the index.
pub(crate) fn write_snapshot_of(
    repo: &Repository,
    content: Descriptor,
    sources: &Sources,
    shards: &StoredShards,
    mut info: SnapshotInfo,
    outcome: &mut BackupOutcome,
) -> Result<SnapshotInfo, RepoError> {
    let layers = put_sources(repo, sources, shards, &mut |bytes| {
        put_counted(repo, bytes, outcome)
    })?;
    let mut subject = OciDescriptor::new(IMAGE_MANIFEST, content);
    subject.artifact_type = Some(ARTIFACT_TYPE.to_owned());
    let snapshot_manifest = ImageManifest {
        schema_version: 2,
        media_type: Some(IMAGE_MANIFEST.to_owned()),
        artifact_type: Some(SNAPSHOT_ARTIFACT.to_owned()),
        config: OciDescriptor::empty(),
        layers,
        subject: Some(subject),
        annotations: info.annotations(),
    };
    let s = put_counted(repo, &snapshot_manifest.to_bytes(), outcome)?;
    info.digest = s.digest;
    info.size = s.size;
    repo.add_snapshot(&info)?;
    Ok(info)
}

/// Stores the source records ([`crate::sources`]: a head, then the shards; a shard of
/// `shards` that `repo` still holds is named as it is) through `put`, and gives the snapshot
/// manifest's layers: the records, then the configuration's layers.
pub(crate) fn put_sources(
    repo: &Repository,
    sources: &Sources,
    shards: &StoredShards,
    put: &mut dyn FnMut(&[u8]) -> Result<Descriptor, RepoError>,
) -> Result<Vec<OciDescriptor>, RepoError> {
    let have = |d: &OciDescriptor| repo.has_blob(&d.blob());
    let mut layers = Vec::new();
    for layer in crate::sources::encode(sources, shards, &have)? {
        layers.push(match layer {
            RecordLayer::New(bytes, media_type) => OciDescriptor::new(media_type, put(&bytes)?),
            RecordLayer::Stored(d) => d,
        });
    }
    layers.extend(config_layer_list(&sources.config_layers));
    Ok(layers)
}

/// A JSON document as a layer of media type `base`: one zstd frame (`base+zstd`), or the JSON
/// itself when zstd does not make it smaller (a tiny document). The source records and a
/// pushed snapshot record are stored so.
pub(crate) fn document_layer(
    repo: &Repository,
    value: &impl serde::Serialize,
    base: &str,
) -> Result<(Vec<u8>, String), RepoError> {
    let json = serde_json::to_vec(value).expect("a document serialises");
    let z = compress(&json, None, 3).map_err(RepoError::io(repo.root()))?;
    Ok(if z.len() < json.len() {
        (z, Encoding::Zstd.media_type(base))
    } else {
        (json, base.to_owned())
    })
}

/// The configuration's layers, once each, ascending, as the snapshot manifest lists them (so
/// prune keeps them).
pub(crate) fn config_layer_list(config_layers: &BTreeMap<Digest, LayerRef>) -> Vec<OciDescriptor> {
    let mut seen = BTreeMap::new();
    for r in config_layers.values() {
        seen.insert(
            r.layer,
            OciDescriptor::new(
                r.encoding.media_type(asp_format::bundle::oci::NATIVE_LAYER),
                Descriptor {
                    digest: r.layer,
                    size: r.size,
                },
            ),
        );
    }
    seen.into_values().collect()
}

fn put_counted(
    repo: &Repository,
    bytes: &[u8],
    outcome: &mut BackupOutcome,
) -> Result<Descriptor, RepoError> {
    let (d, put) = repo.put_document(bytes)?;
    match put {
        Put::Kept => {}
        Put::Stored => {
            outcome.blobs_added += 1;
            outcome.bytes_added += d.size;
        }
        Put::Mended => {
            outcome.blobs_added += 1;
            outcome.bytes_added += d.size;
            outcome.mended.push(d.digest.to_string());
        }
    }
    Ok(d)
}

/// How content manifests are written: as `asp-pack` writes them by default (zstd layers and
/// documents, no creation time), so a snapshot's content manifest is the image manifest of
/// the bundle `asp-pack` makes from the same state.
pub fn content_options() -> Options2 {
    Options2 {
        created: None,
        generator: Some(format!("asp {}", env!("CARGO_PKG_VERSION"))),
        zip: asp_format::bundle::ZipMethod::Stored,
        zstd_documents: true,
        max_document: Some(crate::snapshot::MAX_DOCUMENT),
    }
}

/// The state a snapshot holds, with the sessions gone from the source left out or kept.
pub fn live_state(snapshot: &Snapshot, with_gone: bool) -> State {
    let mut state = snapshot.state.clone();
    if !with_gone && let Some(s) = &mut state.sessions {
        s.retain(|s| !snapshot.is_gone(s.id.as_str()));
    }
    state
}

/// The kinds besides sessions that differ between `before` and `after` (both normalised).
fn kinds_changed(before: &State, after: &State) -> Vec<String> {
    let mut out = Vec::new();
    let mut differs = |kind: &str, same: bool| {
        if !same {
            out.push(kind.to_owned());
        }
    };
    differs("instructions", before.instructions == after.instructions);
    differs("skills", before.skills == after.skills);
    differs("tools", before.tools == after.tools);
    differs("memory", before.memory == after.memory);
    differs("settings", before.settings == after.settings);
    out
}

/// The configuration files new, changed (by content or mode) or gone between `before` and
/// `after`, sorted.
fn config_changed(before: Option<&Native>, after: Option<&Native>) -> Vec<String> {
    let files = |n: Option<&Native>| -> BTreeMap<String, FileEntry> {
        n.into_iter()
            .flat_map(|n| &n.files)
            .map(|f| (f.path.to_string(), f.clone()))
            .collect()
    };
    let (before, after) = (files(before), files(after));
    let mut out: Vec<String> = after
        .iter()
        .filter(|(path, f)| before.get(*path) != Some(*f))
        .map(|(path, _)| path.clone())
        .chain(before.keys().filter(|p| !after.contains_key(*p)).cloned())
        .collect();
    out.sort();
    out
}
