//! `asp-pack`: a harness's store, or a state directory, into a `.aspstate` bundle.

use std::path::{Path, PathBuf};

use std::num::NonZeroUsize;

use asp_convert::harness::ReadOptions;
use asp_convert::kit::report::Diagnostics;
use asp_convert::store::{ReadRequest, Sessions};
use asp_convert::{Home, Store};
use asp_format::KindSet;
use asp_format::bundle::layers::{LayerOptions, LayerStore};
use asp_format::bundle::oci::Encoding;
use asp_format::bundle::{self, Options2, ZipMethod};
use asp_format::error::ErrorClass;
use asp_format::name::SessionId;
use asp_format::state::State;
use clap::{Parser, ValueEnum};

use crate::args::{
    Common, RepoArg, Strict, parse_harness, parse_kinds, parse_session, parse_threads,
};
use crate::bail_usage;
use crate::exit::{Context, EXIT_CODES_HELP, Exit, Failure, Result};
use crate::human;
use crate::progress::Bar;

const AFTER_HELP: &str = "\
Examples:
  asp-pack --from claude-code -o claude.aspstate
      Back up your Claude Code state (sessions, CLAUDE.md, skills, MCP servers, memory, settings).
  asp-pack --from codex --home /mnt/old-laptop/home/me --kinds sessions -o codex-sessions.aspstate
      Only the Codex sessions of another home directory.
  asp-pack --from claude-code --session 71958462-4bb8-46b6-a36a-1becf56c22dc -o one.aspstate
      One session (with its subagents) and nothing else (--kinds adds the other kinds); no
      other session is read. A subagent session's id packs that subagent alone.
  asp-pack --from-dir ./state -o state.aspstate
      Pack a state directory written by `asp-unpack --to-dir` (and maybe edited by hand: a
      session with native files goes back into its own harness from those, so edit them, or
      delete its .native/; spec/aspstate.md §11).
  asp-pack --from gemini -o - | ssh other-host 'asp-unpack - --to gemini'
      Carry Gemini CLI state to another machine.
  asp pack --from-repo --snapshot 1a2b3c4d -o monday.aspstate
      One snapshot of the backup repository as a bundle.

A home that does not exist, or holds no store of the harness (~/.claude, ~/.codex, ~/.gemini,
or where CLAUDE_CONFIG_DIR, CODEX_HOME, GEMINI_CLI_HOME put it), is an error (exit 1) naming
the paths looked for: a typo in --home never gives an empty backup. A store that exists and
holds nothing packs as \"0 sessions\".

Secrets: MCP server descriptors (env values, HTTP headers) often contain API tokens, and they
are packed as they are; a note names each value whose name says it is a credential
(GITHUB_TOKEN, Authorization, --api-key). Use --redact-secrets to blank them (and every other
literal env and header value); the bundle then lists which values were blanked. Treat a
bundle packed without it like a password file.

Bundles are deterministic: the same state packs to the same bytes. The creation time is left
out unless --created or SOURCE_DATE_EPOCH gives one.

--json prints {\"bundle\", \"digest\", \"size\", \"source\", \"kinds\": {kind: count},
\"notTaken\", \"lost\", \"findings\"}, the last three lists of findings as asp backup and
asp-unpack give them: {\"severity\", \"file\", \"line\", \"message\"} (on stderr with -o -).";

/// Pack AI agent state into a portable .aspstate bundle
#[derive(Debug, Clone, Parser)]
#[command(name = "asp-pack", version, after_help = format!("{AFTER_HELP}\n\n{EXIT_CODES_HELP}"))]
// One source: a usage error names the three when none is given.
#[command(group(
    clap::ArgGroup::new("source")
        .required(true)
        .args(["from", "from_dir", "from_repo"])
))]
pub struct PackArgs {
    /// Read the agent state of this harness (claude-code, codex, gemini, ...)
    #[arg(long, value_name = "HARNESS", value_parser = parse_harness)]
    pub from: Option<String>,

    /// Read a state directory (the plain form `asp-unpack --to-dir` writes)
    #[arg(long, value_name = "DIR")]
    pub from_dir: Option<PathBuf>,

