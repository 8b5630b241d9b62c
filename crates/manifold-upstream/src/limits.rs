//! The upstream side's named limits and identity: Manifold's client name and
//! version, the revision it asks for, and every timeout, backoff and count
//! that bounds what an upstream can make the gateway do.
//!
//! Invariants: constants only, each saying what it bounds and why its value.
//!
//! Not here: limits set in `gateway.toml` (manifold-config's `limits`).

/// Manifold's name and version in `clientInfo`.
pub const CLIENT_NAME: &str = "manifold";
pub const CLIENT_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The revision Manifold asks upstreams for.
pub const UPSTREAM_PROTOCOL_VERSION: &str = "2025-11-25";
/// Pages fetched per list before Manifold gives up on an upstream that keeps
/// returning `nextCursor` (a loop or a runaway server).
pub const MAX_LIST_PAGES: usize = 1000;
/// Restart backoff: first delay, cap, and how long a connection must have
/// served for the backoff to reset (an upstream that crashes now and then comes
/// back at once; one in a crash loop backs off).
pub const BACKOFF_INITIAL: std::time::Duration = std::time::Duration::from_millis(500);
pub const BACKOFF_MAX: std::time::Duration = std::time::Duration::from_secs(30);
pub const BACKOFF_RESET_AFTER: std::time::Duration = std::time::Duration::from_secs(10);
/// Longest wait for the answer to the `server/discover` probe (or the upstream's
/// timeout, if shorter) before falling back to `initialize`.
pub const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// A 2026-07-28 upstream's `subscriptions/listen` stream is reopened after this long.
pub const LISTEN_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);
/// Longest wait (or the upstream's timeout, if shorter) for a 2026-07-28
/// upstream to acknowledge Manifold's `subscriptions/listen` before the first
/// list fetch; a later acknowledgment refetches the lists, so a change between
/// the fetch and the listen is never missed.
pub const LISTEN_ACK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);
/// Shortest time a 2026-07-28 upstream's lists are kept, whatever `ttlMs` it gives (a
/// `ttlMs` of 0 would otherwise mean refetching on every client request).
pub const MIN_LIST_TTL: std::time::Duration = std::time::Duration::from_secs(1);
/// At most one refetch of an upstream's lists per this window: a `list_changed`
/// storm costs one refetch (and at most one client notification) a second.
pub const LIST_CHANGED_DEBOUNCE: std::time::Duration = std::time::Duration::from_secs(1);
/// Liveness pings in a row an upstream may leave unanswered (each within its
/// `timeout`) before it is restarted.
pub const LIVENESS_FAILURES: usize = 2;
/// Longest one message (a notification, a cancellation, an answer to a
/// server→client request) may take to reach an upstream; a send that takes longer
/// is dropped and logged, and never holds up a caller (cancellations are sent in
/// the background).
pub const SEND_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);
/// Rounds of `InputRequiredResult` bridged for one session-era client's call before
/// Manifold gives up on an upstream that keeps asking.
pub const MAX_INPUT_ROUNDS: usize = 16;
/// Questions (`inputRequests` entries) one round may carry.
pub const MAX_INPUT_REQUESTS: usize = 16;
/// Lines about garbage from one upstream (not JSON-RPC, not UTF-8, over
/// `limits.max_message_bytes`) logged per [`LOG_WINDOW`](manifold_foundation::log_budget::LOG_WINDOW): a broken or hostile
/// upstream cannot flood the gateway's log (the rest are counted).
pub const GARBAGE_LINES_PER_WINDOW: u32 = 10;
/// Lines of one child's stderr logged per [`LOG_WINDOW`](manifold_foundation::log_budget::LOG_WINDOW).
pub const STDERR_LINES_PER_WINDOW: u32 = 200;
