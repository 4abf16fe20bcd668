//! Converters between harnesses' native stores and the portable agent state.
//!
//! Every harness converter implements [`harness::Harness`]: read a native store into a
//! [`asp_format::State`] (bodies streamed into blobs), and write a state back, answering what
//! was taken, what was not and why, and each session's new id. [`dir`] is the plain
//! directory form of the state, for people to read and edit.

pub mod acp;
pub mod claude_code;
pub mod codex;
pub mod conversation;
pub mod dir;
pub mod escape;
pub mod fsops;
pub mod gemini;
pub mod harness;
pub mod pathmap;
pub mod report;
pub mod secrets;
pub mod skills;
pub mod time;
pub mod uuid;

pub use harness::{Capabilities, ConvertError, Harness, Home, ReadContext, WriteContext};

/// Every harness converter this build knows, by name.
pub fn harnesses() -> Vec<Box<dyn Harness>> {
    vec![
        Box::new(claude_code::ClaudeCode),
        Box::new(codex::Codex),
        Box::new(gemini::Gemini),
    ]
}

/// The converter for `name`, if there is one.
pub fn harness(name: &str) -> Option<Box<dyn Harness>> {
    harnesses().into_iter().find(|h| h.name().as_str() == name)
}
