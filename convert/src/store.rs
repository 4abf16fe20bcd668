//! The porcelain: a store of agent state (a harness's native store, or a state directory), read
//! and written under the contract every caller relies on.
//!
//! Pack, unpack, the hub, the scripted agent and the tests all go through [`Store`]; none of
//! them calls a [`Harness`] directly. What it owns, once for every harness:
//!
//! - **the kinds asked for**: a read gives exactly the kinds asked for that the store has; a
//!   write takes only the kinds asked for, and answers every kind the converter does not import
//!   as `notTaken`;
//! - **which sessions**: all, or the ones named (with their subagents), and no other session's
//!   content is read;
//! - **threads**: sessions are read on every core, and the state (so the bundle) does not depend
//!   on how many; diagnostics come out in survey order;
//! - **the canonical form**: what a read gives is normalised and valid;
//! - **dry runs**: the converter writes through a [`Writer`] that checks everything and changes
//!   nothing, so a dry run answers exactly like the real run.
//!
//! The harness's own configuration (issue 13's native layer) will be read and restored here
//! too, beside the kinds, for same-harness restores only.

use std::collections::{BTreeMap, BTreeSet};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use asp_format::answer::ImportAnswer;
use asp_format::blob::{BlobSink, BlobSource, Discard};
use asp_format::digest::Digest;
use asp_format::name::SessionId;
use asp_format::progress::Progress;
use asp_format::state::{KindCounts, Native, Session, State};
use asp_format::{KindSet, StateKind};

use crate::dir;
use crate::error::ConvertError;
use crate::harness::{
    Harness, Home, ReadContext, ReadOptions, SessionContext, Survey, SurveyContext, Surveyed,
    WriteContext, WriteOptions,
};
use crate::kit::fsops::Writer;
use crate::kit::meta::Unreadable;
use crate::kit::pathmap::PathMap;
use crate::kit::placement::Placement;
use crate::kit::report::{Diagnostic, Diagnostics, Severity};
use crate::kit::source::SourceFile;
use crate::reading::{self, READING_BUDGET, ReadingBudget};

/// Where agent state is kept.
#[derive(Clone)]
pub enum Store {
    /// A harness's native store in a home.
    Harness {
        harness: Arc<dyn Harness>,
        home: Home,
    },
    /// A state directory (the plain form `asp-unpack --to-dir` writes).
    Dir(PathBuf),
}

/// Predicts each project's dictionary from the survey (spec/aspstate.md §4.1), before a
/// session is read, so the blob sink compresses the transcripts against it as they come:
/// per project ([`Harness::surveyed_project`]: for most harnesses a folder of transcripts),
/// the rule's choice on the surveyed sizes ([`dictionary_source`]: the first 1 MiB, 512 KiB or
/// 256 KiB of one of its top-level transcripts). Only a prediction, made from sizes and ids alone: the sink
/// applies the rule to the state in the end and compresses again what it got wrong. Only
/// projects with an entry to read (not `reuse`d) are predicted: a backup that changed nothing
/// reads no dictionary. A file that cannot be read here is left to the read, which reports it.
fn predict_dictionaries(
    harness: &dyn Harness,
    entries: &[&Surveyed],
    reuse: &Reuse<'_>,
    sink: &dyn BlobSink,
) -> Result<(), ConvertError> {
    use asp_format::bundle::dictionary_source;
    use std::io::Read;
    // Per project, its top-level transcripts: (session id, size, path).
    let mut projects: BTreeMap<PathBuf, Vec<(&str, u64, &Path)>> = BTreeMap::new();
    for e in entries.iter().filter(|e| e.parent.is_none()) {
        let (Some(t), Some(folder)) = (harness.surveyed_transcript(e), harness.surveyed_project(e))
        else {
            continue;
        };
        projects
            .entry(folder)
            .or_default()
            .push((e.id.as_str(), t.size, &t.path));
    }
    let read: BTreeSet<PathBuf> = entries
        .iter()
        .filter(|e| reuse(e).is_none())
        .filter_map(|e| harness.surveyed_project(e))
        .collect();
    for (folder, transcripts) in projects {
        if !read.contains(&folder) {
            continue;
        }
        let Some((length, path)) = dictionary_source(transcripts) else {
            continue;
        };
        let mut head = Vec::with_capacity(length as usize);
        let read = crate::kit::source::open_regular(path)
            .and_then(|f| f.take(length).read_to_end(&mut head));
        if read.is_ok() && head.len() as u64 == length {
            sink.predict_dictionary(&folder, &head)?;
        }
    }
    Ok(())
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Store::Harness { harness, home } => f
                .debug_struct("Store::Harness")
                .field("harness", &harness.name())
                .field("home", home)
                .finish(),
            Store::Dir(d) => f.debug_tuple("Store::Dir").field(d).finish(),
        }
    }
}

/// Which sessions a read takes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum Sessions {
    /// Every session of the store.
    #[default]
    All,
    /// The sessions with these ids, with their subagent sessions; a subagent session named
    /// is taken alone (with its own subagents), as a bundle gives it ([`Survey::select`]).
    Only(Vec<SessionId>),
}

/// Sessions known for a survey entry, which then is not read (see [`Store::read_reusing`]).
pub type Reuse<'a> = dyn Fn(&Surveyed) -> Option<Vec<Session>> + Sync + 'a;

/// One survey entry a read took, and what it gave.
#[derive(Debug, Clone)]
pub struct EntryRead {
    /// The entry's id.
    pub id: SessionId,
    /// The files the entry's read depends on, as surveyed.
    pub files: Vec<SourceFile>,
    /// The digest of the other facts the read depends on.
    pub facts: Digest,
    /// The ids of the sessions the entry gave (it and its subagents).
    pub sessions: Vec<SessionId>,
    /// Whether they were given by the caller instead of read.
    pub reused: bool,
}

/// What [`Store::read_reusing`] gives.
#[derive(Debug)]
pub struct Incremental {
    pub state: State,
    /// Every survey entry taken, in survey order.
    pub entries: Vec<EntryRead>,
}

/// What to read.
#[derive(Clone, Copy)]
pub struct ReadRequest<'a> {
    /// The kinds asked for.
    pub kinds: KindSet,
    pub sessions: &'a Sessions,
    pub options: ReadOptions,
    /// How many sessions are read at once; `None` for one per core.
    pub threads: Option<NonZeroUsize>,
    pub blobs: &'a dyn BlobSink,
    /// Where every finding goes, in survey order.
    pub diagnostics: &'a Diagnostics,
    pub progress: &'a dyn Progress,
}

impl std::fmt::Debug for ReadRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReadRequest")
            .field("kinds", &self.kinds)
            .field("sessions", self.sessions)
            .field("options", &self.options)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl std::fmt::Debug for WriteRequest<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WriteRequest")
            .field("kinds", &self.kinds)
            .field("dry_run", &self.dry_run)
            .field("path_map", self.path_map)
            .field("force", &self.force)
            .finish_non_exhaustive()
    }
}

impl<'a> ReadRequest<'a> {
    /// Every kind, every session, native files, all cores.
    pub fn new(
        blobs: &'a dyn BlobSink,
        diagnostics: &'a Diagnostics,
        progress: &'a dyn Progress,
    ) -> Self {
        const ALL: &Sessions = &Sessions::All;
        ReadRequest {
            kinds: KindSet::ALL,
            sessions: ALL,
            options: ReadOptions::default(),
            threads: None,
            blobs,
            diagnostics,
            progress,
        }
    }
}

