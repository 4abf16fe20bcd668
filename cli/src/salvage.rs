//! What a restore does when some of the snapshot's bodies are damaged.
//!
//! A backup is read when something was lost, and one bad blob (a disk error, a file changed by
//! hand) must not keep the other sessions from coming back. So, as restic restores what it can,
//! `asp restore` reads every body it needs first; what needs a body that cannot be read back
//! intact is left out: a damaged side file alone (a rewind checkpoint, a todo list, a tool
//! result: `Harness::side_file`; the rest of its session is restored), a session whose update
//! stream or any other native file is damaged (its transcript, a subagent's), with its
//! subagent sessions (a subagent whose stream alone is damaged, written into its own harness
//! with its parent whose native files hold its own, comes back with the parent); a skill, the
//! instructions, a note, a configuration file. Everything
//! else is restored, and the command ends with the integrity exit code (4), naming each
//! damaged blob and what needed it (also as `notTaken` losses in the answer). Nothing left out is half-written, and restoring again once
//! the repository is mended adds it (the rest is already there).
//!
//! `asp-unpack` does the same for a bundle whose bodies do not all check out.
//!
//! Only integrity failures (a missing blob, a digest or size that does not match) are
//! salvaged; any other error reading the repository (an I/O error included) stops the restore
//! before anything is written.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::Read;

use asp_format::answer::{ImportAnswer, NotTaken};
use asp_format::blob::{BlobError, BlobSource};
use asp_format::error::{Classify, ErrorClass};
use asp_format::state::{Native, NoteBody, Reference, parent_of};
use asp_format::{Descriptor, State, StateKind};

use crate::exit::{Context, Failure, Result};

/// The items of a state left out because a body they need is damaged.
#[derive(Debug, Default)]
pub struct Damaged {
    /// Each damaged body, with what is wrong and what needs it, in the order first met.
    pub blobs: Vec<DamagedBlob>,
    sessions: BTreeSet<String>,
    /// Subagent sessions whose update stream alone is damaged, restored into their own
    /// harness with their parent, whose native files hold theirs: by id, their parent's.
    with_parent: std::collections::BTreeMap<String, String>,
    /// Native files left out of sessions that are otherwise restored: `(session, path)`.
    files: BTreeSet<(String, String)>,
    skills: BTreeSet<String>,
    notes: BTreeSet<String>,
    config: BTreeSet<String>,
    instructions: bool,
    /// The snapshot's source records could not be read: the configuration files they list
    /// and the sessions they record as gone are not known.
    source_records: bool,
}

/// One damaged body.
#[derive(Debug, Clone, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DamagedBlob {
    /// The body's digest.
    pub blob: String,
    /// What is wrong with it.
    pub problem: String,
    /// What refers to it (`native file … of session …`).
    pub needed_by: Vec<String>,
}

impl Damaged {
    pub fn is_empty(&self) -> bool {
        self.blobs.is_empty()
    }

    /// One line per damaged body.
    pub fn lines(&self) -> Vec<String> {
        self.blobs
            .iter()
            .map(|b| {
                // The problem names the body already when it is about its stored bytes. A
                // body, by the digest of its bytes: `asp verify` names the layer (the stored
                // blob) that holds it, and both name who needs it.
                let blob = if b.problem.contains(&b.blob) {
                    String::new()
                } else {
                    format!("body {}: ", b.blob)
                };
                format!("{blob}{}; needed by {}", b.problem, b.needed_by.join(", "))
            })
            .collect()
    }

