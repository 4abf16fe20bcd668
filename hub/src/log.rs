//! The hub's log: stderr only, since stdout carries the protocol.

/// Writes `asp hub: ...` lines to stderr; routine decisions only when verbose.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Log {
    pub verbose: bool,
}

impl Log {
    /// A routine decision (a prompt queued, a replay captured), for `--verbose`.
    pub(crate) fn debug(&self, message: impl FnOnce() -> String) {
        if self.verbose {
            eprintln!("asp hub: {}", message());
        }
    }

    /// Something the owner should know about (an answer that could not be delivered, a
    /// converter's diagnostics).
    pub(crate) fn warn(&self, message: impl AsRef<str>) {
        eprintln!("asp hub: {}", message.as_ref());
    }
}
