//! The relay: forward a resolved request to its upstream and relay everything that
//! comes back to the calling client only.
//!
//! The reply is one message when the upstream's result comes first, and a stream
//! as soon as the upstream sends a notification (progress, log) or a request
//! (sampling, elicitation) before the result; the stream then carries those, with
//! ids minted for this client, and ends with the result. A 2026-07-28 client
//! cannot be sent a request: the upstream's questions become an
//! `InputRequiredResult` instead (`input_required`).
//!
//! Invariants: the request's observation is taken here and finished exactly once
//! by [`Answering`], on every exit — an answer, an upstream failure, a
//! cancellation, a client that left (the call then runs on to its outcome, or is
//! cancelled for a client whose disconnection cancels), an expired input round.
//!
//! Not here: resolving names (`resolve`), deciding whether to forward (the
//! handlers), framing the stream (the front door).

pub(crate) mod input_required;
mod on_behalf;
pub(crate) mod resolve;

use bytes::Bytes;
use http::StatusCode;
use manifold_audit::Outcome;
use manifold_protocol::methods::required_capability;
use manifold_protocol::{jsonrpc, results, ErrorCode, RequestId};
use manifold_upstream::{Call, CallEvent, CallOutcome, UpstreamError};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::era::Era;
use crate::exchange::{Caller, Exchange};
use crate::observe::{outcome_of, Observed};
use crate::refusal::Refusal;
use crate::reply::Reply;
use crate::state::log_levels::for_client;
use crate::state::Gateway;
pub(crate) use resolve::{ResultShape, Target};

/// Phases dispatch and relay: sends the request to its target and answers the
/// client with one message, or with a stream once the upstream streams.
pub(crate) async fn forward(
    x: &mut Exchange,
    mut params: Map<String, Value>,
    target: Target,
) -> Result<Reply, Refusal> {
    let gw = x.gw.clone();
    // With `on_failure = "reject"`, no call runs while its record cannot be kept.
    if let Some(Err(e)) = gw.auditor.as_ref().map(|a| a.check()) {
        return Err(Refusal::AuditUnavailable(e));
    }
    let Target {
        upstream,
        mut headers,
        shape,
        original,
        output_check,
        permit,
        injected: _,
    } = target;
    // Before anything is counted as dispatched: a caller who cannot be
    // represented upstream is refused here.
    if let Some(h) = on_behalf::authorization(x, &upstream).await? {
        headers.push(h);
    }
    let cancel = x
        .caller
        .begin_call(&x.rpc_id)
        .ok_or(Refusal::TooManyCalls {
            limit: gw.cfg().limits.max_calls_per_session,
        })?;
    let mut obs = x.obs.take();
    if let Some(o) = obs.as_mut() {
        o.original = original;
        o.dispatched(&upstream);
    }
    // The upstream's part of the trace: open until the answer (it rides in
    // `Answering`, into the stream's pump if there is one).
    let span = crate::tracectx::upstream_call(&x.method, upstream.name());
    span.in_scope(|| crate::tracectx::propagate(&mut params, &mut headers));
    let mut a = Answering {
        span: span.clone(),
        gw: gw.clone(),
        caller: x.caller.clone(),
        upstream: upstream.name().clone(),
        id: x.rpc_id.clone(),
        shape,
        era: x.era,
        obs,
        output_check,
        permit,
    };
    tracing::debug!(upstream = %upstream.name(), method = %x.method,
        principal = x.principal.audit_name(), "forwarding");
    // A modern upstream is told who the client is; a session-era client gets its
    // InputRequiredResults as requests it understands.
    let for_upstream = upstream.is_modern().then(|| x.caller.for_upstream());
    let call = match upstream
        .call_as(&x.method, Some(params), headers, for_upstream.as_ref())
        .instrument(span)
        .await
    {
        Ok(c) => c,
        Err(e) => {
            x.caller.end_call(&x.rpc_id);
            let bytes = a.fail(e).await;
            return Ok(Reply::ok(bytes));
        }
    };
    // From here on, dropping this handler (the client's connection closed) hands
    // the call to a background drain instead of abandoning it.
    let mut pending = Pending {
        call: Some(call),
        cancel,
        a,
    };
    let accepts_stream = x.arrival.accepts.stream;
    let Some(first) = pending.next().await else {
        return cancelled(accepts_stream);
    };
    let first = match first {
        CallEvent::Request {
            method,
            params,
            responder,
        } if x.era == Era::Stateless => {
            let question = input_required::Question {
                method,
                params,
                responder,
            };
            return Ok(pending.bridge(x, question).await);
        }
        other => other,
    };
    match first {
        CallEvent::Done(outcome) => {
            let status = status_of(x.era, &outcome);
            let bytes = pending.answer(outcome).await;
            Ok(Reply::Message {
                status,
                bytes: bytes.into(),
                session: None,
                refused: false,
                retry_after: None,
            })
        }
        ev if accepts_stream => {
            let (tx, rx) = mpsc::channel::<Bytes>(gw.cfg().limits.stream_queue);
            pending.stream_to(tx, ev);
            Ok(Reply::Stream(rx))
        }
        mut ev => loop {
            // The client cannot take a stream: drop notifications, refuse
            // requests, answer with the result alone.
            match ev {
                CallEvent::Done(outcome) => {
                    return Ok(Reply::ok(pending.answer(outcome).await));
                }
                CallEvent::Request { responder, method, .. } => {
                    responder
                        .refuse(
                            ErrorCode::METHOD_NOT_FOUND,
                            &format!("{method}: the client did not accept an SSE response, so it cannot be asked"),
                        )
                        .await
                }
                CallEvent::Notification(_) => {}
            }
            let Some(next) = pending.next().await else {
                return cancelled(accepts_stream);
            };
            ev = next;
        },
    }
}

