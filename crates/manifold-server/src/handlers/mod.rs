//! The method handlers Manifold answers itself, one file per family: the
//! merged surface (`surface`), resource subscriptions (`resources`), MCP
//! logging (`mcp_logging`), 2026-07-28 listen streams (`listen`), what clients
//! send that is not a request (`client_messages`), and session operations (`session`).
//!
//! Invariants: a handler takes the admitted [`Request`](crate::request::Request)
//! and the request's params, and returns a reply or a refusal; it never frames
//! bytes for a transport.
//!
//! Not here: which handler serves which method (`pipeline/route.rs`), the
//! forwarded methods (the call chain, `call`).

pub(crate) mod client_messages;
pub(crate) mod code;
pub(crate) mod discovery;
pub(crate) mod listen;
pub(crate) mod mcp_logging;
pub(crate) mod resources;
pub(crate) mod session;
pub(crate) mod surface;
