//! `asp-pack` against what a person would type instead, on realistic generated homes.
//!
//! Run: `cargo bench -p asp-cli --bench stores` (options after `--`):
//! - `--harness claude-code` (default), `codex` or `gemini`: whose homes to generate and pack;
//! - `--sizes 64M,256M,1G` (default): which stores to build and measure;
//! - `--runs N` (default 3): runs per tool; the median is shown;
//! - `--keep`: keep the bundles and archives next to the stores;
//! - `--one` (Claude Code): each size is one session of that size (and its subagents), not a
//!   home of many: what a pack holds in memory whatever the size of a session.
//!
//! Each store is a Claude Code home made by [`claude::generate`], a Codex home made by
//! [`codex::generate`] or a Gemini CLI home made by [`gemini::generate`] (deterministic),
//! built once under the target directory and reused. For each store, the tools run alternately, so load
//! from elsewhere on the machine hits them alike:
//! `asp-pack --from HARNESS`, `zip -q -r -6 .claude` and `tar -cf - .claude | zstd -3` (`.codex`
//! for Codex, `.gemini` for Gemini CLI);
//! then `asp verify`, and one session by id (`asp export --session`, `asp-unpack --session
//! --to-dir`). Wall time and peak RSS come from `/usr/bin/time`. A `restic backup` column is
//! added when `ASP_BENCH_RESTIC=1` and `restic` is on the PATH (issue 13; Claude Code only).
//!
//! Not a test: nothing here fails on slowness. It does fail when the Claude Code converter
//! reports anything about a generated store, since the stores are meant to be read whole.

mod claude;
mod clock;
mod codex;
mod gemini;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Whose homes are generated and packed, and how.
#[derive(Debug)]
struct Harness {
    /// The converter's name, as `asp-pack --from` (and `--harness`) takes it.
    name: &'static str,
    /// The folder of the home that holds the store, what `zip` and `tar` archive.
    dot_dir: &'static str,
    /// The generator's version: bump it when a generator changes, so cached stores are rebuilt.
    generator: &'static str,
    /// How the stores' folders begin.
    prefix: &'static str,
    /// Generates a home of about `total` bytes, deterministic in the seed.
    generate: fn(home: &Path, total: u64, seed: u64) -> claude::Summary,
    /// The session "one session" means: the one nearest the median size.
    typical: fn(home: &Path) -> String,
}

const HARNESSES: [Harness; 3] = [
    Harness {
        name: "claude-code",
        dot_dir: ".claude",
        generator: "claude-3",
        prefix: "claude",
        generate: claude::generate,
        typical: typical_session,
    },
    Harness {
        name: "codex",
        dot_dir: ".codex",
        generator: "codex-2",
        prefix: "codex",
        generate: codex::generate,
        typical: typical_rollout,
    },
    Harness {
        name: "gemini",
        dot_dir: ".gemini",
        generator: "gemini-2",
        prefix: "gemini",
        generate: gemini::generate,
        typical: typical_chat,
    },
];

impl Harness {
    fn parse(s: &str) -> &'static Harness {
        HARNESSES
            .iter()
            .find(|h| h.name == s)
            .unwrap_or_else(|| panic!("--harness is claude-code, codex or gemini, not {s}"))
    }
}

#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    secs: f64,
    rss_kib: u64,
}

/// Runs `cmd` under `/usr/bin/time`, in `dir`, and returns wall time and peak RSS.
fn timed(dir: &Path, cmd: &[&str]) -> Sample {
    let report = tempfile::NamedTempFile::new().expect("temp file");
    let status = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%e %M")
        .arg("-o")
        .arg(report.path())
        .args(cmd)
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("run /usr/bin/time");
    assert!(status.success(), "{cmd:?} failed: {status}");
    let text = fs::read_to_string(report.path()).expect("time report");
    let last = text.lines().last().expect("a line");
    let mut parts = last.split_whitespace();
    Sample {
        secs: parts.next().and_then(|s| s.parse().ok()).expect("seconds"),
        rss_kib: parts.next().and_then(|s| s.parse().ok()).expect("kib"),
    }
}

