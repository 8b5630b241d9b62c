//! The table of resource subscriptions, shared: every URI some session or
//! listen stream (by its key) subscribed to, who holds it, the upstream it is
//! subscribed at, and how many URIs each subscriber holds.
//!
//! Invariants: the lock is never held across `.await`; a URI is in the table
//! while it has a subscriber, and only then.
//!
//! Not here: subscribing upstream and delivering updates (`subscribing`),
//! parsing client requests (the handlers).

use parking_lot::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

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
    pub(crate) fn leave(&self, subscriber: &str, uri: &str) -> Option<Arc<str>> {
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

    pub(crate) fn wanted(&self, uri: &str) -> bool {
        self.0.lock().by_uri.contains_key(uri)
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

    /// Adds `subscriber` to `uri` (owned by `upstream`), within `limit` URIs
    /// for it: `Ok(true)` when it is the URI's first subscriber (subscribe
    /// upstream), `Ok(false)` when others were there or it already was.
    pub(crate) fn join(
        &self,
        subscriber: &str,
        uri: &str,
        upstream: &Arc<str>,
        limit: Option<usize>,
    ) -> Result<bool, Refusal> {
        let mut t = self.0.lock();
        let already = t
            .by_uri
            .get(uri)
            .is_some_and(|s| s.subscribers.contains(subscriber));
        if already {
            return Ok(false);
        }
        let held = t.per_subscriber.get(subscriber).copied().unwrap_or(0);
        if let Some(limit) = limit.filter(|&l| held >= l) {
            return Err(Refusal::TooManySubscriptions { limit });
        }
        let sub = t
            .by_uri
            .entry(uri.to_string())
            .or_insert_with(|| Subscription {
                upstream: upstream.clone(),
                subscribers: HashSet::new(),
            });
        let first = sub.subscribers.is_empty();
        sub.subscribers.insert(subscriber.to_string());
        t.count(subscriber, 1);
        Ok(first)
    }

    /// The URIs `subscriber` holds.
    pub(crate) fn held_by(&self, subscriber: &str) -> Vec<String> {
        self.0
            .lock()
            .by_uri
            .iter()
            .filter(|(_, s)| s.subscribers.contains(subscriber))
            .map(|(u, _)| u.clone())
            .collect()
    }

    /// The subscribers of `uri` if `upstream` owns its subscription.
    pub(crate) fn subscribers_of(&self, uri: &str, upstream: &str) -> Vec<String> {
        match self.0.lock().by_uri.get(uri) {
            Some(s) if &*s.upstream == upstream => s.subscribers.iter().cloned().collect(),
            _ => Vec::new(),
        }
    }

    /// The URIs subscribed at `upstream`.
    pub(crate) fn at(&self, upstream: &str) -> Vec<String> {
        self.0
            .lock()
            .by_uri
            .iter()
            .filter(|(_, s)| &*s.upstream == upstream)
            .map(|(u, _)| u.clone())
            .collect()
    }
}
