//! Upstream failure, call timeouts, client cancellation, and an upstream that
//! cannot start: the gateway stays up and the other upstream keeps working.

use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use http::StatusCode;
use manifold_testkit::harness::{DemoHttp, McpClient};
use serde_json::{json, Value};

use crate::{
    bounded, expected_names, fixture, names_of, ok_text, text_of, until_in_flight, Setup,
    DEMO_TOOLS,
};

fn count_with_prefix(names: &[String], prefix: &str) -> usize {
    names.iter().filter(|n| n.starts_with(prefix)).count()
}

/// Asks `tools/list` again (at most `limit`) until `done` holds.
async fn poll_tools(
    client: &McpClient,
    limit: Duration,
    done: impl Fn(&[String]) -> bool,
) -> Result<Vec<String>> {
    crate::eventually("tools/list in the awaited state", limit, || {
        let (client, done) = (client.clone(), &done);
        async move {
            let names = names_of(&client.list_all_tools().await?);
            Ok(done(&names).then_some(names))
        }
    })
    .await
}

#[tokio::test]
async fn a_crashed_upstream_fails_its_call_leaves_and_comes_back() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let reply = client.call_tool("local__crash", json!({})).await?;
        let result = reply.result()?;
        assert_eq!(result["isError"], true, "{result}");
        let text = text_of(result)?;
        assert!(
            text.contains("`local`"),
            "the error does not name the upstream: {text}"
        );

        let reply = client
            .call_tool("remote__echo", json!({"text": "still here"}))
            .await?;
        assert_eq!(ok_text(&reply)?, "still here");

        let limit = Duration::from_secs(15);
        let started = Instant::now();
        let gone = poll_tools(&client, limit, |names| {
            count_with_prefix(names, "local__") == 0
        })
        .await?;
        assert_eq!(
            count_with_prefix(&gone, "remote__"),
            DEMO_TOOLS.len(),
            "{gone:?}"
        );
        let left = limit.saturating_sub(started.elapsed());
        let back = poll_tools(&client, left, |names| {
            count_with_prefix(names, "local__") == DEMO_TOOLS.len()
        })
        .await?;
        assert_eq!(back, expected_names());
        let reply = client
            .call_tool("local__echo", json!({"text": "back"}))
            .await?;
        assert_eq!(ok_text(&reply)?, "back");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_call_past_the_upstream_timeout_is_a_tool_error() -> Result<()> {
    bounded(async {
        let f = Setup {
            local: "timeout = \"300ms\"".into(),
            remote: "timeout = \"300ms\"".into(),
            ..Setup::default()
        }
        .start()
        .await?;
        let client = f.session().await?;
        // A 300 ms handshake may miss on a loaded machine; the upstream then
        // retries, so wait (bounded) for its tools.
        poll_tools(&client, Duration::from_secs(15), |names| {
            names.iter().any(|n| n == "local__sleep") && names.iter().any(|n| n == "remote__sleep")
        })
        .await?;
        for upstream in ["local", "remote"] {
            let started = Instant::now();
            let reply = client
                .call_tool(&format!("{upstream}__sleep"), json!({"ms": 5000}))
                .await?;
            let elapsed = started.elapsed();
            let result = reply.result()?;
            assert_eq!(result["isError"], true, "{upstream}: {result}");
            let text = text_of(result)?;
            assert!(
                text.contains("300ms") && text.contains(&format!("`{upstream}`")),
                "the error does not mention the timeout: {text}"
            );
            assert!(
                elapsed < Duration::from_secs(3),
                "{upstream}: took {elapsed:?}"
            );
            // The upstream is still usable afterwards.
            let reply = client
                .call_tool(&format!("{upstream}__echo"), json!({"text": "after"}))
                .await?;
            assert_eq!(ok_text(&reply)?, "after");
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_crash_fails_calls_in_flight_and_announces_list_changed() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        let mut stream = client.open_get_stream().await?;
        let sleeper = {
            let client = client.clone();
            tokio::spawn(
                async move { client.call_tool("local__sleep", json!({"ms": 10000})).await },
            )
        };
        // The sleeper must be in flight when the crash comes.
        until_in_flight(&f.gw, "local", 1, Duration::from_secs(5)).await?;
        let started = Instant::now();
        let reply = client.call_tool("local__crash", json!({})).await?;
        assert_eq!(reply.result()?["isError"], true, "{reply}");
        let slept = tokio::time::timeout(Duration::from_secs(3), sleeper)
            .await
            .map_err(|_| {
                anyhow!("the call in flight was not failed within 3 s of the crash")
            })???;
        assert!(started.elapsed() < Duration::from_secs(3));
        let result = slept.result()?;
        assert_eq!(result["isError"], true, "{result}");
        assert!(text_of(result)?.contains("`local`"), "{result}");
        let note = stream
            .wait_for(|m| m["method"] == "notifications/tools/list_changed")
            .await?;
        assert!(note.get("id").is_none(), "{note}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_cancelled_call_returns_promptly() -> Result<()> {
    bounded(async {
        let f = fixture().await?;
        let client = f.session().await?;
        for upstream in ["local", "remote"] {
            let id = json!(format!("sleep-{upstream}"));
            let params = json!({"name": format!("{upstream}__sleep"), "arguments": {"ms": 10000}});
            let started = Instant::now();
            let call = {
                let (client, id) = (client.clone(), id.clone());
                tokio::spawn(async move { client.request_with_id(id, "tools/call", params).await })
            };
            // Repeat the cancellation until the call ends: the first one may
            // overtake the request it names.
            let what = format!("{upstream}: the cancelled call ended");
            crate::eventually(&what, Duration::from_secs(5), || async {
                let ack = client
                    .notify(
                        "notifications/cancelled",
                        json!({"requestId": id, "reason": "test"}),
                    )
                    .await?;
                assert_eq!(ack.status, StatusCode::ACCEPTED, "{ack}");
                Ok(call.is_finished().then_some(()))
            })
            .await?;
            let reply = call.await??;
            let elapsed = started.elapsed();
            assert!(
                elapsed < Duration::from_secs(3),
                "{upstream}: took {elapsed:?}"
            );
            // A cancelled request gets no response (spec: cancellation): the POST
            // ends with an empty event stream.
            assert!(reply.response().is_err(), "{upstream}: {reply}");
            let up =
                f.gw.gateway()
                    .upstreams()
                    .into_iter()
                    .find(|u| &**u.name() == upstream)
                    .ok_or_else(|| anyhow!("no upstream {upstream}"))?;
            assert_eq!(up.in_flight(), 0, "{upstream}: the call is still in flight");
        }
        let reply = client
            .call_tool("local__echo", json!({"text": "ok"}))
            .await?;
        assert_eq!(ok_text(&reply)?, "ok");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_upstream_that_cannot_start_does_not_stop_the_others() -> Result<()> {
    bounded(async {
        let f = Setup {
            extra: "[upstreams.ghost]\ncommand = \"/nonexistent/manifold-no-such-upstream\"\n"
                .into(),
            ..Setup::default()
        }
        .start()
        .await?;
        let client = f.session().await?;
        let names = names_of(&client.list_all_tools().await?);
        assert_eq!(names, expected_names());
        for name in ["local__echo", "remote__echo"] {
            let reply = client.call_tool(name, json!({"text": name})).await?;
            assert_eq!(ok_text(&reply)?, name);
        }
        let reply = client
            .call_tool("ghost__echo", json!({"text": "x"}))
            .await?;
        assert_eq!(reply.error()?["code"], -32602, "{reply}");
        let ghost =
            f.gw.gateway()
                .upstreams()
                .into_iter()
                .find(|u| &**u.name() == "ghost")
                .ok_or_else(|| anyhow!("no ghost upstream"))?;
        assert_ne!(ghost.status().state.as_str(), "ready");
        let reply = client.request("ping", Value::Null).await?;
        assert_eq!(reply.raw_result()?, "{}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_dead_http_upstream_leaves_and_comes_back_when_restarted() -> Result<()> {
    bounded(async {
        let mut f = fixture().await?;
        let client = f.session().await?;
        let addr = f
            .remote
            .url
            .trim_start_matches("http://")
            .trim_end_matches("/mcp")
            .to_owned();
        f.remote.child.kill().await?;
        let started = Instant::now();
        let reply = client
            .call_tool("remote__echo", json!({"text": "x"}))
            .await?;
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
        let result = reply.result()?;
        assert_eq!(result["isError"], true, "{result}");
        assert!(text_of(result)?.contains("`remote`"), "{result}");
        let reply = client
            .call_tool("local__echo", json!({"text": "fine"}))
            .await?;
        assert_eq!(ok_text(&reply)?, "fine");
        let gone = poll_tools(&client, Duration::from_secs(15), |names| {
            count_with_prefix(names, "remote__") == 0
        })
        .await?;
        assert_eq!(count_with_prefix(&gone, "local__"), DEMO_TOOLS.len());
        // A new upstream process on the same address: the gateway reconnects.
        f.remote = DemoHttp::spawn_at(crate::bin(), &addr, &[]).await?;
        let back = poll_tools(&client, Duration::from_secs(20), |names| {
            count_with_prefix(names, "remote__") == DEMO_TOOLS.len()
        })
        .await?;
        assert_eq!(back, expected_names());
        let reply = client
            .call_tool("remote__echo", json!({"text": "back"}))
            .await?;
        assert_eq!(ok_text(&reply)?, "back");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_upstream_answering_401_is_reported_as_needing_authorization() -> Result<()> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    bounded(async {
        // A bounded fake upstream: answers the first few requests with 401.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let server = tokio::spawn(async move {
            for _ in 0..8 {
                let Ok((mut s, _)) = listener.accept().await else { return };
                let mut buf = vec![0u8; 16 * 1024];
                let _ = s.read(&mut buf).await;
                let body = r#"{"error":"invalid_token"}"#;
                let reply = format!(
                    "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\nwww-authenticate: Bearer\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(reply.as_bytes()).await;
            }
        });
        let f = Setup {
            extra: format!("[upstreams.locked]\nurl = \"http://{addr}/mcp\"\n"),
            ..Setup::default()
        }
        .start()
        .await?;
        let up =
            f.gw.gateway()
                .upstreams()
                .into_iter()
                .find(|u| &**u.name() == "locked")
                .ok_or_else(|| anyhow!("no upstream locked"))?;
        let status = up.status();
        let err = status.last_error.unwrap_or_default();
        assert!(err.contains("authorization required (HTTP 401"), "{err}");
        server.abort();
        Ok(())
    })
    .await
}

#[tokio::test]
async fn one_request_refused_with_400_does_not_reset_the_shared_http_session() -> Result<()> {
    bounded(async {
        // This upstream answers bodies over 4 KB with 400 and a null-id error,
        // as servers with a message size limit do.
        let remote = DemoHttp::spawn(&["--bad-request-over", "4000"]).await?;
        let gw = manifold_testkit::harness::TestGateway::start(&format!(
            "[upstreams.remote]\nurl = {}\n",
            manifold_testkit::harness::toml_string(&remote.url)
        ))
        .await?;
        let client = gw.session("2025-11-25", json!({})).await?;
        let other = gw.session("2025-11-25", json!({})).await?;
        let big = "x".repeat(5000);
        // Another client's call is in flight while the big one is refused.
        let slow =
            tokio::spawn(async move { other.call_tool("remote__sleep", json!({"ms": 600})).await });
        until_in_flight(&gw, "remote", 1, Duration::from_secs(5)).await?;
        let refused = client
            .call_tool("remote__echo", json!({"text": big}))
            .await?;
        let result = refused.result()?;
        assert_eq!(result["isError"], true, "{result}");
        assert!(text_of(result)?.contains("HTTP 400"), "{result}");
        assert_eq!(
            ok_text(&slow.await??)?,
            "slept",
            "the other client's call was cut"
        );
        // The session check passed: no reconnect, and calls go on.
        let up = gw
            .gateway()
            .upstreams()
            .into_iter()
            .find(|u| &**u.name() == "remote")
            .ok_or_else(|| anyhow!("no remote upstream"))?;
        // The session check (a ping) has come back.
        until_in_flight(&gw, "remote", 0, Duration::from_secs(5)).await?;
        let status = up.status();
        assert_eq!(status.restarts, 0, "{:?}", status.last_error);
        assert_eq!(status.state.as_str(), "ready");
        let reply = client
            .call_tool("remote__echo", json!({"text": "small"}))
            .await?;
        assert_eq!(ok_text(&reply)?, "small");
        Ok(())
    })
    .await
}
