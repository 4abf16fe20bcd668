//! The agent's state and its one catch-all handler.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};

use agent_client_protocol::v1::{self, Dispatch};
use agent_client_protocol::{Agent, Client, ConnectTo, Error, Stdio, UntypedMessage};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::turn::{Turn, TurnEvent, TurnHandle, TurnList, say};
use crate::{Options, Steering};

#[derive(Debug, Default)]
struct Session {
    cwd: String,
    title: Option<String>,
    updated_at: Option<String>,
    /// `session/update` params, in the order they were sent; replayed by `session/load`.
    history: Vec<Value>,
    /// Running turns, oldest first.
    turns: TurnList,
}

#[derive(Debug, Default)]
struct State {
    next_session: u64,
    next_turn: u64,
    sessions: BTreeMap<String, Session>,
    /// Running turns by their `hold` key.
    held: HashMap<String, Arc<TurnHandle>>,
    /// Releases that arrived before their turn started.
    released: HashSet<String>,
    /// `_scripted/hold` requests not answered yet, by key.
    held_requests: HashMap<String, v1::Responder<Value>>,
    events: Vec<Value>,
    received: Vec<Value>,
}

/// The agent's state, shared by its handler and its turns.
#[derive(Debug, Clone, Default)]
pub(crate) struct Shared(Arc<Mutex<State>>);

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.0.lock().expect("scripted agent state poisoned")
    }

    /// Adds the sessions of the native store that the agent does not hold yet.
    fn refresh(&self, options: &Options) -> Result<(), String> {
        let Some((harness, home)) = &options.store else {
            return Ok(());
        };
        let found = crate::store::read(harness, home)?;
        let mut g = self.lock();
        for s in found {
            g.sessions.entry(s.session_id).or_insert_with(|| Session {
                cwd: s.cwd,
                title: s.title,
                updated_at: s.updated_at,
                history: s.updates,
                turns: Vec::new(),
            });
        }
        Ok(())
    }

    fn event(&self, e: Value) {
        self.lock().events.push(e);
    }

    pub(crate) fn remember(&self, session: &str, params: Value) {
        if let Some(s) = self.lock().sessions.get_mut(session) {
            s.history.push(params);
        }
    }

    /// Registers a running turn; a `hold` whose release came early is released at once.
    pub(crate) fn start_turn(
        &self,
        session: &str,
        key: Option<String>,
        steerable: bool,
    ) -> (Arc<TurnHandle>, mpsc::UnboundedReceiver<TurnEvent>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let mut g = self.lock();
        g.next_turn += 1;
        let handle = Arc::new(TurnHandle {
            id: g.next_turn,
            steerable,
            tx,
        });
        if let Some(k) = &key {
            if g.released.remove(k) {
                let _ = handle.tx.send(TurnEvent::Release);
            }
            g.held.insert(k.clone(), handle.clone());
        }
        if let Some(s) = g.sessions.get_mut(session) {
            s.turns.push(handle.clone());
        }
        (handle, rx)
    }

    pub(crate) fn end_turn(&self, session: &str, id: u64) {
        let mut g = self.lock();
        if let Some(s) = g.sessions.get_mut(session) {
            s.turns.retain(|t| t.id != id);
        }
        g.held.retain(|_, t| t.id != id);
    }

    /// The latest turn of the session that takes steering.
    fn latest_turn(&self, session: &str) -> Option<Arc<TurnHandle>> {
        self.lock()
            .sessions
            .get(session)
            .and_then(|s| s.turns.iter().rev().find(|t| t.steerable).cloned())
    }
}

/// A test's view of the agent's record: what it saw, in order.
#[derive(Debug, Clone)]
pub struct AgentHandle(Shared);

impl AgentHandle {
    /// What the agent did: `{"prompt": sid, "text", "busy"}`, `{"cancel": sid}`,
    /// `{"load": sid}`, `{"list": params}`, `{"close": sid}`, `{"new": sid}`,
    /// `{"steering": sid, "text", "_meta"}`.
    pub fn events(&self) -> Vec<Value> {
        self.0.lock().events.clone()
    }

    /// Every request and notification the agent received, as `{"method", "params"}`.
    pub fn received(&self) -> Vec<Value> {
        self.0.lock().received.clone()
    }

