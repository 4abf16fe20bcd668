//! Content digests and descriptors, in the OCI grammar (`sha256:<64 lowercase hex>`).
//!
//! A digest is always computed over the uncompressed bytes of a blob, so it can be checked with
//! `sha256sum` and does not change when the compressor does. A [`Descriptor`] pairs it with the
//! size, which a reader checks before hashing (as OCI and REAPI do): a wrong size is found
//! without reading the whole blob.

use std::fmt;
use std::io::{self, Read, Write};
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

/// The only algorithm this version writes and verifies.
pub const ALGORITHM: &str = "sha256";

/// A sha256 digest of some bytes.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Digest([u8; 32]);

impl Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Digest(Sha256::digest(bytes).into())
    }

    /// The 64 lowercase hex characters, without the algorithm prefix.
    pub fn hex(&self) -> String {
        hex::encode(self.0)
    }

    /// The first 8 hex characters: how a snapshot or a manifest is named to a person (`asp
    /// snapshots`), and how a prefix of it is given back.
    pub fn short(&self) -> String {
        hex::encode(&self.0[..4])
    }

    /// The raw 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// Parses the bare hex form used in blob entry names (`blobs/sha256/<hex>`): exactly 64
    /// lowercase hex characters. One pass, no allocation: bundles hold thousands of digests.
    pub fn from_hex(hex_str: &str) -> Result<Self, DigestError> {
        /// Each byte's value as a lowercase hex digit, or 0xff: a bundle's documents name
        /// thousands of digests, so this is a table look-up, not a match per character.
        const NIBBLE: [u8; 256] = {
            let mut t = [0xffu8; 256];
            let mut i = 0;
            while i < 10 {
                t[b'0' as usize + i] = i as u8;
                i += 1;
            }
            let mut i = 0;
            while i < 6 {
                t[b'a' as usize + i] = 10 + i as u8;
                i += 1;
            }
            t
        };
        let b = hex_str.as_bytes();
        let bad = || DigestError::BadHex(hex_str.to_owned());
        if b.len() != 64 {
            return Err(bad());
        }
        let mut out = [0u8; 32];
        let mut invalid = 0u8;
        for (o, pair) in out.iter_mut().zip(b.chunks_exact(2)) {
            let (hi, lo) = (NIBBLE[pair[0] as usize], NIBBLE[pair[1] as usize]);
            invalid |= (hi | lo) & 0xf0;
            *o = (hi << 4) | (lo & 0x0f);
        }
        if invalid != 0 {
            return Err(bad());
        }
        Ok(Digest(out))
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{ALGORITHM}:{}", self.hex())
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Why a digest string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DigestError {
    #[error("digest {0:?} is not of the form <algorithm>:<encoded>")]
    Malformed(String),
    #[error("digest algorithm {0:?} is not supported (only sha256 is)")]
    UnsupportedAlgorithm(String),
    #[error("{0:?} is not 64 lowercase hex characters")]
    BadHex(String),
}

impl FromStr for Digest {
    type Err = DigestError;

    /// Parses strictly by the OCI grammar: `algorithm ":" encoded`, where algorithm components
    /// are `[a-z0-9]+` joined by `[+._-]` and encoded is `[a-zA-Z0-9=_-]+`. Well-formed digests
    /// of other algorithms get [`DigestError::UnsupportedAlgorithm`], not `Malformed`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        // The form every digest asp writes takes: no need for the whole grammar.
        if let Some(hex) = s.strip_prefix("sha256:")
            && let Ok(d) = Digest::from_hex(hex)
        {
            return Ok(d);
        }
        let (alg, encoded) = s
            .split_once(':')
            .ok_or_else(|| DigestError::Malformed(s.to_owned()))?;
        let alg_ok = !alg.is_empty()
            && alg.split(['+', '.', '_', '-']).all(|c| {
                !c.is_empty()
                    && c.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            });
        let enc_ok = !encoded.is_empty()
            && encoded
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'=' | b'_' | b'-'));
        if !alg_ok || !enc_ok {
            return Err(DigestError::Malformed(s.to_owned()));
        }
        if alg != ALGORITHM {
            return Err(DigestError::UnsupportedAlgorithm(alg.to_owned()));
        }
        Digest::from_hex(encoded)
    }
}

impl Serialize for Digest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        /// Parses the string where it lies, without an owned copy of each digest.
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = Digest;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a digest string such as \"sha256:<64 hex>\"")
            }
            fn visit_str<E: serde::de::Error>(self, s: &str) -> Result<Digest, E> {
                s.parse().map_err(E::custom)
            }
        }
        d.deserialize_str(Visitor)
    }
}

/// A reference to a blob: its digest and its size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Descriptor {
    pub digest: Digest,
    pub size: u64,
}

impl Descriptor {
    /// The descriptor of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Descriptor {
            digest: Digest::of(bytes),
            size: bytes.len() as u64,
        }
    }
}

/// Incremental sha256 plus byte count.
#[derive(Debug, Default, Clone)]
pub struct Hasher {
    sha: Sha256,
    size: u64,
}

impl Hasher {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn update(&mut self, bytes: &[u8]) {
        self.sha.update(bytes);
        self.size += bytes.len() as u64;
    }

    /// Bytes seen so far.
    pub fn size(&self) -> u64 {
        self.size
    }

