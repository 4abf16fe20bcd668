//! A snapshot: the snapshot manifest, its annotations (what `index.json` repeats), its source
//! records, and the content manifest it points at (the bundle's image manifest).

use std::collections::BTreeMap;
use std::io::Read;

use asp_format::bundle::layers::MAX_WINDOW_LOG;
use asp_format::bundle::oci::{
    ARTIFACT_TYPE, CREATED_ANNOTATION, Encoding, ImageManifest as ContentManifest, LayerRef,
    LayerTable, STATE_LAYER, TABLE_LAYER,
};
use asp_format::bundle::shards::{
    DocumentBudget, OverBudget, document_layers, missing_entries, parts_holding,
    placement_problems, repeated_part,
};
use asp_format::bundle::{Manifest, decode_layer};
use asp_format::digest::{Descriptor, Digest};
use asp_format::state::State;
use asp_format::state::parent_of;
use asp_registry::manifest::{ImageManifest, OciDescriptor};
use serde::{Deserialize, Serialize};

use crate::error::RepoError;
use crate::repository::{RawBlobs, Repository};

/// The artifact type of a snapshot manifest.
pub const SNAPSHOT_ARTIFACT: &str = "application/vnd.asp.snapshot.v1";
pub const HARNESS_ANNOTATION: &str = "vnd.asp.snapshot.harness";
pub const HOME_ANNOTATION: &str = "vnd.asp.snapshot.home";
pub const HOST_ANNOTATION: &str = "vnd.asp.snapshot.host";
pub const PARENT_ANNOTATION: &str = "vnd.asp.snapshot.parent";
pub const CONTENT_ANNOTATION: &str = "vnd.asp.snapshot.content";
pub const SESSIONS_ANNOTATION: &str = "vnd.asp.snapshot.sessions";
pub const GONE_ANNOTATION: &str = "vnd.asp.snapshot.gone";
/// The sessions `asp forget --session` / `--gone-before` dropped making this snapshot, as a
/// JSON array of ids; absent when none.
pub const DROPPED_ANNOTATION: &str = "vnd.asp.snapshot.dropped";
/// When the backup a pulled snapshot holds was made (its record's
/// `org.opencontainers.image.created`), RFC 3339; absent for a backup made here. The
/// snapshot's own time is the pull's, which orders it among the repository's; pushed again,
/// its record says this one.
pub const BACKED_UP_ANNOTATION: &str = "vnd.asp.snapshot.backedUp";
/// The home of a snapshot pulled from a registry starts so: `registry:<host>/<repository>`,
/// then `:<tag>` (or `@sha256:<12 hex>` when pulled by digest).
pub const PULLED_HOME_PREFIX: &str = "registry:";

/// Largest document (manifest, state manifest, layer table, source records) read whole.
pub const MAX_DOCUMENT: u64 = 256 << 20;

/// What the index says of a snapshot (the snapshot manifest's annotations). Serialised with
/// its short `id` last, as every command's `--json` names a snapshot (`asp snapshots`,
/// `asp pull`, `asp backup`, `asp forget`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotInfo {
    /// The snapshot manifest's digest: the snapshot's id.
    pub digest: Digest,
    pub size: u64,
    /// RFC 3339, milliseconds, UTC: when the backup started.
    pub created: String,
    pub harness: String,
    pub home: String,
    pub host: String,
    pub parent: Option<Digest>,
    /// The content manifest (the bundle's image manifest) this snapshot holds.
    pub content: Digest,
    /// Sessions held, gone ones included.
    pub sessions: u64,
    /// Sessions held that are gone from the source.
    pub gone: u64,
    /// The sessions (by id) its parent held and this snapshot was made without on purpose
    /// (`asp forget --session`, `--gone-before`): a keep policy does not hold an older
    /// snapshot back for them ([`crate::forget::plan_keeping_sessions`]).
    pub dropped: Vec<String>,
    /// When the backup a pulled snapshot holds was made, as its record said
    /// ([`BACKED_UP_ANNOTATION`]); `None` for a backup made here.
    pub backed_up: Option<String>,
}

