//! Reading one surveyed session ([`super::survey`]) into sessions: its chats, then its
//! subagents' chats.
//!
//! A subagent's chat (`chats/<parent id>/<id>.jsonl`) becomes a session of its own, linked
//! both ways (`_meta.asp.parent` on the child,
//! `_meta.asp.subagentSessionId` on the parent's `invoke_agent` call), titled with the task that
//! call gave it (the `summary` Gemini sets is its result, not a title). A project directory's
//! root comes from the registry or its marker; an old `sha256(root)` directory's root is found
//! by hashing every root the home and the chat mention. The same session can sit in two files
//! (the CLI copies hash directories into slug directories; a resumed `.json` chat continues in
//! a new `.jsonl`; every resume leaves a startup-only file with the same id): it is carried
//! once, from the file Gemini would resume (listable first, then the latest `lastUpdated`),
//! with every one of its files kept in `native` (when the read carries native files at all,
//! [`crate::harness::ReadOptions::native`]).

use std::collections::HashMap;
use std::path::Path;

use asp_format::name::{HarnessName, RelPath, SessionId};
use asp_format::state::{FileEntry, Meta, Native, Session};
use serde_json::Value;

use super::log::{self, Chat};
use super::projects::{Projects, is_hash_dir};
use super::replay;
use super::survey::{ChatFile, Plan};
use super::time;
use crate::error::ConvertError;
use crate::harness::{SessionContext, Surveyed};
use crate::kit::meta::{self as kit_meta, Parent};
use crate::kit::report::Diagnostics;
use crate::kit::source::copy_to_blob;
use crate::kit::text::collapse_whitespace;

/// The key of `_meta.gemini` naming the chat file the conversation was read from (the path
/// of its native file): the session's transcript, [`transcript`].
const FILE_KEY: &str = "file";

/// The native transcript of a session as its state holds it (see
/// [`crate::Harness::transcript`]): the native file at `_meta.gemini.file`, the chat its
/// update stream was replayed from.
pub fn transcript(native: &Native, meta: Option<&Meta>) -> Option<asp_format::Descriptor> {
    kit_meta::native_file(native, meta, super::NAME, FILE_KEY)
}

/// A session read, with what deduplication needs.
struct Found {
    session: Session,
    /// How Gemini ranks this copy of the session ([`rank`]).
    rank: (bool, i64),
}

/// The roots a chat itself names: its `directories` and the workspace directories listed in
/// its `<session_context>` message.
fn chat_roots(chat: &Chat) -> Vec<String> {
    let mut out: Vec<String> = chat
        .meta
        .get("directories")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    for m in &chat.messages {
        let text = log::parts_text(m.get("content"), true);
        if !text.trim_start().starts_with("<session_context>") {
            continue;
        }
        let mut in_list = false;
        for line in text.lines() {
            if line.contains("Workspace Directories:") {
                in_list = true;
            } else if in_list {
                match line.strip_prefix("  - ") {
                    Some(p) => out.push(p.trim().to_owned()),
                    None => in_list = false,
                }
            }
        }
    }
    out
}

/// Reads one surveyed session: each of its chat files (the one Gemini would resume is the
/// conversation; the others are kept with it), then its subagents' chats.
pub fn read_session(
    ctx: &SessionContext<'_>,
    entry: &Surveyed,
) -> Result<Vec<Session>, ConvertError> {
    let plan: &Plan = entry.plan();
    let dir = |f| ChatDir::of(ctx, plan, f);
    let mut out = Vec::new();
    let mut links: HashMap<String, Link> = HashMap::new();
    let groups = std::iter::once(plan.mains.as_slice())
        .chain(plan.subagents.iter().map(|(_, files)| files.as_slice()));
    for (n, files) in groups.enumerate() {
        let mut parses = files
            .iter()
            .map(|f| dir(f).parse(f))
            .collect::<Result<Vec<_>, _>>()?;
        // Every chat copied before the copy each session is read from is chosen, so a file
        // that cannot be copied is out of the choice, as out of `dedupe`'s.
        let first_choice = read_from(&parses);
        for ((f, parse), transcript) in files.iter().zip(&mut parses).zip(first_choice) {
            dir(f).copy(f, parse, transcript)?;
        }
        let read_from = read_from(&parses);
        let mut found = Vec::new();
        for ((f, parse), derived) in files.iter().zip(parses).zip(read_from) {
            let parent = f.parent_dir.as_ref().map(|p| (p, &links));
            let Some((found_one, calls)) = dir(f).read_one(f, parse, parent, derived)? else {
                continue;
            };
            // The main chats' calls that started subagents, for the subagents' chats after.
            if n == 0 {
                for c in calls {
                    links.insert(
                        c.agent,
                        Link {
                            parent: found_one.session.id.to_string(),
                            call: c.call,
                            task: c.task,
                        },
                    );
                }
            }
            found.push(found_one);
        }
        out.extend(dedupe(ctx, found));
    }
    Ok(out)
}

