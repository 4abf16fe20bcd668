//! Pushing an artifact thinly: only what the registry lacks travels.
//!
//! 1. The manifest must be ours and well-formed ([`Artifact::parse`]), and every blob it
//!    names must open locally with its size (so nothing is half-pushed for want of a file).
//! 2. For each distinct blob (config included: distribution 2.8 refuses a manifest whose
//!    config blob it does not hold, even the two-byte empty one): `HEAD`; present → skipped;
//!    a server error (5xx) → uploaded, as a missing one (a registry killed mid-push can
//!    answer 500 for a blob it half-recorded).
//! 3. A missing blob is mounted from another repository of the same registry when one is
//!    known (`POST …/uploads/?mount=<digest>&from=<repo>`; 201 = done), else uploaded
//!    (`POST` for a session, `PUT <location>?digest=` with the bytes, read through a
//!    verifying reader so a damaged local blob is never sent). A refused mount (the registry
//!    cannot, or the token does not cover the source) falls back to an upload.
//! 4. The manifest goes last, so a registry never names a blob it lacks; an interrupted push
//!    leaves blobs that the next run finds by `HEAD` and skips.

use std::sync::atomic::{AtomicBool, Ordering};

use asp_format::blob::{BlobError, BlobSource};
use asp_format::digest::Digest;
use serde::Serialize;

use crate::client::{Client, Upload};
use crate::error::Error;
use crate::manifest::{Artifact, IMAGE_MANIFEST, Limits, OciDescriptor};
use crate::parallel;
use crate::reference::Reference;
use crate::transfer::{Counting, Observer, Outcome};

/// How to push.
#[derive(Debug, Clone)]
pub struct PushOptions {
    /// Blobs checked and sent at once.
    pub jobs: usize,
    /// Repositories of the same registry to mount missing blobs from, most likely first (only
    /// the first that is not the target is tried).
    pub mount_from: Vec<String>,
    pub limits: Limits,
}

impl Default for PushOptions {
    fn default() -> Self {
        PushOptions {
            jobs: 4,
            mount_from: Vec::new(),
            limits: Limits::default(),
        }
    }
}

/// What a push did.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct PushReport {
    pub reference: String,
    /// The state artifact's digest.
    pub digest: Digest,
    /// The snapshot record pushed after the state and named by the tag, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record: Option<Digest>,
    pub manifest_bytes: u64,
    pub blobs: u64,
    pub blobs_uploaded: u64,
    pub blobs_mounted: u64,
    pub blobs_present: u64,
    /// Blob bytes sent (the manifest is counted in `manifest_bytes`).
    pub bytes_uploaded: u64,
    pub bytes_mounted: u64,
    pub bytes_present: u64,
    /// The repository blobs were mounted from, if any was tried.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mounted_from: Option<String>,
    /// The manifest the tag named before this push, when it named another: the tag now names
    /// what was pushed, and the one before stays pullable by its digest until the registry
    /// collects what no tag names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced: Option<Digest>,
}

/// Pushes the manifest `manifest` (exact bytes) and the blobs it names, read from `blobs`, to
/// `reference`.
pub fn push(
    client: &Client,
    reference: &Reference,
    manifest: &[u8],
    blobs: &dyn BlobSource,
    opts: &PushOptions,
    observer: &dyn Observer,
) -> Result<PushReport, Error> {
    let artifact = Artifact::parse(manifest.to_vec(), "the manifest to push", &opts.limits)?;
    if let Some(d) = reference.digest()
        && *d != artifact.digest()
    {
        return Err(Error::Usage(format!(
            "{reference} names digest {d}, but the manifest's is {}",
            artifact.digest()
        )));
    }
    let list = artifact.blobs();
    for b in list {
        // Opening checks presence and size; the bytes are checked as they are sent.
        blobs
            .open(&b.blob())
            .map_err(|e| local_blob_error(&b.digest, e))?;
    }
    let repository = reference.repository();
    let mount_from = opts
        .mount_from
        .iter()
        .find(|r| r.as_str() != repository)
        .cloned();
    let mount_ok = AtomicBool::new(mount_from.is_some());
    observer.plan(list.len() as u64, artifact.total_bytes());

    let outcomes = parallel::map(list, opts.jobs, |blob| {
        let outcome = push_blob(
            client,
            repository,
            blob,
            blobs,
            mount_from.as_deref(),
            &mount_ok,
            observer,
        )?;
        observer.blob(blob, outcome);
        Ok(outcome)
    })?;

    let replaced = tagged_before(client, reference, &opts.limits)
        .filter(|before| *before != artifact.digest());
    let said = client.put_manifest(reference, artifact.bytes(), IMAGE_MANIFEST)?;
    if let Some(d) = said
        && d != artifact.digest()
    {
        return Err(Error::Integrity(format!(
            "{} stored the manifest as {d}, not {}",
            client.registry(),
            artifact.digest()
        )));
    }

    let mut report = PushReport {
        reference: reference.to_string(),
        digest: artifact.digest(),
        record: None,
        manifest_bytes: artifact.bytes().len() as u64,
        blobs: list.len() as u64,
        blobs_uploaded: 0,
        blobs_mounted: 0,
        blobs_present: 0,
        bytes_uploaded: 0,
        bytes_mounted: 0,
        bytes_present: 0,
        mounted_from: mount_from,
        replaced,
    };
    for (b, o) in list.iter().zip(outcomes) {
        match o {
            Outcome::Uploaded => {
                report.blobs_uploaded += 1;
                report.bytes_uploaded += b.size;
            }
            Outcome::Mounted => {
                report.blobs_mounted += 1;
                report.bytes_mounted += b.size;
            }
            Outcome::Present | Outcome::Downloaded => {
                report.blobs_present += 1;
                report.bytes_present += b.size;
            }
        }
    }
    if report.blobs_mounted == 0 {
        report.mounted_from = None;
    }
    Ok(report)
}

