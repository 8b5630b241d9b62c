//! Per-client bounds: one client cannot hold every session, park megabytes in
//! `clientInfo`, subscribe without end, keep every upstream slot busy, or open
//! listen streams without end. Each bound refuses with its documented error and
//! leaves other clients (and the same client, once it lets go) served.

use std::time::Duration;

use anyhow::{Context, Result};
use http::StatusCode;
use serde_json::{json, Value};

use crate::{bounded, Setup};
use manifold_testkit::harness::{stateless_request, McpClient, STATELESS};

fn init_params(client_info: Value) -> Value {
    json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client_info})
}

#[tokio::test]
async fn sessions_per_address_and_client_info_size_are_bounded() -> Result<()> {
    bounded(async {
        let f = Setup {
            extra: "[limits]\nmax_sessions_per_peer = 2\nmax_client_info_bytes = 256\n".into(),
            ..Setup::default()
        }
        .start()
        .await?;
        let first = f.session().await?;
        let _second = f.session().await?;
        let third = f.gw.client();
        let r = third
            .request(
                "initialize",
                init_params(json!({"name": "t", "version": "0"})),
            )
            .await?;
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{r}");
        assert_eq!(r.error()?["code"], -32603, "{r}");
        let msg = r.error()?["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(msg.contains("max_sessions_per_peer"), "{msg}");
        assert!(r.headers.get("mcp-session-id").is_none(), "{r}");
        // Ending a session frees its slot.
        assert!(first.delete().await?.status.is_success());
        third.initialize("2025-11-25", json!({})).await?;

        // A clientInfo over the bound is refused before any session exists.
        let big = f.gw.client();
        let r = big
            .request(
                "initialize",
                init_params(json!({"name": "x".repeat(300), "version": "0"})),
            )
            .await?;
        assert_eq!(r.error()?["code"], -32602, "{r}");
        let msg = r.error()?["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(msg.contains("max_client_info_bytes"), "{msg}");
        assert!(r.headers.get("mcp-session-id").is_none(), "{r}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn subscriptions_per_session_are_bounded() -> Result<()> {
    bounded(async {
        let f = Setup {
            extra: "[limits]\nmax_subscriptions_per_session = 2\n".into(),
            ..Setup::default()
        }
        .start()
        .await?;
        let a = f.session().await?;
        let subscribe = |c: &McpClient, uri: &str| {
            let (c, uri) = (c.clone(), uri.to_string());
            async move { c.request("resources/subscribe", json!({"uri": uri})).await }
        };
        for uri in ["demo://item/1", "demo://item/2"] {
            let r = subscribe(&a, uri).await?;
            assert_eq!(r.result()?, &json!({}), "{r}");
        }
        // Subscribing again to a URI it holds costs nothing.
        let r = subscribe(&a, "demo://item/2").await?;
        assert_eq!(r.result()?, &json!({}), "{r}");
        let r = subscribe(&a, "demo://item/3").await?;
        assert_eq!(r.error()?["code"], -32603, "{r}");
        let msg = r.error()?["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(msg.contains("max_subscriptions_per_session"), "{msg}");
        // Another session is not affected.
        let b = f.session().await?;
        let r = subscribe(&b, "demo://item/3").await?;
        assert_eq!(r.result()?, &json!({}), "{r}");
        // Letting go of one frees a place.
        let r = a
            .request("resources/unsubscribe", json!({"uri": "demo://item/1"}))
            .await?;
        assert_eq!(r.result()?, &json!({}), "{r}");
        let r = subscribe(&a, "demo://item/3").await?;
        assert_eq!(r.result()?, &json!({}), "{r}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn calls_in_flight_per_session_are_bounded() -> Result<()> {
    bounded(async {
        let f = Setup {
            extra: "[limits]\nmax_calls_per_session = 2\n".into(),
            ..Setup::default()
        }
        .start()
        .await?;
        let a = f.session().await?;
        let slow: Vec<_> = (0..2)
            .map(|_| {
                let a = a.clone();
                tokio::spawn(async move { a.call_tool("local__sleep", json!({"ms": 1500})).await })
            })
            .collect();
        // Wait (bounded) until both are in flight upstream.
        let gauge = || -> usize {
            f.gw.gateway()
                .upstreams()
                .iter()
                .map(|u| u.in_flight())
                .sum()
        };
        crate::until("the slow calls started", Duration::from_secs(5), || {
            gauge() >= 2
        })
        .await?;
        let r = a.call_tool("local__echo", json!({"text": "third"})).await?;
        assert_eq!(r.error()?["code"], -32603, "{r}");
        let msg = r.error()?["message"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(msg.contains("max_calls_per_session"), "{msg}");
        // Another session still gets through.
        let b = f.session().await?;
        let r = b.call_tool("local__echo", json!({"text": "other"})).await?;
        assert_eq!(r.result()?["content"][0]["text"], "other", "{r}");
        for h in slow {
            h.await.context("join")??.result()?;
        }
        // Once its calls are answered, the session calls again.
        let r = a.call_tool("local__echo", json!({"text": "again"})).await?;
        assert_eq!(r.result()?["content"][0]["text"], "again", "{r}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn listen_streams_are_bounded() -> Result<()> {
    bounded(async {
        let f = Setup {
            extra: "[limits]\nmax_listens = 1\n".into(),
            ..Setup::default()
        }
        .start()
        .await?;
        let client = f.gw.client();
        let headers = [
            ("mcp-protocol-version", STATELESS),
            ("mcp-method", "subscriptions/listen"),
        ];
        let listen = |id| {
            stateless_request(
                id,
                "subscriptions/listen",
                json!({"notifications": {"toolsListChanged": true}}),
            )
        };
        let mut first = client.send_streaming_with(&listen(1), &headers).await?;
        let ack = first.expect_next().await?;
        assert_eq!(
            ack["method"], "notifications/subscriptions/acknowledged",
            "{ack}"
        );
        let (s, r) = client.send_stateless(&listen(2), &[]).await?;
        assert_eq!(
            (s, &r["error"]["code"]),
            (StatusCode::SERVICE_UNAVAILABLE, &json!(-32603)),
            "{r}"
        );
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("max_listens"),
            "{r}"
        );
        // Closing the stream frees its place.
        drop(first);
        crate::eventually("the freed place back", Duration::from_secs(5), || async {
            let mut next = client.send_streaming_with(&listen(3), &headers).await?;
            let acked = next
                .expect_next()
                .await
                .is_ok_and(|ack| ack["method"] == "notifications/subscriptions/acknowledged");
            Ok(acked.then_some(()))
        })
        .await?;
        Ok(())
    })
    .await
}

/// `[[rate_limit]]`: a rate per principal refuses the call past its burst with
/// the retry time (a JSON-RPC error in the session era; 429 with
/// `Retry-After` for 2026-07-28), other tools untouched; a concurrency cap
/// refuses a call while the bucket's calls are in flight.
#[tokio::test]
async fn rate_limits_and_concurrency_caps() -> Result<()> {
    bounded(async {
        let f = Setup {
            extra: "[[rate_limit]]\nwho = [\"*\"]\ntools = [\"local__echo\"]\nrate = \"2/m\"\n\n\
                    [[rate_limit]]\nwho = [\"*\"]\ntools = [\"local__sleep\"]\nconcurrency = 1\n"
                .into(),
            ..Setup::default()
        }
        .start()
        .await?;
        let c = f.session().await?;
        for n in 0..2 {
            let r = c
                .call_tool("local__echo", json!({"text": format!("{n}")}))
                .await?;
            r.result()?;
        }
        let r = c.call_tool("local__echo", json!({"text": "third"})).await?;
        assert_eq!(r.status, StatusCode::OK, "{r}");
        let e = r.error()?;
        assert_eq!(e["code"], -32060, "{r}");
        let wait = e["data"]["retryAfterMs"].as_u64().context("retryAfterMs")?;
        assert!(wait > 20_000 && wait <= 30_000, "{wait}");
        assert!(
            e["message"]
                .as_str()
                .unwrap_or_default()
                .contains("[[rate_limit]] #0"),
            "{r}"
        );
        // Another tool is not limited.
        let r = c.call_tool("local__add", json!({"a": 1, "b": 2})).await?;
        r.result()?;
        // 2026-07-28: the same bucket (the anonymous principal), with 429 and Retry-After.
        let body = serde_json::to_vec(&stateless_request(
            5,
            "tools/call",
            json!({"name": "local__echo", "arguments": {"text": "x"}}),
        ))?;
        let raw =
            f.gw.client()
                .post_raw(
                    body,
                    &[
                        ("mcp-protocol-version", STATELESS),
                        ("mcp-method", "tools/call"),
                        ("mcp-name", "local__echo"),
                    ],
                )
                .await?;
        assert_eq!(raw.status, StatusCode::TOO_MANY_REQUESTS, "{}", raw.text());
        let secs: u64 = raw
            .headers
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok())
            .context("Retry-After")?;
        assert!((20..=30).contains(&secs), "{secs}");

        // Concurrency: one sleep at a time.
        let slow = {
            let c = c.clone();
            tokio::spawn(async move { c.call_tool("local__sleep", json!({"ms": 800})).await })
        };
        let upstream =
            f.gw.gateway()
                .upstreams()
                .into_iter()
                .find(|u| &**u.name() == "local")
                .context("local")?
                .clone();
        crate::until("the sleep started", Duration::from_secs(5), || {
            upstream.in_flight() > 0
        })
        .await?;
        let r = c.call_tool("local__sleep", json!({"ms": 1})).await?;
        assert_eq!(r.error()?["code"], -32060, "{r}");
        slow.await.context("join")??.result()?;
        // Its place is given back when the call ends.
        c.call_tool("local__sleep", json!({"ms": 1}))
            .await?
            .result()?;
        Ok(())
    })
    .await
}
