//! [`McpClient`]: a minimal Streamable-HTTP MCP client for tests.
//!
//! Invariants: every network wait is bounded by the client's timeout; the client
//! never retries, reorders or rewrites what the server sent, so tests see the
//! gateway's bytes (`Reply::body`, `Reply::raw_messages`).

use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use http::header::{HeaderName, HeaderValue, ACCEPT, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Map, Value};

use super::reply::{MessageStream, RawReply, Reply, StreamingReply};
use super::reply::{ACCEPT_BOTH, WAIT};

type HttpClient = Client<HttpConnector, Full<Bytes>>;

const SESSION_HEADER: &str = "mcp-session-id";
const PROTOCOL_HEADER: &str = "mcp-protocol-version";

/// A minimal Streamable-HTTP MCP client. Clones share one session (id, negotiated
/// revision, request-id counter), so one task can cancel what another started.
#[derive(Clone)]
pub struct McpClient {
    inner: Arc<Inner>,
}

struct Inner {
    url: Uri,
    url_text: String,
    http: HttpClient,
    timeout: Duration,
    session: Mutex<Option<String>>,
    protocol_version: Mutex<Option<String>>,
    /// `Authorization` sent with every request, when set.
    authorization: Mutex<Option<String>>,
    next_id: AtomicU64,
}

/// A JSON-RPC message; `params` is left out when it is `null`.
fn message(id: Option<Value>, method: &str, params: Value) -> Value {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), Value::from("2.0"));
    if let Some(id) = id {
        m.insert("id".into(), id);
    }
    m.insert("method".into(), Value::from(method));
    if !params.is_null() {
        m.insert("params".into(), params);
    }
    Value::Object(m)
}

impl McpClient {
    /// A client for the MCP endpoint at `url` (e.g. `http://127.0.0.1:PORT/mcp`),
    /// with waits bounded by [`WAIT`]. Panics if `url` is not a valid URI.
    pub fn new(url: impl AsRef<str>) -> McpClient {
        McpClient::with_timeout(url, WAIT)
    }

    /// Like [`McpClient::new`], with every wait bounded by `timeout`.
    pub fn with_timeout(url: impl AsRef<str>, timeout: Duration) -> McpClient {
        let url_text = url.as_ref().to_owned();
        let url: Uri = url_text
            .parse()
            .unwrap_or_else(|e| panic!("invalid MCP endpoint URL {url_text:?}: {e}"));
        McpClient {
            inner: Arc::new(Inner {
                url,
                url_text,
                http: Client::builder(TokioExecutor::new()).build_http(),
                timeout,
                session: Mutex::new(None),
                protocol_version: Mutex::new(None),
                authorization: Mutex::new(None),
                next_id: AtomicU64::new(1),
            }),
        }
    }

    pub fn url(&self) -> &str {
        &self.inner.url_text
    }

    /// The bound on each wait.
    pub fn timeout(&self) -> Duration {
        self.inner.timeout
    }

    /// The `Mcp-Session-Id` sent with every request, once known.
    pub fn session_id(&self) -> Option<String> {
        self.inner.session.lock().clone()
    }

    /// Sets (or clears) the session id sent from now on.
    pub fn set_session_id(&self, id: Option<&str>) {
        *self.inner.session.lock() = id.map(str::to_owned);
    }

    /// The `MCP-Protocol-Version` sent with every request after `initialize`.
    pub fn protocol_version(&self) -> Option<String> {
        self.inner.protocol_version.lock().clone()
    }

    /// Sets (or clears) the `MCP-Protocol-Version` header sent from now on.
    pub fn set_protocol_version(&self, version: Option<&str>) {
        *self.inner.protocol_version.lock() = version.map(str::to_owned);
    }

    /// Sends `Authorization: Bearer <token>` from now on (or nothing, with `None`).
    pub fn set_bearer(&self, token: Option<&str>) {
        *self.inner.authorization.lock() = token.map(|t| format!("Bearer {t}"));
    }

