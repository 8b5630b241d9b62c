//! The front doors: how requests reach the pipeline and replies leave it — the
//! Streamable-HTTP endpoint (`http`, framing in `sse`, authentication in `auth`,
//! TLS in `tls`), the Host and Origin rules both listeners apply (`origin`),
//! the stdio front door (`stdio`: `manifold stdio`, one client per process),
//! and the local operator (`operator`: `manifold call`).
//!
//! Invariants: a front door builds an `Arrival` and frames a `Reply`; it decides
//! nothing about MCP. Generic transport concerns (timeouts, limits, TLS) live
//! here.
//!
//! Not here: the pipeline; the admin listener and the console (`admin`, on
//! the same floor).

pub(crate) mod auth;
pub(crate) mod http;
pub(crate) mod operator;
pub(crate) mod origin;
pub(crate) mod sse;
pub(crate) mod stdio;
pub(crate) mod tls;
