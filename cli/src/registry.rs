//! `asp push` and `asp pull`: a snapshot of the repository, a bundle file or an OCI image
//! layout to and from a registry.
//!
//! Each form is a [`PushSource`] (a manifest and its blobs) for a push and a [`PullSink`] for
//! a pull; the snapshot repository forms (`asp push [--repo DIR] [SNAPSHOT|latest] REF`,
//! `asp pull REF --repo DIR`) are `asp_repo::registry`'s: a branch in [`push_source`] and
//! [`pull_sink`].

use std::io::Read;
use std::path::PathBuf;
use std::time::Duration;

use asp_registry::bundle::{BundleFile, BundleSink};
use asp_registry::credentials::Lookup;
use asp_registry::layout::{Layout, LayoutSink};
use asp_registry::remotes::Remotes;
use asp_registry::secret::Secret;
use asp_registry::source::LayoutSource;
use asp_registry::{
    Client, ClientOptions, Error, PullOptions, PullReport, PullSink, PushOptions, PushReport,
    PushSource, Reference, pull, push_from,
};
use clap::{ArgGroup, Args, Parser};
use serde::Serialize;

use crate::args::{Common, RepoArg};
use crate::exit::{Context, EXIT_CODES_HELP, Exit, Failure, Result};
use crate::human;
use crate::progress::TransferBar;
use crate::stdio::Input;

const AUTH_HELP: &str = "\
Credentials, first found wins: --username USER with --password-stdin (both or neither, as with
docker login: standard input is read for the password only with --password-stdin); ASP_REGISTRY_USERNAME and
ASP_REGISTRY_PASSWORD; docker's config.json ($DOCKER_CONFIG or ~/.docker): credHelpers,
credsStore (docker-credential-<helper> get), auths (auth, identitytoken). They are offered
only when the registry asks (basic auth, or the token flow), and never printed.

HTTPS always, except to a registry on this machine (localhost, 127.0.0.0/8, ::1), which may
answer plain HTTP, or with --insecure; those are tried over HTTPS, then plain HTTP.

A registry that does not answer is given up on after --timeout SECONDS ($ASP_REGISTRY_TIMEOUT,
else 30): the wait for it to accept the connection and answer its first request, HTTPS and
plain HTTP together. Once it has answered, each later answer and each next bytes of a
transfer are waited for up to 120 s, or SECONDS if longer.";

/// How to reach and log in to a registry.
#[derive(Debug, Clone, Args)]
pub struct RegistryArgs {
    /// Log in as USER, with --password-stdin (as `docker login`: both, or neither)
    #[arg(long, short = 'u', value_name = "USER")]
    pub username: Option<String>,

    /// Read the password (or token) for --username from standard input
    #[arg(long)]
    pub password_stdin: bool,

    /// Allow plain HTTP and certificates that do not verify, for any registry
    #[arg(long)]
    pub insecure: bool,

    /// Trust the CA certificates in FILE (PEM) for the registry's HTTPS
    #[arg(long, value_name = "FILE")]
    pub ca_file: Option<PathBuf>,

    /// Blobs transferred at once
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub jobs: u16,

    /// Give up on a registry that has not accepted the connection and answered after SECONDS
    /// (decimals allowed) [default: $ASP_REGISTRY_TIMEOUT, else 30]
    #[arg(long, value_name = "SECONDS", value_parser = parse_timeout)]
    pub timeout: Option<Duration>,
}

impl RegistryArgs {
    /// `--username` and `--password-stdin` go together, as `docker login`'s do: the password
    /// is read from standard input only when asked to, never because a user name was given
    /// (a script piping something else in would send it as a password). Checked before
    /// anything is read, with a message that says what to add.
    fn check(&self, command: &str) -> Result<()> {
        match (&self.username, self.password_stdin) {
            (Some(user), false) => Err(Error::Usage(format!(
                "--username {user} needs --password-stdin: the password (or token) is read from \
                 standard input only with it, as with `docker login`: \
                 echo \"$TOKEN\" | asp {command} ... -u {} --password-stdin (or set \
                 ASP_REGISTRY_USERNAME and ASP_REGISTRY_PASSWORD, or run `docker login`)",
                shell_word(user)
            ))
            .into()),
            (None, true) => Err(Error::Usage(
                "--password-stdin reads the password for --username USER: give both".to_owned(),
            )
            .into()),
            _ => Ok(()),
        }
    }
}

/// The environment variable `--timeout` defaults to.
const TIMEOUT_ENV: &str = "ASP_REGISTRY_TIMEOUT";
/// How long a registry may take to answer its first request, unless told otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Seconds, decimals allowed, at least 0.1 and at most a day.
fn parse_timeout(s: &str) -> std::result::Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && (0.1..=86_400.0).contains(&x) => Ok(Duration::from_secs_f64(x)),
        _ => Err(format!(
            "{s:?} is not a number of seconds (at least 0.1, at most 86400)"
        )),
    }
}

