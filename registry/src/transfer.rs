//! Watching a push or pull as it goes: for progress bars, and for tests that need to act at a
//! given point (stop a registry after the third blob).

use crate::manifest::OciDescriptor;

/// What happened to one blob.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Sent to the registry.
    Uploaded,
    /// Mounted from another repository of the same registry: nothing sent.
    Mounted,
    /// Already where it was going (in the registry for a push, locally for a pull).
    Present,
    /// Fetched from the registry.
    Downloaded,
}

/// Receives the progress of a transfer. Every method has a no-op default. Called from worker
/// threads, so implementations must be `Sync`.
pub trait Observer: Send + Sync {
    /// The work is known: `blobs` distinct blobs of `bytes` bytes in all.
    fn plan(&self, _blobs: u64, _bytes: u64) {}
    /// `n` more of those bytes are done (moved, or found already there).
    fn bytes(&self, _n: u64) {}
    /// One blob is done, and how.
    fn blob(&self, _blob: &OciDescriptor, _outcome: Outcome) {}
    /// Every blob is done; the destination is being written (a pull's commit, which for a
    /// bundle means writing and checking the zip).
    fn committing(&self) {}
}

/// Observes nothing.
#[derive(Debug, Default, Clone, Copy)]
pub struct Silent;

impl Observer for Silent {}

/// A reader that tells an observer how many bytes passed.
pub(crate) struct Counting<'a, R> {
    pub inner: R,
    pub observer: &'a dyn Observer,
}

impl<R: std::io::Read> std::io::Read for Counting<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n > 0 {
            self.observer.bytes(n as u64);
        }
        Ok(n)
    }
}