impl Serialize for SnapshotInfo {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(None)?;
        m.serialize_entry("digest", &self.digest)?;
        m.serialize_entry("created", &self.created)?;
        m.serialize_entry("harness", &self.harness)?;
        m.serialize_entry("home", &self.home)?;
        m.serialize_entry("host", &self.host)?;
        if let Some(p) = &self.parent {
            m.serialize_entry("parent", p)?;
        }
        m.serialize_entry("content", &self.content)?;
        m.serialize_entry("sessions", &self.sessions)?;
        m.serialize_entry("gone", &self.gone)?;
        if !self.dropped.is_empty() {
            m.serialize_entry("dropped", &self.dropped)?;
        }
        if let Some(t) = &self.backed_up {
            m.serialize_entry("backedUp", t)?;
        }
        m.serialize_entry("id", &self.short_id())?;
        m.end()
    }
}

impl SnapshotInfo {
    /// The first 8 hex digits of the digest, as `asp snapshots` shows it.
    pub fn short_id(&self) -> String {
        self.digest.short()
    }

    /// Whether it was pulled from a registry, not backed up here.
    pub fn is_pulled(&self) -> bool {
        self.home.starts_with(PULLED_HOME_PREFIX)
    }

    /// When the backup it holds was made: a pulled snapshot's record's time, else its own.
    pub fn backed_up(&self) -> &str {
        self.backed_up.as_deref().unwrap_or(&self.created)
    }

    pub fn annotations(&self) -> BTreeMap<String, String> {
        let mut a = BTreeMap::from([
            (CREATED_ANNOTATION.to_owned(), self.created.clone()),
            (HARNESS_ANNOTATION.to_owned(), self.harness.clone()),
            (HOME_ANNOTATION.to_owned(), self.home.clone()),
            (HOST_ANNOTATION.to_owned(), self.host.clone()),
            (CONTENT_ANNOTATION.to_owned(), self.content.to_string()),
            (SESSIONS_ANNOTATION.to_owned(), self.sessions.to_string()),
            (GONE_ANNOTATION.to_owned(), self.gone.to_string()),
        ]);
        if let Some(p) = self.parent {
            a.insert(PARENT_ANNOTATION.to_owned(), p.to_string());
        }
        if !self.dropped.is_empty() {
            a.insert(
                DROPPED_ANNOTATION.to_owned(),
                serde_json::to_string(&self.dropped).expect("strings serialise"),
            );
        }
        if let Some(t) = &self.backed_up {
            a.insert(BACKED_UP_ANNOTATION.to_owned(), t.clone());
        }
        a
    }

    /// Reads the annotations of a snapshot's index descriptor.
    pub fn from_descriptor(d: &OciDescriptor) -> Result<Self, RepoError> {
        SnapshotInfo::from_annotations(d.digest, d.size, &d.annotations)
    }

    fn from_annotations(
        digest: Digest,
        size: u64,
        a: &BTreeMap<String, String>,
    ) -> Result<Self, RepoError> {
        let get = |k: &str| {
            a.get(k).cloned().ok_or_else(|| {
                RepoError::Integrity(format!("snapshot {digest} has no annotation {k}"))
            })
        };
        let digest_of = |k: &str, v: &str| {
            v.parse::<Digest>().map_err(|e| {
                RepoError::Integrity(format!("snapshot {digest}: annotation {k}: {e}"))
            })
        };
        let number = |k: &str| -> Result<u64, RepoError> {
            get(k)?.parse().map_err(|_| {
                RepoError::Integrity(format!("snapshot {digest}: annotation {k} is not a number"))
            })
        };
        let created = get(CREATED_ANNOTATION)?;
        if asp_convert::kit::time::parse(&created).is_none() {
            return Err(RepoError::Integrity(format!(
                "snapshot {digest}: {CREATED_ANNOTATION} {created:?} is not an RFC 3339 time"
            )));
        }
        Ok(SnapshotInfo {
            digest,
            size,
            created,
            harness: get(HARNESS_ANNOTATION)?,
            home: get(HOME_ANNOTATION)?,
            host: get(HOST_ANNOTATION)?,
            parent: a
                .get(PARENT_ANNOTATION)
                .map(|p| digest_of(PARENT_ANNOTATION, p))
                .transpose()?,
            content: digest_of(CONTENT_ANNOTATION, &get(CONTENT_ANNOTATION)?)?,
            sessions: number(SESSIONS_ANNOTATION)?,
            gone: number(GONE_ANNOTATION)?,
            // Read leniently: a list that does not parse only holds more back (it can only
            // ever let a keep policy forget what the owner let go).
            dropped: a
                .get(DROPPED_ANNOTATION)
                .and_then(|v| serde_json::from_str(v).ok())
                .unwrap_or_default(),
            // What only says when: one that is not a time is left unsaid.
            backed_up: a
                .get(BACKED_UP_ANNOTATION)
                .filter(|t| asp_convert::kit::time::parse(t).is_some())
                .cloned(),
        })
    }

