//! Layout 3's sharded documents: which shard a session is in, and which of an image manifest's
//! layers are the state's documents.
//!
//! A repository of snapshots writes a snapshot's documents for every backup. Written whole, the
//! state manifest and the layer table of a 2,000-session store were most of what a backup of
//! 20 changed sessions added (spec/repository.md §8). Layout 3 splits both by session into
//! parts, one per shard, so a part whose sessions did not change has the same bytes, and so the
//! same blob, as in the parent snapshot. A session and its subagent sessions share a shard, so
//! reading one session reads one part (spec/aspstate.md §3).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::digest::Digest;
use crate::state::{Session, State, parent_of};

/// The annotation on a part's layer descriptor: `"<k>/<N>"`, shard `k` of `N`.
pub const SHARD_ANNOTATION: &str = "vnd.asp.state.shard";

/// How many sessions a shard holds on average. Each part adds two descriptors (~190 bytes) to
/// the image manifest, which every snapshot writes whole, and every changed session rewrites
/// its part: with 20 of ~2,000 sessions changed, 16 per shard (256 shards) keeps the sum of
/// the two smallest (spec/aspstate.md §13.4).
pub const SESSIONS_PER_SHARD: usize = 16;

/// The most shards a reader accepts: what [`shard_count`] gives for 16 million sessions, far
/// beyond a bundle's million entries, so a hostile annotation cannot ask for more parts.
pub const MAX_SHARDS: u32 = 1 << 20;

/// What a snapshot's state documents (heads and parts) may take (spec/aspstate.md §3.5): each
/// at most `each` bytes stored and decoded, and together at most twice that, as layout 2's one
/// state manifest and one table could, each document charged the larger of its stored and
/// decoded size (a zstd frame of empty blocks is large stored and small decoded). The bundle
/// reader, the repository reader and the writer (which refuses what a reader would) all count
/// with this, so they cannot disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DocumentBudget {
    each: u64,
    left: u64,
}

/// Why a document does not fit a [`DocumentBudget`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverBudget {
    /// The document alone is over the limit of one.
    Document { limit: u64 },
    /// The documents together would be over the total.
    Together { total: u64 },
}

impl fmt::Display for OverBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OverBudget::Document { limit } => {
                write!(
                    f,
                    "it takes more than {limit} bytes, the limit of one document"
                )
            }
            OverBudget::Together { total } => write!(
                f,
                "the state's documents take more than {total} bytes together"
            ),
        }
    }
}

impl DocumentBudget {
    /// A budget for documents of at most `each` bytes.
    pub fn new(each: u64) -> Self {
        DocumentBudget {
            each,
            left: each.saturating_mul(2),
        }
    }

    /// The most bytes the next document may have, stored or decoded: read or decode no
    /// further.
    pub fn room(&self) -> u64 {
        self.each.min(self.left)
    }

    /// Whether a document of `size` bytes (stored, or decoded) would fit, saying why not: over
    /// the limit of one document first, then over what is left.
    pub fn fits(&self, size: u64) -> Result<(), OverBudget> {
        if size > self.each {
            Err(OverBudget::Document { limit: self.each })
        } else if size > self.left {
            Err(OverBudget::Together {
                total: self.each.saturating_mul(2),
            })
        } else {
            Ok(())
        }
    }

    /// Why a document larger than [`DocumentBudget::room`] does not fit, when only that is
    /// known (a decoder stopped at the room): past what is left when less than one document's
    /// limit is left, else over that limit.
    pub fn past_room(&self) -> OverBudget {
        match self.left < self.each {
            true => OverBudget::Together {
                total: self.each.saturating_mul(2),
            },
            false => OverBudget::Document { limit: self.each },
        }
    }

    /// Charges a document of `stored` bytes that decodes to `decoded`; nothing is charged
    /// when it does not fit.
    pub fn charge(&mut self, stored: u64, decoded: u64) -> Result<(), OverBudget> {
        let size = stored.max(decoded);
        self.fits(size)?;
        self.left -= size;
        Ok(())
    }
}

