//! Per-connection state ([`Session`]: one stdio process, or one HTTP
//! `Mcp-Session-Id`): the requests in flight (to cancel), the server→client
//! requests awaiting the client's answer, and the client's capabilities; and
//! what a session does besides handling requests: taking notifications and
//! responses, asking the client, ending.
//!
//! Invariants: every in-flight or pending entry is removed when its work ends
//! or is dropped ([`RemoveOnDrop`]), so cancelled work never leaks entries; a
//! response to a request nobody awaits is ignored, not answered.
//!
//! Not here: handling a request (`request`), what a method does (`methods`,
//! `modern`), server-wide state (`server`).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use crate::identity::SERVER_NAME;
use crate::jsonrpc::id_key;
use crate::server::DemoServer;
use crate::transport::CallContext;

/// Per-connection state (one stdio process, or one HTTP `Mcp-Session-Id`).
pub struct Session {
    pub(crate) server: Arc<DemoServer>,
    /// Cancellation handles of requests being handled, by id key.
    pub(crate) in_flight: Mutex<HashMap<String, CancellationToken>>,
    /// Our server→client requests awaiting the client's response, by id key.
    pub(crate) pending: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    pub(crate) next_request: AtomicU64,
    pub(crate) client_capabilities: Mutex<Option<Value>>,
}

/// Removes a map entry when the owning future finishes or is dropped, so
/// cancelled or aborted work never leaks entries.
pub(crate) struct RemoveOnDrop<'a, T> {
    pub(crate) map: &'a Mutex<HashMap<String, T>>,
    pub(crate) key: String,
}

impl<T> Drop for RemoveOnDrop<'_, T> {
    fn drop(&mut self) {
        self.map.lock().remove(&self.key);
    }
}

impl DemoServer {
    pub fn new_session(self: &Arc<Self>) -> Arc<Session> {
        Arc::new(Session {
            server: Arc::clone(self),
            in_flight: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(0),
            client_capabilities: Mutex::new(None),
        })
    }
}

impl Session {
    pub fn server(&self) -> &Arc<DemoServer> {
        &self.server
    }

    /// Handle a client notification (never answered).
    pub fn handle_notification(&self, method: &str, params: &Map<String, Value>) {
        if method == "notifications/cancelled" && self.server.config.misbehave.honours_cancel() {
            if let Some(id) = params.get("requestId") {
                if let Some(token) = self.in_flight.lock().get(&id_key(id)) {
                    token.cancel();
                }
            }
        }
        // notifications/initialized and anything else: accepted silently.
    }

    /// Deliver a client's response to the matching server→client request.
    /// Returns false when no such request is pending.
    pub fn handle_response(&self, id: &Value, message: Value) -> bool {
        let waiter = self.pending.lock().remove(&id_key(id));
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(message);
                true
            }
            None => {
                eprintln!("{SERVER_NAME}: ignoring response to unknown request {id}");
                false
            }
        }
    }

    /// Session end: cancel in-flight work and fail pending client requests.
    pub fn cancel_all(&self) {
        for (_, token) in self.in_flight.lock().drain() {
            token.cancel();
        }
        self.pending.lock().clear();
    }

    /// Send a server→client request over `ctx.outbound` and await the answer.
    /// `Ok(result)` or `Err(error message)`, ready for a tool-level result.
    pub(crate) async fn request_client(
        &self,
        ctx: &CallContext,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        let Some(outbound) = &ctx.outbound else {
            return Err("the transport cannot carry server-to-client requests here".into());
        };
        let n = self.next_request.fetch_add(1, Ordering::Relaxed) + 1;
        let id = Value::String(format!("demo-srv-{n}"));
        let (tx, rx) = oneshot::channel();
        let key = id_key(&id);
        self.pending.lock().insert(key.clone(), tx);
        let _registered = RemoveOnDrop {
            map: &self.pending,
            key,
        };
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if outbound.send(request).is_err() {
            return Err("the client connection is closed".into());
        }
        let response = rx
            .await
            .map_err(|_| "the session ended before the client answered".to_string())?;
        match response.get("error") {
            Some(error) => Err(error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the client answered with an error")
                .to_owned()),
            None => Ok(response.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    pub(crate) fn client_has_capability(&self, name: &str) -> bool {
        self.client_capabilities
            .lock()
            .as_ref()
            .and_then(|caps| caps.get(name))
            .is_some()
    }
}