    /// When the snapshot was made, in ns since the epoch.
    pub fn created_ns(&self) -> i128 {
        asp_convert::kit::time::parse(&self.created).unwrap_or(0)
    }
}

/// The source records: what the next backup compares to know what changed. Stored by
/// [`crate::sources`] (a head and shards; one layer in repositories written before).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sources {
    /// When the survey began (ns since the epoch): the racy-timestamp rule's reference.
    pub started_ns: i128,
    /// One per survey entry, in survey order.
    pub entries: Vec<SourceEntry>,
    /// Sessions held that the source no longer has: id → when a backup first found them gone.
    #[serde(default)]
    pub gone: BTreeMap<String, String>,
    /// The harness's own configuration, whole files, restored only into the same harness;
    /// its bodies are layers of the snapshot manifest, found through `configLayers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<asp_format::state::Native>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config_layers: BTreeMap<Digest, LayerRef>,
}

/// What a snapshot carries to a registry besides its state: the first layer of its snapshot
/// record (`spec/registry.md` §9), media type [`asp_registry::manifest::RECORD_LAYER`] (`+zstd`
/// when compressed). The source records without what only means something on this machine:
/// no survey entries (paths, sizes, mtimes, inodes, devices), no survey start; the home, host
/// and parent are not in it either.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    pub schema_version: u64,
    pub media_type: String,
    /// The harness whose state and configuration this is.
    pub harness: String,
    /// Sessions of the state the source no longer had: id → when a backup first found them
    /// gone.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub gone: BTreeMap<String, String>,
    /// The harness's own configuration files, whole; their layers are the record's after the
    /// first, found through `configLayers`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<asp_format::state::Native>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub config_layers: BTreeMap<Digest, LayerRef>,
}

impl Record {
    /// The record of a snapshot: its harness, gone marks and configuration.
    pub fn of(snapshot: &Snapshot) -> Self {
        Record {
            schema_version: 1,
            media_type: asp_registry::manifest::RECORD_LAYER.to_owned(),
            harness: snapshot.info.harness.clone(),
            gone: snapshot.sources.gone.clone(),
            config: snapshot.sources.config.clone(),
            config_layers: snapshot.sources.config_layers.clone(),
        }
    }
}

/// One survey entry as it was read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceEntry {
    pub id: String,
    /// The digest of the facts (besides files) its read depended on.
    pub facts: Digest,
    /// The sessions it gave (it and its subagents).
    pub sessions: Vec<String>,
    pub files: Vec<FileRecord>,
}

/// One file a read depended on, as surveyed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileRecord {
    /// Relative to the home, `/`-separated, when under it; else absolute.
    pub path: String,
    pub size: u64,
    pub mtime_ns: i128,
    /// The status change time (ns), compared when recorded: records written before it was
    /// (and on systems that keep none) have 0, and are compared by the rest.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub ctime_ns: i128,
    pub inode: u64,
    pub device: u64,
}

fn is_zero(n: &i128) -> bool {
    *n == 0
}

impl FileRecord {
    /// Whether `now` (this file as surveyed now, recorded) is the file as this record has it.
    pub fn unchanged_as(&self, now: &FileRecord) -> bool {
        self.path == now.path
            && self.size == now.size
            && self.mtime_ns == now.mtime_ns
            && self.inode == now.inode
            && self.device == now.device
            && (self.ctime_ns == 0 || self.ctime_ns == now.ctime_ns)
    }
}

/// A snapshot read from the repository: its manifests, state, layer table and records.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub info: SnapshotInfo,
    pub manifest: ImageManifest,
    /// The content manifest's descriptor and the manifest itself.
    pub content: Descriptor,
    pub content_manifest: ContentManifest,
    pub state: State,
    pub table: BTreeMap<Digest, LayerRef>,
    pub sources: Sources,
    /// The shard layers its source records were read from (none when read without entries).
    pub shards: crate::sources::StoredShards,
    /// Why the source records could not be read, when a read for restoring or listing
    /// ([`Snapshot::load_for_reading`]) went on without them: the state is whole, but the
    /// harness's own configuration files and the sessions recorded as gone are not known
    /// (`sources` is then empty). A read for a backup or a check fails instead.
    pub sources_damage: Option<String>,
}

