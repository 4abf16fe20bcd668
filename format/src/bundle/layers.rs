//! Packing into layers: a [`BlobSink`] that compresses and hashes distinct bodies on every
//! core while the converter goes on, and stages only the compressed layers.
//!
//! A body is hashed as it is written (on the writer's thread) and kept in memory until a
//! worker has compressed it; the compressed bytes are appended to one staging file, so what
//! the bundle writer later copies in a fixed order is the layers, never the uncompressed
//! bodies. What a layer holds depends only on the body, the options and the dictionary hints
//! given for it, never on the number of threads or on timing:
//! - a body's dictionary is chosen from the hints of every write of that body (the smallest
//!   eligible digest wins), and a body compressed against another choice is compressed again
//!   when the store is finished;
//! - a dictionary is itself a body written without a hint, of at most [`SPILL`] bytes, whose
//!   bytes do not start with zstd's dictionary magic;
//! - with [`LayerStore::finish_for`], each transcript is compressed against its project's
//!   dictionary ([`crate::bundle::projects`], layout 4): a body of its own, the first bytes of
//!   one of the project's transcripts. A reader that packs a harness's store predicts each
//!   project's dictionary from its survey ([`BlobSink::predict_dictionary`]) and says which
//!   bodies are transcripts as it writes them ([`BlobSink::begin_transcript`]), so they are
//!   compressed once; a wrong prediction (a file that changed in between) only costs the
//!   compression again at the end;
//! - the update stream of a transcript over [`WINDOWED_BASE`] is compressed in windows of it
//!   (layout 5, [`crate::bundle::windows`]), frame by frame as the converter writes it, so
//!   what is held of it is one frame, not the whole stream.
//!
//! Memory stays bounded: at most [`BUDGET`] bytes of bodies wait for a worker (a writer blocks
//! beyond that), recently finished bodies are cached for use as dictionaries up to [`CACHE`]
//! bytes (older ones are read back from their layer), a body compressed alone (a transcript,
//! or the stream of one over [`SPILL`]) larger than [`WINDOWED_BASE`] goes to a file as it is
//! written and a worker compresses it from there as it streams, and any other body larger
//! than [`SPILL`] is compressed as it streams, on the writer's thread, into a file of its own
//! (the layers of both are made in files too). A body still in
//! memory when a body derived from it begins is *pinned* there until that one is compressed:
//! the stream of a transcript larger than the cache, or of one the cache let go while its
//! session was replayed (which happens more, the more sessions are read at once), is then
//! compressed against the bytes already held, instead of each worker decoding its own copy
//! of the transcript from its layer. Pinned bodies are not counted in [`BUDGET`]: there is one
//! per derived body being written (the converter's sessions being read, which it bounds) or
//! waiting for a worker (an update stream is about as large as its transcript, so those
//! count about once more in [`BUDGET`]).

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

use zstd::zstd_safe::CDict;

use crate::blob::{BlobError, BlobSink, BlobSource, BlobWrite};
use crate::bundle::contexts;
use crate::bundle::oci::{Encoding, LayerRef};
use crate::bundle::projects::{Heads, TranscriptOf, projects};
use crate::bundle::recent::Recent;
use crate::bundle::windows::{self, WINDOWED_BASE};
use crate::digest::{Descriptor, Digest, Hasher, HashingWriter};
use crate::state::State;

/// Bodies waiting for a worker, at most (a single larger body is let through alone).
pub const BUDGET: u64 = 32 << 20;
/// Recently finished bodies kept in memory for use as dictionaries.
///
/// Small, because a stream's own transcript is pinned while the stream is written (see the
/// module's doc), so the cache serves only the few streams whose transcript was let go before
/// the stream began; those are read back from their layer instead. Packing the 1 GiB Claude
/// Code bench home: 46 bodies read back with 16 MiB, 121 with 4 MiB (1,151 with none, for
/// 0.4 s more CPU), the same bundle byte for byte, and peak RSS 119 → 100 MiB (64 MiB home:
/// 69 → 58 MiB; medians of five and seven runs, spec/aspstate.md §13.3).
pub const CACHE: u64 = 4 << 20;
/// Bodies larger than this are compressed while they stream, without a dictionary.
pub const SPILL: u64 = 64 << 20;
/// Bodies smaller than this are stored as they are.
pub const TINY: usize = 64;
/// zstd's magic number of a formatted dictionary (little-endian `0xEC30A437`).
pub const DICT_MAGIC: [u8; 4] = [0x37, 0xa4, 0x30, 0xec];
/// The largest zstd window a layer uses, and a reader accepts: 128 MiB.
pub const MAX_WINDOW_LOG: u32 = 27;
/// Bodies larger than this are compressed with a window the size of the body, not level 3's.
pub const WIDE_WINDOW: usize = 2 << 20;
/// Project dictionaries kept prepared at once. A reader that packs a harness's store reads
/// its sessions project by project (`asp_convert`'s reading order), so one or two are in use
/// at a time: on the 1 GiB bench store (20 projects) 25 preparations with 4 kept. Read in the
/// order of their ids, the projects' transcripts came mixed and needed every project's kept
/// (16 kept: 171 preparations; 4: 17 % more CPU on the 256 MiB store). Each holds about 1.8 MB
/// (`ZSTD_sizeof_CDict` of a 1 MiB dictionary at level 3: its own copy of the bytes and its
/// tables), so fewer kept is less memory: 29.6 -> 7.4 MB at the peak (spec/aspstate.md §13.3).
const PREPARED: usize = 4;

/// How layers are made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LayerOptions {
    pub encoding: Encoding,
    /// zstd level (3, as `zstd -3`, unless asked otherwise).
    pub level: i32,
    /// Compression threads; 0 = one per core.
    pub threads: usize,
}

impl Default for LayerOptions {
    fn default() -> Self {
        LayerOptions {
            encoding: Encoding::Zstd,
            level: 3,
            threads: 0,
        }
    }
}

/// Where a layer's bytes are staged.
#[derive(Debug, Clone)]
enum Loc {
    /// In the shared staging file, at this offset.
    Staging(u64),
    /// In a file of its own (a body larger than [`SPILL`]).
    Spill(Arc<tempfile::NamedTempFile>),
}

#[derive(Debug, Clone)]
struct Stored {
    loc: Loc,
    layer: Descriptor,
    encoding: Encoding,
    dictionary: Option<Digest>,
    /// The dictionary compression was tried with (it may not have paid).
    tried: Option<Digest>,
    /// Whether it was tried as a project's dictionary (prepared), not as a prefix.
    prepared: bool,
}

#[derive(Debug)]
struct Entry {
    size: u64,
    hints: BTreeSet<Option<Digest>>,
    stored: Option<Stored>,
    spilled: bool,
    /// Whether the body's bytes can be read as a raw-content dictionary.
    dict_ok: bool,
    /// The body's bytes until its layer is stored: a body waiting for room in [`BUDGET`] is
    /// already known (a second write of it returns at once), so a stream derived from it can
    /// reach a worker first, and the worker must find its dictionary here rather than wait
    /// for a layer that waits for that worker's room.
    pending: Option<Arc<Vec<u8>>>,
    /// A transcript's first bytes at each dictionary length, by digest: the dictionary its
    /// project takes when the rule chooses it, found among the bodies (predicted) without
    /// decoding the transcript again.
    heads: Heads,
    /// A transcript over [`WINDOWED_BASE`] (a body written without a hint): its bytes in a
    /// file of their own (it is never held whole), kept for the windows of a stream derived
    /// from it. (A stream written to a file is not kept here: its worker's job holds the file
    /// until the stream is compressed.)
    raw: Option<Arc<tempfile::NamedTempFile>>,
}

struct Job {
    blob: Descriptor,
    body: Body,
    /// What the job counts in [`BUDGET`] until it is done.
    charge: u64,
    dictionary: Option<Digest>,
    /// Whether `dictionary` is a project's dictionary (prepared once), not a prefix.
    prepared: bool,
    /// The base pinned for this body, let go once it is compressed.
    pinned: Option<Digest>,
}

struct St {
    queue: VecDeque<Job>,
    in_flight: u64,
    next_offset: u64,
    blobs: HashMap<Digest, Entry>,
    cache: VecDeque<(Digest, Arc<Vec<u8>>)>,
    cache_bytes: u64,
    /// Bodies held for the derived bodies being written or compressed: how many, and the bytes.
    pinned: HashMap<Digest, (usize, Arc<Vec<u8>>)>,
    /// Bodies read back from their layer to serve as a dictionary (for tests of pinning).
    read_back: usize,
    /// Bytes of bodies queued for a worker (for tests of streaming in windows).
    queued: u64,
    /// A worker's failure, for every writer after it: its kind kept (a full disk is
    /// `StorageFull` wherever it is said), and its words.
    error: Option<(io::ErrorKind, String)>,
    closing: bool,
}

impl St {
    /// The bytes of `digest` if they are in memory: pinned, waiting for a worker, or cached.
    fn held(&self, digest: &Digest) -> Option<Arc<Vec<u8>>> {
        if let Some((_, b)) = self.pinned.get(digest) {
            return Some(Arc::clone(b));
        }
        if let Some(b) = self.blobs.get(digest).and_then(|e| e.pending.as_ref()) {
            return Some(Arc::clone(b));
        }
        self.cache
            .iter()
            .find(|(d, _)| d == digest)
            .map(|(_, b)| Arc::clone(b))
    }

    /// Holds `digest`'s bytes for one more derived body; `false` when they are not in memory.
    fn pin(&mut self, digest: &Digest) -> bool {
        match self.held(digest) {
            Some(bytes) => {
                self.pinned.entry(*digest).or_insert((0, bytes)).0 += 1;
                true
            }
            None => false,
        }
    }

    fn unpin(&mut self, digest: &Digest) {
        if let Some(p) = self.pinned.get_mut(digest) {
            p.0 -= 1;
            if p.0 == 0 {
                self.pinned.remove(digest);
            }
        }
    }
}

struct Shared {
    opts: LayerOptions,
    /// Predicted project dictionaries: a folder of transcripts (or a path naming a project,
    /// [`BlobSink::begin_transcript`]) and its dictionary body.
    predicted: Mutex<Vec<(std::path::PathBuf, Digest)>>,
    /// Project dictionaries prepared for compression, the last few used.
    prepared: Recent<CDict<'static>>,
    staging: File,
    dir: std::path::PathBuf,
    st: Mutex<St>,
    /// Signalled when a job is queued or the store closes.
    work: Condvar,
    /// Signalled when a job finishes.
    done: Condvar,
}

impl Shared {
    /// What a compression worker met (`kind`, `said`), as the error of the write: named with
    /// the staging folder, where the layers were being written (a full disk said "No space
    /// left on device" and no path: new-user trial helper-130, 7). A message that names a
    /// path already is kept as it is.
    fn failed(&self, kind: io::ErrorKind, said: &str) -> BlobError {
        let source = io::Error::new(kind, said.to_owned());
        if said.contains('/') {
            return BlobError::Other(source);
        }
        BlobError::Io {
            path: self.dir.clone(),
            source,
        }
    }

    fn lock(&self) -> MutexGuard<'_, St> {
        self.st.lock().expect("layer store poisoned")
    }
}

/// A staged layer, ready to be copied into a bundle.
#[derive(Debug, Clone)]
pub struct StagedLayer {
    pub layer: LayerRef,
    loc: Loc,
}

/// The layers of a finished store, by uncompressed digest.
#[derive(Debug)]
pub struct Layers {
    staging: File,
    pub blobs: BTreeMap<Digest, StagedLayer>,
    /// The staging directory, which holds the layers of bodies over [`SPILL`] in files of
    /// their own ([`Loc::Spill`], opened by path when copied): it goes with the last of
    /// these, not with the store.
    _dir: Arc<super::leftovers::StagingDir>,
}

impl Layers {
    /// Copies a staged layer's bytes into `out`.
    pub fn copy_to(&self, layer: &StagedLayer, out: &mut dyn Write) -> io::Result<u64> {
        match &layer.loc {
            Loc::Staging(offset) => {
                copy_range(&self.staging, *offset, layer.layer.size, out)?;
                Ok(layer.layer.size)
            }
            Loc::Spill(f) => {
                let mut r = io::BufReader::with_capacity(256 * 1024, File::open(f.path())?);
                io::copy(&mut r, out)
            }
        }
    }
}

fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        std::os::windows::fs::FileExt::seek_read(file, buf, offset)
    }
}

fn write_all_at(file: &File, mut buf: &[u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        #[cfg(unix)]
        let n = std::os::unix::fs::FileExt::write_at(file, buf, offset)?;
        #[cfg(windows)]
        let n = std::os::windows::fs::FileExt::seek_write(file, buf, offset)?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        buf = &buf[n..];
        offset += n as u64;
    }
    Ok(())
}

fn copy_range(file: &File, mut offset: u64, len: u64, out: &mut dyn Write) -> io::Result<()> {
    let mut buf = vec![0u8; 256 * 1024];
    let end = offset + len;
    while offset < end {
        let want = buf.len().min((end - offset) as usize);
        let n = read_at(file, &mut buf[..want], offset)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        out.write_all(&buf[..n])?;
        offset += n as u64;
    }
    Ok(())
}

/// The window a frame needs so every byte of `dict` stays reachable from every byte of `len`.
pub fn window_log(dict: usize, len: usize) -> u32 {
    let total = (dict + len).max(1 << 10) as u64;
    (64 - (total - 1).leading_zeros()).clamp(10, MAX_WINDOW_LOG)
}

fn zstd_err(code: usize) -> io::Error {
    io::Error::other(format!("zstd: {}", zstd::zstd_safe::get_error_name(code)))
}

