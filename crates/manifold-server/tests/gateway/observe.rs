//! Metrics, health and the audit log, after a scripted workload: exact counter
//! values, exact audit lines, `/readyz` following required upstreams, and the
//! audit chain verifying.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use serde_json::{json, Value};

use crate::{bounded, ok_text, Setup};

/// A fresh directory under the system temp dir, removed on drop.
pub(crate) struct Scratch(pub PathBuf);
impl Scratch {
    pub(crate) fn new(tag: &str) -> Result<Scratch> {
        let dir = std::env::temp_dir().join(format!(
            "manifold-observe-{tag}-{}-{:?}",
            std::process::id(),
            Instant::now()
        ));
        std::fs::create_dir_all(&dir)?;
        Ok(Scratch(dir))
    }
}
impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// GET on the admin listener: (status, body).
pub(crate) async fn admin_get(addr: std::net::SocketAddr, path: &str) -> Result<(u16, String)> {
    admin_request(addr, "GET", path).await
}

/// A body-less request on the admin listener, as an operator's tool sends it
/// (a `POST` says `Content-Type: application/json`): (status, body).
pub(crate) async fn admin_request(
    addr: std::net::SocketAddr,
    method: &str,
    path: &str,
) -> Result<(u16, String)> {
    let headers: &[(&str, &str)] = if method == "POST" {
        &[("Content-Type", "application/json")]
    } else {
        &[]
    };
    let r = crate::admin::admin_call(addr, method, path, headers, "").await?;
    Ok((r.status, r.body))
}

/// The value of one sample line (`name{labels} value`) in the text format.
pub(crate) fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics
        .lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

pub(crate) fn audit_lines(path: &std::path::Path) -> Result<Vec<Value>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("{}", path.display()))?;
    text.lines()
        .map(|l| serde_json::from_str(l).with_context(|| format!("audit line {l}")))
        .collect()
}

fn setup(dir: &Scratch, local_extra: &str, extra: &str) -> Setup {
    let audit = dir.0.join("audit.jsonl");
    Setup {
        local: format!("timeout = \"20s\"\n{local_extra}"),
        extra: format!(
            "[admin]\nlisten = \"127.0.0.1:0\"\n\n[audit]\npath = {}\nfsync = \"always\"\nredact = [\"secret\"]\n\n{extra}",
            manifold_testkit::harness::toml_string(&audit.to_string_lossy())
        ),
        ..Setup::default()
    }
}

#[tokio::test]
async fn a_scripted_workload_gives_exact_metrics_and_audit_lines() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("workload")?;
        let f = setup(&dir, "", "").start().await?;
        let admin = f.gw.gateway().admin_addr().context("admin address")?;
        let client = f.gw.session("2025-11-25", json!({})).await?;
        for i in 0..3 {
            let r = client
                .call_tool(
                    "local__echo",
                    json!({"text": format!("hi {i}"), "Secret": "hunter2"}),
                )
                .await?;
            assert_eq!(ok_text(&r)?, format!("hi {i}"));
        }
        let failed = client.call_tool("remote__fail", json!({})).await?;
        assert_eq!(failed.result()?["isError"], true, "{failed}");
        let unknown = client.call_tool("nope__echo", json!({})).await?;
        assert_eq!(unknown.error()?["code"], -32602, "{unknown}");
        for _ in 0..2 {
            client.request("tools/list", json!({})).await?;
        }

        let (status, metrics) = admin_get(admin, "/metrics").await?;
        assert_eq!(status, 200);
        let want = [
            (
                r#"manifold_requests_total{method="tools/call",outcome="ok"}"#,
                3.0,
            ),
            (
                r#"manifold_requests_total{method="tools/call",outcome="tool_error"}"#,
                1.0,
            ),
            (
                r#"manifold_requests_total{method="tools/call",outcome="refused"}"#,
                1.0,
            ),
            (
                r#"manifold_requests_total{method="tools/list",outcome="ok"}"#,
                2.0,
            ),
            (
                r#"manifold_call_duration_seconds_count{upstream="local",tool="echo"}"#,
                3.0,
            ),
            (
                r#"manifold_call_duration_seconds_count{upstream="remote",tool="fail"}"#,
                1.0,
            ),
            (r#"manifold_calls_in_flight{upstream="local"}"#, 0.0),
            (r#"manifold_upstream_up{upstream="local"}"#, 1.0),
            (r#"manifold_upstream_up{upstream="remote"}"#, 1.0),
            (
                r#"manifold_upstream_state{upstream="local",state="ready"}"#,
                1.0,
            ),
            ("manifold_sessions", 1.0),
            ("manifold_audit_records_written", 5.0),
            ("manifold_audit_records_lost", 0.0),
        ];
        for (series, value) in want {
            assert_eq!(
                sample(&metrics, series),
                Some(value),
                "{series} in\n{metrics}"
            );
        }
        assert!(
            !metrics.contains(&client.session_id().unwrap_or_default()),
            "a session id became a label"
        );

        let lines = audit_lines(&dir.0.join("audit.jsonl"))?;
        assert_eq!(lines.len(), 5, "{lines:#?}");
        let first = &lines[0];
        let keys: Vec<&str> = first
            .as_object()
            .map(|o| o.keys().map(String::as_str).collect())
            .unwrap_or_default();
        assert_eq!(
            keys,
            [
                "time",
                "request_id",
                "session",
                "principal",
                "client",
                "method",
                "name",
                "upstream",
                "original",
                "arguments_sha256",
                "arguments",
                "outcome",
                "latency_us",
                "request_bytes",
                "response_bytes",
                "prev",
                "hash"
            ],
        );
        assert_eq!(first["method"], "tools/call");
        assert_eq!(first["name"], "local__echo");
        assert_eq!(first["upstream"], "local");
        assert_eq!(first["original"], "echo");
        assert_eq!(first["principal"], "anonymous");
        // The session appears as a digest: correlatable, not usable to join it.
        let sid = client.session_id().unwrap_or_default();
        let session_ref = first["session"].as_str().unwrap_or_default();
        assert_eq!(session_ref.len(), 16, "{first}");
        assert!(
            !sid.contains(session_ref) && !first.to_string().contains(&sid),
            "{first}"
        );
        assert!(lines.iter().all(|l| l["session"] == first["session"]));
        assert_eq!(first["arguments"]["text"], "hi 0");
        assert_eq!(first["arguments"]["Secret"], "[REDACTED]", "{first}");
        assert!(!first.to_string().contains("hunter2"), "{first}");
        assert_eq!(first["outcome"], "ok");
        assert!(first["request_bytes"].as_u64().unwrap_or(0) > 0);
        assert!(first["response_bytes"].as_u64().unwrap_or(0) > 0);
        assert_eq!(lines[3]["outcome"], "tool_error");
        assert_eq!(lines[3]["upstream"], "remote");
        assert_eq!(lines[4]["outcome"], "refused");
        assert_eq!(lines[4]["error_code"], -32602);
        assert_eq!(lines[4]["name"], "nope__echo");
        let ids: std::collections::HashSet<&str> = lines
            .iter()
            .filter_map(|l| l["request_id"].as_str())
            .collect();
        assert_eq!(ids.len(), 5, "request ids must be unique");
        let report = manifold_audit::verify(&[dir.0.join("audit.jsonl")])?;
        assert!(report.is_ok(), "{report}");
        assert_eq!(report.records, 5);
        Ok(())
    })
    .await
}