/// `--timeout`, else `$ASP_REGISTRY_TIMEOUT`, else 30 s.
fn timeout(args: &RegistryArgs) -> Result<Duration> {
    if let Some(t) = args.timeout {
        return Ok(t);
    }
    match std::env::var(TIMEOUT_ENV) {
        Ok(v) if !v.trim().is_empty() => {
            parse_timeout(&v).map_err(|e| Error::Usage(format!("{TIMEOUT_ENV}: {e}")).into())
        }
        _ => Ok(DEFAULT_TIMEOUT),
    }
}

/// Push a snapshot of the repository, a bundle or an OCI image layout to a registry
#[derive(Debug, Clone, Parser)]
#[command(
    override_usage = "asp push [OPTIONS] [--repo <DIR>] [SNAPSHOT|latest] <REF>\n       asp push [OPTIONS] <FILE.aspstate> <REF>\n       asp push [OPTIONS] --layout <DIR> <REF>"
)]
#[command(after_help = format!("\
A snapshot (`asp snapshots` lists them; `latest`, the default, is the newest this machine
backed up, passing over snapshots pulled from a registry, which are another machine's state
(with only pulled ones, `latest` is refused, exit 2: push one by its id);
when it cannot be read, the push stops and names the newest that can, to push by its id;
a pulled snapshot pushed by its id says its backup's own time, not the pull's) is pushed as
two artifacts: its state (content manifest and blobs, untagged: the artifact `asp pack
--from-repo` would make a bundle of, the same digest), then a snapshot record whose subject
is that state and which REF's tag names: the harness, the sessions gone from the source and
the harness's own configuration files (settings.json, rules ...), so that `asp pull` and
`asp restore` elsewhere give what restoring the snapshot here gives. Two kinds of time
travel: when the backup was made (the record's `org.opencontainers.image.created`, what
registries show) and when each gone session was first found gone. Nothing else about this
machine does (no home path, host name, file paths, file times or inodes). But the state
travels whole: MCP server credentials written out in full (env values, headers), which the
backup named in a note, go with it (the push names them again before it sends them); to
share a state without them, push a bundle packed with asp-pack --redact-secrets instead.
Without --repo, the first argument is a snapshot when no file of that name exists, and the
repository is $ASP_REPO, else $XDG_DATA_HOME/asp/repo, else ~/.local/share/asp/repo.

A bundle is pushed as its own OCI image manifest and blobs, read from the zip as they are: the
registry names the artifact by the digest `asp verify` prints. Bundles of layout 1.0.0 have
no image manifest; re-pack them first (`asp-unpack OLD --to-dir D && asp-pack --from-dir D
-o NEW.aspstate`).

Uploads only what the registry lacks: every blob is checked with HEAD first, blobs another
repository of the same registry holds are mounted from it (--from, or the repository last
pushed to or pulled from), the manifest goes last. A push cut off halfway skips, when run
again, what already arrived. Progress (bytes and blobs) is drawn on stderr when it is a
terminal; --json prints the digest, the blobs and the bytes uploaded and skipped.

A tag names one manifest at a time: pushing to a tag that named another moves it there, as
`docker push` does, and says what it named before (`replaced` in --json), which stays
pullable by its digest (REPO@sha256:...) until the registry collects what no tag names. To
keep each machine's snapshots apart, give each its own tag (`:laptop`, `:desktop`).

{AUTH_HELP}

Examples:
  asp backup --from claude-code && asp push latest ghcr.io/me/agent-state:laptop
  asp push --repo /mnt/backup/asp 3f2a9c localhost:5000/me/agent-state:monday --json
  asp pack --from claude-code -o laptop.aspstate
  asp push laptop.aspstate localhost:5000/me/agent-state:laptop
  echo \"$TOKEN\" | asp push laptop.aspstate -u me --password-stdin ghcr.io/me/agent-state:v1 --json
  asp pack --from codex -o - | ASP_REGISTRY_USERNAME=me ASP_REGISTRY_PASSWORD=... asp push - REF
  asp push --layout ./state localhost:5000/me/agent-state:laptop

{EXIT_CODES_HELP}"))]
pub struct PushArgs {
    /// What to push, then REF: a snapshot (its id or `latest`), a bundle (FILE.aspstate, `-`
    /// for standard input); or only REF, to push the latest snapshot or --layout
    #[arg(value_name = "SNAPSHOT|FILE.aspstate")]
    pub first: String,

    /// Where to: host[:port]/name[:tag|@sha256:<hex>] (without a host, Docker Hub's, docker.io,
    /// as docker reads it; the tag is latest when none is given)
    #[arg(value_name = "REF")]
    pub second: Option<String>,