    /// The texts of the prompts the agent received, in order.
    pub fn prompts(&self) -> Vec<String> {
        self.events()
            .iter()
            .filter(|e| e.get("prompt").is_some())
            .filter_map(|e| e["text"].as_str().map(str::to_owned))
            .collect()
    }
}

fn text_of(prompt: &Value) -> String {
    prompt
        .as_array()
        .into_iter()
        .flatten()
        .find(|b| b["type"] == "text")
        .and_then(|b| b["text"].as_str())
        .unwrap_or_default()
        .to_owned()
}

fn session_not_found(sid: &str) -> Error {
    Error::new(-32002, "Resource not found").data(json!({"sessionId": sid}))
}

/// The agent, as an in-process component (pass it to `Client.v1().connect_with(..)`) or to
/// serve over any transport.
pub fn agent(options: Options) -> impl ConnectTo<Client> {
    agent_with_handle(options).0
}

/// The agent, and a handle to read what it saw from the test that runs it.
pub fn agent_with_handle(options: Options) -> (impl ConnectTo<Client>, AgentHandle) {
    let shared = Shared::default();
    let record = AgentHandle(shared.clone());
    {
        let mut g = shared.lock();
        for s in &options.sessions {
            g.sessions.insert(
                s.session_id.clone(),
                Session {
                    cwd: s.cwd.clone(),
                    title: s.title.clone(),
                    updated_at: s.updated_at.clone(),
                    history: s.updates.clone(),
                    turns: Vec::new(),
                },
            );
        }
    }
    let options = Arc::new(options);
    let agent = Agent.v1().name(options.name.clone()).on_receive_dispatch(
        async move |d: Dispatch, cx: v1::ConnectionTo<Client>| handle(&shared, &options, d, cx),
        agent_client_protocol::on_receive_dispatch!(),
    );
    (agent, record)
}

/// Serves the agent on this process's stdin and stdout.
pub async fn run_stdio(options: Options) -> Result<(), Error> {
    let options = Options {
        process: true,
        ..options
    };
    ConnectTo::<Client>::connect_to(agent(options), Stdio::new()).await
}

fn handle(
    shared: &Shared,
    options: &Options,
    d: Dispatch,
    cx: v1::ConnectionTo<Client>,
) -> Result<(), Error> {
    match d {
        Dispatch::Response(result, router) => router.route_with_result(result),
        Dispatch::Notification(n) => {
            let (method, params) = n.into_parts();
            shared
                .lock()
                .received
                .push(json!({"method": method, "params": params}));
            if method == "_scripted/exit" {
                if options.process
                    && let Some(code) = params["code"].as_i64()
                {
                    // The process ends with the exit status asked for.
                    std::process::exit(i32::try_from(code).unwrap_or(1));
                }
                // A failing task ends the connection, as an agent that crashes would.
                return cx.spawn(async { Err(Error::internal_error().data("_scripted/exit")) });
            }
            notification(shared, &method, &params);
            Ok(())
        }
        Dispatch::Request(msg, responder) => {
            let (method, params) = msg.into_parts();
            shared
                .lock()
                .received
                .push(json!({"method": method, "params": params}));
            request(shared, options, &method, params, responder, cx)
        }
    }
}

fn notification(shared: &Shared, method: &str, params: &Value) {
    match method {
        "session/cancel" => {
            let sid = params["sessionId"].as_str().unwrap_or_default();
            shared.event(json!({"cancel": sid}));
            let turns = shared
                .lock()
                .sessions
                .get(sid)
                .map(|s| s.turns.clone())
                .unwrap_or_default();
            for t in turns {
                let _ = t.tx.send(TurnEvent::Cancel);
            }
        }
        "_scripted/release" => {
            let key = params["key"].as_str().unwrap_or_default().to_owned();
            let mut g = shared.lock();
            if let Some(responder) = g.held_requests.remove(&key) {
                let _ = responder.respond(json!({"released": key}));
                return;
            }
            match g.held.get(&key) {
                Some(t) => {
                    let _ = t.tx.send(TurnEvent::Release);
                }
                None => {
                    g.released.insert(key);
                }
            }
        }
        _ => {}
    }
}