#[tokio::test]
async fn readyz_follows_required_upstreams_and_a_crash_is_recorded() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("ready")?;
        let ghost = "[upstreams.ghost]\ncommand = \"/nonexistent/manifold-no-such-upstream\"\nrequired = true\n";
        let f = setup(&dir, "required = true", ghost).start().await?;
        let admin = f.gw.gateway().admin_addr().context("admin address")?;
        let (status, body) = admin_get(admin, "/healthz").await?;
        assert_eq!((status, body.trim()), (200, "ok"));
        let (status, body) = admin_get(admin, "/readyz").await?;
        assert_eq!(status, 503, "{body}");
        let v: Value = serde_json::from_str(body.trim()).with_context(|| body.clone())?;
        let ghost = v["upstreams"]
            .as_array()
            .and_then(|a| a.iter().find(|u| u["name"] == "ghost"))
            .ok_or_else(|| anyhow!("no ghost in {v}"))?;
        assert_eq!(ghost["ready"], false, "{v}");
        assert!(ghost["last_error"].is_string(), "{v}");
        let (_, metrics) = admin_get(admin, "/metrics").await?;
        assert_eq!(sample(&metrics, r#"manifold_upstream_up{upstream="ghost"}"#), Some(0.0), "{metrics}");

        // Kill the `local` child with a call: the call fails as upstream_unavailable,
        // and the restart shows in the metrics.
        let client = f.gw.session("2025-11-25", json!({})).await?;
        let r = client.call_tool("local__crash", json!({})).await?;
        assert_eq!(r.result()?["isError"], true, "{r}");
        let lines = audit_lines(&dir.0.join("audit.jsonl"))?;
        let last = lines.last().ok_or_else(|| anyhow!("no audit line"))?;
        assert_eq!(last["name"], "local__crash");
        assert_eq!(last["outcome"], "upstream_unavailable", "{last}");
        crate::eventually("a restart counted", Duration::from_secs(10), || async {
            let (_, metrics) = admin_get(admin, "/metrics").await?;
            let restarts = sample(&metrics, r#"manifold_upstream_restarts{upstream="local"}"#);
            Ok((restarts.unwrap_or(0.0) >= 1.0).then_some(()))
        })
        .await?;
        Ok(())
    })
    .await
}

#[tokio::test]
async fn without_required_upstreams_readyz_is_ok() -> Result<()> {
    bounded(async {
        let dir = Scratch::new("optional")?;
        let ghost = "[upstreams.ghost]\ncommand = \"/nonexistent/manifold-no-such-upstream\"\n";
        let f = setup(&dir, "", ghost).start().await?;
        let admin = f.gw.gateway().admin_addr().context("admin address")?;
        let (status, body) = admin_get(admin, "/readyz").await?;
        assert_eq!(status, 200, "{body}");
        Ok(())
    })
    .await
}
