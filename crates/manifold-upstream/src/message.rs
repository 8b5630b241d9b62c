//! What a request in flight yields to the gateway: [`CallEvent`]s (notifications
//! and server→client requests tied to it), then one [`CallOutcome`]; and the
//! [`Responder`] that answers a server→client request, refusing with a reason
//! from one table ([`NotRelayed`]).
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

use crate::error::UpstreamError;

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
/// that upstream's own id), or, for a question bridged from a 2026-07-28 upstream's
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

    /// Refuses the request with the JSON-RPC error the table gives `why`.
    pub async fn refuse(self, why: NotRelayed) {
        let err = serde_json::json!({"code": why.code().0, "message": why.to_string()}).to_string();
        let raw = RawValue::from_string(err).unwrap_or_else(|_| RawValue::NULL.to_owned());
        self.respond(Err(raw)).await;
    }
}

/// Why a request an upstream sent (sampling, elicitation, roots) is answered
/// by Manifold with an error instead of by a client: the one table of those
/// answers, each with its JSON-RPC code ([`NotRelayed::code`]) and message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotRelayed {
    /// Manifold's own request (a handshake, a list fetch, a subscription).
    #[error("{method} is not available during setup")]
    DuringSetup { method: String },
    #[error("{method} is not available for a request Manifold makes itself")]
    OwnRequest { method: String },
    #[error("{method} is not answered on a subscription stream")]
    OnSubscription { method: String },
    /// Outside any call: there is no one client to ask.
    #[error("{method} is only relayed during a call, to the client that made it")]
    OutsideCall { method: String },
    /// The call's client takes one JSON answer, not a stream it could be asked on.
    #[error("{method}: the client did not accept an SSE response, so it cannot be asked")]
    NoStream { method: String },
    #[error("{method}: the client that made this call has disconnected")]
    ClientGone { method: String },
    /// The call is shared by identical calls of several clients (`coalesce =
    /// true`): there is no one client to ask.
    #[error("{method} is not relayed during a call shared by identical calls (coalesce = true)")]
    Coalesced { method: String },
    /// A stdio client closed its input: it can no longer answer.
    #[error("the client closed its input")]
    ClientClosedInput,
    /// A 2026-07-28 client is asked with an `InputRequiredResult`, which
    /// cannot follow a response that already streams.
    #[error("{method} cannot reach a 2026-07-28 client after its response started streaming")]
    AfterStreamStarted { method: String },
    #[error(
        "the client did not declare the `{capability}` capability, so {method} cannot be relayed"
    )]
    MissingCapability { capability: String, method: String },
    /// A 2026-07-28 client's round: one of its questions needs a capability
    /// the client lacks, so none is asked.
    #[error("the client lacks a required capability")]
    RoundMissesCapability,
    #[error("too many requests are waiting for this client's answers")]
    TooManyPending,
    #[error("the call already ended")]
    CallEnded,
    #[error("too many calls are waiting for client input")]
    HeldCallsFull,
    #[error("too many calls of this principal are waiting for client input")]
    HeldCallsFullForPrincipal,
    #[error("the client's retry carried no response for this input request")]
    NoResponseInRetry,
}

impl NotRelayed {
    /// The JSON-RPC code of the answer.
    pub fn code(&self) -> manifold_protocol::ErrorCode {
        use manifold_protocol::ErrorCode;
        use NotRelayed::*;
        match self {
            DuringSetup { .. }
            | OwnRequest { .. }
            | OnSubscription { .. }
            | OutsideCall { .. }
            | NoStream { .. }
            | AfterStreamStarted { .. }
            | Coalesced { .. }
            | MissingCapability { .. } => ErrorCode::METHOD_NOT_FOUND,
            RoundMissesCapability => ErrorCode::MISSING_CLIENT_CAPABILITY,
            NoResponseInRetry => ErrorCode::INVALID_PARAMS,
            ClientGone { .. }
            | ClientClosedInput
            | TooManyPending
            | CallEnded
            | HeldCallsFull
            | HeldCallsFullForPrincipal => ErrorCode::INTERNAL_ERROR,
        }
    }
}
