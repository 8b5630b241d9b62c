//! [`Era`]: which generation of MCP a request speaks, decided per request from its
//! envelope (see `pipeline/decode.rs`).
//!
//! Invariants: the era of a request never changes once decoded; it decides which
//! methods exist, how a refusal's HTTP status is chosen, and whether results carry
//! `resultType`.
//!
//! Not here: protocol revision strings (`manifold_protocol::version`).

/// The generation of MCP a request speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Era {
    /// 2024-11-05 … 2025-11-25: `initialize`, then requests in a session
    /// (`Mcp-Session-Id`).
    Session,
    /// 2026-07-28: no session; every request carries its revision and the client's
    /// capabilities in `_meta`.
    Stateless,
}