/// The digest of the manifest `reference`'s tag names now, if it has a tag and names one. Only
/// said, so a registry that will not answer (no pull access, a transient error) is the same as
/// none: the push goes on.
fn tagged_before(client: &Client, reference: &Reference, limits: &Limits) -> Option<Digest> {
    if reference.digest().is_some() {
        return None;
    }
    reference.tag()?;
    let m = client.get_manifest(reference, limits).ok()?;
    Some(Digest::of(&m.bytes))
}

fn push_blob(
    client: &Client,
    repository: &str,
    blob: &OciDescriptor,
    blobs: &dyn BlobSource,
    mount_from: Option<&str>,
    mount_ok: &AtomicBool,
    observer: &dyn Observer,
) -> Result<Outcome, Error> {
    let known = match client.blob_size(repository, blob, true) {
        // A registry killed in the middle of a push can keep a blob it then fails to answer
        // for (distribution's filesystem driver writes its link files in place, and answers
        // 500 for an empty one): sending the blob again repairs it, and an upload to a
        // registry that is really broken fails on its own.
        Err(Error::Registry { status, .. }) if status >= 500 => None,
        other => other?,
    };
    match known {
        Some(n) if n == blob.size => {
            observer.bytes(blob.size);
            return Ok(Outcome::Present);
        }
        Some(n) => {
            return Err(Error::Registry {
                registry: client.registry().to_owned(),
                request: format!("HEAD blob {}", blob.digest),
                status: 200,
                detail: format!(
                    "the registry holds it with {n} bytes, but it has {}",
                    blob.size
                ),
            });
        }
        None => {}
    }
    let mut session = None;
    if let Some(from) = mount_from
        && mount_ok.load(Ordering::SeqCst)
    {
        match client.start_upload(repository, Some((&blob.digest, from))) {
            Ok(Upload::Mounted) => {
                observer.bytes(blob.size);
                return Ok(Outcome::Mounted);
            }
            Ok(Upload::Session(s)) => session = Some(s),
            // No access to the source, or a registry that cannot mount: upload instead, and
            // stop trying for the rest of this push.
            Err(Error::Denied { .. } | Error::AuthRequired { .. } | Error::Registry { .. }) => {
                mount_ok.store(false, Ordering::SeqCst);
            }
            Err(e) => return Err(e),
        }
    }
    let session = match session {
        Some(s) => s,
        None => match client.start_upload(repository, None)? {
            Upload::Session(s) => s,
            Upload::Mounted => unreachable!("an upload without mount is never mounted"),
        },
    };
    client.finish_upload(&session, repository, blob, &mut || {
        let r = blobs
            .open(&blob.blob())
            .map_err(|e| local_blob_error(&blob.digest, e))?;
        Ok(Box::new(Counting { inner: r, observer }))
    })?;
    Ok(Outcome::Uploaded)
}

/// A local blob that cannot be read: missing, the wrong size or damaged is an integrity
/// failure of the local copy; anything else is a read error.
fn local_blob_error(digest: &Digest, e: BlobError) -> Error {
    use asp_format::error::{Classify, ErrorClass};
    if e.class() == ErrorClass::Integrity {
        return Error::Integrity(format!("the local copy of blob {digest}: {e}"));
    }
    match e {
        BlobError::Io { path, source } => Error::read(path, source),
        other => Error::read(
            format!("blob {digest}"),
            std::io::Error::other(other.to_string()),
        ),
    }
}
