//! One turn: a task that streams lines, holds open, takes steering and honours cancel.

use std::sync::Arc;
use std::time::Duration;

use agent_client_protocol::v1::{self};
use agent_client_protocol::{Client, Error, RequestCancellation, UntypedMessage};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::agent::Shared;

/// What reaches a running turn from outside.
#[derive(Debug)]
pub(crate) enum TurnEvent {
    Release,
    Cancel,
    /// Steered content (`_session/steering`): joins the answer under way.
    Inject(String),
    /// A second prompt taken into the running turn (prompt queueing): the turn answers the
    /// request it was serving with `end_turn` and goes on serving the new one.
    Join(String, Box<v1::Responder<Value>>),
}

/// A running turn as the agent's state sees it.
#[derive(Debug, Clone)]
pub(crate) struct TurnHandle {
    pub id: u64,
    /// Takes steering (`hold`); a `wait` turn does not, like a turn between steps.
    pub steerable: bool,
    pub tx: mpsc::UnboundedSender<TurnEvent>,
}

/// Everything a turn needs.
pub(crate) struct Turn {
    pub shared: Shared,
    pub cx: v1::ConnectionTo<Client>,
    pub session: String,
    pub text: String,
    pub rpc_cancel: RequestCancellation,
}

fn stop(reason: &str) -> Result<Value, Error> {
    Ok(json!({"stopReason": reason}))
}

impl Turn {
    /// Says one line as an `agent_message_chunk`, and keeps it for replay.
    fn say(&self, line: &str) -> Result<(), Error> {
        say(&self.shared, &self.cx, &self.session, line)
    }

    /// Runs the script; `responder` answers the prompt (responders are not `Sync`, so they
    /// travel beside the turn rather than inside it).
    pub(crate) async fn run(self, responder: v1::Responder<Value>) -> Result<(), Error> {
        let text = self.text.clone();
        let mut words = text.split_whitespace();
        match words.next() {
            Some(word @ ("hold" | "wait")) => {
                let key = words.next().unwrap_or("turn").to_owned();
                self.hold(key, word == "hold", responder).await
            }
            Some("steps") => {
                let n: u32 = words.next().and_then(|w| w.parse().ok()).unwrap_or(3);
                let ms: u64 = words.next().and_then(|w| w.parse().ok()).unwrap_or(100);
                let r = self.steps(n, ms).await;
                responder.respond_with_result(r)
            }
            Some("weird") => {
                let r = self.weird().await;
                responder.respond_with_result(r)
            }
            Some("permission") => {
                let r = self.permission().await;
                responder.respond_with_result(r)
            }
            Some("fail") => responder.respond_with_error(
                Error::new(4242, "scripted failure").data(json!({"script": "fail"})),
            ),
            _ => {
                let r = self.say(&self.text).and_then(|()| stop("end_turn"));
                responder.respond_with_result(r)
            }
        }
    }

    async fn hold(
        self,
        key: String,
        steerable: bool,
        responder: v1::Responder<Value>,
    ) -> Result<(), Error> {
        let (handle, mut rx) = self
            .shared
            .start_turn(&self.session, Some(key.clone()), steerable);
        let mut owner = responder;
        let outcome = async {
            say(
                &self.shared,
                &self.cx,
                &self.session,
                &format!("{key} started"),
            )?;
            loop {
                let event = tokio::select! {
                    e = rx.recv() => e.unwrap_or(TurnEvent::Cancel),
                    () = self.rpc_cancel.cancelled() => TurnEvent::Cancel,
                };
                match event {
                    TurnEvent::Release => {
                        say(
                            &self.shared,
                            &self.cx,
                            &self.session,
                            &format!("{key} done"),
                        )?;
                        return Ok("end_turn");
                    }
                    TurnEvent::Cancel => {
                        say(
                            &self.shared,
                            &self.cx,
                            &self.session,
                            &format!("{key} cancelled"),
                        )?;
                        return Ok("cancelled");
                    }
                    TurnEvent::Inject(text) => {
                        say(
                            &self.shared,
                            &self.cx,
                            &self.session,
                            &format!("{key} joined: {text}"),
                        )?;
                    }
                    TurnEvent::Join(text, next) => {
                        say(
                            &self.shared,
                            &self.cx,
                            &self.session,
                            &format!("{key} joined: {text}"),
                        )?;
                        let earlier = std::mem::replace(&mut owner, *next);
                        earlier.respond_with_result(stop("end_turn"))?;
                    }
                }
            }
        }
        .await;
        self.shared.end_turn(&self.session, handle.id);
        match outcome {
            Ok(reason) => owner.respond_with_result(stop(reason)),
            Err(e) => owner.respond_with_error(e),
        }
    }