    /// A fresh numeric request id (1, 2, 3, …; shared by clones).
    pub fn next_id(&self) -> Value {
        Value::from(self.inner.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// `initialize` with `protocol_version` and `capabilities`, then
    /// `notifications/initialized`. Stores the session id and the negotiated
    /// revision; returns the initialize `result`.
    pub async fn initialize(&self, protocol_version: &str, capabilities: Value) -> Result<Value> {
        let params = json!({
            "protocolVersion": protocol_version,
            "capabilities": capabilities,
            "clientInfo": {"name": "manifold-testkit", "version": env!("CARGO_PKG_VERSION")},
        });
        let reply = self.request("initialize", params).await?;
        if reply.status != StatusCode::OK {
            bail!("initialize answered HTTP {}: {reply}", reply.status);
        }
        let result = reply.result().context("initialize")?.clone();
        if let Some(id) = reply.headers.get(SESSION_HEADER) {
            let id = id.to_str().context("Mcp-Session-Id is not visible ASCII")?;
            self.set_session_id(Some(id));
        }
        let negotiated = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| anyhow!("initialize result has no protocolVersion: {result}"))?;
        self.set_protocol_version(Some(negotiated));
        let ack = self
            .notify("notifications/initialized", Value::Null)
            .await?;
        if !ack.status.is_success() {
            bail!(
                "notifications/initialized answered HTTP {}: {ack}",
                ack.status
            );
        }
        Ok(result)
    }

    /// Sends a request with a fresh id and reads the whole reply.
    pub async fn request(&self, method: &str, params: Value) -> Result<Reply> {
        self.request_with_id(self.next_id(), method, params).await
    }

    /// Sends a request with the given id and reads the whole reply.
    pub async fn request_with_id(&self, id: Value, method: &str, params: Value) -> Result<Reply> {
        self.send(&message(Some(id), method, params)).await
    }

    /// `tools/call` of `name` with `arguments`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Reply> {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
            .await
    }

