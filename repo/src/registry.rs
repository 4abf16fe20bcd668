//! A snapshot to and from an OCI registry: `asp push [--repo DIR] [SNAPSHOT|latest] REF` and
//! `asp pull REF --repo DIR`.
//!
//! What travels is the snapshot's content manifest and its blobs: the image manifest a bundle
//! of the same state holds, so `asp pull -o FILE` of what a repository pushed gives the bundle
//! `asp pack --from-repo` writes, and the other way round. The snapshot manifest stays home:
//! it holds this machine's home path, host name and every source file's path, mtime, inode and
//! device, which mean nothing on another machine and have no business in a shared registry
//! (`spec/registry.md` §9 has the whole reasoning).
//!
//! A pull into a repository is checked as a bundle is before anything joins the repository:
//! the generic pull has verified every blob's size and digest in a staging directory beside
//! it; here the state manifest and layer table are read from those staged blobs and every
//! body is decoded and compared with its digest. Only then are the blobs renamed in, and a
//! new snapshot (home `registry:<host>/<repository>`, no source records) written as a backup
//! writes one. The repository's lock is held shared from before the first blob is looked at
//! until the index names the snapshot, so a prune never removes a blob the pull counted on.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::Mutex;

use asp_convert::kit::time;
use asp_format::blob::BlobSource;
use asp_format::bundle::Manifest;
use asp_format::bundle::oci::{
    ARTIFACT_TYPE, ImageManifest as ContentManifest, LayerTable, STATE_LAYER, TABLE_LAYER,
};
use asp_format::digest::{Descriptor, Digest, VerifyingReader};
use asp_registry::layout::Layout;
use asp_registry::manifest::{Artifact, Limits, OciDescriptor};
use asp_registry::pull::{PullSink, Staged};
use asp_registry::{Error, PushSource, Reference};

use crate::backup::{BackupOutcome, host_name, write_snapshot_of};
use crate::blobs::SnapshotBlobs;
use crate::error::RepoError;
use crate::from_bundle::harness_of;
use crate::repository::{Lock, RawBlobs, Repository};
use crate::snapshot::{Snapshot, SnapshotInfo, Sources, read_document};

/// A snapshot's content manifest and blobs, ready to push. Holds the repository's lock shared
/// while it lives, so a prune cannot remove a blob the push is about to send.
#[derive(Debug)]
pub struct SnapshotSource {
    layout: Layout,
    manifest: Vec<u8>,
    info: SnapshotInfo,
    _lock: Lock,
}

impl SnapshotSource {
    /// The snapshot `id` names (a unique hex prefix, or `latest`: the newest of all).
    pub fn open(repo: &Repository, id: &str) -> Result<Self, RepoError> {
        let lock = repo.lock_shared()?;
        let info = if id == "latest" {
            repo.snapshots()?.pop().ok_or_else(|| {
                RepoError::Usage(format!(
                    "{} holds no snapshot (`asp backup` makes one)",
                    repo.root().display()
                ))
            })?
        } else {
            repo.find(id)?
        };
        // Reads and checks the snapshot's documents: a damaged one is not pushed.
        let snapshot = Snapshot::load_for_reading(repo, &info)?;
        let manifest = repo.read_blob(&snapshot.content, Limits::default().max_manifest_bytes)?;
        Ok(SnapshotSource {
            layout: repo.layout().clone(),
            manifest,
            info,
            _lock: lock,
        })
    }

    pub fn info(&self) -> &SnapshotInfo {
        &self.info
    }
}

impl PushSource for SnapshotSource {
    fn manifest(&self) -> &[u8] {
        &self.manifest
    }

    fn blobs(&self) -> &dyn BlobSource {
        &self.layout
    }
}

/// What a pull into a repository made.
#[derive(Debug, Clone, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Pulled {
    /// The new snapshot; `None` when the newest snapshot of the same registry repository and
    /// harness already holds this content.
    pub snapshot: Option<SnapshotInfo>,
    pub harness: String,
    pub home: String,
    pub blobs_added: usize,
    pub bytes_added: u64,
}

