//! The artifact: an OCI image manifest with asp's `artifactType`, and the checks a manifest
//! from elsewhere must pass before anything it names is fetched.
//!
//! ```json
//! {"schemaVersion": 2,
//!  "mediaType": "application/vnd.oci.image.manifest.v1+json",
//!  "artifactType": "application/vnd.asp.state.v1",
//!  "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": "sha256:44136f…", "size": 2},
//!  "layers": [{"mediaType": "…", "digest": "sha256:…", "size": 1234}, …],
//!  "annotations": {"org.opencontainers.image.created": "…"}}
//! ```
//!
//! The types mirror the OCI image spec (`descriptor.md`, `manifest.md`, `image-index.md`,
//! `image-layout.md`). A manifest is never re-serialised: its bytes are kept as they came,
//! since its digest is its identity. Descriptors and image indexes keep the members they do
//! not know (`other`), because `index.json` is: another tool's entries in it must survive
//! asp's rewrites.

use std::collections::BTreeMap;

use asp_format::digest::{Descriptor, Digest};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};

use crate::error::Error;

/// asp state's `artifactType` (and the config media type registries that cannot store an
/// `artifactType` would need; see `spec/registry.md`).
pub const ARTIFACT_TYPE: &str = "application/vnd.asp.state.v1";
/// The `artifactType` of a snapshot record: a second artifact whose `subject` is a state
/// artifact, carrying what a repository keeps about a snapshot besides its state (the
/// harness's own configuration files, the sessions gone from the source) and nothing about the
/// machine it came from. A tag names the record; a pull follows its subject. See
/// `spec/registry.md` §9.
pub const RECORD_ARTIFACT_TYPE: &str = "application/vnd.asp.snapshot.v1";
/// The media type of a snapshot record's first layer (its JSON; `+zstd` when compressed).
/// A snapshot manifest of a repository has the same `artifactType` but source records as its
/// first layer: those never travel, and a manifest with them is refused.
pub const RECORD_LAYER: &str = "application/vnd.asp.snapshot.record.v1+json";
pub const IMAGE_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub const IMAGE_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";
pub const DOCKER_MANIFEST_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
/// The empty descriptor's media type (OCI 1.1), used as the config of artifacts.
pub const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
/// The empty descriptor's content: `{}`.
pub const EMPTY_JSON: &[u8] = b"{}";
/// `org.opencontainers.image.ref.name`: a manifest's name (tag) in an image layout's index.
pub const REF_NAME: &str = "org.opencontainers.image.ref.name";

/// What `Accept` says when fetching a manifest: ours, and the kinds we recognise well enough to
/// say what they are instead of "not found".
pub const ACCEPT_MANIFESTS: &str = "application/vnd.oci.image.manifest.v1+json, \
application/vnd.oci.image.index.v1+json, \
application/vnd.docker.distribution.manifest.v2+json, \
application/vnd.docker.distribution.manifest.list.v2+json";

/// An OCI content descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OciDescriptor {
    /// Empty when the descriptor came without one (the spec's `index.json` entries may: an
    /// entry of another tool's must be read, and written back as it came; review
    /// helper-133, 1: one such entry made the whole index unreadable, and the repair that
    /// names dropped the tool's entries, whose blobs `asp prune` then deleted).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub media_type: String,
    pub digest: Digest,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub urls: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    /// Every other member, kept as it came (`platform` in an image index, and what later
    /// versions of the spec add): `index.json` is rewritten whole by every change, and an
    /// entry of another tool's must come out of it as it went in.
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

impl OciDescriptor {
    pub fn new(media_type: impl Into<String>, blob: Descriptor) -> Self {
        OciDescriptor {
            media_type: media_type.into(),
            digest: blob.digest,
            size: blob.size,
            urls: Vec::new(),
            annotations: BTreeMap::new(),
            data: None,
            artifact_type: None,
            other: BTreeMap::new(),
        }
    }

    /// The `{digest, size}` pair blob stores key on.
    pub fn blob(&self) -> Descriptor {
        Descriptor {
            digest: self.digest,
            size: self.size,
        }
    }

    /// The empty descriptor of OCI 1.1 (config of artifacts), with its two bytes inline.
    pub fn empty() -> Self {
        OciDescriptor {
            data: Some(STANDARD.encode(EMPTY_JSON)),
            ..OciDescriptor::new(EMPTY_MEDIA_TYPE, Descriptor::of(EMPTY_JSON))
        }
    }
}

