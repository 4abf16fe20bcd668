//! The plumbing every harness converter implements, and what it is handed.
//!
//! Callers do not use this trait directly: [`crate::store::Store`] (the porcelain) owns the
//! contract around it (the kinds asked for, which sessions, threads, normalising, dry runs,
//! the import answer), so a converter only reads and writes its own store.

use std::any::Any;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use asp_format::KindSet;
use asp_format::answer::ImportAnswer;
use asp_format::blob::{BlobSink, BlobSource};
use asp_format::digest::{Descriptor, Digest, Hasher};
use asp_format::name::{HarnessName, SessionId};
use asp_format::progress::Progress;
use asp_format::state::{Meta, Native, Session, State};

use crate::error::ConvertError;
use crate::kit::fsops::Writer;
use crate::kit::pathmap::PathMap;
use crate::kit::report::Diagnostics;
use crate::kit::source::SourceFile;

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

    /// [`Home::resolve`] for a command that writes into the home (unpack, restore): a named
    /// directory must exist, as for one read from (a missing harness folder in it is fine: a
    /// fresh machine has none), so that `--home /home/dve` is an error rather than a new tree.
    pub fn resolve_to_write(dir: Option<PathBuf>) -> Result<Self, ConvertError> {
        let home = Home::resolve(dir)?;
        if home.explicit && !home.dir.is_dir() {
            return Err(ConvertError::NoSuchHome(home.dir));
        }
        Ok(home)
    }

    /// The directory as an absolute path (against the current directory, symlinks kept), for
    /// what a harness stores and reads from anywhere: a working directory written for a
    /// session that names none, Codex's `rollout_path`. `--home h` is shown as given.
    pub fn absolute_dir(&self) -> PathBuf {
        absolute(&self.dir)
    }

    /// `dir/rel`.
    pub fn join(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.dir.join(rel)
    }
}

/// `path` made absolute against the current directory (symlinks kept; as it is when the
/// current directory cannot be read).
pub fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// What a converter can read from and write into its native store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// Kinds a read can give.
    pub export: KindSet,
    /// Kinds a write can take.
    pub import: KindSet,
}

/// Options of a read.
#[derive(Debug, Clone, Copy)]
pub struct ReadOptions {
    /// Blank MCP env values and header values, listing what was blanked under
    /// `_meta.asp.redacted` of each server.
    pub redact_secrets: bool,
    /// Carry each session's native files (`Session::native`). A bundle wants them, for
    /// byte-exact restores; the export form drops them, so an export must not read them.
    pub native: bool,
    /// The read is a backup's, which keeps the harness's configuration files beside the state
    /// (`asp backup`): what they hold and the state cannot is noted as kept, not left out.
    pub configuration_kept: bool,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions {
            redact_secrets: false,
            native: true,
            configuration_kept: false,
        }
    }
}

/// Everything a survey is handed.
#[derive(Clone, Copy)]
pub struct SurveyContext<'a> {
    pub home: &'a Home,
    /// Oddities found while listing (a file named like a session that is not one).
    pub diagnostics: &'a Diagnostics,
}

/// The sessions of a store, as a survey lists them: nothing of their content.
#[derive(Debug, Default)]
pub struct Survey {
    /// One entry per session (with the subagent sessions read together with it).
    pub sessions: Vec<Surveyed>,
    /// Whether the store gives the sessions kind at all. A state directory without
    /// `sessions/` does not; [`Survey::of`] does.
    pub given: bool,
}

/// The version of what the readers make of a store, part of every [`Surveyed::facts`]: raised
/// whenever a reader gives a session differently from unchanged files (a stream's updates or
/// their `messageId`s, a title, a note), so the next backup reads every session again rather
/// than carrying the stream an older build made (unchanged layers are stored once all the
/// same). 2: Pi and Copilot CLI chunks name their message; Claude Code reads bytes that are
/// not UTF-8 as U+FFFD. 3: Claude Code says a transcript that holds no conversation. 4: Claude
/// Code records where a title comes from (`_meta.claudeCode.titleSource`).
pub const READ_VERSION: u32 = 4;

