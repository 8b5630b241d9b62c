//! The front doors: how requests reach the pipeline and replies leave it — the
//! Streamable-HTTP endpoint (`http`, framing in `sse`, authentication in `auth`),
//! the admin listener
//! (`admin`: `/metrics`, `/healthz`, `/readyz`; `inspect`: `/config`,
//! `/upstreams`, `/catalog`; `pins`: `POST /pins/approve`; `admin_auth`: who
//! may use it; `console`: the operator's console at `/ui`), the Host and
//! Origin rules both listeners apply (`origin`), the stdio front door (`stdio`:
//! `manifold stdio`, one client per process), and the local operator
//! (`operator`: `manifold call`).
//!
//! Invariants: a front door builds an `Arrival` and frames a `Reply`; it decides
//! nothing about MCP. Generic transport concerns (timeouts, limits, TLS) live
//! here.
//!
//! Not here: the pipeline.

pub(crate) mod admin;
pub(crate) mod admin_auth;
pub(crate) mod auth;
pub(crate) mod console;
pub(crate) mod http;
pub(crate) mod inspect;
pub(crate) mod operator;
pub(crate) mod origin;
pub(crate) mod pins;
pub(crate) mod sse;
pub(crate) mod stdio;
pub(crate) mod tls;
