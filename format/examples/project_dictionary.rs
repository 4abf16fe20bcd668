//! What a dictionary shared by the sessions of a project would save in a bundle, measured
//! with the writer's own compression (spec/aspstate.md §13.1, "the gap to `tar | zstd`").
//!
//! For each project of a Claude Code home (`.claude/projects/<project>/`), every native
//! transcript of the project (its sessions' and their subagents') is compressed twice:
//! - as `asp-pack` stores it today: [`compress`] without a dictionary (level 3; over 2 MiB a
//!   window the size of the body and long-distance matching);
//! - against the project's dictionary: the first `LEN` bytes (default 1 MiB) of the top-level
//!   transcript of at least `MIN` bytes (default `LEN`) with the least session id (all of it
//!   when shorter than `LEN`), prepared once (zstd's
//!   `CDict`, level 3) and referenced by every frame of the project, with the same parameters
//!   otherwise. The dictionary is a body of its own, so its layer (compressed alone) is
//!   counted too. A project without such a transcript keeps today's layers.
//!
//! Update streams are left out: they are compressed against their own transcript either way.
//!
//! ```text
//! cargo run --release -p asp-format --example project_dictionary -- HOME [LEN [MIN]]
//! ```
//! with HOME a generated store (`cargo bench -p asp-cli --bench stores -- --generate-only`
//! makes `target/tmp/stores/claude-{64M,256M,1G}`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use asp_format::bundle::layers::{compress, compress_prepared};
use zstd::zstd_safe::CDict;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(home) = args.next() else {
        eprintln!("usage: project_dictionary HOME [LEN [MIN]]");
        std::process::exit(2);
    };
    let len: usize = args.next().map_or(Ok(1 << 20), |s| s.parse())?;
    let min: usize = args.next().map_or(Ok(len), |s| s.parse())?;
    let root = Path::new(&home).join(".claude/projects");
    let mut projects = sorted_entries(&root)?;
    projects.retain(|p| p.is_dir());

    let mut totals = Totals::default();
    for project in &projects {
        let mut files = Vec::new();
        transcripts(project, &mut files)?;
        let bodies = files
            .iter()
            .map(std::fs::read)
            .collect::<Result<Vec<_>, _>>()?;
        // The dictionary's transcript: top-level (directly in the project), long enough, the
        // least session id (file stem).
        let source = files
            .iter()
            .zip(&bodies)
            .filter(|(f, b)| f.parent() == Some(project.as_path()) && b.len() >= min)
            .min_by(|(a, _), (b, _)| a.file_stem().cmp(&b.file_stem()))
            .map(|(_, b)| &b[..len.min(b.len())]);

        let t = Instant::now();
        for b in &bodies {
            totals.today += compress(b, None, 3)?.len();
        }
        totals.today_time += t.elapsed();

        let t = Instant::now();
        match source {
            Some(dictionary) => {
                let prepared = CDict::create(dictionary, 3);
                totals.dictionaries += compress(dictionary, None, 3)?.len();
                totals.with_dictionary += bodies
                    .iter()
                    .map(|b| against(b, &prepared))
                    .sum::<Result<usize, _>>()?;
                totals.projects_with += 1;
            }
            None => {
                for b in &bodies {
                    totals.with_dictionary += compress(b, None, 3)?.len();
                }
            }
        }
        totals.with_time += t.elapsed();
        totals.transcripts += bodies.len();
        totals.bytes += bodies.iter().map(Vec::len).sum::<usize>();
    }

    let mb = |n: usize| n as f64 / 1e6;
    println!(
        "{} projects ({} with a dictionary of {len} bytes), {} transcripts, {:.2} MB",
        projects.len(),
        totals.projects_with,
        totals.transcripts,
        mb(totals.bytes)
    );
    println!(
        "today:              {:>8.2} MB  ({:.2} s)",
        mb(totals.today),
        totals.today_time.as_secs_f64()
    );
    let proposed = totals.with_dictionary + totals.dictionaries;
    println!(
        "project dictionary: {:>8.2} MB  ({:.2} s): {:.2} MB of transcripts and {:.2} MB of dictionaries",
        mb(proposed),
        totals.with_time.as_secs_f64(),
        mb(totals.with_dictionary),
        mb(totals.dictionaries)
    );
    println!(
        "saved:              {:>8.2} MB  ({:.1} %)",
        mb(totals.today) - mb(proposed),
        100.0 * (1.0 - proposed as f64 / totals.today as f64)
    );
    Ok(())
}

#[derive(Default)]
struct Totals {
    projects_with: usize,
    transcripts: usize,
    bytes: usize,
    today: usize,
    today_time: Duration,
    with_dictionary: usize,
    dictionaries: usize,
    with_time: Duration,
}

/// One frame of `body` against the prepared dictionary, as the writer makes it (layout 4).
fn against(body: &[u8], dictionary: &CDict<'_>) -> Result<usize, std::io::Error> {
    Ok(compress_prepared(body, dictionary, 3)?.len())
}

/// Every `.jsonl` under `dir`, in path order (a project's transcripts, then its sessions'
/// subagent directories).
fn transcripts(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    for p in sorted_entries(dir)? {
        if p.is_dir() {
            transcripts(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "jsonl") {
            out.push(p);
        }
    }
    Ok(())
}

fn sorted_entries(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut v = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<Vec<_>, _>>()?;
    v.sort();
    Ok(v)
}
