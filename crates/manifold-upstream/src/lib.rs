//! One actor task per upstream MCP server. It owns the connection (a stdio child
//! process or a Streamable-HTTP session), performs the `initialize` handshake, keeps
//! the upstream's lists (all pages) until the upstream says `list_changed`, restarts
//! it with capped exponential backoff when it dies, and publishes its health.
//!
//! Calls do not queue behind the actor: a [`Call`] goes straight to the live session,
//! which mints the upstream-side id and progress token and routes what comes back
//! (see `router`). The gateway learns about list changes and unaddressed notifications
//! through an [`UpstreamEvent`] channel.
//!
//! Invariants: a dead or hanging upstream never blocks another (each has its own
//! tasks, queues and limits); every spawned task is tied to a cancellation token;
//! no lock is held across `.await`.
//!
//! Not here: naming and merging (manifold-catalog), downstream sessions
//! (manifold-server).

mod call;
mod handshake;
mod http;
mod router;
mod stdio;
mod supervisor;

pub use call::{Call, CallEvent, CallOutcome, Responder};
pub use supervisor::{State, Upstream, UpstreamStatus};

use manifold_protocol::ErrorCode;
use serde_json::{Map, Value};
use std::sync::Arc;

/// Manifold's name and version in `clientInfo`.
pub const CLIENT_NAME: &str = "manifold";
pub const CLIENT_VERSION: &str = env!("CARGO_PKG_VERSION");
/// The revision Manifold asks upstreams for.
pub const UPSTREAM_PROTOCOL_VERSION: &str = "2025-11-25";
/// Pages fetched per list before Manifold gives up on an upstream that keeps
/// returning `nextCursor` (a loop or a runaway server).
pub const MAX_LIST_PAGES: usize = 1000;
/// Restart backoff: first delay, cap, and how long a session must live for the
/// backoff to reset.
pub const BACKOFF_INITIAL: std::time::Duration = std::time::Duration::from_millis(500);
pub const BACKOFF_MAX: std::time::Duration = std::time::Duration::from_secs(30);
pub const BACKOFF_RESET_AFTER: std::time::Duration = std::time::Duration::from_secs(60);

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

/// Why a call to an upstream did not produce a response.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    #[error("upstream `{upstream}` is unavailable: {reason}")]
    Unavailable { upstream: String, reason: String },
    #[error("upstream `{upstream}` did not answer within {timeout:?}")]
    Timeout {
        upstream: String,
        timeout: std::time::Duration,
    },
    #[error("upstream `{upstream}` has {limit} requests in flight already; try again later")]
    Busy { upstream: String, limit: usize },
    #[error("upstream `{upstream}` broke the protocol: {reason}")]
    Protocol { upstream: String, reason: String },
    #[error("the call to upstream `{upstream}` was cancelled")]
    Cancelled { upstream: String },
}

impl UpstreamError {
    pub fn code(&self) -> ErrorCode {
        match self {
            UpstreamError::Timeout { .. } => ErrorCode::UPSTREAM_TIMEOUT,
            UpstreamError::Protocol { .. } => ErrorCode::INTERNAL_ERROR,
            _ => ErrorCode::UPSTREAM_UNAVAILABLE,
        }
    }
    pub fn http_status(&self) -> u16 {
        match self {
            UpstreamError::Timeout { .. } => 504,
            UpstreamError::Busy { .. } => 503,
            UpstreamError::Unavailable { .. } => 502,
            UpstreamError::Protocol { .. } => 502,
            UpstreamError::Cancelled { .. } => 499,
        }
    }
    pub fn is_timeout(&self) -> bool {
        matches!(self, UpstreamError::Timeout { .. })
    }
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            UpstreamError::Unavailable { .. } | UpstreamError::Busy { .. }
        )
    }
    pub fn is_cancelled(&self) -> bool {
        matches!(self, UpstreamError::Cancelled { .. })
    }
    pub(crate) fn unavailable(upstream: &str, reason: impl Into<String>) -> Self {
        UpstreamError::Unavailable {
            upstream: upstream.to_string(),
            reason: reason.into(),
        }
    }
    pub(crate) fn protocol(upstream: &str, reason: impl Into<String>) -> Self {
        UpstreamError::Protocol {
            upstream: upstream.to_string(),
            reason: reason.into(),
        }
    }
}

/// What the upstream said about itself in `initialize`.
#[derive(Debug, Clone, Default)]
pub struct ServerFacts {
    pub protocol_version: String,
    pub capabilities: Map<String, Value>,
    pub server_info: Value,
    pub instructions: Option<String>,
}

/// Extra HTTP headers for one forwarded request (`Mcp-Method`, `Mcp-Name`,
/// `Mcp-Param-*`). stdio upstreams ignore them.
pub type ExtraHeaders = Vec<(String, String)>;
