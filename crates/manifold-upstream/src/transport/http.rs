//! Streamable-HTTP upstreams: the session era (2025-03-26 … 2025-11-25, an
//! `Mcp-Session-Id`) and 2026-07-28 (stateless: no session, `_meta` on every
//! request, cancellation by closing the response stream).
//!
//! Each request is its own POST; the reply is JSON or an SSE stream carrying related
//! notifications and server→client requests before the response. Handled here:
//! SSE priming events (an id with empty data), server-initiated disconnects resumed
//! with GET + `Last-Event-ID`, the upstream's `Mcp-Session-Id` (kept private, never
//! shown to clients) and a transparent re-`initialize` when the upstream answers 404
//! for it, the GET stream for notifications outside any call, and DELETE on shutdown.
//! Connections are pooled and reused by hyper's client.
//!
//! Not here: the `initialize` handshake a 404 calls for (the wire's re-initialize
//! hook, set by the upstream actor), what the messages mean (`wire`, `router`).

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use manifold_config::{LimitsConfig, Transport as Configured, UpstreamConfig};
use manifold_protocol::methods as m;
use manifold_protocol::sse::SseDecoder;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{Driver, Ended, Outgoing, Transport};
use crate::message::{BoxFuture, Outbound};
use crate::router::Source;
use crate::wire::Wire;
use crate::{lock, UpstreamError};

/// Times a broken response stream is resumed with `Last-Event-ID` before the call
/// fails.
pub const MAX_RESUMPTIONS: usize = 5;
/// Longest `retry:` delay honoured before resuming.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(5);
/// Extra time a POST's reader may outlive its call's timeout.
pub const STREAM_GRACE: Duration = Duration::from_secs(5);

type HttpClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The HTTP transport: cheap handle over the shared state its exchanges and
/// responders hold.
pub(crate) struct HttpTransport(Arc<HttpLink>);

pub(crate) struct HttpLink {
    wire: Arc<Wire>,
    client: HttpClient,
    url: http::Uri,
    headers: HeaderMap,
    /// `auth` other than `static`: where the bearer token comes from.
    tokens: Option<Arc<manifold_credentials::TokenSource>>,
    max_message: usize,
    session_id: Mutex<Option<String>>,
    reinit: tokio::sync::Mutex<()>,
    /// A `ping` is checking whether the upstream still accepts the session.
    checking: AtomicBool,
}

/// An error and its causes, outermost first: the cause (a refused TLS
/// certificate, a reset connection) is what an operator needs.
fn with_causes(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let next = s.to_string();
        if !text.contains(&next) {
            text.push_str(": ");
            text.push_str(&next);
        }
        source = s.source();
    }
    text
}

/// TLS towards the upstream: the built-in web roots plus its `ca`, and its
/// `client_cert` when one is configured. Files are read at each connect, so a
/// renewed certificate is used from the next (re)connection.
fn client_tls(t: &manifold_config::UpstreamTls) -> Result<rustls::ClientConfig, String> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    if let Some(ca) = &t.ca {
        let certs =
            CertificateDer::pem_file_iter(ca).map_err(|e| format!("ca `{}`: {e}", ca.display()))?;
        for cert in certs {
            let cert = cert.map_err(|e| format!("ca `{}`: {e}", ca.display()))?;
            roots
                .add(cert)
                .map_err(|e| format!("ca `{}`: {e}", ca.display()))?;
        }
    }
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::aws_lc_rs::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| e.to_string())?
    .with_root_certificates(roots);
    match &t.client_cert {
        None => Ok(builder.with_no_client_auth()),
        Some((cert, key)) => {
            let chain = CertificateDer::pem_file_iter(cert)
                .and_then(|i| i.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("client_cert `{}`: {e}", cert.display()))?;
            let key = PrivateKeyDer::from_pem_file(key)
                .map_err(|e| format!("client_key `{}`: {e}", key.display()))?;
            builder
                .with_client_auth_cert(chain, key)
                .map_err(|e| format!("client_cert and client_key: {e}"))
        }
    }
}