    /// Push a snapshot of this repository [default: $ASP_REPO, else $XDG_DATA_HOME/asp/repo,
    /// else ~/.local/share/asp/repo, when the first argument is no file]
    #[arg(long, value_name = "DIR", conflicts_with = "layout")]
    pub repo: Option<PathBuf>,

    #[command(flatten)]
    pub wait: crate::args::LockWaitArg,

    /// Push from this OCI image layout directory instead of a bundle
    #[arg(long, value_name = "DIR")]
    pub layout: Option<PathBuf>,

    /// Which manifest of the --layout: its name (org.opencontainers.image.ref.name) or its
    /// digest [default: the one named like REF's tag, else the only one, however many names
    /// the index gives it]
    #[arg(long, value_name = "NAME|DIGEST", requires = "layout")]
    pub manifest: Option<String>,

    /// Mount blobs from this repository of the same registry instead of uploading them
    #[arg(long, value_name = "REPOSITORY")]
    pub from: Option<String>,

    #[command(flatten)]
    pub registry: RegistryArgs,

    #[command(flatten)]
    pub common: Common,
}

/// Pull an asp state artifact from a registry into the repository, a bundle or an OCI image layout
#[derive(Debug, Clone, Parser)]
#[command(
    override_usage = "asp pull [OPTIONS] <REF> [--repo <DIR>]\n       asp pull [OPTIONS] <REF> -o <FILE.aspstate>\n       asp pull [OPTIONS] <REF> --layout <DIR>"
)]
#[command(group(ArgGroup::new("destination").args(["output", "layout", "repo"])))]
#[command(after_help = format!("\
Treats what the registry sends as hostile: the manifest is refused over 4 MiB or if it is
not an asp state artifact; every blob's size is checked before it is read and its sha256
after; nothing is written unless every blob verified.

--repo DIR (the default, with $ASP_REPO, else $XDG_DATA_HOME/asp/repo, else
~/.local/share/asp/repo; created if missing,
and removed again if the pull fails before anything landed, all but its locks/ folder,
since a lock file is never deleted; a later pull or backup takes such a folder as empty)
makes a snapshot: the state
manifest and layer table are read from the downloaded blobs and every body is decoded and
checked before any blob joins the repository, under its lock (a prune waits). When REF names
a snapshot record (what `asp push SNAPSHOT REF` pushes), the state is its subject, and the
record's gone marks and harness configuration files, checked the same way, join the
snapshot. The snapshot's home is `registry:<host>/<repository>:<tag>` (pulled by digest,
which decides when REF gives a tag too: `@sha256:` and its first 12 hex digits), so each tag,
one per machine, is a series of its own
(`asp sessions` lists the newest of each); pulling the same content into it again adds
nothing, and says which snapshot holds it (`alreadyIn` in --json). The pull says the command that restores it, `asp restore --snapshot ID
--to HARNESS`, configuration files included. (`asp restore --to HARNESS` alone takes the newest
snapshot of that harness in the home restored into first: on a machine that backs up into the
same repository, its own.)

-o FILE and --layout DIR take only the state a record names (a bundle holds state only).

-o FILE writes a bundle: the blobs go into a temporary file beside FILE, which must then
open and check as a bundle (as `asp verify` does) before it is renamed to FILE, mode 0600.
An existing FILE is replaced only with --force. Pulling what `asp push FILE` pushed gives
FILE's bytes again (for bundles written with `asp pack --compression zstd` or `stored`, the
default, by the same asp version; others hold the same manifest, digests and state).

--layout DIR writes into an OCI image layout (created if missing or empty; a directory that
holds anything else is refused, exit 1, as --repo refuses one that is not a repository; an asp
repository is refused too, exit 2: pull into it with --repo DIR, under its lock); blobs it
holds already are not downloaded. A tag that named another manifest there is moved to this
one, and the pull says what it named (`replaced` in --json); that manifest stays, unnamed.

{AUTH_HELP}

Examples:
  asp pull ghcr.io/me/agent-state:laptop
  asp restore --snapshot 17220b0e --to claude-code      (the id the pull said)
  asp pull localhost:5000/me/agent-state:laptop --repo ./repo --json
  asp pull localhost:5000/me/agent-state:laptop -o laptop.aspstate
  asp-unpack laptop.aspstate --to codex
  asp pull ghcr.io/me/agent-state@sha256:<hex> -o state.aspstate --force --json
  asp pull localhost:5000/me/agent-state:laptop -o - | asp inspect -
  asp pull localhost:5000/me/agent-state:laptop --layout ./state

{EXIT_CODES_HELP}"))]
pub struct PullArgs {
    /// What to pull: host[:port]/name[:tag|@sha256:<hex>] (without a host, Docker Hub's,
    /// docker.io, as docker reads it; the tag is latest when none is given)
    #[arg(value_name = "REF")]
    pub reference: String,

