//! A snapshot to and from an OCI registry: `asp push [--repo DIR] [SNAPSHOT|latest] REF` and
//! `asp pull REF --repo DIR`.
//!
//! What travels is two artifacts. The state: the snapshot's content manifest and its blobs,
//! the image manifest a bundle of the same state holds, so `asp pull -o FILE` of what a
//! repository pushed gives the bundle `asp pack --from-repo` writes, and the other way round.
//! And the snapshot record, whose `subject` is the state and which the tag names: the
//! harness, the sessions gone from the source and the harness's own configuration files, so
//! that a restore from the pulled snapshot writes what a restore from the original does. The
//! snapshot manifest itself stays home: it holds this machine's home path, host name and every
//! source file's path, mtime, inode and device, which mean nothing on another machine and have
//! no business in a shared registry (`spec/registry.md` §9 has the whole reasoning).
//!
//! A pull into a repository is checked as a bundle is before anything joins the repository:
//! the generic pull has verified every blob's size and digest in a staging directory beside
//! it; here the state manifest and layer table are read from those staged blobs and every
//! body is decoded and compared with its digest, and so is the record and every configuration
//! file it names. Only then are the blobs renamed in, and a new snapshot (home
//! `registry:<host>/<repository>:<tag>`; source records without entries, holding the record's gone
//! marks and configuration) written as a backup writes one. The repository's lock is held
//! shared from before the first blob is looked at until the index names the snapshot, so a
//! prune never removes a blob the pull counted on.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use asp_convert::kit::time;
use asp_format::blob::BlobSource;
use asp_format::bundle::Manifest;
use asp_format::bundle::oci::{ARTIFACT_TYPE, ImageManifest as ContentManifest, LayerRef};
use asp_format::digest::{Descriptor, Digest, VerifyingReader};
use asp_format::error::{Classify, ErrorClass};
use asp_format::name::HarnessName;
use asp_registry::layout::Layout;
use asp_registry::manifest::{
    Artifact, IMAGE_MANIFEST, ImageManifest, Limits, OciDescriptor, RECORD_ARTIFACT_TYPE,
    RECORD_LAYER,
};
use asp_registry::pull::{PullSink, Staged};
use asp_registry::{Error, PushSource, Reference};

use crate::backup::{
    BackupOutcome, config_layer_list, document_layer, host_name, write_snapshot_of,
};
use crate::blobs::SnapshotBlobs;
use crate::error::RepoError;
use crate::from_bundle::{harness_of, sole_harness};
use crate::repository::{Lock, RawBlobs, Repository};
use crate::snapshot::{
    GONE_ANNOTATION, HARNESS_ANNOTATION, PULLED_HOME_PREFIX, Record, SESSIONS_ANNOTATION, Snapshot,
    SnapshotInfo, Sources, read_document,
};

/// A snapshot's content manifest and blobs, ready to push, with its record. Holds the
/// repository's lock shared while it lives, so a prune cannot remove a blob the push is about
/// to send.
#[derive(Debug)]
pub struct SnapshotSource {
    layout: Layout,
    manifest: Vec<u8>,
    info: SnapshotInfo,
    record: RecordSource,
    /// The literal credentials its state holds (`asp_convert::kit::secrets::credentials_of`).
    credentials: Vec<String>,
    _lock: Lock,
}

impl SnapshotSource {
    /// The snapshot `id` names (a unique hex prefix, or `latest`: the newest this machine
    /// backed up).
    ///
    /// `latest` passes over pulled snapshots: a machine pushes its own state to its own tag,
    /// and the newest snapshot after a pull is the other machine's (its time is the pull's),
    /// which `asp backup && asp push latest REF:laptop` would have put under this one's tag.
    /// A repository that holds only pulled ones has no `latest` to push: one is pushed by id.
    pub fn open(repo: &Repository, id: &str) -> Result<Self, RepoError> {
        // Only read: a repository that cannot be written here is pushed from all the same.
        let lock = repo.lock_to_read()?;
        let info = if id == "latest" {
            let mut all = repo.snapshots()?;
            match all.iter().rposition(|s| !s.is_pulled()) {
                Some(i) => all.swap_remove(i),
                None if all.is_empty() => {
                    return Err(RepoError::Usage(format!(
                        "{} holds no snapshot (`asp backup` makes one)",
                        repo.root().display()
                    )));
                }
                None => {
                    return Err(RepoError::Usage(format!(
                        "{} holds only snapshots pulled from a registry (another machine's \
                         state), so there is no `latest` of this machine to push: back it up \
                         first (`asp backup`), or push a pulled one by its id (`asp snapshots` \
                         lists them)",
                        repo.root().display()
                    )));
                }
            }
        } else {
            repo.find(id)?
        };
        let snapshot = match pushable(repo, &info) {
            Err(e) if id == "latest" && e.class() == ErrorClass::Integrity => {
                let said = match e {
                    RepoError::Integrity(said) | RepoError::IndexDiffers(said) => said,
                    e => e.to_string(),
                };
                return Err(RepoError::Integrity(latest_damaged(repo, &info, said)?));
            }
            loaded => loaded?,
        };
        let manifest = repo.read_blob(&snapshot.content, Limits::default().max_manifest_bytes)?;
        let record = RecordSource::of(repo, &snapshot)?;
        let credentials = credentials_sent(repo, &snapshot);
        Ok(SnapshotSource {
            layout: repo.layout().clone(),
            manifest,
            info,
            record,
            credentials,
            _lock: lock,
        })
    }

