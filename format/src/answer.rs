//! What a destination says about a state it was handed: the `_asp/state/import` answer.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::kind::{KindSet, StateKind};

/// What was taken, what was not and why, and each session's new id by its old.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportAnswer {
    /// Kinds the destination took, in canonical order. A kind can be taken and still have
    /// entries in `not_taken` (some sessions taken, one refused).
    pub taken: KindSet,
    /// What was not taken, with a reason in words for the owner.
    pub not_taken: Vec<NotTaken>,
    /// For every session taken: its id in the state → its id in the destination. A session
    /// already there maps to itself.
    pub sessions: BTreeMap<String, String>,
    /// The sessions (by id in the state) that were there already with the same content, so
    /// nothing was written for them. Not part of the protocol's answer, which maps them to
    /// themselves as it maps a session written under its own id; a person running an import
    /// again is told.
    #[serde(skip)]
    pub already_there: BTreeSet<String>,
    /// The sessions (by id in the state) kept beside a different version already there,
    /// under a new id. (A new id alone does not say it: harnesses that name sessions their own
    /// way give every carried session one.)
    #[serde(skip)]
    pub beside: BTreeSet<String>,
    /// The sessions (by id in the state) whose version there the carried one continues (it
    /// holds every line of it and more after them: continued on another machine), brought up
    /// to date under their own id.
    #[serde(skip)]
    pub updated: BTreeSet<String>,
    /// What was written into a file the destination already had (a setting added to the
    /// owner's own settings file), each said so a person knows their file changed. Not part of
    /// the protocol's answer, where such an item is simply taken.
    #[serde(skip)]
    pub written_into: Vec<WrittenInto>,
}

/// Something written into a file the owner already had.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WrittenInto {
    pub kind: StateKind,
    /// The file, as the command was given it.
    #[serde(default)]
    pub file: std::path::PathBuf,
    /// The file and what was added to it, in words for the owner.
    pub what: String,
}

/// One thing a destination did not take.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotTaken {
    pub kind: StateKind,
    pub reason: String,
    /// Whether it is lost (a session that could not be written), as opposed to left out by
    /// design or impossible in the destination (a model it cannot run, a skill of the same
    /// name kept). Commands exit 3 only for a loss. Not part of the protocol's answer: the
    /// destination that answered knows it; a client reads the reason.
    #[serde(skip)]
    pub lost: bool,
}

impl ImportAnswer {
    pub fn take(&mut self, kind: StateKind) {
        self.taken.insert(kind);
    }

    /// `kind` was not taken, by design or because the destination cannot hold it.
    pub fn refuse(&mut self, kind: StateKind, reason: impl Into<String>) {
        self.not_taken.push(NotTaken {
            kind,
            reason: reason.into(),
            lost: false,
        });
    }

    /// Something of `kind` could not be written and is lost to the destination.
    pub fn lose(&mut self, kind: StateKind, reason: impl Into<String>) {
        self.not_taken.push(NotTaken {
            kind,
            reason: reason.into(),
            lost: true,
        });
    }

    /// Whether anything handed over is lost (what makes a command exit 3).
    pub fn any_lost(&self) -> bool {
        self.not_taken.iter().any(|n| n.lost)
    }

    /// True when everything handed over was taken.
    pub fn is_complete(&self) -> bool {
        self.not_taken.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serialises_as_the_seed_example() {
        let mut a = ImportAnswer::default();
        a.take(StateKind::Instructions);
        a.take(StateKind::Sessions);
        a.refuse(StateKind::Memory, "this agent keeps no memory");
        a.sessions
            .insert("sess_789xyz".into(), "sess_a1b2c3".into());
        assert_eq!(
            serde_json::to_string(&a).unwrap(),
            r#"{"taken":["sessions","instructions"],"notTaken":[{"kind":"memory","reason":"this agent keeps no memory"}],"sessions":{"sess_789xyz":"sess_a1b2c3"}}"#
        );
        let back: ImportAnswer = serde_json::from_str(
            r#"{"taken": ["sessions", "instructions"], "notTaken": [{"kind": "memory", "reason": "this agent keeps no memory"}], "sessions": {"sess_789xyz": "sess_a1b2c3"}}"#,
        )
        .unwrap();
        assert_eq!(back, a);
    }
}