    /// Write a bundle file (`-` for standard output)
    #[arg(long, short = 'o', value_name = "FILE.aspstate")]
    pub output: Option<PathBuf>,

    /// Replace the -o FILE if it exists
    #[arg(long, requires = "output")]
    pub force: bool,

    /// Pull into this OCI image layout directory (created if missing)
    #[arg(long, value_name = "DIR")]
    pub layout: Option<PathBuf>,

    /// Pull into this snapshot repository, as a snapshot (created if missing) [default:
    /// $ASP_REPO, else $XDG_DATA_HOME/asp/repo, else ~/.local/share/asp/repo, without -o and
    /// --layout]
    #[arg(long, value_name = "DIR")]
    pub repo: Option<PathBuf>,

    #[command(flatten)]
    pub wait: crate::args::LockWaitArg,

    #[command(flatten)]
    pub registry: RegistryArgs,

    #[command(flatten)]
    pub common: Common,
}

/// Connects to the registry of `reference`, with the credentials found for it.
fn connect(reference: &Reference, args: &RegistryArgs, bar: &TransferBar) -> Result<Client> {
    let explicit = if args.password_stdin {
        let mut s = String::new();
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(Failure::source)
            .context("reading the password from standard input")?;
        let password = s.trim_end_matches(['\n', '\r']).to_owned();
        if password.is_empty() {
            return Err(Error::Usage("--password-stdin got an empty password".to_owned()).into());
        }
        let user = args
            .username
            .clone()
            .expect("RegistryArgs::check requires --username");
        Some((user, Secret::new(password)))
    } else {
        None
    };
    let timeout = timeout(args)?;
    let found = Lookup::new(explicit)?.find(reference.registry())?;
    for note in &found.notes {
        bar.println(format!("note: {note}"));
    }
    bar.status(format!(
        "waiting for {} to answer (at most {} s)",
        reference.registry(),
        asp_registry::error::seconds(timeout)
    ));
    let client = Client::connect(
        reference,
        ClientOptions {
            insecure: args.insecure,
            credentials: found.credentials,
            ca_file: args.ca_file.clone(),
            connect_timeout: timeout,
            // A registry that answered may take the client's own wait, at least, for each
            // later answer (committing a big blob can take a while).
            read_timeout: timeout.max(ClientOptions::default().read_timeout),
            ..ClientOptions::default()
        },
    );
    bar.status(String::new());
    Ok(client?)
}

fn parse_reference(s: &str) -> Result<Reference> {
    Ok(Reference::parse(s).map_err(Error::from)?)
}

/// Remembers the repository for later cross-repository mounts; failing to is not an error.
fn remember(reference: &Reference, bar: &TransferBar) {
    let Some(path) = Remotes::default_path() else {
        return;
    };
    let mut remotes = Remotes::load(&path);
    remotes.record(reference.registry(), reference.repository());
    if let Err(e) = remotes.save(&path) {
        bar.println(format!("warning: could not record the repository: {e}"));
    }
}

/// What `asp push` sends: the source, where to, how it is named to the person, the
/// credentials its state holds written out (said before they leave), and what to run when one
/// of its blobs turns out damaged.
type Source = (
    Box<dyn PushSource>,
    Reference,
    String,
    Vec<String>,
    Option<String>,
);