    pub fn info(&self) -> &SnapshotInfo {
        &self.info
    }

    /// The credentials its state holds written out, by server and name.
    pub fn credentials(&self) -> &[String] {
        &self.credentials
    }
}

/// The snapshot `info` names, read and checked as a push needs it: its documents (a damaged
/// one is not pushed), and its source records (its record would not carry the configuration
/// files and gone sessions they hold).
fn pushable(repo: &Repository, info: &SnapshotInfo) -> Result<Snapshot, RepoError> {
    let snapshot = Snapshot::load_for_reading(repo, info)?;
    if let Some(problem) = &snapshot.sources_damage {
        return Err(RepoError::Integrity(format!(
            "snapshot {} cannot be pushed: {problem}; `asp check` names the damage",
            info.short_id()
        )));
    }
    Ok(snapshot)
}

/// What stops `asp push latest` when the newest snapshot cannot be pushed ([`pushable`]): its damage, and the
/// newest of its series that can be, to push by its id. Not pushed in its place, as `asp
/// restore` and `asp pack --from-repo` pass over it: the tag may already name the damaged one
/// (pushed before the damage), and would go back to an older state.
fn latest_damaged(
    repo: &Repository,
    newest: &SnapshotInfo,
    said: String,
) -> Result<String, RepoError> {
    let (readable, _) = Snapshot::newest_readable(
        repo,
        &repo.snapshots()?,
        &newest.harness,
        &newest.home,
        pushable,
    )?;
    Ok(match readable {
        Some(s) => format!(
            "{said}. The newest snapshot of {} in {} that can be pushed is {} ({}): `asp push {} \
             REF` pushes it (not done in place of `latest`: the tag could go back to an older \
             state than it names now)",
            newest.harness,
            newest.home,
            s.info.short_id(),
            s.info.created,
            s.info.short_id()
        ),
        None => format!(
            "{said}. No snapshot of {} in {} can be pushed",
            newest.harness, newest.home
        ),
    })
}

/// The credentials written out in full that a push of `snapshot` sends: its state's MCP
/// servers', then those its configuration files hold, each named once (what reads a file's
/// is its harness's, `Harness::credentials_reader`: JSON files, Codex's `config.toml`; a body
/// that cannot be read is left to `asp check`: the push itself refuses it).
fn credentials_sent(repo: &Repository, snapshot: &Snapshot) -> Vec<String> {
    use asp_convert::kit::secrets::{credentials_of, json_credentials_reader};
    let mut found = credentials_of(snapshot.state.tools.as_deref().unwrap_or_default());
    let Some(config) = &snapshot.sources.config else {
        return found;
    };
    let harness = asp_convert::harness(snapshot.info.harness.as_str());
    let blobs = crate::blobs::SnapshotBlobs::new(repo, &snapshot.sources.config_layers);
    for f in &config.files {
        let rel = f.path.as_str();
        let reader = match &harness {
            Some(h) => h.credentials_reader(rel),
            None => json_credentials_reader(rel),
        };
        let Some(read) = reader else { continue };
        if let Ok(bytes) = asp_format::blob::BlobSource::read_all(&blobs, &f.content) {
            for c in read(&bytes).named(rel) {
                if !found.contains(&c) {
                    found.push(c);
                }
            }
        }
    }
    found
}

impl PushSource for SnapshotSource {
    fn manifest(&self) -> &[u8] {
        &self.manifest
    }

    fn blobs(&self) -> &dyn BlobSource {
        &self.layout
    }

    fn record(&self) -> Option<&dyn PushSource> {
        Some(&self.record)
    }
}

/// A snapshot record (`spec/registry.md` §9): an image manifest of type
/// [`RECORD_ARTIFACT_TYPE`] whose subject is the content manifest, whose first layer is the
/// [`Record`] and whose other layers are the configuration files' layers, as the repository
/// stores them. Its bytes depend only on the snapshot, so pushing one snapshot twice gives
/// one digest.
#[derive(Debug)]
struct RecordSource {
    manifest: Vec<u8>,
    blobs: RecordBlobs,
}

