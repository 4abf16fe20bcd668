//! Messages from the agent behind the hub: all go to the client as they are, except the
//! `session/update`s of a session being replayed for an export, which are recorded instead.

use agent_client_protocol::v1::Dispatch;
use agent_client_protocol::{Error, UntypedMessage};
use serde_json::Value;

use super::shared::HubShared;

pub(crate) fn route(hub: &HubShared, d: Dispatch) -> Result<(), Error> {
    match d {
        // Answers to requests the hub sent (forwarded or its own) go to whoever waits.
        Dispatch::Response(result, router) => router.route_with_result(result),
        Dispatch::Notification(n) if n.method() == "session/update" => match capture(hub, n) {
            None => Ok(()),
            Some(n) => to_client(
                hub,
                Dispatch::<UntypedMessage, UntypedMessage>::Notification(n),
            ),
        },
        // Permission requests, fs/* and terminal/*, unknown `_` methods and notifications.
        other => to_client(hub, other),
    }
}

/// Records the update when its session is being replayed for an export; otherwise gives it
/// back to be forwarded. Updates carry no request id, so the session is the only way to tell
/// the hub's replay from the client's traffic; the hub keeps the client's messages about a
/// session away while it replays it (see `state_methods`).
fn capture(hub: &HubShared, n: UntypedMessage) -> Option<UntypedMessage> {
    let sid = n
        .params()
        .get("sessionId")
        .and_then(Value::as_str)?
        .to_owned();
    let mut inner = hub.lock();
    let Some(capture) = inner.captures.get_mut(&sid) else {
        drop(inner);
        return Some(n);
    };
    // The params as the agent sent them: raw JSON, never a typed ACP value, which would drop
    // fields it does not know.
    match serde_json::value::to_raw_value(n.params()) {
        Ok(raw) => capture.updates.push(raw),
        Err(e) => hub.log.warn(format!(
            "session {sid}: an update could not be recorded: {e}"
        )),
    }
    capture.last = tokio::time::Instant::now();
    None
}

fn to_client(hub: &HubShared, d: Dispatch) -> Result<(), Error> {
    match hub.client() {
        Some(client) => client.send_proxied_message(d),
        // The agent spoke before the client said anything: nobody to tell.
        None => {
            hub.log.warn(format!(
                "dropped {} from the agent: no client yet",
                d.method()
            ));
            if let Dispatch::Request(_, responder) = d {
                responder.respond_with_error(
                    Error::internal_error().data("no client connected to the hub yet"),
                )?;
            }
            Ok(())
        }
    }
}
