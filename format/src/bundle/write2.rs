//! Writing a layout 3 bundle: an OCI image layout in a zip, from staged layers.
//!
//! ```text
//! aspstate-layout        Stored; {"layoutVersion":"3.0.0",...}
//! oci-layout             Stored; {"imageLayoutVersion":"1.0.0"}
//! index.json             the OCI image index: one manifest, artifactType application/vnd.asp.state.v1
//! blobs/sha256/<hex>     every blob of the layout, ascending: the image manifest, the empty
//!                        config, the state's documents (heads and parts by shard) and one
//!                        layer per body
//! ```
//!
//! Deterministic: entries in that order, fixed zip metadata, layers as staged (their bytes do
//! not depend on the number of threads that made them). The layers are copied once, in order,
//! from the staging file; no uncompressed body is written or read here.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, BufWriter, Seek, Write};
use std::path::Path;

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, System, ZipWriter};

use crate::bundle::layers::{Layers, compress};
use crate::bundle::layout::{LAYOUT_ENTRY, Layout, Manifest, blob_entry_name};
use crate::bundle::oci::{
    ARTIFACT_TYPE, CREATED_ANNOTATION, DICTIONARY_ANNOTATION, DICTIONARY_LAYER, EMPTY_BYTES,
    Encoding, FILE_LAYER, HARNESS_ANNOTATION, IMAGE_MANIFEST_MEDIA_TYPE, INDEX_ENTRY,
    INDEX_MEDIA_TYPE, ImageIndex, ImageManifest, LayerRef, LayerTable, MAX_CHAIN, NATIVE_LAYER,
    OCI_LAYOUT_BYTES, OCI_LAYOUT_ENTRY, OciDescriptor, SESSIONS_ANNOTATION, STATE_LAYER,
    TABLE_LAYER, UPDATES_LAYER, WINDOWED_SUFFIX, pretty,
};
use crate::bundle::shards::{
    DocumentBudget, DocumentLayer, OverBudget, SHARD_ANNOTATION, Shard, shard_count, shards_of,
};
use crate::bundle::write::{WriteError, Written};
use crate::digest::{Descriptor, Digest};
use crate::progress::Progress;
use crate::state::{NoteBody, Session, State};

/// The layout version layout-2 bundles carry.
pub const LAYOUT2_VERSION: &str = "2.0.0";

/// The layout version this asp writes: layout 2 with the state manifest and the layer table in
/// parts by shard ([`crate::bundle::shards`]).
pub const LAYOUT_VERSION3: &str = "3.0.0";

/// The layout version of a bundle with project dictionaries: layout 3 whose layers may be two
/// dictionaries deep, with dictionary bodies no state document refers to. Written only when a
/// bundle has them, so a bundle without stays readable by the readers of layout 3.
pub const LAYOUT_VERSION4: &str = "4.0.0";
/// Layout 5: update streams of large transcripts stored in windows (spec/aspstate.md §4.2).
/// Written only when a layer is windowed; other bundles stay layout 4.
pub const LAYOUT_VERSION5: &str = "5.0.0";

/// How a layout 2 bundle's entries are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ZipMethod {
    /// Every entry Stored (layers are zstd already, or meant to be read as they are).
    #[default]
    Stored,
    /// Entries over 64 bytes Deflate level 6: for identity layers, so any unzip expands them.
    Deflate,
}

/// What to write besides the state.
#[derive(Debug, Clone, Default)]
pub struct Options2 {
    /// RFC 3339 creation time, as the manifest's `org.opencontainers.image.created`
    /// annotation; `None` leaves it out.
    pub created: Option<String>,
    pub generator: Option<String>,
    pub zip: ZipMethod,
    /// Compress the state manifest and the layer table (zstd level 3).
    pub zstd_documents: bool,
    /// The largest document its readers accept, stored or decoded (the state's documents
    /// together twice that): `None` for a bundle's reader
    /// ([`crate::bundle::Limits`]'s `max_manifest_bytes`); a repository reads larger ones.
    /// A state whose documents would be larger is refused, not written unreadable.
    pub max_document: Option<u64>,
}

