//! What it would cost to compress a large session's update stream in windows, measured with
//! the writer's own compression (spec/aspstate.md §13.3, "Towards flat memory").
//!
//! Today a stream is one frame against its whole transcript (§4), so packing or reading a
//! 34 MB session holds the transcript, the stream and a 64 MiB window at once: peak memory
//! follows the largest session. In windows, the stream is cut into frames of `CHUNK` bytes,
//! and the frame of stream bytes `[s, e)` is compressed against the transcript's bytes
//! `[s' - MARGIN, e' + MARGIN)` only, so what a frame needs is bounded whatever the session:
//! - `same offsets`: `s' = s`, `e' = e`, which a writer knows while the stream is written;
//! - `proportional`: `s' = s * T / S` (transcript and stream sizes), which needs the stream's
//!   size first.
//!
//! For every session of BUNDLE whose stream is compressed against a transcript of more than
//! `BIG` bytes (default 8 MiB), this prints the stream layers today and in windows. Smaller
//! sessions stay as they are. Then, for the same transcripts, their own layer with a window
//! the size of the body (today) against windows of 2^22 to 2^24 bytes, which is what
//! compressing a transcript as it streams would cost.
//!
//! ```text
//! cargo run --release -p asp-format --example windowed_streams -- BUNDLE [CHUNK [MARGIN [BIG]]]
//! ```
//! with BUNDLE packed from a generated store (`cargo bench -p asp-cli --bench stores --
//! --generate-only` makes `target/tmp/stores/claude-{64M,256M,1G}`).

mod pairs;

use std::path::Path;
use std::time::Instant;

use asp_format::bundle::Bundle;
use asp_format::bundle::layers::compress;
use zstd::zstd_safe::{CCtx, CParameter};

fn main() -> Result<(), pairs::Error> {
    let mut args = std::env::args().skip(1);
    let Some(bundle) = args.next() else {
        eprintln!("usage: windowed_streams BUNDLE [CHUNK [MARGIN [BIG]]]");
        std::process::exit(2);
    };
    let chunk: usize = args.next().map_or(Ok(4 << 20), |s| s.parse())?;
    let margin: usize = args.next().map_or(Ok(4 << 20), |s| s.parse())?;
    let big: usize = args.next().map_or(Ok(8 << 20), |s| s.parse())?;

    let bundle = Bundle::open(Path::new(&bundle))?;
    let pairs = pairs::stream_pairs(&bundle, |size| size as usize > big)?;
    let streams: usize = pairs.iter().map(|p| p.0.len()).sum();
    let transcripts: usize = pairs.iter().map(|p| p.1.len()).sum();
    println!(
        "{} sessions with a transcript over {big} bytes: streams {streams} bytes, transcripts {transcripts}",
        pairs.len()
    );
    println!("frames of {chunk} bytes, margin {margin}");
    println!("| stream layers | bytes | time | largest frame's window |");
    println!("|---|---|---|---|");

    let t = Instant::now();
    let mut whole = 0;
    for (stream, transcript) in &pairs {
        whole += compress(stream, Some(transcript), 3)?.len();
    }
    let most = pairs
        .iter()
        .map(|p| p.0.len() + p.1.len())
        .max()
        .unwrap_or(0);
    row("one frame, whole transcript (today)", whole, t, most);

    for proportional in [false, true] {
        let t = Instant::now();
        let mut total = 0;
        let mut most = 0;
        for (stream, transcript) in &pairs {
            let scale = |at: usize| match proportional {
                true => (at as u128 * transcript.len() as u128 / stream.len() as u128) as usize,
                false => at.min(transcript.len()),
            };
            let mut start = 0;
            while start < stream.len() {
                let end = (start + chunk).min(stream.len());
                let from = scale(start).saturating_sub(margin);
                let to = (scale(end) + margin).min(transcript.len());
                let window = &transcript[from.min(to)..to];
                total += compress(&stream[start..end], Some(window), 3)?.len();
                most = most.max(end - start + window.len());
                start = end;
            }
        }
        let name = match proportional {
            false => "windows, same offsets",
            true => "windows, proportional",
        };
        row(name, total, t, most);
    }

    println!();
    println!("| transcripts' own layers | bytes | time |");
    println!("|---|---|---|");
    for window_log in [0, 22, 23, 24] {
        let t = Instant::now();
        let mut total = 0;
        for (_, transcript) in &pairs {
            total += match window_log {
                0 => compress(transcript, None, 3)?.len(),
                w => bounded(transcript, w)?.len(),
            };
        }
        let name = match window_log {
            0 => "window the size of the body (today)".to_owned(),
            w => format!("window 2^{w}"),
        };
        println!("| {name} | {total} | {:.2} s |", t.elapsed().as_secs_f64());
    }
    Ok(())
}

fn row(name: &str, bytes: usize, since: Instant, window: usize) {
    println!(
        "| {name} | {bytes} | {:.2} s | {:.1} MiB |",
        since.elapsed().as_secs_f64(),
        window as f64 / (1 << 20) as f64
    );
}

/// `src` as the writer compresses a large body without a dictionary, with the window bounded
/// to `2^window_log` bytes instead of the body's size.
fn bounded(src: &[u8], window_log: u32) -> Result<Vec<u8>, pairs::Error> {
    let err = |code: usize| zstd::zstd_safe::get_error_name(code).to_owned();
    let mut cctx = CCtx::create();
    cctx.set_parameter(CParameter::CompressionLevel(3))
        .map_err(err)?;
    cctx.set_parameter(CParameter::ContentSizeFlag(true))
        .map_err(err)?;
    cctx.set_parameter(CParameter::ChecksumFlag(false))
        .map_err(err)?;
    cctx.set_parameter(CParameter::WindowLog(window_log))
        .map_err(err)?;
    cctx.set_parameter(CParameter::EnableLongDistanceMatching(true))
        .map_err(err)?;
    let mut out = Vec::with_capacity(src.len());
    cctx.compress2(&mut out, src).map_err(err)?;
    Ok(out)
}
