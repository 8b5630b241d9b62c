//! The request pipeline, in order (see `README.md` next to this file for why):
//! decode → session → protocol version → route by method → (for forwarded calls)
//! resolve the exposed name → rewrite → dispatch upstream → relay back.
//!
//! Each phase answers bad input itself with the right JSON-RPC code and HTTP status.

use http::{HeaderMap, Response, StatusCode};
use manifold_catalog::Kind;
use manifold_protocol::methods as m;
use manifold_protocol::{jsonrpc, version, Incoming, RequestId, RpcError};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::sync::Arc;

use crate::body::Body;
use crate::http::{json_response, plain, rpc_error, sse_response};
use crate::session::DownSession;
use crate::Gateway;

/// Manifold's `serverInfo`.
pub const SERVER_NAME: &str = "manifold";
pub const SERVER_VERSION: &str = env!("CARGO_PKG_VERSION");

/// A header's value, without optional whitespace; `None` if absent or not text.
pub(crate) fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
}

/// Phase: find the session a request belongs to. 400 without an id, 404 for an
/// unknown or ended one (the client then re-initializes).
fn session_of(gw: &Gateway, headers: &HeaderMap) -> Result<Arc<DownSession>, Response<Body>> {
    let Some(id) = header(headers, m::HEADER_SESSION_ID) else {
        return Err(rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            &RpcError::invalid_request(
                "Bad Request: the Mcp-Session-Id header is required; send initialize first",
            ),
        ));
    };
    match gw.sessions.get(id) {
        Some(s) => {
            s.touch();
            Ok(s)
        }
        None => Err(rpc_error(
            StatusCode::NOT_FOUND,
            None,
            &RpcError::invalid_request(
                "Session not found: it ended or never existed; send initialize to start a new one",
            ),
        )),
    }
}

/// Phase: `MCP-Protocol-Version` must name a revision Manifold speaks. A missing
/// header is accepted (the spec: assume the negotiated or 2025-03-26 revision).
fn check_protocol_header(headers: &HeaderMap) -> Result<(), Response<Body>> {
    match header(headers, m::HEADER_PROTOCOL_VERSION) {
        Some(v) if !version::is_supported_legacy(v) => Err(rpc_error(
            StatusCode::BAD_REQUEST,
            None,
            &RpcError::invalid_request(format!(
                "Bad Request: unsupported MCP-Protocol-Version `{v}`; supported: {}",
                version::LEGACY_SUPPORTED.join(", ")
            )),
        )),
        _ => Ok(()),
    }
}

pub(crate) async fn handle_post(
    gw: Arc<Gateway>,
    headers: &HeaderMap,
    bytes: &[u8],
    accepts_sse: bool,
    meta: &crate::RequestMeta,
) -> Response<Body> {
    // Phase: decode.
    let msg = match Incoming::parse(bytes) {
        Ok(m) => m,
        Err(e) => return rpc_error(StatusCode::BAD_REQUEST, e.id(), &e.to_rpc_error()),
    };
    // Phase: era. A request with the 2026-07-28 `_meta` is served statelessly.
    let msg = match msg {
        Incoming::Request { id, method, msg } if crate::modern::is_modern(headers, &msg) => {
            return crate::modern::handle(gw, headers, id, &method, msg, accepts_sse, meta).await;
        }
        other => other,
    };
    if let Incoming::Request { id, method, msg } = &msg {
        if method == m::INITIALIZE {
            let r = initialize(&gw, id, msg);
            let minted = r.headers().contains_key(m::HEADER_SESSION_ID);
            let outcome = if minted { "ok" } else { "refused" };
            gw.metrics.request(m::INITIALIZE, outcome, meta.bytes);
            return r;
        }
        if method == m::SERVER_DISCOVER && header(headers, m::HEADER_SESSION_ID).is_none() {
            return discover_fallback(id);
        }
    }
    // Phase: session, protocol version.
    let session = match session_of(&gw, headers) {
        Ok(s) => s,
        Err(r) => return r,
    };
    if let Err(r) = check_protocol_header(headers) {
        return r;
    }
    match msg {
        Incoming::Notification { method, msg } => {
            if method == m::NOTIF_CANCELLED {
                let target = jsonrpc::params(&msg)
                    .and_then(|p| p.get("requestId"))
                    .and_then(RequestId::from_value);
                if let Some(target) = target {
                    if !session.cancel_call(&target) {
                        tracing::debug!(request = %target, "cancellation for a request not in flight");
                    }
                }
            }
            plain(StatusCode::ACCEPTED)
        }
        Incoming::Response { id, msg } => {
            relay_client_response(&session, &id, msg).await;
            plain(StatusCode::ACCEPTED)
        }
        Incoming::Request { id, method, msg } => {
            route(&gw, &session, id, &method, msg, accepts_sse, meta).await
        }
    }
}

