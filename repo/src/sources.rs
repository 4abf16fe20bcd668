//! The source records as stored: a head (the snapshot manifest's first layer: when the
//! survey began, the gone sessions, the configuration) and the entries in **shards**, each
//! a layer of the snapshot manifest after the head.
//!
//! An entry's shard is fixed by the sha256 of its id, and the number of shards by the number
//! of entries (about [`ENTRIES_PER_SHARD`] each), so a backup in which a few sessions changed
//! writes only the shards that hold them: the others are the parent's blobs, byte for byte,
//! and shared. (Written whole, the records were a quarter of what a backup of 20 changed
//! sessions of 2,000 added; spec/repository.md §2.1.) Repositories written before keep their
//! records in one layer (`…sources.v1+json`), which is still read.

use std::collections::{BTreeMap, HashMap};

use asp_format::bundle::layers::compress;
use asp_format::bundle::oci::{Encoding, LayerRef};
use asp_format::digest::Digest;
use asp_format::state::Native;
use asp_registry::manifest::OciDescriptor;
use serde::{Deserialize, Serialize};

use crate::error::RepoError;
use crate::repository::RawBlobs;
use crate::snapshot::{SourceEntry, Sources, read_document};

/// The records of repositories written before shards: one layer, entries inline.
pub const SOURCES_V1: &str = "application/vnd.asp.snapshot.sources.v1+json";
/// The head of sharded records.
pub const SOURCES_V2: &str = "application/vnd.asp.snapshot.sources.v2+json";
/// One shard of entries.
pub const SHARD_LAYER: &str = "application/vnd.asp.snapshot.sources-shard.v2+json";

/// A shard holds this many entries up to twice as many: small enough that a change rewrites little, large
/// enough that the snapshot manifest (written whole each time, a descriptor of about 170
/// bytes per shard) stays small.
pub const ENTRIES_PER_SHARD: usize = 16;
/// At most 2^10 shards; beyond 16,000 entries shards grow instead.
const MAX_SHARD_BITS: u32 = 10;
/// zstd level of these documents. Measured on the 64 shards (815 KB of JSON) of a 1 GiB
/// bench home's repository: level 19 gives 170.7 KB at about 5.5 ms a shard, level 9
/// 178.1 KB (4 % more) at about 0.3 ms. A backup in which 20 sessions changed compresses
/// about 20 shards, so level 19 cost more than a tenth of its CPU time to save about 0.12 KB
/// a shard.
pub const LEVEL: i32 = 9;

#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Head {
    schema_version: u64,
    media_type: String,
    started_ns: i128,
    /// The entries are in 2^shardBits shards by the first bits of sha256(id).
    shard_bits: u32,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    gone: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    config: Option<Native>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    config_layers: BTreeMap<Digest, LayerRef>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Shard {
    entries: Vec<SourceEntry>,
}

/// How many bits of sha256(id) pick the shard for `n` entries.
pub fn shard_bits(n: usize) -> u32 {
    let shards = n / ENTRIES_PER_SHARD;
    if shards < 2 {
        0
    } else {
        (usize::BITS - 1 - shards.leading_zeros()).min(MAX_SHARD_BITS)
    }
}

fn shard_of(id: &str, bits: u32) -> usize {
    if bits == 0 {
        return 0;
    }
    let d = Digest::of(id.as_bytes());
    let top = u16::from_be_bytes([d.as_bytes()[0], d.as_bytes()[1]]);
    usize::from(top >> (16 - bits))
}

/// The shard layers a snapshot's records were read from, by the sha256 of their JSON.
///
/// A shard whose JSON is byte for byte one of these is that layer again: naming it saves
/// compressing it at [`LEVEL`], a few milliseconds a shard that made up a third of the CPU
/// time of a backup in which 20 of 2,000 sessions changed (128 shards, `perf record`).
#[derive(Debug, Clone, Default)]
pub struct StoredShards(HashMap<Digest, OciDescriptor>);

/// A layer of the source records as [`encode`] gives it.
#[derive(Debug)]
pub enum RecordLayer {
    /// To be stored: the bytes and their media type.
    New(Vec<u8>, String),
    /// A shard the repository holds already (one of the [`StoredShards`]).
    Stored(OciDescriptor),
}

/// One document layer: zstd at [`LEVEL`], or the JSON itself when that is not smaller.
fn document(json: Vec<u8>, base: &str) -> Result<(Vec<u8>, String), RepoError> {
    let z = compress(&json, None, LEVEL)
        .map_err(|e| RepoError::Blob(asp_format::blob::BlobError::Other(e)))?;
    Ok(if z.len() < json.len() {
        (z, Encoding::Zstd.media_type(base))
    } else {
        (json, base.to_owned())
    })
}

