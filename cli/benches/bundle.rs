//! Throughput and peak memory of packing, verifying and unpacking, on generated stores.
//!
//! Run: `cargo bench -p asp-cli --bench bundle` (add `-- --large` for the 1 GiB case).
//! Each case generates a state directory of N sessions × S bytes of ACP update lines on disk
//! (the mix of a real session: prompts, bursts of short agent chunks, tool calls with long
//! results, usage; the text is cut from Rust and Markdown sources), then measures, in this process: `dir::read` into a `LayerStore` + `bundle::write_layers_file` (pack, layout 2),
//! `verify_file` (every blob hashed), and `Bundle::check_data` + `dir::write` (unpack). Peak
//! memory is the resident-set high-water mark (`VmHWM`), reset before each phase through
//! `/proc/self/clear_refs` on Linux; it should not grow with N or S.

use std::fs;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use asp_convert::dir;
use asp_format::KindSet;
use asp_format::bundle::layers::{LayerOptions, LayerStore};
use asp_format::bundle::{self, Bundle, Limits, Options2};
use asp_format::progress::Quiet;

/// Real text to cut messages from: Rust and Markdown sources of the crates in cargo's own
/// registry (present wherever this bench builds), up to 16 MiB. Made-up text from a small
/// vocabulary would be far more repetitive than conversations are, and Deflate's match search
/// slows down badly on it.
fn corpus() -> Vec<String> {
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .expect("CARGO_HOME or HOME");
    let mut out = Vec::new();
    let mut total = 0;
    let Ok(registries) = fs::read_dir(cargo_home.join("registry/src")) else {
        panic!("no cargo registry sources under {}", cargo_home.display());
    };
    let mut stack: Vec<std::path::PathBuf> = registries.flatten().map(|e| e.path()).collect();
    stack.sort();
    while let Some(p) = stack.pop() {
        if total > 16 << 20 {
            break;
        }
        if p.is_dir() {
            let mut children: Vec<_> = fs::read_dir(&p)
                .into_iter()
                .flatten()
                .flatten()
                .map(|e| e.path())
                .collect();
            children.sort();
            stack.extend(children);
        } else if matches!(p.extension().and_then(|e| e.to_str()), Some("rs" | "md"))
            && let Ok(t) = fs::read_to_string(&p)
        {
            total += t.len();
            out.push(t);
        }
    }
    assert!(!out.is_empty(), "no .rs or .md files in the cargo registry");
    out
}

/// A tiny xorshift generator: deterministic data without a dependency.
struct Rng<'a> {
    state: u64,
    corpus: &'a [String],
}

impl Rng<'_> {
    fn next(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    /// About `n` words of real text, escaped for a JSON string.
    fn words(&mut self, n: usize) -> String {
        let doc = &self.corpus[(self.next() % self.corpus.len() as u64) as usize];
        let want = n * 6;
        let mut start = (self.next() % doc.len().max(1) as u64) as usize;
        while !doc.is_char_boundary(start) {
            start -= 1;
        }
        let mut end = (start + want).min(doc.len());
        while !doc.is_char_boundary(end) {
            end -= 1;
        }
        let slice = &doc[start..end];
        let quoted = serde_json::to_string(slice).expect("a string serialises");
        quoted[1..quoted.len() - 1].to_owned()
    }
}

fn generate(root: &Path, sessions: usize, bytes_each: u64, seed: u64, corpus: &[String]) {
    let sdir = root.join("sessions");
    fs::create_dir_all(&sdir).unwrap();
    let mut rng = Rng {
        state: seed,
        corpus,
    };
    for i in 0..sessions {
        let id = format!("bench-{i:05}");
        fs::write(
            sdir.join(format!("{id}.json")),
            format!("{{\"id\":\"{id}\",\"title\":\"Session {i}\",\"harness\":\"claude-code\"}}\n"),
        )
        .unwrap();
        let mut w = BufWriter::new(fs::File::create(sdir.join(format!("{id}.jsonl"))).unwrap());
        let mut written = 0u64;
        let mut n = 0u64;
        while written < bytes_each {
            let line = match n % 6 {
                0 => format!(
                    r#"{{"sessionId":"{id}","update":{{"sessionUpdate":"user_message_chunk","content":{{"type":"text","text":"{}"}}}}}}"#,
                    rng.words(30)
                ),
                1 | 2 => format!(
                    r#"{{"sessionId":"{id}","update":{{"sessionUpdate":"agent_message_chunk","content":{{"type":"text","text":"{}"}}}}}}"#,
                    rng.words(8)
                ),
                3 => format!(
                    r#"{{"sessionId":"{id}","update":{{"sessionUpdate":"tool_call","toolCallId":"call_{n}","title":"Run cargo test","kind":"execute","status":"pending","rawInput":{{"command":"{}"}}}}}}"#,
                    rng.words(4)
                ),
                4 => format!(
                    r#"{{"sessionId":"{id}","update":{{"sessionUpdate":"tool_call_update","toolCallId":"call_{}","status":"completed","rawOutput":"{}"}}}}"#,
                    n - 1,
                    rng.words(120)
                ),
                _ => format!(
                    r#"{{"sessionId":"{id}","update":{{"sessionUpdate":"usage_update","used":{},"size":200000}}}}"#,
                    rng.next() % 200_000
                ),
            };
            w.write_all(line.as_bytes()).unwrap();
            w.write_all(b"\n").unwrap();
            written += line.len() as u64 + 1;
            n += 1;
        }
        w.flush().unwrap();
    }
}

