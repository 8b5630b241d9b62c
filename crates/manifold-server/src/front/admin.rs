//! The admin listener (`[admin] listen`): `/metrics` (Prometheus text format),
//! `/healthz` and `/readyz`, on a separate port from the MCP endpoint so it can be
//! exposed to a scraper without exposing tools.
//!
//! - `/healthz`: 200 while the process serves (it answers, so it is alive).
//! - `/readyz`: 200 when every upstream marked `required = true` is ready, the
//!   audit log (if any) is not refusing calls and shutdown has not begun, else
//!   503; the JSON body lists every upstream's state, last error and restarts
//!   (the facts `manifold check` prints), and the cluster's Redis connection
//!   (reported, never failing readiness: Redis down is down for every replica
//!   at once, and each still serves what needs no relay). A child that died is
//!   `down`, never ready.
//!
//! - `/config`, `/upstreams`, `/catalog?as=WHO`: JSON for operators (see
//!   `inspect`); a bad `as` is a 400 saying why.
//! - `POST /reload`: reloads the configuration file (see `runtime::reload`):
//!   200 with what changed, 400 with why nothing did.
//!
//! Not here: authentication (bind it to loopback or a private interface).

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::convert::Infallible;
use std::sync::Arc;
use tokio::net::TcpListener;

use crate::state::Gateway;

/// Serves until the gateway shuts down.
pub(crate) async fn serve(gw: Arc<Gateway>, listener: TcpListener) {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "admin listener (/metrics, /healthz, /readyz, /config, /upstreams, /catalog)");
    }
    let builder = Arc::new(super::http::builder(&gw.cfg().limits));
    loop {
        let accepted = tokio::select! {
            _ = gw.stop.cancelled() => return,
            a = listener.accept() => a,
        };
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        let gw2 = gw.clone();
        let builder = builder.clone();
        let shutdown = gw.stop.clone();
        gw.tasks.spawn(async move {
            let svc = service_fn(move |req| {
                let gw = gw2.clone();
                async move {
                    if req.uri().path() == "/reload" {
                        return Ok::<_, Infallible>(reload(&gw, req.method()).await);
                    }
                    Ok::<_, Infallible>(handle(&gw, &req))
                }
            });
            let conn = builder.serve_connection(TokioIo::new(stream), svc);
            tokio::select! {
                _ = conn => {}
                _ = shutdown.cancelled() => {}
            }
        });
    }
}

fn reply(status: StatusCode, ctype: &str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    if let Ok(v) = http::HeaderValue::from_str(ctype) {
        r.headers_mut().insert(http::header::CONTENT_TYPE, v);
    }
    r
}

/// `POST /reload`: 200 with what changed, or 400 with why nothing did.
async fn reload(gw: &Arc<Gateway>, method: &Method) -> Response<Full<Bytes>> {
    if method != Method::POST {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "POST /reload\n",
        );
    }
    match gw.reload_from_file().await {
        Ok(report) => json_reply(
            StatusCode::OK,
            &serde_json::to_value(&report).unwrap_or_default(),
        ),
        Err(e) => json_reply(StatusCode::BAD_REQUEST, &json!({ "error": e.to_string() })),
    }
}

fn json_reply(status: StatusCode, v: &serde_json::Value) -> Response<Full<Bytes>> {
    let mut body = serde_json::to_string_pretty(v).unwrap_or_default();
    body.push('\n');
    reply(status, "application/json", body)
}

fn handle(gw: &Gateway, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    if req.method() != Method::GET {
        return reply(StatusCode::METHOD_NOT_ALLOWED, "text/plain", "GET only\n");
    }
    match req.uri().path() {
        "/metrics" => reply(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            gw.metrics.render(gw),
        ),
        "/healthz" => reply(StatusCode::OK, "text/plain", "ok\n"),
        "/readyz" => {
            let (ready, body) = readiness(gw);
            let status = if ready {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            reply(status, "application/json", body.to_string())
        }
        "/config" => json_reply(StatusCode::OK, &super::inspect::config(gw)),
        "/upstreams" => json_reply(StatusCode::OK, &super::inspect::upstreams(gw)),
        "/catalog" => match super::inspect::catalog(gw, req.uri().query()) {
            Ok(v) => json_reply(StatusCode::OK, &v),
            Err(e) => json_reply(StatusCode::BAD_REQUEST, &json!({ "error": e })),
        },
        _ => reply(
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found: try /metrics, /healthz, /readyz, /config, /upstreams or /catalog?as=WHO\n",
        ),
    }
}

/// Whether every required upstream is ready, and the facts behind the answer.
pub(crate) fn readiness(gw: &Gateway) -> (bool, serde_json::Value) {
    // Shutting down: out of the load balancer at once, while calls drain.
    let draining = gw.draining();
    let mut ready = !draining;
    let upstreams: Vec<serde_json::Value> = gw
        .upstreams()
        .iter()
        .map(|u| {
            let st = u.status();
            let is_ready = st.state == manifold_upstream::State::Ready;
            if u.config().required && !is_ready {
                ready = false;
            }
            json!({
                "name": &**u.name(),
                "required": u.config().required,
                "state": st.state.as_str(),
                "ready": is_ready,
                "last_error": st.last_error,
                "restarts": st.restarts,
                "last_exit_code": st.last_exit_code,
            })
        })
        .collect();
    // With `on_failure = "reject"`, a failing audit sink refuses every call.
    let audit = match gw.auditor.as_ref().map(|a| a.check()) {
        Some(Err(e)) => {
            ready = false;
            json!({"ok": false, "error": e.to_string()})
        }
        Some(Ok(())) => json!({"ok": true}),
        None => serde_json::Value::Null,
    };
    // Reported, not failed: Redis down is down for every replica at once,
    // and each still serves everything that needs no relay.
    let cluster = match gw.cluster_health() {
        Some(h) => json!({"redis": h}),
        None => serde_json::Value::Null,
    };
    (
        ready,
        json!({"ready": ready, "draining": draining, "upstreams": upstreams, "audit": audit, "cluster": cluster}),
    )
}