pub(crate) fn connect(
    cfg: &UpstreamConfig,
    limits: &LimitsConfig,
    wire: Arc<Wire>,
    tokens: Option<Arc<manifold_credentials::TokenSource>>,
) -> Result<HttpTransport, UpstreamError> {
    let Configured::Http {
        url, headers, tls, ..
    } = &cfg.transport
    else {
        return Err(UpstreamError::unavailable(
            &cfg.name,
            "not an HTTP upstream",
        ));
    };
    let uri: http::Uri = url
        .parse()
        .map_err(|e| UpstreamError::unavailable(&cfg.name, format!("bad url {url}: {e}")))?;
    let mut map = HeaderMap::new();
    for (k, v) in headers {
        let (Ok(name), Ok(value)) = (
            HeaderName::try_from(k.as_str()),
            HeaderValue::try_from(v.as_str()),
        ) else {
            return Err(UpstreamError::unavailable(
                &cfg.name,
                format!("invalid header {k}"),
            ));
        };
        map.insert(name, value);
    }
    // Requests are small and latency-bound: send each segment at once (no Nagle).
    let mut tcp = HttpConnector::new();
    tcp.set_nodelay(true);
    // A host that never answers a SYN must not hold a call or the handshake.
    tcp.set_connect_timeout(Some(limits.connect_timeout));
    tcp.enforce_http(false);
    let tls_config = client_tls(tls).map_err(|e| UpstreamError::unavailable(&cfg.name, e))?;
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls_config)
        .https_or_http()
        .enable_http1()
        .enable_http2()
        .wrap_connector(tcp);
    let client = Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(60))
        .build(https);
    Ok(HttpTransport(Arc::new(HttpLink {
        wire,
        client,
        url: uri,
        headers: map,
        tokens,
        max_message: limits.max_message_bytes,
        session_id: Mutex::new(None),
        reinit: tokio::sync::Mutex::new(()),
        checking: AtomicBool::new(false),
    })))
}

impl Outbound for HttpLink {
    fn send_message(&self, bytes: Vec<u8>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            match tokio::time::timeout(crate::SEND_TIMEOUT, self.post_message(bytes)).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(upstream = %self.wire.upstream(), error = %e, "sending to the upstream failed")
                }
                Err(_) => {
                    tracing::warn!(upstream = %self.wire.upstream(), bound = ?crate::SEND_TIMEOUT,
                    "the upstream did not take a message in time; dropped")
                }
            }
        })
    }
}

impl Outbound for HttpTransport {
    fn send_message(&self, bytes: Vec<u8>) -> BoxFuture<'_, ()> {
        self.0.send_message(bytes)
    }
}

impl Transport for HttpTransport {
    fn request(&self, out: Outgoing) -> BoxFuture<'_, Result<Option<Driver>, UpstreamError>> {
        let driver: Driver = Box::pin(drive_call(self.0.clone(), out));
        Box::pin(async move { Ok(Some(driver)) })
    }

    fn cancels_by_closing(&self) -> bool {
        // 2026-07-28 HTTP has no client notifications: the caller closes the
        // response stream instead (dropping the exchange does).
        self.0.wire.is_modern()
    }

    fn initialized(&self) {
        start_get_stream(&self.0);
    }

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.0.shutdown())
    }

    fn ended(&self, _after_failure: bool) -> BoxFuture<'_, Ended> {
        Box::pin(async {
            Ended {
                reason: "the connection failed".into(),
                exit_code: None,
            }
        })
    }

    fn outbound(&self) -> Arc<dyn Outbound> {
        self.0.clone()
    }
}

impl HttpLink {
    fn outbound(self: &Arc<Self>) -> Arc<dyn Outbound> {
        self.clone()
    }

