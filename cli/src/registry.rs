//! `asp push` and `asp pull`: an OCI image layout to and from a registry.
//!
//! The layout forms (`--layout DIR`) are the groundwork; the snapshot repository and bundle
//! forms (`asp push [--repo DIR] [SNAPSHOT|latest] REF`, `asp push FILE.aspstate REF`,
//! `asp pull REF --repo DIR | -o FILE.aspstate`) will be thin layers over the same calls: a
//! source of "manifest bytes + blobs by digest" for a push, a [`PullSink`] for a pull.

use std::io::Read;
use std::path::PathBuf;

use asp_registry::credentials::Lookup;
use asp_registry::layout::{Layout, LayoutSink};
use asp_registry::manifest::Limits;
use asp_registry::remotes::Remotes;
use asp_registry::secret::Secret;
use asp_registry::{
    Client, ClientOptions, Error, PullOptions, PullSink, PushOptions, Reference, pull, push,
};
use clap::{Args, Parser};

use crate::args::Common;
use crate::exit::{Context, EXIT_CODES_HELP, Exit, Failure, Result};
use crate::human;
use crate::progress::TransferBar;

const AUTH_HELP: &str = "\
Credentials, first found wins: --username with --password-stdin; ASP_REGISTRY_USERNAME and
ASP_REGISTRY_PASSWORD; docker's config.json ($DOCKER_CONFIG or ~/.docker): credHelpers,
credsStore (docker-credential-<helper> get), auths (auth, identitytoken). They are offered
only when the registry asks (basic auth, or the token flow), and never printed.

HTTPS always, except to a registry on this machine (localhost, 127.0.0.0/8, ::1), which may
answer plain HTTP, or with --insecure.";

/// How to reach and log in to a registry.
#[derive(Debug, Clone, Args)]
pub struct RegistryArgs {
    /// Log in as USER; the password (or token) is read from standard input
    #[arg(long, short = 'u', value_name = "USER", requires = "password_stdin")]
    pub username: Option<String>,

    /// Read the password for --username from standard input
    #[arg(long, requires = "username")]
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
}

/// Push an asp state artifact from an OCI image layout to a registry
#[derive(Debug, Clone, Parser)]
#[command(after_help = format!("\
Uploads only what the registry lacks: every blob is checked with HEAD first, blobs another
repository of the same registry holds are mounted from it (--from, or the repository last
pushed to or pulled from), the manifest goes last. A push cut off halfway skips, when run
again, what already arrived.

{AUTH_HELP}

Examples:
  asp push --layout ./state localhost:5000/me/agent-state:laptop
  echo \"$TOKEN\" | asp push --layout ./state -u me --password-stdin ghcr.io/me/agent-state:v1 --json

{EXIT_CODES_HELP}"))]
pub struct PushArgs {
    /// The OCI image layout directory holding the artifact
    #[arg(long, value_name = "DIR")]
    pub layout: PathBuf,

    /// Which manifest of the layout: its name (org.opencontainers.image.ref.name) or its
    /// digest [default: the one named like REF's tag, else the only one]
    #[arg(long, value_name = "NAME|DIGEST")]
    pub manifest: Option<String>,

    /// Where to: host[:port]/name[:tag|@sha256:<hex>]
    #[arg(value_name = "REF")]
    pub reference: String,

    /// Mount blobs from this repository of the same registry instead of uploading them
    #[arg(long, value_name = "REPOSITORY")]
    pub from: Option<String>,

    #[command(flatten)]
    pub registry: RegistryArgs,

    #[command(flatten)]
    pub common: Common,
}

/// Pull an asp state artifact from a registry into an OCI image layout
#[derive(Debug, Clone, Parser)]
#[command(after_help = format!("\
Treats what the registry sends as hostile: the manifest is refused over 4 MiB or if it is
not an asp state artifact; every blob's size is checked before it is read and its sha256
after; nothing is written into DIR unless every blob verified. Blobs DIR already holds are
not downloaded. DIR is created if it does not exist.

{AUTH_HELP}

Examples:
  asp pull localhost:5000/me/agent-state:laptop --layout ./state
  asp pull ghcr.io/me/agent-state@sha256:<hex> --layout ./state --json

{EXIT_CODES_HELP}"))]
pub struct PullArgs {
    /// What to pull: host[:port]/name[:tag|@sha256:<hex>]
    #[arg(value_name = "REF")]
    pub reference: String,

    /// The OCI image layout directory to pull into (created if missing)
    #[arg(long, value_name = "DIR")]
    pub layout: PathBuf,

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
        let user = args.username.clone().expect("clap requires --username");
        Some((user, Secret::new(password)))
    } else {
        None
    };
    let found = Lookup::new(explicit)?.find(reference.registry())?;
    for note in &found.notes {
        bar.println(format!("note: {note}"));
    }
    Ok(Client::connect(
        reference,
        ClientOptions {
            insecure: args.insecure,
            credentials: found.credentials,
            ca_file: args.ca_file.clone(),
            ..ClientOptions::default()
        },
    )?)
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

pub fn run_push(args: PushArgs) -> Result<Exit> {
    let reference = parse_reference(&args.reference)?;
    let layout = Layout::open(&args.layout)?;
    let manifest = layout.select(args.manifest.as_deref(), reference.tag())?;
    let bytes = layout.read_manifest(&manifest, &Limits::default())?;
    let bar = TransferBar::new(args.common.quiet, "push");
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
    let result = push(&client, &reference, &bytes, &layout, &opts, &bar);
    bar.clear();
    let report = result?;
    remember(&reference, &bar);
    if args.common.json {
        println!(
            "{}",
            serde_json::to_string(&report).expect("a report serialises")
        );
    } else {
        let mut line = format!(
            "pushed {}@{}: {} uploaded ({}), {} already there ({})",
            strip_tag_digest(&reference),
            report.digest,
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
        println!("{line}");
    }
    Ok(Exit::Ok)
}

pub fn run_pull(args: PullArgs) -> Result<Exit> {
    let reference = parse_reference(&args.reference)?;
    let sink = LayoutSink::new(&args.layout)?;
    // Fail early on a destination that cannot be staged in.
    sink.staging_parent()?;
    let bar = TransferBar::new(args.common.quiet, "pull");
    let client = connect(&reference, &args.registry, &bar)?;
    let opts = PullOptions {
        jobs: usize::from(args.registry.jobs),
        ..PullOptions::default()
    };
    let result = pull(&client, &reference, &sink, &opts, &bar);
    bar.clear();
    let report = result?;
    remember(&reference, &bar);
    if args.common.json {
        println!(
            "{}",
            serde_json::to_string(&report).expect("a report serialises")
        );
    } else {
        println!(
            "pulled {}@{} into {}: {} downloaded ({}), {} already there ({})",
            strip_tag_digest(&reference),
            report.digest,
            args.layout.display(),
            human::count(report.blobs_downloaded, "blob", "blobs"),
            human::bytes(report.bytes_downloaded),
            report.blobs_present,
            human::bytes(report.bytes_present),
        );
    }
    Ok(Exit::Ok)
}

/// `registry/repository[:tag]` without a digest (the digest is printed after it).
fn strip_tag_digest(r: &Reference) -> String {
    match r.tag() {
        Some(t) => format!("{}/{}:{t}", r.registry(), r.repository()),
        None => format!("{}/{}", r.registry(), r.repository()),
    }
}