impl RecordSource {
    fn of(repo: &Repository, snapshot: &Snapshot) -> Result<Self, RepoError> {
        let record = Record::of(snapshot);
        let (layer, media_type) = document_layer(repo, &record, RECORD_LAYER)?;
        let layer_desc = Descriptor::of(&layer);
        let mut subject = OciDescriptor::new(IMAGE_MANIFEST, snapshot.content);
        subject.artifact_type = Some(ARTIFACT_TYPE.to_owned());
        let info = &snapshot.info;
        let mut annotations = BTreeMap::from([
            (HARNESS_ANNOTATION.to_owned(), record.harness.clone()),
            (SESSIONS_ANNOTATION.to_owned(), info.sessions.to_string()),
            (GONE_ANNOTATION.to_owned(), info.gone.to_string()),
        ]);
        // When the backup was made: what `oras` and registries' web pages show. A pulled
        // snapshot pushed again says its record's time, not the pull's.
        annotations.insert(
            asp_format::bundle::oci::CREATED_ANNOTATION.to_owned(),
            info.backed_up().to_owned(),
        );
        let manifest = ImageManifest {
            schema_version: 2,
            media_type: Some(IMAGE_MANIFEST.to_owned()),
            artifact_type: Some(RECORD_ARTIFACT_TYPE.to_owned()),
            config: OciDescriptor::empty(),
            layers: std::iter::once(OciDescriptor::new(media_type, layer_desc))
                .chain(config_layer_list(&record.config_layers))
                .collect(),
            subject: Some(subject),
            annotations,
        };
        Ok(RecordSource {
            manifest: manifest.to_bytes(),
            blobs: RecordBlobs {
                layout: repo.layout().clone(),
                record: (layer_desc, layer),
            },
        })
    }
}

impl PushSource for RecordSource {
    fn manifest(&self) -> &[u8] {
        &self.manifest
    }

    fn blobs(&self) -> &dyn BlobSource {
        &self.blobs
    }
}

/// The record layer, made in memory, over the repository's blobs.
#[derive(Debug)]
struct RecordBlobs {
    layout: Layout,
    record: (Descriptor, Vec<u8>),
}

impl BlobSource for RecordBlobs {
    fn open(
        &self,
        blob: &Descriptor,
    ) -> Result<Box<dyn Read + Send + '_>, asp_format::blob::BlobError> {
        if *blob == self.record.0 {
            return Ok(Box::new(io::Cursor::new(&self.record.1[..])));
        }
        self.layout.open(blob)
    }
}

/// What a pull into a repository made.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pulled {
    /// The new snapshot; `None` when the newest snapshot of the same registry repository and
    /// harness already holds this content.
    pub snapshot: Option<SnapshotInfo>,
    /// The snapshot that holds this content already, when no new one was made.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub already_in: Option<SnapshotInfo>,
    /// The newest snapshot of the series pulls of this registry repository went into before
    /// series were kept per tag (`registry:<host>/<repository>`), when this pull began the
    /// tag's own series.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub earlier_series: Option<SnapshotInfo>,
    pub harness: String,
    pub home: String,
    /// When the backup was made, as its snapshot record says (`org.opencontainers.image.created`);
    /// the new snapshot's own time is the pull's.
    pub backed_up: Option<String>,
    pub blobs_added: usize,
    pub bytes_added: u64,
}

/// A repository as the destination of a pull.
#[derive(Debug)]
pub struct RepoSink {
    repo: Repository,
    host: Option<String>,
    pulled: Mutex<Option<Pulled>>,
    /// Whether [`RepoSink::create`] made the repository (see [`RepoSink::discard`]).
    created: bool,
    _lock: Lock,
}

impl RepoSink {
    /// Takes the repository's lock shared until the sink is dropped. `host` names the
    /// snapshot's host (default: this machine's name).
    pub fn new(repo: Repository, host: Option<String>) -> Result<Self, RepoError> {
        let lock = repo.lock_shared()?;
        Ok(RepoSink {
            repo,
            host,
            pulled: Mutex::new(None),
            created: false,
            _lock: lock,
        })
    }

    /// The repository at `root`, created when it is missing (or an empty directory); what is
    /// created here is remembered, so that [`RepoSink::discard`] can take it away again if the
    /// pull fails: a failed first pull leaves no repository behind, only its lock files.
    /// `opened` sets how the repository waits for its lock, which the sink takes at once
    /// ([`Repository::with_wait_notice`], [`Repository::with_lock_wait`]).
    pub fn create(
        root: &Path,
        host: Option<String>,
        opened: impl FnOnce(Repository) -> Repository,
    ) -> Result<Self, RepoError> {
        if Repository::is_at(root) {
            // (Not another tool's image layout: `open_or_init` refuses one.)
            return RepoSink::new(opened(Repository::open_or_init(root)?), host);
        }
        let repo = opened(Repository::open_or_init(root)?);
        let mut sink = RepoSink::new(repo, host)?;
        sink.created = true;
        Ok(sink)
    }

