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
use manifold_protocol::{jsonrpc, ErrorCode, RequestId, RpcError};
use manifold_upstream::{Call, CallEvent, CallOutcome, Upstream, UpstreamError};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::body::{sse_message, Body};
use crate::http::{json_response, sse_response};
use crate::observe::{failure_outcome, Observed};
use crate::session::DownSession;
use crate::Gateway;
use manifold_audit::Outcome;

fn unknown(kind: Kind, name: &str) -> RpcError {
    let what = match kind {
        Kind::Tools => "tool",
        Kind::Prompts => "prompt",
    };
    RpcError::invalid_params(format!("Unknown {what}: {name}"))
}

/// How a failure to get an upstream's answer reaches the client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Failures {
    /// As a tool result with `isError: true`, which a model reads (`tools/call`).
    ToolError,
    /// As a JSON-RPC error (everything else).
    RpcError,
    /// As a JSON-RPC error, for `resources/read` (whose modern results carry cache
    /// hints).
    RpcRead,
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
    modern: bool,
    outcome: CallOutcome,
) -> Vec<u8> {
    match outcome {
        CallOutcome::Result(raw) => {
            crate::resources::learn(gw, upstream, &raw);
            if modern && failures == Failures::RpcRead {
                let text = crate::modern::with_read_hints(raw.get());
                jsonrpc::response_bytes_from_json(id, text.as_bytes())
            } else if modern {
                let text = crate::modern::with_result_type(raw.get());
                jsonrpc::response_bytes_from_json(id, text.as_bytes())
            } else {
                jsonrpc::response_bytes(id, &raw)
            }
        }
        CallOutcome::Error(raw) => jsonrpc::error_bytes_raw(id, &raw),
        CallOutcome::Failed(e) => failure_bytes(id, failures, modern, &e),
    }
}

fn failure_bytes(id: &RequestId, failures: Failures, modern: bool, e: &UpstreamError) -> Vec<u8> {
    match failures {
        Failures::ToolError => {
            let mut result =
                json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true});
            if modern {
                result["resultType"] = json!("complete");
            }
            jsonrpc::response_bytes_from_json(id, result.to_string().as_bytes())
        }
        Failures::RpcError | Failures::RpcRead => {
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
pub(crate) fn required_capability(method: &str) -> Option<&'static str> {
    match method {
        "sampling/createMessage" => Some("sampling"),
        "elicitation/create" => Some("elicitation"),
        "roots/list" => Some("roots"),
        _ => None,
    }
}