/// Sets the parameters every layer shares: `level`, the content size in the frame header, no
/// checksum (the body's sha256 is the check), no dictionary id.
fn shared_parameters(cctx: &mut zstd::zstd_safe::CCtx<'_>, level: i32) -> io::Result<()> {
    use zstd::zstd_safe::CParameter;
    cctx.set_parameter(CParameter::CompressionLevel(level))
        .map_err(zstd_err)?;
    cctx.set_parameter(CParameter::ContentSizeFlag(true))
        .map_err(zstd_err)?;
    cctx.set_parameter(CParameter::ChecksumFlag(false))
        .map_err(zstd_err)?;
    cctx.set_parameter(CParameter::DictIdFlag(false))
        .map_err(zstd_err)?;
    Ok(())
}

/// Runs `f` with this thread's compression context ([`contexts`]) and the
/// [`shared_parameters`]. `bytes`: what the frame takes in, its prefix and its body.
fn with_context<'d, R>(
    level: i32,
    bytes: usize,
    f: impl FnOnce(&mut zstd::zstd_safe::CCtx<'d>) -> io::Result<R>,
) -> io::Result<R> {
    contexts::with(bytes, |cctx| {
        shared_parameters(cctx, level)?;
        f(cctx)
    })
}

/// Level 3 on its own keeps a 2 MiB window; a large transcript reads the same files again and
/// again across its turns, farther apart than that. A window the size of the body (and
/// long-distance matching to find those copies) makes the transcripts over 2 MiB about a
/// tenth smaller (§13.1). Readers decode any window up to [`MAX_WINDOW_LOG`].
fn widen(cctx: &mut zstd::zstd_safe::CCtx<'_>, len: usize) -> io::Result<()> {
    use zstd::zstd_safe::CParameter;
    if len > WIDE_WINDOW {
        cctx.set_parameter(CParameter::WindowLog(window_log(0, len)))
            .map_err(zstd_err)?;
        cctx.set_parameter(CParameter::EnableLongDistanceMatching(true))
            .map_err(zstd_err)?;
    }
    Ok(())
}

/// One frame of `src` with `cctx`, in no more room than the body itself: a frame that would
/// not be smaller gives the body back (and is not kept).
fn frame(cctx: &mut zstd::zstd_safe::CCtx<'_>, src: &[u8]) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(src.len());
    match cctx.compress2(&mut out, src) {
        Ok(_) => Ok(out),
        Err(code) if too_small(code) => Ok(src.to_vec()),
        Err(code) => Err(zstd_err(code)),
    }
}

/// The hash table of a context against a prefix at levels 1 to 6: 2^20 positions (see
/// [`against_prefix`]; zstd makes it smaller when the prefix and the body are).
const PREFIX_HASH_LOG: u32 = 20;

/// Sets `cctx` up for one frame of `len` bytes against `dict` as a raw-content prefix.
///
/// An update stream repeats its transcript's text, in long runs and short ones, anywhere in
/// it. Level 3's own hash table (2^17 positions) is overwritten many times over by a prefix of
/// hundreds of kilobytes; 2^20 positions keep most of them (4 MiB of table per context). No
/// long-distance matching: it found the long runs a smaller table lost (it halved the streams
/// at 2^17), but at 2^20 it makes them only 15-25 % smaller for twice their compression time,
/// a tenth of a pack's CPU, while the streams are 1-2 % of the bundle's bytes after it
/// (measured on the bench bundles with the `stream_params` example and with `asp-pack`:
/// spec/aspstate.md §13.3, "Update streams without long-distance matching").
fn against_prefix<'d>(
    cctx: &mut zstd::zstd_safe::CCtx<'d>,
    dict: &'d [u8],
    len: usize,
    level: i32,
) -> io::Result<()> {
    use zstd::zstd_safe::CParameter;
    cctx.set_parameter(CParameter::WindowLog(window_log(dict.len(), len)))
        .map_err(zstd_err)?;
    // Levels 1 to 6 have smaller tables of their own (2^17 to 2^19); from 7 up, 2^20 or more.
    if (1..7).contains(&level) {
        cctx.set_parameter(CParameter::HashLog(PREFIX_HASH_LOG))
            .map_err(zstd_err)?;
    }
    // zstd matches differently when the prefix happens to end where `src` starts in memory,
    // so without this the layer's bytes would depend on where the allocator put the two
    // buffers. Free when they are apart, as they almost always are.
    cctx.set_parameter(CParameter::DeterministicRefPrefix(true))
        .map_err(zstd_err)?;
    cctx.ref_prefix(dict).map_err(zstd_err)?;
    Ok(())
}

/// Compresses `src` into one zstd frame (content size in the header, no checksum, no
/// dictionary id), against `dict` as a raw-content prefix when given.
pub fn compress(src: &[u8], dict: Option<&[u8]>, level: i32) -> io::Result<Vec<u8>> {
    match dict {
        Some(d) => with_context(level, d.len() + src.len(), |cctx| {
            against_prefix(cctx, d, src.len(), level)?;
            frame(cctx, src)
        }),
        None => with_context(level, src.len(), |cctx| {
            widen(cctx, src.len())?;
            frame(cctx, src)
        }),
    }
}

/// One frame of `src` against `dict` as [`compress`] makes it, always a frame (a windowed
/// layer's frames cannot fall back to the body's bytes, spec §4.2).
pub(crate) fn compress_frame(src: &[u8], dict: &[u8], level: i32) -> io::Result<Vec<u8>> {
    let mut out = Vec::new();
    compress_frame_into(src, dict, level, &mut out)?;
    Ok(out)
}

/// [`compress_frame`] into `out` (its bytes replaced), which keeps its room for the next
/// frame: a frame of a windowed layer needs room for 4 MiB, above the binaries' mmap
/// threshold, so a new buffer each time was mapped and unmapped each time.
///
/// The room asked for first is an eighth of the frame and [`FRAME_SLACK`] (an update stream
/// against its window takes a tenth to a fiftieth of it), not zstd's bound for the frame
/// (4.2 MB for 4 MiB, held beside the window by every large session being read). A frame is
/// kept only when [`FRAME_SLACK`] of the room is still free after it: every block then had
/// room for zstd's bound of a block, as with all the room, and zstd decides nothing by the
/// room it has beyond that bound, so the bytes are those made with all of it. A frame that
/// does not fit so is made again with room for the bound of the whole frame.
pub(crate) fn compress_frame_into(
    src: &[u8],
    dict: &[u8],
    level: i32,
    out: &mut Vec<u8>,
) -> io::Result<()> {
    let bound = zstd::zstd_safe::compress_bound(src.len());
    let first = (src.len() / 8).saturating_add(FRAME_SLACK).min(bound);
    let attempt = |room: usize, out: &mut Vec<u8>| {
        with_context(level, dict.len() + src.len(), |cctx| {
            against_prefix(cctx, dict, src.len(), level)?;
            out.clear();
            out.reserve(room);
            match cctx.compress2(out, src) {
                Ok(n) => {
                    Ok(n.saturating_add(FRAME_SLACK) <= out.capacity() || out.capacity() >= bound)
                }
                Err(code) if too_small(code) && out.capacity() < bound => Ok(false),
                Err(code) => Err(zstd_err(code)),
            }
        })
    };
    if !attempt(first, out)? {
        attempt(bound, out)?;
    }
    Ok(())
}

/// What a frame's room must hold beyond the frame for its bytes to be those made with all the
/// room ([`compress_frame_into`]): zstd's bound for one block of 128 KiB, rounded up.
const FRAME_SLACK: usize = 136 * 1024;

/// Whether a zstd error is "Destination buffer is too small".
fn too_small(code: usize) -> bool {
    zstd::zstd_safe::get_error_name(code).contains("Destination buffer is too small")
}

/// Compresses `src` into one zstd frame, as [`compress`] does without a dictionary, against a
/// prepared raw-content dictionary (a project's): preparing it once per project, not once per
/// transcript, is what makes it free (loading a 1 MiB prefix costs 1-2 ms a frame). zstd's
/// long-distance matching does not see a prepared dictionary, so it only serves the body's own
/// long copies, as without one.
pub fn compress_prepared(src: &[u8], dict: &CDict<'_>, level: i32) -> io::Result<Vec<u8>> {
    with_context(level, src.len(), |cctx| {
        widen(cctx, src.len())?;
        cctx.ref_cdict(dict).map_err(zstd_err)?;
        frame(cctx, src)
    })
}

/// The window of a body over [`WINDOWED_BASE`] compressed without a prefix: such a body is
/// compressed as it streams, so the window is what is held of it: 2^22 costs 18.6 % on those
/// layers against a window the size of the body (2^24: 1.8 %, 2^23: 8.1 %), which is 1.4 %
/// of the 1 GiB bench store's bundle, and saves 12 MiB of the zstd context, about 10 MiB of
/// the pack's peak RSS (spec §4, §13.3).
pub const STREAMED_WINDOW_LOG: u32 = 22;

/// How much of a body [`compress_streamed`] takes at a time. Fixed, so the calls zstd sees,
/// and so the frame, are the same whether the body is read from a file or from memory.
const STREAMED_CHUNK: usize = 1 << 20;

/// Compresses the `len` bytes of `src` into one frame as it reads them (content size in the
/// header, no checksum, no dictionary id, a window of at most 2^[`STREAMED_WINDOW_LOG`] and
/// long-distance matching), against a prepared dictionary when given: what is held is the
/// window, not the body. The bytes depend only on the body, `dict` and `level`.
pub fn compress_streamed(
    src: &mut dyn Read,
    len: u64,
    dict: Option<&CDict<'_>>,
    level: i32,
) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(usize::try_from(len / 8).unwrap_or(0));
    compress_streamed_into(src, len, dict, level, &mut out)?;
    Ok(out)
}

/// How much of a frame [`compress_streamed_into`] holds before it hands it on.
const STREAMED_OUT: usize = 1 << 17;

/// [`compress_streamed`], handing the frame to `out` as it is made, [`STREAMED_OUT`] bytes at
/// a time: a body of hundreds of megabytes is held as neither body nor layer (its layer of
/// tens of megabytes was held whole, in a buffer grown by doubling). The bytes depend only on
/// the body, `dict` and `level`, as [`compress_streamed`]'s (which is this into memory): the
/// room for the output is fixed too, since zstd may end a frame differently when the output
/// has room for all the rest. (They were the same as before this room was fixed on every
/// bench home, byte for byte; a body that ends where zstd's input buffer has just wrapped,
/// about every 33 MiB, may end in other bytes than it did.)
pub fn compress_streamed_into(
    src: &mut dyn Read,
    len: u64,
    dict: Option<&CDict<'_>>,
    level: i32,
    out: &mut dyn Write,
) -> io::Result<()> {
    use zstd::zstd_safe::zstd_sys::ZSTD_EndDirective;
    use zstd::zstd_safe::{CParameter, InBuffer, OutBuffer};
    // The thread's context ([`contexts`]), as for every other frame: its tables for a frame
    // against a prefix (a 2^20 hash table) and these (a window of 2^22 and long-distance
    // tables) are about the same size, so the one context serves both in the room of one,
    // where a context of its own cost a second 5 MB beside it.
    let size = usize::try_from(len).unwrap_or(usize::MAX);
    with_context(level, size, |cctx| {
        cctx.set_parameter(CParameter::WindowLog(
            window_log(0, size).min(STREAMED_WINDOW_LOG),
        ))
        .map_err(zstd_err)?;
        cctx.set_parameter(CParameter::EnableLongDistanceMatching(true))
            .map_err(zstd_err)?;
        if let Some(d) = dict {
            cctx.ref_cdict(d).map_err(zstd_err)?;
        }
        cctx.set_pledged_src_size(Some(len)).map_err(zstd_err)?;
        let mut held: Vec<u8> = Vec::with_capacity(STREAMED_OUT);
        let mut chunk = vec![0u8; STREAMED_CHUNK];
        let mut read = 0u64;
        loop {
            // A whole chunk unless the body ends, whatever the reader gives at a time.
            let mut n = 0;
            while n < chunk.len() {
                match src.read(&mut chunk[n..]) {
                    Ok(0) => break,
                    Ok(k) => n += k,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            read += n as u64;
            if read > len {
                return Err(io::Error::other(format!(
                    "the body holds more than the {len} bytes it was written with"
                )));
            }
            let end = n < chunk.len();
            let directive = match end {
                true => ZSTD_EndDirective::ZSTD_e_end,
                false => ZSTD_EndDirective::ZSTD_e_continue,
            };
            let mut input = InBuffer::around(&chunk[..n]);
            loop {
                held.clear();
                let mut output = OutBuffer::around(&mut held);
                let left = cctx
                    .compress_stream2(&mut output, &mut input, directive)
                    .map_err(zstd_err)?;
                out.write_all(&held)?;
                let done = match end {
                    true => left == 0,
                    false => input.pos() == n,
                };
                if done {
                    break;
                }
            }
            if end {
                break;
            }
        }
        if read != len {
            return Err(io::Error::other(format!(
                "the body holds {read} bytes, not the {len} it was written with"
            )));
        }
        Ok(())
    })
}

/// A body's dictionary when it is compressed: the bytes of a body it derives from, used as a
/// prefix, or a project's dictionary, prepared.
enum Against<'a> {
    Prefix(Digest, &'a [u8]),
    Prepared(Digest, &'a CDict<'static>),
}

/// Decompresses one whole zstd layer of `size` bytes (against `dict`), checking the size.
pub fn decompress(src: &[u8], dict: Option<&[u8]>, size: u64) -> io::Result<Vec<u8>> {
    // One byte more than the body: `read_to_end` needs room to see the end of the frame, and
    // without it would double (copy) the whole buffer to find out.
    let mut out = Vec::with_capacity(usize::try_from(size.saturating_add(1)).unwrap_or(0));
    let mut d = match dict {
        Some(d) => zstd::stream::read::Decoder::with_dictionary(io::BufReader::new(src), d)?,
        None => zstd::stream::read::Decoder::new(src)?,
    }
    .single_frame();
    d.window_log_max(MAX_WINDOW_LOG)?;
    d.take(size.saturating_add(1)).read_to_end(&mut out)?;
    if out.len() as u64 != size {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("the layer expands to {} bytes, not {size}", out.len()),
        ));
    }
    Ok(out)
}

