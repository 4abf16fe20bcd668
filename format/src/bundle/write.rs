//! Writing a bundle: deterministic, streaming, atomic.
//!
//! Same state in, same bytes out: entries are written in a fixed order (`aspstate-layout`,
//! `manifest.json`, then blobs by ascending digest), every entry gets the same timestamp
//! (1980-01-01 00:00), `System::Unix`, mode 0644 and a fixed compression, and the writer seeks
//! so no data descriptors are written. Blob bodies are copied one at a time from a
//! [`BlobSource`], so memory stays flat however large the sessions are.

use std::fs::File;
use std::io::{self, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};

use zip::write::SimpleFileOptions;
use zip::{CompressionMethod, DateTime, System, ZipWriter};

use crate::blob::{BlobError, BlobSource};
use crate::bundle::layout::{LAYOUT_ENTRY, Layout, MANIFEST_ENTRY, Manifest, blob_entry_name};
use crate::digest::Digest;
use crate::progress::Progress;
use crate::state::{State, StateError};

/// How blob bodies are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Compression {
    /// Deflate at level 6: readable by every unzip there is. Blobs under 64 bytes are Stored.
    #[default]
    Deflate,
    /// No compression at all.
    Stored,
}

/// Blobs smaller than this are Stored: Deflate would only add overhead.
const TINY: u64 = 64;

/// What to write besides the state.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// RFC 3339 creation time for the manifest; `None` leaves it out (reproducible by default).
    pub created: Option<String>,
    /// The generator recorded in `aspstate-layout`, such as `asp 0.1.0`.
    pub generator: Option<String>,
    pub compression: Compression,
}

/// What a finished bundle is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The bundle's identity: the digest of its `manifest.json`.
    pub digest: Digest,
    /// Size of the bundle file in bytes.
    pub size: u64,
    /// Number of distinct blobs stored.
    pub blobs: usize,
    /// Sum of the uncompressed blob sizes.
    pub content_bytes: u64,
}

/// Errors while writing a bundle.
#[derive(Debug, thiserror::Error)]
pub enum WriteError {
    #[error("the state is not valid: {}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    InvalidState(Vec<StateError>),
    #[error("{path} already exists (use --force to replace it)")]
    Exists { path: PathBuf },
    /// `-o` goes through a link another user made in a shared sticky directory, which is not
    /// followed (see [`output_path`]).
    #[error(
        "{link} is a symbolic link that another user (uid {owner}) made in a directory anyone can write to; it is not followed, as the kernel would not follow it: remove it or give another -o"
    )]
    ForeignLink { link: PathBuf, owner: u32 },
    /// `-o` names something a bundle cannot replace (see [`output_path`]).
    #[error(
        "{path} is {what}; a bundle is written to a regular file (`-o -` writes it to standard output)"
    )]
    NotAFile { path: PathBuf, what: NotAFile },
    #[error("writing {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("reading blob {digest}: {source}")]
    Blob {
        digest: Digest,
        #[source]
        source: BlobError,
    },
    #[error("zip: {0}")]
    Zip(#[from] zip::result::ZipError),
    /// The state is too large for its readers: written, it could not be read back.
    #[error(
        "the state is too large to write: {what} would take {size} bytes, and readers take at most {limit}"
    )]
    TooLarge { what: String, size: u64, limit: u64 },
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
        .large_file(needs_zip64(size))
}

/// Whether an entry of `size` uncompressed bytes needs ZIP64 sizes. Decided before writing,
/// from the uncompressed size, with a margin: Deflate can make incompressible data slightly
/// larger (at most a few bytes per 16 KiB block), and an entry that crosses 4 GiB without
/// ZIP64 fields cannot be written at all.
fn needs_zip64(size: u64) -> bool {
    size >= u64::from(u32::MAX) - u64::from(u32::MAX) / 64
}

fn method_for(compression: Compression, size: u64) -> CompressionMethod {
    match compression {
        Compression::Deflate if size >= TINY => CompressionMethod::Deflated,
        _ => CompressionMethod::Stored,
    }
}

