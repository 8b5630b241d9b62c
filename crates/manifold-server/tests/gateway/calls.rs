//! `tools/call` through both transports: lossless results, progress relayed with
//! the client's own token (and only to its own client), header mirroring to the
//! HTTP upstream.

use anyhow::{anyhow, Result};
use serde_json::{json, Value};

use crate::{bounded, fixture, ok_text, text_of, Setup};

#[tokio::test]
async fn echo_results_pass_through_byte_for_byte() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let args = json!({"text": "héllo \"world\""});
        let direct = f.remote.client();
        direct.initialize("2025-11-25", json!({})).await?;
        let expected = direct
            .request_with_id(
                json!(9),
                "tools/call",
                json!({"name": "echo", "arguments": args}),
            )
            .await?
            .raw_result()?;
        assert!(
            expected.contains(r#""x-demo-result-extra":{"z":1,"a":2}"#),
            "{expected}"
        );
        let client = f.session().await?;
        for name in ["local__echo", "remote__echo"] {
            let reply = client
                .request_with_id(
                    json!(9),
                    "tools/call",
                    json!({"name": name, "arguments": args}),
                )
                .await?;
            assert_eq!(reply.status, http::StatusCode::OK);
            assert!(
                reply.content_type.starts_with("application/json"),
                "{name}: {reply}"
            );
            assert_eq!(reply.messages.len(), 1, "{name}: {reply}");
            assert_eq!(reply.response()?["id"], 9, "{name}");
            assert_eq!(reply.raw_result()?, expected, "{name}: result bytes differ");
            let extra = &reply.result()?["x-demo-result-extra"];
            let keys: Vec<&String> = extra
                .as_object()
                .map(|o| o.keys().collect())
                .unwrap_or_default();
            assert_eq!(keys, ["z", "a"], "{name}: {extra}");
        }
        Ok(())
    })
    .await
}

/// Progress values and totals of the progress notifications in `reply`, checking
/// each carries `token`.
fn progress_of(reply: &manifold_testkit::harness::Reply, token: &Value) -> Vec<(u64, u64)> {
    reply
        .notifications()
        .into_iter()
        .map(|n| {
            assert_eq!(n["method"], "notifications/progress", "{n}");
            assert_eq!(&n["params"]["progressToken"], token, "{n}");
            (
                n["params"]["progress"].as_u64().unwrap_or(0),
                n["params"]["total"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

#[tokio::test]
async fn progress_is_streamed_with_the_clients_token_then_the_result() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        for (name, token) in [
            ("local__slow_progress", json!("client-token-1")),
            ("remote__slow_progress", json!(77)),
        ] {
            let reply = client
                .request_with_id(
                    json!("call-1"),
                    "tools/call",
                    json!({"name": name, "arguments": {"steps": 4, "delay_ms": 20},
                           "_meta": {"progressToken": token}}),
                )
                .await?;
            assert!(
                reply.content_type.starts_with("text/event-stream"),
                "{name}: {reply}"
            );
            assert_eq!(reply.messages.len(), 5, "{name}: {reply}");
            assert_eq!(
                progress_of(&reply, &token),
                [(1, 4), (2, 4), (3, 4), (4, 4)],
                "{name}"
            );
            let last = reply.messages.last().ok_or_else(|| anyhow!("empty"))?;
            assert_eq!(last["id"], "call-1", "{name}: the result is not last");
            assert_eq!(ok_text(&reply)?, "done after 4 steps");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn progress_goes_only_to_the_session_that_asked_for_it() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let a = f.session().await?;
        let b = f.session().await?;
        let token = json!("shared-token");
        for upstream in ["local", "remote"] {
            let name = format!("{upstream}__slow_progress");
            let call = |steps: u64, delay: u64| {
                json!({"name": name, "arguments": {"steps": steps, "delay_ms": delay},
                       "_meta": {"progressToken": token}})
            };
            let (ra, rb) = tokio::join!(
                a.request_with_id(json!(1), "tools/call", call(3, 60)),
                b.request_with_id(json!(1), "tools/call", call(6, 30)),
            );
            let (ra, rb) = (ra?, rb?);
            assert_eq!(
                progress_of(&ra, &token),
                [(1, 3), (2, 3), (3, 3)],
                "{upstream}: session A"
            );
            assert_eq!(
                progress_of(&rb, &token),
                (1..=6).map(|i| (i, 6)).collect::<Vec<_>>(),
                "{upstream}: session B"
            );
            assert_eq!(ok_text(&ra)?, "done after 3 steps");
            assert_eq!(ok_text(&rb)?, "done after 6 steps");
        }
        Ok(())
    })
    .await
}

/// `structuredContent.receivedHeaders` of a `remote__regional_lookup` call.
async fn received_headers(
    client: &manifold_testkit::harness::McpClient,
    args: Value,
) -> Result<Value> {
    let reply = client.call_tool("remote__regional_lookup", args).await?;
    let result = reply.result()?;
    if result.get("isError") == Some(&Value::Bool(true)) {
        return Err(anyhow!("tool error: {result}"));
    }
    Ok(result["structuredContent"]["receivedHeaders"].clone())
}

#[tokio::test]
async fn calls_to_an_http_upstream_mirror_mcp_headers() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let h = received_headers(
            &client,
            json!({"region": "eu-west-1", "verbose": true, "query": "q"}),
        )
        .await?;
        assert_eq!(h["mcp-method"], "tools/call", "{h}");
        assert_eq!(h["mcp-name"], "regional_lookup", "{h}");
        assert_eq!(h["mcp-param-region"], "eu-west-1", "{h}");
        assert_eq!(h["mcp-param-verbose"], "true", "{h}");

        let h = received_headers(&client, json!({"region": "Zürich", "query": "q"})).await?;
        assert_eq!(h["mcp-param-region"], "=?base64?WsO8cmljaA==?=", "{h}");
        // An annotated argument that is absent gives no header.
        assert!(h.get("mcp-param-verbose").is_none(), "{h}");
        assert_eq!(h["mcp-name"], "regional_lookup", "{h}");

        // Edge spaces and control characters are encoded too.
        let h = received_headers(&client, json!({"region": " padded ", "query": "q"})).await?;
        assert_eq!(h["mcp-param-region"], "=?base64?IHBhZGRlZCA=?=", "{h}");
        let h = received_headers(&client, json!({"region": "a\nb", "query": "q"})).await?;
        assert_eq!(h["mcp-param-region"], "=?base64?YQpi?=", "{h}");

        // Region absent: the gateway's own argument check answers (the demo
        // reports headers only on success, so absence of the header is checked
        // with `verbose` above).
        let reply = client
            .call_tool("remote__regional_lookup", json!({"query": "q"}))
            .await?;
        let result = reply.result()?;
        assert_eq!(result["isError"], true, "{result}");
        assert!(
            text_of(result)?.contains("\"region\" is a required property"),
            "{result}"
        );
        Ok(())
    })
    .await
}