/// One session of a store, as a survey found it.
///
/// Reading it ([`Harness::read_session`]) depends on exactly [`Surveyed::files`] and
/// [`Surveyed::facts`]: when both are unchanged, so is what the read gives. That is what lets a
/// backup reuse a session it read before without reading it again.
pub struct Surveyed {
    /// The session's id, as its harness names it.
    pub id: SessionId,
    /// The session this one is a subagent of, when that parent is a survey entry of its own
    /// (selecting the parent selects it too).
    pub parent: Option<SessionId>,
    /// The subagent sessions its read gives besides its own, where the harness reads them
    /// with it (Claude Code, Gemini CLI, Qwen Code): `--session` may name one of them, as it
    /// may name a subagent that is an entry of its own.
    pub subagents: Vec<SessionId>,
    /// Every file the read depends on, in the order the read takes them.
    pub files: Vec<SourceFile>,
    /// The digest of everything else the read takes from the store (an index's naming of the
    /// thread, a database row, the ids of its siblings).
    pub facts: Digest,
    plan: Arc<dyn Any + Send + Sync>,
}

impl std::fmt::Debug for Surveyed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Surveyed")
            .field("id", &self.id)
            .field("parent", &self.parent)
            .field("subagents", &self.subagents)
            .field("files", &self.files)
            .field("facts", &self.facts)
            .finish_non_exhaustive()
    }
}

impl Surveyed {
    /// An entry whose read needs `plan` (the converter's own, opaque to everyone else).
    /// `facts` are the bytes, in a fixed form, of whatever the plan holds besides `files`.
    pub fn new<P: Any + Send + Sync>(
        id: SessionId,
        files: Vec<SourceFile>,
        facts: &[u8],
        plan: P,
    ) -> Self {
        let mut h = Hasher::new();
        h.update(&READ_VERSION.to_be_bytes());
        h.update(facts);
        Surveyed {
            id,
            parent: None,
            subagents: Vec::new(),
            files,
            facts: h.finish().digest,
            plan: Arc::new(plan),
        }
    }

    /// The bytes of its files, as the survey found them (what reading it goes through, for
    /// progress).
    pub fn size(&self) -> u64 {
        self.files.iter().map(|f| f.size).sum()
    }

    #[must_use]
    pub fn with_parent(mut self, parent: Option<SessionId>) -> Self {
        self.parent = parent;
        self
    }

    /// The entry, naming the subagent sessions its read gives besides its own.
    #[must_use]
    pub fn with_subagents(mut self, subagents: Vec<SessionId>) -> Self {
        self.subagents = subagents;
        self
    }

    /// The converter's plan for reading this entry. Panics when `P` is not the type the
    /// converter surveyed with: that is a bug of the converter, never of the input.
    pub fn plan<P: Any>(&self) -> &P {
        self.plan
            .downcast_ref::<P>()
            .expect("a survey entry read by the converter that surveyed it")
    }
}

impl Survey {
    /// A survey of these sessions.
    pub fn of(sessions: Vec<Surveyed>) -> Self {
        Survey {
            sessions,
            given: true,
        }
    }

