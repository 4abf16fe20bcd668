//! The native files a surveyed session is made of: their stat records, and reading them as the
//! survey saw them.
//!
//! A survey records, for every file a session's read depends on, its size, modification time
//! (ns), inode and device: enough for a later backup to see that nothing changed (the
//! racy-timestamp rule is the backup's) and for the read to take exactly what was surveyed. A
//! harness may append to a session file while it is read; [`SourceFile::open`] then reads
//! only up to the last `\n` at or before the surveyed size, so the read never sees half a
//! line, and what came later is the next read's. A file that has not grown since the survey
//! is read whole as it was surveyed: a last line without its `\n` is then a line cut off by a
//! crash, which the converter reports as damage and the native file carries as it is.

use std::fs::{self, File};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Opens `path` for reading when it is a regular file (links followed). A FIFO, a socket or a
/// device named like a store's file is refused with `InvalidInput` instead of being opened as
/// it is: opening a FIFO for reading waits for a writer that never comes, which hung a backup
/// (and the repository lock it held) for good. It is opened without blocking, then checked.
pub fn open_regular(path: &Path) -> io::Result<File> {
    let mut options = fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let file = options.open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a regular file (a FIFO, socket or device); not read",
        ));
    }
    Ok(file)
}

/// One file a session's read depends on, as the survey found it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SourceFile {
    /// Where the file is (under the home, or under a store the environment points elsewhere).
    pub path: PathBuf,
    pub size: u64,
    /// Modification time in nanoseconds since the Unix epoch (negative before it).
    pub mtime_ns: i128,
    /// Status change time, the same way (0 where the system keeps none): it moves with every
    /// write, also one whose mtime was put back after it (`touch -r`, a tool that keeps
    /// times), which the mtime alone does not show.
    pub ctime_ns: i128,
    pub inode: u64,
    pub device: u64,
    /// Whether the file is a log of lines that its harness appends to (JSONL), as opposed to a
    /// document written whole (a `.json` chat, a compressed rollout). Only a log is cut at a
    /// line end when it has grown.
    pub appended: bool,
}

impl SourceFile {
    /// The stat record of `path` now (links followed, as readers follow them).
    pub fn stat(path: &Path, appended: bool) -> io::Result<SourceFile> {
        let m = fs::metadata(path)?;
        if !m.is_file() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "not a regular file (a FIFO, socket, device or folder); not read",
            ));
        }
        Ok(SourceFile::from_metadata(path, &m, appended))
    }

    fn from_metadata(path: &Path, m: &fs::Metadata, appended: bool) -> SourceFile {
        let (inode, device) = ids(m);
        SourceFile {
            path: path.to_path_buf(),
            size: m.len(),
            mtime_ns: mtime_ns(m),
            ctime_ns: ctime_ns(m),
            inode,
            device,
            appended,
        }
    }

    /// The path relative to `home`, `/`-separated, when the file is under it; else the whole
    /// path. This is how a backup names the file.
    pub fn relative_to(&self, home: &Path) -> String {
        let p = self.path.strip_prefix(home).unwrap_or(&self.path);
        p.components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect::<Vec<_>>()
            .join("/")
    }

    /// Opens the file for reading what the survey saw (see the module doc). A file replaced
    /// since the survey (another inode) is read as it is now: it was written whole.
    pub fn open(&self) -> io::Result<Surveyed> {
        let mut file = open_regular(&self.path)?;
        let now = file.metadata()?;
        let (inode, device) = ids(&now);
        let same_file = inode == self.inode && device == self.device;
        let limit = if !same_file {
            now.len()
        } else if now.len() > self.size && self.appended {
            last_line_end(&mut file, self.size)?
        } else {
            now.len().min(self.size)
        };
        file.seek(SeekFrom::Start(0))?;
        Ok(Surveyed {
            inner: file.take(limit),
            len: limit,
        })
    }

    /// The whole of what [`SourceFile::open`] reads.
    pub fn read_all(&self) -> io::Result<Vec<u8>> {
        let mut r = self.open()?;
        let mut out = Vec::with_capacity(usize::try_from(r.len).unwrap_or(0).min(1 << 26));
        r.read_to_end(&mut out)?;
        Ok(out)
    }
}

/// A surveyed file opened for reading: at most the bytes the survey allows.
#[derive(Debug)]
pub struct Surveyed {
    inner: io::Take<File>,
    len: u64,
}

impl Surveyed {
    /// How many bytes will be read.
    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The open file (positioned wherever reading left it).
    pub fn file_mut(&mut self) -> &mut File {
        self.inner.get_mut()
    }

    /// The open file, for readers that go back to what they read by offset (never past
    /// [`Surveyed::len`]).
    pub fn into_file(self) -> File {
        self.inner.into_inner()
    }
}