fn push_source(args: &PushArgs) -> Result<Source> {
    let is_snapshot = |s: &str| {
        s == "latest"
            || (s.len() >= 4
                && s.trim_start_matches("sha256:")
                    .bytes()
                    .all(|b| b.is_ascii_hexdigit())
                && !std::path::Path::new(s).exists())
    };
    // `latest` is never a REF (it would be docker.io/library/latest): a snapshot whose
    // REF was left out.
    if args.second.is_none() && args.layout.is_none() && args.first == "latest" {
        return Err(Error::Usage(
            "`latest` names the snapshot to push; give where to after it: asp push latest \
             host[:port]/name[:tag]"
                .to_owned(),
        )
        .into());
    }
    // The two the wrong way round: `asp push REF latest` (it read REF as a bundle file:
    // new-user trial helper-136, 11).
    if let Some(second) = &args.second
        && is_snapshot(second)
        && !std::path::Path::new(&args.first).exists()
        && parse_reference(&args.first).is_ok()
    {
        return Err(Error::Usage(format!(
            "what to push goes first, where to last: asp push {second} {}",
            args.first
        ))
        .into());
    }
    match (&args.repo, &args.second) {
        (Some(_), None) => return snapshot_source(args, "latest", &args.first),
        (Some(_), Some(reference)) => return snapshot_source(args, &args.first, reference),
        (None, Some(reference)) if args.layout.is_none() && is_snapshot(&args.first) => {
            return snapshot_source(args, &args.first, reference);
        }
        (None, None) if args.layout.is_none() => {
            return snapshot_source(args, "latest", &args.first);
        }
        _ => {}
    }
    match (&args.layout, &args.second) {
        (Some(dir), None) => {
            let reference = parse_reference(&args.first)?;
            if asp_repo::Repository::is_snapshot_repository(dir) {
                return Err(Error::Usage(format!(
                    "{dir} is an asp snapshot repository, not a plain OCI image layout: push a \
                     snapshot of it with asp push SNAPSHOT {reference} --repo {dir} (`asp \
                     snapshots --repo {dir}` lists them; `latest` is the newest)",
                    dir = shell_word(&dir.display().to_string()),
                    reference = args.first,
                ))
                .into());
            }
            let layout = Layout::open(dir)?;
            let source = LayoutSource::select(layout, args.manifest.as_deref(), reference.tag())?;
            // A manifest the index names more than once is pushed once: say its names, so
            // whoever looks for `latest` and `v1` knows both went.
            let shown = match source.names() {
                names @ [_, _, ..] => format!(
                    "{} (the manifest named {})",
                    dir.display(),
                    names.join(", ")
                ),
                _ => dir.display().to_string(),
            };
            Ok((Box::new(source), reference, shown, Vec::new(), None))
        }
        (Some(_), Some(_)) => Err(Error::Usage(format!(
            "push either a bundle ({} REF) or --layout DIR, not both",
            args.first
        ))
        .into()),
        (None, Some(reference)) => {
            let reference = parse_reference(reference)?;
            if args.first == "-" && args.registry.password_stdin {
                return Err(Error::Usage(
                    "standard input cannot carry both the bundle (-) and the password \
                     (--password-stdin); set ASP_REGISTRY_USERNAME and ASP_REGISTRY_PASSWORD"
                        .to_owned(),
                )
                .into());
            }
            // A bundle from a pipe is spooled to a temporary file (a zip is read from its
            // end); the open bundle keeps reading it after the file's name is gone.
            let input = Input::open(std::path::Path::new(&args.first))?;
            let shown = std::path::PathBuf::from(input.display());
            let bundle = BundleFile::open_as(input.path(), &shown)?;
            let credentials = asp_convert::kit::secrets::credentials_of(
                bundle
                    .bundle()
                    .manifest()
                    .state
                    .tools
                    .as_deref()
                    .unwrap_or_default(),
            );
            let remedy = (args.first != "-").then(|| {
                format!(
                    "the bundle is damaged; `asp verify {}` names what else is, and packing it \
                     again from its source mends it",
                    shell_word(&args.first)
                )
            });
            Ok((
                Box::new(bundle),
                reference,
                input.display(),
                credentials,
                remedy,
            ))
        }
        (None, None) => unreachable!("a snapshot push, above"),
    }
}

/// A snapshot of the repository (`id`: a hex prefix or `latest`) and where to push it.
fn snapshot_source(args: &PushArgs, id: &str, reference: &str) -> Result<Source> {
    let reference = parse_reference(reference)?;
    let repo_arg = RepoArg {
        repo: args.repo.clone(),
        wait: args.wait.clone(),
    };
    let path = repo_arg.path()?;
    if args.repo.is_none() && !asp_repo::Repository::is_at(&path) {
        return Err(Error::Usage(format!(
            "no snapshot {id} to push: {} holds no repository (`asp backup` makes one; \
             --repo DIR names another). To push a bundle: asp push FILE.aspstate REF",
            path.display()
        ))
        .into());
    }
    let repo = repo_arg.open()?;
    let source = asp_repo::registry::SnapshotSource::open(&repo, id)?;
    let info = source.info();
    let shown = format!("snapshot {} ({})", info.short_id(), info.harness);
    if id == "latest" && !args.common.quiet {
        // The newest of all is one harness's: the others' newest are said, so a repository
        // that `asp backup --from all` fills is not taken to be pushed whole.
        let others: Vec<String> = repo
            .newest_of_each_series()?
            .into_iter()
            .filter(|s| s.digest != info.digest)
            .map(|s| format!("{} ({}, {})", s.short_id(), s.harness, s.home))
            .collect();
        if !others.is_empty() {
            crate::errln!(
                "note: `latest` is the newest snapshot backed up here, {}'s; the newest of \
                 each other series stays here: {} (push each by its id, to a tag of its own)",
                info.harness,
                others.join(", ")
            );
        }
    }
    let credentials = source.credentials().to_vec();
    // A blob that does not match its digest is mended in the repository: moved aside, then
    // stored again by the next backup from the harness's own files.
    let remedy = format!(
        "run `asp check --read-data --repair --repo {}` (it moves the damaged layer aside), \
         then `asp backup` (it stores it again from the harness's files) and push again",
        shell_word(&repo.root().display().to_string())
    );
    Ok((
        Box::new(source),
        reference,
        shown,
        credentials,
        Some(remedy),
    ))
}

