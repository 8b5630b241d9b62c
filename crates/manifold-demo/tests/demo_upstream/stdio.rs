//! The demo upstream over stdio: one child process per test.

use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::time::timeout;

use crate::{call, init, req, spawn, text_of, WAIT};

struct StdioPeer {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Lines<BufReader<ChildStdout>>,
}

impl StdioPeer {
    fn start(args: &[&str]) -> Self {
        let mut child = spawn(args);
        let stdin = child.stdin.take().expect("stdin");
        let stdout = child.stdout.take().expect("stdout");
        Self {
            child,
            stdin: Some(stdin),
            lines: BufReader::new(stdout).lines(),
        }
    }

    async fn started(capabilities: Value, args: &[&str]) -> Self {
        let mut peer = Self::start(args);
        let response = peer.request(init(0, "2025-11-25", capabilities)).await;
        assert!(response.get("result").is_some(), "{response}");
        peer.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        peer
    }

    async fn send_raw(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        stdin.write_all(line.as_bytes()).await.expect("write");
        stdin.write_all(b"\n").await.expect("write");
        stdin.flush().await.expect("flush");
    }

    async fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string()).await;
    }

    async fn try_recv(&mut self, wait: Duration) -> Option<Value> {
        let line = timeout(wait, self.lines.next_line()).await.ok()?;
        let line = line.expect("read stdout").expect("stdout closed");
        Some(serde_json::from_str(&line).expect("stdout line is JSON"))
    }

    async fn recv(&mut self) -> Value {
        self.try_recv(WAIT)
            .await
            .expect("timed out waiting for a message")
    }

    /// Read until the response with `id`; returns it and what came before.
    async fn until_response(&mut self, id: &Value) -> (Vec<Value>, Value) {
        let mut before = Vec::new();
        loop {
            let message = self.recv().await;
            if message.get("method").is_none() && &message["id"] == id {
                return (before, message);
            }
            before.push(message);
        }
    }

    async fn request(&mut self, message: Value) -> Value {
        let id = message["id"].clone();
        self.send(message).await;
        let (before, response) = self.until_response(&id).await;
        assert!(before.is_empty(), "unexpected messages: {before:?}");
        response
    }

    /// Close stdin and expect a clean exit.
    async fn finish(mut self) {
        drop(self.stdin.take());
        let status = timeout(WAIT, self.child.wait())
            .await
            .expect("exit in time");
        assert_eq!(status.expect("wait").code(), Some(0));
    }
}

