//! [`Call`]: a request in flight to an upstream, as the gateway sees it — a stream
//! of related notifications and server→client requests, then exactly one outcome.
//! For a session-era caller of a 2026-07-28 upstream it hides the `InputRequiredResult`
//! rounds behind ordinary server→client requests (see `input_bridge`).
//!
//! Dropping a [`Call`] before its outcome cancels the request upstream: nobody is
//! left to read the answer.
//!
//! A guarded call ([`start_guarded`]: a client's, to an upstream with a
//! breaker or retries) passes its upstream's circuit breaker for each
//! attempt, and a call that may be repeated is sent again after a failure
//! that another attempt may get past ([`UpstreamError::retry_class`]), with
//! backoff, within the budget and the call's own deadline — but only while
//! nothing of it has been handed to the caller: once an event came out of
//! [`Call::next`], its first failure is its outcome.
//!
//! Not here: sending and reading (`connection`, the transports), one request's
//! lifecycle (`attempt`), the budget and backoff (`retry`), the breaker's
//! state (`breaker`).

use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use crate::attempt::Attempt;
use crate::breaker::{Admitted, Breaker};
use crate::connection::{Connection, Slot};
use crate::error::RetryClass;
use crate::input_bridge::{self, Bridge};
use crate::message::{CallEvent, CallOutcome, NotRelayed};
use crate::retry::{self, Retries};
use crate::{ClientFacts, ExtraHeaders, UpstreamError};

/// A request in flight.
pub struct Call {
    attempt: Attempt,
    /// Set for a session-era caller's call to a 2026-07-28 upstream (see `input_bridge`).
    bridge: Option<Box<Bridge>>,
    /// The breaker's leave for the current attempt (guarded calls).
    admitted: Option<Admitted>,
    /// What sending it again needs, while it still may be sent again.
    again: Option<Box<Again>>,
    /// Attempts made (1 but for a retried call).
    attempts: u32,
    /// Made past a breaker or with retries ([`start_guarded`]).
    guarded: bool,
}

/// How a guarded call is made: its upstream's breaker, and for a call that
/// may be repeated, its retries.
#[derive(Default)]
pub(crate) struct Guard {
    pub breaker: Option<Arc<Breaker>>,
    pub retries: Option<Arc<Retries>>,
}

/// A guarded call that could not be sent at all, and how many times it was
/// tried.
#[derive(Debug)]
pub struct NotStarted {
    pub error: UpstreamError,
    pub attempts: u32,
}

/// What sending a call again needs.
struct Again {
    upstream: String,
    slot: Arc<Slot>,
    retries: Arc<Retries>,
    breaker: Option<Arc<Breaker>>,
    method: String,
    params: Option<Map<String, Value>>,
    headers: ExtraHeaders,
    caller: Option<ClientFacts>,
    timeout: Duration,
    deadline: Instant,
    /// Retries left of `max`.
    left: u32,
}

impl Again {
    /// Whether `e` is worth another attempt, and one is left in the count,
    /// the deadline and the budget (a refusal by the budget is counted).
    fn may_retry(&mut self, e: &UpstreamError, attempts: u32) -> Option<Duration> {
        if e.retry_class() == RetryClass::No || self.left == 0 {
            return None;
        }
        let pause = retry::backoff(attempts);
        if Instant::now() + pause >= self.deadline || !self.retries.take() {
            return None;
        }
        self.left -= 1;
        Some(pause)
    }

    /// Waits `pause`, then sends the call again: a fresh attempt on the live
    /// connection (waiting for a restarting upstream within the deadline),
    /// past the breaker (whose leave records a launch that fails).
    async fn send(&self, pause: Duration) -> Result<Launched, UpstreamError> {
        tokio::time::sleep(pause).await;
        let until = self.deadline.min(Instant::now() + retry::RECONNECT_WAIT);
        let Some(conn) = self.slot.wait(until).await else {
            return Err(UpstreamError::transient(
                &self.upstream,
                "it did not come back in time for a retry",
                false,
            ));
        };
        let mut admitted = match &self.breaker {
            Some(b) => Some(b.admit()?),
            None => None,
        };
        let left = self.deadline.saturating_duration_since(Instant::now());
        let launched = launch(
            &conn,
            &self.method,
            self.params.clone(),
            self.headers.clone(),
            left,
            self.caller.as_ref(),
        )
        .await;
        match launched {
            Ok((mut attempt, bridge)) => {
                attempt.timeout = self.timeout;
                Ok((attempt, bridge, admitted))
            }
            Err(e) => {
                if let Some(a) = admitted.as_mut() {
                    a.record(Some(&e));
                }
                Err(e)
            }
        }
    }