    fn request(
        &self,
        method: Method,
        body: Option<Bytes>,
        extra: &[(String, String)],
        last_event_id: Option<&str>,
        token: Option<&str>,
    ) -> Result<Request<Full<Bytes>>, String> {
        let mut b = Request::builder().method(method).uri(self.url.clone());
        let h = b.headers_mut().ok_or("bad request")?;
        h.extend(self.headers.clone());
        if let Some(v) = token.and_then(|t| HeaderValue::try_from(format!("Bearer {t}")).ok()) {
            h.insert(http::header::AUTHORIZATION, v);
        }
        h.insert(
            http::header::ACCEPT,
            HeaderValue::from_static("application/json, text/event-stream"),
        );
        if body.is_some() {
            h.insert(
                http::header::CONTENT_TYPE,
                HeaderValue::from_static(m::CONTENT_TYPE_JSON),
            );
        }
        if let Some(v) = self.wire.protocol_version.get() {
            if let Ok(v) = HeaderValue::try_from(v.as_str()) {
                h.insert(m::HEADER_PROTOCOL_VERSION, v);
            }
        }
        if let Some(id) = lock(&self.session_id).clone() {
            if let Ok(v) = HeaderValue::try_from(id) {
                h.insert(m::HEADER_SESSION_ID, v);
            }
        }
        if let Some(id) = last_event_id.and_then(|i| HeaderValue::try_from(i).ok()) {
            h.insert(m::HEADER_LAST_EVENT_ID, id);
        }
        for (k, v) in extra {
            if let (Ok(k), Ok(v)) = (
                HeaderName::try_from(k.as_str()),
                HeaderValue::try_from(v.as_str()),
            ) {
                h.insert(k, v);
            }
        }
        b.body(Full::new(body.unwrap_or_default()))
            .map_err(|e| e.to_string())
    }

    async fn send(
        &self,
        method: Method,
        body: Option<Vec<u8>>,
        extra: &[(String, String)],
        last_event_id: Option<&str>,
    ) -> Result<http::Response<hyper::body::Incoming>, UpstreamError> {
        let name = self.wire.upstream();
        // Shared, not copied, by a resend after a refused token.
        let body = body.map(Bytes::from);
        // A call on behalf of its caller carries its own (exchanged) token: a
        // refusal of it is that call's, never the connection's.
        let Some(tokens) = self.tokens.as_ref().filter(|_| !on_behalf(extra)) else {
            return self
                .send_once(method, body, extra, last_event_id, None)
                .await;
        };
        // Without a token yet the request goes bare: some servers let
        // `initialize` through, and a refusal says what to do.
        // Getting a token (a refresh, a client-credentials grant with its
        // discovery) is bounded by the upstream's own timeout.
        let token = tokio::time::timeout(self.wire.timeout, tokens.token())
            .await
            .ok()
            .and_then(Result::ok);
        let resp = self
            .send_once(
                method.clone(),
                body.clone(),
                extra,
                last_event_id,
                token.as_deref(),
            )
            .await?;
        let status = resp.status();
        if status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN {
            return Ok(resp);
        }
        let challenge = resp
            .headers()
            .get(http::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        use manifold_credentials::Refusal;
        match tokens
            .refused(token.as_deref(), status.as_u16(), challenge.as_deref())
            .await
        {
            Refusal::Retry => {
                // Bounded like the first; its failure (a refused refresh, a
                // credential request the gateway would not send) is the reason.
                let token = match tokio::time::timeout(self.wire.timeout, tokens.token()).await {
                    Ok(Ok(t)) => t,
                    Ok(Err(e)) => return Err(self.needs_login(e.to_string())),
                    Err(_) => {
                        return Err(UpstreamError::unavailable(
                            name,
                            format!("getting a token took longer than {:?}", self.wire.timeout),
                        ))
                    }
                };
                let resp = self
                    .send_once(method, body, extra, last_event_id, Some(&token))
                    .await?;
                let status = resp.status();
                if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
                    return Err(self.needs_login(format!(
                        "the upstream refused a fresh token too (HTTP {status}); run `manifold login {name}`"
                    )));
                }
                Ok(resp)
            }
            Refusal::NeedsLogin(why) => Err(self.needs_login(why)),
            Refusal::StepUp(why) => Err(UpstreamError::needs_login(name, why, true)),
            Refusal::Final(why) => Err(UpstreamError::unavailable(name, why)),
        }
    }

    /// The credentials are no good for any request: the connection is
    /// closed, so the supervisor reconnects and reports `needs_login` until a
    /// login gives it a token the upstream takes.
    fn needs_login(&self, why: String) -> UpstreamError {
        self.wire.closed.cancel();
        UpstreamError::needs_login(self.wire.upstream(), why, false)
    }

