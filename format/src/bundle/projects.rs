//! Project dictionaries (layout 4, spec/aspstate.md §4.1): which transcripts are compressed
//! against which project's dictionary.
//!
//! Sessions of one project read the same files, so their transcripts share much of their text;
//! compressed one by one, each pays for it again. A `tar | zstd` stream sees them within one
//! window, which is why it was a third smaller than a layout 3 bundle (§13.1). A project's
//! dictionary (the first bytes of one of its transcripts, [`DICTIONARY_LENGTHS`], a body of its
//! own) gives every transcript of the project that shared text back.
//!
//! The rule is a function of the state alone (and of which native file is each session's
//! transcript, which its harness's converter says: `Harness::transcript`, the body its update
//! stream is compressed against), so every writer of the same state chooses the same
//! dictionaries, whatever the order or the threads in which the bodies were written:
//! - a project is the sessions with the same `cwd` (a session without one is in none);
//! - the project's dictionary is as long as the longest of [`DICTIONARY_LENGTHS`] that a
//!   transcript of its sessions naming no parent holds;
//! - it comes from the transcript of the session with the least id (by bytes) among those that
//!   name no parent and whose transcript holds at least that length: a prefix of fixed length,
//!   which holds still while the transcript is appended to;
//! - every transcript of the project's sessions (subagents' included) is compressed against it,
//!   except a transcript that is itself a project's dictionary (no chains of three) and, of a
//!   transcript in several projects, against the least dictionary digest.

use std::collections::{BTreeMap, BTreeSet};

use crate::digest::{Descriptor, Digest};
use crate::state::{Session, State, parent_of};

/// How long a project's dictionary can be, longest first: the first MiB of a transcript when
/// one of the project's holds a MiB, else its first 512 KiB, else its first 256 KiB; a project
/// whose transcripts are all shorter has none. Measured on the bench stores (spec §13.1): 2 and
/// 4 MiB save less (fewer projects have so long a transcript); taking shorter transcripts'
/// prefixes only for projects without a long one gives the small stores' projects a
/// dictionary (the 64 MiB Gemini CLI home's bundle 6.37 -> 5.97 MB, Claude Code's 10.97 ->
/// 10.48 MB) and changes no dictionary of a project that has a 1 MiB one. A prepared
/// dictionary costs nothing per frame.
pub const DICTIONARY_LENGTHS: [u64; 3] = [1 << 20, 1 << 19, 1 << 18];

/// The longest a project's dictionary is ([`DICTIONARY_LENGTHS`]): what a writer reads of a
/// transcript that may be a dictionary's source.
pub const PROJECT_DICTIONARY: u64 = DICTIONARY_LENGTHS[0];

/// The length of the dictionary a project whose longest top-level transcript holds `longest`
/// bytes takes, if any ([`DICTIONARY_LENGTHS`]).
pub fn dictionary_length(longest: u64) -> Option<u64> {
    DICTIONARY_LENGTHS.into_iter().find(|&l| longest >= l)
}

/// The rule's choice for one project (spec §4.1), from its top-level transcripts as
/// `(session id, size, what names the transcript)`: the dictionary's length
/// ([`dictionary_length`] of the longest) and the transcript of the least session id among
/// those that hold that many bytes. One rule for the state ([`projects`]) and for a pack's
/// prediction from its survey (sizes as surveyed), so the two agree whenever the files did
/// not change in between.
pub fn dictionary_source<'a, T>(
    top: impl IntoIterator<Item = (&'a str, u64, T)>,
) -> Option<(u64, T)> {
    let top: Vec<(&str, u64, T)> = top.into_iter().collect();
    let length = dictionary_length(top.iter().map(|t| t.1).max()?)?;
    top.into_iter()
        .filter(|t| t.1 >= length)
        .min_by_key(|t| t.0)
        .map(|(_, _, source)| (length, source))
}

/// The digests of a transcript's first bytes at each of [`DICTIONARY_LENGTHS`] it holds: the
/// dictionaries its project may take of it, found among the bodies (predicted) without decoding
/// the transcript again.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Heads([Option<Digest>; DICTIONARY_LENGTHS.len()]);

impl Heads {
    /// Feeds `bytes` to `hasher`, the running hash of a body from its first byte, and takes
    /// each head the body reaches on the way. A writer that hashes a transcript as it comes
    /// gets its heads from that one hash: hashed apart, the first MiB of every transcript
    /// was hashed twice.
    pub fn update(&mut self, hasher: &mut crate::digest::Hasher, mut bytes: &[u8]) {
        loop {
            let at = hasher.size();
            let next = DICTIONARY_LENGTHS
                .iter()
                .enumerate()
                .filter(|&(_, &l)| l > at)
                .min_by_key(|&(_, &l)| l);
            match next {
                Some((i, &length)) if length - at <= bytes.len() as u64 => {
                    let (head, rest) = bytes.split_at((length - at) as usize);
                    hasher.update(head);
                    self.0[i] = Some(hasher.clone().finish().digest);
                    bytes = rest;
                }
                _ => {
                    hasher.update(bytes);
                    return;
                }
            }
        }
    }

    /// The digest of the first `length` bytes, when `length` is one of [`DICTIONARY_LENGTHS`]
    /// and the body holds them.
    pub fn get(&self, length: u64) -> Option<Digest> {
        let i = DICTIONARY_LENGTHS.iter().position(|&l| l == length)?;
        self.0[i]
    }
}

/// One project with a dictionary: the transcript whose first `length` bytes are the
/// dictionary, and the transcripts compressed against it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Project {
    pub source: Descriptor,
    /// How many of the source's first bytes the dictionary is (one of
    /// [`DICTIONARY_LENGTHS`]).
    pub length: u64,
    pub transcripts: BTreeSet<Digest>,
}

