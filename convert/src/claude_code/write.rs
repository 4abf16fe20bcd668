//! Writing sessions into Claude Code, never over anything that is there.
//!
//! A session packed from Claude Code is restored from its native files, byte for byte, at the
//! paths they came from (moved to the bucket of its new cwd when `--map-path` changed it). A
//! session from elsewhere is composed as a transcript ([`super::compose`]). Either way:
//!
//! - the same session id already there with the same bytes: "already there", maps to itself;
//! - with different bytes: the copy is written beside it under the id derived from
//!   `<thread>~<harness>` (Claude Code only lists UUID-named transcripts, so the copy's id is
//!   the name-based UUID of that name, and the sessions map says which it is), with the id
//!   inside every line rewritten;
//! - an id that is not a UUID (`telegram:42`) is written under the name-based UUID of the id.
//!
//! A restore writes only the files Claude Code keeps for that session, in one project folder:
//! `<id>.jsonl` (named for the session's own id), `<id>/subagents/agent-*.jsonl` and
//! `.meta.json`, `<id>/tool-results/<file>`, and 2.0-era `agent-*.jsonl` whose lines name the
//! session. Every other native file a bundle lists is refused with its reason; nothing is
//! made executable. Existing files are compared by size and streamed sha256.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{self, BufRead, Read};
use std::path::{Path, PathBuf};

use asp_format::Descriptor;
use asp_format::answer::ImportAnswer;
use asp_format::blob::BlobSource;
use asp_format::digest::Hasher;
use asp_format::kind::StateKind;
use asp_format::state::{FileEntry, Session};
use serde_json::{Value, json};

use super::NAME;
use super::compose::{self, Target, Timeline};
use super::ids::{is_uuid, name_uuid};
use super::layout::{self, FILE_HISTORY, Layout, TODOS, bucket_matches};
use super::survey::{
    BEFORE_CLEANUP, SESSION_RECORDS, SUBAGENTS, TOOL_RESULTS, owner_of, todo_owner,
};
use crate::error::ConvertError;
use crate::harness::WriteContext;
use crate::kit::beside::{MAX_COPIES, kept_beside, marked_title};
use crate::kit::conversation::Folder;
use crate::kit::fsops::{Created, Stamp, Writer};
use crate::kit::placement::{Placement, SessionPlaced, Tally};
use crate::kit::report::Severity;

/// Where a session's transcript file is, in any bucket.
fn find_transcript(layout: &Layout, preferred_bucket: &str, stem: &str) -> Option<PathBuf> {
    let name = format!("{stem}.jsonl");
    let preferred = layout.projects().join(preferred_bucket).join(&name);
    if preferred.is_file() {
        return Some(preferred);
    }
    let mut buckets: Vec<PathBuf> = fs::read_dir(layout.projects())
        .ok()
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path().join(&name))
        .collect();
    buckets.sort();
    // A transcript in any bucket first: a stale link in the preferred one does not hide it.
    if let Some(p) = buckets.iter().find(|p| p.is_file()) {
        return Some(p.clone());
    }
    // Then anything else at the name: a symbolic link (even one that leads nowhere) or a
    // folder is not this session, and the carried one is kept beside it rather than written
    // through it or counted as written (new-user trial helper-124, 2).
    let occupied = |p: &Path| fs::symlink_metadata(p).is_ok();
    if occupied(&preferred) {
        return Some(preferred);
    }
    buckets.into_iter().find(|p| occupied(p))
}

/// The digest and size of a file, hashed as it streams (`None` when it cannot be read).
fn file_descriptor(path: &Path) -> Option<Descriptor> {
    descriptor_of(crate::kit::source::open_regular(path).ok()?).ok()
}

