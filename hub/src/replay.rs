//! Sessions without a converter: exported by replaying each through the agent's own
//! `session/list` + `session/load`, and recording the `session/update`s it streams.
//!
//! The updates are recorded as the raw JSON the agent sent (typed ACP values drop fields they
//! do not know) and are not forwarded to the client, who did not ask for a replay.
//!
//! Updates carry no request id, so a replayed session is told apart from the client's traffic
//! by its id alone: capture is per session, from just before its `session/load` is sent until
//! its replay has been quiet for [`super::HubOptions::replay_quiet`] after the load was
//! answered. The wait is for agents that answer before their replay ends (Gemini CLI streams
//! its history from a promise it does not await). Loads go one after another while earlier
//! sessions wait out their quiet time, so an export costs about one quiet time in all.
//!
//! Sessions are enumerated with `session/list` (every page) when the agent offers it, else
//! they are the sessions the client opened through the hub (Gemini CLI has no list). A
//! session listed twice is taken once; a cursor given twice, or more than
//! [`MAX_LIST_PAGES`] pages, fails the enumeration (-31004) instead of looping forever. A
//! session the hub loaded only for the export is let go with `session/close` when the agent
//! offers it.

use std::collections::HashSet;
use std::sync::Arc;

use agent_client_protocol::{Error, UntypedMessage};
use asp_format::export::{ExportSession, ExportState, SessionHead};
use asp_format::name::SessionId;
use asp_format::state::KindCounts;
use asp_format::{KindSet, StateKind};
use serde_json::value::RawValue;
use serde_json::{Map, Value, json};

use super::advertise::AgentOffers;
use super::shared::{Capture, HubShared};
use asp_protocol::errors::AspError;

/// A session as listed.
#[derive(Debug, Clone)]
struct Listed {
    id: String,
    cwd: Option<String>,
    title: Option<String>,
    updated_at: Option<String>,
}

fn offers(hub: &HubShared) -> AgentOffers {
    hub.lock()
        .advertised
        .as_ref()
        .map(|a| a.agent.clone())
        .unwrap_or_default()
}

async fn enumerate(hub: &HubShared) -> Result<Vec<Listed>, Error> {
    if !offers(hub).list {
        let inner = hub.lock();
        return Ok(inner
            .known
            .iter()
            .map(|(id, k)| Listed {
                id: id.clone(),
                cwd: k.cwd.clone(),
                title: None,
                updated_at: None,
            })
            .collect());
    }
    let mut listed: Vec<Listed> = Vec::new();
    let mut ids = HashSet::new();
    let mut cursors = HashSet::new();
    let mut cursor: Option<String> = None;
    for _ in 0..MAX_LIST_PAGES {
        let mut params = json!({});
        if let Some(c) = &cursor {
            params["cursor"] = json!(c);
        }
        let page = ask(hub, "session/list", params).await?;
        for info in page["sessions"].as_array().into_iter().flatten() {
            let text = |key: &str| info.get(key).and_then(Value::as_str).map(str::to_owned);
            let Some(id) = text("sessionId") else {
                continue;
            };
            // A session listed twice (on two pages, or twice on one) is one session: an export
            // naming it twice would be a state no import takes.
            if !ids.insert(id.clone()) {
                hub.log
                    .debug(|| format!("session/list named session {id} again; taken once"));
                continue;
            }
            listed.push(Listed {
                id,
                cwd: text("cwd"),
                title: text("title"),
                updated_at: text("updatedAt"),
            });
        }
        cursor = page["nextCursor"].as_str().map(str::to_owned);
        let Some(next) = &cursor else {
            return Ok(listed);
        };
        if !cursors.insert(next.clone()) {
            return Err(list_failed(
                format!(
                    "session/list gave the cursor {next:?} a second time, so its pages would never \
                     end; the sessions cannot be enumerated"
                ),
                json!({"method": "session/list", "cursor": next}),
            ));
        }
    }
    Err(list_failed(
        format!(
            "session/list gave more than {MAX_LIST_PAGES} pages; the hub stopped asking, and the \
             sessions cannot be enumerated"
        ),
        json!({"method": "session/list", "pages": MAX_LIST_PAGES}),
    ))
}

/// Asks the agent. When it has gone instead of answering, the error is why it went, once the
/// hub knows (the SDK's would say only "Incoming transport closed").
async fn ask(hub: &HubShared, method: &str, params: Value) -> Result<Value, Error> {
    let asked = hub
        .agent()
        .send_request(UntypedMessage::new(method, params)?)
        .block_task()
        .await;
    match asked {
        Err(e) if HubShared::lost_with_agent(&e) => Err(hub.gone().await),
        answered => answered,
    }
}

/// The most `session/list` pages an enumeration asks for: a guard against an agent whose
/// cursors never end, far beyond any real store.
const MAX_LIST_PAGES: usize = 10_000;

fn list_failed(message: String, data: Value) -> Error {
    AspError::StateFailed { message, data }.into()
}

/// How many sessions there are, without replaying any.
pub(crate) async fn describe(hub: &HubShared) -> Result<KindCounts, Error> {
    let n = enumerate(hub).await?.len() as u64;
    Ok(KindCounts::from([(StateKind::Sessions, n)]))
}

