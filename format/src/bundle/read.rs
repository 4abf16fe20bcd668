//! Reading a bundle that may be broken or hostile.
//!
//! Opening a bundle checks its whole structure without reading blob data: the marker and its
//! major version, unique entry names, no encrypted, symlink or directory entries, nothing but
//! `blobs/sha256/<hex>` besides the two documents, local headers that agree with the central
//! directory and do not overlap, declared sizes and counts within [`Limits`], a manifest that
//! parses, and a blob of the right size behind every descriptor. Blob data is checked as it is
//! read: every reader verifies size and sha256 at its end. [`verify_file`] reads everything and
//! names every bad entry instead of stopping at the first.
//!
//! Zip entry names are never used as paths: they are only ever matched against the three
//! allowed forms. Paths come from the manifest, whose names are validated when it is parsed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs::File;
use std::io::{self, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use flate2::read::DeflateDecoder;
use zip::{CompressionMethod, ZipArchive};

use crate::blob::{BlobError, BlobSource};
use crate::bundle::layout::{
    BLOB_PREFIX, BUNDLE_MEDIA_TYPE, LAYOUT_ENTRY, LAYOUT_MAJOR, Layout, MANIFEST_ENTRY,
    MANIFEST_MEDIA_TYPE, Manifest, SCHEMA_VERSION,
};
use crate::digest::{Descriptor, Digest, IntegrityError, VerifyingReader};
use crate::export::for_each_update;
use crate::progress::Progress;
use crate::state::State;

/// Bounds checked before anything is decompressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Most entries a bundle may have.
    pub max_entries: u64,
    /// Largest `manifest.json`, uncompressed.
    pub max_manifest_bytes: u64,
    /// Largest sum of declared uncompressed sizes.
    pub max_total_bytes: u64,
    /// Largest uncompressed/compressed ratio allowed for an entry over 16 MiB. Deflate peaks
    /// near 1032:1 on runs of one byte; real session streams compress about 10:1.
    pub max_ratio: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_entries: 1_000_000,
            max_manifest_bytes: 64 << 20,
            max_total_bytes: 256 << 30,
            max_ratio: 500,
        }
    }
}

const LAYOUT_MAX: u64 = 64 << 10;
const RATIO_FLOOR: u64 = 16 << 20;
const LOCAL_HEADER_SIG: u32 = 0x0403_4b50;
const CENTRAL_HEADER_SIG: u32 = 0x0201_4b50;

/// One thing wrong with a bundle, and the entry it concerns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    pub entry: Option<String>,
    pub message: String,
}

