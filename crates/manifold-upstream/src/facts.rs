//! The facts that travel with a request and out of an upstream: on whose
//! behalf a request is made ([`ClientFacts`]), what the upstream said about
//! itself ([`ServerFacts`]), what it tells the gateway outside any call
//! ([`UpstreamEvent`]), and the extra HTTP headers of one request.
//!
//! Invariants: plain values, no I/O.
//!
//! Not here: the calls that carry them (`call`, `connection`).

use serde_json::{Map, Value};
use std::sync::Arc;

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
/// `Mcp-Param-*`, a caller's own credential). stdio upstreams ignore them.
/// Two kinds of entry are not headers: a name starting with
/// [`QUERY_PARAM_PREFIX`] is a query parameter of this request's URL (a
/// `user_secret` key injected as `?name=`), and [`ON_BEHALF`] marks a request
/// that carries its caller's own credential (sent nowhere).
pub type ExtraHeaders = Vec<(String, String)>;

/// An [`ExtraHeaders`] name starting with this is a query parameter.
pub const QUERY_PARAM_PREFIX: &str = "?";
/// An [`ExtraHeaders`] entry with this name says the request carries its
/// caller's own credential: a 401/403 is that caller's
/// ([`UpstreamError::is_caller_refused`](crate::UpstreamError::is_caller_refused)),
/// never the connection's.
pub const ON_BEHALF: &str = ":on-behalf";
