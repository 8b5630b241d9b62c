//! Streamable HTTP transport for the demo server (stateful, path `/mcp`).
//!
//! What:
//! - `POST /mcp` carries one JSON-RPC message. `initialize` creates a session
//!   and returns its `Mcp-Session-Id`; every later message must carry that
//!   header (missing → 400, unknown → 404). Notifications and client
//!   responses → 202. A request is answered with `application/json`, unless
//!   the handler emits a message before its result (progress, a server→client
//!   request): then the answer is a `text/event-stream` that starts with a
//!   priming event (id, empty data; MCP 2025-11-25), carries those messages
//!   and the response, and closes.
//! - `GET /mcp` opens the session's standalone SSE stream, which carries
//!   server-wide notifications (`notifications/tools/list_changed`). A newer
//!   GET stream replaces the older one (each message goes to one stream).
//! - `DELETE /mcp` ends the session.
//!
//! Invariants: the JSON-vs-SSE choice is made lazily from the first message
//! the handler produces, so no tool-specific knowledge lives here; a request
//! whose client disconnects or cancels stops its handler; a cancelled request
//! gets an SSE answer that closes without a response (the spec forbids one).
//!
//! What not: no resumability (Last-Event-ID is ignored), no auth, no TLS,
//! no batches. Only `Origin`s on loopback hosts are accepted (DNS rebinding).

use parking_lot::Mutex;
use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::convert::Infallible;
use std::hash::BuildHasher;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited, StreamBody};
use hyper::body::{Frame, Incoming as IncomingBody};
use hyper::header::{HeaderMap, HeaderValue, ACCEPT, ALLOW, CACHE_CONTROL, CONTENT_TYPE, ORIGIN};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use serde_json::{Map, Value};
use tokio::net::{TcpListener, ToSocketAddrs};
use tokio::sync::{broadcast, mpsc};
use tokio_util::sync::{CancellationToken, DropGuard};

use crate::codes;
use crate::config::DemoConfig;
use crate::identity::{SERVER_NAME, SUPPORTED_PROTOCOL_VERSIONS};
use crate::jsonrpc::{classify, parse_error, rpc_error, Incoming};
use crate::server::DemoServer;
use crate::session::Session;
use crate::transport::{CallContext, TransportKind};

/// The only path served.
pub const MCP_PATH: &str = "/mcp";
const SESSION_HEADER: &str = "mcp-session-id";
const PROTOCOL_HEADER: &str = "mcp-protocol-version";
/// Request bodies above this are refused with 413.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

type Body = BoxBody<Bytes, Infallible>;

/// A bound, not yet serving, HTTP demo server.
pub struct HttpServer {
    listener: TcpListener,
    state: Arc<State>,
}

struct State {
    server: Arc<DemoServer>,
    sessions: Mutex<HashMap<String, Arc<HttpSession>>>,
    /// Numbers SSE streams so event ids are unique within the process.
    streams: AtomicU64,
}

struct HttpSession {
    session: Arc<Session>,
    /// Cancelled by DELETE; parent of the standalone stream's token.
    closed: CancellationToken,
    /// The current standalone (GET) stream, cancelled when replaced.
    standalone: Mutex<Option<CancellationToken>>,
}

