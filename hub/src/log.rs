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
            line(format_args!("asp hub: {}", message()));
        }
    }

    /// Something the owner should know about (an answer that could not be delivered, a
    /// converter's diagnostics).
    pub(crate) fn warn(&self, message: impl AsRef<str>) {
        line(format_args!("asp hub: {}", message.as_ref()));
    }
}

/// Writes one line to stderr. A line that cannot be written (the client closed the hub's
/// stderr) is dropped: the hub goes on serving the protocol on stdout, where `eprintln!` would
/// panic the task that logged and with it the session.
pub(crate) fn line(args: std::fmt::Arguments<'_>) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "{args}");
}