// The pipeline's phases pass the request's facts explicitly rather than through a
// context struct, so each phase shows what it reads.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn forward(
    gw: &Arc<Gateway>,
    session: &Arc<DownSession>,
    id: RequestId,
    method: &str,
    mut params: Map<String, Value>,
    kind: Kind,
    accepts_sse: bool,
    meta: &crate::RequestMeta,
) -> Response<Body> {
    let mut obs = Observed::new(meta, method, Some(session));
    if gw.auditor.is_some() {
        obs.arguments = params.get("arguments").cloned();
    }
    // Phase: resolve the exposed name through the table.
    let Some(name) = params
        .get("name")
        .and_then(Value::as_str)
        .map(str::to_string)
    else {
        let e = RpcError::invalid_params(format!("{method} needs params.name (a string)"));
        return refuse(gw, obs, &id, e).await;
    };
    obs.name = Some(name.clone());
    // An `Arc` of the snapshot (not a guard): the entry is borrowed from it, and
    // nothing of it is copied but the names the upstream needs.
    let catalog = gw.catalog.load_full();
    let resolved = catalog
        .list(kind)
        .get(&name)
        .and_then(|entry| Some((gw.by_name.get(&entry.upstream)?.clone(), entry)));
    let Some((upstream, entry)) = resolved else {
        return refuse(gw, obs, &id, unknown(kind, &name)).await;
    };
    let (target, original) = {
        // Phase: rewrite. The upstream sees its own name; HTTP upstreams get the
        // SEP-2243 headers computed from its own schema.
        let mut headers = standard_headers(method, Some(&entry.original));
        if !entry.header_params.is_empty() {
            match param_headers(&entry.header_params, params.get("arguments")) {
                Ok(h) => {
                    gw.metrics.headers_mirrored(h.len());
                    headers.extend(h)
                }
                Err(e) => {
                    gw.metrics.header_rejected();
                    let e = RpcError::invalid_params(format!("Invalid arguments for {name}: {e}"));
                    return refuse(gw, obs, &id, e).await;
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
    obs.original = Some(original.clone());
    params.insert("name".into(), Value::String(original));
    dispatch(gw, session, id, method, params, target, accepts_sse, obs).await
}

/// Answers a request Manifold refuses before any upstream sees it; audited as
/// `refused` with the error's code.
pub(crate) async fn refuse(
    gw: &Gateway,
    obs: Observed,
    id: &RequestId,
    e: RpcError,
) -> Response<Body> {
    let bytes = jsonrpc::error_bytes(Some(id), &e);
    let outcome = Outcome::Refused { code: e.code.0 };
    if let Err(err) = obs.finish(gw, outcome, bytes.len()).await {
        tracing::error!(error = %err, "audit record not written");
    }
    json_response(StatusCode::OK, bytes, None)
}

/// Phases dispatch and relay: sends the request to its target and answers the
/// client with JSON, or with SSE once the upstream streams.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn dispatch(
    gw: &Arc<Gateway>,
    session: &Arc<DownSession>,
    id: RequestId,
    method: &str,
    params: Map<String, Value>,
    target: Target,
    accepts_sse: bool,
    mut obs: Observed,
) -> Response<Body> {
    let Target {
        upstream,
        headers,
        failures,
    } = target;
    // With `on_failure = "reject"`, no call runs while its record cannot be kept.
    if let Some(Err(e)) = gw.auditor.as_ref().map(|a| a.check()) {
        return refuse(gw, obs, &id, RpcError::internal(e.to_string())).await;
    }
    obs.dispatched(gw, upstream.name());
    tracing::debug!(upstream = %upstream.name(), %method, "forwarding");
    let cancel = session.begin_call(id.clone());
    // A modern upstream is told who the client is; a legacy client gets its
    // InputRequiredResults as requests it understands.
    let caller = upstream.is_modern().then(|| caller_of(session));
    let call = match upstream
        .call_as(method, Some(params), headers, caller.as_ref())
        .await
    {
        Ok(c) => c,
        Err(e) => {
            session.end_call(&id);
            let bytes = failure_bytes(&id, failures, session.modern, &e);
            if let Err(err) = obs.finish(gw, failure_outcome(&e), bytes.len()).await {
                tracing::error!(error = %err, "audit record not written");
            }
            return json_response(StatusCode::OK, bytes, None);
        }
    };
    // From here on, dropping this handler (the client's connection closed) hands
    // the call to a background drain instead of cancelling it.
    let mut pending = Pending {
        call: Some(call),
        cancel,
        a: Answering {
            gw: gw.clone(),
            session: session.clone(),
            upstream: upstream.name().clone(),
            id,
            failures,
            obs: Some(obs),
        },
    };
    // Phase: relay back.
    let Some(first) = pending.next().await else {
        return cancelled_response(&pending.a.id, accepts_sse);
    };
    // A modern client cannot be sent a request: bridge it (MRTR).
    let first = match first {
        CallEvent::Request {
            method,
            params,
            responder,
        } if session.modern => return pending.bridge(method, params, responder).await,
        other => other,
    };
    match first {
        CallEvent::Done(outcome) => {
            let status = status_of(session.modern, &outcome);
            let bytes = pending.answer(outcome).await;
            pending.finished();
            json_response(status, bytes, None)
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
                        let bytes = pending.answer(outcome).await;
                        pending.finished();
                        return json_response(StatusCode::OK, bytes, None);
                    }
                    CallEvent::Request { responder, method, .. } => {
                        responder
                            .refuse(ErrorCode::METHOD_NOT_FOUND, &format!("{method}: the client did not accept an SSE response, so it cannot be asked"))
                            .await
                    }
                    CallEvent::Notification(_) => {}
                }
                let Some(next) = pending.next().await else {
                    return cancelled_response(&pending.a.id, accepts_sse);
                };
                ev = next;
            }
        }
    }
}