impl HttpServer {
    /// Bind `addr` (only that address) for a fresh demo server.
    pub async fn bind(config: DemoConfig, addr: impl ToSocketAddrs) -> std::io::Result<Self> {
        Ok(Self {
            listener: TcpListener::bind(addr).await?,
            state: Arc::new(State {
                server: DemoServer::new(config, TransportKind::Http),
                sessions: Mutex::new(HashMap::new()),
                streams: AtomicU64::new(0),
            }),
        })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Accept connections forever (until the future is dropped).
    pub async fn serve(self) -> std::io::Result<()> {
        loop {
            let (stream, _) = self.listener.accept().await?;
            let state = self.state.clone();
            // `--flaky-reset`: a request may ask for its connection to be
            // reset (zero linger: dropped with RST, not FIN).
            let reset = CancellationToken::new();
            if state.server.config().flaky.reset > 0.0 {
                let _ = stream.set_zero_linger();
            }
            tokio::spawn(async move {
                let asked = reset.clone();
                let service = hyper::service::service_fn(move |req| {
                    let (state, reset) = (state.clone(), reset.clone());
                    async move { Ok::<_, Infallible>(handle(state, req, reset).await) }
                });
                let builder = auto::Builder::new(TokioExecutor::new());
                let conn = builder.serve_connection(TokioIo::new(stream), service);
                tokio::select! {
                    result = conn => if let Err(error) = result {
                        eprintln!("{SERVER_NAME}: connection error: {error}");
                    },
                    _ = asked.cancelled() => {}
                }
            });
        }
    }
}

/// Bind `addr`, print `listening on http://<addr>/mcp` on stdout, and serve.
pub async fn run(config: DemoConfig, addr: &str) -> std::io::Result<()> {
    let server = HttpServer::bind(config, addr).await?;
    let local = server.local_addr()?;
    eprintln!("{SERVER_NAME}: serving MCP over Streamable HTTP");
    // Tests parse this exact stdout line to learn the port.
    {
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        writeln!(stdout, "listening on http://{local}{MCP_PATH}")?;
        stdout.flush()?;
    }
    server.serve().await?;
    Ok(())
}

async fn handle(
    state: Arc<State>,
    req: Request<IncomingBody>,
    reset: CancellationToken,
) -> Response<Body> {
    if req.uri().path() != MCP_PATH {
        return plain(StatusCode::NOT_FOUND, "not found");
    }
    if !origin_allowed(req.headers()) {
        return plain(StatusCode::FORBIDDEN, "origin not allowed");
    }
    let modern = state.server.config().modern;
    let unsupported_version = req
        .headers()
        .get_all(PROTOCOL_HEADER)
        .iter()
        .any(|version| {
            !version.to_str().is_ok_and(|v| {
                if modern {
                    v == super::modern::MODERN_VERSION
                } else {
                    SUPPORTED_PROTOCOL_VERSIONS.contains(&v)
                }
            })
        });
    if unsupported_version {
        return error_json(
            StatusCode::BAD_REQUEST,
            "Bad Request: unsupported MCP-Protocol-Version",
        );
    }
    match *req.method() {
        Method::POST => post(state, req, reset).await,
        Method::GET => get(state, req.headers()),
        Method::DELETE => delete(state, req.headers()),
        _ => {
            let mut response = plain(StatusCode::METHOD_NOT_ALLOWED, "method not allowed");
            response
                .headers_mut()
                .insert(ALLOW, HeaderValue::from_static("GET, POST, DELETE"));
            response
        }
    }
}

async fn post(
    state: Arc<State>,
    req: Request<IncomingBody>,
    reset: CancellationToken,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let json_content = parts
        .headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_none_or(|v| v.to_ascii_lowercase().contains("json"));
    if !json_content {
        return plain(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "expected application/json",
        );
    }
    let bytes = match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return plain(
                StatusCode::PAYLOAD_TOO_LARGE,
                "request body too large or unreadable",
            )
        }
    };
    if state
        .server
        .config()
        .bad_request_over
        .is_some_and(|max| bytes.len() > max)
    {
        return json(
            StatusCode::BAD_REQUEST,
            &serde_json::json!({"jsonrpc": "2.0", "id": null,
                    "error": {"code": -32700, "message": "Parse error: message too large"}}),
        );
    }
    let Ok(mut message) = serde_json::from_slice::<Value>(&bytes) else {
        return json(StatusCode::BAD_REQUEST, &parse_error());
    };
    // For the `trace` diagnostic tool: the header, where a tool can see it.
    if let Some(tp) = parts
        .headers
        .get("traceparent")
        .and_then(|v| v.to_str().ok())
    {
        if let Some(params) = message.get_mut("params").and_then(Value::as_object_mut) {
            let meta = params
                .entry("_meta")
                .or_insert_with(|| serde_json::json!({}));
            if let Some(meta) = meta.as_object_mut() {
                meta.insert(super::tools::HTTP_TRACEPARENT.into(), Value::from(tp));
            }
        }
    }
    let incoming = classify(message);
    if let Incoming::Request { method, params, .. } = &incoming {
        if method == "tools/call" {
            let tool = params.get("name").and_then(Value::as_str).unwrap_or("");
            match state
                .server
                .arrivals
                .arrive(tool, &state.server.config().flaky)
            {
                super::flaky::Fault::None => {}
                super::flaky::Fault::Unavailable => {
                    return plain(StatusCode::SERVICE_UNAVAILABLE, "flaky: unavailable")
                }
                super::flaky::Fault::Reset => {
                    reset.cancel();
                    return std::future::pending().await;
                }
            }
        }
    }
    if state.server.config().hangs_on(&incoming) {
        eprintln!("{SERVER_NAME}: --hang-calls: this request is never answered");
        return std::future::pending().await;
    }
    if state.server.config().modern {
        return stateless(&state, &parts.headers, incoming).await;
    }
    if let Incoming::Request { method, .. } = &incoming {
        if method == "initialize" {
            return initialize(state, incoming).await;
        }
    }
    if let Incoming::Invalid(error) = incoming {
        return json(StatusCode::BAD_REQUEST, &error);
    }
    let http_session = match lookup_session(&state, &parts.headers) {
        Ok((_, session)) => session,
        Err(error) => return error.response(),
    };
    let session = &http_session.session;
    match incoming {
        Incoming::Notification { method, params } => {
            session.handle_notification(&method, &params);
            empty(StatusCode::ACCEPTED)
        }
        Incoming::Response { id, message } => {
            session.handle_response(&id, message);
            empty(StatusCode::ACCEPTED)
        }
        Incoming::Request { id, method, params } => {
            let ctx_headers = mcp_headers(&parts.headers);
            let accepts_sse = accepts(&parts.headers, "text/event-stream", true);
            request(
                &state,
                session.clone(),
                id,
                method,
                params,
                ctx_headers,
                accepts_sse,
            )
            .await
        }
        Incoming::Invalid(error) => json(StatusCode::BAD_REQUEST, &error),
    }
}