#[tokio::test]
async fn stdio_initialize_ping_and_errors() {
    let mut peer = StdioPeer::start(&[]);
    let response = peer.request(init(1, "2025-06-18", json!({}))).await;
    let result = &response["result"];
    assert_eq!(result["protocolVersion"], "2025-06-18");
    assert_eq!(
        result["capabilities"],
        json!({"tools":{"listChanged":true},"prompts":{"listChanged":false},
               "resources":{"subscribe":true,"listChanged":false},"completions":{},"logging":{}})
    );
    assert_eq!(
        result["serverInfo"],
        json!({"name": "manifold-demo-upstream", "version": "0.1.0"})
    );
    assert!(result["instructions"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    peer.send_raw(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
        .await;

    assert_eq!(
        peer.request(req(2, "ping", json!({}))).await["result"],
        json!({})
    );
    let unknown = peer.request(req(3, "no/such/method", json!({}))).await;
    assert_eq!(unknown["error"]["code"], -32601);

    peer.send_raw("{not json").await;
    let parse = peer.recv().await;
    assert_eq!(parse["error"]["code"], -32700);
    assert_eq!(parse["id"], Value::Null);

    let tool = peer.request(call(4, "nope", json!({}))).await;
    assert_eq!(tool["error"]["code"], -32602);
    assert_eq!(tool["error"]["message"], "Unknown tool: nope");

    let failed = peer.request(call(5, "fail", json!({}))).await;
    assert_eq!(
        failed["result"],
        json!({"content":[{"type":"text","text":"this tool always fails"}],"isError":true})
    );
    peer.finish().await;
}

#[tokio::test]
async fn stdio_version_fallback_and_empty_instructions() {
    let mut peer = StdioPeer::start(&["--instructions", ""]);
    let response = peer.request(init(1, "1999-01-01", json!({}))).await;
    assert_eq!(response["result"]["protocolVersion"], "2025-11-25");
    assert!(
        response["result"].get("instructions").is_none(),
        "{response}"
    );
    peer.finish().await;
}

#[tokio::test]
async fn stdio_fail_initialize() {
    let mut peer = StdioPeer::start(&["--fail-initialize"]);
    let response = peer.request(init(1, "2025-11-25", json!({}))).await;
    assert_eq!(response["error"]["code"], -32603);
    peer.finish().await;
}

#[tokio::test]
async fn stdio_tools_list_paginates() {
    let mut peer = StdioPeer::started(json!({}), &["--page-size", "2", "--tools", "3"]).await;
    let mut names = Vec::new();
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for id in 10..30 {
        let params = match &cursor {
            Some(cursor) => json!({"cursor": cursor}),
            None => json!({}),
        };
        let page = peer.request(req(id, "tools/list", params)).await;
        let batch = page["result"]["tools"].as_array().expect("tools").clone();
        assert!(batch.len() <= 2, "page too big: {page}");
        names.extend(
            batch
                .iter()
                .map(|t| t["name"].as_str().expect("name").to_owned()),
        );
        tools.extend(batch);
        match page["result"].get("nextCursor") {
            Some(next) => cursor = Some(next.as_str().expect("cursor string").to_owned()),
            None => break,
        }
    }
    assert_eq!(names.len(), 18, "{names:?}");
    assert_eq!(&names[..3], ["echo", "add", "weather"]);
    assert_eq!(
        &names[15..],
        ["synthetic_0000", "synthetic_0001", "synthetic_0002"]
    );
    let echo = &tools[0];
    assert_eq!(
        echo["x-demo-extension"].to_string(),
        r#"{"kept":true,"order":[3,1,2]}"#
    );
    for member in [
        "title",
        "annotations",
        "icons",
        "_meta",
        "inputSchema",
        "description",
    ] {
        assert!(echo.get(member).is_some(), "echo lacks {member}");
    }
    assert!(tools[2].get("outputSchema").is_some());
    assert_eq!(
        tools[4]["inputSchema"]["properties"]["region"]["x-mcp-header"],
        "Region"
    );

    let bad = peer
        .request(req(40, "tools/list", json!({"cursor": "bogus"})))
        .await;
    assert_eq!(bad["error"]["code"], -32602);
    let synthetic = peer
        .request(call(41, "synthetic_0002", json!({"text": "s"})))
        .await;
    assert_eq!(text_of(&synthetic), "s");
    peer.finish().await;
}

#[tokio::test]
async fn stdio_echo_add_weather() {
    let mut peer = StdioPeer::started(json!({}), &[]).await;
    let echo = peer
        .request(call(1, "echo", json!({"text": "hello"})))
        .await;
    assert_eq!(text_of(&echo), "hello");
    // Unknown member kept, key order included.
    assert_eq!(
        echo["result"]["x-demo-result-extra"].to_string(),
        r#"{"z":1,"a":2}"#
    );
    let sum = peer.request(call(2, "add", json!({"a": 2, "b": 3}))).await;
    assert_eq!(sum["result"]["structuredContent"], json!({"sum": 5}));
    assert_eq!(text_of(&sum), "5");
    let first = peer
        .request(call(3, "weather", json!({"city": "Oslo"})))
        .await;
    let again = peer
        .request(call(4, "weather", json!({"city": "Oslo"})))
        .await;
    assert_eq!(first["result"], again["result"]);
    let structured = &first["result"]["structuredContent"];
    assert_eq!(structured["city"], "Oslo");
    assert!(structured["temperatureC"].is_number());
    let from_text: Value = serde_json::from_str(text_of(&first)).expect("text is JSON");
    assert_eq!(&from_text, structured);
    peer.finish().await;
}

#[tokio::test]
async fn stdio_slow_progress_notifications_precede_result() {
    let mut peer = StdioPeer::started(json!({}), &[]).await;
    let mut message = call(1, "slow_progress", json!({"steps": 3, "delay_ms": 10}));
    message["params"]["_meta"] = json!({"progressToken": "tok-1"});
    peer.send(message).await;
    let (before, response) = peer.until_response(&json!(1)).await;
    assert_eq!(text_of(&response), "done after 3 steps");
    assert_eq!(before.len(), 3, "{before:?}");
    for (i, note) in before.iter().enumerate() {
        let step = i + 1;
        assert_eq!(note["method"], "notifications/progress");
        assert_eq!(
            note["params"],
            json!({"progressToken": "tok-1", "progress": step, "total": 3,
                   "message": format!("step {step}")})
        );
    }
    // Without a token: just the result.
    let plain = peer
        .request(call(2, "slow_progress", json!({"delay_ms": 1})))
        .await;
    assert_eq!(text_of(&plain), "done after 3 steps");
    peer.finish().await;
}

#[tokio::test]
async fn stdio_add_tool_sends_list_changed() {
    let mut peer = StdioPeer::started(json!({}), &[]).await;
    peer.send(call(1, "add_tool", json!({"name": "dyn_x"})))
        .await;
    let mut saw_list_changed = false;
    let mut response = None;
    while !(saw_list_changed && response.is_some()) {
        let message = peer.recv().await;
        match message.get("method").and_then(Value::as_str) {
            Some("notifications/tools/list_changed") => saw_list_changed = true,
            Some(other) => panic!("unexpected {other}"),
            None => response = Some(message),
        }
    }
    assert_eq!(text_of(&response.expect("response")), "added dyn_x");

    let list = peer.request(req(2, "tools/list", json!({}))).await;
    let tools = list["result"]["tools"].as_array().expect("tools");
    assert_eq!(tools.last().expect("a tool")["name"], "dyn_x");
    let dynamic = peer.request(call(3, "dyn_x", json!({}))).await;
    assert_eq!(text_of(&dynamic), "dynamic tool dyn_x");
    let duplicate = peer
        .request(call(4, "add_tool", json!({"name": "dyn_x"})))
        .await;
    assert_eq!(duplicate["result"]["isError"], true);
    peer.finish().await;
}

#[tokio::test]
async fn stdio_sleep_is_concurrent_and_cancellable() {
    let mut peer = StdioPeer::started(json!({}), &[]).await;
    peer.send(call(10, "sleep", json!({"ms": 60_000}))).await;
    // A sleeping request must not block others.
    let echo = peer
        .request(call(11, "echo", json!({"text": "still here"})))
        .await;
    assert_eq!(text_of(&echo), "still here");
    peer.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                     "params": {"requestId": 10, "reason": "test"}}),
    )
    .await;
    let ping = peer.request(req(12, "ping", json!({}))).await;
    assert_eq!(ping["result"], json!({}));
    // No response for the cancelled request.
    let extra = peer.try_recv(Duration::from_millis(300)).await;
    assert!(extra.is_none(), "unexpected {extra:?}");
    peer.finish().await;
}