fn median(mut v: Vec<Sample>) -> Sample {
    v.sort_by(|a, b| a.secs.total_cmp(&b.secs));
    let mut m = v[v.len() / 2];
    m.rss_kib = v.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    m
}

fn parse_size(s: &str) -> u64 {
    let (n, unit) = s.split_at(s.len() - 1);
    let n: u64 = n.parse().expect("a size like 64M or 1G");
    match unit {
        "M" => n << 20,
        "G" => n << 30,
        _ => panic!("sizes end in M or G"),
    }
}

fn size_of(path: &Path) -> u64 {
    fs::metadata(path).map(|m| m.len()).unwrap_or(0)
}

fn mib(b: u64) -> f64 {
    b as f64 / (1 << 20) as f64
}

fn du(dir: &Path) -> u64 {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| e.metadata().map(|m| m.len()).unwrap_or(0))
        .sum()
}

struct Store {
    harness: &'static Harness,
    label: String,
    home: PathBuf,
    session: String,
    bytes: u64,
    sessions: usize,
}

fn build(root: &Path, harness: &'static Harness, label: &str, total: u64, one: bool) -> Store {
    let (label, generate, generator) = match one {
        false => (
            label.to_owned(),
            harness.generate,
            harness.generator.to_owned(),
        ),
        true => {
            assert_eq!(
                harness.name, "claude-code",
                "--one makes Claude Code homes only"
            );
            let generate: fn(&Path, u64, u64) -> claude::Summary = claude::generate_one;
            (
                format!("one-{label}"),
                generate,
                format!("{}-one", harness.generator),
            )
        }
    };
    let home = root.join(format!("{}-{label}", harness.prefix));
    let marker = home.join(".generated");
    let want = format!("{generator} {total}");
    if fs::read_to_string(&marker)
        .ok()
        .as_deref()
        .map(str::lines)
        .and_then(|mut l| l.next())
        != Some(want.as_str())
    {
        let _ = fs::remove_dir_all(&home);
        fs::create_dir_all(&home).expect("store dir");
        eprintln!(
            "generating the {label} {} store in {}",
            harness.name,
            home.display()
        );
        let s = generate(&home, total, 0x5eed_0000 ^ total);
        fs::write(
            &marker,
            format!(
                "{want}\n{}\n{}\n",
                s.sample_session.unwrap_or_default(),
                s.sessions
            ),
        )
        .expect("marker");
    }
    let text = fs::read_to_string(&marker).expect("marker");
    let mut lines = text.lines().skip(1);
    let sample = lines.next().expect("session line").to_owned();
    let sessions = lines.next().and_then(|l| l.parse().ok()).unwrap_or(0);
    Store {
        harness,
        label,
        bytes: du(&home.join(harness.dot_dir)),
        // A home of one session: that one.
        session: match one {
            true => sample,
            false => (harness.typical)(&home),
        },
        home,
        sessions,
    }
}

/// A session with subagents whose transcript is nearest the median size (250 KB): what
/// "one session" means for the one-session figures.
fn typical_session(home: &Path) -> String {
    let mut best: Option<(u64, String)> = None;
    let mut buckets: Vec<_> = fs::read_dir(home.join(".claude/projects"))
        .expect("projects")
        .flatten()
        .map(|e| e.path())
        .collect();
    buckets.sort();
    for b in buckets {
        let mut entries: Vec<_> = fs::read_dir(&b)
            .expect("bucket")
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        for p in entries {
            if !p.join("subagents").is_dir() {
                continue;
            }
            let id = p.file_name().unwrap().to_string_lossy().into_owned();
            let size = size_of(&b.join(format!("{id}.jsonl")));
            let distance = size.abs_diff(250_000);
            if best.as_ref().is_none_or(|(d, _)| distance < *d) {
                best = Some((distance, id));
            }
        }
    }
    best.expect("a session with subagents").1
}

/// The Codex thread whose rollout is nearest the median size (250 KB): what "one session"
/// means for the one-session figures.
fn typical_rollout(home: &Path) -> String {
    let mut rollouts: Vec<(u64, String)> = walkdir::WalkDir::new(home.join(".codex/sessions"))
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| {
            let name = e.file_name().to_str()?.strip_suffix(".jsonl")?.to_owned();
            let id = name.get(name.len().checked_sub(36)?..)?.to_owned();
            Some((size_of(e.path()).abs_diff(250_000), id))
        })
        .collect();
    rollouts.sort();
    rollouts.into_iter().next().expect("a rollout").1
}