/// A 2026-07-28 POST: no session; each request is served on its own, with the
/// status codes of that revision for its errors.
async fn stateless(state: &State, headers: &HeaderMap, incoming: Incoming) -> Response<Body> {
    let Incoming::Request { id, method, params } = incoming else {
        // No client notifications or responses exist over 2026-07-28 HTTP.
        return empty(StatusCode::ACCEPTED);
    };
    let accepts_sse = accepts(headers, "text/event-stream", true);
    let session = state.server.new_session();
    request(
        state,
        session,
        id,
        method,
        params,
        mcp_headers(headers),
        accepts_sse,
    )
    .await
}

async fn initialize(state: Arc<State>, incoming: Incoming) -> Response<Body> {
    let Incoming::Request { id, method, params } = incoming else {
        return plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "not an initialize request",
        );
    };
    let session = state.server.new_session();
    let Some(response) = session
        .handle_request(id, method, params, CallContext::default())
        .await
    else {
        return plain(
            StatusCode::INTERNAL_SERVER_ERROR,
            "initialize produced no response",
        );
    };
    let mut reply = json(StatusCode::OK, &response);
    // A failed initialize creates no session.
    if response.get("result").is_some() {
        let session_id = fresh_session_id(&state);
        if let Ok(value) = HeaderValue::from_str(&session_id) {
            reply.headers_mut().insert(SESSION_HEADER, value);
        }
        let http_session = Arc::new(HttpSession {
            session,
            closed: CancellationToken::new(),
            standalone: Mutex::new(None),
        });
        state.sessions.lock().insert(session_id, http_session);
    }
    reply
}