/// Encodes a body as a layer: `(bytes, encoding, dictionary used)`.
fn encode(
    opts: &LayerOptions,
    src: &[u8],
    dict: Option<Against<'_>>,
) -> io::Result<(Option<Vec<u8>>, Encoding, Option<Digest>)> {
    if opts.encoding == Encoding::Identity || src.len() < TINY {
        return Ok((None, Encoding::Identity, None));
    }
    let large = src.len() as u64 > WINDOWED_BASE;
    let (out, encoding, used) = match dict {
        None if large => (
            compress_streamed(&mut &src[..], src.len() as u64, None, opts.level)?,
            Encoding::Zstd,
            None,
        ),
        None => (compress(src, None, opts.level)?, Encoding::Zstd, None),
        Some(Against::Prefix(d, bytes)) => {
            // A large dictionary body in windows (spec §4.2), unless a window cannot be one.
            let windowed = match bytes.len() as u64 > WINDOWED_BASE {
                true => windows::compress(src, bytes, opts.level)?,
                false => None,
            };
            match windowed {
                Some(out) => (out, Encoding::ZstdWindows, Some(d)),
                None => (
                    compress(src, Some(bytes), opts.level)?,
                    Encoding::Zstd,
                    Some(d),
                ),
            }
        }
        Some(Against::Prepared(d, c)) if large => (
            compress_streamed(&mut &src[..], src.len() as u64, Some(c), opts.level)?,
            Encoding::Zstd,
            Some(d),
        ),
        Some(Against::Prepared(d, c)) => (
            compress_prepared(src, c, opts.level)?,
            Encoding::Zstd,
            Some(d),
        ),
    };
    if out.len() >= src.len() {
        return Ok((None, Encoding::Identity, None));
    }
    Ok((Some(out), encoding, used))
}

/// Project dictionary `d`, prepared: from the last few, else from its bytes.
fn prepared(shared: &Shared, d: &Digest) -> Result<Arc<CDict<'static>>, BlobError> {
    shared.prepared.get_or_make(d, || {
        let bytes = body_of(shared, d)?;
        CDict::try_create(&bytes, shared.opts.level)
            .ok_or_else(|| BlobError::Other(io::Error::other("zstd cannot prepare a dictionary")))
    })
}

/// Compresses `bytes` against `dictionary` (prepared when a project's) and stages the layer.
fn compress_and_stage(
    shared: &Shared,
    bytes: &[u8],
    dictionary: Option<Digest>,
    prepared_dict: bool,
) -> Result<Stored, BlobError> {
    let base = match dictionary {
        Some(d) if prepared_dict => Some(Base::Prepared(d, prepared(shared, &d)?)),
        Some(d) => Some(Base::Prefix(d, body_of(shared, &d)?)),
        None => None,
    };
    let against = match &base {
        Some(Base::Prepared(d, c)) => Some(Against::Prepared(*d, c)),
        Some(Base::Prefix(d, b)) => Some(Against::Prefix(*d, b)),
        None => None,
    };
    let (out, encoding, used) = encode(&shared.opts, bytes, against).map_err(BlobError::Other)?;
    let mut s = stage(shared, bytes, out.as_deref(), encoding, used)?;
    s.tried = dictionary;
    s.prepared = prepared_dict;
    Ok(s)
}

/// What [`Against`] borrows from.
enum Base {
    Prefix(Digest, Arc<Vec<u8>>),
    Prepared(Digest, Arc<CDict<'static>>),
}

/// A [`BlobSink`] that stages compressed layers; see the module documentation.
pub struct LayerStore {
    shared: Arc<Shared>,
    workers: Mutex<Vec<JoinHandle<()>>>,
    /// Shared with the [`Layers`] it finishes into.
    dir: Arc<super::leftovers::StagingDir>,
}

impl std::fmt::Debug for LayerStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LayerStore")
            .field("opts", &self.shared.opts)
            .finish_non_exhaustive()
    }
}

