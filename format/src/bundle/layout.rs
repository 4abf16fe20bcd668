//! The `aspstate-layout` marker, the manifest envelope and the names of zip entries.

use serde::{Deserialize, Serialize};

use crate::digest::Digest;
use crate::state::State;

/// Name of the first entry of every bundle.
pub const LAYOUT_ENTRY: &str = "aspstate-layout";
/// Name of the root document.
pub const MANIFEST_ENTRY: &str = "manifest.json";
/// Prefix of blob entries; the rest of the name is the digest's hex.
pub const BLOB_PREFIX: &str = "blobs/sha256/";

/// The layout version this crate writes.
pub const LAYOUT_VERSION: &str = "1.0.0";
/// The only layout major version this crate reads.
pub const LAYOUT_MAJOR: u64 = 1;
/// Media type of the bundle as a whole.
pub const BUNDLE_MEDIA_TYPE: &str = "application/vnd.asp.state.v1+zip";
/// Media type of `manifest.json`.
pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.asp.state.manifest.v1+json";
/// The manifest schema version this crate writes and reads.
pub const SCHEMA_VERSION: u64 = 1;

/// The content of `aspstate-layout`.
///
/// It carries the generator so the tool version stays out of the manifest, whose digest is the
/// bundle's identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Layout {
    pub layout_version: String,
    pub media_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<String>,
}

impl Layout {
    pub fn current(generator: Option<String>) -> Self {
        Layout {
            layout_version: LAYOUT_VERSION.to_owned(),
            media_type: BUNDLE_MEDIA_TYPE.to_owned(),
            generator,
        }
    }

    /// The major component of `layoutVersion`, if it is a `MAJOR.MINOR.PATCH` version.
    pub fn major(&self) -> Option<u64> {
        let mut parts = self.layout_version.split('.');
        let major = parts.next()?.parse().ok()?;
        let minor_ok = parts.next().is_some_and(|p| p.parse::<u64>().is_ok());
        let patch_ok = parts.next().is_some_and(|p| p.parse::<u64>().is_ok());
        (minor_ok && patch_ok && parts.next().is_none()).then_some(major)
    }

    /// The exact bytes of the entry: compact JSON and a newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec(self).expect("layout serialises");
        out.push(b'\n');
        out
    }
}

/// The root document of a bundle.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub schema_version: u64,
    pub media_type: String,
    /// When the bundle was made, if the packer was asked to say (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
    pub state: State,
}

impl Manifest {
    pub fn new(state: State, created: Option<String>) -> Self {
        Manifest {
            schema_version: SCHEMA_VERSION,
            media_type: MANIFEST_MEDIA_TYPE.to_owned(),
            created,
            state,
        }
    }

    /// The exact bytes of `manifest.json`: two-space pretty JSON and a final newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = serde_json::to_vec_pretty(self).expect("manifest serialises");
        out.push(b'\n');
        out
    }
}

/// The zip entry name of a blob.
pub fn blob_entry_name(digest: &Digest) -> String {
    format!("{BLOB_PREFIX}{}", digest.hex())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_major_versions_parse_strictly() {
        let mut l = Layout::current(None);
        assert_eq!(l.major(), Some(1));
        l.layout_version = "2.0.0".into();
        assert_eq!(l.major(), Some(2));
        for bad in ["1", "1.0", "x.0.0", "1.0.0.0", ""] {
            l.layout_version = bad.into();
            assert_eq!(l.major(), None, "{bad}");
        }
    }
}
