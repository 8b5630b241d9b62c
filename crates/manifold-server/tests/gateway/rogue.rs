//! The fault suite: a demo upstream that breaks the protocol in one named way
//! (`--misbehave MODE`, see `manifold_demo::rogue`), over stdio and HTTP, and
//! clients that misbehave at the front door. Each test asserts the promise a
//! user relies on: the right answer (or the documented error) on time, other
//! calls and clients still served, nothing held after (file descriptors read
//! from `/proc`).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{json, Value};
use tokio::net::TcpStream;

use crate::{bin, bounded, names_of, text_of, until};
use manifold_testkit::harness::{toml_string, DemoHttp, McpClient, TestGateway};

/// A gateway in front of one stdio demo upstream `r` misbehaving in `modes`.
async fn rogue(modes: &[&str], upstream: &str, limits: &str) -> Result<TestGateway> {
    let mut args = vec!["--faults".to_string()];
    for m in modes {
        args.push("--misbehave".into());
        args.push((*m).into());
    }
    let args: Vec<String> = args.iter().map(|a| toml_string(a)).collect();
    TestGateway::start(&format!(
        "[limits]\n{limits}\n\n[upstreams.r]\ncommand = {}\nargs = [{}]\n{upstream}\n",
        toml_string(bin()),
        args.join(", ")
    ))
    .await
}

async fn echo(c: &McpClient, text: &str) -> Result<()> {
    let r = c.call_tool("r__echo", json!({"text": text})).await?;
    let result = r.result()?;
    anyhow::ensure!(result["isError"] != true, "{r}");
    anyhow::ensure!(text_of(result)? == text, "{r}");
    Ok(())
}

/// Open file descriptors of this process (nextest runs each test in its own).
fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