    async fn send_once(
        &self,
        method: Method,
        body: Option<Bytes>,
        extra: &[(String, String)],
        last_event_id: Option<&str>,
        token: Option<&str>,
    ) -> Result<http::Response<hyper::body::Incoming>, UpstreamError> {
        let name = self.wire.upstream();
        let req = self
            .request(method, body, extra, last_event_id, token)
            .map_err(|e| UpstreamError::protocol(name, e))?;
        let resp = self.client.request(req).await.map_err(|e| {
            UpstreamError::unavailable(
                name,
                format!("HTTP request to {} failed: {}", self.url, with_causes(&e)),
            )
        })?;
        // A stateless (2026-07-28) exchange has no session, whatever is sent.
        let stateful = !self.wire.is_modern();
        if let Some(id) = resp
            .headers()
            .get(m::HEADER_SESSION_ID)
            .and_then(|v| v.to_str().ok())
            .filter(|_| stateful)
        {
            let mut cur = lock(&self.session_id);
            if cur.as_deref() != Some(id) {
                *cur = Some(id.to_string());
            }
        }
        Ok(resp)
    }

    /// POSTs a notification or response; the upstream answers 202.
    async fn post_message(&self, bytes: Vec<u8>) -> Result<(), UpstreamError> {
        let resp = self.send(Method::POST, Some(bytes), &[], None).await?;
        if !resp.status().is_success() {
            return Err(UpstreamError::protocol(
                self.wire.upstream(),
                format!("answered {} to a notification", resp.status()),
            ));
        }
        Ok(())
    }

    /// Ends the upstream session (DELETE), best effort.
    async fn shutdown(&self) {
        if lock(&self.session_id).is_none() {
            return;
        }
        let del = self.send(Method::DELETE, None, &[], None);
        let _ = tokio::time::timeout(Duration::from_secs(2), del).await;
    }

    /// Starts a new upstream session after the upstream forgot ours (404).
    async fn reinitialize(&self, stale: Option<String>) -> Result<(), UpstreamError> {
        let _guard = self.reinit.lock().await;
        if *lock(&self.session_id) != stale {
            return Ok(()); // someone else already did
        }
        tracing::info!(upstream = %self.wire.upstream(), "upstream session expired (404); re-initializing");
        *lock(&self.session_id) = None;
        self.wire.reinitialize().await
    }
}

/// The work of one POST: send it, read the reply (JSON or SSE), dispatch what comes
/// back. The call polls this future inline, so a forwarded call costs no extra
/// task and no cross-thread hand-off; dropping the call aborts it.
async fn drive_call(l: Arc<HttpLink>, out: Outgoing) {
    let limit = out.timeout + STREAM_GRACE;
    let wire = l.wire.clone();
    let id = out.id;
    let run = run_call(&l, id, &out.method, out.bytes, &out.headers);
    tokio::select! {
        // The connection's end fails every call; nothing more to read.
        _ = wire.closed.cancelled() => {}
        res = tokio::time::timeout(limit, run) => match res {
            Ok(Ok(())) => {}
            Ok(Err(e)) => wire.router.fail(id, e),
            Err(_) => wire.router.fail(
                id,
                UpstreamError::Timeout {
                    upstream: wire.upstream().to_string(),
                    timeout: limit,
                },
            ),
        }
    }
}