/// One shard of `count` (a power of two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Parses the annotation's `"<k>/<N>"`: decimal without leading zeros, `N` a power of two
    /// of at most [`MAX_SHARDS`], `k < N`.
    pub fn parse(text: &str) -> Option<Shard> {
        let (k, n) = text.split_once('/')?;
        let number = |s: &str| -> Option<u32> {
            let ok = !s.is_empty()
                && s.bytes().all(|b| b.is_ascii_digit())
                && (s == "0" || !s.starts_with('0'));
            ok.then(|| s.parse().ok()).flatten()
        };
        let (index, count) = (number(k)?, number(n)?);
        (count.is_power_of_two() && count <= MAX_SHARDS && index < count)
            .then_some(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// The number of shards for a state of `sessions` sessions: the smallest power of two at
/// least `sessions / 16` (rounded up), and at least one.
pub fn shard_count(sessions: usize) -> u32 {
    let wanted = sessions.div_ceil(SESSIONS_PER_SHARD).max(1);
    u32::try_from(wanted.next_power_of_two()).map_or(MAX_SHARDS, |n| n.min(MAX_SHARDS))
}

/// The shard of a family of sessions whose root is `root`, of `count`: the top bits of
/// sha256(root).
pub fn shard_index(root: &str, count: u32) -> u32 {
    debug_assert!(count.is_power_of_two());
    if count <= 1 {
        return 0;
    }
    let digest = Digest::of(root.as_bytes());
    let top = u64::from_be_bytes(digest.as_bytes()[..8].try_into().expect("eight bytes"));
    (top >> (64 - count.trailing_zeros())) as u32
}

/// Each session's root: the session reached by following parents while they name a session
/// of the same state; on a cycle, the least id of the cycle (so every member agrees, wherever
/// the walk starts).
pub fn roots<'a>(parents: &BTreeMap<&'a str, Option<&'a str>>) -> BTreeMap<&'a str, &'a str> {
    let mut roots: BTreeMap<&str, &str> = BTreeMap::new();
    for &start in parents.keys() {
        if roots.contains_key(start) {
            continue;
        }
        // Walk up, remembering the path, until a root, a known session or a cycle.
        let mut path: Vec<&str> = vec![start];
        let mut on_path: BTreeSet<&str> = BTreeSet::from([start]);
        let root = loop {
            let here = *path.last().expect("never empty");
            let up = parents
                .get(here)
                .copied()
                .flatten()
                .filter(|p| parents.contains_key(p));
            match up {
                None => break here,
                Some(p) if roots.contains_key(p) => break roots[p],
                Some(p) if on_path.contains(p) => {
                    let from = path.iter().position(|x| *x == p).expect("on the path");
                    break *path[from..].iter().min().expect("not empty");
                }
                Some(p) => {
                    path.push(p);
                    on_path.insert(p);
                }
            }
        };
        for id in path {
            roots.insert(id, root);
        }
    }
    roots
}

/// The shard of every session, by id, for `count` shards.
pub fn shards_of(sessions: &[Session], count: u32) -> BTreeMap<&str, u32> {
    shard_of_each(
        sessions.iter().map(|s| (s.id.as_str(), parent_of(s))),
        count,
    )
}

/// [`shards_of`] over `(id, parent)` pairs.
pub fn shard_of_each<'a>(
    sessions: impl IntoIterator<Item = (&'a str, Option<&'a str>)>,
    count: u32,
) -> BTreeMap<&'a str, u32> {
    let parents: BTreeMap<&str, Option<&str>> = sessions.into_iter().collect();
    roots(&parents)
        .into_iter()
        .map(|(id, root)| (id, shard_index(root, count)))
        .collect()
}

/// Which of a layout 3 state's `parts` (their shards, ascending) to read first for the sessions
/// `ids`: those of the shards the ids hash to as roots. A subagent asked for by its own id is
/// in its root's shard instead; a reader that does not find an id there reads every part.
pub fn parts_holding(parts: &[Shard], ids: &[String]) -> Vec<usize> {
    let Some(count) = parts.first().map(|s| s.count) else {
        return Vec::new();
    };
    let wanted: BTreeSet<u32> = ids.iter().map(|id| shard_index(id, count)).collect();
    (0..parts.len())
        .filter(|&i| wanted.contains(&parts[i].index))
        .collect()
}

