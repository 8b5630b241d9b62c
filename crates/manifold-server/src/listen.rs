//! 2026-07-28 `subscriptions/listen` on the downstream side: one SSE stream per
//! listen request, carrying the merged-list changes and resource updates the
//! client opted in to, each tagged with the listen request's id as
//! `_meta["io.modelcontextprotocol/subscriptionId"]`.
//!
//! Invariants:
//! - the acknowledgment is the first message of a stream; nothing is sent to a
//!   listener before it (the `acked` flag, set under the same lock that sends);
//!   a list change that comes earlier is sent right after it, not lost;
//! - only requested kinds are sent, and only the URIs the acknowledgment named;
//! - `resourceSubscriptions` join the shared subscriptions of `resources` under a
//!   listen key (`listen:<n>`), so a URI is subscribed upstream once whatever mix
//!   of legacy sessions and listen streams wants it; when the stream closes (or
//!   the client leaves mid-listen, or Manifold stops) the key leaves them,
//!   unsubscribing upstream where it was last;
//! - a URI nobody owns, or whose upstream refuses the subscription, is left out of
//!   the acknowledgment rather than failing the listen;
//! - the `std::sync::Mutex` is never held across `.await`.
//!
//! When Manifold stops, each stream ends with the final `SubscriptionsListenResult`.
//!
//! Not here: sub-resource matching of `notifications/resources/updated` (URIs
//! match exactly).

use bytes::Bytes;
use futures_util::StreamExt;
use http::{Response, StatusCode};
use manifold_protocol::methods as m;
use manifold_protocol::{jsonrpc, RequestId, RpcError};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::mpsc;

use crate::body::{sse_message, Body};
use crate::http::{rpc_error, sse_response};
use crate::Gateway;
use m::meta::SUBSCRIPTION_ID as META_SUBSCRIPTION;

/// At most this many `resourceSubscriptions` URIs on one listen request; more is
/// -32602 (each URI may cost an upstream subscription).
pub const MAX_LISTEN_RESOURCES: usize = 1024;

const KEY_PREFIX: &str = "listen:";

/// Upstream subscriptions a listen request makes at once.
const JOIN_CONCURRENCY: usize = 8;

/// One open `subscriptions/listen` stream.
struct Listener {
    /// The listen request's JSON-RPC id: every notification's `subscriptionId`.
    id: Value,
    tools: bool,
    prompts: bool,
    resources: bool,
    /// The URIs the acknowledgment named.
    uris: HashSet<String>,
    acked: bool,
    /// List changes that came before the acknowledgment, sent right after it.
    missed: Vec<&'static str>,
    tx: mpsc::Sender<Bytes>,
}

/// Every open listen stream.
#[derive(Default)]
pub(crate) struct Listeners {
    /// By listen key.
    open: Mutex<HashMap<String, Listener>>,
    next_key: AtomicU64,
}

impl Listeners {
    /// The open listeners, closed streams pruned.
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Listener>> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        open.retain(|_, l| !l.tx.is_closed());
        open
    }
}

/// Whether a subscriber key of the shared resource subscriptions is a listen stream's.
pub(crate) fn is_listen_key(key: &str) -> bool {
    key.starts_with(KEY_PREFIX)
}

/// What a listen request asks for.
#[derive(Debug, Default, PartialEq)]
struct Filter {
    tools: bool,
    prompts: bool,
    resources: bool,
    uris: Vec<String>,
}

fn filter(msg: &Map<String, Value>) -> Result<Filter, RpcError> {
    let wanted = match jsonrpc::params(msg).and_then(|p| p.get("notifications")) {
        None => return Ok(Filter::default()),
        Some(Value::Object(w)) => w,
        Some(_) => {
            return Err(RpcError::invalid_params(
                "subscriptions/listen: params.notifications must be an object",
            ))
        }
    };
    let flag = |k: &str| wanted.get(k).and_then(Value::as_bool) == Some(true);
    let mut uris = Vec::new();
    let mut seen = HashSet::new();
    match wanted.get("resourceSubscriptions") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            if items.len() > MAX_LISTEN_RESOURCES {
                return Err(RpcError::invalid_params(format!(
                    "subscriptions/listen: at most {MAX_LISTEN_RESOURCES} resourceSubscriptions \
                     per listen (got {}); open several listens",
                    items.len()
                )));
            }
            for item in items {
                let Some(uri) = item.as_str() else {
                    return Err(RpcError::invalid_params(
                        "subscriptions/listen: resourceSubscriptions must be an array of URI strings",
                    ));
                };
                if seen.insert(uri) {
                    uris.push(uri.to_string());
                }
            }
        }
        Some(_) => {
            return Err(RpcError::invalid_params(
                "subscriptions/listen: resourceSubscriptions must be an array of URI strings",
            ))
        }
    }
    Ok(Filter {
        tools: flag("toolsListChanged"),
        prompts: flag("promptsListChanged"),
        resources: flag("resourcesListChanged"),
        uris,
    })
}