/// A snapshot that could not be read, passed over for an older one of its series
/// ([`Snapshot::newest_readable`]).
#[derive(Debug, Clone, serde::Serialize)]
pub struct PassedOver {
    /// Its short id.
    pub snapshot: String,
    /// What is damaged, and what to do (`asp forget --snapshot`).
    pub error: String,
}

impl Snapshot {
    /// Reads and checks a snapshot's documents (not its bodies).
    pub fn load(repo: &Repository, info: &SnapshotInfo) -> Result<Snapshot, RepoError> {
        Snapshot::load_with(repo, info, true, None)
    }

    /// Reads a snapshot's documents without the source records' entries (their shards), which
    /// only a backup comparing against its parent, forget, check and prune need: what restore,
    /// `asp sessions` and pack read.
    pub fn load_for_reading(repo: &Repository, info: &SnapshotInfo) -> Result<Snapshot, RepoError> {
        Snapshot::load_with(repo, info, false, None)
    }

    /// [`Snapshot::load_for_reading`] for a restore of the sessions `ids` (with their subagent
    /// sessions): of a layout 3 state only the parts that hold them are read, so the state
    /// holds those sessions and maybe others of their shards, not every one.
    pub fn load_sessions(
        repo: &Repository,
        info: &SnapshotInfo,
        ids: &[String],
    ) -> Result<Snapshot, RepoError> {
        Snapshot::load_with(repo, info, false, Some(ids))
    }

    /// [`Snapshot::read_with`], a damage said with the snapshot it is in and what to do.
    fn load_with(
        repo: &Repository,
        info: &SnapshotInfo,
        entries: bool,
        only: Option<&[String]>,
    ) -> Result<Snapshot, RepoError> {
        use asp_format::error::{Classify, ErrorClass};
        Snapshot::read_with(repo, info, entries, only, true).map_err(|e| {
            // (An index that says otherwise says how to mend it: the snapshot is sound, and
            // is not to be let go.)
            if e.class() != ErrorClass::Integrity || matches!(e, RepoError::IndexDiffers(_)) {
                return e;
            }
            let id = info.short_id();
            let what = e.to_string();
            let what = what.strip_prefix("integrity failure: ").unwrap_or(&what);
            let manifest = Descriptor {
                digest: info.digest,
                size: info.size,
            };
            if !repo.has_blob(&manifest) {
                // What a damaged index.json looks like (a digest a character off): forgetting
                // the entry and pruning would delete the real manifest, which it no longer names.
                return RepoError::Integrity(format!(
                    "snapshot {id} cannot be read ({what}): index.json may name it wrong; `asp \
                     check` says whether blobs/ holds snapshots the index does not name, which \
                     `asp check --rebuild-index` lists again (before any `asp forget` or `asp \
                     prune`)"
                ));
            }
            RepoError::Integrity(format!(
                "snapshot {id} cannot be read ({what}); `asp check` names the damage, and `asp \
                 forget --snapshot {id}` lets the snapshot go (--snapshot names an older one)"
            ))
        })
    }

    /// The newest snapshot of the series (`harness`, `home`) that `load` can read, with the
    /// newer ones it could not (an integrity failure: a manifest or document damaged),
    /// newest first: what a backup builds on and `asp sessions` lists, so that one damaged
    /// snapshot does not stop either. Any other error stops the walk. `snapshots` is the
    /// index's listing ([`Repository::snapshots`]), oldest first, read once by a caller that
    /// walks several series.
    pub fn newest_readable(
        repo: &Repository,
        snapshots: &[SnapshotInfo],
        harness: &str,
        home: &str,
        load: impl Fn(&Repository, &SnapshotInfo) -> Result<Snapshot, RepoError>,
    ) -> Result<(Option<Snapshot>, Vec<PassedOver>), RepoError> {
        use asp_format::error::{Classify, ErrorClass};
        let mut passed_over = Vec::new();
        for info in snapshots
            .iter()
            .rev()
            .filter(|s| s.harness == harness && s.home == home)
        {
            match load(repo, info) {
                Ok(snapshot) => return Ok((Some(snapshot), passed_over)),
                Err(e) if e.class() == ErrorClass::Integrity => passed_over.push(PassedOver {
                    snapshot: info.short_id(),
                    // [`Snapshot::load_with`] says which snapshot and what to do.
                    error: match e {
                        RepoError::Integrity(said) | RepoError::IndexDiffers(said) => said,
                        e => e.to_string(),
                    },
                }),
                Err(e) => return Err(e),
            }
        }
        Ok((None, passed_over))
    }

