//! Flaky and failing upstreams: retries that respect tool hints and a
//! budget, and the circuit breaker (`[upstreams.x] retries`,
//! `[upstreams.x.breaker]`), against the demo upstream's `--flaky-*` modes
//! (connections reset and 503s for a seeded share of `tools/call`s, or an
//! outage of the first N). The upstream counts every call that reaches it
//! (its `calls` tool), so each test checks what the upstream saw, not only
//! what the client got.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use manifold_testkit::harness::{toml_string, DemoHttp, McpClient, TestGateway};
use serde_json::{json, Value};

use crate::observe::{admin_get, audit_lines, sample};
use crate::{bin, bounded, text_of, until};

/// A flaky HTTP demo upstream `f` behind a gateway with `extra` in its
/// section (and `sections` after it).
async fn flaky(flags: &[&str], extra: &str, sections: &str) -> Result<(TestGateway, DemoHttp)> {
    // `spawn_bin` passes `--faults` (the `sleep` tool).
    let remote = DemoHttp::spawn_bin(bin(), flags).await?;
    let gw = TestGateway::start(&format!(
        "[upstreams.f]\nurl = {}\ntimeout = \"30s\"\n{extra}\n\n{sections}\n",
        toml_string(&remote.url)
    ))
    .await?;
    Ok((gw, remote))
}

/// How many `tools/call`s of each tool reached the upstream.
async fn arrivals(c: &McpClient) -> Result<BTreeMap<String, u64>> {
    let r = c.call_tool("f__calls", json!({})).await?;
    let text = text_of(r.result()?)?;
    serde_json::from_str(text).with_context(|| format!("counts: {text}"))
}

/// Calls `tool` `n` times, `width` at a time; the results.
async fn calls(
    c: &McpClient,
    tool: &str,
    args: Value,
    n: usize,
    width: usize,
) -> Result<Vec<Value>> {
    let mut out = Vec::with_capacity(n);
    for chunk in (0..n).collect::<Vec<_>>().chunks(width) {
        let tasks: Vec<_> = chunk
            .iter()
            .map(|_| {
                let (c, tool, args) = (c.clone(), tool.to_string(), args.clone());
                tokio::spawn(async move { c.call_tool(&tool, args).await })
            })
            .collect();
        for t in tasks {
            out.push(t.await.context("join")??.result()?.clone());
        }
    }
    Ok(out)
}

fn succeeded(results: &[Value]) -> usize {
    results.iter().filter(|r| r["isError"] != true).count()
}

