//! Forwarding a call (`tools/call`, `prompts/get`) to the upstream that owns the
//! exposed name, and relaying everything that comes back to the calling client only.
//!
//! The reply is `application/json` when the upstream's result comes first, and
//! switches to `text/event-stream` as soon as the upstream sends a notification
//! (progress, log) or a request (sampling, elicitation) before the result; the stream
//! then carries those, with ids minted for this session, and ends with the result.
//!
//! Failures of a `tools/call` are tool errors (`isError: true`, naming the upstream)
//! so a model can read them; failures of other methods are JSON-RPC errors.

use bytes::Bytes;
use http::{Response, StatusCode};
use manifold_catalog::Kind;
use manifold_protocol::headers::{encode_header_value, param_headers};
use manifold_protocol::methods as m;
use manifold_protocol::{jsonrpc, RequestId, RpcError};
use manifold_upstream::{Call, CallEvent, CallOutcome, Upstream, UpstreamError};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::body::{sse_message, Body};
use crate::http::{json_response, sse_response};
use crate::session::DownSession;
use crate::Gateway;

fn unknown(kind: Kind, name: &str) -> RpcError {
    let what = match kind {
        Kind::Tools => "tool",
        Kind::Prompts => "prompt",
    };
    RpcError::invalid_params(format!("Unknown {what}: {name}"))
}

fn error_response(id: &RequestId, e: &RpcError) -> Response<Body> {
    json_response(StatusCode::OK, jsonrpc::error_bytes(Some(id), e), None)
}

/// How a failure to get an upstream's answer reaches the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failures {
    /// As a tool result with `isError: true`, which a model reads (`tools/call`).
    ToolError,
    /// As a JSON-RPC error (everything else).
    RpcError,
}

/// Where a request goes, decided by the resolve phase of each method.
pub(crate) struct Target {
    pub upstream: Upstream,
    /// SEP-2243 headers for HTTP upstreams (`Mcp-Method`, `Mcp-Name`, `Mcp-Param-*`).
    pub headers: Vec<(String, String)>,
    pub failures: Failures,
}

/// The standard headers for a forwarded request: `Mcp-Method`, and `Mcp-Name` when
/// the request names something (the upstream's own name or URI).
pub(crate) fn standard_headers(method: &str, name: Option<&str>) -> Vec<(String, String)> {
    let mut h = vec![(m::HEADER_METHOD.to_string(), method.to_string())];
    if let Some(n) = name {
        h.push((m::HEADER_NAME.to_string(), encode_header_value(n)));
    }
    h
}

/// The bytes of the final response for an outcome. URIs in a result are learned
/// first, so a client's `resources/read` of a link it was just given reaches its
/// owner.
fn outcome_bytes(
    gw: &Gateway,
    upstream: &Arc<str>,
    id: &RequestId,
    failures: Failures,
    outcome: CallOutcome,
) -> Vec<u8> {
    match outcome {
        CallOutcome::Result(raw) => {
            crate::resources::learn(gw, upstream, &raw);
            jsonrpc::response_bytes(id, &raw)
        }
        CallOutcome::Error(raw) => jsonrpc::error_bytes_raw(id, &raw),
        CallOutcome::Failed(e) => failure_bytes(id, failures, &e),
    }
}

fn failure_bytes(id: &RequestId, failures: Failures, e: &UpstreamError) -> Vec<u8> {
    match failures {
        Failures::ToolError => {
            let result =
                json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true});
            jsonrpc::response_bytes_from_json(id, result.to_string().as_bytes())
        }
        Failures::RpcError => {
            jsonrpc::error_bytes(Some(id), &RpcError::new(e.code(), e.to_string()))
        }
    }
}

fn cancelled_bytes(id: &RequestId) -> Vec<u8> {
    jsonrpc::error_bytes(
        Some(id),
        &RpcError::internal("Request cancelled by the client"),
    )
}