/// An OCI image manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageManifest {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    pub config: OciDescriptor,
    pub layers: Vec<OciDescriptor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<OciDescriptor>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

impl ImageManifest {
    /// An asp artifact manifest over `layers`, with the empty config.
    pub fn artifact(layers: Vec<OciDescriptor>, annotations: BTreeMap<String, String>) -> Self {
        ImageManifest {
            schema_version: 2,
            media_type: Some(IMAGE_MANIFEST.to_owned()),
            artifact_type: Some(ARTIFACT_TYPE.to_owned()),
            config: OciDescriptor::empty(),
            layers,
            subject: None,
            annotations,
        }
    }

    /// Compact JSON, the bytes that get pushed and hashed.
    pub fn to_bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).expect("a manifest serialises")
    }
}

/// An OCI image index (`index.json` of a layout).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImageIndex {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    pub manifests: Vec<OciDescriptor>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    /// Every other member (`artifactType`, `subject`, what later versions add), kept as it
    /// came for the same reason as [`OciDescriptor::other`].
    #[serde(flatten)]
    pub other: BTreeMap<String, serde_json::Value>,
}

impl Default for ImageIndex {
    fn default() -> Self {
        ImageIndex {
            schema_version: 2,
            media_type: Some(IMAGE_INDEX.to_owned()),
            manifests: Vec::new(),
            annotations: BTreeMap::new(),
            other: BTreeMap::new(),
        }
    }
}

/// Bounds a manifest from elsewhere must stay within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Largest manifest accepted, checked before parsing (distribution's own limit: 4 MiB).
    pub max_manifest_bytes: u64,
    /// Most distinct blobs (the bundle reader's entry limit).
    pub max_blobs: u64,
    /// Largest sum of blob sizes (the bundle reader's total limit).
    pub max_total_bytes: u64,
}

impl Default for Limits {
    fn default() -> Self {
        let bundle = asp_format::bundle::Limits::default();
        Limits {
            max_manifest_bytes: 4 << 20,
            max_blobs: bundle.max_entries,
            max_total_bytes: bundle.max_total_bytes,
        }
    }
}

/// A manifest that passed every check: ours, well-formed, within limits.
#[derive(Debug, Clone)]
pub struct Artifact {
    bytes: Vec<u8>,
    digest: Digest,
    manifest: ImageManifest,
    blobs: Vec<OciDescriptor>,
}

impl Artifact {
    /// Checks `bytes` as an asp artifact manifest. `source` names it in messages.
    ///
    /// In order: the size limit; then JSON; then that it is an OCI image manifest with asp's
    /// `artifactType` ([`Error::NotOurs`] otherwise); then every descriptor (sha256 digests,
    /// one size per digest, inline `data` matching its digest, no external `urls`) and the
    /// blob count and total size within `limits` ([`Error::Integrity`] otherwise).
    pub fn parse(bytes: Vec<u8>, source: &str, limits: &Limits) -> Result<Self, Error> {
        if bytes.len() as u64 > limits.max_manifest_bytes {
            return Err(too_large(source, bytes.len() as u64, limits));
        }
        let digest = Digest::of(&bytes);
        let value: serde_json::Value = serde_json::from_slice(&bytes)
            .map_err(|e| Error::Integrity(format!("the manifest of {source} is not JSON: {e}")))?;
        check_ours(&value, source)?;
        let manifest: ImageManifest = serde_json::from_value(value)
            .map_err(|e| Error::Integrity(format!("the manifest of {source} is malformed: {e}")))?;
        let blobs = distinct_blobs(&manifest, source, limits)?;
        if manifest.artifact_type.as_deref() == Some(RECORD_ARTIFACT_TYPE) {
            check_record(&manifest, source, limits)?;
        }
        Ok(Artifact {
            bytes,
            digest,
            manifest,
            blobs,
        })
    }

    /// The manifest's exact bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The manifest's digest: the artifact's identity.
    pub fn digest(&self) -> Digest {
        self.digest
    }

    pub fn manifest(&self) -> &ImageManifest {
        &self.manifest
    }

    /// The manifest as a descriptor, as an index lists it.
    pub fn descriptor(&self) -> OciDescriptor {
        OciDescriptor {
            artifact_type: self.manifest.artifact_type.clone(),
            ..OciDescriptor::new(IMAGE_MANIFEST, Descriptor::of(&self.bytes))
        }
    }

    /// Every blob the manifest names (config first, then layers), each once.
    pub fn blobs(&self) -> &[OciDescriptor] {
        &self.blobs
    }

