//! `resources/read`, `resources/subscribe` and `resources/unsubscribe`, each routed
//! to the upstream that owns the URI (see `state::ownership`).
//!
//! Invariants: URIs are never renamed, but under resource rules a URI is read
//! and subscribed in the canonical form the rules matched (an ambiguous one is
//! -32602, see `state::views::Access::resource_uri`); a read of a URI nobody
//! owns is the spec's resource-not-found error (-32002); unsubscribing twice
//! is harmless.
//!
//! Not here: the shared subscription table (`state::subscriptions`).

use manifold_protocol::jsonrpc;
use serde_json::{Map, Value};

use crate::exchange::Exchange;
use crate::refusal::Refusal;
use crate::relay::{self, resolve};
use crate::reply::Reply;

/// `resources/read`.
pub(crate) async fn read(
    x: &mut Exchange,
    mut params: Map<String, Value>,
) -> Result<Reply, Refusal> {
    let uri = resolve::required_str(&params, "uri", &x.method)?;
    if let Some(o) = x.observation() {
        o.name = Some(uri.clone());
        o.original = Some(uri.clone());
    }
    let target = resolve::resource(&x.gw, &x.access(), &x.method, &mut params)?;
    relay::forward(x, params, target).await
}

fn subscriber(x: &Exchange) -> Result<String, Refusal> {
    // Only session-era callers reach these methods (the method table says so).
    x.caller
        .session()
        .map(|s| s.id.clone())
        .ok_or_else(|| Refusal::MethodNotFound(x.method.clone()))
}

/// `resources/subscribe`.
pub(crate) async fn subscribe(
    x: &mut Exchange,
    params: Map<String, Value>,
) -> Result<Reply, Refusal> {
    let asked = resolve::required_str(&params, "uri", &x.method)?;
    let who = subscriber(x)?;
    let (access, base) = (x.access(), x.gw.catalog());
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
    x: &mut Exchange,
    params: Map<String, Value>,
) -> Result<Reply, Refusal> {
    let asked = resolve::required_str(&params, "uri", &x.method)?;
    let who = subscriber(x)?;
    // The form `subscribe` kept; a URI without one was never subscribed.
    let uri = x
        .access()
        .resource_uri(&x.gw.catalog(), &asked)
        .unwrap_or(asked);
    x.gw.unsubscribe(&who, &uri).await;
    Ok(empty(x))
}

fn empty(x: &Exchange) -> Reply {
    Reply::ok(jsonrpc::response_bytes_from_json(&x.rpc_id, b"{}"))
}