/// The HTTP status of a JSON answer. A modern upstream's -32021 (a capability the
/// client did not declare) is the client's to fix and gets 400, as it would have
/// directly. Its -32020 or -32022 are about Manifold's own request, so they stay
/// errors of the call.
fn status_of(modern: bool, outcome: &CallOutcome) -> StatusCode {
    let CallOutcome::Error(raw) = outcome else {
        return StatusCode::OK;
    };
    if !modern {
        return StatusCode::OK;
    }
    #[derive(serde::Deserialize)]
    struct Code {
        code: i64,
    }
    match serde_json::from_str::<Code>(raw.get()).map(|c| ErrorCode(c.code)) {
        Ok(ErrorCode::MISSING_CLIENT_CAPABILITY) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// What a modern upstream is told about the client a request is made for.
fn caller_of(session: &DownSession) -> manifold_upstream::Caller {
    let level = session.log_level();
    manifold_upstream::Caller {
        capabilities: session.capabilities.clone(),
        log_level: (level != crate::logging::LEVEL_UNSET)
            .then(|| {
                crate::logging::LEVELS
                    .get(level as usize)
                    .map(|l| l.to_string())
            })
            .flatten(),
        bridge_input: !session.modern,
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
    cancel: CancellationToken,
    a: Answering,
}

/// Who gets a call's answer and how it is counted: what the handler, a pump and
/// the MRTR bridge share.
struct Answering {
    gw: Arc<Gateway>,
    session: Arc<DownSession>,
    upstream: Arc<str>,
    id: RequestId,
    failures: Failures,
    /// Metrics and audit for this request; taken when it is answered.
    obs: Option<Observed>,
}

impl Answering {
    /// Counts and audits an answer, then returns it. The response waits for its
    /// audit record (the writer back-pressures; with `fsync = "always"` the record
    /// is on disk first). A record that cannot be written is logged; the response
    /// still goes out, because the upstream already acted on the call.
    async fn answer(&mut self, outcome: CallOutcome) -> Vec<u8> {
        let audit_outcome = crate::observe::outcome_of(&outcome);
        let modern = self.session.modern;
        let bytes = outcome_bytes(
            &self.gw,
            &self.upstream,
            &self.id,
            self.failures,
            modern,
            outcome,
        );
        self.finish(audit_outcome, bytes.len()).await;
        bytes
    }

    async fn finish(&mut self, outcome: Outcome, bytes: usize) {
        if let Some(o) = self.obs.take() {
            if let Err(e) = o.finish(&self.gw, outcome, bytes).await {
                tracing::error!(error = %e, "audit record not written");
            }
        }
    }

    /// A copy that takes over the audit record (which is written once).
    fn hand_over(&mut self) -> Answering {
        Answering {
            gw: self.gw.clone(),
            session: self.session.clone(),
            upstream: self.upstream.clone(),
            id: self.id.clone(),
            failures: self.failures,
            obs: self.obs.take(),
        }
    }
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
                self.a.finish(Outcome::Cancelled, 0).await;
                None
            }
        }
    }

    async fn answer(&mut self, outcome: CallOutcome) -> Vec<u8> {
        self.a.answer(outcome).await
    }

    /// Hands the call to the MRTR bridge, which answers it with an
    /// `InputRequiredResult` (or -32021) and holds it for the client's retry.
    async fn bridge(
        mut self,
        method: String,
        params: Option<Value>,
        responder: manifold_upstream::Responder,
    ) -> Response<Body> {
        let Some(call) = self.call.take() else {
            return cancelled_response(&self.a.id, false);
        };
        self.a.session.end_call(&self.a.id);
        let mut a = self.a.hand_over();
        let answer: crate::mrtr::Answer =
            Box::new(move |outcome| Box::pin(async move { a.answer(outcome).await }));
        let first = crate::mrtr::Question {
            method,
            params,
            responder,
        };
        crate::mrtr::bridge(
            &self.a.gw,
            &self.a.session.capabilities,
            &self.a.id,
            self.a.session.request_digest.clone(),
            call,
            first,
            answer,
        )
        .await
    }

    /// The call is over: the session forgets it.
    fn finished(&mut self) {
        self.call = None;
        self.a.session.end_call(&self.a.id);
    }

    /// Moves the call to a pump that relays it onto `tx`, starting with `first`.
    fn stream_to(&mut self, tx: mpsc::Sender<Bytes>, first: CallEvent) {
        if let Some(call) = self.call.take() {
            self.spawn_pump(call, tx, Some(first), false);
        }
    }

    fn spawn_pump(
        &mut self,
        call: Call,
        tx: mpsc::Sender<Bytes>,
        first: Option<CallEvent>,
        gone: bool,
    ) {
        let pump = Pump {
            a: self.a.hand_over(),
            tx,
            minted: Vec::new(),
            gone,
        };
        let (cancel, shutdown) = (self.cancel.clone(), self.a.gw.shutdown.clone());
        use tracing::Instrument;
        self.a
            .gw
            .tasks
            .spawn(pump.run(call, first, cancel, shutdown).in_current_span());
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
    a: Answering,
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
            if self.gone && self.a.session.modern {
                // 2026-07-28: closing the response stream cancels the request.
                call.cancel("the client closed the response stream").await;
                self.a.finish(Outcome::Cancelled, 0).await;
                break;
            }
            let ev = match next.take() {
                Some(ev) => ev,
                None => tokio::select! {
                    ev = call.next() => ev,
                    _ = cancel.cancelled() => {
                        // No response for a cancelled request: the stream just ends.
                        call.cancel("cancelled by the client").await;
                        self.a.finish(Outcome::Cancelled, 0).await;
                        break;
                    }
                    _ = shutdown.cancelled() => {
                        call.cancel("the gateway is shutting down").await;
                        self.a.finish(Outcome::Cancelled, 0).await;
                        break;
                    }
                },
            };
            match ev {
                CallEvent::Done(outcome) => {
                    let bytes = self.a.answer(outcome).await;
                    if !self.gone {
                        let _ = self.tx.send(sse_message(&bytes)).await;
                    }
                    break;
                }
                other => {
                    if !self.relay(other).await && !self.gone {
                        self.gone = true;
                        tracing::debug!(request = %self.a.id, "the client disconnected; the call runs on upstream");
                    }
                }
            }
        }
        self.a.session.end_call(&self.a.id);
        for id in &self.minted {
            self.a.session.forget_pending(id);
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
                        ErrorCode::INTERNAL_ERROR,
                        &format!("{method}: the client that made this call has disconnected"),
                    )
                    .await;
            }
            return false;
        }
        match ev {
            CallEvent::Notification(mut msg) => {
                if !crate::logging::for_client(&self.a.session, &self.a.upstream, &mut msg) {
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
                if self.a.session.modern {
                    // 2026-07-28 servers never send requests (MRTR replaced them);
                    // once the response streams, it is too late for an
                    // InputRequiredResult.
                    responder
                        .refuse(ErrorCode::METHOD_NOT_FOUND, &format!("{method} cannot reach a 2026-07-28 client after its response started streaming"))
                        .await;
                    return true;
                }
                if let Some(cap) = required_capability(&method) {
                    if !self.a.session.has_capability(cap) {
                        responder
                            .refuse(ErrorCode::METHOD_NOT_FOUND, &format!("the client did not declare the `{cap}` capability, so {method} cannot be relayed"))
                            .await;
                        return true;
                    }
                }
                let down_id = match self.a.session.add_pending(responder) {
                    Ok(id) => id,
                    Err(responder) => {
                        responder
                            .refuse(
                                ErrorCode::INTERNAL_ERROR,
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
