//! The HTTP front door: accept loop, the MCP endpoint's POST/GET/DELETE, Origin and
//! Host validation, body limits. Generic HTTP concerns live here; MCP semantics are
//! in `pipeline`.

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use manifold_protocol::methods as m;
use manifold_protocol::{jsonrpc, ErrorCode, RpcError};
use std::convert::Infallible;
use std::sync::Arc;
use tokio::net::TcpListener;

use crate::body::{self, Body};
use crate::Gateway;

pub(crate) async fn serve(gw: Arc<Gateway>, listener: TcpListener) {
    let builder = Arc::new(auto::Builder::new(TokioExecutor::new()));
    let conns = tokio_util::task::TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            _ = gw.shutdown.cancelled() => break,
            a = listener.accept() => a,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                // EMFILE and friends: back off briefly instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let gw = gw.clone();
        let builder = builder.clone();
        let shutdown = gw.shutdown.clone();
        conns.spawn(async move {
            let svc = service_fn(move |req| {
                let gw = gw.clone();
                async move { Ok::<_, Infallible>(handle(gw, req).await) }
            });
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(stream), svc);
            tokio::pin!(conn);
            tokio::select! {
                res = conn.as_mut() => {
                    if let Err(e) = res {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                }
                _ = shutdown.cancelled() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), conn).await;
                }
            }
        });
    }
    // Listen streams never end on their own: close them with their final result
    // so the connections can finish gracefully.
    let ended = crate::listen::end_all(&gw);
    tracing::debug!(listens = ended, "ended the subscriptions/listen streams");
    conns.close();
    let _ = tokio::time::timeout(std::time::Duration::from_secs(6), conns.wait()).await;
}

/// A complete response carrying a JSON-RPC error.
pub(crate) fn rpc_error(
    status: StatusCode,
    id: Option<&manifold_protocol::RequestId>,
    err: &RpcError,
) -> Response<Body> {
    json_response(status, jsonrpc::error_bytes(id, err), None)
}

pub(crate) fn json_response(
    status: StatusCode,
    bytes: Vec<u8>,
    session: Option<&str>,
) -> Response<Body> {
    let mut b = Response::builder()
        .status(status)
        .header(http::header::CONTENT_TYPE, m::CONTENT_TYPE_JSON);
    if let Some(s) = session {
        b = b.header(m::HEADER_SESSION_ID, s);
    }
    b.body(body::full(bytes))
        .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR))
}

pub(crate) fn plain(status: StatusCode) -> Response<Body> {
    let mut r = Response::new(body::empty());
    *r.status_mut() = status;
    r
}

pub(crate) fn sse_response(
    rx: tokio::sync::mpsc::Receiver<Bytes>,
    session: Option<&str>,
) -> Response<Body> {
    let mut b = Response::builder()
        .status(StatusCode::OK)
        .header(http::header::CONTENT_TYPE, m::CONTENT_TYPE_SSE)
        .header(http::header::CACHE_CONTROL, "no-cache")
        // Reverse proxies (nginx) must not buffer the stream.
        .header("x-accel-buffering", "no");
    if let Some(s) = session {
        b = b.header(m::HEADER_SESSION_ID, s);
    }
    b.body(body::SseBody::boxed(rx))
        .unwrap_or_else(|_| plain(StatusCode::INTERNAL_SERVER_ERROR))
}

fn bad(status: StatusCode, message: &str) -> Response<Body> {
    rpc_error(status, None, &RpcError::invalid_request(message))
}

async fn handle(gw: Arc<Gateway>, req: Request<Incoming>) -> Response<Body> {
    if req.uri().path() != gw.config.server.path {
        return plain(StatusCode::NOT_FOUND);
    }
    if let Err(resp) = check_origin_and_host(&gw, req.headers()) {
        return resp;
    }
    match *req.method() {
        Method::POST => post(gw, req).await,
        Method::GET => crate::pipeline::open_get_stream(&gw, req.headers()),
        Method::DELETE => crate::pipeline::delete_session(&gw, req.headers()),
        _ => {
            let mut r = bad(
                StatusCode::METHOD_NOT_ALLOWED,
                "the MCP endpoint accepts POST, GET and DELETE",
            );
            r.headers_mut().insert(
                http::header::ALLOW,
                http::HeaderValue::from_static("GET, POST, DELETE"),
            );
            r
        }
    }
}