#[tokio::test]
async fn read_only_calls_through_a_flaky_upstream_succeed() -> Result<()> {
    bounded(async {
        let (gw, _remote) = flaky(
            &[
                "--flaky-reset",
                "0.3",
                "--flaky-unavailable",
                "0.1",
                "--flaky-seed",
                "7",
            ],
            "retries = {max = 8, budget = 1.0}",
            "",
        )
        .await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let n = 400;
        let results = calls(&c, "f__echo", json!({"text": "hi"}), n, 8).await?;
        let ok = succeeded(&results);
        assert!(
            ok as f64 >= 0.995 * n as f64,
            "{ok} of {n} succeeded; a failure: {:?}",
            results.iter().find(|r| r["isError"] == true)
        );
        let seen = arrivals(&c).await?;
        let sent = seen.get("echo").copied().unwrap_or(0);
        assert!(
            sent > n as u64,
            "a 40 % failure rate needs retries: {seen:?}"
        );
        let counts = gw.gateway().upstreams()[0]
            .retry_counts()
            .context("retries are on")?;
        assert_eq!(counts.retries, sent - n as u64, "every retry reached it");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn a_call_that_may_not_be_repeated_reaches_the_upstream_once() -> Result<()> {
    bounded(async {
        // `sleep` has no hints; `echo` is read-only, but the operator does not
        // trust it.
        let (gw, _remote) = flaky(
            &[
                "--flaky-reset",
                "0.3",
                "--flaky-unavailable",
                "0.1",
                "--flaky-seed",
                "11",
            ],
            "retries = {max = 8, budget = 1.0}",
            "[upstreams.f.overrides.echo]\nretry = false\n",
        )
        .await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let sleeps = calls(&c, "f__sleep", json!({"ms": 0}), 100, 8).await?;
        let echoes = calls(&c, "f__echo", json!({"text": "x"}), 50, 8).await?;
        let seen = arrivals(&c).await?;
        assert_eq!(seen.get("sleep"), Some(&100), "{seen:?}");
        assert_eq!(seen.get("echo"), Some(&50), "{seen:?}");
        // The faults reached the client as tool errors, not as retries.
        assert!(succeeded(&sleeps) < 90 && succeeded(&echoes) < 45);
        let failed = sleeps
            .iter()
            .find(|r| r["isError"] == true)
            .context("a failure")?;
        assert!(text_of(failed)?.contains("upstream `f`"), "{failed}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn the_retry_budget_holds_under_a_total_outage() -> Result<()> {
    bounded(async {
        let (gw, _remote) = flaky(
            &["--flaky-unavailable", "1.0"],
            "retries = {max = 2, budget = 0.1}",
            "",
        )
        .await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let n = 200u64;
        let started = Instant::now();
        let results = calls(&c, "f__echo", json!({"text": "x"}), n as usize, 4).await?;
        let windows = started.elapsed().as_secs() / 10 + 1;
        assert_eq!(succeeded(&results), 0);
        let sent = arrivals(&c).await?.get("echo").copied().unwrap_or(0);
        // 10 % of the calls, plus the floor for each budget window the run
        // touched — not `max` (2) per call.
        let bound = n + n / 10 + 3 * windows;
        assert!(
            (n..=bound).contains(&sent),
            "{sent} requests for {n} calls (bound {bound})"
        );
        let counts = gw.gateway().upstreams()[0].retry_counts().context("on")?;
        assert_eq!(counts.retries, sent - n);
        assert!(counts.refused > 100, "{counts:?}");
        Ok(())
    })
    .await
}

#[tokio::test]
async fn an_open_breaker_fails_calls_at_once_then_a_probe_closes_it() -> Result<()> {
    bounded(async {
        let dir = std::env::temp_dir().join(format!("manifold-breaker-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let audit = dir.join("audit.jsonl");
        let (gw, _remote) = flaky(
            &["--flaky-outage", "3"],
            "",
            &format!(
                "[upstreams.f.breaker]\nfailures = 3\nopen_for = \"1s\"\n\n[audit]\npath = {}\nfsync = \"always\"\n\n[admin]\nlisten = \"127.0.0.1:0\"\n",
                toml_string(&audit.to_string_lossy())
            ),
        )
        .await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        for _ in 0..3 {
            let r = c.call_tool("f__echo", json!({"text": "x"})).await?;
            assert_eq!(r.result()?["isError"], true, "{r}");
        }
        let upstream = gw.gateway().upstreams()[0].clone();
        assert_eq!(upstream.breaker().context("a breaker")?.state.as_str(), "open");
        // Operators see it: /readyz (still 200: the upstream is up) and /metrics.
        let admin = gw.gateway().admin_addr().context("admin address")?;
        let (status, body) = admin_get(admin, "/readyz").await?;
        let ready: Value = serde_json::from_str(&body)?;
        assert_eq!(status, 200, "{body}");
        assert_eq!(ready["upstreams"][0]["breaker"]["state"], "open", "{body}");
        assert!(
            ready["upstreams"][0]["breaker"]["reason"]
                .as_str()
                .is_some_and(|r| r.contains("3 failures in a row")),
            "{body}"
        );
        let (_, metrics) = admin_get(admin, "/metrics").await?;
        for (series, value) in [
            ("manifold_upstream_breaker_state{upstream=\"f\",state=\"open\"}", 1.0),
            ("manifold_upstream_breaker_state{upstream=\"f\",state=\"closed\"}", 0.0),
            ("manifold_upstream_breaker_opened{upstream=\"f\"}", 1.0),
        ] {
            assert_eq!(sample(&metrics, series), Some(value), "{series} in\n{metrics}");
        }
        // Open: the call fails without reaching the upstream or waiting for
        // its 30 s timeout.
        let started = Instant::now();
        let r = c.call_tool("f__echo", json!({"text": "x"})).await?;
        let took = started.elapsed();
        assert!(took < Duration::from_secs(3), "took {took:?}");
        let text = text_of(r.result()?)?;
        assert!(
            text.contains("is failing") && text.contains("will try it again in"),
            "{text}"
        );
        // After `open_for` one call probes; the outage is over, so it closes.
        until("the breaker half-opens", Duration::from_secs(5), || {
            upstream.breaker().is_some_and(|b| b.state.as_str() == "half_open")
        })
        .await?;
        let r = c.call_tool("f__echo", json!({"text": "back"})).await?;
        assert_eq!(text_of(r.result()?)?, "back", "{r}");
        assert_eq!(upstream.breaker().context("a breaker")?.state.as_str(), "closed");
        let r = c.call_tool("f__echo", json!({"text": "again"})).await?;
        assert_eq!(text_of(r.result()?)?, "again", "{r}");
        // Six calls, five sent: the one the open breaker failed never left.
        assert_eq!(arrivals(&c).await?.get("echo"), Some(&5));
        // The audit record counts attempts: none for the call the breaker
        // failed.
        let attempts: Vec<Value> = audit_lines(&audit)?
            .into_iter()
            .filter(|l| l["original"] == "echo")
            .map(|l| l["attempts"].clone())
            .collect();
        assert_eq!(attempts, [1, 1, 1, 0, 1, 1].map(Value::from), "{attempts:?}");
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    })
    .await
}

/// The pid of this process's child whose command name starts with `name`.
fn child_named(name: &str) -> Option<u32> {
    let me = std::process::id();
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let (head, rest) = stat.rsplit_once(')')?;
        let comm = head.split_once('(')?.1;
        let ppid: u32 = rest.split_whitespace().nth(1)?.parse().ok()?;
        (ppid == me && comm.starts_with(name)).then_some(pid)
    })
}

#[tokio::test]
async fn a_call_whose_stdio_child_dies_mid_call_is_sent_again_to_the_restarted_child() -> Result<()>
{
    bounded(async {
        let dir = std::env::temp_dir().join(format!("manifold-restart-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        let audit = dir.join("audit.jsonl");
        // `sleep` has no hints: the operator marks it safe to repeat.
        let gw = TestGateway::start(&format!(
            "[upstreams.s]\ncommand = {}\nargs = [\"--faults\"]\ntimeout = \"30s\"\nretries = {{max = 1, budget = 1.0}}\n\n\
             [upstreams.s.overrides.sleep]\nretry = true\n\n[audit]\npath = {}\nfsync = \"always\"\n",
            toml_string(bin()),
            toml_string(&audit.to_string_lossy())
        ))
        .await?;
        let c = gw.session("2025-11-25", json!({})).await?;
        let child = child_named("manifold-demo").context("the stdio child")?;
        let call = {
            let c = c.clone();
            tokio::spawn(async move { c.call_tool("s__sleep", json!({"ms": 1000})).await })
        };
        let upstream = gw.gateway().upstreams()[0].clone();
        until("the call is in flight upstream", Duration::from_secs(10), || {
            upstream.in_flight() == 1
        })
        .await?;
        let killed = std::process::Command::new("kill")
            .args(["-9", &child.to_string()])
            .status()?;
        assert!(killed.success());
        let r = call.await.context("join")??;
        let result = r.result()?;
        assert_ne!(result["isError"], true, "{r}");
        assert_eq!(upstream.status().restarts, 1);
        let attempts: Vec<Value> = audit_lines(&audit)?
            .into_iter()
            .map(|l| l["attempts"].clone())
            .collect();
        assert_eq!(attempts, [Value::from(2)], "{attempts:?}");
        let _ = std::fs::remove_dir_all(&dir);
        Ok(())
    })
    .await
}
