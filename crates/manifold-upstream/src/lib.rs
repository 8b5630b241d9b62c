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
//! messages) → `wire` → `router` → `message` → `status` (what an upstream reports) → `error` → `facts` (what travels with a
//! request) → `limits` (named timeouts and counts). This root file is the
//! crate's face only: declarations and re-exports.
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
mod facts;
mod handshake;
mod input_bridge;
mod limits;
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
pub use facts::{
    ClientFacts, ExtraHeaders, ServerFacts, UpstreamEvent, ON_BEHALF, QUERY_PARAM_PREFIX,
};
pub use limits::*;
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