/// A repository as the destination of a pull.
#[derive(Debug)]
pub struct RepoSink {
    repo: Repository,
    host: Option<String>,
    pulled: Mutex<Option<Pulled>>,
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
            _lock: lock,
        })
    }

    /// What the commit made; `None` before a commit.
    pub fn pulled(&self) -> Option<Pulled> {
        self.pulled.lock().expect("not poisoned").clone()
    }

    fn commit_checked(
        &self,
        artifact: &Artifact,
        reference: &Reference,
        staged: &Staged,
    ) -> Result<Pulled, RepoError> {
        let repo = &self.repo;
        let overlay = Overlay {
            repo,
            staged: staged.files(),
        };
        let state = check_content(&overlay, artifact, reference)?;
        let harness = harness_of(&state.state);
        let home = format!(
            "registry:{}/{}",
            reference.registry(),
            reference.repository()
        );
        let parent = repo.latest(&harness, &home)?;
        let mut pulled = Pulled {
            harness: harness.clone(),
            home: home.clone(),
            ..Pulled::default()
        };
        if parent
            .as_ref()
            .is_some_and(|p| p.content == artifact.digest())
        {
            return Ok(pulled);
        }
        // Everything checked: the staged blobs join the repository (same file system, each
        // file already synced), then the manifests that name them.
        for b in artifact.blobs() {
            let Some(path) = staged.files().get(&b.digest) else {
                continue;
            };
            if repo.has_blob(&b.blob()) {
                continue;
            }
            let dest = repo.blob_path(&b.digest);
            fs::rename(path, &dest).map_err(RepoError::io(&dest))?;
            pulled.blobs_added += 1;
            pulled.bytes_added += b.size;
        }
        repo.sync_blobs();
        let content = Descriptor::of(artifact.bytes());
        if !repo.has_blob(&content) {
            repo.put_bytes(artifact.bytes())?;
            pulled.blobs_added += 1;
            pulled.bytes_added += content.size;
        }
        let now = time::now();
        let sources = Sources {
            started_ns: now,
            ..Sources::default()
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
            gone: 0,
        };
        let mut outcome = BackupOutcome::default();
        pulled.snapshot = Some(write_snapshot_of(
            repo,
            content,
            &sources,
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

    fn commit(
        &self,
        artifact: &Artifact,
        reference: &Reference,
        staged: &Staged,
    ) -> Result<(), Error> {
        let pulled = self
            .commit_checked(artifact, reference, staged)
            .map_err(registry_error)?;
        *self.pulled.lock().expect("not poisoned") = Some(pulled);
        Ok(())
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
    let [state_layer, table_layer, ..] = content.layers.as_slice() else {
        return Err(bad("the manifest has fewer than two layers".to_owned()));
    };
    let as_registry = |d: &asp_format::bundle::oci::OciDescriptor| {
        OciDescriptor::new(d.media_type.clone(), d.descriptor())
    };
    let state: Manifest = serde_json::from_slice(&read_document(
        blobs,
        &as_registry(state_layer),
        STATE_LAYER,
    )?)
    .map_err(|e| bad(format!("the state manifest is not valid: {e}")))?;
    if state.schema_version != 1 {
        return Err(bad(format!(
            "state manifest schemaVersion {} is not 1",
            state.schema_version
        )));
    }
    let table: LayerTable = serde_json::from_slice(&read_document(
        blobs,
        &as_registry(table_layer),
        TABLE_LAYER,
    )?)
    .map_err(|e| bad(format!("the layer table is not valid: {e}")))?;
    let listed: BTreeSet<Digest> = content.layers.iter().map(|l| l.digest).collect();
    for (body, r) in &table.blobs {
        if !listed.contains(&r.layer) {
            return Err(bad(format!(
                "body {body} is stored in layer {}, which the manifest does not list",
                r.layer
            )));
        }
    }
    let bodies = SnapshotBlobs::new(blobs, &table.blobs);
    let mut seen = BTreeSet::new();
    for d in state.state.descriptors() {
        if !seen.insert(d.digest) {
            continue;
        }
        if !table.blobs.contains_key(&d.digest) {
            return Err(bad(format!(
                "body {} has no entry in the layer table",
                d.digest
            )));
        }
        let mut r = bodies
            .open(&d)
            .map_err(|e| bad(format!("body {}: {e}", d.digest)))?;
        io::copy(&mut r, &mut io::sink()).map_err(|e| bad(format!("body {}: {e}", d.digest)))?;
    }
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