/// The Gemini CLI session whose chat is nearest the median size (250 KB): what "one session"
/// means for the one-session figures (its id is the chat's first line's `sessionId`).
fn typical_chat(home: &Path) -> String {
    let mut chats: Vec<(u64, PathBuf)> = walkdir::WalkDir::new(home.join(".gemini/tmp"))
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter(|e| e.file_name().to_string_lossy().starts_with("session-"))
        .map(|e| (size_of(e.path()).abs_diff(250_000), e.into_path()))
        .collect();
    chats.sort();
    let (_, chat) = chats.into_iter().next().expect("a chat");
    let text = fs::read_to_string(&chat).expect("the chat");
    let first: serde_json::Value =
        serde_json::from_str(text.lines().next().expect("a first line")).expect("JSON");
    first["sessionId"].as_str().expect("a sessionId").to_owned()
}

struct Row {
    label: String,
    bytes: u64,
    sessions: usize,
    pack: Sample,
    zip: Sample,
    tar: Sample,
    restic: Option<Sample>,
    bundle: u64,
    zip_size: u64,
    tar_size: u64,
    verify: Sample,
    export_one: Sample,
    unpack_one: Sample,
}

fn measure(store: &Store, runs: usize, out: &Path, restic: bool) -> Row {
    let asp = env!("CARGO_BIN_EXE_asp");
    let pack = env!("CARGO_BIN_EXE_asp-pack");
    let unpack = env!("CARGO_BIN_EXE_asp-unpack");
    fs::create_dir_all(out).expect("out dir");
    let name = format!("{}-{}", store.harness.prefix, store.label);
    let bundle = out.join(format!("{name}.aspstate"));
    let zip = out.join(format!("{name}.zip"));
    let tar = out.join(format!("{name}.tar.zst"));
    let from = store.harness.name;
    let dot = store.harness.dot_dir;
    let home = store.home.to_str().expect("UTF-8 path");

    // The converter must read every generated record without a complaint.
    let check = Command::new(pack)
        .args(["--from", from, "--home", home, "--kinds", "sessions", "-q"])
        .args(["--json", "--force", "-o"])
        .arg(&bundle)
        .output()
        .expect("run asp-pack");
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_slice(&check.stdout).expect("asp-pack --json prints JSON");
    let diags = summary["findings"].as_array().map_or(0, Vec::len);
    assert_eq!(diags, 0, "the converter reported: {}", summary["findings"]);

    let (mut p, mut z, mut t, mut r) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let restic_repo = out.join(format!("restic-{}", store.label));
    for _ in 0..runs {
        let _ = fs::remove_file(&bundle);
        p.push(timed(
            &store.home,
            &[
                pack,
                "--from",
                from,
                "--home",
                home,
                "-q",
                "-o",
                bundle.to_str().unwrap(),
            ],
        ));
        let _ = fs::remove_file(&zip);
        z.push(timed(
            &store.home,
            &["zip", "-q", "-r", "-6", zip.to_str().unwrap(), dot],
        ));
        let _ = fs::remove_file(&tar);
        let pipeline = format!("tar -cf - {dot} | zstd -3 -q -f -o {}", tar.display());
        t.push(timed(&store.home, &["sh", "-c", &pipeline]));
        if restic {
            // Issue 13's comparison: a fresh repository each run, no encryption password prompt.
            let _ = fs::remove_dir_all(&restic_repo);
            let repo = restic_repo.to_str().unwrap();
            let init = format!("RESTIC_PASSWORD=bench restic init -q -r {repo}");
            assert!(
                Command::new("sh")
                    .args(["-c", &init])
                    .status()
                    .unwrap()
                    .success()
            );
            let cmd = format!("RESTIC_PASSWORD=bench restic backup -q -r {repo} .claude");
            r.push(timed(&store.home, &["sh", "-c", &cmd]));
        }
    }
    let mut v = Vec::new();
    let (mut e, mut u) = (Vec::new(), Vec::new());
    let one = out.join("one-session");
    for _ in 0..runs {
        v.push(timed(out, &[asp, "verify", "-q", bundle.to_str().unwrap()]));
        e.push(timed(
            out,
            &[
                asp,
                "export",
                bundle.to_str().unwrap(),
                "--session",
                &store.session,
            ],
        ));
        let _ = fs::remove_dir_all(&one);
        u.push(timed(
            out,
            &[
                unpack,
                bundle.to_str().unwrap(),
                "--session",
                &store.session,
                "-q",
                "--to-dir",
                one.to_str().unwrap(),
            ],
        ));
    }
    Row {
        label: store.label.clone(),
        bytes: store.bytes,
        sessions: store.sessions,
        pack: median(p),
        zip: median(z),
        tar: median(t),
        restic: restic.then(|| median(r)),
        bundle: size_of(&bundle),
        zip_size: size_of(&zip),
        tar_size: size_of(&tar),
        verify: median(v),
        export_one: median(e),
        unpack_one: median(u),
    }
}