    /// The entries for the sessions named in `ids`, with every entry that is a subagent of one
    /// of them (transitively), in survey order. An id may name a subagent session read with
    /// its parent's entry ([`Surveyed::subagents`]): that entry is taken for it, and of what
    /// its read gives only that subagent and its own subagents are kept
    /// ([`Selection::keep`]), as a bundle gives a subagent named alone. An id the survey does
    /// not have is an error, which names `lists`, the command that lists the store's sessions.
    pub fn select(&self, ids: &[SessionId], lists: &str) -> Result<Selection<'_>, ConvertError> {
        let entry = |id: &SessionId| self.sessions.iter().any(|s| &s.id == id);
        // The entry each id that is not one of its own is read with.
        let held: Vec<(&SessionId, Option<usize>)> = ids
            .iter()
            .filter(|id| !entry(id))
            .map(|id| {
                (
                    id,
                    self.sessions.iter().position(|s| s.subagents.contains(id)),
                )
            })
            .collect();
        let missing: Vec<&str> = held
            .iter()
            .filter(|(_, at)| at.is_none())
            .map(|(id, _)| id.as_str())
            .collect();
        if !missing.is_empty() {
            let known = || {
                self.sessions
                    .iter()
                    .flat_map(|s| std::iter::once(&s.id).chain(&s.subagents))
            };
            // Subagents read with their parent's entry count too, as `asp-pack` counts them
            // (it said "4 sessions" of a home it packed as 5: a new user's trial).
            let count = known().collect::<std::collections::BTreeSet<_>>().len();
            return Err(ConvertError::Usage(format!(
                "no session {} among its {count} sessions (`{lists}` lists them){}",
                missing.join(", "),
                asp_format::state::whole_ids_hint(&missing, known().map(SessionId::as_str))
            )));
        }
        let mut chosen: Vec<bool> = self.sessions.iter().map(|s| ids.contains(&s.id)).collect();
        loop {
            let mut grew = false;
            for (i, s) in self.sessions.iter().enumerate() {
                if chosen[i] {
                    continue;
                }
                let parent_chosen = s.parent.as_ref().is_some_and(|p| {
                    self.sessions
                        .iter()
                        .zip(&chosen)
                        .any(|(o, c)| *c && &o.id == p)
                });
                if parent_chosen {
                    chosen[i] = true;
                    grew = true;
                }
            }
            if !grew {
                break;
            }
        }
        // An entry taken for itself gives all its read gives; one taken only for a subagent
        // read with it, that subagent.
        let partial: Vec<bool> = (0..self.sessions.len())
            .map(|i| !chosen[i] && held.iter().any(|(_, at)| *at == Some(i)))
            .collect();
        let mut selection = Selection {
            entries: Vec::new(),
            partial: std::collections::HashSet::new(),
            ids: ids.iter().map(SessionId::to_string).collect(),
        };
        for (i, s) in self.sessions.iter().enumerate() {
            if chosen[i] || partial[i] {
                selection.entries.push(s);
            }
            if partial[i] {
                selection.partial.insert(s.id.clone());
            }
        }
        Ok(selection)
    }

    /// Every entry, each for all its read gives.
    pub fn all(&self) -> Selection<'_> {
        Selection {
            entries: self.sessions.iter().collect(),
            partial: std::collections::HashSet::new(),
            ids: Vec::new(),
        }
    }
}

/// The survey entries a read takes ([`Survey::select`], [`Survey::all`]).
#[derive(Debug)]
pub struct Selection<'a> {
    /// The entries to read, in survey order.
    pub entries: Vec<&'a Surveyed>,
    /// The entries taken only for a subagent session read with them.
    partial: std::collections::HashSet<SessionId>,
    /// The session ids named.
    ids: Vec<String>,
}

impl Selection<'_> {
    /// Of the sessions `entry`'s read gave, the ones asked for: all of them, unless the entry
    /// was taken only for a subagent session read with it; then that subagent and its own
    /// subagents, picked as a bundle's state picks them (`asp_format::state::kept_sessions`),
    /// so `asp-pack --session` takes a subagent as `asp export` and `asp-unpack` do.
    pub fn keep(&self, entry: &Surveyed, mut sessions: Vec<Session>) -> Vec<Session> {
        if self.partial.contains(&entry.id) {
            let (kept, _) = asp_format::state::kept_sessions(&sessions, &self.ids);
            sessions.retain(|s| kept.contains(s.id.as_str()));
        }
        sessions
    }
}

/// Everything the read of one surveyed session is handed. Reads of different sessions run at
/// the same time, each with its own context.
#[derive(Clone, Copy)]
pub struct SessionContext<'a> {
    pub home: &'a Home,
    /// Where bodies go. Updates must be streamed into it, never collected in memory.
    pub blobs: &'a dyn BlobSink,
    /// Damage and oddities found in this session's files, with file and line.
    pub diagnostics: &'a Diagnostics,
    pub progress: &'a dyn Progress,
    pub options: ReadOptions,
}

/// Everything a read of the kinds other than sessions is handed.
#[derive(Clone, Copy)]
pub struct ReadContext<'a> {
    pub home: &'a Home,
    /// Kinds to read (never sessions). A kind outside this set must be left `None`.
    pub kinds: KindSet,
    pub blobs: &'a dyn BlobSink,
    pub diagnostics: &'a Diagnostics,
    pub progress: &'a dyn Progress,
    pub options: ReadOptions,
}

