//! [`Call`]: a request in flight to an upstream, as the gateway sees it — a stream
//! of related notifications and server→client requests, then exactly one outcome.
//! For a session-era caller of a 2026-07-28 upstream it hides the `InputRequiredResult`
//! rounds behind ordinary server→client requests (see `input_bridge`).
//!
//! Dropping a [`Call`] before its outcome cancels the request upstream: nobody is
//! left to read the answer.
//!
//! A guarded call ([`start_guarded`]: a client's, to an upstream with a
//! breaker or retries, or to a pool) goes to the member the pool picks and
//! passes that member's circuit breaker for each attempt, and a call that may be repeated is sent again after a failure
//! that another attempt may get past ([`UpstreamError::retry_class`]), with
//! backoff, within the budget and the call's own deadline — but only while
//! nothing of it has been handed to the caller: once an event came out of
//! [`Call::next`], its first failure is its outcome. A retry prefers
//! another member of a pool than the one that failed.
//!
//! Not here: sending and reading (`connection`, the transports), one request's
//! lifecycle (`attempt`), the budget and backoff (`retry`), the breaker's
//! state (`breaker`).

use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use crate::attempt::Attempt;
use crate::connection::Connection;
use crate::error::RetryClass;
use crate::input_bridge::{self, Bridge};
use crate::message::{CallEvent, CallOutcome, NotRelayed};
use crate::pool::{Leave, Picked, Pool};
use crate::retry::{self, Retries};
use crate::{error::UpstreamError, facts::ClientFacts, facts::ExtraHeaders};

/// A request in flight.
pub struct Call {
    attempt: Attempt,
    /// Set for a session-era caller's call to a 2026-07-28 upstream (see `input_bridge`).
    bridge: Option<Box<Bridge>>,
    /// What the current attempt records when it ends (guarded calls): its
    /// member's breaker and health.
    leave: Option<Leave>,
    /// What sending it again needs, while it still may be sent again.
    again: Option<Box<Again>>,
    /// Attempts made (1 but for a retried call).
    attempts: u32,
    /// Made past a breaker or with retries ([`start_guarded`]): its attempts
    /// are reported.
    guarded: bool,
    /// The pool member it went to (its latest attempt's).
    pub(crate) member: usize,
}

/// How a guarded call is made: its upstream's pool (the members and their
/// breakers), for a call that may be repeated its retries, and the member
/// it must go to, if any.
pub(crate) struct Guard {
    pub pool: Arc<Pool>,
    pub retries: Option<Arc<Retries>>,
    pub pin: Option<usize>,
    /// Its attempts are reported (a breaker or retries are configured).
    pub counted: bool,
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
    pool: Arc<Pool>,
    pin: Option<usize>,
    /// The member the last attempt went to (a retry prefers another).
    last: usize,
    retries: Arc<Retries>,
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

