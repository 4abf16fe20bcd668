//! `asp inspect`: what a bundle holds, without unpacking it.

use std::path::PathBuf;

use crate::exit::{Context, Failure};
use asp_format::bundle::Bundle;
use asp_format::state::{McpServer, NoteBody, SettingValue};
use clap::Parser;
use serde_json::json;

use crate::args::Common;
use crate::exit::Exit;
use crate::human;
use crate::stdio::Input;

/// Show what a bundle holds: sessions, instructions, skills, tools, notes, settings
#[derive(Debug, Clone, Parser)]
#[command(after_help = "\
Examples:
  asp inspect backup.aspstate
  asp inspect backup.aspstate --json | jq .kinds

--json prints at least {\"kinds\": {kind: count}}, as _asp/state/describe answers, plus the
bundle's digest and an entry per session, skill, tool and note.")]
pub struct InspectArgs {
    /// The bundle (`-` for standard input)
    #[arg(value_name = "BUNDLE")]
    pub bundle: PathBuf,

    #[command(flatten)]
    pub common: Common,
}

pub fn run(args: InspectArgs) -> crate::exit::Result<Exit> {
    let input = Input::open(&args.bundle)?;
    let bundle = Bundle::open(input.path())
        .map_err(|e| input.own(e))
        .with_context(|| format!("cannot open {}", input.display()))?;
    let size = std::fs::metadata(input.path())
        .map_err(Failure::source)?
        .len();
    let m = bundle.manifest();
    let state = &m.state;
    if args.common.json {
        let sessions: Vec<_> = state
            .sessions
            .iter()
            .flatten()
            .map(|s| {
                json!({"id": s.id, "title": s.title, "harness": s.harness, "cwd": s.cwd,
                       "updatedAt": s.updated_at, "size": s.updates.size,
                       "native": s.native.as_ref().map(|n| n.files.len())})
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
            "bundle": {
                "digest": bundle.digest(),
                "size": size,
                "layoutVersion": bundle.layout().layout_version,
                "generator": bundle.layout().generator,
                "created": bundle.created(),
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

    crate::outln!("bundle   {}", bundle.digest());
    crate::outln!(
        "file     {} ({}, layout {}{})",
        input.display(),
        human::bytes(size),
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
    if state.kinds().is_empty() {
        crate::outln!("\n(no state)");
    }
    if let Some(sessions) = &state.sessions {
        crate::outln!("\nsessions ({})", sessions.len());
        for s in sessions {
            let mut extra = Vec::new();
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
            crate::outln!("  {}  {:?}", s.id, s.title);
            crate::outln!("      {}", extra.join(" · "));
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
