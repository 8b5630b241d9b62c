//! The calls in flight on one upstream session, and where each message the upstream
//! sends belongs.
//!
//! Invariants:
//! - Manifold mints every JSON-RPC id (a counter per session) and every progress
//!   token (`mf-<id>`) it sends upstream; responses and progress are matched on those,
//!   so two clients using the same id or token never cross.
//! - A message reaches at most one call. Server→client requests and log messages that
//!   carry no routing key go to the call they arrived with (HTTP: the POST's stream;
//!   stdio: the only call in flight), else to the gateway, never broadcast.
//! - The lock guards are never held across `.await`.
//!
//! Not here: parsing what arrives (`wire`), reading or writing bytes (the
//! transports), timeouts (`attempt`).

use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{mpsc, oneshot};

use crate::limits::GARBAGE_LINES_PER_WINDOW;
use crate::message::{CallEvent, CallOutcome, Responder};
use crate::{error::UpstreamError, facts::UpstreamEvent};
use manifold_foundation::log_budget::LogBudget;

/// Messages buffered per call between the upstream reader and the downstream writer.
/// Progress beyond this is dropped (with a warning) rather than stalling the upstream
/// for every other client.
pub const CALL_EVENT_QUEUE: usize = 256;

struct Slot {
    events: mpsc::Sender<CallEvent>,
    done: Option<oneshot::Sender<CallOutcome>>,
    /// (token sent upstream, the client's original token)
    token: Option<(String, Value)>,
}

pub(crate) struct Router {
    pub(crate) upstream: std::sync::Arc<str>,
    next_id: AtomicU64,
    calls: Mutex<HashMap<u64, Slot>>,
    tokens: Mutex<HashMap<String, u64>>,
    max_pending: usize,
    gateway: mpsc::Sender<UpstreamEvent>,
    /// Wakes the supervisor to refetch lists (capacity 1: changes coalesce).
    refresh: mpsc::Sender<()>,
    /// The id of the open `subscriptions/listen` (0: none). It is not a client's
    /// call: it neither counts as in flight nor claims unaddressed messages.
    listen: AtomicU64,
    /// Log budget for what a broken upstream sends (garbage, floods).
    pub(crate) noise: LogBudget,
    /// Responses that came after their call had ended (cancelled, timed out):
    /// dropped, counted.
    late: AtomicU64,
}

/// What the router needs from the receiving end of a new call.
pub(crate) struct Registered {
    pub id: u64,
    pub events: mpsc::Receiver<CallEvent>,
    pub done: oneshot::Receiver<CallOutcome>,
}

/// Where a message from an upstream arrived, which says what it may relate to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// HTTP: on the response stream of this call.
    Call(u64),
    /// stdio: the one shared stream; a message may relate to any call.
    Stdio,
    /// HTTP: the GET stream, which carries what relates to no request.
    Standalone,
}

impl Source {
    fn call(self) -> Option<u64> {
        match self {
            Source::Call(id) => Some(id),
            _ => None,
        }
    }
}

/// A server→client request the router could not place; the transport answers it.
pub(crate) enum Unplaced {
    Ping,
    NoClient { method: String },
}

impl Router {
    pub(crate) fn new(
        upstream: std::sync::Arc<str>,
        max_pending: usize,
        gateway: mpsc::Sender<UpstreamEvent>,
        refresh: mpsc::Sender<()>,
    ) -> Router {
        Router {
            upstream,
            next_id: AtomicU64::new(1),
            calls: Mutex::new(HashMap::new()),
            tokens: Mutex::new(HashMap::new()),
            max_pending,
            gateway,
            refresh,
            listen: AtomicU64::new(0),
            noise: LogBudget::new(GARBAGE_LINES_PER_WINDOW),
            late: AtomicU64::new(0),
        }
    }

    pub(crate) fn set_listen(&self, id: u64) {
        self.listen.store(id, Ordering::Relaxed);
    }

    /// Registers a call and rewrites `msg` (id, progress token) for the upstream.
    pub(crate) fn register(
        &self,
        msg: &mut Map<String, Value>,
    ) -> Result<Registered, UpstreamError> {
        let reg = self.register_params(msg.get_mut("params").and_then(Value::as_object_mut))?;
        msg.insert("id".into(), Value::from(reg.id));
        Ok(reg)
    }

