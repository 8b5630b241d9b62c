//! Hostile and broken peers: each test is a promise a user relies on when a client
//! or an upstream misbehaves — the documented answer within the deadline, the
//! connection cut off, the request refused — never a hang.

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use http::StatusCode;
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use crate::{bin, bounded, eventually, text_of, until, Setup};
use manifold_testkit::harness::{toml_string, DemoHttp, TestGateway};

/// Reads from `stream` until the peer closes it or `limit` passes; what arrived.
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> Result<String> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + limit;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        anyhow::ensure!(
            !left.is_zero(),
            "the connection was still open after {limit:?}"
        );
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return Ok(String::from_utf8_lossy(&got).into_owned()),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
            Err(_) => anyhow::bail!("the connection was still open after {limit:?}"),
        }
    }
}

/// Established TCP connections (IPv4, from any process here) to local `port`: the
/// gateway's connections to an upstream listening there.
fn connections_to(port: u16) -> usize {
    let table = std::fs::read_to_string("/proc/net/tcp").unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            let remote_port = cols
                .get(2)
                .and_then(|r| r.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            remote_port == Some(port) && cols.get(3) == Some(&"01")
        })
        .count()
}

/// A client that sends half its headers and then nothing is cut off after
/// `limits.header_read_timeout`; one that stops mid-body gets 408.
#[tokio::test]
async fn slow_headers_and_bodies_are_cut_off() -> Result<()> {
    bounded(async {
        let f = Setup {
            extra: "[limits]\nheader_read_timeout = \"1s\"\nbody_read_timeout = \"1s\"\n".into(),
            ..Setup::default()
        }
        .start()
        .await?;
        let addr = f.gw.addr();

        let mut slow = TcpStream::connect(addr).await?;
        slow.write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: applic")
            .await?;
        let answer = read_until_closed(&mut slow, Duration::from_secs(10)).await?;
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 408"),
            "headers that never end: {answer:?}"
        );

        let mut trickle = TcpStream::connect(addr).await?;
        trickle
            .write_all(
                b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n\
                  Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\"",
            )
            .await?;
        let answer = read_until_closed(&mut trickle, Duration::from_secs(10)).await?;
        assert!(answer.starts_with("HTTP/1.1 408"), "a body that never ends: {answer:?}");
        assert!(answer.contains("body_read_timeout"), "{answer}");

        // Others are still served.
        let client = f.session().await?;
        assert_eq!(client.request("ping", json!({})).await?.raw_result()?, "{}");
        Ok(())
    })
    .await
}

/// On a listener that is not loopback, a DNS-rebinding page's request (its own
/// domain in both `Host` and `Origin`) is refused; only the listed hosts and
/// origins are served, and `Origin == Host` proves nothing.
#[tokio::test]
async fn a_rebinding_request_to_an_open_listener_is_refused() -> Result<()> {
    bounded(async {
        let f = Setup {
            server: "listen = \"0.0.0.0:0\"\nallow_unauthenticated = true\n\
                     allowed_hosts = [\"mcp.example.com\"]\n\
                     allowed_origins = [\"https://app.example.com\"]"
                .into(),
            ..Setup::default()
        }
        .start()
        .await?;
        let port = f.gw.addr().port();
        let client = f.gw.client();
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}})
        .to_string();
        let evil_host = format!("evil.example:{port}");
        let evil_origin = format!("http://evil.example:{port}");
        let listed_host = format!("mcp.example.com:{port}");
        let rows: [(&[(&str, &str)], StatusCode); 5] = [
            (
                &[("host", &evil_host), ("origin", &evil_origin)],
                StatusCode::FORBIDDEN,
            ),
            (&[("host", &evil_host)], StatusCode::FORBIDDEN),
            (&[("host", "127.0.0.1")], StatusCode::FORBIDDEN),
            (
                &[("host", &listed_host), ("origin", "http://mcp.example.com")],
                StatusCode::FORBIDDEN,
            ),
            (
                &[
                    ("host", &listed_host),
                    ("origin", "https://app.example.com"),
                ],
                StatusCode::OK,
            ),
        ];
        for (headers, want) in rows {
            let reply = client.post_raw(init.clone(), headers).await?;
            assert_eq!(reply.status, want, "{headers:?}: {reply}");
        }
        Ok(())
    })
    .await
}