impl Problem {
    fn at(entry: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            entry: Some(entry.into()),
            message: message.into(),
        }
    }

    fn whole(message: impl Into<String>) -> Self {
        Problem {
            entry: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.entry {
            Some(e) => write!(f, "{e}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Errors opening a bundle.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("cannot read {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{} is not a usable bundle:{}", .path.display(), list(.problems))]
    Invalid {
        path: PathBuf,
        problems: Vec<Problem>,
    },
}

impl ReadError {
    /// True when the bundle itself is at fault (corrupt, truncated, hostile), as opposed to the
    /// file not being readable at all.
    pub fn is_integrity(&self) -> bool {
        matches!(self, ReadError::Invalid { .. })
    }
}

impl crate::error::Classify for ReadError {
    fn class(&self) -> crate::error::ErrorClass {
        use crate::error::{ErrorClass, io_class};
        match self {
            ReadError::Invalid { .. } => ErrorClass::Integrity,
            ReadError::Io { source, .. } => io_class(source, ErrorClass::Source),
        }
    }
}

fn list(problems: &[Problem]) -> String {
    problems.iter().map(|p| format!("\n  - {p}")).collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Method {
    Stored,
    Deflated,
}

/// Where one entry's data sits in the file.
#[derive(Debug, Clone, Copy)]
struct EntryData {
    data_start: u64,
    compressed: u64,
    size: u64,
    method: Method,
}

/// A file readable at any offset from several readers at once.
#[derive(Debug, Clone)]
struct SharedFile(Arc<File>);

impl SharedFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        #[cfg(unix)]
        {
            std::os::unix::fs::FileExt::read_at(&*self.0, buf, offset)
        }
        #[cfg(windows)]
        {
            std::os::windows::fs::FileExt::seek_read(&*self.0, buf, offset)
        }
    }

    fn read_exact_at(&self, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
        while !buf.is_empty() {
            match self.read_at(buf, offset)? {
                0 => return Err(io::ErrorKind::UnexpectedEof.into()),
                n => {
                    buf = &mut buf[n..];
                    offset += n as u64;
                }
            }
        }
        Ok(())
    }
}

/// A reader over `[pos, end)` of a shared file.
#[derive(Debug)]
struct Window {
    file: SharedFile,
    pos: u64,
    end: u64,
}

impl Read for Window {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let left = self.end - self.pos;
        if left == 0 {
            return Ok(0);
        }
        let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
        let n = self.file.read_at(&mut buf[..want], self.pos)?;
        if n == 0 {
            return Err(
                IntegrityError("the bundle file ends inside an entry".to_owned()).into_io(),
            );
        }
        self.pos += n as u64;
        Ok(n)
    }
}

impl EntryData {
    /// The entry's uncompressed bytes, at most `size` of them.
    fn raw_reader(&self, file: &SharedFile) -> Box<dyn Read + Send> {
        let window = io::BufReader::with_capacity(
            128 * 1024,
            Window {
                file: file.clone(),
                pos: self.data_start,
                end: self.data_start + self.compressed,
            },
        );
        match self.method {
            Method::Stored => Box::new(window),
            Method::Deflated => Box::new(Corruption(DeflateDecoder::new(window))),
        }
    }
}

/// Marks any failure of the inner reader as an integrity failure: a blob whose compressed
/// stream does not decompress or ends early is as bad as one with the wrong digest.
struct Corruption<R>(R);

impl<R: Read> Read for Corruption<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf).map_err(|e| {
            if crate::digest::is_integrity_error(&e) {
                e
            } else {
                IntegrityError(format!("the compressed data is damaged ({e})")).into_io()
            }
        })
    }
}

/// What a structural scan found, kept even when it found problems so `verify` can go on.
struct Scan {
    file: SharedFile,
    problems: Vec<Problem>,
    warnings: Vec<Problem>,
    layout: Option<Layout>,
    manifest: Option<Manifest>,
    manifest_digest: Option<Digest>,
    blobs: BTreeMap<Digest, EntryData>,
}

/// An opened, structurally sound bundle.
#[derive(Debug)]
pub struct Bundle {
    path: PathBuf,
    file: SharedFile,
    layout: Layout,
    manifest: Manifest,
    digest: Digest,
    blobs: BTreeMap<Digest, EntryData>,
    warnings: Vec<Problem>,
}

impl Bundle {
    /// Opens and checks a bundle with the default limits.
    pub fn open(path: &Path) -> Result<Bundle, ReadError> {
        Bundle::open_with(path, &Limits::default())
    }

