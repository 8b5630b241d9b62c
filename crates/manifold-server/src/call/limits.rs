//! Step limits: whether the call may go now. A `tools/call` takes its places
//! under `[[rate_limit]]` (rate buckets, shared by every replica through
//! Redis with `[cluster] redis`, and concurrency caps) — after any
//! confirmation, so a call waiting for a human holds none and a declined one
//! costs none; and no audited call goes while its record cannot be kept
//! (`[audit] on_failure = "reject"`). `search_tools` takes its places too
//! ([`search`]).
//!
//! Invariants: the places are held by the call (its [`Permit`] rides with
//! the relay until the answer) and given back whatever its end; a refusal
//! says when to retry; the local operator is never rate-limited.
//!
//! Not here: the buckets and the Redis-then-local fallback (manifold-policy
//! `limits`), the audit writer's state (manifold-audit).
//!
//! [`Permit`]: manifold_policy::Permit

use super::context::{Call, What};
use crate::refusal::Refusal;
use crate::request::Request;

/// Takes the call's rate-limit places, and checks the audit log can take its
/// record.
pub(crate) async fn take(x: &Request, call: &mut Call) -> Result<(), Refusal> {
    if call.what == What::Tool {
        call.permit = rate_limits(x, &call.exposed).await?;
    }
    // With `on_failure = "reject"`, no call runs while its record cannot be kept.
    if let Some(Err(e)) = x.gw.auditor.as_ref().map(|a| a.check()) {
        return Err(Refusal::AuditUnavailable(e));
    }
    Ok(())
}

/// `search_tools` takes its places under `[[rate_limit]]` as a call of a
/// tool of that name does (a rule for `*` covers it), held while it runs:
/// a search flood is a load like any other.
pub(crate) async fn search(
    x: &Request,
    search_tools: &str,
) -> Result<Option<manifold_policy::Permit>, Refusal> {
    rate_limits(x, search_tools).await
}

/// `[[rate_limit]]`: the places a call of `tool` holds until it ends
/// (`None`: no rule applies to this caller), or the refusal saying when to
/// retry.
async fn rate_limits(x: &Request, tool: &str) -> Result<Option<manifold_policy::Permit>, Refusal> {
    let limits = x.gw.live().rate_limits.clone();
    if limits.is_empty() {
        return Ok(None);
    }
    let Some(caller) = x.principal.identity() else {
        return Ok(None);
    };
    let shared = (x.gw.cluster.as_ref()).map(|c| &*c.bus as &dyn manifold_policy::SharedBuckets);
    let permit = limits.admit_with(&caller, tool, shared).await;
    permit.map(Some).map_err(|l| Refusal::RateLimited {
        tool: tool.to_string(),
        rule: l.rule,
        limit: l.limit,
        retry_after: l.retry_after,
    })
}