/// Writes `state` (normalised first) with its blobs from `blobs` into `out`.
pub fn write_to<W: Write + Seek>(
    out: W,
    state: &State,
    blobs: &dyn BlobSource,
    opts: &WriteOptions,
    progress: &dyn Progress,
) -> Result<(W, Written), WriteError> {
    let mut state = state.clone();
    state.normalize();
    state.validate().map_err(WriteError::InvalidState)?;
    let descriptors = state.descriptors();
    let manifest = Manifest::new(state, opts.created.clone()).to_bytes();
    let content_bytes = descriptors.iter().map(|d| d.size).sum();

    let mut zip = ZipWriter::new(out);
    let layout = Layout::current(opts.generator.clone()).to_bytes();
    zip.start_file(
        LAYOUT_ENTRY,
        entry_options(CompressionMethod::Stored, layout.len() as u64),
    )?;
    zip.write_all(&layout).map_err(zip_io)?;
    zip.start_file(
        MANIFEST_ENTRY,
        entry_options(
            method_for(opts.compression, manifest.len() as u64),
            manifest.len() as u64,
        ),
    )?;
    zip.write_all(&manifest).map_err(zip_io)?;

    progress.begin("writing bundle", Some(content_bytes));
    let mut buf = vec![0u8; 256 * 1024];
    for d in &descriptors {
        zip.start_file(
            blob_entry_name(&d.digest),
            entry_options(method_for(opts.compression, d.size), d.size),
        )?;
        let mut reader = blobs.open(d).map_err(|source| WriteError::Blob {
            digest: d.digest,
            source,
        })?;
        loop {
            let n = reader.read(&mut buf).map_err(|e| WriteError::Blob {
                digest: d.digest,
                source: BlobError::Other(e),
            })?;
            if n == 0 {
                break;
            }
            zip.write_all(&buf[..n]).map_err(zip_io)?;
            progress.advance(n as u64);
        }
    }
    progress.finish();
    let mut out = zip.finish()?;
    let size = out.stream_position().map_err(zip_io)?;
    Ok((
        out,
        Written {
            digest: Digest::of(&manifest),
            size,
            blobs: descriptors.len(),
            content_bytes,
        },
    ))
}

fn zip_io(e: io::Error) -> WriteError {
    WriteError::Zip(zip::result::ZipError::Io(e))
}

/// Writes a bundle to `path` atomically: into a temporary file in the same directory, synced,
/// then renamed into place. An existing `path` is replaced only with `force`.
pub fn write_file(
    path: &Path,
    state: &State,
    blobs: &dyn BlobSource,
    opts: &WriteOptions,
    force: bool,
    progress: &dyn Progress,
) -> Result<Written, WriteError> {
    atomic(path, force, |file| {
        let (writer, written) = write_to(
            BufWriter::with_capacity(256 * 1024, file),
            state,
            blobs,
            opts,
            progress,
        )?;
        let file = writer.into_inner().map_err(|e| zip_io(e.into_error()))?;
        Ok((file, written))
    })
}

/// What `-o` names when it is not a file a bundle can replace ([`WriteError::NotAFile`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotAFile {
    Directory,
    NamedPipe,
    CharacterDevice,
    BlockDevice,
    Socket,
    /// Something else that is not a regular file.
    Other,
    /// More links than Linux follows in one path.
    LinkLoop,
}

impl std::fmt::Display for NotAFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            NotAFile::Directory => "a directory",
            NotAFile::NamedPipe => "a named pipe",
            NotAFile::CharacterDevice => "a character device",
            NotAFile::BlockDevice => "a block device",
            NotAFile::Socket => "a socket",
            NotAFile::Other => "not a regular file",
            NotAFile::LinkLoop => "a chain of more than 40 symbolic links",
        })
    }
}

/// The file a bundle written to `path` lands in: `path` itself when it is a regular file or
/// nothing yet, the file a symbolic link names (followed to the end, dangling or not), so the
/// link stays and its file gets the bundle. Anything else is refused: a bundle is made in a
/// temporary file and renamed over its output, which would replace a device, a named pipe or
/// a socket with a file (as root, `-o /dev/full --force` once turned the device into one).
pub fn output_path(path: &Path) -> Result<PathBuf, WriteError> {
    /// Linux's own limit on the links one path may go through.
    const MAX_LINKS: usize = 40;
    let io_err = |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    };
    let refuse = |what| WriteError::NotAFile {
        path: path.to_path_buf(),
        what,
    };
    let mut p = path.to_path_buf();
    for _ in 0..=MAX_LINKS {
        let meta = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(p),
            Err(e) => return Err(io_err(e)),
        };
        let kind = meta.file_type();
        if kind.is_file() {
            return Ok(p);
        }
        if !kind.is_symlink() {
            return Err(refuse(file_kind(kind)));
        }
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if let Some(owner) = foreign_link(&meta, &dir) {
            return Err(WriteError::ForeignLink { link: p, owner });
        }
        let target = std::fs::read_link(&p).map_err(io_err)?;
        p = if target.is_relative() {
            dir.join(target)
        } else {
            target
        };
    }
    Err(refuse(NotAFile::LinkLoop))
}

