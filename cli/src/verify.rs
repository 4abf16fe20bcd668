//! `asp verify`: check a bundle's structure and every blob's data.

use std::path::PathBuf;

use asp_format::bundle::{Limits, verify_file};
use clap::Parser;
use serde_json::json;

use crate::args::Common;
use crate::exit::Exit;
use crate::human;
use crate::progress::Bar;
use crate::stdio::Input;

/// Check a bundle: structure, then every blob's size and sha256
#[derive(Debug, Clone, Parser)]
#[command(after_help = "\
Checks the layout marker and its major version, the zip's structure (entry names, no
duplicates, no encrypted or symlink entries, local headers that agree with the directory,
nothing before the first entry or after the end record), sizes and counts against limits, that
the image manifest, the state manifest and the layer table parse and name every blob, and then
reads every blob and checks it: each layer's bytes, and each body, decoded, against its digest
(the blobs it counts are the bodies). Every bad entry is named; exit code 4 if any.

Prints the bundle's digest, its identity: the sha256 of its image manifest (of its
manifest.json in a layout 1 bundle), what a registry names it by.

Example:
  asp verify backup.aspstate && echo intact")]
pub struct VerifyArgs {
    /// The bundle (`-` for standard input)
    #[arg(value_name = "BUNDLE")]
    pub bundle: PathBuf,

    #[command(flatten)]
    pub common: Common,
}

pub fn run(args: VerifyArgs) -> crate::exit::Result<Exit> {
    let input = Input::open(&args.bundle)?;
    let bar = Bar::new(args.common.quiet);
    let report = match verify_file(input.path(), &Limits::default(), &bar) {
        Ok(r) => r,
        Err(e) => {
            let e = input.own(e);
            bar.clear();
            // A bundle too damaged to be read at all still answers `--json` with its verdict
            // (the exit code and stderr say the same).
            if args.common.json {
                crate::outln!(
                    "{}",
                    json!({
                        "ok": false,
                        "digest": null,
                        "problems": [{"entry": null, "message": e.to_string()}],
                        "warnings": [],
                        "blobsChecked": 0,
                        "bytesChecked": 0,
                    })
                );
            }
            return Err(e.into());
        }
    };
    bar.clear();
    if args.common.json {
        let list = |ps: &[asp_format::bundle::Problem]| -> Vec<serde_json::Value> {
            ps.iter()
                .map(|p| json!({"entry": p.entry, "message": p.message}))
                .collect()
        };
        crate::outln!(
            "{}",
            json!({
                "ok": report.is_ok(),
                "digest": report.digest,
                "problems": list(&report.problems),
                "warnings": list(&report.warnings),
                "blobsChecked": report.blobs_checked,
                "bytesChecked": report.bytes_checked,
            })
        );
    } else {
        for w in &report.warnings {
            crate::errln!("warning: {w}");
        }
        for p in &report.problems {
            crate::errln!("bad: {p}");
        }
        let digest = report
            .digest
            .map(|d| d.to_string())
            .unwrap_or_else(|| "(manifest unreadable)".to_owned());
        if report.is_ok() {
            crate::outln!(
                "ok {digest}: {} blobs checked ({} once decompressed)",
                report.blobs_checked,
                human::bytes(report.bytes_checked)
            );
        } else {
            crate::outln!(
                "FAILED {}: {}",
                input.display(),
                human::count(report.problems.len() as u64, "problem", "problems")
            );
        }
    }
    Ok(if report.is_ok() {
        Exit::Ok
    } else {
        Exit::Integrity
    })
}