    /// Sum of the blobs' sizes.
    pub fn total_bytes(&self) -> u64 {
        self.blobs.iter().map(|b| b.size).sum()
    }

    /// Whether this is a snapshot record ([`RECORD_ARTIFACT_TYPE`]) rather than state.
    pub fn is_record(&self) -> bool {
        self.manifest.artifact_type.as_deref() == Some(RECORD_ARTIFACT_TYPE)
    }

    /// The state artifact a snapshot record is about (checked by [`Artifact::parse`]: an
    /// image manifest of asp state within the manifest limit); `None` for state.
    pub fn subject(&self) -> Option<&OciDescriptor> {
        if self.is_record() {
            self.manifest.subject.as_ref()
        } else {
            None
        }
    }
}

pub(crate) fn too_large(source: &str, size: u64, limits: &Limits) -> Error {
    Error::Integrity(format!(
        "the manifest of {source} has {size} bytes, over the limit of {}",
        limits.max_manifest_bytes
    ))
}

/// A snapshot record must name its state artifact as `subject` (an image manifest of asp
/// state, no larger than a manifest may be) and carry a record as its first layer: a
/// repository's snapshot manifest, whose first layer is this machine's source records, is
/// not something to push or pull.
fn check_record(m: &ImageManifest, source: &str, limits: &Limits) -> Result<(), Error> {
    let bad = |msg: String| Error::Integrity(format!("the snapshot record {source}: {msg}"));
    let Some(subject) = &m.subject else {
        return Err(bad("it names no subject (the state it is about)".to_owned()));
    };
    if subject.media_type != IMAGE_MANIFEST {
        return Err(bad(format!(
            "its subject has media type {:?}, not an image manifest",
            subject.media_type
        )));
    }
    if subject
        .artifact_type
        .as_deref()
        .is_some_and(|t| t != ARTIFACT_TYPE)
    {
        return Err(bad(format!("its subject is not of type {ARTIFACT_TYPE}")));
    }
    if subject.size > limits.max_manifest_bytes {
        return Err(bad(format!(
            "its subject has {} bytes, over the manifest limit of {}",
            subject.size, limits.max_manifest_bytes
        )));
    }
    if !subject.urls.is_empty() || subject.data.is_some() {
        return Err(bad("its subject carries URLs or inline data".to_owned()));
    }
    match m.layers.first() {
        Some(l)
            if l.media_type == RECORD_LAYER || l.media_type == format!("{RECORD_LAYER}+zstd") =>
        {
            Ok(())
        }
        Some(l) => Err(Error::NotOurs {
            reference: source.to_owned(),
            what: format!(
                "a snapshot manifest whose first layer is {:?}, not a snapshot record (a \
                 repository's snapshot manifest holds this machine's source records and is \
                 pushed with `asp push SNAPSHOT REF`)",
                l.media_type
            ),
        }),
        None => Err(bad("it has no record layer".to_owned())),
    }
}

/// Says what a manifest is when it is not ours.
fn check_ours(v: &serde_json::Value, source: &str) -> Result<(), Error> {
    let not_ours = |what: String| Error::NotOurs {
        reference: source.to_owned(),
        what,
    };
    let Some(obj) = v.as_object() else {
        return Err(not_ours("not a JSON object".to_owned()));
    };
    let str_of = |k: &str| obj.get(k).and_then(|x| x.as_str());
    let media_type = str_of("mediaType");
    match media_type {
        Some(IMAGE_INDEX) | Some(DOCKER_MANIFEST_LIST) => {
            return Err(not_ours(
                "an image index (a multi-platform container image)".to_owned(),
            ));
        }
        Some(DOCKER_MANIFEST) => return Err(not_ours("a docker container image".to_owned())),
        Some(IMAGE_MANIFEST) | None => {}
        Some(other) => return Err(not_ours(format!("a manifest of type {other:?}"))),
    }
    if obj.get("schemaVersion").and_then(|x| x.as_u64()) != Some(2) {
        return Err(not_ours(
            "not an OCI image manifest (schemaVersion is not 2)".to_owned(),
        ));
    }
    if obj.get("manifests").is_some() && obj.get("layers").is_none() {
        return Err(not_ours("an image index".to_owned()));
    }
    let config_type = obj
        .get("config")
        .and_then(|c| c.get("mediaType"))
        .and_then(|x| x.as_str());
    match str_of("artifactType") {
        Some(ARTIFACT_TYPE) | Some(RECORD_ARTIFACT_TYPE) => Ok(()),
        Some(other) => Err(not_ours(format!("an artifact of type {other:?}"))),
        None if config_type == Some(ARTIFACT_TYPE) => Ok(()),
        None => Err(not_ours(match config_type {
            Some(t) if t.contains("image.config") || t.contains("container.image") => {
                "a container image".to_owned()
            }
            Some(t) => format!("an OCI manifest with config type {t:?} and no artifactType"),
            None => "an OCI manifest without artifactType".to_owned(),
        })),
    }
}

