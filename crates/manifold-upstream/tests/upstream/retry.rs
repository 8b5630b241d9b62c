//! Guarded calls ([`Upstream::forward`]): retries (`src/retry.rs`, the loop
//! in `src/call.rs`) and the circuit breaker (`src/breaker.rs`, through
//! `src/pool.rs`), against a scripted Streamable-HTTP upstream (and a stdio
//! child that dies mid-call).
//!
//! A call that may be repeated is sent again after a failure another attempt
//! may get past (HTTP 502–504, an upstream gone before answering), at most
//! `max` times and within the budget, then fails with its last failure; a
//! call that may not be repeated, or a failure sending again cannot fix (a
//! broken reply, an answer even if it is an error), is sent once. The
//! breaker opens after its failures in a row, fails calls at once while
//! open, half-opens for one probe call whose outcome closes it or opens it
//! again; an answer never counts as a failure; a breaker that opens
//! mid-retries ends the call with the failure it had. The counts
//! (`retry_counts`) are of the retries that went out and of those the
//! budget refused.

use manifold_config::{BreakerPolicy, RetryPolicy, UpstreamConfig};
use manifold_protocol::ErrorCode;
use manifold_upstream::{
    BreakerState, CallOutcome, NotStarted, RetryClass, RetryCounts, UpstreamError,
};
use serde_json::json;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Semaphore;

use crate::support::http::{session_basics, HttpFake, Req, Resp};
use crate::support::stdio::StdioFake;
use crate::support::{
    bounded, config, eventually, failure, outcome, result, text, tool, within, Running,
};

/// A session-era server whose `n`th `tools/call` (from 0) is answered by
/// `answer(req, n)`.
async fn server(answer: impl Fn(&Req, usize) -> Resp + Send + Sync + 'static) -> HttpFake {
    let answer = Arc::new(answer);
    let count = Arc::new(AtomicUsize::new(0));
    HttpFake::start(move |req: Req| {
        let (answer, count) = (answer.clone(), count.clone());
        async move {
            if req.rpc() == Some("tools/call") {
                return answer(&req, count.fetch_add(1, Ordering::SeqCst));
            }
            session_basics(&req, "2025-11-25", &json!({}))
                .unwrap_or_else(|| Resp::error(&req, ErrorCode::METHOD_NOT_FOUND, "no"))
        }
    })
    .await
}

fn unavailable() -> Resp {
    Resp::status(503, "overloaded, try later")
}

fn with(
    fake: &HttpFake,
    retries: Option<RetryPolicy>,
    breaker: Option<BreakerPolicy>,
) -> UpstreamConfig {
    let mut cfg = config("web", fake.transport());
    cfg.retries = retries;
    cfg.breaker = breaker;
    cfg
}

fn retries(max: u32, budget: f64) -> Option<RetryPolicy> {
    Some(RetryPolicy { max, budget })
}

fn breaker(failures: u32, open_for: Duration) -> Option<BreakerPolicy> {
    Some(BreakerPolicy {
        failures,
        window: Duration::from_secs(60),
        error_ratio: 1.0,
        open_for,
    })
}

/// Forwards a `tools/call` of `name` and waits for its outcome and attempts.
async fn forward(run: &Running, name: &str, repeatable: bool) -> (CallOutcome, Option<u32>) {
    let call = run
        .up
        .forward(
            "tools/call",
            tool(name, json!({"q": name})),
            vec![],
            None,
            repeatable,
        )
        .await;
    let mut call = call.expect("sent");
    let out = outcome(&mut call).await;
    (out, call.attempts())
}

#[tokio::test]
async fn a_retriable_failure_is_retried_up_to_max_then_the_failure_surfaces() {
    bounded(async {
        let fake = server(|_, _| unavailable()).await;
        let run = Running::spawn(with(&fake, retries(2, 1.0), None));
        run.ready().await;
        let (out, attempts) = forward(&run, "flaky", true).await;
        let e = failure(out);
        assert_eq!(e.retry_class(), RetryClass::Transient, "{e}");
        assert!(
            e.to_string().contains("HTTP 503") && e.to_string().contains("overloaded"),
            "{e}"
        );
        assert_eq!(attempts, Some(3), "the first attempt and `max` retries");
        let sent = fake.calls("tools/call");
        assert_eq!(sent.len(), 3);
        // The same request each time, under a fresh id.
        for s in &sent {
            assert_eq!(s.param("/arguments"), Some(&json!({"q": "flaky"})));
        }
        assert!(sent[0].id() != sent[1].id() && sent[1].id() != sent[2].id());
        assert_eq!(
            run.up.retry_counts(),
            Some(RetryCounts {
                retries: 2,
                refused: 0
            })
        );
    })
    .await
}

