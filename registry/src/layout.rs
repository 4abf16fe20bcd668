//! An OCI image layout directory as the source of a push and the sink of a pull.
//!
//! ```text
//! DIR/oci-layout          {"imageLayoutVersion":"1.0.0"}
//! DIR/index.json          an image index: one descriptor per manifest, its tag in
//!                         org.opencontainers.image.ref.name
//! DIR/blobs/sha256/<hex>  every manifest and blob, named by the sha256 of its bytes
//! ```
//!
//! Reading checks what it reads: a blob's size before its bytes, its digest at the end
//! ([`asp_format::blob::BlobSource`]), a manifest's size against the limit before parsing.
//! Writing is atomic per file (temporary file, then rename), blobs before the index that names
//! them, so a layout interrupted at any point is consistent: at worst it holds blobs nothing
//! names yet.

use std::fs::{self, File};
use std::io::{self, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use asp_format::blob::{BlobError, BlobSource};
use asp_format::digest::{Descriptor, Digest, VerifyingReader};
use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::manifest::{Artifact, IMAGE_MANIFEST, ImageIndex, Limits, OciDescriptor, REF_NAME};
use crate::pull::{PullSink, Staged};
use crate::reference::Reference;

pub const LAYOUT_FILE: &str = "oci-layout";
pub const INDEX_FILE: &str = "index.json";
pub const LAYOUT_VERSION: &str = "1.0.0";
/// `index.json` larger than this is refused (it lists manifests, not blobs).
const MAX_INDEX: u64 = 64 << 20;

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct LayoutMarker {
    image_layout_version: String,
}

/// An OCI image layout directory.
#[derive(Debug, Clone)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    /// Opens an existing layout, checking its marker.
    pub fn open(root: impl Into<PathBuf>) -> Result<Self, Error> {
        let root = root.into();
        let marker_path = root.join(LAYOUT_FILE);
        let bytes = read_bounded(&marker_path, 64 << 10).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => Error::NotALayout(format!(
                "{} is not an OCI image layout (no {LAYOUT_FILE} file)",
                root.display()
            )),
            _ => Error::read(&marker_path, e),
        })?;
        let marker: LayoutMarker = serde_json::from_slice(&bytes).map_err(|e| {
            Error::Integrity(format!("{} is not valid: {e}", marker_path.display()))
        })?;
        if marker.image_layout_version.split('.').next() != Some("1") {
            return Err(Error::Integrity(format!(
                "{} has imageLayoutVersion {:?}; only 1.x is known",
                marker_path.display(),
                marker.image_layout_version
            )));
        }
        Ok(Layout { root })
    }

    /// Creates an empty layout at `root` (the directory may exist, but must not hold a
    /// layout already).
    pub fn init(root: impl Into<PathBuf>) -> Result<Self, Error> {
        let root = root.into();
        if root.join(LAYOUT_FILE).exists() {
            return Err(Error::Usage(format!(
                "{} already holds an OCI image layout",
                root.display()
            )));
        }
        fs::create_dir_all(root.join("blobs").join("sha256"))
            .map_err(|e| Error::write(&root, e))?;
        let layout = Layout { root };
        layout.write_index(&ImageIndex::default())?;
        let marker = serde_json::to_vec(&LayoutMarker {
            image_layout_version: LAYOUT_VERSION.to_owned(),
        })
        .expect("marker serialises");
        write_atomic(&layout.root, &layout.root.join(LAYOUT_FILE), &marker)?;
        Ok(layout)
    }

    /// Opens the layout at `root`, or creates it if `root` holds none.
    pub fn open_or_init(root: impl Into<PathBuf>) -> Result<Self, Error> {
        let root = root.into();
        if root.join(LAYOUT_FILE).exists() {
            Layout::open(root)
        } else {
            Layout::init(root)
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where the blob `digest` is (or would be) stored.
    pub fn blob_path(&self, digest: &Digest) -> PathBuf {
        self.root.join("blobs").join("sha256").join(digest.hex())
    }

    /// Whether the blob is stored with the right size (its bytes are checked when read).
    pub fn has_blob(&self, blob: &Descriptor) -> bool {
        fs::symlink_metadata(self.blob_path(&blob.digest))
            .is_ok_and(|m| m.is_file() && m.len() == blob.size)
    }

    /// The index (`index.json`).
    pub fn index(&self) -> Result<ImageIndex, Error> {
        let path = self.root.join(INDEX_FILE);
        let bytes = read_bounded(&path, MAX_INDEX).map_err(|e| Error::read(&path, e))?;
        serde_json::from_slice(&bytes)
            .map_err(|e| Error::Integrity(format!("{} is not valid: {e}", path.display())))
    }

    /// Picks a manifest of the index: by `selector` (a digest, or a name in
    /// `org.opencontainers.image.ref.name`); else the one named `tag_hint`; else the only one.
    pub fn select(
        &self,
        selector: Option<&str>,
        tag_hint: Option<&str>,
    ) -> Result<OciDescriptor, Error> {
        let index = self.index()?;
        let manifests: Vec<&OciDescriptor> = index
            .manifests
            .iter()
            .filter(|d| d.media_type == IMAGE_MANIFEST)
            .collect();
        let name_of = |d: &OciDescriptor| d.annotations.get(REF_NAME).cloned();
        let by_name = |n: &str| {
            manifests
                .iter()
                .rev()
                .find(|d| name_of(d).as_deref() == Some(n))
        };
        if let Some(sel) = selector {
            if let Ok(digest) = sel.parse::<Digest>() {
                return manifests
                    .iter()
                    .find(|d| d.digest == digest)
                    .map(|d| (*d).clone())
                    .ok_or_else(|| {
                        Error::Usage(format!("{} has no manifest {digest}", self.root.display()))
                    });
            }
            return by_name(sel).map(|d| (*d).clone()).ok_or_else(|| {
                Error::Usage(format!(
                    "{} has no manifest named {sel:?} ({})",
                    self.root.display(),
                    listing(&manifests)
                ))
            });
        }
        if let Some(t) = tag_hint
            && let Some(d) = by_name(t)
        {
            return Ok((*d).clone());
        }
        // Entries, not manifests, are what the index lists: two names (or a name and none)
        // for one digest are one manifest, and no choice to make.
        let mut distinct: Vec<&OciDescriptor> = Vec::new();
        for d in &manifests {
            if !distinct.iter().any(|e| e.digest == d.digest) {
                distinct.push(d);
            }
        }
        match distinct.as_slice() {
            [one] => Ok((*one).clone()),
            [] => Err(Error::Usage(format!(
                "{} holds no image manifest",
                self.root.display()
            ))),
            many => Err(Error::Usage(format!(
                "{} holds {} manifests; choose one with --manifest NAME|DIGEST ({})",
                self.root.display(),
                many.len(),
                listing(&manifests)
            ))),
        }
    }

    /// The names (`org.opencontainers.image.ref.name`) the index gives the manifest `digest`,
    /// in index order, each once.
    pub fn names_of(&self, digest: &Digest) -> Result<Vec<String>, Error> {
        let mut names: Vec<String> = Vec::new();
        for d in self.index()?.manifests {
            if d.digest == *digest
                && let Some(n) = d.annotations.get(REF_NAME)
                && !names.contains(n)
            {
                names.push(n.clone());
            }
        }
        Ok(names)
    }

    /// A manifest's bytes: size checked against the descriptor and `limits` before reading,
    /// digest checked after.
    pub fn read_manifest(&self, d: &OciDescriptor, limits: &Limits) -> Result<Vec<u8>, Error> {
        if d.size > limits.max_manifest_bytes {
            return Err(Error::Integrity(format!(
                "manifest {} in {} has {} bytes, over the limit of {}",
                d.digest,
                self.root.display(),
                d.size,
                limits.max_manifest_bytes
            )));
        }
        let mut out = Vec::with_capacity(d.size as usize);
        self.open(&d.blob())
            .map_err(|e| blob_error(self, &d.digest, e))?
            .read_to_end(&mut out)
            .map_err(|e| io_error(self, &d.digest, e))?;
        Ok(out)
    }

    /// Stores `bytes` as a blob (atomically; a blob already there is kept).
    pub fn put_blob(&self, bytes: &[u8]) -> Result<Descriptor, Error> {
        let d = Descriptor::of(bytes);
        if !self.has_blob(&d) {
            let path = self.blob_path(&d.digest);
            let dir = path.parent().expect("blob paths have a parent");
            fs::create_dir_all(dir).map_err(|e| Error::write(dir, e))?;
            write_atomic(dir, &path, bytes)?;
        }
        Ok(d)
    }

    /// Stores a manifest and lists it in the index under `name` (replacing what that name
    /// named before). The blobs it names must be stored first.
    pub fn add_manifest(
        &self,
        manifest: &[u8],
        artifact_type: Option<&str>,
        name: Option<&str>,
    ) -> Result<OciDescriptor, Error> {
        let blob = self.put_blob(manifest)?;
        let mut d = OciDescriptor::new(IMAGE_MANIFEST, blob);
        d.artifact_type = artifact_type.map(str::to_owned);
        if let Some(n) = name {
            d.annotations.insert(REF_NAME.to_owned(), n.to_owned());
        }
        let mut index = self.index()?;
        index.manifests.retain(|m| match name {
            Some(n) => m.annotations.get(REF_NAME).map(String::as_str) != Some(n),
            // The same manifest unnamed is listed once.
            None => m.digest != d.digest || m.annotations.contains_key(REF_NAME),
        });
        index.manifests.push(d.clone());
        self.write_index(&index)?;
        Ok(d)
    }

    /// Replaces `index.json` atomically (temporary file, sync, rename). Callers that
    /// read, change and write it hold a lock around the three.
    pub fn write_index(&self, index: &ImageIndex) -> Result<(), Error> {
        let mut bytes = serde_json::to_vec_pretty(index).expect("index serialises");
        bytes.push(b'\n');
        write_atomic(&self.root, &self.root.join(INDEX_FILE), &bytes)
    }
}

fn listing(ds: &[&OciDescriptor]) -> String {
    ds.iter()
        .map(|d| match d.annotations.get(REF_NAME) {
            Some(n) => format!("{n} = {}", d.digest),
            None => d.digest.to_string(),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn blob_error(layout: &Layout, digest: &Digest, e: BlobError) -> Error {
    match e {
        BlobError::Missing(_) | BlobError::SizeMismatch { .. } => {
            Error::Integrity(format!("{}: {e}", layout.root.display()))
        }
        BlobError::Io { path, source } => Error::read(path, source),
        BlobError::Other(source) => io_error(layout, digest, source),
    }
}

fn io_error(layout: &Layout, digest: &Digest, e: io::Error) -> Error {
    if asp_format::digest::is_integrity_error(&e) {
        // The reader's error names the blob's file already.
        Error::Integrity(e.to_string())
    } else {
        Error::read(layout.blob_path(digest), e)
    }
}

impl BlobSource for Layout {
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
            .map_err(|source| BlobError::Io {
                path: path.clone(),
                source,
            })?
            .len();
        if actual != blob.size {
            return Err(BlobError::SizeMismatch {
                digest: blob.digest,
                expected: blob.size,
                actual,
            });
        }
        Ok(Box::new(NamedFile {
            inner: VerifyingReader::new(BufReader::with_capacity(256 << 10, file), *blob),
            path,
        }))
    }
}

/// A blob file's reader whose integrity failures name the file: the digest alone does not
/// tell a person which file to look at, or that it is theirs and not the registry's.
struct NamedFile<R> {
    inner: R,
    path: PathBuf,
}

impl<R: Read> Read for NamedFile<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf).map_err(|e| {
            if asp_format::digest::is_integrity_error(&e) {
                asp_format::digest::IntegrityError(format!("{}: {e}", self.path.display()))
                    .into_io()
            } else {
                e
            }
        })
    }
}

