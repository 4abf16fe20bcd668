//! The portable state of the Agent State Protocol and its at-rest form, the `.aspstate`
//! bundle.
//!
//! This crate knows no harness and no transport. It owns:
//! - the state model ([`state::State`]): the six kinds, named as the protocol names them, with
//!   file bodies held as [`digest::Descriptor`]s of blobs;
//! - blob stores ([`blob`]) that bodies stream through, so memory stays flat;
//! - the inline JSON form that `_asp/state/export` answers ([`export`]);
//! - the bundle ([`bundle`]): deterministic, content-addressed, checked on the way in.

pub mod answer;
pub mod blob;
pub mod bundle;
pub mod digest;
pub mod error;
pub mod export;
pub mod kind;
pub mod name;
pub mod on_stop;
pub mod progress;
pub mod state;
pub mod update;

pub use digest::{Descriptor, Digest};
pub use error::{Classify, ErrorClass};
pub use kind::{KindSet, StateKind};
pub use state::State;
