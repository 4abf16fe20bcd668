//! `asp hub` in front of the real ACP agents (opt-in: `--ignored`): each exports its sessions
//! by replay through the hub, and the export must hold exactly what the agent replays when
//! asked directly, with none of the replay reaching the client.
//!
//! Needs `scripts/judges/install.sh` (node >= 20) and Python >= 3.11; the work is done by
//! `scripts/hub_peers.py`, which reuses the judges' safe handling of real harnesses (scratch
//! copies, no credentials, network pointed at nothing, a private mount namespace for cwds).
//!
//! ```sh
//! scripts/judges/install.sh
//! cargo test -p asp-cli --test hub_peers -- --ignored --test-threads 1
//! ```

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn run(peer: &str, home: &str) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let out = Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()))
        .current_dir(&root)
        .arg("scripts/hub_peers.py")
        .arg(peer)
        .arg(home)
        .arg("--asp")
        .arg(env!("CARGO_BIN_EXE_asp"))
        .output()
        .expect("python3 (>= 3.11) runs scripts/hub_peers.py");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let report: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no report from hub_peers.py ({e}); stderr:\n{stderr}"));
    eprintln!("{}", serde_json::to_string_pretty(&report).unwrap());
    assert_eq!(report["ok"], true, "{peer}: {}", report["errors"]);
    assert_eq!(report["leaked_to_client"], 0);
    let sessions = report["sessions"].as_array().unwrap();
    assert!(!sessions.is_empty(), "{peer}: nothing exported");
    for s in sessions {
        assert_eq!(
            s["hub_counts"], s["direct_counts"],
            "{peer}: session {}",
            s["id"]
        );
    }
}

#[test]
#[ignore = "starts the real claude-agent-acp (scripts/judges/install.sh)"]
fn the_hub_exports_claude_codes_sessions_by_replay() {
    run("claude", "samples/claude-code");
}

#[test]
#[ignore = "starts the real codex-acp (scripts/judges/install.sh)"]
fn the_hub_exports_codexs_sessions_by_replay() {
    run("codex-acp", "samples/codex");
}

#[test]
#[ignore = "starts the real Gemini CLI (scripts/judges/install.sh)"]
fn the_hub_exports_gemini_clis_sessions_by_replay() {
    run("gemini", "samples/gemini");
}

#[test]
#[ignore = "starts the real OpenCode (scripts/judges/install.sh)"]
fn the_hub_exports_opencodes_sessions_by_replay() {
    run("opencode", "tests/fixtures/peers/opencode-export.json");
}
