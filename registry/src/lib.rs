//! Moving asp state through OCI distribution registries: `asp push` and `asp pull`.
//!
//! What travels is plain OCI: one image manifest (with `artifactType`
//! [`manifest::ARTIFACT_TYPE`]) and the blobs it names, taken from and put into an OCI image
//! layout; for a snapshot of a repository, also a snapshot record
//! ([`manifest::RECORD_ARTIFACT_TYPE`]) whose `subject` is that manifest and which the tag
//! names. This crate knows nothing of the state inside; it sits above `asp-format` only for
//! digests, blob sources and error classes.
//!
//! Read in this order:
//! - [`reference`]: `host[:port]/name[:tag|@sha256:...]`, with docker's rules for what a host is;
//! - [`credentials`]: where a password comes from (flags, environment, `~/.docker/config.json`
//!   and its credential helpers), and [`secret`], which keeps it out of every message;
//! - [`client`]: HTTPS by default, basic and bearer-token auth (the distribution token flow);
//! - [`manifest`]: the artifact's shape and the checks a pulled manifest must pass;
//! - [`push`] and [`pull`]: thin uploads, hostile downloads, staged and committed all at once;
//! - [`source`]: what a push reads (a manifest and its blobs), whatever holds them;
//! - [`layout`] and [`bundle`]: an OCI image layout directory and a bundle zip, each the source
//!   of a push and the sink of a pull.
//!
//! The algorithms, limits and what real registries accepted are in `spec/registry.md`.

pub mod bundle;
pub mod client;
pub mod credentials;
pub mod error;
pub mod layout;
pub mod manifest;
pub mod pull;
pub mod push;
pub mod reference;
pub mod remotes;
pub mod secret;
pub mod source;
pub mod transfer;

mod auth;
mod parallel;

pub use client::{Client, ClientOptions};
pub use credentials::{Credentials, Lookup};
pub use error::Error;
pub use manifest::{ARTIFACT_TYPE, Artifact};
pub use pull::{PullOptions, PullReport, PullSink, pull};
pub use push::{PushOptions, PushReport, push};
pub use reference::Reference;
pub use source::{PushSource, push_from};
pub use transfer::{Observer, Silent};