fn entry_options(method: CompressionMethod, size: u64) -> SimpleFileOptions {
    let level = match method {
        CompressionMethod::Deflated => Some(6),
        _ => None,
    };
    SimpleFileOptions::default()
        .compression_method(method)
        .compression_level(level)
        .last_modified_time(DateTime::default())
        .system(System::Unix)
        .unix_permissions(0o644)
        .large_file(size >= u64::from(u32::MAX) - u64::from(u32::MAX) / 64)
}

/// The media type base of each body, from what refers to it first (updates, native files,
/// other files), so a registry can tell what a layer holds.
fn kinds(state: &State) -> BTreeMap<Digest, &'static str> {
    let mut out = BTreeMap::new();
    for s in state.sessions.iter().flatten() {
        out.entry(s.updates.digest).or_insert(UPDATES_LAYER);
        for f in s.native.iter().flat_map(|n| &n.files) {
            out.entry(f.content.digest).or_insert(NATIVE_LAYER);
        }
    }
    let mut files = Vec::new();
    if let Some(i) = &state.instructions {
        files.push(i.text);
    }
    for f in state.skills.iter().flatten().flat_map(|s| &s.files) {
        files.push(f.content);
    }
    for n in state.memory.iter().flatten() {
        if let NoteBody::Text(d) = n.body {
            files.push(d);
        }
    }
    for d in files {
        out.entry(d.digest).or_insert(FILE_LAYER);
    }
    out
}

/// The image manifest's annotations, all derived from what is packed (and the creation time
/// only when asked for), so packing stays reproducible: when, which harnesses the sessions came
/// from (sorted, comma-separated) and how many sessions there are. A registry lists them
/// without fetching a layer.
pub fn annotations(state: &State, created: Option<&str>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if let Some(c) = created {
        out.insert(CREATED_ANNOTATION.to_owned(), c.to_owned());
    }
    if let Some(sessions) = &state.sessions {
        let harnesses: BTreeSet<&str> = sessions
            .iter()
            .filter_map(|s| s.harness.as_ref().map(|h| h.as_str()))
            .collect();
        if !harnesses.is_empty() {
            out.insert(
                HARNESS_ANNOTATION.to_owned(),
                harnesses.into_iter().collect::<Vec<_>>().join(","),
            );
        }
        out.insert(SESSIONS_ANNOTATION.to_owned(), sessions.len().to_string());
    }
    out
}

/// zstd level of the state manifest and the layer table. A repository writes them whole for
/// every snapshot, so their size is most of what a backup of few changes adds
/// (spec/repository.md §8). Measured on the 256M bench store's (1.5 MB and 0.3 MB of JSON):
/// level 3 406 KB, 9 392 KB in the same time, 12 389 KB in 2.5x the time, 19 355 KB in 30x
/// (1.3 s, too slow for a backup that should take under a second). Kept at 3: 9's 3 % would
/// change the bytes of every bundle, the committed samples' included.
pub const DOCUMENT_LEVEL: i32 = 3;

/// One document layer of a snapshot: the state manifest's or the layer table's head, or one of
/// their parts (layout 3).
#[derive(Debug, Clone)]
pub struct Document {
    /// Its descriptor in the image manifest (media type, and the shard of a part).
    pub descriptor: OciDescriptor,
    pub bytes: Vec<u8>,
    /// How many bytes it decodes to.
    pub decoded: u64,
}

impl Document {
    /// What a reader charges it: the larger of its stored and decoded size.
    fn charged(&self) -> u64 {
        self.decoded.max(self.bytes.len() as u64)
    }

    /// What it is, for a message: "the layer table's part 3/16 (sha256:…)".
    fn role(&self) -> String {
        let what = match self.descriptor.media_type.starts_with(STATE_LAYER) {
            true => "the state manifest's",
            false => "the layer table's",
        };
        let which = match self
            .descriptor
            .annotations
            .as_ref()
            .and_then(|a| a.get(SHARD_ANNOTATION))
        {
            Some(shard) => format!("part {shard}"),
            None => "head".to_owned(),
        };
        format!("{what} {which} ({})", self.descriptor.digest)
    }
}