    pub fn finish(self) -> Descriptor {
        Descriptor {
            digest: Digest(self.sha.finalize().into()),
            size: self.size,
        }
    }
}

/// A writer that hashes everything passing through it.
#[derive(Debug)]
pub struct HashingWriter<W> {
    inner: W,
    hasher: Hasher,
}

impl<W: Write> HashingWriter<W> {
    pub fn new(inner: W) -> Self {
        HashingWriter {
            inner,
            hasher: Hasher::new(),
        }
    }

    /// The inner writer and the descriptor of what was written.
    pub fn finish(self) -> (W, Descriptor) {
        (self.inner, self.hasher.finish())
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// A reader that yields at most `expected.size` bytes and fails at the end of the stream if the
/// bytes read do not match `expected` (too short, too long, or a different digest).
///
/// The failure surfaces as an [`io::ErrorKind::InvalidData`] error from `read`, so a consumer
/// that writes into a temporary file and renames it only after a clean end never keeps bad data.
#[derive(Debug)]
pub struct VerifyingReader<R> {
    inner: R,
    expected: Descriptor,
    hasher: Hasher,
    done: bool,
}

impl<R: Read> VerifyingReader<R> {
    pub fn new(inner: R, expected: Descriptor) -> Self {
        VerifyingReader {
            inner,
            expected,
            hasher: Hasher::new(),
            done: false,
        }
    }

    fn check_end(&mut self) -> io::Result<()> {
        // Anything beyond the declared size is an error too: read one more byte to find out.
        let mut probe = [0u8; 1];
        if self.inner.read(&mut probe)? != 0 {
            return Err(mismatch(format!(
                "blob {} is longer than its declared {} bytes",
                self.expected.digest, self.expected.size
            )));
        }
        let got = std::mem::take(&mut self.hasher).finish();
        if got.size != self.expected.size {
            return Err(mismatch(format!(
                "blob {} has {} bytes, not the declared {}",
                self.expected.digest, got.size, self.expected.size
            )));
        }
        if got.digest != self.expected.digest {
            return Err(mismatch(format!(
                "blob {} does not match its digest (its bytes hash to {})",
                self.expected.digest, got.digest
            )));
        }
        Ok(())
    }
}

/// The error inside an [`io::Error`] that says data does not match what was promised (a
/// digest, a size, a compressed stream that does not decompress). Tools map it to their
/// integrity-failure exit code with [`is_integrity_error`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct IntegrityError(pub String);

impl IntegrityError {
    /// Wraps as an [`io::Error`] of kind `InvalidData`.
    pub fn into_io(self) -> io::Error {
        io::Error::new(io::ErrorKind::InvalidData, self)
    }
}

/// True when `e` reports data that does not match what was promised.
pub fn is_integrity_error(e: &io::Error) -> bool {
    e.get_ref()
        .is_some_and(|inner| inner.is::<IntegrityError>())
}

fn mismatch(msg: String) -> io::Error {
    IntegrityError(msg).into_io()
}

impl<R: Read> Read for VerifyingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.done || buf.is_empty() {
            return Ok(0);
        }
        let remaining = self.expected.size - self.hasher.size();
        if remaining == 0 {
            self.done = true;
            self.check_end()?;
            return Ok(0);
        }
        let want = buf
            .len()
            .min(usize::try_from(remaining).unwrap_or(usize::MAX));
        let n = self.inner.read(&mut buf[..want])?;
        if n == 0 {
            self.done = true;
            self.check_end()?;
            return Ok(0);
        }
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EMPTY: &str = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

    #[test]
    fn empty_blob_has_the_well_known_digest() {
        assert_eq!(Digest::of(b"").to_string(), EMPTY);
        assert_eq!(EMPTY.parse::<Digest>().unwrap(), Digest::of(b""));
    }

    #[test]
    fn parsing_follows_the_oci_grammar() {
        assert!(matches!(
            "sha256".parse::<Digest>(),
            Err(DigestError::Malformed(_))
        ));
        assert!(matches!(
            "SHA256:00".parse::<Digest>(),
            Err(DigestError::Malformed(_))
        ));
        assert!(matches!(
            "blake3:abcd".parse::<Digest>(),
            Err(DigestError::UnsupportedAlgorithm(_))
        ));
        assert!(matches!(
            "sha256:ABCD".parse::<Digest>(),
            Err(DigestError::BadHex(_))
        ));
        let upper = EMPTY.replace("e3b0", "E3B0");
        assert!(matches!(
            upper.parse::<Digest>(),
            Err(DigestError::BadHex(_))
        ));
    }

    #[test]
    fn verifying_reader_accepts_exact_content() {
        let data = b"hello world";
        let mut r = VerifyingReader::new(&data[..], Descriptor::of(data));
        let mut out = Vec::new();
        r.read_to_end(&mut out).unwrap();
        assert_eq!(out, data);
    }

    #[test]
    fn verifying_reader_rejects_wrong_digest_short_and_long_content() {
        let expected = Descriptor::of(b"hello world");
        for bad in [&b"hello worle"[..], b"hello", b"hello world!"] {
            let mut r = VerifyingReader::new(bad, expected);
            let err = r.read_to_end(&mut Vec::new()).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidData, "{bad:?}");
        }
    }
}
