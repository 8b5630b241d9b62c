//! What replicas of one deployment share through Redis (`[cluster] redis`):
//!
//! - the **bus** ([`Bus`]): one pub/sub channel carrying what must reach the
//!   replica holding a call or a stream — a client's answer to a server→client
//!   request, `notifications/cancelled`, a message for a session's GET stream,
//!   an upstream's `list_changed`, and a 2026-07-28 retry resuming a held call
//!   (with the holder's answer coming back);
//! - **shared rate limits** ([`Bus::rate`]): GCRA buckets kept in Redis, one
//!   round trip (one script) per decision;
//! - **records** ([`Bus::record`], [`Bus::set_record`]): values by field in a
//!   named map, sealed by their caller (callers' upstream accounts).
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
mod error;
mod limits;
mod message;
mod rate;

pub use auth::{
    now_ms, Keys, Rejection, KEY_LABEL, MAX_CLOCK_SKEW, MAX_ENVELOPE_AGE, MAX_SENDERS,
    REPLAY_WINDOW,
};
pub use bus::records::MAX_RECORD_BYTES;
pub use bus::shared::{SharedRead, MAX_SHARED_ENTRIES, MAX_SHARED_ID};
pub use bus::{Bus, Health};
pub use error::ClusterError;
pub use limits::{
    random_id, LIVENESS_INTERVAL, MAX_BACKOFF, MAX_MESSAGE_BYTES, OP_TIMEOUT, QUEUE,
    RANDOM_ID_BYTES,
};
pub use message::{Envelope, Message, ResumeEvent};