/// What to write.
#[derive(Clone, Copy)]
pub struct WriteRequest<'a> {
    /// The kinds asked for; `None` for every kind the state gives.
    pub kinds: Option<KindSet>,
    /// Work out and answer everything, write nothing (harness stores only).
    pub dry_run: bool,
    /// Path rewrites already applied to the state.
    pub path_map: &'a PathMap,
    /// A state directory only: write into one that is not empty, replacing files of the same
    /// name.
    pub force: bool,
    /// The state is this harness's own backup written back ([`WriteOptions::restoring`]).
    pub restoring: bool,
    pub blobs: &'a dyn BlobSource,
    pub diagnostics: &'a Diagnostics,
    pub progress: &'a dyn Progress,
}

/// What a write did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Written {
    /// The `_asp/state/import` answer.
    pub answer: ImportAnswer,
    /// For a state directory: how many files and bytes were written.
    pub files: Option<dir::DirWritten>,
    /// For each session written (or already there) that a person can resume, by its id in
    /// the destination: the command that resumes it there (`claude --resume <id>` in its
    /// directory, `codex resume <id>`, ...). A subagent session under its parent there is
    /// resumed with it; one written as a conversation of its own has its own command.
    pub resume: std::collections::BTreeMap<String, String>,
}

/// The environment a resume command sets so that the harness finds the sessions written into
/// `home` (`CODEX_HOME=… codex resume ID`): none for the user's own home, as the harness finds
/// its store there by itself ([`Harness::resume_env`] otherwise).
fn resume_env(harness: &dyn Harness, home: &Home) -> String {
    // The harness run as the user runs it finds its store where the user's own home (and
    // its variables, `CODEX_HOME`) put it: nothing to set when that is where this one is.
    let absolute = |paths: Vec<PathBuf>| -> Vec<PathBuf> {
        paths.iter().map(|p| crate::harness::absolute(p)).collect()
    };
    let own = Home::resolve(None).map(|h| absolute(harness.store_paths(&h)));
    if !home.explicit || own.ok() == Some(absolute(harness.store_paths(home))) {
        return String::new();
    }
    harness
        .resume_env(home)
        .into_iter()
        .map(|(var, path)| {
            format!(
                "{var}={} ",
                crate::kit::resume::shell_word(&path.to_string_lossy())
            )
        })
        .collect()
}

/// `cmd` with `env` (`VAR=value `, or nothing) before the harness's command, after the `cd`
/// into `cwd` that [`crate::kit::resume::in_dir`] put first, if it did.
fn with_env(cmd: &str, cwd: Option<&str>, env: &str) -> String {
    if env.is_empty() {
        return cmd.to_owned();
    }
    // The `cd DIR && ` a harness's command starts with, as `kit::resume::in_dir` spells it.
    let cd = crate::kit::resume::in_dir(cwd, String::new());
    match Some(cd.as_str())
        .filter(|cd| !cd.is_empty())
        .and_then(|cd| Some((cd, cmd.strip_prefix(cd)?)))
    {
        Some((cd, run)) => format!("{cd}{env}{run}"),
        None => format!("{env}{cmd}"),
    }
}

impl Store {
    /// The registered harness `name` in `home`.
    pub fn harness(name: &str, home: Home) -> Option<Store> {
        crate::harness(name).map(|h| Store::Harness {
            harness: Arc::from(h),
            home,
        })
    }

    /// What a person calls this store: `claude-code (/home/me)`, or the directory.
    pub fn describe_location(&self) -> String {
        match self {
            Store::Harness { harness, home } => {
                format!("{} ({})", harness.name(), home.dir.display())
            }
            Store::Dir(d) => d.display().to_string(),
        }
    }

    /// The command that lists this store's sessions, for a person to run: `--home` only when
    /// the user named one (naming it turns `CODEX_HOME` and the like off), each path quoted
    /// for a shell where it needs it.
    pub fn lists_sessions(&self) -> String {
        let word = |p: &std::path::Path| crate::kit::resume::shell_word(&p.to_string_lossy());
        match self {
            Store::Harness { harness, home } if home.explicit => format!(
                "asp sessions --from {} --home {}",
                harness.name(),
                word(&home.dir)
            ),
            Store::Harness { harness, .. } => format!("asp sessions --from {}", harness.name()),
            Store::Dir(d) => format!("asp inspect --from-dir {}", word(d)),
        }
    }

    /// Kinds this store can give.
    pub fn exports(&self) -> KindSet {
        match self {
            Store::Harness { harness, .. } => harness.capabilities().export,
            Store::Dir(_) => KindSet::ALL,
        }
    }

    /// Kinds this store can take.
    pub fn imports(&self) -> KindSet {
        match self {
            Store::Harness { harness, .. } => harness.capabilities().import,
            Store::Dir(_) => KindSet::ALL,
        }
    }

    /// Whether the store is there to be read: a harness store needs its home to exist and to
    /// hold that harness's store (an existing empty store is fine); a state directory needs
    /// to exist. The error names what was looked for.
    pub fn check_present(&self) -> Result<(), ConvertError> {
        match self {
            Store::Harness { harness, home } => {
                let looked_for = harness.store_paths(home);
                if home.dir.is_dir()
                    && looked_for
                        .iter()
                        .any(|p| crate::kit::fsops::exists_or_planned_under(p))
                {
                    return Ok(());
                }
                Err(ConvertError::NoStore {
                    harness: harness.name().to_string(),
                    home: home.dir.clone(),
                    looked_for,
                })
            }
            Store::Dir(d) if d.is_dir() => Ok(()),
            Store::Dir(d) => Err(ConvertError::invalid(
                d,
                "no such state directory (write one with asp-unpack --to-dir)",
            )),
        }
    }

    /// Refuses a `--home` that is the harness's own folder rather than the home holding it
    /// (`--home ~/.codex`, `--home ~/.claude`): written into, it would get a second store
    /// inside (`~/.codex/.codex`) that the harness never reads, exit 0 (new-user trial
    /// helper-136, 8). A home that holds the harness's store is never refused.
    pub fn check_home_is_not_the_store(&self) -> Result<(), ConvertError> {
        let Store::Harness { harness, home } = self else {
            return Ok(());
        };
        if !home.explicit || harness.store_paths(home).iter().any(|p| p.exists()) {
            return Ok(());
        }
        let Some(parent) = crate::harness::absolute(&home.dir)
            .parent()
            .map(Path::to_path_buf)
        else {
            return Ok(());
        };
        let given = crate::harness::absolute(&home.dir);
        // Any harness's folder one level down (`--to codex --home ~/.claude` too: re-trial
        // helper-139, 7); Pi's `~/.pi/agent` and OpenCode's deeper ones are not caught.
        let whose = crate::harness_names().into_iter().find(|name| {
            crate::harness(name).is_some_and(|h| {
                h.store_paths(&Home::at(&parent))
                    .iter()
                    .any(|p| crate::harness::absolute(p) == given)
            })
        });
        let Some(whose) = whose else {
            return Ok(());
        };
        Err(ConvertError::Usage(format!(
            "--home {} is {whose}'s own folder, not the home that holds it: give --home {}",
            home.dir.display(),
            parent.display()
        )))
    }

    /// Whether the home of a harness store exists (a store that is not there yet may be
    /// written into it: an import creates it). For a hub, which both reads and writes.
    pub fn check_home(&self) -> Result<(), ConvertError> {
        match self {
            Store::Harness { harness, home } if !home.dir.is_dir() => Err(ConvertError::NoStore {
                harness: harness.name().to_string(),
                home: home.dir.clone(),
                looked_for: harness.store_paths(home),
            }),
            _ => Ok(()),
        }
    }