fn request(
    shared: &Shared,
    options: &Options,
    method: &str,
    params: Value,
    responder: v1::Responder<Value>,
    cx: v1::ConnectionTo<Client>,
) -> Result<(), Error> {
    match method {
        "initialize" => responder.respond(initialize_answer(options)),
        "authenticate" => responder.respond(json!({})),
        "session/new" => {
            let sid = {
                let mut g = shared.lock();
                g.next_session += 1;
                let sid = format!("sess-{}", g.next_session);
                g.sessions.insert(
                    sid.clone(),
                    Session {
                        cwd: params["cwd"].as_str().unwrap_or("/").to_owned(),
                        ..Session::default()
                    },
                );
                g.events.push(json!({"new": sid}));
                sid
            };
            // An extra `_meta` the hub must pass through untouched.
            responder.respond(json!({"sessionId": sid, "_meta": {"scripted": {"fresh": true}}}))
        }
        "session/list" if options.list_sessions => {
            shared.event(json!({"list": params}));
            if let Err(e) = shared.refresh(options) {
                return responder.respond_with_error(Error::internal_error().data(json!(e)));
            }
            if !options.list_script.is_empty() {
                let asked = shared
                    .lock()
                    .events
                    .iter()
                    .filter(|e| e.get("list").is_some())
                    .count();
                let i = asked.saturating_sub(1).min(options.list_script.len() - 1);
                return responder.respond(options.list_script[i].clone());
            }
            let g = shared.lock();
            let start: usize = params["cursor"]
                .as_str()
                .and_then(|c| c.parse().ok())
                .unwrap_or(0);
            let all: Vec<_> = g.sessions.iter().collect();
            let end = (start + options.list_page_size).min(all.len());
            let sessions: Vec<Value> = all[start.min(end)..end]
                .iter()
                .map(|(id, s)| {
                    let mut info = json!({"sessionId": id, "cwd": s.cwd});
                    if let Some(t) = &s.title {
                        info["title"] = json!(t);
                    }
                    if let Some(u) = &s.updated_at {
                        info["updatedAt"] = json!(u);
                    }
                    info
                })
                .collect();
            let mut answer = json!({"sessions": sessions});
            if end < all.len() {
                answer["nextCursor"] = json!(end.to_string());
            }
            drop(g);
            responder.respond(answer)
        }
        "session/load" if options.load_session => {
            let sid = params["sessionId"].as_str().unwrap_or_default().to_owned();
            shared.event(json!({"load": sid}));
            if let Err(e) = shared.refresh(options) {
                return responder.respond_with_error(Error::internal_error().data(json!(e)));
            }
            let history = shared.lock().sessions.get(&sid).map(|s| s.history.clone());
            let Some(history) = history else {
                return responder.respond_with_error(session_not_found(&sid));
            };
            if options.fail_loads.contains(&sid) {
                return responder.respond_with_error(
                    Error::new(-32603, "Internal error")
                        .data(json!({"details": "the session file is damaged"})),
                );
            }
            let late = options.late_replay;
            cx.spawn({
                let cx = cx.clone();
                async move {
                    if late {
                        // Gemini CLI answers before its replay, from a promise it does not await.
                        responder.respond(json!({}))?;
                        for u in history {
                            tokio::task::yield_now().await;
                            cx.send_notification(UntypedMessage::new("session/update", u)?)?;
                        }
                        Ok(())
                    } else {
                        for u in history {
                            cx.send_notification(UntypedMessage::new("session/update", u)?)?;
                        }
                        responder.respond(json!({}))
                    }
                }
            })
        }
        "session/close" if options.close_sessions => {
            shared.event(json!({"close": params["sessionId"]}));
            responder.respond(json!({}))
        }
        "session/prompt" => prompt(shared, options, params, responder, cx),
        "_session/steering" if options.steering == Steering::SessionSteering => {
            steering(shared, options, params, responder, cx)
        }
        "_scripted/log" => {
            let g = shared.lock();
            responder.respond(json!({"events": g.events, "received": g.received}))
        }
        "_scripted/echo" => responder.respond(params),
        "_scripted/stderr" => {
            // Bytes written to stderr as they are (not UTF-8 if so given); what the write
            // gave is the answer.
            let bytes: Vec<u8> = params["bytes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|b| b.as_u64().and_then(|b| u8::try_from(b).ok()))
                .collect();
            let written = std::io::Write::write_all(&mut std::io::stderr(), &bytes)
                .and_then(|()| std::io::Write::flush(&mut std::io::stderr()));
            responder.respond(json!({"written": written.map_err(|e| e.to_string()).err()}))
        }
        "_scripted/pid" => responder.respond(json!({"pid": std::process::id()})),
        "_scripted/hold" => {
            let key = params["key"].as_str().unwrap_or_default().to_owned();
            let mut g = shared.lock();
            g.events.push(json!({"holding": key}));
            g.held_requests.insert(key, responder);
            Ok(())
        }
        other => responder.respond_with_error(Error::method_not_found().data(json!(other))),
    }
}

fn initialize_answer(options: &Options) -> Value {
    let mut session_caps = json!({});
    if options.list_sessions {
        session_caps["list"] = json!({});
    }
    if options.close_sessions {
        session_caps["close"] = json!({});
    }
    let mut caps = json!({
        "loadSession": options.load_session,
        "promptCapabilities": {"image": false, "audio": false, "embeddedContext": true},
        "sessionCapabilities": session_caps,
        "_meta": {"scripted": {"version": 1}}
    });
    if options.steering == Steering::PromptQueueing {
        caps["_meta"]["claudeCode"] = json!({"promptQueueing": true});
    }
    let mut answer = json!({
        "protocolVersion": 1,
        "agentCapabilities": caps,
        "authMethods": [],
        "agentInfo": {"name": options.name, "version": "0.1.0"},
        // A field ACP does not define, which a transparent hub keeps.
        "scriptedFutureField": {"kept": true}
    });
    if options.steering == Steering::SessionSteering {
        answer["_meta"] = json!({"steering": {"supported": true}});
    }
    answer
}

fn prompt(
    shared: &Shared,
    options: &Options,
    params: Value,
    responder: v1::Responder<Value>,
    cx: v1::ConnectionTo<Client>,
) -> Result<(), Error> {
    let sid = params["sessionId"].as_str().unwrap_or_default().to_owned();
    let text = text_of(&params["prompt"]);
    {
        let mut g = shared.lock();
        g.events.push(json!({
            "prompt": sid,
            "text": text,
            "busy": params.pointer("/_meta/asp/busy").cloned().unwrap_or(Value::Null)
        }));
        let Some(s) = g.sessions.get_mut(&sid) else {
            drop(g);
            return responder.respond_with_error(session_not_found(&sid));
        };
        if s.title.is_none() {
            s.title = Some(text.clone());
        }
        for block in params["prompt"].as_array().into_iter().flatten() {
            s.history.push(json!({
                "sessionId": sid,
                "update": {"sessionUpdate": "user_message_chunk", "content": block}
            }));
        }
    }
    if options.steering == Steering::PromptQueueing
        && let Some(turn) = shared.latest_turn(&sid)
    {
        return match turn.tx.send(TurnEvent::Join(text, Box::new(responder))) {
            Ok(()) => Ok(()),
            Err(mpsc::error::SendError(TurnEvent::Join(text, responder))) => {
                start(shared, cx, sid, text, *responder)
            }
            Err(_) => unreachable!("the event sent was a join"),
        };
    }
    start(shared, cx, sid, text, responder)
}

fn start(
    shared: &Shared,
    cx: v1::ConnectionTo<Client>,
    session: String,
    text: String,
    responder: v1::Responder<Value>,
) -> Result<(), Error> {
    let turn = Turn {
        shared: shared.clone(),
        cx: cx.clone(),
        session,
        text,
        rpc_cancel: responder.cancellation(),
    };
    // Off the dispatch loop, so cancel, release and steering reach the turn while it runs.
    cx.spawn(turn.run(responder))
}

fn steering(
    shared: &Shared,
    options: &Options,
    params: Value,
    responder: v1::Responder<Value>,
    cx: v1::ConnectionTo<Client>,
) -> Result<(), Error> {
    let sid = params["sessionId"].as_str().unwrap_or_default().to_owned();
    let text = text_of(&params["prompt"]);
    shared.event(json!({"steering": sid, "text": text, "_meta": params["_meta"]}));
    if let Some(outcome) = &options.steering_outcome {
        return responder.respond(json!({"outcome": outcome}));
    }
    if let Some(turn) = shared.latest_turn(&sid)
        && turn.tx.send(TurnEvent::Inject(text.clone())).is_ok()
    {
        return responder.respond(json!({"outcome": "injected"}));
    }
    if params.pointer("/_meta/steering/idleBehavior") == Some(&json!("promptRequired")) {
        return responder.respond(json!({"outcome": "promptRequired", "reason": "noRunningTurn"}));
    }
    say(shared, &cx, &sid, &text)?;
    responder.respond(json!({"outcome": "startedNewTurn"}))
}
