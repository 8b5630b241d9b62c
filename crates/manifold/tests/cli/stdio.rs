//! `manifold stdio` as a desktop client launches it: newline-delimited JSON-RPC
//! on stdin/stdout (nothing else on stdout), the local principal on audit
//! records, `notifications/cancelled` honoured, and when stdin closes the
//! calls finish, the audit log is flushed, and the upstreams and their own
//! children are gone before the process exits 0.

use manifold_testkit::process::Proc;
use manifold_testkit::wait::eventually_blocking;
use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use super::bin;
use crate::commands::TempDir;

/// The next message on `lines` with `id`, within a bound.
fn response(lines: &mpsc::Receiver<String>, id: i64) -> Value {
    next(lines, &format!("response {id}"), |m| m["id"] == id)
}

/// The progress notification a demo `sleep` sends once it has started: the
/// call has reached the upstream.
fn started(lines: &mpsc::Receiver<String>, token: &str) -> Value {
    next(lines, &format!("progress {token}"), |m| {
        m["method"] == "notifications/progress" && m["params"]["progressToken"] == token
    })
}

/// The next message on `lines` that `wanted` picks, within a bound.
fn next(lines: &mpsc::Receiver<String>, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = lines
            .recv_timeout(left)
            .unwrap_or_else(|_| panic!("no {what} within 20 s"));
        let msg: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout carried a line that is not JSON ({e}): {line}"));
        if wanted(&msg) {
            return msg;
        }
    }
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.split_whitespace().nth(2) != Some("Z"))
}

#[test]
fn stdio_serves_one_client_and_cleans_up_when_stdin_closes() {
    let dir = TempDir::new("stdio");
    let audit = dir.path().join("audit.jsonl");
    let cfg = dir.write(
        "gateway.toml",
        &format!(
            "[upstreams.demo]\ncommand = \"${{MANIFOLD_SELF}}\"\nargs = [\"demo-upstream\", \"--faults\", \"--spawn-grandchild\"]\n\n\
             [stdio]\nprincipal = \"tester\"\n\n[audit]\npath = {:?}\nfsync = \"always\"\n",
            audit.display().to_string()
        ),
    );
    let mut cmd = Command::new(bin());
    cmd.args(["stdio", "--config"])
        .arg(&cfg)
        .env("RUST_LOG", "info")
        .stdin(Stdio::piped());
    let mut stdio = Proc::spawn_with_stdin("manifold stdio", cmd).expect("run manifold stdio");
    let pid = stdio.child.id();
    let mut stdin = stdio.child.stdin.take().expect("stdin");
    let lines = &stdio.stdout;
    let mut send = |v: Value| {
        writeln!(stdin, "{v}").expect("write to stdin");
        stdin.flush().expect("flush");
    };
    send(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    );
    let init = response(lines, 1);
    assert_eq!(init["result"]["serverInfo"]["name"], "manifold", "{init}");
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "demo__grandchild", "arguments": {}}}));
    let grandchild: u32 = response(lines, 2)["result"]["content"][0]["text"]
        .as_str()
        .and_then(|t| t.parse().ok())
        .expect("the grandchild's pid");
    assert!(alive(grandchild));
    let upstreams: Vec<u32> = std::fs::read_dir(format!("/proc/{pid}/task"))
        .expect("tasks")
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("children")).ok())
        .flat_map(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect();
    assert!(!upstreams.is_empty(), "no upstream child found");

    // A slow call, cancelled by the client: no answer, audited as cancelled;
    // the next call is answered meanwhile.
    send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
        "params": {"name": "demo__sleep", "arguments": {"ms": 30000}, "_meta": {"progressToken": "s3"}}}));
    started(lines, "s3");
    send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 3, "reason": "changed my mind"}}),
    );
    send(json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
        "params": {"name": "demo__echo", "arguments": {"text": "over stdio"}}}));
    let echo = response(lines, 4);
    assert_eq!(echo["result"]["content"][0]["text"], "over stdio", "{echo}");

    // A 2026-07-28 client on the same stdio: it cancels by naming the request
    // (no session), and nothing is written back for the notification.
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28",
                      "io.modelcontextprotocol/clientCapabilities": {},
                      "io.modelcontextprotocol/clientInfo": {"name": "modern", "version": "1"}});
    let mut with_token = meta.clone();
    with_token["progressToken"] = json!("s5");
    send(json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "demo__sleep", "arguments": {"ms": 30001}, "_meta": with_token}}));
    started(lines, "s5");
    send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}),
    );
    send(json!({"jsonrpc": "2.0", "id": 6, "method": "tools/call",
        "params": {"name": "demo__echo", "arguments": {"text": "modern"}, "_meta": meta}}));
    let modern = response(lines, 6);
    assert_eq!(modern["result"]["content"][0]["text"], "modern", "{modern}");
    // A listen stream left open: closing stdin must still end the process.
    send(
        json!({"jsonrpc": "2.0", "id": 7, "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": true}, "_meta": meta}}),
    );
    let ack = {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let line = lines
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .expect("the listen acknowledgment");
            let m: Value = serde_json::from_str(&line).expect("JSON");
            assert_ne!(m["id"], 5, "the cancelled request was answered: {m}");
            if m["method"] == "notifications/subscriptions/acknowledged" {
                break m;
            }
        }
    };
    assert_eq!(
        ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7,
        "{ack}"
    );

    // Closing stdin is how a desktop client says goodbye.
    drop(stdin);
    let child = &mut stdio.child;
    let status = eventually_blocking(
        "manifold stdio's exit after stdin closed",
        Duration::from_secs(20),
        || Ok(child.try_wait()?),
    )
    .expect("exit");
    assert_eq!(status.code(), Some(0));
    eventually_blocking(
        "every child gone with manifold stdio",
        Duration::from_secs(5),
        || Ok((!upstreams.iter().chain([&grandchild]).any(|p| alive(*p))).then_some(())),
    )
    .expect("children");
    let records: Vec<Value> = std::fs::read_to_string(&audit)
        .expect("audit log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("a record"))
        .collect();
    let by_name = |n: &str| {
        records
            .iter()
            .find(|r| r["name"] == n)
            .unwrap_or_else(|| panic!("no record for {n}: {records:?}"))
    };
    assert_eq!(by_name("demo__echo")["principal"], "local:tester");
    assert_eq!(by_name("demo__echo")["outcome"], "ok");
    assert_eq!(
        by_name("demo__sleep")["outcome"],
        "cancelled",
        "{}",
        by_name("demo__sleep")
    );
    let modern_sleep = records
        .iter()
        .find(|r| r["arguments"]["ms"] == 30001)
        .expect("the 2026-07-28 sleep's record");
    assert_eq!(modern_sleep["outcome"], "cancelled", "{modern_sleep}");
}