async fn post(gw: Arc<Gateway>, req: Request<Incoming>) -> Response<Body> {
    let headers = req.headers().clone();
    let ctype = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !ctype.to_ascii_lowercase().starts_with(m::CONTENT_TYPE_JSON) {
        return bad(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "Content-Type must be application/json",
        );
    }
    let accept = headers
        .get(http::header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("*/*")
        .to_ascii_lowercase();
    let accepts_json = accept.contains(m::CONTENT_TYPE_JSON)
        || accept.contains("*/*")
        || accept.contains("application/*");
    let accepts_sse = accept.contains(m::CONTENT_TYPE_SSE) || accept.contains("*/*");
    if !accepts_json && !accepts_sse {
        return bad(
            StatusCode::NOT_ACCEPTABLE,
            "Accept must include application/json and text/event-stream",
        );
    }
    let limit = gw.config.limits.max_body_bytes;
    let bytes = match Limited::new(req.into_body(), limit).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                return rpc_error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    None,
                    &RpcError::invalid_request(format!(
                        "the request body exceeds limits.max_body_bytes ({limit} bytes)"
                    )),
                );
            }
            return bad(
                StatusCode::BAD_REQUEST,
                "the request body could not be read",
            );
        }
    };
    let meta = crate::RequestMeta {
        id: gw.request_id(),
        bytes: bytes.len(),
    };
    let span = tracing::info_span!("request", request_id = %meta.id);
    use tracing::Instrument;
    crate::pipeline::handle_post(gw, &headers, &bytes, accepts_sse, &meta)
        .instrument(span)
        .await
}

fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h.eq_ignore_ascii_case("localhost")
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Splits `host[:port]` (IPv6 in brackets) and returns the host part.
fn host_part(authority: &str) -> &str {
    if let Some(rest) = authority.strip_prefix('[') {
        return rest.split(']').next().unwrap_or("");
    }
    authority
        .rsplit_once(':')
        .map(|(h, _)| h)
        .unwrap_or(authority)
}

/// DNS-rebinding protection. A foreign `Origin` is refused with 403. With a
/// loopback listener, so is a `Host` that is not a loopback name, unless listed in
/// `server.allowed_hosts`.
fn check_origin_and_host(gw: &Gateway, headers: &HeaderMap) -> Result<(), Response<Body>> {
    let cfg = &gw.config.server;
    let host = headers
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let listener_loopback = cfg.listen.ip().is_loopback();
    let host_listed = cfg
        .allowed_hosts
        .iter()
        .any(|h| h.eq_ignore_ascii_case(host) || h.eq_ignore_ascii_case(host_part(host)));
    if listener_loopback && !host.is_empty() && !is_loopback_host(host_part(host)) && !host_listed {
        return Err(rpc_error(
            StatusCode::FORBIDDEN,
            None,
            &RpcError::new(ErrorCode::INVALID_REQUEST, format!("Host `{host}` is not allowed (DNS-rebinding protection); add it to server.allowed_hosts")),
        ));
    }
    if !listener_loopback && !cfg.allowed_hosts.is_empty() && !host_listed {
        return Err(rpc_error(
            StatusCode::FORBIDDEN,
            None,
            &RpcError::new(
                ErrorCode::INVALID_REQUEST,
                format!("Host `{host}` is not in server.allowed_hosts"),
            ),
        ));
    }
    if let Some(origin) = headers.get(http::header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let authority = origin
            .split_once("://")
            .map(|(_, rest)| rest.trim_end_matches('/'))
            .unwrap_or("");
        let allowed = cfg.allowed_origins.iter().any(|o| {
            o.trim_end_matches('/')
                .eq_ignore_ascii_case(origin.trim_end_matches('/'))
        }) || (listener_loopback && is_loopback_host(host_part(authority)))
            || (!authority.is_empty() && authority.eq_ignore_ascii_case(host));
        if !allowed {
            return Err(rpc_error(
                StatusCode::FORBIDDEN,
                None,
                &RpcError::new(
                    ErrorCode::INVALID_REQUEST,
                    format!("Origin `{origin}` is not allowed; add it to server.allowed_origins"),
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_parsing() {
        for (auth, host) in [
            ("localhost:8080", "localhost"),
            ("127.0.0.1", "127.0.0.1"),
            ("[::1]:9", "::1"),
            ("evil.example.com", "evil.example.com"),
        ] {
            assert_eq!(host_part(auth), host);
        }
        assert!(is_loopback_host("localhost"));
        assert!(is_loopback_host("127.0.0.2"));
        assert!(is_loopback_host("::1"));
        assert!(!is_loopback_host("evil.example.com"));
        assert!(!is_loopback_host("localhost.evil.com"));
    }
}