impl Read for Surveyed {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }
}

/// Reads `src` to its end once, each chunk into the blob `blob` (when given, finished at the
/// end) and to `feed` (a first pass that indexes the file as it is copied): `Ok(Err(e))` when
/// `src` cannot be read (a file that costs only what it holds: the caller reports it and
/// skips it), `Err` when the blob store fails (which stops the read).
pub fn read_into(
    src: &mut impl Read,
    mut blob: Option<Box<dyn asp_format::blob::BlobWrite + '_>>,
    mut feed: impl FnMut(&[u8]),
) -> Result<Result<Option<asp_format::Descriptor>, io::Error>, asp_format::blob::BlobError> {
    use std::io::Write;
    let mut buf = vec![0; 1 << 16];
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Ok(Err(e)),
        };
        if let Some(w) = blob.as_mut() {
            w.write_all(&buf[..n])?;
        }
        feed(&buf[..n]);
    }
    Ok(Ok(blob.map(|w| w.finish()).transpose()?))
}

/// Copies `src` into the blob `w` and finishes it, as [`read_into`] says.
pub fn copy_to_blob(
    src: &mut impl Read,
    w: Box<dyn asp_format::blob::BlobWrite + '_>,
) -> Result<Result<asp_format::Descriptor, io::Error>, asp_format::blob::BlobError> {
    Ok(read_into(src, Some(w), |_| {})?.map(|d| d.expect("a blob was given")))
}

/// The offset just past the last `\n` in the first `size` bytes of `file` (0 when there is
/// none), read backwards a block at a time.
fn last_line_end(file: &mut File, size: u64) -> io::Result<u64> {
    const BLOCK: u64 = 64 * 1024;
    let mut end = size;
    let mut buf = vec![0u8; BLOCK as usize];
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let n = (end - start) as usize;
        file.seek(SeekFrom::Start(start))?;
        file.read_exact(&mut buf[..n])?;
        if let Some(i) = buf[..n].iter().rposition(|b| *b == b'\n') {
            return Ok(start + i as u64 + 1);
        }
        end = start;
    }
    Ok(0)
}

#[cfg(unix)]
fn ids(m: &fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.ino(), m.dev())
}

#[cfg(not(unix))]
fn ids(_m: &fs::Metadata) -> (u64, u64) {
    (0, 0)
}

#[cfg(unix)]
fn ctime_ns(m: &fs::Metadata) -> i128 {
    use std::os::unix::fs::MetadataExt;
    i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec())
}

#[cfg(not(unix))]
fn ctime_ns(_m: &fs::Metadata) -> i128 {
    0
}

fn mtime_ns(m: &fs::Metadata) -> i128 {
    match m.modified() {
        Ok(t) => match t.duration_since(std::time::UNIX_EPOCH) {
            Ok(d) => d.as_nanos() as i128,
            Err(e) => -(e.duration().as_nanos() as i128),
        },
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_growing_log_is_read_to_the_last_whole_line_the_survey_saw() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        fs::write(&p, b"{\"a\":1}\n{\"b\":2}\n{\"c\":").unwrap();
        let surveyed = SourceFile::stat(&p, true).unwrap();
        // Unchanged since the survey: read as surveyed, the cut-off line included.
        assert_eq!(
            surveyed.read_all().unwrap(),
            b"{\"a\":1}\n{\"b\":2}\n{\"c\":"
        );
        // The harness goes on writing: only whole lines within the surveyed size.
        let mut f = fs::OpenOptions::new().append(true).open(&p).unwrap();
        f.write_all(b"3}\n{\"d\":4}\n").unwrap();
        assert_eq!(surveyed.read_all().unwrap(), b"{\"a\":1}\n{\"b\":2}\n");
        // A document written whole is not cut, only bounded.
        let doc = SourceFile {
            appended: false,
            ..surveyed.clone()
        };
        assert_eq!(doc.read_all().unwrap().len() as u64, surveyed.size);
        assert_eq!(surveyed.relative_to(dir.path()), "s.jsonl");
    }

    #[test]
    fn a_replaced_file_is_read_as_it_is_now() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.json");
        fs::write(&p, b"{\"old\":true}").unwrap();
        let surveyed = SourceFile::stat(&p, false).unwrap();
        let tmp = dir.path().join("c.json.tmp");
        fs::write(&tmp, b"{\"new\":true,\"longer\":1}").unwrap();
        fs::rename(&tmp, &p).unwrap();
        if cfg!(unix) {
            assert_eq!(surveyed.read_all().unwrap(), b"{\"new\":true,\"longer\":1}");
        }
    }
}
