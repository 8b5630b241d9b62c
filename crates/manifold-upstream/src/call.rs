//! [`Call`]: a request in flight to an upstream, as the gateway sees it — a stream
//! of related notifications and server→client requests, then exactly one outcome.
//! For a session-era caller of a 2026-07-28 upstream it hides the `InputRequiredResult`
//! rounds behind ordinary server→client requests (see `input_bridge`).
//!
//! Dropping a [`Call`] before its outcome cancels the request upstream: nobody is
//! left to read the answer.
//!
//! Not here: sending and reading (`connection`, the transports), one request's
//! lifecycle (`attempt`).

use serde_json::{Map, Value};
use std::sync::Arc;
use std::time::Duration;

use crate::attempt::Attempt;
use crate::connection::Connection;
use crate::input_bridge::{self, Bridge};
use crate::message::{CallEvent, CallOutcome, NotRelayed};
use crate::{ClientFacts, ExtraHeaders, UpstreamError};

/// A request in flight.
pub struct Call {
    attempt: Attempt,
    /// Set for a session-era caller's call to a 2026-07-28 upstream (see `input_bridge`).
    bridge: Option<Box<Bridge>>,
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
        Ok(Call { attempt, bridge })
    }

    /// The next event; `Done` comes last and exactly once. After the deadline the
    /// call is cancelled upstream and ends with a timeout.
    pub async fn next(&mut self) -> CallEvent {
        match self.bridge.as_mut() {
            Some(b) => input_bridge::next(&mut self.attempt, b).await,
            None => self.attempt.next().await,
        }
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