    pub fn open_with(path: &Path, limits: &Limits) -> Result<Bundle, ReadError> {
        let scan = scan(path, limits)?;
        if !scan.problems.is_empty() {
            return Err(ReadError::Invalid {
                path: path.to_path_buf(),
                problems: scan.problems,
            });
        }
        Ok(Bundle {
            path: path.to_path_buf(),
            file: scan.file,
            layout: scan.layout.expect("no problems means a layout"),
            manifest: scan.manifest.expect("no problems means a manifest"),
            digest: scan.manifest_digest.expect("no problems means a digest"),
            blobs: scan.blobs,
            warnings: scan.warnings,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The bundle's identity: the sha256 of its `manifest.json`.
    pub fn digest(&self) -> Digest {
        self.digest
    }

    /// Things that do not stop the bundle from being used, such as blobs nothing refers to.
    pub fn warnings(&self) -> &[Problem] {
        &self.warnings
    }
}

impl BlobSource for Bundle {
    fn open(&self, blob: &Descriptor) -> Result<Box<dyn Read + Send + '_>, BlobError> {
        let entry = self
            .blobs
            .get(&blob.digest)
            .ok_or(BlobError::Missing(blob.digest))?;
        if entry.size != blob.size {
            return Err(BlobError::SizeMismatch {
                digest: blob.digest,
                expected: blob.size,
                actual: entry.size,
            });
        }
        Ok(Box::new(VerifyingReader::new(
            entry.raw_reader(&self.file),
            *blob,
        )))
    }
}

impl Bundle {
    /// Reads every blob `state` refers to, checking its size and sha256, and checks that every
    /// line of every session's updates is a `session/update` of that session. Run before
    /// writing anything, so an unusable bundle writes nothing at all.
    pub fn check_data(&self, state: &State, progress: &dyn Progress) -> Result<(), ReadError> {
        let mut problems = Vec::new();
        let refs = state.references();
        let mut seen = BTreeSet::new();
        let total = refs
            .iter()
            .filter(|(d, _)| seen.insert(d.digest))
            .map(|(d, _)| d.size)
            .sum();
        progress.begin("checking bundle data", Some(total));
        let mut checked = BTreeSet::new();
        for (d, what) in &refs {
            if !checked.insert(d.digest) {
                continue;
            }
            let name = format!("{BLOB_PREFIX}{}", d.digest.hex());
            if let Err(e) = drain(BlobSource::open(self, d), progress) {
                problems.push(Problem::at(name, format!("{e} (it holds {what})")));
            }
        }
        if problems.is_empty() {
            check_session_lines(state, self, &mut problems);
        }
        progress.finish();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(ReadError::Invalid {
                path: self.path.clone(),
                problems,
            })
        }
    }
}

fn drain(
    reader: Result<Box<dyn Read + Send + '_>, BlobError>,
    progress: &dyn Progress,
) -> Result<(), String> {
    let mut r = reader.map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(()),
            Ok(n) => progress.advance(n as u64),
            Err(e) => return Err(e.to_string()),
        }
    }
}

/// Adds a problem for every session whose updates are not all `session/update` params of it.
fn check_session_lines(state: &State, blobs: &dyn BlobSource, problems: &mut Vec<Problem>) {
    for s in state.sessions.iter().flatten() {
        if let Err(e) = for_each_update(blobs, s, |_, _| Ok(())) {
            problems.push(Problem::at(
                format!("{BLOB_PREFIX}{}", s.updates.digest.hex()),
                e.to_string(),
            ));
        }
    }
}

/// The blobs of a scan, readable before the bundle is known to be sound.
struct BlobsOnly<'a> {
    file: SharedFile,
    blobs: &'a BTreeMap<Digest, EntryData>,
}

impl BlobSource for BlobsOnly<'_> {
    fn open(&self, blob: &Descriptor) -> Result<Box<dyn Read + Send + '_>, BlobError> {
        let entry = self
            .blobs
            .get(&blob.digest)
            .ok_or(BlobError::Missing(blob.digest))?;
        Ok(Box::new(VerifyingReader::new(
            entry.raw_reader(&self.file),
            *blob,
        )))
    }
}

/// The result of a full check.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Every integrity problem found, structural and in the data.
    pub problems: Vec<Problem>,
    /// Findings that do not make the bundle unusable.
    pub warnings: Vec<Problem>,
    /// The bundle's identity, when its manifest could be read.
    pub digest: Option<Digest>,
    /// Blobs whose data was read and checked.
    pub blobs_checked: usize,
    /// Bytes of blob data read and checked.
    pub bytes_checked: u64,
}

impl VerifyReport {
    pub fn is_ok(&self) -> bool {
        self.problems.is_empty()
    }
}