    /// Sends the call again after `failure`, as long as tries are left;
    /// `Err`: the failure the call ends with (an open breaker ends it with
    /// the failure it had).
    async fn retry(
        &mut self,
        attempts: &mut u32,
        mut failure: UpstreamError,
    ) -> Result<Launched, UpstreamError> {
        loop {
            let Some(pause) = self.may_retry(&failure, *attempts) else {
                return Err(failure);
            };
            match self.send(pause).await {
                Ok(l) => {
                    *attempts += 1;
                    return Ok(l);
                }
                Err(UpstreamError::Failing { .. }) => return Err(failure),
                Err(e) => {
                    *attempts += 1;
                    failure = e;
                }
            }
        }
    }
}

/// An attempt launched, its bridge, and its breaker's leave.
type Launched = (Attempt, Option<Box<Bridge>>, Option<Admitted>);

/// Launches one attempt (with its bridge, when it needs one).
async fn launch(
    conn: &Arc<Connection>,
    method: &str,
    params: Option<Map<String, Value>>,
    headers: ExtraHeaders,
    timeout: Duration,
    caller: Option<&ClientFacts>,
) -> Result<(Attempt, Option<Box<Bridge>>), UpstreamError> {
    let bridge = match caller {
        Some(c) if c.bridge_input && conn.is_stateless() && input_bridge::applies(method) => {
            Some(Box::new(Bridge::new(
                method,
                params.clone().unwrap_or_default(),
                headers.clone(),
                c.clone(),
            )))
        }
        _ => None,
    };
    let attempt = Attempt::launch(conn, method, params, headers, timeout, caller).await?;
    Ok((attempt, bridge))
}

/// Sends a client's call on the upstream's live connection (`slot`), past
/// its breaker, and — when `guard.retries` is set (the call may be repeated)
/// — again after a failure another attempt may get past.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn start_guarded(
    slot: &Arc<Slot>,
    upstream: &str,
    method: &str,
    params: Option<Map<String, Value>>,
    headers: ExtraHeaders,
    timeout: Duration,
    caller: Option<&ClientFacts>,
    guard: Guard,
) -> Result<Call, NotStarted> {
    let deadline = Instant::now() + timeout;
    let mut again = guard.retries.map(|retries| {
        retries.called();
        Box::new(Again {
            upstream: upstream.to_string(),
            slot: slot.clone(),
            left: retries.policy.max,
            retries,
            breaker: guard.breaker.clone(),
            method: method.to_string(),
            params: params.clone(),
            headers: headers.clone(),
            caller: caller.cloned(),
            timeout,
            deadline,
        })
    });
    let not_started = |error, attempts| Err(NotStarted { error, attempts });
    let mut admitted = match &guard.breaker {
        Some(b) => match b.admit() {
            Ok(a) => Some(a),
            Err(e) => return not_started(e, 0),
        },
        None => None,
    };
    let mut attempts = 1;
    let first = match slot.get() {
        Some(conn) => launch(&conn, method, params, headers, timeout, caller).await,
        None => Err(UpstreamError::unavailable(upstream, "it is not connected")),
    };
    let (attempt, bridge, admitted) = match first {
        Ok((attempt, bridge)) => (attempt, bridge, admitted),
        Err(e) => {
            if let Some(a) = admitted.as_mut() {
                a.record(Some(&e));
            }
            let Some(a) = again.as_mut() else {
                return not_started(e, attempts);
            };
            match a.retry(&mut attempts, e).await {
                Ok(l) => l,
                Err(e) => return not_started(e, attempts),
            }
        }
    };
    Ok(Call {
        attempt,
        bridge,
        admitted,
        again,
        attempts,
        guarded: true,
    })
}

