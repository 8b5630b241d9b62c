//! What a transport hands the protocol logic: which transport carries a
//! session ([`TransportKind`]; a few tools behave differently) and what one
//! request carries along while it is handled ([`CallContext`]).
//!
//! Invariants: a [`CallContext`] belongs to one request; what is sent on its
//! `outbound` goes to that request's client only.
//!
//! Not here: the transports themselves (`stdio`, `http`).

use serde_json::{Map, Value};
use tokio::sync::mpsc;

/// Which transport carries the session; a few tools behave differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    Stdio,
    Http,
}

/// What a transport provides to one request while it is handled.
#[derive(Debug, Default)]
pub struct CallContext {
    /// Where messages tied to this request go (progress notifications,
    /// server→client requests). `None` when the transport cannot deliver
    /// them, e.g. an HTTP client that does not accept `text/event-stream`.
    pub outbound: Option<mpsc::UnboundedSender<Value>>,
    /// Request headers whose lowercase name starts with `mcp-` (HTTP only).
    pub mcp_headers: Map<String, Value>,
}
