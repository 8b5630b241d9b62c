//! Every log line of a call carries its request id, and the audit record of the
//! call has the same id: an operator can go from an audit line to the logs.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::time::Duration;

use manifold_testkit::harness::McpClient;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_request_id_is_on_the_calls_log_lines() {
    let dir = std::env::temp_dir().join(format!("manifold-rid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let audit = dir.join("audit.jsonl");
    let config = dir.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"127.0.0.1:0\"\n\n[audit]\npath = {:?}\nfsync = \"always\"\n\n\
             [upstreams.demo]\ncommand = \"${{MANIFOLD_SELF}}\"\nargs = [\"demo-upstream\", \"--stdio\"]\n",
            audit.to_string_lossy()
        ),
    )
    .expect("config");
    let mut child = Command::new(env!("CARGO_BIN_EXE_manifold"))
        .args(["--log-format", "json", "serve", "--config"])
        .arg(&config)
        .env("RUST_LOG", "info,manifold_server=debug")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn manifold");
    let stdout = child.stdout.take().expect("stdout");
    let mut stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let logs = std::thread::spawn(move || {
        let mut all = String::new();
        let _ = stderr.read_to_string(&mut all);
        all
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the listening line");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("url")
        .to_string();
    let client = McpClient::with_timeout(&url, Duration::from_secs(10));
    client
        .initialize("2025-11-25", json!({}))
        .await
        .expect("initialize");
    let reply = client
        .call_tool("demo__echo", json!({"text": "trace me"}))
        .await
        .expect("call");
    assert!(reply.result().is_ok(), "{reply}");
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill");
    let _ = child.wait();
    let logs = logs.join().expect("stderr reader");

    let record: Value = std::fs::read_to_string(&audit)
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
    let _ = std::fs::remove_dir_all(&dir);
}
