//! The router of one upstream session (`src/router.rs`), driven through
//! [`Upstream::call`] against a scripted stdio upstream: Manifold mints every
//! id and progress token it sends; an answer reaches the caller whose id it
//! carries, whatever the order, and at most once (unknown, null and repeated
//! ids are dropped, the late ones counted); a cancelled, dropped or timed-out
//! call (the last over HTTP) tells the upstream (`notifications/cancelled`)
//! and frees its place;
//! progress goes to its own caller under the caller's own token; a
//! server→client request goes to the only call in flight, else is refused,
//! and a ping is answered.

use manifold_config::LimitsConfig;
use manifold_upstream::{CallEvent, CallOutcome, UpstreamError};
use serde_json::value::RawValue;
use serde_json::{json, Value};
use std::time::Duration;

use crate::support::http::{session_basics, HttpFake, Req, Resp};
use crate::support::stdio::{Peer, StdioFake};
use crate::support::{bounded, config, eventually, next, outcome, result, text, tool, Running};

/// A ready upstream over the relay, and its child's side of the talk.
async fn ready(limits: LimitsConfig) -> (Running, Peer, StdioFake) {
    let fake = StdioFake::bind().await;
    let run = Running::spawn_with(config("fake", fake.transport()), limits);
    let mut peer = fake.accept().await;
    peer.ready().await;
    run.ready().await;
    (run, peer, fake)
}

/// A `tools/call` of `name` (no arguments) started, and the request the
/// upstream saw for it.
async fn sent(run: &Running, peer: &mut Peer, name: &str) -> (manifold_upstream::Call, Value) {
    let call = run
        .up
        .call("tools/call", tool(name, json!({})), vec![])
        .await
        .expect("sent");
    (call, peer.expect("tools/call").await)
}

/// The id Manifold gave a request, which must be a number it minted.
fn minted(req: &Value) -> u64 {
    req["id"]
        .as_u64()
        .unwrap_or_else(|| panic!("Manifold sends numeric ids it mints: {req}"))
}

#[tokio::test]
async fn answers_that_come_out_of_order_reach_their_own_callers() {
    bounded(async {
        let (run, mut peer, _fake) = ready(LimitsConfig::default()).await;
        let (mut calls, mut seen) = (Vec::new(), Vec::new());
        for n in 0..3 {
            let args = json!({"n": n});
            let call = run.up.call("tools/call", tool("echo", args), vec![]);
            calls.push(call.await.expect("sent"));
            seen.push(peer.expect("tools/call").await);
        }
        let ids: Vec<u64> = seen.iter().map(minted).collect();
        for (call, id) in calls.iter().zip(&ids) {
            assert_eq!(
                call.upstream_id(),
                *id,
                "the call knows the id it was sent with"
            );
        }
        assert!(
            ids[0] < ids[1] && ids[1] < ids[2],
            "one counter per session: {ids:?}"
        );
        assert_eq!(run.up.in_flight(), 3);

        // The last first, then the first, then the middle one; each caller is
        // still waiting when the others' answers arrive.
        for k in [2, 0, 1] {
            let n = seen[k]["params"]["arguments"]["n"].clone();
            assert_eq!(n, json!(k), "the request carries its caller's arguments");
            peer.answer(&seen[k], text(&format!("answer to {k}"))).await;
            let got = result(outcome(&mut calls[k]).await);
            assert_eq!(got, text(&format!("answer to {k}")), "caller {k}");
        }
        assert_eq!(run.up.in_flight(), 0);
        assert_eq!(run.up.late_responses(), 0);
    })
    .await
}

#[tokio::test]
async fn an_answer_with_an_unknown_or_repeated_id_is_dropped_and_never_delivered_twice() {
    bounded(async {
        let (run, mut peer, _fake) = ready(LimitsConfig::default()).await;
        let (mut a, req_a) = sent(&run, &mut peer, "a").await;
        let id_a = minted(&req_a);

        // Answers to ids Manifold never sent, before the real one.
        peer.send(&json!({"jsonrpc": "2.0", "id": id_a + 1000, "result": text("stray")}))
            .await;
        peer.send(&json!({"jsonrpc": "2.0", "id": format!("{id_a}"), "result": text("a string id")}))
            .await;
        peer.send(&json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}}))
            .await;
        peer.answer(&req_a, text("first")).await;
        peer.answer(&req_a, text("second")).await;
        assert_eq!(result(outcome(&mut a).await), text("first"));
        // Nothing more comes out of a finished call: not the repeated answer.
        match next(&mut a).await {
            CallEvent::Done(CallOutcome::Failed(e)) if e.is_cancelled() => {}
            other => panic!("a finished call yields nothing more, got {other:?}"),
        }

        // The next call gets its own answer, not the repeated one.
        let (mut b, req_b) = sent(&run, &mut peer, "b").await;
        assert_ne!(minted(&req_b), id_a);
        peer.answer(&req_b, text("b")).await;
        assert_eq!(result(outcome(&mut b).await), text("b"));
        // The unknown number and the repeat were counted as late; the ids
        // that are no number Manifold sends were only dropped.
        assert_eq!(run.up.late_responses(), 2);
        assert_eq!(run.up.in_flight(), 0);
    })
    .await
}

