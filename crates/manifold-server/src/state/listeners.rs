//! The open 2026-07-28 `subscriptions/listen` streams, and what reaches them: the
//! merged-list changes and resource updates each asked for, tagged with its
//! listen request's id as `_meta["io.modelcontextprotocol/subscriptionId"]`.
//!
//! Invariants:
//! - the acknowledgment is the first message of a stream; nothing is sent to a
//!   listener before it (the `acked` flag, set under the same lock that sends);
//!   a list change that comes earlier is sent right after it, not lost;
//! - only requested kinds are sent, and only the URIs the acknowledgment named;
//! - a listen stream joins the shared resource subscriptions under its listen
//!   key (`listen:<n>`), never a session id;
//! - the lock is never held across `.await`.
//!
//! Not here: parsing a listen request and subscribing its URIs (the handler,
//! `handlers/listen.rs`).

use bytes::Bytes;
use manifold_protocol::jsonrpc;
use manifold_protocol::methods as m;
use parking_lot::{Mutex, MutexGuard};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc;

use m::meta::SUBSCRIPTION_ID as META_SUBSCRIPTION;

const KEY_PREFIX: &str = "listen:";

/// What a listen stream asked for.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Wanted {
    pub tools: bool,
    pub prompts: bool,
    pub resources: bool,
    /// `resourceSubscriptions`, de-duplicated, in request order.
    pub uris: Vec<String>,
}

/// One open listen stream.
struct Listener {
    /// The listen request's JSON-RPC id: every notification's `subscriptionId`.
    id: Value,
    wanted: Wanted,
    /// The URIs the acknowledgment named.
    uris: HashSet<String>,
    acked: bool,
    /// List changes that came before the acknowledgment, sent right after it.
    missed: Vec<&'static str>,
    tx: mpsc::Sender<Bytes>,
    /// Whose `[[policy]]` view the stream's list changes follow.
    viewer: Option<Arc<manifold_policy::Identity>>,
    /// The endpoint (path) the stream was opened on.
    endpoint: Arc<str>,
}

/// Every open listen stream.
pub(crate) struct Listeners {
    /// By listen key.
    open: Mutex<HashMap<String, Listener>>,
    next_key: AtomicU64,
    /// `limits.max_listens`.
    max: usize,
}

/// Whether a subscriber key of the shared resource subscriptions is a listen stream's.
pub(crate) fn is_listen_key(key: &str) -> bool {
    key.starts_with(KEY_PREFIX)
}

impl Listeners {
    pub(crate) fn new(max: usize) -> Listeners {
        Listeners {
            open: Mutex::default(),
            next_key: AtomicU64::new(0),
            max,
        }
    }