impl Call {
    /// Sends `method` on `conn` for `caller` (`None`: Manifold's own request).
    pub(crate) async fn start(
        conn: &Arc<Connection>,
        method: &str,
        params: Option<Map<String, Value>>,
        headers: ExtraHeaders,
        timeout: Duration,
        caller: Option<&ClientFacts>,
    ) -> Result<Call, UpstreamError> {
        let (attempt, bridge) = launch(conn, method, params, headers, timeout, caller).await?;
        Ok(Call {
            attempt,
            bridge,
            admitted: None,
            again: None,
            attempts: 1,
            guarded: false,
        })
    }

    /// The next event; `Done` comes last and exactly once. After the deadline the
    /// call is cancelled upstream and ends with a timeout.
    pub async fn next(&mut self) -> CallEvent {
        loop {
            let ev = match self.bridge.as_mut() {
                Some(b) => input_bridge::next(&mut self.attempt, b).await,
                None => self.attempt.next().await,
            };
            let CallEvent::Done(outcome) = ev else {
                // Something of the call goes to the caller: it is never sent
                // again.
                self.again = None;
                return ev;
            };
            let failure = match &outcome {
                CallOutcome::Failed(e) => Some(e),
                _ => None,
            };
            if let Some(a) = self.admitted.as_mut() {
                a.record(failure);
            }
            let (Some(again), Some(e)) = (self.again.as_mut(), failure) else {
                self.again = None;
                return CallEvent::Done(outcome);
            };
            match again.retry(&mut self.attempts, e.clone()).await {
                Ok((attempt, bridge, admitted)) => {
                    self.attempt = attempt;
                    self.bridge = bridge;
                    self.admitted = admitted;
                }
                Err(e) => {
                    self.again = None;
                    return CallEvent::Done(CallOutcome::Failed(e));
                }
            }
        }
    }

    /// Attempts made so far (more than one when it was retried), for a
    /// guarded call (an upstream with retries or a breaker); `None` otherwise.
    pub fn attempts(&self) -> Option<u32> {
        self.guarded.then_some(self.attempts)
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
                } => responder.refuse(NotRelayed::OwnRequest { method }).await,
                // A log message the upstream tied to this call still reaches
                // the clients that listen for logs.
                CallEvent::Notification(msg) => self.attempt.conn.wire.router.unrouted(msg),
            }
        }
    }

    /// The id Manifold used upstream (of the latest round, for a bridged call).
    pub fn upstream_id(&self) -> u64 {
        self.attempt.id
    }

    /// Cancels the call upstream (`notifications/cancelled`, sent in the
    /// background and bounded by [`SEND_TIMEOUT`](crate::SEND_TIMEOUT)) and ends it.
    pub async fn cancel(&mut self, reason: &str) {
        self.attempt.cancel(reason);
    }
}

/// Sends a request Manifold makes itself and waits for its result (the handshake
/// and list fetching): errors and failures are an [`UpstreamError`].
pub(crate) async fn request(
    conn: &Arc<Connection>,
    method: &str,
    params: Option<Map<String, Value>>,
) -> Result<Value, UpstreamError> {
    let upstream = conn.wire.upstream().clone();
    let headers = vec![(
        manifold_protocol::methods::HEADER_METHOD.into(),
        method.into(),
    )];
    let mut call = Call::start(conn, method, params, headers, conn.wire.timeout, None).await?;
    loop {
        match call.next().await {
            CallEvent::Done(CallOutcome::Result(raw)) => {
                return serde_json::from_str(raw.get()).map_err(|e| {
                    UpstreamError::protocol(&upstream, format!("{method} result is not JSON: {e}"))
                })
            }
            CallEvent::Done(CallOutcome::Error(raw)) => {
                return Err(UpstreamError::protocol(
                    &upstream,
                    format!("{method} failed: {}", raw.get()),
                ))
            }
            CallEvent::Done(CallOutcome::Failed(e)) => return Err(e),
            CallEvent::Request {
                responder, method, ..
            } => {
                responder.refuse(NotRelayed::DuringSetup { method }).await;
            }
            CallEvent::Notification(_) => {}
        }
    }
}