/// A path as a shell word, for commands the messages give.
fn shell_word(s: &str) -> String {
    asp_convert::kit::resume::shell_word(s)
}

/// A push's `--json` answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Pushed<'a> {
    source: &'a str,
    #[serde(flatten)]
    report: &'a PushReport,
    /// Blob bytes not sent: already there or mounted.
    bytes_skipped: u64,
}

pub fn run_push(args: PushArgs) -> Result<Exit> {
    args.registry.check("push")?;
    let (source, reference, shown, credentials, remedy) = push_source(&args)?;
    let bar = TransferBar::new(args.common.quiet, "push");
    if !credentials.is_empty() && !args.common.quiet {
        bar.println(format!(
            "note: {shown} holds credentials written out in full, which go to {} with it: {}; \
             whoever can pull it can read them (a bundle packed with asp-pack --redact-secrets \
             has them blanked)",
            reference.registry(),
            credentials.join(", ")
        ));
    }
    let client = connect(&reference, &args.registry, &bar)?;
    let mount_from = match &args.from {
        Some(f) => vec![f.clone()],
        None => Remotes::default_path()
            .map(|p| Remotes::load(&p).candidates(reference.registry(), reference.repository()))
            .unwrap_or_default(),
    };
    let opts = PushOptions {
        jobs: usize::from(args.registry.jobs),
        mount_from,
        ..PushOptions::default()
    };
    let result = push_from(&client, &reference, source.as_ref(), &opts, &bar);
    bar.clear();
    let report = result.map_err(|e| match e {
        // A damaged blob of ours: what mends it is the source's to say.
        Error::LocalBlob {
            digest,
            detail,
            remedy: None,
        } => Error::LocalBlob {
            digest,
            detail,
            remedy: remedy.clone(),
        },
        other => other,
    })?;
    remember(&reference, &bar);
    if args.common.json {
        let answer = Pushed {
            source: &shown,
            report: &report,
            bytes_skipped: report.bytes_present + report.bytes_mounted,
        };
        crate::outln!(
            "{}",
            serde_json::to_string(&answer).expect("a report serialises")
        );
    } else {
        let mut line = format!(
            "pushed {shown} to {}: {} uploaded ({}), {} already there ({})",
            named_digest(&reference, &report.digest, report.record.as_ref()),
            human::count(report.blobs_uploaded, "blob", "blobs"),
            human::bytes(report.bytes_uploaded),
            report.blobs_present,
            human::bytes(report.bytes_present),
        );
        if report.blobs_mounted > 0 {
            line.push_str(&format!(
                ", {} mounted from {} ({})",
                report.blobs_mounted,
                report.mounted_from.as_deref().unwrap_or("?"),
                human::bytes(report.bytes_mounted)
            ));
        }
        crate::outln!("{line}");
        if let Some(before) = &report.replaced
            && !args.common.quiet
        {
            // A tag is where the next pull looks; what it named before is not lost, but only
            // its digest finds it now.
            bar.println(format!(
                "note: {} named {before} before this push; that one is still there, pulled as \
                 {} (until the registry collects what no tag names)",
                strip_tag_digest(&reference),
                reference.with_digest(*before)
            ));
        }
    }
    Ok(Exit::Ok)
}

/// Where `asp pull` writes.
enum Sink {
    Layout(LayoutSink),
    Bundle(BundleSink),
    Repo(Box<asp_repo::registry::RepoSink>),
}

impl Sink {
    fn as_dyn(&self) -> &dyn PullSink {
        match self {
            Sink::Layout(s) => s,
            Sink::Bundle(s) => s,
            Sink::Repo(s) => s.as_ref(),
        }
    }
}

/// Where to pull, the path shown, and for `-o -` the temporary directory the bundle is written
/// in before it is copied to standard output.
/// A bundle pulled for standard output is written here first; removed when dropped, or when
/// the process is told to stop ([`crate::stop`]).
#[derive(Debug)]
struct Spool {
    _dir: tempfile::TempDir,
    _on_stop: asp_format::on_stop::Guard,
}