async fn run_call(
    l: &Arc<HttpLink>,
    id: u64,
    method: &str,
    bytes: Vec<u8>,
    headers: &[(String, String)],
) -> Result<(), UpstreamError> {
    let session = &l.wire;
    let name = session.upstream().clone();
    let sent_session = lock(&l.session_id).clone();
    let in_session = sent_session.is_some();
    // A failure of Manifold's own probe settles it: reconnect (with backoff, and
    // a new era probe). A failure of any other request is that request's, until a
    // probe says the session itself is gone: one client's bad request never
    // resets an upstream every client shares.
    let probe = is_probe(method);
    let doubt = |why: &str| {
        if probe {
            tracing::warn!(upstream = %name, why, "the upstream failed Manifold's probe; reconnecting");
            session.closed.cancel();
        } else {
            check_session(l);
        }
    };
    let mut resp = l
        .send(Method::POST, Some(bytes.clone()), headers, None)
        .await
        .inspect_err(|e| doubt(&e.to_string()))?;
    if resp.status() == StatusCode::NOT_FOUND && sent_session.is_some() && method != m::INITIALIZE {
        l.reinitialize(sent_session).await.inspect_err(|_| {
            // It may have been re-deployed as another era: reconnect and probe.
            session.closed.cancel();
        })?;
        resp = l.send(Method::POST, Some(bytes), headers, None).await?;
    }
    let modern = session.is_modern();
    read_reply(l, resp, id).await.map_err(|e| match e {
        ReplyError::Upstream(e) => e,
        // Credentials are the operator's to fix (`headers` in the config), not a
        // protocol fault of the upstream.
        ReplyError::Status(code, _)
            if code == StatusCode::UNAUTHORIZED || code == StatusCode::FORBIDDEN =>
        {
            if on_behalf(headers) {
                UpstreamError::unavailable(
                    &name,
                    format!("the upstream refused the token exchanged for this caller (HTTP {code})"),
                )
            } else {
                UpstreamError::unavailable(
                    &name,
                    format!("authorization required (HTTP {code}); check the upstream's `headers` (or `auth`) in the configuration"),
                )
            }
        }
        ReplyError::Status(code, body)
            if (modern && code.is_client_error()) || (in_session && code == StatusCode::BAD_REQUEST) =>
        {
            // Not a JSON-RPC answer: about this request alone (too large, refused
            // by a proxy or the server's validation), or about the session (an
            // upstream re-deployed in the other era refuses everything). A probe
            // tells which; Manifold's own probe refused means the latter.
            doubt(&format!("HTTP {code}"));
            if probe {
                UpstreamError::unavailable(&name, format!("it refused Manifold's probe (HTTP {code}); reconnecting"))
            } else {
                UpstreamError::protocol(
                    &name,
                    format!("HTTP {code}: {}", body.chars().take(300).collect::<String>()),
                )
            }
        }
        ReplyError::Status(code, body) => UpstreamError::protocol(
            &name,
            format!(
                "HTTP {code}: {}",
                body.chars().take(300).collect::<String>()
            ),
        ),
    })
}

/// Sends one `ping` in the session (at most one at a time); its refusal with 400
/// reconnects (see `run_call`).
fn check_session(l: &Arc<HttpLink>) {
    if l.checking.swap(true, Ordering::AcqRel) {
        return;
    }
    let l = l.clone();
    l.wire.clone().spawn_owned(async move {
        let wire = l.wire.clone();
        let timeout = wire.timeout.min(crate::PROBE_TIMEOUT);
        let (method, headers, mut msg) = probe_message(&wire);
        if let Ok(mut reg) = wire.router.register(&mut msg) {
            let bytes = serde_json::to_vec(&msg).unwrap_or_default();
            let probe = run_call(&l, reg.id, method, bytes, &headers);
            let answered = tokio::time::timeout(timeout, probe).await.is_ok();
            wire.router.forget(reg.id);
            // A 2026-07-28 upstream must still discover as one; anything else (a
            // legacy server's error, say) means it was re-deployed: reconnect,
            // which probes its era again.
            if answered && method == m::SERVER_DISCOVER && !still_modern(&wire, reg.done.try_recv().ok()) {
                tracing::warn!(upstream = %wire.upstream(),
                    "the upstream no longer discovers as 2026-07-28; reconnecting to probe its era again");
                wire.closed.cancel();
            }
        }
        l.checking.store(false, Ordering::Release);
    });
}

