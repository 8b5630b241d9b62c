//! A request in flight to an upstream, as the gateway sees it: a stream of related
//! notifications and server→client requests, then exactly one outcome.
//!
//! Dropping a [`Call`] before its outcome tells the upstream the request is
//! cancelled (`notifications/cancelled`): nobody is left to read the answer.

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::supervisor::Session;
use crate::UpstreamError;

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

/// Answers one server→client request: back to the upstream that sent it (with
/// that upstream's own id), or, for a question bridged from a modern upstream's
/// `InputRequiredResult`, into the call's next retry.
#[derive(Debug)]
pub struct Responder {
    pub(crate) to: AnswerTo,
}

#[derive(Debug)]
pub(crate) enum AnswerTo {
    Upstream {
        upstream_id: Value,
        session: Arc<Session>,
    },
    Retry {
        key: String,
        answers: mpsc::Sender<crate::bridge::Answer>,
    },
}

impl Responder {
    pub(crate) fn upstream(upstream_id: Value, session: Arc<Session>) -> Responder {
        Responder {
            to: AnswerTo::Upstream {
                upstream_id,
                session,
            },
        }
    }

    /// Sends the client's answer (`{"result":…}` or `{"error":…}` member) upstream.
    pub async fn respond(self, outcome: Result<Box<RawValue>, Box<RawValue>>) {
        match self.to {
            AnswerTo::Upstream {
                upstream_id,
                session,
            } => {
                let id = upstream_id.to_string();
                let (member, raw) = match &outcome {
                    Ok(r) => ("result", r.get()),
                    Err(e) => ("error", e.get()),
                };
                let bytes = format!(r#"{{"jsonrpc":"2.0","id":{id},"{member}":{raw}}}"#);
                session.send_message(bytes.into_bytes()).await;
            }
            AnswerTo::Retry { key, answers } => {
                // The channel holds one slot per question of the round.
                let _ = answers.try_send((key, outcome));
            }
        }
    }

    /// Refuses the request with a JSON-RPC error.
    pub async fn refuse(self, code: i64, message: &str) {
        let err = serde_json::json!({"code": code, "message": message}).to_string();
        let raw = RawValue::from_string(err).unwrap_or_else(|_| RawValue::NULL.to_owned());
        self.respond(Err(raw)).await;
    }
}

/// The transport work of one call (an HTTP exchange), polled by the call itself.
pub(crate) type Driver = std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>;

/// A request in flight.
pub struct Call {
    /// Set for a legacy caller's call to a modern upstream (see `bridge`).
    pub(crate) bridge: Option<Box<crate::bridge::Bridge>>,
    /// HTTP: the POST and its reply, driven from [`Call::next`]; it ends once the
    /// outcome is dispatched. `None` for stdio, whose reader task serves all calls.
    pub(crate) driver: Option<Driver>,
    pub(crate) id: u64,
    pub(crate) session: Arc<Session>,
    pub(crate) events: mpsc::Receiver<CallEvent>,
    pub(crate) done: oneshot::Receiver<CallOutcome>,
    pub(crate) deadline: Instant,
    pub(crate) timeout: Duration,
    pub(crate) finished: bool,
}

impl Call {
    /// The next event; `Done` comes last and exactly once. After the deadline the
    /// call is cancelled upstream and ends with a timeout.
    pub async fn next(&mut self) -> CallEvent {
        if self.bridge.is_none() {
            return self.next_raw().await;
        }
        crate::bridge::next(self).await
    }

    /// The next event of the current exchange, as the upstream sent it.
    pub(crate) async fn next_raw(&mut self) -> CallEvent {
        if self.finished {
            return CallEvent::Done(CallOutcome::Failed(UpstreamError::Cancelled {
                upstream: self.session.router.upstream.to_string(),
            }));
        }
        loop {
            tokio::select! {
                biased;
                Some(ev) = self.events.recv() => return ev,
                outcome = &mut self.done => {
                    // Events sent before the outcome come first.
                    if let Ok(ev) = self.events.try_recv() {
                        // Put the outcome back by finishing on the next call.
                        let outcome = outcome.unwrap_or_else(|_| self.lost());
                        self.stash(outcome);
                        return ev;
                    }
                    self.finished = true;
                    return CallEvent::Done(outcome.unwrap_or_else(|_| self.lost()));
                }
                // The exchange finished: its outcome is in `done` (or the router
                // failed the call); loop to collect it.
                _ = async { if let Some(d) = self.driver.as_mut() { d.await } },
                    if self.driver.is_some() => {
                    self.driver = None;
                }
                _ = tokio::time::sleep_until(self.deadline) => return self.timed_out().await,
            }
        }
    }

    /// Ends the call at its deadline: cancelled upstream, a timeout for the caller.
    pub(crate) async fn timed_out(&mut self) -> CallEvent {
        self.cancel_upstream("timeout").await;
        self.finished = true;
        self.driver = None;
        CallEvent::Done(CallOutcome::Failed(UpstreamError::Timeout {
            upstream: self.session.router.upstream.to_string(),
            timeout: self.timeout,
        }))
    }

    fn lost(&self) -> CallOutcome {
        CallOutcome::Failed(UpstreamError::unavailable(
            &self.session.router.upstream,
            "the connection closed before the response",
        ))
    }

    fn stash(&mut self, outcome: CallOutcome) {
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(outcome);
        self.done = rx;
    }

    /// Waits for the outcome alone: notifications are dropped and server→client
    /// requests refused (for requests Manifold makes on its own behalf, such as
    /// `logging/setLevel` or `resources/subscribe`).
    pub async fn outcome(&mut self) -> CallOutcome {
        loop {
            match self.next().await {
                CallEvent::Done(outcome) => return outcome,
                CallEvent::Request {
                    method, responder, ..
                } => {
                    responder
                        .refuse(
                            manifold_protocol::ErrorCode::METHOD_NOT_FOUND.0,
                            &format!(
                                "{method} is not available for a request Manifold makes itself"
                            ),
                        )
                        .await
                }
                // A log message the upstream tied to this call still reaches
                // the clients that listen for logs.
                CallEvent::Notification(msg) => self.session.router.unrouted(msg),
            }
        }
    }

    /// The id Manifold used upstream.
    pub fn upstream_id(&self) -> u64 {
        self.id
    }

    /// Cancels the call upstream (`notifications/cancelled`) and ends it.
    pub async fn cancel(&mut self, reason: &str) {
        if !self.finished {
            self.cancel_upstream(reason).await;
            self.finished = true;
        }
        // Over stateless HTTP, closing the response stream is the cancellation.
        self.driver = None;
    }

    /// Written over the session alone, not `&self`: the driver is not `Sync`, so a
    /// `&Call` held across an await would make the future not `Send`.
    fn cancel_upstream(&self, reason: &str) -> impl std::future::Future<Output = ()> + Send {
        let (session, id, reason) = (self.session.clone(), self.id, reason.to_string());
        async move {
            if session.router.forget(id) {
                session.send_cancelled(id, &reason).await;
            }
        }
    }
}

impl Drop for Call {
    fn drop(&mut self) {
        if !self.finished && self.session.router.forget(self.id) {
            let session = self.session.clone();
            let id = self.id;
            // Best effort, bounded by the session's own lifetime token.
            session.clone().spawn_owned(async move {
                session.send_cancelled(id, "the client went away").await;
            });
        }
    }
}