/// The digest and size of everything `r` yields.
fn descriptor_of(mut r: impl Read) -> io::Result<Descriptor> {
    let mut h = Hasher::new();
    let mut buf = vec![0; 1 << 16];
    loop {
        match r.read(&mut buf) {
            Ok(0) => return Ok(h.finish()),
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// Whether the file at `path` holds exactly the bytes `d` describes (size first, then a
/// streamed sha256; nothing is held in memory).
fn file_is(path: &Path, d: &Descriptor) -> bool {
    fs::metadata(path).is_ok_and(|m| m.len() == d.size) && file_descriptor(path) == Some(*d)
}

/// Whether the file at `path` holds the bytes `d` describes and more after them: the session
/// continued here (Claude Code appends to a transcript it resumes), so it holds every line of
/// the carried version.
fn file_continues(path: &Path, d: &Descriptor) -> bool {
    use std::io::{Seek, SeekFrom};
    let continues = || -> io::Result<bool> {
        let mut f = crate::kit::source::open_regular(path)?;
        if d.size == 0 || f.metadata()?.len() <= d.size {
            return Ok(false);
        }
        // What follows starts a line (as `kit::beside::holds_all_of` asks): the carried bytes
        // end one, or the next byte ends the last.
        f.seek(SeekFrom::Start(d.size - 1))?;
        let mut two = [0u8; 2];
        f.read_exact(&mut two)?;
        if !two.contains(&b'\n') {
            return Ok(false);
        }
        f.rewind()?;
        Ok(descriptor_of(f.take(d.size))? == *d)
    };
    continues().unwrap_or(false)
}

/// Whether the file at `path` holds every line `d` describes: the same bytes, or those and
/// more ([`file_continues`]). `Some(true)` the same; `None` neither.
fn file_holds(path: &Path, d: &Descriptor) -> Option<bool> {
    if file_is(path, d) {
        Some(true)
    } else {
        file_continues(path, d).then_some(false)
    }
}

/// Whether the carried bytes `d` (in `blobs`) continue the file at `path`: they start with
/// every byte of it, at a line's end, and go on (the session was continued on another machine
/// and is carried back). Then what the file was when compared, for
/// [`Writer::bring_up_to_date`]. Streamed: neither is held in memory.
fn carried_continues(path: &Path, blobs: &dyn BlobSource, d: &Descriptor) -> Option<Stamp> {
    use std::io::{Seek, SeekFrom};
    let was = Stamp::of(path)?;
    if was.len == 0 || was.len >= d.size {
        return None;
    }
    let mut here = crate::kit::source::open_regular(path).ok()?;
    // What follows starts a line: the bytes here end one, or the carried byte after them does.
    here.seek(SeekFrom::Start(was.len - 1)).ok()?;
    let mut last = [0u8; 1];
    here.read_exact(&mut last).ok()?;
    here.rewind().ok()?;
    let mut carried = blobs.open(d).ok()?;
    let prefix = descriptor_of((&mut carried).take(was.len)).ok()?;
    if last[0] != b'\n' {
        let mut next = [0u8; 1];
        carried.read_exact(&mut next).ok()?;
        if next[0] != b'\n' {
            return None;
        }
    }
    (descriptor_of(here.take(was.len)).ok()? == prefix).then_some(was)
}

/// The id the `attempt`-th copy (from 1) kept beside a different version gets: the
/// name-based UUID of its [`kept_beside`] name.
pub fn copy_id(s: &Session, attempt: u32) -> String {
    name_uuid(&kept_beside(s.id.as_str(), &s.title, Some(harness_of(s)), attempt).name)
}

/// What `MAX_COPIES` different versions already there say.
fn no_name_left(s: &Session, projects: &Path) -> String {
    format!(
        "session {}: {MAX_COPIES} different versions of it are already in {}; not written",
        s.id,
        projects.display()
    )
}

/// The record that titles a copy kept beside a different version (`/rename` writes the same):
/// the session's title with the `~<harness>` marker, so `claude --resume` tells the two apart.
fn copy_title_line(s: &Session, copy: &str) -> Vec<u8> {
    let title = marked_title(&s.title, harness_of(s));
    let mut line = serde_json::to_vec(
        &json!({"type": "custom-title", "customTitle": title, "sessionId": copy}),
    )
    .expect("a JSON value serialises");
    line.push(b'\n');
    line
}

/// The Claude Code id a session is written under.
pub fn claude_id(id: &str) -> String {
    if is_uuid(id) {
        id.to_owned()
    } else {
        name_uuid(id)
    }
}

/// What writing one session came to.
#[derive(Debug, Default)]
struct Outcome {
    /// Where it went, or why it was not written.
    result: Option<SessionPlaced>,
    /// Native files that were not restored, each with its reason.
    refused: Vec<String>,
    /// Native paths restored (or found already there).
    placed: HashSet<String>,
    /// Of those, the ones written now (not found there).
    written: HashSet<String>,
    /// Of those written, the logs there that the carried ones continue, brought up to date.
    continued: HashSet<String>,
}

impl Outcome {
    fn of(result: SessionPlaced) -> Self {
        Outcome {
            result: Some(result),
            ..Outcome::default()
        }
    }
}

/// Writes every session; children carried inside a native parent's files map to themselves
/// when their parent was written with their files, and are not taken otherwise. A subagent
/// whose parent is not in the state is written as a session of its own, composed from its
/// updates (its native file alone is not a session Claude Code can list).
pub fn write_sessions(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    sessions: &[Session],
    answer: &mut ImportAnswer,
) -> Result<(), ConvertError> {
    let mut tally = Tally::new(answer, StateKind::Sessions, sessions.len());
    ctx.progress.begin("writing Claude Code sessions", None);
    let by_id: HashMap<&str, usize> = sessions
        .iter()
        .enumerate()
        .rev()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    // The parent each carried child travels with (never a child carried itself).
    let parent_of = |s: &Session| carrier(s, sessions, &by_id);
    let carried: Vec<Option<usize>> = sessions
        .iter()
        .map(|s| parent_of(s).filter(|&p| parent_of(&sessions[p]).is_none()))
        .collect();
    let mut outcomes: Vec<Outcome> = Vec::with_capacity(sessions.len());
    for (s, carried) in sessions.iter().zip(&carried) {
        if carried.is_some() {
            outcomes.push(Outcome::default());
            continue;
        }
        ctx.progress.item(s.id.as_str());
        let outcome = if is_native(s) {
            match main_transcript(s) {
                Ok(Some(main)) => write_native(layout, ctx, s, main)?,
                Ok(None) => Outcome::of(write_composed(layout, ctx, s)?),
                Err(why) => Outcome::of(SessionPlaced::refused(why)),
            }
        } else {
            Outcome::of(write_composed(layout, ctx, s)?)
        };
        outcomes.push(outcome);
    }
    for (i, s) in sessions.iter().enumerate() {
        let result = match carried[i] {
            Some(p) => Some(with_parent(s, &sessions[p], &outcomes[p])),
            None => outcomes[i].result.clone(),
        };
        if let Some(placed) = result {
            tally.session(s.id.as_str(), placed);
        }
        for why in &outcomes[i].refused {
            tally.refuse(why.clone());
        }
    }
    ctx.progress.finish();
    tally.finish();
    Ok(())
}

/// A child carried in its parent's files is there exactly when the parent was written and
/// every one of the child's files was restored with it.
fn with_parent(s: &Session, parent: &Session, outcome: &Outcome) -> SessionPlaced {
    match &outcome.result {
        Some(p) if p.placement.is_placed() => {}
        _ => {
            return SessionPlaced::refused(format!(
                "subagent session {} travels in the files of session {}, which was not written; not written",
                s.id, parent.id
            ));
        }
    }
    let files = &s
        .native
        .as_ref()
        .expect("carried children are native")
        .files;
    let logs = || files.iter().filter(|f| f.path.as_str().ends_with(".jsonl"));
    match files
        .iter()
        .find(|f| !outcome.placed.contains(f.path.as_str()))
    {
        // Its transcript there, continued by the carried one: brought up to date, whatever
        // its parent came to (review helper-139, 3).
        None if logs().any(|f| outcome.continued.contains(f.path.as_str())) => {
            SessionPlaced::updated(s.id.as_str())
        }
        // Its parent brought up to date, its own files there already as they are; one of them
        // replaced with the carried one (its `.meta.json`) is an update (review helper-140, 3).
        None if outcome
            .result
            .as_ref()
            .is_some_and(|p| p.placement == Placement::Updated)
            && !logs().any(|f| outcome.written.contains(f.path.as_str())) =>
        {
            match files
                .iter()
                .any(|f| outcome.written.contains(f.path.as_str()))
            {
                true => SessionPlaced::updated(s.id.as_str()),
                false => SessionPlaced::already_there(s.id.as_str()),
            }
        }
        // Its files written now, where its parent was already there (or is brought up to
        // date): the child is new here.
        None if outcome.result.as_ref().is_some_and(|p| {
            matches!(p.placement, Placement::AlreadyThere | Placement::Updated)
        }) && files.iter().any(|f| {
            f.path.as_str().ends_with(".jsonl") && outcome.written.contains(f.path.as_str())
        }) =>
        {
            SessionPlaced::new(s.id.as_str())
        }
        None => SessionPlaced {
            id: s.id.to_string(),
            placement: outcome
                .result
                .as_ref()
                .map_or(Placement::New, |p| p.placement.clone()),
        },
        Some(f) => SessionPlaced::refused(format!(
            "subagent session {}: its file {} was not restored with session {}; not written",
            s.id, f.path, parent.id
        )),
    }
}

fn is_native(s: &Session) -> bool {
    s.native
        .as_ref()
        .is_some_and(|n| n.harness.as_str() == NAME && !n.files.is_empty())
}

/// The session a subagent's files travel in: its parent, when that is a native session whose
/// files include all of the child's.
fn carrier(s: &Session, all: &[Session], by_id: &HashMap<&str, usize>) -> Option<usize> {
    let parent = crate::kit::meta::parent_id(s.meta.as_ref())?;
    let own = s.native.as_ref().filter(|_| is_native(s))?;
    let &i = by_id.get(parent)?;
    let p = &all[i];
    let carried = i != by_id[s.id.as_str()]
        && is_native(p)
        && own.files.iter().all(|f| {
            p.native
                .as_ref()
                .is_some_and(|pn| pn.files.iter().any(|pf| pf.path == f.path))
        });
    carried.then_some(i)
}

/// `(bucket, rest)` of a native path `.claude/projects/<bucket>/<rest>`.
fn split_native(path: &str) -> Option<(&str, &str)> {
    path.strip_prefix(".claude/projects/")?.split_once('/')
}

/// The session's main transcript among its native files: `.claude/projects/<bucket>/<id>.jsonl`.
/// `Ok(None)` when it has none (a subagent's own files): it is then composed from its updates.
/// A transcript named for another session is refused: the name is what Claude Code goes by.
fn main_transcript(s: &Session) -> Result<Option<&FileEntry>, String> {
    let files = &s.native.as_ref().expect("checked").files;
    fn depth_one(f: &FileEntry) -> Option<&str> {
        split_native(f.path.as_str())
            .and_then(|(_, rest)| rest.strip_suffix(".jsonl"))
            .filter(|stem| !stem.contains('/'))
    }
    if let Some(main) = files.iter().find(|f| depth_one(f) == Some(s.id.as_str())) {
        return Ok(Some(main));
    }
    match files
        .iter()
        .find(|f| depth_one(f).is_some_and(|stem| !stem.starts_with("agent-")))
    {
        Some(other) => Err(format!(
            "session {}: its native transcript {} is named for another session; not written",
            s.id, other.path
        )),
        None => Ok(None),
    }
}

/// What a native file of a session is, by its path inside the project folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    /// `<stem>.jsonl`.
    Main,
    /// `<stem>/subagents/agent-<id>.jsonl` or `.meta.json`, `<stem>/tool-results/<file>`.
    Side,
    /// `agent-<id>.jsonl` beside the transcript (2.0.x), if it names the session as its owner.
    Legacy,
}

/// `<id>` of a file named `agent-<id><suffix>`.
fn agent_file(name: &str, suffix: &str) -> bool {
    name.strip_prefix("agent-")
        .and_then(|n| n.strip_suffix(suffix))
        .is_some_and(|n| !n.is_empty())
}

/// The files Claude Code keeps for session `stem` inside its project folder, exactly what the
/// reader carries; anything else is not restored.
fn classify(rest: &str, stem: &str) -> Option<Part> {
    if rest.strip_suffix(".jsonl") == Some(stem) {
        return Some(Part::Main);
    }
    if let Some(inside) = rest.strip_prefix(stem).and_then(|r| r.strip_prefix('/')) {
        return match inside.split_once('/') {
            Some((SUBAGENTS, name))
                if !name.contains('/')
                    && (agent_file(name, ".jsonl") || agent_file(name, ".meta.json")) =>
            {
                Some(Part::Side)
            }
            Some((TOOL_RESULTS | BEFORE_CLEANUP, name)) if !name.contains('/') => Some(Part::Side),
            None if SESSION_RECORDS.contains(&inside) => Some(Part::Side),
            _ => None,
        };
    }
    (!rest.contains('/') && agent_file(rest, ".jsonl")).then_some(Part::Legacy)
}

/// Where a native file of a session is written, named for the session as it was read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Place {
    /// This path inside the project folder: `<stem>.jsonl`, `<stem>/…`, `agent-<id>.jsonl`.
    Project(String),
    /// `file-history/<stem>/<this name>`: a rewind checkpoint.
    Checkpoint(String),
    /// `todos/<stem>-agent-<this agent id>.json`: a todo list.
    Todos(String),
}

/// A session's file outside its project folder (`.claude/file-history/<stem>/<name>`,
/// `.claude/todos/<stem>-agent-<agent>.json`), exactly what the survey carries.
fn outside_place(path: &str, stem: &str) -> Option<Place> {
    let (folder, name) = path.strip_prefix(".claude/")?.split_once('/')?;
    match folder {
        FILE_HISTORY => {
            let name = name.strip_prefix(stem)?.strip_prefix('/')?;
            (!name.is_empty() && !name.contains('/')).then(|| Place::Checkpoint(name.to_owned()))
        }
        TODOS if todo_owner(name) == Some(stem) => {
            let agent = name.strip_prefix(stem)?.strip_prefix("-agent-")?;
            Some(Place::Todos(agent.strip_suffix(".json")?.to_owned()))
        }
        _ => None,
    }
}

/// The native files of session `s` that may be restored with it, each with where it goes;
/// every other one is refused with its reason.
fn restorable<'f>(
    s: &Session,
    files: &'f [FileEntry],
    src_bucket: &str,
    blobs: &dyn BlobSource,
    refused: &mut Vec<String>,
) -> Vec<(&'f FileEntry, Place)> {
    let stem = s.id.as_str();
    let mut out = Vec::new();
    for f in files {
        if let Some(place) = outside_place(f.path.as_str(), stem) {
            out.push((f, place));
            continue;
        }
        let part = split_native(f.path.as_str())
            .filter(|(b, _)| *b == src_bucket)
            .and_then(|(_, rest)| classify(rest, stem).map(|p| (p, rest)));
        let why = match part {
            Some((Part::Main | Part::Side, rest)) => {
                out.push((f, Place::Project(rest.to_owned())));
                continue;
            }
            Some((Part::Legacy, rest)) => {
                let owner = blobs.open(&f.content).ok().and_then(owner_of);
                if owner.as_deref() == Some(stem) {
                    out.push((f, Place::Project(rest.to_owned())));
                    continue;
                }
                "is a subagent transcript of another session"
            }
            None => {
                "is not one of the session's own files (its transcript, subagents/agent-*.jsonl and .meta.json, tool-results/, 2.0-era agent-*.jsonl beside it, all in one project folder; its file-history/ folder and todos/ lists)"
            }
        };
        refused.push(format!(
            "session {}: the native file {} {why}; not written",
            s.id, f.path
        ));
    }
    out
}

