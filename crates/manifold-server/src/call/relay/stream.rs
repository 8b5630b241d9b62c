//! Streaming a call's answer: [`Pending`] is a call the request's handler
//! waits on; once the upstream sends something before its result (a
//! notification, a request for the client), a [`Pump`] on a gateway task
//! relays the call's events onto the client's response stream until the
//! outcome.
//!
//! A session-era client that disconnects has not cancelled its request
//! (2025-11-25 transports: "Disconnection SHOULD NOT be interpreted as the
//! client cancelling its request"): if the handler is dropped with the call
//! unfinished, `Drop` hands the call to a pump that runs it to its outcome,
//! still honouring the client's `notifications/cancelled` (the session keeps
//! the request in flight), the session's end and the gateway's shutdown. A
//! 2026-07-28 client cancels by closing its stream.
//!
//! Invariants: every exit of a pump records the call once (its
//! [`Answering`]); a write to a client that stopped reading is bounded by
//! `limits.stream_write_timeout`; ids minted for the client's answers are
//! forgotten when the stream ends.
//!
//! Not here: what is asked of the client (`requests`), a 2026-07-28 client's
//! questions (`input_required`), framing the stream (the front door).

use bytes::Bytes;
use manifold_upstream::{Call, CallEvent, CallOutcome};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::input_required::{self, Question};
use super::requests;
use crate::call::context::Answering;
use crate::refusal::Refusal;
use crate::reply::Reply;
use crate::request::Request;
use crate::state::log_levels::for_client;

/// A call the request handler is waiting on.
pub(crate) struct Pending {
    /// `None` once the call has finished or moved to a pump.
    call: Option<Call>,
    cancel: CancellationToken,
    pub(crate) answering: Answering,
}

impl Pending {
    pub(crate) fn new(call: Call, cancel: CancellationToken, answering: Answering) -> Pending {
        Pending {
            call: Some(call),
            cancel,
            answering,
        }
    }

    /// The next event, or `None` when the client cancelled the request (the call
    /// has then been cancelled upstream and recorded).
    pub(crate) async fn next(&mut self) -> Option<CallEvent> {
        let call = self.call.as_mut()?;
        tokio::select! {
            ev = call.next() => {
                // Final once an event is out: a call is never sent again after.
                if let Some(n) = call.attempts() {
                    self.answering.facts.attempts = Some(n);
                }
                if self.answering.member.is_some() {
                    self.answering.member = Some(call.member());
                }
                Some(ev)
            }
            _ = self.cancel.cancelled() => {
                call.cancel("cancelled by the client").await;
                self.finished();
                self.answering.cancelled().await;
                None
            }
        }
    }

    pub(crate) async fn answer(&mut self, outcome: CallOutcome) -> Bytes {
        let bytes = self.answering.answer(outcome).await;
        self.finished();
        bytes
    }

    /// Hands the call to the input bridge, which answers it with an
    /// `InputRequiredResult` (or -32021) and holds it for the client's retry.
    pub(crate) async fn bridge(mut self, x: &Request, first: Question) -> Reply {
        let Some(call) = self.call.take() else {
            return self.answering.refuse(Refusal::Cancelled).await;
        };
        self.answering.caller.end_call(&self.answering.id);
        let a = self.answering.hand_over();
        input_required::bridge(x, call, first, a).await
    }

    /// The call is over: the caller forgets it.
    fn finished(&mut self) {
        self.call = None;
        self.answering.caller.end_call(&self.answering.id);
    }

    /// Moves the call to a pump that relays it onto `tx`, starting with `first`.
    pub(crate) fn stream_to(&mut self, tx: mpsc::Sender<Bytes>, first: CallEvent) {
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
            answering: self.answering.hand_over(),
            tx,
            minted: Vec::new(),
            gone,
        };
        let (cancel, shutdown) = (self.cancel.clone(), self.answering.gw.life.stop.clone());
        self.answering
            .gw
            .life
            .background
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
    answering: Answering,
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
        let caller = self.answering.caller.clone();
        let mut next = first;
        loop {
            // 2026-07-28: closing the response stream cancels the request.
            let closed = self.gone && caller.cancels_on_disconnect();
            let ev = match next.take() {
                Some(ev) if !closed => ev,
                _ => tokio::select! {
                    ev = call.next(), if !closed => ev,
                    // Noticed while the upstream is quiet too, not only at the
                    // next write: a 2026-07-28 client cancels by closing.
                    _ = self.tx.closed(), if !self.gone && caller.cancels_on_disconnect() => {
                        self.gone = true;
                        continue;
                    }
                    // No response for a cancelled request: the stream just ends.
                    why = ended(closed, &cancel, &shutdown) => {
                        call.cancel(why).await;
                        self.answering.cancelled().await;
                        break;
                    }
                },
            };
            match ev {
                CallEvent::Done(outcome) => {
                    let bytes = self.answering.answer(outcome).await;
                    if !self.gone {
                        self.write(bytes).await;
                    }
                    break;
                }
                other => {
                    if !self.relay(other).await && !self.gone {
                        self.gone = true;
                        tracing::debug!(request = %self.answering.id, "the client disconnected; the call runs on upstream");
                    }
                }
            }
        }
        caller.end_call(&self.answering.id);
        if let Some(session) = caller.session() {
            for id in &self.minted {
                session.forget_pending(id);
            }
        }
    }

    /// Writes one message to the client's stream; false when the client is gone,
    /// or has not read for `limits.stream_write_timeout` (a client that stops
    /// reading must not hold the call's relay, and with it an upstream slot).
    async fn write(&self, bytes: impl Into<Bytes>) -> bool {
        let bound = self.answering.gw.cfg().limits.stream_write_timeout;
        matches!(
            tokio::time::timeout(bound, self.tx.send(bytes.into())).await,
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
                requests::client_gone(method, responder).await;
            }
            return false;
        }
        match ev {
            CallEvent::Notification(mut msg) => {
                let a = &self.answering;
                if !for_client(a.caller.log_filter(), &a.upstream, &mut msg) {
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
                let caller = &self.answering.caller;
                match requests::to_client(caller, method, params, responder, &mut self.minted).await
                {
                    Some(bytes) => self.write(bytes).await,
                    None => true,
                }
            }
            CallEvent::Done(_) => true,
        }
    }
}

/// Why a pump's call ends without its outcome, once it does: the client's
/// stream closed (`closed`: at once), its cancellation, or shutdown.
async fn ended(
    closed: bool,
    cancel: &CancellationToken,
    shutdown: &CancellationToken,
) -> &'static str {
    if closed {
        return "the client closed the response stream";
    }
    tokio::select! {
        _ = cancel.cancelled() => "cancelled by the client",
        _ = shutdown.cancelled() => "the gateway is shutting down",
    }
}

/// The answer to a request the client cancelled while it waited (its
/// observation is finished as cancelled). The spec says a cancelled request gets
/// no response, so a client that accepts a stream gets one that ends empty; one
/// that does not gets an error it can read.
pub(super) fn cancelled(accepts_stream: bool) -> Result<Reply, Refusal> {
    if accepts_stream {
        Ok(Reply::empty_stream())
    } else {
        Err(Refusal::Cancelled)
    }
}