/// `[validation] arguments`: arguments that do not fit the tool's inputSchema
/// are a tool execution error from the gateway (naming each pointer and rule),
/// in both eras, and never reach the upstream; with `"off"` the upstream's own
/// check answers.
#[tokio::test]
async fn invalid_arguments_are_refused_at_the_edge_unless_validation_is_off() -> Result<()> {
    bounded(async {
        for (validation, want) in [
            ("enforce", "/text: 5 is not of type \"string\""),
            ("off", "argument `text` must be a string"),
        ] {
            let f = Setup {
                extra: format!("[validation]\narguments = \"{validation}\"\n"),
                ..Setup::default()
            }
            .start()
            .await?;
            let c = f.session().await?;
            let r = c.call_tool("local__echo", json!({"text": 5})).await?;
            let result = r.result()?;
            assert_eq!(result["isError"], true, "{validation}: {result}");
            assert!(text_of(result)?.contains(want), "{validation}: {result}");
            // Valid arguments pass either way.
            let r = c.call_tool("local__echo", json!({"text": "ok"})).await?;
            assert_eq!(text_of(r.result()?)?, "ok");
            // 2026-07-28: the same answer, as a complete result.
            let s = f.gw.client();
            let req = manifold_testkit::harness::stateless_request(
                9,
                "tools/call",
                json!({"name": "local__echo", "arguments": {"text": 5}}),
            );
            let (status, r) = s.send_stateless(&req, &[]).await?;
            assert_eq!(status, http::StatusCode::OK, "{r}");
            assert_eq!(r["result"]["isError"], true, "{r}");
            assert!(text_of(&r["result"])?.contains(want), "{validation}: {r}");
            if validation == "enforce" {
                assert_eq!(r["result"]["resultType"], "complete", "{r}");
            }
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn without_a_progress_token_the_reply_is_plain_json() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        for upstream in ["local", "remote"] {
            let reply = client
                .call_tool(
                    &format!("{upstream}__slow_progress"),
                    json!({"steps": 2, "delay_ms": 10}),
                )
                .await?;
            assert!(
                reply.content_type.starts_with("application/json"),
                "{upstream}: {reply}"
            );
            assert_eq!(reply.messages.len(), 1, "{upstream}: {reply}");
            assert_eq!(ok_text(&reply)?, "done after 2 steps");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_client_that_accepts_only_json_gets_the_result_alone() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        for upstream in ["local", "remote"] {
            let body = serde_json::to_vec(&json!({
                "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": {"name": format!("{upstream}__slow_progress"),
                           "arguments": {"steps": 3, "delay_ms": 10},
                           "_meta": {"progressToken": "t"}}
            }))?;
            let raw = client
                .post_raw(body, &[("accept", "application/json")])
                .await?;
            let reply = manifold_testkit::harness::Reply::from_raw(raw)?;
            assert!(
                reply.content_type.starts_with("application/json"),
                "{upstream}: {reply}"
            );
            assert_eq!(reply.messages.len(), 1, "{upstream}: {reply}");
            assert_eq!(ok_text(&reply)?, "done after 3 steps");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_cancellation_from_another_session_does_not_touch_the_call() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let a = f.session().await?;
        let b = f.session().await?;
        for upstream in ["local", "remote"] {
            let params = json!({"name": format!("{upstream}__sleep"), "arguments": {"ms": 1500}});
            let call = {
                let a = a.clone();
                tokio::spawn(
                    async move { a.request_with_id(json!("same"), "tools/call", params).await },
                )
            };
            // Once `a`'s call is in flight, `b` names the same id.
            crate::until_in_flight(&f.gw, upstream, 1, std::time::Duration::from_secs(5)).await?;
            let ack = b
                .notify(
                    "notifications/cancelled",
                    json!({"requestId": "same", "reason": "not yours"}),
                )
                .await?;
            assert_eq!(ack.status, http::StatusCode::ACCEPTED);
            let reply = call.await??;
            assert_eq!(ok_text(&reply)?, "slept", "{upstream}");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn cancelling_a_streaming_call_ends_its_stream_promptly() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        for upstream in ["local", "remote"] {
            let id = json!(format!("stream-cancel-{upstream}"));
            let mut stream = client
                .send_streaming(&json!({
                    "jsonrpc": "2.0", "id": id, "method": "tools/call",
                    "params": {"name": format!("{upstream}__slow_progress"),
                               "arguments": {"steps": 400, "delay_ms": 25},
                               "_meta": {"progressToken": "c"}}
                }))
                .await?;
            let first = stream.expect_next().await?;
            assert_eq!(first["method"], "notifications/progress", "{first}");
            let started = std::time::Instant::now();
            let ack = client
                .notify("notifications/cancelled", json!({"requestId": id}))
                .await?;
            assert_eq!(ack.status, http::StatusCode::ACCEPTED);
            let rest = stream.rest().await?;
            assert!(
                started.elapsed() < std::time::Duration::from_secs(3),
                "{upstream}: the stream ran on for {:?}",
                started.elapsed()
            );
            // Progress may still be in flight; after it, no response at all: a
            // cancelled request gets none (spec: cancellation).
            for m in &rest {
                assert_eq!(m["method"], "notifications/progress", "{upstream}: {m}");
            }
            assert!(
                rest.len() < 100,
                "{upstream}: {} messages after the cancel",
                rest.len()
            );
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn mcp_headers_from_the_client_are_not_forwarded_as_is() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let body = serde_json::to_vec(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "remote__regional_lookup",
                       "arguments": {"region": "eu-west-1", "query": "q"}}
        }))?;
        let raw = client
            .post_raw(
                body,
                &[
                    ("mcp-param-region", "forged"),
                    ("mcp-param-verbose", "true"),
                    ("mcp-name", "remote__regional_lookup"),
                    ("mcp-smuggled", "x"),
                ],
            )
            .await?;
        let reply = manifold_testkit::harness::Reply::from_raw(raw)?;
        let h = &reply.result()?["structuredContent"]["receivedHeaders"];
        assert_eq!(h["mcp-param-region"], "eu-west-1", "{h}");
        assert_eq!(h["mcp-name"], "regional_lookup", "{h}");
        assert!(h.get("mcp-param-verbose").is_none(), "{h}");
        assert!(h.get("mcp-smuggled").is_none(), "{h}");
        // The upstream session is the gateway's own, not the client's.
        let ours = client.session_id().unwrap_or_default();
        assert!(h["mcp-session-id"].is_string(), "{h}");
        assert_ne!(h["mcp-session-id"], ours.as_str(), "{h}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn concurrent_calls_from_two_sessions_never_cross() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let a = f.session().await?;
        let b = f.session().await?;
        let mut calls = Vec::new();
        for i in 0..40u64 {
            let client = if i % 2 == 0 { a.clone() } else { b.clone() };
            let upstream = if i % 4 < 2 { "local" } else { "remote" };
            calls.push(tokio::spawn(async move {
                // Both sessions use the same request ids on purpose.
                let reply = client
                    .request_with_id(
                        json!(i / 2),
                        "tools/call",
                        json!({"name": format!("{upstream}__echo"),
                               "arguments": {"text": format!("message {i}")}}),
                    )
                    .await?;
                anyhow::ensure!(reply.response()?["id"] == i / 2, "{reply}");
                anyhow::ensure!(ok_text(&reply)? == format!("message {i}"), "{reply}");
                Ok::<_, anyhow::Error>(())
            }));
        }
        for call in calls {
            call.await??;
        }
        Ok(())
    })
    .await
}