/// The session id inside the lines (`"sessionId":"<old>"`, `"session_id":"<old>"`, as Claude
/// Code's compact JSON spells them) replaced; every other byte kept, damaged lines included.
fn replace_session_id(bytes: &[u8], old: &str, new: &str) -> Vec<u8> {
    let mut out = bytes.to_vec();
    for key in ["sessionId", "session_id"] {
        let from = format!("\"{key}\":\"{old}\"");
        let to = format!("\"{key}\":\"{new}\"");
        out = replace_bytes(&out, from.as_bytes(), to.as_bytes());
    }
    out
}

fn replace_bytes(haystack: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut i = 0;
    while i < haystack.len() {
        if haystack[i..].starts_with(from) {
            out.extend_from_slice(to);
            i += from.len();
        } else {
            out.push(haystack[i]);
            i += 1;
        }
    }
    out
}

/// [`replace_session_id`] as a stream, one line at a time (the patterns hold no newline, so
/// this gives the same bytes).
struct Renamed<'a, R> {
    inner: io::BufReader<R>,
    old: &'a str,
    new: &'a str,
    line: Vec<u8>,
    out: Vec<u8>,
    at: usize,
}

impl<'a, R: Read> Renamed<'a, R> {
    fn new(inner: R, old: &'a str, new: &'a str) -> Self {
        Renamed {
            inner: io::BufReader::with_capacity(1 << 16, inner),
            old,
            new,
            line: Vec::new(),
            out: Vec::new(),
            at: 0,
        }
    }
}