    /// [`Snapshot::load`], its damage said as it is, for `asp check`, which says it with the
    /// snapshot and what to do itself.
    pub(crate) fn load_unsaid(
        repo: &Repository,
        info: &SnapshotInfo,
    ) -> Result<Snapshot, RepoError> {
        Snapshot::read_with(repo, info, true, None, true)
    }

    /// [`Snapshot::load_unsaid`] whatever the index says of it (its own manifest's word
    /// taken): for `asp check`, which says the index differs and checks the snapshot all the
    /// same.
    pub(crate) fn load_unsaid_as_its_manifest_says(
        repo: &Repository,
        info: &SnapshotInfo,
    ) -> Result<Snapshot, RepoError> {
        Snapshot::read_with(repo, info, true, None, false)
    }

    /// Reads and checks the snapshot; `compare_index`: that the index says of it what its
    /// manifest says ([`RepoError::IndexDiffers`]).
    fn read_with(
        repo: &Repository,
        info: &SnapshotInfo,
        entries: bool,
        only: Option<&[String]>,
        compare_index: bool,
    ) -> Result<Snapshot, RepoError> {
        let bad = |m: String| RepoError::Integrity(m);
        let s_bytes = repo.read_blob(
            &Descriptor {
                digest: info.digest,
                size: info.size,
            },
            MAX_DOCUMENT,
        )?;
        let manifest: ImageManifest = serde_json::from_slice(&s_bytes)
            .map_err(|e| bad(format!("the snapshot manifest is not valid: {e}")))?;
        if manifest.artifact_type.as_deref() != Some(SNAPSHOT_ARTIFACT) {
            return Err(bad(format!("its artifactType is not {SNAPSHOT_ARTIFACT}")));
        }
        let subject = manifest
            .subject
            .clone()
            .ok_or_else(|| bad("the snapshot manifest has no subject".to_owned()))?;
        if subject.digest != info.content {
            return Err(bad(
                "its subject is not the content manifest the index names".to_owned(),
            ));
        }
        // The index says of a snapshot what its manifest says (repository.md §2); what it
        // says otherwise would send a backup to another parent, or list a series under
        // another harness. (A key the manifest lacks was not written by its version.)
        // Compared as read (a value spelled otherwise, `07` for `7`, is the same), and only
        // when the manifest's annotations read as a whole (one an older version wrote without
        // some is not compared).
        // The key named is one whose value differs as read, not as spelled.
        let theirs = compare_index
            .then(|| SnapshotInfo::from_annotations(info.digest, info.size, &manifest.annotations))
            .and_then(Result::ok)
            .filter(|theirs| theirs != info)
            .map(|theirs| theirs.annotations());
        if let Some((k, v, there)) = theirs.and_then(|own| {
            let says = info.annotations();
            let keys: std::collections::BTreeSet<&String> = says.keys().chain(own.keys()).collect();
            keys.into_iter()
                .find(|k| says.get(*k) != own.get(*k))
                .map(|k| {
                    let shown =
                        |v: Option<&String>| v.map_or("nothing".to_owned(), |v| format!("{v:?}"));
                    (k.clone(), shown(says.get(k)), shown(own.get(k)))
                })
        }) {
            return Err(RepoError::IndexDiffers(format!(
                "index.json says {k} {v} of snapshot {}, and its manifest {there}: \
                 index.json was changed; `asp check --rebuild-index` lists every snapshot again \
                 from its manifest",
                info.short_id()
            )));
        }
        // (Its own integrity failures say so already: not "integrity failure:" twice.)
        // Damaged source records keep no session from being restored: they hold what the next
        // backup compares, the configuration files and the sessions gone, not the state.
        let (sources, shards, sources_damage) = {
            use asp_format::error::{Classify, ErrorClass};
            let as_damage = |e: RepoError| match e {
                RepoError::Integrity(m) => m,
                e => e.to_string(),
            };
            match crate::sources::decode(repo, &manifest.layers, entries) {
                Ok((sources, shards)) => (sources, shards, None),
                Err(e) if !entries && e.class() == ErrorClass::Integrity => {
                    (Sources::default(), Default::default(), Some(as_damage(e)))
                }
                Err(e) => return Err(bad(as_damage(e))),
            }
        };
        let content = subject.blob();
        let m_bytes = repo.read_blob(&content, MAX_DOCUMENT)?;
        let content_manifest: ContentManifest = serde_json::from_slice(&m_bytes)
            .map_err(|e| bad(format!("the content manifest is not valid: {e}")))?;
        if content_manifest.artifact_type != ARTIFACT_TYPE {
            return Err(bad(format!(
                "the content manifest's artifactType is not {ARTIFACT_TYPE}"
            )));
        }
        let (state_manifest, table) = read_state(repo, &content_manifest.layers, only, &bad)?;
        Ok(Snapshot {
            info: info.clone(),
            manifest,
            content,
            content_manifest,
            state: state_manifest.state,
            table: table.blobs,
            sources,
            shards,
            sources_damage,
        })
    }