/// A chat file parsed, and what the parse (and the copy of the file) reported: given to the
/// read's diagnostics when the file is read, so they come in the order of the files whatever
/// was parsed first. `chat` is `None` when the file is not a chat, names no usable session or
/// cannot be copied.
struct Parse {
    chat: Option<(Chat, SessionId)>,
    said: Diagnostics,
    /// The chat file's blob, once copied as its native file ([`ChatDir::copy`]).
    copied: Option<asp_format::Descriptor>,
}

/// How Gemini ranks the copies of one session, the first of the highest being the one it
/// resumes (listable first, then the latest `lastUpdated`): what [`dedupe`] keeps.
fn rank(chat: &Chat) -> (bool, i64) {
    let resumable = chat.resumable() || chat.str_meta("kind") == Some("subagent");
    let last_ms = chat
        .str_meta("lastUpdated")
        .and_then(time::parse_rfc3339)
        .unwrap_or(i64::MIN);
    (resumable, last_ms)
}

/// For each parsed file, whether its session is read from it: the copy [`dedupe`] will keep
/// of those still in the choice (parsed, and copied when native files are carried). Only that
/// copy's stream is derived from its chat: a dropped copy whose stream is the same bytes must
/// not give its own file as the stream's base, which the state (`_meta.gemini.file`) does not
/// name (spec/aspstate.md §4: the hint is a function of the state).
fn read_from(parses: &[Parse]) -> Vec<bool> {
    let mut best: HashMap<&str, (usize, (bool, i64))> = HashMap::new();
    for (i, p) in parses.iter().enumerate() {
        if let Some((chat, id)) = &p.chat {
            let r = rank(chat);
            match best.get(id.as_str()) {
                Some((_, b)) if *b >= r => {}
                _ => {
                    best.insert(id.as_str(), (i, r));
                }
            }
        }
    }
    let chosen: std::collections::HashSet<usize> = best.values().map(|(i, _)| *i).collect();
    (0..parses.len()).map(|i| chosen.contains(&i)).collect()
}

/// The chats of one project directory.
struct ChatDir<'a, 'b> {
    ctx: &'a SessionContext<'b>,
    root: &'a Path,
    projects: &'a Projects,
    dir_name: &'a str,
    dir_root: Option<&'a str>,
}

/// The calls in a chat that started a subagent.
type SubagentCalls = Vec<replay::SubagentCall>;

/// What a subagent's chat learns from the call in its parent that started it.
struct Link {
    /// The parent's session id.
    parent: String,
    call: String,
    /// The task the call gave, the subagent's title.
    task: Option<String>,
}

/// A subagent chat's parent directory name (the parent's session id), and the links by
/// `agentId`.
type Links<'a> = (&'a String, &'a HashMap<String, Link>);

impl<'a, 'b> ChatDir<'a, 'b> {
    /// The project directory of `file`.
    fn of(ctx: &'a SessionContext<'b>, plan: &'a Plan, file: &'a ChatFile) -> Self {
        ChatDir {
            ctx,
            root: &plan.root,
            projects: &plan.projects,
            dir_name: &file.dir_name,
            dir_root: file.dir_root.as_deref(),
        }
    }

    /// Writes a chat file as a blob: a transcript when the session is read from it (a bundle
    /// compresses it against its project's dictionary, spec/aspstate.md §4.1). `None` when
    /// the file cannot be read (reported: this copy is skipped, as a chat that cannot be
    /// parsed is); a failing blob store is an error.
    fn put_chat(
        &self,
        path: &Path,
        source: &crate::kit::source::SourceFile,
        transcript: bool,
        said: &Diagnostics,
    ) -> Result<Option<asp_format::Descriptor>, ConvertError> {
        let unreadable = |e: std::io::Error| {
            said.lost(path, None, format!("cannot be read ({e}); skipped"));
            Ok(None)
        };
        let mut f = match source.open() {
            Ok(f) => f,
            Err(e) => return unreadable(e),
        };
        let w = match transcript {
            true => self.ctx.blobs.begin_transcript(path, f.len())?,
            false => self.ctx.blobs.begin_sized(f.len())?,
        };
        match copy_to_blob(&mut f, w)? {
            Ok(d) => Ok(Some(d)),
            Err(e) => unreadable(e),
        }
    }

