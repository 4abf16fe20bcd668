//! Blob stores: where file bodies live while a state is built or read.
//!
//! A converter reading a native store writes each body into a [`BlobSink`] and keeps only the
//! returned [`Descriptor`]; whoever consumes the state opens bodies again through a
//! [`BlobSource`]. A [`StagingStore`] (a directory of files named by digest, like an OCI layout's
//! `blobs/sha256/`) backs packing, so memory does not grow with the size of the store; a
//! [`crate::bundle::Bundle`] is the read-only source behind unpacking.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::digest::{Descriptor, Digest, Hasher, HashingWriter, VerifyingReader};

/// Errors of blob stores.
#[derive(Debug, thiserror::Error)]
pub enum BlobError {
    #[error("blob {0} is not in this store")]
    Missing(Digest),
    #[error("blob {digest} is stored with {actual} bytes, not the {expected} its descriptor says")]
    SizeMismatch {
        digest: Digest,
        expected: u64,
        actual: u64,
    },
    #[error("blob store I/O at {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Other(#[from] io::Error),
}

impl crate::error::Classify for BlobError {
    /// A blob that is missing or of the wrong size is the store's data not matching what was
    /// promised. Other I/O is the store's (a staging directory that cannot be written, a bundle
    /// that cannot be read), unless it carries an integrity error.
    fn class(&self) -> crate::error::ErrorClass {
        use crate::error::{ErrorClass, io_class};
        match self {
            BlobError::Missing(_) | BlobError::SizeMismatch { .. } => ErrorClass::Integrity,
            BlobError::Io { source, .. } | BlobError::Other(source) => {
                io_class(source, ErrorClass::Store)
            }
        }
    }
}

/// Something blobs can be written into.
pub trait BlobSink: Send + Sync {
    /// Starts a new blob. Write its bytes, then call [`BlobWrite::finish`] for its descriptor.
    fn begin(&self) -> Result<Box<dyn BlobWrite + '_>, BlobError>;

    /// Starts a new blob of about `size` bytes (a file whose length is known): a store that
    /// buffers bodies makes room once instead of growing by copies. The default ignores it.
    fn begin_sized(&self, size: u64) -> Result<Box<dyn BlobWrite + '_>, BlobError> {
        let _ = size;
        self.begin()
    }

    /// Starts a new blob whose bytes derive from `base`, a blob already written into this
    /// sink: a session's update stream from its native transcript, which shares most of its
    /// text. A store may compress the new blob against `base` (a dictionary); the default
    /// ignores the hint. The descriptor returned is the same either way.
    fn begin_derived(&self, base: &Descriptor) -> Result<Box<dyn BlobWrite + '_>, BlobError> {
        let _ = base;
        self.begin()
    }

    /// Starts a session's transcript (`size` bytes) of the project `path` is in: its file's
    /// path, under a folder [`BlobSink::predict_dictionary`] may have named, or a path that
    /// names its project itself when the store's folders are not projects (Codex's are days).
    /// A store may compress it against that project's dictionary (see
    /// [`crate::bundle::layers::LayerStore`]). The default is [`BlobSink::begin_sized`]; the
    /// descriptor is the same either way.
    fn begin_transcript(
        &self,
        path: &Path,
        size: u64,
    ) -> Result<Box<dyn BlobWrite + '_>, BlobError> {
        let _ = path;
        self.begin_sized(size)
    }

    /// Says, before a store is read, that the transcripts under `folder` (a folder, or a path that
    /// names a project) are one project's and that `dictionary` will be its dictionary (the first
    /// MiB, 512 or 256 KiB of one of them): a store that compresses against project dictionaries
    /// then does so as the transcripts are written, not again at the end. Only a prediction: the
    /// state decides. The default ignores it.
    fn predict_dictionary(&self, folder: &Path, dictionary: &[u8]) -> Result<(), BlobError> {
        let _ = (folder, dictionary);
        Ok(())
    }

    /// Stores `bytes` whole.
    fn put(&self, bytes: &[u8]) -> Result<Descriptor, BlobError> {
        let mut w = self.begin_sized(bytes.len() as u64)?;
        w.write_all(bytes)?;
        w.finish()
    }

    /// Stores everything `reader` yields.
    fn put_reader(&self, reader: &mut dyn Read) -> Result<Descriptor, BlobError> {
        let mut w = self.begin()?;
        io::copy(reader, &mut w)?;
        w.finish()
    }
}

/// A blob being written.
pub trait BlobWrite: Write {
    /// Ends the blob. Identical content is stored once.
    fn finish(self: Box<Self>) -> Result<Descriptor, BlobError>;
}