    /// The session ids the source no longer has.
    pub fn is_gone(&self, id: &str) -> bool {
        self.sources.gone.contains_key(id)
    }
}

/// The state and the layer table of a content manifest's `layers`: the head documents and,
/// in layout 3, every part (spec/aspstate.md §3), put together; what is wrong is said by `bad`.
/// With `only`, of the parts only those of the shards these sessions are in (as roots; every
/// part when one of them is not found there, as a partial read of a bundle does).
pub fn read_state(
    repo: &dyn RawBlobs,
    layers: &[asp_format::bundle::oci::OciDescriptor],
    only: Option<&[String]>,
    bad: &dyn Fn(String) -> RepoError,
) -> Result<(Manifest, LayerTable), RepoError> {
    let docs = document_layers(layers, STATE_LAYER, TABLE_LAYER, true)
        .map_err(|m| bad(format!("the content manifest: {m}")))?;
    let as_registry = |d: &asp_format::bundle::oci::OciDescriptor| {
        OciDescriptor::new(d.media_type.clone(), d.descriptor())
    };
    let budget = Budget::new(MAX_DOCUMENT);
    let read = |d: &asp_format::bundle::oci::OciDescriptor, base| {
        budget.read(repo, &as_registry(d), base)?.map_err(bad)
    };
    let state = |d| -> Result<Manifest, RepoError> {
        let m: Manifest = serde_json::from_slice(&read(d, STATE_LAYER)?)
            .map_err(|e| bad(format!("the state manifest {} is not valid: {e}", d.digest)))?;
        if m.schema_version != 1 {
            return Err(bad(format!(
                "state manifest {} has schemaVersion {}, not 1",
                d.digest, m.schema_version
            )));
        }
        Ok(m)
    };
    let table = |d| -> Result<LayerTable, RepoError> {
        serde_json::from_slice(&read(d, TABLE_LAYER)?)
            .map_err(|e| bad(format!("the layer table {} is not valid: {e}", d.digest)))
    };
    if let Some(d) = repeated_part(docs.parts.iter().map(|p| p.1.digest)) {
        return Err(bad(format!(
            "the content manifest names {d} as more than one part of the state"
        )));
    }
    // Each table document holds the entries its own state document needs (checked when every
    // part is read: a merged table would hide a gap that a restore of one session then meets).
    let complete = |state: &State, table: &LayerTable, which: &str| {
        let gap = missing_entries(state, &|d| table.blobs.get(d).map(|r| r.dictionary));
        match gap.first() {
            None => Ok(()),
            Some(d) => Err(bad(format!(
                "{which}'s layer table has no entry for body {d}, which its state refers to"
            ))),
        }
    };
    let mut manifest = state(docs.state)?;
    let mut blobs = table(docs.table)?;
    if only.is_none() {
        complete(&manifest.state, &blobs, "the head")?;
    }
    let mut sessions: Vec<asp_format::state::Session> = Vec::new();
    let all: Vec<usize> = (0..docs.parts.len()).collect();
    // The parts of the shards the asked sessions hash to as roots.
    let first: Vec<usize> = match only {
        Some(ids) => parts_holding(&docs.parts.iter().map(|p| p.0).collect::<Vec<_>>(), ids),
        None => all.clone(),
    };
    let mut done = vec![false; docs.parts.len()];
    // Each session with the shard of the part it was found in.
    let mut found_in: Vec<u32> = Vec::new();
    for round in [first, all] {
        for i in round {
            if std::mem::replace(&mut done[i], true) {
                continue;
            }
            let (shard, state_layer, table_layer) = &docs.parts[i];
            let part = state(state_layer)?.state;
            if part.has_kinds_besides_sessions() || part.sessions.as_ref().is_none_or(Vec::is_empty)
            {
                return Err(bad(format!(
                    "part {shard} of the state ({}) holds no sessions, or other kinds",
                    state_layer.digest
                )));
            }
            let part_table = table(table_layer)?;
            if only.is_none() {
                complete(&part, &part_table, &format!("part {shard}"))?;
            }
            let list = part.sessions.unwrap_or_default();
            found_in.extend(std::iter::repeat_n(shard.index, list.len()));
            sessions.extend(list);
            for (body, r) in part_table.blobs {
                if *blobs.blobs.entry(body).or_insert(r) != r {
                    return Err(bad(format!(
                        "the layer table's parts say different things of body {body}"
                    )));
                }
            }
        }
        // A subagent asked for by its own id is in its root's shard: then every part is read.
        let found = only.is_none_or(|ids| {
            ids.iter()
                .all(|id| sessions.iter().any(|s| s.id.as_str() == id))
        });
        if found {
            break;
        }
    }
    // Where the sessions are is checked when every part was read (a restore of some sessions
    // trusts it, as a partial read of a bundle does; `asp check` and a pull read them all).
    if done.iter().all(|d| *d) {
        let ids: Vec<(u32, &str, Option<&str>)> = sessions
            .iter()
            .zip(&found_in)
            .map(|(s, i)| (*i, s.id.as_str(), parent_of(s)))
            .collect();
        let shards: Vec<_> = docs.parts.iter().map(|p| p.0).collect();
        if let Some((index, msg)) = placement_problems(&ids, &shards).into_iter().next() {
            let count = shards.first().map_or(1, |s| s.count);
            return Err(bad(format!("part {index}/{count} of the state: {msg}")));
        }
    }
    match &mut manifest.state.sessions {
        // Layout 2 (and a layout 3 state without sessions): the head is the whole state.
        _ if docs.parts.is_empty() => {}
        Some(head) if head.is_empty() => {
            sessions.sort_by(|a, b| a.id.cmp(&b.id));
            *head = sessions;
        }
        _ => {
            return Err(bad(
                "the state's head holds sessions, or has no sessions kind while its parts do"
                    .to_owned(),
            ));
        }
    }
    Ok((manifest, blobs))
}