/// A descriptor of the image manifest, as the sorting of its layers needs it.
pub trait DocumentLayer {
    /// The media type, with `+zstd` when it is compressed.
    fn media_type(&self) -> &str;
    /// The `vnd.asp.state.shard` annotation, when it has one.
    fn shard(&self) -> Option<&str>;
}

/// The state's documents among an image manifest's layers: the head of the state manifest and
/// of the layer table, and the parts (layout 3) by shard.
#[derive(Debug)]
pub struct DocumentLayers<'m, D> {
    pub state: &'m D,
    pub table: &'m D,
    /// Each shard's state part and table part, ascending by shard.
    pub parts: Vec<(Shard, &'m D, &'m D)>,
}

/// A blob named as more than one state part, if any (the least such digest). Two parts never
/// hold the same sessions, so never the same bytes; a bundle or snapshot that names one blob
/// as many parts would have it read and parsed again and again (spec/aspstate.md §3.5).
pub fn repeated_part(state_parts: impl IntoIterator<Item = Digest>) -> Option<Digest> {
    let mut all: Vec<Digest> = state_parts.into_iter().collect();
    all.sort_unstable();
    all.windows(2).find(|w| w[0] == w[1]).map(|w| w[0])
}

/// Which document a layer is, by its base media type (without `+zstd`).
fn base(media_type: &str) -> &str {
    media_type.strip_suffix("+zstd").unwrap_or(media_type)
}

/// Finds the documents among `layers`, which must come first and in this order: the state
/// head, the table head (the layers of the state-manifest and layer-table media types without
/// the shard annotation), then, when `parts_allowed` (layout 3), for every shard, ascending, its
/// state part and its table part, all of one shard count. No other layer may be of these media
/// types. What is wrong is said as a sentence about the image manifest.
pub fn document_layers<'m, D: DocumentLayer>(
    layers: &'m [D],
    state_type: &str,
    table_type: &str,
    parts_allowed: bool,
) -> Result<DocumentLayers<'m, D>, String> {
    let article = |t: &str| {
        if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        }
    };
    let role = |l: &D| -> Result<(bool, Option<Shard>), String> {
        let b = base(l.media_type());
        let is_state = b == state_type;
        let shard = match l.shard() {
            None => None,
            Some(_) if !parts_allowed => {
                return Err(format!(
                    "{} {b} layer has the {SHARD_ANNOTATION} annotation, which only layout 3 has",
                    article(b)
                ));
            }
            Some(text) => Some(Shard::parse(text).ok_or_else(|| {
                format!(
                    "{} {b} layer's {SHARD_ANNOTATION} {text:?} is not \"k/N\" with N a power of two \
                     of at most {MAX_SHARDS} and k < N",
                    article(b)
                )
            })?),
        };
        Ok((is_state, shard))
    };
    let is_document = |l: &D| {
        let b = base(l.media_type());
        b == state_type || b == table_type
    };
    let heads = format!(
        "its first two layers must be the {state_type} and the {table_type} layers without the \
         {SHARD_ANNOTATION} annotation"
    );
    let (Some(state), Some(table)) = (layers.first(), layers.get(1)) else {
        return Err(heads);
    };
    if !is_document(state)
        || !is_document(table)
        || role(state)? != (true, None)
        || role(table)? != (false, None)
    {
        return Err(heads);
    }
    let mut parts: Vec<(Shard, &D, &D)> = Vec::new();
    let mut rest = layers[2..].iter().peekable();
    while let Some(l) = rest.next_if(|l| is_document(l)) {
        let (true, Some(shard)) = role(l)? else {
            return Err(format!(
                "after the two heads come the parts, each shard's {state_type} part then its \
                 {table_type} part; another {} layer is in the way",
                base(l.media_type())
            ));
        };
        let table = match rest.next() {
            Some(t) if is_document(t) && role(t)? == (false, Some(shard)) => t,
            _ => {
                return Err(format!(
                    "the {state_type} part of shard {shard} is not followed by the {table_type} \
                     part of the same shard"
                ));
            }
        };
        if let Some((last, ..)) = parts.last() {
            if last.count != shard.count {
                return Err(format!(
                    "its parts do not all have the same shard count ({last} and {shard})"
                ));
            }
            if last.index >= shard.index {
                return Err(format!(
                    "its parts are not in ascending shard order, each once ({last} before {shard})"
                ));
            }
        }
        parts.push((shard, l, table));
    }
    if let Some(l) = rest.find(|l| is_document(l)) {
        return Err(format!(
            "{} {} layer comes after the body layers; the documents come first",
            article(base(l.media_type())),
            base(l.media_type())
        ));
    }
    Ok(DocumentLayers {
        state,
        table,
        parts,
    })
}

