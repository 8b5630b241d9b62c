//! [`UpstreamError`]: why a request to an upstream produced no response.
//!
//! Invariants: each variant knows the JSON-RPC code a client sees for it
//! ([`UpstreamError::code`]); how it reaches a client (a tool error, a JSON-RPC
//! error, which HTTP status) is the server's refusal table, not decided here.
//!
//! Not here: the upstream's own JSON-RPC errors, which pass through untouched
//! ([`CallOutcome::Error`](crate::CallOutcome::Error)).

use manifold_foundation::redact;
use manifold_protocol::ErrorCode;

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
    /// Its credentials are missing, expired beyond refresh, revoked or short
    /// of a scope: a person has to log in (`manifold login`).
    #[error("upstream `{upstream}` needs login: {reason}")]
    NeedsLogin {
        upstream: String,
        reason: String,
        /// Only this request needs more scope; the token is good otherwise.
        step_up: bool,
    },
}

impl UpstreamError {
    /// The JSON-RPC code a client sees when this error ends its request.
    pub fn code(&self) -> ErrorCode {
        match self {
            UpstreamError::Timeout { .. } => ErrorCode::UPSTREAM_TIMEOUT,
            UpstreamError::Protocol { .. } => ErrorCode::INTERNAL_ERROR,
            _ => ErrorCode::UPSTREAM_UNAVAILABLE,
        }
    }
    pub fn is_timeout(&self) -> bool {
        matches!(self, UpstreamError::Timeout { .. })
    }
    pub fn is_unavailable(&self) -> bool {
        matches!(
            self,
            UpstreamError::Unavailable { .. }
                | UpstreamError::Busy { .. }
                | UpstreamError::NeedsLogin { .. }
        )
    }
    pub fn is_cancelled(&self) -> bool {
        matches!(self, UpstreamError::Cancelled { .. })
    }
    pub fn is_needs_login(&self) -> bool {
        matches!(self, UpstreamError::NeedsLogin { .. })
    }
    pub(crate) fn needs_login(upstream: &str, reason: impl Into<String>, step_up: bool) -> Self {
        UpstreamError::NeedsLogin {
            upstream: upstream.to_string(),
            reason: scrub(reason.into()),
            step_up,
        }
    }
    pub fn is_protocol(&self) -> bool {
        matches!(self, UpstreamError::Protocol { .. })
    }
    pub(crate) fn unavailable(upstream: &str, reason: impl Into<String>) -> Self {
        UpstreamError::Unavailable {
            upstream: upstream.to_string(),
            reason: scrub(reason.into()),
        }
    }
    pub(crate) fn protocol(upstream: &str, reason: impl Into<String>) -> Self {
        UpstreamError::Protocol {
            upstream: upstream.to_string(),
            reason: scrub(reason.into()),
        }
    }
}

/// A reason travels to `/readyz`, `/upstreams`, logs and the tool error a
/// model reads: any URL in it loses its userinfo and query, where operators
/// put secrets (`?api_key=${KEY}`).
fn scrub(reason: String) -> String {
    match redact::urls_in(&reason) {
        std::borrow::Cow::Borrowed(_) => reason,
        std::borrow::Cow::Owned(clean) => clean,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn reasons_never_carry_a_urls_userinfo_or_query() {
        for e in [
            UpstreamError::unavailable(
                "u",
                "HTTP request to http://h:1/mcp?api_key=SECRET failed: refused",
            ),
            UpstreamError::protocol("u", "https://SECRET@h/mcp answered 200 with HTML"),
            UpstreamError::needs_login("u", "https://as/token?client_secret=SECRET: 401", false),
        ] {
            let shown = e.to_string();
            assert!(!shown.contains("SECRET") && shown.contains("h"), "{shown}");
        }
    }

    #[test]
    fn each_error_has_its_code_and_predicate() {
        let up = || "u".to_string();
        let cases = [
            (
                UpstreamError::Unavailable {
                    upstream: up(),
                    reason: "down".into(),
                },
                ErrorCode::UPSTREAM_UNAVAILABLE,
                "unavailable",
            ),
            (
                UpstreamError::Busy {
                    upstream: up(),
                    limit: 3,
                },
                ErrorCode::UPSTREAM_UNAVAILABLE,
                "unavailable",
            ),
            (
                UpstreamError::Timeout {
                    upstream: up(),
                    timeout: Duration::from_secs(2),
                },
                ErrorCode::UPSTREAM_TIMEOUT,
                "timeout",
            ),
            (
                UpstreamError::Protocol {
                    upstream: up(),
                    reason: "x".into(),
                },
                ErrorCode::INTERNAL_ERROR,
                "protocol",
            ),
            (
                UpstreamError::Cancelled { upstream: up() },
                ErrorCode::UPSTREAM_UNAVAILABLE,
                "cancelled",
            ),
        ];
        for (e, code, kind) in cases {
            assert_eq!(e.code(), code, "{e}");
            let got = [
                ("unavailable", e.is_unavailable()),
                ("timeout", e.is_timeout()),
                ("protocol", e.is_protocol()),
                ("cancelled", e.is_cancelled()),
            ];
            for (k, is) in got {
                assert_eq!(is, k == kind, "{e}: is_{k}");
            }
            assert!(e.to_string().contains("`u`"), "{e} names the upstream");
        }
    }
}