    /// After a failed pull: when this sink created the repository and it still holds nothing
    /// (no snapshot, no blob), its files are removed, `oci-layout` last (while it is there the
    /// directory is a repository, complete or not), under the exclusive lock taken without
    /// waiting. The lock files under `locks/` stay: another process may have one open, and a
    /// lock file unlinked under it would let two processes hold "the" lock at once; so the
    /// directory stays too, holding only them, and a later pull or backup makes the repository
    /// there again. Anything else found there stays. What was kept, and why, is returned for
    /// the user when that is more than the lock files (another process holds the repository).
    pub fn discard(self) -> Option<String> {
        let RepoSink {
            repo,
            created,
            _lock,
            ..
        } = self;
        drop(_lock);
        if !created {
            return None;
        }
        let root = repo.root().to_path_buf();
        let kept = |why: &str| Some(format!("{} was kept: {why}", root.display()));
        let _exclusive = match repo.try_lock_exclusive() {
            Ok(Some(l)) => l,
            Ok(None) => return kept("another asp process is using it"),
            Err(e) => return kept(&e.to_string()),
        };
        let blobs = repo.blobs_dir();
        let empty = |d: &Path| fs::read_dir(d).is_ok_and(|mut r| r.next().is_none());
        if !repo.snapshots().is_ok_and(|s| s.is_empty()) || !empty(&blobs) {
            return None;
        }
        let _ = fs::remove_file(root.join("index.json"));
        for d in [blobs.as_path(), &root.join("blobs")] {
            let _ = fs::remove_dir(d);
        }
        let _ = fs::remove_file(root.join("oci-layout"));
        None
    }

    /// What the commit made; `None` before a commit.
    pub fn pulled(&self) -> Option<Pulled> {
        self.pulled.lock().expect("not poisoned").clone()
    }

    fn commit_checked(
        &self,
        artifact: &Artifact,
        record: Option<&Artifact>,
        reference: &Reference,
        staged: &Staged,
    ) -> Result<Pulled, RepoError> {
        let repo = &self.repo;
        let overlay = Overlay {
            repo,
            staged: staged.files(),
        };
        let state = check_content(&overlay, artifact, reference)?;
        // Only a time is taken: the annotation is the registry's text.
        let backed_up = record.and_then(|r| {
            r.manifest()
                .annotations
                .get(asp_format::bundle::oci::CREATED_ANNOTATION)
                .filter(|t| time::parse(t).is_some())
                .cloned()
        });
        let record = record
            .map(|r| check_record(&overlay, r, &state, reference))
            .transpose()?;
        let harness = match &record {
            Some(r) => r.harness.clone(),
            None => harness_of(&state.state),
        };
        let (gone, config, config_layers) = match record {
            Some(r) => (r.gone, r.config, r.config_layers),
            None => Default::default(),
        };
        // One series per tag, as each machine pushes to a tag of its own: pulls of `:laptop`
        // and `:desktop` are two series, each with its newest snapshot (and so its sessions),
        // and pulling the same tag again continues its series. A pull by digest is a series of
        // its own; the digest decides what is fetched, so it names the series when a REF
        // gives both (a pinned older digest is not the newest of the tag's series).
        let repository = format!(
            "{PULLED_HOME_PREFIX}{}/{}",
            reference.registry(),
            reference.repository()
        );
        let home = match (reference.digest(), reference.tag()) {
            (Some(d), _) => format!("{repository}@sha256:{}", &d.hex()[..12]),
            (None, Some(tag)) => format!("{repository}:{tag}"),
            (None, None) => repository.clone(),
        };
        // The series' lock, as a backup takes its own: its newest is read as the parent, and
        // a `forget --session` that dropped sessions from it in between is not undone by a
        // snapshot made from the newest before it (review helper-133, 6).
        let _series = repo.lock_series(&harness, &home)?;
        let parent = repo.latest(&harness, &home)?;
        let mut pulled = Pulled {
            harness: harness.clone(),
            home: home.clone(),
            backed_up,
            ..Pulled::default()
        };
        // Nothing new when the series' newest holds this content, gone marks and
        // configuration; pulled by digest, when any snapshot pulled from this repository does
        // (by its tag, most often).
        let snapshots = repo.snapshots()?;
        let candidates: Vec<&SnapshotInfo> = match reference.digest() {
            Some(_) => snapshots
                .iter()
                .rev()
                .filter(|s| {
                    s.harness == harness
                        && s.content == artifact.digest()
                        && (s.home == repository
                            || s.home.starts_with(&format!("{repository}:"))
                            || s.home.starts_with(&format!("{repository}@")))
                })
                .collect(),
            None => parent
                .iter()
                .filter(|p| p.content == artifact.digest())
                .collect(),
        };
        for c in candidates {
            let p = Snapshot::load(repo, c)?;
            if p.sources.gone.keys().eq(gone.keys()) && p.sources.config == config {
                pulled.already_in = Some(p.info);
                return Ok(pulled);
            }
        }
        // A tag's first pull into a repository that holds pulls of the same registry
        // repository from before series were kept per tag (home without the tag): said, so
        // the older series, whose newest no policy forgets, can be let go.
        if parent.is_none() && home != repository {
            pulled.earlier_series = snapshots
                .iter()
                .rev()
                .find(|s| s.harness == harness && s.home == repository)
                .cloned();
        }
        // Everything checked: the staged blobs the state and the configuration name join the
        // repository (same file system, each file already synced), then the manifests that
        // name them. The record's own layer is not kept: its content goes into the new
        // snapshot's source records.
        let wanted: BTreeSet<Digest> = artifact
            .blobs()
            .iter()
            .map(|b| b.digest)
            .chain(config_layers.values().map(|r| r.layer))
            .collect();
        for (digest, path) in staged.files() {
            if !wanted.contains(digest) {
                continue;
            }
            let size = fs::metadata(path).map_err(RepoError::io(path))?.len();
            if repo.has_blob(&Descriptor {
                digest: *digest,
                size,
            }) {
                continue;
            }
            let dest = repo.blob_path(digest);
            fs::rename(path, &dest).map_err(RepoError::io(&dest))?;
            pulled.blobs_added += 1;
            pulled.bytes_added += size;
        }
        repo.sync_blobs()?;
        let content = Descriptor::of(artifact.bytes());
        if !repo.has_blob(&content) {
            repo.put_bytes(artifact.bytes())?;
            pulled.blobs_added += 1;
            pulled.bytes_added += content.size;
        }
        let now = time::now();
        let gone_count = gone.len() as u64;
        let sources = Sources {
            started_ns: now,
            entries: Vec::new(),
            gone,
            config,
            config_layers,
        };
        let info = SnapshotInfo {
            digest: Digest::of(b""),
            size: 0,
            created: time::format_millis(now),
            harness,
            home,
            host: self.host.clone().unwrap_or_else(host_name),
            parent: parent.map(|p| p.digest),
            content: artifact.digest(),
            sessions: state.state.sessions.as_ref().map_or(0, Vec::len) as u64,
            gone: gone_count,
            dropped: Vec::new(),
            backed_up: pulled.backed_up.clone(),
        };
        let mut outcome = BackupOutcome::default();
        pulled.snapshot = Some(write_snapshot_of(
            repo,
            content,
            &sources,
            &crate::sources::StoredShards::default(),
            info,
            &mut outcome,
        )?);
        pulled.blobs_added += outcome.blobs_added;
        pulled.bytes_added += outcome.bytes_added;
        Ok(pulled)
    }
}