/// Serves `subscriptions/listen`: subscribes the URIs asked for, then opens the
/// stream with the acknowledgment of what is honoured.
pub(crate) async fn listen(
    gw: &Arc<Gateway>,
    id: &RequestId,
    msg: &Map<String, Value>,
) -> Response<Body> {
    let wanted = match filter(msg) {
        Ok(f) => f,
        Err(e) => return rpc_error(StatusCode::BAD_REQUEST, Some(id), &e),
    };
    let key = format!(
        "{KEY_PREFIX}{}",
        gw.listeners.next_key.fetch_add(1, Ordering::Relaxed)
    );
    let (tx, rx) = mpsc::channel(gw.config.limits.stream_queue);
    // Registered before the upstream subscriptions, unacknowledged: an update
    // arriving meanwhile finds the key (and is not delivered) rather than
    // ending the subscription as if the stream were gone.
    gw.listeners.lock().insert(
        key.clone(),
        Listener {
            id: id.as_value().clone(),
            tools: wanted.tools,
            prompts: wanted.prompts,
            resources: wanted.resources,
            uris: HashSet::new(),
            acked: false,
            missed: Vec::new(),
            tx: tx.clone(),
        },
    );
    if !wanted.uris.is_empty() {
        // The subscriptions last as long as the stream: its receiver is dropped
        // when the client goes, or with this handler if the client leaves while
        // the joins below are still running. Either way no join runs after.
        let (gw2, key2, tx2) = (gw.clone(), key.clone(), tx.clone());
        gw.tasks.spawn(async move {
            tokio::select! {
                _ = gw2.shutdown.cancelled() => {}
                _ = tx2.closed() => {}
            }
            crate::resources::session_ended(&gw2, &key2);
        });
    }
    let joins = wanted.uris.clone().into_iter().map(|uri| {
        // Owned: a stream of futures borrowing from here trips the compiler's
        // higher-ranked `Send` check in the connection task.
        let (gw, key) = (gw.clone(), key.clone());
        async move {
            match crate::resources::join(&gw, &key, &uri).await {
                Ok(()) => Some(uri),
                Err(e) => {
                    tracing::debug!(%uri, error = %e.message, "listen: resource subscription not honoured");
                    None
                }
            }
        }
    });
    let honoured_uris: Vec<String> = futures_util::stream::iter(joins)
        .buffered(JOIN_CONCURRENCY)
        .collect::<Vec<Option<String>>>()
        .await
        .into_iter()
        .flatten()
        .collect();

    let mut honoured = Map::new();
    for (k, on) in [
        ("toolsListChanged", wanted.tools),
        ("promptsListChanged", wanted.prompts),
        ("resourcesListChanged", wanted.resources),
    ] {
        if on {
            honoured.insert(k.into(), Value::Bool(true));
        }
    }
    if !wanted.uris.is_empty() {
        honoured.insert("resourceSubscriptions".into(), json!(honoured_uris));
    }
    let ack = json!({
        "jsonrpc": "2.0",
        "method": m::NOTIF_SUBSCRIPTIONS_ACKNOWLEDGED,
        "params": {"_meta": {META_SUBSCRIPTION: id.as_value()}, "notifications": honoured}
    });
    let mut open = gw.listeners.lock();
    if let Some(l) = open.get_mut(&key) {
        // Nothing was sent before: the queue has room for the acknowledgment.
        let _ = l.tx.try_send(sse_message(ack.to_string().as_bytes()));
        l.uris = honoured_uris.into_iter().collect();
        l.acked = true;
        for method in std::mem::take(&mut l.missed) {
            let _ = l.tx.try_send(list_changed(method, &l.id));
        }
    }
    drop(open);
    sse_response(rx, None)
}