    /// Parses one chat file (its progress item shown), reporting into the [`Parse`]'s own
    /// diagnostics; `chat` is `None` when it is not a chat or names no usable session.
    fn parse(&self, file: &ChatFile) -> Result<Parse, ConvertError> {
        let path = file.source.path.as_path();
        let said = Diagnostics::new();
        self.ctx.progress.item(&self.rel(path));
        let chat = match log::read_surveyed(&file.source, &said) {
            Ok(Ok(c)) => c,
            Ok(Err(why)) => {
                said.lost(path, None, format!("{}; skipped", why.0));
                return Ok(Parse {
                    chat: None,
                    said,
                    copied: None,
                });
            }
            // One unreadable file costs its session, not the whole pack.
            Err(ConvertError::Io { source, .. }) => {
                said.lost(path, None, format!("cannot be read ({source}); skipped"));
                return Ok(Parse {
                    chat: None,
                    said,
                    copied: None,
                });
            }
            Err(e) => return Err(e),
        };
        let Some(sid) = chat.session_id().map(str::to_owned) else {
            said.lost(path, None, "the chat has no session id; skipped");
            return Ok(Parse {
                chat: None,
                said,
                copied: None,
            });
        };
        let Ok(id) = SessionId::new(&sid) else {
            said.lost(
                path,
                None,
                format!("session id {sid:?} is not usable; skipped"),
            );
            return Ok(Parse {
                chat: None,
                said,
                copied: None,
            });
        };
        Ok(Parse {
            chat: Some((chat, id)),
            said,
            copied: None,
        })
    }

    /// Copies a parsed chat file as its native file, when the read carries native files and
    /// its path can be carried (else [`ChatDir::read_one`] says why not): as a transcript when
    /// its session is likely read from it (only a store's prediction). A file that cannot be
    /// read is reported with its parse and leaves the choice: that copy is skipped.
    fn copy(
        &self,
        file: &ChatFile,
        parse: &mut Parse,
        transcript: bool,
    ) -> Result<(), ConvertError> {
        let path = file.source.path.as_path();
        if parse.chat.is_none()
            || !self.ctx.options.native
            || RelPath::new(&self.rel(path)).is_err()
        {
            return Ok(());
        }
        match self.put_chat(path, &file.source, transcript, &parse.said)? {
            Some(d) => parse.copied = Some(d),
            None => parse.chat = None,
        }
        Ok(())
    }

    /// A path under the home, `/`-separated: a native file's path.
    fn rel(&self, path: &Path) -> String {
        path.strip_prefix(self.root)
            .unwrap_or(path)
            .to_string_lossy()
            .replace('\\', "/")
    }