    /// Lists the store's sessions without reading them.
    pub fn survey(&self, diagnostics: &Diagnostics) -> Result<Survey, ConvertError> {
        self.check_present()?;
        match self {
            Store::Harness { harness, home } => {
                let mut survey = harness.survey(&SurveyContext { home, diagnostics })?;
                survey.sessions.sort_by(|a, b| a.id.cmp(&b.id));
                Ok(survey)
            }
            Store::Dir(d) => dir::survey(d),
        }
    }

    /// Reads the store: the kinds asked for, the sessions asked for, normalised and valid.
    pub fn read(&self, req: &ReadRequest<'_>) -> Result<State, ConvertError> {
        Ok(self.read_reusing(req, &|_| None)?.state)
    }

    /// Reads the store as [`Store::read`] does, except that a survey entry for which `reuse`
    /// gives sessions is not read: those sessions stand for it (a backup passes the sessions
    /// of entries whose files and facts did not change since it last read them). Says, for
    /// every survey entry taken, what it gave, so the caller can recognise it next time.
    pub fn read_reusing(
        &self,
        req: &ReadRequest<'_>,
        reuse: &Reuse<'_>,
    ) -> Result<Incremental, ConvertError> {
        self.check_present()?;
        let kinds = req.kinds.intersection(self.exports());
        let mut sessions = None;
        let mut taken = Vec::new();
        if kinds.contains(StateKind::Sessions) {
            let survey = self.survey(req.diagnostics)?;
            let selection = match req.sessions {
                Sessions::All => survey.all(),
                Sessions::Only(ids) => survey.select(ids, &self.lists_sessions())?,
            };
            let entries = &selection.entries;
            if let (Store::Harness { harness, .. }, true) = (self, req.options.native) {
                predict_dictionaries(harness.as_ref(), entries, reuse, req.blobs)?;
            }
            let read = self.read_sessions(entries, req, reuse)?;
            let mut all = Vec::new();
            for (entry, (got, reused)) in entries.iter().zip(read) {
                let got = selection.keep(entry, got);
                taken.push(EntryRead {
                    id: entry.id.clone(),
                    files: entry.files.clone(),
                    facts: entry.facts,
                    sessions: got.iter().map(|s| s.id.clone()).collect(),
                    reused,
                });
                all.extend(got);
            }
            if survey.given || !all.is_empty() {
                sessions = Some(all);
            }
        }
        let rest = kinds.iter().filter(|k| *k != StateKind::Sessions).collect();
        let mut state = self.read_kinds(rest, req)?;
        state.sessions = sessions;
        state.retain_kinds(kinds);
        if let Store::Harness { .. } = self {
            // A kind left out is one not given, never one given empty.
            drop_empty_kinds(&mut state);
        }
        state.normalize();
        state.validate().map_err(|errs| ConvertError::Invalid {
            path: self.location(),
            message: format!(
                "the state read is not valid: {}",
                errs.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        })?;
        Ok(Incremental {
            state,
            entries: taken,
        })
    }

    /// Counts of each kind the store holds, as `_asp/state/describe` answers: a read that
    /// keeps no bodies and no native files.
    pub fn describe(
        &self,
        kinds: KindSet,
        progress: &dyn Progress,
    ) -> Result<KindCounts, ConvertError> {
        let diagnostics = Diagnostics::new();
        let mut req = ReadRequest::new(&Discard, &diagnostics, progress);
        req.kinds = kinds;
        req.options.native = false;
        Ok(self.read(&req)?.counts())
    }

    fn location(&self) -> PathBuf {
        match self {
            Store::Harness { home, .. } => home.dir.clone(),
            Store::Dir(d) => d.clone(),
        }
    }

    fn read_kinds(&self, kinds: KindSet, req: &ReadRequest<'_>) -> Result<State, ConvertError> {
        if kinds.is_empty() {
            return Ok(State::default());
        }
        match self {
            Store::Harness { harness, home } => harness.read_kinds(&ReadContext {
                home,
                kinds,
                blobs: req.blobs,
                diagnostics: req.diagnostics,
                progress: req.progress,
                options: req.options,
            }),
            Store::Dir(d) => dir::read_kinds(d, kinds, req.blobs),
        }
    }

    fn read_one(
        &self,
        entry: &Surveyed,
        req: &ReadRequest<'_>,
        diagnostics: &Diagnostics,
    ) -> Result<Vec<Session>, ConvertError> {
        match self {
            Store::Harness { harness, home } => harness.read_session(
                &SessionContext {
                    home,
                    blobs: req.blobs,
                    diagnostics,
                    progress: req.progress,
                    options: req.options,
                },
                entry,
            ),
            Store::Dir(_) => dir::read_session(entry, req.blobs),
        }
    }

    /// Reads the entries on a pool of threads, project by project ([`reading::order`]). Each
    /// read has its own diagnostics, merged in survey order; the first error in survey order
    /// wins: once a read fails, the entries after it in survey order are no longer read, and
    /// every entry before it still is, whatever the order of reading and the threads.
    fn read_sessions(
        &self,
        entries: &[&Surveyed],
        req: &ReadRequest<'_>,
        reuse: &Reuse<'_>,
    ) -> Result<Vec<(Vec<Session>, bool)>, ConvertError> {
        let threads = req
            .threads
            .or_else(|| std::thread::available_parallelism().ok())
            .map_or(1, NonZeroUsize::get)
            .min(entries.len().max(1));
        type Slot = Option<(Result<Vec<Session>, ConvertError>, Diagnostics, bool)>;
        let slots: Vec<Mutex<Slot>> = entries.iter().map(|_| Mutex::new(None)).collect();
        let next = AtomicUsize::new(0);
        // The least survey index whose read failed (`usize::MAX`: none).
        let failed = AtomicUsize::new(usize::MAX);
        let reading = ReadingBudget::new(READING_BUDGET);
        let weights = reading::weights(entries);
        let order = match self {
            Store::Harness { harness, .. } => {
                reading::order(entries, |e: &&Surveyed| harness.surveyed_project(e))
            }
            Store::Dir(_) => (0..entries.len()).collect(),
        };
        // Progress in the bytes of the entries' files, as the survey found them: an entry
        // taken from an earlier backup counts at once, one read when it is done.
        req.progress.begin(
            "reading sessions",
            Some(entries.iter().map(|e| e.size()).sum()),
        );
        let work = || {
            // An entry after a failed one in survey order is not read: its read could not
            // be used (the first error wins), and it would only delay the error.
            let after_failure = |i: usize| i > failed.load(Ordering::Relaxed);
            loop {
                let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    return;
                };
                if after_failure(i) {
                    continue;
                }
                let entry = entries[i];
                let diagnostics = Diagnostics::new();
                if let Some(known) = reuse(entry) {
                    *slots[i].lock().expect("a slot is written once") =
                        Some((Ok(known), diagnostics, true));
                    req.progress.advance(entry.size());
                    continue;
                }
                let admitted = reading.admit(weights[i]);
                if after_failure(i) {
                    continue;
                }
                req.progress.item(entry.id.as_str());
                let read = self.read_one(entry, req, &diagnostics);
                drop(admitted);
                req.progress.advance(entry.size());
                if read.is_err() {
                    failed.fetch_min(i, Ordering::Relaxed);
                }
                *slots[i].lock().expect("a slot is written once") =
                    Some((read, diagnostics, false));
            }
        };
        if threads <= 1 {
            work();
        } else {
            std::thread::scope(|s| {
                for _ in 0..threads {
                    s.spawn(work);
                }
            });
        }
        req.progress.finish();
        let mut sessions = Vec::new();
        for (slot, entry) in slots.into_iter().zip(entries) {
            let Some((read, diagnostics, reused)) = slot.into_inner().expect("no reader panicked")
            else {
                // Not read: an entry before it in survey order failed.
                continue;
            };
            // The diagnostics first: when the read failed, they usually say why.
            let native = read
                .as_ref()
                .is_ok_and(|r| r.iter().any(|s| s.native.is_some()));
            let mut read = read;
            let mut places: Vec<(usize, Unreadable)> = Vec::new();
            for d in diagnostics.items() {
                let was_damage = d.severity == Severity::Damaged;
                let mut d = resolve_damage(resolve_deleted(d, entry), entry, native);
                if was_damage
                    && d.severity == Severity::KeptNatively
                    && let (Ok(got), Store::Harness { harness, home }) = (&read, self)
                {
                    match unreadable_place(got, &d, harness.as_ref(), &home.dir) {
                        Some(place) => places.push(place),
                        // Kept in a file no session names as its own: written elsewhere, no
                        // session could say what it lacks, so it is lost here.
                        None => d.severity = Severity::Lost,
                    }
                }
                req.diagnostics.push(d);
            }
            if let Ok(got) = &mut read {
                mark_unreadable(got, places);
            }
            sessions.push((read?, reused));
        }
        Ok(sessions)
    }

