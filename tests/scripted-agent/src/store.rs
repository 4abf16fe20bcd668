//! Sessions read from a harness's native store through its asp converter, so the agent can
//! stand in for that harness: after a hub imports a state into the store, `session/list` and
//! `session/load` on this agent show what the harness itself would find there.

use std::path::Path;

use asp_convert::kit::report::Diagnostics;
use asp_convert::store::ReadRequest;
use asp_convert::{Home, Store};
use asp_format::blob::MemoryStore;
use asp_format::progress::Quiet;
use asp_format::update::UpdateLines;
use asp_format::{KindSet, StateKind};

use crate::SeedSession;

/// Every session of the `harness` store under `home`, with its update stream.
pub fn read(harness: &str, home: &Path) -> Result<Vec<SeedSession>, String> {
    let store = Store::harness(harness, Home::at(home))
        .ok_or_else(|| format!("no converter for {harness:?}"))?;
    let blobs = MemoryStore::new();
    let diagnostics = Diagnostics::new();
    let mut req = ReadRequest::new(&blobs, &diagnostics, &Quiet);
    req.kinds = KindSet::EMPTY.with(StateKind::Sessions);
    let state = store
        .read(&req)
        .map_err(|e| format!("reading the {harness} store in {}: {e}", home.display()))?;
    let mut out = Vec::new();
    for s in state.sessions.unwrap_or_default() {
        let mut lines = UpdateLines::open(&blobs, &s.updates).map_err(|e| e.to_string())?;
        let mut updates = Vec::new();
        while let Some((_, line)) = lines
            .next_line()
            .map_err(|(n, e)| format!("line {n}: {e}"))?
        {
            updates.push(serde_json::from_str(line).map_err(|e| e.to_string())?);
        }
        out.push(SeedSession {
            session_id: s.id.to_string(),
            cwd: s.cwd.unwrap_or_else(|| "/".to_owned()),
            title: Some(s.title),
            updated_at: s.updated_at,
            updates,
        });
    }
    Ok(out)
}
