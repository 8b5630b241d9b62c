//! The downstream side of Manifold: the front doors (the Streamable-HTTP endpoint
//! for every revision, 2024-11-05 … 2025-11-25 with sessions and 2026-07-28
//! stateless; stdio; the admin listener; the local operator), and the request
//! spine every request goes through: decode → admit → route → a handler, or the
//! call chain (resolve → resume → validate → confirm → limits → credentials →
//! relay → shape → check output → finish).
//!
//! Modules, top to bottom; imports point down only, and no file imports a file
//! that imports it (`tests/architecture.rs` checks both):
//!
//! | layer | modules | what |
//! |---|---|---|
//! | runtime | `runtime` | start, serve, catalog upkeep, idle sweep, reload |
//! | front door | `front` | HTTP endpoint and framing, stdio, operator |
//! | admin plane | `admin` | admin listener, its auth, inspection, pins, the console (same floor as `front`) |
//! | server card | `card` | each endpoint's SEP-2127 server card, open like the protected resource metadata (same floor as `front`, which routes to it) |
//! | connect pages | `connect` | where a person links their own upstream account (`user_oauth`, `user_secret`) on the MCP listener (same floor as `front`, which routes to it) |
//! | pipeline | `pipeline` | the phases in order (`decode`, `admit`, `route`, finish) |
//! | handlers | `handlers` | what Manifold answers itself, one file per method family |
//! | call chain | `call` | forwarded requests, one file per step |
//! | replicas | `replicas` | relays to and from the other replicas (`[cluster] redis`) |
//! | request | `request` | the per-request context |
//! | observation | `observe` | a request's metrics and audit record, finished once |
//! | tracing | `tracectx` | the request's span, the trace context given upstream |
//! | state | `state` | the `Gateway` and its shared tables |
//! | values | `reply`, `refusal`, `era` | what a request is answered with, in one table |
//!
//! Invariants: the merged catalog, its per-caller views and its validators are one
//! immutable generation swapped in as one value (`state::generation`), so a
//! request sees one build and a `tools/list` never touches an upstream; every spawned task is tracked and ends
//! with the gateway's shutdown token; no lock or DashMap guard is held across
//! `.await`.
//!
//! Not here: upstream connections (manifold-upstream), naming and ordering
//! (manifold-catalog), configuration parsing (manifold-config), the audit writer
//! (manifold-audit).

mod admin;
mod call;
mod card;
mod connect;
mod era;
mod front;
mod handlers;
mod observe;
mod pipeline;
mod refusal;
mod replicas;
mod reply;
mod request;
mod runtime;
mod state;
mod tracectx;

pub use call::GATHER_WINDOW;
pub use call::STEPS as CALL_STEPS;
pub use front::operator::ToolReply;
pub use front::sse::SSE_KEEPALIVE;
pub use handlers::discovery::Scored;
pub use handlers::listen::MAX_LISTEN_RESOURCES;
pub use handlers::surface::{LIST_TTL_MS, SERVER_NAME, SERVER_VERSION};
pub use runtime::{
    ReloadError, ReloadReport, StartError, SESSION_SWEEP_INTERVAL, SHUTDOWN_WAIT,
    UPSTREAM_EVENT_QUEUE, WATCH_INTERVAL,
};
pub use state::console::{
    LOGIN_FAILURES_PER_WINDOW, LOGIN_FAILURE_WINDOW, MAX_LOGIN_FAILURE_PEERS,
};
pub use state::integrity::Quarantined;
pub use state::learned::LEARNED_URI_CAPACITY;
pub use state::live::tool_overrides;
pub use state::local_admin::{
    load_or_create as local_admin_token, LocalAdminError, LOGIN_LINK_LIFETIME,
};
pub use state::sessions::{MAX_PENDING_CLIENT_REQUESTS, SESSION_ID_BYTES};
pub use state::views::{MAX_CACHED_VIEWS, MAX_CACHED_VIEW_BYTES};
pub use state::Gateway;
pub use tracectx::enable_span_export;
