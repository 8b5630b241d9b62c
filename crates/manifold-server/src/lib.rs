//! The downstream side of Manifold: the front doors (the Streamable-HTTP endpoint
//! for every revision, 2024-11-05 … 2025-11-25 with sessions and 2026-07-28
//! stateless; the admin listener; the local operator), and the request spine every
//! request goes through: decode → admit → route → handler → relay → finish.
//!
//! Modules, top to bottom; imports point down only (`tests/architecture.rs`
//! checks it):
//!
//! | layer | modules | what |
//! |---|---|---|
//! | runtime | `runtime` | start, serve, catalog upkeep, idle sweep |
//! | front door | `front` | HTTP endpoint and framing, admin listener, operator |
//! | pipeline | `pipeline` | the phases in order (`decode`, `admit`, `route`) |
//! | handlers | `handlers` | one file per method family |
//! | relay | `relay` | resolve and forward, stream back, the input-required bridge |
//! | request | `exchange` | the per-request context |
//! | observation | `observe` | a request's metrics and audit record, finished once |
//! | state | `state` | the `Gateway` and its shared tables |
//! | values | `reply`, `refusal`, `era` | what a request is answered with, in one table |
//!
//! Invariants: the merged catalog is an immutable snapshot swapped atomically, so a
//! `tools/list` never touches an upstream; every spawned task is tracked and ends
//! with the gateway's shutdown token; no lock or DashMap guard is held across
//! `.await`.
//!
//! Not here: upstream connections (manifold-upstream), naming and ordering
//! (manifold-catalog), configuration parsing (manifold-config), the audit writer
//! (manifold-audit).

mod era;
mod exchange;
mod front;
mod handlers;
mod observe;
mod pipeline;
mod refusal;
mod relay;
mod reply;
mod runtime;
mod state;
mod tracectx;

pub use front::operator::ToolReply;
pub use front::sse::SSE_KEEPALIVE;
pub use handlers::listen::MAX_LISTEN_RESOURCES;
pub use handlers::surface::{LIST_TTL_MS, SERVER_NAME, SERVER_VERSION};
pub use relay::input_required::GATHER_WINDOW;
pub use runtime::{
    fixed_at_start, ReloadError, ReloadReport, StartError, SESSION_SWEEP_INTERVAL, SHUTDOWN_WAIT,
    UPSTREAM_EVENT_QUEUE, WATCH_INTERVAL,
};
pub use state::live::tool_overrides;
pub use state::ownership::LEARNED_URI_CAPACITY;
pub use state::sessions::{MAX_PENDING_CLIENT_REQUESTS, SESSION_ID_BYTES};
pub use state::views::{MAX_CACHED_VIEWS, MAX_CACHED_VIEW_BYTES};
pub use state::Gateway;
pub use tracectx::enable_span_export;