    /// Reads one parsed chat file into a session; `None` when it is not a chat. `derived`: the
    /// session is read from this copy (see [`read_from`]), so its stream derives from it.
    fn read_one(
        &self,
        file: &ChatFile,
        parse: Parse,
        parent: Option<Links<'_>>,
        derived: bool,
    ) -> Result<Option<(Found, SubagentCalls)>, ConvertError> {
        let path = file.source.path.as_path();
        let diags = self.ctx.diagnostics;
        for d in parse.said.items() {
            diags.push(d);
        }
        let Some((chat, id)) = parse.chat else {
            return Ok(None);
        };
        let copied = parse.copied;
        let sid = id.as_str().to_owned();
        let rel_str = self.rel(path);
        let cwd = self.dir_root.map(str::to_owned).or_else(|| {
            let hash = if is_hash_dir(self.dir_name) {
                self.dir_name
            } else {
                chat.str_meta("projectHash").unwrap_or("")
            };
            self.projects.root_of_hash(hash, &chat_roots(&chat))
        });
        if cwd.is_none() {
            diags.note(
                path,
                None,
                "the project this chat belongs to cannot be found (no registry entry, marker or \
                 known root with its hash); carried without a working directory",
            );
        }
        // The chat file byte for byte as the session's native file, copied before any
        // stream ([`ChatDir::copy`]); the stream of the copy the session is read from derives
        // from it (a bundle compresses the stream against it, spec/aspstate.md §4;
        // `Harness::transcript`). An export has no place for native files
        // (`ReadOptions::native`): none are read.
        let native = match RelPath::new(&rel_str) {
            _ if !self.ctx.options.native => None,
            Ok(rel) => copied.map(|content| Native {
                harness: HarnessName::new("gemini").expect("a valid name"),
                files: vec![FileEntry {
                    path: rel,
                    executable: false,
                    content,
                }],
            }),
            Err(e) => {
                diags.note(
                    path,
                    None,
                    format!(
                        "its file cannot be carried as a native file ({e}); only its updates are"
                    ),
                );
                None
            }
        };
        let base = native
            .as_ref()
            .filter(|_| derived)
            .and_then(|n| n.files.first())
            .map(|f| f.content);
        let mut conv = replay::convert(
            &chat,
            &sid,
            cwd.as_deref(),
            &file.children,
            self.ctx.blobs,
            base,
        )?;
        conv.meta
            .insert(FILE_KEY.into(), Value::String(rel_str.clone()));

        let mut meta = Some(Meta::new());
        meta.as_mut()
            .expect("made above")
            .insert("gemini".into(), Value::Object(conv.meta.clone()));
        if let Some((parent_dir, links)) = parent {
            let link = match links.get(&sid) {
                Some(l) => {
                    // A subagent with no title of its own is titled with the task its
                    // parent's call gave it.
                    if let Some(task) = &l.task
                        && replay::summary_title(&chat).is_none()
                    {
                        conv.title.clone_from(task);
                    }
                    Parent::new(l.parent.clone()).with_call(Some(l.call.clone()))
                }
                None => Parent::new(parent_dir.clone()),
            };
            kit_meta::set_parent(&mut meta, &link);
        }
        if chat.str_meta("summary").is_none()
            && let Some(seen) = &chat.first_seen_prompt
        {
            let seen = collapse_whitespace(seen);
            let first = chat
                .messages
                .iter()
                .filter(|m| log::type_of(m) == "user")
                .find_map(log::user_prompt_text)
                .map(|t| collapse_whitespace(&t));
            if first.as_deref() != Some(seen.as_str()) {
                diags.note(
                    path,
                    None,
                    format!(
                        "`gemini --list-sessions` titles this session {seen:?}, a prompt it saw \
                         before a rewind or checkpoint removed it; carried with the title {:?}",
                        conv.title
                    ),
                );
            }
        }
        let updated_at = chat.str_meta("lastUpdated").map(str::to_owned);
        let rank = rank(&chat);
        let session = Session {
            id,
            title: conv.title,
            harness: Some(HarnessName::new("gemini").expect("a valid name")),
            cwd,
            updated_at,
            updates: conv.updates.expect("convert always finishes the stream"),
            native,
            meta,
        };
        Ok(Some((Found { session, rank }, conv.subagent_calls)))
    }
}

/// One session per id: the version Gemini would resume wins, the others' files join its
/// `native` so a restore gives them all back.
fn dedupe(ctx: &SessionContext<'_>, found: Vec<Found>) -> Vec<Session> {
    let mut order: Vec<String> = Vec::new();
    let mut groups: HashMap<String, Vec<Found>> = HashMap::new();
    for f in found {
        let id = f.session.id.to_string();
        if !groups.contains_key(&id) {
            order.push(id.clone());
        }
        groups.entry(id).or_default().push(f);
    }
    order
        .into_iter()
        .map(|id| {
            let mut group = groups.remove(&id).expect("grouped above");
            // The first of the highest rank: the copy `read_from` chose.
            group.sort_by_key(|f| std::cmp::Reverse(f.rank));
            let mut winner = group.remove(0);
            for other in group {
                let files = other.session.native.map(|n| n.files).unwrap_or_default();
                for f in &files {
                    ctx.diagnostics.note(
                        Path::new(f.path.as_str()),
                        None,
                        format!(
                            "another file of session {id}; the conversation is taken from {} and \
                             this file is kept with it",
                            winner
                                .session
                                .native
                                .as_ref()
                                .and_then(|n| n.files.first())
                                .map_or("the other file", |f| f.path.as_str())
                        ),
                    );
                }
                if let Some(n) = &mut winner.session.native {
                    n.files.extend(files);
                }
            }
            winner.session
        })
        .collect()
}