    /// What was left out, for the summary: `2 sessions (a, b), the instructions`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        let list = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(", ");
        if !self.sessions.is_empty() {
            let n = self.sessions.len();
            parts.push(format!(
                "{} ({})",
                crate::human::count(n as u64, "session", "sessions"),
                list(&self.sessions)
            ));
        }
        if !self.with_parent.is_empty() {
            let each: Vec<String> = self
                .with_parent
                .iter()
                .map(|(s, p)| format!("{s}, with session {p}"))
                .collect();
            parts.push(format!(
                "the update {} of {} ({}; {} restored from the native files, and cannot be \
                 carried into another harness until the repository is mended)",
                if each.len() == 1 { "stream" } else { "streams" },
                crate::human::count(each.len() as u64, "subagent session", "subagent sessions"),
                each.join("; "),
                if each.len() == 1 { "it is" } else { "they are" },
            ));
        }
        if !self.files.is_empty() {
            let files: Vec<String> = self
                .files
                .iter()
                .map(|(s, p)| format!("{p} of session {s}"))
                .collect();
            parts.push(format!(
                "{} ({}; the rest of each session is restored)",
                crate::human::count(files.len() as u64, "native file", "native files"),
                files.join(", ")
            ));
        }
        if !self.skills.is_empty() {
            parts.push(format!("skills {}", list(&self.skills)));
        }
        if self.instructions {
            parts.push("the instructions".to_owned());
        }
        if !self.notes.is_empty() {
            parts.push(format!("memory notes {}", list(&self.notes)));
        }
        if !self.config.is_empty() {
            parts.push(format!("configuration files {}", list(&self.config)));
        }
        if self.source_records {
            parts.push("the harness's own configuration files, whichever it held".to_owned());
        }
        parts.join(", ")
    }

    /// The snapshot's source records (its manifest's first layer, `layer`) could not be read
    /// (`asp_repo::Snapshot::sources_damage`): the state is restored whole, but what only they
    /// hold, the harness's own configuration files and the sessions recorded as gone, is not.
    pub fn source_records(&mut self, layer: &str, problem: &str) {
        self.source_records = true;
        self.blobs.push(DamagedBlob {
            blob: layer.to_owned(),
            problem: problem.to_owned(),
            needed_by: vec![
                "the snapshot's source records, which list the harness's own configuration \
                 files and the sessions gone from its source"
                    .to_owned(),
            ],
        });
    }

    /// How many configuration files were left out.
    pub fn config_files(&self) -> usize {
        self.config.len()
    }

    /// Each item of the state left out as a loss in the import answer (`notTaken`), so a
    /// client reads it where it reads every other thing not written. (Configuration files are
    /// no kind of the state: they are in [`Damaged::blobs`] only.) `source`: where the data is damaged and
    /// what names it (`the repository (asp check --read-data names the blob)`).
    pub fn into_answer(&self, answer: &mut ImportAnswer, source: &str) {
        let why = format!("its data in {source} is damaged");
        let mut lost = |kind: StateKind, what: String| {
            answer.not_taken.push(NotTaken {
                kind,
                reason: format!("{what}: {why}; not written"),
                lost: true,
            });
        };
        for s in &self.sessions {
            lost(StateKind::Sessions, format!("session {s}"));
        }
        for (s, p) in &self.files {
            lost(StateKind::Sessions, format!("session {s}: native file {p}"));
        }
        for s in &self.skills {
            lost(StateKind::Skills, format!("skill {s}"));
        }
        if self.instructions {
            lost(StateKind::Instructions, "the instructions".to_owned());
        }
        for n in &self.notes {
            lost(StateKind::Memory, format!("memory note {n}"));
        }
    }
}