/// The documents of one snapshot (the OCI side of layout 3), planned from a state and where
/// each of its bodies is stored: what a bundle holds besides its layers, and what a repository
/// stores for a snapshot. Bundles and repositories build them here, so the same state with the
/// same layers gives the same image manifest in both.
#[derive(Debug, Clone)]
pub struct Documents {
    /// The state, normalised and checked.
    pub state: State,
    /// The state manifest's and the layer table's heads, then each shard's two parts, in the
    /// image manifest's order.
    pub documents: Vec<Document>,
    /// Every body (and dictionary) of the state, and its layer.
    pub table: BTreeMap<Digest, LayerRef>,
    /// The image manifest's bytes, and their descriptor (the snapshot's identity).
    pub manifest_bytes: Vec<u8>,
    pub manifest: Descriptor,
    /// The total size of the bodies the state refers to (uncompressed).
    pub content_bytes: u64,
    pub descriptors: usize,
}

impl Documents {
    /// Plans the documents of `state`, looking each body's layer up with `layer_of`; a body
    /// without one is [`crate::blob::BlobError::Missing`].
    pub fn plan(
        state: &State,
        layer_of: &dyn Fn(&Digest) -> Option<LayerRef>,
        opts: &Options2,
    ) -> Result<Documents, WriteError> {
        let mut state = state.clone();
        state.normalize();
        state.validate().map_err(WriteError::InvalidState)?;
        let descriptors = state.descriptors();
        let content_bytes = descriptors.iter().map(|d| d.size).sum();
        // A body's size is in its table entry (`bodySize`) only when no state document names
        // it (a project's dictionary, layout 4): the state says the others'.
        let named: BTreeSet<Digest> = descriptors.iter().map(|d| d.digest).collect();
        let layer_of = |d: &Digest| {
            layer_of(d).map(|mut r| {
                if named.contains(d) {
                    r.body_size = None;
                }
                r
            })
        };
        let missing = |digest: Digest| WriteError::Blob {
            digest,
            source: crate::blob::BlobError::Missing(digest),
        };
        // The table entries of the bodies `part` refers to, and of their dictionaries (which
        // travel even when their kind was left out).
        let table_of = |part: &State| -> Result<BTreeMap<Digest, LayerRef>, WriteError> {
            let mut table = BTreeMap::new();
            for d in part.descriptors() {
                table.insert(d.digest, layer_of(&d.digest).ok_or(missing(d.digest))?);
            }
            // Their dictionaries, and those dictionaries' own (layout 4).
            for _ in 0..MAX_CHAIN {
                let extra: Vec<Digest> = table
                    .values()
                    .filter_map(|r| r.dictionary)
                    .filter(|x| !table.contains_key(x))
                    .collect();
                for x in extra {
                    table.insert(x, layer_of(&x).ok_or(missing(x))?);
                }
            }
            Ok(table)
        };
        let document = |bytes: Vec<u8>, base: &str, shard: Option<Shard>| {
            let decoded = bytes.len() as u64;
            let (bytes, media_type) = match opts.zstd_documents && bytes.len() >= 64 {
                true => match compress(&bytes, None, DOCUMENT_LEVEL).map_err(zip_io)? {
                    z if z.len() < bytes.len() => (z, Encoding::Zstd.media_type(base)),
                    _ => (bytes, base.to_owned()),
                },
                false => (bytes, base.to_owned()),
            };
            let mut descriptor = OciDescriptor::new(media_type, Descriptor::of(&bytes));
            descriptor.annotations =
                shard.map(|s| BTreeMap::from([(SHARD_ANNOTATION.to_owned(), s.to_string())]));
            Ok::<_, WriteError>(Document {
                descriptor,
                bytes,
                decoded,
            })
        };

        // The head: every kind but the sessions' entries; then the sessions by shard.
        // (Cloned without the sessions, which the parts hold.)
        let sessions = state.sessions.take();
        let head = State {
            sessions: sessions.as_ref().map(|_| Vec::new()),
            ..state.clone()
        };
        state.sessions = sessions;
        let mut table = table_of(&head)?;
        let mut documents = vec![
            document(Manifest::new(head, None).to_bytes(), STATE_LAYER, None)?,
            document(pretty(&LayerTable::new(table.clone())), TABLE_LAYER, None)?,
        ];
        let sessions = state.sessions.as_deref().unwrap_or_default();
        let count = shard_count(sessions.len());
        let shard_of = shards_of(sessions, count);
        let mut shards: BTreeMap<u32, Vec<Session>> = BTreeMap::new();
        for s in sessions {
            shards
                .entry(shard_of[s.id.as_str()])
                .or_default()
                .push(s.clone());
        }
        for (index, sessions) in shards {
            let shard = Shard { index, count };
            let part = State {
                sessions: Some(sessions),
                ..State::default()
            };
            let part_table = table_of(&part)?;
            documents.push(document(
                Manifest::new(part, None).to_bytes(),
                STATE_LAYER,
                Some(shard),
            )?);
            documents.push(document(
                pretty(&LayerTable::new(part_table.clone())),
                TABLE_LAYER,
                Some(shard),
            )?);
            table.extend(part_table);
        }

        let kinds = kinds(&state);
        let layer_digest_of: BTreeMap<Digest, Digest> =
            table.iter().map(|(d, r)| (*d, r.layer)).collect();
        let mut layer_list: Vec<OciDescriptor> =
            documents.iter().map(|d| d.descriptor.clone()).collect();
        let mut seen = BTreeSet::new();
        let mut by_layer: Vec<(&Digest, &LayerRef)> = table.iter().collect();
        by_layer.sort_by_key(|(_, r)| r.layer);
        for (d, r) in by_layer {
            if !seen.insert(r.layer) {
                continue;
            }
            let base = match (kinds.get(d), r.body_size) {
                (Some(kind), _) => kind,
                (None, Some(_)) => DICTIONARY_LAYER,
                (None, None) => FILE_LAYER,
            };
            let mut desc = OciDescriptor::new(
                r.encoding.media_type(base),
                Descriptor {
                    digest: r.layer,
                    size: r.size,
                },
            );
            if let Some(dict) = r.dictionary {
                desc.annotations = Some(BTreeMap::from([(
                    DICTIONARY_ANNOTATION.to_owned(),
                    layer_digest_of[&dict].to_string(),
                )]));
            }
            layer_list.push(desc);
        }
        let manifest = ImageManifest {
            schema_version: 2,
            media_type: IMAGE_MANIFEST_MEDIA_TYPE.to_owned(),
            artifact_type: ARTIFACT_TYPE.to_owned(),
            config: OciDescriptor::empty(),
            layers: layer_list,
            annotations: Some(annotations(&state, opts.created.as_deref()))
                .filter(|a| !a.is_empty()),
        };
        // Compact: every snapshot of a repository writes it whole (spec/aspstate.md §13.4).
        let manifest_bytes = serde_json::to_vec(&manifest).expect("serialises");
        let limit = opts
            .max_document
            .unwrap_or(crate::bundle::Limits::default().max_manifest_bytes);
        readable_within(&documents, manifest_bytes.len() as u64, limit)?;
        Ok(Documents {
            manifest: Descriptor::of(&manifest_bytes),
            manifest_bytes,
            state,
            documents,
            table,
            content_bytes,
            descriptors: descriptors.len(),
        })
    }

