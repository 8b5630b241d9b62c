//! The `serve` binary end to end, with the audit log on (`fsync = "always"`):
//! - a response is never sent before its audit record is on disk: SIGKILL the
//!   gateway under load, then every call that got a response is in the audit file
//!   and the chain verifies up to the torn tail;
//! - every log line of a call carries its request id, the same as its audit record,
//!   so an operator can go from an audit line to the logs.

use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use manifold_testkit::harness::McpClient;
use manifold_testkit::process::Proc;
use manifold_testkit::wait::{eventually, eventually_blocking, until};
use serde_json::{json, Value};

/// `manifold serve` on an ephemeral port in front of the demo upstream (stdio),
/// audit log in a scratch directory; stderr captured (the shared process
/// harness, `manifold_testkit::process`). Stopped and cleaned on drop.
struct Served {
    proc: Proc,
    url: String,
    dir: PathBuf,
    audit: PathBuf,
    /// The admin listener, `host:port`.
    admin: String,
}

impl Served {
    fn start(tag: &str, rust_log: &str) -> Served {
        Served::start_with(tag, rust_log, &[])
    }

    /// Like `start`, with more arguments for the demo upstream.
    fn start_with(tag: &str, rust_log: &str, demo_args: &[&str]) -> Served {
        let demo_args: String = demo_args.iter().map(|a| format!(", {a:?}")).collect();
        let dir = std::env::temp_dir().join(format!("manifold-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let audit = dir.join("audit.jsonl");
        let config = dir.join("gateway.toml");
        std::fs::write(
            &config,
            format!(
                "[server]\nlisten = \"127.0.0.1:0\"\n\n[audit]\npath = {:?}\nfsync = \"always\"\n\n\
                 [admin]\nlisten = \"127.0.0.1:0\"\n\n\
                 [upstreams.demo]\ncommand = \"${{MANIFOLD_SELF}}\"\nargs = [\"demo-upstream\", \"--stdio\", \"--faults\"{demo_args}]\n",
                audit.to_string_lossy()
            ),
        )
        .expect("config");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_manifold"));
        cmd.args(["--log-format", "json", "serve", "--config"])
            .arg(&config)
            .env("RUST_LOG", rust_log);
        let proc = Proc::spawn("manifold serve", cmd).expect("spawn manifold");
        let line = Proc::wait_line(&proc.stdout, "http://", Duration::from_secs(30), "serve")
            .expect("the listening line");
        let url = line
            .split_whitespace()
            .find(|w| w.starts_with("http://"))
            .expect("url")
            .to_string();
        let admin_line = Proc::wait_line(&proc.stdout, "http://", Duration::from_secs(10), "serve")
            .expect("the admin line");
        let admin = admin_line
            .split_whitespace()
            .find_map(|w| w.strip_prefix("http://"))
            .expect("admin address")
            .to_string();
        Served {
            proc,
            url,
            admin,
            dir,
            audit,
        }
    }

    /// Waits (at most `limit`) for the process to end.
    fn exit_within(&mut self, limit: Duration) -> std::process::ExitStatus {
        let child = &mut self.proc.child;
        eventually_blocking("the exit", limit, || Ok(child.try_wait()?)).expect("exit")
    }

    /// Sends a signal (`-TERM`, `-KILL`) and waits for the process to end.
    fn signal(&mut self, sig: &str) {
        self.proc.signal(sig);
        let _ = self.proc.child.wait();
    }

    /// Everything the process wrote to stderr (after it ended).
    fn logs(&mut self) -> String {
        self.proc.stderr_to_end(Duration::from_secs(10)).join("\n")
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answered_call_is_in_the_audit_log_after_sigkill() {
    let mut served = Served::start("crash", "warn");
    // Four clients call in a loop until the gateway dies under them.
    let mut workers = Vec::new();
    let answered_so_far = Arc::new(AtomicUsize::new(0));
    for w in 0..4 {
        let (url, count) = (served.url.clone(), answered_so_far.clone());
        workers.push(tokio::spawn(async move {
            let client = McpClient::with_timeout(&url, Duration::from_secs(5));
            let mut answered = Vec::new();
            if client.initialize("2025-11-25", json!({})).await.is_err() {
                return answered;
            }
            for i in 0..100_000 {
                let text = format!("w{w}-{i}");
                match client.call_tool("demo__echo", json!({"text": text})).await {
                    Ok(reply) if reply.result().is_ok() => {
                        answered.push(text);
                        count.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => break,
                }
            }
            answered
        }));
    }
    // Kill once enough calls have been answered, not after a fixed time.
    until("200 calls answered", Duration::from_secs(30), || {
        answered_so_far.load(Ordering::Relaxed) >= 200
    })
    .await
    .expect("load");
    served.signal("-KILL");
    let mut answered = Vec::new();
    for w in workers {
        answered.extend(w.await.expect("worker"));
    }
    assert!(answered.len() > 20, "too little load: {}", answered.len());

    let text = std::fs::read_to_string(&served.audit).expect("audit file");
    let mut recorded = HashSet::new();
    for line in text.lines() {
        // The last line may be torn by the kill; complete lines must parse.
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if let Some(t) = v["arguments"]["text"].as_str() {
            recorded.insert(t.to_string());
        }
    }
    let missing: Vec<&String> = answered.iter().filter(|t| !recorded.contains(*t)).collect();
    assert!(
        missing.is_empty(),
        "{} of {} answered calls are not in the audit log, e.g. {:?}",
        missing.len(),
        answered.len(),
        &missing[..missing.len().min(5)]
    );
    // The chain holds up to the (possibly torn) end.
    let report = manifold_audit::verify(std::slice::from_ref(&served.audit)).expect("verify");
    if let Some(p) = &report.problem {
        assert_eq!(
            p.kind,
            manifold_audit::ProblemKind::Truncated,
            "only a torn last line is acceptable: {report}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_request_id_is_on_the_calls_log_lines() {
    let mut served = Served::start("rid", "info,manifold_server=debug");
    let client = McpClient::with_timeout(&served.url, Duration::from_secs(10));
    client
        .initialize("2025-11-25", json!({}))
        .await
        .expect("initialize");
    let reply = client
        .call_tool("demo__echo", json!({"text": "trace me"}))
        .await
        .expect("call");
    assert!(reply.result().is_ok(), "{reply}");
    served.signal("-TERM");
    let logs = served.logs();

    let record: Value = std::fs::read_to_string(&served.audit)
        .expect("audit file")
        .lines()
        .find_map(|l| serde_json::from_str::<Value>(l).ok())
        .expect("an audit record");
    let rid = record["request_id"]
        .as_str()
        .expect("request_id")
        .to_string();
    let lines: Vec<Value> = logs
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &Value| v["message"] == "forwarding")
        .collect();
    assert_eq!(lines.len(), 1, "{logs}");
    assert_eq!(lines[0]["span"]["request_id"], rid, "{}", lines[0]);
}

/// `GET` on the admin listener: the status and body.
async fn admin_get(addr: &str, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.expect("admin");
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .expect("write");
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut buf)).await;
    let text = String::from_utf8_lossy(&buf).to_string();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, text)
}

/// SIGTERM with a call in flight: readiness goes false at once, the call still
/// gets its answer (within `server.shutdown_grace`), its audit record is written
/// before the writer closes, and the process exits cleanly.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_calls_in_flight_and_keeps_their_records() {
    let mut served = Served::start("drain", "warn");
    let client = McpClient::with_timeout(&served.url, Duration::from_secs(20));
    client
        .initialize("2025-11-25", json!({}))
        .await
        .expect("initialize");
    let (status, _) = admin_get(&served.admin, "/readyz").await;
    assert_eq!(status, 200, "ready before shutdown");
    let call = {
        let client = client.clone();
        tokio::spawn(async move { client.call_tool("demo__sleep", json!({"ms": 1500})).await })
    };
    // Shutdown starts once the upstream has the call.
    let admin = served.admin.clone();
    eventually("the call in flight", Duration::from_secs(5), || async {
        let (_, metrics) = admin_get(&admin, "/metrics").await;
        Ok(metrics
            .contains("manifold_calls_in_flight{upstream=\"demo\"} 1")
            .then_some(()))
    })
    .await
    .expect("in flight");
    served.proc.signal("-TERM");
    let body = eventually("readyz draining", Duration::from_secs(5), || async {
        let (status, body) = admin_get(&admin, "/readyz").await;
        Ok((status == 503).then_some(body))
    })
    .await
    .expect("readyz");
    assert!(body.contains("\"draining\":true"), "{body}");
    let reply = call.await.expect("task").expect("the call was answered");
    let result = reply.result().expect("a result");
    assert_ne!(result["isError"], true, "{reply}");
    let status = served.exit_within(Duration::from_secs(20));
    assert!(status.success(), "{status}");
    let text = std::fs::read_to_string(&served.audit).expect("audit file");
    let record = text
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["name"] == "demo__sleep")
        .expect("the drained call's record");
    assert_eq!(record["outcome"], "ok", "{record}");
    let report = manifold_audit::verify(std::slice::from_ref(&served.audit)).expect("verify");
    assert!(report.problem.is_none(), "{report}");
}

/// A child that floods its stderr (2 MB, a tenth of it not UTF-8): the gateway
/// reads it all, so the child never blocks on a full pipe and its calls are
/// answered, and logs it within `STDERR_LINES_PER_WINDOW` lines per window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stderr_flood_is_drained_and_logged_within_its_budget() {
    let started = Instant::now();
    let mut served = Served::start_with("stderr", "info", &["--misbehave", "stderr-flood"]);
    let client = McpClient::with_timeout(&served.url, Duration::from_secs(10));
    client
        .initialize("2025-11-25", json!({}))
        .await
        .expect("initialize");
    let mut seen = Vec::new();
    for n in 0..6 {
        if n == 3 {
            // The gateway is reading the flood (and logging it, within budget).
            let line = Proc::wait_line(
                &served.proc.stderr,
                "manifold::upstream_stderr",
                Duration::from_secs(10),
                "the flood logged",
            )
            .expect("the flood");
            seen.push(line);
        }
        let reply = client
            .call_tool("demo__echo", json!({"text": format!("call {n}")}))
            .await
            .expect("call");
        assert_eq!(
            reply.result().expect("result")["content"][0]["text"],
            format!("call {n}")
        );
    }
    served.signal("-TERM");
    let windows = started.elapsed().as_secs() / manifold_upstream::LOG_WINDOW.as_secs() + 1;
    let logs = seen.join("\n") + "\n" + &served.logs();
    let stderr_lines = logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["target"] == "manifold::upstream_stderr")
        .count() as u64;
    let budget = u64::from(manifold_upstream::STDERR_LINES_PER_WINDOW) * windows;
    assert!(stderr_lines > 0, "no stderr line logged");
    assert!(
        stderr_lines <= budget + windows,
        "{stderr_lines} stderr lines logged (budget {budget})"
    );
}