    /// Pack a snapshot of the repository (`asp backup`): the bundle is byte for byte the one
    /// asp-pack made of the same state
    #[arg(long)]
    pub from_repo: bool,

    /// With --from-repo: the snapshot (id prefix, or `latest`: the newest of any harness and
    /// home; a newer one of its series that cannot be read is passed over, said, and the pack
    /// exits 4) [default: latest]
    // (No clap default: with one, clap lets `--snapshot` through without --from-repo.)
    #[arg(long, value_name = "ID")]
    pub snapshot: Option<String>,

    #[command(flatten)]
    pub repo: RepoArg,

    /// Home directory holding the harness's store [default: your home; CODEX_HOME and the
    /// like are honoured when this is not given]
    #[arg(
        long,
        value_name = "DIR",
        requires = "from",
        conflicts_with = "from_repo"
    )]
    pub home: Option<PathBuf>,

    /// Pack only these kinds, comma-separated: sessions, instructions, skills, tools, memory,
    /// settings [default: all; only sessions with --session]
    #[arg(long, value_name = "KINDS", value_parser = parse_kinds)]
    pub kinds: Option<KindSet>,

    /// Pack only this session, with its subagent sessions (repeatable); a subagent session's
    /// id packs that subagent alone, with its own, as `asp export` and `asp-unpack` take it
    /// (its parent is read for it where the harness keeps the two together) [default: every
    /// session]
    #[arg(long = "session", value_name = "ID", value_parser = parse_session, requires = "from")]
    pub sessions: Vec<SessionId>,

    /// Threads reading sessions, compressing and hashing [default: one per core]; the
    /// bundle's bytes do not depend on it
    #[arg(long, value_name = "N", value_parser = parse_threads)]
    pub threads: Option<NonZeroUsize>,

    /// Where to write the bundle (`-` for standard output)
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,

    /// Replace FILE if it exists
    #[arg(long)]
    pub force: bool,

    /// Record this creation time (RFC 3339) in the manifest [default: SOURCE_DATE_EPOCH if
    /// set, else none]
    #[arg(long, value_name = "TIME")]
    pub created: Option<String>,

    /// How bodies are stored
    #[arg(long, value_enum, default_value_t = CompressionArg::Zstd)]
    pub compression: CompressionArg,

    /// Blank MCP env values and HTTP header values (tokens), listing what was blanked
    #[arg(long)]
    pub redact_secrets: bool,

    #[command(flatten)]
    pub strict: Strict,

    #[command(flatten)]
    pub common: Common,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompressionArg {
    /// zstd layers (level 3; a session's update stream against its native transcript, and a
    /// transcript against its project's dictionary, the first MiB, 512 or 256 KiB of one of the
    /// project's transcripts), zip entries Stored: smallest and fastest; `unzip` gives zstd files that
    /// `zstd -d` decodes, with `-D` and the dictionary the layer table names
    Zstd,
    /// Uncompressed layers in Deflate zip entries: every unzip expands them to plain files
    Deflate,
    /// No compression at all
    Stored,
}

fn created(args: &PackArgs) -> Result<Option<String>> {
    if let Some(c) = &args.created {
        if !human::is_rfc3339(c) {
            bail_usage!("--created {c:?} is not an RFC 3339 time such as 2026-11-30T12:00:00Z");
        }
        return Ok(Some(c.clone()));
    }
    match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(v) if !v.is_empty() => {
            let Ok(secs) = v.trim().parse::<i64>() else {
                bail_usage!("SOURCE_DATE_EPOCH {v:?} is not a number of seconds");
            };
            Ok(Some(human::rfc3339(secs)))
        }
        _ => Ok(None),
    }
}

