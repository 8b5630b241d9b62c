//! The admin listener (`[admin] listen`), on a separate port from the MCP
//! endpoint. Two kinds of endpoint:
//!
//! - open to whoever reaches the port (the kubelet, Prometheus):
//!   - `/metrics` (Prometheus text format);
//!   - `/healthz`: 200 while the process serves (it answers, so it is alive);
//!   - `/readyz`: 200 when every upstream marked `required = true` is ready,
//!     the audit log (if any) is not refusing calls and shutdown has not
//!     begun, else 503; the JSON body lists every upstream's state, last
//!     error and restarts (the facts `manifold check` prints), and the
//!     cluster's Redis connection (reported, never failing readiness: Redis
//!     down is down for every replica at once, and each still serves what
//!     needs no relay). A child that died is `down`, never ready.
//! - control and inspection, for the credentials `[admin]` names (see
//!   `auth`):
//!   - `/config`, `/upstreams`, `/catalog?as=WHO`: JSON for operators (see
//!     `inspect`); a bad `as` is a 400 saying why;
//!   - `POST /reload`: reloads the configuration file (see
//!     `runtime::reload`): 200 with what changed, 400 with why nothing did;
//!   - `POST /pins/approve`: approves items `[integrity]` holds, as the admin
//!     principal (see `pins`).
//!   - `/ui` and below: the operator's console (`console`), which
//!     authenticates each page itself (the same credentials as a bearer
//!     token, or a login cookie made with them) and serves only its login
//!     form and its two static files without them.
//!
//! Invariants: `Host` and `Origin` are checked on every request; only the
//! paths [`Endpoint::is_open`] names skip authorization — any other path,
//! known or not (so an endpoint added later), is authorized before it is
//! even routed; a state change is never a cross-site form.
//!
//! Not here: who may do what (`auth`), what the views contain
//! (`inspect`), the MCP endpoint (`front`, on the same floor).

pub(crate) mod auth;
pub(crate) mod console;
pub(crate) mod inspect;
pub(crate) mod pins;

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
use auth::AdminPrincipal;

/// Serves until the gateway shuts down.
pub(crate) async fn serve(gw: Arc<Gateway>, listener: TcpListener) {
    if let Ok(addr) = listener.local_addr() {
        tracing::info!(%addr, "admin listener (open: /metrics, /healthz, /readyz; with credentials: /config, /upstreams, /catalog, /reload, /pins/approve, the console at /ui)");
    }
    let builder = Arc::new(crate::front::http::builder(&gw.cfg().limits));
    loop {
        let accepted = tokio::select! {
            _ = gw.life.stop.cancelled() => return,
            a = listener.accept() => a,
        };
        let Ok((stream, peer)) = accepted else {
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            continue;
        };
        let gw2 = gw.clone();
        let builder = builder.clone();
        let shutdown = gw.life.stop.clone();
        gw.life.background.spawn(async move {
            let svc = service_fn(move |req| {
                let gw = gw2.clone();
                async move { Ok::<_, Infallible>(handle(&gw, req, peer.ip()).await) }
            });
            let conn = builder.serve_connection(TokioIo::new(stream), svc);
            tokio::select! {
                _ = conn => {}
                _ = shutdown.cancelled() => {}
            }
        });
    }
}

/// What a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Metrics,
    Healthz,
    Readyz,
    Config,
    Upstreams,
    Catalog,
    Reload,
    PinsApprove,
    /// Nothing: answered 404, after authorization like any control path.
    Unknown,
}

impl Endpoint {
    fn of(path: &str) -> Endpoint {
        match path {
            "/metrics" => Endpoint::Metrics,
            "/healthz" => Endpoint::Healthz,
            "/readyz" => Endpoint::Readyz,
            "/config" => Endpoint::Config,
            "/upstreams" => Endpoint::Upstreams,
            "/catalog" => Endpoint::Catalog,
            "/reload" => Endpoint::Reload,
            "/pins/approve" => Endpoint::PinsApprove,
            _ => Endpoint::Unknown,
        }
    }

    /// Served without credentials: the probes and the metrics, which the
    /// orchestrator and the scraper read. Everything else is authorized.
    fn is_open(self) -> bool {
        matches!(
            self,
            Endpoint::Metrics | Endpoint::Healthz | Endpoint::Readyz
        )
    }
}