/// The layers of `sources`, head first, then every shard that holds an entry, in shard
/// order (entries in survey order within a shard): new ones with their media type, and those
/// of `stored` that `have` says the repository still holds named as they are.
pub fn encode(
    sources: &Sources,
    stored: &StoredShards,
    have: &dyn Fn(&OciDescriptor) -> bool,
) -> Result<Vec<RecordLayer>, RepoError> {
    let bits = shard_bits(sources.entries.len());
    let head = Head {
        schema_version: 2,
        media_type: SOURCES_V2.to_owned(),
        started_ns: sources.started_ns,
        shard_bits: bits,
        gone: sources.gone.clone(),
        config: sources.config.clone(),
        config_layers: sources.config_layers.clone(),
    };
    let mut shards: BTreeMap<usize, Vec<SourceEntry>> = BTreeMap::new();
    for e in &sources.entries {
        shards
            .entry(shard_of(&e.id, bits))
            .or_default()
            .push(e.clone());
    }
    let new = |(bytes, media_type)| RecordLayer::New(bytes, media_type);
    let mut out = vec![new(document(
        serde_json::to_vec(&head).expect("records serialise"),
        SOURCES_V2,
    )?)];
    for entries in shards.into_values() {
        let json = serde_json::to_vec(&Shard { entries }).expect("records serialise");
        match stored.0.get(&Digest::of(&json)) {
            Some(d) if have(d) => out.push(RecordLayer::Stored(d.clone())),
            _ => out.push(new(document(json, SHARD_LAYER)?)),
        }
    }
    Ok(out)
}

fn is(d: &OciDescriptor, base: &str) -> bool {
    d.media_type == base || d.media_type == Encoding::Zstd.media_type(base)
}

