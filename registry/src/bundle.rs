//! A bundle file (`.aspstate`) as the source of a push and the sink of a pull.
//!
//! A layout 2 bundle is an OCI image layout in a zip, so pushing one is pushing its image
//! manifest with its `blobs/sha256/<hex>` entries read straight out of the zip, as stored
//! (nothing is decoded or unpacked to disk): the registry gets the bundle's own manifest and
//! digests. A pull into a bundle writes the blobs back into a zip through the same writer
//! `asp pack` uses ([`asp_format::bundle::write_image_zip`]), so pulling what a pack pushed
//! gives the same bytes (with the same `aspstate-layout` generator and Stored entries, which
//! is what `asp pack` writes unless told `--compression deflate`).

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use asp_format::blob::{BlobError, BlobSource};
use asp_format::bundle::{
    Bundle, ImageZip, NotAFile, ReadError, WriteError, ZipMethod, layout_version_of,
    write_image_zip,
};
use asp_format::digest::{Descriptor, Digest};
use asp_format::progress::Quiet;

use crate::error::Error;
use crate::layout::sync_dir;
use crate::manifest::Artifact;
use crate::pull::{PullSink, Staged};
use crate::reference::Reference;
use crate::source::PushSource;

/// An opened layout 2 bundle, ready to push.
#[derive(Debug)]
pub struct BundleFile {
    bundle: Bundle,
    manifest: Vec<u8>,
}

impl BundleFile {
    /// Opens `path` and checks its structure (the bundle reader's checks and limits). A
    /// layout 1 bundle has no OCI image manifest and is refused with the way to re-pack it.
    pub fn open(path: &Path) -> Result<Self, Error> {
        BundleFile::open_as(path, path)
    }

    /// [`BundleFile::open`], naming the bundle `shown` in errors (standard input spooled to
    /// a temporary file is `<stdin>` to the person who piped it).
    pub fn open_as(path: &Path, shown: &Path) -> Result<Self, Error> {
        let bundle = Bundle::open(path).map_err(|e| read_error(shown, e.named(shown)))?;
        let path = shown;
        let manifest = match bundle.image_manifest_bytes() {
            Some(r) => r.map_err(|e| {
                Error::Integrity(format!(
                    "{}: the image manifest does not read back: {e}",
                    path.display()
                ))
            })?,
            None => {
                return Err(Error::Usage(format!(
                    "{p} is a layout {v} bundle, which has no OCI image manifest to push; \
                     re-pack it with this asp (it writes layout 3): \
                     `asp-unpack {p} --to-dir DIR && asp-pack --from-dir DIR -o NEW.aspstate`",
                    p = path.display(),
                    v = bundle.layout().layout_version
                )));
            }
        };
        Ok(BundleFile { bundle, manifest })
    }

    /// The bundle's identity: its image manifest's digest.
    pub fn digest(&self) -> Digest {
        self.bundle.digest()
    }

    pub fn bundle(&self) -> &Bundle {
        &self.bundle
    }
}

impl PushSource for BundleFile {
    fn manifest(&self) -> &[u8] {
        &self.manifest
    }

    fn blobs(&self) -> &dyn BlobSource {
        self
    }
}

/// The bundle's entries as stored, by the digest that names them.
impl BlobSource for BundleFile {
    fn open(&self, blob: &Descriptor) -> Result<Box<dyn Read + Send + '_>, BlobError> {
        self.bundle.open_stored(blob)
    }
}

fn read_error(path: &Path, e: ReadError) -> Error {
    match e {
        ReadError::Io { source, .. } => Error::read(path, source),
        invalid @ ReadError::Invalid { .. } => Error::Integrity(invalid.to_string()),
    }
}

/// A pull into a new bundle file. Blobs are staged beside it; at commit a temporary file in
/// the same directory gets the zip, is checked as a bundle (structure, limits, and every blob
/// the state names decoded and checked, as `asp verify` would), synced, given mode 0600, and
/// only then renamed to `path`. An existing file is replaced only with `force`.
#[derive(Debug)]
pub struct BundleSink {
    path: PathBuf,
    force: bool,
    generator: Option<String>,
    size: Mutex<Option<u64>>,
}