fn pull_sink(args: &PullArgs) -> Result<(Sink, PathBuf, Option<Spool>)> {
    match (&args.output, &args.layout) {
        (Some(file), None) if file.as_os_str() == "-" => {
            if args.common.json {
                return Err(Error::Usage(
                    "-o - writes the bundle to standard output, where --json would go too"
                        .to_owned(),
                )
                .into());
            }
            crate::stdio::refuse_a_terminal()?;
            let dir = tempfile::Builder::new()
                .prefix("asp-pull-")
                .tempdir()
                .map_err(Failure::store)
                .context("cannot create a temporary directory for the bundle")?;
            let on_stop = asp_format::on_stop::remove_on_stop(dir.path());
            let path = dir.path().join("stdout.aspstate");
            let sink = BundleSink::new(&path, false, Some(crate::generator()))?;
            let spool = Spool {
                _dir: dir,
                _on_stop: on_stop,
            };
            Ok((Sink::Bundle(sink), path, Some(spool)))
        }
        (Some(file), None) => Ok((
            Sink::Bundle(BundleSink::new(file, args.force, Some(crate::generator()))?),
            file.clone(),
            None,
        )),
        (None, Some(dir)) => {
            // A repository's index is changed only under its lock, by what makes snapshots: a
            // layout written into it would drop the entry of a backup made meanwhile.
            if asp_repo::Repository::is_snapshot_repository(dir) {
                return Err(Error::Usage(format!(
                    "{} is an asp snapshot repository, not a plain OCI image layout: pull into \
                     it as a snapshot with --repo {}",
                    dir.display(),
                    shell_word(&dir.display().to_string())
                ))
                .into());
            }
            Ok((Sink::Layout(LayoutSink::new(dir)?), dir.clone(), None))
        }
        (None, None) => {
            let path = RepoArg {
                repo: args.repo.clone(),
                wait: args.wait.clone(),
            }
            .path()?;
            let sink = asp_repo::registry::RepoSink::create(&path, None, |r| args.wait.apply(r))?;
            Ok((Sink::Repo(Box::new(sink)), path, None))
        }
        _ => unreachable!("clap allows at most one of -o, --layout and --repo"),
    }
}

/// A pull's `--json` answer.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Pulled<'a> {
    #[serde(flatten)]
    report: &'a PullReport,
    /// The bundle or layout written.
    output: &'a std::path::Path,
    /// The bundle file's size (`-o`).
    #[serde(skip_serializing_if = "Option::is_none")]
    bundle_bytes: Option<u64>,
    /// The snapshot made (`--repo`); null when the repository had this content already.
    #[serde(skip_serializing_if = "Option::is_none")]
    snapshot: Option<Option<asp_repo::SnapshotInfo>>,
    /// When the backup was made, as its snapshot record says (`--repo`, a record pulled).
    #[serde(skip_serializing_if = "Option::is_none")]
    backed_up: Option<String>,
    /// The snapshot that holds this content already (`--repo`, nothing new).
    #[serde(skip_serializing_if = "Option::is_none")]
    already_in: Option<asp_repo::SnapshotInfo>,
    /// What the tag named in the layout before, when this pull moved it (`--layout`).
    #[serde(skip_serializing_if = "Option::is_none")]
    replaced: Option<asp_format::digest::Digest>,
    /// The newest snapshot of the series earlier pulls of this registry repository went into,
    /// before series were kept per tag (`--repo`, the tag's first pull).
    #[serde(skip_serializing_if = "Option::is_none")]
    earlier_series: Option<asp_repo::SnapshotInfo>,
}