/// Run a request on its own task and pick the response shape from the first
/// message it produces: the final response → JSON; anything else → SSE.
async fn request(
    state: &State,
    session: Arc<Session>,
    id: Value,
    method: String,
    params: Map<String, Value>,
    mcp_headers: Map<String, Value>,
    accepts_sse: bool,
) -> Response<Body> {
    let (tx, mut rx) = mpsc::unbounded_channel::<Value>();
    let abort = CancellationToken::new();
    // Dropped with this future (client gone before the answer started) or
    // with the SSE body (client gone mid-stream): either way, stop the work.
    let guard = abort.clone().drop_guard();
    let ctx = CallContext {
        outbound: accepts_sse.then(|| tx.clone()),
        mcp_headers,
    };
    tokio::spawn(async move {
        tokio::select! {
            _ = abort.cancelled() => {}
            response = session.handle_request(id, method, params, ctx) => {
                if let Some(response) = response {
                    let _ = tx.send(response);
                }
            }
        }
    });
    match rx.recv().await {
        // Responses have no `method`; interim notifications/requests do.
        Some(response) if response.get("method").is_none() => {
            // Protocol-level errors of the stateless era have their own statuses.
            let code = response.pointer("/error/code").and_then(Value::as_i64);
            let status = match code {
                Some(codes::METHOD_NOT_FOUND) if state.server.config().modern => {
                    StatusCode::NOT_FOUND
                }
                Some(codes::INVALID_PARAMS | codes::UNSUPPORTED_VERSION)
                    if state.server.config().modern =>
                {
                    StatusCode::BAD_REQUEST
                }
                _ => StatusCode::OK,
            };
            json(status, &response)
        }
        first => sse(
            state.streams.fetch_add(1, Ordering::Relaxed),
            first,
            rx,
            guard,
            trickles(state),
        ),
    }
}

fn get(state: Arc<State>, headers: &HeaderMap) -> Response<Body> {
    if !accepts(headers, "text/event-stream", false) {
        return plain(
            StatusCode::NOT_ACCEPTABLE,
            "GET requires Accept: text/event-stream",
        );
    }
    let http_session = match lookup_session(&state, headers) {
        Ok((_, session)) => session,
        Err(error) => return error.response(),
    };
    let token = http_session.closed.child_token();
    if let Some(previous) = http_session.standalone.lock().replace(token.clone()) {
        previous.cancel();
    }
    // Subscribe before answering so nothing sent after the client sees the
    // response headers can be missed.
    let mut events = state.server.subscribe_events();
    let (tx, rx) = mpsc::unbounded_channel();
    let stop = token.clone();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = stop.cancelled() => return,
                event = events.recv() => match event {
                    Ok(event) => if tx.send(event).is_err() { return },
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return,
                },
            }
        }
    });
    sse(
        state.streams.fetch_add(1, Ordering::Relaxed),
        None,
        rx,
        token.drop_guard(),
        trickles(&state),
    )
}

/// `--misbehave trickle-sse`.
fn trickles(state: &State) -> bool {
    state
        .server
        .config()
        .misbehave
        .has(super::rogue::Misbehaviour::TrickleSse)
}

fn delete(state: Arc<State>, headers: &HeaderMap) -> Response<Body> {
    let (id, http_session) = match lookup_session(&state, headers) {
        Ok(found) => found,
        Err(error) => return error.response(),
    };
    if state.sessions.lock().remove(&id).is_some() {
        http_session.closed.cancel();
        http_session.session.cancel_all();
    }
    empty(StatusCode::OK)
}

/// Why a message that needs a session has none.
enum SessionError {
    Missing,
    Unknown,
}

impl SessionError {
    fn response(self) -> Response<Body> {
        match self {
            Self::Missing => error_json(
                StatusCode::BAD_REQUEST,
                "Bad Request: missing Mcp-Session-Id",
            ),
            Self::Unknown => error_json(StatusCode::NOT_FOUND, "Session not found"),
        }
    }
}

fn lookup_session(
    state: &State,
    headers: &HeaderMap,
) -> Result<(String, Arc<HttpSession>), SessionError> {
    let id = headers.get(SESSION_HEADER).ok_or(SessionError::Missing)?;
    let id = id.to_str().map_err(|_| SessionError::Unknown)?;
    let session = state.sessions.lock().get(id).cloned();
    session
        .map(|session| (id.to_owned(), session))
        .ok_or(SessionError::Unknown)
}