#[tokio::test]
async fn cancelling_a_call_tells_the_upstream_and_frees_its_place() {
    bounded(async {
        let limits = LimitsConfig {
            max_pending_per_upstream: 1,
            ..LimitsConfig::default()
        };
        let (run, mut peer, _fake) = ready(limits).await;
        let (mut a, req_a) = sent(&run, &mut peer, "slow").await;
        assert_eq!(run.up.in_flight(), 1);
        // The one place is taken.
        match run
            .up
            .call("tools/call", tool("b", json!({})), vec![])
            .await
        {
            Err(UpstreamError::Busy { limit: 1, .. }) => {}
            other => panic!("expected Busy, got {:?}", other.map(|c| c.upstream_id())),
        }

        a.cancel("the user stopped it").await;
        let cancelled = peer.expect("notifications/cancelled").await;
        assert_eq!(cancelled["params"]["requestId"], req_a["id"]);
        assert_eq!(cancelled["params"]["reason"], "the user stopped it");
        assert!(cancelled.get("id").is_none(), "a notification: {cancelled}");
        assert_eq!(run.up.in_flight(), 0);
        match next(&mut a).await {
            CallEvent::Done(CallOutcome::Failed(e)) if e.is_cancelled() => {}
            other => panic!("a cancelled call ends cancelled, got {other:?}"),
        }

        // Its answer, if the upstream sends one anyway, is dropped; the freed
        // place takes the next call, which gets its own answer.
        peer.answer(&req_a, text("too late")).await;
        let mut c = run
            .up
            .call("tools/call", tool("c", json!({})), vec![])
            .await
            .expect("the place was freed");
        let req_c = peer.expect("tools/call").await;
        peer.answer(&req_c, text("c")).await;
        assert_eq!(result(outcome(&mut c).await), text("c"));
        assert_eq!(run.up.late_responses(), 1);
    })
    .await
}

#[tokio::test]
async fn a_call_dropped_before_its_answer_is_cancelled_upstream() {
    bounded(async {
        let (run, mut peer, _fake) = ready(LimitsConfig::default()).await;
        let a = run
            .up
            .call("tools/call", tool("slow", json!({})), vec![])
            .await
            .expect("sent");
        let req_a = peer.expect("tools/call").await;
        drop(a);
        let cancelled = peer.expect("notifications/cancelled").await;
        assert_eq!(cancelled["params"]["requestId"], req_a["id"]);
        assert_eq!(cancelled["params"]["reason"], "the client went away");
        assert_eq!(run.up.in_flight(), 0);
    })
    .await
}

#[tokio::test]
async fn a_call_past_its_timeout_fails_and_is_cancelled_upstream() {
    bounded(async {
        // Over HTTP, whose handshake is in-process and quick, so a short
        // timeout is the call's alone: this upstream never answers a call.
        let fake = HttpFake::start(|req: Req| async move {
            if req.rpc() == Some("tools/call") {
                std::future::pending::<()>().await;
            }
            session_basics(&req, "2025-11-25", &json!({}))
                .unwrap_or_else(|| Resp::status(500, "unexpected"))
        })
        .await;
        let timeout = Duration::from_secs(1);
        let mut cfg = config("web", fake.transport());
        cfg.timeout = timeout;
        let run = Running::spawn(cfg);
        run.ready().await;
        let mut a = run
            .up
            .call("tools/call", tool("hangs", json!({})), vec![])
            .await
            .expect("sent");
        match outcome(&mut a).await {
            CallOutcome::Failed(UpstreamError::Timeout { timeout: t, .. }) => {
                assert_eq!(t, timeout)
            }
            other => panic!("expected a timeout, got {other:?}"),
        }
        assert_eq!(run.up.in_flight(), 0);
        let sent = fake.calls("tools/call")[0].id();
        eventually("the cancellation", || {
            !fake.calls("notifications/cancelled").is_empty()
        })
        .await;
        let cancelled = &fake.calls("notifications/cancelled")[0];
        assert_eq!(cancelled.param("/requestId"), Some(&sent));
        assert_eq!(cancelled.param("/reason"), Some(&json!("timeout")));
        assert_eq!(cancelled.header("mcp-session-id"), Some("s-1"));
    })
    .await
}