/// The bodies `state` refers to, and their dictionaries, that a table document has no entry
/// for: `entry` gives a body's entry as its dictionary (`Some(None)`: an entry without one).
/// In layout 3 each table document holds the entries its own state document needs, so that a
/// partial read finds them; a table merged from all of them would hide a gap.
pub fn missing_entries(
    state: &State,
    entry: &dyn Fn(&Digest) -> Option<Option<Digest>>,
) -> BTreeSet<Digest> {
    let mut missing = BTreeSet::new();
    for (d, _) in state.references() {
        // The body, then its dictionaries, as deep as layers go (layout 4: two).
        let mut next = Some(d.digest);
        for _ in 0..=crate::bundle::oci::MAX_CHAIN {
            let Some(x) = next else { break };
            match entry(&x) {
                None => {
                    missing.insert(x);
                    break;
                }
                Some(dictionary) => next = dictionary.filter(|y| *y != x),
            }
        }
    }
    missing
}

/// What is wrong with where a layout 3 state's sessions are: `sessions` are each session's id
/// and parent with the shard of the part it was found in, of `count` shards. A session must be
/// in one part only, the part of its root's shard; a part must not be empty (`parts`: the
/// shards that have one); the shard count must be [`shard_count`]'s. Each problem comes with
/// the shard of the part it is about.
pub fn placement_problems(
    sessions: &[(u32, &str, Option<&str>)],
    parts: &[Shard],
) -> Vec<(u32, String)> {
    let Some(count) = parts.first().map(|s| s.count) else {
        return Vec::new();
    };
    let mut problems = Vec::new();
    let wanted = shard_count(sessions.len());
    if count != wanted {
        problems.push((
            parts[0].index,
            format!(
                "the state is in {count} shards, but {} sessions make {wanted}",
                sessions.len()
            ),
        ));
    }
    let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
    for (index, id, _) in sessions {
        if let Some(other) = seen.insert(id, *index) {
            problems.push((
                *index,
                format!("session {id} is also in part {other}/{count} of the state"),
            ));
        }
    }
    let holding: BTreeSet<u32> = sessions.iter().map(|(i, ..)| *i).collect();
    for s in parts {
        if !holding.contains(&s.index) {
            problems.push((s.index, format!("part {s} of the state has no sessions")));
        }
    }
    let expected = shard_of_each(sessions.iter().map(|(_, id, p)| (*id, *p)), count);
    for (index, id, _) in sessions {
        let want = expected[id];
        if want != *index {
            problems.push((
                *index,
                format!(
                    "session {id} belongs in part {want}/{count} of the state (its root's \
                     shard), not {index}/{count}"
                ),
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_blob_named_as_two_state_parts_is_found() {
        let d = |b: &[u8]| Digest::of(b);
        assert_eq!(repeated_part([d(b"a"), d(b"b"), d(b"c")]), None);
        assert_eq!(repeated_part([d(b"b"), d(b"a"), d(b"b")]), Some(d(b"b")));
        assert_eq!(repeated_part([]), None);
    }

    #[test]
    fn the_documents_budget_is_each_document_and_twice_that_together() {
        let mut b = DocumentBudget::new(100);
        assert_eq!(b.room(), 100);
        // Charged the larger of stored and decoded.
        b.charge(10, 80).unwrap();
        b.charge(70, 5).unwrap();
        assert_eq!(b.room(), 50);
        // Over one document's limit is said as that, with all or part of the total left.
        assert_eq!(
            DocumentBudget::new(100).charge(101, 0),
            Err(OverBudget::Document { limit: 100 })
        );
        assert_eq!(b.charge(101, 0), Err(OverBudget::Document { limit: 100 }));
        // Over what is left: refused, and not charged.
        assert_eq!(b.charge(51, 51), Err(OverBudget::Together { total: 200 }));
        assert_eq!(b.room(), 50);
        b.charge(50, 50).unwrap();
        assert_eq!(b.room(), 0);
        assert_eq!(b.fits(1), Err(OverBudget::Together { total: 200 }));
        assert!(b.fits(0).is_ok());
        // No overflow at the edges.
        let mut huge = DocumentBudget::new(u64::MAX);
        huge.charge(u64::MAX, 0).unwrap();
        assert_eq!(huge.room(), 0);
    }

    #[test]
    fn the_shard_annotation_parses_strictly() {
        assert_eq!(
            Shard::parse("17/256"),
            Some(Shard {
                index: 17,
                count: 256
            })
        );
        assert_eq!(Shard::parse("0/1"), Some(Shard { index: 0, count: 1 }));
        for bad in [
            "", "1", "/4", "1/", "4/4", "1/3", "01/4", "1/04", "-1/4", "1/0", " 1/4", "1/4 ",
            "+1/4",
        ] {
            assert_eq!(Shard::parse(bad), None, "{bad:?}");
        }
        assert_eq!(Shard::parse("17/256").unwrap().to_string(), "17/256");
    }

    #[test]
    fn the_shard_count_is_the_power_of_two_that_keeps_sixteen_sessions_a_shard() {
        for (sessions, count) in [
            (0, 1),
            (1, 1),
            (16, 1),
            (17, 2),
            (32, 2),
            (33, 4),
            (2165, 256),
            (4096, 256),
            (4097, 512),
        ] {
            assert_eq!(shard_count(sessions), count, "{sessions} sessions");
        }
    }

    #[test]
    fn a_shard_is_the_top_bits_of_the_roots_sha256() {
        // sha256("a") = ca978112...: top byte 0xca = 0b1100_1010.
        assert_eq!(shard_index("a", 1), 0);
        assert_eq!(shard_index("a", 2), 1);
        assert_eq!(shard_index("a", 4), 0b11);
        assert_eq!(shard_index("a", 256), 0xca);
        assert_eq!(shard_index("a", 65536), 0xca97);
    }

    #[test]
    fn a_family_shares_its_roots_shard_and_a_cycle_its_least_member() {
        let parents = BTreeMap::from([
            ("root", None),
            ("child", Some("root")),
            ("grandchild", Some("child")),
            ("orphan", Some("not-here")),
            ("c2", Some("c1")),
            ("c1", Some("c3")),
            ("c3", Some("c2")),
            ("under-cycle", Some("c3")),
        ]);
        let roots = roots(&parents);
        assert_eq!(roots["root"], "root");
        assert_eq!(roots["child"], "root");
        assert_eq!(roots["grandchild"], "root");
        assert_eq!(roots["orphan"], "orphan");
        for id in ["c1", "c2", "c3", "under-cycle"] {
            assert_eq!(roots[id], "c1", "{id}");
        }
    }
    #[test]
    fn placement_problems_name_misplaced_repeated_sessions_empty_parts_and_a_wrong_count() {
        let shard = |id: &str| shard_index(id, 1);
        assert_eq!(shard("a"), 0);
        let one = [Shard { index: 0, count: 1 }];
        // A family in its part: nothing wrong.
        let ok = [(0, "a", None), (0, "b", Some("a"))];
        assert!(placement_problems(&ok, &one).is_empty());
        // Of four shards: "a" hashes to 3 (0xca >> 6), and its subagent goes with it.
        let four = |i| Shard { index: i, count: 4 };
        let misplaced = [(3, "a", None), (1, "b", Some("a"))];
        let got = placement_problems(&misplaced, &[four(1), four(3)]);
        assert!(
            got.iter()
                .any(|(i, m)| *i == 1 && m.contains("session b belongs in part 3/4")),
            "{got:?}"
        );
        assert!(
            got.iter().any(|(_, m)| m.contains("2 sessions make 1")),
            "{got:?}"
        );
        let repeated = [(0, "a", None), (0, "a", None)];
        let got = placement_problems(&repeated, &one);
        assert!(
            got.iter()
                .any(|(_, m)| m.contains("session a is also in part 0/1")),
            "{got:?}"
        );
        let got = placement_problems(&[(0, "a", None)], &[four(0), four(3)]);
        assert!(
            got.iter()
                .any(|(i, m)| *i == 3 && m.contains("part 3/4 of the state has no sessions")),
            "{got:?}"
        );
    }

    /// A layer of the image manifest, for [`document_layers`].
    #[derive(Debug)]
    struct L(&'static str, Option<&'static str>);

    impl DocumentLayer for L {
        fn media_type(&self) -> &str {
            self.0
        }
        fn shard(&self) -> Option<&str> {
            self.1
        }
    }

    #[test]
    fn the_documents_come_first_heads_then_part_pairs_ascending() {
        const S: &str = "s+zstd";
        const T: &str = "t";
        let find = |layers: &[L]| document_layers(layers, "s", "t", true).map(|d| d.parts.len());
        assert_eq!(find(&[L(S, None), L(T, None), L("body", None)]), Ok(0));
        assert_eq!(
            find(&[
                L(S, None),
                L(T, None),
                L(S, Some("0/2")),
                L(T, Some("0/2")),
                L(S, Some("1/2")),
                L(T, Some("1/2")),
                L("body", None)
            ]),
            Ok(2)
        );
        for (bad, says) in [
            (vec![L(T, None), L(S, None)], "first two layers"),
            (vec![L(S, None)], "first two layers"),
            (
                vec![
                    L(S, None),
                    L(T, None),
                    L("body", None),
                    L(S, Some("0/1")),
                    L(T, Some("0/1")),
                ],
                "after the body layers",
            ),
            (
                vec![
                    L(S, None),
                    L(T, None),
                    L(S, Some("1/2")),
                    L(T, Some("1/2")),
                    L(S, Some("0/2")),
                    L(T, Some("0/2")),
                ],
                "ascending",
            ),
            (
                vec![
                    L(S, None),
                    L(T, None),
                    L(S, Some("0/2")),
                    L(T, Some("0/2")),
                    L(S, Some("1/4")),
                    L(T, Some("1/4")),
                ],
                "same shard count",
            ),
            (
                vec![L(S, None), L(T, None), L(S, Some("0/2")), L(T, Some("1/2"))],
                "not followed",
            ),
            (
                vec![L(S, None), L(T, None), L(T, Some("0/2"))],
                "in the way",
            ),
            (vec![L(S, None), L(T, None), L(S, None)], "in the way"),
            (
                vec![L(S, None), L(T, None), L(S, Some("0/3")), L(T, Some("0/3"))],
                "power of two",
            ),
        ] {
            let err = find(&bad).unwrap_err();
            assert!(err.contains(says), "{err} (expected {says:?})");
        }
        let err = document_layers(
            &[L(S, None), L(T, None), L(S, Some("0/1")), L(T, Some("0/1"))],
            "s",
            "t",
            false,
        )
        .unwrap_err();
        assert!(err.contains("only layout 3"), "{err}");
    }

    #[test]
    fn the_parts_to_read_first_are_those_of_the_asked_ids_shards() {
        let four = |i| Shard { index: i, count: 4 };
        // "a" hashes to shard 3 of 4; a state without a part for shard 3 has none to read.
        assert_eq!(
            parts_holding(&[four(0), four(3)], &["a".to_owned()]),
            vec![1]
        );
        assert_eq!(
            parts_holding(&[four(0), four(1)], &["a".to_owned()]),
            Vec::<usize>::new()
        );
        assert_eq!(parts_holding(&[], &["a".to_owned()]), Vec::<usize>::new());
    }
}