    /// Writes `state` into the store: the kinds asked for, and an answer for every kind given.
    pub fn write(&self, state: &State, req: &WriteRequest<'_>) -> Result<Written, ConvertError> {
        let mut state = state.clone();
        if let Some(kinds) = req.kinds {
            state.retain_kinds(kinds);
        }
        state.normalize();
        if let Err(errs) = state.validate() {
            return Err(ConvertError::Usage(format!(
                "the state is not valid: {}",
                errs.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            )));
        }
        match self {
            Store::Harness { harness, home } => {
                let given = state.kinds();
                let imports = harness.capabilities().import;
                state.retain_kinds(imports);
                let switched_off = match &mut state.tools {
                    Some(servers) => {
                        crate::kit::mcp_switch::carry(servers, harness.name().as_str())
                    }
                    None => Vec::new(),
                };
                let writer = Writer::new(req.dry_run).confined_to(
                    std::iter::once(home.dir.clone()).chain(harness.store_paths(home)),
                );
                // Damage first: a session whose every record was damaged has nothing else to
                // show, and what it lost is said before it is taken out as empty.
                report_unreadable(&state, harness.name().as_str(), req.diagnostics);
                let empty = take_empty_sessions(&mut state, harness.name().as_str(), req.blobs);
                report_orphans(&state, &empty, harness.as_ref(), req.diagnostics);
                let mut answer = harness
                    .write(&WriteContext {
                        home,
                        state: &state,
                        blobs: req.blobs,
                        writer: &writer,
                        diagnostics: req.diagnostics,
                        progress: req.progress,
                        options: &WriteOptions {
                            path_map: req.path_map.clone(),
                            restoring: req.restoring,
                        },
                    })
                    .map_err(|error| stopped(error, &writer))?;
                report_unlinked(&state, harness.as_ref(), &answer, req.diagnostics);
                report_unarchived(&state, harness.as_ref(), &answer, req.diagnostics);
                for (id, what) in empty {
                    answer.refuse(
                        StateKind::Sessions,
                        format!(
                            "session {id} holds no conversation ({what}), so nothing of it is \
                             written"
                        ),
                    );
                }
                for note in switched_off {
                    answer.refuse(StateKind::Tools, note);
                }
                if answer.taken.contains(StateKind::Instructions) {
                    report_imports(&state, harness.as_ref(), req.blobs, req.diagnostics);
                }
                // A kind not given is never answered as taken, whatever the converter said.
                answer.taken = answer.taken.intersection(given);
                let mut resume = std::collections::BTreeMap::new();
                let env = resume_env(harness.as_ref(), home);
                for s in state.sessions.iter().flatten() {
                    // A subagent under its parent is resumed with it; one written as a
                    // conversation of its own (its parent not written, or not linked to it)
                    // has its own command.
                    let with_parent = crate::kit::meta::parent_id(s.meta.as_ref())
                        .is_some_and(|p| answer.sessions.contains_key(p));
                    if with_parent && under_its_parent(s, harness.as_ref()) {
                        continue;
                    }
                    // One restored from its own files without its parent is where the harness
                    // keeps that parent's subagents: no command resumes it alone (new-user
                    // trial helper-131, 3: `qwen --resume <parent>:agent-…`).
                    if crate::kit::meta::parent_id(s.meta.as_ref()).is_some()
                        && restored_natively(s, harness.as_ref())
                    {
                        continue;
                    }
                    let Some(new) = answer.sessions.get(s.id.as_str()) else {
                        continue;
                    };
                    if let Some(cmd) = harness.resume_command(new, s.cwd.as_deref()) {
                        resume.insert(new.clone(), with_env(&cmd, s.cwd.as_deref(), &env));
                    }
                }
                let name = harness.name();
                for kind in given.iter().filter(|k| !imports.contains(*k)) {
                    answer.refuse(kind, format!("the {name} converter does not import {kind}"));
                }
                Ok(Written {
                    answer,
                    files: None,
                    resume,
                })
            }
            Store::Dir(d) => {
                if req.dry_run {
                    return Err(ConvertError::Usage(
                        "a dry run needs a harness store; a state directory is written as it is"
                            .to_owned(),
                    ));
                }
                let files = dir::write(d, &state, req.blobs, req.force, req.progress)?;
                let mut answer = ImportAnswer {
                    taken: state.kinds(),
                    ..ImportAnswer::default()
                };
                for s in state.sessions.iter().flatten() {
                    answer.sessions.insert(s.id.to_string(), s.id.to_string());
                }
                Ok(Written {
                    answer,
                    files: Some(files),
                    resume: std::collections::BTreeMap::new(),
                })
            }
        }
    }
}

/// A file of the session the survey listed and the read found deleted (the harness removed it
/// in between, as Claude Code's cleanup of old transcripts does) is no loss: the store no
/// longer has it, so nothing it has is missing, and a backup records its session as gone from
/// the source (before, this was reported lost, exit 3, beside a summary that said the session
/// was kept as before: review helper-123).
fn resolve_deleted(mut d: Diagnostic, entry: &Surveyed) -> Diagnostic {
    let deleted = d.severity == Severity::Lost
        && d.line.is_none()
        && d.file().is_some_and(|f| {
            entry.files.iter().any(|s| s.path == f)
                && std::fs::symlink_metadata(f)
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        });
    if deleted {
        d.severity = Severity::Note;
        d.message
            .push_str(" (it was deleted while the store was read: the harness no longer has it)");
    }
    d
}

/// A damaged record dropped from a session's conversation is lost unless its file travels byte
/// for byte as the session's native file (`native`: the read carried native files): then a
/// restore into the same harness gives it back, and it is reported but not a loss.
fn resolve_damage(mut d: Diagnostic, entry: &Surveyed, native: bool) -> Diagnostic {
    if d.severity != Severity::Damaged {
        return d;
    }
    // A surveyed file, or a record under one: a database's row, which travels as a native
    // file of its own named by the database's path and the row's key (OpenCode).
    let kept = native
        && d.file()
            .is_some_and(|f| entry.files.iter().any(|s| f.starts_with(&s.path)));
    if kept {
        d.severity = Severity::KeptNatively;
        d.message
            .push_str(" (kept byte for byte in the session's native file)");
    } else {
        d.severity = Severity::Lost;
    }
    d
}