#[tokio::test]
async fn a_retried_call_ends_with_the_answer_of_the_attempt_that_got_through() {
    bounded(async {
        let fake = server(|req, n| match n {
            0 => Resp::status(502, "bad gateway"),
            1 => Resp::status(504, "gateway timeout"),
            _ => Resp::result(req, text("third time lucky")),
        })
        .await;
        let run = Running::spawn(with(&fake, retries(3, 1.0), None));
        run.ready().await;
        let (out, attempts) = forward(&run, "flaky", true).await;
        assert_eq!(result(out), text("third time lucky"));
        assert_eq!(attempts, Some(3));
        assert_eq!(fake.calls("tools/call").len(), 3);
    })
    .await
}

#[tokio::test]
async fn a_call_that_may_not_be_repeated_is_sent_once() {
    bounded(async {
        let fake = server(|_, _| unavailable()).await;
        let run = Running::spawn(with(&fake, retries(3, 1.0), None));
        run.ready().await;
        let (out, attempts) = forward(&run, "writes", false).await;
        assert!(failure(out).to_string().contains("HTTP 503"));
        assert_eq!(attempts, Some(1));
        assert_eq!(fake.calls("tools/call").len(), 1);
        assert_eq!(run.up.retry_counts(), Some(RetryCounts::default()));

        // Nor is a call Manifold makes itself ([`Upstream::call`]).
        let mut own = run
            .up
            .call("tools/call", tool("own", json!({})), vec![])
            .await
            .expect("sent");
        assert!(failure(outcome(&mut own).await)
            .to_string()
            .contains("HTTP 503"));
        assert_eq!(own.attempts(), None, "not a guarded call");
        assert_eq!(fake.calls("tools/call").len(), 2);
    })
    .await
}

#[tokio::test]
async fn a_failure_another_attempt_cannot_fix_is_not_retried() {
    bounded(async {
        let fake = server(|req, _| match req.param("/name").and_then(|v| v.as_str()) {
            Some("broken") => Resp::status(500, "internal server error"),
            _ => {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":-32603,"message":"tool crashed","data":{{"z":1,"a":[2]}}}}}}"#,
                    req.id()
                );
                Resp { status: 200, headers: vec![("content-type".into(), "application/json".into())], body }
            }
        })
        .await;
        let run = Running::spawn(with(&fake, retries(3, 1.0), None));
        run.ready().await;
        // A reply that is no answer: the upstream is broken, not busy.
        let (out, attempts) = forward(&run, "broken", true).await;
        let e = failure(out);
        assert!(e.is_protocol() && e.retry_class() == RetryClass::No, "{e}");
        assert_eq!(attempts, Some(1));
        assert_eq!(fake.calls("tools/call").len(), 1);
        // An answer, even an error, is the outcome, as the upstream wrote it.
        let (out, attempts) = forward(&run, "refuses", true).await;
        match out {
            CallOutcome::Error(raw) => assert_eq!(
                raw.get(),
                r#"{"code":-32603,"message":"tool crashed","data":{"z":1,"a":[2]}}"#
            ),
            other => panic!("expected the upstream's error, got {other:?}"),
        }
        assert_eq!(attempts, Some(1));
        assert_eq!(fake.calls("tools/call").len(), 2);
        assert_eq!(run.up.retry_counts(), Some(RetryCounts::default()));
    })
    .await
}

#[tokio::test]
async fn the_retry_budget_caps_retries_and_counts_the_one_it_refused() {
    bounded(async {
        let fake = server(|_, _| unavailable()).await;
        // No share of calls: only the budget's floor (3 a window) is left.
        let run = Running::spawn(with(&fake, retries(10, 0.0), None));
        run.ready().await;
        let (out, attempts) = forward(&run, "flaky", true).await;
        assert!(failure(out).to_string().contains("HTTP 503"));
        assert_eq!(attempts, Some(4));
        assert_eq!(fake.calls("tools/call").len(), 4);
        assert_eq!(
            run.up.retry_counts(),
            Some(RetryCounts {
                retries: 3,
                refused: 1
            })
        );
    })
    .await
}