/// Whether a `server/discover` answer leaves the connection as it is: a result
/// that still lists the revision the connection speaks, or an error other than
/// "method not found" (a transient failure is not a re-deployment).
fn still_modern(wire: &Wire, outcome: Option<crate::CallOutcome>) -> bool {
    let raw = match outcome {
        Some(crate::CallOutcome::Result(raw)) => raw,
        Some(crate::CallOutcome::Error(e)) => {
            #[derive(serde::Deserialize)]
            struct Code {
                code: i64,
            }
            return serde_json::from_str::<Code>(e.get()).map_or(true, |c| {
                c.code != manifold_protocol::ErrorCode::METHOD_NOT_FOUND.0
            });
        }
        _ => return true,
    };
    let Some(version) = wire.protocol_version.get() else {
        return false;
    };
    serde_json::from_str::<serde_json::Value>(raw.get())
        .ok()
        .and_then(|v| v.get("supportedVersions").cloned())
        .and_then(|v| v.as_array().cloned())
        .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(version.as_str())))
}

/// Manifold's own check that its session still holds: `ping` in the session era,
/// `server/discover` in 2026-07-28 (which has no ping).
fn is_probe(method: &str) -> bool {
    method == m::PING || method == m::SERVER_DISCOVER
}

/// The probe request for the era the connection speaks: method, headers, message.
fn probe_message(
    wire: &Wire,
) -> (
    &'static str,
    Vec<(String, String)>,
    serde_json::Map<String, serde_json::Value>,
) {
    let mut msg = serde_json::Map::new();
    msg.insert("jsonrpc".into(), "2.0".into());
    msg.insert("id".into(), serde_json::Value::Null);
    let version = wire.protocol_version.get().filter(|_| wire.is_modern());
    let method = if version.is_some() {
        m::SERVER_DISCOVER
    } else {
        m::PING
    };
    msg.insert("method".into(), method.into());
    if let Some(v) = version {
        let meta = crate::wire::request_meta(v, None);
        msg.insert("params".into(), serde_json::json!({"_meta": meta}));
    }
    let headers = vec![(m::HEADER_METHOD.to_string(), method.to_string())];
    (method, headers, msg)
}

const UNSUPPORTED_VERSION: i64 = manifold_protocol::ErrorCode::UNSUPPORTED_PROTOCOL_VERSION.0;

/// The `error.code` of a JSON-RPC error message, parsed (never a substring
/// search: an upstream that echoes client input must not steer Manifold).
fn error_code(text: &str) -> Option<i64> {
    #[derive(serde::Deserialize)]
    struct Err {
        code: i64,
    }
    #[derive(serde::Deserialize)]
    struct Msg {
        error: Err,
    }
    serde_json::from_str::<Msg>(text).ok().map(|m| m.error.code)
}

enum ReplyError {
    Upstream(UpstreamError),
    Status(StatusCode, String),
}

async fn read_reply(
    l: &Arc<HttpLink>,
    resp: http::Response<hyper::body::Incoming>,
    id: u64,
) -> Result<(), ReplyError> {
    let session = &l.wire;
    let name = session.upstream().clone();
    let status = resp.status();
    let ctype = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if !status.is_success() {
        let body = Limited::new(resp.into_body(), 64 * 1024)
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        // A JSON-RPC error body with our id still answers the call.
        let text = String::from_utf8_lossy(&body).to_string();
        if ctype.starts_with(m::CONTENT_TYPE_JSON) && text.contains("\"error\"") {
            if session.is_modern() && error_code(&text) == Some(UNSUPPORTED_VERSION) {
                // Our revision is no longer supported: re-probe after this answer.
                tracing::warn!(upstream = %name, "the upstream no longer supports Manifold's 2026-07-28 requests (-32022); reconnecting to probe again");
                session.closed.cancel();
            }
            session.dispatch(&text, Source::Call(id), &l.outbound());
            if !session.router.is_pending(id) {
                return Ok(());
            }
        }
        return Err(ReplyError::Status(status, text));
    }
    if ctype.starts_with(m::CONTENT_TYPE_SSE) {
        return read_sse(l, resp.into_body(), Some(id))
            .await
            .map_err(ReplyError::Upstream);
    }
    let body = Limited::new(resp.into_body(), l.max_message)
        .collect()
        .await
        .map_err(|e| {
            ReplyError::Upstream(UpstreamError::protocol(
                &name,
                format!("reading the reply failed: {e}"),
            ))
        })?
        .to_bytes();
    let text = std::str::from_utf8(&body).map_err(|_| {
        ReplyError::Upstream(UpstreamError::protocol(&name, "the reply is not UTF-8"))
    })?;
    if !text.trim().is_empty() {
        session.dispatch(text, Source::Call(id), &l.outbound());
    }
    if session.router.is_pending(id) {
        return Err(ReplyError::Upstream(UpstreamError::protocol(
            &name,
            "the reply did not answer the request",
        )));
    }
    Ok(())
}