#[tokio::test]
async fn progress_reaches_its_own_caller_under_the_callers_own_token() {
    bounded(async {
        let (run, mut peer, _fake) = ready(LimitsConfig::default()).await;
        // Two callers that chose the same progress token.
        let params = |name: &str| {
            json!({"name": name, "arguments": {}, "_meta": {"progressToken": "tok"}})
                .as_object()
                .cloned()
        };
        let mut a = run
            .up
            .call("tools/call", params("a"), vec![])
            .await
            .expect("sent");
        let req_a = peer.expect("tools/call").await;
        let mut b = run
            .up
            .call("tools/call", params("b"), vec![])
            .await
            .expect("sent");
        let req_b = peer.expect("tools/call").await;
        let token = |req: &Value| req["params"]["_meta"]["progressToken"].clone();
        assert_eq!(token(&req_a), json!(format!("mf-{}", minted(&req_a))));
        assert_eq!(token(&req_b), json!(format!("mf-{}", minted(&req_b))));
        assert_eq!(req_a["params"]["name"], "a", "the rest of params as given");

        let progress = |t: &Value, p: u64| {
            json!({"jsonrpc": "2.0", "method": "notifications/progress",
                   "params": {"progressToken": t, "progress": p, "message": format!("step {p}")}})
        };
        // One for a token nobody holds, then b's, then a's.
        peer.send(&progress(&json!("mf-99999"), 9)).await;
        peer.send(&progress(&token(&req_b), 1)).await;
        peer.send(&progress(&token(&req_a), 2)).await;
        for (call, want) in [(&mut a, 2), (&mut b, 1)] {
            match next(call).await {
                CallEvent::Notification(msg) => {
                    let msg = Value::Object(msg);
                    assert_eq!(msg["params"]["progressToken"], "tok", "{msg}");
                    assert_eq!(msg["params"]["progress"], want, "{msg}");
                    assert_eq!(msg["params"]["message"], format!("step {want}"));
                }
                other => panic!("expected progress, got {other:?}"),
            }
        }
        peer.answer(&req_a, text("a")).await;
        peer.answer(&req_b, text("b")).await;
        for (call, want) in [(&mut a, "a"), (&mut b, "b")] {
            match next(call).await {
                CallEvent::Done(CallOutcome::Result(raw)) => {
                    let got: Value = serde_json::from_str(raw.get()).expect("JSON");
                    assert_eq!(got, text(want), "nothing but its own progress came first");
                }
                other => panic!("expected {want}'s answer, got {other:?}"),
            }
        }
    })
    .await
}

#[tokio::test]
async fn a_server_request_goes_to_the_only_call_in_flight_else_is_refused_and_a_ping_answered() {
    bounded(async {
        let (run, mut peer, _fake) = ready(LimitsConfig::default()).await;
        let (mut a, req_a) = sent(&run, &mut peer, "asks").await;

        // With one call in flight, the upstream's question is that call's.
        peer.send(
            &json!({"jsonrpc": "2.0", "id": "q-1", "method": "sampling/createMessage",
                          "params": {"messages": [], "maxTokens": 5}}),
        )
        .await;
        match next(&mut a).await {
            CallEvent::Request {
                method,
                params,
                responder,
            } => {
                assert_eq!(method, "sampling/createMessage");
                assert_eq!(params, Some(json!({"messages": [], "maxTokens": 5})));
                let raw = RawValue::from_string(
                    r#"{"role":"assistant","content":{"type":"text","text":"hi"}}"#.into(),
                )
                .expect("raw");
                responder.respond(Ok(raw)).await;
            }
            other => panic!("expected the upstream's request, got {other:?}"),
        }
        let answer = peer.recv().await;
        assert_eq!(answer["id"], "q-1", "answered under the upstream's own id");
        assert_eq!(answer["result"]["content"]["text"], "hi");

        // With two in flight there is no one caller to ask: refused. A ping
        // is answered whatever is in flight.
        let (mut b, req_b) = sent(&run, &mut peer, "b").await;
        peer.send(
            &json!({"jsonrpc": "2.0", "id": "q-2", "method": "elicitation/create", "params": {}}),
        )
        .await;
        peer.send(&json!({"jsonrpc": "2.0", "id": "q-3", "method": "ping"}))
            .await;
        // Each is answered by a task of its own: in either order.
        let (x, y) = (peer.recv().await, peer.recv().await);
        let (refused, pong) = if x["id"] == "q-2" { (x, y) } else { (y, x) };
        assert_eq!(refused["id"], "q-2");
        assert_eq!(
            refused["error"]["code"],
            manifold_protocol::ErrorCode::METHOD_NOT_FOUND.0,
            "{refused}"
        );
        assert_eq!(pong, json!({"jsonrpc": "2.0", "id": "q-3", "result": {}}));

        peer.answer(&req_a, text("a")).await;
        peer.answer(&req_b, text("b")).await;
        assert_eq!(result(outcome(&mut a).await), text("a"));
        assert_eq!(result(outcome(&mut b).await), text("b"));
    })
    .await
}

#[tokio::test]
async fn a_result_reaches_its_caller_byte_for_byte() {
    bounded(async {
        let (run, mut peer, _fake) = ready(LimitsConfig::default()).await;
        let (mut a, req_a) = sent(&run, &mut peer, "raw").await;
        // Members in no sorted order, spacing, escapes, numbers as written,
        // fields no revision knows.
        let raw = r#"{ "zeta":1, "content":[{"type":"text","text":"caf\u00e9 \"q\""}],"structuredContent":{"b":2.50,"a":1e3},"_meta":{"x-vendor":[true,null]},"resultType":"complete" }"#;
        peer.send_raw(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"result":{raw}}}"#,
            req_a["id"]
        ))
        .await;
        match outcome(&mut a).await {
            CallOutcome::Result(got) => assert_eq!(got.get(), raw),
            other => panic!("expected the result, got {other:?}"),
        }
    })
    .await
}
