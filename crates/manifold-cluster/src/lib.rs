//! What replicas of one deployment share through Redis (`[cluster] redis`):
//!
//! - the **bus** ([`Bus`]): one pub/sub channel carrying what must reach the
//!   replica holding a call or a stream — a client's answer to a server→client
//!   request, `notifications/cancelled`, a message for a session's GET stream,
//!   an upstream's `list_changed`, and a 2026-07-28 retry resuming a held call
//!   (with the holder's answer coming back);
//! - **shared rate limits** ([`Bus::rate`]): GCRA buckets kept in Redis, one
//!   round trip (one script) per decision.
//!
//! Invariants: every Redis operation is bounded by [`OP_TIMEOUT`] and fails
//! with a [`ClusterError`] instead of waiting; the subscription is PINGed
//! every [`LIVENESS_INTERVAL`], so a Redis that stops answering is noticed
//! without traffic; nothing blocks while Redis is
//! down (the bus reconnects in the background, with backoff up to
//! [`MAX_BACKOFF`]); a message larger than [`MAX_MESSAGE_BYTES`] is neither sent
//! nor taken; received messages wait in a queue of [`QUEUE`] and are dropped
//! (counted) when the server does not keep up, never buffered without bound.
//!
//! Every message is sealed (AES-256-GCM) with a key derived from `[cluster]
//! session_key` and taken at most once, within [`MAX_ENVELOPE_AGE`] of being
//! sent (`auth`): a client of Redis that does not hold the key can deny service
//! (use `rediss://` and an ACL user), but neither read the channel nor speak
//! on it. The shared logs' entries (`bus::shared`) are sealed the same way,
//! each for its place in the log. The
//! connection authenticates with the URL's user and password and, for
//! `rediss://`, checks the server's certificate against `redis_ca` (else the
//! web's root certificates).
//!
//! Not here: what a replica does with a message (manifold-server's `cluster`
//! module), which buckets a call needs (manifold-policy `limits`). The bus
//! carries session digests and held-call states, never a session id or a token.

mod auth;
mod bus;
mod message;
mod rate;

pub use auth::{
    now_ms, Keys, Rejection, KEY_LABEL, MAX_CLOCK_SKEW, MAX_ENVELOPE_AGE, MAX_SENDERS,
    REPLAY_WINDOW,
};
pub use bus::{Bus, Health, SharedRead, MAX_SHARED_ENTRIES, MAX_SHARED_ID};
pub use message::{Envelope, Message, ResumeEvent};

use std::time::Duration;

/// The bound on one Redis command (publish, rate decision); connecting (both
/// connections and the subscription) gets four times as long. A command that
/// times out makes the bus reconnect (a half-open connection answers nothing).
pub const OP_TIMEOUT: Duration = Duration::from_millis(500);
/// How often the subscription is PINGed to prove it is still there.
pub const LIVENESS_INTERVAL: Duration = Duration::from_secs(10);
/// The longest pause between two reconnection attempts.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// The largest message sent or taken from the bus.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;
/// Received messages waiting for the server.
pub const QUEUE: usize = 4096;

/// Why a cluster operation failed. Each knows how the server answers a
/// request that needed it.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// Not connected to Redis (it is down, unreachable or refusing us).
    #[error("the cluster's Redis is unavailable: {0}")]
    Unavailable(String),
    /// Redis did not answer within [`OP_TIMEOUT`].
    #[error("the cluster's Redis did not answer within {}ms", OP_TIMEOUT.as_millis())]
    Timeout,
    /// The message exceeds [`MAX_MESSAGE_BYTES`].
    #[error("a cluster message of {0} bytes exceeds the limit of {MAX_MESSAGE_BYTES}")]
    TooLarge(usize),
    /// The bus cannot be set up as configured (a URL the client cannot parse,
    /// a CA file that is not a PEM certificate): a start-up error.
    #[error("{0}")]
    Config(String),
}

impl ClusterError {
    /// Redis could not be reached or did not answer (the relay may work again
    /// later; the request itself was fine).
    pub fn is_unavailable(&self) -> bool {
        matches!(self, ClusterError::Unavailable(_) | ClusterError::Timeout)
    }
    /// JSON-RPC code of a request refused because of it (internal error).
    pub fn jsonrpc_code(&self) -> i64 {
        -32603
    }
    /// HTTP status of a request refused because of it.
    pub fn http_status(&self) -> u16 {
        if matches!(self, ClusterError::TooLarge(_)) {
            413
        } else {
            503
        }
    }
}

fn unavailable(e: redis::RedisError) -> ClusterError {
    if e.is_timeout() {
        ClusterError::Timeout
    } else {
        ClusterError::Unavailable(e.to_string())
    }
}

/// Random bytes in [`random_id`]: 128 bits, so nobody guesses one.
pub const RANDOM_ID_BYTES: usize = 16;

/// [`RANDOM_ID_BYTES`] random bytes as hex: a replica's id or a forwarded
/// retry's correlation id. `None` when the OS has no randomness to give.
pub fn random_id() -> Option<String> {
    let mut raw = [0u8; RANDOM_ID_BYTES];
    getrandom::fill(&mut raw).ok()?;
    Some(hex::encode(raw))
}
