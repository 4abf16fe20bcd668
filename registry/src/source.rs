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
use crate::manifest::{Limits, OciDescriptor};
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
}

/// Pushes `source` to `reference`.
pub fn push_from(
    client: &Client,
    reference: &Reference,
    source: &dyn PushSource,
    opts: &PushOptions,
    observer: &dyn Observer,
) -> Result<PushReport, Error> {
    push(
        client,
        reference,
        source.manifest(),
        source.blobs(),
        opts,
        observer,
    )
}

/// One manifest of an OCI image layout directory.
#[derive(Debug)]
pub struct LayoutSource {
    layout: Layout,
    manifest: Vec<u8>,
}

impl LayoutSource {
    /// The manifest of `layout` chosen by `selector` (a name or digest), else the one named
    /// `tag_hint`, else the only one; see [`Layout::select`].
    pub fn select(
        layout: Layout,
        selector: Option<&str>,
        tag_hint: Option<&str>,
    ) -> Result<Self, Error> {
        let d: OciDescriptor = layout.select(selector, tag_hint)?;
        let manifest = layout.read_manifest(&d, &Limits::default())?;
        Ok(LayoutSource { layout, manifest })
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
