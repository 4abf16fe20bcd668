//! asp's snapshot repository: many snapshots of agent state in one OCI image layout, sharing
//! their blobs, backed up incrementally (`asp backup`, `asp restore`, `asp check`, ...).
//!
//! ```text
//! REPO/oci-layout            {"imageLayoutVersion":"1.0.0"}
//! REPO/index.json            one descriptor per snapshot manifest, annotated (harness, home, time)
//! REPO/blobs/sha256/<hex>    content manifests, snapshot manifests and every layer, by digest
//! REPO/locks/repo            flock: shared by backup, restore and check; exclusive by prune
//! REPO/locks/index           flock: exclusive around every change of index.json
//! REPO/locks/series-<hex>    flock: exclusive by what adds a snapshot to one series (harness, home)
//! ```
//!
//! A snapshot is two manifests: the **content manifest**, exactly the image manifest a bundle
//! of the same state holds (so its blobs are the bundle's blobs, and a bundle is one snapshot
//! in one file), and the **snapshot manifest** whose `subject` it is, with the snapshot's
//! metadata in annotations and its layers, the **source records** (a head and shards,
//! [`sources`]): for every session the harness's survey listed, the files and facts its read depended on, which the next backup
//! compares to read only what changed. `spec/repository.md` is the normative description.
//!
//! The engine follows one shape per operation: `XOptions` (what the user asked) and a
//! context (diagnostics, progress), returning an outcome the CLI prints.

pub mod backup;
pub mod blobs;
pub mod check;
pub mod error;
pub mod forget;
pub mod from_bundle;
pub mod prune;
pub mod registry;
pub mod repository;
pub mod snapshot;
pub mod sources;

pub use error::RepoError;
pub use repository::Repository;
pub use snapshot::{Snapshot, SnapshotInfo};