/// Phase: route by method.
pub(crate) async fn route(
    gw: &Arc<Gateway>,
    session: &Arc<DownSession>,
    id: RequestId,
    method: &str,
    mut msg: Map<String, Value>,
    accepts_sse: bool,
    meta: &crate::RequestMeta,
) -> Response<Body> {
    // Moved out, not cloned: the forwarded params are rewritten in place.
    let params = match msg.remove("params") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    // Requests answered here (not forwarded) are counted here; forwarded ones
    // when their answer comes (see `observe`).
    let ok = |result: &[u8]| {
        gw.metrics.request(method, "ok", meta.bytes);
        json_response(
            StatusCode::OK,
            jsonrpc::response_bytes_from_json(&id, result),
            None,
        )
    };
    let err = |e: RpcError| {
        gw.metrics.request(method, "refused", meta.bytes);
        json_response(StatusCode::OK, jsonrpc::error_bytes(Some(&id), &e), None)
    };
    match method {
        m::PING => ok(b"{}"),
        m::TOOLS_LIST | m::PROMPTS_LIST | m::RESOURCES_LIST | m::RESOURCES_TEMPLATES_LIST => {
            let cursor = match params.get("cursor") {
                None | Some(Value::Null) => None,
                Some(Value::String(c)) => Some(c.as_str()),
                Some(_) => {
                    return err(RpcError::invalid_params(
                        "Invalid cursor: it must be a string",
                    ))
                }
            };
            match list_page(gw, method, cursor) {
                Ok(page) => ok(&page),
                Err(e) => err(RpcError::invalid_params(e.to_string())),
            }
        }
        m::TOOLS_CALL | m::PROMPTS_GET => {
            let kind = if method == m::TOOLS_CALL {
                Kind::Tools
            } else {
                Kind::Prompts
            };
            crate::forward::forward(gw, session, id, method, params, kind, accepts_sse, meta).await
        }
        m::RESOURCES_READ => {
            crate::resources::read(gw, session, id, params, accepts_sse, meta).await
        }
        m::RESOURCES_SUBSCRIBE => crate::resources::subscribe(gw, session, id, params).await,
        m::RESOURCES_UNSUBSCRIBE => crate::resources::unsubscribe(gw, session, id, params).await,
        m::COMPLETION_COMPLETE => {
            crate::resources::complete(gw, session, id, params, accepts_sse, meta).await
        }
        m::LOGGING_SET_LEVEL => match crate::logging::requested_level(&params) {
            Ok(level) => {
                session.set_log_level(level);
                crate::logging::apply_to_upstreams(gw).await;
                ok(b"{}")
            }
            Err(e) => err(e),
        },
        _ => err(RpcError::method_not_found(method)),
    }
}

/// One page of a merged list (`tools/list`, `prompts/list`, `resources/list`,
/// `resources/templates/list`), pre-serialized.
pub(crate) fn list_page(
    gw: &Gateway,
    method: &str,
    cursor: Option<&str>,
) -> Result<bytes::Bytes, manifold_catalog::CursorError> {
    let catalog = gw.catalog.load();
    match method {
        m::TOOLS_LIST => catalog.tools.page(cursor),
        m::PROMPTS_LIST => catalog.prompts.page(cursor),
        m::RESOURCES_LIST => catalog.resources.resources.page(cursor),
        _ => catalog.resources.templates.page(cursor),
    }
}

