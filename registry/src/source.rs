//! What a push reads: one manifest's exact bytes and the blobs it names.
//!
//! Every place asp keeps state is an OCI image layout in some form, so every push source is
//! the same two things: an image layout directory ([`LayoutSource`]), a bundle zip
//! ([`crate::bundle::BundleFile`]), a snapshot of the repository
//! (`asp_repo::registry::SnapshotSource`, in the crate above this one). Adding a source is
//! implementing this trait; [`push_from`] does the rest.

use asp_format::blob::BlobSource;

use crate::client::Client;
use crate::error::Error;
use crate::layout::Layout;
use crate::manifest::{Artifact, Limits, OciDescriptor};
use crate::push::{PushOptions, PushReport, push};
use crate::reference::Reference;
use crate::transfer::Observer;

/// A manifest and its blobs, ready to push.
pub trait PushSource {
    /// The manifest's exact bytes (never re-serialised: their sha256 is the artifact's
    /// identity).
    fn manifest(&self) -> &[u8];
    /// Where the manifest's blobs are read from, by the digest of their stored bytes.
    fn blobs(&self) -> &dyn BlobSource;
    /// A snapshot record about this manifest (its `subject`), pushed after it and named by
    /// the tag instead of it: a repository's snapshot has one (`spec/registry.md` §9).
    fn record(&self) -> Option<&dyn PushSource> {
        None
    }
}

/// Pushes `source` to `reference`. With a record, the state goes first, by digest (untagged),
/// then the record to `reference`: the registry never holds a record whose subject it lacks,
/// and the report adds both pushes up (`digest` stays the state's, `record` is the record's).
/// A reference that names a digest is refused up front then: the record needs a tag.
pub fn push_from(
    client: &Client,
    reference: &Reference,
    source: &dyn PushSource,
    opts: &PushOptions,
    observer: &dyn Observer,
) -> Result<PushReport, Error> {
    let Some(record) = source.record() else {
        return push(
            client,
            reference,
            source.manifest(),
            source.blobs(),
            opts,
            observer,
        );
    };
    // The record is what the reference will name, so it needs a tag; checked before anything
    // is uploaded (the state would be pushed, then the record refused).
    if let Some(d) = reference.digest() {
        return Err(Error::Usage(format!(
            "{reference} names digest {d}, but a snapshot is pushed as two manifests, the state \
             (by its digest) and then its record, which needs a tag to be found by: name a tag \
             instead, e.g. {}/{}:laptop",
            reference.registry(),
            reference.repository()
        )));
    }
    // One plan for both pushes, so a progress bar counts to the end once.
    let mut blobs = 0;
    let mut bytes = 0;
    for m in [source.manifest(), record.manifest()] {
        let a = Artifact::parse(m.to_vec(), "the manifest to push", &opts.limits)?;
        blobs += a.blobs().len() as u64;
        bytes += a.total_bytes();
    }
    observer.plan(blobs, bytes);
    let observer = Planned(observer);
    let state_at = reference.with_digest(asp_format::digest::Digest::of(source.manifest()));
    let mut report = push(
        client,
        &state_at,
        source.manifest(),
        source.blobs(),
        opts,
        &observer,
    )?;
    let r = push(
        client,
        reference,
        record.manifest(),
        record.blobs(),
        opts,
        &observer,
    )?;
    report.reference = r.reference;
    report.record = Some(r.digest);
    report.manifest_bytes += r.manifest_bytes;
    report.blobs += r.blobs;
    report.blobs_uploaded += r.blobs_uploaded;
    report.blobs_mounted += r.blobs_mounted;
    report.blobs_present += r.blobs_present;
    report.bytes_uploaded += r.bytes_uploaded;
    report.bytes_mounted += r.bytes_mounted;
    report.bytes_present += r.bytes_present;
    report.mounted_from = report.mounted_from.or(r.mounted_from);
    report.replaced = r.replaced;
    Ok(report)
}

/// An observer whose plan is already made: passes on everything but `plan`.
struct Planned<'a>(&'a dyn Observer);

impl Observer for Planned<'_> {
    fn bytes(&self, n: u64) {
        self.0.bytes(n);
    }

    fn blob(&self, blob: &OciDescriptor, outcome: crate::transfer::Outcome) {
        self.0.blob(blob, outcome);
    }

    fn committing(&self) {
        self.0.committing();
    }
}

/// One manifest of an OCI image layout directory.
#[derive(Debug)]
pub struct LayoutSource {
    layout: Layout,
    manifest: Vec<u8>,
    names: Vec<String>,
}

impl LayoutSource {
    /// The manifest of `layout` chosen by `selector` (a name or digest), else the one named
    /// `tag_hint`, else the only one (however many names the index gives it); see
    /// [`Layout::select`].
    pub fn select(
        layout: Layout,
        selector: Option<&str>,
        tag_hint: Option<&str>,
    ) -> Result<Self, Error> {
        let d: OciDescriptor = layout.select(selector, tag_hint)?;
        let manifest = layout.read_manifest(&d, &Limits::default())?;
        let names = layout.names_of(&d.digest)?;
        Ok(LayoutSource {
            layout,
            manifest,
            names,
        })
    }

    /// The names the layout's index gives the chosen manifest (`org.opencontainers.image.ref.name`).
    pub fn names(&self) -> &[String] {
        &self.names
    }
}

impl PushSource for LayoutSource {
    fn manifest(&self) -> &[u8] {
        &self.manifest
    }

    fn blobs(&self) -> &dyn BlobSource {
        &self.layout
    }
}
