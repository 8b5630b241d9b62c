//! What a request in flight yields to the gateway: [`CallEvent`]s (notifications
//! and server→client requests tied to it), then one [`CallOutcome`]; and the
//! [`Responder`] that answers a server→client request.
//!
//! Invariants: results and errors stay the upstream's bytes ([`RawValue`]); a
//! responder answers exactly once (it is consumed).
//!
//! Not here: where a message belongs (`router`), how bytes reach the upstream
//! (a transport, behind [`Outbound`]).

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio::sync::mpsc;

use crate::UpstreamError;

/// A boxed future: what the object-safe traits of this crate return.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Something the upstream sent about a call before its outcome.
#[derive(Debug)]
pub enum CallEvent {
    /// A notification tied to the call (progress with the client's own token
    /// restored, a log message). The whole message, members in order.
    Notification(Map<String, Value>),
    /// A server→client request (sampling, elicitation, roots) made during the call.
    Request {
        method: String,
        params: Option<Value>,
        responder: Responder,
    },
    /// The final outcome.
    Done(CallOutcome),
}

/// How a call ended.
#[derive(Debug)]
pub enum CallOutcome {
    /// The upstream's `result`, byte for byte.
    Result(Box<RawValue>),
    /// The upstream's `error` object, byte for byte.
    Error(Box<RawValue>),
    /// No response: timeout, connection loss, refusal.
    Failed(UpstreamError),
}

/// Sends a whole message (a notification or a response) to the upstream: the
/// transport's outbound half.
pub(crate) trait Outbound: Send + Sync {
    /// Best effort: a failure is logged by the transport (the connection's own
    /// health checks notice a dead upstream).
    fn send_message(&self, bytes: Vec<u8>) -> BoxFuture<'_, ()>;
}

impl std::fmt::Debug for dyn Outbound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Outbound")
    }
}

/// One answer to a question bridged from an `InputRequiredResult`: its
/// `inputRequests` key and the client's result or error.
pub(crate) type InputAnswer = (String, Result<Box<RawValue>, Box<RawValue>>);

/// Answers one server→client request: back to the upstream that sent it (with
/// that upstream's own id), or, for a question bridged from a modern upstream's
/// `InputRequiredResult`, into the call's next retry.
#[derive(Debug)]
pub struct Responder {
    to: AnswerTo,
}

#[derive(Debug)]
enum AnswerTo {
    Upstream {
        upstream_id: Value,
        out: Arc<dyn Outbound>,
    },
    Retry {
        key: String,
        answers: mpsc::Sender<InputAnswer>,
    },
    /// The gateway asked the question itself (a `[confirm]` prompt).
    Local(tokio::sync::oneshot::Sender<Answer>),
}

/// A client's answer to a server→client request: its `result` or its `error`.
pub type Answer = Result<Box<RawValue>, Box<RawValue>>;

impl Responder {
    /// Answers go to the upstream, under its own request id.
    pub(crate) fn upstream(upstream_id: Value, out: Arc<dyn Outbound>) -> Responder {
        Responder {
            to: AnswerTo::Upstream { upstream_id, out },
        }
    }

    /// Answers are collected under `key` for the call's next retry.
    pub(crate) fn retry(key: String, answers: mpsc::Sender<InputAnswer>) -> Responder {
        Responder {
            to: AnswerTo::Retry { key, answers },
        }
    }

    /// Answers come back to whoever asked: the gateway's own question. The
    /// receiver gets nothing if the responder is dropped unanswered.
    pub fn local() -> (Responder, tokio::sync::oneshot::Receiver<Answer>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        (
            Responder {
                to: AnswerTo::Local(tx),
            },
            rx,
        )
    }

    /// Sends the client's answer (`{"result":…}` or `{"error":…}` member) upstream.
    pub async fn respond(self, outcome: Result<Box<RawValue>, Box<RawValue>>) {
        match self.to {
            AnswerTo::Upstream { upstream_id, out } => {
                let id = upstream_id.to_string();
                let (member, raw) = match &outcome {
                    Ok(r) => ("result", r.get()),
                    Err(e) => ("error", e.get()),
                };
                let bytes = format!(r#"{{"jsonrpc":"2.0","id":{id},"{member}":{raw}}}"#);
                out.send_message(bytes.into_bytes()).await;
            }
            AnswerTo::Retry { key, answers } => {
                // The channel holds one slot per question of the round.
                let _ = answers.try_send((key, outcome));
            }
            AnswerTo::Local(tx) => {
                let _ = tx.send(outcome);
            }
        }
    }

    /// Refuses the request with a JSON-RPC error.
    pub async fn refuse(self, code: manifold_protocol::ErrorCode, message: &str) {
        let err = serde_json::json!({"code": code.0, "message": message}).to_string();
        let raw = RawValue::from_string(err).unwrap_or_else(|_| RawValue::NULL.to_owned());
        self.respond(Err(raw)).await;
    }
}
