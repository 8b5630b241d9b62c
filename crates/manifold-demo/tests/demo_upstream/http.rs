//! The demo upstream over Streamable HTTP on 127.0.0.1:0.

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;
use tokio::time::timeout;

use crate::{call, init, req, spawn, text_of, WAIT};

type HttpClient = Client<HttpConnector, Full<Bytes>>;

struct HttpPeer {
    child: Child,
    url: String,
    client: HttpClient,
    session: Option<String>,
}

/// One SSE event (only the fields the server uses).
#[derive(Debug, Default)]
struct SseEvent {
    id: Option<String>,
    data: String,
}

struct SseReader {
    body: Incoming,
    buf: String,
}

impl SseReader {
    /// The next event, or `None` when the stream ended.
    async fn next(&mut self) -> Option<SseEvent> {
        loop {
            if let Some(end) = self.buf.find("\n\n") {
                let block: String = self.buf.drain(..end + 2).collect();
                let mut event = SseEvent::default();
                for line in block.lines() {
                    if let Some(id) = line.strip_prefix("id:") {
                        event.id = Some(id.trim().to_owned());
                    } else if let Some(data) = line.strip_prefix("data:") {
                        event.data.push_str(data.trim_start());
                    }
                }
                return Some(event);
            }
            let frame = timeout(WAIT, self.body.frame())
                .await
                .expect("SSE timed out")?;
            if let Ok(data) = frame.expect("SSE body error").into_data() {
                self.buf
                    .push_str(std::str::from_utf8(&data).expect("utf-8"));
            }
        }
    }

    async fn next_message(&mut self) -> Option<Value> {
        let event = self.next().await?;
        Some(serde_json::from_str(&event.data).expect("event data is JSON"))
    }
}