    /// Every tool, following `nextCursor` (at most 1000 pages).
    pub async fn list_all_tools(&self) -> Result<Vec<Value>> {
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..1000 {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let reply = self.request("tools/list", params).await?;
            let result = reply.result().context("tools/list")?;
            let page = result
                .get("tools")
                .and_then(Value::as_array)
                .ok_or_else(|| anyhow!("tools/list result without a tools array: {result}"))?;
            tools.extend(page.iter().cloned());
            match result.get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => return Ok(tools),
            }
        }
        bail!("tools/list kept returning nextCursor for 1000 pages")
    }

    /// Posts one message (request, notification or response) and reads the
    /// whole reply. For a reply that stays open until the client answers
    /// something, use [`McpClient::send_streaming`].
    pub async fn send(&self, msg: &Value) -> Result<Reply> {
        let raw = self.post_raw(serde_json::to_vec(msg)?, &[]).await?;
        Reply::from_raw(raw).with_context(|| format!("reply to {msg}"))
    }

    /// Sends a request with a fresh id and returns as soon as the response
    /// headers arrive; read the messages one by one from the stream.
    pub async fn request_streaming(&self, method: &str, params: Value) -> Result<StreamingReply> {
        self.send_streaming(&message(Some(self.next_id()), method, params))
            .await
    }

    /// Posts one message; returns once the response headers arrive.
    pub async fn send_streaming(&self, msg: &Value) -> Result<StreamingReply> {
        self.send_streaming_with(msg, &[]).await
    }

    /// [`McpClient::send_streaming`] with extra headers (replacing same-named ones).
    pub async fn send_streaming_with(
        &self,
        msg: &Value,
        extra: &[(&str, &str)],
    ) -> Result<StreamingReply> {
        let req = self.post_request(Bytes::from(serde_json::to_vec(msg)?), extra)?;
        let what = format!("reply to {}", msg.get("method").unwrap_or(&Value::Null));
        let resp = self.execute(req).await?;
        Ok(MessageStream::new(resp, self.inner.timeout, what))
    }

    /// Sends a notification; the gateway answers 202 with no body.
    pub async fn notify(&self, method: &str, params: Value) -> Result<RawReply> {
        let body = serde_json::to_vec(&message(None, method, params))?;
        self.post_raw(body, &[]).await
    }

    /// Answers a server→client request with `result`.
    pub async fn respond(&self, id: Value, result: Value) -> Result<RawReply> {
        let body = serde_json::to_vec(&json!({"jsonrpc": "2.0", "id": id, "result": result}))?;
        self.post_raw(body, &[]).await
    }

    /// Answers a server→client request with a JSON-RPC error.
    pub async fn respond_error(&self, id: Value, code: i64, text: &str) -> Result<RawReply> {
        let body = serde_json::to_vec(&json!({
            "jsonrpc": "2.0", "id": id, "error": {"code": code, "message": text}
        }))?;
        self.post_raw(body, &[]).await
    }

    /// POSTs `body` as is, with the usual headers (`Content-Type: application/json`,
    /// `Accept` both, session and revision when known); `extra` headers replace
    /// same-named ones (e.g. `("host", "evil.example.com")`).
    pub async fn post_raw(
        &self,
        body: impl Into<Bytes>,
        extra: &[(&str, &str)],
    ) -> Result<RawReply> {
        let req = self.post_request(body.into(), extra)?;
        let resp = self.execute(req).await?;
        self.read(resp).await
    }

    /// Opens the session's GET stream; fails unless the answer is 200 SSE.
    pub async fn open_get_stream(&self) -> Result<MessageStream> {
        let stream = self.get(&[]).await?;
        if stream.status != StatusCode::OK || !stream.is_sse() {
            bail!(
                "GET answered HTTP {} with Content-Type {:?}",
                stream.status,
                stream.content_type
            );
        }
        Ok(stream)
    }

    /// GET on the endpoint with `Accept: text/event-stream` plus `extra`, whatever
    /// the answer.
    pub async fn get(&self, extra: &[(&str, &str)]) -> Result<MessageStream> {
        let mut req = self
            .builder(Method::GET)
            .header(ACCEPT, super::reply::SSE)
            .body(Full::new(Bytes::new()))?;
        apply_headers(&mut req, extra)?;
        let resp = self.execute(req).await?;
        Ok(MessageStream::new(
            resp,
            self.inner.timeout,
            "GET stream".into(),
        ))
    }

    /// DELETE: ends the session.
    pub async fn delete(&self) -> Result<RawReply> {
        let req = self.builder(Method::DELETE).body(Full::new(Bytes::new()))?;
        let resp = self.execute(req).await?;
        self.read(resp).await
    }

    fn builder(&self, method: Method) -> http::request::Builder {
        let mut b = Request::builder()
            .method(method)
            .uri(self.inner.url.clone());
        if let Some(s) = self.session_id() {
            b = b.header(SESSION_HEADER, s);
        }
        if let Some(v) = self.protocol_version() {
            b = b.header(PROTOCOL_HEADER, v);
        }
        if let Some(a) = self.inner.authorization.lock().clone() {
            b = b.header(http::header::AUTHORIZATION, a);
        }
        b
    }

    fn post_request(&self, body: Bytes, extra: &[(&str, &str)]) -> Result<Request<Full<Bytes>>> {
        let mut req = self
            .builder(Method::POST)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, ACCEPT_BOTH)
            .body(Full::new(body))?;
        apply_headers(&mut req, extra)?;
        Ok(req)
    }

    async fn execute(&self, req: Request<Full<Bytes>>) -> Result<Response<Incoming>> {
        let what = format!("{} {}", req.method(), self.inner.url_text);
        tokio::time::timeout(self.inner.timeout, self.inner.http.request(req))
            .await
            .map_err(|_| anyhow!("{what}: no response within {:?}", self.inner.timeout))?
            .with_context(|| format!("{what} failed"))
    }

    async fn read(&self, resp: Response<Incoming>) -> Result<RawReply> {
        let (parts, body) = resp.into_parts();
        let body = tokio::time::timeout(self.inner.timeout, body.collect())
            .await
            .map_err(|_| {
                anyhow!(
                    "HTTP {} reply body did not end within {:?}",
                    parts.status,
                    self.inner.timeout
                )
            })?
            .context("reading the reply body")?
            .to_bytes();
        Ok(RawReply {
            status: parts.status,
            headers: parts.headers,
            body,
        })
    }
}

fn apply_headers<B>(req: &mut Request<B>, extra: &[(&str, &str)]) -> Result<()> {
    for (name, value) in extra {
        let name = HeaderName::from_bytes(name.as_bytes())
            .with_context(|| format!("header name {name:?}"))?;
        let value =
            HeaderValue::from_str(value).with_context(|| format!("header value {value:?}"))?;
        req.headers_mut().insert(name, value);
    }
    Ok(())
}
