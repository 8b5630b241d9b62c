//! Resource subscriptions, shared: the first subscriber of a URI (a session, or a
//! listen stream's key) subscribes upstream, and the last one to leave
//! unsubscribes. An upstream's `notifications/resources/updated` reaches only the
//! subscribers of that URI. When an upstream reconnects, its subscriptions are
//! renewed.
//!
//! A modern (2026-07-28) upstream has no `resources/subscribe`: its URIs join or
//! leave the `resourceSubscriptions` of Manifold's one listen to it.
//!
//! Invariants: the lock is never held across `.await`; a subscribe
//! that races a background unsubscribe ends subscribed upstream.
//!
//! Not here: parsing client requests (the handlers).

use bytes::Bytes;
use manifold_protocol::headers::standard_headers;
use manifold_protocol::jsonrpc;
use manifold_protocol::methods as m;
use manifold_upstream::{CallOutcome, Upstream};
use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use super::listeners::is_listen_key;
use super::Gateway;
use crate::refusal::Refusal;

/// One URI's subscribers.
struct Subscription {
    upstream: Arc<str>,
    subscribers: HashSet<String>,
}

/// Every URI some session or listen stream subscribed to, and how many each
/// subscriber holds (for `limits.max_subscriptions_per_session`).
#[derive(Default)]
pub(crate) struct Subscriptions(Mutex<Table>);

#[derive(Default)]
struct Table {
    by_uri: HashMap<String, Subscription>,
    per_subscriber: HashMap<String, usize>,
}

impl Table {
    fn count(&mut self, subscriber: &str, delta: isize) {
        let n = self
            .per_subscriber
            .entry(subscriber.to_string())
            .or_default();
        *n = n.saturating_add_signed(delta);
        if *n == 0 {
            self.per_subscriber.remove(subscriber);
        }
    }
}

impl Subscriptions {
    /// Removes one subscriber from a URI; the upstream to unsubscribe at when
    /// nobody is left (the entry is then gone).
    fn leave(&self, subscriber: &str, uri: &str) -> Option<Arc<str>> {
        let mut t = self.0.lock();
        let sub = t.by_uri.get_mut(uri)?;
        if !sub.subscribers.remove(subscriber) {
            return None;
        }
        let last = sub.subscribers.is_empty();
        t.count(subscriber, -1);
        if !last {
            return None;
        }
        t.by_uri.remove(uri).map(|s| s.upstream)
    }

    fn wanted(&self, uri: &str) -> bool {
        self.0.lock().by_uri.contains_key(uri)
    }
}

/// Sends a request Manifold makes itself (subscribe, unsubscribe) and waits for it.
/// A modern upstream has no such methods: the URI joins (or leaves) the
/// `resourceSubscriptions` of Manifold's listen to it.
async fn own_request(upstream: &Upstream, method: &str, uri: &str) -> Result<(), Refusal> {
    if upstream.is_modern() {
        upstream.watch_resource(uri, method == m::RESOURCES_SUBSCRIBE);
        return Ok(());
    }
    let mut params = Map::new();
    params.insert("uri".into(), Value::from(uri));
    let mut call = upstream
        .call(method, Some(params), standard_headers(method, Some(uri)))
        .await
        .map_err(Refusal::Upstream)?;
    match call.outcome().await {
        CallOutcome::Result(_) => Ok(()),
        CallOutcome::Error(raw) => {
            let v: Value = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
            let code = v.get("code").and_then(Value::as_i64).unwrap_or(-32603);
            let msg = v.get("message").and_then(Value::as_str).unwrap_or("error");
            Err(Refusal::UpstreamRefused {
                code,
                message: format!("upstream `{}`: {msg}", upstream.name()),
            })
        }
        CallOutcome::Failed(e) => Err(Refusal::Upstream(e)),
    }
}

impl Subscriptions {
    /// Every (URI, subscriber) pair (a snapshot; no lock is kept).
    pub(crate) fn pairs(&self) -> Vec<(String, String)> {
        self.0
            .lock()
            .by_uri
            .iter()
            .flat_map(|(uri, s)| {
                s.subscribers
                    .iter()
                    .map(move |who| (uri.clone(), who.clone()))
            })
            .collect()
    }
}