pub(crate) async fn export(hub: &Arc<HubShared>, kinds: KindSet) -> Result<ExportState, Error> {
    if !kinds.contains(StateKind::Sessions) {
        return Ok(ExportState::default());
    }
    let listed = enumerate(hub).await?;
    // Without `session/list`, the sessions are those the client opened through the hub; none
    // opened says nothing of what the agent holds, so the kind is not given rather than given
    // empty (which would say the agent holds none).
    if listed.is_empty() && !offers(hub).list {
        return Ok(ExportState::default());
    }
    let mut loaded = Vec::with_capacity(listed.len());
    let mut failed = Map::new();
    for session in listed {
        if let Err(e) = SessionId::new(&session.id) {
            failed.insert(session.id.clone(), json!(e.to_string()));
            continue;
        }
        begin_capture(hub, &session.id);
        let cwd = session.cwd.clone().unwrap_or_else(|| "/".to_owned());
        hub.log
            .debug(|| format!("replaying session {} in {cwd}", session.id));
        let load = ask(
            hub,
            "session/load",
            json!({"sessionId": session.id, "cwd": cwd, "mcpServers": []}),
        )
        .await;
        match load {
            Ok(_) => loaded.push(session),
            Err(e) => {
                end_capture(hub, &session.id);
                if hub.gone_error().is_some() {
                    // No session can be replayed any more: the export fails as a whole.
                    return Err(e);
                }
                failed.insert(
                    session.id.clone(),
                    serde_json::to_value(&e).unwrap_or(Value::Null),
                );
            }
        }
    }
    let mut sessions = Vec::with_capacity(loaded.len());
    for session in &loaded {
        wait_for_quiet(hub, &session.id).await;
        let updates = end_capture(hub, &session.id);
        hub.log
            .debug(|| format!("session {}: {} updates replayed", session.id, updates.len()));
        sessions.push(exported(session, updates));
    }
    let sessions: Vec<ExportSession> = sessions.into_iter().flatten().collect();
    let_go(hub, &loaded).await;
    if !failed.is_empty() {
        // Never a sessions kind that silently lacks some: the export fails, naming them.
        return Err(AspError::StateFailed {
            message: format!(
                "{} session(s) could not be replayed: {}",
                failed.len(),
                failed.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
            data: json!({"sessions": failed}),
        }
        .into());
    }
    Ok(ExportState {
        sessions: Some(sessions),
        ..ExportState::default()
    })
}

fn begin_capture(hub: &HubShared, sid: &str) {
    hub.lock().captures.insert(
        sid.to_owned(),
        Capture {
            updates: Vec::new(),
            last: tokio::time::Instant::now(),
        },
    );
}

fn end_capture(hub: &HubShared, sid: &str) -> Vec<Box<RawValue>> {
    hub.lock()
        .captures
        .remove(sid)
        .map(|c| c.updates)
        .unwrap_or_default()
}

async fn wait_for_quiet(hub: &HubShared, sid: &str) {
    loop {
        let Some(last) = hub.lock().captures.get(sid).map(|c| c.last) else {
            return;
        };
        let due = last + hub.options.replay_quiet;
        if tokio::time::Instant::now() >= due {
            return;
        }
        tokio::time::sleep_until(due).await;
    }
}

/// Closes the sessions loaded only for the export (a loaded session can hold a process in
/// the agent). Sessions the client opened stay open.
async fn let_go(hub: &HubShared, loaded: &[Listed]) {
    if !offers(hub).close {
        return;
    }
    for session in loaded {
        if hub.lock().known.contains_key(&session.id) {
            continue;
        }
        let closed = ask(hub, "session/close", json!({"sessionId": session.id})).await;
        if let Err(e) = closed {
            hub.log.warn(format!(
                "session {}: session/close after the export failed: {e}",
                session.id
            ));
        }
    }
}

fn exported(session: &Listed, updates: Vec<Box<RawValue>>) -> Option<ExportSession> {
    let id = SessionId::new(&session.id).ok()?;
    let title = session
        .title
        .clone()
        .or_else(|| title_from_updates(&updates))
        .unwrap_or_default();
    Some(ExportSession {
        head: SessionHead {
            id,
            title,
            harness: None,
            cwd: session.cwd.clone(),
            updated_at: session.updated_at.clone(),
        },
        updates,
        meta: None,
    })
}

/// A title for a session the list gave none: the last `session_info_update` title, else the
/// first line of the first thing the user said.
fn title_from_updates(updates: &[Box<RawValue>]) -> Option<String> {
    let parsed: Vec<Value> = updates
        .iter()
        .filter_map(|u| serde_json::from_str(u.get()).ok())
        .collect();
    let info = parsed
        .iter()
        .rev()
        .filter(|u| u["update"]["sessionUpdate"] == "session_info_update")
        .find_map(|u| u["update"]["title"].as_str());
    let said = || {
        parsed
            .iter()
            .filter(|u| u["update"]["sessionUpdate"] == "user_message_chunk")
            .find_map(|u| u["update"]["content"]["text"].as_str())
            .and_then(|t| t.lines().find(|l| !l.trim().is_empty()))
            .map(|l| l.trim().chars().take(80).collect::<String>())
    };
    info.map(str::to_owned).or_else(said)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(v: Value) -> Box<RawValue> {
        serde_json::value::to_raw_value(&v).unwrap()
    }

    #[test]
    fn a_session_without_a_listed_title_takes_its_last_info_title_else_its_first_words() {
        let said = raw(
            json!({"sessionId": "s", "update": {"sessionUpdate": "user_message_chunk",
            "content": {"type": "text", "text": "\n  Fix the deploy script\nplease"}}}),
        );
        let info = |t: &str| {
            raw(
                json!({"sessionId": "s", "update": {"sessionUpdate": "session_info_update", "title": t}}),
            )
        };
        assert_eq!(
            title_from_updates(std::slice::from_ref(&said)).as_deref(),
            Some("Fix the deploy script")
        );
        assert_eq!(
            title_from_updates(&[said, info("Old"), info("Deploy")]).as_deref(),
            Some("Deploy")
        );
        assert_eq!(title_from_updates(&[]), None);
    }
}
