//! Pulling an artifact: everything from the registry is hostile input.
//!
//! 1. `GET` the manifest, refusing more than 4 MiB by `Content-Length` and while reading;
//!    its sha256 must equal the digest asked for (or the `Docker-Content-Digest` the registry
//!    sent for a tag).
//! 2. It must be an OCI image manifest with asp's `artifactType` ("not an asp state
//!    artifact" otherwise), with well-formed descriptors, within the bundle reader's limits.
//!    A snapshot record ([`crate::manifest::RECORD_ARTIFACT_TYPE`]) is followed to its
//!    `subject`, fetched by digest and held to the record's digest and size, which must be
//!    state; the record's blobs are fetched too when the sink keeps records (a repository).
//! 3. Each blob the sink does not have is fetched into a staging directory on the sink's file
//!    system: the announced `Content-Length` is compared with the descriptor's size before a
//!    byte is read, at most `size + 1` bytes are read, and the sha256 is compared at the end.
//! 4. Only when every blob verified does the sink commit (move the staged files in, then
//!    name the manifest). Any failure before that leaves the destination as it was: the
//!    staging directory is removed.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use asp_format::digest::{Descriptor, Digest, VerifyingReader, is_integrity_error};
use serde::Serialize;

use crate::client::Client;
use crate::error::Error;
use crate::manifest::{
    Artifact, DOCKER_MANIFEST, DOCKER_MANIFEST_LIST, IMAGE_INDEX, Limits, OciDescriptor,
};
use crate::parallel;
use crate::reference::Reference;
use crate::transfer::{Counting, Observer, Outcome};

/// Where pulled artifacts go.
pub trait PullSink: Sync {
    /// Whether `blob` is already stored; it is then not downloaded.
    fn contains(&self, blob: &Descriptor) -> Result<bool, Error>;
    /// A directory on the destination's file system to stage blobs in (a temporary
    /// directory is made inside it and removed afterwards).
    fn staging_parent(&self) -> Result<PathBuf, Error>;
    /// Whether the sink keeps a snapshot record's blobs (a repository does: the harness's
    /// configuration and the gone marks); others take only the state the record is about.
    fn wants_record(&self) -> bool {
        false
    }
    /// Takes the verified artifact: every blob the sink did not have is in `staged`. `record`
    /// is the snapshot record REF named, when it named one and the sink wants it; its blobs
    /// are staged too.
    fn commit(
        &self,
        artifact: &Artifact,
        record: Option<&Artifact>,
        reference: &Reference,
        staged: &Staged,
    ) -> Result<(), Error>;
}

/// Blobs downloaded and verified, waiting for the commit.
#[derive(Debug)]
pub struct Staged {
    dir: tempfile::TempDir,
    files: BTreeMap<Digest, PathBuf>,
}

