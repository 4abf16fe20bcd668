//! A progress bar on stderr, hidden when stderr is not a terminal (indicatif checks) or with
//! `--quiet`.

use std::time::Duration;

use asp_format::progress::Progress;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// The bar every command draws its long work on.
#[derive(Debug, Clone)]
pub struct Bar {
    bar: ProgressBar,
}

impl Bar {
    pub fn new(quiet: bool) -> Self {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            // A spinner until the first step names itself: indicatif's own style (a bar of
            // raw counts, `0/0`) flashed before it (new-user trial helper-137, 10).
            b.set_style(
                ProgressStyle::with_template("{spinner} {prefix} {wide_msg}")
                    .expect("valid template"),
            );
            b.enable_steady_tick(Duration::from_millis(120));
            b
        };
        Bar { bar }
    }

    /// Prints a line above the bar (or plainly when it is hidden), on stderr.
    pub fn println(&self, line: impl AsRef<str>) {
        if self.bar.is_hidden() {
            crate::errln!("{}", line.as_ref());
        } else {
            self.bar.suspend(|| crate::errln!("{}", line.as_ref()));
        }
    }

    pub fn clear(&self) {
        self.bar.finish_and_clear();
    }
}

impl Progress for Bar {
    fn begin(&self, what: &str, total: Option<u64>) {
        // The style first, then the counts: a tick between them draws the old step's counts
        // in the new style for an instant, never the new counts in indicatif's own.
        match total {
            Some(_) => {
                self.bar.set_style(
                    ProgressStyle::with_template(
                        "{spinner} {prefix} [{bar:30}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {wide_msg}",
                    )
                    .expect("valid template")
                    .progress_chars("=> "),
                );
            }
            None => {
                self.bar.set_style(
                    ProgressStyle::with_template("{spinner} {prefix} {binary_bytes} {wide_msg}")
                        .expect("valid template"),
                );
            }
        }
        self.bar.set_prefix(what.to_owned());
        self.bar.set_message("");
        self.bar.reset();
        match total {
            Some(t) => self.bar.set_length(t),
            None => self.bar.unset_length(),
        }
    }

    fn advance(&self, n: u64) {
        self.bar.inc(n);
    }

    fn item(&self, name: &str) {
        self.bar.set_message(name.to_owned());
    }

    fn finish(&self) {
        self.bar.set_message("");
    }
}

/// Progress of a push or pull: bytes (moved, or found already there) and blobs, on stderr,
/// hidden when stderr is not a terminal or with `--quiet`.
#[derive(Debug)]
pub struct TransferBar {
    bar: ProgressBar,
    blobs: std::sync::atomic::AtomicU64,
    total_blobs: std::sync::atomic::AtomicU64,
}

impl TransferBar {
    pub fn new(quiet: bool, what: &str) -> Self {
        let bar = if quiet {
            ProgressBar::hidden()
        } else {
            ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr())
        };
        bar.set_style(
            ProgressStyle::with_template(
                "{prefix} [{bar:30}] {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {msg}",
            )
            .expect("valid template")
            .progress_chars("=> "),
        );
        bar.set_prefix(what.to_owned());
        bar.enable_steady_tick(Duration::from_millis(120));
        TransferBar {
            bar,
            blobs: Default::default(),
            total_blobs: Default::default(),
        }
    }

    /// Prints a line above the bar (or plainly when it is hidden), on stderr.
    pub fn println(&self, line: impl AsRef<str>) {
        if self.bar.is_hidden() {
            crate::errln!("{}", line.as_ref());
        } else {
            self.bar.suspend(|| crate::errln!("{}", line.as_ref()));
        }
    }

    pub fn clear(&self) {
        self.bar.finish_and_clear();
    }

    /// What the bar says it is doing before the transfer starts (empty: nothing).
    pub fn status(&self, what: String) {
        self.bar.set_message(what);
    }

    fn message(&self) {
        use std::sync::atomic::Ordering;
        self.bar.set_message(format!(
            "{}/{} blobs",
            self.blobs.load(Ordering::Relaxed),
            self.total_blobs.load(Ordering::Relaxed)
        ));
    }
}

impl asp_registry::Observer for TransferBar {
    fn plan(&self, blobs: u64, bytes: u64) {
        self.total_blobs
            .store(blobs, std::sync::atomic::Ordering::Relaxed);
        self.bar.set_length(bytes);
        self.message();
    }

    fn bytes(&self, n: u64) {
        self.bar.inc(n);
    }

    fn blob(
        &self,
        _blob: &asp_registry::manifest::OciDescriptor,
        _outcome: asp_registry::transfer::Outcome,
    ) {
        self.blobs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.message();
    }

    fn committing(&self) {
        self.message();
        self.bar
            .set_message(format!("{}, writing and checking", self.bar.message()));
    }
}
