//! `resources/subscribe` and `resources/unsubscribe`: a session's resource
//! subscriptions, shared upstream with every session and listen stream that
//! wants the same URI (see `state::subscriptions`).
//!
//! Invariants: URIs are never renamed, but under resource rules a URI is
//! subscribed in the canonical form the rules matched (an ambiguous one is
//! -32602, see `state::views::Access::resource_uri`); a URI the caller may
//! not read answers as one nobody owns (-32002); unsubscribing twice is
//! harmless.
//!
//! Not here: `resources/read` (the call chain, `call`), the shared
//! subscription table (`state::subscriptions`).

use manifold_protocol::jsonrpc;
use serde_json::{Map, Value};

use crate::call::resolve;
use crate::refusal::Refusal;
use crate::reply::Reply;
use crate::request::Request;

fn subscriber(x: &Request) -> Result<String, Refusal> {
    // Only session-era callers reach these methods (the method table says so).
    x.caller
        .session()
        .map(|s| s.id.clone())
        .ok_or_else(|| Refusal::MethodNotFound(x.method.clone()))
}

/// `resources/subscribe`.
pub(crate) async fn subscribe(
    x: &mut Request,
    params: Map<String, Value>,
) -> Result<Reply, Refusal> {
    let asked = resolve::required_str(&params, "uri", &x.method)?;
    let who = subscriber(x)?;
    let access = x.access();
    let base = access.base().clone();
    // Under resource rules, the form they match is the one subscribed.
    let uri = access.resource_uri(&base, &asked)?;
    if !access.may_read(&base, &uri) {
        // As for a URI nobody owns: the rule goes by pattern, not existence.
        return Err(Refusal::ResourceNotFound { uri: asked });
    }
    let limit = x.gw.cfg().limits.max_subscriptions_per_session;
    x.gw.subscribe(&who, &uri, Some(limit)).await?;
    Ok(empty(x))
}

/// `resources/unsubscribe`: always `{}`.
pub(crate) async fn unsubscribe(
    x: &mut Request,
    params: Map<String, Value>,
) -> Result<Reply, Refusal> {
    let asked = resolve::required_str(&params, "uri", &x.method)?;
    let who = subscriber(x)?;
    // The form `subscribe` kept; a URI without one was never subscribed.
    let access = x.access();
    let uri = access.resource_uri(access.base(), &asked).unwrap_or(asked);
    x.gw.unsubscribe(&who, &uri).await;
    Ok(empty(x))
}

fn empty(x: &Request) -> Reply {
    Reply::ok(jsonrpc::response_bytes_from_json(&x.rpc_id, b"{}"))
}