/// Options of a write.
#[derive(Debug, Clone, Default)]
pub struct WriteOptions {
    /// Path rewrites already applied to the state (session cwd, paths in updates, native JSON
    /// files). Converters whose native file *locations* derive from a path (Claude Code's
    /// project directory from the cwd) must derive them from the mapped `cwd`, not from the
    /// native file's recorded path; the map is here to do that.
    pub path_map: PathMap,
    /// The state is this harness's own backup written back (`asp restore` into the harness
    /// the snapshot is of), so each file goes where the backed-up home had it: an instructions
    /// file there that holds other instructions is the person's newer version, kept as it is
    /// with the backed-up one beside it, not added to
    /// ([`crate::kit::placement::DifferentInstructions`]); a skill goes back to its own folder
    /// though another folder the harness reads holds a namesake
    /// ([`crate::kit::skills::write_to_folders`]); an instructions file the harness reads in
    /// place of another is written where absent
    /// ([`crate::kit::instructions_file::write_unless_read_instead`]).
    pub restoring: bool,
}

impl WriteOptions {
    /// What a write does with an instructions file there that holds other instructions.
    pub fn different_instructions(&self) -> crate::kit::placement::DifferentInstructions {
        use crate::kit::placement::DifferentInstructions;
        if self.restoring {
            DifferentInstructions::KeepBeside
        } else {
            DifferentInstructions::AddAfter
        }
    }
}

/// Everything a write is handed.
#[derive(Clone, Copy)]
pub struct WriteContext<'a> {
    pub home: &'a Home,
    /// The state to write: only kinds the converter imports, valid and in canonical order.
    pub state: &'a State,
    pub blobs: &'a dyn BlobSource,
    /// Every change goes through it. In a dry run it checks everything and changes nothing, so
    /// a converter answers a dry run exactly as the real run by doing the same calls.
    pub writer: &'a Writer,
    pub diagnostics: &'a Diagnostics,
    pub progress: &'a dyn Progress,
    pub options: &'a WriteOptions,
}

/// A converter between one harness's native store and the portable state.
///
/// Reading has two steps, so sessions can be read one at a time, on several threads, and only
/// the ones asked for: [`Harness::survey`] lists the sessions without reading any conversation
/// (file names, stat records, one header line at most), and [`Harness::read_session`] reads
/// one surveyed session, streaming its updates into the blob sink. The other kinds are read by
/// [`Harness::read_kinds`].
///
/// Damage in the store (a truncated line, a record that is not JSON) is reported through the
/// context's diagnostics with its file and line and does not abort the read; an error return
/// is for what stops the whole read (the blob store failing).
///
/// Writing never loses or overwrites the user's data: every file is written atomically through
/// [`WriteContext::writer`], an existing session is never clobbered (same content: already
/// there; different content: kept beside it under [`crate::kit::beside::kept_beside`]'s name),
/// and what cannot be taken is answered in `notTaken` with a reason a person understands
/// ([`crate::kit::placement::Tally`]).
///
/// A harness's own configuration (its settings file, rules, agents, commands) travels as a
/// native layer restored only into the same harness: [`Harness::config_files`] names it, with
/// a default that names nothing, and the porcelain reads and restores it whole
/// (`kit::config`), so converters that have none need no change.
pub trait Harness: Send + Sync {
    /// The harness's name, as it appears in a session's `harness` and in `<thread>~<harness>`.
    fn name(&self) -> HarnessName;

    /// Kinds this converter reads and writes.
    fn capabilities(&self) -> Capabilities;

    /// Where this harness keeps its store under `home` (honouring the same environment
    /// overrides as the reads): the home holds a store when any one of them exists. A read of a
    /// home that holds none is an error naming these paths, never an empty "successful"
    /// backup (a typo in `--home`, a cron job whose `HOME` is not the user's).
    fn store_paths(&self, home: &Home) -> Vec<PathBuf>;

    /// The models and modes this harness accepts as session settings
    /// ([`crate::kit::accepted`]): its writes never set another value.
    fn accepts(&self) -> &'static crate::kit::accepted::Accepts;

    /// The command a person types to continue session `id` (its id in this harness) in this
    /// harness, as the harness spells it for the version its spec pins; `cwd` is the session's
    /// working directory, for harnesses that find sessions per project
    /// ([`crate::kit::resume::in_dir`]). `None` when the harness has no such command.
    fn resume_command(&self, id: &str, cwd: Option<&str>) -> Option<String>;