#[tokio::test]
async fn garbage_bad_utf8_and_oversized_lines_are_skipped() -> Result<()> {
    bounded(async {
        let gw = rogue(
            &["garbage-lines", "bad-utf8", "huge-line"],
            "",
            "max_message_bytes = 1048576",
        )
        .await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        for n in 0..10 {
            echo(&c, &format!("through the noise {n}")).await?;
        }
        let status = gw.gateway().upstreams()[0].status();
        assert_eq!(status.restarts, 0, "the upstream was reset: {status:?}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn wrong_and_duplicate_ids_reach_nobody_else() -> Result<()> {
    bounded(async {
        let gw = rogue(&["wrong-ids"], "", "").await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let calls: Vec<_> = (0..30)
            .map(|n| {
                let c = c.clone();
                tokio::spawn(async move { echo(&c, &format!("mine {n}")).await })
            })
            .collect();
        for call in calls {
            call.await.context("join")??;
        }
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_upstream_that_ignores_cancellation_does_not_hold_the_caller() -> Result<()> {
    bounded(async {
        let gw = rogue(&["ignore-cancel"], "timeout = \"300ms\"", "").await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let started = Instant::now();
        let r = c.call_tool("r__sleep", json!({"ms": 1500})).await?;
        let took = started.elapsed();
        assert_eq!(r.result()?["isError"], true, "{r}");
        assert!(
            took < Duration::from_millis(1200),
            "answered after {took:?}"
        );
        // The late answer arrives, finds no call, and changes nothing.
        let upstream = gw.gateway().upstreams()[0].clone();
        until("the late answer dropped", Duration::from_secs(5), || {
            upstream.late_responses() >= 1
        })
        .await?;
        echo(&c, "after the late answer").await?;
        until("nothing in flight", Duration::from_secs(5), || {
            upstream.in_flight() == 0
        })
        .await?;
        assert_eq!(upstream.status().restarts, 0);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_child_that_closes_stdout_is_restarted_and_calls_fail_fast() -> Result<()> {
    bounded(async {
        let gw = rogue(&["close-stdout"], "timeout = \"20s\"", "").await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let started = Instant::now();
        let r = c.call_tool("r__echo", json!({"text": "x"})).await?;
        let took = started.elapsed();
        assert_eq!(r.result()?["isError"], true, "{r}");
        assert!(
            took < Duration::from_secs(10),
            "answered after {took:?}, not on stdout's EOF"
        );
        let upstream = gw.gateway().upstreams()[0].clone();
        until("restarted", Duration::from_secs(15), || {
            let s = upstream.status();
            s.restarts >= 1 && s.state.as_str() == "ready"
        })
        .await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_progress_flood_reaches_the_client_bounded_and_the_answer_arrives() -> Result<()> {
    bounded(async {
        let gw = rogue(&["progress-flood"], "", "").await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "r__echo", "arguments": {"text": "after the flood"},
            "_meta": {"progressToken": "p1"}}});
        let mut stream = c.send_streaming(&msg).await?;
        let mut progress = 0u64;
        let result = loop {
            let m = stream.expect_next().await?;
            if m["method"] == "notifications/progress" {
                assert_eq!(m["params"]["progressToken"], "p1", "{m}");
                progress += 1;
            } else {
                break m;
            }
        };
        assert_eq!(
            result["result"]["content"][0]["text"], "after the flood",
            "{result}"
        );
        assert!(
            progress <= manifold_demo::rogue::PROGRESS_FLOOD,
            "{progress} progress notifications"
        );
        echo(&c, "next").await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_trickled_sse_answer_is_decoded_whole() -> Result<()> {
    bounded(async {
        let demo = DemoHttp::spawn_bin(bin(), &["--misbehave", "trickle-sse"]).await?;
        let gw = TestGateway::start(&format!(
            "[upstreams.r]\nurl = {}\ntimeout = \"20s\"\n",
            toml_string(&demo.url)
        ))
        .await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        // A call with a progress token is answered over SSE by the demo.
        let msg = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "r__slow_progress", "arguments": {"steps": 2, "delay_ms": 10},
            "_meta": {"progressToken": "t"}}});
        let mut stream = c.send_streaming(&msg).await?;
        stream.set_timeout(Duration::from_secs(20));
        let result = stream
            .wait_for(|m| m.get("result").is_some() || m.get("error").is_some())
            .await?;
        assert_eq!(
            result["result"]["content"][0]["text"], "done after 2 steps",
            "{result}"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_huge_list_is_refused_with_its_reason() -> Result<()> {
    bounded(async {
        let gw = TestGateway::start(&format!(
            "[limits]\nmax_list_items = 500\n\n\
             [upstreams.big]\ncommand = {bin}\nargs = [\"--tools\", \"1000\", \"--page-size\", \"100\"]\n\n\
             [upstreams.small]\ncommand = {bin}\n",
            bin = toml_string(bin())
        ))
        .await?;
        let big = gw
            .gateway()
            .upstreams()
            .into_iter()
            .find(|u| &**u.name() == "big")
            .context("big")?
            .clone();
        until("big refused", Duration::from_secs(10), || {
            big.status()
                .last_error
                .is_some_and(|e| e.contains("limits.max_list_items"))
        })
        .await?;
        // The other upstream is served.
        let c = gw.session("2025-11-25", json!({})).await?;
        let r = c.call_tool("small__echo", json!({"text": "fine"})).await?;
        assert_eq!(text_of(r.result()?)?, "fine");
        Ok(())
    })
    .await
}

/// Security review 3, finding 6: list *bytes* are bounded, not only their
/// count — a list past `max_list_bytes` (counted page by page, before
/// anything is kept) and an item past `max_item_bytes` are refused with the
/// limit named, and the other upstreams are served.
#[tokio::test]
async fn a_list_past_its_byte_limits_is_refused_with_its_reason() -> Result<()> {
    bounded(async {
        for (limits, upstream, want) in [
            ("max_list_bytes = 65536", "big", "limits.max_list_bytes"),
            ("max_item_bytes = 200", "small", "limits.max_item_bytes"),
        ] {
            let gw = TestGateway::start(&format!(
                "[limits]\n{limits}\n\n\
                 [upstreams.big]\ncommand = {bin}\nargs = [\"--tools\", \"1000\", \"--page-size\", \"100\"]\n\n\
                 [upstreams.small]\ncommand = {bin}\n",
                bin = toml_string(bin())
            ))
            .await?;
            let up = gw
                .gateway()
                .upstreams()
                .into_iter()
                .find(|u| &**u.name() == upstream)
                .context("upstream")?
                .clone();
            until(want, Duration::from_secs(10), || {
                up.status().last_error.is_some_and(|e| e.contains(want))
            })
            .await?;
            let names = names_of(&gw.session("2025-11-25", json!({})).await?.list_all_tools().await?);
            assert!(
                !names.iter().any(|n| n.starts_with(&format!("{upstream}__"))),
                "{want}: {upstream} served: {names:?}"
            );
        }
        // Under the default limits both are served.
        let gw = TestGateway::start(&format!(
            "[upstreams.big]\ncommand = {bin}\nargs = [\"--tools\", \"1000\", \"--page-size\", \"100\"]\n",
            bin = toml_string(bin())
        ))
        .await?;
        let names = names_of(&gw.session("2025-11-25", json!({})).await?.list_all_tools().await?);
        assert!(names.len() >= 1000, "{}", names.len());
        Ok(())
    })
    .await
}

/// Three times `max_connections` sockets that connect and send nothing take the connection slots
/// only until `header_read_timeout`; a real client gets through, and every
/// descriptor is given back.
#[tokio::test]
async fn idle_sockets_do_not_lock_out_clients_or_leak() -> Result<()> {
    bounded(async {
        let gw = TestGateway::start(&format!(
            "[limits]\nmax_connections = 32\nheader_read_timeout = \"1s\"\n\n\
             [upstreams.r]\ncommand = {}\n",
            toml_string(bin())
        ))
        .await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        echo(&c, "warm").await?;
        let before = open_fds();
        let mut idle = Vec::new();
        for _ in 0..96 {
            idle.push(TcpStream::connect(gw.addr()).await?);
        }
        let started = Instant::now();
        let late = gw.session("2025-11-25", json!({})).await?;
        echo(&late, "still served").await?;
        assert!(
            started.elapsed() < Duration::from_secs(8),
            "served after {:?}",
            started.elapsed()
        );
        drop(idle);
        until("descriptors given back", Duration::from_secs(10), || {
            open_fds() <= before + 4
        })
        .await?;
        Ok(())
    })
    .await
}

/// A 2026-07-28 client that stops reading its response stream: the relay gives
/// up after `stream_write_timeout`, the call is cancelled, and the upstream slot
/// is free long before the call would have ended.
#[tokio::test]
async fn a_client_that_stops_reading_does_not_hold_an_upstream_slot() -> Result<()> {
    bounded(async {
        let gw = rogue(
            &["progress-flood"],
            "timeout = \"30s\"",
            "stream_write_timeout = \"300ms\"",
        )
        .await?;
        let upstream = gw.gateway().upstreams()[0].clone();
        let mut body: Value = manifold_testkit::harness::stateless_request(
            1,
            "tools/call",
            json!({"name": "r__slow_progress", "arguments": {"steps": 100, "delay_ms": 100}}),
        );
        body["params"]["_meta"]["progressToken"] = json!("flood");
        let body = body.to_string();
        // A socket with a small receive buffer that is never read.
        let sock = tokio::net::TcpSocket::new_v4()?;
        sock.set_recv_buffer_size(4096)?;
        let mut stream = sock.connect(gw.addr()).await?;
        let request = format!(
            "POST /mcp HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: {}\r\n\
             Mcp-Method: tools/call\r\nMcp-Name: r__slow_progress\r\nContent-Length: {}\r\n\r\n{body}",
            gw.addr(),
            manifold_testkit::harness::STATELESS,
            body.len()
        );
        tokio::io::AsyncWriteExt::write_all(&mut stream, request.as_bytes()).await?;
        until("the call started", Duration::from_secs(5), || upstream.in_flight() == 1).await?;
        // The call would run 10 s; the slot is free long before.
        until("the slot given back", Duration::from_secs(5), || upstream.in_flight() == 0).await?;
        drop(stream);
        Ok(())
    })
    .await
}

/// `[validation] output`: a result whose `structuredContent` breaks the tool's
/// `outputSchema` passes with a warning (`warn`, the default), becomes a tool
/// error naming the failure (`enforce`), or is not looked at (`off`).
#[tokio::test]
async fn a_result_that_breaks_its_output_schema() -> Result<()> {
    bounded(async {
        for mode in ["warn", "enforce", "off"] {
            let gw = TestGateway::start(&format!(
                "[validation]\noutput = \"{mode}\"\n\n[upstreams.r]\ncommand = {}\n\
                 args = [\"--misbehave\", \"bad-output\"]\n",
                toml_string(bin())
            ))
            .await?;
            let c = gw.session("2025-11-25", json!({})).await?;
            let r = c.call_tool("r__weather", json!({"city": "Oslo"})).await?;
            let result = r.result()?;
            if mode == "enforce" {
                assert_eq!(result["isError"], true, "{result}");
                let text = text_of(result)?;
                assert!(
                    text.contains("outputSchema") && text.contains("/temperatureC: "),
                    "{text}"
                );
            } else {
                assert_eq!(
                    result["structuredContent"]["temperatureC"], "warm",
                    "{mode}: {result}"
                );
            }
        }
        Ok(())
    })
    .await
}
