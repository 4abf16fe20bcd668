//! Project dictionaries (layout 4, spec/aspstate.md §4.1): which transcripts are compressed
//! against which project's dictionary.
//!
//! Sessions of one project read the same files, so their transcripts share much of their text;
//! compressed one by one, each pays for it again. A `tar | zstd` stream sees them within one
//! window, which is why it was a third smaller than a layout 3 bundle (§13.1). A project's
//! dictionary (the first [`PROJECT_DICTIONARY`] bytes of one of its transcripts, a body of its
//! own) gives every transcript of the project that shared text back.
//!
//! The rule is a function of the state alone (and of which native file is each session's
//! transcript, which its harness's converter says: `Harness::transcript`, the body its update
//! stream is compressed against), so every writer of the same state chooses the same
//! dictionaries, whatever the order or the threads in which the bodies were written:
//! - a project is the sessions with the same `cwd` (a session without one is in none);
//! - the project's dictionary comes from the transcript of its session with the least id (by
//!   bytes) among those that name no parent and whose transcript holds at least
//!   [`PROJECT_DICTIONARY`] bytes: a prefix of fixed length, which holds still while the
//!   transcript is appended to;
//! - every transcript of the project's sessions (subagents' included) is compressed against it,
//!   except a transcript that is itself a project's dictionary (no chains of three) and, of a
//!   transcript in several projects, against the least dictionary digest.

use std::collections::{BTreeMap, BTreeSet};

use crate::digest::{Descriptor, Digest};
use crate::state::{Session, State, parent_of};

/// How long a project's dictionary is: the first MiB of a transcript. Measured on the bench
/// stores (§13.1): 2 and 4 MiB save less (fewer projects have so long a transcript), and the
/// prepared dictionary costs nothing per frame.
pub const PROJECT_DICTIONARY: u64 = 1 << 20;

/// One project with a dictionary: the transcript whose first [`PROJECT_DICTIONARY`] bytes are
/// the dictionary, and the transcripts compressed against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    pub source: Descriptor,
    pub transcripts: BTreeSet<Digest>,
}

/// The transcript of a session, as its harness's converter names it (`None`: it has none).
pub type TranscriptOf<'a> = &'a dyn Fn(&Session) -> Option<Descriptor>;

/// The projects of `state` that have a dictionary, ordered by their source transcript.
pub fn projects(state: &State, transcript: TranscriptOf<'_>) -> Vec<Project> {
    struct Group<'a> {
        source: Option<(&'a str, Descriptor)>,
        transcripts: BTreeSet<Digest>,
    }
    let mut groups: BTreeMap<&str, Group<'_>> = BTreeMap::new();
    for s in state.sessions.iter().flatten() {
        let (Some(cwd), Some(t)) = (s.cwd.as_deref(), transcript(s)) else {
            continue;
        };
        let g = groups.entry(cwd).or_insert(Group {
            source: None,
            transcripts: BTreeSet::new(),
        });
        g.transcripts.insert(t.digest);
        let long = t.size >= PROJECT_DICTIONARY;
        let id = s.id.as_str();
        if long && parent_of(s).is_none() && g.source.is_none_or(|(least, _)| id < least) {
            g.source = Some((id, t));
        }
    }
    let mut out: Vec<Project> = groups
        .into_values()
        .filter_map(|g| {
            Some(Project {
                source: g.source?.1,
                transcripts: g.transcripts,
            })
        })
        .collect();
    out.sort_by_key(|p| p.source.digest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::digest::Descriptor;
    use crate::state::Session;

    fn session(id: &str, cwd: &str, stream: &[u8], parent: Option<&str>) -> Session {
        let mut s: Session = serde_json::from_value(serde_json::json!({
            "id": id,
            "title": id,
            "cwd": cwd,
            "updates": Descriptor::of(stream),
        }))
        .unwrap();
        if let Some(p) = parent {
            s.meta = Some(
                serde_json::from_value(serde_json::json!({"asp": {"parent": {"sessionId": p}}}))
                    .unwrap(),
            );
        }
        s
    }

    #[test]
    fn the_least_top_level_session_with_a_long_transcript_gives_its_projects_dictionary() {
        // Streams s-a.. and their transcripts t-a..; t-b is short, t-c is a subagent's.
        let state = State {
            sessions: Some(vec![
                session("b", "/p", b"s-b", None),
                session("c", "/p", b"s-c", Some("d")),
                session("d", "/p", b"s-d", None),
                session("e", "/p", b"s-e", None),
                session("f", "/q", b"s-f", None),
                session("g", "/r", b"s-g", None),
            ]),
            ..State::default()
        };
        let t = |name: &str| Descriptor::of(name.as_bytes()).digest;
        let long = ["c", "d", "e", "g"];
        let transcript = |n: &str| Descriptor {
            digest: t(&format!("t-{n}")),
            size: match long.contains(&n) {
                true => PROJECT_DICTIONARY,
                false => PROJECT_DICTIONARY - 1,
            },
        };
        let got = projects(&state, &|s| Some(transcript(s.id.as_str())));
        let mut want = vec![
            Project {
                source: transcript("d"),
                transcripts: ["b", "c", "d", "e"]
                    .iter()
                    .map(|n| t(&format!("t-{n}")))
                    .collect(),
            },
            Project {
                source: transcript("g"),
                transcripts: BTreeSet::from([t("t-g")]),
            },
        ];
        want.sort_by_key(|p| p.source.digest);
        // /q has no long transcript: no dictionary.
        assert_eq!(got, want);
    }
}
