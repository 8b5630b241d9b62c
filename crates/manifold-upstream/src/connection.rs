//! [`Connection`]: one live connection to an upstream (a child process or an HTTP
//! session) — the [`Wire`] its calls share and the [`Transport`] that moves its
//! bytes. It turns a request into a message (id and progress token minted by the
//! router; for a 2026-07-28 upstream the per-request `_meta`) and sends it.
//!
//! Invariants: nothing is sent on a closed connection; a request whose send fails
//! leaves nothing registered.
//!
//! A [`Slot`] holds a pool member's live connection, if any: what calls use.
//!
//! Not here: waiting for the answer (`attempt`), the handshake (`handshake`),
//! restarting (`upstream`).

use manifold_config::{LimitsConfig, Transport as Configured, UpstreamConfig};
use manifold_protocol::methods as m;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::message::{CallEvent, CallOutcome};
use crate::router::Router;
use crate::transport::{self, Driver, Ended, Outgoing, Transport};
use crate::wire::{request_meta, Wire};
use crate::{error::UpstreamError, facts::ClientFacts, facts::ExtraHeaders};

/// A live connection to an upstream.
pub(crate) struct Connection {
    pub(crate) wire: Arc<Wire>,
    transport: Box<dyn Transport>,
    /// `limits.max_list_items`: the longest list a fetch accepts.
    pub(crate) max_list_items: usize,
    /// `limits.max_list_bytes`: the most JSON text one list's pages may
    /// hold together.
    pub(crate) max_list_bytes: usize,
    /// `limits.max_item_bytes`: the largest single item of a list.
    pub(crate) max_item_bytes: usize,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("upstream", self.wire.upstream())
            .finish()
    }
}

/// Where a member's live connection is published (`None` between
/// connections); a retry waiting for one waits on its pool (`pool`).
#[derive(Default)]
pub(crate) struct Slot {
    conn: parking_lot::RwLock<Option<Arc<Connection>>>,
}

impl Slot {
    pub(crate) fn get(&self) -> Option<Arc<Connection>> {
        self.conn.read().clone()
    }
    pub(crate) fn set(&self, conn: Option<Arc<Connection>>) {
        *self.conn.write() = conn;
    }
}

/// A request sent: its id and where its answer arrives.
pub(crate) struct Launched {
    pub id: u64,
    pub events: mpsc::Receiver<CallEvent>,
    pub done: oneshot::Receiver<CallOutcome>,
    /// HTTP: the exchange's work, polled by whoever waits for the answer.
    pub driver: Option<Driver>,
}

impl Connection {
    /// Opens the configured transport. `closed` is not a child of the gateway's
    /// shutdown: on shutdown the actor stops the connection in order (stdin closed
    /// while stdout is still read, then signals), and only then cancels it.
    pub(crate) async fn open(
        cfg: &UpstreamConfig,
        limits: &LimitsConfig,
        router: Router,
        closed: CancellationToken,
        tokens: Option<Arc<manifold_credentials::TokenSource>>,
    ) -> Result<Arc<Connection>, UpstreamError> {
        let wire = Wire::new(router, closed, cfg.timeout);
        let transport: Box<dyn Transport> = match &cfg.transport {
            Configured::Stdio { .. } => {
                Box::new(transport::stdio::connect(cfg, limits, wire.clone()).await?)
            }
            Configured::Http { .. } => {
                Box::new(transport::http::connect(cfg, limits, wire.clone(), tokens)?)
            }
        };
        Ok(Arc::new(Connection {
            wire,
            transport,
            max_list_items: limits.max_list_items,
            max_list_bytes: limits.max_list_bytes,
            max_item_bytes: limits.max_item_bytes,
        }))
    }

    /// Whether this connection speaks the stateless era (decided by the probe).
    pub(crate) fn is_stateless(&self) -> bool {
        self.wire.is_stateless()
    }

    /// Sends a notification or response upstream, best effort.
    pub(crate) async fn send_message(&self, bytes: Vec<u8>) {
        self.transport.send_message(bytes).await;
    }

    /// Forgets request `id` and tells the upstream it is cancelled, where the
    /// transport has a way to: in the background, bounded by
    /// [`SEND_TIMEOUT`](crate::limits::SEND_TIMEOUT), never on the caller's path (an
    /// upstream that hangs would hold up the very caller the cancellation frees).
    pub(crate) fn cancel(self: &Arc<Self>, id: u64, reason: &str) {
        if !self.wire.router.forget(id) || self.transport.cancels_by_closing() {
            return;
        }
        let msg = json!({
            "jsonrpc": "2.0",
            "method": m::NOTIF_CANCELLED,
            "params": {"requestId": id, "reason": reason},
        });
        let conn = self.clone();
        self.wire.spawn_owned(async move {
            // Each transport bounds its own sends by SEND_TIMEOUT.
            conn.send_message(msg.to_string().into_bytes()).await;
        });
    }