async fn handle(
    gw: &Arc<Gateway>,
    req: Request<Incoming>,
    peer: std::net::IpAddr,
) -> Response<Full<Bytes>> {
    let endpoint = Endpoint::of(req.uri().path());
    let authority = req.uri().authority().map(|a| a.as_str());
    if let Err(r) = auth::check_origin_and_host(gw, req.headers(), authority) {
        return r.response();
    }
    if endpoint.is_open() {
        return open(gw, endpoint, req.method());
    }
    if console::owns(req.uri().path()) {
        return console::handle(gw, req, peer).await;
    }
    let principal = match auth::authorize(gw, req.headers(), Some(peer)).await {
        Ok(p) => p,
        Err(r) => return r.response(),
    };
    if endpoint == Endpoint::PinsApprove {
        if req.method() != Method::POST {
            return not_allowed("POST");
        }
        if let Err(r) = auth::not_a_form(req.headers()) {
            return r.response();
        }
        let (status, body) = pins::approve(gw, req, &principal).await;
        return json_reply(status, &body);
    }
    control(gw, endpoint, &req, &principal).await
}

fn reply(status: StatusCode, ctype: &str, body: impl Into<Bytes>) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    if let Ok(v) = http::HeaderValue::from_str(ctype) {
        r.headers_mut().insert(http::header::CONTENT_TYPE, v);
    }
    r
}

fn not_allowed(allow: &'static str) -> Response<Full<Bytes>> {
    let mut r = reply(
        StatusCode::METHOD_NOT_ALLOWED,
        "text/plain",
        format!("{allow} only\n"),
    );
    r.headers_mut()
        .insert(http::header::ALLOW, http::HeaderValue::from_static(allow));
    r
}

fn json_reply(status: StatusCode, v: &serde_json::Value) -> Response<Full<Bytes>> {
    let mut body = serde_json::to_string_pretty(v).unwrap_or_default();
    body.push('\n');
    reply(status, "application/json", body)
}

/// The probes and the metrics.
fn open(gw: &Gateway, endpoint: Endpoint, method: &Method) -> Response<Full<Bytes>> {
    if method != Method::GET {
        return not_allowed("GET");
    }
    match endpoint {
        Endpoint::Metrics => reply(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            gw.metrics_text(),
        ),
        Endpoint::Healthz => reply(StatusCode::OK, "text/plain", "ok\n"),
        _ => {
            let (ready, body) = readiness(gw);
            let status = if ready {
                StatusCode::OK
            } else {
                StatusCode::SERVICE_UNAVAILABLE
            };
            reply(status, "application/json", body.to_string())
        }
    }
}

/// The control and inspection endpoints, for an authorized `principal`.
async fn control(
    gw: &Arc<Gateway>,
    endpoint: Endpoint,
    req: &Request<Incoming>,
    principal: &AdminPrincipal,
) -> Response<Full<Bytes>> {
    if endpoint == Endpoint::Reload {
        if req.method() != Method::POST {
            return not_allowed("POST");
        }
        if let Err(r) = auth::not_a_form(req.headers()) {
            return r.response();
        }
        tracing::info!(principal = %principal.display_name(), "POST /reload");
        return match gw.reload_from_file().await {
            Ok(report) => json_reply(
                StatusCode::OK,
                &serde_json::to_value(&report).unwrap_or_default(),
            ),
            Err(e) => json_reply(StatusCode::BAD_REQUEST, &json!({ "error": e.to_string() })),
        };
    }
    if endpoint == Endpoint::Unknown {
        return reply(
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found: try /metrics, /healthz, /readyz, /config, /upstreams, /catalog?as=WHO, POST /reload, POST /pins/approve, or the console at /ui\n",
        );
    }
    if req.method() != Method::GET {
        return not_allowed("GET");
    }
    match endpoint {
        Endpoint::Config => json_reply(StatusCode::OK, &inspect::config(gw)),
        Endpoint::Upstreams => json_reply(StatusCode::OK, &inspect::upstreams(gw)),
        _ => match inspect::catalog(gw, req.uri().query()) {
            Ok(v) => json_reply(StatusCode::OK, &v),
            Err(e) => json_reply(StatusCode::BAD_REQUEST, &json!({ "error": e })),
        },
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
                // Reported, not failed: the upstream is up; its calls fail
                // fast until a probe gets through.
                "breaker": inspect::breaker(u),
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