/// Something blobs can be read from.
pub trait BlobSource: Send + Sync {
    /// Opens a blob. The reader checks size and digest and fails at its end if they do not
    /// match, so consumers must read to the end before trusting what they wrote.
    fn open(&self, blob: &Descriptor) -> Result<Box<dyn Read + Send + '_>, BlobError>;

    /// Reads a whole blob into memory. For bodies known to be small (instructions, notes,
    /// settings files); sessions should be streamed with [`BlobSource::open`].
    fn read_all(&self, blob: &Descriptor) -> Result<Vec<u8>, BlobError> {
        let mut out = Vec::with_capacity(usize::try_from(blob.size).unwrap_or(0).min(1 << 24));
        self.open(blob)?.read_to_end(&mut out)?;
        Ok(out)
    }
}

/// Blobs in a temporary directory, one file per digest.
///
/// Create it next to the output so the spooled bodies land on the same filesystem and not in a
/// `/tmp` that may be memory-backed. The directory is removed when the store is dropped, and
/// locked while it lives, so that one a killed process left behind (conversations,
/// decompressed, in the home a restore writes to) is swept by the next write there
/// ([`crate::bundle::leftovers`]; found by review helper-123).
#[derive(Debug)]
pub struct StagingStore {
    dir: crate::bundle::leftovers::StagingDir,
    counter: AtomicU64,
}

impl StagingStore {
    /// A new, empty store in a fresh directory under `parent`.
    pub fn new_in(parent: &Path) -> Result<Self, BlobError> {
        let dir = crate::bundle::leftovers::staging_dir_named(parent, ".aspstate-staging-")
            .map_err(|source| BlobError::Io {
                path: parent.to_path_buf(),
                source,
            })?;
        Ok(StagingStore {
            dir,
            counter: AtomicU64::new(0),
        })
    }

    fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.dir.path().join(digest.hex())
    }
}

struct StagingWriter<'a> {
    store: &'a StagingStore,
    tmp_path: PathBuf,
    out: HashingWriter<BufWriter<File>>,
}

impl Write for StagingWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.out.flush()
    }
}

impl BlobWrite for StagingWriter<'_> {
    fn finish(self: Box<Self>) -> Result<Descriptor, BlobError> {
        let StagingWriter {
            store,
            tmp_path,
            out,
        } = *self;
        let (buf, descriptor) = out.finish();
        // No fsync: staged blobs are scratch data; the bundle written from them is synced.
        buf.into_inner()
            .map_err(|e| e.into_error())
            .map_err(|source| BlobError::Io {
                path: tmp_path.clone(),
                source,
            })?;
        let final_path = store.blob_path(&descriptor.digest);
        if final_path.exists() {
            fs::remove_file(&tmp_path).map_err(|source| BlobError::Io {
                path: tmp_path,
                source,
            })?;
        } else {
            fs::rename(&tmp_path, &final_path).map_err(|source| BlobError::Io {
                path: final_path,
                source,
            })?;
        }
        Ok(descriptor)
    }
}

impl BlobSink for StagingStore {
    fn begin(&self) -> Result<Box<dyn BlobWrite + '_>, BlobError> {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let tmp_path = self.dir.path().join(format!("partial-{n}"));
        let file = File::create(&tmp_path).map_err(|source| BlobError::Io {
            path: tmp_path.clone(),
            source,
        })?;
        Ok(Box::new(StagingWriter {
            store: self,
            tmp_path,
            out: HashingWriter::new(BufWriter::with_capacity(256 * 1024, file)),
        }))
    }
}

impl BlobSource for StagingStore {
    fn open(&self, blob: &Descriptor) -> Result<Box<dyn Read + Send + '_>, BlobError> {
        let path = self.blob_path(&blob.digest);
        let file = File::open(&path).map_err(|e| {
            if e.kind() == io::ErrorKind::NotFound {
                BlobError::Missing(blob.digest)
            } else {
                BlobError::Io {
                    path: path.clone(),
                    source: e,
                }
            }
        })?;
        let actual = file
            .metadata()
            .map_err(|source| BlobError::Io { path, source })?
            .len();
        if actual != blob.size {
            return Err(BlobError::SizeMismatch {
                digest: blob.digest,
                expected: blob.size,
                actual,
            });
        }
        Ok(Box::new(VerifyingReader::new(
            io::BufReader::with_capacity(256 * 1024, file),
            *blob,
        )))
    }
}

/// Blobs in memory: for states that arrive whole over the wire and for tests.
#[derive(Debug, Default)]
pub struct MemoryStore {
    blobs: Mutex<BTreeMap<Digest, Vec<u8>>>,
}