impl LayerStore {
    /// A new store staging in a fresh directory under `parent` (next to the output, so staged
    /// layers stay on its file system).
    pub fn new_in(parent: &Path, opts: LayerOptions) -> Result<Self, BlobError> {
        let io_err = |source| BlobError::Io {
            path: parent.to_path_buf(),
            source,
        };
        let dir = super::leftovers::staging_dir(parent).map_err(io_err)?;
        let staging = tempfile::tempfile_in(dir.path()).map_err(io_err)?;
        let threads = if opts.threads == 0 {
            std::thread::available_parallelism().map_or(1, |n| n.get())
        } else {
            opts.threads
        };
        let shared = Arc::new(Shared {
            opts,
            predicted: Mutex::new(Vec::new()),
            prepared: Recent::new(PREPARED),
            staging,
            dir: dir.path().to_path_buf(),
            st: Mutex::new(St {
                queue: VecDeque::new(),
                in_flight: 0,
                next_offset: 0,
                blobs: HashMap::new(),
                cache: VecDeque::new(),
                cache_bytes: 0,
                pinned: HashMap::new(),
                read_back: 0,
                queued: 0,
                error: None,
                closing: false,
            }),
            work: Condvar::new(),
            done: Condvar::new(),
        });
        let workers = (0..threads)
            .map(|i| {
                let s = Arc::clone(&shared);
                std::thread::Builder::new()
                    .name(format!("asp-layers-{i}"))
                    .spawn(move || worker(&s))
                    .map_err(io_err)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(LayerStore {
            shared,
            workers: Mutex::new(workers),
            dir: Arc::new(dir),
        })
    }

    /// Once every queued body is compressed: how many bodies were read back from their layer
    /// to serve as a dictionary, and how many pins are held.
    #[cfg(test)]
    fn when_idle(&self) -> (usize, usize) {
        let mut st = self.shared.lock();
        while st.in_flight > 0 {
            st = self.shared.done.wait(st).expect("layer store poisoned");
        }
        (st.read_back, st.pinned.values().map(|(n, _)| n).sum())
    }

    /// Waits for every layer, settles dictionaries, and hands over the staged layers; no
    /// project dictionaries (layout 3's layers).
    pub fn finish(self) -> Result<Layers, BlobError> {
        self.settle(None)
    }

    /// [`LayerStore::finish`], with each transcript of `state` written here compressed against
    /// its project's dictionary ([`crate::bundle::projects`]): layout 4's layers when a
    /// project has one. `transcript` names each session's transcript; a project's dictionary
    /// comes from a transcript not written here (a backup's session taken as it was) through
    /// `elsewhere`, or the project has none this time.
    pub fn finish_for(
        self,
        state: &State,
        transcript: TranscriptOf<'_>,
        elsewhere: Option<&dyn BlobSource>,
    ) -> Result<Layers, BlobError> {
        self.settle(Some((state, transcript, elsewhere)))
    }

    fn settle(
        self,
        projects: Option<(&State, TranscriptOf<'_>, Option<&dyn BlobSource>)>,
    ) -> Result<Layers, BlobError> {
        {
            let mut st = self.shared.lock();
            st.closing = true;
            self.shared.work.notify_all();
        }
        for h in self.workers.lock().expect("workers poisoned").drain(..) {
            let _ = h.join();
        }
        let shared = &self.shared;
        if let Some((kind, e)) = shared.lock().error.take() {
            return Err(shared.failed(kind, &e));
        }
        // Settle each body's dictionary by a rule that does not depend on write order: the
        // least eligible body it derives from, else its project's dictionary.
        let mut wanted: BTreeMap<Digest, Option<(Digest, bool)>> = {
            let st = shared.lock();
            st.blobs
                .iter()
                .map(|(d, e)| {
                    let choice = if e.spilled {
                        None
                    } else {
                        e.hints
                            .iter()
                            .flatten()
                            .filter(|h| *h != d && plain_candidate(&st, h))
                            .min()
                            .copied()
                    };
                    (*d, choice.map(|c| (c, false)))
                })
                .collect()
        };
        // Project dictionaries, used or predicted: a predicted one this state does not use
        // may still be the dictionary of a layer a backup takes from its parent.
        let mut dictionaries: BTreeSet<Digest> = shared
            .predicted
            .lock()
            .expect("predicted dictionaries")
            .iter()
            .map(|(_, d)| *d)
            .collect();
        if let Some((state, transcript, elsewhere)) = projects {
            dictionaries.extend(self.project_dictionaries(
                state,
                transcript,
                elsewhere,
                &mut wanted,
            )?);
        }
        let mut todo: Vec<(Digest, Option<(Digest, bool)>)> = {
            let st = shared.lock();
            wanted
                .into_iter()
                .filter(|(d, choice)| {
                    let s = st.blobs[d].stored.as_ref().expect("every job finished");
                    (s.tried, s.prepared) != (choice.map(|c| c.0), choice.is_some_and(|c| c.1))
                })
                .collect()
        };
        // The bodies of one dictionary one after another, so it is prepared once.
        todo.sort_by_key(|(d, choice)| (*choice, *d));
        // Compressed again on every core: few bodies after a right prediction, every
        // transcript of a project after a wrong one.
        let next = std::sync::atomic::AtomicUsize::new(0);
        let threads = match shared.opts.threads {
            0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
            n => n,
        }
        .min(todo.len().max(1));
        let failed: Mutex<Option<BlobError>> = Mutex::new(None);
        // At most [`BUDGET`] bytes of bodies compressed again at once (a larger one alone), as
        // while writing: on many cores, after a wrong prediction, each would hold its body.
        let in_use: Mutex<u64> = Mutex::new(0);
        let room = Condvar::new();
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some((digest, choice)) = todo.get(i) else {
                            return;
                        };
                        let size = shared.lock().blobs[digest].size;
                        {
                            let mut used = in_use.lock().expect("budget");
                            while *used > 0 && *used + size > BUDGET {
                                used = room.wait(used).expect("budget");
                            }
                            *used += size;
                        }
                        let again = (|| {
                            let stored = {
                                let st = shared.lock();
                                st.blobs[digest].stored.clone().expect("every job finished")
                            };
                            let bytes = read_body(shared, digest, &stored, size)?;
                            let new = compress_and_stage(
                                shared,
                                &bytes,
                                choice.map(|c| c.0),
                                choice.is_some_and(|c| c.1),
                            )?;
                            shared.lock().blobs.get_mut(digest).expect("known").stored = Some(new);
                            Ok::<_, BlobError>(())
                        })();
                        *in_use.lock().expect("budget") -= size;
                        room.notify_all();
                        if let Err(e) = again {
                            failed.lock().expect("failure").get_or_insert(e);
                            next.store(todo.len(), std::sync::atomic::Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        if let Some(e) = failed.into_inner().expect("failure") {
            return Err(e);
        }
        let st = shared.lock();
        let blobs = st
            .blobs
            .iter()
            .map(|(d, e)| {
                let s = e.stored.clone().expect("every job finished");
                (
                    *d,
                    StagedLayer {
                        layer: LayerRef {
                            layer: s.layer.digest,
                            size: s.layer.size,
                            encoding: s.encoding,
                            dictionary: s.dictionary,
                            // Kept by `Documents::plan` only for a body no state names.
                            body_size: dictionaries.contains(d).then_some(e.size),
                        },
                        loc: s.loc,
                    },
                )
            })
            .collect();
        Ok(Layers {
            staging: shared.staging.try_clone().map_err(BlobError::Other)?,
            blobs,
            _dir: Arc::clone(&self.dir),
        })
    }

    /// Applies the project rule to `state`: each project's dictionary body is made (from its
    /// source transcript, unless predicted) and its transcripts' choice in `wanted` set to it.
    /// Returns the dictionary bodies used.
    fn project_dictionaries(
        &self,
        state: &State,
        transcript: TranscriptOf<'_>,
        elsewhere: Option<&dyn BlobSource>,
        wanted: &mut BTreeMap<Digest, Option<(Digest, bool)>>,
    ) -> Result<BTreeSet<Digest>, BlobError> {
        let shared = &self.shared;
        if shared.opts.encoding != Encoding::Zstd {
            return Ok(BTreeSet::new());
        }
        // Each project's dictionary body: the first `project.length` bytes of its source
        // transcript.
        let mut chosen: BTreeMap<Digest, Digest> = BTreeMap::new();
        let mut dictionaries = BTreeSet::new();
        for project in projects(state, transcript) {
            // A project none of whose transcripts was written here (a backup's sessions taken
            // as they were) has nothing to compress: its dictionary is not looked for.
            let here = |t: &Digest| matches!(wanted.get(t), Some(None));
            if !project.transcripts.iter().any(here) {
                continue;
            }
            // Predicted: the dictionary is a body already, known by the source's head.
            let predicted = {
                let st = shared.lock();
                st.blobs
                    .get(&project.source.digest)
                    .and_then(|e| e.heads.get(project.length))
                    .filter(|h| plain_candidate(&st, h))
            };
            if let Some(dict) = predicted {
                dictionaries.insert(dict);
                for t in &project.transcripts {
                    let e = chosen.entry(*t).or_insert(dict);
                    *e = (*e).min(dict);
                }
                continue;
            }
            let here = shared.lock().blobs.contains_key(&project.source.digest);
            let source = match (here, elsewhere) {
                (true, _) => body_head(shared, &project.source.digest, project.length)?,
                (false, Some(e)) => {
                    // Only its head: what follows is not needed. A source the repository
                    // cannot give (a damaged or missing layer) gives its project no
                    // dictionary this time; the backup finds the damage and repairs it.
                    let mut head = Vec::new();
                    let read = e
                        .open(&project.source)
                        .map_err(io::Error::other)
                        .and_then(|r| r.take(project.length).read_to_end(&mut head));
                    match read {
                        Ok(_) => Arc::new(head),
                        Err(_) => continue,
                    }
                }
                (false, None) => continue,
            };
            let head = &source[..source.len().min(project.length as usize)];
            if head.starts_with(&DICT_MAGIC) {
                continue;
            }
            let dict = Descriptor::of(head);
            let fresh = {
                let st = shared.lock();
                match st.blobs.get(&dict.digest) {
                    None => true,
                    // Already a body: predicted, or one of the state's own.
                    Some(_) if plain_candidate(&st, &dict.digest) => false,
                    Some(_) => continue,
                }
            };
            if fresh {
                let stored = compress_and_stage(shared, head, None, false)?;
                shared.lock().blobs.insert(
                    dict.digest,
                    Entry {
                        size: dict.size,
                        hints: BTreeSet::from([None]),
                        stored: Some(stored),
                        spilled: false,
                        dict_ok: true,
                        pending: None,
                        heads: Heads::default(),
                        raw: None,
                    },
                );
                wanted.insert(dict.digest, None);
            }
            dictionaries.insert(dict.digest);
            for t in &project.transcripts {
                let e = chosen.entry(*t).or_insert(dict.digest);
                *e = (*e).min(dict.digest);
            }
        }
        // A dictionary has none itself (no chains of three), nor does a body derived from
        // another (its choice stands).
        for (t, dict) in chosen {
            let spilled = shared.lock().blobs.get(&t).is_some_and(|e| e.spilled);
            if t == dict || dictionaries.contains(&t) || spilled {
                continue;
            }
            if let Some(choice @ None) = wanted.get_mut(&t) {
                *choice = Some((dict, true));
            }
        }
        for d in &dictionaries {
            wanted.insert(*d, None);
        }
        Ok(dictionaries)
    }
}

/// Whether `d` may serve as a dictionary: written, never with a hint, not spilled.
fn plain_candidate(st: &St, d: &Digest) -> bool {
    st.blobs
        .get(d)
        .is_some_and(|e| e.dict_ok && !e.spilled && e.hints.iter().all(Option::is_none))
}

impl Drop for LayerStore {
    fn drop(&mut self) {
        {
            let mut st = self.shared.lock();
            st.closing = true;
            st.queue.clear();
            self.shared.work.notify_all();
        }
        if let Ok(mut w) = self.workers.lock() {
            for h in w.drain(..) {
                let _ = h.join();
            }
        }
    }
}

/// Appends a layer to the staging file and describes it.
fn stage(
    shared: &Shared,
    body: &[u8],
    encoded: Option<&[u8]>,
    encoding: Encoding,
    dictionary: Option<Digest>,
) -> Result<Stored, BlobError> {
    let bytes = encoded.unwrap_or(body);
    let offset = shared.reserve(bytes.len() as u64);
    write_all_at(&shared.staging, bytes, offset).map_err(BlobError::Other)?;
    Ok(Stored::staged(
        offset,
        Descriptor::of(bytes),
        encoding,
        dictionary,
    ))
}

impl Shared {
    /// Room for a layer of `len` bytes in the staging file: where it goes.
    fn reserve(&self, len: u64) -> u64 {
        let mut st = self.lock();
        let o = st.next_offset;
        st.next_offset += len;
        o
    }
}

impl Stored {
    /// A layer in the staging file at `offset`, compressed (or tried) against `dictionary`.
    fn staged(
        offset: u64,
        layer: Descriptor,
        encoding: Encoding,
        dictionary: Option<Digest>,
    ) -> Stored {
        Stored {
            loc: Loc::Staging(offset),
            layer,
            encoding,
            dictionary,
            tried: dictionary,
            prepared: false,
        }
    }
}

/// A layer being made in a file of its own (a large body's, compressed as it streams), then
/// copied into the staging file: its size is known only at the end, and the staging file is
/// appended to by every worker.
struct Unstaged {
    file: tempfile::NamedTempFile,
    writer: BufWriter<File>,
    /// Bytes written so far.
    len: u64,
}

impl Unstaged {
    fn new(shared: &Shared) -> io::Result<Self> {
        let file = tempfile::NamedTempFile::new_in(&shared.dir)?;
        let writer = BufWriter::with_capacity(256 * 1024, file.reopen()?);
        Ok(Unstaged {
            file,
            writer,
            len: 0,
        })
    }

    /// Its bytes, read back (for the rare layer that turns out no smaller than its body).
    fn read(mut self) -> io::Result<Vec<u8>> {
        self.writer.flush()?;
        std::fs::read(self.file.path())
    }

    fn stage(
        mut self,
        shared: &Shared,
        encoding: Encoding,
        dictionary: Option<Digest>,
    ) -> Result<Stored, BlobError> {
        self.writer.flush().map_err(BlobError::Other)?;
        stage_file(shared, self.file.as_file(), self.len, encoding, dictionary)
    }
}

impl Write for Unstaged {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.writer.write(buf)?;
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.writer.flush()
    }
}

/// [`stage`] of the `len` bytes of `file`, copied a piece at a time.
fn stage_file(
    shared: &Shared,
    file: &File,
    len: u64,
    encoding: Encoding,
    dictionary: Option<Digest>,
) -> Result<Stored, BlobError> {
    let mut at = StagingAt {
        staging: &shared.staging,
        offset: shared.reserve(len),
        hasher: Hasher::new(),
    };
    let offset = at.offset;
    copy_range(file, 0, len, &mut at).map_err(BlobError::Other)?;
    Ok(Stored::staged(
        offset,
        at.hasher.finish(),
        encoding,
        dictionary,
    ))
}

/// Writes into the staging file from `offset` on, hashing what it writes.
struct StagingAt<'a> {
    staging: &'a File,
    offset: u64,
    hasher: Hasher,
}

impl Write for StagingAt<'_> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        write_all_at(self.staging, buf, self.offset)?;
        self.hasher.update(buf);
        self.offset += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// The bytes of a stored layer.
fn read_layer(shared: &Shared, stored: &Stored) -> io::Result<Vec<u8>> {
    let mut out = Vec::with_capacity(usize::try_from(stored.layer.size).unwrap_or(0));
    match &stored.loc {
        Loc::Staging(o) => copy_range(&shared.staging, *o, stored.layer.size, &mut out)?,
        Loc::Spill(f) => {
            File::open(f.path())?.read_to_end(&mut out)?;
        }
    }
    Ok(out)
}

/// A body's bytes, decoded from its stored layer.
fn read_body(
    shared: &Shared,
    _digest: &Digest,
    stored: &Stored,
    size: u64,
) -> Result<Vec<u8>, BlobError> {
    let raw = read_layer(shared, stored).map_err(BlobError::Other)?;
    let dict = match stored.dictionary {
        Some(d) => Some(body_of(shared, &d)?),
        None => None,
    };
    match (stored.encoding, dict) {
        (Encoding::Identity, _) => Ok(raw),
        (Encoding::Zstd, dict) => {
            decompress(&raw, dict.as_deref().map(Vec::as_slice), size).map_err(BlobError::Other)
        }
        (Encoding::ZstdWindows, Some(base)) => {
            windows::decompress(&raw, &base, size).map_err(BlobError::Other)
        }
        (Encoding::ZstdWindows, None) => Err(BlobError::Other(io::Error::other(
            "a windowed layer without its dictionary",
        ))),
    }
}

/// The first `length` bytes of a finished body: of its bytes when they are in
/// memory or its layer is small enough to decode whole; of a spilled body's layer (one frame
/// with a small window, no dictionary) as it streams, so a transcript of gigabytes is not read
/// into memory for its first bytes.
fn body_head(shared: &Shared, digest: &Digest, length: u64) -> Result<Arc<Vec<u8>>, BlobError> {
    let (stored, raw) = {
        let st = shared.lock();
        if let Some(b) = st.held(digest) {
            return Ok(Arc::new(b[..b.len().min(length as usize)].to_vec()));
        }
        let e = st.blobs.get(digest);
        (
            e.and_then(|e| e.stored.clone()),
            e.and_then(|e| e.raw.clone()),
        )
    };
    if let Some(f) = raw {
        let mut head = Vec::with_capacity(length as usize);
        File::open(f.path())
            .and_then(|r| r.take(length).read_to_end(&mut head))
            .map_err(BlobError::Other)?;
        return Ok(Arc::new(head));
    }
    match stored {
        Some(Stored {
            loc: Loc::Spill(f),
            encoding,
            ..
        }) => {
            let raw = io::BufReader::new(File::open(f.path()).map_err(BlobError::Other)?);
            let mut head = Vec::with_capacity(length as usize);
            let mut r: Box<dyn Read> = match encoding {
                Encoding::Identity => Box::new(raw),
                // A spilled body is compressed alone, never in windows.
                Encoding::Zstd | Encoding::ZstdWindows => {
                    let mut d = zstd::stream::read::Decoder::with_buffer(raw)
                        .map_err(BlobError::Other)?
                        .single_frame();
                    d.window_log_max(MAX_WINDOW_LOG).map_err(BlobError::Other)?;
                    Box::new(d)
                }
            };
            r.by_ref()
                .take(length)
                .read_to_end(&mut head)
                .map_err(BlobError::Other)?;
            Ok(Arc::new(head))
        }
        _ => {
            let b = body_of(shared, digest)?;
            Ok(Arc::new(b[..b.len().min(length as usize)].to_vec()))
        }
    }
}

/// A finished body's bytes: from the cache, else from its layer (waiting for it if needed).
fn body_of(shared: &Shared, digest: &Digest) -> Result<Arc<Vec<u8>>, BlobError> {
    let (stored, size) = {
        let mut st = shared.lock();
        loop {
            if let Some(b) = st.held(digest) {
                return Ok(b);
            }
            match st.blobs.get(digest) {
                None => return Err(BlobError::Missing(*digest)),
                Some(Entry {
                    stored: Some(s),
                    size,
                    ..
                }) => {
                    let found = (s.clone(), *size);
                    st.read_back += 1;
                    break found;
                }
                Some(_) if st.error.is_some() => {
                    return Err(BlobError::Other(io::Error::other("compression failed")));
                }
                Some(_) => st = shared.done.wait(st).expect("layer store poisoned"),
            }
        }
    };
    read_body(shared, digest, &stored, size).map(Arc::new)
}

fn worker(shared: &Shared) {
    loop {
        let job = {
            let mut st = shared.lock();
            loop {
                if let Some(j) = st.queue.pop_front() {
                    break j;
                }
                if st.closing {
                    return;
                }
                st = shared.work.wait(st).expect("layer store poisoned");
            }
        };
        let result = match &job.body {
            Body::Memory(bytes) => compress_and_stage(shared, bytes, job.dictionary, job.prepared),
            Body::File(f) => compress_file_and_stage(shared, f, job.blob.size, job.dictionary),
        };
        let mut st = shared.lock();
        st.in_flight -= job.charge;
        if let Some(p) = &job.pinned {
            st.unpin(p);
        }
        match result {
            Ok(s) => {
                if let Some(e) = st.blobs.get_mut(&job.blob.digest) {
                    e.stored = Some(s);
                    e.pending = None;
                }
            }
            Err(e) => {
                let kind = match &e {
                    BlobError::Io { source, .. } | BlobError::Other(source) => source.kind(),
                    _ => io::ErrorKind::Other,
                };
                st.error.get_or_insert_with(|| (kind, e.to_string()));
                st.closing = true;
                st.queue.clear();
                shared.work.notify_all();
            }
        }
        shared.done.notify_all();
    }
}

/// A body waiting for a worker: its bytes, or the file a large one was written to.
enum Body {
    Memory(Arc<Vec<u8>>),
    File(Arc<tempfile::NamedTempFile>),
}

/// Compresses a body written to a file (over [`WINDOWED_BASE`], compressed alone) as it reads it
/// ([`compress_streamed`], as [`encode`] compresses such a body from memory), and stages it.
fn compress_file_and_stage(
    shared: &Shared,
    file: &tempfile::NamedTempFile,
    size: u64,
    dictionary: Option<Digest>,
) -> Result<Stored, BlobError> {
    let prepared_dict = match dictionary {
        Some(d) => Some(prepared(shared, &d)?),
        None => None,
    };
    let mut reader = io::BufReader::new(File::open(file.path()).map_err(BlobError::Other)?);
    let mut out = Unstaged::new(shared).map_err(BlobError::Other)?;
    compress_streamed_into(
        &mut reader,
        size,
        prepared_dict.as_deref(),
        shared.opts.level,
        &mut out,
    )
    .map_err(BlobError::Other)?;
    let mut stored = match out.len < size {
        true => out.stage(shared, Encoding::Zstd, dictionary)?,
        false => stage_file(shared, file.as_file(), size, Encoding::Identity, None)?,
    };
    stored.tried = dictionary;
    stored.prepared = dictionary.is_some();
    Ok(stored)
}

/// A body being written.
struct LayerWriter<'a> {
    store: &'a LayerStore,
    hint: Option<Digest>,
    /// Whether it is compressed without a body it derives from: written without a hint, or
    /// derived from a body over [`SPILL`], which serves as no dictionary.
    alone: bool,
    /// The predicted dictionary of the project whose transcript this is.
    project: Option<Digest>,
    /// Whether it is a transcript ([`BlobSink::begin_transcript`]).
    transcript: bool,
    /// A transcript's heads, taken as it is hashed ([`Heads::update`]).
    heads: Heads,
    /// The hint's bytes, pinned in memory for this body's compression (see [`St::pin`]).
    pinned: Option<Digest>,
    hasher: Hasher,
    buf: Vec<u8>,
    spill: Option<Spill>,
    /// An update stream of a large transcript, compressed in windows as it is written.
    windows: Option<Streamed>,
    /// A body over [`WINDOWED_BASE`] compressed alone, going to a file of its own.
    raw: Option<Raw>,
}

/// A large body's bytes on their way to a file (its first bytes kept, to tell whether it can
/// serve as a dictionary).
struct Raw {
    file: Arc<tempfile::NamedTempFile>,
    out: BufWriter<File>,
    first: Vec<u8>,
}

/// A derived body compressed in windows of its base as it is written (spec §4.2), so only a
/// frame of it is ever held: the frames are exactly those [`windows::compress`] makes of the
/// whole body, which is what a worker would have made of it.
struct Streamed {
    base: Digest,
    bytes: Source,
    /// A window read from a file base.
    window: Vec<u8>,
    /// The frame being made, its room kept from one frame to the next.
    frame: Vec<u8>,
    /// The frames so far, in a file (a stream of hundreds of megabytes has tens of megabytes
    /// of them), and how many bytes of the body they hold.
    frames: Unstaged,
    done: usize,
    /// The body's first bytes, to tell whether it could serve as a dictionary.
    first: Vec<u8>,
    /// The converter's thread compresses the frames itself: the context it keeps for them
    /// goes with the stream.
    _context: contexts::ReleaseOnDrop,
}

impl Streamed {
    fn frame(&mut self, body: &[u8], level: i32) -> io::Result<()> {
        if self.first.len() < DICT_MAGIC.len() {
            let n = (DICT_MAGIC.len() - self.first.len()).min(body.len());
            self.first.extend_from_slice(&body[..n]);
        }
        let w = windows::window(self.bytes.len(), self.done, body.len());
        let window = match &self.bytes {
            Source::Memory(b) => &b[w],
            Source::File(f, _) => {
                // Exactly a window's room: grown by `resize`, it doubled (6 to 12 MiB).
                self.window
                    .reserve_exact(w.len().saturating_sub(self.window.len()));
                self.window.resize(w.len(), 0);
                read_exact_at(f.as_file(), &mut self.window, w.start as u64)?;
                &self.window[..]
            }
        };
        compress_frame_into(body, window, level, &mut self.frame)?;
        self.frames.write_all(&self.frame)?;
        self.done += body.len();
        Ok(())
    }
}

/// A base's bytes as a stream in windows reads them: in memory, or in the file a large body
/// was written to (with its length).
enum Source {
    Memory(Arc<Vec<u8>>),
    File(Arc<tempfile::NamedTempFile>, u64),
}

impl Source {
    fn len(&self) -> usize {
        match self {
            Source::Memory(b) => b.len(),
            Source::File(_, n) => usize::try_from(*n).unwrap_or(usize::MAX),
        }
    }

    /// Whether no window of it can start with zstd's dictionary magic ([`windows::clear`]).
    fn clear(&self) -> io::Result<bool> {
        match self {
            Source::Memory(b) => Ok(windows::clear(b)),
            Source::File(f, n) => {
                let mut magic = [0u8; 4];
                for at in windows::starts(usize::try_from(*n).unwrap_or(usize::MAX)) {
                    let want = (DICT_MAGIC.len() as u64).min(*n - at as u64) as usize;
                    read_exact_at(f.as_file(), &mut magic[..want], at as u64)?;
                    if magic[..want] == DICT_MAGIC[..] {
                        return Ok(false);
                    }
                }
                Ok(true)
            }
        }
    }

    /// The whole base in memory.
    fn whole(&self) -> io::Result<Arc<Vec<u8>>> {
        match self {
            Source::Memory(b) => Ok(Arc::clone(b)),
            Source::File(f, _) => Ok(Arc::new(std::fs::read(f.path())?)),
        }
    }
}

fn read_exact_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match read_at(file, buf, offset)? {
            0 => return Err(io::ErrorKind::UnexpectedEof.into()),
            n => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
        }
    }
    Ok(())
}