    /// The layout version a bundle of these documents says ([`LAYOUT_VERSION5`] when a layer
    /// is windowed, [`LAYOUT_VERSION4`] when a layer is two dictionaries deep or a dictionary
    /// body is one no state document refers to, else [`LAYOUT_VERSION3`]), told from the image manifest by the one rule a registry pull uses
    /// too ([`layout_version_of`]), so a pulled bundle says what the pushed one said.
    pub fn layout_version(&self) -> &'static str {
        layout_version_of(&self.manifest_bytes)
    }

    /// The in-memory blobs: the image manifest, the empty config and the documents.
    pub fn blobs(&self) -> impl Iterator<Item = &[u8]> {
        [&self.manifest_bytes[..], EMPTY_BYTES]
            .into_iter()
            .chain(self.documents.iter().map(|d| &d.bytes[..]))
    }
}

/// Refuses documents a reader taking at most `limit` bytes a document would refuse
/// (spec/aspstate.md §3.5): the image manifest, and the state's documents counted as the
/// readers count them ([`DocumentBudget`]).
fn readable_within(documents: &[Document], manifest: u64, limit: u64) -> Result<(), WriteError> {
    if manifest > limit {
        return Err(WriteError::TooLarge {
            what: "the image manifest".to_owned(),
            size: manifest,
            limit,
        });
    }
    let mut budget = DocumentBudget::new(limit);
    for d in documents {
        budget
            .charge(d.bytes.len() as u64, d.decoded)
            .map_err(|over| match over {
                OverBudget::Document { limit } => WriteError::TooLarge {
                    what: d.role(),
                    size: d.charged(),
                    limit,
                },
                OverBudget::Together { total } => WriteError::TooLarge {
                    what: "the state's documents together".to_owned(),
                    size: documents.iter().map(Document::charged).sum(),
                    limit: total,
                },
            })?;
    }
    Ok(())
}