    /// Whether a subagent session composed from its update stream (another harness's, or this
    /// one's without its native files), written with its parent, goes under that parent as
    /// this harness keeps its own subagents (Gemini CLI's child chats, OpenCode's `parent_id`).
    /// One restored from this harness's own files is always under its parent: they hold the
    /// link. Where it does not (Claude Code and Qwen Code link only what they restore), the
    /// subagent is written as a conversation of its own, and the write says so: the link stays
    /// in the bundle and in `_meta.asp.parent`, but the harness will not show it under its
    /// parent.
    fn links_composed_subagents(&self) -> bool {
        false
    }

    /// Whether the harness keeps an archive of sessions taken out of its list without being
    /// deleted (Codex's `archived_sessions/`, Qwen Code's `chats/archive/`, OpenCode's
    /// `time_archived`). Its writer puts a session archived where it was read
    /// ([`crate::kit::archive`]) into that archive; where there is none, the session is listed
    /// with the others and the write says so.
    fn keeps_an_archive(&self) -> bool {
        false
    }

    /// Whether the harness reads an `@path` line of its instructions file as the text of that
    /// file (Claude Code's `@~/.claude/x.md`, Gemini CLI's and Qwen Code's `@file` imports).
    /// Where it does not, instructions carried with such lines are written as they are and the
    /// write names the lines: the harness sees the line, not the file's text.
    fn expands_imports(&self) -> bool {
        false
    }

    /// The environment that makes the harness use the store in `home` (a home other than the
    /// user's, named with `--home`), as the resume command sets it: the harness's own variable
    /// where it has one (`CODEX_HOME`), else `HOME`. Absolute paths.
    fn resume_env(&self, home: &Home) -> Vec<(&'static str, PathBuf)> {
        vec![("HOME", home.absolute_dir())]
    }

