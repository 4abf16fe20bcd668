//! The OCI side of layout 2: image layout files, the image index, the image manifest and its
//! descriptors, as the OCI image spec 1.1 names them, plus asp's layer table.
//!
//! The types follow the spec's field names and order, so what is written here is exactly what
//! a registry receives when a bundle is pushed as an OCI 1.1 artifact.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::digest::{Descriptor, Digest};

/// `oci-layout`: the file's exact bytes.
pub const OCI_LAYOUT_ENTRY: &str = "oci-layout";
pub const INDEX_ENTRY: &str = "index.json";
pub const OCI_LAYOUT_BYTES: &[u8] = b"{\"imageLayoutVersion\":\"1.0.0\"}";

pub const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
pub const IMAGE_MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The artifact type of an asp snapshot.
pub const ARTIFACT_TYPE: &str = "application/vnd.asp.state.v1";
/// The OCI empty descriptor's media type and content (`{}`).
pub const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
pub const EMPTY_BYTES: &[u8] = b"{}";

/// Media types of asp's layers. A `+zstd` suffix says the layer is zstd-compressed.
pub const STATE_LAYER: &str = "application/vnd.asp.state.manifest.v1+json";
pub const TABLE_LAYER: &str = "application/vnd.asp.layer-table.v1+json";
pub const UPDATES_LAYER: &str = "application/vnd.asp.session.updates.v1+jsonl";
pub const NATIVE_LAYER: &str = "application/vnd.asp.native.v1";
pub const FILE_LAYER: &str = "application/vnd.asp.file.v1";

/// Annotation on a layer compressed against a dictionary: the dictionary's layer digest.
pub const DICTIONARY_ANNOTATION: &str = "vnd.asp.layer.dictionary";
/// Annotation on the image manifest: the harnesses its sessions came from, sorted,
/// comma-separated.
pub const HARNESS_ANNOTATION: &str = "vnd.asp.harness";
/// Annotation on the image manifest: how many sessions the snapshot holds (decimal).
pub const SESSIONS_ANNOTATION: &str = "vnd.asp.sessions";
/// Annotation on the image manifest: when the snapshot was made (only when asked).
pub const CREATED_ANNOTATION: &str = "org.opencontainers.image.created";

/// How a layer's bytes encode the blob they hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Encoding {
    /// The blob's bytes as they are: the layer digest is the blob digest.
    Identity,
    /// One zstd frame, with the content size in its header and no checksum (the sha256 of
    /// the blob is the check), optionally against a raw-content dictionary.
    Zstd,
}

impl Encoding {
    /// The media type of a layer of `base` kind in this encoding.
    pub fn media_type(self, base: &str) -> String {
        match self {
            Encoding::Identity => base.to_owned(),
            Encoding::Zstd => format!("{base}+zstd"),
        }
    }
}

/// An OCI content descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OciDescriptor {
    pub media_type: String,
    pub digest: Digest,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

impl OciDescriptor {
    pub fn new(media_type: impl Into<String>, d: Descriptor) -> Self {
        OciDescriptor {
            media_type: media_type.into(),
            digest: d.digest,
            size: d.size,
            data: None,
            artifact_type: None,
            annotations: None,
        }
    }

    pub fn descriptor(&self) -> Descriptor {
        Descriptor {
            digest: self.digest,
            size: self.size,
        }
    }

    /// The OCI empty descriptor (`{}`), with its data inline.
    pub fn empty() -> Self {
        OciDescriptor {
            data: Some("e30=".to_owned()),
            ..OciDescriptor::new(EMPTY_MEDIA_TYPE, Descriptor::of(EMPTY_BYTES))
        }
    }
}

/// `index.json`: an OCI image index with the snapshot's manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageIndex {
    pub schema_version: u64,
    pub media_type: String,
    pub manifests: Vec<OciDescriptor>,
}

/// The root of a snapshot: an OCI image manifest of artifact type [`ARTIFACT_TYPE`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    pub schema_version: u64,
    pub media_type: String,
    pub artifact_type: String,
    pub config: OciDescriptor,
    pub layers: Vec<OciDescriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<BTreeMap<String, String>>,
}

/// Where one blob (by its uncompressed digest) is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LayerRef {
    /// The stored layer's digest (of its stored bytes).
    pub layer: Digest,
    /// The stored layer's size.
    pub size: u64,
    pub encoding: Encoding,
    /// The blob (uncompressed digest) whose bytes are the raw-content dictionary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dictionary: Option<Digest>,
}

/// The layer table: every blob the state refers to, by uncompressed digest, and its layer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LayerTable {
    pub schema_version: u64,
    pub media_type: String,
    pub blobs: BTreeMap<Digest, LayerRef>,
}

impl LayerTable {
    pub fn new(blobs: BTreeMap<Digest, LayerRef>) -> Self {
        LayerTable {
            schema_version: 1,
            media_type: TABLE_LAYER.to_owned(),
            blobs,
        }
    }
}

/// JSON of a document written into a layer: two-space pretty JSON and a final newline, the
/// same canonical form as the state manifest.
pub fn pretty<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).expect("serialises");
    out.push(b'\n');
    out
}
