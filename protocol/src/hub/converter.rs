//! The agent-state methods through a harness converter, reading and writing the native store.
//!
//! Converters do blocking file I/O, so every call runs on tokio's blocking pool. Their
//! diagnostics (a damaged line skipped, a record kept under `_meta`) go to the hub's log.

use agent_client_protocol::Error;
use asp_convert::harness::{ReadOptions, WriteOptions};
use asp_convert::report::Diagnostics;
use asp_convert::{ConvertError, ReadContext, WriteContext};
use asp_format::KindSet;
use asp_format::answer::ImportAnswer;
use asp_format::blob::MemoryStore;
use asp_format::export::ExportState;
use asp_format::progress::Quiet;
use asp_format::state::KindCounts;
use serde_json::json;

use super::Converter;
use super::log::Log;
use super::shared::HubShared;
use crate::errors::AspError;

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

fn report(log: Log, diagnostics: &Diagnostics) {
    for d in diagnostics.items() {
        log.warn(format!("converter: {d}"));
    }
}

pub(crate) async fn describe(conv: &Converter, kinds: KindSet) -> Result<KindCounts, Error> {
    let conv = conv.clone();
    blocking(move || {
        let name = conv.harness.name().to_string();
        conv.harness
            .describe(&conv.home, kinds, &Quiet)
            .map_err(failed("read its store", &name))
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
        let name = conv.harness.name().to_string();
        let store = MemoryStore::new();
        let diagnostics = Diagnostics::new();
        let read = conv.harness.read(&ReadContext {
            home: &conv.home,
            kinds,
            blobs: &store,
            diagnostics: &diagnostics,
            progress: &Quiet,
            // The export form has no place for native files: do not read them.
            options: ReadOptions {
                native: false,
                ..ReadOptions::default()
            },
        });
        report(log, &diagnostics);
        let mut state = read.map_err(failed("read its store", &name))?;
        // A kind not asked for is not given, whatever the converter returned.
        state.retain_kinds(kinds);
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
        let name = conv.harness.name().to_string();
        let store = MemoryStore::new();
        let mut state = state.into_state(&store).map_err(|e| {
            Error::invalid_params().data(format!("the state handed over is not valid: {e}"))
        })?;
        if let Err(problems) = state.validate() {
            let problems: Vec<String> = problems.iter().map(ToString::to_string).collect();
            return Err(Error::invalid_params().data(format!(
                "the state handed over is not valid: {}",
                problems.join("; ")
            )));
        }
        // Kinds the converter does not take are answered here, so the owner hears about them
        // whatever the converter does with kinds it was not built for.
        let refused: Vec<_> = state
            .kinds()
            .iter()
            .filter(|k| !imports.contains(*k))
            .collect();
        state.retain_kinds(imports);
        let diagnostics = Diagnostics::new();
        let written = conv.harness.write(&WriteContext {
            home: &conv.home,
            state: &state,
            blobs: &store,
            diagnostics: &diagnostics,
            progress: &Quiet,
            options: &WriteOptions::default(),
        });
        report(log, &diagnostics);
        let mut answer = written.map_err(failed("write its store", &name))?;
        for kind in refused {
            if !answer.not_taken.iter().any(|n| n.kind == kind) {
                answer.refuse(kind, format!("the {name} converter does not import {kind}"));
            }
        }
        Ok(answer)
    })
    .await
}
