//! Which `~/.gemini/tmp/<id>/` directory belongs to which project root, both ways.
//!
//! Gemini CLI ≥ 0.29 names a project's directory after a slug registered in
//! `~/.gemini/projects.json` (`{"projects": {"<root>": "<slug>"}}`) and marks ownership with a
//! `.project_root` file (the root, no newline) in `tmp/<slug>/` and `history/<slug>/`; older
//! versions used `sha256(root)` as the directory name. Reading resolves a directory to its root
//! (registry, then markers; hash directories by hashing every root the home mentions). Writing
//! claims a slug exactly as the CLI's `getShortId` would, so a session we file is found where
//! the CLI looks and never collides with a slug the CLI hands out later.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use asp_format::Digest;
use serde_json::{Map, Value};

use crate::error::ConvertError;
use crate::kit::fsops::Writer;
use crate::kit::report::Diagnostics;

const MARKER: &str = ".project_root";
const REGISTRY: &str = "projects.json";

/// `sha256(root)` as lowercase hex: the `projectHash` of every chat, and the old directory name.
pub fn project_hash(root: &str) -> String {
    Digest::of(root.as_bytes()).hex()
}

/// Whether a `tmp/` directory name is an old-style `sha256(root)`.
pub fn is_hash_dir(name: &str) -> bool {
    name.len() == 64 && name.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The CLI's `path.resolve(root)` for the absolute paths we handle: no trailing separator.
pub fn normalize_root(root: &str) -> String {
    let t = root.trim_end_matches('/');
    if t.is_empty() && root.starts_with('/') {
        "/".to_owned()
    } else {
        t.to_owned()
    }
}

/// The CLI's slug of a root's base name: lower-case, every run of characters outside
/// `[a-z0-9]` one `-`, no `-` at either end, `project` when nothing is left.
pub fn slugify(root: &str) -> String {
    let base = root.rsplit('/').find(|c| !c.is_empty()).unwrap_or("");
    let mut out = String::new();
    for c in base.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-');
    if out.is_empty() {
        "project".to_owned()
    } else {
        out.to_owned()
    }
}

fn valid_slug(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

/// The project registry of one Gemini home, as read, plus the claims made while writing.
#[derive(Debug)]
pub struct Projects {
    gemini: PathBuf,
    /// root → slug, from `projects.json` (empty when the file is missing or unusable).
    registry: BTreeMap<String, String>,
    /// `projects.json` exists but cannot be used; it is then never rewritten.
    registry_broken: bool,
    /// dir name → root, from `tmp/*/.project_root` and `history/*/.project_root`.
    tmp_markers: BTreeMap<String, String>,
    history_markers: BTreeMap<String, String>,
    /// Roots named in `trustedFolders.json`: candidates for resolving hash directories.
    trusted: Vec<String>,
    /// Entries claimed by this run, in order, to add to `projects.json`.
    claimed: Vec<(String, String)>,
    /// Marker files this run must create: (path, root).
    pending_markers: Vec<(PathBuf, String)>,
    /// Entries this run added to a `projects.json` that was there (`root → slug`), for the
    /// answer's `writtenInto`.
    added: Vec<String>,
    /// Whether `projects.json` was there when the write began (one this write made is not
    /// the owner's, however often it is saved).
    registry_was_there: bool,
}

fn read_markers(base: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let Ok(entries) = fs::read_dir(base) else {
        return out;
    };
    for e in entries.flatten() {
        let Some(name) = e.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if let Ok(root) = fs::read_to_string(e.path().join(MARKER)) {
            out.insert(name, root.trim().to_owned());
        }
    }
    out
}

impl Projects {
    /// Reads `projects.json`, every marker and `trustedFolders.json` under `gemini` (the
    /// `.gemini` directory). Missing files are fine; a broken registry is reported.
    pub fn load(gemini: &Path, diagnostics: &Diagnostics) -> Projects {
        let path = gemini.join(REGISTRY);
        let mut registry = BTreeMap::new();
        let mut registry_broken = false;
        match fs::read(&path) {
            Err(_) => {}
            Ok(bytes) => match parse_registry(&bytes) {
                Some(r) => registry = r,
                None => {
                    registry_broken = true;
                    diagnostics.note(
                        &path,
                        None,
                        "not a valid project registry (Gemini treats it as empty and rebuilds it \
                         from the .project_root markers); projects are resolved through the markers",
                    );
                }
            },
        }
        let mut trusted = Vec::new();
        if let Ok(bytes) = crate::kit::fsops::read(&gemini.join("trustedFolders.json"))
            && let Ok(Value::Object(m)) = serde_json::from_slice::<Value>(&bytes)
        {
            for (root, how) in m {
                if how == "TRUST_PARENT"
                    && let Some((parent, _)) = root.rsplit_once('/')
                    && !parent.is_empty()
                {
                    trusted.push(parent.to_owned());
                }
                trusted.push(root);
            }
        }
        Projects {
            gemini: gemini.to_path_buf(),
            registry,
            registry_broken,
            tmp_markers: read_markers(&gemini.join("tmp")),
            history_markers: read_markers(&gemini.join("history")),
            trusted,
            claimed: Vec::new(),
            pending_markers: Vec::new(),
            added: Vec::new(),
            registry_was_there: crate::kit::fsops::exists(&path),
        }
    }

    /// The project root a `tmp/<dir>` belongs to: the registry entry naming it, else its
    /// marker. Hash directories need [`Projects::root_of_hash`].
    pub fn root_of_dir(&self, dir: &str) -> Option<String> {
        self.registry
            .iter()
            .find(|(_, slug)| slug.as_str() == dir)
            .map(|(root, _)| root.clone())
            .or_else(|| self.tmp_markers.get(dir).cloned())
            .or_else(|| self.history_markers.get(dir).cloned())
    }

    /// The root whose sha256 is `hash`, among every root this home mentions plus `extra`
    /// (directories recorded in the chat itself).
    pub fn root_of_hash(&self, hash: &str, extra: &[String]) -> Option<String> {
        let hash = hash.to_ascii_lowercase();
        self.registry
            .keys()
            .chain(self.tmp_markers.values())
            .chain(self.history_markers.values())
            .chain(self.trusted.iter())
            .chain(extra.iter())
            .map(|r| normalize_root(r))
            .find(|r| project_hash(r) == hash)
    }

    fn marker_owner(&self, dir: &str) -> [Option<&String>; 2] {
        [self.tmp_markers.get(dir), self.history_markers.get(dir)]
    }

    /// The directory the CLI uses for `root` today, without claiming one.
    pub fn lookup(&self, root: &str) -> Option<String> {
        let root = normalize_root(root);
        if let Some(slug) = self.registry.get(&root)
            && self
                .marker_owner(slug)
                .iter()
                .flatten()
                .all(|owner| **owner == root)
        {
            return Some(slug.clone());
        }
        self.tmp_markers
            .iter()
            .chain(self.history_markers.iter())
            .find(|(_, owner)| **owner == root)
            .map(|(dir, _)| dir.clone())
    }

    /// Whether `tmp/<dir>` holds anything besides its marker: the CLI only migrates a hash
    /// directory into a slug directory that is missing or holds just the marker.
    pub fn slug_dir_in_use(&self, dir: &str) -> bool {
        fs::read_dir(self.gemini.join("tmp").join(dir))
            .map(|mut it| it.any(|e| e.map(|e| e.file_name() != MARKER).unwrap_or(false)))
            .unwrap_or(false)
    }

    /// Does the CLI's start-up migration for `root` now, before anything is written into its
    /// slug directory: while that holds nothing but its marker, the CLI copies the old
    /// `sha256(root)` directory into it (and keeps the old one); once it holds anything, the
    /// old directory is never read again. Writing into the slug directory first would hide
    /// every chat still in the old one.
    ///
    /// The copy is all or nothing, since a partial one would count as "in use" and the CLI
    /// would never copy the rest: the old directory is copied whole into a temporary sibling
    /// (`tmp/.asp-adopt-*`), the slug directory's marker with it, and that is renamed into
    /// place of the slug directory, which held only the marker. A failure before the rename
    /// leaves the slug directory as it was (the temporary copy is removed).
    pub fn adopt_hash_dir(
        &self,
        root: &str,
        slug: &str,
        writer: &Writer,
    ) -> Result<(), ConvertError> {
        let tmp = self.gemini.join("tmp");
        let old = tmp.join(project_hash(&normalize_root(root)));
        if slug == project_hash(&normalize_root(root))
            || !old.is_dir()
            || self.slug_dir_in_use(slug)
            || writer.is_dry_run()
        {
            return Ok(());
        }
        let new = tmp.join(slug);
        let staging = tempfile::Builder::new()
            .prefix(".asp-adopt-")
            .tempdir_in(&tmp)
            .map_err(ConvertError::io(&tmp))?;
        for entry in walkdir::WalkDir::new(&old).min_depth(1) {
            let entry = entry.map_err(|e| ConvertError::Io {
                path: old.clone(),
                source: e.into(),
            })?;
            let rel = entry.path().strip_prefix(&old).expect("walked under old");
            let to = staging.path().join(rel);
            if entry.file_type().is_dir() {
                fs::create_dir_all(&to).map_err(ConvertError::io(&to))?;
            } else if entry.file_type().is_file() && rel != Path::new(MARKER) {
                fs::copy(entry.path(), &to).map_err(ConvertError::io(entry.path()))?;
            }
        }
        let marker = new.join(MARKER);
        if marker.is_file() {
            fs::copy(&marker, staging.path().join(MARKER)).map_err(ConvertError::io(&marker))?;
        }
        sync_tree(staging.path());
        // The slug directory holds at most its marker, which the copy has too: it is removed,
        // and the copy renamed into its place (its marker put back if that fails).
        if new.is_dir() {
            if marker.is_file() {
                fs::remove_file(&marker).map_err(ConvertError::io(&marker))?;
            }
            if let Err(e) = fs::remove_dir(&new) {
                self.put_back_marker(&marker, &staging);
                return Err(ConvertError::io(&new)(e));
            }
        }
        if let Err(e) = fs::rename(staging.path(), &new) {
            let _ = fs::create_dir_all(&new);
            self.put_back_marker(&marker, &staging);
            return Err(ConvertError::io(&new)(e));
        }
        // Renamed away: nothing for the temporary directory's cleanup to remove.
        let _ = staging.keep();
        if let Ok(d) = fs::File::open(&tmp) {
            let _ = d.sync_all();
        }
        Ok(())
    }

    fn put_back_marker(&self, marker: &Path, staging: &tempfile::TempDir) {
        if !marker.exists() {
            let _ = fs::copy(staging.path().join(MARKER), marker);
        }
    }

    fn candidate_free(&self, cand: &str, root: &str) -> bool {
        !self.registry.values().any(|s| s == cand)
            && self
                .marker_owner(cand)
                .iter()
                .flatten()
                .all(|owner| **owner == root)
    }

    /// The directory for `root`, claiming a slug as the CLI would when it has none: the
    /// registered slug, else the directory whose marker names the root, else `preferred` (the
    /// slug a restored session had) when it is free, else the first free of `slug`, `slug-1`,
    /// `slug-2`, ... Markers and the registry entry are written by [`Projects::save`].
    pub fn claim(&mut self, root: &str, preferred: Option<&str>) -> String {
        let root = normalize_root(root);
        let dir = match self.lookup(&root) {
            Some(dir) => dir,
            None => {
                let base = slugify(&root);
                let pick = preferred
                    .filter(|p| valid_slug(p) && !is_hash_dir(p) && self.candidate_free(p, &root))
                    .map(str::to_owned)
                    .unwrap_or_else(|| {
                        (0..)
                            .map(|n| {
                                if n == 0 {
                                    base.clone()
                                } else {
                                    format!("{base}-{n}")
                                }
                            })
                            .find(|c| self.candidate_free(c, &root))
                            .expect("an unbounded search finds a free slug")
                    });
                self.registry.insert(root.clone(), pick.clone());
                self.claimed.push((root.clone(), pick.clone()));
                pick
            }
        };
        if !self.registry.contains_key(&root) && !self.registry_broken {
            // Found through a marker only: the CLI records it in the registry too.
            self.registry.insert(root.clone(), dir.clone());
            self.claimed.push((root.clone(), dir.clone()));
        }
        for (base, markers) in [
            ("tmp", &mut self.tmp_markers),
            ("history", &mut self.history_markers),
        ] {
            if !markers.contains_key(&dir) {
                markers.insert(dir.clone(), root.clone());
                self.pending_markers
                    .push((self.gemini.join(base).join(&dir).join(MARKER), root.clone()));
            }
        }
        dir
    }

    /// `projects.json` and the entries this run added to it, when it was there before.
    pub fn added_to_registry(&self) -> (PathBuf, &[String]) {
        (self.gemini.join(REGISTRY), &self.added)
    }

    /// Writes the markers and registry entries claimed so far, as the CLI writes them: each
    /// marker created exclusively with the root and no newline; `projects.json` re-read under
    /// the CLI's lock (`projects.json.lock/`), extended, and replaced atomically as
    /// `JSON.stringify(…, null, 2)` without a trailing newline.
    pub fn save(&mut self, writer: &Writer) -> Result<(), ConvertError> {
        for (path, root) in std::mem::take(&mut self.pending_markers) {
            writer.create_new(&path, root.as_bytes(), false)?;
        }
        let claimed = std::mem::take(&mut self.claimed);
        if claimed.is_empty() || self.registry_broken {
            return Ok(());
        }
        let path = self.gemini.join(REGISTRY);
        let _lock = if writer.is_dry_run() {
            None
        } else {
            Some(Lock::take(&self.gemini.join("projects.json.lock"))?)
        };
        let mut doc = match fs::read(&path) {
            Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
                Ok(Value::Object(m)) => m,
                _ => {
                    return Err(ConvertError::invalid(
                        &path,
                        "changed into something that is not a project registry while asp was writing",
                    ));
                }
            },
            Err(e) if e.kind() == io::ErrorKind::NotFound => Map::new(),
            Err(e) => return Err(ConvertError::io(&path)(e)),
        };
        let projects = doc
            .entry("projects")
            .or_insert_with(|| Value::Object(Map::new()));
        if !projects.is_object() {
            *projects = Value::Object(Map::new());
        }
        let map = projects.as_object_mut().expect("made an object above");
        for (root, slug) in claimed {
            if !map.contains_key(&root) && self.registry_was_there {
                self.added.push(format!("project {root} as {slug}"));
            }
            map.entry(root).or_insert(Value::String(slug));
        }
        let text = serde_json::to_string_pretty(&Value::Object(doc)).expect("JSON serialises");
        writer.replace(&path, text.as_bytes())
    }
}

/// Syncs every file and folder under `dir`, so a copy renamed into place is on disk. (The
/// copy was made by this process, so it holds no FIFO to wait on.)
fn sync_tree(dir: &Path) {
    for e in walkdir::WalkDir::new(dir).into_iter().flatten() {
        if let Ok(f) = fs::File::open(e.path()) {
            let _ = f.sync_all();
        }
    }
}

/// `projects.json` as the CLI accepts it: an object whose `projects` maps roots to slugs
/// matching `^[a-z0-9-]+$`; anything else makes the CLI treat the whole file as empty.
fn parse_registry(bytes: &[u8]) -> Option<BTreeMap<String, String>> {
    let v: Value = serde_json::from_slice(bytes).ok()?;
    let projects = v.get("projects")?.as_object()?;
    let mut out = BTreeMap::new();
    for (root, slug) in projects {
        let slug = slug.as_str().filter(|s| valid_slug(s))?;
        out.insert(normalize_root(root), slug.to_owned());
    }
    Some(out)
}

/// The CLI's `proper-lockfile` lock on `projects.json`: a directory created atomically and
/// removed afterwards. A lock older than the library's 10 s staleness limit is taken over.
#[derive(Debug)]
struct Lock(PathBuf);

impl Lock {
    fn take(path: &Path) -> Result<Lock, ConvertError> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).map_err(ConvertError::io(parent))?;
        }
        for _ in 0..50 {
            match fs::create_dir(path) {
                Ok(()) => return Ok(Lock(path.to_path_buf())),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let stale = fs::metadata(path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| SystemTime::now().duration_since(t).ok())
                        .is_some_and(|age| age > Duration::from_secs(10));
                    if stale {
                        let _ = fs::remove_dir(path);
                        continue;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                Err(e) => return Err(ConvertError::io(path)(e)),
            }
        }
        Err(ConvertError::invalid(
            path,
            "a running Gemini CLI holds the project registry lock; close Gemini and try again",
        ))
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = fs::remove_dir(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_follow_the_cli() {
        assert_eq!(slugify("/home/dev/code/shop"), "shop");
        assert_eq!(slugify("/home/dev/work/Shop"), "shop");
        assert_eq!(slugify("/home/dev/My App!"), "my-app");
        assert_eq!(slugify("/home/dev/--x__y--/"), "x-y");
        assert_eq!(slugify("/"), "project");
        assert_eq!(
            project_hash("/home/dev/code/shop"),
            "52efbb073673fe2ab6aef99e8132e361c0d5e245fdc6ce54f5682353f3246bee"
        );
    }

    #[test]
    fn claims_skip_taken_slugs_and_write_registry_and_markers() {
        let home = tempfile::tempdir().unwrap();
        let gemini = home.path().join(".gemini");
        let diags = Diagnostics::new();
        let mut p = Projects::load(&gemini, &diags);
        assert_eq!(p.claim("/home/dev/code/shop", None), "shop");
        assert_eq!(p.claim("/home/dev/work/Shop/", None), "shop-1");
        assert_eq!(p.claim("/home/dev/code/shop", None), "shop");
        p.save(&Writer::new(false)).unwrap();
        assert_eq!(
            fs::read_to_string(gemini.join("projects.json")).unwrap(),
            "{\n  \"projects\": {\n    \"/home/dev/code/shop\": \"shop\",\n    \"/home/dev/work/Shop\": \"shop-1\"\n  }\n}"
        );
        assert_eq!(
            fs::read_to_string(gemini.join("history/shop-1/.project_root")).unwrap(),
            "/home/dev/work/Shop"
        );
        assert!(!gemini.join("projects.json.lock").exists());

        // A fresh load sees the claims; a marker alone is enough to find a project.
        fs::remove_file(gemini.join("projects.json")).unwrap();
        let p = Projects::load(&gemini, &diags);
        assert_eq!(p.lookup("/home/dev/work/Shop").as_deref(), Some("shop-1"));
        assert_eq!(
            p.root_of_dir("shop").as_deref(),
            Some("/home/dev/code/shop")
        );
        assert!(diags.is_empty());
    }

    #[test]
    fn an_old_hash_directory_is_adopted_whole_as_the_cli_would() {
        let home = tempfile::tempdir().unwrap();
        let gemini = home.path().join(".gemini");
        let root = "/home/dev/code/dotfiles";
        let old = gemini.join("tmp").join(project_hash(root));
        fs::create_dir_all(old.join("chats/parent")).unwrap();
        fs::write(old.join("chats/session-a.json"), "{}").unwrap();
        fs::write(old.join("chats/parent/child.jsonl"), "{}\n").unwrap();
        fs::write(old.join("logs.json"), "[]").unwrap();
        let diags = Diagnostics::new();
        let mut p = Projects::load(&gemini, &diags);
        let writer = Writer::new(false);
        let slug = p.claim(root, None);
        p.save(&writer).unwrap();
        assert!(!p.slug_dir_in_use(&slug), "only its marker");
        p.adopt_hash_dir(root, &slug, &writer).unwrap();
        let mut copied: Vec<String> = walkdir::WalkDir::new(gemini.join("tmp").join(&slug))
            .into_iter()
            .flatten()
            .filter(|e| e.file_type().is_file())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        copied.sort();
        assert_eq!(
            copied,
            [
                ".project_root",
                "child.jsonl",
                "logs.json",
                "session-a.json"
            ]
        );
        assert_eq!(
            fs::read_to_string(gemini.join("tmp").join(&slug).join(MARKER)).unwrap(),
            root
        );
        assert!(
            old.join("chats/session-a.json").is_file(),
            "the old one stays"
        );
        let leftovers: Vec<_> = fs::read_dir(gemini.join("tmp"))
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(".asp-"))
            .collect();
        assert!(leftovers.is_empty(), "{leftovers:?}");
        // In use now: adopting again changes nothing.
        fs::write(old.join("later.json"), "{}").unwrap();
        p.adopt_hash_dir(root, &slug, &writer).unwrap();
        assert!(!gemini.join("tmp").join(&slug).join("later.json").exists());
    }

    #[test]
    fn a_preferred_slug_is_used_when_free() {
        let home = tempfile::tempdir().unwrap();
        let diags = Diagnostics::new();
        let mut p = Projects::load(&home.path().join(".gemini"), &diags);
        assert_eq!(p.claim("/home/dev/work/Shop", Some("shop-1")), "shop-1");
        assert_eq!(p.claim("/srv/shop", Some("shop-1")), "shop");
    }
}
