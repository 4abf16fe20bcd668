//! Reading a snapshot's bodies: each body's layer looked up in the snapshot's layer table,
//! decoded (against its dictionary body when it has one) and checked against the body's
//! digest, as a bundle reads them.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::Arc;

use asp_format::blob::{BlobError, BlobSource};
use asp_format::bundle::decode_layer;
use asp_format::bundle::oci::{Encoding, LayerRef};
use asp_format::bundle::recent::Recent;
use asp_format::bundle::windows::Base;
use asp_format::digest::{Descriptor, Digest, VerifyingReader};

use crate::error::RepoError;
use crate::repository::{RawBlobs, Repository};

/// The bodies of one snapshot (or of any layer table) in a repository.
#[derive(Debug)]
pub struct SnapshotBlobs<'a> {
    repo: &'a dyn RawBlobs,
    table: &'a BTreeMap<Digest, LayerRef>,
    /// The last dictionaries read: the sessions of a restore mostly need each transcript
    /// once, and the transcripts of a project their project's dictionary (layout 4).
    dictionary: Recent,
}

impl<'a> SnapshotBlobs<'a> {
    pub fn new(repo: &'a dyn RawBlobs, table: &'a BTreeMap<Digest, LayerRef>) -> Self {
        SnapshotBlobs {
            repo,
            table,
            dictionary: Recent::new(2),
        }
    }

    /// Dictionary `d`, decoded against its own when it has one (`Recent::chained`).
    fn dictionary(&self, d: &Digest) -> Result<Arc<Vec<u8>>, BlobError> {
        let entry = |d: &Digest| self.table.get(d).ok_or(BlobError::Missing(*d));
        self.dictionary.chained(
            d,
            &|d| Ok(entry(d)?.dictionary),
            &|d, base| read_dictionary(self.repo, d, entry(d)?, base),
            &integrity,
        )
    }

    fn decoded(
        &self,
        r: &LayerRef,
        dict: Option<Base<'_>>,
        size: u64,
    ) -> Result<Box<dyn Read + Send>, BlobError> {
        decoded(self.repo, r, dict, size)
    }
}

/// The largest window a layer may use (`asp_format::bundle::layers::MAX_WINDOW_LOG`): it
/// bounds a dictionary body, whose size no table records.
pub(crate) const DICTIONARY_LIMIT: u64 = 1 << 27;

/// The body stored in layer `r`, decoded (against `dict`) as it is read, at most `size` bytes.
pub(crate) fn decoded(
    repo: &dyn RawBlobs,
    r: &LayerRef,
    dict: Option<Base<'_>>,
    size: u64,
) -> Result<Box<dyn Read + Send>, BlobError> {
    let raw = repo
        .open_raw(&Descriptor {
            digest: r.layer,
            size: r.size,
        })
        .map_err(|e| match e {
            RepoError::Io { path, source } => BlobError::Io { path, source },
            other => integrity(other.to_string()),
        })?;
    decode_layer(raw, r.encoding, dict, size).map_err(BlobError::Other)
}

/// Dictionary body `d`, stored in layer `r` (against `base`, the bytes of its own dictionary
/// when it has one), whole and checked against its digest and, when the table gives it
/// (layout 4), its size.
pub(crate) fn read_dictionary(
    repo: &dyn RawBlobs,
    d: &Digest,
    r: &LayerRef,
    base: Option<&[u8]>,
) -> Result<Vec<u8>, BlobError> {
    if r.encoding == Encoding::ZstdWindows {
        // A dictionary is read whole by its size; a windowed body's size is only in the state
        // (aspstate.md §4.2).
        return Err(integrity(format!(
            "the dictionary body {d} is stored in windows (zstd-windows), which a dictionary \
             must not be"
        )));
    }
    let limit = r
        .body_size
        .unwrap_or(DICTIONARY_LIMIT)
        .min(DICTIONARY_LIMIT);
    let mut out = Vec::new();
    decoded(repo, r, base.map(Base::Borrowed), limit)?
        .take(limit + 1)
        .read_to_end(&mut out)
        .map_err(BlobError::Other)?;
    if out.len() as u64 > DICTIONARY_LIMIT {
        return Err(integrity(format!(
            "the dictionary body {d} is larger than a layer's largest window"
        )));
    }
    if let Some(size) = r.body_size
        && out.len() as u64 != size
    {
        return Err(integrity(format!(
            "the dictionary body {d} holds {} bytes, not the {size} its table entry says",
            out.len()
        )));
    }
    if Digest::of(&out) != *d {
        return Err(integrity(format!("the dictionary body {d} is damaged")));
    }
    Ok(out)
}

fn integrity(m: String) -> BlobError {
    BlobError::Other(asp_format::digest::IntegrityError(m).into_io())
}

impl BlobSource for SnapshotBlobs<'_> {
    fn open(&self, blob: &Descriptor) -> Result<Box<dyn Read + Send + '_>, BlobError> {
        let r = self
            .table
            .get(&blob.digest)
            .ok_or(BlobError::Missing(blob.digest))?;
        let dict = match r.dictionary {
            Some(d) => Some(self.dictionary(&d)?),
            None => None,
        };
        let inner = self.decoded(r, dict.map(Base::Shared), blob.size)?;
        Ok(Box::new(VerifyingReader::new(
            inner.take(blob.size.saturating_add(1)),
            *blob,
        )))
    }
}

/// A snapshot's layers as a bundle writer takes them (`asp pack --from-repo`): copied as
/// stored, so the bundle holds the repository's bytes.
#[derive(Debug)]
pub struct RepoLayers<'a> {
    pub repo: &'a Repository,
    pub table: &'a BTreeMap<Digest, LayerRef>,
}

impl asp_format::bundle::LayerSource for RepoLayers<'_> {
    fn layer_ref(&self, body: &Digest) -> Option<LayerRef> {
        self.table.get(body).copied()
    }

    fn copy_layer(&self, body: &Digest, out: &mut dyn std::io::Write) -> std::io::Result<u64> {
        let r = self
            .table
            .get(body)
            .ok_or_else(|| std::io::Error::other(format!("no layer for {body}")))?;
        // A layer missing or of the wrong size is the repository's data not matching what its
        // snapshot promised: an integrity error, whatever carries it.
        let mut raw = self
            .repo
            .open_raw(&Descriptor {
                digest: r.layer,
                size: r.size,
            })
            .map_err(|e| match e {
                RepoError::Integrity(m) => asp_format::digest::IntegrityError(m).into_io(),
                other => std::io::Error::other(other),
            })?;
        std::io::copy(&mut raw, out)
    }
}