impl MemoryStore {
    pub fn new() -> Self {
        Self::default()
    }

    /// Number of distinct blobs held.
    pub fn len(&self) -> usize {
        self.blobs.lock().expect("blob map poisoned").len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

struct MemoryWriter<'a> {
    store: &'a MemoryStore,
    buf: Vec<u8>,
}

impl Write for MemoryWriter<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.buf.extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl BlobWrite for MemoryWriter<'_> {
    fn finish(self: Box<Self>) -> Result<Descriptor, BlobError> {
        let mut h = Hasher::new();
        h.update(&self.buf);
        let d = h.finish();
        self.store
            .blobs
            .lock()
            .expect("blob map poisoned")
            .entry(d.digest)
            .or_insert(self.buf);
        Ok(d)
    }
}

impl BlobSink for MemoryStore {
    fn begin(&self) -> Result<Box<dyn BlobWrite + '_>, BlobError> {
        Ok(Box::new(MemoryWriter {
            store: self,
            buf: Vec::new(),
        }))
    }
}

impl BlobSource for MemoryStore {
    fn open(&self, blob: &Descriptor) -> Result<Box<dyn Read + Send + '_>, BlobError> {
        let bytes = self
            .blobs
            .lock()
            .expect("blob map poisoned")
            .get(&blob.digest)
            .cloned()
            .ok_or(BlobError::Missing(blob.digest))?;
        Ok(Box::new(VerifyingReader::new(
            io::Cursor::new(bytes),
            *blob,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(store: &(impl BlobSink + BlobSource)) {
        let a = store.put(b"alpha").unwrap();
        let again = store.put(b"alpha").unwrap();
        assert_eq!(a, again);
        let mut w = store.begin().unwrap();
        w.write_all(b"be").unwrap();
        w.write_all(b"ta").unwrap();
        let b = w.finish().unwrap();
        assert_eq!(b, Descriptor::of(b"beta"));
        assert_eq!(store.read_all(&a).unwrap(), b"alpha");
        assert_eq!(store.read_all(&b).unwrap(), b"beta");
        let missing = Descriptor::of(b"gamma");
        assert!(matches!(store.open(&missing), Err(BlobError::Missing(_))));
    }

    #[test]
    fn staging_store_dedups_and_reads_back() {
        let parent = tempfile::tempdir().unwrap();
        let store = StagingStore::new_in(parent.path()).unwrap();
        round_trip(&store);
        // Two distinct blobs, no partial files left behind.
        assert_eq!(fs::read_dir(store.dir.path()).unwrap().count(), 2);
    }

    #[test]
    fn memory_store_dedups_and_reads_back() {
        let store = MemoryStore::new();
        round_trip(&store);
        assert_eq!(store.len(), 2);
    }

    #[test]
    fn a_lying_descriptor_is_caught() {
        let store = MemoryStore::new();
        let real = store.put(b"alpha").unwrap();
        let lie = Descriptor {
            digest: real.digest,
            size: 3,
        };
        let mut out = Vec::new();
        assert!(store.open(&lie).unwrap().read_to_end(&mut out).is_err());
    }
}

/// Several sources read as one: each blob is taken from the first source that has it.
///
/// Used when part of a state was rewritten (path remapping) into a new store while the rest
/// stays in the bundle it came from.
pub struct Overlay<'a> {
    sources: Vec<&'a dyn BlobSource>,
}

impl std::fmt::Debug for Overlay<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Overlay")
            .field("sources", &self.sources.len())
            .finish()
    }
}

impl<'a> Overlay<'a> {
    pub fn new(sources: Vec<&'a dyn BlobSource>) -> Self {
        Overlay { sources }
    }
}

impl BlobSource for Overlay<'_> {
    fn open(&self, blob: &Descriptor) -> Result<Box<dyn Read + Send + '_>, BlobError> {
        for s in &self.sources {
            match s.open(blob) {
                Err(BlobError::Missing(_)) => continue,
                other => return other,
            }
        }
        Err(BlobError::Missing(blob.digest))
    }
}

/// A sink that keeps nothing: for counting or checking what a read would give.
#[derive(Debug, Default, Clone, Copy)]
pub struct Discard;

struct DiscardWriter(Hasher);

impl Write for DiscardWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.update(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl BlobWrite for DiscardWriter {
    fn finish(self: Box<Self>) -> Result<Descriptor, BlobError> {
        Ok(self.0.finish())
    }
}

impl BlobSink for Discard {
    fn begin(&self) -> Result<Box<dyn BlobWrite + '_>, BlobError> {
        Ok(Box::new(DiscardWriter(Hasher::new())))
    }
}