/// The layout version of a bundle whose image manifest is `manifest`, for a bundle written
/// back from a registry's copy: layout 3 when a layer has the shard annotation (a state with
/// sessions); else layout 2 when the manifest is pretty JSON (its second byte a newline: how
/// layout 2 wrote it) and layout 3 when compact (how layout 3 writes it). The bundle pulled is
/// then the bundle pushed, byte for byte. Layout 4 and 5 by what their layers hold.
pub fn layout_version_of(manifest: &[u8]) -> &'static str {
    let Ok(m) = serde_json::from_slice::<ImageManifest>(manifest) else {
        return LAYOUT_VERSION3;
    };
    let sharded = m.layers.iter().any(|l| l.shard().is_some());
    // Layout 4: a dictionary layer, or a layer whose dictionary's layer has a dictionary.
    let dictionary_of = |l: &OciDescriptor| {
        l.annotations
            .as_ref()
            .and_then(|a| a.get(DICTIONARY_ANNOTATION))
            .cloned()
    };
    let annotated: BTreeMap<String, String> = m
        .layers
        .iter()
        .filter_map(|l| Some((l.digest.to_string(), dictionary_of(l)?)))
        .collect();
    let chained = m.layers.iter().any(|l| {
        l.media_type.starts_with(DICTIONARY_LAYER)
            || dictionary_of(l).is_some_and(|x| annotated.contains_key(&x))
    });
    let windowed = m
        .layers
        .iter()
        .any(|l| l.media_type.ends_with(WINDOWED_SUFFIX));
    if windowed {
        return LAYOUT_VERSION5;
    }
    match (chained, sharded, manifest.get(1)) {
        (true, _, _) => LAYOUT_VERSION4,
        (false, false, Some(b'\n')) => LAYOUT2_VERSION,
        _ => LAYOUT_VERSION3,
    }
}

/// Where a writer finds each body's layer: staged by a pack ([`Layers`]), or stored in a
/// repository of snapshots.
pub trait LayerSource {
    /// The layer a body (by uncompressed digest) is stored in.
    fn layer_ref(&self, body: &Digest) -> Option<LayerRef>;
    /// Copies that layer's stored bytes into `out`.
    fn copy_layer(&self, body: &Digest, out: &mut dyn Write) -> io::Result<u64>;
}

impl LayerSource for Layers {
    fn layer_ref(&self, body: &Digest) -> Option<LayerRef> {
        self.blobs.get(body).map(|s| s.layer)
    }

    fn copy_layer(&self, body: &Digest, out: &mut dyn Write) -> io::Result<u64> {
        let staged = self
            .blobs
            .get(body)
            .ok_or_else(|| io::Error::other(format!("no staged layer for {body}")))?;
        self.copy_to(staged, out)
    }
}

