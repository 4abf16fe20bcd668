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
//!    (`POST` for a session, `PUT <location>?digest=` with the bytes, read through the
//!    source's verifying reader with the last bytes held back until it has checked the
//!    digest (`HeldTail`), so a damaged local blob is never sent whole). A refused mount
//!    (the registry cannot, or the token does not cover the source) falls back to an upload.
//! 4. The manifest goes last, so a registry never names a blob it lacks; an interrupted push
//!    leaves blobs that the next run finds by `HEAD` and skips.

use std::io::{self, Read};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use asp_format::blob::{BlobError, BlobSource};
use asp_format::digest::{Digest, IntegrityError, is_integrity_error};
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
    let local = Mutex::new(None);
    let sent = client.finish_upload(&session, repository, blob, &mut || {
        let mut r = blobs
            .open(&blob.blob())
            .map_err(|e| local_blob_error(&blob.digest, e))?;
        if blob.size == 0 {
            // No bytes to hold back, and a client sends an empty body without reading: the
            // source's check (an empty file whose digest is not the empty one) runs here.
            io::copy(&mut r, &mut io::sink()).map_err(|e| local_read_error(&blob.digest, e))?;
        }
        Ok(Box::new(Counting {
            inner: HeldTail::new(r, blob.blob(), &local),
            observer,
        }))
    });
    // The local reader failing is what ended the request, whatever the transport made of it.
    if let Some(e) = local.lock().expect("not poisoned").take() {
        return Err(local_read_error(&blob.digest, e));
    }
    sent?;
    Ok(Outcome::Uploaded)
}

/// A blob's bytes on their way into its upload (one `PUT` with `Content-Length`), the bytes
/// that complete it held back until the source has checked them.
///
/// A [`BlobSource`] reader hashes what it reads and fails at its end when the digest or size
/// differs (the trait's contract; a `VerifyingReader` for files and zip entries); but an HTTP client sending a body of known length stops
/// reading at that length and never reaches the end, where the check is, so a damaged blob
/// went out whole and only the registry's `DIGEST_INVALID` caught it. This reader moves the
/// check before the last bytes: the read that would bring the count to the declared size
/// first reads the source to its end (running its check, and finding any byte too many), and
/// hands those bytes over only if that passed. A damaged blob fails the request body short of
/// its length; the connection is dropped with the upload incomplete, and the registry commits
/// nothing (distribution commits a blob only at a closing `PUT` whose body arrived whole and
/// hashed to the digest).
///
/// Why this and not the alternatives:
/// - **Reading every blob twice** (hash, then send) is a second pass over the disk for every
///   blob uploaded (on a cold cache, a big blob's read time twice), and the file can still
///   change between the check and the send.
/// - **A chunked upload** (`PATCH` each chunk while hashing, the closing `PUT` only if the
///   hash matched, else `DELETE` the session) costs a request per chunk; registries differ in
///   the chunk sizes they take (`OCI-Chunk-Min-Length`, minimums of several MiB), and the
///   damaged bytes would still reach the registry whole, in a session left to expire.
///
/// So: one read, one hash (the source's own), one request, and at most one buffer of the
/// blob in memory. What failed is kept in `failed`, so the push reports the local file and not
/// what the HTTP client made of a body that stopped.
pub(crate) struct HeldTail<'a, R> {
    inner: R,
    blob: asp_format::digest::Descriptor,
    /// Bytes of the blob not handed over yet.
    left: u64,
    failed: &'a Mutex<Option<io::Error>>,
}

impl<'a, R: Read> HeldTail<'a, R> {
    pub(crate) fn new(
        inner: R,
        blob: asp_format::digest::Descriptor,
        failed: &'a Mutex<Option<io::Error>>,
    ) -> Self {
        HeldTail {
            inner,
            blob,
            left: blob.size,
            failed,
        }
    }