impl<R: Read> Read for Renamed<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if self.at == self.out.len() {
            self.line.clear();
            if self.inner.read_until(b'\n', &mut self.line)? == 0 {
                return Ok(0);
            }
            self.out = replace_session_id(&self.line, self.old, self.new);
            self.at = 0;
        }
        let n = buf.len().min(self.out.len() - self.at);
        buf[..n].copy_from_slice(&self.out[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// Restores a Claude Code session from its native files.
fn write_native(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    s: &Session,
    main: &FileEntry,
) -> Result<Outcome, ConvertError> {
    let writer = ctx.writer;
    let files = &s.native.as_ref().expect("checked").files;
    let (src_bucket, _) = split_native(main.path.as_str()).expect("checked");
    let stem = s.id.as_str();
    let mut refused = Vec::new();
    let files = restorable(s, files, src_bucket, ctx.blobs, &mut refused);
    // Its files into a project folder, under a stem: the one call every outcome below makes.
    let place_in = |bucket: &str, stem: &str, refused: &mut Vec<String>, updating| {
        place(
            layout, writer, ctx.blobs, s, &files, bucket, stem, refused, updating,
        )
    };
    // A bucket is derived from the cwd, and Claude Code looks a session up in the bucket of
    // the folder it runs in. The state's cwd is the transcript's first one (or where asp moved
    // it), so the two agree as Claude Code wrote them; when they do not, the cwd moved since:
    // by --map-path here, or by one given to `asp-unpack --to-dir` (which rewrites the files'
    // contents, not their paths) or by hand in the directory form, and the transcript goes to
    // the new cwd's bucket, where `claude --resume` from that folder finds it.
    // Only for a cwd that is surely another folder: an absolute path (a relative or empty one
    // names no bucket Claude Code looks in) whose bucket differs in more than letter case
    // (Claude Code compares buckets ignoring case), and ASCII (it buckets the NFC form of the
    // real path, which asp cannot tell from a name in another normalisation).
    let moved = |cwd: &str| {
        (cwd.starts_with('/') || cwd.as_bytes().get(1) == Some(&b':'))
            && cwd.is_ascii()
            && !bucket_matches(src_bucket, cwd)
            && !layout::bucket(cwd).eq_ignore_ascii_case(src_bucket)
    };
    let bucket = match &s.cwd {
        Some(cwd) if moved(cwd) => layout::bucket(cwd),
        _ => src_bucket.to_owned(),
    };
    let mut bucket = bucket;
    let mut copy_there = false;
    let there = find_transcript(layout, &bucket, stem).map(|p| {
        let held = file_holds(&p, &main.content);
        (p, held)
    });
    // The carried transcript continues the one here: the session went on elsewhere and came
    // back (new-user trial helper-136, 1). [`place`] brings its files up to date.
    if let Some((p, None)) = &there
        && carried_continues(p, ctx.blobs, &main.content).is_some()
    {
        ctx.diagnostics.note(
            p,
            None,
            format!(
                "session {}: the carried transcript continues the one here (it holds every line \
                 of it, and more after them); {}brought up to date",
                s.id,
                if writer.is_dry_run() { "would be " } else { "" }
            ),
        );
        let bucket = bucket_of(p).unwrap_or(&bucket).to_owned();
        let (placed, written, continued) = place_in(&bucket, stem, &mut refused, Updating::Yes)?;
        let updated = placed.contains(main.path.as_str());
        return Ok(Outcome {
            result: Some(match updated {
                true => SessionPlaced::updated(s.id.as_str()),
                false => SessionPlaced::refused(format!(
                    "session {}: {} changed while it was brought up to date; kept as it is, \
                     the carried version was not written (carry it again)",
                    s.id,
                    p.display()
                )),
            }),
            refused,
            placed,
            written,
            continued,
        });
    }
    let new_stem = match there {
        None => stem.to_owned(),
        Some((p, Some(same))) => {
            // Already there (in any bucket), or continued there; put back any of its other
            // files that are missing.
            if !same {
                ctx.diagnostics.note(
                    &p,
                    None,
                    format!(
                        "session {}: the transcript here continues the one carried (it holds \
                         every line of it, and more after them); kept as it is",
                        s.id
                    ),
                );
            }
            let bucket = bucket_of(&p).unwrap_or(&bucket).to_owned();
            let (placed, written, continued) = place_in(&bucket, stem, &mut refused, Updating::No)?;
            said_written_back(ctx, s, &written, &continued);
            return Ok(Outcome {
                result: Some(SessionPlaced::already_there(s.id.as_str())),
                refused,
                placed,
                written,
                continued,
            });
        }
        Some((_, None)) => {
            // The first name of a copy that is free, or that holds this very copy from an
            // earlier import (then it is completed where it is, and already there).
            let mut free = None;
            for attempt in 1..MAX_COPIES {
                let copy = copy_id(s, attempt);
                let Some(p) = find_transcript(layout, &bucket, &copy) else {
                    free = Some(copy);
                    break;
                };
                let carried = descriptor_of(
                    Renamed::new(ctx.blobs.open(&main.content)?, stem, &copy)
                        .chain(io::Cursor::new(copy_title_line(s, &copy))),
                )
                .map_err(|e| ConvertError::carried(format!("session {}", s.id), e))?;
                if file_holds(&p, &carried).is_some() {
                    bucket = bucket_of(&p).unwrap_or(&bucket).to_owned();
                    copy_there = true;
                    free = Some(copy);
                    break;
                }
            }
            let Some(copy) = free else {
                return Ok(Outcome {
                    result: Some(SessionPlaced::refused(no_name_left(s, &layout.projects()))),
                    refused,
                    ..Outcome::default()
                });
            };
            copy
        }
    };
    let (placed, written, continued) = place_in(&bucket, &new_stem, &mut refused, Updating::No)?;
    let result = if new_stem == stem {
        SessionPlaced::new(stem)
    } else if copy_there {
        said_written_back(ctx, s, &written, &continued);
        SessionPlaced::already_there(new_stem)
    } else {
        SessionPlaced::beside(new_stem)
    };
    Ok(Outcome {
        result: Some(result),
        refused,
        placed,
        written,
        continued,
    })
}

/// Says the files of a session already there that were missing and are written back (a
/// subagent transcript, checkpoints, todo lists deleted since): the session was there, but
/// the restore did write.
fn said_written_back(
    ctx: &WriteContext<'_>,
    s: &Session,
    written: &HashSet<String>,
    continued: &HashSet<String>,
) {
    // The logs brought up to date are said by their subagent sessions (`with_parent`).
    let mut names: Vec<&str> = written
        .iter()
        .filter(|p| !continued.contains(*p))
        .map(String::as_str)
        .collect();
    if names.is_empty() {
        return;
    }
    names.sort_unstable();
    let shown = names.iter().take(3).copied().collect::<Vec<_>>().join(", ");
    let more = match names.len() {
        n if n > 3 => format!(" and {} more", n - 3),
        _ => String::new(),
    };
    ctx.diagnostics.note(
        ctx.home.dir.as_path(),
        None,
        format!(
            "session {}: already there; {} of its files that were missing {} written back \
             ({shown}{more})",
            s.id,
            names.len(),
            match (names.len(), ctx.writer.is_dry_run()) {
                (_, true) => "would be",
                (1, false) => "was",
                (_, false) => "were",
            },
        ),
    );
}

/// The project folder a transcript found by [`find_transcript`] is in.
fn bucket_of(transcript: &Path) -> Option<&str> {
    transcript.parent()?.file_name()?.to_str()
}

fn harness_of(s: &Session) -> &str {
    s.harness.as_ref().map_or("asp", |h| h.as_str())
}

/// Native paths of a session, as its state names them.
type Paths = HashSet<String>;

/// Whether [`place`] brings a session there up to date: its transcript is the start of the
/// carried one, so the carried side files that differ (a todo list, a title or archive record)
/// are the newer ones, and replace those there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Updating {
    Yes,
    No,
}

/// Writes native files into `bucket` (checkpoints and todo lists into their folders), renaming
/// the session `stem` → `new_stem` (paths and the ids inside `.jsonl` lines). Files already
/// there are left alone, but logs the carried ones continue (brought up to date) and, with
/// `Updating::Yes`, side files that differ (replaced); nothing is made executable. Returns the
/// native paths whose bytes are now there, which of them it wrote, and which of those were logs
/// brought up to date; a different file already in the way is refused with its reason.
#[allow(clippy::too_many_arguments)]
fn place(
    layout: &Layout,
    writer: &Writer,
    blobs: &dyn BlobSource,
    s: &Session,
    files: &[(&FileEntry, Place)],
    bucket: &str,
    new_stem: &str,
    refused: &mut Vec<String>,
    updating: Updating,
) -> Result<(Paths, Paths, Paths), ConvertError> {
    let stem = s.id.as_str();
    let renamed = stem != new_stem;
    let mut placed = HashSet::new();
    let mut written = HashSet::new();
    let mut continued = HashSet::new();
    for (f, place) in files {
        let (target, rename, main) = match place {
            Place::Project(rest) => {
                let rest = if *rest == format!("{stem}.jsonl") {
                    format!("{new_stem}.jsonl")
                } else if let Some(r) = rest.strip_prefix(&format!("{stem}/")) {
                    format!("{new_stem}/{r}")
                } else {
                    rest.clone()
                };
                let main = rest == format!("{new_stem}.jsonl");
                let rename = renamed && rest.ends_with(".jsonl");
                (layout.projects().join(bucket).join(rest), rename, main)
            }
            // Checkpoints and todo lists hold no session id: only their names change.
            Place::Checkpoint(name) => (
                layout.file_history().join(new_stem).join(name),
                false,
                false,
            ),
            Place::Todos(agent) => {
                let agent = if agent == stem {
                    new_stem
                } else {
                    agent.as_str()
                };
                let name = format!("{new_stem}-agent-{agent}.json");
                (layout.todos().join(name), false, false)
            }
        };
        // The copy's own transcript ends with its marked title, so the two can be told apart.
        let title = if renamed && main {
            copy_title_line(s, new_stem)
        } else {
            Vec::new()
        };
        let open = || -> Result<Box<dyn Read + Send + '_>, ConvertError> {
            let r = blobs.open(&f.content)?;
            Ok(if rename {
                Box::new(Renamed::new(r, stem, new_stem).chain(io::Cursor::new(title.clone())))
            } else {
                r
            })
        };
        // No clobbering: a file already at the target stays as it is. A transcript there that
        // continues the carried one (resumed since) holds it: it is there.
        let log = target.extension().is_some_and(|e| e == "jsonl");
        let holds = |d: &Descriptor| {
            if log {
                file_holds(&target, d).is_some()
            } else {
                file_is(&target, d)
            }
        };
        let there = match writer.create_new_from(&target, &mut open()?, false)? {
            Created::New => {
                written.insert(f.path.to_string());
                true
            }
            Created::AlreadyExists if !rename && holds(&f.content) => true,
            // A transcript the carried one continues (the session, or one of its subagents,
            // went on elsewhere): brought up to date; nothing there is lost.
            Created::AlreadyExists if !rename && log => {
                match carried_continues(&target, blobs, &f.content) {
                    Some(was) => {
                        let done = writer.bring_up_to_date(&target, &mut open()?, was)?;
                        if done {
                            written.insert(f.path.to_string());
                            continued.insert(f.path.to_string());
                        }
                        done
                    }
                    None => false,
                }
            }
            // The session went on elsewhere: its side files there are the older ones.
            Created::AlreadyExists if !rename && updating == Updating::Yes => {
                writer.replace_from(&target, &mut open()?, Some(false))?;
                written.insert(f.path.to_string());
                true
            }
            Created::AlreadyExists if !rename => false,
            Created::AlreadyExists => {
                let carried = descriptor_of(open()?)
                    .map_err(|e| ConvertError::carried(format!("session {}", s.id), e))?;
                holds(&carried)
            }
        };
        if there {
            placed.insert(f.path.to_string());
        } else {
            refused.push(format!(
                "session {}: {} already holds a different file, kept as it is; the carried {} was not written",
                s.id,
                target.display(),
                f.path
            ));
        }
    }
    Ok((placed, written, continued))
}