impl BundleSink {
    /// A sink writing `path`, whose directory must exist; `generator` is written into
    /// `aspstate-layout` as `asp pack` does (`asp <version>`).
    pub fn new(
        path: impl Into<PathBuf>,
        force: bool,
        generator: Option<String>,
    ) -> Result<Self, Error> {
        let given = path.into();
        // A link is followed to the file it names; a directory, a device or a pipe is
        // refused (the bundle is renamed over its output, which would replace them).
        let path = match asp_format::bundle::output_path(&given) {
            Ok(p) => p,
            Err(WriteError::NotAFile {
                what: NotAFile::Directory,
                ..
            }) => {
                return Err(Error::Usage(format!(
                    "{} is a directory; give the bundle file to write (or --layout DIR)",
                    given.display()
                )));
            }
            Err(WriteError::Io { source, .. }) => return Err(Error::write(&given, source)),
            Err(e) => return Err(Error::Usage(e.to_string())),
        };
        // The name taken by anything, a link that leads nowhere included (`cp` will not write
        // through one), is replaced only with --force. Refusing to overwrite is an error of
        // the destination (exit 1), as for asp-pack.
        if !force && fs::symlink_metadata(&given).is_ok() {
            return Err(exists(&given));
        }
        let sink = BundleSink {
            path,
            force,
            generator,
            size: Mutex::new(None),
        };
        sink.dir()?;
        Ok(sink)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The size of the bundle written, once the pull committed.
    pub fn written(&self) -> Option<u64> {
        *self.size.lock().expect("size")
    }

    fn dir(&self) -> Result<PathBuf, Error> {
        let dir = match self.path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !dir.is_dir() {
            return Err(Error::Usage(format!(
                "{} does not exist (the bundle's directory must)",
                dir.display()
            )));
        }
        Ok(dir)
    }

    /// Writes the zip into `file` from the manifest and the staged blobs.
    fn write_zip(&self, artifact: &Artifact, staged: &Staged, file: File) -> Result<File, Error> {
        let manifest = Descriptor::of(artifact.bytes());
        let mut sizes: std::collections::BTreeMap<Digest, u64> = artifact
            .blobs()
            .iter()
            .map(|b| (b.digest, b.size))
            .collect();
        sizes.insert(manifest.digest, manifest.size);
        let opts = ImageZip {
            generator: self.generator.clone(),
            zip: ZipMethod::Stored,
            layout_version: layout_version_of(artifact.bytes()),
        };
        let out = BufWriter::with_capacity(256 << 10, file);
        let (out, _) = write_image_zip(
            out,
            manifest,
            &sizes,
            &opts,
            &mut |digest, w| {
                if *digest == manifest.digest {
                    return w.write_all(artifact.bytes());
                }
                let path = staged
                    .files()
                    .get(digest)
                    .ok_or_else(|| io::Error::other(format!("blob {digest} was not downloaded")))?;
                let mut r = BufReader::with_capacity(256 << 10, File::open(path)?);
                io::copy(&mut r, w).map(|_| ())
            },
            &Quiet,
        )
        .map_err(|e| Error::write(&self.path, io::Error::other(e.to_string())))?;
        out.into_inner()
            .map_err(|e| Error::write(&self.path, e.into_error()))
    }
}

impl PullSink for BundleSink {
    fn contains(&self, _blob: &Descriptor) -> Result<bool, Error> {
        Ok(false)
    }

    fn staging_parent(&self) -> Result<PathBuf, Error> {
        self.dir()
    }

    fn commit(
        &self,
        artifact: &Artifact,
        _record: Option<&Artifact>,
        reference: &Reference,
        staged: &Staged,
    ) -> Result<(), Error> {
        let dir = self.dir()?;
        let tmp = tempfile::Builder::new()
            .prefix(".aspstate-")
            .suffix(".partial")
            .tempfile_in(&dir)
            .map_err(|e| Error::write(&dir, e))?;
        // Held while it is written and checked: a pack into this folder meanwhile would take
        // an unlocked one for a killed write's, and remove it.
        asp_format::bundle::hold_temporary(tmp.as_file());
        let (file, handle) = tmp.into_parts();
        let file = self.write_zip(artifact, staged, file)?;
        file.sync_all().map_err(|e| Error::write(&self.path, e))?;
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            file.set_permissions(fs::Permissions::from_mode(0o600))
                .map_err(|e| Error::write(&self.path, e))?;
        }
        let size = file
            .metadata()
            .map_err(|e| Error::write(&self.path, e))?
            .len();
        let tmp = tempfile::NamedTempFile::from_parts(file, handle);

        // What the registry sent must make a bundle `asp verify` accepts: a manifest with no
        // state layer, or a state that does not match its blobs, is refused here.
        let not_a_bundle = |e: ReadError| match e {
            ReadError::Io { source, .. } => Error::read(tmp.path(), source),
            ReadError::Invalid { problems, .. } => Error::Integrity(format!(
                "{reference} does not make a usable bundle:{}",
                problems
                    .iter()
                    .map(|p| format!("\n  - {p}"))
                    .collect::<String>()
            )),
        };
        let bundle = Bundle::open(tmp.path()).map_err(not_a_bundle)?;
        bundle
            .check_data(&bundle.manifest().state, &Quiet)
            .map_err(not_a_bundle)?;
        drop(bundle);

        if self.force {
            tmp.persist(&self.path)
                .map_err(|e| Error::write(&self.path, e.error))?;
        } else {
            tmp.persist_noclobber(&self.path).map_err(|e| {
                if e.error.kind() == io::ErrorKind::AlreadyExists {
                    exists(&self.path)
                } else {
                    Error::write(&self.path, e.error)
                }
            })?;
        }
        sync_dir(&dir).map_err(|e| Error::write(&dir, e))?;
        *self.size.lock().expect("size") = Some(size);
        Ok(())
    }
}

/// `path` is there and `--force` was not given.
fn exists(path: &Path) -> Error {
    Error::write(
        path,
        io::Error::new(
            io::ErrorKind::AlreadyExists,
            "it already exists (use --force to replace it)",
        ),
    )
}