/// The answer to a request the client cancelled while it waited (its
/// observation is finished as cancelled). The spec says a cancelled request gets
/// no response, so a client that accepts a stream gets one that ends empty; one
/// that does not gets an error it can read.
fn cancelled(accepts_stream: bool) -> Result<Reply, Refusal> {
    if accepts_stream {
        Ok(Reply::empty_stream())
    } else {
        Err(Refusal::Cancelled)
    }
}

/// The HTTP status of a one-message answer. A modern upstream's -32021 (a
/// capability the client did not declare) is the client's to fix and gets 400, as
/// it would have directly. Its -32020 or -32022 are about Manifold's own request,
/// so they stay errors of the call.
fn status_of(era: Era, outcome: &CallOutcome) -> StatusCode {
    let CallOutcome::Error(raw) = outcome else {
        return StatusCode::OK;
    };
    if era != Era::Stateless {
        return StatusCode::OK;
    }
    match ErrorCode::of_error(raw.get()) {
        Some(ErrorCode::MISSING_CLIENT_CAPABILITY) => StatusCode::BAD_REQUEST,
        _ => StatusCode::OK,
    }
}

/// Who gets a call's answer and how it is recorded: what the handler, a pump and
/// the input bridge share. Holds the request's observation until it is finished.
pub(crate) struct Answering {
    /// `upstream.call`: closes when the answer is recorded (this drops).
    span: tracing::Span,
    gw: Arc<Gateway>,
    caller: Caller,
    upstream: Arc<str>,
    id: RequestId,
    shape: ResultShape,
    era: Era,
    obs: Option<Observed>,
    /// The exposed tool whose `outputSchema` the result is checked against.
    output_check: Option<String>,
    /// Rate-limit places held until the answer (dropped with this).
    permit: Option<manifold_policy::Permit>,
}

impl Answering {
    /// Records an answer, then returns its bytes. The response waits for its audit
    /// record. URIs in a result are learned first, so a client's `resources/read`
    /// of a link it was just given reaches its owner.
    async fn answer(&mut self, outcome: CallOutcome) -> Vec<u8> {
        let outcome = self.check_output(outcome);
        let recorded = outcome_of(&outcome);
        let bytes = match outcome {
            CallOutcome::Result(raw) => {
                self.gw.learned.learn(&self.upstream, &raw);
                match (self.era, self.shape) {
                    (Era::Stateless, ResultShape::Read) => {
                        let text = results::with_read_hints(raw.get());
                        jsonrpc::response_bytes_from_json(&self.id, text.as_bytes())
                    }
                    (Era::Stateless, _) => {
                        let text = results::with_result_type(raw.get());
                        jsonrpc::response_bytes_from_json(&self.id, text.as_bytes())
                    }
                    (Era::Session, _) => jsonrpc::response_bytes(&self.id, &raw),
                }
            }
            CallOutcome::Error(raw) => jsonrpc::error_bytes_raw(&self.id, &raw),
            CallOutcome::Failed(e) => self.failure_bytes(&e),
        };
        self.finish(recorded, bytes.len()).await;
        bytes
    }