/// The session a damaged place kept natively (`d`) belongs to, and the place: the session whose
/// transcript the damaged file is (a subagent's own file, not its parent's, though the parent
/// carries it too), else the first whose native files hold it. The file is matched by its
/// path under the home, or, for a store moved by an environment variable (`CLAUDE_CONFIG_DIR`,
/// `CODEX_HOME`), by the path under the harness's own folder: native paths are recorded at
/// their default place.
fn unreadable_place(
    sessions: &[Session],
    d: &Diagnostic,
    harness: &dyn crate::harness::Harness,
    home: &std::path::Path,
) -> Option<(usize, Unreadable)> {
    let file = d.file()?;
    let is_file = |rel: &str| {
        home.join(rel) == file || {
            let mut parts = std::path::Path::new(rel).components();
            parts.next();
            let under = parts.as_path();
            !under.as_os_str().is_empty() && file.ends_with(under)
        }
    };
    let place = |i: usize, rel: &str| {
        Some((
            i,
            Unreadable {
                path: rel.to_owned(),
                line: d.line,
            },
        ))
    };
    for (i, s) in sessions.iter().enumerate() {
        let Some(native) = &s.native else { continue };
        let Some(own) = harness.transcript(&s.id, native, s.meta.as_ref()) else {
            continue;
        };
        if let Some(f) = native
            .files
            .iter()
            .find(|f| f.content == own && is_file(f.path.as_str()))
        {
            return place(i, f.path.as_str());
        }
    }
    sessions.iter().enumerate().find_map(|(i, s)| {
        let f = s
            .native
            .as_ref()?
            .files
            .iter()
            .find(|f| is_file(f.path.as_str()))?;
        place(i, f.path.as_str())
    })
}

/// Records the damaged places kept natively on their sessions (`_meta.asp.unreadable`), at
/// most [`UNREADABLE_KEPT`] a session, so a write of a session from its updates says what they
/// lack: the file, not the updates, holds it.
fn mark_unreadable(sessions: &mut [Session], places: Vec<(usize, Unreadable)>) {
    let mut by_session: std::collections::BTreeMap<usize, Vec<Unreadable>> =
        std::collections::BTreeMap::new();
    for (i, p) in places {
        let listed = by_session.entry(i).or_default();
        if listed.len() < UNREADABLE_KEPT && !listed.contains(&p) {
            listed.push(p);
        }
    }
    for (i, listed) in by_session {
        crate::kit::meta::set_unreadable(&mut sessions[i].meta, &listed);
    }
}

/// The damaged places a session records, at most: a transcript damaged throughout must not make
/// the state manifest as long as the transcript.
const UNREADABLE_KEPT: usize = 100;

/// Takes out of `state` the sessions with no conversation that `target` would compose from
/// their updates (a harness's own session is written from its native files, as it was): an
/// empty transcript packs as a session with no updates, one with only a title as a session
/// whose one update says its title, and every writer refused them as having nothing to show,
/// which was answered as a loss (exit 3) though the source held no conversation. Their ids,
/// with what their updates are, to be answered as not taken.
fn take_empty_sessions(
    state: &mut State,
    target: &str,
    blobs: &dyn BlobSource,
) -> Vec<(String, &'static str)> {
    let Some(sessions) = state.sessions.as_mut() else {
        return Vec::new();
    };
    let mut empty = Vec::new();
    sessions.retain(|s| {
        let own = s
            .native
            .as_ref()
            .is_some_and(|n| n.harness.as_str() == target);
        let what = match own {
            true => None,
            false => no_conversation(s, blobs),
        };
        // Empty because its records were damaged, not because the source held nothing: the
        // damaged places are said as lost ([`report_unreadable`]).
        let what =
            what.map(
                |what| match crate::kit::meta::unreadable(s.meta.as_ref()).is_empty() {
                    true => what,
                    false => "what it held could not be read; its damaged places are named as lost",
                },
            );
        if let Some(what) = what {
            empty.push((s.id.to_string(), what));
        }
        what.is_none()
    });
    empty
}

/// `error`, with what `writer` had changed before it (nothing, in a dry run, is changed).
fn stopped(error: ConvertError, writer: &Writer) -> ConvertError {
    match writer.is_dry_run() {
        true => error,
        false => match writer.changes() {
            done if done.is_empty() => error,
            done => ConvertError::Stopped {
                error: Box::new(error),
                done,
            },
        },
    }
}

/// Update kinds that tell about a session rather than hold its conversation.
const ABOUT_THE_SESSION: &[&str] = &[
    "session_info_update",
    "usage_update",
    "current_mode_update",
    "available_commands_update",
    "config_option_update",
];

/// The longest update stream [`no_conversation`] reads through: a stream of only updates about
/// the session is a few of them, and a conversation's first prompt comes early.
const ABOUT_ONLY_MAX: u64 = 64 << 10;

/// What a session's updates are when they hold no conversation: none, or only updates about
/// the session ([`ABOUT_THE_SESSION`]). `None` when they hold some, or cannot be read (the
/// writer that reads them says what is wrong).
fn no_conversation(s: &Session, blobs: &dyn BlobSource) -> Option<&'static str> {
    if s.updates.size == 0 {
        return Some("its update stream is empty");
    }
    if s.updates.size > ABOUT_ONLY_MAX {
        return None;
    }
    let mut lines = asp_format::update::UpdateLines::open(blobs, &s.updates).ok()?;
    while let Some((_, line)) = lines.next_line().ok()? {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let kind = v.pointer("/update/sessionUpdate")?.as_str()?;
        if !ABOUT_THE_SESSION.contains(&kind) {
            return None;
        }
    }
    Some("its updates only tell about it, such as its title")
}

/// What a session written from its updates lacks: the damaged places of its native file,
/// which only that file holds. Lost, unless the target is the harness the file is from (it
/// is then written as it was).
fn report_unreadable(state: &State, target: &str, diagnostics: &Diagnostics) {
    let ids: std::collections::HashSet<&str> = state
        .sessions
        .iter()
        .flatten()
        .map(|s| s.id.as_str())
        .collect();
    for s in state.sessions.iter().flatten() {
        let places = crate::kit::meta::unreadable(s.meta.as_ref());
        let Some(first) = places.first() else {
            continue;
        };
        let from = s.native.as_ref().map(|n| n.harness.as_str());
        // Into its own harness the native files are written as they were, the damaged places
        // with them; not a subagent written without its parent, which is composed anew.
        let parent = crate::kit::meta::parent_id(s.meta.as_ref());
        if from == Some(target) && parent.is_none_or(|p| ids.contains(p)) {
            continue;
        }
        let lines: Vec<String> = places
            .iter()
            .filter(|p| p.path == first.path)
            .filter_map(|p| p.line.map(|l| l.to_string()))
            .collect();
        let at = match lines.as_slice() {
            [] => "a record".to_owned(),
            [one] => format!("line {one}"),
            [some @ .., last] if lines.len() <= 5 => {
                format!("lines {} and {last}", some.join(", "))
            }
            many => format!(
                "lines {} and {} more",
                many[..5].join(", "),
                if many.len() >= UNREADABLE_KEPT {
                    format!("{} or more", many.len() - 5)
                } else {
                    (many.len() - 5).to_string()
                }
            ),
        };
        let more = places.iter().filter(|p| p.path != first.path).count();
        let others = if more > 0 {
            format!(" (and {more} more places in its other native files)")
        } else {
            String::new()
        };
        let source = from.unwrap_or("native");
        diagnostics.push(Diagnostic {
            severity: Severity::Lost,
            subject: None,
            line: None,
            message: format!(
                "session {}: {at} of its {source} file {}{others} could not be read into the \
                 conversation when it was packed; only that file keeps what they hold, and \
                 {target} is written from the conversation, so what they hold is not carried{}",
                s.id,
                first.path,
                // A transcript that is a tree of rows (each naming its parent) replays from a
                // row whose parent was on a damaged line: the rows before it are cut off.
                if matches!(from, Some("claude-code" | "pi")) {
                    ", nor the rows reached only through them (a row whose parent was on a \
                     damaged line cuts off the rows before it; the pack's report counted them)"
                } else {
                    " (the rest of the session is)"
                }
            ),
        });
    }
}