/// An HTTP upstream that takes calls and never answers them (nor their
/// cancellations): every caller gets the timeout error within the upstream's
/// `timeout`, and the connections the cancellations open do not pile up.
#[tokio::test]
async fn a_hung_http_upstream_times_out_on_time_and_leaks_nothing() -> Result<()> {
    bounded(async {
        let hung = DemoHttp::spawn_bin(bin(), &["--hang-calls"]).await?;
        let gw = TestGateway::start(&format!(
            "[upstreams.hung]\nurl = {}\ntimeout = \"1s\"\n",
            toml_string(&hung.url)
        ))
        .await?;
        let port: u16 = hung
            .url
            .rsplit(':')
            .next()
            .and_then(|p| p.split('/').next())
            .and_then(|p| p.parse().ok())
            .context("the upstream's port")?;
        let open = || connections_to(port);
        let client = gw.session("2025-11-25", json!({})).await?;
        let before = open();
        let started = Instant::now();
        let calls: Vec<_> = (0..6)
            .map(|i| {
                let c = client.clone();
                tokio::spawn(async move {
                    c.call_tool("hung__echo", json!({"text": format!("x{i}")}))
                        .await
                })
            })
            .collect();
        for call in calls {
            let reply = call.await??;
            let result = reply.result()?;
            assert_eq!(result["isError"], true, "{reply}");
            assert!(
                text_of(result)?.contains("did not answer within 1s"),
                "{reply}"
            );
        }
        let took = started.elapsed();
        assert!(
            took < Duration::from_secs(5),
            "the timeout did not hold: {took:?}"
        );
        // The calls' and the cancellations' connections to the hung upstream are
        // closed (a cancellation within SEND_TIMEOUT): none piles up.
        let what = format!("connections to the hung upstream back to {before}");
        until(&what, Duration::from_secs(15), || open() <= before).await?;
        Ok(())
    })
    .await
}

/// A stdio child that stops reading its stdin: calls queued behind the full pipe
/// fail within the upstream's `timeout` instead of waiting for ever.
#[tokio::test]
async fn a_child_that_stops_reading_fails_calls_on_time() -> Result<()> {
    bounded(async {
        let gw = TestGateway::start(&format!(
            // One session sends them all: lift its own bound on calls in flight.
            "[limits]\nmax_calls_per_session = 1000\n\n\
             [upstreams.deaf]\ncommand = {}\nargs = [\"--faults\", \"--hang-calls\"]\ntimeout = \"1s\"\n",
            toml_string(bin())
        ))
        .await?;
        let client = gw.session("2025-11-25", json!({})).await?;
        let padding = "p".repeat(1024);
        let started = Instant::now();
        // More than the pipe (64 KiB) and the stdin queue (256 messages) hold.
        let calls: Vec<_> = (0..400)
            .map(|_| {
                let (c, text) = (client.clone(), padding.clone());
                tokio::spawn(async move { c.call_tool("deaf__echo", json!({"text": text})).await })
            })
            .collect();
        let mut unread = 0;
        for call in calls {
            let reply = call.await??;
            let result = reply.result().context("a result")?;
            assert_eq!(result["isError"], true, "{reply}");
            if text_of(result)?.contains("has not read its stdin") {
                unread += 1;
            }
        }
        let took = started.elapsed();
        assert!(took < Duration::from_secs(10), "calls waited {took:?}");
        assert!(unread > 0, "no call found the child's stdin full");
        Ok(())
    })
    .await
}

/// A stdio child gets its own `env` and `PATH`, `HOME`, `LANG` — not the
/// gateway's other variables (one upstream's secrets never reach another) —
/// unless `inherit_env = true`.
#[tokio::test]
async fn children_get_a_clean_environment() -> Result<()> {
    bounded(async {
        // A variable this process has and a child must not see.
        let (var, value) = ["CARGO_MANIFEST_DIR", "NEXTEST_RUN_ID", "CARGO"]
            .iter()
            .find_map(|k| std::env::var(k).ok().map(|v| (*k, v)))
            .context("no variable to test with")?;
        let gw = TestGateway::start(&format!(
            "[upstreams.clean]\ncommand = {bin}\nargs = [\"--env-tool\"]\nenv = {{ FOO = \"bar\" }}\n\n\
             [upstreams.full]\ncommand = {bin}\nargs = [\"--env-tool\"]\ninherit_env = true\n",
            bin = toml_string(bin())
        ))
        .await?;
        let client = gw.session("2025-11-25", json!({})).await?;
        let env = |upstream: &str, name: &str| {
            let (c, tool, name) = (client.clone(), format!("{upstream}__env"), name.to_string());
            async move {
                let reply = c.call_tool(&tool, json!({"name": name})).await?;
                Ok::<_, anyhow::Error>(text_of(reply.result()?)?.to_string())
            }
        };
        assert_eq!(env("clean", var).await?, "unset", "{var} leaked");
        assert_eq!(env("full", var).await?, value, "inherit_env");
        assert_eq!(env("clean", "FOO").await?, "bar");
        assert_ne!(env("clean", "PATH").await?, "unset");
        Ok(())
    })
    .await
}