/// Where the staging directory goes: next to the output, so spooled bodies stay on the same
/// filesystem (and out of a memory-backed /tmp).
fn staging_parent(output: Option<&Path>) -> PathBuf {
    let Some(output) = output else {
        return std::env::temp_dir();
    };
    match output.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Whether `e` is the disk (or the user's quota) full: the staging files' write, which a read
/// of the store never is (its errors pass through the same sink, `put_reader` copying from
/// the store, so the variant alone does not tell).
fn disk_full(e: &asp_convert::ConvertError) -> bool {
    use asp_convert::ConvertError as C;
    use asp_format::blob::BlobError as B;
    let (C::Blob(B::Io { source, .. } | B::Other(source))
    | C::Io { source, .. }
    | C::Write { source, .. }) = e
    else {
        return false;
    };
    matches!(
        source.kind(),
        std::io::ErrorKind::StorageFull | std::io::ErrorKind::QuotaExceeded
    )
}

/// The file [`output_file`] found (not standard output).
fn file(output: &Option<PathBuf>) -> &Path {
    output
        .as_deref()
        .expect("a file unless the bundle goes to standard output")
}

/// The file `-o` names, checked before any work: `None` for standard output; a link followed
/// to its file, and a device, a pipe or a directory refused (`bundle::output_path`); an
/// existing file only with --force; its directory there.
fn output_file(args: &PackArgs, to_stdout: bool) -> Result<Option<PathBuf>> {
    if to_stdout {
        return Ok(None);
    }
    let file = bundle::output_path(&args.output)?;
    // A link that leads nowhere takes the name too (`cp` will not write through one).
    if !args.force && std::fs::symlink_metadata(&args.output).is_ok() {
        return Err(Failure::new(
            ErrorClass::Store,
            format!(
                "{} already exists (use --force to replace it)",
                args.output.display()
            ),
        ));
    }
    let dir = staging_parent(Some(&file));
    if !dir.is_dir() {
        let why = match dir.exists() {
            true => "is not a directory",
            false => "does not exist",
        };
        return Err(Failure::new(
            ErrorClass::Store,
            format!(
                "cannot write {}: the folder {} {why}",
                args.output.display(),
                dir.display()
            ),
        ));
    }
    Ok(Some(file))
}

pub fn run(args: PackArgs) -> Result<Exit> {
    if !args.from_repo && args.repo.repo.is_some() {
        bail_usage!("--repo names the repository of --from-repo; without it, it means nothing");
    }
    if !args.from_repo && args.snapshot.is_some() {
        bail_usage!(
            "--snapshot names a snapshot of --from-repo; without it, asp-pack packs the live store"
        );
    }
    let to_stdout = args.output.as_os_str() == "-";
    if to_stdout {
        crate::stdio::refuse_a_terminal()?;
        // The bundle's: a `--json` error is not put into it (review helper-138, 6).
        crate::stdout_used();
    }
    let created = created(&args)?;
    if args.from_repo {
        return from_repo(&args, created, to_stdout);
    }
    // One conversation carried (`--session`) is that conversation, as `asp export --session`
    // and `asp-unpack --session` take it; `--kinds` adds the rest on purpose.
    let kinds = args.kinds.unwrap_or(if args.sessions.is_empty() {
        KindSet::ALL
    } else {
        KindSet::EMPTY.with(asp_format::StateKind::Sessions)
    });
    let bar = Bar::new(args.common.quiet);
    // (clap's `requires` lets a flag through beside an argument of its group.)
    if args.home.is_some() && args.from_dir.is_some() {
        bail_usage!(
            "--home is for --from HARNESS (the home whose store is read); --from-dir names the directory itself"
        );
    }
    let output = output_file(&args, to_stdout)?;
    let parent = staging_parent(output.as_deref());
    if args.redact_secrets && args.from_dir.is_some() {
        bail_usage!(
            "--redact-secrets works with --from; edit tools.json to redact a state directory"
        );
    }
    let staging = LayerStore::new_in(
        &parent,
        LayerOptions {
            encoding: match args.compression {
                CompressionArg::Zstd => Encoding::Zstd,
                CompressionArg::Deflate | CompressionArg::Stored => Encoding::Identity,
            },
            threads: args.threads.map_or(0, NonZeroUsize::get),
            ..LayerOptions::default()
        },
    )
    .with_context(|| format!("cannot create a staging directory in {}", parent.display()))?;
    let diagnostics = Diagnostics::new();

    let store = match (&args.from, &args.from_dir) {
        (Some(name), _) => {
            let home = Home::resolve(args.home.clone())?;
            Store::harness(name, home).expect("validated by the argument parser")
        }
        (None, Some(d)) => Store::Dir(d.clone()),
        (None, None) => unreachable!("clap requires --from or --from-dir"),
    };
    let sessions = if args.sessions.is_empty() {
        Sessions::All
    } else {
        Sessions::Only(args.sessions.clone())
    };
    let state = store
        .read(&ReadRequest {
            kinds,
            sessions: &sessions,
            options: ReadOptions {
                redact_secrets: args.redact_secrets,
                ..ReadOptions::default()
            },
            threads: args.threads,
            blobs: &staging,
            diagnostics: &diagnostics,
            progress: &bar,
        })
        .map_err(|e| {
            // The bodies go into the bundle's staging files as they are read: a failure there
            // (a full disk) is a write, not a store that cannot be read.
            if disk_full(&e) {
                let e: Failure = e.into();
                return e.context(format!(
                    "cannot write the bundle's staging files in {}",
                    parent.display()
                ));
            }
            let e: Failure = e.into();
            let what = match &store {
                Store::Dir(d) => format!("the state directory {}", d.display()),
                Store::Harness { harness, home } => {
                    format!("the {} store in {}", harness.name(), home.dir.display())
                }
            };
            // A session the store does not have is a wrong argument, not a store that
            // cannot be read.
            match e.class {
                ErrorClass::Usage => e.context(format!("in {what}")),
                _ => e.context(format!("cannot read {what}")),
            }
        })?;
    let source = store.describe_location();

    let layers = staging
        .finish_for(&state, &asp_convert::transcript_of, None)
        .context("cannot compress the bodies")?;
    let opts = Options2 {
        created,
        generator: Some(crate::generator()),
        zip: match args.compression {
            CompressionArg::Deflate => ZipMethod::Deflate,
            CompressionArg::Zstd | CompressionArg::Stored => ZipMethod::Stored,
        },
        zstd_documents: args.compression == CompressionArg::Zstd,
        max_document: None,
    };
    let (written, shown) = if to_stdout {
        let tmp = tempfile::Builder::new()
            .prefix("asp-pack-")
            .suffix(".aspstate")
            .tempfile()
            .map_err(Failure::store)
            .context("cannot create a temporary bundle file")?;
        let path = tmp.path().to_path_buf();
        // Left, if the process is told to stop, only as long as the copy to stdout waits.
        let _on_stop = asp_format::on_stop::remove_on_stop(&path);
        let written = bundle::write_layers_file(&path, &state, &layers, &opts, true, &bar)?;
        bar.clear();
        crate::stdio::copy_to_stdout(&path)?;
        (written, "<stdout>".to_owned())
    } else {
        let written =
            bundle::write_layers_file(file(&output), &state, &layers, &opts, args.force, &bar)
                .with_context(|| format!("cannot write {}", args.output.display()))?;
        (written, args.output.display().to_string())
    };
    bar.clear();

    let items = diagnostics.items();
    // With -q only what was lost, as `asp backup -q` (new-user trial helper-137, 6).
    let said = items
        .iter()
        .filter(|d| !args.common.quiet || d.severity.is_loss());
    for line in human::finding_lines(said) {
        bar.println(line);
    }
    // (As `asp backup --json` gives what was lost, and `asp-unpack --json` its findings.)
    let lost: Vec<serde_json::Value> = items
        .iter()
        .filter(|d| d.severity.is_loss())
        .map(human::finding_json)
        .collect();
    let left_out: Vec<serde_json::Value> = items
        .iter()
        .filter(|d| d.severity.is_not_carried() && !d.severity.is_loss())
        .map(human::finding_json)
        .collect();
    // A state directory gives a kind exactly when its file or folder is there (spec §11): one
    // that is not is not "0" of it.
    let said = match args.from_dir {
        Some(_) => kinds.intersection(state.kinds()),
        None => kinds.intersection(store.exports()),
    };
    let mut summary = summary_line(
        &state,
        said,
        &shown,
        written.size,
        &written.digest.to_string(),
    );
    summary.push_str(&human::not_carried(
        left_out.len(),
        lost.len(),
        args.common.quiet,
    ));
    if args.common.json {
        let out = serde_json::json!({
            "bundle": shown,
            "digest": written.digest,
            "size": written.size,
            "source": source,
            "kinds": state.counts(),
            "notTaken": left_out,
            "lost": lost,
            "findings": items.iter().map(human::finding_json).collect::<Vec<_>>(),
        });
        if to_stdout {
            crate::errln!("{out}");
        } else {
            crate::outln!("{out}");
        }
    } else if to_stdout {
        crate::errln!("{summary}");
    } else {
        crate::outln!("{summary}");
    }
    Ok(crate::exit::carried(
        !lost.is_empty(),
        !left_out.is_empty(),
        args.strict.strict,
    ))
}

/// `packed 3 sessions, instructions, 2 skills, ... → FILE (12.3 KiB; bundle sha256:…)`.
pub fn summary_line(state: &State, asked: KindSet, shown: &str, size: u64, digest: &str) -> String {
    format!(
        "packed {} → {shown} ({}; bundle {digest})",
        describe_counts(state, asked),
        human::bytes(size)
    )
}

/// `3 sessions, instructions, 2 skills, 1 MCP server, 4 memory notes, 2 settings`: every kind asked
/// for, with none of it said as 0 (a store that has none gives none of it), or `nothing`.
pub fn describe_counts(state: &State, asked: KindSet) -> String {
    use asp_format::StateKind as K;
    let counts = state.counts();
    let mut parts = Vec::new();
    for kind in asked.iter() {
        let n = counts.get(&kind).copied().unwrap_or(0);
        parts.push(match kind {
            K::Sessions => human::count(n, "session", "sessions"),
            K::Instructions if n > 0 => "instructions".to_owned(),
            K::Instructions => continue,
            K::Skills => human::count(n, "skill", "skills"),
            K::Tools => human::count(n, "MCP server", "MCP servers"),
            K::Memory => human::count(n, "memory note", "memory notes"),
            K::Settings => human::count(n, "setting", "settings"),
        });
    }
    if parts.is_empty() {
        "nothing".to_owned()
    } else {
        parts.join(", ")
    }
}

/// A snapshot a repository holds may be too large for a bundle's reader (the repository reads
/// larger documents): say that it is safe where it is.
fn too_large_for_a_bundle(e: bundle::WriteError) -> crate::exit::Failure {
    let too_large = matches!(e, bundle::WriteError::TooLarge { .. });
    let failure = crate::exit::Failure::from(e);
    match too_large {
        true => failure.context(
            "this snapshot is too large for one bundle; it stays in the repository, and \
             `asp restore` gives it back",
        ),
        false => failure,
    }
}

/// `--from-repo`: a snapshot's state with its layers as the repository stores them.
fn from_repo(args: &PackArgs, created: Option<String>, to_stdout: bool) -> Result<Exit> {
    if args.compression != CompressionArg::Zstd || args.redact_secrets || args.kinds.is_some() {
        bail_usage!(
            "--from-repo packs a snapshot as it is stored: no --compression, --kinds or \
             --redact-secrets (unpack it, then pack what you want)"
        );
    }
    let output = output_file(args, to_stdout)?;
    let repo = args.repo.open()?;
    let _lock = repo.lock_to_read()?;
    let wanted = args.snapshot.as_deref().unwrap_or("latest");
    let info = if wanted == "latest" {
        let all = repo.snapshots()?;
        let newest = asp_repo::repository::newest_of_each_series(&all);
        let Some(s) = all.last().cloned() else {
            bail_usage!("{} holds no snapshot", repo.root().display());
        };
        // Several harnesses or homes backed up: the newest of them all is one of several a
        // user may have meant.
        if newest.len() > 1 {
            crate::errln!(
                "note: {} holds snapshots of {} harnesses or homes; `latest` is the newest of \
                 them all ({} of {}); --snapshot ID packs another (`asp snapshots` lists them)",
                repo.root().display(),
                newest.len(),
                s.harness,
                s.home
            );
        }
        s
    } else {
        repo.find(wanted)?
    };
    // `latest` is the newest of its series that can be read: a newer one that cannot (a
    // document of it damaged) is passed over, said, and the pack exits 4, as `asp restore`
    // does, so one damaged snapshot does not keep the rest from coming back.
    let (info, snapshot, passed_over) = if wanted == "latest" {
        let (found, passed_over) = asp_repo::Snapshot::newest_readable(
            &repo,
            &repo.snapshots()?,
            &info.harness,
            &info.home,
            asp_repo::Snapshot::load_for_reading,
        )?;
        match found {
            Some(snapshot) => (snapshot.info.clone(), snapshot, passed_over),
            // None can be read: the newest's damage is the error.
            None => {
                return Err(asp_repo::RepoError::Integrity(
                    passed_over
                        .into_iter()
                        .next()
                        .map(|p| p.error)
                        .unwrap_or_else(|| format!("snapshot {} cannot be read", info.short_id())),
                )
                .into());
            }
        }
    } else {
        let snapshot = asp_repo::Snapshot::load_for_reading(&repo, &info)?;
        (info, snapshot, Vec::new())
    };
    for p in &passed_over {
        crate::errln!(
            "damaged: {}; packing snapshot {} ({} of {} in {}), the newest that can be read",
            p.error,
            info.short_id(),
            info.created,
            info.harness,
            info.home
        );
    }
    let layers = asp_repo::blobs::RepoLayers {
        repo: &repo,
        table: &snapshot.table,
    };
    // A bundle: its reader's limits, not the repository's (a snapshot too large for a bundle
    // is refused before anything is written).
    let opts = Options2 {
        created,
        max_document: None,
        ..asp_repo::backup::content_options()
    };
    let bar = Bar::new(args.common.quiet);
    let written = if to_stdout {
        let tmp = tempfile::Builder::new()
            .prefix("asp-pack-")
            .suffix(".aspstate")
            .tempfile()
            .map_err(Failure::store)
            .context("cannot create a temporary bundle file")?;
        let _on_stop = asp_format::on_stop::remove_on_stop(tmp.path());
        let w = bundle::write_layers_file(tmp.path(), &snapshot.state, &layers, &opts, true, &bar)
            .map_err(too_large_for_a_bundle)?;
        bar.clear();
        crate::stdio::copy_to_stdout(tmp.path())?;
        w
    } else {
        bundle::write_layers_file(
            file(&output),
            &snapshot.state,
            &layers,
            &opts,
            args.force,
            &bar,
        )
        .map_err(too_large_for_a_bundle)
        .with_context(|| format!("cannot write {}", args.output.display()))?
    };
    bar.clear();
    let shown = if to_stdout {
        "<stdout>".to_owned()
    } else {
        args.output.display().to_string()
    };
    let line = if args.common.json {
        let mut json = serde_json::json!({
            "bundle": shown,
            "digest": written.digest,
            "size": written.size,
            "source": format!("snapshot {}", info.digest),
            "kinds": snapshot.state.counts(),
        });
        if !passed_over.is_empty() {
            json["_meta"] = serde_json::json!({"asp": {"passedOver": passed_over}});
        }
        json.to_string()
    } else {
        // Which snapshot: `latest` is the newest of any harness and home.
        format!(
            "{} (snapshot {}, {} of {} in {})",
            summary_line(
                &snapshot.state,
                snapshot.state.kinds(),
                &shown,
                written.size,
                &written.digest.to_string(),
            ),
            info.short_id(),
            info.created,
            info.harness,
            info.home
        )
    };
    if to_stdout {
        crate::errln!("{line}");
    } else {
        crate::outln!("{line}");
    }
    if !passed_over.is_empty() {
        return Ok(Exit::Integrity);
    }
    Ok(Exit::Ok)
}
