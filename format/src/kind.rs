//! The six kinds of portable state, named as the protocol names them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One kind of portable agent state.
///
/// The order of the variants is the canonical order: the order kinds appear in manifests,
/// exports and summaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StateKind {
    /// Conversations, each as its ACP `session/update` stream.
    Sessions,
    /// The agent's AGENTS.md, whole.
    Instructions,
    /// Agent Skills folders, file by file.
    Skills,
    /// MCP servers, as ACP's `session/new` takes them.
    Tools,
    /// Markdown notes by path, with their origin; deletions as tombstones.
    Memory,
    /// Session config option values by option id.
    Settings,
}

impl StateKind {
    /// Every kind, in canonical order.
    pub const ALL: [StateKind; 6] = [
        StateKind::Sessions,
        StateKind::Instructions,
        StateKind::Skills,
        StateKind::Tools,
        StateKind::Memory,
        StateKind::Settings,
    ];

    /// The protocol's name for the kind.
    pub fn as_str(self) -> &'static str {
        match self {
            StateKind::Sessions => "sessions",
            StateKind::Instructions => "instructions",
            StateKind::Skills => "skills",
            StateKind::Tools => "tools",
            StateKind::Memory => "memory",
            StateKind::Settings => "settings",
        }
    }

    fn bit(self) -> u8 {
        1 << (self as u8)
    }
}

impl fmt::Display for StateKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of the six kinds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown state kind {0:?} (the kinds are sessions, instructions, skills, tools, memory, settings)"
)]
pub struct UnknownKind(pub String);

impl FromStr for StateKind {
    type Err = UnknownKind;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        StateKind::ALL
            .into_iter()
            .find(|k| k.as_str() == s)
            .ok_or_else(|| UnknownKind(s.to_owned()))
    }
}

/// A set of kinds, iterated in canonical order.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct KindSet(u8);

impl KindSet {
    pub const EMPTY: KindSet = KindSet(0);
    pub const ALL: KindSet = KindSet(0b11_1111);

    pub fn contains(self, kind: StateKind) -> bool {
        self.0 & kind.bit() != 0
    }

    pub fn insert(&mut self, kind: StateKind) {
        self.0 |= kind.bit();
    }

    #[must_use]
    pub fn with(mut self, kind: StateKind) -> Self {
        self.insert(kind);
        self
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    #[must_use]
    pub fn intersection(self, other: KindSet) -> KindSet {
        KindSet(self.0 & other.0)
    }

    pub fn iter(self) -> impl Iterator<Item = StateKind> {
        StateKind::ALL
            .into_iter()
            .filter(move |k| self.contains(*k))
    }

    /// Parses a comma-separated list such as `sessions,skills`.
    pub fn parse_list(s: &str) -> Result<KindSet, UnknownKind> {
        s.split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
            .map(StateKind::from_str)
            .collect()
    }
}

impl FromIterator<StateKind> for KindSet {
    fn from_iter<I: IntoIterator<Item = StateKind>>(iter: I) -> Self {
        let mut set = KindSet::EMPTY;
        for k in iter {
            set.insert(k);
        }
        set
    }
}

impl fmt::Debug for KindSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl fmt::Display for KindSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for k in self.iter() {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            f.write_str(k.as_str())?;
        }
        Ok(())
    }
}

impl Serialize for KindSet {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter())
    }
}

impl<'de> Deserialize<'de> for KindSet {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Vec::<StateKind>::deserialize(d)?.into_iter().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_serialise_by_their_protocol_names() {
        let json = serde_json::to_string(&StateKind::ALL).unwrap();
        assert_eq!(
            json,
            r#"["sessions","instructions","skills","tools","memory","settings"]"#
        );
    }

    #[test]
    fn kind_lists_parse_and_iterate_in_canonical_order() {
        let set = KindSet::parse_list("settings, sessions").unwrap();
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            [StateKind::Sessions, StateKind::Settings]
        );
        assert_eq!(set.to_string(), "sessions,settings");
        assert!(KindSet::parse_list("sessions,notes").is_err());
    }
}
