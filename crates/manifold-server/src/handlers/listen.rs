//! 2026-07-28 `subscriptions/listen`: one stream per listen request, carrying the
//! merged-list changes and resource updates the client opted in to.
//!
//! Invariants:
//! - `resourceSubscriptions` join the shared subscriptions under the stream's
//!   listen key, so a URI is subscribed upstream once whatever mix of sessions and
//!   listen streams wants it; when the stream closes (or the client leaves
//!   mid-listen, or Manifold stops) the key leaves them, unsubscribing upstream
//!   where it was last;
//! - a URI nobody owns, or whose upstream refuses the subscription, is left out of
//!   the acknowledgment rather than failing the listen;
//! - at most [`MAX_LISTEN_RESOURCES`] URIs per listen;
//! - `taskIds` (the Tasks extension) need the extension declared (-32021), and
//!   are not honoured yet (left out of the acknowledgment).
//!
//! Not here: what reaches an open stream and when (`state::listeners`); sub-resource
//! matching of `notifications/resources/updated` (URIs match exactly).

use futures_util::StreamExt;
use serde_json::{Map, Value};
use std::collections::HashSet;
use tokio::sync::mpsc;

use crate::refusal::Refusal;
use crate::reply::Reply;
use crate::request::{Caller, Request};
use crate::state::listeners::Wanted;

/// At most this many `resourceSubscriptions` URIs on one listen request; more is
/// -32602 (each URI may cost an upstream subscription).
pub const MAX_LISTEN_RESOURCES: usize = 1024;

/// Upstream subscriptions a listen request makes at once.
const JOIN_CONCURRENCY: usize = 8;

fn filter(params: &Map<String, Value>) -> Result<Wanted, Refusal> {
    let bad = |m: &str| Refusal::BadListenFilter(m.to_string());
    let wanted = match params.get("notifications") {
        None => return Ok(Wanted::default()),
        Some(Value::Object(w)) => w,
        Some(_) => return Err(bad("params.notifications must be an object")),
    };
    let flag = |k: &str| wanted.get(k).and_then(Value::as_bool) == Some(true);
    let mut uris = Vec::new();
    let mut seen = HashSet::new();
    match wanted.get("resourceSubscriptions") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            if items.len() > MAX_LISTEN_RESOURCES {
                return Err(Refusal::BadListenFilter(format!(
                    "at most {MAX_LISTEN_RESOURCES} resourceSubscriptions per listen (got {}); \
                     open several listens",
                    items.len()
                )));
            }
            for item in items {
                let Some(uri) = item.as_str() else {
                    return Err(bad("resourceSubscriptions must be an array of URI strings"));
                };
                if seen.insert(uri) {
                    uris.push(uri.to_string());
                }
            }
        }
        Some(_) => return Err(bad("resourceSubscriptions must be an array of URI strings")),
    }
    Ok(Wanted {
        tools: flag("toolsListChanged"),
        prompts: flag("promptsListChanged"),
        resources: flag("resourcesListChanged"),
        uris,
    })
}

/// Serves `subscriptions/listen`: subscribes the URIs asked for, then opens the
/// stream with the acknowledgment of what is honoured.
pub(crate) async fn listen(x: &mut Request, params: Map<String, Value>) -> Result<Reply, Refusal> {
    let gw = x.gw.clone();
    // Task status notifications (the Tasks extension) need the extension
    // declared on this request (SEP-2663: -32021). Manifold does not relay them
    // yet: a declaring client's `taskIds` are left out of the acknowledgment,
    // as what is not honoured is, and it polls `tasks/get`.
    let asks_tasks = params
        .get("notifications")
        .and_then(|n| n.get("taskIds"))
        .is_some_and(|t| !t.is_null());
    let declared = matches!(&x.caller, Caller::Stateless(c)
        if manifold_protocol::tasks::declares_extension(&c.capabilities));
    if asks_tasks && !declared {
        return Err(Refusal::TasksExtensionRequired {
            method: x.method.clone(),
        });
    }
    let wanted = filter(&params)?;
    // URIs the caller's `[[policy]]` view excludes are not honoured, like URIs
    // nobody owns.
    // Under resource rules a URI is honoured in the canonical form they
    // matched; an ambiguous one is not honoured.
    let access = x.access();
    let base = access.base().clone();
    let mut seen = std::collections::HashSet::new();
    let uris: Vec<String> = (wanted.uris.iter())
        .filter_map(|u| access.resource_uri(&base, u).ok())
        .filter(|u| access.may_read(&base, u) && seen.insert(u.clone()))
        .collect();
    let (tx, rx) = mpsc::channel(gw.cfg().limits.stream_queue);
    // Registered before the upstream subscriptions, unacknowledged: an update
    // arriving meanwhile finds the key (and is not delivered) rather than ending
    // the subscription as if the stream were gone.
    let key = gw
        .tables
        .listeners
        .register(
            x.rpc_id.as_value().clone(),
            wanted,
            tx.clone(),
            x.principal.identity(),
            x.arrival.endpoint.clone(),
        )
        .ok_or(Refusal::TooManyListens {
            limit: gw.cfg().limits.max_listens,
        })?;
    if !uris.is_empty() {
        // The subscriptions last as long as the stream: its receiver is dropped
        // when the client goes, or with this handler if the client leaves while
        // the joins below are still running. Either way no join runs after.
        let (gw2, key2) = (gw.clone(), key.clone());
        gw.life.background.spawn(async move {
            // `shutdown`, not `stop`: listen streams end (with their final
            // result) when draining begins, and this task holds a sender.
            tokio::select! {
                _ = gw2.life.shutdown.cancelled() => {}
                _ = tx.closed() => {}
            }
            gw2.unsubscribe_all(&key2);
        });
    }
    let joins = uris.into_iter().map(|uri| {
        // Owned: a stream of futures borrowing from here trips the compiler's
        // higher-ranked `Send` check in the connection task.
        let (gw, key) = (gw.clone(), key.clone());
        async move {
            match gw.subscribe(&key, &uri, None).await {
                Ok(()) => Some(uri),
                Err(e) => {
                    tracing::debug!(%uri, error = %e, "listen: resource subscription not honoured");
                    None
                }
            }
        }
    });
    let honoured: Vec<String> = futures_util::stream::iter(joins)
        .buffered(JOIN_CONCURRENCY)
        .collect::<Vec<Option<String>>>()
        .await
        .into_iter()
        .flatten()
        .collect();
    gw.tables.listeners.acknowledge(&key, honoured);
    Ok(Reply::Stream(rx))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(notifications: Value) -> Map<String, Value> {
        json!({"notifications": notifications})
            .as_object()
            .cloned()
            .unwrap()
    }

    #[test]
    fn filters_are_parsed_and_bad_ones_refused() {
        let ok = filter(&params(json!({
            "toolsListChanged": true, "promptsListChanged": false,
            "resourceSubscriptions": ["demo://a", "demo://b", "demo://a"]
        })))
        .unwrap();
        assert_eq!(
            ok,
            Wanted {
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
            let e = filter(&params(bad.clone())).unwrap_err();
            assert_eq!(
                e.code(),
                Some(manifold_protocol::ErrorCode::INVALID_PARAMS),
                "{bad}"
            );
            assert_eq!(
                e.status(crate::era::Era::Stateless),
                http::StatusCode::BAD_REQUEST
            );
        }
    }
}