/// A pull into a layout directory, which need not exist yet: blobs are staged beside it (in
/// it when it exists, else in its parent), and the directory is created only at commit.
#[derive(Debug)]
pub struct LayoutSink {
    root: PathBuf,
    /// What the tag named in the layout before this pull, when it named another manifest.
    replaced: std::sync::Mutex<Option<Digest>>,
}

impl LayoutSink {
    /// A sink into `root`: an existing layout, an empty directory, or a path to create.
    pub fn new(root: impl Into<PathBuf>) -> Result<Self, Error> {
        let root = root.into();
        if root.join(LAYOUT_FILE).exists() {
            Layout::open(&root)?;
        } else if root.exists() {
            let empty = fs::read_dir(&root)
                .map_err(|e| Error::read(&root, e))?
                .next()
                .is_none();
            if !empty {
                return Err(Error::NotALayout(format!(
                    "{} exists and is not an OCI image layout; pull into an empty or new \
                     directory, or into a layout",
                    root.display()
                )));
            }
        }
        Ok(LayoutSink {
            root,
            replaced: std::sync::Mutex::new(None),
        })
    }

    /// What the tag pulled named in the layout before, when the pull moved it to another
    /// manifest (that manifest and its blobs stay in the layout, unnamed).
    pub fn replaced(&self) -> Option<Digest> {
        *self.replaced.lock().expect("not poisoned")
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl PullSink for LayoutSink {
    fn contains(&self, blob: &Descriptor) -> Result<bool, Error> {
        if !self.root.join(LAYOUT_FILE).exists() {
            return Ok(false);
        }
        Ok(Layout {
            root: self.root.clone(),
        }
        .has_blob(blob))
    }

    fn staging_parent(&self) -> Result<PathBuf, Error> {
        if self.root.is_dir() {
            return Ok(self.root.clone());
        }
        let parent = match self.root.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        if !parent.is_dir() {
            return Err(Error::Usage(format!(
                "{} does not exist (the layout's parent directory must)",
                parent.display()
            )));
        }
        Ok(parent)
    }

    fn commit(
        &self,
        artifact: &Artifact,
        _record: Option<&Artifact>,
        reference: &Reference,
        staged: &Staged,
    ) -> Result<(), Error> {
        let layout = Layout::open_or_init(&self.root)?;
        let blobs_dir = self.root.join("blobs").join("sha256");
        fs::create_dir_all(&blobs_dir).map_err(|e| Error::write(&blobs_dir, e))?;
        for (digest, path) in staged.files() {
            let target = layout.blob_path(digest);
            if fs::symlink_metadata(&target).is_ok() {
                continue;
            }
            fs::rename(path, &target).map_err(|e| Error::write(&target, e))?;
        }
        sync_dir(&blobs_dir).map_err(|e| Error::write(&blobs_dir, e))?;
        let name = if reference.digest().is_some() {
            None
        } else {
            reference.tag()
        };
        if let Some(n) = name {
            let digest = Digest::of(artifact.bytes());
            *self.replaced.lock().expect("not poisoned") = layout
                .index()?
                .manifests
                .iter()
                .find(|m| m.annotations.get(REF_NAME).map(String::as_str) == Some(n))
                .map(|m| m.digest)
                .filter(|d| *d != digest);
        }
        layout.add_manifest(
            artifact.bytes(),
            artifact.manifest().artifact_type.as_deref(),
            name,
        )?;
        Ok(())
    }
}

/// Reads a whole file of at most `max` bytes.
fn read_bounded(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let f = File::open(path)?;
    let mut out = Vec::new();
    f.take(max + 1).read_to_end(&mut out)?;
    if out.len() as u64 > max {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {max} bytes"),
        ));
    }
    Ok(out)
}