/// The transcript of a session, as its harness's converter names it (`None`: it has none).
pub type TranscriptOf<'a> = &'a dyn Fn(&Session) -> Option<Descriptor>;

/// The projects of `state` that have a dictionary, ordered by their source transcript.
pub fn projects(state: &State, transcript: TranscriptOf<'_>) -> Vec<Project> {
    #[derive(Default)]
    struct Group<'a> {
        /// The top-level sessions' transcripts, by session id.
        top: Vec<(&'a str, Descriptor)>,
        transcripts: BTreeSet<Digest>,
    }
    let mut groups: BTreeMap<&str, Group<'_>> = BTreeMap::new();
    for s in state.sessions.iter().flatten() {
        let (Some(cwd), Some(t)) = (s.cwd.as_deref(), transcript(s)) else {
            continue;
        };
        let g = groups.entry(cwd).or_default();
        g.transcripts.insert(t.digest);
        if parent_of(s).is_none() {
            g.top.push((s.id.as_str(), t));
        }
    }
    let mut out: Vec<Project> = groups
        .into_values()
        .filter_map(|g| {
            let (length, source) =
                dictionary_source(g.top.iter().map(|(id, t)| (*id, t.size, *t)))?;
            Some(Project {
                source,
                length,
                transcripts: g.transcripts,
            })
        })
        .collect();
    out.sort_by_key(|p| (p.source.digest, p.length));
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
        const MIB: u64 = 1 << 20;
        // Streams s-a.. and their transcripts t-a.. of these sizes; c is d's subagent.
        let sizes = [
            // /p: d is the least id of a top-level MiB (b is shorter, c a subagent's).
            ("b", "/p", MIB - 1),
            ("c", "/p", MIB),
            ("d", "/p", MIB),
            ("e", "/p", MIB),
            // /q: no MiB, so its dictionary is the first 512 KiB of its transcript that holds them.
            ("f", "/q", MIB - 1),
            // /r: a MiB.
            ("g", "/r", MIB),
            // /s: nothing reaches 256 KiB: no dictionary.
            ("h", "/s", MIB / 4 - 1),
            // /t: 256 KiB, from the least id of those that hold them (i is shorter).
            ("i", "/t", MIB / 4 - 1),
            ("j", "/t", MIB / 4),
            ("k", "/t", MIB / 2 - 1),
            // /u: only a subagent's transcript is long: no dictionary.
            ("l", "/u", 10),
            ("m", "/u", MIB),
        ];
        let state = State {
            sessions: Some(
                sizes
                    .iter()
                    .map(|(n, cwd, _)| {
                        let parent = match *n {
                            "c" => Some("d"),
                            "m" => Some("l"),
                            _ => None,
                        };
                        session(n, cwd, format!("s-{n}").as_bytes(), parent)
                    })
                    .collect(),
            ),
            ..State::default()
        };
        let t = |name: &str| Descriptor::of(format!("t-{name}").as_bytes()).digest;
        let transcript = |n: &str| Descriptor {
            digest: t(n),
            size: sizes.iter().find(|s| s.0 == n).unwrap().2,
        };
        let got = projects(&state, &|s| Some(transcript(s.id.as_str())));
        let project = |source: &str, length: u64, members: &[&str]| Project {
            source: transcript(source),
            length,
            transcripts: members.iter().map(|n| t(n)).collect(),
        };
        let mut want = vec![
            project("d", MIB, &["b", "c", "d", "e"]),
            project("f", MIB / 2, &["f"]),
            project("g", MIB, &["g"]),
            project("j", MIB / 4, &["i", "j", "k"]),
        ];
        want.sort_by_key(|p| p.source.digest);
        assert_eq!(got, want);
    }

    /// The heads of `body` and its digest, taken as a writer takes them: the body fed in
    /// writes of `chunk` bytes.
    fn heads_of(body: &[u8], chunk: usize) -> (Heads, Digest) {
        let mut heads = Heads::default();
        let mut hasher = crate::digest::Hasher::new();
        for write in body.chunks(chunk) {
            heads.update(&mut hasher, write);
        }
        (heads, hasher.finish().digest)
    }

    #[test]
    fn heads_are_the_digests_of_each_dictionary_length_a_body_holds() {
        let body: Vec<u8> = (0..(3u32 << 19)).map(|i| (i % 251) as u8).collect();
        // Writes that end on a length, that straddle one, that straddle all three.
        for chunk in [1 << 18, 1000, 3 << 19] {
            let (heads, digest) = heads_of(&body, chunk);
            assert_eq!(digest, Digest::of(&body), "the body's own digest");
            for length in DICTIONARY_LENGTHS {
                assert_eq!(
                    heads.get(length),
                    Some(Digest::of(&body[..length as usize])),
                    "{chunk}"
                );
            }
            assert_eq!(heads.get(12345), None);
            let (short, _) = heads_of(&body[..(1 << 19) + 7], chunk);
            assert_eq!(short.get(1 << 20), None);
            assert_eq!(short.get(1 << 19), Some(Digest::of(&body[..1 << 19])));
            assert_eq!(short.get(1 << 18), Some(Digest::of(&body[..1 << 18])));
            assert_eq!(heads_of(&body[..100], chunk).0, Heads::default());
        }
    }

    #[test]
    fn a_dictionary_is_as_long_as_the_longest_length_a_transcript_reaches() {
        assert_eq!(dictionary_length(5 << 20), Some(1 << 20));
        assert_eq!(dictionary_length(1 << 20), Some(1 << 20));
        assert_eq!(dictionary_length((1 << 20) - 1), Some(1 << 19));
        assert_eq!(dictionary_length(1 << 18), Some(1 << 18));
        assert_eq!(dictionary_length((1 << 18) - 1), None);
    }
}