/// Writes `state` with its `layers` as a layout 3 bundle into `out`.
pub fn write_layers_to<W: Write + Seek>(
    out: W,
    state: &State,
    layers: &dyn LayerSource,
    opts: &Options2,
    progress: &dyn Progress,
) -> Result<(W, Written), WriteError> {
    let docs = Documents::plan(state, &|d| layers.layer_ref(d), opts)?;
    let manifest_desc = docs.manifest;
    let table = &docs.table;

    // Every blob entry, by digest: in-memory documents and stored layers.
    enum Body<'a> {
        Bytes(&'a [u8]),
        Layer(&'a Digest),
    }
    let mut entries: BTreeMap<Digest, (u64, Body<'_>)> = BTreeMap::new();
    for bytes in docs.blobs() {
        let d = Descriptor::of(bytes);
        entries.insert(d.digest, (d.size, Body::Bytes(bytes)));
    }
    for d in table.keys() {
        let r = table[d];
        entries.entry(r.layer).or_insert((r.size, Body::Layer(d)));
    }
    let sizes = entries.iter().map(|(d, (s, _))| (*d, *s)).collect();
    let zip = ImageZip {
        generator: opts.generator.clone(),
        zip: opts.zip,
        layout_version: docs.layout_version(),
    };
    let (out, size) = write_image_zip(
        out,
        manifest_desc,
        &sizes,
        &zip,
        &mut |digest, w| match &entries[digest].1 {
            Body::Bytes(b) => w.write_all(b),
            Body::Layer(d) => layers.copy_layer(d, w).map(|_| ()),
        },
        progress,
    )?;
    Ok((
        out,
        Written {
            digest: manifest_desc.digest,
            size,
            blobs: docs.descriptors,
            content_bytes: docs.content_bytes,
        },
    ))
}

/// How a layout 2 bundle's zip is written, besides its blobs.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageZip {
    /// Said in `aspstate-layout` (so the tool version stays out of the manifest).
    pub generator: Option<String>,
    pub zip: ZipMethod,
    /// Said in `aspstate-layout`: [`LAYOUT_VERSION3`], or the version of a bundle pulled back
    /// ([`layout_version_of`]).
    pub layout_version: &'static str,
}

/// Writes the zip of a layout 2 or 3 bundle whose image manifest is `manifest`: `aspstate-layout`,
/// `oci-layout`, an `index.json` naming the manifest, then one `blobs/sha256/<hex>` entry per
/// digest of `blobs` (which holds the manifest itself), ascending, each filled by `copy` with
/// exactly its size in bytes.
///
/// Packing and `asp pull -o` both write through here, so the same manifest, blobs and options
/// give the same bytes, whoever writes them.
pub fn write_image_zip<W: Write + Seek>(
    out: W,
    manifest: Descriptor,
    blobs: &BTreeMap<Digest, u64>,
    opts: &ImageZip,
    copy: &mut dyn FnMut(&Digest, &mut dyn Write) -> io::Result<()>,
    progress: &dyn Progress,
) -> Result<(W, u64), WriteError> {
    if blobs.get(&manifest.digest) != Some(&manifest.size) {
        return Err(WriteError::Blob {
            digest: manifest.digest,
            source: crate::blob::BlobError::Missing(manifest.digest),
        });
    }
    let index = ImageIndex {
        schema_version: 2,
        media_type: INDEX_MEDIA_TYPE.to_owned(),
        manifests: vec![OciDescriptor {
            artifact_type: Some(ARTIFACT_TYPE.to_owned()),
            ..OciDescriptor::new(IMAGE_MANIFEST_MEDIA_TYPE, manifest)
        }],
    };
    let index_bytes = pretty(&index);
    let method = |size: u64| match opts.zip {
        ZipMethod::Deflate if size >= 64 => CompressionMethod::Deflated,
        _ => CompressionMethod::Stored,
    };
    let mut zip = ZipWriter::new(out);
    let layout = Layout {
        layout_version: opts.layout_version.to_owned(),
        ..Layout::current(opts.generator.clone())
    }
    .to_bytes();
    for (name, bytes, m) in [
        (LAYOUT_ENTRY, &layout[..], CompressionMethod::Stored),
        (
            OCI_LAYOUT_ENTRY,
            OCI_LAYOUT_BYTES,
            CompressionMethod::Stored,
        ),
        (
            INDEX_ENTRY,
            &index_bytes[..],
            method(index_bytes.len() as u64),
        ),
    ] {
        zip.start_file(name, entry_options(m, bytes.len() as u64))?;
        zip.write_all(bytes).map_err(zip_io)?;
    }
    progress.begin("writing bundle", Some(blobs.values().sum()));
    for (digest, size) in blobs {
        zip.start_file(blob_entry_name(digest), entry_options(method(*size), *size))?;
        let mut w = Advance {
            inner: &mut zip,
            progress,
            written: 0,
            failed: false,
        };
        // An error of the output is writing's; any other is the blob's (one that does not
        // match its digest, a layer missing from a repository: its class says which).
        copy(digest, &mut w).map_err(|e| {
            if w.failed {
                zip_io(e)
            } else {
                WriteError::Blob {
                    digest: *digest,
                    source: crate::blob::BlobError::Other(e),
                }
            }
        })?;
        if w.written != *size {
            return Err(WriteError::Blob {
                digest: *digest,
                source: crate::blob::BlobError::SizeMismatch {
                    digest: *digest,
                    expected: *size,
                    actual: w.written,
                },
            });
        }
    }
    progress.finish();
    let mut out = zip.finish()?;
    let size = out.stream_position().map_err(zip_io)?;
    Ok((out, size))
}

struct Advance<'a, W: Write> {
    inner: &'a mut W,
    progress: &'a dyn Progress,
    written: u64,
    /// Whether writing into the output failed.
    failed: bool,
}

