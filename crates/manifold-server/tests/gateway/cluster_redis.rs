//! `[cluster] redis`: three replicas (in-process gateways, each with its own
//! upstream connections and stdio child) sharing a session key and a real
//! `redis-server` (Debian's, installed by scripts/peers, started here on a
//! free loopback port). A client sends each request to the next replica:
//! what must reach the replica holding a call or a stream travels through
//! Redis — a sampling answer, a cancellation, a resource update, a
//! `list_changed` only one replica's connection heard, a 2026-07-28 retry for
//! a held call — and rate limits are shared. With Redis stopped, calls that
//! need no relay still work, relays fail with a clear 503, and `/readyz`
//! says why. The bus seen by an attacker who can reach Redis is in
//! `cluster_bus`, which shares these helpers.

use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context, Result};
use http::StatusCode;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

use crate::{bin, bounded, text_of, Setup};
use manifold_testkit::harness::{stateless_request, toml_string, DemoHttp, McpClient, TestGateway};

pub(crate) const KEY: &str = "cluster-redis-key-0123456789abcdef0123";
const STATE_KEY: &str = "cluster-request-state-key-0123456789";

/// A `redis-server` on a free loopback port, stopped when dropped.
pub(crate) struct Redis {
    child: Child,
    port: u16,
}

/// A free loopback port.
pub(crate) fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Redis {
    pub(crate) async fn start() -> Result<Redis> {
        Redis::start_with(&[]).await
    }

    /// A server started with more `args` (a password, ACL users, TLS). Its
    /// plain port answers PING (or says it wants a password) once it is up.
    pub(crate) async fn start_with(args: &[String]) -> Result<Redis> {
        let port = free_port()?;
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(args)
            .args([
                "--save",
                "",
                "--appendonly",
                "no",
                "--protected-mode",
                "yes",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .context("redis-server (scripts/peers installs Debian's redis-server)")?;
        let r = Redis { child, port };
        let what = format!("redis-server answering PING on port {port}");
        crate::eventually(&what, Duration::from_secs(10), || async {
            Ok(r.pings().await.then_some(()))
        })
        .await?;
        Ok(r)
    }

    async fn pings(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)).await else {
            return false;
        };
        let mut buf = [0u8; 7];
        s.write_all(b"PING\r\n").await.is_ok()
            && s.read_exact(&mut buf).await.is_ok()
            && (&buf == b"+PONG\r\n" || &buf == b"-NOAUTH")
    }

    pub(crate) fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    async fn stop(mut self) -> Result<()> {
        self.child.kill().await?;
        Ok(())
    }
}

/// A replica of a deployment fronting the HTTP upstream at `remote`.
pub(crate) async fn replica(redis: &str, remote: &str, extra: &str) -> Result<TestGateway> {
    let gw = replica_with(&format!("redis = {}", toml_string(redis)), remote, extra).await?;
    // The bus connects in the background: wait for it, as a pod waits to be
    // ready before it gets traffic.
    until_connected(&gw, true, Duration::from_secs(10)).await?;
    Ok(gw)
}

/// A replica whose `[cluster]` has the deployment's key and `cluster`'s
/// lines; started, not waited for.
pub(crate) async fn replica_with(cluster: &str, remote: &str, extra: &str) -> Result<TestGateway> {
    let setup = Setup {
        server: format!("request_state_key = {}", toml_string(STATE_KEY)),
        extra: format!(
            "[admin]\nlisten = \"127.0.0.1:0\"\n\n\
             [cluster]\nsession_key = {}\n{cluster}\n\n{extra}",
            toml_string(KEY),
        ),
        ..Setup::default()
    };
    TestGateway::start(&setup.render(remote)).await
}

/// `/readyz`'s body.
pub(crate) async fn readyz(gw: &TestGateway) -> Result<(StatusCode, Value)> {
    let addr = gw
        .gateway()
        .bind_admin()
        .await?
        .context("no admin listener")?;
    let mut s = TcpStream::connect(addr).await?;
    s.write_all(b"GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        .await?;
    let mut text = String::new();
    s.read_to_string(&mut text).await?;
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse::<u16>().ok())
        .context("no status")?;
    let body = text.split("\r\n\r\n").nth(1).unwrap_or_default();
    Ok((StatusCode::from_u16(status)?, serde_json::from_str(body)?))
}

async fn redis_connected(gw: &TestGateway) -> Result<bool> {
    Ok(readyz(gw).await?.1["cluster"]["redis"]["connected"] == true)
}

/// Waits until `/readyz` says the replica's bus is `connected` (or not).
pub(crate) async fn until_connected(gw: &TestGateway, want: bool, within: Duration) -> Result<()> {
    let what = format!("the bus connected = {want}");
    crate::eventually(&what, within, || async {
        Ok((redis_connected(gw).await? == want).then_some(()))
    })
    .await
}