/// Reads every body `state` refers to through `blobs` (each once) and takes out of `state`
/// what refers to a damaged one, as the module says: a side file alone, else its session with
/// the session's subagents; a skill, the instructions, a note. `shown` names the snapshot in
/// errors; `into`, the harness written into (none: a state directory, an export).
pub fn check(
    state: &mut State,
    blobs: &dyn BlobSource,
    shown: &str,
    into: Option<&str>,
) -> Result<Damaged> {
    // What is wrong with each damaged body, by digest.
    let mut wrong: HashMap<Descriptor, String> = HashMap::new();
    let mut read = HashSet::new();
    // The bodies that are text (the instructions, notes: spec/aspstate.md §5.1), which must
    // be UTF-8 as well as whole: a bundle checks them as it is read (`check_data`), a
    // repository here, so that such a body is left out as any damaged one is and the rest
    // is restored (spec conformance trial helper-132, 2).
    let texts: HashSet<Descriptor> = state
        .references()
        .into_iter()
        .filter(|(_, r)| matches!(r, Reference::Instructions | Reference::Note(_)))
        .map(|(d, _)| d)
        .collect();
    for (d, what) in state.references() {
        if !read.insert(d) {
            continue;
        }
        match read_through(blobs, &d, texts.contains(&d)) {
            Ok(()) => {}
            Err(e) if e.class() == ErrorClass::Integrity => {
                wrong.insert(d, e.to_string());
            }
            Err(e) => {
                return Err(Failure::from(e))
                    .with_context(|| format!("{shown}: cannot read {what}"));
            }
        }
    }
    // Which harness made each session's native files: it says which of them a session can
    // lose and still be restored natively.
    let harness_of: HashMap<String, String> = state
        .sessions
        .iter()
        .flatten()
        .filter_map(|s| Some((s.id.to_string(), s.native.as_ref()?.harness.to_string())))
        .collect();
    let side_file = |session: &str, path: &str| {
        harness_of
            .get(session)
            .and_then(|h| asp_convert::harness(h))
            .is_some_and(|h| h.side_file(path))
    };
    let mut damaged = Damaged::default();
    // Sessions left out for their update stream, and for nothing else.
    let mut stream_only: BTreeSet<String> = BTreeSet::new();
    let mut native_damage: BTreeSet<String> = BTreeSet::new();
    let mut at: HashMap<Descriptor, usize> = HashMap::new();
    for (d, what) in state.references() {
        let Some(why) = wrong.get(&d) else {
            continue;
        };
        let i = *at.entry(d).or_insert_with(|| {
            damaged.blobs.push(DamagedBlob {
                blob: d.digest.to_string(),
                problem: why.clone(),
                needed_by: Vec::new(),
            });
            damaged.blobs.len() - 1
        });
        damaged.blobs[i].needed_by.push(what.to_string());
        match what {
            Reference::Updates(id) => {
                damaged.sessions.insert(id.to_string());
                stream_only.insert(id.to_string());
            }
            // A side file alone; the transcript (or a subagent's) takes its session with it:
            // restored without it, the session would be composed anew from its stream and
            // lose its other files, and come back twice once the repository is mended.
            Reference::Native { session, path } if side_file(session.as_str(), path.as_str()) => {
                damaged
                    .files
                    .insert((session.to_string(), path.to_string()));
            }
            Reference::Native { session, .. } => {
                damaged.sessions.insert(session.to_string());
                native_damage.insert(session.to_string());
            }
            Reference::SkillFile { skill, .. } => {
                damaged.skills.insert(skill.to_string());
            }
            Reference::Note(path) => {
                damaged.notes.insert(path.to_string());
            }
            Reference::Instructions => damaged.instructions = true,
        }
    }
    // A subagent whose update stream alone is damaged comes back whole with its parent when
    // both are written into their own harness and the parent's native files hold the
    // subagent's (Claude Code keeps them in the parent's folder): the native restore does not
    // read the stream. It was said lost and not written while its files were written, byte
    // for byte (new-user trial helper-130, 3).
    if let (Some(list), Some(into)) = (&state.sessions, into) {
        let by_id: HashMap<&str, &asp_format::state::Session> =
            list.iter().map(|s| (s.id.as_str(), s)).collect();
        fn native_in<'s>(s: &'s asp_format::state::Session, into: &str) -> Option<&'s Native> {
            s.native
                .as_ref()
                .filter(|n| n.harness.as_str() == into && !n.files.is_empty())
        }
        for id in stream_only.difference(&native_damage) {
            let Some(s) = by_id.get(id.as_str()) else {
                continue;
            };
            let Some(parent) = parent_of(s).and_then(|p| by_id.get(p)) else {
                continue;
            };
            let (Some(mine), Some(theirs)) = (native_in(s, into), native_in(parent, into)) else {
                continue;
            };
            let held = mine.files.iter().all(|f| {
                theirs
                    .files
                    .iter()
                    .any(|p| p.path == f.path && p.content == f.content)
            });
            if held && !damaged.sessions.contains(parent.id.as_str()) {
                damaged
                    .with_parent
                    .insert(id.clone(), parent.id.to_string());
            }
        }
        for id in damaged.with_parent.keys() {
            damaged.sessions.remove(id);
        }
    }
    // The subagent sessions of a session left out go with it (alone they would be written
    // as sessions of their own, and twice once the repository is mended).
    if let Some(list) = &state.sessions {
        loop {
            let more: Vec<String> = list
                .iter()
                .filter(|s| !damaged.sessions.contains(s.id.as_str()))
                .filter(|s| parent_of(s).is_some_and(|p| damaged.sessions.contains(p)))
                .map(|s| s.id.to_string())
                .collect();
            if more.is_empty() {
                break;
            }
            damaged.sessions.extend(more);
        }
    }
    // A session left out whole does not also lose its files one by one, nor comes back with
    // a parent that is left out itself.
    let sessions = damaged.sessions.clone();
    damaged.files.retain(|(s, _)| !sessions.contains(s));
    damaged.with_parent.retain(|s, _| !sessions.contains(s));
    if let Some(list) = &mut state.sessions {
        // (One restored with its parent is taken out too: the parent's files bring it, and
        // its stream cannot be read.)
        list.retain(|s| {
            !damaged.sessions.contains(s.id.as_str())
                && !damaged.with_parent.contains_key(s.id.as_str())
        });
        for s in list.iter_mut() {
            if let Some(native) = &mut s.native {
                let id = s.id.to_string();
                native
                    .files
                    .retain(|f| !damaged.files.contains(&(id.clone(), f.path.to_string())));
            }
        }
    }
    if let Some(list) = &mut state.skills {
        list.retain(|s| !damaged.skills.contains(s.name.as_str()));
    }
    if let Some(list) = &mut state.memory {
        list.retain(|n| {
            !(matches!(n.body, NoteBody::Text(_)) && damaged.notes.contains(n.path.as_str()))
        });
    }
    if damaged.instructions {
        state.instructions = None;
    }
    Ok(damaged)
}