pub fn run_pull(args: PullArgs) -> Result<Exit> {
    args.registry.check("pull")?;
    let reference = parse_reference(&args.reference)?;
    let (sink, output, spool) = pull_sink(&args)?;
    let bar = TransferBar::new(args.common.quiet, "pull");
    let result = (|| {
        // Fail early on a destination that cannot be staged in.
        sink.as_dyn().staging_parent()?;
        let client = connect(&reference, &args.registry, &bar)?;
        let opts = PullOptions {
            jobs: usize::from(args.registry.jobs),
            ..PullOptions::default()
        };
        Ok(pull(&client, &reference, sink.as_dyn(), &opts, &bar)?)
    })();
    bar.clear();
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            // A repository this pull created and nothing landed in goes again (but for its
            // lock files), unless another process is using it.
            if let Sink::Repo(r) = sink
                && let Some(kept) = r.discard()
            {
                bar.println(format!("warning: {kept}"));
            }
            return Err(e);
        }
    };
    remember(&reference, &bar);
    let bundle_bytes = match &sink {
        Sink::Bundle(b) => b.written(),
        Sink::Layout(_) | Sink::Repo(_) => None,
    };
    let pulled = match &sink {
        Sink::Repo(r) => r.pulled(),
        _ => None,
    };
    let snapshot = match &sink {
        Sink::Repo(_) => Some(pulled.as_ref().and_then(|p| p.snapshot.clone())),
        _ => None,
    };
    let backed_up = pulled.as_ref().and_then(|p| p.backed_up.clone());
    let already_in = pulled.as_ref().and_then(|p| p.already_in.clone());
    let earlier_series = pulled.and_then(|p| p.earlier_series);
    let replaced = match &sink {
        Sink::Layout(l) => l.replaced(),
        _ => None,
    };
    if spool.is_some() {
        // The bundle is the output; what was pulled goes where diagnostics go.
        crate::stdio::copy_to_stdout(&output)?;
        if !args.common.quiet {
            bar.println(format!(
                "pulled {} to standard output: {} downloaded ({})",
                named_digest(&reference, &report.digest, report.record.as_ref()),
                human::count(report.blobs_downloaded, "blob", "blobs"),
                human::bytes(report.bytes_downloaded),
            ));
        }
        return Ok(Exit::Ok);
    }
    if args.common.json {
        let answer = Pulled {
            report: &report,
            output: &output,
            bundle_bytes,
            snapshot: snapshot.clone(),
            backed_up: backed_up.clone(),
            already_in: already_in.clone(),
            replaced,
            earlier_series: earlier_series.clone(),
        };
        crate::outln!(
            "{}",
            serde_json::to_string(&answer).expect("a report serialises")
        );
    } else {
        let mut line = format!(
            "pulled {} into {}: {} downloaded ({}), {} already there ({})",
            named_digest(&reference, &report.digest, report.record.as_ref()),
            output.display(),
            human::count(report.blobs_downloaded, "blob", "blobs"),
            human::bytes(report.bytes_downloaded),
            report.blobs_present,
            human::bytes(report.bytes_present),
        );
        if report.blobs_resumed > 0 {
            line.push_str(&format!(
                ", {} fetched by a pull cut short before ({})",
                report.blobs_resumed,
                human::bytes(report.bytes_resumed)
            ));
        }
        if let Some(n) = bundle_bytes {
            line.push_str(&format!("; bundle of {}", human::bytes(n)));
        }
        match &snapshot {
            Some(Some(s)) => line.push_str(&format!(
                "; snapshot {} ({}, {}{})",
                s.short_id(),
                s.harness,
                human::count(s.sessions, "session", "sessions"),
                backed_up
                    .as_deref()
                    .map(|t| format!(", backed up {t}"))
                    .unwrap_or_default()
            )),
            Some(None) => line.push_str(&match &already_in {
                Some(s) => format!(
                    "; nothing new: snapshot {} holds this content",
                    s.short_id()
                ),
                None => "; nothing new: the repository holds this content".to_owned(),
            }),
            None => {}
        }
        crate::outln!("{line}");
        if let Some(before) = replaced {
            // Said `-q` or not, as a push says it: a name now names something else.
            bar.println(format!(
                "note: {} named {before} in {} before this pull; that manifest and its blobs \
                 stay in the layout, unnamed",
                reference.tag().unwrap_or_default(),
                output.display()
            ));
        }
        if let (Some(e), false) = (&earlier_series, args.common.quiet) {
            bar.println(format!(
                "note: earlier pulls of {} went into one series for every tag ({}, newest \
                 snapshot {}); this pull begins the series of its tag. The older one is kept \
                 until `asp forget --snapshot {}` lets it go",
                e.home
                    .trim_start_matches(asp_repo::snapshot::PULLED_HOME_PREFIX),
                e.home,
                e.short_id(),
                e.short_id()
            ));
        }
        if let (Some(Some(s)), false) = (&snapshot, args.common.quiet) {
            // By its id: `latest` of a harness is the newest in the home restored into
            // first, which on a machine that backs up into this repository too is its own.
            bar.println(format!(
                "to restore it: asp restore --snapshot {} --to {}{}",
                s.short_id(),
                s.harness,
                args.repo
                    .as_ref()
                    .map(|r| format!(" --repo {}", shell_word(&r.display().to_string())))
                    .unwrap_or_default()
            ));
        }
        if matches!(snapshot, Some(Some(_))) && report.record.is_none() && !args.common.quiet {
            bar.println(format!(
                "note: {} names a state without a snapshot record (a pushed bundle, or a state \
                 pulled by its own digest): a restore of it gives the sessions and the rest of \
                 the state, not the harness's own configuration files (settings, rules, prompt \
                 history), which only a snapshot record carries",
                args.reference
            ));
        }
    }
    Ok(Exit::Ok)
}

/// What a push or pull names, as a reference to give `asp pull` again: `REF@DIGEST` of what
/// the tag names (the snapshot record when there is one, with the state it is about after it:
/// pulling the state's digest alone leaves the record, and the configuration, behind).
fn named_digest(
    r: &Reference,
    state: &asp_format::digest::Digest,
    record: Option<&asp_format::digest::Digest>,
) -> String {
    match record {
        Some(record) => format!(
            "{}@{record} (a snapshot record, of state {state})",
            strip_tag_digest(r)
        ),
        None => format!("{}@{state}", strip_tag_digest(r)),
    }
}

/// `registry/repository[:tag]` without a digest (the digest is printed after it).
fn strip_tag_digest(r: &Reference) -> String {
    match r.tag() {
        Some(t) => format!("{}/{}:{t}", r.registry(), r.repository()),
        None => format!("{}/{}", r.registry(), r.repository()),
    }
}