/// A subagent session written without its parent (`--session` named the subagent) becomes a
/// conversation of its own in the target, listed beside the others: said, with the way to
/// bring it back where it was.
/// `empty` are the sessions taken out for holding no conversation ([`take_empty_sessions`]).
fn report_orphans(
    state: &State,
    empty: &[(String, &str)],
    harness: &dyn Harness,
    diagnostics: &Diagnostics,
) {
    let sessions = state.sessions.iter().flatten();
    let ids: std::collections::HashSet<&str> = sessions.clone().map(|s| s.id.as_str()).collect();
    for s in sessions {
        let Some(parent) = crate::kit::meta::parent_id(s.meta.as_ref()) else {
            continue;
        };
        if ids.contains(parent) {
            continue;
        }
        // Restored from its own files, it goes where the harness keeps its parent's subagents
        // (Qwen Code's `subagents/`, OpenCode's `parent_id`, Claude Code's folder of the
        // parent), which the harness shows with that parent only: not a conversation of its
        // own (new-user trial helper-131, 3).
        let message = if restored_natively(s, harness) {
            format!(
                "session {} is a subagent of {parent}, which is not written with it: it is \
                 restored from its own files where {} keeps the subagents of {parent}, and is \
                 shown with that session only; where the state holds {parent} (`asp inspect` \
                 lists it), `--session {parent}` writes them together",
                s.id,
                harness.accepts().harness
            )
        } else if empty.iter().any(|(e, _)| e == parent) {
            format!(
                "session {} is a subagent of {parent}, which holds no conversation and is not \
                 written: it is written as a conversation of its own",
                s.id
            )
        } else {
            format!(
                "session {} is a subagent of {parent}, which is not written with it: it is \
                 written as a conversation of its own; where the state holds {parent} \
                 (`asp inspect` lists it), `--session {parent}` writes the conversation with its \
                 subagents where they belong",
                s.id
            )
        };
        diagnostics.push(Diagnostic {
            severity: Severity::Note,
            subject: None,
            line: None,
            message,
        });
    }
}

/// The `@path` imports of carried instructions, written into a harness that does not read them
/// as the files they name ([`Harness::expands_imports`]): each named, with its line, since the
/// text it stood for in the source is not part of the instructions there. Said, never failing
/// the write that has been done: instructions that cannot be read again say nothing.
fn report_imports(
    state: &State,
    harness: &dyn Harness,
    blobs: &dyn BlobSource,
    diagnostics: &Diagnostics,
) {
    let Some(i) = state
        .instructions
        .as_ref()
        .filter(|_| !harness.expands_imports())
    else {
        return;
    };
    let Ok(text) = blobs.read_all(&i.text) else {
        return;
    };
    let imports = import_lines(&String::from_utf8_lossy(&text));
    if !imports.is_empty() {
        diagnostics.push(Diagnostic {
            severity: Severity::Note,
            subject: None,
            line: None,
            message: format!(
                "the instructions import other files ({}), which {} does not read as the files \
                 they name: it sees the line, not the file's text; paste the text in where it \
                 matters",
                imports.join(", "),
                harness.name()
            ),
        });
    }
}

/// The imports of Markdown instructions, as ``line N `@path` ``: a word `@` then a path (from
/// `~/`, `./`, `../` or `/`, or a file name ending `.md`), outside fenced code blocks. Claude
/// Code reads such a word anywhere in a line; `@name` mentions and decorators are no paths.
fn import_lines(text: &str) -> Vec<String> {
    let mut fenced = false;
    let mut out = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with("```") || t.starts_with("~~~") {
            fenced = !fenced;
            continue;
        }
        if fenced {
            continue;
        }
        for word in line.split_whitespace() {
            let Some(path) = word.strip_prefix('@') else {
                continue;
            };
            let path = path.trim_end_matches([',', ';', ')', ':', '.']);
            if ["~/", "./", "../", "/"].iter().any(|p| path.starts_with(p)) || path.ends_with(".md")
            {
                out.push(format!("line {} `@{path}`", n + 1));
            }
        }
    }
    out
}

/// Whether subagent session `s`, written with its parent into `harness`, is under that parent
/// there: restored from the harness's own files, which hold the link, or composed into a
/// harness that links what it composes ([`Harness::links_composed_subagents`]).
fn under_its_parent(s: &Session, harness: &dyn Harness) -> bool {
    restored_natively(s, harness) || harness.links_composed_subagents()
}

/// Whether `s` is written into `harness` from its own native files (not composed).
fn restored_natively(s: &Session, harness: &dyn Harness) -> bool {
    s.native
        .as_ref()
        .is_some_and(|n| n.harness == harness.name() && !n.files.is_empty())
}

/// Subagent sessions written with their parent but not under it
/// ([`under_its_parent`]): each was written as a conversation of its own, listed beside its
/// parent. Said once, naming them, so no one looks for them under the parent.
fn report_unlinked(
    state: &State,
    harness: &dyn Harness,
    answer: &ImportAnswer,
    diagnostics: &Diagnostics,
) {
    let name = harness.name();
    let unlinked: Vec<String> = state
        .sessions
        .iter()
        .flatten()
        .filter(|s| !under_its_parent(s, harness))
        .filter_map(|s| {
            let written = answer.sessions.get(s.id.as_str())?;
            let parent = crate::kit::meta::parent_id(s.meta.as_ref())?;
            let named = match written == s.id.as_str() {
                true => s.id.to_string(),
                false => format!("{} as {written}", s.id),
            };
            answer
                .sessions
                .contains_key(parent)
                .then(|| format!("{named} (a subagent of {parent})"))
        })
        .collect();
    if unlinked.is_empty() {
        return;
    }
    diagnostics.push(Diagnostic {
        severity: Severity::Note,
        subject: None,
        line: None,
        message: format!(
            "{}: {name} keeps a subagent under its parent only as it restores its own files (the \
             link stays in the bundle): {}",
            match unlinked.len() {
                1 => "1 subagent session written as a conversation of its own, listed beside its \
                      parent"
                    .to_owned(),
                n => format!(
                    "{n} subagent sessions written as conversations of their own, listed beside \
                     their parents"
                ),
            },
            a_few(&unlinked)
        ),
    });
}

/// The first few of `names`, and how many more: a note names some, not a thousand.
fn a_few(names: &[String]) -> String {
    const NAMED: usize = 5;
    let shown = names[..names.len().min(NAMED)].join(", ");
    match names.len().saturating_sub(NAMED) {
        0 => shown,
        n => format!("{shown} and {n} more"),
    }
}