/// The kernel's rule for links in sticky directories anyone may write to (`/tmp`): one is
/// followed only when its owner is the directory's or ours, since whoever planted it would
/// choose the file the bundle replaces (`fs.protected_symlinks`). The owner of a link not to
/// be followed.
#[cfg(unix)]
fn foreign_link(link: &std::fs::Metadata, dir: &Path) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let d = std::fs::metadata(dir).ok()?;
    let shared = d.mode() & 0o1002 == 0o1002;
    let ours = || effective_uid().is_some_and(|me| me == link.uid());
    (shared && link.uid() != d.uid() && !ours()).then_some(link.uid())
}

#[cfg(not(unix))]
fn foreign_link(_link: &std::fs::Metadata, _dir: &Path) -> Option<u32> {
    None
}

/// This process's effective user id, without `unsafe`: from `/proc/self/status` on Linux,
/// else the owner of a file it has just made (which is the effective user, on every Unix).
#[cfg(unix)]
fn effective_uid() -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let proc = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            let uids = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
            uids.split_whitespace().nth(1)?.parse().ok()
        });
    proc.or_else(|| Some(tempfile::tempfile().ok()?.metadata().ok()?.uid()))
}

/// What a file that is neither a regular file nor a link is.
fn file_kind(kind: std::fs::FileType) -> NotAFile {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return NotAFile::NamedPipe;
        }
        if kind.is_char_device() {
            return NotAFile::CharacterDevice;
        }
        if kind.is_block_device() {
            return NotAFile::BlockDevice;
        }
        if kind.is_socket() {
            return NotAFile::Socket;
        }
    }
    if kind.is_dir() {
        NotAFile::Directory
    } else {
        NotAFile::Other
    }
}

/// Writes a file atomically: `write` fills a temporary file in the same directory, which is
/// synced and renamed into place. An existing `path` is replaced only with `force`; a link is
/// followed and what it names is written ([`output_path`]).
pub(crate) fn atomic(
    path: &Path,
    force: bool,
    write: impl FnOnce(File) -> Result<(File, Written), WriteError>,
) -> Result<Written, WriteError> {
    let given = path;
    let path = &output_path(path)?;
    // The name taken by anything, a link that leads nowhere included, is replaced only with
    // `force` (as `cp` will not write through a dangling link).
    if !force && std::fs::symlink_metadata(given).is_ok() {
        return Err(WriteError::Exists {
            path: given.to_path_buf(),
        });
    }
    let io_err = |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    };
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    super::leftovers::sweep(dir);
    let tmp = tempfile::Builder::new()
        .prefix(".aspstate-")
        .suffix(".partial")
        .tempfile_in(dir)
        .map_err(io_err)?;
    super::leftovers::hold(tmp.as_file());
    let _on_stop = crate::on_stop::remove_on_stop(tmp.path());
    let (file, handle) = tmp.into_parts();
    let (file, written) = write(file)?;
    file.sync_all().map_err(io_err)?;
    let tmp = tempfile::NamedTempFile::from_parts(file, handle);
    if force {
        tmp.persist(path).map_err(|e| io_err(e.error))?;
    } else {
        tmp.persist_noclobber(path).map_err(|e| {
            if e.error.kind() == io::ErrorKind::AlreadyExists {
                WriteError::Exists {
                    path: path.to_path_buf(),
                }
            } else {
                io_err(e.error)
            }
        })?;
    }
    sync_dir(dir);
    Ok(written)
}

/// Makes a rename durable where the platform allows it; failure only costs durability.
fn sync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn the_effective_user_is_the_owner_of_what_it_makes() {
        use std::os::unix::fs::MetadataExt;
        let made = tempfile::tempfile().unwrap().metadata().unwrap().uid();
        assert_eq!(effective_uid(), Some(made));
    }
}
