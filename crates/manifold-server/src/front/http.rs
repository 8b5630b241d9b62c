//! The HTTP front door: the accept loop, the MCP endpoint's POST/GET/DELETE,
//! Origin and Host validation (DNS rebinding), content type, Accept and body
//! limits — generic HTTP concerns, before the pipeline — and the framing of every
//! [`Reply`] as an HTTP response (a JSON body, or an SSE stream).
//!
//! Invariants: MCP semantics are never decided here (the pipeline does); every
//! connection task ends with the gateway's shutdown (gracefully, bounded).
//!
//! It also routes the listener's two non-MCP surfaces before the endpoint:
//! the server cards (`crate::card`, open like the protected resource
//! metadata) and the connect pages of per-caller accounts (`crate::connect`,
//! Host checked as for the endpoint).
//!
//! Not here: the admin listener (`admin`), sessions and eras (the pipeline).

use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use manifold_protocol::methods as m;
use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

use super::sse::{self, Body, SseBody};
use super::{auth, origin};
use crate::era::Era;
use crate::pipeline;
use crate::refusal::Refusal;
use crate::reply::Reply;
use crate::request::{Accepts, Arrival, Front};
use crate::state::Gateway;

/// Idle time before TCP keepalive probes a client connection (a peer that
/// vanished without a FIN is noticed instead of holding its connection).
pub const TCP_KEEPALIVE: Duration = Duration::from_secs(60);

/// The connection builder: HTTP/1.1 and HTTP/2, with hyper's timers armed so the
/// header read timeout holds (without a timer hyper silently ignores it).
pub(crate) fn builder(limits: &manifold_config::LimitsConfig) -> auto::Builder<TokioExecutor> {
    let mut b = auto::Builder::new(TokioExecutor::new());
    b.http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout);
    b.http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(TCP_KEEPALIVE);
    b
}

/// Serves the MCP endpoint until shutdown begins, then lets open connections
/// finish their requests (for at most `server.shutdown_grace`). At most
/// `limits.max_connections` are open at once; beyond, new ones wait in the
/// listen backlog.
pub(crate) async fn serve(
    gw: Arc<Gateway>,
    listener: TcpListener,
    tls: Option<Arc<super::tls::Tls>>,
) {
    let builder = Arc::new(builder(&gw.cfg().limits));
    let conns = tokio_util::task::TaskTracker::new();
    let slots = Arc::new(tokio::sync::Semaphore::new(gw.cfg().limits.max_connections));
    loop {
        let slot = tokio::select! {
            _ = gw.life.shutdown.cancelled() => break,
            s = slots.clone().acquire_owned() => s,
        };
        let Ok(slot) = slot else { break };
        let accepted = tokio::select! {
            _ = gw.life.shutdown.cancelled() => break,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // EMFILE and friends: back off briefly instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let keepalive = socket2::TcpKeepalive::new().with_time(TCP_KEEPALIVE);
        let _ = socket2::SockRef::from(&stream).set_tcp_keepalive(&keepalive);
        let gw = gw.clone();
        let builder = builder.clone();
        let shutdown = gw.life.shutdown.clone();
        let grace = gw.cfg().server.shutdown_grace;
        let first_bytes = gw.cfg().limits.header_read_timeout;
        let tls = tls.clone();
        conns.spawn(async move {
            let _slot = slot;
            if !speaks_first(&stream, first_bytes).await {
                tracing::debug!(%peer, "connection closed: nothing (or only a preface fragment) sent within limits.header_read_timeout");
                return;
            }
            let served = Served { gw, builder, shutdown, grace, peer };
            match tls {
                None => served.run(stream, None).await,
                Some(tls) => match tls.accept(stream, first_bytes).await {
                    Ok((stream, identity)) => served.run(stream, identity).await,
                    Err(e) => tracing::debug!(%peer, error = %e, "connection closed"),
                },
            }
        });
    }
    // Listen streams never end on their own: close them with their final result
    // so the connections can finish gracefully.
    let ended = gw.tables.listeners.end_all();
    tracing::debug!(listens = ended, "ended the subscriptions/listen streams");
    conns.close();
    let grace = gw.cfg().server.shutdown_grace;
    let _ = tokio::time::timeout(grace + Duration::from_secs(1), conns.wait()).await;
}

/// One accepted connection, served until it ends or shutdown's grace is over.
struct Served {
    gw: Arc<Gateway>,
    builder: Arc<auto::Builder<TokioExecutor>>,
    shutdown: tokio_util::sync::CancellationToken,
    grace: Duration,
    peer: std::net::SocketAddr,
}

impl Served {
    /// `identity`: who the connection's client certificate names, if any.
    async fn run<IO>(self, io: IO, identity: Option<Arc<manifold_policy::Identity>>)
    where
        IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (gw, peer) = (self.gw, self.peer);
        let svc = service_fn(move |req| {
            let (gw, identity) = (gw.clone(), identity.clone());
            async move { Ok::<_, Infallible>(handle(gw, req, peer.ip(), identity).await) }
        });
        let conn = self
            .builder
            .serve_connection_with_upgrades(TokioIo::new(io), svc);
        tokio::pin!(conn);
        tokio::select! {
            res = conn.as_mut() => {
                if let Err(e) = res {
                    tracing::debug!(%peer, error = %e, "connection ended with an error");
                }
            }
            _ = self.shutdown.cancelled() => {
                conn.as_mut().graceful_shutdown();
                let _ = tokio::time::timeout(self.grace, conn).await;
            }
        }
    }
}