/// Sessions archived where they were read ([`crate::kit::archive`]), written into a harness
/// that keeps no archive: it lists them with the others. Said once, naming a few.
fn report_unarchived(
    state: &State,
    harness: &dyn Harness,
    answer: &ImportAnswer,
    diagnostics: &Diagnostics,
) {
    if harness.keeps_an_archive() {
        return;
    }
    let listed: Vec<String> = state
        .sessions
        .iter()
        .flatten()
        .filter(|s| crate::kit::archive::archived(s).is_some())
        .filter_map(|s| {
            let written = answer.sessions.get(s.id.as_str())?;
            (!answer.already_there.contains(s.id.as_str())).then(|| {
                match written == s.id.as_str() {
                    true => s.id.to_string(),
                    false => format!("{} as {written}", s.id),
                }
            })
        })
        .collect();
    if listed.is_empty() {
        return;
    }
    diagnostics.push(Diagnostic {
        severity: Severity::Note,
        subject: None,
        line: None,
        message: format!(
            "{} archived where {} read from; {} keeps no archive, so {} listed with the \
             others: {}",
            match listed.len() {
                1 => "1 session was".to_owned(),
                n => format!("{n} sessions were"),
            },
            if listed.len() == 1 {
                "it was"
            } else {
                "they were"
            },
            harness.name(),
            if listed.len() == 1 {
                "it is"
            } else {
                "they are"
            },
            a_few(&listed)
        ),
    });
}

impl Store {
    /// The harness's own configuration, read whole into `blobs` (issue 13's native layer);
    /// `None` for a state directory or a harness that names none.
    ///
    /// What the read of the kinds reported left out (into `diagnostics`) is said to be kept
    /// natively when it is one of these files: a Claude Code `rules/` file is not carried as
    /// instructions, but a backup keeps it with the configuration.
    ///
    /// `servers` are the MCP servers the state read from the harness: a file one runs from the
    /// harness's folders (a script beside its settings) is kept too, and one elsewhere under
    /// the home is said not to be ([`crate::kit::server_files`]).
    pub fn read_config(
        &self,
        blobs: &dyn BlobSink,
        servers: &[asp_format::state::McpServer],
        diagnostics: &Diagnostics,
    ) -> Result<Option<crate::kit::config::ConfigRead>, ConvertError> {
        let Store::Harness { harness, home } = self else {
            return Ok(None);
        };
        let mut files = harness.config_files(home);
        let named = crate::kit::server_files::server_files(
            &home.dir,
            &harness.config_folders(home),
            &harness.config_part_files(),
            servers,
        );
        files.keep_also(&home.dir, &named.kept);
        let name = harness.name();
        for (path, why, server) in &named.withheld {
            diagnostics.left_out(
                path,
                None,
                format!("named by MCP server \"{server}\"; {why}"),
            );
        }
        for (path, server) in &named.elsewhere {
            diagnostics.note(
                path,
                None,
                format!(
                    "MCP server \"{server}\" runs or reads this file, which is outside {name}'s \
                     folders: a backup of {name} does not keep it"
                ),
            );
        }
        for (dir, others) in &named.beside {
            diagnostics.note(
                dir,
                None,
                format!(
                    "a backup keeps the files an MCP server's entry names in this folder, not \
                     the {others} other file(s) or folder(s) beside them; if the server needs \
                     them, keep them with the rest of your files"
                ),
            );
        }
        let parts = harness.config_parts(home);
        for w in &files.withheld {
            diagnostics.left_out(&w.path, None, w.why);
        }
        if files.keep.is_empty() && parts.is_empty() {
            return Ok(None);
        }
        let read = crate::kit::config::read(harness.as_ref(), &files, blobs, diagnostics)?;
        let mut config = read.native;
        for (link, target) in &files.followed {
            if config
                .files
                .iter()
                .any(|c| home.dir.join(c.path.as_str()) == *link)
            {
                diagnostics.note(
                    link,
                    None,
                    format!(
                        "a symbolic link: kept as the file it leads to, {} (a restore writes it as a file)",
                        target.display()
                    ),
                );
            }
        }
        let name = harness.name();
        diagnostics.revise(|d| {
            // A file kept, or a skill folder another hides, kept whole
            // (`kit::skills::shadowed`).
            let kept = d.severity == Severity::LeftOut
                && d.file().is_some_and(|f| {
                    let hidden_copy = crate::kit::config::relative(&home.dir, f)
                        .is_some_and(|r| crate::kit::skills::is_hidden_copy(&format!("{r}/")));
                    config.files.iter().any(|c| {
                        let p = home.dir.join(c.path.as_str());
                        p == f || (hidden_copy && p.starts_with(f))
                    })
                });
            if kept {
                d.severity = Severity::KeptNatively;
                d.message.push_str(&format!(
                    " (kept byte for byte with {name}'s own configuration, restored into {name} only)"
                ));
            }
        });
        for (name, bytes) in parts {
            if let Some(file) = crate::kit::config::without_credentials(&name) {
                diagnostics.note(
                    &home.dir.join(file),
                    None,
                    crate::kit::config::without_credentials_said(),
                );
            }
            let Ok(path) = asp_format::name::RelPath::new(&name) else {
                continue;
            };
            config.files.push(asp_format::state::FileEntry {
                path,
                executable: false,
                content: blobs.put(&bytes)?,
            });
        }
        config.files.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Some(crate::kit::config::ConfigRead {
            native: config,
            unreadable: read.unreadable,
        }))
    }

    /// Of the configuration files an earlier backup kept that the source no longer has
    /// (`gone`), those to carry from it ([`Harness::config_to_carry`]).
    pub fn config_to_carry(&self, gone: &[&str]) -> Vec<String> {
        match self {
            Store::Harness { harness, home } => harness.config_to_carry(home, gone),
            Store::Dir(_) => Vec::new(),
        }
    }

    /// Restores a configuration read by [`Store::read_config`] into the same harness: every
    /// file that is not there; one there with other content is kept (refused with the reason);
    /// a part of a file merged into it by the harness, `path_map` applied to the paths it
    /// names. Another harness's configuration is refused whole.
    pub fn write_config(
        &self,
        config: &Native,
        blobs: &dyn BlobSource,
        path_map: &PathMap,
        grants: crate::kit::placement::Grants,
        dry_run: bool,
    ) -> Result<ConfigWritten, ConvertError> {
        let Store::Harness { harness, home } = self else {
            return Err(ConvertError::Usage(
                "a harness's configuration is restored only into that harness".to_owned(),
            ));
        };
        if harness.name() != config.harness {
            return Ok(ConfigWritten {
                placed: vec![(
                    "configuration".to_owned(),
                    Placement::Refused(format!(
                        "the configuration of {} is not restored into {}",
                        config.harness,
                        harness.name()
                    )),
                )],
                ..ConfigWritten::default()
            });
        }
        // A backup names its files, and a repository is only as trusted as the disk it is
        // on: nothing is written outside the harness's own folders (a tampered record naming
        // `.bashrc` is refused), whatever the path says.
        let folders = harness.config_folders(home);
        let writer = Writer::new(dry_run).planning();
        let mut whole = Native {
            harness: config.harness.clone(),
            files: Vec::new(),
        };
        let mut out = Vec::new();
        // What a file grants by a folder's path, by file: said when it is written; with
        // `--no-grants` the file without it is written instead (staged), and that is said.
        let staged = asp_format::blob::MemoryStore::new();
        let grant_files = harness.grant_files(home);
        let mut granting: BTreeMap<String, String> = BTreeMap::new();
        for f in &config.files {
            let name = f.path.as_str();
            let file = name.split('#').next().unwrap_or(name);
            let target = home.dir.join(file);
            if !folders
                .iter()
                .any(|d| crate::kit::config::really_inside(&target, d))
            {
                out.push((
                    name.to_owned(),
                    Placement::Refused(format!(
                        "{} is not in {}'s folders (by its path, or through a link on the way); not \
                         written",
                        home.dir.join(file).display(),
                        harness.name()
                    )),
                ));
                continue;
            }
            if grant_files.iter().any(|g| g == name) {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut blobs.open(&f.content)?, &mut bytes)
                    .map_err(ConvertError::io(name))?;
                if let Some(g) = harness.grants_in(name, &bytes) {
                    if grants == crate::kit::placement::Grants::Carry {
                        granting.insert(name.to_owned(), g.what);
                    } else {
                        out.push((
                            format!("{name} (what it grants)"),
                            Placement::Refused(format!("not granted (--no-grants): {}", g.what)),
                        ));
                        if let Some(rest) = g.rest {
                            let mut kept = f.clone();
                            kept.content = staged.put(&rest)?;
                            whole.files.push(kept);
                        }
                        continue;
                    }
                }
            }
            if name.contains('#') {
                let mut bytes = Vec::new();
                std::io::Read::read_to_end(&mut blobs.open(&f.content)?, &mut bytes)
                    .map_err(ConvertError::io(name))?;
                if let Some(placed) =
                    harness.merge_config_part(home, name, &bytes, path_map, grants, &writer)
                {
                    out.extend(placed?);
                    continue;
                }
            }
            whole.files.push(f.clone());
        }
        let log = |rel: &str| harness.appended_log(home, rel);
        let moves_paths = |rel: &str| log(rel).is_some_and(|l| l.moves_paths);
        // The paths a prompt history names (Claude Code's `project`) move with --map-path,
        // so ↑ finds the prompts in the moved projects; every other file is restored as it is.
        // (Staged files, what is left of a grant file, are read from the overlay.)
        let blobs = asp_format::blob::Overlay::new(vec![&staged as &dyn BlobSource, blobs]);
        if !path_map.is_empty() {
            for f in &mut whole.files {
                if moves_paths(f.path.as_str()) {
                    *f = path_map.rewrite_file(&blobs, &staged, f)?;
                }
            }
        }
        // A file restored as it is still names the folders --map-path moves (a project it
        // trusts, a server's folder): said, since they are not moved with the sessions.
        let mut unmoved = Vec::new();
        if !path_map.is_empty() {
            // (Prompt histories were rewritten above: a prompt that names a folder is prose.)
            for f in whole.files.iter().filter(|f| !moves_paths(f.path.as_str())) {
                if let Ok(bytes) = blobs.read_all(&f.content) {
                    let text = String::from_utf8_lossy(&bytes);
                    let old = path_map.old_folders_in(&text);
                    if !old.is_empty() {
                        unmoved.push((
                            f.path.as_str().to_owned(),
                            old.into_iter().map(str::to_owned).collect(),
                        ));
                    }
                }
            }
        }
        let private = |rel: &str| harness.private_config(home, rel);
        // A file that grants something by a folder's path says so when it is written.
        let written =
            crate::kit::config::write(&home.dir, &whole, &blobs, &writer, &log, &private)?;
        out.extend(written.into_iter().map(|(rel, placed)| {
            match (placed, granting.remove(&rel)) {
                (Placement::New, Some(what)) => (rel, Placement::Granted(what)),
                (placed, _) => (rel, placed),
            }
        }));
        // Only the files written (or that would be, in a dry run) still name them.
        unmoved.retain(|(rel, _): &(String, Vec<String>)| {
            out.iter().any(|(r, p)| r == rel && p.is_written())
        });
        let created = writer
            .changes()
            .into_iter()
            .filter_map(|c| match c {
                crate::kit::fsops::Change::Create(p) => Some(p),
                _ => None,
            })
            .collect();
        Ok(ConfigWritten {
            placed: out,
            created,
            unmoved,
        })
    }
}