/// Whether process `pid` is gone (or a zombie waiting for its reaper).
fn dead(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .and_then(|rest| rest.split_whitespace().next())
            .is_some_and(|state| state == "Z" || state == "X"),
    }
}

async fn until_dead(pid: &str, limit: Duration) -> Result<()> {
    until(&format!("process {pid} gone"), limit, || dead(pid)).await
}

/// What a stdio child starts is stopped with it: when it crashes (and is
/// restarted) and when the gateway shuts down.
#[tokio::test]
async fn grandchildren_stop_with_their_upstream() -> Result<()> {
    bounded(async {
        let gw = TestGateway::start(&format!(
            "[upstreams.spawner]\ncommand = {}\nargs = [\"--faults\", \"--spawn-grandchild\"]\n",
            toml_string(bin())
        ))
        .await?;
        let client = gw.session("2025-11-25", json!({})).await?;
        let grandchild = |c: manifold_testkit::harness::McpClient| async move {
            let reply = c.call_tool("spawner__grandchild", json!({})).await?;
            Ok::<_, anyhow::Error>(text_of(reply.result()?)?.to_string())
        };
        let first = grandchild(client.clone()).await?;
        assert!(!dead(&first), "the grandchild {first} should be running");
        let _ = client.call_tool("spawner__crash", json!({})).await?;
        until_dead(&first, Duration::from_secs(10)).await?;

        // Restarted: a new child with a new grandchild, stopped at shutdown.
        let second = eventually("the upstream back", Duration::from_secs(15), || async {
            Ok(grandchild(client.clone()).await.ok())
        })
        .await?;
        assert_ne!(second, first);
        gw.shutdown().await?;
        until_dead(&second, Duration::from_secs(10)).await?;
        Ok(())
    })
    .await
}

/// A child that is alive but no longer answers (it stopped reading its stdin) is
/// found by the liveness pings and restarted.
#[tokio::test]
async fn a_hung_but_alive_child_is_restarted() -> Result<()> {
    bounded(async {
        let gw = TestGateway::start(&format!(
            "[upstreams.deaf]\ncommand = {}\nargs = [\"--faults\", \"--hang-calls\"]\n\
             timeout = \"500ms\"\nping_interval = \"300ms\"\n",
            toml_string(bin())
        ))
        .await?;
        let client = gw.session("2025-11-25", json!({})).await?;
        let reply = client.call_tool("deaf__echo", json!({"text": "x"})).await?;
        assert_eq!(reply.result()?["isError"], true, "{reply}");
        let upstream = gw.gateway().upstreams()[0].clone();
        until("a restart", Duration::from_secs(15), || {
            upstream.status().restarts > 0
        })
        .await?;
        Ok(())
    })
    .await
}

/// A `list_changed` storm costs at most about one refetch (and one rebuild) a
/// second, and no change is lost.
#[tokio::test]
async fn a_list_changed_storm_is_debounced() -> Result<()> {
    bounded(async {
        let f = Setup {
            extra: "[admin]\nlisten = \"127.0.0.1:0\"\n".into(),
            ..Setup::default()
        }
        .start()
        .await?;
        let admin = f.gw.gateway().admin_addr().context("admin address")?;
        let rebuilds = || async move {
            let (_, metrics) = crate::observe::admin_get(admin, "/metrics").await?;
            crate::observe::sample(&metrics, "manifold_catalog_rebuilds_total").context("rebuilds")
        };
        let client = f.session().await?;
        let before = rebuilds().await?;
        let started = Instant::now();
        for i in 0..20 {
            let r = client
                .call_tool("local__add_tool", json!({"name": format!("storm_{i}")}))
                .await?;
            r.result()?;
        }
        // Every added tool shows up in the end.
        eventually(
            "every tool of the storm",
            Duration::from_secs(10),
            || async {
                let names = crate::names_of(&client.list_all_tools().await?);
                Ok((0..20)
                    .all(|i| names.contains(&format!("local__storm_{i}")))
                    .then_some(()))
            },
        )
        .await?;
        let took = started.elapsed().as_secs_f64();
        let rebuilt = rebuilds().await? - before;
        assert!(
            rebuilt <= took.ceil() + 2.0,
            "{rebuilt} rebuilds in {took:.1} s for 20 list_changed"
        );
        Ok(())
    })
    .await
}
