//! A 2025-era client that disconnects has not cancelled its request (spec
//! 2025-11-25 basic/transports: "Disconnection SHOULD NOT be interpreted as the
//! client cancelling its request"; ../shared/reference/mcp-for-gateways.md §2.3
//! and §11.3): the upstream call runs on; only `notifications/cancelled` stops it.
//! Also: an expired upstream session is repaired by re-initializing.

use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use serde_json::json;

use crate::{bounded, fixture, in_flight, ok_text, until_in_flight, Fixture};

/// Waits (at most `limit`) until upstream `name` has nothing in flight.
async fn drained(f: &Fixture, name: &str, limit: Duration) -> Result<()> {
    until_in_flight(&f.gw, name, 0, limit).await
}

#[tokio::test]
async fn a_disconnect_while_waiting_is_not_a_cancellation() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        for upstream in ["local", "remote"] {
            let started = Instant::now();
            let call = {
                let client = client.clone();
                tokio::spawn(async move {
                    client
                        .call_tool(&format!("{upstream}__sleep"), json!({"ms": 3000}))
                        .await
                })
            };
            until_in_flight(&f.gw, upstream, 1, Duration::from_secs(5)).await?;
            // Drop the request: the client's connection closes.
            call.abort();
            let _ = call.await;
            assert_eq!(
                in_flight(&f.gw, upstream)?,
                1,
                "{upstream}: the disconnect cancelled the upstream call"
            );
            // The call runs to completion upstream: it leaves no earlier than its
            // 3 s sleep ends (a cancellation would end it at once).
            drained(&f, upstream, Duration::from_secs(6)).await?;
            assert!(
                started.elapsed() >= Duration::from_millis(2500),
                "{upstream}: the call ended after {:?}, before its natural end",
                started.elapsed()
            );
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_disconnect_from_a_streamed_reply_is_not_a_cancellation() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        for upstream in ["local", "remote"] {
            let started = Instant::now();
            let mut stream = client
                .request_streaming(
                    "tools/call",
                    json!({"name": format!("{upstream}__slow_progress"),
                           "arguments": {"steps": 40, "delay_ms": 50},
                           "_meta": {"progressToken": "gone"}}),
                )
                .await?;
            let first = stream.expect_next().await?;
            assert_eq!(first["method"], "notifications/progress", "{first}");
            drop(stream);
            assert_eq!(
                in_flight(&f.gw, upstream)?,
                1,
                "{upstream}: the disconnect cancelled the upstream call"
            );
            // 40 steps of 50 ms: the call leaves no earlier than about 2 s.
            drained(&f, upstream, Duration::from_secs(6)).await?;
            assert!(
                started.elapsed() >= Duration::from_millis(1500),
                "{upstream}: the call ended after {:?}, before its natural end",
                started.elapsed()
            );
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_expired_upstream_session_is_reinitialized() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let headers = |reply: &manifold_testkit::harness::Reply| -> Result<String> {
            let h = &reply.result()?["structuredContent"]["receivedHeaders"];
            h["mcp-session-id"]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| anyhow!("no upstream session id in {h}"))
        };
        let args = json!({"region": "eu-west-1", "query": "q"});
        let reply = client
            .call_tool("remote__regional_lookup", args.clone())
            .await?;
        let old = headers(&reply)?;
        // End the gateway's upstream session behind its back.
        let direct = f.remote.client();
        direct.set_session_id(Some(&old));
        let ended = direct.delete().await?;
        assert!(ended.status.is_success(), "{ended}");

        // The next call returns promptly (an error is allowed: the reference
        // permits surfacing it), and the gateway recovers within a bound.
        let started = Instant::now();
        let first = client
            .call_tool("remote__echo", json!({"text": "after expiry"}))
            .await?;
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        if ok_text(&first).is_err() {
            let recovered = "the gateway recovered from an expired upstream session";
            crate::eventually(recovered, Duration::from_secs(10), || async {
                let reply = client
                    .call_tool("remote__echo", json!({"text": "after expiry"}))
                    .await?;
                Ok(ok_text(&reply).is_ok().then_some(()))
            })
            .await?;
        }
        let reply = client.call_tool("remote__regional_lookup", args).await?;
        let new = headers(&reply)?;
        assert_ne!(
            new, old,
            "the gateway kept using the expired upstream session"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_cancellation_after_a_disconnect_still_reaches_the_upstream() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        for upstream in ["local", "remote"] {
            let id = json!(format!("gone-then-cancelled-{upstream}"));
            let call = {
                let (client, id) = (client.clone(), id.clone());
                let params =
                    json!({"name": format!("{upstream}__sleep"), "arguments": {"ms": 20000}});
                tokio::spawn(async move { client.request_with_id(id, "tools/call", params).await })
            };
            until_in_flight(&f.gw, upstream, 1, Duration::from_secs(5)).await?;
            call.abort();
            let _ = call.await;
            assert_eq!(in_flight(&f.gw, upstream)?, 1, "{upstream}");
            client
                .notify("notifications/cancelled", json!({"requestId": id}))
                .await?;
            // The 20 s sleep ends long before its time: the upstream was told.
            drained(&f, upstream, Duration::from_secs(3)).await?;
        }
        Ok(())
    })
    .await
}