impl PullSink for RepoSink {
    fn contains(&self, blob: &Descriptor) -> Result<bool, Error> {
        Ok(self.repo.has_blob(blob))
    }

    fn staging_parent(&self) -> Result<PathBuf, Error> {
        // `.asp-pull-*` at the root: a killed pull's leftovers are what prune removes.
        Ok(self.repo.root().to_path_buf())
    }

    fn wants_record(&self) -> bool {
        true
    }

    fn commit(
        &self,
        artifact: &Artifact,
        record: Option<&Artifact>,
        reference: &Reference,
        staged: &Staged,
    ) -> Result<(), Error> {
        let pulled = self
            .commit_checked(artifact, record, reference, staged)
            .map_err(registry_error)?;
        *self.pulled.lock().expect("not poisoned") = Some(pulled);
        Ok(())
    }
}

/// Reads a pulled snapshot record and checks it against the state it is about: a harness
/// name; gone marks only for sessions of the state, each with a time; the configuration of
/// that harness, every file's body in a layer the record lists, decoded (against its
/// dictionary) to its digest. Nothing of it is trusted before this.
fn check_record(
    blobs: &dyn RawBlobs,
    record: &Artifact,
    state: &Manifest,
    reference: &Reference,
) -> Result<Record, RepoError> {
    let bad = |m: String| RepoError::Integrity(format!("{reference}: the snapshot record: {m}"));
    let first = record
        .manifest()
        .layers
        .first()
        .ok_or_else(|| bad("it has no record layer".to_owned()))?;
    let doc = read_document(blobs, first, RECORD_LAYER).map_err(|e| about_record(e, reference))?;
    let r: Record =
        serde_json::from_slice(&doc).map_err(|e| bad(format!("it is not valid: {e}")))?;
    if r.schema_version != 1 || r.media_type != RECORD_LAYER {
        return Err(bad(format!(
            "schemaVersion {} and mediaType {:?} are not 1 and {RECORD_LAYER}",
            r.schema_version, r.media_type
        )));
    }
    HarnessName::new(&r.harness).map_err(|e| bad(format!("harness {:?}: {e}", r.harness)))?;
    // The snapshot is filed under the record's harness: a state whose sessions are all of one
    // other harness would be filed (and restored) as the wrong one.
    if let Some(of_state) = sole_harness(&state.state)
        && of_state != r.harness
    {
        return Err(bad(format!(
            "it is of harness {}, but the state's sessions are {of_state}'s",
            r.harness
        )));
    }
    let sessions: BTreeSet<&str> = state
        .state
        .sessions
        .iter()
        .flatten()
        .map(|s| s.id.as_str())
        .collect();
    for (id, since) in &r.gone {
        if !sessions.contains(id.as_str()) {
            return Err(bad(format!(
                "session {id} is marked gone but is not in the state"
            )));
        }
        if time::parse(since).is_none() {
            return Err(bad(format!(
                "session {id} is marked gone since {since:?}, which is not an RFC 3339 time"
            )));
        }
    }
    let Some(config) = &r.config else {
        if !r.config_layers.is_empty() {
            return Err(bad(
                "it lists configuration layers but no configuration".to_owned()
            ));
        }
        return Ok(r);
    };
    if config.harness.as_str() != r.harness {
        return Err(bad(format!(
            "its configuration is {}'s, not {}'s",
            config.harness, r.harness
        )));
    }
    check_config_paths(
        config,
        state.state.tools.as_deref().unwrap_or_default(),
        reference,
    )?;
    let listed: BTreeMap<Digest, u64> = record
        .manifest()
        .layers
        .iter()
        .skip(1)
        .map(|l| (l.digest, l.size))
        .collect();
    for (body, l) in &r.config_layers {
        if listed.get(&l.layer) != Some(&l.size) {
            return Err(bad(format!(
                "configuration body {body} is stored in layer {} of {} bytes, which the record \
                 does not list",
                l.layer, l.size
            )));
        }
    }
    check_bodies(
        blobs,
        &r.config_layers,
        config
            .files
            .iter()
            .map(|f| (format!("configuration file {}", f.path), f.content)),
        "has no layer",
        &bad,
    )?;
    Ok(r)
}

