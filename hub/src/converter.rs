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
use asp_format::export::{ExportError, ExportState, Invalid};
use asp_format::progress::Quiet;
use asp_format::state::KindCounts;
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

/// -32602 for a state that parsed but is not valid, naming every problem (spec/protocol.md
/// §4), in the form every invalid-params answer has: what is wrong, and where in the params.
fn not_valid(e: ExportError) -> Error {
    match e {
        ExportError::Invalid(problems) => asp_protocol::methods::invalid_state(&problems).into(),
        other => asp_protocol::methods::invalid_state(&[Invalid {
            path: String::new(),
            error: other.to_string(),
        }])
        .into(),
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
        let state = state.into_checked_state(&store).map_err(not_valid)?;
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
