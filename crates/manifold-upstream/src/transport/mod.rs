//! The one seam between a connection and how its bytes travel: [`Transport`],
//! implemented by a stdio child process ([`stdio`]) and a Streamable-HTTP client
//! ([`http`]).
//!
//! Invariants: a transport hands every message it reads to `Wire::dispatch`,
//! and fires the wire's `closed` token when it cannot go on; it never decides what
//! a message means — what the era check's answer means is `probe`'s, and the one
//! code the HTTP transport acts on itself (-32022: Manifold's revision is gone,
//! probe again) is named where the reply is read.
//!
//! Not here: ids, progress tokens and routing (`router`), the handshake
//! (`handshake`), timeouts of calls (`attempt`).

pub(crate) mod http;
mod lines;
pub(crate) mod stdio;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use crate::message::{BoxFuture, Outbound};
use crate::{error::UpstreamError, facts::ExtraHeaders};

/// The transport work of one request (an HTTP POST and its reply), polled by the
/// call itself so a forwarded call costs no extra task.
pub(crate) type Driver = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One request on its way upstream; its id is already registered with the router.
pub(crate) struct Outgoing {
    pub id: u64,
    pub method: String,
    pub bytes: Vec<u8>,
    /// SEP-2243 headers and the like (HTTP only).
    pub headers: ExtraHeaders,
    pub timeout: Duration,
}

/// How a connection's transport ended.
#[derive(Debug, Clone, Default)]
pub(crate) struct Ended {
    /// What to tell operators (status, errors): "the process exited with code 3".
    pub reason: String,
    /// A child process's exit code (-signal when killed by one).
    pub exit_code: Option<i32>,
}

pub(crate) trait Transport: Outbound {
    /// Sends a request. Stdio writes it to the child's stdin (its reader routes the
    /// reply); HTTP returns the [`Driver`] of its exchange for the caller to poll.
    fn request(&self, out: Outgoing) -> BoxFuture<'_, Result<Option<Driver>, UpstreamError>>;

    /// Whether cancelling a request means dropping its exchange (2026-07-28 over
    /// HTTP has no client notifications) rather than `notifications/cancelled`.
    fn cancels_by_closing(&self) -> bool;

    /// `initialize` succeeded: open what the session needs (HTTP: the GET stream).
    fn initialized(&self);

    /// Stops the transport in order: stdio closes stdin, then SIGTERM, then
    /// SIGKILL, and returns once the child is reaped; HTTP ends the upstream
    /// session (DELETE).
    fn shutdown(&self) -> BoxFuture<'_, ()>;

    /// How the transport ended. After a failed handshake a child is given a moment
    /// to be reaped, so its exit code explains the failure.
    fn ended(&self, after_failure: bool) -> BoxFuture<'_, Ended>;

    /// This transport's outbound half, for responders that outlive a borrow.
    fn outbound(&self) -> Arc<dyn Outbound>;
}