impl Gateway {
    /// Adds `subscriber` (a session id, or a listen stream's key) to the URI's
    /// subscribers; the first one subscribes upstream. On an upstream refusal the
    /// subscriber is removed again and the refusal returned.
    /// `limit`: how many URIs this subscriber may hold (a session's
    /// `limits.max_subscriptions_per_session`; a listen stream is bounded by its
    /// request).
    pub(crate) async fn subscribe(
        self: &Arc<Self>,
        subscriber: &str,
        uri: &str,
        limit: Option<usize>,
    ) -> Result<(), Refusal> {
        let Some(upstream) = self.owner_of(uri) else {
            return Err(Refusal::ResourceNotFound {
                uri: uri.to_string(),
            });
        };
        let first = {
            let mut t = self.subscriptions.0.lock();
            let already = t
                .by_uri
                .get(uri)
                .is_some_and(|s| s.subscribers.contains(subscriber));
            if already {
                return Ok(());
            }
            let held = t.per_subscriber.get(subscriber).copied().unwrap_or(0);
            if let Some(limit) = limit.filter(|&l| held >= l) {
                return Err(Refusal::TooManySubscriptions { limit });
            }
            let sub = t
                .by_uri
                .entry(uri.to_string())
                .or_insert_with(|| Subscription {
                    upstream: upstream.name().clone(),
                    subscribers: HashSet::new(),
                });
            let first = sub.subscribers.is_empty();
            sub.subscribers.insert(subscriber.to_string());
            t.count(subscriber, 1);
            first
        };
        if first {
            if let Err(e) = own_request(&upstream, m::RESOURCES_SUBSCRIBE, uri).await {
                self.subscriptions.leave(subscriber, uri);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Removes `subscriber` from a URI's subscribers, unsubscribing upstream where
    /// it was the last; awaited, so a subscribe right after cannot overtake it
    /// upstream. Unsubscribing twice is harmless.
    pub(crate) async fn unsubscribe(&self, subscriber: &str, uri: &str) {
        let Some(upstream) = self.subscriptions.leave(subscriber, uri) else {
            return;
        };
        if let Some(up) = self.upstream(&upstream) {
            if let Err(e) = own_request(&up, m::RESOURCES_UNSUBSCRIBE, uri).await {
                tracing::debug!(upstream = %up.name(), %uri, error = %e, "unsubscribe failed");
            }
        }
    }

    /// A session (or listen stream) ended: its subscriptions go, upstream too
    /// where it was the last.
    pub(crate) fn unsubscribe_all(self: &Arc<Self>, subscriber: &str) {
        let uris: Vec<String> = self
            .subscriptions
            .0
            .lock()
            .by_uri
            .iter()
            .filter(|(_, s)| s.subscribers.contains(subscriber))
            .map(|(u, _)| u.clone())
            .collect();
        for uri in uris {
            if let Some(upstream) = self.subscriptions.leave(subscriber, &uri) {
                self.unsubscribe_upstream(upstream, uri);
            }
        }
    }

    /// Unsubscribes upstream in the background (the last subscriber left without
    /// a request to answer). A subscriber may join while the unsubscribe is on its
    /// way and its subscribe can reach the upstream first: then the URI is
    /// subscribed again afterwards, so the upstream ends up as the subscribers say.
    fn unsubscribe_upstream(self: &Arc<Self>, upstream: Arc<str>, uri: String) {
        let Some(up) = self.upstream(&upstream) else {
            return;
        };
        if up.is_modern() {
            // No request: the URI leaves the listen's set at once, in order.
            up.watch_resource(&uri, false);
            return;
        }
        let gw = self.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                _ = gw.stop.cancelled() => {}
                _ = async {
                    if gw.subscriptions.wanted(&uri) {
                        return; // someone joined before it was sent: nothing to undo
                    }
                    if let Err(e) = own_request(&up, m::RESOURCES_UNSUBSCRIBE, &uri).await {
                        tracing::debug!(upstream = %up.name(), %uri, error = %e, "unsubscribe failed");
                    }
                    if gw.subscriptions.wanted(&uri) {
                        if let Err(e) = own_request(&up, m::RESOURCES_SUBSCRIBE, &uri).await {
                            tracing::warn!(upstream = %up.name(), %uri, error = %e,
                                "re-subscribing after a racing unsubscribe failed");
                        }
                    }
                } => {}
            }
        });
    }

    /// `notifications/resources/updated` from `upstream`: to the subscribers of
    /// its URI, sessions on their GET stream and listen streams tagged with their
    /// `subscriptionId`. Returns how many took it.
    pub(crate) fn resource_updated(
        self: &Arc<Self>,
        upstream: &str,
        msg: &Map<String, Value>,
    ) -> usize {
        let Some(uri) = jsonrpc::params(msg)
            .and_then(|p| p.get("uri"))
            .and_then(Value::as_str)
        else {
            return 0;
        };
        let subscribers: Vec<String> = match self.subscriptions.0.lock().by_uri.get(uri) {
            Some(s) if &*s.upstream == upstream => s.subscribers.iter().cloned().collect(),
            _ => return 0,
        };
        let message =
            Bytes::from(serde_json::to_vec(&Value::Object(msg.clone())).unwrap_or_default());
        let (listens, sessions): (Vec<String>, Vec<String>) =
            subscribers.into_iter().partition(|id| is_listen_key(id));
        let mut sent = 0;
        let delivered = self.listeners.resource_updated(&listens, msg);
        for (key, delivered) in listens.iter().zip(delivered) {
            match delivered {
                Some(d) => sent += usize::from(d),
                None => self.unsubscribe_all(key),
            }
        }
        for id in sessions {
            match self.sessions.get(&id) {
                Some(s) if s.push(message.clone()) => sent += 1,
                // No GET stream here: with replicas, it may be open on another.
                Some(s) if self.cluster.is_some() => {
                    self.publish_later(manifold_cluster::Message::Push {
                        session: s.digest.clone(),
                        message: String::from_utf8_lossy(&message).into_owned(),
                    });
                }
                Some(_) => {}
                None => self.unsubscribe_all(&id),
            }
        }
        sent
    }

    /// An upstream (re)connected: its subscriptions were lost with the old
    /// connection, so they are renewed.
    pub(crate) fn renew_subscriptions(&self, upstream: &Upstream) {
        let uris: Vec<String> = self
            .subscriptions
            .0
            .lock()
            .by_uri
            .iter()
            .filter(|(_, s)| s.upstream == *upstream.name())
            .map(|(u, _)| u.clone())
            .collect();
        if uris.is_empty() {
            return;
        }
        let up = upstream.clone();
        let shutdown = self.stop.clone();
        self.tasks.spawn(async move {
            for uri in uris {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    r = own_request(&up, m::RESOURCES_SUBSCRIBE, &uri) => if let Err(e) = r {
                        tracing::warn!(upstream = %up.name(), %uri, error = %e,
                            "renewing a resource subscription failed");
                    }
                }
            }
        });
    }
}