/// A writer dropped unfinished (its converter failed) lets go of its pin.
impl Drop for LayerWriter<'_> {
    fn drop(&mut self) {
        if let Some(p) = self.pinned.take()
            && let Ok(mut st) = self.store.shared.st.lock()
        {
            st.unpin(&p);
        }
    }
}

struct Spill {
    file: Arc<tempfile::NamedTempFile>,
    out: SpillOut,
}

enum SpillOut {
    Zstd(zstd::stream::write::Encoder<'static, HashingWriter<BufWriter<File>>>),
    Raw(HashingWriter<BufWriter<File>>),
}

impl Write for LayerWriter<'_> {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        match self.transcript {
            true => self.heads.update(&mut self.hasher, data),
            false => self.hasher.update(data),
        }
        if let Some(w) = &mut self.windows {
            // Filled to one frame and no further, so the buffer never grows past the frame
            // it was made for (a write of megabytes would double it, and keep it doubled).
            let level = self.store.shared.opts.level;
            let mut rest = data;
            while !rest.is_empty() {
                let take = (windows::FRAME - self.buf.len()).min(rest.len());
                self.buf.extend_from_slice(&rest[..take]);
                rest = &rest[take..];
                if self.buf.len() == windows::FRAME {
                    w.frame(&self.buf, level)?;
                    self.buf.clear();
                }
            }
            return Ok(data.len());
        }
        if self.spill.is_none() && self.raw.is_none() {
            // To a file or a spill before the buffer would grow past its room (growing, it
            // doubles: a transcript's buffer of 8 MiB took 16 MiB for the write that made it
            // go to a file), so the body goes there when it is larger than the room.
            let to_file = self.alone && self.store.shared.opts.encoding == Encoding::Zstd;
            let room = match to_file {
                true => WINDOWED_BASE,
                false => SPILL,
            };
            if (self.buf.len() + data.len()) as u64 <= room {
                self.buf.extend_from_slice(data);
                return Ok(data.len());
            }
            match to_file {
                true => self.start_raw()?,
                false => self.start_spill()?,
            }
        }
        if let Some(s) = &mut self.spill {
            match &mut s.out {
                SpillOut::Zstd(e) => e.write_all(data)?,
                SpillOut::Raw(w) => w.write_all(data)?,
            }
        } else if let Some(r) = &mut self.raw {
            let n = DICT_MAGIC
                .len()
                .saturating_sub(r.first.len())
                .min(data.len());
            r.first.extend_from_slice(&data[..n]);
            r.out.write_all(data)?;
        }
        Ok(data.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl LayerWriter<'_> {
    /// From here on the body goes to a file, so a transcript of tens of megabytes is not held
    /// (spec §13.3): it is compressed from the file as it streams when finished, and a stream
    /// derived from it reads its windows from the file.
    fn start_raw(&mut self) -> io::Result<()> {
        let file = Arc::new(tempfile::NamedTempFile::new_in(&self.store.shared.dir)?);
        let mut out = BufWriter::with_capacity(256 * 1024, file.reopen()?);
        out.write_all(&self.buf)?;
        let first = self.buf[..DICT_MAGIC.len().min(self.buf.len())].to_vec();
        self.buf = Vec::new();
        self.raw = Some(Raw { file, out, first });
        Ok(())
    }

    /// Finishes a body written to a file ([`Self::start_raw`]): a worker compresses it from
    /// the file as it streams. A transcript is compressed against its project's predicted
    /// dictionary (`settle` compresses it again, from its layer, if the prediction was
    /// wrong), and its file stays for the windows of a stream derived from it; over [`SPILL`]
    /// it is compressed alone and serves as no dictionary, as a spilled body. A stream (of a
    /// transcript over [`SPILL`]) is compressed alone, and its file goes with its job.
    fn finish_raw(&mut self, raw: Raw, blob: Descriptor) -> Result<(), BlobError> {
        let shared = &self.store.shared;
        let Raw { file, out, first } = raw;
        out.into_inner()
            .map_err(|e| BlobError::Other(e.into_error()))?;
        let too_large = blob.size > SPILL;
        let mut st = shared.lock();
        if let Some((kind, e)) = &st.error {
            return Err(shared.failed(*kind, e));
        }
        if let Some(e) = st.blobs.get_mut(&blob.digest) {
            e.hints.insert(self.hint);
            return Ok(());
        }
        let dictionary = self
            .project
            .filter(|p| !too_large && *p != blob.digest && plain_candidate(&st, p));
        st.blobs.insert(
            blob.digest,
            Entry {
                size: blob.size,
                hints: BTreeSet::from([self.hint]),
                stored: None,
                spilled: too_large,
                dict_ok: !too_large && !first.starts_with(&DICT_MAGIC),
                pending: None,
                heads: self.heads,
                raw: self.hint.is_none().then(|| Arc::clone(&file)),
            },
        );
        // What its worker holds: zstd's window, not the body.
        let charge = blob.size.min(1 << STREAMED_WINDOW_LOG);
        while st.in_flight > 0 && st.in_flight + charge > BUDGET && st.error.is_none() {
            st = shared.done.wait(st).expect("layer store poisoned");
        }
        st.in_flight += charge;
        st.queued += blob.size;
        st.queue.push_back(Job {
            blob,
            body: Body::File(file),
            charge,
            dictionary,
            prepared: dictionary.is_some(),
            pinned: None,
        });
        shared.work.notify_one();
        Ok(())
    }

    fn start_spill(&mut self) -> io::Result<()> {
        let shared = &self.store.shared;
        let file = Arc::new(tempfile::NamedTempFile::new_in(&shared.dir)?);
        let w = HashingWriter::new(BufWriter::with_capacity(256 * 1024, file.reopen()?));
        let mut out = match shared.opts.encoding {
            Encoding::Zstd | Encoding::ZstdWindows => {
                let mut e = zstd::stream::write::Encoder::new(w, shared.opts.level)?;
                e.include_checksum(false)?;
                e.include_dictid(false)?;
                SpillOut::Zstd(e)
            }
            Encoding::Identity => SpillOut::Raw(w),
        };
        match &mut out {
            SpillOut::Zstd(e) => e.write_all(&self.buf)?,
            SpillOut::Raw(w) => w.write_all(&self.buf)?,
        }
        self.buf = Vec::new();
        self.spill = Some(Spill { file, out });
        Ok(())
    }
}

impl BlobWrite for LayerWriter<'_> {
    fn finish(mut self: Box<Self>) -> Result<Descriptor, BlobError> {
        // Taken apart field by field: the writer's `Drop` still lets go of its pin on any
        // early return below.
        let store = self.store;
        let hint = self.hint;
        let project = self.project;
        let hasher = std::mem::replace(&mut self.hasher, Hasher::new());
        let buf = std::mem::take(&mut self.buf);
        let spill = self.spill.take();
        let blob = hasher.finish();
        let shared = &store.shared;
        if let Some(raw) = self.raw.take() {
            self.finish_raw(raw, blob)?;
            return Ok(blob);
        }
        let buf = match self.windows.take() {
            None => buf,
            Some(streamed) => match self.finish_streamed(streamed, blob, buf)? {
                Some(body) => body,
                None => return Ok(blob),
            },
        };
        let spilled = match spill {
            None => None,
            Some(Spill { file, out }) => {
                let w = match out {
                    SpillOut::Zstd(e) => e.finish().map_err(BlobError::Other)?,
                    SpillOut::Raw(w) => w,
                };
                let (w, layer) = w.finish();
                w.into_inner()
                    .map_err(|e| BlobError::Other(e.into_error()))?;
                Some(Stored {
                    loc: Loc::Spill(file),
                    layer,
                    encoding: shared.opts.encoding,
                    dictionary: None,
                    tried: None,
                    prepared: false,
                })
            }
        };
        let heads = self.heads;
        let mut st = shared.lock();
        if let Some((kind, e)) = &st.error {
            return Err(shared.failed(*kind, e));
        }
        if let Some(e) = st.blobs.get_mut(&blob.digest) {
            e.hints.insert(hint);
            return Ok(blob);
        }
        let is_spilled = spilled.is_some();
        // The dictionary to compress with now; `finish` settles the final choice. A body
        // derived from another is compressed against it; a transcript against its project's
        // predicted dictionary.
        let dictionary =
            hint.filter(|h| !is_spilled && *h != blob.digest && plain_candidate(&st, h));
        let (dictionary, prepared) = match (dictionary, hint) {
            (Some(d), _) => (Some(d), false),
            (None, None) => {
                let p =
                    project.filter(|p| !is_spilled && *p != blob.digest && plain_candidate(&st, p));
                (p, p.is_some())
            }
            (None, Some(_)) => (None, false),
        };
        // The pin serves the job below only when it compresses against the pinned body.
        let pinned = self.pinned.take().and_then(|p| {
            if dictionary == Some(p) {
                Some(p)
            } else {
                st.unpin(&p);
                None
            }
        });
        let dict_ok = !is_spilled && blob.size >= TINY as u64 && !buf.starts_with(&DICT_MAGIC);
        let bytes = Arc::new(buf);
        st.blobs.insert(
            blob.digest,
            Entry {
                size: blob.size,
                hints: BTreeSet::from([hint]),
                stored: spilled,
                spilled: is_spilled,
                dict_ok,
                pending: (!is_spilled).then(|| Arc::clone(&bytes)),
                heads,
                raw: None,
            },
        );
        if is_spilled {
            return Ok(blob);
        }
        if shared.opts.encoding == Encoding::Zstd && dict_ok && blob.size <= CACHE {
            st.cache.push_back((blob.digest, Arc::clone(&bytes)));
            st.cache_bytes += blob.size;
            while st.cache_bytes > CACHE && st.cache.len() > 1 {
                let (_, b) = st.cache.pop_front().expect("not empty");
                st.cache_bytes -= b.len() as u64;
            }
        }
        while st.in_flight > 0 && st.in_flight + blob.size > BUDGET && st.error.is_none() {
            st = shared.done.wait(st).expect("layer store poisoned");
        }
        st.in_flight += blob.size;
        st.queued += blob.size;
        st.queue.push_back(Job {
            blob,
            body: Body::Memory(bytes),
            charge: blob.size,
            dictionary,
            prepared,
            pinned,
        });
        shared.work.notify_one();
        Ok(blob)
    }
}

