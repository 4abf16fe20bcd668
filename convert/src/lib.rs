//! Converters between harnesses' native stores and the portable agent state.
//!
//! Read ARCHITECTURE.md at the repository root first. In short:
//!
//! - [`store::Store`] is what callers use: a harness's store or a state directory, read and
//!   written under one contract (kinds asked for, sessions asked for, threads, dry runs, the
//!   import answer).
//! - [`harness::Harness`] is the plumbing each converter implements: survey the sessions, read
//!   one session, read the other kinds, write.
//! - [`kit`] is what converters share, so every converter answers the same question the same
//!   way; converters never import each other.
//! - [`dir`] is the plain directory form of the state, for people to read and edit.
//!
//! Each harness is a cargo feature (all on by default); [`harnesses`] lists those built in.

// Module docs link to the private modules they describe, for `cargo doc --document-private-items`.
#![allow(rustdoc::private_intra_doc_links)]

pub mod dir;
pub mod error;
pub mod harness;
pub mod kit;
pub mod reading;
pub mod store;

#[cfg(feature = "claude-code")]
pub mod claude_code;
#[cfg(feature = "codex")]
pub mod codex;
#[cfg(feature = "copilot")]
pub mod copilot;
#[cfg(feature = "gemini")]
pub mod gemini;
#[cfg(feature = "opencode")]
pub mod opencode;
#[cfg(feature = "pi")]
pub mod pi;
#[cfg(feature = "qwen")]
pub mod qwen;

pub use error::ConvertError;
pub use harness::{Capabilities, Harness, Home};
pub use store::Store;

/// Every harness converter this build knows, in a fixed order.
// One push per feature: which of them are there depends on the build.
#[allow(clippy::vec_init_then_push, unused_mut)]
pub fn harnesses() -> Vec<Box<dyn Harness>> {
    let mut all: Vec<Box<dyn Harness>> = Vec::new();
    #[cfg(feature = "claude-code")]
    all.push(Box::new(claude_code::ClaudeCode));
    #[cfg(feature = "codex")]
    all.push(Box::new(codex::Codex));
    #[cfg(feature = "gemini")]
    all.push(Box::new(gemini::Gemini));
    #[cfg(feature = "opencode")]
    all.push(Box::new(opencode::OpenCode));
    #[cfg(feature = "pi")]
    all.push(Box::new(pi::Pi));
    #[cfg(feature = "qwen")]
    all.push(Box::new(qwen::Qwen));
    #[cfg(feature = "copilot")]
    all.push(Box::new(copilot::Copilot));
    all
}

/// The converter for `name`, if this build has it.
pub fn harness(name: &str) -> Option<Box<dyn Harness>> {
    harnesses().into_iter().find(|h| h.name().as_str() == name)
}

/// The native transcript of `session` ([`Harness::transcript`], by the harness its native files
/// are of): the body a bundle compresses its update stream against, and the one the project
/// dictionaries are made of (spec/aspstate.md §4.1). `None` without native files, for a harness
/// this build does not have, or one that gives none.
pub fn transcript_of(session: &asp_format::state::Session) -> Option<asp_format::Descriptor> {
    let native = session.native.as_ref()?;
    harness(native.harness.as_str())?.transcript(&session.id, native, session.meta.as_ref())
}

/// The names of the converters this build has.
pub fn harness_names() -> Vec<String> {
    harnesses().iter().map(|h| h.name().to_string()).collect()
}
