//! `asp-unpack`: a bundle into a harness's store, or into a state directory.

use std::path::PathBuf;

use asp_convert::kit::report::Diagnostics;
use asp_convert::store::WriteRequest;
use asp_convert::{Home, Store};
use asp_format::KindSet;
use asp_format::bundle::{Bundle, Limits, Part};
use clap::Parser;

use crate::args::{Common, Strict, parse_harness, parse_kinds};
use crate::bail_usage;
use crate::exit::{Context, EXIT_CODES_HELP, Exit, Failure, Result};
use crate::human;
use crate::imported::Imported;
use crate::mapped::{MapPathArg, Mapped};
use crate::progress::Bar;
use crate::stdio::Input;

const AFTER_HELP: &str = "\
Examples:
  asp-unpack claude.aspstate --to claude-code
      Restore a Claude Code backup into your home. Existing sessions are never overwritten:
      one with the same content is reported as already there, one with different content
      is kept beside it as <id>~<harness> (as a UUID derived from that name where the
      harness only lists UUIDs), titled <title> ~<harness> in the harness's own title store
      (so claude --resume, codex resume and Gemini's /resume tell the two apart), and --json
      maps the old id to the new one.
  asp-unpack claude.aspstate --to codex --dry-run --json
      Say what moving Claude Code state into Codex would take and leave behind; write nothing.
  asp-unpack backup.aspstate --to gemini --map-path /home/me=/Users/me
      Restore on a machine where your home (and so every project path) is elsewhere.
  asp-unpack backup.aspstate --to-dir ./state
      Write the state as plain files to read or edit; pack it again with asp-pack --from-dir.

After an import into a harness, the summary names for each session written the command that
resumes it there: `cd <cwd> && claude --resume <id>`, `codex resume <id>`,
`cd <cwd> && gemini --resume <id>`, `cd <cwd> && opencode --session <id>`,
`cd <cwd> && pi --session <id>`, `cd <cwd> && qwen --resume <id>` or
`cd <cwd> && copilot --resume <id>`.

--json prints the _asp/state/import answer: {\"taken\": [kinds], \"notTaken\": [{\"kind\",
\"reason\"}], \"sessions\": {\"old id\": \"new id\"}}, and under
_meta.asp.resume each new id's resume command, under _meta.asp.alreadyThere the sessions
that were there already (nothing written), under _meta.asp.writtenInto what was added to a
file the home already had (a setting merged into your settings file, where it set none; an
MCP server added beside yours, by name), under _meta.asp.findings every finding printed (notes, what was left out of a session, what
was lost; spec/aspstate.md).";

/// Unpack a .aspstate bundle into an agent's store or a plain directory
#[derive(Debug, Clone, Parser)]
#[command(name = "asp-unpack", version, after_help = format!("{AFTER_HELP}\n\n{EXIT_CODES_HELP}"))]
// One of the two targets: a usage error names both when neither is given.
#[command(group(clap::ArgGroup::new("target").required(true).args(["to", "to_dir"])))]
pub struct UnpackArgs {
    /// The bundle to read (`-` for standard input)
    #[arg(value_name = "BUNDLE")]
    pub bundle: PathBuf,

    /// Write into this harness's store (claude-code, codex, gemini, ...)
    #[arg(long, value_name = "HARNESS", value_parser = parse_harness)]
    pub to: Option<String>,

    /// Write the state as plain files into this directory (missing or empty unless --force)
    #[arg(long, value_name = "DIR")]
    pub to_dir: Option<PathBuf>,

    /// Home directory holding the harness's store, which must exist (its harness folder need
    /// not) [default: your home; CODEX_HOME and the like are honoured when this is not given]
    #[arg(long, value_name = "DIR", requires = "to")]
    pub home: Option<PathBuf>,

    /// Unpack only these kinds, comma-separated [default: all the bundle gives]
    #[arg(long, value_name = "KINDS", value_parser = parse_kinds)]
    pub kinds: Option<KindSet>,

    /// Unpack only this session and its subagent sessions (repeatable; only the sessions
    /// kind unless --kinds says more); no other session's data is read, and only what is read
    /// is checked (`asp verify` checks the whole bundle)
    #[arg(long = "session", value_name = "ID")]
    pub sessions: Vec<String>,

    /// With --to: say what would be taken and what not; write nothing (--to-dir writes only
    /// into a directory that is missing or empty, or with --force)
    #[arg(long, requires = "to")]
    pub dry_run: bool,

    /// With --to-dir: replace a state directory already there (one an earlier --to-dir wrote,
    /// holding nothing else) as a whole; it is exchanged with the new one once that is complete
    #[arg(long, requires = "to_dir")]
    pub force: bool,

    #[command(flatten)]
    pub map_path: MapPathArg,

    #[command(flatten)]
    pub strict: Strict,

    #[command(flatten)]
    pub common: Common,
}

pub fn run(args: UnpackArgs) -> Result<Exit> {
    // (clap's `requires` lets a flag through beside an argument it conflicts with.)
    if args.force && args.to_dir.is_none() {
        bail_usage!(
            "--force is for --to-dir (a directory that is not empty); a harness's store is merged into, never overwritten"
        );
    }
    if args.to_dir.is_some() && args.home.is_some() {
        bail_usage!(
            "--home is for --to HARNESS (the home whose store is written); --to-dir names the directory itself"
        );
    }
    let path_map = args.map_path.path_map()?;
    // Before the bundle is read: a mistyped --home is said at once.
    let home = match &args.to {
        Some(to) => {
            let home = Home::resolve_to_write(args.home.clone())?;
            Store::harness(to, home.clone())
                .expect("validated by the argument parser")
                .check_home_is_not_the_store()?;
            Some(home)
        }
        None => None,
    };
    let input = Input::open(&args.bundle)?;
    let part = part(args.kinds, &args.sessions)?;
    let (bundle, state) = open_part(&input, &part)?;
    let bar = Bar::new(args.common.quiet);
    for w in bundle.warnings() {
        bar.println(format!("warning: {}: {w}", input.display()));
    }

    // Everything is checked before anything is written. A body that does not check out
    // leaves out what needs it, and the rest is unpacked (crate::salvage); a bundle damaged
    // otherwise writes nothing.
    let mut state = state;
    let damaged =
        crate::salvage::check_bundle(&mut state, &bundle, &input, args.to.as_deref(), &bar)?;

    // Rewritten bodies go into a staging store read before the bundle, on the destination's
    // file system (the system temporary directory may be memory-backed).
    let staging_parent = match (&args.to_dir, &home) {
        (Some(d), _) => d
            .parent()
            .filter(|p| !p.as_os_str().is_empty() && p.is_dir())
            .map(PathBuf::from),
        (None, Some(h)) => Some(h.dir.clone()).filter(|d| d.is_dir()),
        (None, None) => None,
    }
    .unwrap_or_else(std::env::temp_dir);
    let original_tools = state.tools.clone().unwrap_or_default();
    let mut mapped = Mapped::new(
        state,
        &path_map,
        &bundle,
        &staging_parent,
        crate::mapped::UnusedRule::Refuse,
    )?;

    let diagnostics = Diagnostics::new();
    let store = match (&args.to, &args.to_dir, home) {
        (Some(name), _, Some(home)) => {
            Store::harness(name, home).expect("validated by the argument parser")
        }
        (None, Some(d), _) => Store::Dir(d.clone()),
        _ => unreachable!("clap requires --to or --to-dir"),
    };
    // (A state directory is written whole, not merged into: nothing there to keep.)
    if matches!(store, Store::Harness { .. }) {
        crate::mapped::keep_servers_as_there(
            &mut mapped.state,
            &original_tools,
            &store,
            &diagnostics,
        );
    }
    let blobs = mapped.blobs(&bundle);
    let state = &mapped.state;
    let written = store
        .write(
            state,
            &WriteRequest {
                kinds: args.kinds,
                dry_run: args.dry_run,
                path_map: &path_map,
                force: args.force,
                restoring: false,
                blobs: &blobs,
                diagnostics: &diagnostics,
                progress: &bar,
            },
        )
        .with_context(|| match &store {
            Store::Harness { harness, home } => format!(
                "cannot write into the {} store in {}",
                harness.name(),
                home.dir.display()
            ),
            // (The error names the directory.)
            Store::Dir(_) => "cannot unpack into the directory".to_owned(),
        })?;
    let mut answer = written.answer;
    damaged.into_answer(&mut answer, "the bundle (asp verify names it)");
    let imported = Imported::new(answer, written.resume, &diagnostics);
    let leftover = written.files.as_ref().and_then(|f| f.leftover.clone());
    if let Some(leftover) = &leftover {
        bar.println(format!("note: {leftover}"));
    }
    let target = match (&store, written.files) {
        (Store::Dir(d), Some(files)) => format!(
            "{} ({} files, {})",
            d.display(),
            files.files,
            human::bytes(files.bytes)
        ),
        _ => store.describe_location(),
    };
    bar.clear();
    imported.print_findings(&bar, args.common.quiet);
    for line in damaged.lines() {
        bar.println(format!("damaged: {}: {line}", input.display()));
    }
    if !damaged.is_empty() {
        bar.println(format!(
            "left out, their data in the bundle being damaged: {}",
            damaged.summary()
        ));
    }
    if args.common.json {
        let mut json = imported.json(args.dry_run);
        if !damaged.is_empty() {
            json["_meta"]["asp"]["damaged"] = serde_json::json!(damaged.blobs);
        }
        if let Some(leftover) = leftover {
            // The old state directory's files that --force could not remove, and where.
            json["_meta"]["asp"]["leftover"] = serde_json::json!(leftover);
        }
        crate::outln!("{json}");
    } else {
        let verb = if args.dry_run {
            "would unpack"
        } else {
            "unpacked"
        };
        let taken = &imported.answer.taken;
        let taken = if taken.is_empty() {
            "nothing".to_owned()
        } else {
            taken.to_string().replace(',', ", ")
        };
        crate::outln!(
            "{verb} {taken} from {} into {target}{}",
            input.display(),
            imported.summary_tail(args.common.quiet)
        );
        for line in imported.detail_lines(args.dry_run) {
            crate::outln!("{line}");
        }
    }
    if !damaged.is_empty() {
        return Ok(Exit::Integrity);
    }
    Ok(imported.exit(args.strict.strict))
}

/// The part of a bundle's state a command works on: the kinds asked for (all, or only
/// sessions when sessions are named), and only the named sessions with their subagents.
pub fn part<'a>(kinds: Option<KindSet>, sessions: &'a [String]) -> Result<Part<'a>> {
    let kinds = kinds.unwrap_or(if sessions.is_empty() {
        KindSet::ALL
    } else {
        KindSet::EMPTY.with(asp_format::StateKind::Sessions)
    });
    if !sessions.is_empty() && !kinds.contains(asp_format::StateKind::Sessions) {
        bail_usage!("--session needs the sessions kind in --kinds");
    }
    Ok(Part {
        kinds,
        sessions: (!sessions.is_empty()).then_some(sessions),
    })
}