/// Writes a session from its update stream.
fn write_composed(
    layout: &Layout,
    ctx: &WriteContext<'_>,
    s: &Session,
) -> Result<SessionPlaced, ConvertError> {
    let writer = ctx.writer;
    let mut folder = Folder::new();
    let mut timeline = Timeline::default();
    let mut at = 0;
    let mut lines = asp_format::update::UpdateLines::open(ctx.blobs, &s.updates)?;
    loop {
        match lines.next_line() {
            Ok(Some((n, line))) => match serde_json::from_str::<Value>(line) {
                Ok(v) => {
                    if let Some(u) = v.get("update") {
                        timeline.note(at, u);
                        at += 1;
                        folder.push(u.clone());
                    }
                }
                Err(e) => ctx.diagnostics.in_session(
                    Severity::Lost,
                    s.id.as_str(),
                    Some(n),
                    format!(
                        "an update that is not JSON ({}); skipped",
                        crate::kit::report::why_line_is_not_json(&e)
                    ),
                ),
            },
            Ok(None) => break,
            Err((n, e)) => {
                return Err(ConvertError::carried(
                    format!("session {}: update line {n}", s.id),
                    e,
                ));
            }
        }
    }
    let items = folder.finish();
    let home = crate::harness::absolute(&layout.home)
        .to_string_lossy()
        .into_owned();
    let cwd = s.cwd.clone().unwrap_or_else(|| {
        ctx.diagnostics.in_session(
            Severity::Note,
            s.id.as_str(),
            None,
            format!("names no working directory; written for your home directory {home}"),
        );
        home.clone()
    });
    let bucket = layout::bucket(&cwd);
    let harness = harness_of(s);
    let marked = marked_title(
        &crate::kit::conversation::title_or_prompt(&s.title, &items),
        harness,
    );
    let compose_as = |id: &str| {
        let own = *id == *s.id.as_str() || id == claude_id(s.id.as_str());
        compose::compose(
            &Target {
                id,
                cwd: &cwd,
                // A copy kept beside is titled with the marker, a name asp gives it.
                title: if own { &s.title } else { &marked },
                title_origin: if own {
                    crate::kit::title::origin(s)
                } else {
                    Some(crate::kit::title::TitleOrigin::Chosen)
                },
                harness,
                updated_at: s.updated_at.as_deref(),
                git_branch: crate::kit::git_branch::source_branch(s.meta.as_ref()),
            },
            &items,
            &timeline,
        )
    };
    let mut id = claude_id(s.id.as_str());
    let mut composed = compose_as(&id);
    if !composed.dropped.is_empty() {
        ctx.diagnostics.in_session(
            Severity::LeftOut,
            s.id.as_str(),
            None,
            format!(
                "{} updates have no place in a Claude Code transcript and were left out",
                composed.dropped.join(", ")
            ),
        );
    }
    let mut beside = false;
    // The same, or continued since (resumed in Claude Code, which appends): already there.
    let holds = |p: &Path, bytes: &[u8]| file_holds(p, &Descriptor::of(bytes)).is_some();
    if let Some(p) = find_transcript(layout, &bucket, &id) {
        if holds(&p, &composed.bytes) {
            return Ok(SessionPlaced::already_there(id));
        }
        beside = true;
        let mut free = false;
        for attempt in 1..MAX_COPIES {
            id = copy_id(s, attempt);
            composed = compose_as(&id);
            let Some(p) = find_transcript(layout, &bucket, &id) else {
                free = true;
                break;
            };
            if holds(&p, &composed.bytes) {
                // This very copy, from an earlier import.
                return Ok(SessionPlaced::already_there(id));
            }
        }
        if !free {
            return Ok(SessionPlaced::refused(no_name_left(s, &layout.projects())));
        }
    }
    let target = layout.projects().join(&bucket).join(format!("{id}.jsonl"));
    if writer.create_new(&target, &composed.bytes, false)? == Created::AlreadyExists {
        return Ok(SessionPlaced::refused(format!(
            "{} appeared while session {} was written; not replaced",
            target.display(),
            s.id
        )));
    }
    Ok(if beside {
        SessionPlaced::beside(id)
    } else {
        SessionPlaced::new(id)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_format::blob::BlobSink;

    /// A file here is continued by a carried version only when the carried bytes start with
    /// all of it at a line's end (review helper-138, 12): a file without its last newline is
    /// continued only by a carried one whose next byte ends that line; CRLF lines compare
    /// byte for byte; an empty file, the same bytes, a longer file or another line are not.
    #[test]
    fn a_carried_transcript_continues_the_file_here_only_at_a_lines_end() {
        let dir = tempfile::tempdir().unwrap();
        let store = asp_format::blob::MemoryStore::new();
        let here = dir.path().join("t.jsonl");
        let continues = |local: &[u8], carried: &[u8]| {
            fs::write(&here, local).unwrap();
            let d = store.put(carried).unwrap();
            carried_continues(&here, &store, &d).is_some()
        };
        assert!(continues(b"{\"a\":1}\n", b"{\"a\":1}\n{\"b\":2}\n"));
        assert!(continues(b"{\"a\":1}\r\n", b"{\"a\":1}\r\n{\"b\":2}\r\n"));
        // Its last line without its newline, which the carried one ends.
        assert!(continues(b"{\"a\":1}", b"{\"a\":1}\n{\"b\":2}\n"));
        // A last line cut short here and completed there is another line.
        assert!(!continues(b"{\"a\":", b"{\"a\":1}\n"));
        assert!(!continues(b"", b"{\"a\":1}\n"));
        assert!(!continues(b"{\"a\":1}\n", b"{\"a\":1}\n"));
        assert!(!continues(b"{\"a\":1}\n{\"b\":2}\n", b"{\"a\":1}\n"));
        assert!(!continues(b"{\"a\":2}\n", b"{\"a\":1}\n{\"b\":2}\n"));
    }

    #[test]
    fn renaming_keeps_every_other_byte() {
        let bytes =
            b"{\"sessionId\":\"a\",\"x\":\"\\\"sessionId\\\":\\\"a\\\"\"}\n\xff\x00 garbage\n";
        let out = replace_session_id(bytes, "a", "b");
        assert!(out.starts_with(b"{\"sessionId\":\"b\","));
        assert_eq!(out.len(), bytes.len());
        assert!(out.ends_with(b"\xff\x00 garbage\n"));
        // Text that merely quotes an id (escaped quotes) is left alone.
        assert_eq!(&out[16..], &bytes[16..]);
    }

    #[test]
    fn renaming_as_a_stream_gives_the_same_bytes() {
        let bytes = b"{\"sessionId\":\"a\",\"session_id\":\"a\"}\n\xff\n{\"sessionId\":\"a\"}";
        let mut streamed = Vec::new();
        Renamed::new(&bytes[..], "a", "bb")
            .read_to_end(&mut streamed)
            .unwrap();
        assert_eq!(streamed, replace_session_id(bytes, "a", "bb"));
    }

    #[test]
    fn only_a_sessions_own_files_are_restorable() {
        let s = "S";
        assert_eq!(classify("S.jsonl", s), Some(Part::Main));
        assert_eq!(classify("S/subagents/agent-a1.jsonl", s), Some(Part::Side));
        assert_eq!(
            classify("S/subagents/agent-a1.meta.json", s),
            Some(Part::Side)
        );
        assert_eq!(classify("S/tool-results/toolu_1.txt", s), Some(Part::Side));
        assert_eq!(classify("agent-a1.jsonl", s), Some(Part::Legacy));
        for other in [
            "T.jsonl",
            "memory/MEMORY.md",
            "S/subagents/agent-.jsonl",
            "S/subagents/x.jsonl",
            "S/subagents/deeper/agent-a.jsonl",
            "S/tool-results/a/b.txt",
            "S/hooks/run.sh",
            "S",
            "SS.jsonl",
            "T/subagents/agent-a.jsonl",
        ] {
            assert_eq!(classify(other, s), None, "{other}");
        }
    }

    #[test]
    fn a_sessions_checkpoints_and_todo_lists_are_its_own_files() {
        let s = "S";
        assert_eq!(
            outside_place(".claude/file-history/S/0123abcd@v2", s),
            Some(Place::Checkpoint("0123abcd@v2".into()))
        );
        assert_eq!(
            outside_place(".claude/todos/S-agent-S.json", s),
            Some(Place::Todos("S".into()))
        );
        assert_eq!(
            outside_place(".claude/todos/S-agent-a1.json", s),
            Some(Place::Todos("a1".into()))
        );
        for other in [
            ".claude/file-history/T/0123abcd@v2",
            ".claude/file-history/S/deeper/0123abcd@v2",
            ".claude/file-history/S/",
            ".claude/file-history/S",
            ".claude/file-history/SS/x",
            ".claude/todos/T-agent-T.json",
            ".claude/todos/S-agent-.json",
            ".claude/todos/S-agent-S.txt",
            ".claude/todos/S.json",
            ".claude/plans/S.md",
            "file-history/S/x",
        ] {
            assert_eq!(outside_place(other, s), None, "{other}");
        }
    }
}