/// Reads each of `bodies` (what names it, its descriptor; once each) to its end through the
/// layers `table` puts it in: so each is decoded (against its dictionary) and checked against
/// its digest. One not in `table` is refused as `missing` says; `bad` words the failure.
fn check_bodies(
    blobs: &dyn RawBlobs,
    table: &BTreeMap<Digest, LayerRef>,
    bodies: impl IntoIterator<Item = (String, Descriptor)>,
    missing: &str,
    bad: &dyn Fn(String) -> RepoError,
) -> Result<(), RepoError> {
    let layers = SnapshotBlobs::new(blobs, table);
    let mut seen = BTreeSet::new();
    for (what, d) in bodies {
        if !seen.insert(d.digest) {
            continue;
        }
        if !table.contains_key(&d.digest) {
            return Err(bad(format!("{what} {missing}")));
        }
        let mut r = layers.open(&d).map_err(|e| bad(format!("{what}: {e}")))?;
        io::copy(&mut r, &mut io::sink()).map_err(|e| bad(format!("{what}: {e}")))?;
    }
    Ok(())
}

/// `e`, met reading the snapshot record of `reference`, saying so; of the same class.
fn about_record(e: RepoError, reference: &Reference) -> RepoError {
    use asp_format::error::{Classify, ErrorClass};
    let what = format!("{reference}: the snapshot record");
    match e {
        RepoError::Integrity(m) => RepoError::Integrity(format!("{what}: {m}")),
        RepoError::Usage(m) => RepoError::Usage(format!("{what}: {m}")),
        e if e.class() == ErrorClass::Integrity => RepoError::Integrity(format!("{what}: {e}")),
        RepoError::Io { path, source } => RepoError::Io {
            path,
            source: io::Error::new(source.kind(), format!("{what}: {source}")),
        },
        e => e,
    }
}

/// Most configuration files a record may name: the harnesses keep a handful of files and
/// folders of rules, agents and commands, not an arbitrary tree.
const MAX_CONFIG_FILES: usize = 10_000;