    /// Registers a call whose envelope the caller writes itself (with
    /// [`Registered::id`]), rewriting the progress token in its `params`.
    pub(crate) fn register_params(
        &self,
        params: Option<&mut Map<String, Value>>,
    ) -> Result<Registered, UpstreamError> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let token = params
            .and_then(|p| p.get_mut("_meta"))
            .and_then(Value::as_object_mut)
            .and_then(|m| m.get_mut("progressToken"))
            .map(|t| {
                let ours = format!("mf-{id}");
                let original = std::mem::replace(t, Value::String(ours.clone()));
                (ours, original)
            });
        let (etx, erx) = mpsc::channel(CALL_EVENT_QUEUE);
        let (dtx, drx) = oneshot::channel();
        {
            let mut calls = self.calls.lock();
            if calls.len() >= self.max_pending {
                return Err(UpstreamError::Busy {
                    upstream: self.upstream.to_string(),
                    limit: self.max_pending,
                });
            }
            if let Some((ours, _)) = &token {
                self.tokens.lock().insert(ours.clone(), id);
            }
            calls.insert(
                id,
                Slot {
                    events: etx,
                    done: Some(dtx),
                    token,
                },
            );
        }
        Ok(Registered {
            id,
            events: erx,
            done: drx,
        })
    }

    /// Forgets a call (cancelled, timed out or dropped). True if it was in flight.
    pub(crate) fn forget(&self, id: u64) -> bool {
        let slot = self.calls.lock().remove(&id);
        match slot {
            Some(s) => {
                if let Some((t, _)) = s.token {
                    self.tokens.lock().remove(&t);
                }
                true
            }
            None => false,
        }
    }

    pub(crate) fn is_pending(&self, id: u64) -> bool {
        self.calls.lock().contains_key(&id)
    }

    /// Responses dropped because their call had already ended.
    pub(crate) fn late_responses(&self) -> u64 {
        self.late.load(Ordering::Relaxed)
    }

    pub(crate) fn in_flight(&self) -> usize {
        let listen = self.listen.load(Ordering::Relaxed);
        let calls = self.calls.lock();
        calls.len() - usize::from(calls.contains_key(&listen))
    }

    /// The only call in flight, if exactly one is: where a stdio upstream's
    /// unaddressed server→client request belongs.
    pub(crate) fn sole_call(&self) -> Option<u64> {
        let listen = self.listen.load(Ordering::Relaxed);
        let calls = self.calls.lock();
        let mut clients = calls.keys().filter(|id| **id != listen);
        match (clients.next(), clients.next()) {
            (Some(id), None) => Some(*id),
            _ => None,
        }
    }

    /// Completes a call with the upstream's response.
    pub(crate) fn complete(&self, id: &Value, outcome: CallOutcome) {
        let Some(id) = id.as_u64() else {
            // A null id answers a request the upstream could not parse or place (a
            // session-era server refusing the era probe does this).
            tracing::debug!(upstream = %self.upstream, %id, "response with an id Manifold never sent; dropped");
            return;
        };
        let slot = self.calls.lock().remove(&id);
        match slot {
            Some(mut s) => {
                if let Some((t, _)) = s.token.take() {
                    self.tokens.lock().remove(&t);
                }
                if let Some(done) = s.done.take() {
                    let _ = done.send(outcome);
                }
            }
            None => {
                self.late.fetch_add(1, Ordering::Relaxed);
                tracing::debug!(upstream = %self.upstream, id, "late response for a finished call; dropped")
            }
        }
    }

    /// Fails one call (transport error on its own exchange).
    pub(crate) fn fail(&self, id: u64, err: UpstreamError) {
        self.complete(&Value::from(id), CallOutcome::Failed(err));
    }

    /// Fails every call: the connection is gone.
    pub(crate) fn fail_all(&self, err: &UpstreamError) {
        let drained: Vec<Slot> = self.calls.lock().drain().map(|(_, s)| s).collect();
        self.tokens.lock().clear();
        for mut s in drained {
            if let Some(done) = s.done.take() {
                let _ = done.send(CallOutcome::Failed(err.clone()));
            }
        }
    }

    // The `Err` hands the undelivered event back to the caller, who answers it; it is
    // not an error type, so its size does not matter.
    #[allow(clippy::result_large_err)]
    fn deliver(&self, id: u64, event: CallEvent) -> Result<(), CallEvent> {
        let tx = self.calls.lock().get(&id).map(|s| s.events.clone());
        match tx {
            Some(tx) => tx.try_send(event).map_err(|e| match e {
                mpsc::error::TrySendError::Full(ev) | mpsc::error::TrySendError::Closed(ev) => ev,
            }),
            None => Err(event),
        }
    }

    /// Asks the supervisor to refetch the lists.
    pub(crate) fn request_refresh(&self) {
        let _ = self.refresh.try_send(());
    }

    /// Hands a notification to the gateway, whatever its method (a stateless
    /// upstream's resource update from the listen stream).
    pub(crate) fn to_gateway(&self, msg: Map<String, Value>) {
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let _ = self.gateway.try_send(UpstreamEvent::Notification {
            upstream: self.upstream.clone(),
            method,
            msg,
        });
    }

    /// Hands a call's notification to the gateway as if it had arrived outside any
    /// call (for calls Manifold makes itself, whose notifications no client awaits).
    pub(crate) fn unrouted(&self, msg: Map<String, Value>) {
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if method == manifold_protocol::methods::NOTIF_MESSAGE {
            let _ = self.gateway.try_send(UpstreamEvent::Notification {
                upstream: self.upstream.clone(),
                method,
                msg,
            });
        }
    }

    /// Routes a notification from the upstream by where it arrived.
    pub(crate) fn notification(&self, method: &str, mut msg: Map<String, Value>, source: Source) {
        use manifold_protocol::methods as m;
        strip_subscription_id(&mut msg);
        match method {
            m::NOTIF_PROGRESS => {
                let params = msg.get_mut("params").and_then(Value::as_object_mut);
                let Some(params) = params else { return };
                let ours = params
                    .get("progressToken")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                let target = ours
                    .as_deref()
                    .and_then(|t| self.tokens.lock().get(t).copied());
                let Some(id) = target else {
                    tracing::debug!(upstream = %self.upstream, "progress for an unknown token; dropped");
                    return;
                };
                let original = self
                    .calls
                    .lock()
                    .get(&id)
                    .and_then(|s| s.token.as_ref().map(|(_, o)| o.clone()));
                if let Some(orig) = original {
                    params.insert("progressToken".into(), orig);
                }
                if self.deliver(id, CallEvent::Notification(msg)).is_err() {
                    if let Some(suppressed) = self.noise.allow() {
                        tracing::warn!(upstream = %self.upstream, call = id, suppressed,
                            "progress dropped: the client is not keeping up");
                    }
                }
            }
            m::NOTIF_TOOLS_LIST_CHANGED
            | m::NOTIF_PROMPTS_LIST_CHANGED
            | m::NOTIF_RESOURCES_LIST_CHANGED => {
                let _ = self.refresh.try_send(());
                let _ = self.gateway.try_send(UpstreamEvent::ListChanged {
                    upstream: self.upstream.clone(),
                    method: method.to_string(),
                });
            }
            m::NOTIF_CANCELLED => {
                // The upstream withdrew a request it sent us; the client-facing side
                // times out its pending entry. Nothing else refers to it.
                tracing::debug!(upstream = %self.upstream, "upstream cancelled one of its requests");
            }
            _ => {
                // A log message on stdio with one call in flight is that call's;
                // on the HTTP GET stream it relates to no request by definition.
                let ctx = source.call().or_else(|| {
                    (source == Source::Stdio && method == m::NOTIF_MESSAGE)
                        .then(|| self.sole_call())
                        .flatten()
                });
                let undelivered = match ctx {
                    Some(id) => self.deliver(id, CallEvent::Notification(msg)).err(),
                    None => Some(CallEvent::Notification(msg)),
                };
                if let Some(CallEvent::Notification(msg)) = undelivered {
                    let _ = self.gateway.try_send(UpstreamEvent::Notification {
                        upstream: self.upstream.clone(),
                        method: method.to_string(),
                        msg,
                    });
                }
            }
        }
    }

    /// Routes a server→client request; returns it when no call can take it.
    #[allow(clippy::result_large_err)]
    pub(crate) fn request(
        &self,
        method: &str,
        params: Option<Value>,
        responder: Responder,
        source: Source,
    ) -> Result<(), (Unplaced, Responder)> {
        if method == manifold_protocol::methods::PING {
            return Err((Unplaced::Ping, responder));
        }
        // Requests need an answer from some client: with one call in flight, it is
        // the only candidate, wherever the request arrived.
        let ctx = source.call().or_else(|| self.sole_call());
        let Some(id) = ctx else {
            return Err((
                Unplaced::NoClient {
                    method: method.into(),
                },
                responder,
            ));
        };
        let ev = CallEvent::Request {
            method: method.to_string(),
            params,
            responder,
        };
        match self.deliver(id, ev) {
            Ok(()) => Ok(()),
            Err(CallEvent::Request {
                responder, method, ..
            }) => Err((Unplaced::NoClient { method }, responder)),
            Err(_) => unreachable_request(),
        }
    }
}

#[cold]
fn unreachable_request() -> Result<(), (Unplaced, Responder)> {
    // `deliver` hands back the event it was given, which is a Request here.
    Ok(())
}

/// Drops the upstream's `subscriptionId` from a notification's `_meta`: it names
/// Manifold's own listen request, which no client knows.
fn strip_subscription_id(msg: &mut Map<String, Value>) {
    let key = manifold_protocol::methods::meta::SUBSCRIPTION_ID;
    let Some(params) = msg.get_mut("params").and_then(Value::as_object_mut) else {
        return;
    };
    if let Some(Value::Object(meta)) = params.get_mut("_meta") {
        if meta.shift_remove(key).is_some() && meta.is_empty() {
            params.shift_remove("_meta");
        }
    }
}
