//! With `fsync = "always"`, a response is never sent before its audit record is on
//! disk: SIGKILL the gateway under load, then every call that got a response must
//! be in the audit file, and the chain up to the torn tail must verify.

use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

use manifold_testkit::harness::McpClient;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answered_call_is_in_the_audit_log_after_sigkill() {
    let dir = std::env::temp_dir().join(format!("manifold-crash-{}", std::process::id()));
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
        .args(["serve", "--config"])
        .arg(&config)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn manifold");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let line = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the listening line");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .expect("url")
        .to_string();

    // Four clients call in a loop until the gateway dies under them.
    let mut workers = Vec::new();
    for w in 0..4 {
        let url = url.clone();
        workers.push(tokio::spawn(async move {
            let client = McpClient::with_timeout(&url, Duration::from_secs(5));
            let mut answered = Vec::new();
            if client.initialize("2025-11-25", json!({})).await.is_err() {
                return answered;
            }
            for i in 0..100_000 {
                let text = format!("w{w}-{i}");
                match client.call_tool("demo__echo", json!({"text": text})).await {
                    Ok(reply) if reply.result().is_ok() => answered.push(text),
                    _ => break,
                }
            }
            answered
        }));
    }
    tokio::time::sleep(Duration::from_millis(1500)).await;
    Command::new("kill")
        .args(["-KILL", &child.id().to_string()])
        .status()
        .expect("kill");
    let _ = child.wait();
    let mut answered = Vec::new();
    for w in workers {
        answered.extend(w.await.expect("worker"));
    }
    assert!(answered.len() > 20, "too little load: {}", answered.len());

    let text = std::fs::read_to_string(&audit).expect("audit file");
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
    let report = manifold_audit::verify(std::slice::from_ref(&audit)).expect("verify");
    if let Some(p) = &report.problem {
        assert_eq!(
            p.kind,
            manifold_audit::ProblemKind::Truncated,
            "only a torn last line is acceptable: {report}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}
