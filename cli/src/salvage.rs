//! What a restore does when some of the snapshot's bodies are damaged.
//!
//! A backup is read when something was lost, and one bad blob (a disk error, a file changed by
//! hand) must not keep the other sessions from coming back. So, as restic restores what it can,
//! `asp restore` reads every body it needs first; the sessions, skills, instructions and notes
//! whose bodies cannot be read back intact are left out, everything else is restored, and the
//! command ends with the integrity exit code (4), naming each item left out and the blob. The
//! items left out are never half-written, and restoring again once the repository is mended
//! adds them beside what is there (the rest is already there).
//!
//! Only integrity failures (a missing blob, a digest or size that does not match) are
//! salvaged; any other error reading the repository stops the restore before anything is
//! written, as before.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::io::Read;

use asp_format::blob::{BlobError, BlobSource};
use asp_format::error::{Classify, ErrorClass};
use asp_format::state::{Native, NoteBody, Reference};
use asp_format::{Descriptor, State};

use crate::exit::{Context, Failure, Result};

/// The items of a state left out because a body they need is damaged.
#[derive(Debug, Default)]
pub struct Damaged {
    /// One line per damaged body: what refers to it and what is wrong.
    pub lines: Vec<String>,
    sessions: BTreeSet<String>,
    skills: BTreeSet<String>,
    notes: BTreeSet<String>,
    config: BTreeSet<String>,
    instructions: bool,
}

impl Damaged {
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// What was left out, for the summary: `2 sessions (a, b), the instructions`.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        let list = |set: &BTreeSet<String>| set.iter().cloned().collect::<Vec<_>>().join(", ");
        if !self.sessions.is_empty() {
            let n = self.sessions.len();
            let noun = if n == 1 { "session" } else { "sessions" };
            parts.push(format!("{n} {noun} ({})", list(&self.sessions)));
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
        parts.join(", ")
    }
}

/// Reads every body `state` refers to through `blobs` (each once) and takes out of `state`
/// what refers to a damaged one. `shown` names the snapshot in errors.
pub fn check(state: &mut State, blobs: &dyn BlobSource, shown: &str) -> Result<Damaged> {
    // What is wrong with each damaged body, by digest.
    let mut wrong: HashMap<Descriptor, String> = HashMap::new();
    let mut read = HashSet::new();
    for (d, what) in state.references() {
        if !read.insert(d) {
            continue;
        }
        match read_through(blobs, &d) {
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
    let mut damaged = Damaged::default();
    for (d, what) in state.references() {
        let Some(why) = wrong.get(&d) else {
            continue;
        };
        damaged.lines.push(format!("{what}: {why}"));
        match what {
            Reference::Updates(id) | Reference::Native { session: id, .. } => {
                damaged.sessions.insert(id.to_string());
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
    if let Some(list) = &mut state.sessions {
        list.retain(|s| !damaged.sessions.contains(s.id.as_str()));
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
        match read_through(blobs, &f.content) {
            Ok(()) => kept.push(f),
            Err(e) if e.class() == ErrorClass::Integrity => {
                damaged
                    .lines
                    .push(format!("configuration file {}: {e}", f.path));
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

/// Reads the body `d` to its end: the source checks its size and digest as it goes.
fn read_through(blobs: &dyn BlobSource, d: &Descriptor) -> std::result::Result<(), BlobError> {
    let mut r = blobs.open(d)?;
    std::io::copy(&mut r.by_ref(), &mut std::io::sink()).map_err(BlobError::Other)?;
    Ok(())
}
