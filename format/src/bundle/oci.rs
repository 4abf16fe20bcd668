//! The OCI side of layout 2: image layout files, the image index, the image manifest and its
//! descriptors, as the OCI image spec 1.1 names them, plus asp's layer table.
//!
//! The types follow the spec's field names and order, so what is written here is exactly what
//! a registry receives when a bundle is pushed as an OCI 1.1 artifact.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};

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

/// What ends the media type of a windowed layer ([`Encoding::ZstdWindows`], layout 5).
pub const WINDOWED_SUFFIX: &str = "+zstd-windows";

/// Media types of asp's layers. A `+zstd` suffix says the layer is zstd-compressed
/// (`+zstd-windows`: in windows of its dictionary, layout 5).
pub const STATE_LAYER: &str = "application/vnd.asp.state.manifest.v1+json";
pub const TABLE_LAYER: &str = "application/vnd.asp.layer-table.v1+json";
pub const UPDATES_LAYER: &str = "application/vnd.asp.session.updates.v1+jsonl";
pub const NATIVE_LAYER: &str = "application/vnd.asp.native.v1";
pub const FILE_LAYER: &str = "application/vnd.asp.file.v1";
/// A dictionary body no state document refers to (layout 4: a project's dictionary, the first
/// MiB of one of its transcripts, that the project's transcripts are compressed against).
pub const DICTIONARY_LAYER: &str = "application/vnd.asp.dictionary.v1";

/// How many dictionaries deep a layer may be: layout 4 compresses an update stream against its
/// transcript and the transcript against its project's dictionary; layouts 2 and 3 allow one.
pub const MAX_CHAIN: usize = 2;

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
    /// zstd frames of 4 MiB of the blob each, every one against the stretch of the
    /// dictionary body around its own offsets (layout 5; [`crate::bundle::windows`]).
    #[serde(rename = "zstd-windows")]
    ZstdWindows,
}

impl Encoding {
    /// The media type of a layer of `base` kind in this encoding.
    pub fn media_type(self, base: &str) -> String {
        match self {
            Encoding::Identity => base.to_owned(),
            Encoding::Zstd => format!("{base}+zstd"),
            Encoding::ZstdWindows => format!("{base}{WINDOWED_SUFFIX}"),
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

/// An [`ImageManifest`] read in place, for opening a bundle: a bundle of thousands of bodies
/// has thousands of layers, and the owned form spends a `String` on each media type and a map
/// on each annotation. It accepts exactly what [`ImageManifest`] accepts (the same members, of
/// the same JSON types), so the owned form parsed later from the same bytes does not fail.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ImageManifestRef<'a> {
    pub schema_version: u64,
    #[serde(borrow)]
    pub media_type: Str<'a>,
    #[serde(borrow)]
    pub artifact_type: Str<'a>,
    #[serde(borrow)]
    pub config: OciDescriptorRef<'a>,
    #[serde(borrow)]
    pub layers: Vec<OciDescriptorRef<'a>>,
    #[serde(default)]
    #[allow(dead_code, reason = "read to check its type only")]
    pub annotations: Option<StrMap>,
}

/// An [`OciDescriptor`] read in place.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct OciDescriptorRef<'a> {
    #[serde(borrow)]
    pub media_type: Str<'a>,
    pub digest: Digest,
    pub size: u64,
    #[serde(default, borrow)]
    #[allow(dead_code, reason = "read to check its type only")]
    pub data: Option<Str<'a>>,
    #[serde(default, borrow)]
    #[allow(dead_code, reason = "read to check its type only")]
    pub artifact_type: Option<Str<'a>>,
    #[serde(default)]
    pub annotations: Option<StrMap>,
}

impl crate::bundle::shards::DocumentLayer for OciDescriptorRef<'_> {
    fn media_type(&self) -> &str {
        &self.media_type.0
    }
    fn shard(&self) -> Option<&str> {
        self.annotations.as_ref()?.shard.as_deref()
    }
}

impl crate::bundle::shards::DocumentLayer for OciDescriptor {
    fn media_type(&self) -> &str {
        &self.media_type
    }
    fn shard(&self) -> Option<&str> {
        self.annotations
            .as_ref()?
            .get(crate::bundle::shards::SHARD_ANNOTATION)
            .map(String::as_str)
    }
}