    /// Waits `pause`, then sends the call again: a fresh attempt on a live
    /// member (another than the last, when the pool has one; waiting for a
    /// restarting upstream within the deadline), past its breaker (whose leave
    /// records a launch that fails).
    async fn send(&mut self, pause: Duration) -> Result<Launched, UpstreamError> {
        tokio::time::sleep(pause).await;
        let until = self.deadline.min(Instant::now() + retry::RECONNECT_WAIT);
        let Some(picked) = self.pool.wait(until, self.pin, Some(self.last)).await else {
            return Err(UpstreamError::transient(
                &self.upstream,
                "it did not come back in time for a retry",
                false,
            ));
        };
        self.last = picked.member.index;
        let mut leave = self.pool.admit(&picked)?;
        self.retries.sent();
        let left = self.deadline.saturating_duration_since(Instant::now());
        let launched = launch(
            &picked.conn,
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
                Ok((attempt, bridge, leave))
            }
            Err(e) => {
                leave.record(Some(&e));
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

/// An attempt launched, its bridge, and its leave.
type Launched = (Attempt, Option<Box<Bridge>>, Leave);

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

/// Sends a client's call to the member `picked` (the pool's pick), past its
/// breaker, and — when `guard.retries` is set (the call may be repeated) —
/// again after a failure another attempt may get past.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn start_guarded(
    picked: Picked,
    upstream: &str,
    method: &str,
    params: Option<Map<String, Value>>,
    headers: ExtraHeaders,
    timeout: Duration,
    caller: Option<&ClientFacts>,
    guard: Guard,
) -> Result<Call, NotStarted> {
    let deadline = Instant::now() + timeout;
    let member = picked.member.index;
    let mut again = guard.retries.map(|retries| {
        retries.called();
        Box::new(Again {
            upstream: upstream.to_string(),
            pool: guard.pool.clone(),
            pin: guard.pin,
            last: member,
            left: retries.policy.max,
            retries,
            method: method.to_string(),
            params: params.clone(),
            headers: headers.clone(),
            caller: caller.cloned(),
            timeout,
            deadline,
        })
    });
    let not_started = |error, attempts| Err(NotStarted { error, attempts });
    let mut leave = match guard.pool.admit(&picked) {
        Ok(l) => l,
        Err(e) => return not_started(e, 0),
    };
    let mut attempts = 1;
    let first = launch(&picked.conn, method, params, headers, timeout, caller).await;
    let (attempt, bridge, leave) = match first {
        Ok((attempt, bridge)) => (attempt, bridge, leave),
        Err(e) => {
            leave.record(Some(&e));
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
        member: leave.member(),
        attempt,
        bridge,
        leave: Some(leave),
        again,
        attempts,
        guarded: guard.counted,
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
            leave: None,
            again: None,
            attempts: 1,
            guarded: false,
            member: 0,
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
            if let Some(l) = self.leave.as_mut() {
                l.record(failure);
            }
            let (Some(again), Some(e)) = (self.again.as_mut(), failure) else {
                self.again = None;
                return CallEvent::Done(outcome);
            };
            match again.retry(&mut self.attempts, e.clone()).await {
                Ok((attempt, bridge, leave)) => {
                    self.member = leave.member();
                    self.attempt = attempt;
                    self.bridge = bridge;
                    self.leave = Some(leave);
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

    /// The pool member the call went to (0 unless the upstream is a pool): a
    /// task it made lives there.
    pub fn member(&self) -> usize {
        self.member
    }

    /// The id Manifold used upstream (of the latest round, for a bridged call).
    pub fn upstream_id(&self) -> u64 {
        self.attempt.id
    }

    /// Cancels the call upstream (`notifications/cancelled`, sent in the
    /// background and bounded by [`SEND_TIMEOUT`](crate::limits::SEND_TIMEOUT)) and ends it.
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
    request_sized(conn, method, params).await.map(|(v, _)| v)
}

/// [`request`], with the size of the result's JSON text (list fetching counts
/// the bytes an upstream makes the gateway keep).
pub(crate) async fn request_sized(
    conn: &Arc<Connection>,
    method: &str,
    params: Option<Map<String, Value>>,
) -> Result<(Value, usize), UpstreamError> {
    let upstream = conn.wire.upstream().clone();
    let headers = vec![(
        manifold_protocol::methods::HEADER_METHOD.into(),
        method.into(),
    )];
    let mut call = Call::start(conn, method, params, headers, conn.wire.timeout, None).await?;
    loop {
        match call.next().await {
            CallEvent::Done(CallOutcome::Result(raw)) => {
                let size = raw.get().len();
                return serde_json::from_str(raw.get())
                    .map(|v| (v, size))
                    .map_err(|e| {
                        UpstreamError::protocol(
                            &upstream,
                            format!("{method} result is not JSON: {e}"),
                        )
                    });
            }
            CallEvent::Done(CallOutcome::Error(raw)) => {
                return Err(UpstreamError::protocol(
                    &upstream,
                    format!(
                        "{method} failed: {}",
                        manifold_foundation::text::printable(raw.get())
                    ),
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
