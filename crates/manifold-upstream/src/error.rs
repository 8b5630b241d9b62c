//! [`UpstreamError`]: why a request to an upstream produced no response.
//!
//! Invariants: each variant knows the JSON-RPC code a client sees for it
//! ([`UpstreamError::code`]) and whether sending the request again could help
//! ([`UpstreamError::retry_class`]: only [`UpstreamError::Transient`] can); how
//! it reaches a client (a tool error, a JSON-RPC error, which HTTP status) is
//! the server's refusal table, not decided here.
//!
//! Not here: the upstream's own JSON-RPC errors, which pass through untouched
//! ([`CallOutcome::Error`](crate::message::CallOutcome::Error)).

use manifold_foundation::redact;
use manifold_protocol::ErrorCode;

/// Why a call to an upstream did not produce a response.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    #[error("upstream `{upstream}` is unavailable: {reason}")]
    Unavailable { upstream: String, reason: String },
    /// A failure that sending again may get past: the request never left
    /// (`sent: false`: the connection was refused or had closed), or it left
    /// and the upstream failed in a way that says "not now" before answering
    /// (`sent: true`: HTTP 502/503/504, a connection reset before the
    /// response, a stdio child that exited mid-call).
    #[error("upstream `{upstream}` is unavailable: {reason}")]
    Transient {
        upstream: String,
        reason: String,
        sent: bool,
    },
    /// Its circuit breaker is open: recent calls failed, so calls fail at once
    /// until `retry_in` has passed and a probe call gets through.
    #[error("upstream `{upstream}` is failing ({reason}); Manifold stopped calling it for now and will try it again in {}s", retry_in.as_secs_f64().ceil() as u64)]
    Failing {
        upstream: String,
        reason: String,
        retry_in: std::time::Duration,
    },
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
    /// The upstream refused the credential a call carried for its caller
    /// (an exchanged token, the caller's own account): that caller's to mend,
    /// never the connection's, and no fault of the upstream's.
    #[error("upstream `{upstream}` refused the credential sent for this caller (HTTP {status}): the token exchanged for this caller, or the account the caller connected, is not accepted")]
    CallerRefused { upstream: String, status: u16 },
}

/// Whether a failed request may be sent again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryClass {
    /// It never reached the upstream: safe to send again.
    NotSent,
    /// It may have reached the upstream, which failed in a transient way
    /// before answering: safe to send again only if the call may be repeated.
    Transient,
    /// Sending again would not help, or could do harm (a timeout, a broken
    /// protocol, a refusal of credentials, the caller's cancellation).
    No,
}

impl UpstreamError {
    /// Whether sending the request again could get past this failure.
    pub fn retry_class(&self) -> RetryClass {
        match self {
            UpstreamError::Transient { sent: false, .. } => RetryClass::NotSent,
            UpstreamError::Transient { sent: true, .. } => RetryClass::Transient,
            _ => RetryClass::No,
        }
    }
    /// Whether this failure says something about the upstream's health (what
    /// a circuit breaker counts): not the caller's cancellation, Manifold's
    /// own limits, credentials or an open breaker.
    pub fn is_upstream_fault(&self) -> bool {
        matches!(
            self,
            UpstreamError::Unavailable { .. }
                | UpstreamError::Transient { .. }
                | UpstreamError::Timeout { .. }
                | UpstreamError::Protocol { .. }
        )
    }
    pub(crate) fn transient(upstream: &str, reason: impl Into<String>, sent: bool) -> Self {
        UpstreamError::Transient {
            upstream: upstream.to_string(),
            reason: scrub(reason.into()),
            sent,
        }
    }
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
                | UpstreamError::Transient { .. }
                | UpstreamError::Failing { .. }
                | UpstreamError::Busy { .. }
                | UpstreamError::NeedsLogin { .. }
                | UpstreamError::CallerRefused { .. }
        )
    }
    /// The upstream refused the caller's own credential (HTTP 401/403).
    pub fn is_caller_refused(&self) -> bool {
        matches!(self, UpstreamError::CallerRefused { .. })
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
            UpstreamError::transient(
                "u",
                "HTTP request to https://user:SECRET@h/mcp failed: reset",
                false,
            ),
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
                UpstreamError::transient("u", "HTTP 503", true),
                ErrorCode::UPSTREAM_UNAVAILABLE,
                "unavailable",
            ),
            (
                UpstreamError::Failing {
                    upstream: up(),
                    reason: "5 failures in a row".into(),
                    retry_in: Duration::from_millis(2500),
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

    #[test]
    fn only_transient_failures_may_be_sent_again() {
        let t = |sent| UpstreamError::transient("u", "x", sent);
        assert_eq!(t(false).retry_class(), RetryClass::NotSent);
        assert_eq!(t(true).retry_class(), RetryClass::Transient);
        for e in [
            UpstreamError::unavailable("u", "x"),
            UpstreamError::protocol("u", "x"),
            UpstreamError::Cancelled {
                upstream: "u".into(),
            },
            UpstreamError::Timeout {
                upstream: "u".into(),
                timeout: Duration::from_secs(1),
            },
        ] {
            assert_eq!(e.retry_class(), RetryClass::No, "{e}");
        }
        let open = UpstreamError::Failing {
            upstream: "u".into(),
            reason: "r".into(),
            retry_in: Duration::from_millis(2100),
        };
        assert!(open.to_string().contains("again in 3s"), "{open}");
        assert!(!open.is_upstream_fault() && t(true).is_upstream_fault());
    }
}
