//! The command-line faces of `asp`: `asp-pack`, `asp-unpack` and `asp`.
//!
//! Thin on purpose: argument parsing, progress, output and exit codes live here; everything
//! else is a call into `asp-format`, the stores of `asp-convert`, `asp-hub` and `asp-registry`.
//! The argument structs are defined once and shared, so `asp pack` and `asp-pack` cannot drift apart.

pub mod args;
pub mod backup;
pub mod check;
pub mod exit;
pub mod export;
pub mod forget;
pub mod hub;
pub mod human;
pub mod imported;
pub mod inspect;
pub mod mapped;
pub mod memory;
pub mod pack;
pub mod progress;
pub mod prune;
pub mod registry;
pub mod restore;
pub mod salvage;
pub mod sessions;
pub mod snapshots;
pub mod stdio;
pub mod stop;
pub mod unpack;
pub mod verify;

use std::process::ExitCode;

pub use exit::Exit;

/// What `aspstate-layout` says wrote a bundle: `asp pack` and `asp pull -o` say the same, so a
/// bundle pulled by the asp that packed it is byte for byte the bundle that was pushed.
pub fn generator() -> String {
    format!("asp {}", env!("CARGO_PKG_VERSION"))
}

/// `println!` that returns an error instead of panicking when standard output is closed
/// (`asp inspect B | head -1`), for `?` in a command.
#[macro_export]
macro_rules! outln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        $crate::stdout_used();
        writeln!(std::io::stdout().lock(), $($arg)*).map_err($crate::stdout_failure)?
    }};
}

/// Whether anything was written to standard output: [`finish`] puts a `--json` error there
/// only when nothing else is (a half-written document or bundle followed by an error object
/// would be neither).
static STDOUT_USED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Notes that standard output is being written to; every writer of it calls this first.
pub fn stdout_used() {
    STDOUT_USED.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// A write to standard output that failed, as [`outln!`] and [`Lines`] give it ([`finish`]
/// ends a closed pipe quietly).
pub fn stdout_failure(e: std::io::Error) -> exit::Failure {
    exit::Failure::store(e).context("cannot write to standard output")
}

/// Standard output for a command that goes on after its reader went away: a command that
/// writes into several stores one after the other (`asp restore --to all`) says what it did
/// after each, and stopping at the first line that cannot be written would leave the stores
/// after it unwritten, with nothing said (new-user trial helper-124, 3: `| head -1` restored
/// one harness of seven). Once a line cannot be written, the rest are dropped, and
/// [`Lines::finish`] gives the exit a closed output gives ([`finish`]: 141), unless the work
/// itself exits worse.
#[derive(Debug, Default)]
pub struct Lines {
    gone: std::cell::Cell<bool>,
}

impl Lines {
    pub fn line(&self, text: impl std::fmt::Display) -> exit::Result<()> {
        use std::io::Write as _;
        if self.gone.get() {
            return Ok(());
        }
        stdout_used();
        match writeln!(std::io::stdout().lock(), "{text}") {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {
                self.gone.set(true);
                Ok(())
            }
            Err(e) => Err(stdout_failure(e)),
        }
    }

    /// `exit`, or the closed output's broken pipe when the work did all it was asked.
    pub fn finish(&self, exit: Exit) -> exit::Result<Exit> {
        if self.gone.get() && exit == Exit::Ok {
            return Err(stdout_failure(std::io::ErrorKind::BrokenPipe.into()));
        }
        Ok(exit)
    }
}

/// `eprintln!` that never panics: a message that cannot be written to standard error (its
/// reader went away: `asp backup 2>&1 | head -1`) is dropped and the command goes on, so a
/// backup or restore is never cut short half way by where its messages go. What it did still
/// shows in its exit code.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

/// What `--json` gives for a failure: `{"error": {"message", "class", "exit"}}`.
fn error_document(message: &str, class: asp_format::error::ErrorClass) -> serde_json::Value {
    serde_json::json!({"error": {
        "message": message,
        "class": class.name(),
        "exit": Exit::from(class) as u8,
    }})
}

/// The arguments, parsed as clap parses them; when they are wrong and `--json` is among them,
/// the usage error is also put on stdout as [`finish`] puts every other failure there (it
/// printed only clap's text on stderr: re-trial helper-139, 4). `--help` and `--version` are
/// not errors.
pub fn parse_args<T: clap::Parser>() -> T {
    match T::try_parse() {
        Ok(args) => args,
        Err(e) => {
            if e.use_stderr() && std::env::args_os().any(|a| a == "--json") {
                // Its first paragraph: the error, and what it names on the lines after it
                // (the arguments not given: review helper-140, 5).
                let text = e.render().to_string();
                let message = text
                    .lines()
                    .take_while(|l| !l.trim().is_empty())
                    .map(|l| l.trim().trim_start_matches("error: "))
                    .collect::<Vec<_>>()
                    .join(" ");
                let doc = error_document(&message, asp_format::error::ErrorClass::Usage);
                use std::io::Write as _;
                let _ = writeln!(std::io::stdout().lock(), "{doc}");
            }
            e.exit()
        }
    }
}

/// Runs a command and turns its outcome into an exit code, printing the error (with its
/// causes) on stderr. The code is the error's class ([`exit::Failure`]). A closed standard
/// output (the reader of a pipe went away) ends the command quietly, with the status a shell
/// shows for a process ended by SIGPIPE (141).
///
/// With `json` (the command's `--json`), the error is also put on standard output as the one
/// document a script reads there, `{"error": {"message", "class", "exit"}}`: a script that
/// parses stdout gets an answer on failure too, not an empty string (new-user trial
/// helper-131, 8). When the command had already written to stdout (a bundle with `-o -`), the
/// document goes to stderr, after the message.
pub fn finish(program: &str, json: bool, result: exit::Result<Exit>) -> ExitCode {
    // Told to stop: the signal's thread is removing the temporaries and ends the process by
    // the signal; what failed meanwhile (a temporary removed under a writer) is not the
    // command's outcome, and must not end the process first (review helper-138, 8).
    asp_format::on_stop::wait_if_stopping();
    match result {
        Ok(code) => code.into(),
        Err(err) if err.is_broken_pipe() => ExitCode::from(141),
        Err(err) => {
            errln!("{program}: error: {err}");
            let exit = err.exit();
            if json {
                let doc = error_document(&err.to_string(), err.class);
                // Nothing to do when even this cannot be written: stderr has the message.
                // Standard output holding something else already (a bundle going out with
                // `-o -`, whose result goes to stderr too), it goes to stderr.
                use std::io::Write as _;
                let _ = match STDOUT_USED.load(std::sync::atomic::Ordering::Relaxed) {
                    false => writeln!(std::io::stdout().lock(), "{doc}"),
                    true => writeln!(std::io::stderr().lock(), "{doc}"),
                };
            }
            exit.into()
        }
    }
}