#[tokio::test]
async fn stdio_sample_round_trip() {
    let mut peer = StdioPeer::started(json!({"sampling": {}}), &[]).await;
    peer.send(call(1, "sample", json!({"prompt": "say hi"})))
        .await;
    let request = peer.recv().await;
    assert_eq!(request["method"], "sampling/createMessage");
    assert_eq!(request["id"], "demo-srv-1");
    assert_eq!(
        request["params"],
        json!({"messages": [{"role": "user", "content": {"type": "text", "text": "say hi"}}],
               "maxTokens": 100})
    );
    peer.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": {
        "role": "assistant", "model": "fake", "content": {"type": "text", "text": "hi!"}}}))
        .await;
    let (_, response) = peer.until_response(&json!(1)).await;
    assert_eq!(text_of(&response), "sampled: hi!");

    peer.send(call(2, "sample", json!({"prompt": "again"})))
        .await;
    let request = peer.recv().await;
    peer.send(json!({"jsonrpc": "2.0", "id": request["id"],
                     "error": {"code": -1, "message": "user declined"}}))
        .await;
    let (_, response) = peer.until_response(&json!(2)).await;
    assert_eq!(response["result"]["isError"], true);
    assert_eq!(text_of(&response), "user declined");
    peer.finish().await;
}

#[tokio::test]
async fn stdio_crash_exits_with_code_3() {
    let mut peer = StdioPeer::started(json!({}), &[]).await;
    peer.send(call(1, "crash", json!({}))).await;
    let status = timeout(WAIT, peer.child.wait())
        .await
        .expect("exit in time");
    assert_eq!(status.expect("wait").code(), Some(3));
}
