//! A test client: the SDK's own client, recording what it is sent, answering the agent's
//! requests like a permissive client, and waiting on events (a line said, a message received)
//! rather than on time. The only timeouts are generous deadlock guards.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use agent_client_protocol::v1::{self, Dispatch};
use agent_client_protocol::{Agent, ConnectTo, Error, UntypedMessage};
use serde_json::{Value, json};
use tokio::sync::watch;

/// How long anything may take before a test calls it a deadlock. Never an expectation of
/// speed: a loaded two-core machine is still far below it.
pub const GUARD: Duration = Duration::from_secs(120);

pub async fn guarded<T>(what: &str, fut: impl Future<Output = T>) -> T {
    tokio::time::timeout(GUARD, fut)
        .await
        .unwrap_or_else(|_| panic!("deadlock guard: {what} did not happen within {GUARD:?}"))
}

/// Everything the client received from the hub that was not an answer, in order.
#[derive(Debug, Clone)]
pub struct Seen {
    messages: Arc<Mutex<Vec<Value>>>,
    count: Arc<watch::Sender<usize>>,
}

impl Default for Seen {
    fn default() -> Self {
        Seen {
            messages: Arc::default(),
            count: Arc::new(watch::channel(0).0),
        }
    }
}

impl Seen {
    pub fn record(&self, message: Value) {
        let mut m = self.messages.lock().unwrap();
        m.push(message);
        self.count.send_replace(m.len());
    }

    /// `{"method", "params"}` of every notification and request from the hub.
    pub fn all(&self) -> Vec<Value> {
        self.messages.lock().unwrap().clone()
    }

    pub fn len(&self) -> usize {
        self.messages.lock().unwrap().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Waits until `pred` holds over everything received.
    pub async fn wait_for(&self, what: &str, pred: impl Fn(&[Value]) -> bool) {
        let mut rx = self.count.subscribe();
        guarded(what, async {
            rx.wait_for(|_| pred(&self.messages.lock().unwrap()))
                .await
                .unwrap();
        })
        .await;
    }

    /// The agent's lines (texts of `agent_message_chunk`s) for `sid`, in order.
    pub fn lines(&self, sid: &str) -> Vec<String> {
        lines_of(&self.all(), sid)
    }
}

pub fn lines_of(messages: &[Value], sid: &str) -> Vec<String> {
    messages
        .iter()
        .filter(|m| m["method"] == "session/update" && m["params"]["sessionId"] == sid)
        .filter(|m| m["params"]["update"]["sessionUpdate"] == "agent_message_chunk")
        .filter_map(|m| {
            m["params"]["update"]["content"]["text"]
                .as_str()
                .map(str::to_owned)
        })
        .collect()
}

/// The client side of a test.
#[derive(Debug)]
pub struct TestClient {
    pub cx: v1::ConnectionTo<Agent>,
    pub seen: Seen,
}

impl TestClient {
    pub async fn request(&self, method: &str, params: Value) -> Result<Value, Error> {
        guarded(
            method,
            self.cx
                .send_request(UntypedMessage::new(method, params)?)
                .block_task(),
        )
        .await
    }

    pub fn notify(&self, method: &str, params: Value) {
        self.cx
            .send_notification(UntypedMessage::new(method, params).unwrap())
            .unwrap();
    }

    /// `initialize`, raw; returns the hub's answer.
    pub async fn initialize(&self) -> Value {
        self.request(
            "initialize",
            json!({"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "test", "version": "1"}}),
        )
        .await
        .expect("initialize")
    }

    pub async fn new_session(&self) -> String {
        let answer = self
            .request("session/new", json!({"cwd": "/tmp", "mcpServers": []}))
            .await
            .expect("session/new");
        answer["sessionId"].as_str().unwrap().to_owned()
    }

    /// Sends a prompt now (the request is on the wire when this returns) and gives its answer
    /// as a future.
    pub fn prompt(
        &self,
        sid: &str,
        text: &str,
        busy: Option<&str>,
    ) -> impl Future<Output = Result<Value, Error>> + Send + 'static + use<> {
        let mut params = json!({"sessionId": sid, "prompt": [{"type": "text", "text": text}]});
        if let Some(b) = busy {
            params["_meta"] = json!({"asp": {"busy": b}});
        }
        let answer = self
            .cx
            .send_request(UntypedMessage::new("session/prompt", params).unwrap())
            .block_task();
        let what = format!("the answer to {text:?}");
        async move { guarded(&what, answer).await }
    }

    /// Ends a held turn of the scripted agent (a release before the turn starts is kept).
    pub fn release(&self, key: &str) {
        self.notify("_scripted/release", json!({"key": key}));
    }

    pub fn cancel(&self, sid: &str) {
        self.notify("session/cancel", json!({"sessionId": sid}));
    }

    /// Waits until the agent has said `line` in `sid`.
    pub async fn said(&self, sid: &str, line: &str) {
        self.seen
            .wait_for(&format!("{sid} saying {line:?}"), |m| {
                lines_of(m, sid).iter().any(|l| l == line)
            })
            .await;
    }

    pub fn lines(&self, sid: &str) -> Vec<String> {
        self.seen.lines(sid)
    }

    /// A round trip to the agent through the hub. Every message the client sent before it
    /// has been routed by the hub (the hub handles a connection's messages in order), so what
    /// the agent's log shows afterwards is settled.
    pub async fn sync(&self) {
        self.request("_scripted/echo", json!({"sync": true}))
            .await
            .expect("a round trip through the hub");
    }
}

/// Answers the agent's requests the way a permissive client would; records the rest.
pub async fn answer_as_client(seen: &Seen, d: Dispatch) -> Result<(), Error> {
    match d {
        Dispatch::Response(result, router) => router.route_with_result(result),
        Dispatch::Notification(n) => {
            let (method, params) = n.into_parts();
            seen.record(json!({"method": method, "params": params}));
            Ok(())
        }
        Dispatch::Request(msg, responder) => {
            let (method, params) = msg.into_parts();
            seen.record(json!({"method": method, "params": params}));
            match method.as_str() {
                "session/request_permission" => responder
                    .respond(json!({"outcome": {"outcome": "selected", "optionId": "allow"}})),
                "_scripted/ask" => {
                    responder.respond(json!({"pong": true, "futureField": {"kept": [1, 2.5]}}))
                }
                other => responder.respond_with_error(Error::method_not_found().data(json!(other))),
            }
        }
    }
}

/// Runs `test` as a client of whatever `transport` reaches: an agent, a hub, a subprocess.
pub async fn drive(
    transport: impl ConnectTo<agent_client_protocol::Client> + 'static,
    test: impl AsyncFnOnce(TestClient) -> Result<(), Error>,
) {
    let seen = Seen::default();
    let recorder = seen.clone();
    let run = agent_client_protocol::Client
        .v1()
        .name("test-client")
        .on_receive_dispatch(
            async move |d: Dispatch, _cx: v1::ConnectionTo<Agent>| {
                answer_as_client(&recorder, d).await
            },
            agent_client_protocol::on_receive_dispatch!(),
        )
        .connect_with(transport, async move |cx| {
            test(TestClient { cx, seen }).await
        });
    guarded("the test", run)
        .await
        .expect("the test's connection");
}
