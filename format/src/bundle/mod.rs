//! The `.aspstate` bundle: a zip with an OCI-style content-addressed layout.
//!
//! ```text
//! aspstate-layout           Stored; {"layoutVersion":"1.0.0","mediaType":...,"generator":...}
//! manifest.json             the state, bodies as {digest, size}; its sha256 is the bundle's id
//! blobs/sha256/<hex>        one per distinct body, named only by digest, ascending
//! ```
//!
//! See `spec/aspstate.md` for the normative description.

mod contexts;
pub mod layers;
mod layout;
pub(crate) mod leftovers;
pub use leftovers::hold as hold_temporary;
pub mod oci;
mod part;
mod projects;
mod read;
pub mod recent;
pub mod shards;
pub mod windows;
mod write;
mod write2;

pub use layout::{
    BLOB_PREFIX, BUNDLE_MEDIA_TYPE, LAYOUT_ENTRY, LAYOUT_VERSION, Layout, MANIFEST_ENTRY,
    MANIFEST_MEDIA_TYPE, Manifest, SCHEMA_VERSION, blob_entry_name,
};
pub use part::Part;
pub use projects::{
    DICTIONARY_LENGTHS, PROJECT_DICTIONARY, Project, TranscriptOf, dictionary_source, projects,
};
pub use read::{Bundle, Limits, Problem, ReadError, VerifyReport, decode_layer, verify_file};
pub use write::{
    Compression, NotAFile, WriteError, WriteOptions, Written, output_path, write_file, write_to,
};
pub use write2::{
    Document, Documents, ImageZip, LAYOUT_VERSION3, LAYOUT_VERSION4, LAYOUT_VERSION5,
    LAYOUT2_VERSION, LayerSource, Options2, ZipMethod, layout_version_of, write_image_zip,
    write_layers_file, write_layers_to,
};