/// What [`Store::write_config`] did.
#[derive(Debug, Clone, Default)]
pub struct ConfigWritten {
    /// Each file, or part of one, and what came of it.
    pub placed: Vec<(String, Placement)>,
    /// The files it made that were not there (or would make, in a dry run), as written: what
    /// an import after it adds to one of them is not added to a file the owner had.
    pub created: Vec<std::path::PathBuf>,
    /// Files restored as they are that name folders `--map-path` moves, with those folders:
    /// the trust and projects they name stay at the old paths.
    pub unmoved: Vec<(String, Vec<String>)>,
}

/// Leaves out every kind given with nothing in it: a harness store that has no memory does not
/// give `memory: []`. (A state directory says what it gives by its files, as it is.)
fn drop_empty_kinds(state: &mut State) {
    if state.sessions.as_ref().is_some_and(Vec::is_empty) {
        state.sessions = None;
    }
    if state.skills.as_ref().is_some_and(Vec::is_empty) {
        state.skills = None;
    }
    if state.tools.as_ref().is_some_and(Vec::is_empty) {
        state.tools = None;
    }
    if state.memory.as_ref().is_some_and(Vec::is_empty) {
        state.memory = None;
    }
    if state.settings.as_ref().is_some_and(|s| s.is_empty()) {
        state.settings = None;
    }
}

#[cfg(test)]
mod tests {
    use super::import_lines;
    use super::*;
    use crate::harness::Home;
    use asp_format::blob::MemoryStore;
    use asp_format::progress::Quiet;

    fn copy_tree(from: &Path, to: &Path) {
        std::fs::create_dir_all(to).unwrap();
        for e in std::fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            let target = to.join(e.file_name());
            if e.file_type().unwrap().is_dir() {
                copy_tree(&e.path(), &target);
            } else {
                std::fs::copy(e.path(), &target).unwrap();
            }
        }
    }

    /// A transcript the harness deletes after the survey listed it and before the read took
    /// it is no loss: the store no longer has it.
    #[test]
    fn a_session_file_deleted_while_the_store_is_read_is_not_a_loss() {
        let t = tempfile::tempdir().unwrap();
        let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("../samples/claude-code");
        copy_tree(&sample, t.path());
        let store = Store::harness("claude-code", Home::at(t.path().to_path_buf())).unwrap();
        let (blobs, diagnostics) = (MemoryStore::new(), Diagnostics::new());
        let mut req = ReadRequest::new(&blobs, &diagnostics, &Quiet);
        req.threads = NonZeroUsize::new(1);
        let deleted = Mutex::new(None);
        let reuse = |e: &Surveyed| {
            let mut d = deleted.lock().unwrap();
            if d.is_none() && e.parent.is_none() {
                std::fs::remove_file(&e.files[0].path).unwrap();
                *d = Some(e.id.to_string());
            }
            None
        };
        let read = store.read_reusing(&req, &reuse).unwrap();
        let id = deleted.into_inner().unwrap().unwrap();
        assert!(
            read.state
                .sessions
                .iter()
                .flatten()
                .all(|s| s.id.as_str() != id),
            "{id}"
        );
        let items = diagnostics.items();
        assert!(!items.iter().any(|d| d.severity.is_loss()), "{items:#?}");
        assert!(
            items.iter().any(|d| d.severity == Severity::Note
                && d.message.contains("deleted while the store was read")),
            "{items:#?}"
        );
    }

    #[test]
    fn imports_are_paths_after_an_at_sign_outside_code_blocks() {
        let text = "# Me\n\
                    @~/.claude/rules/security.md\n\
                    See @README.md and @./docs/style.md, then ask @sam.\n\
                    Decorators like @dataclass and packages like @types/node are no imports.\n\
                    ```\n\
                    @/etc/in-a-code-block.md\n\
                    ```\n\
                    Last: @../shared/notes.md.\n";
        assert_eq!(
            import_lines(text),
            [
                "line 2 `@~/.claude/rules/security.md`",
                "line 3 `@README.md`",
                "line 3 `@./docs/style.md`",
                "line 8 `@../shared/notes.md`",
            ]
        );
    }
}
