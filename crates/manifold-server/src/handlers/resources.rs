//! `resources/read`, `resources/subscribe` and `resources/unsubscribe`, each routed
//! to the upstream that owns the URI (see `state::ownership`).
//!
//! Invariants: URIs are never renamed; a read of a URI nobody owns is the spec's
//! resource-not-found error (-32002); unsubscribing twice is harmless.
//!
//! Not here: the shared subscription table (`state::subscriptions`).

use manifold_protocol::jsonrpc;
use serde_json::{Map, Value};

use crate::exchange::Exchange;
use crate::refusal::Refusal;
use crate::relay::{self, resolve};
use crate::reply::Reply;

/// `resources/read`.
pub(crate) async fn read(x: &mut Exchange, params: Map<String, Value>) -> Result<Reply, Refusal> {
    let uri = resolve::required_str(&params, "uri", &x.method)?;
    if let Some(o) = x.observation() {
        o.name = Some(uri.clone());
        o.original = Some(uri.clone());
    }
    let target = resolve::resource(&x.gw, &x.access(), &x.method, &uri)?;
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
    let uri = resolve::required_str(&params, "uri", &x.method)?;
    let who = subscriber(x)?;
    if !x.access().may_read(&x.gw.catalog(), &uri) {
        // As for a URI nobody owns: the rule goes by pattern, not existence.
        return Err(Refusal::ResourceNotFound { uri });
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
    let uri = resolve::required_str(&params, "uri", &x.method)?;
    let who = subscriber(x)?;
    x.gw.unsubscribe(&who, &uri).await;
    Ok(empty(x))
}

fn empty(x: &Exchange) -> Reply {
    Reply::ok(jsonrpc::response_bytes_from_json(&x.rpc_id, b"{}"))
}