    /// `[validation] output`: a result whose `structuredContent` breaks the
    /// tool's `outputSchema` is logged (`warn`, within a budget) or replaced by a
    /// tool error naming each failure (`enforce`).
    fn check_output(&self, outcome: CallOutcome) -> CallOutcome {
        let (Some(tool), CallOutcome::Result(raw)) = (&self.output_check, &outcome) else {
            return outcome;
        };
        let Ok(result) = serde_json::from_str::<Value>(raw.get()) else {
            return outcome;
        };
        let Err(errors) = self.gw.validators.load().check_output(tool, &result) else {
            return outcome;
        };
        let upstream = &self.upstream;
        match self.gw.cfg().validate_output {
            manifold_config::OutputMode::Enforce => {
                let text = format!(
                    "The result of `{tool}` from upstream `{upstream}` does not match the tool's outputSchema:\n{}",
                    errors.join("\n")
                );
                let error = json!({"content": [{"type": "text", "text": text}], "isError": true});
                match serde_json::value::RawValue::from_string(error.to_string()) {
                    Ok(raw) => CallOutcome::Result(raw),
                    Err(_) => outcome,
                }
            }
            _ => {
                if let Some(suppressed) = self.gw.output_warnings.allow() {
                    tracing::warn!(%tool, %upstream, errors = %errors.join("; "), suppressed,
                        "a result does not match its tool's outputSchema; passed on ([validation] output = \"warn\")");
                }
                outcome
            }
        }
    }

    /// The upstream could not be asked: recorded by the failure's kind.
    async fn fail(&mut self, e: UpstreamError) -> Vec<u8> {
        self.answer(CallOutcome::Failed(e)).await
    }

    /// Answers with a refusal (recorded with its code).
    async fn refuse(&mut self, r: Refusal) -> Reply {
        let reply = r.reply(Some(&self.id), self.era);
        self.finish(r.outcome(), reply.len()).await;
        reply
    }

    fn failure_bytes(&self, e: &UpstreamError) -> Vec<u8> {
        match self.shape {
            ResultShape::Tool => {
                let mut result =
                    json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true});
                if self.era == Era::Stateless {
                    result["resultType"] = json!("complete");
                }
                jsonrpc::response_bytes_from_json(&self.id, result.to_string().as_bytes())
            }
            ResultShape::Rpc | ResultShape::Read => {
                let r = Refusal::Upstream(e.clone());
                jsonrpc::error_bytes(Some(&self.id), &r.to_rpc_error())
            }
        }
    }

    async fn finish(&mut self, outcome: Outcome, bytes: usize) {
        if let Some(o) = self.obs.take() {
            o.finish(outcome, bytes).await;
        }
    }

    /// A copy that takes over the observation (which is finished once).
    fn hand_over(&mut self) -> Answering {
        Answering {
            span: self.span.clone(),
            gw: self.gw.clone(),
            caller: self.caller.clone(),
            upstream: self.upstream.clone(),
            id: self.id.clone(),
            shape: self.shape,
            era: self.era,
            obs: self.obs.take(),
            output_check: self.output_check.clone(),
            permit: self.permit.take(),
        }
    }
}

/// A call the request handler is waiting on.
///
/// A session-era client that disconnects has not cancelled its request
/// (2025-11-25 transports: "Disconnection SHOULD NOT be interpreted as the client
/// cancelling its request"). If the handler is dropped with the call unfinished,
/// `Drop` hands the call to a background [`Pump`] that runs it to its outcome,
/// still honouring the client's `notifications/cancelled` (the session keeps the
/// request in flight), the session's end and the gateway's shutdown.
struct Pending {
    /// `None` once the call has finished or moved to a pump.
    call: Option<Call>,
    cancel: CancellationToken,
    a: Answering,
}