#[tokio::test]
async fn a_repeatable_call_whose_child_dies_mid_call_is_sent_again_to_the_restarted_child() {
    bounded(async {
        let fake = StdioFake::bind().await;
        let mut cfg = config("kid", fake.transport());
        cfg.retries = retries(2, 1.0);
        let run = Running::spawn(cfg);
        let mut first = fake.accept().await;
        first.ready().await;
        run.ready().await;

        let mut call = run
            .up
            .forward(
                "tools/call",
                tool("echo", json!({"n": 1})),
                vec![],
                None,
                true,
            )
            .await
            .expect("sent");
        let waiting = tokio::spawn(async move {
            let out = call.outcome().await;
            (out, call.attempts())
        });
        let req1 = first.expect("tools/call").await;
        drop(first); // the child exits before answering

        let mut second = fake.accept().await;
        second.ready().await;
        let req2 = second.expect("tools/call").await;
        assert_eq!(req2["params"], req1["params"], "the same call, sent again");
        second.answer(&req2, text("after the restart")).await;
        let (out, attempts) = within("the retried call", waiting).await.expect("joined");
        assert_eq!(result(out), text("after the restart"));
        assert_eq!(attempts, Some(2));

        // One that may not be repeated fails with the exit, and the restarted
        // child never sees it again.
        let mut call = run
            .up
            .forward(
                "tools/call",
                tool("write", json!({"n": 2})),
                vec![],
                None,
                false,
            )
            .await
            .expect("sent");
        second.expect("tools/call").await;
        drop(second);
        let e = failure(outcome(&mut call).await);
        assert_eq!(e.retry_class(), RetryClass::Transient, "{e}");
        assert_eq!(call.attempts(), Some(1));
        let mut third = fake.accept().await;
        third.ready().await;
        run.ready().await;
        let mut marker = run
            .up
            .call("tools/call", tool("marker", json!({})), vec![])
            .await
            .expect("sent");
        let first_seen = third.expect("tools/call").await;
        assert_eq!(first_seen["params"]["name"], "marker", "{first_seen}");
        third.answer(&first_seen, text("ok")).await;
        assert_eq!(result(outcome(&mut marker).await), text("ok"));
    })
    .await
}

/// Whether a forward was refused at once by an open breaker.
fn refused_fast(r: Result<manifold_upstream::Call, NotStarted>) -> UpstreamError {
    match r {
        Err(NotStarted {
            error: e @ UpstreamError::Failing { .. },
            attempts: 0,
        }) => e,
        Err(other) => panic!("expected the breaker's refusal, got {other:?}"),
        Ok(c) => panic!(
            "expected the breaker's refusal, the call was sent ({})",
            c.upstream_id()
        ),
    }
}

#[tokio::test]
async fn the_breaker_opens_after_its_failures_refuses_fast_then_half_opens_for_one_probe() {
    bounded(async {
        // Failing until `healthy`; then each answer waits for a permit.
        let healthy = Arc::new(AtomicBool::new(false));
        let permits = Arc::new(Semaphore::new(0));
        let (h, p) = (healthy.clone(), permits.clone());
        let fake = HttpFake::start(move |req: Req| {
            let (healthy, permits) = (h.clone(), p.clone());
            async move {
                if req.rpc() != Some("tools/call") {
                    return session_basics(&req, "2025-11-25", &json!({}))
                        .unwrap_or_else(|| Resp::error(&req, ErrorCode::METHOD_NOT_FOUND, "no"));
                }
                if !healthy.load(Ordering::SeqCst) {
                    return unavailable();
                }
                match permits.acquire().await {
                    Ok(p) => p.forget(),
                    Err(_) => return unavailable(),
                }
                Resp::result(&req, text("healthy again"))
            }
        })
        .await;
        let run = Running::spawn(with(&fake, None, breaker(3, Duration::from_secs(3))));
        run.ready().await;
        let report = run.up.breaker().expect("a breaker");
        assert_eq!(report.state, BreakerState::Closed);

        for k in 1..=3 {
            let (out, attempts) = forward(&run, "t", false).await;
            assert!(failure(out).to_string().contains("HTTP 503"));
            assert_eq!(attempts, Some(1));
            let report = run.up.breaker().expect("a breaker");
            assert_eq!(report.consecutive_failures, k);
            if k < 3 {
                assert_eq!(report.state, BreakerState::Closed, "after {k}");
            }
        }
        let report = run.up.breaker().expect("a breaker");
        assert_eq!(report.state, BreakerState::Open);
        assert_eq!(report.opened, 1);
        assert!(report.retry_in.is_some());
        assert!(
            report
                .reason
                .as_deref()
                .is_some_and(|r| r.contains("3 failures in a row")),
            "{report:?}"
        );

        // Open: refused at once, nothing sent.
        let e = refused_fast(
            run.up
                .forward("tools/call", tool("t", json!({})), vec![], None, false)
                .await,
        );
        assert!(
            e.to_string().contains("will try it again in") && e.to_string().contains("`web`"),
            "{e}"
        );
        assert!(!e.is_upstream_fault(), "its own refusal is not counted");
        assert_eq!(fake.calls("tools/call").len(), 3);

        // After `open_for`, one probe goes through; the others are refused
        // while it is out.
        healthy.store(true, Ordering::SeqCst);
        eventually("half-open", || {
            run.up
                .breaker()
                .is_some_and(|b| b.state == BreakerState::HalfOpen)
        })
        .await;
        let mut probe = run
            .up
            .forward("tools/call", tool("probe", json!({})), vec![], None, false)
            .await
            .expect("the probe is sent");
        let probe = tokio::spawn(async move { probe.outcome().await });
        eventually("the probe reaching the upstream", || {
            fake.calls("tools/call").len() == 4
        })
        .await;
        refused_fast(
            run.up
                .forward("tools/call", tool("t", json!({})), vec![], None, false)
                .await,
        );
        assert_eq!(fake.calls("tools/call").len(), 4);

        // The probe answers: closed, and calls go through again.
        permits.add_permits(2);
        assert_eq!(
            result(within("the probe", probe).await.expect("joined")),
            text("healthy again")
        );
        let report = run.up.breaker().expect("a breaker");
        assert_eq!(
            (report.state, report.consecutive_failures),
            (BreakerState::Closed, 0)
        );
        let (out, _) = forward(&run, "t", false).await;
        assert_eq!(result(out), text("healthy again"));
        assert_eq!(run.up.breaker().map(|b| b.opened), Some(1));
    })
    .await
}

