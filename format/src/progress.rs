//! Progress reporting for long work, kept abstract so libraries stay free of terminal code.

/// Receives progress of long operations. Every method has a no-op default.
pub trait Progress: Send + Sync {
    /// A phase starts; `total` is its size in bytes when known.
    fn begin(&self, _what: &str, _total: Option<u64>) {}
    /// `n` more bytes of the current phase are done.
    fn advance(&self, _n: u64) {}
    /// The current phase ended.
    fn finish(&self) {}
    /// One item of the current phase is being worked on (a session id, a file name).
    fn item(&self, _name: &str) {}
}

/// Reports nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Quiet;

impl Progress for Quiet {}
