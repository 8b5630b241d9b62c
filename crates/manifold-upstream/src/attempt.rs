//! [`Attempt`]: one request sent upstream and waited on — its events in order, then
//! exactly one outcome, or a timeout at its deadline.
//!
//! Dropping an attempt before its outcome tells the upstream the request is
//! cancelled (`notifications/cancelled`, or over 2026-07-28 HTTP closing the
//! response stream): nobody is left to read the answer.
//!
//! Not here: bridging an `InputRequiredResult` into several attempts
//! (`input_bridge`), the public [`Call`](crate::call::Call).

use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::connection::{Connection, Launched};
use crate::message::{CallEvent, CallOutcome};
use crate::transport::Driver;
use crate::{error::UpstreamError, facts::ClientFacts, facts::ExtraHeaders};

/// One request in flight.
pub(crate) struct Attempt {
    pub(crate) conn: Arc<Connection>,
    pub(crate) id: u64,
    events: mpsc::Receiver<CallEvent>,
    done: oneshot::Receiver<CallOutcome>,
    /// HTTP: the POST and its reply, driven from [`Attempt::next`]; it ends once
    /// the outcome is dispatched. `None` for stdio, whose reader serves all calls.
    driver: Option<Driver>,
    /// When the caller stops waiting (every retry of a bridged call shares
    /// it): a timer registered once for the attempt's life (a `sleep_until`
    /// per wait registered and removed a timer on every event).
    pub(crate) expiry: std::pin::Pin<Box<tokio::time::Sleep>>,
    /// The connection's end, waited on for the attempt's life (likewise
    /// registered once, not once per event).
    closed: std::pin::Pin<Box<tokio_util::sync::WaitForCancellationFutureOwned>>,
    pub(crate) timeout: Duration,
    finished: bool,
}

impl Attempt {
    /// Sends the request; the deadline starts now.
    pub(crate) async fn launch(
        conn: &Arc<Connection>,
        method: &str,
        params: Option<serde_json::Map<String, serde_json::Value>>,
        headers: ExtraHeaders,
        timeout: Duration,
        caller: Option<&ClientFacts>,
    ) -> Result<Attempt, UpstreamError> {
        let l = conn
            .launch(method, params, headers, timeout, caller)
            .await?;
        let deadline = Instant::now() + timeout;
        Ok(Attempt {
            conn: conn.clone(),
            id: l.id,
            events: l.events,
            done: l.done,
            driver: l.driver,
            expiry: Box::pin(tokio::time::sleep_until(deadline)),
            closed: Box::pin(conn.wire.closed.clone().cancelled_owned()),
            timeout,
            finished: false,
        })
    }

    /// Continues as another request of the same call (a retry), keeping the
    /// deadline.
    pub(crate) fn resend(&mut self, l: Launched) {
        self.id = l.id;
        self.events = l.events;
        self.done = l.done;
        self.driver = l.driver;
        self.finished = false;
    }

    fn upstream(&self) -> String {
        self.conn.wire.upstream().to_string()
    }

    /// The next event, as the upstream sent it; `Done` comes last and exactly
    /// once. After the deadline the request is cancelled upstream and ends with a
    /// timeout.
    pub(crate) async fn next(&mut self) -> CallEvent {
        if self.finished {
            return CallEvent::Done(CallOutcome::Failed(UpstreamError::Cancelled {
                upstream: self.upstream(),
            }));
        }
        loop {
            tokio::select! {
                // The deadline first: an upstream flooding progress cannot starve it.
                biased;
                _ = self.expiry.as_mut() => return self.timed_out().await,
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
                // The connection ended (a child that exited, a transport that
                // failed): no answer can come any more, so the call fails now,
                // whoever is waiting on it — the upstream's own actor included —
                // and whenever its actor gets round to failing the rest.
                _ = self.closed.as_mut() => return self.connection_ended().await,
            }
        }
    }

    /// The outcome of a request whose connection ended: what had already
    /// arrived, else the reason the connection ended.
    async fn connection_ended(&mut self) -> CallEvent {
        if let Ok(ev) = self.events.try_recv() {
            return ev;
        }
        if let Ok(outcome) = self.done.try_recv() {
            self.finished = true;
            return CallEvent::Done(outcome);
        }
        let ended = self.conn.ended(false).await;
        self.conn.wire.router.forget(self.id);
        // The request was sent; the upstream went away before answering (a
        // child that exited mid-call, an HTTP connection that failed).
        self.end(CallOutcome::Failed(UpstreamError::transient(
            self.conn.wire.upstream(),
            ended.reason,
            true,
        )))
    }

    /// Ends the attempt at its deadline: cancelled upstream (in the background), a
    /// timeout for the caller at once.
    pub(crate) async fn timed_out(&mut self) -> CallEvent {
        self.conn.cancel(self.id, "timeout");
        self.end(CallOutcome::Failed(UpstreamError::Timeout {
            upstream: self.upstream(),
            timeout: self.timeout,
        }))
    }

    /// Ends the attempt with `outcome` (nothing more is read).
    pub(crate) fn end(&mut self, outcome: CallOutcome) -> CallEvent {
        self.finished = true;
        self.driver = None;
        CallEvent::Done(outcome)
    }

    fn lost(&self) -> CallOutcome {
        CallOutcome::Failed(UpstreamError::transient(
            self.conn.wire.upstream(),
            "the connection closed before the response",
            true,
        ))
    }

    fn stash(&mut self, outcome: CallOutcome) {
        let (tx, rx) = oneshot::channel();
        let _ = tx.send(outcome);
        self.done = rx;
    }

    /// Cancels the request upstream (in the background) and ends the attempt.
    pub(crate) fn cancel(&mut self, reason: &str) {
        if !self.finished {
            self.conn.cancel(self.id, reason);
            self.finished = true;
        }
        // Over stateless HTTP, closing the response stream is the cancellation.
        self.driver = None;
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        if !self.finished {
            self.conn.cancel(self.id, "the client went away");
        }
    }
}