impl Staged {
    /// The staged blobs, by digest.
    pub fn files(&self) -> &BTreeMap<Digest, PathBuf> {
        &self.files
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

/// How to pull.
#[derive(Debug, Clone)]
pub struct PullOptions {
    /// Blobs fetched at once.
    pub jobs: usize,
    pub limits: Limits,
}

impl Default for PullOptions {
    fn default() -> Self {
        PullOptions {
            jobs: 4,
            limits: Limits::default(),
        }
    }
}

/// What a pull did.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PullReport {
    pub reference: String,
    /// The state artifact's digest (when REF names a snapshot record, the record's subject).
    pub digest: Digest,
    /// The snapshot record REF named, if it named one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<Digest>,
    pub manifest_bytes: u64,
    pub blobs: u64,
    pub blobs_downloaded: u64,
    pub blobs_present: u64,
    pub bytes_downloaded: u64,
    pub bytes_present: u64,
    /// Blobs a pull cut short had fetched and staged, taken from its leftover staging
    /// directory (checked again) rather than fetched again.
    pub blobs_resumed: u64,
    pub bytes_resumed: u64,
}

/// Pulls `reference` into `sink`.
pub fn pull(
    client: &Client,
    reference: &Reference,
    sink: &dyn PullSink,
    opts: &PullOptions,
    observer: &dyn Observer,
) -> Result<PullReport, Error> {
    let source = reference.to_string();
    let first = fetch_manifest(client, reference, &source, opts)?;
    // A snapshot record: the state is its subject, fetched by digest and held to the digest
    // and size the record names.
    let (artifact, record) = match first.subject().cloned() {
        None => (first, None),
        Some(subject) => {
            let at = reference.with_digest(subject.digest);
            let shown = format!("{at} (the subject of {source})");
            // A record whose state was deleted from the registry since (by digest, or by a
            // clean-up of untagged manifests) is named as such, with what puts it back.
            let state = fetch_manifest(client, &at, &shown, opts).map_err(|e| match e {
                Error::NotFound { .. } => Error::NotFound {
                    reference: source.clone(),
                    what: format!(
                        "the state its snapshot record names ({}; deleted since the push, or \
                         never pushed whole: pushing the snapshot again from the machine that \
                         backed it up, `asp push SNAPSHOT REF`, puts it back)",
                        subject.digest
                    ),
                },
                e => e,
            })?;
            if state.bytes().len() as u64 != subject.size {
                return Err(Error::Integrity(format!(
                    "{shown} has {} bytes, but the record says {}",
                    state.bytes().len(),
                    subject.size
                )));
            }
            if state.is_record() {
                return Err(Error::Integrity(format!(
                    "{shown} is a snapshot record too; a record's subject must be state"
                )));
            }
            (state, Some(first))
        }
    };
    let keep_record = record.as_ref().filter(|_| sink.wants_record());

    // The state's blobs, then the record's that the state does not name.
    let mut blobs: Vec<OciDescriptor> = artifact.blobs().to_vec();
    if let Some(r) = keep_record {
        let named: std::collections::BTreeSet<Digest> = blobs.iter().map(|b| b.digest).collect();
        blobs.extend(
            r.blobs()
                .iter()
                .filter(|b| !named.contains(&b.digest))
                .cloned(),
        );
    }
    let total: u64 = blobs.iter().map(|b| b.size).sum();
    if total > opts.limits.max_total_bytes || blobs.len() as u64 > opts.limits.max_blobs {
        return Err(Error::Integrity(format!(
            "{source}: the state and its record name {} blobs of {total} bytes, over the limits",
            blobs.len()
        )));
    }
    let blobs = blobs.as_slice();
    observer.plan(blobs.len() as u64, total);
    let parent = sink.staging_parent()?;
    let dir = tempfile::Builder::new()
        .prefix(".asp-pull-")
        .tempdir_in(&parent)
        .map_err(|e| Error::write(&parent, e))?;
    let staging = dir.path().to_path_buf();

    let outcomes = parallel::map(blobs, opts.jobs, |blob| {
        if sink.contains(&blob.blob())? {
            observer.bytes(blob.size);
            observer.blob(blob, Outcome::Present);
            return Ok(None);
        }
        if let Some(path) = staged_before(&parent, &staging, blob) {
            observer.bytes(blob.size);
            observer.blob(blob, Outcome::Present);
            return Ok(Some((blob.digest, path, true)));
        }
        let path = fetch_blob(client, reference.repository(), blob, &staging, observer)?;
        observer.blob(blob, Outcome::Downloaded);
        Ok(Some((blob.digest, path, false)))
    })?;

    let mut report = PullReport {
        reference: source,
        digest: artifact.digest(),
        record: record.as_ref().map(Artifact::digest),
        manifest_bytes: (artifact.bytes().len() + record.as_ref().map_or(0, |r| r.bytes().len()))
            as u64,
        blobs: blobs.len() as u64,
        blobs_downloaded: 0,
        blobs_present: 0,
        bytes_downloaded: 0,
        bytes_present: 0,
        blobs_resumed: 0,
        bytes_resumed: 0,
    };
    let mut files = BTreeMap::new();
    for (blob, got) in blobs.iter().zip(outcomes) {
        match got {
            Some((digest, path, resumed)) => {
                if resumed {
                    report.blobs_resumed += 1;
                    report.bytes_resumed += blob.size;
                } else {
                    report.blobs_downloaded += 1;
                    report.bytes_downloaded += blob.size;
                }
                files.insert(digest, path);
            }
            None => {
                report.blobs_present += 1;
                report.bytes_present += blob.size;
            }
        }
    }
    let staged = Staged { dir, files };
    observer.committing();
    sink.commit(&artifact, keep_record, reference, &staged)?;
    Ok(report)
}

/// Fetches and checks the manifest `reference` names: within the size limit, the digest asked
/// for and announced, and asp's (state or a snapshot record).
fn fetch_manifest(
    client: &Client,
    reference: &Reference,
    source: &str,
    opts: &PullOptions,
) -> Result<Artifact, Error> {
    let fetched = client.get_manifest(reference, &opts.limits)?;
    let actual = Digest::of(&fetched.bytes);
    if let Some(wanted) = reference.digest()
        && *wanted != actual
    {
        return Err(Error::Integrity(format!(
            "{} sent a manifest for {source} whose sha256 is {actual}",
            client.registry()
        )));
    }
    if let Some(said) = fetched.digest_header
        && said != actual
    {
        return Err(Error::Integrity(format!(
            "{} announced manifest {said} for {source} but sent bytes whose sha256 is {actual}",
            client.registry()
        )));
    }
    if let Some(ct) = fetched.content_type.as_deref() {
        let what = match ct {
            IMAGE_INDEX | DOCKER_MANIFEST_LIST => {
                Some("an image index (a multi-platform container image)")
            }
            DOCKER_MANIFEST => Some("a docker container image"),
            _ => None,
        };
        if let Some(what) = what {
            return Err(Error::NotOurs {
                reference: source.to_owned(),
                what: what.to_owned(),
            });
        }
    }
    Artifact::parse(fetched.bytes, source, &opts.limits)
}

/// A blob an earlier pull into the same place fetched and staged before it was stopped (a
/// `.asp-pull-*` folder of `parent` holding a file named by the blob's digest), linked into
/// `staging` and checked again, whole, against its digest: a pull cut short and started
/// again fetches only what it had not (a killed 35 MB pull started from nothing: new-user
/// trial helper-136, 6). A link, not a move, so a pull still running there keeps its file.
fn staged_before(parent: &Path, staging: &Path, blob: &OciDescriptor) -> Option<PathBuf> {
    let name = blob.digest.hex();
    for entry in std::fs::read_dir(parent).ok()?.flatten() {
        let dir = entry.path();
        let ours = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with(".asp-pull-"));
        if !ours || dir == staging {
            continue;
        }
        let there = dir.join(&name);
        let whole = std::fs::symlink_metadata(&there)
            .is_ok_and(|m| m.file_type().is_file() && m.len() == blob.size);
        let here = staging.join(&name);
        if !whole || std::fs::hard_link(&there, &here).is_err() {
            continue;
        }
        let checked = File::open(&here).is_ok_and(|f| {
            let mut r = VerifyingReader::new(f, blob.blob());
            io::copy(&mut r, &mut io::sink()).is_ok()
        });
        if checked {
            return Some(here);
        }
        let _ = std::fs::remove_file(&here);
    }
    None
}

