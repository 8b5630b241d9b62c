//! The tables every request may read and write: client sessions, URIs learned
//! from results, resource subscriptions, the upstreams' log level, open listen
//! streams, calls held for a client's input, shared upstream calls, the MCP
//! tasks this replica follows, and open connect links. One part of the [`Gateway`](super::Gateway).
//!
//! Invariants: each table bounds itself (its limit is in `[limits]`); no
//! lock or map guard of one is held across `.await`.
//!
//! Not here: what a table holds (each its own module), the catalogue
//! (`generation`).

/// The request-facing tables.
pub(crate) struct Tables {
    pub sessions: super::sessions::Sessions,
    /// URIs seen in results, for routing reads (see `learned`).
    pub learned: super::learned::Learned,
    /// Resource subscriptions, shared across sessions and listen streams.
    pub subscriptions: super::subscriptions::Subscriptions,
    /// The log level last sent to the upstreams.
    pub upstream_log_level: super::log_levels::UpstreamLogLevel,
    /// Open 2026-07-28 `subscriptions/listen` streams.
    pub listeners: super::listeners::Listeners,
    /// Calls held for a 2026-07-28 client's input (`InputRequiredResult`).
    pub held: super::held_calls::HeldCalls,
    /// Upstream calls shared by identical concurrent calls (`coalesce = true`).
    pub coalescing: super::coalescing::Coalescing,
    /// Task ids' keys and the tasks this replica follows (the Tasks extension).
    pub mcp_tasks: super::tasks::Tasks,
    /// Connect links of `user_oauth` / `user_secret` upstreams, and their
    /// accounts.
    pub connects: super::connects::Connects,
}
