//! One actor task per upstream MCP server (per member, for a pool of several
//! instances: `instances` children or `urls`; see `pool`). It owns the
//! connection (a stdio child process or a Streamable-HTTP session), finds the upstream's era (a
//! `server/discover` probe, else the `initialize` handshake), keeps the upstream's
//! lists (all pages) until the upstream says `list_changed` or, for a 2026-07-28
//! upstream, until their `ttlMs` runs out, restarts it with capped exponential
//! backoff when it dies, and publishes its health.
//!
//! A 2026-07-28 (stateless) upstream gets per-request `_meta` (the revision, the
//! capabilities of the client the request is made for, Manifold's client info),
//! one `subscriptions/listen` kept open for its `list_changed` and resource
//! updates, and, for a session-era caller, its `InputRequiredResult`s turned into
//! server→client requests and retried (see `input_bridge`).
//!
//! Calls do not queue behind the actor: a [`Call`] goes straight to the live
//! connection, which mints the upstream-side id and progress token and routes what
//! comes back (see `router`). The gateway learns about list changes and unaddressed
//! notifications through an [`UpstreamEvent`] channel.
//!
//! Modules, top to bottom (imports point down only; `tests/architecture.rs` checks):
//! `upstream` (the handle and actor) → `handshake`, `listen` → `call` →
//! `pool` (the members behind one upstream, and which one a call goes to) →
//! `retry`, `breaker` (what keeps a flaky upstream's calls going and stops
//! calling a failing one) → `input_bridge` → `attempt` → `connection` →
//! `transport` (the one seam: stdio, HTTP) → `probe` (the era check's
//! messages) → `wire` → `router` → `message` → `status` (what an upstream reports) → `error`. Items of this root file are
//! shared by all.
//!
//! Invariants: a dead or hanging upstream never blocks another (each has its own
//! tasks, queues and limits); every spawned task is tied to a cancellation token;
//! no lock is held across `.await`.
//!
//! Not here: naming and merging (manifold-catalog), downstream sessions
//! (manifold-server).

mod attempt;
mod breaker;
mod call;
mod connection;
mod error;
mod handshake;
mod input_bridge;
mod listen;
mod message;
mod pool;
mod probe;
mod retry;
mod router;
mod status;
mod transport;
mod upstream;
mod wire;

pub use breaker::{BreakerReport, BreakerState};
pub use call::{Call, NotStarted};
pub use error::{RetryClass, UpstreamError};
pub use manifold_config::UpstreamProtocol;
pub use manifold_foundation::log_budget::LOG_WINDOW;
pub use message::{Answer, CallEvent, CallOutcome, NotRelayed, Responder};
pub use pool::{
    MemberReport, MemberRole, OUTLIER_EJECT_FOR, OUTLIER_ERROR_RATIO, OUTLIER_LATENCY_FACTOR,
    OUTLIER_LATENCY_FLOOR, OUTLIER_MIN_CALLS, OUTLIER_WINDOW,
};
pub use retry::RetryCounts;
pub use status::{Holder, State, UpstreamStatus};
pub use upstream::Upstream;

use serde_json::{Map, Value};
use std::sync::Arc;

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
/// `limits.max_message_bytes`) logged per [`LOG_WINDOW`]: a broken or hostile
/// upstream cannot flood the gateway's log (the rest are counted).
pub const GARBAGE_LINES_PER_WINDOW: u32 = 10;
/// Lines of one child's stderr logged per [`LOG_WINDOW`].
pub const STDERR_LINES_PER_WINDOW: u32 = 200;

/// On whose behalf a request is made; what a 2026-07-28 upstream is told about the
/// client, and what the call may do for it.
#[derive(Debug, Clone, Default)]
pub struct ClientFacts {
    /// The downstream client's capabilities (`_meta` clientCapabilities).
    pub capabilities: Map<String, Value>,
    /// The log level the client asked for, if any (`_meta` logLevel).
    pub log_level: Option<String>,
    /// The client speaks the session era: a 2026-07-28 upstream's
    /// `InputRequiredResult` becomes [`CallEvent::Request`]s whose answers are
    /// sent back in a retry, instead of being returned as the result.
    pub bridge_input: bool,
    /// The pool member the request must go to (a task's, which lives on the
    /// member that made it); `None`: any.
    pub member: Option<usize>,
}

/// What an upstream tells the gateway outside any call.
#[derive(Debug)]
pub enum UpstreamEvent {
    /// Its status or lists changed: rebuild the merged view.
    Changed { upstream: Arc<str> },
    /// It sent `notifications/*/list_changed` (the lists are being refetched; a
    /// `Changed` follows).
    ListChanged { upstream: Arc<str>, method: String },
    /// A notification no call claimed (resource updates, log messages).
    Notification {
        upstream: Arc<str>,
        method: String,
        msg: Map<String, Value>,
    },
}

/// What the upstream said about itself in `initialize`.
#[derive(Debug, Clone, Default)]
pub struct ServerFacts {
    /// The revision spoken: negotiated by `initialize`, or the stateless one
    /// chosen from `server/discover`.
    pub protocol_version: String,
    pub capabilities: Map<String, Value>,
    pub server_info: Value,
    pub instructions: Option<String>,
}

impl ServerFacts {
    /// Whether the upstream speaks the stateless era.
    pub fn is_stateless(&self) -> bool {
        manifold_protocol::version::is_supported_stateless(&self.protocol_version)
    }
}

/// Extra HTTP headers for one forwarded request (`Mcp-Method`, `Mcp-Name`,
/// `Mcp-Param-*`). stdio upstreams ignore them.
pub type ExtraHeaders = Vec<(String, String)>;
