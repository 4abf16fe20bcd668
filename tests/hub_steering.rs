//! Steering through the hub: what a `session/prompt` does when it arrives while a turn of its
//! session runs, as its `_meta.asp.busy` says.
//!
//! The scripted agent's `hold KEY` turns stay open until the test releases them, so every
//! "while a turn runs" here is certain, not a matter of timing.

use crate::support::hub::{TestClient, guarded, options, with_hub};
use asp_scripted_agent::{Options, Steering, agent_with_handle};
use serde_json::{Value, json};

fn stop(answer: &Value) -> &str {
    answer["stopReason"].as_str().unwrap_or("<none>")
}

fn code(e: &agent_client_protocol::Error) -> i32 {
    i32::from(e.code)
}

fn position(lines: &[String], line: &str) -> usize {
    lines
        .iter()
        .position(|l| l == line)
        .unwrap_or_else(|| panic!("{line:?} not said; said: {lines:?}"))
}

async fn started(c: &TestClient, sid: &str, key: &str) {
    c.said(sid, &format!("{key} started")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_prompts_wait_for_the_running_turn_and_run_in_arrival_order() {
    let (agent, log) = agent_with_handle(Options::default());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        let a = c.prompt(&sid, "hold A", None);
        started(&c, &sid, "A").await;
        let b = c.prompt(&sid, "hold B", Some("queue"));
        let q = c.prompt(&sid, "hold C", Some("queue"));
        c.sync().await;
        assert_eq!(log.prompts(), ["hold A"], "queued prompts wait in the hub");

        c.release("A");
        assert_eq!(
            stop(&a.await?),
            "end_turn",
            "the running turn is not disturbed"
        );
        started(&c, &sid, "B").await;
        c.sync().await;
        assert_eq!(
            log.prompts(),
            ["hold A", "hold B"],
            "one queued prompt at a time"
        );

        c.release("B");
        assert_eq!(stop(&b.await?), "end_turn");
        c.release("C");
        assert_eq!(stop(&q.await?), "end_turn");

        let lines = c.lines(&sid);
        assert!(position(&lines, "A done") < position(&lines, "B started"));
        assert!(position(&lines, "B done") < position(&lines, "C started"));
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupt_cancels_the_running_turn_and_starts_its_own_right_after() {
    let (agent, log) = agent_with_handle(Options::default());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        let a = c.prompt(&sid, "hold A", None);
        started(&c, &sid, "A").await;
        let b = c.prompt(&sid, "Skip the tests.", Some("interrupt"));

        assert_eq!(
            stop(&a.await?),
            "cancelled",
            "the interrupted request ends cancelled"
        );
        assert_eq!(
            stop(&b.await?),
            "end_turn",
            "the interrupting prompt gets its own turn"
        );
        let lines = c.lines(&sid);
        assert!(position(&lines, "A cancelled") < position(&lines, "Skip the tests."));

        let events = log.events();
        let cancel = events
            .iter()
            .position(|e| e.get("cancel").is_some())
            .unwrap();
        let prompt_b = events
            .iter()
            .position(|e| e["text"] == "Skip the tests.")
            .unwrap();
        assert!(
            cancel < prompt_b,
            "the agent is told to cancel before it sees the new prompt"
        );
        assert_eq!(
            events[prompt_b]["busy"], "interrupt",
            "_meta.asp.busy reaches the agent as sent"
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupt_goes_ahead_of_queued_prompts() {
    let (agent, log) = agent_with_handle(Options::default());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        let a = c.prompt(&sid, "hold A", None);
        started(&c, &sid, "A").await;
        let q = c.prompt(&sid, "hold Q", Some("queue"));
        let i = c.prompt(&sid, "hold I", Some("interrupt"));
        assert_eq!(stop(&a.await?), "cancelled");
        started(&c, &sid, "I").await;
        c.sync().await;
        assert_eq!(log.prompts(), ["hold A", "hold I"]);
        c.release("I");
        assert_eq!(stop(&i.await?), "end_turn");
        c.release("Q");
        assert_eq!(stop(&q.await?), "end_turn");
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_prompt_without_a_mode_gets_the_agents_default_and_counts_as_running() {
    let (agent, log) = agent_with_handle(Options::default());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        let a = c.prompt(&sid, "hold A", None);
        started(&c, &sid, "A").await;
        // This agent's own default is to run a second prompt beside the first.
        let b = c.prompt(&sid, "hold B", None);
        started(&c, &sid, "B").await;
        let q = c.prompt(&sid, "hold Q", Some("queue"));

        c.release("A");
        assert_eq!(stop(&a.await?), "end_turn");
        c.sync().await;
        assert_eq!(
            log.prompts(),
            ["hold A", "hold B"],
            "the queued prompt waits for B too"
        );
        c.release("B");
        assert_eq!(stop(&b.await?), "end_turn");
        started(&c, &sid, "Q").await;
        c.release("Q");
        assert_eq!(stop(&q.await?), "end_turn");
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mode_not_offered_is_refused_naming_it_and_the_modes_on_offer() {
    let (agent, log) = agent_with_handle(Options::default());
    with_hub(options(), agent, async |c| {
        let init = c.initialize().await;
        assert_eq!(
            init["agentCapabilities"]["_meta"]["asp"]["steering"],
            json!({"busy": ["queue", "interrupt"]}),
            "no steer without a way to steer the agent behind"
        );
        let sid = c.new_session().await;
        // Refused on an idle session too: the answer does not depend on timing.
        let e = c
            .prompt(&sid, "echo idle", Some("steer"))
            .await
            .unwrap_err();
        assert_eq!(code(&e), -31001);
        assert_eq!(
            e.data,
            Some(json!({"busy": "steer", "offered": ["queue", "interrupt"]}))
        );
        assert!(
            e.message.contains("steer") && e.message.contains("queue, interrupt"),
            "{}",
            e.message
        );

        let a = c.prompt(&sid, "hold A", None);
        started(&c, &sid, "A").await;
        let e = c
            .prompt(&sid, "echo later", Some("later"))
            .await
            .unwrap_err();
        assert_eq!(code(&e), -31001);
        assert_eq!(e.data.as_ref().unwrap()["busy"], "later");
        let e = c
            .request(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [], "_meta": {"asp": {"busy": 3}}}),
            )
            .await
            .unwrap_err();
        assert_eq!(code(&e), -31001);
        c.release("A");
        assert_eq!(stop(&a.await?), "end_turn");
        assert_eq!(
            log.prompts(),
            ["hold A"],
            "a refused prompt never reaches the agent"
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn session_cancel_cancels_the_running_turn_and_answers_every_waiting_prompt() {
    let (agent, log) = agent_with_handle(Options::default());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        let other = c.new_session().await;
        let a = c.prompt(&sid, "hold A", None);
        let x = c.prompt(&other, "hold X", None);
        started(&c, &sid, "A").await;
        started(&c, &other, "X").await;
        let b = c.prompt(&sid, "hold B", Some("queue"));
        let i = c.prompt(&sid, "hold I", Some("interrupt"));
        let y = c.prompt(&other, "hold Y", Some("queue"));
        c.cancel(&sid);

        let (a, b, i) = futures::join!(a, b, i);
        assert_eq!(stop(&a?), "cancelled");
        assert_eq!(stop(&b?), "cancelled");
        assert_eq!(stop(&i?), "cancelled");
        c.sync().await;
        assert_eq!(
            log.prompts(),
            ["hold A", "hold X"],
            "cancelled prompts never reach the agent"
        );

        // The other session is untouched.
        c.release("X");
        assert_eq!(stop(&x.await?), "end_turn");
        c.release("Y");
        assert_eq!(stop(&y.await?), "end_turn");

        // The session takes prompts again.
        c.release("Z");
        assert_eq!(
            stop(&c.prompt(&sid, "hold Z", Some("queue")).await?),
            "end_turn"
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_request_for_a_waiting_prompt_takes_it_out_of_the_queue() {
    let (agent, log) = agent_with_handle(Options::default());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        let a = c.prompt(&sid, "hold A", None);
        started(&c, &sid, "A").await;
        let sent = c.cx.send_request(agent_client_protocol::UntypedMessage::new(
            "session/prompt",
            json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hold B"}], "_meta": {"asp": {"busy": "queue"}}}),
        )?);
        let handle = sent.cancellation_handle();
        let b = sent.block_task();
        let q = c.prompt(&sid, "hold Q", Some("queue"));
        handle.cancel()?;
        let e = guarded("the cancelled prompt's answer", b).await.unwrap_err();
        assert_eq!(code(&e), -32800);

        c.release("A");
        assert_eq!(stop(&a.await?), "end_turn");
        started(&c, &sid, "Q").await;
        c.release("Q");
        assert_eq!(stop(&q.await?), "end_turn");
        assert_eq!(log.prompts(), ["hold A", "hold Q"]);
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancel_request_for_a_running_prompt_reaches_the_agent() {
    let (agent, log) = agent_with_handle(Options::default());
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        let sent =
            c.cx.send_request(agent_client_protocol::UntypedMessage::new(
                "session/prompt",
                json!({"sessionId": sid, "prompt": [{"type": "text", "text": "hold A"}]}),
            )?);
        let handle = sent.cancellation_handle();
        let a = sent.block_task();
        started(&c, &sid, "A").await;
        handle.cancel()?;
        // Carried to the agent with the hub's own request id; the agent ends the turn.
        assert_eq!(stop(&guarded("the cancelled turn", a).await?), "cancelled");
        assert_eq!(c.lines(&sid).last().unwrap(), "A cancelled");
        assert_eq!(log.prompts(), ["hold A"]);
        Ok(())
    })
    .await;
}

fn steering(mode: Steering) -> Options {
    Options {
        steering: mode,
        ..Options::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steer_through_session_steering_joins_the_running_answer_and_both_end_together() {
    let (agent, log) = agent_with_handle(steering(Steering::SessionSteering));
    with_hub(options(), agent, async |c| {
        let init = c.initialize().await;
        assert_eq!(
            init["agentCapabilities"]["_meta"]["asp"]["steering"]["busy"],
            json!(["steer", "queue", "interrupt"])
        );
        assert_eq!(
            init["_meta"],
            json!({"steering": {"supported": true}}),
            "the agent's own advertisement is kept"
        );
        let sid = c.new_session().await;
        let a = c.prompt(&sid, "hold A", None);
        started(&c, &sid, "A").await;
        let b = c.prompt(&sid, "Keep it short.", Some("steer"));
        c.said(&sid, "A joined: Keep it short.").await;

        c.release("A");
        assert_eq!(stop(&a.await?), "end_turn");
        assert_eq!(stop(&b.await?), "end_turn", "one answer answers both");
        assert_eq!(
            log.prompts(),
            ["hold A"],
            "the steering prompt went in as steering, not as a prompt"
        );
        let steer = log
            .events()
            .into_iter()
            .find(|e| e.get("steering").is_some())
            .unwrap();
        assert_eq!(steer["text"], "Keep it short.");
        assert_eq!(
            steer["_meta"],
            json!({"steering": {"idleBehavior": "promptRequired"}})
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_joint_answer_ends_both_requests_cancelled() {
    for mode in [Steering::SessionSteering, Steering::PromptQueueing] {
        let (agent, _log) = agent_with_handle(steering(mode));
        with_hub(options(), agent, async |c| {
            c.initialize().await;
            let sid = c.new_session().await;
            let a = c.prompt(&sid, "hold A", None);
            started(&c, &sid, "A").await;
            let b = c.prompt(&sid, "steer B", Some("steer"));
            c.said(&sid, "A joined: steer B").await;
            c.cancel(&sid);
            // A prompt-queueing agent ended A `end_turn` when it took B up; the hub held that
            // answer, and A ends with the joint answer, cancelled.
            assert_eq!(stop(&a.await?), "cancelled", "{mode:?}");
            assert_eq!(stop(&b.await?), "cancelled", "{mode:?}");
            Ok(())
        })
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steer_through_prompt_queueing_sends_the_prompt_into_the_running_turn() {
    let (agent, log) = agent_with_handle(steering(Steering::PromptQueueing));
    with_hub(options(), agent, async |c| {
        let init = c.initialize().await;
        assert_eq!(
            init["agentCapabilities"]["_meta"]["asp"]["steering"]["busy"],
            json!(["steer", "queue", "interrupt"])
        );
        let sid = c.new_session().await;
        let a = c.prompt(&sid, "hold A", None);
        started(&c, &sid, "A").await;
        let b = c.prompt(&sid, "Use tabs.", Some("steer"));
        c.said(&sid, "A joined: Use tabs.").await;
        c.release("A");
        assert_eq!(stop(&a.await?), "end_turn");
        assert_eq!(stop(&b.await?), "end_turn");
        assert_eq!(log.prompts(), ["hold A", "Use tabs."]);
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steer_on_an_idle_session_is_an_ordinary_prompt() {
    let (agent, log) = agent_with_handle(steering(Steering::SessionSteering));
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        assert_eq!(
            stop(&c.prompt(&sid, "hello", Some("steer")).await?),
            "end_turn"
        );
        assert_eq!(c.lines(&sid), ["hello"]);
        assert_eq!(log.prompts(), ["hello"]);
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_the_agent_cannot_take_into_the_turn_is_sent_as_the_next_prompt() {
    let (agent, log) = agent_with_handle(steering(Steering::SessionSteering));
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        // A `wait` turn takes no steering: the agent answers `promptRequired`.
        let a = c.prompt(&sid, "wait A", None);
        started(&c, &sid, "A").await;
        let q = c.prompt(&sid, "hold Q", Some("queue"));
        let b = c.prompt(&sid, "hold B", Some("steer"));
        // Once this round trip is back, the agent has answered the steering request.
        c.sync().await;
        assert!(log.events().iter().any(|e| e.get("steering").is_some()));
        c.release("A");
        assert_eq!(stop(&a.await?), "end_turn");
        started(&c, &sid, "B").await;
        c.release("B");
        assert_eq!(stop(&b.await?), "end_turn", "it got an answer of its own");
        c.release("Q");
        assert_eq!(stop(&q.await?), "end_turn");
        assert_eq!(
            log.prompts(),
            ["wait A", "hold B", "hold Q"],
            "first in line, before the queue"
        );
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_the_agent_fails_is_refused_never_run_another_way() {
    let options_ = Options {
        steering_outcome: Some("failed".into()),
        ..steering(Steering::SessionSteering)
    };
    let (agent, log) = agent_with_handle(options_);
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        let a = c.prompt(&sid, "hold A", None);
        started(&c, &sid, "A").await;
        let e = c.prompt(&sid, "steer B", Some("steer")).await.unwrap_err();
        assert_eq!(code(&e), -31003);
        assert_eq!(e.data, Some(json!({"busy": "steer", "outcome": "failed"})));
        c.release("A");
        assert_eq!(stop(&a.await?), "end_turn");
        assert_eq!(log.prompts(), ["hold A"]);
        Ok(())
    })
    .await;
}

/// Many prompts in flight over several sessions at once: each session keeps its own order,
/// no answer is lost, nothing deadlocks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_prompts_across_sessions_keep_each_sessions_order() {
    const SESSIONS: usize = 4;
    const QUEUED: usize = 6;
    let (agent, log) = agent_with_handle(steering(Steering::SessionSteering));
    with_hub(options(), agent, async |c| {
        c.initialize().await;
        let mut sids = Vec::new();
        for _ in 0..SESSIONS {
            sids.push(c.new_session().await);
        }
        let mut answers = Vec::new();
        for (s, sid) in sids.iter().enumerate() {
            answers.push((
                format!("s{s}-run"),
                "end_turn",
                c.prompt(sid, &format!("hold s{s}-run"), None),
            ));
        }
        for (s, sid) in sids.iter().enumerate() {
            started(&c, sid, &format!("s{s}-run")).await;
        }
        // Interleave the sessions' prompts; every session gets queues, a steer, a refusal.
        for q in 0..QUEUED {
            for (s, sid) in sids.iter().enumerate() {
                let key = format!("s{s}-q{q}");
                answers.push((
                    key.clone(),
                    "end_turn",
                    c.prompt(sid, &format!("hold {key}"), Some("queue")),
                ));
                if q == 2 {
                    answers.push((
                        format!("s{s}-steer"),
                        "end_turn",
                        c.prompt(sid, &format!("steer s{s}"), Some("steer")),
                    ));
                }
            }
        }
        for (s, sid) in sids.iter().enumerate() {
            c.said(sid, &format!("s{s}-run joined: steer s{s}")).await;
        }
        // Release everything at once, in an order unrelated to the queues.
        for q in (0..QUEUED).rev() {
            for s in 0..SESSIONS {
                c.release(&format!("s{s}-q{q}"));
            }
        }
        for s in 0..SESSIONS {
            c.release(&format!("s{s}-run"));
        }
        let keys: Vec<(String, &str)> = answers.iter().map(|(k, s, _)| (k.clone(), *s)).collect();
        let results = futures::future::join_all(answers.into_iter().map(|(_, _, f)| f)).await;
        for ((key, want), got) in keys.iter().zip(results) {
            assert_eq!(stop(&got?), *want, "{key}");
        }
        for (s, sid) in sids.iter().enumerate() {
            let lines = c.lines(sid);
            let mut last = position(&lines, &format!("s{s}-run done"));
            for q in 0..QUEUED {
                let start = position(&lines, &format!("s{s}-q{q} started"));
                assert!(
                    start > last,
                    "session {s}: q{q} started before the turn before it ended: {lines:?}"
                );
                last = position(&lines, &format!("s{s}-q{q} done"));
            }
            let prompts: Vec<String> = log
                .events()
                .iter()
                .filter(|e| e["prompt"] == sid.as_str())
                .map(|e| e["text"].as_str().unwrap().to_owned())
                .collect();
            let mut want = vec![format!("hold s{s}-run")];
            want.extend((0..QUEUED).map(|q| format!("hold s{s}-q{q}")));
            assert_eq!(
                prompts, want,
                "session {s} reached the agent in arrival order"
            );
        }
        Ok(())
    })
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_connection_ends_waiting_prompts_cleanly() {
    let (agent, log) = agent_with_handle(Options::default());
    let (client_end, hub_end) = agent_client_protocol::Channel::duplex();
    let hub = tokio::spawn(asp_hub::serve(options(), hub_end, agent));
    crate::support::hub::drive(client_end, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        let _a = c.prompt(&sid, "hold A", None);
        started(&c, &sid, "A").await;
        let _b = c.prompt(&sid, "hold B", Some("queue"));
        let _q = c.prompt(&sid, "hold C", Some("queue"));
        c.sync().await;
        // Leave with a turn running and two prompts waiting.
        Ok(())
    })
    .await;
    let ended = guarded("the hub to end after its client left", hub)
        .await
        .unwrap();
    assert!(ended.is_ok(), "{ended:?}");
    assert_eq!(
        log.prompts(),
        ["hold A"],
        "nothing waiting is sent on after the client left"
    );
}

/// A client leaves by closing its two directions one after the other, and what the hub has
/// to tell it in between (here an answer the hub gives itself, which it sends before it can
/// see the input end) finds nobody reading. The run still ends as the client leaving, not as
/// a failed connection. This once depended on timing: a client whose dropped requests sent
/// `$/cancel_request` just before it left failed the hub now and then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_before_it_leaves_ends_the_run_cleanly() {
    use agent_client_protocol::TransportFrame;
    use futures::StreamExt as _;

    let (agent, log) = agent_with_handle(Options::default());
    let (client_end, hub_end) = agent_client_protocol::Channel::duplex();
    let hub = tokio::spawn(asp_hub::serve(options(), hub_end, agent));
    let (mut from_hub, to_hub) = client_end.into_parts();
    let send = |message: Value| {
        to_hub
            .unbounded_send(TransportFrame::parse_json(&message.to_string()))
            .unwrap();
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params":
        {"protocolVersion": 1, "clientCapabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}),
    );
    let answer = guarded("the initialize answer", from_hub.next())
        .await
        .expect("an answer");
    let TransportFrame::Single(answer) = answer else {
        panic!("{answer:?}")
    };
    assert_eq!(serde_json::to_value(&answer).unwrap()["id"], 1);

    // The client stops reading; its input is still open.
    drop(from_hub);
    // Answered by the hub at once, in its dispatch loop, so before it sees the input end.
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "_asp/no-such-method", "params": {}}));
    // Sent on; the agent's answer comes back whenever it does.
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "_scripted/echo", "params": {"late": true}}));
    drop(to_hub);

    let ended = guarded("the hub to end after its client left", hub)
        .await
        .unwrap();
    assert!(ended.is_ok(), "{ended:?}");
    assert!(
        log.received()
            .iter()
            .all(|m| m["method"] != "_asp/no-such-method"),
        "the hub answered it itself"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_the_agent_goes_away_every_waiting_prompt_is_answered() {
    let (agent, _log) = agent_with_handle(Options::default());
    let (client_end, hub_end) = agent_client_protocol::Channel::duplex();
    let hub = tokio::spawn(asp_hub::serve(options(), hub_end, agent));
    crate::support::hub::drive(client_end, async |c| {
        c.initialize().await;
        let sid = c.new_session().await;
        let a = c.prompt(&sid, "hold A", None);
        started(&c, &sid, "A").await;
        let b = c.prompt(&sid, "hold B", Some("queue"));
        c.sync().await;
        c.notify("_scripted/exit", json!({}));
        assert!(a.await.is_err(), "the running prompt fails");
        let e = b.await.unwrap_err();
        assert!(
            e.message.contains("the agent behind the hub has exited"),
            "{e:?}"
        );
        Ok(())
    })
    .await;
    let ended = guarded("the hub to end after its agent left", hub)
        .await
        .unwrap();
    assert!(
        matches!(
            ended,
            Err(asp_hub::HubError::AgentExited {
                exit: None,
                detail: Some(_)
            })
        ),
        "the hub says the agent exited, and why: {ended:?}"
    );
}