/// A client of `gw` presenting the session `id`.
pub(crate) fn on(gw: &TestGateway, id: &str) -> McpClient {
    let c = gw.client();
    c.set_session_id(Some(id));
    c.set_protocol_version(Some("2025-11-25"));
    c
}

struct Cluster {
    redis: Redis,
    _remote: DemoHttp,
    replicas: Vec<TestGateway>,
}

async fn cluster(extra: &str) -> Result<Cluster> {
    let redis = Redis::start().await?;
    // `--notify-caller-only`: the upstream tells only the connection whose
    // call changed its list, as SDK servers with a server object per session do.
    let remote = DemoHttp::spawn_bin(bin(), &["--notify-caller-only"]).await?;
    let mut replicas = Vec::new();
    for _ in 0..3 {
        replicas.push(replica(&redis.url(), &remote.url, extra).await?);
    }
    Ok(Cluster {
        redis,
        _remote: remote,
        replicas,
    })
}

#[tokio::test]
async fn relays_reach_the_replica_holding_the_call_or_stream() -> Result<()> {
    bounded(async {
        let c = cluster("").await?;
        let [a, b, r3] = [&c.replicas[0], &c.replicas[1], &c.replicas[2]];
        let first = a.session("2025-11-25", json!({"sampling": {}})).await?;
        let id = first.session_id().context("session id")?;
        let (on_a, on_b, on_c) = (on(a, &id), on(b, &id), on(r3, &id));

        // A sampling request made during a call on C, answered through A.
        let mut stream = on_c
            .request_streaming(
                "tools/call",
                json!({"name": "remote__sample", "arguments": {"prompt": "hi"}}),
            )
            .await?;
        let asked = stream.expect_next().await?;
        assert_eq!(asked["method"], "sampling/createMessage", "{asked}");
        let ack = on_a
            .respond(
                asked["id"].clone(),
                json!({"role": "assistant", "content": {"type": "text", "text": "via A"}, "model": "m"}),
            )
            .await?;
        assert_eq!(ack.status, StatusCode::ACCEPTED, "{ack}");
        let answer = stream.expect_next().await?;
        assert_eq!(text_of(&answer["result"])?, "sampled: via A", "{answer}");

        // A call on C cancelled through B: its stream ends with no result,
        // long before the upstream's 20 s sleep.
        let mut stream = on_c
            .send_streaming(&json!({
                "jsonrpc": "2.0", "id": "long", "method": "tools/call",
                "params": {"name": "remote__sleep", "arguments": {"ms": 20000},
                           "_meta": {"progressToken": "p"}}
            }))
            .await?;
        let progress = stream.expect_next().await?;
        assert_eq!(progress["method"], "notifications/progress", "{progress}");
        let started = std::time::Instant::now();
        let ack = on_b
            .notify("notifications/cancelled", json!({"requestId": "long"}))
            .await?;
        assert_eq!(ack.status, StatusCode::ACCEPTED, "{ack}");
        assert!(stream.next().await?.is_none(), "a cancelled call got an answer");
        assert!(started.elapsed() < Duration::from_secs(15));

        // A GET stream on B; the change happens through A, whose connection
        // alone hears of it: B refetches and tells its stream.
        let mut events = on_b.open_get_stream().await?;
        on_a.call_tool("remote__add_tool", json!({"name": "added_via_a"}))
            .await?
            .result()?;
        let note = events
            .wait_for(|m| m["method"] == "notifications/tools/list_changed")
            .await?;
        assert_eq!(note["method"], "notifications/tools/list_changed");
        let names = crate::names_of(&on_b.list_all_tools().await?);
        assert!(names.contains(&"remote__added_via_a".to_string()), "{names:?}");

        // A subscription made on A (its own stdio child, whose update only A
        // hears); the stream is on B.
        let uri = "demo://item/5";
        on_a.request("resources/subscribe", json!({"uri": uri}))
            .await?
            .result()?;
        on_a.call_tool("local__touch", json!({"uri": uri}))
            .await?
            .result()?;
        let note = events
            .wait_for(|m| m["method"] == "notifications/resources/updated")
            .await?;
        assert_eq!(note["params"]["uri"], uri, "{note}");

        // One replica dies (dropped: its tasks stop at once, like a killed
        // pod): the session goes on on the others.
        let mut replicas = c.replicas;
        drop(replicas.pop().context("C")?);
        let r = on_b.call_tool("local__echo", json!({"text": "still"})).await?;
        assert_eq!(text_of(r.result()?)?, "still", "{r}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_2026_retry_resumes_a_call_held_by_another_replica() -> Result<()> {
    bounded(async {
        let c = cluster("").await?;
        let (a, b) = (&c.replicas[0], &c.replicas[1]);
        let mut first = stateless_request(
            1,
            "tools/call",
            json!({"name": "remote__elicit", "arguments": {"message": "Name?"}}),
        );
        first["params"]["_meta"]["io.modelcontextprotocol/clientCapabilities"] =
            json!({"elicitation": {"form": {}}});
        let (s, r) = a.client().send_stateless(&first, &[]).await?;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(r["result"]["resultType"], "input_required", "{r}");
        let state = r["result"]["requestState"].as_str().context("state")?;
        let key = r["result"]["inputRequests"]
            .as_object()
            .and_then(|m| m.keys().next().cloned())
            .context("key")?;
        let mut retry = first.clone();
        retry["id"] = json!(2);
        retry["params"]["requestState"] = json!(state);
        retry["params"]["inputResponses"] =
            json!({key: {"action": "accept", "content": {"name": "Ada"}}});
        let (s, r) = b.client().send_stateless(&retry, &[]).await?;
        assert_eq!(s, StatusCode::OK, "{r}");
        assert_eq!(r["id"], 2, "{r}");
        assert_eq!(r["result"]["resultType"], "complete", "{r}");
        assert_eq!(
            r["result"]["content"][0]["text"], r#"elicited: accept {"name":"Ada"}"#,
            "{r}"
        );
        // States are single-use on every replica.
        let (s, r) = c.replicas[2].client().send_stateless(&retry, &[]).await?;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{r}");
        assert!(
            r["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .contains("requestState"),
            "{r}"
        );
        Ok(())
    })
    .await
}

#[tokio::test]
async fn rate_limits_are_shared_and_fall_back_to_each_replica_without_redis() -> Result<()> {
    bounded(async {
        let c = cluster(
            "[[rate_limit]]\nwho = [\"*\"]\ntools = [\"local__echo\"]\nrate = \"2/m\"\nkey = \"global\"\n",
        )
        .await?;
        let echo = |gw: &TestGateway| {
            let client = gw.client();
            async move {
                let mut req = stateless_request(
                    1,
                    "tools/call",
                    json!({"name": "local__echo", "arguments": {"text": "x"}}),
                );
                req["id"] = json!(7);
                client.send_stateless(&req, &[]).await
            }
        };
        // Two places in one bucket for the whole deployment: the third call,
        // on a third replica, is refused.
        assert_eq!(echo(&c.replicas[0]).await?.0, StatusCode::OK);
        assert_eq!(echo(&c.replicas[1]).await?.0, StatusCode::OK);
        let (s, r) = echo(&c.replicas[2]).await?;
        assert_eq!(s, StatusCode::TOO_MANY_REQUESTS, "{r}");

        // Redis stops: each replica decides alone (its own bucket is full),
        // calls that need no relay go on, relays fail clearly, /readyz says so.
        let Cluster {
            redis, replicas, ..
        } = c;
        redis.stop().await?;
        until_connected(&replicas[1], false, Duration::from_secs(10)).await?;
        let (status, body) = readyz(&replicas[1]).await?;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(body["cluster"]["redis"]["last_error"].is_string(), "{body}");
        let (s, r) = echo(&replicas[2]).await?;
        assert_eq!(s, StatusCode::OK, "a replica's own bucket still had places: {r}");
        let session = replicas[0].session("2025-11-25", json!({})).await?;
        let id = session.session_id().context("id")?;
        let r = on(&replicas[1], &id)
            .call_tool("local__echo", json!({"text": "no relay needed"}))
            .await?;
        assert_eq!(text_of(r.result()?)?, "no relay needed", "{r}");
        let ack = on(&replicas[1], &id)
            .respond(json!("mf-0000abcd-1"), json!({}))
            .await?;
        assert_eq!(ack.status, StatusCode::SERVICE_UNAVAILABLE, "{ack}");
        let text = String::from_utf8_lossy(&ack.body).to_string();
        assert!(text.contains("Redis"), "{text}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_redis_that_stops_answering_is_noticed_and_rejoined() -> Result<()> {
    bounded(async {
        let redis = Redis::start().await?;
        let remote = DemoHttp::spawn_bin(bin(), &[]).await?;
        let gw = replica(&redis.url(), &remote.url, "").await?;
        let pid = redis.child.id().context("pid")?.to_string();
        // Frozen, its connections stay open but nothing answers: the next PING
        // (every 10 s) goes unanswered and the bus reports it.
        std::process::Command::new("kill")
            .args(["-STOP", &pid])
            .status()?;
        let frozen = until_connected(&gw, false, manifold_cluster::LIVENESS_INTERVAL * 2).await;
        std::process::Command::new("kill")
            .args(["-CONT", &pid])
            .status()?;
        frozen?;
        let (_, body) = readyz(&gw).await?;
        assert!(
            body["cluster"]["redis"]["last_error"]
                .as_str()
                .unwrap_or_default()
                .contains("PING"),
            "{body}"
        );
        // Back: the bus reconnects on its own.
        until_connected(&gw, true, Duration::from_secs(15)).await?;
        Ok(())
    })
    .await
}