/// `initialize`: negotiate, mint a session, answer with the merged capabilities.
fn initialize(gw: &Gateway, id: &RequestId, msg: &Map<String, Value>) -> Response<Body> {
    let params = jsonrpc::params(msg);
    let Some(requested) = params
        .and_then(|p| p.get("protocolVersion"))
        .and_then(Value::as_str)
    else {
        return json_response(
            StatusCode::OK,
            jsonrpc::error_bytes(
                Some(id),
                &RpcError::invalid_params("initialize needs params.protocolVersion (a string)"),
            ),
            None,
        );
    };
    let negotiated = version::negotiate(requested);
    let capabilities = params
        .and_then(|p| p.get("capabilities"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let client_info = params
        .and_then(|p| p.get("clientInfo"))
        .cloned()
        .unwrap_or(Value::Null);
    let Some(session) =
        gw.sessions
            .create(negotiated.to_string(), client_info.clone(), capabilities)
    else {
        return rpc_error(
            StatusCode::SERVICE_UNAVAILABLE,
            Some(id),
            &RpcError::internal(format!(
                "too many sessions (limits.max_sessions = {}); try again later",
                gw.config.limits.max_sessions
            )),
        );
    };
    tracing::info!(session = %&session.id[..8], client = %client_info, version = negotiated, "session started");
    let mut result = Map::new();
    result.insert("protocolVersion".into(), Value::from(negotiated));
    result.insert("capabilities".into(), capabilities_for(gw));
    result.insert(
        "serverInfo".into(),
        json!({"name": SERVER_NAME, "version": SERVER_VERSION}),
    );
    if let Some(text) = merged_instructions(gw) {
        result.insert("instructions".into(), Value::from(text));
    }
    let bytes = jsonrpc::response_bytes_from_json(id, Value::Object(result).to_string().as_bytes());
    json_response(StatusCode::OK, bytes, Some(&session.id))
}

/// The union of what the ready upstreams offer. Tools and prompts are always
/// offered (an empty list is a valid answer, and an upstream may join later);
/// Manifold itself emits every `list_changed`, so `listChanged` is true.
pub(crate) fn capabilities_for(gw: &Gateway) -> Value {
    let upstream_caps: Vec<Map<String, Value>> = gw
        .upstreams
        .iter()
        .filter_map(|u| u.status().facts.map(|f| f.capabilities.clone()))
        .collect();
    let any = |name: &str| upstream_caps.iter().any(|c| c.contains_key(name));
    let mut caps = Map::new();
    caps.insert("tools".into(), json!({"listChanged": true}));
    caps.insert("prompts".into(), json!({"listChanged": true}));
    if any("resources") {
        let subscribe = upstream_caps.iter().any(|c| {
            c.get("resources")
                .and_then(|r| r.get("subscribe"))
                .and_then(Value::as_bool)
                == Some(true)
        });
        caps.insert(
            "resources".into(),
            json!({"subscribe": subscribe, "listChanged": true}),
        );
    }
    if any("completions") {
        caps.insert("completions".into(), json!({}));
    }
    if any("logging") {
        caps.insert("logging".into(), json!({}));
    }
    Value::Object(caps)
}

/// One heading per upstream that gave instructions, in upstream order.
pub(crate) fn merged_instructions(gw: &Gateway) -> Option<String> {
    let parts: Vec<String> = gw
        .upstreams
        .iter()
        .filter_map(|u| {
            let text = u.status().facts?.instructions?;
            let text = text.trim().to_string();
            (!text.is_empty()).then(|| format!("## {}\n{}", u.name(), text))
        })
        .collect();
    (!parts.is_empty()).then(|| parts.join("\n\n"))
}

/// `server/discover` (the 2026-07-28 era probe) before any session: Manifold does
/// not serve that era yet, so it answers as a stateful-only server does (404 +
/// -32601, the request's id echoed). Dual-era clients (Python SDK 2.x) fall back to
/// `initialize` on any JSON-RPC error other than -32022.
fn discover_fallback(id: &RequestId) -> Response<Body> {
    rpc_error(
        StatusCode::NOT_FOUND,
        Some(id),
        &RpcError::new(
            manifold_protocol::ErrorCode::METHOD_NOT_FOUND,
            "Method not found: server/discover (protocol 2026-07-28) is not served here yet; use initialize",
        ),
    )
}

/// A client's answer to a server→client request, relayed to the upstream that asked.
async fn relay_client_response(session: &DownSession, id: &RequestId, msg: Map<String, Value>) {
    let Some(responder) = session.take_pending(id) else {
        tracing::debug!(request = %id, "response to no pending request; ignored");
        return;
    };
    let (ok, member) = match (msg.get("result"), msg.get("error")) {
        (Some(r), _) => (true, r),
        (None, Some(e)) => (false, e),
        (None, None) => return,
    };
    let raw =
        RawValue::from_string(member.to_string()).unwrap_or_else(|_| RawValue::NULL.to_owned());
    responder.respond(if ok { Ok(raw) } else { Err(raw) }).await;
}

/// GET: the session's stream for notifications outside any request.
pub(crate) fn open_get_stream(gw: &Gateway, headers: &HeaderMap) -> Response<Body> {
    let accept = header(headers, "accept").unwrap_or("").to_ascii_lowercase();
    if !accept.contains(m::CONTENT_TYPE_SSE) && !accept.contains("*/*") {
        return rpc_error(
            StatusCode::NOT_ACCEPTABLE,
            None,
            &RpcError::invalid_request(
                "GET opens an SSE stream: Accept must include text/event-stream",
            ),
        );
    }
    let session = match session_of(gw, headers) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let rx = session.open_stream(gw.config.limits.stream_queue);
    sse_response(rx, None)
}

/// DELETE: ends the session.
pub(crate) fn delete_session(gw: &Arc<Gateway>, headers: &HeaderMap) -> Response<Body> {
    let session = match session_of(gw, headers) {
        Ok(s) => s,
        Err(r) => return r,
    };
    gw.sessions.remove(&session.id);
    crate::resources::session_ended(gw, &session.id);
    crate::logging::sessions_ended(gw);
    tracing::info!(session = %&session.id[..8], client = %session.client_info,
        version = %session.protocol_version, "session ended by the client");
    plain(StatusCode::OK)
}