/// Reads an SSE reply until the call's response arrives, resuming with
/// `Last-Event-ID` when the upstream closes the stream early (SEP-1699 polling).
async fn read_sse(
    l: &Arc<HttpLink>,
    mut body: hyper::body::Incoming,
    context: Option<u64>,
) -> Result<(), UpstreamError> {
    let session = &l.wire;
    let name = session.upstream().clone();
    let out = l.outbound();
    let mut decoder = SseDecoder::new(l.max_message);
    let mut resumptions = 0;
    let mut retry = Duration::from_millis(100);
    loop {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                UpstreamError::protocol(&name, format!("the SSE stream failed: {e}"))
            })?;
            let Ok(chunk) = frame.into_data() else {
                continue;
            };
            let events = decoder
                .feed(&chunk)
                .map_err(|e| UpstreamError::protocol(&name, e.to_string()))?;
            for ev in events {
                if let Some(r) = ev.retry {
                    retry = Duration::from_millis(r).min(MAX_RETRY_DELAY);
                }
                if ev.data.is_empty() {
                    continue; // priming event or keep-alive
                }
                let source = context.map_or(Source::Standalone, Source::Call);
                session.dispatch(&ev.data, source, &out);
            }
            if let Some(id) = context {
                if !session.router.is_pending(id) {
                    return Ok(());
                }
            }
        }
        let Some(id) = context else { return Ok(()) };
        if !session.router.is_pending(id) {
            return Ok(());
        }
        let Some(last) = decoder.last_event_id().map(str::to_string) else {
            return Err(UpstreamError::protocol(
                &name,
                "the SSE stream ended before the response",
            ));
        };
        if resumptions >= MAX_RESUMPTIONS {
            return Err(UpstreamError::protocol(
                &name,
                "the SSE stream kept ending before the response",
            ));
        }
        resumptions += 1;
        tokio::time::sleep(retry).await;
        let resp = l.send(Method::GET, None, &[], Some(&last)).await?;
        if !resp.status().is_success() {
            return Err(UpstreamError::protocol(
                &name,
                format!("resuming the SSE stream got HTTP {}", resp.status()),
            ));
        }
        body = resp.into_body();
    }
}

/// Keeps the upstream's GET stream open for notifications outside any call
/// (`list_changed`), reconnecting with backoff while the session lives.
/// Whether a request carries its caller's own (exchanged) token.
fn on_behalf(extra: &[(String, String)]) -> bool {
    extra
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case(http::header::AUTHORIZATION.as_str()))
}

fn start_get_stream(link: &Arc<HttpLink>) {
    let l = link.clone();
    link.wire.spawn_owned(async move {
        let s = l.wire.clone();
        // Reconnect delay after the upstream closes the GET stream; a stream that ends
        // at once every time is retried at most every few seconds.
        let mut backoff = Duration::from_millis(500);
        loop {
            let opened = tokio::time::Instant::now();
            let resp = match l.send(Method::GET, None, &[], None).await {
                Ok(r) => r,
                Err(_) => return, // the supervisor notices the outage on the next call
            };
            let ok_sse = resp.status().is_success()
                && resp
                    .headers()
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|c| c.starts_with(m::CONTENT_TYPE_SSE));
            if !ok_sse {
                tracing::debug!(upstream = %s.upstream(), status = %resp.status(), "upstream offers no GET stream");
                return;
            }
            if let Err(e) = read_sse(&l, resp.into_body(), None).await {
                tracing::debug!(upstream = %s.upstream(), error = %e, "upstream GET stream ended");
            }
            if opened.elapsed() > Duration::from_secs(30) {
                backoff = Duration::from_millis(500);
            }
            tokio::time::sleep(backoff).await;
            backoff = (backoff * 2).min(Duration::from_secs(30));
        }
    });
}