impl Pending {
    /// The next event, or `None` when the client cancelled the request (the call
    /// has then been cancelled upstream and recorded).
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
        let bytes = self.a.answer(outcome).await;
        self.finished();
        bytes
    }

    /// Hands the call to the input bridge, which answers it with an
    /// `InputRequiredResult` (or -32021) and holds it for the client's retry.
    async fn bridge(mut self, x: &Exchange, first: input_required::Question) -> Reply {
        let Some(call) = self.call.take() else {
            return self.a.refuse(Refusal::Cancelled).await;
        };
        self.a.caller.end_call(&self.a.id);
        let a = self.a.hand_over();
        input_required::bridge(x, call, first, a).await
    }

    /// The call is over: the caller forgets it.
    fn finished(&mut self) {
        self.call = None;
        self.a.caller.end_call(&self.a.id);
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
        let (cancel, shutdown) = (self.cancel.clone(), self.a.gw.stop.clone());
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

/// Relays a call's events onto its response stream until the outcome.
struct Pump {
    a: Answering,
    tx: mpsc::Sender<Bytes>,
    /// Ids of server→client requests minted on this stream, forgotten at the end.
    minted: Vec<String>,
    /// The client's connection is gone: the call runs on to its outcome (only
    /// `notifications/cancelled` cancels it), with nothing relayed, unless the
    /// client's disconnection cancels.
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
            if self.gone && self.a.caller.cancels_on_disconnect() {
                // 2026-07-28: closing the response stream cancels the request.
                call.cancel("the client closed the response stream").await;
                self.a.finish(Outcome::Cancelled, 0).await;
                break;
            }
            let ev = match next.take() {
                Some(ev) => ev,
                None => tokio::select! {
                    ev = call.next() => ev,
                    // Noticed while the upstream is quiet too, not only at the
                    // next write: a 2026-07-28 client cancels by closing.
                    _ = self.tx.closed(), if !self.gone && self.a.caller.cancels_on_disconnect() => {
                        self.gone = true;
                        continue;
                    }
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
                        self.write(bytes).await;
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
        self.a.caller.end_call(&self.a.id);
        if let Some(session) = self.a.caller.session() {
            for id in &self.minted {
                session.forget_pending(id);
            }
        }
    }

    /// Writes one message to the client's stream; false when the client is gone,
    /// or has not read for `limits.stream_write_timeout` (a client that stops
    /// reading must not hold the call's relay, and with it an upstream slot).
    async fn write(&self, bytes: Vec<u8>) -> bool {
        let bound = self.a.gw.cfg().limits.stream_write_timeout;
        matches!(
            tokio::time::timeout(bound, self.tx.send(Bytes::from(bytes))).await,
            Ok(Ok(()))
        )
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
                if !for_client(self.a.caller.log_filter(), &self.a.upstream, &mut msg) {
                    return true;
                }
                let bytes = serde_json::to_vec(&Value::Object(msg)).unwrap_or_default();
                self.write(bytes).await
            }
            CallEvent::Request {
                method,
                params,
                responder,
            } => {
                let Some(session) = self
                    .a
                    .caller
                    .session()
                    .filter(|_| self.a.caller.can_be_asked())
                else {
                    // 2026-07-28 servers never send requests (MRTR replaced them);
                    // once the response streams, it is too late for an
                    // InputRequiredResult.
                    responder
                        .refuse(ErrorCode::METHOD_NOT_FOUND, &format!("{method} cannot reach a 2026-07-28 client after its response started streaming"))
                        .await;
                    return true;
                };
                if let Some(cap) = required_capability(&method) {
                    if !session.has_capability(cap) {
                        responder
                            .refuse(ErrorCode::METHOD_NOT_FOUND, &format!("the client did not declare the `{cap}` capability, so {method} cannot be relayed"))
                            .await;
                        return true;
                    }
                }
                let down_id = match session.add_pending(responder) {
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
                self.write(bytes).await
            }
            CallEvent::Done(_) => true,
        }
    }
}
