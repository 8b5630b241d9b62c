//! The cluster's named bounds (Redis operations, reconnection, message size,
//! the receive queue) and the random ids replicas and retries are known by.
//!
//! Invariants: constants and one pure helper; nothing here talks to Redis.

use std::time::Duration;

/// Random bytes in [`random_id`]: 128 bits, so nobody guesses one.
pub const RANDOM_ID_BYTES: usize = 16;

/// [`RANDOM_ID_BYTES`] random bytes as hex: a replica's id or a forwarded
/// retry's correlation id. `None` when the OS has no randomness to give.
pub fn random_id() -> Option<String> {
    let mut raw = [0u8; RANDOM_ID_BYTES];
    getrandom::fill(&mut raw).ok()?;
    Some(hex::encode(raw))
}

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