fn content_type(response: &Response<Incoming>) -> String {
    response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

async fn json_body(response: Response<Incoming>) -> Value {
    let bytes = timeout(WAIT, response.into_body().collect())
        .await
        .expect("body in time")
        .expect("body")
        .to_bytes();
    serde_json::from_slice(&bytes).expect("JSON body")
}

impl HttpPeer {
    async fn start(args: &[&str]) -> Self {
        let mut all = vec!["--http", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let mut child = spawn(&all);
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let line = timeout(WAIT, lines.next_line())
            .await
            .expect("listening line in time")
            .expect("read")
            .expect("a line");
        let url = line
            .strip_prefix("listening on ")
            .expect("listening line")
            .to_owned();
        let client = Client::builder(TokioExecutor::new()).build_http();
        Self {
            child,
            url,
            client,
            session: None,
        }
    }

    async fn started(capabilities: Value, args: &[&str]) -> Self {
        let mut peer = Self::start(args).await;
        let response = peer.post(init(0, "2025-11-25", capabilities), &[]).await;
        assert_eq!(response.status(), StatusCode::OK);
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .expect("Mcp-Session-Id")
            .to_owned();
        assert!(json_body(response).await.get("result").is_some());
        peer.session = Some(session);
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert_eq!(peer.post(note, &[]).await.status(), StatusCode::ACCEPTED);
        peer
    }

    async fn send(
        &self,
        method: Method,
        body: Option<Value>,
        headers: &[(&str, &str)],
    ) -> Response<Incoming> {
        let mut builder = Request::builder()
            .method(method)
            .uri(&self.url)
            .header("accept", "application/json, text/event-stream");
        if body.is_some() {
            builder = builder.header("content-type", "application/json");
        }
        if let Some(session) = &self.session {
            builder = builder
                .header("mcp-session-id", session)
                .header("mcp-protocol-version", "2025-11-25");
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let body = body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string()));
        let request = builder.body(Full::new(body)).expect("request");
        timeout(WAIT, self.client.request(request))
            .await
            .expect("HTTP response in time")
            .expect("HTTP request")
    }

    async fn post(&self, body: Value, headers: &[(&str, &str)]) -> Response<Incoming> {
        self.send(Method::POST, Some(body), headers).await
    }

    /// POST a request expecting a plain JSON answer.
    async fn rpc(&self, body: Value) -> Value {
        let response = self.post(body, &[]).await;
        assert_eq!(response.status(), StatusCode::OK);
        assert_eq!(content_type(&response), "application/json");
        json_body(response).await
    }

    async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

#[tokio::test]
async fn http_session_lifecycle() {
    let mut peer = HttpPeer::start(&[]).await;
    // Anything but initialize needs a session.
    let response = peer.post(req(1, "ping", json!({})), &[]).await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    peer.session = Some("not-a-session".into());
    let response = peer.post(req(1, "ping", json!({})), &[]).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    peer.stop().await;

    let peer = HttpPeer::started(json!({}), &[]).await;
    assert_eq!(
        peer.rpc(req(2, "ping", json!({}))).await["result"],
        json!({})
    );
    assert_eq!(
        peer.rpc(req(3, "nope/nope", json!({}))).await["error"]["code"],
        -32601
    );
    let response = peer
        .post(
            req(4, "ping", json!({})),
            &[("mcp-protocol-version", "1900-01-01")],
        )
        .await;
    assert_eq!(response.status(), StatusCode::BAD_REQUEST);
    let response = peer.send(Method::DELETE, None, &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    let response = peer.post(req(5, "ping", json!({})), &[]).await;
    assert_eq!(response.status(), StatusCode::NOT_FOUND);
    peer.stop().await;
}

#[tokio::test]
async fn http_tools_list_paginates_and_echo_passes_unknown_members() {
    let peer = HttpPeer::started(json!({}), &["--page-size", "2"]).await;
    let mut names = Vec::new();
    let mut cursor: Option<Value> = None;
    for id in 10..30 {
        let params = cursor.take().map_or(json!({}), |c| json!({"cursor": c}));
        let page = peer.rpc(req(id, "tools/list", params)).await;
        let tools = page["result"]["tools"].as_array().expect("tools");
        assert!(tools.len() <= 2);
        names.extend(tools.iter().map(|t| t["name"].clone()));
        match page["result"].get("nextCursor") {
            Some(next) => cursor = Some(next.clone()),
            None => break,
        }
    }
    assert_eq!(names.len(), 15, "{names:?}");

    let echo = peer
        .rpc(call(1, "echo", json!({"text": "over http"})))
        .await;
    assert_eq!(text_of(&echo), "over http");
    assert_eq!(
        echo["result"]["x-demo-result-extra"].to_string(),
        r#"{"z":1,"a":2}"#
    );
    let unknown = peer.rpc(call(2, "nope", json!({}))).await;
    assert_eq!(unknown["error"]["code"], -32602);
    assert_eq!(unknown["error"]["message"], "Unknown tool: nope");
    let crash = peer.rpc(call(3, "crash", json!({}))).await;
    assert_eq!(crash["result"]["isError"], true);
    peer.stop().await;
}

#[tokio::test]
async fn http_slow_progress_streams_sse() {
    let peer = HttpPeer::started(json!({}), &[]).await;
    let mut message = call(1, "slow_progress", json!({"steps": 3, "delay_ms": 10}));
    message["params"]["_meta"] = json!({"progressToken": 42});
    let response = peer.post(message, &[]).await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(content_type(&response), "text/event-stream");
    let mut sse = SseReader {
        body: response.into_body(),
        buf: String::new(),
    };
    let priming = sse.next().await.expect("priming event");
    assert!(
        priming.id.is_some() && priming.data.is_empty(),
        "{priming:?}"
    );
    for step in 1..=3 {
        let event = sse.next().await.expect("progress event");
        assert!(event.id.is_some());
        let note: Value = serde_json::from_str(&event.data).expect("JSON");
        assert_eq!(note["method"], "notifications/progress");
        assert_eq!(note["params"]["progressToken"], 42);
        assert_eq!(note["params"]["progress"], step);
    }
    let result = sse.next_message().await.expect("result event");
    assert_eq!(text_of(&result), "done after 3 steps");
    assert!(
        sse.next().await.is_none(),
        "stream closes after the response"
    );

    // Without a token the answer is plain JSON.
    let plain = peer
        .rpc(call(2, "slow_progress", json!({"delay_ms": 1})))
        .await;
    assert_eq!(text_of(&plain), "done after 3 steps");
    peer.stop().await;
}

#[tokio::test]
async fn http_add_tool_list_changed_on_get_stream() {
    let peer = HttpPeer::started(json!({}), &[]).await;
    let response = peer
        .send(Method::GET, None, &[("accept", "text/event-stream")])
        .await;
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(content_type(&response), "text/event-stream");
    let mut stream = SseReader {
        body: response.into_body(),
        buf: String::new(),
    };
    let priming = stream.next().await.expect("priming event");
    assert!(priming.data.is_empty());

    let added = peer
        .rpc(call(1, "add_tool", json!({"name": "dyn_http"})))
        .await;
    assert_eq!(text_of(&added), "added dyn_http");
    let note = stream.next_message().await.expect("list_changed");
    assert_eq!(note["method"], "notifications/tools/list_changed");
    let dynamic = peer.rpc(call(2, "dyn_http", json!({}))).await;
    assert_eq!(text_of(&dynamic), "dynamic tool dyn_http");
    peer.stop().await;
}

#[tokio::test]
async fn http_sleep_is_concurrent_and_cancellable() {
    let peer = HttpPeer::started(json!({}), &[]).await;
    let sleeping = {
        let client = peer.client.clone();
        let request = Request::post(&peer.url)
            .header("accept", "application/json, text/event-stream")
            .header("content-type", "application/json")
            .header("mcp-session-id", peer.session.clone().expect("session"))
            .body(Full::new(Bytes::from(
                call(7, "sleep", json!({"ms": 60_000})).to_string(),
            )))
            .expect("request");
        tokio::spawn(async move { client.request(request).await })
    };
    let echo = peer
        .rpc(call(8, "echo", json!({"text": "not blocked"})))
        .await;
    assert_eq!(text_of(&echo), "not blocked");
    // Sent until it lands: the cancellation may overtake the request it names.
    let cancel = json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
                        "params": {"requestId": 7}});
    manifold_testkit::wait::eventually("the sleep cancelled", WAIT, || async {
        assert_eq!(
            peer.post(cancel.clone(), &[]).await.status(),
            StatusCode::ACCEPTED
        );
        Ok(sleeping.is_finished().then_some(()))
    })
    .await
    .expect("cancelled");

    let response = timeout(WAIT, sleeping)
        .await
        .expect("cancelled request finishes")
        .expect("join")
        .expect("HTTP");
    assert_eq!(content_type(&response), "text/event-stream");
    let mut sse = SseReader {
        body: response.into_body(),
        buf: String::new(),
    };
    let priming = sse.next().await.expect("priming");
    assert!(priming.data.is_empty());
    assert!(sse.next().await.is_none(), "no response after cancellation");
    peer.stop().await;
}

#[tokio::test]
async fn http_regional_lookup_reports_mcp_headers() {
    let peer = HttpPeer::started(json!({}), &[]).await;
    let response = peer
        .post(
            call(
                1,
                "regional_lookup",
                json!({"region": "eu-west", "verbose": true, "query": "q"}),
            ),
            &[
                ("Mcp-Param-Region", "eu-west"),
                ("Mcp-Param-Verbose", "true"),
                ("x-other", "no"),
            ],
        )
        .await;
    let body = json_body(response).await;
    let headers = &body["result"]["structuredContent"]["receivedHeaders"];
    assert_eq!(headers["mcp-param-region"], "eu-west");
    assert_eq!(headers["mcp-param-verbose"], "true");
    assert!(headers.get("x-other").is_none());
    assert!(text_of(&body).contains("eu-west"));
    peer.stop().await;
}

#[tokio::test]
async fn http_sample_round_trip() {
    let peer = HttpPeer::started(json!({"sampling": {}}), &[]).await;
    let response = peer
        .post(call(1, "sample", json!({"prompt": "p"})), &[])
        .await;
    assert_eq!(content_type(&response), "text/event-stream");
    let mut sse = SseReader {
        body: response.into_body(),
        buf: String::new(),
    };
    assert!(sse.next().await.expect("priming").data.is_empty());
    let request = sse.next_message().await.expect("sampling request");
    assert_eq!(request["method"], "sampling/createMessage");
    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {
        "role": "assistant", "model": "fake", "content": {"type": "text", "text": "pong"}}});
    assert_eq!(peer.post(answer, &[]).await.status(), StatusCode::ACCEPTED);
    let result = sse.next_message().await.expect("result");
    assert_eq!(text_of(&result), "sampled: pong");
    peer.stop().await;
}
