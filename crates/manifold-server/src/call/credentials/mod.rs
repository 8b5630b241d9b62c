//! Step credentials: what the call presents upstream on the caller's behalf.
//! For `token_exchange` upstreams, the caller's own validated access token,
//! exchanged (RFC 8693) for one whose audience is the upstream, rides on the
//! call as its `Authorization` — every user reaches the upstream as
//! themselves, and the caller's token itself is never sent upstream. For
//! `user_oauth` and `user_secret` upstreams, the account the caller connected
//! (`accounts`): its token or key rides on the call; a caller with none is
//! asked to connect one (`refusal::AccountAsk` says how each client is asked).
//!
//! Invariants: only a bearer token the front door validated (`[auth]` JWT or
//! introspection) is exchanged, and only at an authorization server that may
//! receive it (manifold-credentials refuses the others before sending); a
//! caller without one, or whose exchange the authorization server refuses, is
//! refused before anything reaches the upstream, with a message saying why;
//! the exchange is bounded by the upstream's `timeout`.
//!
//! Not here: the exchange and its cache (manifold-credentials), the
//! gateway's own credentials for an upstream (`auth` other than
//! `token_exchange`: manifold-upstream's HTTP transport asks them).

use manifold_policy::AuthMethod;
use manifold_upstream::Upstream;

mod accounts;

use super::context::Call;
use crate::refusal::Refusal;
use crate::request::{Principal, Request};

/// Adds the `Authorization` header to call `call`'s upstream with on behalf of
/// the caller, when the upstream acts on behalf of callers.
pub(crate) async fn attach(x: &Request, call: &mut Call) -> Result<(), Refusal> {
    if let Some(accounts) = x.gw.tables.connects.accounts(&call.upstream) {
        return accounts::attach(x, call, &accounts).await;
    }
    if let Some(h) = authorization(x, &call.upstream).await? {
        call.headers.push(h);
    }
    Ok(())
}

/// The upstream refused the credential a call carried for `principal`: at a
/// `user_oauth` / `user_secret` upstream, the account is forgotten (revoked
/// or expired there), so the caller's next call asks them to connect again.
pub(crate) async fn refused(gw: &crate::state::Gateway, upstream: &str, principal: Option<&str>) {
    let (Some(principal), Some(up)) = (principal, gw.upstream(upstream)) else {
        return;
    };
    let Some(accounts) = gw.tables.connects.accounts(&up) else {
        return;
    };
    match accounts.revoke(principal).await {
        Ok(true) => accounts::lapsed(gw, &accounts, principal),
        Ok(false) => {}
        Err(e) => {
            tracing::error!(upstream, principal, error = %e, "a refused account could not be forgotten")
        }
    }
}

/// The `Authorization` header to call `upstream` with on behalf of the
/// caller; `None` when the upstream does not act on behalf of callers.
async fn authorization(
    x: &Request,
    upstream: &Upstream,
) -> Result<Option<(String, String)>, Refusal> {
    let Some(tokens) = upstream.tokens().filter(|t| t.exchanges()) else {
        return Ok(None);
    };
    let via = match &x.principal {
        Principal::Caller(id) => match id.method {
            AuthMethod::Jwt => Some(manifold_credentials::Validated::Jwt),
            AuthMethod::Introspection => Some(manifold_credentials::Validated::Introspection),
            _ => None,
        },
        _ => None,
    };
    let bearer = via.and_then(|via| {
        x.arrival
            .front
            .header(http::header::AUTHORIZATION.as_str())
            .and_then(|v| v.split_once(' '))
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, t)| (t.trim().to_string(), via))
    });
    let Some((bearer, via)) = bearer else {
        return Err(Refusal::NoTokenToExchange {
            upstream: upstream.name().to_string(),
        });
    };
    // Bounded like the call itself (the client's disconnection drops it).
    let within = upstream.config().timeout;
    match tokio::time::timeout(within, tokens.exchange(&bearer, via)).await {
        Ok(Ok(t)) => Ok(Some(("authorization".to_string(), format!("Bearer {t}")))),
        Ok(Err(e)) => Err(Refusal::ExchangeRefused {
            upstream: upstream.name().to_string(),
            why: e.to_string(),
        }),
        Err(_) => Err(Refusal::ExchangeRefused {
            upstream: upstream.name().to_string(),
            why: format!(
                "exchanging the caller's token for `{}` took longer than its timeout ({within:?})",
                upstream.name()
            ),
        }),
    }
}