/// `asp backup` against `restic backup` of the same home (issue 13): full (a fresh repository
/// each), nothing changed, and 1% of sessions changed (a turn appended to 20 of 2,000), the two
/// tools alternating; repository sizes after the full backup and growth from the 1% change.
struct BackupRow {
    full: (Sample, Sample),
    unchanged: (Sample, Sample),
    changed: (Sample, Sample),
    size: (u64, u64),
    growth: (u64, u64),
    changed_bytes: u64,
    /// The changed transcripts each compressed alone by `zstd -3`: what issue 13 measures
    /// growth against ("at most 2x the compressed size of the changed sessions").
    changed_compressed: u64,
}

/// The session transcripts to change: every `n`th of the top-level ones, 1% of them.
fn transcripts(home: &Path) -> Vec<PathBuf> {
    let mut all: Vec<PathBuf> = walkdir::WalkDir::new(home.join(".claude/projects"))
        .min_depth(2)
        .max_depth(2)
        .into_iter()
        .flatten()
        .map(walkdir::DirEntry::into_path)
        .filter(|p| p.extension().is_some_and(|e| e == "jsonl"))
        .collect();
    all.sort();
    let step = (all.len() / 20).max(1);
    all.into_iter().step_by(step).take(20).collect()
}

/// Appends a turn to a transcript: its last record again under a new uuid.
fn append_turn(file: &Path, n: u64) -> u64 {
    let text = fs::read_to_string(file).expect("transcript");
    let last = text.lines().last().expect("a record");
    let mut again = last.to_owned();
    if let Some(at) = again.find("\"uuid\":\"") {
        let at = at + 8;
        again.replace_range(at..at + 36, &format!("00000000-0000-4000-8000-{n:012x}"));
    }
    again.push('\n');
    let mut f = fs::OpenOptions::new()
        .append(true)
        .open(file)
        .expect("open");
    std::io::Write::write_all(&mut f, again.as_bytes()).expect("append");
    again.len() as u64
}