/// Every configuration file a pulled record names must be one its harness keeps: the paths are
/// laid out as empty files in a scratch home and the harness's own
/// [`asp_convert::Harness::config_files`] must pick each one. So a hostile record can make a
/// restore write `.claude/settings.json` or `.claude/rules/x.md` where none is, but never
/// `.ssh/authorized_keys` or `.bashrc`, and never a file whose name says it holds credentials.
/// A file one of the state's MCP servers (`servers`) names, inside the harness's folders, is
/// one too: a backup keeps the script a server runs from there (`kit::server_files`).
fn check_config_paths(
    config: &asp_format::state::Native,
    servers: &[asp_format::state::McpServer],
    reference: &Reference,
) -> Result<(), RepoError> {
    let bad = |m: String| RepoError::Integrity(format!("{reference}: the snapshot record: {m}"));
    if config.files.len() > MAX_CONFIG_FILES {
        return Err(bad(format!(
            "it names {} configuration files, over the limit of {MAX_CONFIG_FILES}",
            config.files.len()
        )));
    }
    // Not damage: a record made by an asp that knows a harness this one does not.
    let harness = asp_convert::harness(config.harness.as_str()).ok_or_else(|| {
        RepoError::Usage(format!(
            "{reference}: the snapshot record: its configuration is of {}, which this asp does \
             not know",
            config.harness
        ))
    })?;
    let scratch = tempfile::Builder::new()
        .prefix("asp-config-paths-")
        .tempdir()
        .map_err(RepoError::io(std::env::temp_dir()))?;
    let parts = harness.config_part_names();
    for f in config
        .files
        .iter()
        .filter(|f| !parts.contains(&f.path.as_str()))
    {
        // A RelPath: relative, no `..`, no empty or `.` component; it stays in the scratch home.
        let path = scratch.path().join(f.path.as_str());
        let made = path
            .parent()
            .map_or(Ok(()), fs::create_dir_all)
            .and_then(|()| File::create(&path).map(drop));
        if let Err(e) = made {
            return Err(bad(format!("configuration file {}: {e}", f.path)));
        }
    }
    let kept: BTreeSet<String> = harness
        .config_files(&asp_convert::Home::at(scratch.path()))
        .keep
        .into_iter()
        .map(|(rel, _)| rel)
        .chain(parts.iter().map(|p| (*p).to_owned()))
        .collect();
    // Screened as the backup screened it (no credentials, a regular file), in the harness's
    // folders.
    let folders = harness.config_folders(&asp_convert::Home::at(scratch.path()));
    let part_files = harness.config_part_files();
    let a_server_runs = |rel: &str| {
        let path = scratch.path().join(rel);
        let mut screened = asp_convert::kit::config::ConfigFiles::default();
        screened.keep_also(scratch.path(), std::slice::from_ref(&path));
        asp_convert::kit::server_files::named_by(servers, rel)
            && asp_convert::kit::server_files::server_file_may_be_kept(rel, &part_files)
            && folders.iter().any(|d| path.starts_with(d))
            && !screened.keep.is_empty()
    };
    match config
        .files
        .iter()
        .find(|f| !kept.contains(f.path.as_str()) && !a_server_runs(f.path.as_str()))
    {
        Some(f) => Err(bad(format!(
            "{} is not a configuration file {} keeps",
            f.path, config.harness
        ))),
        None => Ok(()),
    }
}

/// Reads the pulled content manifest's state and layer table and checks every body: present
/// in the table, its layer listed by the manifest, decoded (against its dictionary) to its
/// digest. Reads staged blobs, and the repository's for those it already held.
fn check_content(
    blobs: &dyn RawBlobs,
    artifact: &Artifact,
    reference: &Reference,
) -> Result<Manifest, RepoError> {
    let bad = |m: String| RepoError::Integrity(format!("{reference}: {m}"));
    let content: ContentManifest = serde_json::from_slice(artifact.bytes())
        .map_err(|e| bad(format!("the manifest is not an asp content manifest: {e}")))?;
    if content.artifact_type != ARTIFACT_TYPE {
        return Err(bad(format!("its artifactType is not {ARTIFACT_TYPE}")));
    }
    let (state, table) = crate::snapshot::read_state(blobs, &content.layers, None, &bad)?;
    let listed: BTreeSet<Digest> = content.layers.iter().map(|l| l.digest).collect();
    for (body, r) in &table.blobs {
        if !listed.contains(&r.layer) {
            return Err(bad(format!(
                "body {body} is stored in layer {}, which the manifest does not list",
                r.layer
            )));
        }
    }
    check_bodies(
        blobs,
        &table.blobs,
        state
            .state
            .descriptors()
            .into_iter()
            .map(|d| (format!("body {}", d.digest), d)),
        "has no entry in the layer table",
        &bad,
    )?;
    Ok(state)
}

/// The staged blobs of a pull over the repository's.
#[derive(Debug)]
struct Overlay<'a> {
    repo: &'a Repository,
    staged: &'a BTreeMap<Digest, PathBuf>,
}

impl RawBlobs for Overlay<'_> {
    fn open_raw(&self, d: &Descriptor) -> Result<Box<dyn Read + Send>, RepoError> {
        let Some(path) = self.staged.get(&d.digest) else {
            return self.repo.open_raw(d);
        };
        let file = File::open(path).map_err(RepoError::io(path))?;
        let len = file.metadata().map_err(RepoError::io(path))?.len();
        if len != d.size {
            return Err(RepoError::Integrity(format!(
                "blob {} has {len} bytes, not {}",
                d.digest, d.size
            )));
        }
        Ok(Box::new(VerifyingReader::new(
            io::BufReader::with_capacity(256 << 10, file),
            *d,
        )))
    }
}

