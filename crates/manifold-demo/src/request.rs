//! Handling one request end to end ([`Session::handle_request`]): logged,
//! registered for cancellation, dispatched by era (the 2026-07-28 mode of
//! `--modern`, or the session-era methods), answered once.
//!
//! Invariants: every request gets exactly one response, except a request the
//! client cancelled with `notifications/cancelled`, which gets none (per
//! spec); `initialize` is never registered (the spec forbids cancelling it);
//! requests are handled concurrently and nothing here holds a lock across an
//! `.await`.
//!
//! Not here: what each method does (`methods`, `modern`), cancelling
//! (`Session::handle_notification`, in `session`).

use std::sync::Arc;

use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use crate::identity::SERVER_NAME;
use crate::jsonrpc::{id_key, respond, RpcError};
use crate::modern;
use crate::session::{RemoveOnDrop, Session};
use crate::transport::CallContext;

impl Session {
    /// Handle a request; `None` means "send nothing" (the client cancelled it).
    pub async fn handle_request(
        self: &Arc<Self>,
        id: Value,
        method: String,
        params: Map<String, Value>,
        ctx: CallContext,
    ) -> Option<Value> {
        let detail = match params.get("name").and_then(Value::as_str) {
            Some(name) if method == "tools/call" => format!(" {name}"),
            _ => String::new(),
        };
        eprintln!("{SERVER_NAME}: {method}{detail} (id {id})");
        // The spec forbids cancelling initialize, so it is never registered.
        if method == "initialize" && !self.server.config.modern {
            return Some(respond(id, self.initialize(&params)));
        }
        let token = CancellationToken::new();
        let key = id_key(&id);
        self.in_flight.lock().insert(key.clone(), token.clone());
        let _registered = RemoveOnDrop {
            map: &self.in_flight,
            key,
        };
        tokio::select! {
            biased;
            _ = token.cancelled() => {
                eprintln!("{SERVER_NAME}: request {id} cancelled; no response is sent");
                None
            }
            outcome = self.dispatch_era(&id, &method, &params, &ctx) => Some(respond(id, outcome)),
        }
    }

    async fn dispatch_era(
        self: &Arc<Self>,
        id: &Value,
        method: &str,
        params: &Map<String, Value>,
        ctx: &CallContext,
    ) -> Result<Value, RpcError> {
        if self.server.config.modern {
            modern::dispatch(self, id, method, params, ctx).await
        } else {
            self.dispatch(method, params, ctx).await
        }
    }
}