/// Downloads one blob into `staging`, checking size before and digest after; the file is
/// named by its digest only once it verified.
fn fetch_blob(
    client: &Client,
    repository: &str,
    blob: &OciDescriptor,
    staging: &Path,
    observer: &dyn Observer,
) -> Result<PathBuf, Error> {
    let (body, announced) = client.get_blob(repository, blob)?;
    if let Some(n) = announced
        && n != blob.size
    {
        return Err(Error::Integrity(format!(
            "{} announced {n} bytes for blob {}, which the manifest says has {}",
            client.registry(),
            blob.digest,
            blob.size
        )));
    }
    let partial = staging.join(format!("partial-{}", blob.digest.hex()));
    let file = File::create(&partial).map_err(|e| Error::write(&partial, e))?;
    let mut out = BufWriter::with_capacity(256 << 10, file);
    let mut reader = VerifyingReader::new(
        Counting {
            inner: body,
            observer,
        },
        blob.blob(),
    );
    let mut buf = vec![0u8; 128 << 10];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) if is_integrity_error(&e) => {
                return Err(Error::Integrity(format!("from {}: {e}", client.registry())));
            }
            Err(e) => {
                return Err(Error::Transport {
                    registry: client.registry().to_owned(),
                    what: format!("GET blob {}", blob.digest),
                    detail: client.scrubber().scrub(&e.to_string()),
                });
            }
        };
        out.write_all(&buf[..n])
            .map_err(|e| Error::write(&partial, e))?;
    }
    let file = out
        .into_inner()
        .map_err(|e| Error::write(&partial, e.into_error()))?;
    file.sync_all().map_err(|e| Error::write(&partial, e))?;
    drop(file);
    let done = staging.join(blob.digest.hex());
    std::fs::rename(&partial, &done).map_err(|e| Error::write(&done, e))?;
    Ok(done)
}
