//! Resource subscriptions kept in step with their subscribers: the first
//! subscriber of a URI (a session, or a listen stream's key) subscribes
//! upstream, and the last one to leave unsubscribes. An upstream's
//! `notifications/resources/updated` reaches only the subscribers of that URI
//! (a session's GET stream on another replica through the cluster's bus).
//! When an upstream reconnects, its subscriptions are renewed.
//!
//! A 2026-07-28 upstream has no `resources/subscribe`: its URIs join or
//! leave the `resourceSubscriptions` of Manifold's one listen to it.
//!
//! Invariants: no lock is held across `.await`; a subscribe that races a
//! background unsubscribe ends subscribed upstream.
//!
//! Not here: the table (`subscriptions`), parsing client requests (the
//! handlers).

use bytes::Bytes;
use manifold_protocol::headers::standard_headers;
use manifold_protocol::jsonrpc;
use manifold_protocol::methods as m;
use manifold_protocol::ErrorCode;
use manifold_upstream::{CallOutcome, Upstream};
use serde_json::{Map, Value};
use std::sync::Arc;

use manifold_catalog::namespace::UriNamespaces;
use std::borrow::Cow;

use super::listeners::is_listen_key;
use super::uris::to_upstream;
use super::Gateway;
use crate::refusal::Refusal;

/// Sends a request Manifold makes itself (subscribe, unsubscribe) and waits for it.
/// A 2026-07-28 upstream has no such methods: the URI joins (or leaves) the
/// `resourceSubscriptions` of Manifold's listen to it.
/// `uri` is as exposed: an upstream's namespaced URI goes to it as it wrote
/// it (`[naming] resources`).
async fn own_request(
    uris: &UriNamespaces,
    upstream: &Upstream,
    method: &str,
    uri: &str,
) -> Result<(), Refusal> {
    let uri = &*to_upstream(uris, upstream.name(), uri);
    if upstream.is_stateless() {
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
            let code = ErrorCode::of_error(raw.get()).unwrap_or(ErrorCode::INTERNAL_ERROR);
            let msg = v.get("message").and_then(Value::as_str).unwrap_or("error");
            Err(Refusal::UpstreamRefused {
                code: code.0,
                message: format!("upstream `{}`: {msg}", upstream.name()),
            })
        }
        CallOutcome::Failed(e) => Err(Refusal::Upstream(e)),
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
        let first = self
            .tables
            .subscriptions
            .join(subscriber, uri, upstream.name(), limit)?;
        if first {
            let uris = self.live().uris.clone();
            if let Err(e) = own_request(&uris, &upstream, m::RESOURCES_SUBSCRIBE, uri).await {
                self.tables.subscriptions.leave(subscriber, uri);
                return Err(e);
            }
        }
        Ok(())
    }

    /// Removes `subscriber` from a URI's subscribers, unsubscribing upstream where
    /// it was the last; awaited, so a subscribe right after cannot overtake it
    /// upstream. Unsubscribing twice is harmless.
    pub(crate) async fn unsubscribe(&self, subscriber: &str, uri: &str) {
        let Some(upstream) = self.tables.subscriptions.leave(subscriber, uri) else {
            return;
        };
        if let Some(up) = self.upstream(&upstream) {
            let uris = self.live().uris.clone();
            if let Err(e) = own_request(&uris, &up, m::RESOURCES_UNSUBSCRIBE, uri).await {
                tracing::debug!(upstream = %up.name(), %uri, error = %e, "unsubscribe failed");
            }
        }
    }

    /// A session (or listen stream) ended: its subscriptions go, upstream too
    /// where it was the last.
    pub(crate) fn unsubscribe_all(self: &Arc<Self>, subscriber: &str) {
        for uri in self.tables.subscriptions.held_by(subscriber) {
            if let Some(upstream) = self.tables.subscriptions.leave(subscriber, &uri) {
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
        let uris = self.live().uris.clone();
        if up.is_stateless() {
            // No request: the URI leaves the listen's set at once, in order.
            up.watch_resource(&to_upstream(&uris, up.name(), &uri), false);
            return;
        }
        let gw = self.clone();
        self.life.background.spawn(async move {
            tokio::select! {
                _ = gw.life.stop.cancelled() => {}
                _ = async {
                    if gw.tables.subscriptions.wanted(&uri) {
                        return; // someone joined before it was sent: nothing to undo
                    }
                    if let Err(e) = own_request(&uris, &up, m::RESOURCES_UNSUBSCRIBE, &uri).await {
                        tracing::debug!(upstream = %up.name(), %uri, error = %e, "unsubscribe failed");
                    }
                    if gw.tables.subscriptions.wanted(&uri) {
                        if let Err(e) = own_request(&uris, &up, m::RESOURCES_SUBSCRIBE, &uri).await {
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
        // Subscribed (and told) as exposed: a namespaced URI under its
        // upstream's prefix.
        let uris = self.live().uris.clone();
        let exposed = uris
            .prefix_of(upstream)
            .map_or(Cow::Borrowed(uri), |p| uris.expose(p, uri));
        let subscribers = self.tables.subscriptions.subscribers_of(&exposed, upstream);
        if subscribers.is_empty() {
            return 0;
        }
        let renamed;
        let msg = match &exposed {
            Cow::Borrowed(_) => msg,
            Cow::Owned(e) => {
                let mut m = msg.clone();
                if let Some(Value::Object(p)) = m.get_mut("params") {
                    p.insert("uri".into(), Value::String(e.clone()));
                }
                renamed = m;
                &renamed
            }
        };
        let message =
            Bytes::from(serde_json::to_vec(&Value::Object(msg.clone())).unwrap_or_default());
        let (listens, sessions): (Vec<String>, Vec<String>) =
            subscribers.into_iter().partition(|id| is_listen_key(id));
        let mut sent = 0;
        let delivered = self.tables.listeners.resource_updated(&listens, msg);
        for (key, delivered) in listens.iter().zip(delivered) {
            match delivered {
                Some(d) => sent += usize::from(d),
                None => self.unsubscribe_all(key),
            }
        }
        for id in sessions {
            match self.tables.sessions.get(&id) {
                Some(s) if s.push(message.clone()) => sent += 1,
                // No GET stream here: with replicas, it may be open on another.
                Some(s) if self.cluster.is_some() => {
                    if let Some(c) = &self.cluster {
                        let push = manifold_cluster::Message::Push {
                            session: s.digest.clone(),
                            message: String::from_utf8_lossy(&message).into_owned(),
                        };
                        c.publish_later(&self.life.background, push);
                    }
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
        if let Some(renewal) = self.renewal(upstream) {
            self.life.background.spawn(renewal);
        }
    }

    /// The renewal of `upstream`'s subscriptions, `None` when it has none: each
    /// URI subscribed again in turn (each request bounded by the upstream's
    /// `timeout`), a failure logged; it stops at shutdown.
    pub(crate) fn renewal(
        &self,
        upstream: &Upstream,
    ) -> Option<impl std::future::Future<Output = ()> + Send + 'static> {
        let uris = self.tables.subscriptions.at(upstream.name());
        if uris.is_empty() {
            return None;
        }
        let up = upstream.clone();
        let shutdown = self.life.stop.clone();
        let namespaces = self.live().uris.clone();
        Some(async move {
            for uri in uris {
                tokio::select! {
                    _ = shutdown.cancelled() => return,
                    r = own_request(&namespaces, &up, m::RESOURCES_SUBSCRIBE, &uri) => if let Err(e) = r {
                        tracing::warn!(upstream = %up.name(), %uri, error = %e,
                            "renewing a resource subscription failed");
                    }
                }
            }
        })
    }
}
