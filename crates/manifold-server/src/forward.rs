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
use manifold_upstream::{Call, CallEvent, CallOutcome, UpstreamError};
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

/// The bytes of the final response for an outcome.
fn outcome_bytes(id: &RequestId, kind: Kind, outcome: CallOutcome) -> Vec<u8> {
    match outcome {
        CallOutcome::Result(raw) => jsonrpc::response_bytes(id, &raw),
        CallOutcome::Error(raw) => jsonrpc::error_bytes_raw(id, &raw),
        CallOutcome::Failed(e) => failure_bytes(id, kind, &e),
    }
}

fn failure_bytes(id: &RequestId, kind: Kind, e: &UpstreamError) -> Vec<u8> {
    match kind {
        Kind::Tools => {
            let result =
                json!({"content": [{"type": "text", "text": e.to_string()}], "isError": true});
            jsonrpc::response_bytes_from_json(id, result.to_string().as_bytes())
        }
        Kind::Prompts => jsonrpc::error_bytes(Some(id), &RpcError::new(e.code(), e.to_string())),
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
    let (upstream, original, headers) = {
        let catalog = gw.catalog.load();
        let Some(entry) = catalog.list(kind).get(&name) else {
            return error_response(&id, &unknown(kind, &name));
        };
        let Some(upstream) = gw.by_name.get(&entry.upstream).cloned() else {
            return error_response(&id, &unknown(kind, &name));
        };
        // Phase: rewrite. The upstream sees its own name; HTTP upstreams get the
        // SEP-2243 headers computed from its own schema.
        let mut headers = vec![
            (m::HEADER_METHOD.to_string(), method.to_string()),
            (
                m::HEADER_NAME.to_string(),
                encode_header_value(&entry.original),
            ),
        ];
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
        (upstream, entry.original.clone(), headers)
    };
    params.insert("name".into(), Value::String(original));

    // Phase: dispatch.
    let cancel = session.begin_call(id.clone());
    let mut call = match upstream.call(method, Some(params), headers).await {
        Ok(c) => c,
        Err(e) => {
            session.end_call(&id);
            return json_response(StatusCode::OK, failure_bytes(&id, kind, &e), None);
        }
    };
    let first = tokio::select! {
        ev = call.next() => ev,
        _ = cancel.cancelled() => {
            call.cancel("cancelled by the client").await;
            session.end_call(&id);
            return json_response(StatusCode::OK, cancelled_bytes(&id), None);
        }
    };
    // Phase: relay back.
    match first {
        CallEvent::Done(outcome) => {
            session.end_call(&id);
            json_response(StatusCode::OK, outcome_bytes(&id, kind, outcome), None)
        }
        ev if accepts_sse => {
            let (tx, rx) = mpsc::channel::<Bytes>(gw.config.limits.stream_queue);
            let pump = Pump {
                session: session.clone(),
                id,
                kind,
                tx,
                minted: Vec::new(),
            };
            let shutdown = gw.shutdown.clone();
            gw.tasks.spawn(pump.run(call, ev, cancel, shutdown));
            sse_response(rx, None)
        }
        ev => {
            // The client cannot take a stream: drop notifications, refuse requests,
            // answer with the result alone.
            let mut ev = ev;
            loop {
                match ev {
                    CallEvent::Done(outcome) => {
                        session.end_call(&id);
                        return json_response(StatusCode::OK, outcome_bytes(&id, kind, outcome), None);
                    }
                    CallEvent::Request { responder, method, .. } => {
                        responder
                            .refuse(-32601, &format!("{method}: the client did not accept an SSE response, so it cannot be asked"))
                            .await
                    }
                    CallEvent::Notification(_) => {}
                }
                ev = tokio::select! {
                    ev = call.next() => ev,
                    _ = cancel.cancelled() => {
                        call.cancel("cancelled by the client").await;
                        session.end_call(&id);
                        return json_response(StatusCode::OK, cancelled_bytes(&id), None);
                    }
                };
            }
        }
    }
}

/// Relays a call's events onto its SSE response until the outcome.
struct Pump {
    session: Arc<DownSession>,
    id: RequestId,
    kind: Kind,
    tx: mpsc::Sender<Bytes>,
    /// Ids of server→client requests minted on this stream, forgotten at the end.
    minted: Vec<String>,
}

impl Pump {
    async fn run(
        mut self,
        mut call: Call,
        first: CallEvent,
        cancel: CancellationToken,
        shutdown: CancellationToken,
    ) {
        let mut ev = first;
        loop {
            match ev {
                CallEvent::Done(outcome) => {
                    let bytes = outcome_bytes(&self.id, self.kind, outcome);
                    let _ = self.tx.send(sse_message(&bytes)).await;
                    break;
                }
                other => {
                    if !self.relay(other).await {
                        // The client went away: dropping the call cancels it upstream.
                        break;
                    }
                }
            }
            ev = tokio::select! {
                ev = call.next() => ev,
                _ = cancel.cancelled() => {
                    call.cancel("cancelled by the client").await;
                    let _ = self.tx.send(sse_message(&cancelled_bytes(&self.id))).await;
                    break;
                }
                _ = shutdown.cancelled() => {
                    call.cancel("the gateway is shutting down").await;
                    break;
                }
            };
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
        match ev {
            CallEvent::Notification(msg) => {
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
