//! `_asp/state/describe|export|import`, answered by the hub.
//!
//! A method is offered exactly when the hub advertised its layer: describe and export when
//! `agentState.export` names a kind, import when `agentState.import` does. Otherwise the
//! answer is -32601 (Method not found), with the reason in `data`: the same answer an agent
//! that does not implement a method gives, so a client treats "not offered" one way whatever
//! stands behind the hub.
//!
//! Export and import need no turn running (-31002 otherwise), run one at a time, and while
//! one runs the client's messages about sessions wait (a prompt must not start a turn in a
//! store being read or written, and a session being replayed must not see the client's
//! traffic mixed into its capture). The work itself runs in a spawned task, never on the
//! dispatch loop.
//!
//! Refusals come in the order JSON-RPC checks them: a request before `initialize` was answered
//! (-32600), then a method not offered (-32601), then params that do not parse (-32602). The
//! params are parsed when the request arrives, but a failure is held ([`Asked`]) until the
//! first two checks have passed.

use std::sync::Arc;

use agent_client_protocol::v1::{self};
use agent_client_protocol::{
    Client, Error, JsonRpcMessage, JsonRpcRequest, JsonRpcResponse, UntypedMessage,
};
use asp_format::KindSet;
use serde_json::Value;

use super::shared::HubShared;
use super::{client_side, converter, replay, turns};
use asp_protocol::capabilities::AspCapabilities;
use asp_protocol::errors::AspError;
use asp_protocol::methods::{
    self, AspParams, DescribeRequest, DescribeResponse, ExportRequest, ExportResponse,
    ImportRequest, ImportResponse,
};

/// An ASP request as it arrived: its params, or why they do not parse (answered only after
/// the method is known to be offered).
#[derive(Debug, Clone)]
pub(crate) struct Asked<T> {
    method: String,
    params: Result<T, AspError>,
}

impl<T: JsonRpcRequest + AspParams> JsonRpcMessage for Asked<T> {
    fn matches_method(method: &str) -> bool {
        T::matches_method(method)
    }

    fn method(&self) -> &str {
        &self.method
    }

    fn to_untyped_message(&self) -> Result<UntypedMessage, Error> {
        match &self.params {
            Ok(req) => req.to_untyped_message(),
            Err(e) => Err(e.clone().into()),
        }
    }

    fn parse_message(method: &str, params: &Value) -> Result<Self, Error> {
        if !T::matches_method(method) {
            return Err(Error::method_not_found());
        }
        let params = T::parse(params);
        Ok(Asked {
            method: method.to_owned(),
            params,
        })
    }
}

impl<T: JsonRpcRequest + AspParams> JsonRpcRequest for Asked<T> {
    type Response = T::Response;
}

pub(crate) fn describe(
    hub: &Arc<HubShared>,
    req: Asked<DescribeRequest>,
    responder: v1::Responder<DescribeResponse>,
    cx: &v1::ConnectionTo<Client>,
) -> Result<(), Error> {
    let exports = match offered(hub, methods::DESCRIBE, AspCapabilities::exports)
        .and_then(|kinds| req.params.map(|_| kinds).map_err(Error::from))
    {
        Ok(kinds) => kinds,
        Err(e) => return reply(hub, responder, Err(e)),
    };
    let working = match hub.begin_work() {
        Ok(w) => w,
        Err(e) => return reply(hub, responder, Err(e)),
    };
    let hub = hub.clone();
    cx.spawn(async move {
        let _working = working;
        let counts = match &hub.options.converter {
            Some(c) => converter::describe(c, exports).await,
            None => hub.unless_gone(replay::describe(&hub)).await,
        }
        // A kind not held is left out (spec/protocol.md §3.1), never counted 0.
        .map(|mut kinds| {
            kinds.retain(|_, n| *n > 0);
            kinds
        });
        reply(
            &hub,
            responder,
            counts.map(|kinds| DescribeResponse { kinds }),
        )
    })
}

pub(crate) fn export(
    hub: &Arc<HubShared>,
    req: Asked<ExportRequest>,
    responder: v1::Responder<ExportResponse>,
    cx: &v1::ConnectionTo<Client>,
) -> Result<(), Error> {
    let (exports, req) = match offered(hub, methods::EXPORT, AspCapabilities::exports)
        .and_then(|kinds| req.params.map(|r| (kinds, r)).map_err(Error::from))
    {
        Ok(both) => both,
        Err(e) => return reply(hub, responder, Err(e)),
    };
    // A kind asked for but not exported is simply not given.
    let kinds = req.kinds.intersection(exports);
    let working = match hub.begin_work() {
        Ok(w) => w,
        Err(e) => return reply(hub, responder, Err(e)),
    };
    let hub = hub.clone();
    cx.spawn(async move {
        let _working = working;
        let result = async {
            let _op = StateOp::begin(&hub, methods::EXPORT).await?;
            let state = match &hub.options.converter {
                Some(c) => converter::export(&hub, c, kinds).await?,
                // A replay needs the agent: it ends when the agent goes away.
                None => hub.unless_gone(replay::export(&hub, kinds)).await?,
            };
            Ok(ExportResponse::new(state))
        }
        .await;
        reply(&hub, responder, result)
    })
}