/// The usage error for sessions that `what` does not have, with the command that `lists`
/// the sessions it has (`state`'s, for the ids begun by one that was given).
fn no_session(
    what: &str,
    missing: &[impl AsRef<str>],
    lists: &str,
    state: &asp_format::State,
) -> Failure {
    let missing: Vec<&str> = missing.iter().map(AsRef::as_ref).collect();
    let known = state.sessions.iter().flatten().map(|s| s.id.as_str());
    Failure::usage(format!(
        "{what} has no session {} ({lists} lists its sessions){}",
        missing.join(", "),
        asp_format::state::whole_ids_hint(&missing, known)
    ))
}

/// [`part`] of a state at hand (a repository's snapshot, `what`, whose sessions the command
/// `lists` lists), and the kinds it holds.
pub fn select(
    state: &asp_format::State,
    kinds: Option<KindSet>,
    sessions: &[String],
    what: &str,
    lists: &str,
) -> Result<(asp_format::State, KindSet)> {
    let part = part(kinds, sessions)?;
    let (selected, missing) = state.select(part.kinds, part.sessions);
    if !missing.is_empty() {
        return Err(no_session(what, &missing, lists, state));
    }
    let state = selected;
    Ok((state, part.kinds))
}

/// Opens `bundle` to read `part` of its state (see [`Bundle::open_part`]: the rest is not
/// parsed), and that part of the state; a named session the bundle does not have is a usage
/// error.
pub fn open_part(input: &Input, part: &Part<'_>) -> Result<(Bundle, asp_format::State)> {
    let bundle = Bundle::open_part(input.path(), &Limits::default(), part)
        // The error names the bundle already ("cannot read X: ...", "X is not a usable
        // bundle: ...").
        .map_err(|e| Failure::from(input.own(e)))?;
    let (state, missing) = bundle.manifest().state.select(part.kinds, part.sessions);
    if !missing.is_empty() {
        let lists = match input {
            Input::File(p) => format!("`asp inspect {}`", p.display()),
            Input::Spooled(..) => "`asp inspect` of the same bundle".to_owned(),
        };
        // Only the parts holding the sessions asked for were read: for the hint of whole ids,
        // on this failing path only, the whole state is.
        let whole = Bundle::open(input.path())
            .map(|b| b.manifest().state.clone())
            .unwrap_or_default();
        return Err(no_session(&input.display(), &missing, &lists, &whole));
    }
    Ok((bundle, state))
}