/// Checks a bundle's structure and then every blob's size and sha256, collecting every
/// problem. Only an unreadable file is an `Err`.
pub fn verify_file(
    path: &Path,
    limits: &Limits,
    progress: &dyn Progress,
) -> Result<VerifyReport, ReadError> {
    let mut scan = scan(path, limits)?;
    let total = scan.blobs.values().map(|e| e.size).sum();
    progress.begin("verifying blobs", Some(total));
    let mut checked = 0;
    let mut bytes = 0;
    let mut buf = vec![0u8; 256 * 1024];
    for (digest, entry) in &scan.blobs {
        let name = format!("{BLOB_PREFIX}{}", digest.hex());
        let mut r = VerifyingReader::new(
            entry.raw_reader(&scan.file),
            Descriptor {
                digest: *digest,
                size: entry.size,
            },
        );
        let result = loop {
            match r.read(&mut buf) {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    progress.advance(n as u64);
                    bytes += n as u64;
                }
                Err(e) => break Err(e),
            }
        };
        match result {
            Ok(()) => checked += 1,
            Err(e) => scan
                .problems
                .push(Problem::at(name, describe_read_error(&e))),
        }
    }
    progress.finish();
    if let (true, Some(m)) = (scan.problems.is_empty(), &scan.manifest) {
        let bundle_view = BlobsOnly {
            file: scan.file.clone(),
            blobs: &scan.blobs,
        };
        check_session_lines(&m.state, &bundle_view, &mut scan.problems);
    }
    Ok(VerifyReport {
        problems: scan.problems,
        warnings: scan.warnings,
        digest: scan.manifest_digest,
        blobs_checked: checked,
        bytes_checked: bytes,
    })
}

fn describe_read_error(e: &io::Error) -> String {
    e.to_string()
}

