//! Streamable-HTTP upstreams: the session era (2025-03-26 … 2025-11-25, an
//! `Mcp-Session-Id`) and 2026-07-28 (stateless: no session, `_meta` on every
//! request, cancellation by closing the response stream).
//!
//! Each request is its own POST; the reply is JSON or an SSE stream carrying related
//! notifications and server→client requests before the response. One concept a file:
//! - `link`: what the transport's exchanges share (`HttpLink`);
//! - `client`: one HTTP request built and sent with its credentials (a bearer
//!   token asked again once on a 401/403 that says it is stale, a caller's
//!   exchanged token as it comes), and TLS;
//! - `session`: the work of one POST in the upstream's session — its
//!   `Mcp-Session-Id` (kept private, never shown to clients), a transparent
//!   re-`initialize` when the upstream answers 404 for it, a check (the era
//!   probe, `crate::probe`) when a request fails, DELETE on shutdown;
//! - `reply`: decoding the answer, JSON or SSE (priming events, server-initiated
//!   disconnects resumed with GET + `Last-Event-ID`);
//! - `get_stream`: the GET stream for notifications outside any call.
//!
//! Connections are pooled and reused by hyper's client (manifold-foundation's
//! bounded client).
//!
//! Not here: the `initialize` handshake a 404 calls for (the wire's re-initialize
//! hook, set by the upstream actor), what the messages mean (`wire`, `router`),
//! what the era probe's answers mean (`crate::probe`).

mod client;
mod get_stream;
mod link;
mod reply;
mod session;

use http::{HeaderMap, HeaderName, HeaderValue};
use manifold_config::{LimitsConfig, Transport as Configured, UpstreamConfig};
use manifold_foundation::http as http_client;
use manifold_foundation::redact;
use parking_lot::Mutex;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::{Driver, Ended, Outgoing, Transport};
use crate::error::UpstreamError;
use crate::message::{BoxFuture, Outbound};
use crate::wire::Wire;
use link::HttpLink;

/// How long an idle pooled connection to the upstream is kept.
pub const POOL_IDLE: Duration = Duration::from_secs(60);

/// The HTTP transport: cheap handle over the shared state its exchanges and
/// responders hold.
pub(crate) struct HttpTransport(Arc<HttpLink>);

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
    let uri: http::Uri = url.parse().map_err(|e| {
        UpstreamError::unavailable(&cfg.name, format!("bad url {}: {e}", redact::url(url)))
    })?;
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
    let mut options = http_client::Options::new(limits.connect_timeout);
    options.tls =
        Some(client::client_tls(tls).map_err(|e| UpstreamError::unavailable(&cfg.name, e))?);
    options.http2 = true;
    // Requests are small and latency-bound: send each segment at once (no Nagle).
    options.nodelay = true;
    options.pool_idle = Some(POOL_IDLE);
    let client = http_client::client(&options);
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

impl Outbound for HttpTransport {
    fn send_message(&self, bytes: Vec<u8>) -> BoxFuture<'_, ()> {
        self.0.send_message(bytes)
    }
}

impl Transport for HttpTransport {
    fn request(&self, out: Outgoing) -> BoxFuture<'_, Result<Option<Driver>, UpstreamError>> {
        let driver: Driver = Box::pin(session::drive_call(self.0.clone(), out));
        Box::pin(async move { Ok(Some(driver)) })
    }

    fn cancels_by_closing(&self) -> bool {
        // 2026-07-28 HTTP has no client notifications: the caller closes the
        // response stream instead (dropping the exchange does).
        self.0.wire.is_stateless()
    }

    fn initialized(&self) {
        get_stream::start(&self.0);
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