impl OciDescriptorRef<'_> {
    pub fn descriptor(&self) -> Descriptor {
        Descriptor {
            digest: self.digest,
            size: self.size,
        }
    }
}

/// A JSON string, borrowed from the document unless it has escapes.
#[derive(Debug)]
pub(crate) struct Str<'a>(pub Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Str<'a>;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Owned(v.to_owned())))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Str<'a>, E> {
                Ok(Str(Cow::Owned(v)))
            }
        }
        d.deserialize_string(V(std::marker::PhantomData))
    }
}

impl PartialEq<&str> for Str<'_> {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// A JSON object of strings (OCI annotations), checked and passed over but for the one a
/// reader needs: a layout 3 part's shard.
#[derive(Debug)]
pub(crate) struct StrMap {
    pub shard: Option<String>,
}

impl<'de> Deserialize<'de> for StrMap {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = StrMap;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StrMap, A::Error> {
                let mut shard = None;
                while let Some((k, v)) = map.next_entry::<Str<'de>, Str<'de>>()? {
                    if k.0 == crate::bundle::shards::SHARD_ANNOTATION {
                        shard = Some(v.0.into_owned());
                    }
                }
                Ok(StrMap { shard })
            }
        }
        d.deserialize_map(V)
    }
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
    /// The body's own (uncompressed) size, given only for a dictionary body that no state
    /// document describes (layout 4), so a reader bounds and checks it like any other body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_size: Option<u64>,
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

/// A [`LayerTable`] read for look-ups, when a bundle is opened: its entries in one sorted list
/// rather than a tree of thousands of nodes. It accepts what [`LayerTable`] accepts, and a key
/// given twice keeps its last entry, as the map does.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct LayerTableRef<'a> {
    pub schema_version: u64,
    #[serde(borrow)]
    pub media_type: Str<'a>,
    pub blobs: SortedBlobs,
}

/// The layer table's entries, ascending by blob digest, each key once.
#[derive(Debug)]
pub(crate) struct SortedBlobs(Vec<(Digest, LayerRef)>);

impl SortedBlobs {
    /// The entries of several tables (layout 3's head and parts) as one; `Err` names a body
    /// whose entries disagree.
    pub fn merge(tables: Vec<SortedBlobs>) -> Result<SortedBlobs, Digest> {
        let mut all: Vec<(Digest, LayerRef)> = tables.into_iter().flat_map(|t| t.0).collect();
        all.sort_by_key(|e| e.0);
        let mut out: Vec<(Digest, LayerRef)> = Vec::with_capacity(all.len());
        for e in all {
            match out.last() {
                Some(last) if last.0 == e.0 && last.1 != e.1 => return Err(e.0),
                Some(last) if last.0 == e.0 => {}
                _ => out.push(e),
            }
        }
        Ok(SortedBlobs(out))
    }

    pub fn get_key_value(&self, d: &Digest) -> Option<(&Digest, &LayerRef)> {
        let i = self.0.binary_search_by(|(k, _)| k.cmp(d)).ok()?;
        let (k, r) = &self.0[i];
        Some((k, r))
    }

    pub fn get(&self, d: &Digest) -> Option<&LayerRef> {
        self.get_key_value(d).map(|(_, r)| r)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&Digest, &LayerRef)> {
        self.0.iter().map(|(k, r)| (k, r))
    }
}

impl<'de> Deserialize<'de> for SortedBlobs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = SortedBlobs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<SortedBlobs, A::Error> {
                let mut all = Vec::with_capacity(map.size_hint().unwrap_or(0));
                while let Some(entry) = map.next_entry::<Digest, LayerRef>()? {
                    all.push(entry);
                }
                // Stable, so of a key given twice the last comes last, and is the one kept.
                all.sort_by_key(|e| e.0);
                let mut out: Vec<(Digest, LayerRef)> = Vec::with_capacity(all.len());
                for e in all {
                    match out.last_mut() {
                        Some(last) if last.0 == e.0 => *last = e,
                        _ => out.push(e),
                    }
                }
                Ok(SortedBlobs(out))
            }
        }
        d.deserialize_map(V)
    }
}