impl LayerWriter<'_> {
    /// Finishes a body streamed in windows (`buf`, its last bytes, are its last frame) and
    /// stores its layer. A body shorter than one frame (`buf` is all of it) goes the usual way,
    /// which stores it as a worker does any body (small ones as they are); so does one whose
    /// frames are no smaller than it (which no stream of a transcript is), decoded back.
    fn finish_streamed(
        &mut self,
        mut streamed: Streamed,
        blob: Descriptor,
        buf: Vec<u8>,
    ) -> Result<Option<Vec<u8>>, BlobError> {
        if streamed.done == 0 {
            return Ok(Some(buf));
        }
        let shared = &self.store.shared;
        if !buf.is_empty() {
            streamed
                .frame(&buf, shared.opts.level)
                .map_err(BlobError::Other)?;
        }
        let Streamed {
            base,
            bytes,
            frames,
            first,
            ..
        } = streamed;
        let known = |st: &mut St| match st.blobs.get_mut(&blob.digest) {
            Some(e) => {
                e.hints.insert(Some(base));
                true
            }
            None => false,
        };
        {
            let mut st = shared.lock();
            if let Some((kind, e)) = &st.error {
                return Err(shared.failed(*kind, e));
            }
            if known(&mut st) {
                return Ok(None);
            }
        }
        if frames.len >= blob.size {
            let whole = bytes.whole().map_err(BlobError::Other)?;
            let frames = frames.read().map_err(BlobError::Other)?;
            let body = windows::decompress(&frames, &whole, blob.size).map_err(BlobError::Other)?;
            return Ok(Some(body));
        }
        let stored = frames.stage(shared, Encoding::ZstdWindows, Some(base))?;
        let mut st = shared.lock();
        if let Some(p) = self.pinned.take() {
            st.unpin(&p);
        }
        if !known(&mut st) {
            st.blobs.insert(
                blob.digest,
                Entry {
                    size: blob.size,
                    hints: BTreeSet::from([Some(base)]),
                    stored: Some(stored),
                    spilled: false,
                    dict_ok: !first.starts_with(&DICT_MAGIC),
                    pending: None,
                    heads: Heads::default(),
                    raw: None,
                },
            );
        }
        if let (Source::File(..), Some(e)) = (&bytes, st.blobs.get_mut(&base)) {
            // Its stream is written: the file goes once no other writer reads it.
            e.raw = None;
        }
        shared.done.notify_all();
        Ok(None)
    }
}

impl LayerStore {
    /// A writer whose buffer has room for `expected` bytes, up to its most ([`SPILL`], or
    /// [`WINDOWED_BASE`] for a body compressed alone, which then goes to a file; a larger body
    /// spills to a file): growing a buffer of a few hundred kilobytes by doubling copies it
    /// about once more.
    fn writer(
        &self,
        hint: Option<Digest>,
        project: Option<Digest>,
        transcript: bool,
        expected: u64,
    ) -> Result<Box<dyn BlobWrite + '_>, BlobError> {
        // A body derived from one too large to serve as a dictionary (over [`SPILL`]) is
        // compressed alone, as a body written without a hint; such a body goes to a file past
        // [`WINDOWED_BASE`], and a worker compresses it as it streams. (Kept in memory up to
        // [`SPILL`] instead, the stream of a transcript of 150 MB took 64 MiB, in a buffer
        // that doubled to 128 MiB before it spilled.)
        let alone = match hint {
            None => true,
            Some(h) => self.shared.lock().blobs.get(&h).is_some_and(|e| e.spilled),
        };
        let most = match alone {
            true => WINDOWED_BASE + 1,
            false => SPILL,
        };
        let mut room = usize::try_from(expected.min(most)).unwrap_or(0);
        let eligible = |st: &St, h: &Digest| {
            self.shared.opts.encoding == Encoding::Zstd && plain_candidate(st, h)
        };
        let pinned = hint.filter(|h| {
            let mut st = self.shared.lock();
            eligible(&st, h) && st.pin(h)
        });
        // A large base: the body goes in windows as it is written (spec §4.2), the base read
        // back from its layer when it is no longer in memory, so whether a body is streamed in
        // windows (or, past [`SPILL`], spilled without a dictionary) never depends on timing.
        let large = hint.filter(|h| {
            let st = self.shared.lock();
            eligible(&st, h) && st.blobs.get(h).is_some_and(|e| e.size > WINDOWED_BASE)
        });
        let windows = match large {
            None => None,
            Some(base) => {
                let (held, raw, size) = {
                    let st = self.shared.lock();
                    let e = &st.blobs[&base];
                    (st.held(&base), e.raw.clone(), e.size)
                };
                let bytes = match (held, raw) {
                    (Some(b), _) => Source::Memory(b),
                    (None, Some(f)) => Source::File(f, size),
                    (None, None) => Source::Memory(body_of(&self.shared, &base)?),
                };
                match bytes.clear().map_err(BlobError::Other)? {
                    false => None,
                    true => Some(Streamed {
                        base,
                        bytes,
                        window: Vec::new(),
                        frame: Vec::new(),
                        frames: Unstaged::new(&self.shared).map_err(BlobError::Other)?,
                        done: 0,
                        first: Vec::new(),
                        _context: contexts::ReleaseOnDrop,
                    }),
                }
            }
        };
        if windows.is_some() {
            room = windows::FRAME;
        }
        Ok(Box::new(LayerWriter {
            store: self,
            hint,
            alone,
            project,
            transcript,
            heads: Heads::default(),
            pinned,
            hasher: Hasher::new(),
            buf: Vec::with_capacity(room),
            spill: None,
            windows,
            raw: None,
        }))
    }
}