fn measure_backup(store: &Store, runs: usize, out: &Path) -> BackupRow {
    let asp = env!("CARGO_BIN_EXE_asp");
    let home = store.home.to_str().expect("UTF-8 path");
    let (mut f, mut u, mut c) = (Vec::new(), Vec::new(), Vec::new());
    let (mut size, mut growth, mut changed_bytes, mut changed_compressed) = ((0, 0), (0, 0), 0, 0);
    let mut n = 0u64;
    // Every run backs up into repositories of its own, all removed at the end: deleting one
    // run's thousands of blob files just before the next run's full backup made ext4's inode
    // allocator (`find_inode_bit`, `recently_deleted`) the bottleneck of that backup (12-13.6 s
    // of wall time, 6 s of it system time, against 8.9 s into a file system that had not just
    // lost 5,000 files; `perf record` of the 1 GiB store), a cost of the deletion, not of asp.
    let repos = |run: usize| {
        (
            out.join(format!("asp-repo-{}-{run}", store.label)),
            out.join(format!("restic-repo-{}-{run}", store.label)),
        )
    };
    for run in 0..runs {
        let (asp_repo, restic_repo) = repos(run);
        let (ar, rr) = (asp_repo.to_str().unwrap(), restic_repo.to_str().unwrap());
        let asp_backup = [
            asp,
            "backup",
            "--from",
            "claude-code",
            "-q",
            "--home",
            home,
            "--repo",
            ar,
        ];
        let restic = format!("RESTIC_PASSWORD=bench restic backup -q -r {rr} .claude");
        let _ = fs::remove_dir_all(&asp_repo);
        let _ = fs::remove_dir_all(&restic_repo);
        let init = format!("RESTIC_PASSWORD=bench restic init -q -r {rr}");
        assert!(
            Command::new("sh")
                .args(["-c", &init])
                .status()
                .unwrap()
                .success()
        );
        let a = timed(&store.home, &asp_backup);
        let r = timed(&store.home, &["sh", "-c", &restic]);
        f.push((a, r));
        size = (du(&asp_repo), du(&restic_repo));
        let a = timed(&store.home, &asp_backup);
        let r = timed(&store.home, &["sh", "-c", &restic]);
        u.push((a, r));
        changed_bytes = 0;
        changed_compressed = 0;
        let mut undo = Vec::new();
        for t in transcripts(&store.home) {
            n += 1;
            let m = fs::metadata(&t).expect("transcript");
            undo.push((t.clone(), m.len(), m.modified().expect("mtime")));
            append_turn(&t, n);
            changed_bytes += fs::metadata(&t).map(|m| m.len()).unwrap_or(0);
            changed_compressed += zstd_size(&t);
        }
        let before = (du(&asp_repo), du(&restic_repo));
        let a = timed(&store.home, &asp_backup);
        let r = timed(&store.home, &["sh", "-c", &restic]);
        c.push((a, r));
        growth = (du(&asp_repo) - before.0, du(&restic_repo) - before.1);
        // The generated store is cached for other runs: give it back as it was.
        for (t, len, mtime) in undo {
            let f = fs::OpenOptions::new().write(true).open(&t).expect("open");
            f.set_len(len).expect("truncate");
            f.set_modified(mtime).expect("mtime");
        }
    }
    for run in 0..runs {
        let (a, r) = repos(run);
        let _ = fs::remove_dir_all(a);
        let _ = fs::remove_dir_all(r);
    }
    let pair = |v: Vec<(Sample, Sample)>| {
        (
            median(v.iter().map(|p| p.0).collect()),
            median(v.iter().map(|p| p.1).collect()),
        )
    };
    BackupRow {
        full: pair(f),
        unchanged: pair(u),
        changed: pair(c),
        size,
        growth,
        changed_bytes,
        changed_compressed,
    }
}

/// Bytes of `zstd -3` of one file, as a user would compress it alone.
fn zstd_size(file: &Path) -> u64 {
    let out = Command::new("zstd")
        .args(["-3", "-q", "-c"])
        .arg(file)
        .output()
        .expect("zstd runs");
    assert!(out.status.success(), "zstd -3 {}", file.display());
    out.stdout.len() as u64
}