pub(crate) fn import(
    hub: &Arc<HubShared>,
    req: Asked<ImportRequest>,
    responder: v1::Responder<ImportResponse>,
    cx: &v1::ConnectionTo<Client>,
) -> Result<(), Error> {
    let (imports, req) = match offered(hub, methods::IMPORT, AspCapabilities::imports)
        .and_then(|kinds| req.params.map(|r| (kinds, r)).map_err(Error::from))
    {
        Ok(both) => both,
        Err(e) => return reply(hub, responder, Err(e)),
    };
    let Some(conv) = hub.options.converter.clone() else {
        // Import is only ever advertised with a converter.
        return reply(hub, responder, Err(not_offered(hub, methods::IMPORT)));
    };
    let working = match hub.begin_work() {
        Ok(w) => w,
        Err(e) => return reply(hub, responder, Err(e)),
    };
    let hub = hub.clone();
    cx.spawn(async move {
        let _working = working;
        let result = async {
            let _op = StateOp::begin(&hub, methods::IMPORT).await?;
            converter::import(&hub, &conv, req.state, imports)
                .await
                .map(ImportResponse)
        }
        .await;
        reply(&hub, responder, result)
    })
}

/// The kinds the method works on, or why it is not offered.
fn offered(
    hub: &HubShared,
    method: &str,
    kinds: fn(&AspCapabilities) -> KindSet,
) -> Result<KindSet, Error> {
    let inner = hub.lock();
    let Some(advertised) = &inner.advertised else {
        return Err(AspError::NotInitialized {
            method: method.to_owned(),
            reason: "send initialize first; the hub says what it offers in its answer".to_owned(),
        }
        .into());
    };
    let offered = kinds(&advertised.caps);
    drop(inner);
    if offered.is_empty() {
        return Err(not_offered(hub, method));
    }
    Ok(offered)
}

fn not_offered(hub: &HubShared, method: &str) -> Error {
    let reason = match (&hub.options.converter, method) {
        (Some(c), _) => format!(
            "the {} converter does not offer it",
            super::converter::name(c)
        ),
        (None, methods::IMPORT) => {
            "the hub imports only through a harness converter (start it with --harness NAME)"
                .to_owned()
        }
        (None, _) => {
            "the agent behind the hub does not offer session/load, and the hub has no harness \
                      converter (start it with --harness NAME)"
                .to_owned()
        }
    };
    AspError::NotOffered {
        method: method.to_owned(),
        reason,
    }
    .into()
}

/// Answers, logging (not failing) when the client can no longer hear it: an error returned
/// from a spawned task would end the whole connection.
fn reply<T: JsonRpcResponse>(
    hub: &HubShared,
    responder: v1::Responder<T>,
    result: Result<T, Error>,
) -> Result<(), Error> {
    if let Err(e) = responder.respond_with_result(result) {
        hub.log
            .warn(format!("could not answer an ASP request: {e}"));
    }
    Ok(())
}

/// A running export or import. While it lives, the client's messages about sessions wait;
/// dropping it sends them on, in the order they came.
struct StateOp {
    hub: Arc<HubShared>,
    _exclusive: tokio::sync::OwnedMutexGuard<()>,
}

impl StateOp {
    async fn begin(hub: &Arc<HubShared>, method: &'static str) -> Result<StateOp, Error> {
        let exclusive = hub.state_lock.clone().lock_owned().await;
        let mut inner = hub.lock();
        let busy = turns::busy_sessions(&inner);
        if !busy.is_empty() {
            return Err(AspError::TurnRunning {
                method: method.to_owned(),
                sessions: busy,
            }
            .into());
        }
        inner.state_op = Some(method);
        Ok(StateOp {
            hub: hub.clone(),
            _exclusive: exclusive,
        })
    }
}

impl Drop for StateOp {
    fn drop(&mut self) {
        // Messages that arrive while the waiting ones are sent on wait behind them, so the
        // agent gets the client's messages in the order the client sent them.
        loop {
            let batch = {
                let mut inner = self.hub.lock();
                if inner.deferred.is_empty() {
                    inner.state_op = None;
                    return;
                }
                std::mem::take(&mut inner.deferred)
            };
            for d in batch {
                if let Err(e) = client_side::route_now(&self.hub, d) {
                    self.hub
                        .log
                        .warn(format!("a message that waited could not be sent on: {e}"));
                }
            }
        }
    }
}