/// Reads the source records of a snapshot manifest's `layers` (either version); without
/// `entries`, not the shards (the entries of version 1 come with its one layer). Also gives
/// the shards read, for [`encode`] to name again.
pub fn decode(
    repo: &dyn RawBlobs,
    layers: &[OciDescriptor],
    entries: bool,
) -> Result<(Sources, StoredShards), RepoError> {
    let bad = |m: String| RepoError::Integrity(format!("the source records {m}"));
    let Some(first) = layers.first() else {
        return Err(bad(
            "are missing: the snapshot manifest has no layer".to_owned()
        ));
    };
    if is(first, SOURCES_V1) {
        return serde_json::from_slice(&read_document(repo, first, SOURCES_V1)?)
            .map(|s| (s, StoredShards::default()))
            .map_err(|e| bad(format!("are not valid: {e}")));
    }
    if !is(first, SOURCES_V2) {
        return Err(bad(format!(
            "have media type {}; this asp reads {SOURCES_V1} and {SOURCES_V2} (a newer asp wrote this repository?)",
            first.media_type
        )));
    }
    let head: Head = serde_json::from_slice(&read_document(repo, first, SOURCES_V2)?)
        .map_err(|e| bad(format!("are not valid: {e}")))?;
    if head.schema_version != 2 {
        return Err(bad(format!(
            "have schemaVersion {}, not 2",
            head.schema_version
        )));
    }
    let mut all = Vec::new();
    let mut stored = StoredShards::default();
    for l in layers[1..].iter().filter(|l| entries && is(l, SHARD_LAYER)) {
        let json = read_document(repo, l, SHARD_LAYER)?;
        let shard: Shard = serde_json::from_slice(&json)
            .map_err(|e| bad(format!("shard {} is not valid: {e}", l.digest)))?;
        all.extend(shard.entries);
        stored.0.insert(Digest::of(&json), l.clone());
    }
    let sources = Sources {
        started_ns: head.started_ns,
        entries: all,
        gone: head.gone,
        config: head.config,
        config_layers: head.config_layers,
    };
    Ok((sources, stored))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_grow_with_the_entries_and_an_id_stays_in_its_shard() {
        assert_eq!(shard_bits(0), 0);
        assert_eq!(shard_bits(31), 0);
        assert_eq!(shard_bits(32), 1);
        assert_eq!(shard_bits(2000), 6);
        assert_eq!(shard_bits(10_000_000), MAX_SHARD_BITS);
        let id = "71958462-4bb8-46b6-a36a-1becf56c22dc";
        assert!(shard_of(id, 6) < 64);
        assert_eq!(shard_of(id, 6), shard_of(id, 6));
        assert_eq!(shard_of(id, 6) >> 1, shard_of(id, 5));
    }

    /// Blobs held in memory, by digest: enough for documents.
    #[derive(Debug, Default)]
    struct Memory(std::collections::HashMap<Digest, Vec<u8>>);

    impl Memory {
        fn put(&mut self, bytes: Vec<u8>, media_type: String) -> OciDescriptor {
            let d = asp_format::digest::Descriptor::of(&bytes);
            self.0.insert(d.digest, bytes);
            OciDescriptor::new(media_type, d)
        }
    }

    impl RawBlobs for Memory {
        fn open_raw(
            &self,
            d: &asp_format::digest::Descriptor,
        ) -> Result<Box<dyn std::io::Read + Send>, RepoError> {
            Ok(Box::new(std::io::Cursor::new(self.0[&d.digest].clone())))
        }
    }

    fn entry(i: usize) -> SourceEntry {
        SourceEntry {
            id: format!("session-{i}"),
            facts: Digest::of(format!("facts {i}").as_bytes()),
            sessions: vec![format!("session-{i}")],
            files: vec![crate::snapshot::FileRecord {
                path: format!(".claude/projects/p/session-{i}.jsonl"),
                size: i as u64,
                mtime_ns: 1_796_021_000_000_000_000 + i as i128,
                ctime_ns: 1_796_021_000_500_000_000 + i as i128,
                inode: 1000 + i as u64,
                device: 2049,
            }],
        }
    }

    impl Memory {
        /// Stores what `encode` gives and names every layer.
        fn store(&mut self, layers: Vec<RecordLayer>) -> Vec<OciDescriptor> {
            layers
                .into_iter()
                .map(|l| match l {
                    RecordLayer::New(b, t) => self.put(b, t),
                    RecordLayer::Stored(d) => d,
                })
                .collect()
        }
    }

    #[test]
    fn a_changed_entry_rewrites_only_its_shard_and_the_head() {
        let mut sources = Sources {
            started_ns: 1,
            entries: (0..2000).map(entry).collect(),
            ..Sources::default()
        };
        sources
            .gone
            .insert("old".into(), "2026-12-01T00:00:00.000Z".into());
        let mut blobs = Memory::default();
        let all = |_: &OciDescriptor| true;
        let before = blobs.store(encode(&sources, &StoredShards::default(), &all).unwrap());
        assert_eq!(before.len(), 1 + 64);
        let (back, stored) = decode(&blobs, &before, true).unwrap();
        assert_eq!(back.gone, sources.gone);
        let mut ids: Vec<&str> = back.entries.iter().map(|e| e.id.as_str()).collect();
        ids.sort_unstable();
        let mut want: Vec<&str> = sources.entries.iter().map(|e| e.id.as_str()).collect();
        want.sort_unstable();
        assert_eq!(ids, want);

        sources.started_ns = 2;
        sources.entries[7].files[0].size += 100;
        let layers = encode(&sources, &stored, &all).unwrap();
        let compressed = layers
            .iter()
            .filter(|l| matches!(l, RecordLayer::New(..)))
            .count();
        assert_eq!(compressed, 2, "the head and one shard are compressed again");
        let after = blobs.store(layers);
        let new: Vec<_> = after.iter().filter(|d| !before.contains(d)).collect();
        assert_eq!(new.len(), 2, "the head and one shard");
        // Naming a stored shard gives the layers compressing every shard again gives.
        let afresh =
            Memory::default().store(encode(&sources, &StoredShards::default(), &all).unwrap());
        assert_eq!(after, afresh);
        assert_eq!(decode(&blobs, &after, true).unwrap().0.entries.len(), 2000);
        let (head, none) = decode(&blobs, &after, false).unwrap();
        assert!(head.entries.is_empty() && none.0.is_empty());
        assert_eq!((head.started_ns, head.gone), (2, sources.gone));
    }

    #[test]
    fn a_stored_shard_the_repository_lost_is_written_again() {
        let sources = Sources {
            entries: (0..100).map(entry).collect(),
            ..Sources::default()
        };
        let mut blobs = Memory::default();
        let first = blobs.store(encode(&sources, &StoredShards::default(), &|_| true).unwrap());
        let (_, stored) = decode(&blobs, &first, true).unwrap();
        let lost = &first[1];
        let again = encode(&sources, &stored, &|d| d != lost).unwrap();
        assert!(matches!(&again[1], RecordLayer::New(..)));
        assert!(
            again[2..]
                .iter()
                .all(|l| matches!(l, RecordLayer::Stored(..)))
        );
        assert_eq!(Memory::default().store(again), first);
    }

    #[test]
    fn records_written_before_shards_are_read_and_unknown_ones_refused() {
        let v1 = serde_json::json!({"schemaVersion": 1, "mediaType": SOURCES_V1, "startedNs": 5,
            "entries": [serde_json::to_value(entry(1)).unwrap()], "gone": {}});
        let mut blobs = Memory::default();
        let layer = blobs.put(serde_json::to_vec(&v1).unwrap(), SOURCES_V1.to_owned());
        let (back, _) = decode(&blobs, &[layer], true).unwrap();
        assert_eq!((back.started_ns, back.entries), (5, vec![entry(1)]));

        let v3 = blobs.put(
            b"{}".to_vec(),
            "application/vnd.asp.snapshot.sources.v3+json".into(),
        );
        let e = decode(&blobs, &[v3], true).unwrap_err().to_string();
        assert!(
            e.contains("sources.v3+json") && e.contains("this asp reads"),
            "{e}"
        );
    }
}