fn scan(path: &Path, limits: &Limits) -> Result<Scan, ReadError> {
    let io_err = |source| ReadError::Io {
        path: path.to_path_buf(),
        source,
    };
    let file = File::open(path).map_err(io_err)?;
    let meta = file.metadata().map_err(io_err)?;
    if meta.is_dir() {
        return Err(io_err(io::Error::other("it is a directory")));
    }
    let shared = SharedFile(Arc::new(file));
    let mut scan = Scan {
        file: shared.clone(),
        problems: Vec::new(),
        warnings: Vec::new(),
        layout: None,
        manifest: None,
        manifest_digest: None,
        blobs: BTreeMap::new(),
    };
    let invalid = |p: Problem| ReadError::Invalid {
        path: path.to_path_buf(),
        problems: vec![p],
    };
    if meta.len() == 0 {
        return Err(invalid(Problem::whole("the file is empty")));
    }
    let mut magic = [0u8; 4];
    if shared.read_exact_at(&mut magic, 0).is_err() || u32::from_le_bytes(magic) != LOCAL_HEADER_SIG
    {
        return Err(invalid(Problem::whole(
            "it is not a zip archive (it does not start with a zip entry)",
        )));
    }
    let reader = BufReader::new(File::open(path).map_err(io_err)?);
    let archive = ZipArchive::new(reader).map_err(|e| {
        invalid(Problem::whole(format!(
            "its zip directory cannot be read, so the file is truncated or damaged ({e})"
        )))
    })?;
    if archive.offset() != 0 {
        scan.problems
            .push(Problem::whole("there is data before the first zip entry"));
    }
    let cd_start = archive.central_directory_start();

    // The crate's index drops duplicate names, so walk the central directory for the real list.
    let names = match central_names(path, cd_start, limits.max_entries) {
        Ok(n) => n,
        Err(e) => {
            return Err(invalid(Problem::whole(format!(
                "its zip directory is damaged ({e})"
            ))));
        }
    };
    if names.len() as u64 > limits.max_entries {
        return Err(invalid(Problem::whole(format!(
            "it has more than {} entries",
            limits.max_entries
        ))));
    }
    let mut seen = BTreeSet::new();
    for n in &names {
        if !seen.insert(n.as_slice()) {
            scan.problems.push(Problem::at(
                String::from_utf8_lossy(n),
                "this name appears more than once",
            ));
        }
    }
    match names.first() {
        Some(first) if first == LAYOUT_ENTRY.as_bytes() => {}
        Some(first) => scan.problems.push(Problem::at(
            String::from_utf8_lossy(first),
            format!("the first entry must be `{LAYOUT_ENTRY}`"),
        )),
        None => scan
            .problems
            .push(Problem::whole("the archive has no entries")),
    }

    let mut layout_entry = None;
    let mut manifest_entry = None;
    let mut total: u64 = 0;
    let mut regions = Vec::new();
    for i in 0..archive.len() {
        let Ok(e) = archive.by_index_data(i) else {
            scan.problems
                .push(Problem::whole(format!("zip entry #{i} cannot be read")));
            continue;
        };
        let name = match std::str::from_utf8(e.name_raw()) {
            Ok(n) => n.to_owned(),
            Err(_) => {
                scan.problems.push(Problem::at(
                    String::from_utf8_lossy(e.name_raw()),
                    "the entry name is not UTF-8",
                ));
                continue;
            }
        };
        let kind = classify(&name);
        if kind.is_none() {
            scan.problems.push(Problem::at(
                &name,
                format!(
                    "entries other than `{LAYOUT_ENTRY}`, `{MANIFEST_ENTRY}` and `{BLOB_PREFIX}<64 hex>` are not allowed"
                ),
            ));
        }
        let mut bad = false;
        if e.is_symlink() {
            scan.problems
                .push(Problem::at(&name, "symlink entries are not allowed"));
            bad = true;
        }
        if e.is_dir() {
            scan.problems
                .push(Problem::at(&name, "directory entries are not allowed"));
            bad = true;
        }
        if e.encrypted() {
            scan.problems
                .push(Problem::at(&name, "encrypted entries are not allowed"));
            bad = true;
        }
        let method = match e.compression() {
            CompressionMethod::Stored => Method::Stored,
            CompressionMethod::Deflated => Method::Deflated,
            other => {
                scan.problems.push(Problem::at(
                    &name,
                    format!("compression method {other:?} is not supported (only Stored and Deflate are)"),
                ));
                bad = true;
                Method::Stored
            }
        };
        let (size, compressed) = (e.size(), e.compressed_size());
        total = total.saturating_add(size);
        if size > RATIO_FLOOR && size / compressed.max(1) > limits.max_ratio {
            scan.problems.push(Problem::at(
                &name,
                format!(
                    "it claims to expand {compressed} bytes to {size}, more than {}:1; refusing a likely zip bomb",
                    limits.max_ratio
                ),
            ));
            bad = true;
        }
        let data_start = match local_data_start(&shared, e.header_start(), e.name_raw()) {
            Ok(s) => s,
            Err(msg) => {
                scan.problems.push(Problem::at(&name, msg));
                continue;
            }
        };
        let data_end = data_start.saturating_add(compressed);
        if data_end > cd_start {
            scan.problems.push(Problem::at(
                &name,
                "its data runs past the start of the zip directory (truncated or forged sizes)",
            ));
            continue;
        }
        regions.push((e.header_start(), data_end, name.clone()));
        if bad {
            continue;
        }
        let data = EntryData {
            data_start,
            compressed,
            size,
            method,
        };
        match kind {
            Some(Entry::Layout) => layout_entry = Some(data),
            Some(Entry::Manifest) => manifest_entry = Some(data),
            Some(Entry::Blob(d)) => {
                scan.blobs.insert(d, data);
            }
            None => {}
        }
    }
    if total > limits.max_total_bytes {
        scan.problems.push(Problem::whole(format!(
            "its entries would expand to {total} bytes, over the limit of {}",
            limits.max_total_bytes
        )));
        scan.blobs.clear();
    }
    regions.sort();
    for pair in regions.windows(2) {
        if pair[0].1 > pair[1].0 {
            scan.problems.push(Problem::at(
                &pair[1].2,
                format!("its data overlaps entry {}", pair[0].2),
            ));
        }
    }

    match layout_entry {
        None if !names.iter().any(|n| n == LAYOUT_ENTRY.as_bytes()) => scan
            .problems
            .push(Problem::whole(format!("it has no `{LAYOUT_ENTRY}` marker"))),
        None => {}
        Some(data) => match read_small(&shared, &data, LAYOUT_MAX) {
            Err(msg) => scan.problems.push(Problem::at(LAYOUT_ENTRY, msg)),
            Ok(bytes) => match serde_json::from_slice::<Layout>(&bytes) {
                Err(e) => scan
                    .problems
                    .push(Problem::at(LAYOUT_ENTRY, format!("it is not a layout marker: {e}"))),
                Ok(l) if l.media_type != BUNDLE_MEDIA_TYPE => scan.problems.push(Problem::at(
                    LAYOUT_ENTRY,
                    format!("media type {:?} is not {BUNDLE_MEDIA_TYPE:?}", l.media_type),
                )),
                Ok(l) => match l.major() {
                    Some(LAYOUT_MAJOR) => scan.layout = Some(l),
                    Some(m) => scan.problems.push(Problem::at(
                        LAYOUT_ENTRY,
                        format!(
                            "layout version {} has major version {m}; this asp reads {LAYOUT_MAJOR}.x only",
                            l.layout_version
                        ),
                    )),
                    None => scan.problems.push(Problem::at(
                        LAYOUT_ENTRY,
                        format!("layout version {:?} is not MAJOR.MINOR.PATCH", l.layout_version),
                    )),
                },
            },
        },
    }

    match manifest_entry {
        None if !names.iter().any(|n| n == MANIFEST_ENTRY.as_bytes()) => scan
            .problems
            .push(Problem::whole(format!("it has no `{MANIFEST_ENTRY}`"))),
        None => {}
        Some(data) if data.size > limits.max_manifest_bytes => scan.problems.push(Problem::at(
            MANIFEST_ENTRY,
            format!(
                "it is {} bytes, over the limit of {}",
                data.size, limits.max_manifest_bytes
            ),
        )),
        Some(data) => match read_small(&shared, &data, limits.max_manifest_bytes) {
            Err(msg) => scan.problems.push(Problem::at(MANIFEST_ENTRY, msg)),
            Ok(bytes) => {
                scan.manifest_digest = Some(Digest::of(&bytes));
                check_manifest(&bytes, &mut scan);
            }
        },
    }
    Ok(scan)
}