/// The client capability a relayed server→client request needs.
fn required_capability(method: &str) -> Option<&'static str> {
    match method {
        "sampling/createMessage" => Some("sampling"),
        "elicitation/create" => Some("elicitation"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

pub(crate) async fn forward(
    gw: &Arc<Gateway>,
    session: &Arc<DownSession>,
    id: RequestId,
    method: &str,
    mut params: Map<String, Value>,
    kind: Kind,
    accepts_sse: bool,
) -> Response<Body> {
    // Phase: resolve the exposed name through the table.
    let Some(name) = params
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        return error_response(
            &id,
            &RpcError::invalid_params(format!("{method} needs params.name (a string)")),
        );
    };
    let (target, original) = {
        let catalog = gw.catalog.load();
        let Some(entry) = catalog.list(kind).get(&name) else {
            return error_response(&id, &unknown(kind, &name));
        };
        let Some(upstream) = gw.by_name.get(&entry.upstream).cloned() else {
            return error_response(&id, &unknown(kind, &name));
        };
        // Phase: rewrite. The upstream sees its own name; HTTP upstreams get the
        // SEP-2243 headers computed from its own schema.
        let mut headers = standard_headers(method, Some(&entry.original));
        if !entry.header_params.is_empty() {
            match param_headers(&entry.header_params, params.get("arguments")) {
                Ok(h) => headers.extend(h),
                Err(e) => {
                    return error_response(
                        &id,
                        &RpcError::invalid_params(format!("Invalid arguments for {name}: {e}")),
                    )
                }
            }
        }
        let failures = match kind {
            Kind::Tools => Failures::ToolError,
            Kind::Prompts => Failures::RpcError,
        };
        let target = Target {
            upstream,
            headers,
            failures,
        };
        (target, entry.original.clone())
    };
    params.insert("name".into(), Value::String(original));
    dispatch(gw, session, id, method, params, target, accepts_sse).await
}

/// Phases dispatch and relay: sends the request to its target and answers the
/// client with JSON, or with SSE once the upstream streams.
pub(crate) async fn dispatch(
    gw: &Arc<Gateway>,
    session: &Arc<DownSession>,
    id: RequestId,
    method: &str,
    params: Map<String, Value>,
    target: Target,
    accepts_sse: bool,
) -> Response<Body> {
    let Target {
        upstream,
        headers,
        failures,
    } = target;
    let cancel = session.begin_call(id.clone());
    let call = match upstream.call(method, Some(params), headers).await {
        Ok(c) => c,
        Err(e) => {
            session.end_call(&id);
            return json_response(StatusCode::OK, failure_bytes(&id, failures, &e), None);
        }
    };
    // From here on, dropping this handler (the client's connection closed) hands
    // the call to a background drain instead of cancelling it.
    let mut pending = Pending {
        call: Some(call),
        gw: gw.clone(),
        session: session.clone(),
        upstream: upstream.name().clone(),
        id,
        failures,
        cancel,
    };
    // Phase: relay back.
    let Some(first) = pending.next().await else {
        return cancelled_response(&pending.id, accepts_sse);
    };
    match first {
        CallEvent::Done(outcome) => {
            let bytes = pending.outcome_bytes(outcome);
            pending.finished();
            json_response(StatusCode::OK, bytes, None)
        }
        ev if accepts_sse => {
            let (tx, rx) = mpsc::channel::<Bytes>(gw.config.limits.stream_queue);
            pending.stream_to(tx, ev);
            sse_response(rx, None)
        }
        ev => {
            // The client cannot take a stream: drop notifications, refuse requests,
            // answer with the result alone.
            let mut ev = ev;
            loop {
                match ev {
                    CallEvent::Done(outcome) => {
                        let bytes = pending.outcome_bytes(outcome);
                        pending.finished();
                        return json_response(StatusCode::OK, bytes, None);
                    }
                    CallEvent::Request { responder, method, .. } => {
                        responder
                            .refuse(-32601, &format!("{method}: the client did not accept an SSE response, so it cannot be asked"))
                            .await
                    }
                    CallEvent::Notification(_) => {}
                }
                let Some(next) = pending.next().await else {
                    return cancelled_response(&pending.id, accepts_sse);
                };
                ev = next;
            }
        }
    }
}

/// The HTTP answer to a request the client cancelled while it waited for JSON.
/// The spec says a cancelled request gets no response, so a client that accepts
/// SSE gets a stream that ends empty; one that does not gets an error it can read.
fn cancelled_response(id: &RequestId, accepts_sse: bool) -> Response<Body> {
    if accepts_sse {
        let (_, rx) = mpsc::channel::<Bytes>(1);
        sse_response(rx, None)
    } else {
        json_response(StatusCode::OK, cancelled_bytes(id), None)
    }
}

/// A call the request handler is waiting on.
///
/// A client that disconnects has not cancelled its request (2025-11-25 transports:
/// "Disconnection SHOULD NOT be interpreted as the client cancelling its
/// request"). If the handler is dropped with the call unfinished, `Drop` hands the
/// call to a background [`Pump`] that runs it to its outcome, still honouring the
/// client's `notifications/cancelled` (the session keeps the request in flight),
/// the session's end and the gateway's shutdown.
struct Pending {
    /// `None` once the call has finished or moved to a pump.
    call: Option<Call>,
    gw: Arc<Gateway>,
    session: Arc<DownSession>,
    upstream: Arc<str>,
    id: RequestId,
    failures: Failures,
    cancel: CancellationToken,
}

impl Pending {
    /// The next event, or `None` when the client cancelled the request (the call
    /// has then been cancelled upstream).
    async fn next(&mut self) -> Option<CallEvent> {
        let call = self.call.as_mut()?;
        tokio::select! {
            ev = call.next() => Some(ev),
            _ = self.cancel.cancelled() => {
                call.cancel("cancelled by the client").await;
                self.finished();
                None
            }
        }
    }

    fn outcome_bytes(&self, outcome: CallOutcome) -> Vec<u8> {
        outcome_bytes(&self.gw, &self.upstream, &self.id, self.failures, outcome)
    }

    /// The call is over: the session forgets it.
    fn finished(&mut self) {
        self.call = None;
        self.session.end_call(&self.id);
    }

    /// Moves the call to a pump that relays it onto `tx`, starting with `first`.
    fn stream_to(&mut self, tx: mpsc::Sender<Bytes>, first: CallEvent) {
        if let Some(call) = self.call.take() {
            self.spawn_pump(call, tx, Some(first), false);
        }
    }

    fn spawn_pump(
        &self,
        call: Call,
        tx: mpsc::Sender<Bytes>,
        first: Option<CallEvent>,
        gone: bool,
    ) {
        let pump = Pump {
            gw: self.gw.clone(),
            session: self.session.clone(),
            upstream: self.upstream.clone(),
            id: self.id.clone(),
            failures: self.failures,
            tx,
            minted: Vec::new(),
            gone,
        };
        let (cancel, shutdown) = (self.cancel.clone(), self.gw.shutdown.clone());
        self.gw.tasks.spawn(pump.run(call, first, cancel, shutdown));
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        if let Some(call) = self.call.take() {
            // Nobody reads this channel: the pump starts in "client gone" mode.
            let (tx, _) = mpsc::channel(1);
            self.spawn_pump(call, tx, None, true);
        }
    }
}

/// Relays a call's events onto its SSE response until the outcome.
struct Pump {
    gw: Arc<Gateway>,
    session: Arc<DownSession>,
    upstream: Arc<str>,
    id: RequestId,
    failures: Failures,
    tx: mpsc::Sender<Bytes>,
    /// Ids of server→client requests minted on this stream, forgotten at the end.
    minted: Vec<String>,
    /// The client's connection is gone: the call runs on to its outcome (only
    /// `notifications/cancelled` cancels it), with nothing relayed.
    gone: bool,
}

impl Pump {
    async fn run(
        mut self,
        mut call: Call,
        first: Option<CallEvent>,
        cancel: CancellationToken,
        shutdown: CancellationToken,
    ) {
        let mut next = first;
        loop {
            let ev = match next.take() {
                Some(ev) => ev,
                None => tokio::select! {
                    ev = call.next() => ev,
                    _ = cancel.cancelled() => {
                        // No response for a cancelled request: the stream just ends.
                        call.cancel("cancelled by the client").await;
                        break;
                    }
                    _ = shutdown.cancelled() => {
                        call.cancel("the gateway is shutting down").await;
                        break;
                    }
                },
            };
            match ev {
                CallEvent::Done(outcome) => {
                    if !self.gone {
                        let bytes = outcome_bytes(
                            &self.gw,
                            &self.upstream,
                            &self.id,
                            self.failures,
                            outcome,
                        );
                        let _ = self.tx.send(sse_message(&bytes)).await;
                    }
                    break;
                }
                other => {
                    if !self.relay(other).await && !self.gone {
                        self.gone = true;
                        tracing::debug!(request = %self.id, "the client disconnected; the call runs on upstream");
                    }
                }
            }
        }
        self.session.end_call(&self.id);
        for id in &self.minted {
            if let Some(r) = self.session.forget_pending(id) {
                drop(r);
            }
        }
    }

    /// Sends one event to the client; false when the client is gone.
    async fn relay(&mut self, ev: CallEvent) -> bool {
        if self.gone {
            if let CallEvent::Request {
                method, responder, ..
            } = ev
            {
                responder
                    .refuse(
                        -32603,
                        &format!("{method}: the client that made this call has disconnected"),
                    )
                    .await;
            }
            return false;
        }
        match ev {
            CallEvent::Notification(mut msg) => {
                if !crate::logging::for_client(&self.session, &self.upstream, &mut msg) {
                    return true;
                }
                let bytes = serde_json::to_vec(&Value::Object(msg)).unwrap_or_default();
                self.tx.send(sse_message(&bytes)).await.is_ok()
            }
            CallEvent::Request {
                method,
                params,
                responder,
            } => {
                if let Some(cap) = required_capability(&method) {
                    if !self.session.has_capability(cap) {
                        responder
                            .refuse(-32601, &format!("the client did not declare the `{cap}` capability, so {method} cannot be relayed"))
                            .await;
                        return true;
                    }
                }
                let down_id = match self.session.add_pending(responder) {
                    Ok(id) => id,
                    Err(responder) => {
                        responder
                            .refuse(
                                -32603,
                                "too many requests are waiting for this client's answers",
                            )
                            .await;
                        return true;
                    }
                };
                self.minted.push(down_id.clone());
                let mut msg = Map::new();
                msg.insert("jsonrpc".into(), Value::from("2.0"));
                msg.insert("id".into(), Value::from(down_id));
                msg.insert("method".into(), Value::from(method));
                if let Some(p) = params {
                    msg.insert("params".into(), p);
                }
                let bytes = serde_json::to_vec(&Value::Object(msg)).unwrap_or_default();
                self.tx.send(sse_message(&bytes)).await.is_ok()
            }
            CallEvent::Done(_) => true,
        }
    }
}