impl<W: Write> Write for Advance<'_, W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf).inspect_err(|_| self.failed = true)?;
        self.progress.advance(n as u64);
        self.written += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush().inspect_err(|_| self.failed = true)
    }
}

fn zip_io(e: io::Error) -> WriteError {
    WriteError::Zip(zip::result::ZipError::Io(e))
}

/// Writes a layout 2 bundle to `path` atomically (temporary file, sync, rename); an existing
/// `path` is replaced only with `force`.
pub fn write_layers_file(
    path: &Path,
    state: &State,
    layers: &dyn LayerSource,
    opts: &Options2,
    force: bool,
    progress: &dyn Progress,
) -> Result<Written, WriteError> {
    crate::bundle::write::atomic(path, force, |file| {
        let (writer, written) = write_layers_to(
            BufWriter::with_capacity(256 * 1024, file),
            state,
            layers,
            opts,
            progress,
        )?;
        let file = writer.into_inner().map_err(|e| zip_io(e.into_error()))?;
        Ok((file, written))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bundle::Bundle;
    use std::io::{Cursor, Read};

    #[test]
    fn the_layout_of_a_pulled_manifest_is_the_layout_that_wrote_it() {
        let m = |layers: serde_json::Value| {
            serde_json::json!({"schemaVersion": 2, "mediaType": IMAGE_MANIFEST_MEDIA_TYPE,
                "artifactType": ARTIFACT_TYPE, "config": OciDescriptor::empty(), "layers": layers})
        };
        let layer = |shard: Option<&str>| {
            let mut l = serde_json::json!({"mediaType": STATE_LAYER,
                "digest": Descriptor::of(b"x").digest.to_string(), "size": 1});
            if let Some(s) = shard {
                l["annotations"] = serde_json::json!({SHARD_ANNOTATION: s});
            }
            l
        };
        let unsharded = m(serde_json::json!([layer(None)]));
        let sharded = m(serde_json::json!([layer(None), layer(Some("0/1"))]));
        let pretty = |v: &serde_json::Value| serde_json::to_vec_pretty(v).unwrap();
        let compact = |v: &serde_json::Value| serde_json::to_vec(v).unwrap();
        assert_eq!(layout_version_of(&pretty(&unsharded)), LAYOUT2_VERSION);
        assert_eq!(layout_version_of(&compact(&unsharded)), LAYOUT_VERSION3);
        assert_eq!(layout_version_of(&pretty(&sharded)), LAYOUT_VERSION3);
        assert_eq!(layout_version_of(&compact(&sharded)), LAYOUT_VERSION3);
    }

    /// A state whose documents a reader would refuse (spec §3.5) is refused when planned, so
    /// no bundle or snapshot is written that cannot be read back.
    #[test]
    fn documents_beyond_their_readers_limits_are_not_planned() {
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/state.aspstate");
        let bundle = Bundle::open(&sample).unwrap();
        let state = bundle.manifest().state.clone();
        let plan = |max| {
            let opts = Options2 {
                zstd_documents: true,
                max_document: Some(max),
                ..Options2::default()
            };
            Documents::plan(&state, &|d| bundle.layer_ref(d), &opts)
        };
        let docs = plan(u64::MAX).unwrap();
        let largest = docs.documents.iter().map(Document::charged).max().unwrap();
        let total: u64 = docs.documents.iter().map(Document::charged).sum();
        let manifest = docs.manifest_bytes.len() as u64;
        // The smallest limit the reader would take these documents within.
        let fits = largest.max(manifest).max(total.div_ceil(2));
        assert_eq!(plan(fits).unwrap().manifest, docs.manifest);
        let err = plan(fits - 1).unwrap_err();
        assert!(
            matches!(err, WriteError::TooLarge { limit, .. } if limit == fits - 1 || limit == 2 * (fits - 1)),
            "{err}"
        );
        assert!(err.to_string().contains("readers take at most"), "{err}");
        // The bundle reader's limit by default.
        let default = Documents::plan(&state, &|d| bundle.layer_ref(d), &Options2::default());
        assert!(default.is_ok());
    }

    /// The committed sample (layout 3) and the layout 2 one, each written again from nothing
    /// but its image manifest and stored blobs (what a registry holds), are the same files:
    /// what `asp pull -o` relies on.
    #[test]
    fn a_bundle_rewritten_from_its_stored_blobs_is_the_same_bytes() {
        for path in [
            "../samples/state.aspstate",
            "../tests/fixtures/layout-2/state.aspstate",
        ] {
            rewritten_from_its_stored_blobs(&Path::new(env!("CARGO_MANIFEST_DIR")).join(path));
        }
    }

    fn rewritten_from_its_stored_blobs(path: &Path) {
        let original = std::fs::read(path).unwrap();
        let bundle = Bundle::open(path).unwrap();
        let manifest = bundle.image_manifest_bytes().unwrap().unwrap();
        let image = bundle.image_manifest().unwrap();
        let mut sizes: BTreeMap<Digest, u64> = image
            .layers
            .iter()
            .chain([&image.config])
            .map(|l| (l.digest, l.size))
            .collect();
        let md = Descriptor::of(&manifest);
        assert_eq!(md.digest, bundle.digest());
        sizes.insert(md.digest, md.size);
        let opts = ImageZip {
            generator: bundle.layout().generator.clone(),
            zip: ZipMethod::Stored,
            layout_version: layout_version_of(&manifest),
        };
        assert_eq!(opts.layout_version, bundle.layout().layout_version);
        let copy = &mut |d: &Digest, w: &mut dyn Write| -> io::Result<()> {
            let mut r = bundle
                .open_stored(&Descriptor {
                    digest: *d,
                    size: sizes[d],
                })
                .map_err(io::Error::other)?;
            let mut buf = Vec::new();
            r.read_to_end(&mut buf)?;
            w.write_all(&buf)
        };
        let (out, size) = write_image_zip(
            Cursor::new(Vec::new()),
            md,
            &sizes,
            &opts,
            copy,
            &crate::progress::Quiet,
        )
        .unwrap();
        assert_eq!(size, original.len() as u64);
        assert!(out.into_inner() == original);

        // A copy that gives the wrong number of bytes is refused, not written.
        let short = &mut |_: &Digest, w: &mut dyn Write| w.write_all(b"x");
        assert!(
            write_image_zip(
                Cursor::new(Vec::new()),
                md,
                &sizes,
                &opts,
                short,
                &crate::progress::Quiet
            )
            .is_err()
        );
    }
}