enum Entry {
    Layout,
    Manifest,
    Blob(Digest),
}

fn classify(name: &str) -> Option<Entry> {
    match name {
        LAYOUT_ENTRY => Some(Entry::Layout),
        MANIFEST_ENTRY => Some(Entry::Manifest),
        _ => name
            .strip_prefix(BLOB_PREFIX)
            .and_then(|hex| Digest::from_hex(hex).ok())
            .map(Entry::Blob),
    }
}

fn check_manifest(bytes: &[u8], scan: &mut Scan) {
    // Check the envelope first, so a newer schema gets a clear answer rather than a field error.
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Envelope {
        schema_version: Option<serde_json::Value>,
        media_type: Option<serde_json::Value>,
    }
    let env: Envelope = match serde_json::from_slice(bytes) {
        Ok(e) => e,
        Err(e) => {
            scan.problems.push(Problem::at(
                MANIFEST_ENTRY,
                format!("it is not a JSON object: {e}"),
            ));
            return;
        }
    };
    if env.schema_version != Some(serde_json::Value::from(SCHEMA_VERSION)) {
        scan.problems.push(Problem::at(
            MANIFEST_ENTRY,
            format!(
                "schemaVersion {} is not supported (this asp reads {SCHEMA_VERSION})",
                env.schema_version
                    .map_or_else(|| "(missing)".to_owned(), |v| v.to_string())
            ),
        ));
        return;
    }
    if env.media_type != Some(serde_json::Value::from(MANIFEST_MEDIA_TYPE)) {
        scan.problems.push(Problem::at(
            MANIFEST_ENTRY,
            format!("mediaType is not {MANIFEST_MEDIA_TYPE:?}"),
        ));
        return;
    }
    let manifest: Manifest = match serde_json::from_slice(bytes) {
        Ok(m) => m,
        Err(e) => {
            scan.problems
                .push(Problem::at(MANIFEST_ENTRY, e.to_string()));
            return;
        }
    };
    if let Err(errors) = manifest.state.validate() {
        for e in errors {
            scan.problems
                .push(Problem::at(MANIFEST_ENTRY, e.to_string()));
        }
    }
    let mut referenced = BTreeSet::new();
    for (d, what) in manifest.state.references() {
        referenced.insert(d.digest);
        match scan.blobs.get(&d.digest) {
            None => scan.problems.push(Problem::at(
                format!("{BLOB_PREFIX}{}", d.digest.hex()),
                format!("missing, but {what} refers to it"),
            )),
            Some(e) if e.size != d.size => scan.problems.push(Problem::at(
                format!("{BLOB_PREFIX}{}", d.digest.hex()),
                format!(
                    "it holds {} bytes, but {what} says {} (checked before any data is read)",
                    e.size, d.size
                ),
            )),
            Some(_) => {}
        }
    }
    for d in scan.blobs.keys() {
        if !referenced.contains(d) {
            scan.warnings.push(Problem::at(
                format!("{BLOB_PREFIX}{}", d.hex()),
                "nothing in the manifest refers to this blob",
            ));
        }
    }
    scan.manifest = Some(manifest);
}