impl BlobSink for LayerStore {
    fn begin(&self) -> Result<Box<dyn BlobWrite + '_>, BlobError> {
        self.writer(None, None, false, 0)
    }

    fn begin_sized(&self, size: u64) -> Result<Box<dyn BlobWrite + '_>, BlobError> {
        self.writer(None, None, false, size)
    }

    /// Stores the dictionary (compressed alone, as a dictionary is) and remembers the folder.
    fn predict_dictionary(&self, folder: &Path, dictionary: &[u8]) -> Result<(), BlobError> {
        if self.shared.opts.encoding != Encoding::Zstd {
            return Ok(());
        }
        let d = self.put(dictionary)?;
        self.shared
            .predicted
            .lock()
            .expect("predicted dictionaries")
            .push((folder.to_path_buf(), d.digest));
        Ok(())
    }

    /// A transcript under a folder [`BlobSink::predict_dictionary`] named is compressed
    /// against that project's dictionary.
    fn begin_transcript(
        &self,
        path: &Path,
        size: u64,
    ) -> Result<Box<dyn BlobWrite + '_>, BlobError> {
        let project = self
            .shared
            .predicted
            .lock()
            .expect("predicted dictionaries")
            .iter()
            .filter(|(dir, _)| path.starts_with(dir))
            .max_by_key(|(dir, _)| dir.as_os_str().len())
            .map(|(_, d)| *d);
        self.writer(None, project, true, size)
    }

    /// The derived body (an update stream) is usually about as long as its base (the
    /// transcript): room for that and an eighth more.
    fn begin_derived(&self, base: &Descriptor) -> Result<Box<dyn BlobWrite + '_>, BlobError> {
        self.writer(
            Some(base.digest),
            None,
            false,
            base.size.saturating_add(base.size / 8),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blob::BlobSource;

    /// A body over [`SPILL`] is staged in a file of its own, in the store's directory, which
    /// must last as long as the [`Layers`] the store finishes into, not the store: a Claude
    /// Code transcript of 75 MB once made every pack and backup of its home fail, the layer
    /// gone before it was copied.
    #[test]
    fn layers_over_spill_outlive_the_store_that_staged_them() {
        let dir = tempfile::tempdir().unwrap();
        let store = LayerStore::new_in(dir.path(), LayerOptions::default()).unwrap();
        // Lines that do not repeat, as a transcript's: a worker compresses it as it streams.
        let mut transcript = Vec::with_capacity(SPILL as usize + (1 << 20));
        let mut n = 0u64;
        while transcript.len() as u64 <= SPILL {
            n += 1;
            transcript.extend_from_slice(
                format!(
                    "{{\"n\":{n},\"line\":\"{:x}\"}}\n",
                    n.wrapping_mul(0x9e37_79b9_7f4a_7c15)
                )
                .as_bytes(),
            );
        }
        let big = store.put(&transcript).unwrap();
        // A stream derived from it, also over SPILL: it cannot be compressed against a body
        // that serves as no dictionary, so it goes to a file as it is written, as a body
        // without a hint does, and a worker compresses it alone as it streams.
        let mut w = store.begin_derived(&big).unwrap();
        w.write_all(&transcript).unwrap();
        w.write_all(b"one more line\n").unwrap();
        let stream = w.finish().unwrap();
        // And one under SPILL (the stream of a transcript can be smaller than it): past
        // WINDOWED_BASE it is in a file, not in memory, while it is written.
        let files_of = |len: std::ops::Range<u64>| {
            let mut n = 0;
            let mut dirs = vec![dir.path().to_path_buf()];
            while let Some(d) = dirs.pop() {
                for e in std::fs::read_dir(&d).unwrap().flatten() {
                    let m = e.metadata().unwrap();
                    match m.is_dir() {
                        true => dirs.push(e.path()),
                        false => n += usize::from(len.contains(&m.len())),
                    }
                }
            }
            n
        };
        let size = WINDOWED_BASE * 2;
        let near = size - (1 << 20)..size + 1;
        let before = files_of(near.clone());
        let mut w = store.begin_derived(&big).unwrap();
        w.write_all(&transcript[..size as usize]).unwrap();
        assert_eq!(
            files_of(near),
            before + 1,
            "the stream is in a file as it is written"
        );
        let smaller = w.finish().unwrap();
        {
            let st = store.shared.lock();
            assert!(
                !plain_candidate(&st, &stream.digest),
                "a stream serves as no dictionary"
            );
            assert!(
                !plain_candidate(&st, &smaller.digest),
                "a stream serves as no dictionary"
            );
        }
        let layers = store.finish().unwrap();
        let mut body = transcript.clone();
        body.extend_from_slice(b"one more line\n");
        for (d, bytes) in [
            (big, &transcript[..]),
            (stream, &body[..]),
            (smaller, &transcript[..WINDOWED_BASE as usize * 2]),
        ] {
            let staged = &layers.blobs[&d.digest];
            let mut out = Vec::new();
            let copied = layers.copy_to(staged, &mut out).unwrap();
            assert_eq!(copied, staged.layer.size);
            assert_eq!(Digest::of(&out), staged.layer.layer, "{d:?}");
            assert_eq!(staged.layer.encoding, Encoding::Zstd, "{d:?}");
            assert_eq!(staged.layer.dictionary, None, "{d:?}");
            assert!(out.len() < bytes.len(), "{d:?}");
            assert!(decompress(&out, None, d.size).unwrap() == bytes, "{d:?}");
        }
        drop(layers);
        let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert!(
            left.is_empty(),
            "the staging directory goes with the layers"
        );
    }
    /// A body larger than its writer's room goes to a file before the write that would grow
    /// the buffer past it, and is still known by its first bytes when that write is all of
    /// it: one that starts with zstd's dictionary magic serves as no dictionary.
    #[test]
    fn a_body_written_at_once_past_its_room_is_known_by_its_first_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = LayerStore::new_in(dir.path(), LayerOptions::default()).unwrap();
        let mut body = DICT_MAGIC.to_vec();
        body.extend((0..WINDOWED_BASE + 100).map(|i| (i * 7 % 251) as u8));
        let mut w = store.begin().unwrap();
        w.write_all(&body).unwrap();
        let magic = w.finish().unwrap();
        body[0] = b'{';
        let mut w = store.begin().unwrap();
        w.write_all(&body).unwrap();
        let plain = w.finish().unwrap();
        {
            let st = store.shared.lock();
            assert!(st.blobs[&magic.digest].raw.is_some());
            assert!(!plain_candidate(&st, &magic.digest));
            assert!(plain_candidate(&st, &plain.digest));
        }
        let layers = store.finish().unwrap();
        for d in [magic, plain] {
            let mut out = Vec::new();
            layers.copy_to(&layers.blobs[&d.digest], &mut out).unwrap();
            assert_eq!(
                Digest::of(&decompress(&out, None, d.size).unwrap()),
                d.digest
            );
        }
    }

    use crate::bundle::{Bundle, Options2, PROJECT_DICTIONARY, write_layers_file};
    use crate::progress::Quiet;
    use crate::state::{FileEntry, Native, Session, State};

    /// Text that shares most of its bytes with `base`, like an update stream with its transcript.
    fn derived_text(base: &str, n: usize) -> String {
        base.lines()
            .enumerate()
            .map(|(i, l)| format!("{{\"sessionId\":\"s{n}\",\"update\":{{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{{\"type\":\"text\",\"text\":\"{i} {}\"}}}}}}\n", l[..l.len().min(200)].replace('"', "'")))
            .collect()
    }

    fn native_text(n: usize) -> String {
        let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ n as u64;
        (0..400)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                format!(
                    "{{\"line\":{i},\"text\":\"{:016x} {:x} {}\"}}\n",
                    x,
                    x % 977,
                    "word ".repeat((x % 30) as usize)
                )
            })
            .collect()
    }

    /// Session `id` of a Claude Code store: its stream `updates` and native files `n/0.jsonl`,
    /// `n/1.jsonl`… holding `files`.
    fn session(id: &str, cwd: Option<&str>, updates: Descriptor, files: &[Descriptor]) -> Session {
        Session {
            id: crate::name::SessionId::new(id).unwrap(),
            title: String::new(),
            harness: None,
            cwd: cwd.map(str::to_owned),
            updated_at: None,
            updates,
            native: Some(Native {
                harness: crate::name::HarnessName::new("claude-code").unwrap(),
                files: files
                    .iter()
                    .enumerate()
                    .map(|(i, f)| FileEntry {
                        path: crate::name::RelPath::new(&format!("n/{id}-{i}.jsonl")).unwrap(),
                        executable: false,
                        content: *f,
                    })
                    .collect(),
            }),
            meta: None,
        }
    }

    fn pack(threads: usize, dir: &Path) -> (Vec<u8>, State) {
        let store = LayerStore::new_in(
            dir,
            LayerOptions {
                threads,
                ..LayerOptions::default()
            },
        )
        .unwrap();
        let mut sessions = Vec::new();
        for n in 0..40 {
            let native = native_text(n % 30);
            let nd = store.put(native.as_bytes()).unwrap();
            let mut w = store.begin_derived(&nd).unwrap();
            w.write_all(derived_text(&native, n).as_bytes()).unwrap();
            let ud = w.finish().unwrap();
            sessions.push(session(&format!("s{n}"), None, ud, &[nd]));
        }
        let state = State {
            sessions: Some(sessions),
            ..State::default()
        };
        let layers = store.finish().unwrap();
        let out = dir.join(format!("b{threads}.aspstate"));
        write_layers_file(
            &out,
            &state,
            &layers,
            &Options2 {
                zstd_documents: true,
                ..Options2::default()
            },
            false,
            &Quiet,
        )
        .unwrap();
        (std::fs::read(&out).unwrap(), state)
    }

    /// How a test writes a project's transcripts: told nothing (the dictionaries are made at
    /// the end), told the right dictionary before, or a wrong one.
    #[derive(Clone, Copy, PartialEq)]
    enum Prediction {
        None,
        Right,
        Wrong,
    }

    /// Four projects' sessions whose transcripts quote their project's files, as sessions of
    /// one project do: `/a` and `/b` have transcripts of at least a MiB, `/c` none but two of
    /// at least 256 KiB, `/d` none that long. Packed
    /// with project dictionaries (`finish_for`) or without (`finish`).
    fn pack_projects(
        threads: usize,
        prediction: Prediction,
        projects: bool,
        dir: &Path,
    ) -> (Vec<u8>, State) {
        let store = LayerStore::new_in(
            dir,
            LayerOptions {
                threads,
                ..LayerOptions::default()
            },
        )
        .unwrap();
        // A project's files: lines of words from its own vocabulary.
        let corpus = |project: u64| -> Vec<String> {
            let mut x = 0x2545_f491_4f6c_dd1du64 ^ (project << 32);
            (0..12_000)
                .map(|i| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    format!(
                        "    let v{i}_{:x} = compute_{:x}(input, {});",
                        x % 4099,
                        (x >> 20) % 977,
                        (x >> 40) % 100_003
                    )
                })
                .collect()
        };
        // Session `n`'s transcript: reads of its project's files, from its own offsets.
        let transcript = |n: usize, lines: &[String], len: usize| -> String {
            let mut out = String::new();
            let mut at = (n * 7919) % lines.len();
            while out.len() < len {
                out.push_str(&format!("{{\"type\":\"user\",\"n\":{n},\"content\":\""));
                for l in lines.iter().cycle().skip(at).take(40) {
                    out.push_str(l);
                    out.push_str("\\n");
                }
                out.push_str("\"}\n");
                at = (at * 31 + n + 1) % lines.len();
            }
            out
        };
        let plan: Vec<(&str, usize, usize)> = vec![
            ("/a", 0, 1_300_000),
            ("/a", 1, 400_000),
            ("/a", 2, 1_100_000),
            ("/a", 3, 200_000),
            ("/b", 4, 1_200_000),
            ("/b", 5, 300_000),
            ("/c", 6, 500_000),
            ("/c", 7, 300_000),
            ("/d", 8, 200_000),
        ];
        let texts: Vec<String> = plan
            .iter()
            .map(|(cwd, n, len)| {
                transcript(
                    *n,
                    &corpus(cwd.len() as u64 + cwd.as_bytes()[1] as u64),
                    *len,
                )
            })
            .collect();
        let folder = |cwd: &str| dir.join("projects").join(&cwd[1..]);
        match prediction {
            Prediction::None => {}
            // The least id of at least a MiB: s0 for /a, s4 for /b; of at least 256 KiB, s6
            // for /c.
            Prediction::Right => {
                for (i, length) in [
                    (0, PROJECT_DICTIONARY),
                    (4, PROJECT_DICTIONARY),
                    (6, 1 << 18),
                ] {
                    let head = &texts[i].as_bytes()[..length as usize];
                    store.predict_dictionary(&folder(plan[i].0), head).unwrap();
                }
            }
            Prediction::Wrong => {
                let head = &texts[2].as_bytes()[..PROJECT_DICTIONARY as usize];
                store.predict_dictionary(&folder("/a"), head).unwrap();
                store.predict_dictionary(&folder("/c"), head).unwrap();
            }
        }
        let mut sessions = Vec::new();
        for (i, (cwd, n, _)) in plan.iter().enumerate() {
            let path = folder(cwd).join(format!("s{n}.jsonl"));
            let mut w = store
                .begin_transcript(&path, texts[i].len() as u64)
                .unwrap();
            w.write_all(texts[i].as_bytes()).unwrap();
            let nd = w.finish().unwrap();
            let mut w = store.begin_derived(&nd).unwrap();
            w.write_all(derived_text(&texts[i], *n).as_bytes()).unwrap();
            let ud = w.finish().unwrap();
            sessions.push(session(&format!("s{n}"), Some(cwd), ud, &[nd]));
        }
        let state = State {
            sessions: Some(sessions),
            ..State::default()
        };
        let layers = match projects {
            true => store
                .finish_for(
                    &state,
                    &|s| s.native.as_ref().map(|n| n.files[0].content),
                    None,
                )
                .unwrap(),
            false => store.finish().unwrap(),
        };
        let out = dir.join(format!("p{threads}.aspstate"));
        write_layers_file(&out, &state, &layers, &Options2::default(), true, &Quiet).unwrap();
        (std::fs::read(&out).unwrap(), state)
    }

    #[test]
    fn transcripts_go_against_their_projects_dictionary_whatever_was_predicted() {
        let dir = tempfile::tempdir().unwrap();
        let (plain, _) = pack_projects(2, Prediction::None, false, dir.path());
        let (unpredicted, state) = pack_projects(1, Prediction::None, true, dir.path());
        let (right, _) = pack_projects(3, Prediction::Right, true, dir.path());
        let (wrong, _) = pack_projects(2, Prediction::Wrong, true, dir.path());
        assert!(unpredicted == right, "a right prediction changed the bytes");
        assert!(unpredicted == wrong, "a wrong prediction changed the bytes");
        assert!(
            unpredicted.len() * 10 < plain.len() * 9,
            "project dictionaries should save more than a tenth: {} against {}",
            unpredicted.len(),
            plain.len()
        );

        let path = dir.path().join("p2.aspstate");
        let b = Bundle::open(&path).unwrap();
        assert_eq!(b.layout().layout_version, crate::bundle::LAYOUT_VERSION4);
        // Three dictionaries: the first MiB of s0 for /a and of s4 for /b, the first 256 KiB
        // of s6 for /c (none of its transcripts holds 512 KiB); /d has none that long.
        let m = b.image_manifest().unwrap();
        let dictionaries: Vec<_> = m
            .layers
            .iter()
            .filter(|l| {
                l.media_type
                    .starts_with(crate::bundle::oci::DICTIONARY_LAYER)
            })
            .collect();
        assert_eq!(dictionaries.len(), 3);
        let sessions = state.sessions.as_deref().unwrap();
        let of = |i: usize| sessions[i].native.as_ref().unwrap().files[0].content;
        let dict_of = |d: &Digest| b.layer_of(d).unwrap().1;
        let head = |i: usize, length: u64| {
            let t = b.read_all(&of(i)).unwrap();
            Descriptor::of(&t[..length as usize]).digest
        };
        for i in 0..4 {
            assert_eq!(
                dict_of(&of(i).digest),
                Some(head(0, PROJECT_DICTIONARY)),
                "/a's transcript s{i}"
            );
        }
        for i in 4..6 {
            assert_eq!(
                dict_of(&of(i).digest),
                Some(head(4, PROJECT_DICTIONARY)),
                "/b's transcript s{i}"
            );
        }
        for i in 6..8 {
            assert_eq!(
                dict_of(&of(i).digest),
                Some(head(6, 1 << 18)),
                "/c's transcript s{i}"
            );
        }
        assert_eq!(dict_of(&of(8).digest), None, "/d's transcript s8");
        // Streams are two deep: against their transcript, against the project's dictionary.
        for (i, s) in sessions.iter().enumerate() {
            assert_eq!(dict_of(&s.updates.digest), Some(of(i).digest));
            assert_eq!(Descriptor::of(&b.read_all(&s.updates).unwrap()), s.updates);
        }
        b.check_data(&state, &Quiet).unwrap();
        let report =
            crate::bundle::verify_file(&path, &crate::bundle::Limits::default(), &Quiet).unwrap();
        assert!(report.is_ok(), "{:?}", report.problems);
    }

    /// Layers as a test makes them, for [`write_layers_file`].
    struct Made(BTreeMap<Digest, (LayerRef, Vec<u8>)>);

    impl Made {
        /// A bundle of `state` with these layers, written under `dir`, as a writer would.
        fn written(self, state: &State, dir: &Path) -> std::path::PathBuf {
            let out = dir.join("made.aspstate");
            write_layers_file(&out, state, &self, &Options2::default(), true, &Quiet).unwrap();
            out
        }
    }

    impl crate::bundle::LayerSource for Made {
        fn layer_ref(&self, body: &Digest) -> Option<LayerRef> {
            self.0.get(body).map(|l| l.0)
        }
        fn copy_layer(&self, body: &Digest, out: &mut dyn Write) -> io::Result<u64> {
            let bytes = &self.0[body].1;
            out.write_all(bytes)?;
            Ok(bytes.len() as u64)
        }
    }

    #[test]
    fn a_windowed_layer_without_a_dictionary_or_serving_as_one_is_refused() {
        let (base, stream) = windows::tests::pair(WINDOWED_BASE as usize + 1);
        let (bd, sd) = (Descriptor::of(&base), Descriptor::of(&stream));
        let windowed = windows::compress(&stream, &base, 3).unwrap().unwrap();
        let other = native_text(5);
        let od = Descriptor::of(other.as_bytes());
        let against_stream = compress(other.as_bytes(), Some(&stream), 3).unwrap();
        let layer = |bytes: &[u8], encoding, dictionary| LayerRef {
            layer: Descriptor::of(bytes).digest,
            size: bytes.len() as u64,
            encoding,
            dictionary,
            body_size: None,
        };
        for (dictionary, of_other, says) in [
            (None, None, "must name its dictionary"),
            (Some(bd.digest), Some(sd.digest), "is stored in windows"),
        ] {
            let mut made = BTreeMap::new();
            made.insert(
                bd.digest,
                (layer(&base, Encoding::Identity, None), base.clone()),
            );
            made.insert(
                sd.digest,
                (
                    layer(&windowed, Encoding::ZstdWindows, dictionary),
                    windowed.clone(),
                ),
            );
            let (other_layer, other_bytes) = match of_other {
                Some(d) => (
                    layer(&against_stream, Encoding::Zstd, Some(d)),
                    against_stream.clone(),
                ),
                None => (
                    layer(other.as_bytes(), Encoding::Identity, None),
                    other.clone().into_bytes(),
                ),
            };
            made.insert(od.digest, (other_layer, other_bytes));
            let state = State {
                sessions: Some(vec![session("s", None, sd, &[bd, od])]),
                ..State::default()
            };
            let dir = tempfile::tempdir().unwrap();
            let err = Bundle::open(&Made(made).written(&state, dir.path()))
                .unwrap_err()
                .to_string();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn a_layer_three_dictionaries_deep_is_refused() {
        // Four bodies, each compressed against the one before: the last is three deep.
        let mut made = BTreeMap::new();
        let mut bodies: Vec<Descriptor> = Vec::new();
        let mut text = native_text(3);
        let mut before: Option<(Digest, String)> = None;
        for n in 0..4 {
            text.push_str(&native_text(10 + n));
            let body = Descriptor::of(text.as_bytes());
            let layer =
                compress(text.as_bytes(), before.as_ref().map(|b| b.1.as_bytes()), 3).unwrap();
            made.insert(
                body.digest,
                (
                    LayerRef {
                        layer: Descriptor::of(&layer).digest,
                        size: layer.len() as u64,
                        encoding: Encoding::Zstd,
                        dictionary: before.as_ref().map(|b| b.0),
                        body_size: None,
                    },
                    layer,
                ),
            );
            bodies.push(body);
            before = Some((body.digest, text.clone()));
        }
        let stream = "{\"sessionId\":\"s\",\"update\":{\"sessionUpdate\":\"agent_message_chunk\",\"content\":{\"type\":\"text\",\"text\":\"x\"}}}\n".to_owned();
        let updates = Descriptor::of(stream.as_bytes());
        made.insert(
            updates.digest,
            (
                LayerRef {
                    layer: updates.digest,
                    size: updates.size,
                    encoding: Encoding::Identity,
                    dictionary: None,
                    body_size: None,
                },
                stream.into_bytes(),
            ),
        );
        let state = State {
            sessions: Some(vec![session("s", None, updates, &bodies)]),
            ..State::default()
        };
        let dir = tempfile::tempdir().unwrap();
        let out = Made(made).written(&state, dir.path());
        let err = Bundle::open(&out).unwrap_err().to_string();
        assert!(err.contains("more than 2 deep"), "{err}");
        let report =
            crate::bundle::verify_file(&out, &crate::bundle::Limits::default(), &Quiet).unwrap();
        assert!(
            report
                .problems
                .iter()
                .any(|p| p.message.contains("more than 2 deep")),
            "{:?}",
            report.problems
        );
    }

    #[test]
    fn the_same_bodies_give_the_same_bytes_on_any_number_of_threads() {
        let dir = tempfile::tempdir().unwrap();
        let (one, state) = pack(1, dir.path());
        let (four, _) = pack(4, dir.path());
        assert!(
            one == four,
            "1 thread and 4 threads wrote different bundles"
        );
        let b = Bundle::open(&dir.path().join("b1.aspstate")).unwrap();
        let with_dict = b
            .image_manifest()
            .unwrap()
            .layers
            .iter()
            .filter(|l| {
                l.annotations
                    .as_ref()
                    .is_some_and(|a| a.contains_key(crate::bundle::oci::DICTIONARY_ANNOTATION))
            })
            .count();
        assert_eq!(with_dict, 40, "every stream against its transcript");
        for s in state.sessions.iter().flatten() {
            let text = b.read_all(&s.updates).unwrap();
            assert_eq!(crate::digest::Descriptor::of(&text), s.updates);
        }
        b.check_data(&state, &Quiet).unwrap();
    }

    #[test]
    fn a_dictionary_that_pays_shrinks_the_stream() {
        let native = native_text(1);
        let stream = derived_text(&native, 1);
        let plain = compress(stream.as_bytes(), None, 3).unwrap();
        let with = compress(stream.as_bytes(), Some(native.as_bytes()), 3).unwrap();
        assert!(
            with.len() * 2 < plain.len(),
            "{} vs {}",
            with.len(),
            plain.len()
        );
        let back = decompress(&with, Some(native.as_bytes()), stream.len() as u64).unwrap();
        assert_eq!(back, stream.as_bytes());
        assert!(decompress(&with, None, stream.len() as u64).is_err());
    }

    /// A large transcript repeats what it read turns ago, farther back than level 3's own
    /// window: its layer finds those copies, and still decodes within a reader's window.
    #[test]
    fn a_large_body_finds_copies_farther_back_than_level_3s_window() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let once: String = (0..(3 << 20) / 17)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                format!("{x:016x}\n")
            })
            .collect();
        let body = once.repeat(2);
        assert!(body.len() > WIDE_WINDOW);
        let level_3_alone = zstd::bulk::compress(body.as_bytes(), 3).unwrap();
        let layer = compress(body.as_bytes(), None, 3).unwrap();
        assert!(
            layer.len() * 10 < level_3_alone.len() * 6,
            "{} vs {}",
            layer.len(),
            level_3_alone.len()
        );
        let back = decompress(&layer, None, body.len() as u64).unwrap();
        assert!(back == body.as_bytes());
    }

    /// A transcript the cache lets go of while its session is replayed (here: other bodies
    /// pass through in between) is still in memory when its update stream is compressed, and
    /// nothing is decoded again; once the stream is compressed it is let go.
    #[test]
    fn a_base_stays_in_memory_until_what_derives_from_it_is_compressed() {
        let dir = tempfile::tempdir().unwrap();
        let store = one_worker(dir.path());
        let native = native_text(7);
        let nd = store.put(native.as_bytes()).unwrap();
        let mut w = store.begin_derived(&nd).unwrap();
        // A second writer from the same base, dropped unfinished, lets go of its pin.
        drop(store.begin_derived(&nd).unwrap());
        assert_eq!(store.when_idle(), (0, 1), "(read back, pins)");
        // More than the cache holds, compressed before the stream is.
        let mut n = 0;
        let mut passed = 0;
        while passed <= CACHE {
            let other = native_text(1000 + n).repeat(40);
            passed += other.len() as u64;
            store.put(other.as_bytes()).unwrap();
            n += 1;
        }
        w.write_all(derived_text(&native, 7).as_bytes()).unwrap();
        let ud = w.finish().unwrap();
        assert_eq!(store.when_idle(), (0, 0), "(read back, pins)");
        let layers = store.finish().unwrap();
        assert_eq!(layers.blobs[&ud.digest].layer.dictionary, Some(nd.digest));
    }

    #[test]
    fn the_stream_of_a_large_transcript_is_compressed_in_windows_as_it_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = one_worker(dir.path());
        let (base, stream) = windows::tests::pair(WINDOWED_BASE as usize + 1);
        assert!(stream.len() > 2 * windows::FRAME);
        let bd = store.put(&base).unwrap();
        let mut w = store.begin_derived(&bd).unwrap();
        // Writes smaller than a frame, larger than one, and one that ends on a frame's end.
        let mut rest = &stream[..];
        for n in [
            100_000,
            windows::FRAME + 12_345,
            7,
            windows::FRAME - 112_352,
        ]
        .into_iter()
        .cycle()
        {
            let (piece, after) = rest.split_at(n.min(rest.len()));
            w.write_all(piece).unwrap();
            rest = after;
            if rest.is_empty() {
                break;
            }
        }
        let sd = w.finish().unwrap();
        assert_eq!(store.when_idle(), (0, 0), "(read back, pins)");
        // Only the base went to a worker (from the file it was written to): the stream was
        // compressed frame by frame as it was written, against windows read from that file.
        assert_eq!(store.shared.lock().queued, bd.size);
        let layers = store.finish().unwrap();
        let staged = &layers.blobs[&sd.digest];
        assert_eq!(staged.layer.encoding, Encoding::ZstdWindows);
        assert_eq!(staged.layer.dictionary, Some(bd.digest));
        // The frames a worker makes of the whole body, byte for byte.
        let mut bytes = Vec::new();
        layers.copy_to(staged, &mut bytes).unwrap();
        assert_eq!(
            bytes,
            windows::compress(&stream, &base, 3).unwrap().unwrap()
        );

        // A bundle of it is layout 5, verifies, and gives the stream back.
        let state = State {
            sessions: Some(vec![session("s1", None, sd, &[bd])]),
            ..State::default()
        };
        let out = dir.path().join("windows.aspstate");
        write_layers_file(&out, &state, &layers, &Options2::default(), true, &Quiet).unwrap();
        let b = Bundle::open(&out).unwrap();
        assert_eq!(b.layout().layout_version, crate::bundle::LAYOUT_VERSION5);
        let mut back = Vec::new();
        b.open(&sd).unwrap().read_to_end(&mut back).unwrap();
        assert!(back == stream);
        let report =
            crate::bundle::verify_file(&out, &crate::bundle::Limits::default(), &Quiet).unwrap();
        assert!(report.is_ok(), "{:?}", report);
    }

    #[test]
    fn a_second_stream_of_a_large_base_reads_it_back_from_its_layer() {
        let dir = tempfile::tempdir().unwrap();
        let store = one_worker(dir.path());
        let (base, stream) = windows::tests::pair(WINDOWED_BASE as usize + 1);
        let bd = store.put(&base).unwrap();
        // The first stream reads its windows from the base's file, which then goes.
        let first = store.put_derived(&stream, &bd);
        assert_eq!(store.when_idle(), (0, 0), "(read back, pins)");
        // A second one reads the base back from its layer, and goes in windows all the same.
        let mut other = stream.clone();
        other.extend_from_slice(&stream[..1000]);
        let second = store.put_derived(&other, &bd);
        assert_eq!(store.when_idle(), (1, 0), "(read back, pins)");
        let layers = store.finish().unwrap();
        for (body, d) in [(&stream, first), (&other, second)] {
            let staged = &layers.blobs[&d.digest];
            assert_eq!(staged.layer.encoding, Encoding::ZstdWindows);
            let mut bytes = Vec::new();
            layers.copy_to(staged, &mut bytes).unwrap();
            assert_eq!(bytes, windows::compress(body, &base, 3).unwrap().unwrap());
        }
    }

    #[test]
    fn a_large_body_streams_to_the_same_frame_however_it_is_read() {
        let (base, _) = windows::tests::pair(WINDOWED_BASE as usize + 1);
        let dict = CDict::create(&base[..1 << 20], 3);
        /// A reader that gives at most 777 bytes at a time, as a file or a pipe may.
        struct Dribble<'a>(&'a [u8]);
        impl Read for Dribble<'_> {
            fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
                let n = buf.len().min(777).min(self.0.len());
                buf[..n].copy_from_slice(&self.0[..n]);
                self.0 = &self.0[n..];
                Ok(n)
            }
        }
        let len = base.len() as u64;
        for dict in [None, Some(&dict)] {
            let whole = compress_streamed(&mut &base[..], len, dict, 3).unwrap();
            let dribbled = compress_streamed(&mut Dribble(&base), len, dict, 3).unwrap();
            assert!(whole == dribbled);
            assert_eq!(
                decompress(&whole, dict.map(|_| &base[..1 << 20]), len).unwrap(),
                base
            );
        }
        // A body that is not the length it was written with.
        assert!(compress_streamed(&mut &base[..], len - 1, None, 3).is_err());
        assert!(compress_streamed(&mut &base[..], len + 1, None, 3).is_err());
    }

    /// A frame against `dict` as it was made before [`compress_frame_into`] asked for less
    /// room: a new context, the room of zstd's bound.
    fn frame_with_all_the_room(src: &[u8], dict: &[u8]) -> Vec<u8> {
        let mut cctx = zstd::zstd_safe::CCtx::create();
        shared_parameters(&mut cctx, 3).unwrap();
        against_prefix(&mut cctx, dict, src.len(), 3).unwrap();
        let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(src.len()));
        cctx.compress2(&mut out, src).unwrap();
        out
    }

    #[test]
    fn a_windowed_frame_is_the_same_in_the_room_it_asks_for_first_as_in_all_of_it() {
        let f = windows::FRAME;
        let (base, stream) = windows::tests::pair(f + (1 << 20));
        let dict = &base[..f];
        let mut out = Vec::new();
        // An update stream against its window: far smaller than its room.
        compress_frame_into(&stream[..f], dict, 3, &mut out).unwrap();
        assert!(out == frame_with_all_the_room(&stream[..f], dict));
        assert!(
            out.capacity() < zstd::zstd_safe::compress_bound(f) / 4,
            "the room of zstd's bound was asked for: {}",
            out.capacity()
        );
        // Frames whose size comes near the first room, from either side, and one that does
        // not fit it at all (random bytes): each the frame made with all the room.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let noise: Vec<u8> = (0..f)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x as u8
            })
            .collect();
        let first = f / 8 + FRAME_SLACK;
        for random in (first - 3 * FRAME_SLACK / 2..first + FRAME_SLACK / 2).step_by(24 << 10) {
            let mut src = stream[..f].to_vec();
            src[..random].copy_from_slice(&noise[..random]);
            let mut out = Vec::new();
            compress_frame_into(&src, dict, 3, &mut out).unwrap();
            assert!(
                out == frame_with_all_the_room(&src, dict),
                "{random} random bytes"
            );
        }
        compress_frame_into(&noise, dict, 3, &mut out).unwrap();
        assert!(out == frame_with_all_the_room(&noise, dict));
    }

    #[test]
    fn a_large_body_streams_to_the_same_frame_after_the_threads_other_frames() {
        let (base, stream) = windows::tests::pair(WINDOWED_BASE as usize + 1);
        let len = base.len() as u64;
        let alone = std::thread::spawn({
            let base = base.clone();
            move || compress_streamed(&mut &base[..], len, None, 3).unwrap()
        })
        .join()
        .unwrap();
        // On a thread whose context made a frame against a prefix first, and a streamed frame.
        let after = std::thread::spawn(move || {
            compress(&stream[..1 << 20], Some(&base[..1 << 20]), 3).unwrap();
            compress_streamed(&mut &stream[..], stream.len() as u64, None, 3).unwrap();
            compress_streamed(&mut &base[..], len, None, 3).unwrap()
        })
        .join()
        .unwrap();
        assert!(alone == after);
    }

    /// A store with one compression worker, so what reaches it is in the order written.
    fn one_worker(dir: &Path) -> LayerStore {
        LayerStore::new_in(
            dir,
            LayerOptions {
                threads: 1,
                ..LayerOptions::default()
            },
        )
        .unwrap()
    }

    impl LayerStore {
        /// `body` written as derived from `base`, a piece at a time as a converter writes.
        fn put_derived(&self, body: &[u8], base: &Descriptor) -> Descriptor {
            let mut w = self.begin_derived(base).unwrap();
            for piece in body.chunks(100_000) {
                w.write_all(piece).unwrap();
            }
            w.finish().unwrap()
        }
    }

    #[test]
    fn a_layer_does_not_depend_on_where_its_dictionary_sits_in_memory() {
        let native = native_text(1);
        let stream = derived_text(&native, 1);
        let apart = compress(stream.as_bytes(), Some(native.as_bytes()), 3).unwrap();
        // The dictionary ending exactly where the body starts, as two buffers can.
        let joined = [native.as_bytes(), stream.as_bytes()].concat();
        let (dict, body) = joined.split_at(native.len());
        let adjacent = compress(body, Some(dict), 3).unwrap();
        assert!(
            adjacent == apart,
            "the frame depends on where the buffers are"
        );
    }
}