/// [`check`] for the harness's own configuration files: a damaged one is taken out of
/// `config` and added to `damaged`.
pub fn check_config(
    config: &mut Native,
    blobs: &dyn BlobSource,
    shown: &str,
    damaged: &mut Damaged,
) -> Result<()> {
    let mut kept = Vec::with_capacity(config.files.len());
    for f in std::mem::take(&mut config.files) {
        match read_through(blobs, &f.content, false) {
            Ok(()) => kept.push(f),
            Err(e) if e.class() == ErrorClass::Integrity => {
                damaged.blobs.push(DamagedBlob {
                    blob: f.content.digest.to_string(),
                    problem: e.to_string(),
                    needed_by: vec![format!("configuration file {}", f.path)],
                });
                damaged.config.insert(f.path.to_string());
            }
            Err(e) => {
                return Err(Failure::from(e)).with_context(|| {
                    format!("{shown}: cannot read configuration file {}", f.path)
                });
            }
        }
    }
    config.files = kept;
    Ok(())
}

/// Checks every body of `state` in `bundle` (read from `input`) before anything is written
/// or printed: a body that does not check out leaves out what needs it ([`check`]), and what
/// is left must pass every check (update lines, dictionaries), not only its digests; a bundle
/// damaged otherwise is an error. What `asp-unpack` writes and `asp export` prints.
pub fn check_bundle(
    state: &mut State,
    bundle: &asp_format::bundle::Bundle,
    input: &crate::stdio::Input,
    into: Option<&str>,
    progress: &dyn asp_format::progress::Progress,
) -> Result<Damaged> {
    let Err(e) = bundle.check_data(state, progress) else {
        return Ok(Damaged::default());
    };
    let damaged = match e {
        asp_format::bundle::ReadError::Invalid { .. } => {
            check(state, bundle, &input.display(), into)?
        }
        _ => Damaged::default(),
    };
    let rest = match damaged.is_empty() {
        true => Err(e),
        false => bundle.check_data(state, progress),
    };
    if let Err(e) = rest {
        return Err(Failure::from(input.own(e)))
            .with_context(|| format!("{} is damaged", input.display()));
    }
    Ok(damaged)
}

/// Reads the body `d` to its end: the source checks its size and digest as it goes.
fn read_through(
    blobs: &dyn BlobSource,
    d: &Descriptor,
    text: bool,
) -> std::result::Result<(), BlobError> {
    if text {
        // Small (instructions, a note): read whole, to check it is UTF-8.
        if std::str::from_utf8(&blobs.read_all(d)?).is_err() {
            return Err(BlobError::Other(
                asp_format::digest::IntegrityError("it is not UTF-8 text".to_owned()).into_io(),
            ));
        }
        return Ok(());
    }
    let mut r = blobs.open(d)?;
    std::io::copy(&mut r.by_ref(), &mut std::io::sink()).map_err(BlobError::Other)?;
    Ok(())
}