    /// The open listeners, closed streams pruned.
    fn open(&self) -> MutexGuard<'_, HashMap<String, Listener>> {
        let mut open = self.open.lock();
        open.retain(|_, l| !l.tx.is_closed());
        open
    }

    /// Registers a new stream, unacknowledged (nothing is sent to it yet); its
    /// key. `None` when `limits.max_listens` streams are open.
    pub(crate) fn register(
        &self,
        id: Value,
        wanted: Wanted,
        tx: mpsc::Sender<Bytes>,
        viewer: Option<Arc<manifold_policy::Identity>>,
        endpoint: Arc<str>,
    ) -> Option<String> {
        let mut open = self.open();
        if open.len() >= self.max {
            return None;
        }
        let key = format!(
            "{KEY_PREFIX}{}",
            self.next_key.fetch_add(1, Ordering::Relaxed)
        );
        open.insert(
            key.clone(),
            Listener {
                id,
                wanted,
                uris: HashSet::new(),
                acked: false,
                missed: Vec::new(),
                tx,
                viewer,
                endpoint,
            },
        );
        Some(key)
    }

    /// The endpoint and the viewer whose view the listen stream `key`
    /// follows (`None` when it is gone).
    pub(crate) fn viewer(
        &self,
        key: &str,
    ) -> Option<(Arc<str>, Option<Arc<manifold_policy::Identity>>)> {
        self.open()
            .get(key)
            .map(|l| (l.endpoint.clone(), l.viewer.clone()))
    }

    /// Sends the acknowledgment of what is honoured (the list kinds asked for,
    /// and `honoured` of the URIs), then any list change that came meanwhile.
    pub(crate) fn acknowledge(&self, key: &str, honoured: Vec<String>) {
        let mut open = self.open();
        let Some(l) = open.get_mut(key) else { return };
        let mut notifications = Map::new();
        for (k, on) in [
            ("toolsListChanged", l.wanted.tools),
            ("promptsListChanged", l.wanted.prompts),
            ("resourcesListChanged", l.wanted.resources),
        ] {
            if on {
                notifications.insert(k.into(), Value::Bool(true));
            }
        }
        if !l.wanted.uris.is_empty() {
            notifications.insert("resourceSubscriptions".into(), json!(honoured));
        }
        let ack = json!({
            "jsonrpc": "2.0",
            "method": m::NOTIF_SUBSCRIPTIONS_ACKNOWLEDGED,
            "params": {"_meta": {META_SUBSCRIPTION: l.id}, "notifications": notifications}
        });
        // Nothing was sent before: the queue has room for the acknowledgment.
        let _ = l.tx.try_send(Bytes::from(ack.to_string()));
        l.uris = honoured.into_iter().collect();
        l.acked = true;
        for method in std::mem::take(&mut l.missed) {
            let _ = l.tx.try_send(list_changed(method, &l.id));
        }
    }

    /// Manifold is stopping: every stream gets the final
    /// `SubscriptionsListenResult` (`resultType` and the `subscriptionId`) and
    /// ends. Returns how many got it.
    pub(crate) fn end_all(&self) -> usize {
        let ended: Vec<Listener> = self.open().drain().map(|(_, l)| l).collect();
        let mut sent = 0;
        for l in ended {
            let last = json!({
                "jsonrpc": "2.0",
                "id": l.id,
                "result": {"resultType": "complete", "_meta": {META_SUBSCRIPTION: l.id}}
            });
            if l.acked && l.tx.try_send(Bytes::from(last.to_string())).is_ok() {
                sent += 1;
            }
        }
        sent
    }

    /// A merged list changed: every listener that asked for that kind, and for
    /// whose viewer `sees` it changed, hears it. Returns how many were sent.
    pub(crate) fn list_changed(
        &self,
        method: &'static str,
        sees: &mut dyn FnMut(&Arc<str>, Option<&manifold_policy::Identity>) -> bool,
    ) -> usize {
        let mut open = self.open();
        let mut sent = 0;
        for l in open.values_mut() {
            let wants = match method {
                m::NOTIF_TOOLS_LIST_CHANGED => l.wanted.tools,
                m::NOTIF_PROMPTS_LIST_CHANGED => l.wanted.prompts,
                m::NOTIF_RESOURCES_LIST_CHANGED => l.wanted.resources,
                _ => false,
            };
            if !wants || !sees(&l.endpoint, l.viewer.as_deref()) {
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

    /// An upstream's `notifications/resources/updated` for the streams `keys`
    /// (one lock for all): for each key, `None` when the stream is gone (its
    /// subscriptions should end), else whether it was delivered. Every member of
    /// the upstream's notification passes through; `subscriptionId` is added to
    /// its `_meta`.
    pub(crate) fn resource_updated(
        &self,
        keys: &[String],
        msg: &Map<String, Value>,
    ) -> Vec<Option<bool>> {
        let uri = jsonrpc::params(msg)
            .and_then(|p| p.get("uri"))
            .and_then(Value::as_str);
        let open = self.open();
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
                Some(l.tx.try_send(Bytes::from(bytes)).is_ok())
            })
            .collect()
    }
}

fn list_changed(method: &str, id: &Value) -> Bytes {
    let note = json!({
        "jsonrpc": "2.0",
        "method": method,
        "params": {"_meta": {META_SUBSCRIPTION: id}}
    });
    Bytes::from(note.to_string())
}
/// For the console's overview.
impl Listeners {
    /// Open `subscriptions/listen` streams.
    pub(crate) fn len(&self) -> usize {
        self.open().len()
    }
}
