//! What the size of zstd's hash table and long-distance matching cost and give on update
//! streams compressed against their transcript (spec/aspstate.md §4, §13.3).
//!
//! Every update stream of BUNDLE whose transcript is at most 8 MiB (the larger ones go in
//! windows, §4.2) is compressed against its transcript as the writer's `against_prefix` does
//! it (level 3, a window over both, `deterministicRefPrefix`, a table of 2^20 positions, no
//! long-distance matching), and with other tables, with and without long-distance matching.
//! One core, in this process:
//!
//! ```text
//! cargo run --release -p asp-format --example stream_params -- BUNDLE
//! ```
//! with BUNDLE packed from a generated store (`cargo bench -p asp-cli --bench stores` makes
//! `target/tmp/stores/{claude,codex,gemini}-{64M,256M,1G}`).

mod pairs;

use std::path::Path;
use std::time::Instant;

use asp_format::bundle::Bundle;
use asp_format::bundle::layers::window_log;
use pairs::Error;
use zstd::zstd_safe::{CCtx, CParameter};

/// The size of `src` in one frame against `prefix` at level 3, with `hash_log` (0: the
/// level's own), with long-distance matching or without.
fn compressed(
    src: &[u8],
    prefix: &[u8],
    level: i32,
    hash_log: u32,
    ldm: bool,
) -> Result<usize, Error> {
    let err = |code: usize| zstd::zstd_safe::get_error_name(code).to_owned();
    let mut cctx = CCtx::create();
    let mut set = |p: CParameter| cctx.set_parameter(p).map(|_| ()).map_err(err);
    set(CParameter::CompressionLevel(level))?;
    set(CParameter::ContentSizeFlag(true))?;
    set(CParameter::ChecksumFlag(false))?;
    set(CParameter::WindowLog(window_log(prefix.len(), src.len())))?;
    set(CParameter::EnableLongDistanceMatching(ldm))?;
    set(CParameter::DeterministicRefPrefix(true))?;
    if hash_log > 0 {
        set(CParameter::HashLog(hash_log))?;
    }
    cctx.ref_prefix(prefix).map_err(err)?;
    let mut out = Vec::with_capacity(zstd::zstd_safe::compress_bound(src.len()));
    cctx.compress2(&mut out, src).map_err(err)?;
    Ok(out.len())
}

fn main() -> Result<(), Error> {
    let Some(bundle) = std::env::args().nth(1) else {
        eprintln!("usage: stream_params BUNDLE");
        std::process::exit(2);
    };
    let bundle = Bundle::open(Path::new(&bundle))?;
    let pairs = pairs::stream_pairs(&bundle, |size| size <= 8 << 20)?;
    let streams: usize = pairs.iter().map(|p| p.0.len()).sum();
    let transcripts: usize = pairs.iter().map(|p| p.1.len()).sum();
    println!(
        "{} update streams against their transcript: streams {streams} bytes, transcripts {transcripts}",
        pairs.len()
    );
    println!("| update streams | bytes | time |");
    println!("|---|---|---|");
    for (name, level, hash_log, ldm) in [
        ("level 3's own table (2^17)", 3, 0, false),
        ("2^19", 3, 19, false),
        ("2^20 (the writer's)", 3, 20, false),
        ("2^21", 3, 21, false),
        ("2^17, long-distance matching", 3, 0, true),
        ("2^19, long-distance matching (before)", 3, 19, true),
        ("2^20, long-distance matching", 3, 20, true),
        ("level 1, its own table", 1, 0, false),
        ("level 1, 2^20", 1, 20, false),
        ("level 1, 2^19", 1, 19, false),
        ("level 2, 2^20", 2, 20, false),
        ("level -1, 2^20", -1, 20, false),
        ("level -3, 2^20", -3, 20, false),
    ] {
        let t = Instant::now();
        let mut total = 0;
        for (stream, transcript) in &pairs {
            total += compressed(stream, transcript, level, hash_log, ldm)?;
        }
        println!("| {name} | {total} | {:.2} s |", t.elapsed().as_secs_f64());
    }
    Ok(())
}