/// The state's documents, read within a [`DocumentBudget`] of [`MAX_DOCUMENT`] bytes a
/// document: each one's stored size checked before it is read, and decoded no further than
/// the budget has room for.
#[derive(Debug)]
struct Budget(std::cell::Cell<DocumentBudget>);

impl Budget {
    fn new(each: u64) -> Self {
        Budget(std::cell::Cell::new(DocumentBudget::new(each)))
    }

    /// The document's bytes, charged; `Ok(Err(why))` when it does not fit (naming the layer
    /// and saying which limit).
    fn read(
        &self,
        repo: &dyn RawBlobs,
        d: &OciDescriptor,
        base: &str,
    ) -> Result<Result<Vec<u8>, String>, RepoError> {
        let mut budget = self.0.get();
        let over = |o: OverBudget| format!("layer {}: {o}", d.digest);
        if let Err(o) = budget.fits(d.size) {
            return Ok(Err(over(o)));
        }
        let Some(bytes) = read_document_within(repo, d, base, budget.room())? else {
            return Ok(Err(over(budget.past_room())));
        };
        budget
            .charge(d.size, bytes.len() as u64)
            .expect("within the room both ways, as read_document_within checked");
        self.0.set(budget);
        Ok(Ok(bytes))
    }
}

/// A document layer's bytes: as stored, or one zstd frame, by its media type (`base` or
/// `base+zstd`), of at most [`MAX_DOCUMENT`] bytes either way.
pub fn read_document(
    repo: &dyn RawBlobs,
    d: &OciDescriptor,
    base: &str,
) -> Result<Vec<u8>, RepoError> {
    read_document_within(repo, d, base, MAX_DOCUMENT)?.ok_or_else(|| {
        let over = OverBudget::Document {
            limit: MAX_DOCUMENT,
        };
        RepoError::Integrity(format!("layer {}: {over}", d.digest))
    })
}