/// Resets the peak-RSS mark (Linux); elsewhere the figure is the process's whole-life peak.
fn reset_peak() {
    let _ = fs::write("/proc/self/clear_refs", "5");
}

/// Peak resident set since the last reset, in MiB.
fn peak_mib() -> Option<f64> {
    let status = fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024.0)
}

fn phase<T>(name: &str, bytes: u64, f: impl FnOnce() -> T) -> T {
    reset_peak();
    let t = Instant::now();
    let out = f();
    let secs = t.elapsed().as_secs_f64();
    println!(
        "  {name:<8} {secs:>7.2} s  {:>7.1} MiB/s  peak RSS {}",
        bytes as f64 / (1 << 20) as f64 / secs,
        peak_mib().map_or("n/a".to_owned(), |m| format!("{m:.1} MiB"))
    );
    out
}

/// One generated store, on disk.
struct Case {
    work: tempfile::TempDir,
    sessions: usize,
    mib_each: u64,
}

fn prepare(sessions: usize, mib_each: u64, corpus: &[String]) -> Case {
    let work = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    generate(
        &work.path().join("src"),
        sessions,
        mib_each << 20,
        0x9e37_79b9_7f4a_7c15 ^ sessions as u64,
        corpus,
    );
    Case {
        work,
        sessions,
        mib_each,
    }
}

fn run(c: &Case) {
    let (sessions, mib_each) = (c.sessions, c.mib_each);
    let work = &c.work;
    let src = work.path().join("src");
    let total = sessions as u64 * (mib_each << 20);
    println!(
        "{sessions} sessions × {mib_each} MiB = {} MiB of update lines",
        total >> 20
    );
    let out = work.path().join("b.aspstate");
    let written = phase("pack", total, || {
        let staging = LayerStore::new_in(work.path(), LayerOptions::default()).unwrap();
        let state = dir::read(&src, KindSet::ALL, &staging, &Quiet).unwrap();
        let layers = staging.finish().unwrap();
        let opts = Options2 {
            zstd_documents: true,
            ..Options2::default()
        };
        bundle::write_layers_file(&out, &state, &layers, &opts, false, &Quiet).unwrap()
    });
    println!(
        "           bundle {:.1} MiB (ratio {:.1}:1)",
        written.size as f64 / (1 << 20) as f64,
        total as f64 / written.size as f64
    );
    phase("verify", total, || {
        let r = bundle::verify_file(&out, &Limits::default(), &Quiet).unwrap();
        assert!(r.is_ok());
    });
    phase("unpack", total, || {
        let b = Bundle::open(&out).unwrap();
        let state = b.manifest().state.clone();
        b.check_data(&state, &Quiet).unwrap();
        dir::write(&work.path().join("dst"), &state, &b, false, &Quiet).unwrap();
    });
}

fn main() {
    let large = std::env::args().any(|a| a == "--large");
    let mut shapes = vec![(40, 1), (400, 1), (1, 64)];
    if large {
        shapes.extend([(1, 1024), (4000, 1)]);
    }
    // Generate everything first and let the text corpus go, so the memory figures are the
    // phases' own.
    let corpus = corpus();
    let cases: Vec<Case> = shapes
        .iter()
        .map(|&(n, m)| prepare(n, m, &corpus))
        .collect();
    drop(corpus);
    for c in &cases {
        run(c);
    }
}