fn print_backup(store: &Store, b: &BackupRow) {
    println!(
        "\n`asp backup` vs `restic backup`, {} ({} sessions; median wall time; ratio asp/restic):",
        store.label, store.sessions
    );
    println!("| | asp backup | restic backup | asp/restic | asp / asp full |");
    println!("|---|---|---|---|---|");
    for (what, (a, r)) in [
        ("full (new repository)", b.full),
        ("nothing changed", b.unchanged),
        ("1% of sessions changed (a turn appended to 20)", b.changed),
    ] {
        println!(
            "| {what} | {:.2} s | {:.2} s | {:.2}x | {:.0}% |",
            a.secs,
            r.secs,
            a.secs / r.secs,
            100.0 * a.secs / b.full.0.secs
        );
    }
    println!(
        "| repository after the full backup | {:.1} MiB | {:.1} MiB | {:.2}x | |",
        mib(b.size.0),
        mib(b.size.1),
        b.size.0 as f64 / b.size.1 as f64
    );
    println!(
        "| growth from the 1% change (the 20 transcripts: {:.1} MiB raw, {:.2} MiB by zstd -3 each) | {:.2} MiB ({:.2}x the zstd) | {:.2} MiB ({:.2}x) | | |",
        mib(b.changed_bytes),
        mib(b.changed_compressed),
        mib(b.growth.0),
        b.growth.0 as f64 / b.changed_compressed.max(1) as f64,
        mib(b.growth.1),
        b.growth.1 as f64 / b.changed_compressed.max(1) as f64
    );
    println!(
        "peak RSS: asp full {:.0} MiB, restic full {:.0} MiB",
        b.full.0.rss_kib as f64 / 1024.0,
        b.full.1.rss_kib as f64 / 1024.0
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let value = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let sizes = value("--sizes").unwrap_or_else(|| "64M,256M,1G".to_owned());
    let harness = Harness::parse(value("--harness").as_deref().unwrap_or("claude-code"));
    let runs: usize = value("--runs").and_then(|r| r.parse().ok()).unwrap_or(3);
    let keep = args.iter().any(|a| a == "--keep");
    let one = args.iter().any(|a| a == "--one");
    let restic = harness.name == "claude-code"
        && std::env::var("ASP_BENCH_RESTIC").as_deref() == Ok("1")
        && Command::new("restic").arg("version").output().is_ok();

    let root = Path::new(env!("CARGO_TARGET_TMPDIR")).join("stores");
    let out = root.join("out");
    let stores: Vec<Store> = sizes
        .split(',')
        .map(|s| build(&root, harness, s, parse_size(s), one))
        .collect();
    if args.iter().any(|a| a == "--generate-only") {
        for s in &stores {
            println!(
                "{}: {} sessions, {:.1} MiB in {}",
                s.label,
                s.sessions,
                mib(s.bytes),
                s.home.display()
            );
        }
        return;
    }
    let load = fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "asp-pack --from {} vs zip -6 vs tar|zstd -3; median of {runs} alternating runs; load average before: {}",
        harness.name,
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    let mut rows = Vec::new();
    let backup_only = args.iter().any(|a| a == "--backup-only");
    for s in stores.iter().filter(|_| !backup_only) {
        eprintln!(
            "measuring {} ({} sessions, {:.0} MiB)",
            s.label,
            s.sessions,
            mib(s.bytes)
        );
        rows.push(measure(s, runs, &out, restic));
    }
    if !rows.is_empty() {
        println!();
        println!(
            "| store | sessions | asp-pack | zip -r -6 | tar \\| zstd -3 | pack/tar | pack/zip | bundle | zip | tar.zst | bundle/tar.zst | verify | verify/tar | one session: export | one session: unpack | peak RSS pack / verify |{}",
            if restic { " restic |" } else { "" }
        );
        println!(
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|{}",
            if restic { "---|" } else { "" }
        );
        for r in &rows {
            println!(
                "| {} ({:.0} MiB) | {} | {:.2} s | {:.2} s | {:.2} s | {:.2}x | {:.2}x | {:.1} MiB | {:.1} MiB | {:.1} MiB | {:.2}x | {:.2} s | {:.2}x | {:.0} ms | {:.0} ms | {:.0} / {:.0} MiB |{}",
                r.label,
                mib(r.bytes),
                r.sessions,
                r.pack.secs,
                r.zip.secs,
                r.tar.secs,
                r.pack.secs / r.tar.secs,
                r.pack.secs / r.zip.secs,
                mib(r.bundle),
                mib(r.zip_size),
                mib(r.tar_size),
                r.bundle as f64 / r.tar_size as f64,
                r.verify.secs,
                r.verify.secs / r.tar.secs,
                r.export_one.secs * 1000.0,
                r.unpack_one.secs * 1000.0,
                r.pack.rss_kib as f64 / 1024.0,
                r.verify.rss_kib as f64 / 1024.0,
                r.restic
                    .map_or(String::new(), |s| format!(" {:.2} s |", s.secs)),
            );
        }
        println!(
            "\n(times from /usr/bin/time, 10 ms resolution; peak RSS is the highest of the runs; the one-session times include process start)"
        );
    }
    if restic {
        for s in &stores {
            eprintln!("asp backup vs restic backup: {}", s.label);
            let b = measure_backup(s, runs, &out);
            print_backup(s, &b);
        }
    }
    if !keep {
        let _ = fs::remove_dir_all(&out);
    }
}
