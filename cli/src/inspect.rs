//! `asp inspect`: what a bundle holds, without unpacking it; or what a state directory holds.

use std::path::PathBuf;

use crate::exit::{Context, Failure};
use asp_convert::Store;
use asp_convert::kit::report::Diagnostics;
use asp_convert::store::ReadRequest;
use asp_format::blob::Discard;
use asp_format::bundle::Bundle;
use asp_format::state::{McpServer, NoteBody, Session, SettingValue, State, parent_of};
use clap::Parser;
use serde_json::json;

use crate::args::Common;
use crate::exit::Exit;
use crate::human;
use crate::progress::Bar;
use crate::stdio::Input;

/// Show what a bundle (or a state directory) holds: sessions, instructions, skills, tools,
/// memory, settings
#[derive(Debug, Clone, Parser)]
#[command(after_help = "\
Examples:
  asp inspect backup.aspstate
  asp inspect backup.aspstate --json | jq .kinds
  asp inspect --from-dir ./state        a state directory (asp-unpack --to-dir)

--json prints at least {\"kinds\": {kind: count}}, as _asp/state/describe answers, plus the
bundle's digest and an entry per session (with the session it is a subagent of), skill, tool
and note.

It reads what the bundle says it holds, not the bytes of every layer: a damaged transcript
still lists. `asp verify BUNDLE` checks every byte (exit 4 on damage).")]
pub struct InspectArgs {
    /// The bundle (`-` for standard input)
    // Not `required_unless_present`: clap's error for it showed `asp inspect <BUNDLE>`,
    // against the `[BUNDLE]` of `--help` (a new user's trial); `run` says what to give.
    #[arg(value_name = "BUNDLE", conflicts_with = "from_dir")]
    pub bundle: Option<PathBuf>,

    /// Inspect a state directory (the plain form `asp-unpack --to-dir` writes) instead of a
    /// bundle
    #[arg(long, value_name = "DIR")]
    pub from_dir: Option<PathBuf>,

    #[command(flatten)]
    pub common: Common,
}

/// What is inspected: a bundle, or a state directory read whole.
enum Source {
    Bundle {
        bundle: Box<Bundle>,
        /// The bundle as the user named it (`<stdin>` for `-`).
        shown: String,
        size: u64,
    },
    Dir {
        path: PathBuf,
        state: State,
    },
}

impl Source {
    fn state(&self) -> &State {
        match self {
            Source::Bundle { bundle, .. } => &bundle.manifest().state,
            Source::Dir { state, .. } => state,
        }
    }
}

/// A usage error for a backup repository given where a bundle or state directory is asked
/// for, saying what reads one.
fn not_a_repository(dir: &std::path::Path) -> crate::exit::Result<()> {
    if asp_repo::Repository::is_at(dir) {
        crate::bail_usage!(
            "{0} is a backup repository, not a bundle or a state directory: `asp snapshots \
             --repo {0}` and `asp sessions --repo {0}` list what it holds, and `asp pack \
             --from-repo --repo {0} -o FILE` makes a bundle of its newest snapshot to inspect",
            dir.display()
        );
    }
    Ok(())
}

pub fn run(args: InspectArgs) -> crate::exit::Result<Exit> {
    if let Some(dir) = args
        .from_dir
        .as_deref()
        .or(args.bundle.as_deref().map(std::path::Path::new))
    {
        not_a_repository(dir)?;
    }
    let source = match (&args.bundle, &args.from_dir) {
        (_, Some(dir)) => Source::Dir {
            path: dir.clone(),
            state: read_dir(dir, &args.common)?,
        },
        (Some(path), None) => {
            if path.is_dir() {
                crate::bail_usage!(
                    "{} is a directory: inspect a state directory with --from-dir {0}",
                    path.display()
                );
            }
            let input = Input::open(path)?;
            let bundle = Bundle::open(input.path())
                // The error names the bundle already ("cannot read X: ...", "X is not a usable
                // bundle: ...").
                .map_err(|e| Failure::from(input.own(e)))?;
            let size = std::fs::metadata(input.path())
                .map_err(Failure::source)?
                .len();
            Source::Bundle {
                bundle: Box::new(bundle),
                shown: input.display(),
                size,
            }
        }
        (None, None) => crate::bail_usage!(
            "name the bundle to inspect (`asp inspect BUNDLE`, `-` for standard input), or a \
             state directory with --from-dir DIR"
        ),
    };
    let state = source.state();
    if args.common.json {
        let sessions: Vec<_> = state
            .sessions
            .iter()
            .flatten()
            .map(|s| {
                json!({"id": s.id, "title": s.title, "harness": s.harness, "cwd": s.cwd,
                       "updatedAt": s.updated_at, "size": s.updates.size,
                       "native": s.native.as_ref().map(|n| n.files.len()),
                       "parent": parent_of(s)})
            })
            .collect();
        let skills: Vec<_> = state
            .skills
            .iter()
            .flatten()
            .map(|s| {
                json!({"name": s.name, "files": s.files.len(),
                            "size": s.files.iter().map(|f| f.content.size).sum::<u64>()})
            })
            .collect();
        let tools: Vec<_> = state
            .tools
            .iter()
            .flatten()
            .map(|t| json!({"name": t.name(), "transport": t.transport()}))
            .collect();
        let memory: Vec<_> = state
            .memory
            .iter()
            .flatten()
            .map(|n| match n.body {
                NoteBody::Text(d) => json!({"path": n.path, "origin": n.origin, "size": d.size}),
                NoteBody::Deleted => json!({"path": n.path, "origin": n.origin, "deleted": true}),
            })
            .collect();
        let out = json!({
            "kinds": state.counts(),
            "bundle": match &source {
                Source::Bundle { bundle, size, .. } => json!({
                    "digest": bundle.digest(),
                    "size": size,
                    "layoutVersion": bundle.layout().layout_version,
                    "generator": bundle.layout().generator,
                    "created": bundle.created(),
                }),
                Source::Dir { .. } => serde_json::Value::Null,
            },
            "directory": match &source {
                Source::Dir { path, .. } => json!(path.display().to_string()),
                Source::Bundle { .. } => serde_json::Value::Null,
            },
            "sessions": state.sessions.as_ref().map(|_| sessions),
            "instructions": state.instructions.as_ref().map(|i| json!({"size": i.text.size})),
            "skills": state.skills.as_ref().map(|_| skills),
            "tools": state.tools.as_ref().map(|_| tools),
            "memory": state.memory.as_ref().map(|_| memory),
            "settings": state.settings,
        });
        crate::outln!(
            "{}",
            serde_json::to_string_pretty(&strip_nulls(out)).expect("JSON values serialise")
        );
        return Ok(Exit::Ok);
    }

    match &source {
        Source::Bundle {
            bundle,
            shown,
            size,
        } => {
            crate::outln!("bundle   {}", bundle.digest());
            crate::outln!(
                "file     {shown} ({}, layout {}{})",
                human::bytes(*size),
                bundle.layout().layout_version,
                bundle
                    .layout()
                    .generator
                    .as_ref()
                    .map(|g| format!(", made by {g}"))
                    .unwrap_or_default()
            );
            if let Some(c) = bundle.created() {
                crate::outln!("created  {c}");
            }
        }
        Source::Dir { path, .. } => crate::outln!("directory  {}", path.display()),
    }
    if state.kinds().is_empty() {
        crate::outln!("\n(no state)");
    }
    if let Some(sessions) = &state.sessions {
        crate::outln!("\nsessions ({})", sessions.len());
        for (s, depth) in nested(sessions) {
            let mut extra = Vec::new();
            if let Some(p) = parent_of(s) {
                extra.push(format!("subagent of {p}"));
            }
            if let Some(h) = &s.harness {
                extra.push(h.to_string());
            }
            if let Some(c) = &s.cwd {
                extra.push(c.clone());
            }
            if let Some(u) = &s.updated_at {
                extra.push(u.clone());
            }
            extra.push(human::bytes(s.updates.size));
            if let Some(n) = &s.native {
                extra.push(format!("+{} native file(s)", n.files.len()));
            }
            // A subagent sits under its parent, indented one step per level, marked `↳`.
            // (At most eight steps: a deeper chain would only push the text off the screen.)
            let indent = "    ".repeat(depth.min(8));
            let mark = if depth > 0 { "↳ " } else { "" };
            crate::outln!(
                "  {indent}{mark}{}  {}",
                s.id,
                human::quoted_title(&s.title)
            );
            crate::outln!("      {indent}{}", extra.join(" · "));
        }
    }
    if let Some(i) = &state.instructions {
        crate::outln!("\ninstructions  AGENTS.md, {}", human::bytes(i.text.size));
    }
    if let Some(skills) = &state.skills {
        crate::outln!("\nskills ({})", skills.len());
        for s in skills {
            let bytes: u64 = s.files.iter().map(|f| f.content.size).sum();
            crate::outln!(
                "  {}  {}, {}",
                s.name,
                human::count(s.files.len() as u64, "file", "files"),
                human::bytes(bytes)
            );
        }
    }
    if let Some(tools) = &state.tools {
        crate::outln!("\ntools ({})", tools.len());
        for t in tools {
            let target = match t {
                McpServer::Stdio(s) => std::iter::once(s.command.as_str())
                    .chain(s.args.iter().map(String::as_str))
                    .collect::<Vec<_>>()
                    .join(" "),
                McpServer::Http(r) | McpServer::Sse(r) => r.url.clone(),
            };
            crate::outln!("  {}  {}  {}", t.name(), t.transport(), target);
        }
    }
    if let Some(notes) = &state.memory {
        crate::outln!("\nmemory ({})", notes.len());
        for n in notes {
            let origin = n
                .origin
                .harness
                .as_ref()
                .map(|h| h.to_string())
                .unwrap_or_else(|| "-".to_owned());
            match n.body {
                NoteBody::Text(d) => {
                    crate::outln!("  {}  {origin}  {}", n.path, human::bytes(d.size))
                }
                NoteBody::Deleted => crate::outln!("  {}  {origin}  (deleted)", n.path),
            }
        }
    }
    if let Some(settings) = &state.settings {
        crate::outln!("\nsettings ({})", settings.len());
        for (k, v) in settings {
            match v {
                SettingValue::Select(s) => crate::outln!("  {k} = {s}"),
                SettingValue::Boolean(b) => crate::outln!("  {k} = {b}"),
            }
        }
    }
    Ok(Exit::Ok)
}

/// Reads a state directory as `asp-pack --from-dir` does, hashing bodies without keeping them.
fn read_dir(dir: &std::path::Path, common: &Common) -> crate::exit::Result<State> {
    let store = Store::Dir(dir.to_path_buf());
    let diagnostics = Diagnostics::new();
    let bar = Bar::new(common.quiet);
    let state = store
        .read(&ReadRequest::new(&Discard, &diagnostics, &bar))
        .with_context(|| format!("cannot read the state directory {}", dir.display()))?;
    for line in human::finding_lines(&diagnostics.items()) {
        bar.println(line);
    }
    bar.clear();
    Ok(state)
}

/// The sessions in listing order with their depth: each after its parent (when the state holds
/// it), in the state's order otherwise.
fn nested(sessions: &[Session]) -> Vec<(&Session, usize)> {
    use std::collections::{HashMap, HashSet};
    let ids: HashSet<&str> = sessions.iter().map(|s| s.id.as_str()).collect();
    // Each session's children, in the state's order: built once, so a state of many
    // sessions is listed in linear time.
    let mut children: HashMap<&str, Vec<&Session>> = HashMap::new();
    for s in sessions {
        if let Some(p) = parent_of(s).filter(|p| ids.contains(p) && *p != s.id.as_str()) {
            children.entry(p).or_default().push(s);
        }
    }
    // A parent the state does not hold, or a cycle, leaves the session at the top.
    let top = |s: &Session| parent_of(s).is_none_or(|p| !ids.contains(p) || p == s.id.as_str());
    let mut out = Vec::with_capacity(sessions.len());
    let mut seen = HashSet::new();
    // Depth first without recursion (a bundle's parent chains are as long as it says); then
    // the sessions only reachable through a cycle of parents.
    let roots = sessions.iter().filter(|s| top(s)).chain(sessions.iter());
    for root in roots {
        let mut stack = vec![(root, 0usize)];
        while let Some((s, depth)) = stack.pop() {
            if !seen.insert(s.id.as_str()) {
                continue;
            }
            out.push((s, depth));
            if let Some(kids) = children.get(s.id.as_str()) {
                stack.extend(kids.iter().rev().map(|c| (*c, depth + 1)));
            }
        }
    }
    out
}

/// Drops `null` members, so kinds not given do not appear at all.
fn strip_nulls(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(o) => serde_json::Value::Object(
            o.into_iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k, strip_nulls(v)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str, parent: Option<&str>) -> Session {
        let mut v = json!({
            "id": id,
            "title": id,
            "updates": {"digest": format!("sha256:{}", "0".repeat(64)), "size": 0},
        });
        if let Some(p) = parent {
            v["_meta"] = json!({"asp": {"parent": {"sessionId": p}}});
        }
        serde_json::from_value(v).unwrap()
    }

    /// Each subagent right after its parent (and its own subagents after it), in the state's
    /// order; a session whose parent the state lacks, or whose parents go round in a cycle,
    /// at the top; every session once.
    #[test]
    fn subagents_are_listed_after_their_parents() {
        let sessions = [
            session("c1", Some("b")),
            session("a", None),
            session("b", None),
            session("g1", Some("c1")),
            session("c2", Some("b")),
            session("orphan", Some("gone")),
            session("x", Some("y")),
            session("y", Some("x")),
            session("self", Some("self")),
        ];
        let listed: Vec<(&str, usize)> = nested(&sessions)
            .into_iter()
            .map(|(s, d)| (s.id.as_str(), d))
            .collect();
        assert_eq!(
            listed,
            [
                ("a", 0),
                ("b", 0),
                ("c1", 1),
                ("g1", 2),
                ("c2", 1),
                ("orphan", 0),
                ("self", 0),
                ("x", 0),
                ("y", 1),
            ]
        );
    }

    /// A parent chain as long as a bundle says is listed without recursion.
    #[test]
    fn a_long_chain_of_parents_is_listed_without_recursion() {
        let sessions: Vec<Session> = (0..100_000)
            .map(|i| {
                let parent = (i > 0).then(|| format!("s{}", i - 1));
                session(&format!("s{i}"), parent.as_deref())
            })
            .collect();
        let listed = nested(&sessions);
        assert_eq!(listed.len(), sessions.len());
        assert_eq!(
            listed.last().map(|(s, d)| (s.id.as_str(), *d)),
            Some(("s99999", 99_999))
        );
    }
}
