//! The one `subscriptions/listen` Manifold keeps open to each 2026-07-28 upstream.
//!
//! It asks for the `list_changed` kinds the upstream declared (`listChanged` in
//! its capabilities) and, when it declared `resources.subscribe`, for the resource
//! URIs clients subscribed to. What arrives is routed like any notification: a
//! `list_changed` refetches the lists (router), a resource update goes to the
//! gateway with the upstream's `subscriptionId` removed.
//!
//! The listen is opened before the first list fetch, which waits for its
//! acknowledgment (at most [`LISTEN_ACK_WAIT`](crate::limits::LISTEN_ACK_WAIT)): a
//! change made between the fetch and the listen would otherwise be heard by
//! nobody. An acknowledgment that comes after the fetch refetches the lists.
//!
//! The stream is reopened when the watched URIs change, after [`LISTEN_TIMEOUT`],
//! and, with capped backoff, after it fails; a failed or replaced stream may have
//! missed a change, so the lists are refetched once the next one is acknowledged.
//!
//! Not here: clients' own listens (manifold-server).

use manifold_protocol::methods as m;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{oneshot, watch};

use crate::call::Call;
use crate::connection::Connection;
use crate::message::{CallEvent, CallOutcome, NotRelayed};
use crate::{facts::ServerFacts, limits::LISTEN_TIMEOUT};

/// Delay before reopening a listen that failed; doubles up to [`RETRY_MAX`].
const RETRY_INITIAL: Duration = Duration::from_millis(500);
const RETRY_MAX: Duration = Duration::from_secs(30);

/// What the listen asks for, from the upstream's declared capabilities.
fn wanted(facts: &ServerFacts, uris: &BTreeSet<String>) -> Option<Map<String, Value>> {
    let caps = &facts.capabilities;
    let flag = |cap: &str, key: &str| caps.get(cap).and_then(|c| c.get(key)) == Some(&json!(true));
    let mut n = Map::new();
    for (cap, key) in [
        ("tools", "toolsListChanged"),
        ("prompts", "promptsListChanged"),
        ("resources", "resourcesListChanged"),
    ] {
        if flag(cap, "listChanged") {
            n.insert(key.into(), Value::Bool(true));
        }
    }
    if flag("resources", "subscribe") && !uris.is_empty() {
        n.insert("resourceSubscriptions".into(), json!(uris));
    }
    (!n.is_empty()).then_some(n)
}

/// Starts the session's listen task (ends with the session). The receiver
/// resolves when the first stream is acknowledged, and fails as soon as there
/// is nothing to listen for or that stream ends first: fetch the lists after it.
pub(crate) fn start(
    session: &Arc<Connection>,
    facts: &ServerFacts,
    watched: watch::Receiver<BTreeSet<String>>,
) -> oneshot::Receiver<()> {
    let (s, facts) = (session.clone(), facts.clone());
    let (acked, first) = oneshot::channel();
    session.wire.spawn_owned(run(s, facts, watched, acked));
    first
}

async fn run(
    session: Arc<Connection>,
    facts: ServerFacts,
    mut watched: watch::Receiver<BTreeSet<String>>,
    acked: oneshot::Sender<()>,
) {
    let name = session.wire.upstream().clone();
    let mut retry = RETRY_INITIAL;
    let mut missed = false;
    // Until the first acknowledgment: whoever waits for it fetches the lists
    // next. Dropped when there is no stream to wait for.
    let mut first = Some(acked);
    loop {
        let uris = watched.borrow_and_update().clone();
        let Some(notifications) = wanted(&facts, &uris) else {
            first = None;
            // Nothing to listen for until a client subscribes to a resource.
            if watched.changed().await.is_err() {
                return;
            }
            continue;
        };
        let mut params = Map::new();
        params.insert("notifications".into(), Value::Object(notifications));
        let headers = vec![(
            m::HEADER_METHOD.to_string(),
            m::SUBSCRIPTIONS_LISTEN.to_string(),
        )];
        let call = Call::start(
            &session,
            m::SUBSCRIPTIONS_LISTEN,
            Some(params),
            headers,
            LISTEN_TIMEOUT,
            None,
        )
        .await;
        let mut call = match call {
            Ok(c) => c,
            Err(e) => {
                tracing::debug!(upstream = %name, error = %e, "subscriptions/listen not sent");
                return; // the session is closing
            }
        };
        session.wire.router.set_listen(call.upstream_id());
        let opened = tokio::time::Instant::now();
        let mut failed = false;
        loop {
            tokio::select! {
                ev = call.next() => match ev {
                    CallEvent::Notification(msg) => {
                        let method = msg.get("method").and_then(Value::as_str).unwrap_or_default();
                        if method == m::NOTIF_SUBSCRIPTIONS_ACKNOWLEDGED {
                            tracing::debug!(upstream = %name, "subscriptions/listen acknowledged");
                            // No longer waited for: the first fetch went before it.
                            if first.take().is_some_and(|a| a.send(()).is_err()) {
                                missed = true;
                            }
                            if std::mem::take(&mut missed) {
                                session.wire.router.request_refresh();
                            }
                            retry = RETRY_INITIAL;
                        } else {
                            session.wire.router.to_gateway(msg);
                        }
                    }
                    CallEvent::Request { responder, method, .. } => {
                        responder.refuse(NotRelayed::OnSubscription { method }).await;
                    }
                    CallEvent::Done(outcome) => {
                        // A final result ends it normally; anything else is a failure.
                        failed = !matches!(outcome, CallOutcome::Result(_));
                        if failed {
                            tracing::debug!(upstream = %name, ?outcome, "subscriptions/listen ended");
                        }
                        break;
                    }
                },
                changed = watched.changed() => {
                    call.cancel("the watched resources changed").await;
                    if changed.is_err() {
                        return;
                    }
                    // A list change between this stream's end and the next one's
                    // acknowledgment would be missed: refetch once it is back.
                    missed = true;
                    break;
                }
            }
        }
        session.wire.router.set_listen(0);
        first = None;
        // A stream the upstream ends at once every time must not become a loop.
        if failed || opened.elapsed() < RETRY_INITIAL * 2 {
            missed = true;
            tokio::time::sleep(retry).await;
            retry = (retry * 2).min(RETRY_MAX);
        }
    }
}