    async fn steps(&self, n: u32, ms: u64) -> Result<Value, Error> {
        let (handle, mut rx) = self.shared.start_turn(&self.session, None, true);
        let outcome = async {
            for i in 1..=n {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                    e = rx.recv() => match e {
                        Some(TurnEvent::Inject(text)) => self.say(&format!("joined: {text}"))?,
                        Some(TurnEvent::Join(text, next)) => {
                            self.say(&format!("joined: {text}"))?;
                            next.respond_with_error(Error::new(4243, "steps turns take no joins"))?;
                        }
                        Some(TurnEvent::Release) => {}
                        Some(TurnEvent::Cancel) | None => {
                            self.say(&format!("cancelled after {}", i - 1))?;
                            return Ok("cancelled");
                        }
                    },
                    () = self.rpc_cancel.cancelled() => {
                        self.say(&format!("cancelled after {}", i - 1))?;
                        return Ok("cancelled");
                    }
                }
                self.say(&format!("step {i}/{n}"))?;
            }
            Ok("end_turn")
        }
        .await;
        self.shared.end_turn(&self.session, handle.id);
        outcome.and_then(stop)
    }

    async fn weird(&self) -> Result<Value, Error> {
        let sid = &self.session;
        self.cx.send_notification(UntypedMessage::new(
            "session/update",
            json!({"sessionId": sid, "update": {"sessionUpdate": "future_kind", "futureField": 1}}),
        )?)?;
        self.cx.send_notification(UntypedMessage::new(
            "session/update",
            json!({
                "sessionId": sid,
                "update": {"sessionUpdate": "tool_call", "toolCallId": "tc-9", "title": "t",
                           "kind": "other", "status": "pending", "futureField": [1, 2]},
                "_meta": {"x": 1}
            }),
        )?)?;
        self.cx.send_notification(UntypedMessage::new(
            "_scripted/note",
            json!({"n": 1, "nested": {"futureField": null}}),
        )?)?;
        let answer = self
            .cx
            .send_request(UntypedMessage::new(
                "_scripted/ask",
                json!({"q": "ping", "extra": [true]}),
            )?)
            .block_task()
            .await;
        let line = match answer {
            Ok(v) => format!("_scripted/ask -> {v}"),
            Err(e) => format!("_scripted/ask -> error {}", serde_json::to_string(&e)?),
        };
        self.say(&line)?;
        stop("end_turn")
    }

    async fn permission(&self) -> Result<Value, Error> {
        let answer = self
            .cx
            .send_request(UntypedMessage::new(
                "session/request_permission",
                json!({
                    "sessionId": self.session,
                    "toolCall": {"toolCallId": "tc-1", "title": "rm -rf /tmp/x"},
                    "options": [
                        {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
                        {"optionId": "deny", "name": "Deny", "kind": "reject_once"}
                    ]
                }),
            )?)
            .block_task()
            .await?;
        self.say(&format!("permission -> {}", answer["outcome"]))?;
        stop("end_turn")
    }
}

/// Says `line` as an `agent_message_chunk` of `session` and keeps it in the session's history.
pub(crate) fn say(
    shared: &Shared,
    cx: &v1::ConnectionTo<Client>,
    session: &str,
    line: &str,
) -> Result<(), Error> {
    let params = json!({
        "sessionId": session,
        "update": {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": line}}
    });
    shared.remember(session, params.clone());
    cx.send_notification(UntypedMessage::new("session/update", params)?)
}

/// A turn that ended holds nothing; keep the type small for the state map.
pub(crate) type TurnList = Vec<Arc<TurnHandle>>;