/// A repository failure as the pull reports it, keeping its class.
fn registry_error(e: RepoError) -> Error {
    match e {
        RepoError::Layout(e) => e,
        RepoError::Usage(m) => Error::Usage(m),
        // Its own message: the registry's error says "integrity failure" itself.
        RepoError::Integrity(m) => Error::Integrity(m),
        RepoError::Io { path, source } => Error::Write { path, source },
        other => {
            use asp_format::error::{Classify, ErrorClass};
            match other.class() {
                ErrorClass::Integrity => Error::Integrity(other.to_string()),
                ErrorClass::Usage => Error::Usage(other.to_string()),
                _ => Error::Write {
                    path: PathBuf::new(),
                    source: io::Error::other(other.to_string()),
                },
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::error::{Classify, ErrorClass};
    use asp_format::state::{FileEntry, Native};

    fn native(harness: &str, path: &str) -> Native {
        Native {
            harness: HarnessName::new(harness).unwrap(),
            files: vec![FileEntry {
                path: asp_format::name::RelPath::new(path).unwrap(),
                executable: false,
                content: Descriptor::of(b"x"),
            }],
        }
    }

    /// A failed first pull takes away the repository it made but for its lock files, and the
    /// directory takes a repository again; while another process holds the repository, it is
    /// kept, and said so.
    #[test]
    fn a_discarded_repository_keeps_its_lock_files_and_a_busy_one_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("a/repo");
        RepoSink::create(&root, None, |r| r).unwrap().discard();
        let names = |d: &Path| -> Vec<String> {
            let mut v: Vec<String> = fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            v.sort();
            v
        };
        assert_eq!(names(&root), ["locks"]);
        assert_eq!(names(&root.join("locks")), ["repo"]);
        Repository::open_or_init(&root).unwrap();

        let sink = RepoSink::create(&dir.path().join("b"), None, |r| r).unwrap();
        let other = Repository::open(&dir.path().join("b")).unwrap();
        let held = other.lock_shared().unwrap();
        let said = sink
            .discard()
            .expect("a busy repository is said to be kept");
        assert!(said.contains("another asp process"), "{said}");
        assert!(dir.path().join("b/oci-layout").is_file());
        drop(held);
    }

    /// A harness this asp does not know is not damage (exit 2, not 4); a path the harness does
    /// not keep is.
    #[test]
    fn configuration_paths_are_refused_by_the_right_class() {
        let r = Reference::parse("registry.example/me/state:tag").unwrap();
        let e = check_config_paths(&native("not-a-harness", "x.md"), &[], &r).unwrap_err();
        assert_eq!(e.class(), ErrorClass::Usage, "{e}");
        assert!(e.to_string().contains("not-a-harness"), "{e}");
        let e = check_config_paths(&native("claude-code", ".ssh/authorized_keys"), &[], &r)
            .unwrap_err();
        assert_eq!(e.class(), ErrorClass::Integrity, "{e}");
        check_config_paths(&native("claude-code", ".claude/settings.json"), &[], &r).unwrap();
    }

    /// A script an MCP server of the state runs from the harness's folder is configuration a
    /// backup keeps; the same name outside those folders, a file no server names, or a
    /// credentials file a server names, is not.
    #[test]
    fn a_file_a_server_runs_from_the_harness_folder_is_configuration() {
        use asp_format::state::{McpServer, McpStdio};
        let r = Reference::parse("registry.example/me/state:tag").unwrap();
        let server = |args: &[&str]| {
            vec![McpServer::Stdio(McpStdio {
                name: "issues".to_owned(),
                command: "python3".to_owned(),
                args: args.iter().map(|a| (*a).to_owned()).collect(),
                env: Vec::new(),
                meta: None,
            })]
        };
        let runs = server(&[
            "/home/dev/.claude/mcp/issues.py",
            "--auth=/home/dev/.ssh/id_rsa",
        ]);
        check_config_paths(&native("claude-code", ".claude/mcp/issues.py"), &runs, &r).unwrap();
        for (path, servers) in [
            (".claude/mcp/issues.py", server(&[])),
            (".claude/mcp/other.py", runs.clone()),
            (".ssh/id_rsa", runs.clone()),
            (
                ".claude/.credentials.json",
                server(&["~/.claude/.credentials.json"]),
            ),
            // Kept only in part (it holds the account), and a server's data.
            (".claude.json", server(&["~/.claude.json"])),
            (
                ".claude/mcp/issues.db",
                server(&["~/.claude/mcp/issues.db"]),
            ),
            // Named, but not by a path a home holds (relative to a folder the configuration
            // does not say).
            (".claude/mcp/x.py", server(&["--config=.claude/mcp/x.py"])),
        ] {
            let e = check_config_paths(&native("claude-code", path), &servers, &r).unwrap_err();
            assert_eq!(e.class(), ErrorClass::Integrity, "{path}: {e}");
        }
    }
}
