//! asp's integration tests: one binary, one module per subject (the layout of ripgrep's
//! `tests/tests.rs`), so the workspace links one test executable instead of one per file.
//!
//! If you are adding something new, it probably goes into an existing module: a rule every
//! harness must keep goes into [`contract`] (it runs for every registered harness, by name); a
//! fact of one harness goes into that harness's module. What every module needs (running the
//! binaries, the samples, reading and writing a store through the porcelain, driving a hub in
//! this process) is in [`support`].

mod support;

// Bundles and the CLI.
mod bundle_cli;
mod exit_codes;
mod hostile_bundles;
mod round_trip;
mod schemas;

// What every harness converter must do, run for each registered one.
mod contract;
mod dry_run;

// One harness's facts each.
#[cfg(feature = "claude-code")]
mod claude_code;
#[cfg(feature = "codex")]
mod codex;
#[cfg(feature = "copilot")]
mod copilot;
#[cfg(feature = "gemini")]
mod gemini;
#[cfg(feature = "opencode")]
mod opencode;
#[cfg(feature = "pi")]
mod pi;
#[cfg(feature = "qwen")]
mod qwen;

// The protocol and the hub.
mod hub_passthrough;
mod hub_peers;
mod hub_state_converter;
mod hub_state_replay;
mod hub_stdio;
mod hub_steering;
mod protocol_schemas;

// Layout 4: project dictionaries; layout 5: update streams in windows.
#[cfg(feature = "claude-code")]
mod project_dictionaries;
#[cfg(feature = "claude-code")]
mod windowed_streams;

// Backups: asp backup and its repository.
mod backup;

// Registries: asp push and asp pull against a real registry.
mod registry_bundles;
mod registry_cli;
mod registry_repo;