/// The HTTP/2 connection preface: hyper's protocol detection reads up to it
/// with no deadline of its own.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// Whether the client sends enough to tell HTTP/1 from HTTP/2 within `limit`.
/// A socket that connects and sends nothing (or a preface fragment, then
/// nothing) would otherwise hold its connection slot for ever: hyper's header
/// timeout starts only once the protocol is known.
async fn speaks_first(stream: &tokio::net::TcpStream, limit: Duration) -> bool {
    let check = async {
        let mut buf = [0u8; H2_PREFACE.len()];
        loop {
            match stream.peek(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) if n == buf.len() || !H2_PREFACE.starts_with(&buf[..n]) => return true,
                // A fragment of the preface: peek returns at once while it is
                // all there is, so wait a little before looking again.
                Ok(_) => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        }
    };
    tokio::time::timeout(limit, check).await.unwrap_or(false)
}

/// Frames a reply as an HTTP response.
pub(crate) fn respond(reply: Reply) -> Response<Body> {
    match reply {
        Reply::Message {
            status,
            bytes,
            session,
            retry_after,
            ..
        } => {
            let mut b = Response::builder()
                .status(status)
                .header(http::header::CONTENT_TYPE, m::CONTENT_TYPE_JSON);
            if let Some(s) = session {
                b = b.header(m::HEADER_SESSION_ID, s);
            }
            if let Some(wait) = retry_after {
                // Whole seconds, rounded up (RFC 9110); never 0 for a wait.
                let secs = wait.as_millis().div_ceil(1000).max(1);
                b = b.header(http::header::RETRY_AFTER, secs.to_string());
            }
            b.body(sse::full(bytes))
                .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR))
        }
        Reply::Stream(rx) => Response::builder()
            .status(StatusCode::OK)
            .header(http::header::CONTENT_TYPE, m::CONTENT_TYPE_SSE)
            .header(http::header::CACHE_CONTROL, "no-cache")
            // Reverse proxies (nginx) must not buffer the stream.
            .header("x-accel-buffering", "no")
            .body(SseBody::boxed(rx))
            .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR)),
        Reply::Accepted => plain(StatusCode::ACCEPTED),
        Reply::Ended => plain(StatusCode::OK),
    }
}

fn plain(status: StatusCode) -> Response<Body> {
    let mut r = Response::new(sse::empty());
    *r.status_mut() = status;
    r
}

/// A refusal of the HTTP request itself (no JSON-RPC id is known yet).
fn refuse(r: Refusal) -> Response<Body> {
    respond(r.reply(None, Era::Session))
}