/// An SSE body: priming event, then `first` and everything from `rx` as
/// `message` events; ends when all senders are gone. `guard` lives as long
/// as the body, so dropping the body cancels whatever feeds it.
fn sse(
    stream_id: u64,
    first: Option<Value>,
    rx: mpsc::UnboundedReceiver<Value>,
    guard: DropGuard,
    trickle: bool,
) -> Response<Body> {
    struct St {
        stream_id: u64,
        seq: u64,
        first: Option<Value>,
        rx: mpsc::UnboundedReceiver<Value>,
        _guard: DropGuard,
    }
    let state = St {
        stream_id,
        seq: 0,
        first,
        rx,
        _guard: guard,
    };
    let stream = futures_util::stream::unfold(state, |mut st| async move {
        let event = if st.seq == 0 {
            // Priming event: an id with empty data (MCP 2025-11-25).
            format!("id: {}-0\ndata:\n\n", st.stream_id)
        } else {
            let message = match st.first.take() {
                Some(message) => message,
                None => st.rx.recv().await?,
            };
            format!(
                "id: {}-{}\nevent: message\ndata: {message}\n\n",
                st.stream_id, st.seq
            )
        };
        st.seq += 1;
        Some((Ok::<_, Infallible>(Frame::data(Bytes::from(event))), st))
    });
    let body = if trickle {
        // One byte per frame, each after a pause: every boundary a reader can see.
        use futures_util::StreamExt;
        let bytes = stream.flat_map(|frame| {
            let data = frame
                .ok()
                .and_then(|f| f.into_data().ok())
                .unwrap_or_default();
            futures_util::stream::iter((0..data.len()).map(move |i| data.slice(i..i + 1)))
        });
        let slow = bytes.then(|b| async move {
            tokio::time::sleep(super::rogue::TRICKLE_DELAY).await;
            Ok::<_, Infallible>(Frame::data(b))
        });
        BodyExt::boxed(StreamBody::new(slow))
    } else {
        StreamBody::new(stream).boxed()
    };
    let mut response = Response::new(body);
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

fn json(status: StatusCode, body: &Value) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    response
}

/// Transport-level errors still carry a JSON-RPC error body for clients
/// that only look at the body.
fn error_json(status: StatusCode, message: &str) -> Response<Body> {
    json(
        status,
        &rpc_error(Value::Null, codes::INVALID_REQUEST, message),
    )
}

fn plain(status: StatusCode, text: &'static str) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from_static(text.as_bytes())).boxed());
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    response
}

fn empty(status: StatusCode) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::new()).boxed());
    *response.status_mut() = status;
    response
}

/// Whether `Accept` admits `mime`; `missing_ok` decides for an absent header.
fn accepts(headers: &HeaderMap, mime: &str, missing_ok: bool) -> bool {
    let (family, _) = mime.split_once('/').unwrap_or((mime, ""));
    let mut seen = false;
    for value in headers.get_all(ACCEPT) {
        seen = true;
        let Ok(value) = value.to_str() else { continue };
        let hit = value.split(',').any(|item| {
            let range = item
                .split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase();
            range == mime || range == "*/*" || range == format!("{family}/*")
        });
        if hit {
            return true;
        }
    }
    !seen && missing_ok
}

/// Every `mcp-*` request header, and `authorization` (so a test can prove a
/// gateway never forwards its client's credentials); names are already
/// lowercase in hyper; repeated headers are joined with ", " as HTTP allows.
fn mcp_headers(headers: &HeaderMap) -> Map<String, Value> {
    let mut out = Map::new();
    let shown = |n: &&hyper::header::HeaderName| {
        n.as_str().starts_with("mcp-") || *n == hyper::header::AUTHORIZATION
    };
    for name in headers.keys().filter(shown) {
        let joined = headers
            .get_all(name)
            .iter()
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .collect::<Vec<_>>()
            .join(", ");
        out.insert(name.as_str().to_owned(), Value::String(joined));
    }
    out
}

/// Browsers send `Origin`; only loopback origins may talk to this server.
fn origin_allowed(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(ORIGIN) else {
        return true;
    };
    let Ok(origin) = origin.to_str() else {
        return false;
    };
    let host_port = origin.split_once("://").map_or("", |(_, rest)| rest);
    let host = if let Some(rest) = host_port.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    matches!(host, "localhost" | "::1") || host.starts_with("127.")
}

/// 128 bits from two independently seeded SipHash keys (std's `RandomState`
/// is seeded from OS randomness), so ids are unguessable without a rand dep.
fn fresh_session_id(state: &State) -> String {
    let counter = state.streams.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let part = |salt: u8| RandomState::new().hash_one((counter, nanos, salt));
    format!("{:016x}{:016x}", part(0), part(1))
}
