//! The one trait every harness converter implements, and what it is handed.

use std::path::{Path, PathBuf};

use asp_format::KindSet;
use asp_format::answer::ImportAnswer;
use asp_format::blob::{BlobError, BlobSink, BlobSource, Discard};
use asp_format::name::HarnessName;
use asp_format::progress::Progress;
use asp_format::state::{KindCounts, State};

use crate::pathmap::PathMap;
use crate::report::Diagnostics;

/// Where a harness's store is: a user's home directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Home {
    /// The home directory (the one holding `.claude/`, `.codex/`, `.gemini/`, `.agents/`).
    pub dir: PathBuf,
    /// True when the user named the directory (`--home`). Converters honour their harness's
    /// own environment overrides (`CODEX_HOME`, `CLAUDE_CONFIG_DIR`, ...) only when it is not.
    pub explicit: bool,
}

impl Home {
    /// A home the user named.
    pub fn at(dir: impl Into<PathBuf>) -> Self {
        Home {
            dir: dir.into(),
            explicit: true,
        }
    }

    /// The given directory, else the current user's home (`HOME`, or `USERPROFILE` on
    /// Windows).
    pub fn resolve(dir: Option<PathBuf>) -> Result<Self, ConvertError> {
        if let Some(dir) = dir {
            return Ok(Home::at(dir));
        }
        let var = if cfg!(windows) { "USERPROFILE" } else { "HOME" };
        match std::env::var_os(var) {
            Some(h) if !h.is_empty() => Ok(Home {
                dir: PathBuf::from(h),
                explicit: false,
            }),
            _ => Err(ConvertError::NoHome),
        }
    }

    /// `dir/rel`.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.dir.join(rel)
    }
}

/// What a converter can read from and write into its native store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Kinds `read` can give.
    pub export: KindSet,
    /// Kinds `write` can take.
    pub import: KindSet,
}

/// Options of a read.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// Blank MCP env values and header values, listing what was blanked under
    /// `_meta.asp.redacted` of each server.
    pub redact_secrets: bool,
    /// Carry each session's native files (`Session::native`). A bundle wants them, for
    /// byte-exact restores; the export form drops them, so an export should not read them.
    pub native: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            redact_secrets: false,
            native: true,
        }
    }
}

/// Everything a read is handed.
#[derive(Clone, Copy)]
pub struct ReadContext<'a> {
    pub home: &'a Home,
    /// Kinds to read. A kind outside this set must be left `None` in the result.
    pub kinds: KindSet,
    /// Where bodies go. Sessions must be streamed into it, never collected in memory.
    pub blobs: &'a dyn BlobSink,
    /// Damage and oddities found, with file and line.
    pub diagnostics: &'a Diagnostics,
    pub progress: &'a dyn Progress,
    pub options: ReadOptions,
}

/// Options of a write.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// Work out and answer everything, write nothing.
    pub dry_run: bool,
    /// Path rewrites already applied to the state (session cwd, paths in updates, native JSON
    /// files). Converters whose native file *locations* derive from a path (Claude Code's
    /// project directory from the cwd) must derive them from the mapped `cwd`, not from the
    /// native file's recorded path; the map is here to do that.
    pub path_map: PathMap,
}

/// Everything a write is handed.
#[derive(Clone, Copy)]
pub struct WriteContext<'a> {
    pub home: &'a Home,
    pub state: &'a State,
    pub blobs: &'a dyn BlobSource,
    pub diagnostics: &'a Diagnostics,
    pub progress: &'a dyn Progress,
    pub options: &'a WriteOptions,
}

/// A converter between one harness's native store and the portable state.
///
/// Reading streams: each session's updates go into [`ReadContext::blobs`] as they are
/// converted, so memory stays flat however large the store is. Damage in the store (a
/// truncated line, a record that is not JSON) is reported through
/// [`ReadContext::diagnostics`] with its file and line and does not abort the read.
///
/// Writing never loses or overwrites the user's data: every file is written atomically, an
/// existing session is never clobbered (same content: "already there"; different content: kept
/// beside it as `<thread>~<harness>`), and what cannot be taken is answered in `notTaken` with
/// a reason a person understands.
pub trait Harness: Send + Sync {
    /// The harness's name, as it appears in a session's `harness` and in `<thread>~<harness>`.
    fn name(&self) -> HarnessName;

    /// Kinds this converter reads and writes.
    fn capabilities(&self) -> Capabilities;

    /// Reads the native store under `ctx.home` into the portable state.
    fn read(&self, ctx: &ReadContext<'_>) -> Result<State, ConvertError>;

    /// Writes `ctx.state` into the native store under `ctx.home` and says what was taken.
    fn write(&self, ctx: &WriteContext<'_>) -> Result<ImportAnswer, ConvertError>;

    /// Counts of each kind the store holds now, as `_asp/state/describe` answers. The default
    /// reads everything and throws the bodies away; override when counting is cheaper.
    fn describe(
        &self,
        home: &Home,
        kinds: KindSet,
        progress: &dyn Progress,
    ) -> Result<KindCounts, ConvertError> {
        let diagnostics = Diagnostics::new();
        let state = self.read(&ReadContext {
            home,
            kinds,
            blobs: &Discard,
            diagnostics: &diagnostics,
            progress,
            // Counting needs no native files.
            options: ReadOptions {
                native: false,
                ..ReadOptions::default()
            },
        })?;
        Ok(state.counts())
    }
}

/// Errors that stop a conversion. Damage that only costs an item is a diagnostic instead.
#[derive(Debug, thiserror::Error)]
pub enum ConvertError {
    #[error("no home directory: set HOME or pass --home")]
    NoHome,
    #[error("{}: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{}: {message}", .path.display())]
    Invalid { path: PathBuf, message: String },
    #[error(transparent)]
    Blob(#[from] BlobError),
    #[error("{0}")]
    Other(String),
}

impl ConvertError {
    pub fn io(path: impl Into<PathBuf>) -> impl FnOnce(std::io::Error) -> ConvertError {
        let path = path.into();
        move |source| ConvertError::Io { path, source }
    }

    pub fn invalid(path: impl Into<PathBuf>, message: impl Into<String>) -> ConvertError {
        ConvertError::Invalid {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Debug for ReadContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadContext")
            .field("home", self.home)
            .field("kinds", &self.kinds)
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for WriteContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteContext")
            .field("home", self.home)
            .field("kinds", &self.state.kinds())
            .field("options", self.options)
            .finish_non_exhaustive()
    }
}