    /// Reads the source to its end, where it checks size and digest.
    fn check_end(&mut self) -> io::Result<()> {
        let mut probe = [0u8; 1];
        loop {
            match self.inner.read(&mut probe) {
                Ok(0) => return Ok(()),
                Ok(_) => {
                    return Err(IntegrityError(format!(
                        "blob {} is longer than its declared {} bytes",
                        self.blob.digest, self.blob.size
                    ))
                    .into_io());
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }

    /// Keeps `e` for the push and gives the HTTP client an error of the same kind and text.
    fn fail(&self, e: io::Error) -> io::Error {
        let told = io::Error::new(e.kind(), e.to_string());
        *self.failed.lock().expect("not poisoned") = Some(e);
        told
    }
}

impl<R: Read> Read for HeldTail<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.left == 0 || buf.is_empty() {
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(self.left).unwrap_or(usize::MAX));
        let n = loop {
            match self.inner.read(&mut buf[..want]) {
                Ok(0) => {
                    let e = IntegrityError(format!(
                        "blob {} ended {} bytes short of its declared {}",
                        self.blob.digest, self.left, self.blob.size
                    ))
                    .into_io();
                    return Err(self.fail(e));
                }
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.fail(e)),
            }
        };
        self.left -= n as u64;
        if self.left == 0
            && let Err(e) = self.check_end()
        {
            // These bytes would complete a blob that is not what its digest says: they stay.
            return Err(self.fail(e));
        }
        Ok(n)
    }
}

/// A local blob that failed while it was being sent: damaged (an integrity failure of the
/// local copy) or unreadable.
fn local_read_error(digest: &Digest, e: io::Error) -> Error {
    if is_integrity_error(&e) {
        return Error::LocalBlob {
            digest: *digest,
            detail: e.to_string(),
            remedy: None,
        };
    }
    Error::read(format!("blob {digest}"), e)
}

/// A local blob that cannot be read: missing, the wrong size or damaged is an integrity
/// failure of the local copy; anything else is a read error.
fn local_blob_error(digest: &Digest, e: BlobError) -> Error {
    use asp_format::error::{Classify, ErrorClass};
    if e.class() == ErrorClass::Integrity {
        return Error::LocalBlob {
            digest: *digest,
            detail: e.to_string(),
            remedy: None,
        };
    }
    match e {
        BlobError::Io { path, source } => Error::read(path, source),
        other => Error::read(
            format!("blob {digest}"),
            std::io::Error::other(other.to_string()),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::digest::{Descriptor, VerifyingReader};

    /// Reads `r` in chunks of `chunk` as an HTTP client sending a body of known length does:
    /// up to that length, never to the end. What it got, and the error that stopped it.
    fn send(r: &mut dyn Read, len: u64, chunk: usize) -> (Vec<u8>, Option<io::Error>) {
        let mut got = Vec::new();
        let mut buf = vec![0u8; chunk];
        while (got.len() as u64) < len {
            match r.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
                Err(e) => return (got, Some(e)),
            }
        }
        (got, None)
    }

    #[test]
    fn a_blob_that_matches_goes_out_whole() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
        let d = Descriptor::of(&data);
        for chunk in [1, 999, 4096, 10_000, 65_536] {
            let failed = Mutex::new(None);
            let mut r = HeldTail::new(VerifyingReader::new(&data[..], d), d, &failed);
            let (got, e) = send(&mut r, d.size, chunk);
            assert!(e.is_none(), "{chunk}: {e:?}");
            assert_eq!(got, data, "{chunk}");
            assert!(failed.lock().unwrap().is_none());
        }
    }

    #[test]
    fn a_damaged_blob_never_goes_out_whole() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 7) as u8).collect();
        let d = Descriptor::of(&data);
        let mut flipped = data.clone();
        flipped[9_999] ^= 1;
        let longer = [&data[..], b"!"].concat();
        let shorter = &data[..9_000];
        for (what, bytes) in [
            ("flipped", &flipped[..]),
            ("longer", &longer[..]),
            ("shorter", shorter),
        ] {
            for chunk in [1, 999, 4096, 10_000, 65_536] {
                let failed = Mutex::new(None);
                let mut r = HeldTail::new(VerifyingReader::new(bytes, d), d, &failed);
                let (got, e) = send(&mut r, d.size, chunk);
                assert!(e.is_some(), "{what} {chunk}");
                assert!((got.len() as u64) < d.size, "{what} {chunk}: sent whole");
                let kept = failed.lock().unwrap().take().expect("the failure is kept");
                assert!(is_integrity_error(&kept), "{what} {chunk}: {kept}");
            }
        }
    }
}