/// Writes `bytes` to `path` through a synced temporary file in `dir`, then renames it.
pub fn write_atomic(dir: &Path, path: &Path, bytes: &[u8]) -> Result<(), Error> {
    let mut tmp = tempfile::Builder::new()
        .prefix(".asp-")
        .suffix(".partial")
        .tempfile_in(dir)
        .map_err(|e| Error::write(dir, e))?;
    tmp.write_all(bytes).map_err(|e| Error::write(path, e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::write(path, e))?;
    tmp.persist(path).map_err(|e| Error::write(path, e.error))?;
    sync_dir(dir).map_err(|e| Error::write(dir, e))
}

/// Makes renames in `dir` durable. A file system that cannot sync a directory (it says
/// `EINVAL` or `ENOTSUP`, as some network and FUSE ones do) is let be; any other failure
/// (`EIO`) is an error: what names the renamed files next (an index, a snapshot) must not be
/// written over renames that may not last (review helper-133, 9: every failure was let be).
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        let d = File::open(dir)?;
        match d.sync_all() {
            // (`EINVAL` is `InvalidInput`, `ENOTSUP` `Unsupported`.)
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::InvalidInput | io::ErrorKind::Unsupported
                ) =>
            {
                Ok(())
            }
            other => other,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::manifest::ImageManifest;
    use std::collections::BTreeMap;

    fn sample(layout: &Layout, body: &[u8], name: &str) -> OciDescriptor {
        let empty = layout.put_blob(crate::manifest::EMPTY_JSON).unwrap();
        assert_eq!(empty, OciDescriptor::empty().blob());
        let b = layout.put_blob(body).unwrap();
        let m = ImageManifest::artifact(
            vec![OciDescriptor::new("application/vnd.asp.test", b)],
            BTreeMap::new(),
        );
        layout
            .add_manifest(&m.to_bytes(), Some(crate::ARTIFACT_TYPE), Some(name))
            .unwrap()
    }

    #[test]
    fn select_by_name_digest_hint_or_the_only_one() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::init(dir.path().join("l")).unwrap();
        assert!(layout.select(None, None).is_err(), "empty");
        let a = sample(&layout, b"a", "one");
        assert_eq!(layout.select(None, None).unwrap(), a);
        let b = sample(&layout, b"b", "two");
        let e = layout.select(None, None).unwrap_err();
        assert!(e.to_string().contains("--manifest"), "{e}");
        assert_eq!(layout.select(Some("one"), None).unwrap(), a);
        assert_eq!(layout.select(None, Some("two")).unwrap(), b);
        assert_eq!(layout.select(Some(&b.digest.to_string()), None).unwrap(), b);
        assert!(layout.select(Some("three"), None).is_err());
        // Renaming: `one` now names b's manifest; a's entry is gone.
        let again = layout
            .add_manifest(
                &layout.read_manifest(&b, &Limits::default()).unwrap(),
                None,
                Some("one"),
            )
            .unwrap();
        assert_eq!(again.digest, b.digest);
        assert_eq!(layout.index().unwrap().manifests.len(), 2);
        let reopened = Layout::open(layout.root()).unwrap();
        assert_eq!(reopened.select(Some("one"), None).unwrap().digest, b.digest);
    }

    #[test]
    fn two_names_of_one_manifest_are_no_choice() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::init(dir.path().join("l")).unwrap();
        let a = sample(&layout, b"a", "v1");
        let bytes = layout.read_manifest(&a, &Limits::default()).unwrap();
        layout
            .add_manifest(&bytes, Some(crate::ARTIFACT_TYPE), Some("latest"))
            .unwrap();
        assert_eq!(layout.index().unwrap().manifests.len(), 2);
        assert_eq!(layout.select(None, None).unwrap().digest, a.digest);
        assert_eq!(layout.select(None, Some("v2")).unwrap().digest, a.digest);
        assert_eq!(layout.names_of(&a.digest).unwrap(), ["v1", "latest"]);
        // A second manifest is a choice again.
        sample(&layout, b"b", "other");
        let e = layout.select(None, None).unwrap_err();
        assert!(e.to_string().contains("holds 2 manifests"), "{e}");
    }

    #[test]
    fn a_damaged_blob_is_an_integrity_failure() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::init(dir.path()).unwrap();
        let d = sample(&layout, b"payload", "x");
        let mut bytes = fs::read(layout.blob_path(&d.digest)).unwrap();
        bytes[5] ^= 1;
        fs::write(layout.blob_path(&d.digest), &bytes).unwrap();
        let e = layout.read_manifest(&d, &Limits::default()).unwrap_err();
        assert!(matches!(e, Error::Integrity(_)), "{e}");
        let file = layout.blob_path(&d.digest).display().to_string();
        assert!(e.to_string().contains(&file), "names the file: {e}");
        fs::remove_file(layout.blob_path(&d.digest)).unwrap();
        let e = layout.read_manifest(&d, &Limits::default()).unwrap_err();
        assert!(matches!(e, Error::Integrity(_)), "{e}");
    }

    #[test]
    fn not_a_layout() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(
            Layout::open(dir.path()),
            Err(Error::NotALayout(_))
        ));
        fs::write(
            dir.path().join(LAYOUT_FILE),
            br#"{"imageLayoutVersion":"2.0.0"}"#,
        )
        .unwrap();
        assert!(matches!(Layout::open(dir.path()), Err(Error::Integrity(_))));
        fs::write(dir.path().join("stray"), b"x").unwrap();
        fs::remove_file(dir.path().join(LAYOUT_FILE)).unwrap();
        assert!(
            matches!(LayoutSink::new(dir.path()), Err(Error::NotALayout(_))),
            "a non-empty non-layout"
        );
    }
}