/// Manifold is stopping: every listen stream gets the final
/// `SubscriptionsListenResult` (`resultType` and the `subscriptionId`) and ends.
pub(crate) fn end_all(gw: &Gateway) -> usize {
    let ended: Vec<Listener> = gw.listeners.lock().drain().map(|(_, l)| l).collect();
    let mut sent = 0;
    for l in ended {
        let last = json!({
            "jsonrpc": "2.0",
            "id": l.id,
            "result": {"resultType": "complete", "_meta": {META_SUBSCRIPTION: l.id}}
        });
        if l.acked
            && l.tx
                .try_send(sse_message(last.to_string().as_bytes()))
                .is_ok()
        {
            sent += 1;
        }
    }
    sent
}

/// A merged list changed: every listener that asked for that kind hears it,
/// tagged with its listen request's id. Returns how many were sent.
pub(crate) fn notify_listeners(gw: &Gateway, method: &'static str) -> usize {
    let mut open = gw.listeners.lock();
    let mut sent = 0;
    for l in open.values_mut() {
        let wants = match method {
            m::NOTIF_TOOLS_LIST_CHANGED => l.tools,
            m::NOTIF_PROMPTS_LIST_CHANGED => l.prompts,
            m::NOTIF_RESOURCES_LIST_CHANGED => l.resources,
            _ => false,
        };
        if !wants {
            continue;
        }
        if !l.acked {
            // Not lost: sent right after the acknowledgment.
            if !l.missed.contains(&method) {
                l.missed.push(method);
            }
            continue;
        }
        if l.tx.try_send(list_changed(method, &l.id)).is_ok() {
            sent += 1;
        }
    }
    sent
}

fn list_changed(method: &str, id: &Value) -> Bytes {
    let note = json!({
        "jsonrpc": "2.0",
        "method": method,
        "params": {"_meta": {META_SUBSCRIPTION: id}}
    });
    sse_message(note.to_string().as_bytes())
}

/// An upstream's `notifications/resources/updated` for the listen streams `keys`
/// (one lock for all): for each key, `None` when the stream is gone (its
/// subscriptions should end), else whether it was delivered. Every member of the
/// upstream's notification passes through; `subscriptionId` is added to its `_meta`.
pub(crate) fn resource_updated(
    gw: &Gateway,
    keys: &[String],
    msg: &Map<String, Value>,
) -> Vec<Option<bool>> {
    let uri = jsonrpc::params(msg)
        .and_then(|p| p.get("uri"))
        .and_then(Value::as_str);
    let open = gw.listeners.lock();
    keys.iter()
        .map(|key| {
            let l = open.get(key)?;
            if !l.acked || !uri.is_some_and(|u| l.uris.contains(u)) {
                return Some(false);
            }
            let mut note = msg.clone();
            let params = note
                .entry("params")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(p) = params {
                let meta = p
                    .entry("_meta")
                    .or_insert_with(|| Value::Object(Map::new()));
                if let Value::Object(meta) = meta {
                    meta.insert(META_SUBSCRIPTION.into(), l.id.clone());
                }
            }
            let bytes = serde_json::to_vec(&Value::Object(note)).unwrap_or_default();
            Some(l.tx.try_send(sse_message(&bytes)).is_ok())
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn req(notifications: Value) -> Map<String, Value> {
        json!({"jsonrpc": "2.0", "id": 1, "method": "subscriptions/listen",
               "params": {"notifications": notifications}})
        .as_object()
        .cloned()
        .unwrap()
    }

    #[test]
    fn filters_are_parsed_and_bad_ones_refused() {
        let ok = filter(&req(json!({
            "toolsListChanged": true, "promptsListChanged": false,
            "resourceSubscriptions": ["demo://a", "demo://b", "demo://a"]
        })))
        .unwrap();
        assert_eq!(
            ok,
            Filter {
                tools: true,
                prompts: false,
                resources: false,
                uris: vec!["demo://a".into(), "demo://b".into()],
            }
        );
        let refused = [
            json!("everything"),
            json!({"resourceSubscriptions": "demo://a"}),
            json!({"resourceSubscriptions": [1]}),
            json!({"resourceSubscriptions": vec!["x"; MAX_LISTEN_RESOURCES + 1]}),
        ];
        for bad in refused {
            let e = filter(&req(bad.clone())).unwrap_err();
            assert_eq!(
                e.code,
                manifold_protocol::ErrorCode::INVALID_PARAMS,
                "{bad}"
            );
        }
    }
}