async fn handle(
    gw: Arc<Gateway>,
    req: Request<Incoming>,
    peer: IpAddr,
    certified: Option<Arc<manifold_policy::Identity>>,
) -> Response<Body> {
    if req.method() == Method::GET {
        if let Some(e) = auth::metadata_of(&gw, req.headers(), req.uri().path()) {
            return auth::metadata(&gw, req.headers(), &e);
        }
        // Open like the metadata: public by design (SEP-2127).
        if let Some(e) = crate::card::card_of(&gw, req.uri().path()) {
            return crate::card::serve(&gw, req.headers(), &e);
        }
    }
    // The connect pages of per-caller accounts: Host checked as for the
    // endpoint; their POSTs' Origin is checked against the public URL there.
    if let Some(id) = crate::connect::owns(&gw, req.uri().path()) {
        let mut h = req.headers().clone();
        h.remove(http::header::ORIGIN);
        if let Err(r) = check_origin_and_host(&gw, &h, req.uri().authority().map(|a| a.as_str())) {
            return refuse(r);
        }
        return crate::connect::handle(&gw, req, id).await;
    }
    // The default endpoint or an `[[endpoint]]`; anything else speaks no JSON-RPC.
    let Some(endpoint) = gw.live().endpoints.at(req.uri().path()).cloned() else {
        return plain(StatusCode::NOT_FOUND);
    };
    let authority = req.uri().authority().map(|a| a.as_str());
    if let Err(r) = check_origin_and_host(&gw, req.headers(), authority) {
        return refuse(r);
    }
    // Who is calling, before the body is read.
    let identity = match auth::authenticate(&gw, req.headers(), certified, &endpoint, peer).await {
        Ok(id) => id,
        Err(refusal) => return refusal,
    };
    let accepts = accepts(req.headers());
    let from = Peer {
        peer,
        identity,
        endpoint: endpoint.path.clone(),
    };
    match *req.method() {
        Method::POST => post(gw, req, accepts, from).await,
        Method::GET => {
            // GET opens a stream and nothing else: the client must say it takes one.
            let accept = req
                .headers()
                .get(http::header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_ascii_lowercase();
            if !accept.contains(m::CONTENT_TYPE_SSE) && !accept.contains("*/*") {
                return refuse(Refusal::StreamNotAcceptable);
            }
            let arrival = arrival(&gw, req.headers().clone(), 0, accepts, from);
            respond(pipeline::open_stream(&gw, &arrival))
        }
        Method::DELETE => {
            let arrival = arrival(&gw, req.headers().clone(), 0, accepts, from);
            respond(pipeline::end_session(&gw, &arrival))
        }
        _ => {
            let mut r = refuse(Refusal::HttpMethodNotAllowed);
            r.headers_mut().insert(
                http::header::ALLOW,
                http::HeaderValue::from_static("GET, POST, DELETE"),
            );
            r
        }
    }
}

/// What the client's `Accept` allows. No header means anything.
fn accepts(headers: &HeaderMap) -> Accepts {
    let accept = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("*/*")
        .to_ascii_lowercase();
    Accepts {
        json: accept.contains(m::CONTENT_TYPE_JSON)
            || accept.contains("*/*")
            || accept.contains("application/*"),
        stream: accept.contains(m::CONTENT_TYPE_SSE) || accept.contains("*/*"),
    }
}

/// Where a request came from: the client's address and who it proved to be.
struct Peer {
    peer: IpAddr,
    identity: Option<Arc<manifold_policy::Identity>>,
    /// The endpoint's path.
    endpoint: Arc<str>,
}

fn arrival(
    gw: &Gateway,
    headers: HeaderMap,
    bytes: usize,
    accepts: Accepts,
    from: Peer,
) -> Arrival {
    Arrival {
        request_id: gw.request_id(),
        bytes,
        front: Front::Http(headers),
        identity: from.identity,
        peer: Some(from.peer),
        endpoint: from.endpoint,
        accepts,
    }
}

async fn post(
    gw: Arc<Gateway>,
    req: Request<Incoming>,
    accepts: Accepts,
    from: Peer,
) -> Response<Body> {
    let ctype = req
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !ctype.to_ascii_lowercase().starts_with(m::CONTENT_TYPE_JSON) {
        return refuse(Refusal::UnsupportedMediaType);
    }
    if !accepts.json && !accepts.stream {
        return refuse(Refusal::NotAcceptable);
    }
    let (parts, body) = req.into_parts();
    let limit = gw.cfg().limits.max_body_bytes;
    let deadline = gw.cfg().limits.body_read_timeout;
    let read = tokio::time::timeout(deadline, Limited::new(body, limit).collect()).await;
    let Ok(read) = read else {
        return refuse(Refusal::BodyTimeout(deadline));
    };
    let bytes = match read {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                return refuse(Refusal::BodyTooLarge { limit });
            }
            return refuse(Refusal::BodyUnreadable);
        }
    };
    let arrival = arrival(&gw, parts.headers, bytes.len(), accepts, from);
    respond(pipeline::serve(&gw, arrival, &bytes).await)
}

/// DNS-rebinding protection with `[server]`'s rules (see `origin`). The
/// listener's address is the one in force (a reload cannot move it).
fn check_origin_and_host(
    gw: &Gateway,
    headers: &HeaderMap,
    authority: Option<&str>,
) -> Result<(), Refusal> {
    let cfg = &gw.cfg().server;
    let rules = origin::Rules {
        loopback_listener: gw.listening_on().ip().is_loopback(),
        allowed_hosts: &cfg.allowed_hosts,
        allowed_origins: &cfg.allowed_origins,
        literal_hosts: false,
    };
    origin::check(&rules, headers, authority).map_err(|r| match r {
        origin::Rejected::HostNotAllowed(host) => Refusal::HostNotAllowed { host },
        origin::Rejected::HostNotListed(host) => Refusal::HostNotListed { host },
        origin::Rejected::OriginNotAllowed(origin) => Refusal::OriginNotAllowed { origin },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_headers_decide_the_response_forms() {
        let h = |v: Option<&str>| {
            let mut m = HeaderMap::new();
            if let Some(v) = v {
                m.insert(http::header::ACCEPT, v.parse().unwrap());
            }
            accepts(&m)
        };
        let both = Accepts {
            json: true,
            stream: true,
        };
        assert_eq!(h(None), both);
        assert_eq!(h(Some("application/json, text/event-stream")), both);
        assert_eq!(
            h(Some("application/json")),
            Accepts {
                json: true,
                stream: false
            }
        );
        assert_eq!(
            h(Some("text/event-stream")),
            Accepts {
                json: false,
                stream: true
            }
        );
        assert_eq!(
            h(Some("text/html")),
            Accepts {
                json: false,
                stream: false
            }
        );
    }
}
