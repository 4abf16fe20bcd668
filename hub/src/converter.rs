//! The agent-state methods through a harness's store ([`asp_convert::Store`]), reading and
//! writing the native store.
//!
//! Converters do blocking file I/O, so every call runs on tokio's blocking pool. Their
//! diagnostics (a damaged line skipped, a record kept under `_meta`) go to the hub's log.

use agent_client_protocol::Error;
use asp_convert::ConvertError;
use asp_convert::harness::ReadOptions;
use asp_convert::kit::pathmap::PathMap;
use asp_convert::kit::report::Diagnostics;
use asp_convert::store::{ReadRequest, Sessions, WriteRequest};
use asp_format::KindSet;
use asp_format::answer::ImportAnswer;
use asp_format::blob::MemoryStore;
use asp_format::export::{ExportError, ExportState};
use asp_format::progress::Quiet;
use asp_format::state::{KindCounts, StateError};
use asp_protocol::errors::AspError;
use serde_json::json;

use super::Converter;
use super::log::Log;
use super::shared::HubShared;

/// The name the hub gives a store in what it says.
pub(crate) fn name(conv: &Converter) -> String {
    match conv {
        asp_convert::Store::Harness { harness, .. } => harness.name().to_string(),
        asp_convert::Store::Dir(_) => "state directory".to_owned(),
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| Error::internal_error().data(format!("converter task failed: {e}")))?
}

fn failed(what: &'static str, harness: &str) -> impl FnOnce(ConvertError) -> Error {
    let harness = harness.to_owned();
    move |e| {
        AspError::StateFailed {
            message: format!("the {harness} converter could not {what}: {e}"),
            data: json!({"harness": harness, "error": e.to_string()}),
        }
        .into()
    }
}

/// -32602 for a state that parsed but is not valid, in the form every invalid-params answer
/// has: what is wrong, and where in the params.
fn not_valid(path: String, error: String) -> Error {
    AspError::InvalidParams {
        path,
        error: asp_protocol::methods::concise(format!(
            "the state handed over is not valid: {error}"
        )),
    }
    .into()
}

/// Where in the import params a state that does not convert went wrong.
fn export_error_path(e: &ExportError, sessions: &[String]) -> String {
    match e {
        ExportError::BadUpdate { session, line, .. } => {
            match sessions.iter().position(|s| s == session) {
                Some(i) => format!("/state/sessions/{i}/updates/{}", line.saturating_sub(1)),
                None => "/state/sessions".to_owned(),
            }
        }
        _ => "/state".to_owned(),
    }
}

/// Where in the import params a problem of [`asp_format::state::State::validate`] is: the kind.
fn problem_path(p: &StateError) -> String {
    match p {
        StateError::Duplicate { kind, .. } => format!("/state/{kind}"),
        StateError::EmptySettingId => "/state/settings".to_owned(),
        StateError::EmptyToolName => "/state/tools".to_owned(),
    }
}

fn report(log: Log, diagnostics: &Diagnostics) {
    for d in diagnostics.items() {
        log.warn(format!("converter: {d}"));
    }
}

pub(crate) async fn describe(conv: &Converter, kinds: KindSet) -> Result<KindCounts, Error> {
    let conv = conv.clone();
    blocking(move || {
        let name = name(&conv);
        match conv.describe(kinds, &Quiet) {
            // A home with no store yet (the destination of a first import) holds nothing.
            Err(ConvertError::NoStore { .. }) => Ok(KindCounts::new()),
            r => r.map_err(failed("read its store", &name)),
        }
    })
    .await
}

pub(crate) async fn export(
    hub: &HubShared,
    conv: &Converter,
    kinds: KindSet,
) -> Result<ExportState, Error> {
    let (conv, log) = (conv.clone(), hub.log);
    blocking(move || {
        let name = name(&conv);
        let store = MemoryStore::new();
        let diagnostics = Diagnostics::new();
        let read = conv.read(&ReadRequest {
            kinds,
            sessions: &Sessions::All,
            // The export form has no place for native files: do not read them.
            options: ReadOptions {
                native: false,
                ..ReadOptions::default()
            },
            threads: None,
            blobs: &store,
            diagnostics: &diagnostics,
            progress: &Quiet,
        });
        report(log, &diagnostics);
        let state = match read {
            // A home with no store yet holds nothing: no kind is given.
            Err(ConvertError::NoStore { .. }) => return Ok(ExportState::default()),
            r => r.map_err(failed("read its store", &name))?,
        };
        ExportState::from_state(&state, &store).map_err(|e| {
            AspError::StateFailed {
                message: format!("the {name} converter's state could not be put inline: {e}"),
                data: json!({"harness": name, "error": e.to_string()}),
            }
            .into()
        })
    })
    .await
}

pub(crate) async fn import(
    hub: &HubShared,
    conv: &Converter,
    state: ExportState,
    imports: KindSet,
) -> Result<ImportAnswer, Error> {
    let (conv, log) = (conv.clone(), hub.log);
    blocking(move || {
        let name = name(&conv);
        let store = MemoryStore::new();
        let sessions: Vec<String> = state
            .sessions
            .iter()
            .flatten()
            .map(|s| s.head.id.to_string())
            .collect();
        let state = state
            .into_state(&store)
            .map_err(|e| not_valid(export_error_path(&e, &sessions), e.to_string()))?;
        if let Err(problems) = state.validate() {
            let path = problems
                .first()
                .map_or_else(|| "/state".to_owned(), problem_path);
            let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
            return Err(not_valid(path, problems.join("; ")));
        }
        // Kinds the hub does not take are answered by the store's porcelain, whatever the
        // converter does with kinds it was not built for.
        let diagnostics = Diagnostics::new();
        let written = conv.write(
            &state,
            &WriteRequest {
                kinds: None,
                dry_run: false,
                path_map: &PathMap::default(),
                force: false,
                restoring: false,
                blobs: &store,
                diagnostics: &diagnostics,
                progress: &Quiet,
            },
        );
        report(log, &diagnostics);
        let mut answer = written.map_err(failed("write its store", &name))?.answer;
        for kind in state.kinds().iter().filter(|k| !imports.contains(*k)) {
            if !answer.not_taken.iter().any(|n| n.kind == kind) {
                answer.refuse(kind, format!("the {name} converter does not import {kind}"));
            }
        }
        Ok(answer)
    })
    .await
}