    /// Lists the sessions of the store under `ctx.home`, reading no conversation.
    fn survey(&self, ctx: &SurveyContext<'_>) -> Result<Survey, ConvertError>;

    /// Reads one surveyed session, and the subagent sessions that travel with it, taking from
    /// the store only what the entry names. Called at the same time for different entries.
    fn read_session(
        &self,
        ctx: &SessionContext<'_>,
        entry: &Surveyed,
    ) -> Result<Vec<Session>, ConvertError>;

    /// The transcript of a survey entry, as the survey found it: what a pack predicts its project's
    /// dictionary from (the first MiB, 512 or 256 KiB of one of the project's, spec/aspstate.md
    /// §4.1) before it reads a session, so the transcripts are compressed against it as they are
    /// read; the project is [`Harness::surveyed_project`]. Only a prediction (the state decides);
    /// the default, `None`, costs a second compression of the transcripts of a project that has a
    /// dictionary.
    fn surveyed_transcript<'a>(&self, entry: &'a Surveyed) -> Option<&'a SourceFile> {
        let _ = entry;
        None
    }

    /// The project of a survey entry's transcript, as a path: what a pack predicts the
    /// project's dictionary by (spec/aspstate.md §4.1), reads the project's sessions together
    /// by (§13.3), and gives [`BlobSink::begin_transcript`] for the transcript as it is read,
    /// so the two meet. The default: the folder of [`Harness::surveyed_transcript`]. A harness
    /// whose folders are not projects names each project by a path of its own that no file
    /// is at (Codex, whose rollouts are kept by day: one made of the thread's `cwd`).
    fn surveyed_project(&self, entry: &Surveyed) -> Option<PathBuf> {
        self.surveyed_transcript(entry)?
            .path
            .parent()
            .map(Path::to_path_buf)
    }

    /// The native transcript of a session this converter read: the body among `native`'s files
    /// its update stream was replayed from, which its read hands the blob sink as the stream's
    /// base ([`asp_format::update::UpdateWriter::derived`]; a bundle compresses the stream
    /// against it, spec/aspstate.md §4). Found from the session as the state holds it (its
    /// id, native files and `_meta`), never from the store, so the directory form, read
    /// without the store, derives the stream from the same body and packs back to the same
    /// bundle (§11). The default, for a read that gives no base: `None`.
    fn transcript(
        &self,
        id: &SessionId,
        native: &Native,
        meta: Option<&Meta>,
    ) -> Option<Descriptor> {
        let _ = (id, native, meta);
        None
    }

    /// Reads the kinds in `ctx.kinds` (never sessions) into a state whose sessions are `None`.
    fn read_kinds(&self, ctx: &ReadContext<'_>) -> Result<State, ConvertError>;

    /// Writes `ctx.state` into the native store under `ctx.home` and says what was taken.
    fn write(&self, ctx: &WriteContext<'_>) -> Result<ImportAnswer, ConvertError>;

    /// The harness's own configuration under `home`, as whole files (path relative to the
    /// home, where it is): what a backup keeps besides the kinds and restores only into the
    /// same harness, through `kit::config`. Never credentials, never caches; each converter's
    /// list is in its `spec/harnesses/<harness>.md`. None by default.
    fn config_files(&self, home: &Home) -> crate::kit::config::ConfigFiles {
        let _ = home;
        crate::kit::config::ConfigFiles::default()
    }

    /// Whether native file `path` of a session (as the state names it) can be left out while
    /// the session is still restored natively: a file beside the conversation, not one the
    /// conversation or a subagent is read from (Claude Code's rewind checkpoints, todo lists
    /// and tool results). A restore from a damaged backup leaves out such a file alone; any
    /// other damaged native file leaves out its whole session. None by default.
    fn side_file(&self, path: &str) -> bool {
        let _ = path;
        false
    }

    /// Whether the configuration file at `rel` (relative to the home, as
    /// [`Harness::config_files`] names it) is a log the harness appends to (its prompt
    /// history; Codex's thread names), and its shape: a restore merges it into one already
    /// there ([`crate::kit::appended_log`]) instead of keeping that one as it is, and the shape
    /// says whether it is private and whether `--map-path` moves the folders it names. None
    /// by default.
    fn appended_log(
        &self,
        home: &Home,
        rel: &str,
    ) -> Option<crate::kit::appended_log::AppendedLog> {
        let _ = (home, rel);
        None
    }

    /// Of the configuration files a backup's parent snapshot kept that the source no longer
    /// has (`gone`, paths relative to the home), those the harness deleted on its own schedule
    /// while what names them stays (Claude Code's pasted texts, deleted by age with the
    /// transcripts, named by the prompt history a backup keeps): a backup carries them from
    /// its parent, as it carries sessions gone from the source, for as long as they are
    /// named. None by default.
    fn config_to_carry(&self, home: &Home, gone: &[&str]) -> Vec<String> {
        let _ = (home, gone);
        Vec::new()
    }

    /// Whether the configuration file at `rel` holds what the person typed or pasted (a
    /// prompt history, a pasted text): a restore creates it readable by its owner alone
    /// (mode 0600), as the harness does. Every log [`Harness::appended_log`] says is private,
    /// by default.
    fn private_config(&self, home: &Home, rel: &str) -> bool {
        self.appended_log(home, rel).is_some_and(|l| l.private)
    }

    /// The folders a restore writes the harness's own configuration into, and nowhere else (a
    /// tampered record naming `.bashrc` is refused): its store's by default
    /// ([`Harness::store_paths`]).
    fn config_folders(&self, home: &Home) -> Vec<PathBuf> {
        self.store_paths(home)
    }

    /// The configuration files (relative to the home) that may grant something by a folder's
    /// path: Gemini CLI's `trustedFolders.json`, Codex's `config.toml` (its projects'
    /// `trust_level`). None by default.
    fn grant_files(&self, home: &Home) -> Vec<String> {
        let _ = home;
        Vec::new()
    }

    /// What configuration file `rel` (one of [`Harness::grant_files`], whose bytes are
    /// `bytes`) grants by a folder's path, and the file without it ([`crate::kit::grants`]):
    /// a restore says it when it writes the file, and writes the rest instead with `asp
    /// restore --no-grants`. `None` when it grants nothing.
    fn grants_in(&self, rel: &str, bytes: &[u8]) -> Option<crate::kit::grants::Granting> {
        let _ = (rel, bytes);
        None
    }

    /// What reads the credentials written out in configuration file `rel` (one of
    /// [`Harness::config_files`] or [`Harness::config_parts`]): a backup notes that it keeps
    /// the file's own, a push names all it sends. `None` for a file that holds none (a prompt
    /// history, Markdown), which is then not read for them. JSON files and parts by default
    /// ([`crate::kit::secrets::json_credentials_reader`]).
    fn credentials_reader(&self, rel: &str) -> Option<crate::kit::secrets::CredentialsReader> {
        crate::kit::secrets::json_credentials_reader(rel)
    }

    /// The JSON configuration files that may hold credentials written out (Pi's
    /// `models.json`, Qwen Code's `settings.json`, OpenCode's `opencode.json`), each at its
    /// path relative to the home: kept whole when it holds none (the harness's
    /// [`Harness::config_files`] asks [`CredentialedJson::whole`]), else as the part without
    /// them ([`Harness::config_parts`] asks [`CredentialedJson::part`], where the harness's
    /// layout has the file), restored as the file where there is none. The default
    /// [`Harness::config_part_names`] and [`Harness::merge_config_part`] are theirs. None by
    /// default.
    ///
    /// [`CredentialedJson::whole`]: crate::kit::credentialed_json::CredentialedJson::whole
    /// [`CredentialedJson::part`]: crate::kit::credentialed_json::CredentialedJson::part
    fn credentialed_json(&self) -> &'static [crate::kit::credentialed_json::CredentialedJson] {
        &[]
    }

    /// Parts of files that cannot be kept whole because the rest of the file holds
    /// credentials or caches (Claude Code's `.claude.json`, a
    /// [`Harness::credentialed_json`] file with keys in it): each a name, the file's path
    /// relative to the home, `#`, and which part (`.claude.json#projects.mcpServers`), with
    /// the part's bytes. Kept with [`Harness::config_files`] and merged back by
    /// [`Harness::merge_config_part`]. None by default.
    fn config_parts(&self, home: &Home) -> Vec<(String, Vec<u8>)> {
        let _ = home;
        Vec::new()
    }

    /// The names [`Harness::config_parts`] can give, whatever the home holds: what a pulled
    /// snapshot record may name besides [`Harness::config_files`]. By default the parts of
    /// [`Harness::credentialed_json`].
    fn config_part_names(&self) -> Vec<&'static str> {
        self.credentialed_json().iter().map(|g| g.part).collect()
    }

    /// The files [`Harness::config_part_names`] are parts of (relative to the home): never kept
    /// whole, whatever names them (`.claude.json` holds the account).
    fn config_part_files(&self) -> Vec<&'static str> {
        let mut files: Vec<&'static str> = self
            .config_part_names()
            .into_iter()
            .map(|p| p.split_once('#').map_or(p, |(file, _)| file))
            .collect();
        files.dedup();
        files
    }

    /// Merges a part [`Harness::config_parts`] gave back into its file, adding what is not
    /// there and changing nothing that is: what became of each item, by a name for the owner.
    /// `path_map` rewrites the paths it holds (`asp restore --map-path`); `grants` says
    /// whether what grants something by a folder's path is carried. `None` when this
    /// converter gives no part of that name. By default a [`Harness::credentialed_json`]
    /// part is written as its file where there is none.
    fn merge_config_part(
        &self,
        home: &Home,
        name: &str,
        bytes: &[u8],
        path_map: &PathMap,
        grants: crate::kit::placement::Grants,
        writer: &Writer,
    ) -> Option<Result<Vec<(String, crate::kit::placement::Placement)>, ConvertError>> {
        let _ = (path_map, grants);
        self.credentialed_json()
            .iter()
            .find_map(|g| g.restore(&home.dir, name, bytes, writer))
    }
}

impl std::fmt::Debug for SurveyContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SurveyContext")
            .field("home", self.home)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for SessionContext<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionContext")
            .field("home", self.home)
            .field("options", &self.options)
            .finish_non_exhaustive()
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
            .field("dry_run", &self.writer.is_dry_run())
            .field("options", self.options)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same files and facts surveyed by a build whose readers give sessions differently
    /// are not "unchanged" to a backup: the readers' version is part of the facts' digest.
    #[test]
    fn the_readers_version_is_part_of_the_facts() {
        let id = SessionId::new("s").unwrap();
        let surveyed = Surveyed::new(id, Vec::new(), b"facts", ());
        let mut h = Hasher::new();
        h.update(b"facts");
        assert_ne!(surveyed.facts, h.finish().digest);
        let mut h = Hasher::new();
        h.update(&READ_VERSION.to_be_bytes());
        h.update(b"facts");
        assert_eq!(surveyed.facts, h.finish().digest);
    }
}