    /// `initialize` succeeded: `notifications/initialized`, then what the
    /// transport opens for the session.
    pub(crate) async fn initialized(&self) {
        let initialized = json!({"jsonrpc": "2.0", "method": m::INITIALIZED});
        self.send_message(initialized.to_string().into_bytes())
            .await;
        self.transport.initialized();
    }

    /// Sends one request upstream. `params` is forwarded as given, except the
    /// progress token and, for a 2026-07-28 upstream, the `_meta` that describes
    /// `caller`.
    pub(crate) async fn launch(
        &self,
        method: &str,
        params: Option<Map<String, Value>>,
        headers: ExtraHeaders,
        timeout: Duration,
        caller: Option<&ClientFacts>,
    ) -> Result<Launched, UpstreamError> {
        if self.wire.closed.is_cancelled() {
            return Err(UpstreamError::transient(
                self.wire.upstream(),
                "the connection is closed",
                false,
            ));
        }
        let mut params = params;
        if let Some(version) = self
            .wire
            .protocol_version
            .get()
            .filter(|_| self.is_stateless())
        {
            // The upstream keeps no state: every request says who asks and how.
            let p = params.get_or_insert_with(Map::new);
            let meta = p
                .entry("_meta")
                .or_insert_with(|| Value::Object(Map::new()));
            if !meta.is_object() {
                *meta = Value::Object(Map::new());
            }
            if let Value::Object(meta) = meta {
                for (k, v) in request_meta(version, caller) {
                    meta.insert(k, v);
                }
            }
        }
        let reg = self.wire.router.register_params(params.as_mut())?;
        let bytes = request_bytes(reg.id, method, params.as_ref());
        let out = Outgoing {
            id: reg.id,
            method: method.to_string(),
            bytes,
            headers,
            timeout,
        };
        match self.transport.request(out).await {
            Ok(driver) => Ok(Launched {
                id: reg.id,
                events: reg.events,
                done: reg.done,
                driver,
            }),
            Err(e) => {
                self.wire.router.forget(reg.id);
                Err(e)
            }
        }
    }

    /// How the connection ended (see [`Transport::ended`]).
    pub(crate) async fn ended(&self, after_failure: bool) -> Ended {
        self.transport.ended(after_failure).await
    }

    /// Stops the transport, then every task of the connection (bounded).
    pub(crate) async fn shutdown(&self) {
        self.transport.shutdown().await;
        self.wire.closed.cancel();
        self.wire.tasks.close();
        let _ = tokio::time::timeout(Duration::from_secs(5), self.wire.tasks.wait()).await;
    }
}

/// A request's bytes, `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`, the
/// members in that order, written directly: the same bytes as serializing the
/// envelope as a map, without building one for every call (its allocation and
/// a hashed insert per member).
fn request_bytes(id: u64, method: &str, params: Option<&Map<String, Value>>) -> Vec<u8> {
    let mut out = Vec::with_capacity(64 + method.len());
    out.extend_from_slice(br#"{"jsonrpc":"2.0","id":"#);
    // Writing into a Vec fails only for a value serde_json cannot represent,
    // which a number, a `str` and a `Map` are not.
    let _ = serde_json::to_writer(&mut out, &id);
    out.extend_from_slice(br#","method":"#);
    let _ = serde_json::to_writer(&mut out, method);
    if let Some(p) = params {
        out.extend_from_slice(br#","params":"#);
        let _ = serde_json::to_writer(&mut out, p);
    }
    out.push(b'}');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes written directly are those of the envelope as a map, members
    /// and escapes included (what the upstream received before).
    #[test]
    fn request_bytes_are_the_envelope_serialized() {
        let params: Map<String, Value> = serde_json::from_str(
            r#"{"name":"echo","arguments":{"text":"h\u00e9\"llo\n","n":[1,2.5,null]},"_meta":{"progressToken":"mf-7","x":{}}}"#,
        )
        .unwrap();
        for (id, method, params) in [
            (7, "tools/call", Some(&params)),
            (u64::MAX, "weird \"method\"\u{1}", None),
        ] {
            let mut msg = Map::new();
            msg.insert("jsonrpc".into(), Value::from("2.0"));
            msg.insert("id".into(), Value::from(id));
            msg.insert("method".into(), Value::from(method));
            if let Some(p) = params {
                msg.insert("params".into(), Value::Object(p.clone()));
            }
            assert_eq!(
                String::from_utf8(request_bytes(id, method, params)).unwrap(),
                serde_json::to_string(&msg).unwrap()
            );
        }
    }
}