#[tokio::test]
async fn a_failed_probe_opens_the_breaker_again() {
    bounded(async {
        let fake = server(|_, _| unavailable()).await;
        let run = Running::spawn(with(&fake, None, breaker(1, Duration::from_millis(300))));
        run.ready().await;
        forward(&run, "t", false).await;
        assert_eq!(run.up.breaker().map(|b| b.opened), Some(1));
        eventually("half-open", || {
            run.up
                .breaker()
                .is_some_and(|b| b.state == BreakerState::HalfOpen)
        })
        .await;
        let (out, _) = forward(&run, "probe", false).await;
        assert!(failure(out).to_string().contains("HTTP 503"));
        let report = run.up.breaker().expect("a breaker");
        assert_eq!(report.opened, 2);
        assert!(
            report
                .reason
                .as_deref()
                .is_some_and(|r| r.contains("the probe call failed")),
            "{report:?}"
        );
        assert_eq!(fake.calls("tools/call").len(), 2);
    })
    .await
}

#[tokio::test]
async fn answers_even_errors_never_open_the_breaker() {
    bounded(async {
        let fake =
            server(|req, _| Resp::error(req, ErrorCode::INVALID_PARAMS, "bad arguments")).await;
        let run = Running::spawn(with(&fake, None, breaker(2, Duration::from_secs(60))));
        run.ready().await;
        for _ in 0..5 {
            let (out, _) = forward(&run, "t", false).await;
            assert!(matches!(out, CallOutcome::Error(_)), "{out:?}");
        }
        let report = run.up.breaker().expect("a breaker");
        assert_eq!(
            (report.state, report.consecutive_failures, report.opened),
            (BreakerState::Closed, 0, 0)
        );
        assert_eq!(fake.calls("tools/call").len(), 5);
    })
    .await
}

#[tokio::test]
async fn a_breaker_that_opens_mid_retries_ends_the_call_with_its_own_failure() {
    bounded(async {
        let fake = server(|_, _| unavailable()).await;
        let run = Running::spawn(with(
            &fake,
            retries(5, 1.0),
            breaker(2, Duration::from_secs(60)),
        ));
        run.ready().await;
        let (out, attempts) = forward(&run, "flaky", true).await;
        let e = failure(out);
        // The upstream's failure, not the breaker's refusal.
        assert_eq!(e.retry_class(), RetryClass::Transient, "{e}");
        assert!(e.to_string().contains("HTTP 503"), "{e}");
        assert_eq!(attempts, Some(2));
        assert_eq!(fake.calls("tools/call").len(), 2);
        assert_eq!(run.up.breaker().map(|b| b.state), Some(BreakerState::Open));
        // One retry was sent; the one the breaker refused was not.
        assert_eq!(
            run.up.retry_counts(),
            Some(RetryCounts {
                retries: 1,
                refused: 0
            })
        );
    })
    .await
}
