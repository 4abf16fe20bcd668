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
use crate::state::{Session, parent_of};

/// The annotation on a part's layer descriptor: `"<k>/<N>"`, shard `k` of `N`.
pub const SHARD_ANNOTATION: &str = "vnd.asp.state.shard";

/// How many sessions a shard holds on average. Each part adds two descriptors (~190 bytes) to
/// the image manifest, which every snapshot writes whole, and every changed session rewrites
/// its part: with 20 of ~2,000 sessions changed, 16 per shard (256 shards) keeps the sum of
/// the two smallest (spec/aspstate.md §13.4).
pub const SESSIONS_PER_SHARD: usize = 16;

/// One shard of `count` (a power of two).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

impl Shard {
    /// Parses the annotation's `"<k>/<N>"`: decimal without leading zeros, `N` a power of two,
    /// `k < N`.
    pub fn parse(text: &str) -> Option<Shard> {
        let (k, n) = text.split_once('/')?;
        let number = |s: &str| -> Option<u32> {
            let ok = !s.is_empty()
                && s.bytes().all(|b| b.is_ascii_digit())
                && (s == "0" || !s.starts_with('0'));
            ok.then(|| s.parse().ok()).flatten()
        };
        let (index, count) = (number(k)?, number(n)?);
        (count.is_power_of_two() && index < count).then_some(Shard { index, count })
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
    u32::try_from(wanted.next_power_of_two()).unwrap_or(1 << 31)
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

/// Which document a layer is, by its base media type (without `+zstd`).
fn base(media_type: &str) -> &str {
    media_type.strip_suffix("+zstd").unwrap_or(media_type)
}

/// Finds the documents among `layers`: exactly one state head and one table head (layers of
/// the state-manifest and layer-table media types without the shard annotation), and, when
/// `parts_allowed` (layout 3), for every shard named, one state part and one table part, all
/// of the same shard count, each shard once, ascending. What is wrong is said as a sentence
/// about the image manifest.
pub fn document_layers<'m, D: DocumentLayer>(
    layers: &'m [D],
    state_type: &str,
    table_type: &str,
    parts_allowed: bool,
) -> Result<DocumentLayers<'m, D>, String> {
    let (mut states, mut tables) = (Vec::new(), Vec::new());
    let mut state_parts: Vec<(Shard, &D)> = Vec::new();
    let mut table_parts: Vec<(Shard, &D)> = Vec::new();
    for l in layers {
        let b = base(l.media_type());
        let (heads, parts) = if b == state_type {
            (&mut states, &mut state_parts)
        } else if b == table_type {
            (&mut tables, &mut table_parts)
        } else {
            continue;
        };
        match l.shard() {
            None => heads.push(l),
            Some(_) if !parts_allowed => {
                return Err(format!(
                    "a {b} layer has the {SHARD_ANNOTATION} annotation, which only layout 3 has"
                ));
            }
            Some(text) => {
                let shard = Shard::parse(text).ok_or_else(|| {
                    format!(
                        "a {b} layer's {SHARD_ANNOTATION} {text:?} is not \"k/N\" with N a power of two and k < N"
                    )
                })?;
                parts.push((shard, l));
            }
        }
    }
    let (state, table) = match (&states[..], &tables[..]) {
        ([s], [t]) => (*s, *t),
        _ => {
            return Err(format!(
                "it must have exactly one {state_type} layer and one {table_type} layer without \
                 the {SHARD_ANNOTATION} annotation, not {} and {}",
                states.len(),
                tables.len()
            ));
        }
    };
    let count = state_parts.first().map(|(s, _)| s.count);
    for (what, list) in [(state_type, &state_parts), (table_type, &table_parts)] {
        for pair in list.windows(2) {
            if pair[0].0.index >= pair[1].0.index {
                return Err(format!(
                    "its {what} parts are not in ascending shard order, each once ({} before {})",
                    pair[0].0, pair[1].0
                ));
            }
        }
        if let Some((s, _)) = list.iter().find(|(s, _)| Some(s.count) != count) {
            return Err(format!(
                "its {what} parts do not all have the same shard count ({s} against {})",
                count.map_or_else(|| "none".to_owned(), |c| c.to_string())
            ));
        }
    }
    let shards = |l: &[(Shard, &D)]| l.iter().map(|(s, _)| *s).collect::<Vec<_>>();
    if shards(&state_parts) != shards(&table_parts) {
        return Err(format!(
            "its {state_type} parts and {table_type} parts are not of the same shards"
        ));
    }
    let parts = state_parts
        .into_iter()
        .zip(table_parts)
        .map(|((s, state), (_, table))| (s, state, table))
        .collect();
    Ok(DocumentLayers {
        state,
        table,
        parts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