/// JSON of a document written into a layer: two-space pretty JSON and a final newline, the
/// same canonical form as the state manifest.
pub fn pretty<T: Serialize>(v: &T) -> Vec<u8> {
    let mut out = serde_json::to_vec_pretty(v).expect("serialises");
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_borrowed_image_manifest_accepts_what_the_owned_one_accepts() {
        let layer = r#"{"mediaType": "application/vnd.asp.file.v1", "digest": "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a", "size": 2"#;
        let doc = |layer_rest: &str, top_rest: &str| {
            format!(
                r#"{{"schemaVersion": 2, "mediaType": "m", "artifactType": "a", "config": {layer}, "data": "e30="}}, "layers": [{layer}{layer_rest}}}]{top_rest}}}"#
            )
        };
        let cases = [
            doc("", ""),
            doc(
                r#", "annotations": {"k": "v", "k2": "v\u00e9"}"#,
                r#", "annotations": {"a": "b"}"#,
            ),
            doc(
                r#", "annotations": null, "data": null, "artifactType": null"#,
                r#", "annotations": null"#,
            ),
            doc(
                r#", "artifactType": "x", "unknown": [1, {"a": 2}]"#,
                r#", "other": true"#,
            ),
            doc(r#", "annotations": {"k": 1}"#, ""),
            doc(r#", "annotations": ["k"]"#, ""),
            doc(r#", "data": 5"#, ""),
            doc(r#", "artifactType": false"#, ""),
            doc(r#", "size": 3"#, ""),
            doc(r#", "mediaType": "again""#, ""),
            doc("", r#", "annotations": {"k": {}}"#),
            doc("", r#", "schemaVersion": 2"#),
            doc("", r#", "mediaType": 1"#),
            r#"{"schemaVersion": 2, "mediaType": "m", "artifactType": "a", "layers": []}"#
                .to_owned(),
            r#"{"schemaVersion": -2, "mediaType": "m", "artifactType": "a", "layers": []}"#
                .to_owned(),
            "[2, \"m\", \"a\"]".to_owned(),
        ];
        let mut accepted = 0;
        for c in &cases {
            let owned = serde_json::from_str::<ImageManifest>(c).is_ok();
            let borrowed = serde_json::from_str::<ImageManifestRef<'_>>(c).is_ok();
            assert_eq!(owned, borrowed, "{c}");
            accepted += usize::from(owned);
        }
        assert_eq!(accepted, 4, "the cases cover both answers");
    }

    #[test]
    fn the_sorted_layer_table_reads_as_the_map_does() {
        let d = |c: char| format!("sha256:{}", c.to_string().repeat(64));
        let entry = |c: char, size: u64| {
            format!(
                r#""{}": {{"layer": "{}", "size": {size}, "encoding": "identity"}}"#,
                d(c),
                d(c)
            )
        };
        let table = |entries: &[String]| {
            format!(
                r#"{{"schemaVersion": 1, "mediaType": "t", "blobs": {{{}}}}}"#,
                entries.join(", ")
            )
        };
        let cases = [
            table(&[entry('b', 1), entry('a', 2), entry('c', 3), entry('a', 4)]),
            table(&[]),
            table(&[entry('a', 1)]).replace("identity", "gzip"),
            table(&[entry('a', 1)]).replace(r#""size""#, r#""size": 1, "extra""#),
            table(&[entry('a', 1)]).replace("sha256:a", "sha512:a"),
        ];
        for c in &cases {
            let owned = serde_json::from_str::<LayerTable>(c);
            let sorted = serde_json::from_str::<LayerTableRef<'_>>(c);
            assert_eq!(owned.is_ok(), sorted.is_ok(), "{c}");
            if let (Ok(o), Ok(s)) = (owned, sorted) {
                let o: Vec<_> = o.blobs.iter().collect();
                let s: Vec<_> = s.blobs.iter().collect();
                assert_eq!(o, s, "{c}");
            }
        }
        let first = serde_json::from_str::<LayerTableRef<'_>>(&cases[0]).unwrap();
        let a = Digest::from_hex(&"a".repeat(64)).unwrap();
        assert_eq!(first.blobs.get(&a).map(|r| r.size), Some(4));
        assert!(first.blobs.get(&Digest::of(b"x")).is_none());
    }
}