fn distinct_blobs(
    m: &ImageManifest,
    source: &str,
    limits: &Limits,
) -> Result<Vec<OciDescriptor>, Error> {
    let bad = |msg: String| Error::Integrity(format!("the manifest of {source}: {msg}"));
    let mut seen: BTreeMap<Digest, u64> = BTreeMap::new();
    let mut out = Vec::new();
    let mut total: u64 = 0;
    for (i, d) in std::iter::once(&m.config).chain(&m.layers).enumerate() {
        let what = if i == 0 {
            "the config".to_owned()
        } else {
            format!("layer {}", i - 1)
        };
        if !d.urls.is_empty() {
            return Err(bad(format!(
                "{what} names external URLs; asp artifacts carry every blob in the registry"
            )));
        }
        if let Some(data) = &d.data {
            let bytes = STANDARD
                .decode(data)
                .map_err(|_| bad(format!("{what} has inline data that is not base64")))?;
            if Descriptor::of(&bytes) != d.blob() {
                return Err(bad(format!(
                    "{what}'s inline data does not match its digest and size"
                )));
            }
        }
        match seen.get(&d.digest) {
            Some(size) if *size != d.size => {
                return Err(bad(format!(
                    "blob {} is listed with sizes {size} and {}",
                    d.digest, d.size
                )));
            }
            Some(_) => continue,
            None => {}
        }
        seen.insert(d.digest, d.size);
        total = total.saturating_add(d.size);
        out.push(d.clone());
        if out.len() as u64 > limits.max_blobs {
            return Err(bad(format!(
                "more than {} distinct blobs (limit)",
                limits.max_blobs
            )));
        }
    }
    if total > limits.max_total_bytes {
        return Err(bad(format!(
            "its blobs add up to {total} bytes, over the limit of {}",
            limits.max_total_bytes
        )));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(bytes: &[u8]) -> OciDescriptor {
        OciDescriptor::new("application/vnd.asp.test", Descriptor::of(bytes))
    }

    #[test]
    fn the_empty_descriptor_is_the_well_known_one() {
        let e = OciDescriptor::empty();
        assert_eq!(
            e.digest.to_string(),
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert_eq!(e.size, 2);
        assert_eq!(e.data.as_deref(), Some("e30="));
    }

    #[test]
    fn an_artifact_round_trips_and_lists_blobs_once() {
        let m =
            ImageManifest::artifact(vec![layer(b"a"), layer(b"b"), layer(b"a")], BTreeMap::new());
        let a = Artifact::parse(m.to_bytes(), "test", &Limits::default()).unwrap();
        assert_eq!(a.blobs().len(), 3, "config, a, b");
        assert_eq!(a.blobs()[0].media_type, EMPTY_MEDIA_TYPE);
        assert_eq!(a.digest(), Digest::of(&m.to_bytes()));
    }

    #[test]
    fn what_is_not_ours_says_what_it_is() {
        let cases = [
            (
                r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]}"#,
                "image index",
            ),
            (
                r#"{"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json","config":{},"layers":[]}"#,
                "docker container image",
            ),
            (
                r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[]}"#,
                "container image",
            ),
            (
                r#"{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","artifactType":"application/vnd.cncf.helm.chart","config":{"mediaType":"x","digest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","size":2},"layers":[]}"#,
                "helm",
            ),
            (r#"[1,2]"#, "not a JSON object"),
            (r#"{"schemaVersion":1}"#, "schemaVersion"),
        ];
        for (json, says) in cases {
            let e = Artifact::parse(json.as_bytes().to_vec(), "r", &Limits::default()).unwrap_err();
            assert!(matches!(e, Error::NotOurs { .. }), "{json}: {e}");
            assert!(e.to_string().contains(says), "{e}");
            assert!(e.to_string().contains("not an asp state artifact"), "{e}");
        }
    }

    #[test]
    fn hostile_manifests_are_integrity_failures() {
        let limits = Limits {
            max_manifest_bytes: 4096,
            max_blobs: 3,
            max_total_bytes: 100,
        };
        let big = ImageManifest::artifact(
            (0..200).map(|i| layer(format!("{i}").as_bytes())).collect(),
            BTreeMap::new(),
        );
        let e = Artifact::parse(big.to_bytes(), "r", &limits).unwrap_err();
        assert!(e.to_string().contains("over the limit"), "{e}");

        let many = ImageManifest::artifact(
            (0..5).map(|i| layer(format!("{i}").as_bytes())).collect(),
            BTreeMap::new(),
        );
        let e = Artifact::parse(many.to_bytes(), "r", &limits).unwrap_err();
        assert!(e.to_string().contains("distinct blobs"), "{e}");

        let mut huge = layer(b"x");
        huge.size = 1000;
        let e = Artifact::parse(
            ImageManifest::artifact(vec![huge], BTreeMap::new()).to_bytes(),
            "r",
            &limits,
        )
        .unwrap_err();
        assert!(e.to_string().contains("add up to"), "{e}");

        let mut twice = layer(b"x");
        twice.size = 7;
        let e = Artifact::parse(
            ImageManifest::artifact(vec![layer(b"x"), twice], BTreeMap::new()).to_bytes(),
            "r",
            &Limits::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("sizes"), "{e}");

        let mut lying = ImageManifest::artifact(vec![], BTreeMap::new());
        lying.config.data = Some(STANDARD.encode(b"[]"));
        let e = Artifact::parse(lying.to_bytes(), "r", &Limits::default()).unwrap_err();
        assert!(e.to_string().contains("inline data"), "{e}");

        let mut external = layer(b"x");
        external.urls = vec!["https://elsewhere.example/x".into()];
        let e = Artifact::parse(
            ImageManifest::artifact(vec![external], BTreeMap::new()).to_bytes(),
            "r",
            &Limits::default(),
        )
        .unwrap_err();
        assert!(e.to_string().contains("external URLs"), "{e}");

        let e = Artifact::parse(b"{not json".to_vec(), "r", &Limits::default()).unwrap_err();
        assert!(matches!(e, Error::Integrity(_)), "{e}");
    }

    #[test]
    fn a_snapshot_record_names_its_state_and_carries_a_record() {
        let state = ImageManifest::artifact(vec![layer(b"a")], BTreeMap::new()).to_bytes();
        let record = |first: &str, subject: Option<OciDescriptor>| {
            let mut m = ImageManifest::artifact(
                vec![OciDescriptor::new(first, Descriptor::of(b"{}"))],
                BTreeMap::new(),
            );
            m.artifact_type = Some(RECORD_ARTIFACT_TYPE.to_owned());
            m.subject = subject;
            Artifact::parse(m.to_bytes(), "r", &Limits::default())
        };
        let subject = OciDescriptor::new(IMAGE_MANIFEST, Descriptor::of(&state));
        let ok = record(RECORD_LAYER, Some(subject.clone())).unwrap();
        assert!(ok.is_record());
        assert_eq!(ok.subject(), Some(&subject));
        assert!(record(&format!("{RECORD_LAYER}+zstd"), Some(subject.clone())).is_ok());

        let e = record(RECORD_LAYER, None).unwrap_err();
        assert!(
            matches!(e, Error::Integrity(_)) && e.to_string().contains("subject"),
            "{e}"
        );
        // A repository's snapshot manifest: source records, never pushed or pulled.
        let e = record(
            "application/vnd.asp.snapshot.sources.v1+json+zstd",
            Some(subject.clone()),
        )
        .unwrap_err();
        assert!(matches!(e, Error::NotOurs { .. }), "{e}");
        let mut huge = subject.clone();
        huge.size = 5 << 20;
        let e = record(RECORD_LAYER, Some(huge)).unwrap_err();
        assert!(e.to_string().contains("over the manifest limit"), "{e}");
        let mut index = subject;
        index.media_type = IMAGE_INDEX.to_owned();
        let e = record(RECORD_LAYER, Some(index)).unwrap_err();
        assert!(e.to_string().contains("not an image manifest"), "{e}");
    }

    #[test]
    fn config_media_type_alone_marks_ours() {
        let mut m = ImageManifest::artifact(vec![layer(b"a")], BTreeMap::new());
        m.artifact_type = None;
        m.config = OciDescriptor::new(ARTIFACT_TYPE, Descriptor::of(EMPTY_JSON));
        assert!(Artifact::parse(m.to_bytes(), "r", &Limits::default()).is_ok());
    }
}