/// Reads a small entry whole, checking it expands to exactly its declared size.
fn read_small(file: &SharedFile, data: &EntryData, max: u64) -> Result<Vec<u8>, String> {
    if data.size > max {
        return Err(format!(
            "it is {} bytes, over the limit of {max}",
            data.size
        ));
    }
    let mut out = Vec::with_capacity(usize::try_from(data.size).unwrap_or(0));
    data.raw_reader(file)
        .take(data.size + 1)
        .read_to_end(&mut out)
        .map_err(|e| describe_read_error(&e))?;
    if out.len() as u64 != data.size {
        return Err(format!(
            "it expands to {} bytes, not the declared {}",
            out.len(),
            data.size
        ));
    }
    Ok(out)
}

/// Where an entry's data starts, after checking that its local header agrees with the central
/// directory's name for it.
fn local_data_start(file: &SharedFile, header_start: u64, name: &[u8]) -> Result<u64, String> {
    let mut fixed = [0u8; 30];
    file.read_exact_at(&mut fixed, header_start)
        .map_err(|_| "its local header lies outside the file".to_owned())?;
    if u32::from_le_bytes(fixed[0..4].try_into().expect("4 bytes")) != LOCAL_HEADER_SIG {
        return Err("its local header is missing or damaged".to_owned());
    }
    let name_len = u64::from(u16::from_le_bytes([fixed[26], fixed[27]]));
    let extra_len = u64::from(u16::from_le_bytes([fixed[28], fixed[29]]));
    let mut local_name = vec![0u8; name_len as usize];
    file.read_exact_at(&mut local_name, header_start + 30)
        .map_err(|_| "its local header lies outside the file".to_owned())?;
    if local_name != name {
        return Err(format!(
            "its local header names it {:?}, the zip directory {:?}",
            String::from_utf8_lossy(&local_name),
            String::from_utf8_lossy(name)
        ));
    }
    Ok(header_start + 30 + name_len + extra_len)
}

/// The raw names in the central directory, in order, duplicates included.
fn central_names(path: &Path, start: u64, max: u64) -> io::Result<Vec<Vec<u8>>> {
    let mut r = BufReader::new(File::open(path)?);
    r.seek(SeekFrom::Start(start))?;
    let mut names = Vec::new();
    loop {
        let mut fixed = [0u8; 46];
        match r.read_exact(&mut fixed) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(e),
        }
        if u32::from_le_bytes(fixed[0..4].try_into().expect("4 bytes")) != CENTRAL_HEADER_SIG {
            break;
        }
        let n = u16::from_le_bytes([fixed[28], fixed[29]]) as usize;
        let m = i64::from(u16::from_le_bytes([fixed[30], fixed[31]]));
        let k = i64::from(u16::from_le_bytes([fixed[32], fixed[33]]));
        let mut name = vec![0u8; n];
        r.read_exact(&mut name)?;
        r.seek_relative(m + k)?;
        names.push(name);
        if names.len() as u64 > max {
            break;
        }
    }
    Ok(names)
}