/// [`read_document`] of at most `limit` bytes (never above [`MAX_DOCUMENT`]), stored and
/// decoded; `None` when the layer has or expands to more. The state reader passes what its
/// budget has left, so no document is decoded past it.
fn read_document_within(
    repo: &dyn RawBlobs,
    d: &OciDescriptor,
    base: &str,
    limit: u64,
) -> Result<Option<Vec<u8>>, RepoError> {
    let limit = limit.min(MAX_DOCUMENT);
    let encoding = if d.media_type == base {
        Encoding::Identity
    } else if d.media_type == Encoding::Zstd.media_type(base) {
        Encoding::Zstd
    } else {
        return Err(RepoError::Integrity(format!(
            "layer {} has media type {}, not {base}",
            d.digest, d.media_type
        )));
    };
    if d.size > limit {
        return Ok(None);
    }
    let raw = repo.open_raw(&d.blob())?;
    let mut out = Vec::new();
    decode_layer(raw, encoding, None, 1 << MAX_WINDOW_LOG)
        .and_then(|r| r.take(limit + 1).read_to_end(&mut out))
        .map_err(|e| RepoError::Integrity(format!("layer {}: {e}", d.digest)))?;
    Ok((out.len() as u64 <= limit).then_some(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    /// Blobs in memory, by digest.
    #[derive(Debug, Default)]
    struct Blobs(HashMap<Digest, Vec<u8>>);

    impl Blobs {
        fn put(&mut self, bytes: Vec<u8>, media_type: &str) -> OciDescriptor {
            let d = asp_format::digest::Descriptor::of(&bytes);
            self.0.insert(d.digest, bytes);
            OciDescriptor::new(media_type.to_owned(), d)
        }
    }

    impl RawBlobs for Blobs {
        fn open_raw(
            &self,
            d: &asp_format::digest::Descriptor,
        ) -> Result<Box<dyn Read + Send>, RepoError> {
            Ok(Box::new(std::io::Cursor::new(self.0[&d.digest].clone())))
        }
    }

    #[test]
    fn a_document_is_decoded_no_further_than_its_limit() {
        let mut blobs = Blobs::default();
        let body = vec![b'x'; 100_000];
        let frame = asp_format::bundle::layers::compress(&body, None, 3).unwrap();
        let zstd = Encoding::Zstd.media_type(STATE_LAYER);
        let packed = blobs.put(frame, &zstd);
        let plain = blobs.put(body.clone(), STATE_LAYER);
        for d in [&packed, &plain] {
            let got = read_document_within(&blobs, d, STATE_LAYER, 100_000).unwrap();
            assert_eq!(got.as_deref(), Some(&body[..]));
            assert_eq!(
                read_document_within(&blobs, d, STATE_LAYER, 99_999).unwrap(),
                None
            );
        }
        // Any limit above one document's is that limit (no overflow on the `+ 1`).
        assert!(
            read_document_within(&blobs, &plain, STATE_LAYER, u64::MAX)
                .unwrap()
                .is_some()
        );
        let other = OciDescriptor::new("text/plain".to_owned(), plain.blob());
        let err = read_document(&blobs, &other, STATE_LAYER).unwrap_err();
        assert!(err.to_string().contains("media type text/plain"), "{err}");
    }

    #[test]
    fn the_documents_budget_charges_the_larger_size_and_decodes_no_further_than_it() {
        let mut blobs = Blobs::default();
        let zstd = Encoding::Zstd.media_type(STATE_LAYER);
        // 60,000 bytes decoded from a frame of about a hundred: charged 60,000.
        let small = asp_format::bundle::layers::compress(&[b'y'; 60_000], None, 3).unwrap();
        let doc = blobs.put(small, &zstd);
        let plain = blobs.put(vec![b'z'; 20_000], STATE_LAYER);
        // Documents of at most 70,000 bytes, 140,000 together.
        let budget = Budget::new(70_000);
        let read = |d| budget.read(&blobs, d, STATE_LAYER).unwrap();
        assert_eq!(read(&doc).unwrap().len(), 60_000);
        assert_eq!(budget.0.get().room(), 70_000);
        assert_eq!(read(&doc).unwrap().len(), 60_000);
        assert_eq!(budget.0.get().room(), 20_000);
        // A third would take them past 140,000: refused, naming the layer, not charged.
        let err = read(&doc).unwrap_err();
        assert!(err.contains(&doc.digest.to_string()), "{err}");
        assert!(
            err.contains("take more than 140000 bytes together"),
            "{err}"
        );
        assert_eq!(budget.0.get().room(), 20_000);
        // A stored document is charged its stored size; one over the limit of one is refused
        // as that.
        assert_eq!(read(&plain).unwrap().len(), 20_000);
        assert_eq!(budget.0.get().room(), 0);
        let fresh = Budget::new(50_000);
        let err = fresh.read(&blobs, &doc, STATE_LAYER).unwrap().unwrap_err();
        assert!(
            err.contains("more than 50000 bytes, the limit of one"),
            "{err}"
        );
    }
}
