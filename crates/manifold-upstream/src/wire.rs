//! [`Wire`]: what one live connection's transport and its calls share — the
//! router of calls in flight, the token that ends the connection, its tasks, the
//! revision it speaks — and [`Wire::dispatch`], which reads one message from the
//! upstream and hands it to the router.
//!
//! Invariants: every task spawned here ends with `closed`; a server→client
//! request no call can take is answered here (ping) or refused, never dropped.
//!
//! Not here: moving bytes (the transports), the request and reply lifecycle
//! (`connection`, `attempt`).

use manifold_protocol::methods::meta;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::sync::{Arc, OnceLock};
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::message::{BoxFuture, CallOutcome, NotRelayed, Outbound, Responder};
use crate::router::{Router, Source, Unplaced};
use crate::{error::UpstreamError, facts::ClientFacts};

/// Starts a new upstream session after the upstream forgot ours (HTTP 404): set
/// by the upstream actor, which owns the handshake.
pub(crate) type Reinit =
    Box<dyn Fn() -> BoxFuture<'static, Result<(), UpstreamError>> + Send + Sync>;

/// The `_meta` of a request Manifold makes to a 2026-07-28 upstream: the revision, the
/// capabilities of the client it is made for, Manifold's client info, the
/// client's log level.
pub(crate) fn request_meta(version: &str, caller: Option<&ClientFacts>) -> Map<String, Value> {
    let mut meta = Map::new();
    meta.insert(meta::PROTOCOL_VERSION.into(), Value::from(version));
    let caps = caller.map(|c| c.capabilities.clone()).unwrap_or_default();
    meta.insert(meta::CLIENT_CAPABILITIES.into(), Value::Object(caps));
    meta.insert(
        meta::CLIENT_INFO.into(),
        json!({"name": crate::limits::CLIENT_NAME, "version": crate::limits::CLIENT_VERSION}),
    );
    if let Some(level) = caller.and_then(|c| c.log_level.as_deref()) {
        meta.insert(meta::LOG_LEVEL.into(), Value::from(level));
    }
    meta
}

pub(crate) struct Wire {
    pub(crate) router: Router,
    /// Fires when the connection is gone (child exited, transport failed) or the
    /// gateway shuts down; every task of the connection ends with it.
    pub(crate) closed: CancellationToken,
    pub(crate) tasks: TaskTracker,
    /// The upstream's per-call timeout.
    pub(crate) timeout: Duration,
    /// The revision spoken, once the probe or `initialize` decided it.
    pub(crate) protocol_version: OnceLock<String>,
    reinit: OnceLock<Reinit>,
}

impl Wire {
    pub(crate) fn new(router: Router, closed: CancellationToken, timeout: Duration) -> Arc<Wire> {
        Arc::new(Wire {
            router,
            closed,
            tasks: TaskTracker::new(),
            timeout,
            protocol_version: OnceLock::new(),
            reinit: OnceLock::new(),
        })
    }

    /// The upstream's configured name.
    pub(crate) fn upstream(&self) -> &Arc<str> {
        &self.router.upstream
    }

    /// Whether this connection speaks the stateless era (decided by the probe).
    pub(crate) fn is_stateless(&self) -> bool {
        self.protocol_version
            .get()
            .is_some_and(|v| manifold_protocol::version::is_supported_stateless(v))
    }

    /// Runs `fut` as a task of this connection: it ends when the connection closes.
    pub(crate) fn spawn_owned<F>(&self, fut: F)
    where
        F: std::future::Future<Output = ()> + Send + 'static,
    {
        let closed = self.closed.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                _ = closed.cancelled() => {}
                _ = fut => {}
            }
        });
    }

    pub(crate) fn set_reinit(&self, reinit: Reinit) {
        let _ = self.reinit.set(reinit);
    }

    /// Starts a new upstream session (see [`Reinit`]).
    pub(crate) async fn reinitialize(&self) -> Result<(), UpstreamError> {
        match self.reinit.get() {
            Some(f) => f().await,
            None => Err(UpstreamError::unavailable(
                self.upstream(),
                "the upstream session expired and cannot be renewed",
            )),
        }
    }

    /// Routes one message text from the upstream, by where it arrived; answers to
    /// its requests go back through `out`.
    pub(crate) fn dispatch(&self, text: &str, source: Source, out: &Arc<dyn Outbound>) {
        let router = &self.router;
        let probe: Probe = match serde_json::from_str(text) {
            Ok(p) => p,
            Err(e) => {
                if let Some(suppressed) = router.noise.allow() {
                    tracing::warn!(upstream = %router.upstream, error = %e, suppressed,
                        "upstream sent a message that is not JSON-RPC; ignored");
                }
                return;
            }
        };
        if probe.method.is_none() {
            let Some(id) = probe.id else {
                if let Some(suppressed) = router.noise.allow() {
                    tracing::warn!(upstream = %router.upstream, suppressed,
                        "upstream sent a message with neither method nor id; ignored");
                }
                return;
            };
            let outcome = match (probe.result, probe.error) {
                (Some(r), _) => CallOutcome::Result(r),
                (None, Some(e)) => CallOutcome::Error(e),
                (None, None) => CallOutcome::Failed(UpstreamError::protocol(
                    &router.upstream,
                    "a response with neither result nor error",
                )),
            };
            router.complete(&id, outcome);
            return;
        }
        match manifold_protocol::Incoming::parse(text.as_bytes()) {
            Ok(manifold_protocol::Incoming::Notification { method, msg }) => {
                router.notification(&method, msg, source)
            }
            Ok(manifold_protocol::Incoming::Request {
                id,
                method,
                mut msg,
            }) => {
                let params = msg.remove("params");
                let responder = Responder::upstream(id.as_value().clone(), out.clone());
                if let Err((unplaced, responder)) =
                    router.request(&method, params, responder, source)
                {
                    let upstream = router.upstream.clone();
                    self.spawn_owned(answer_unplaced(upstream, unplaced, responder));
                }
            }
            Ok(manifold_protocol::Incoming::Response { .. }) => {}
            Err(e) => {
                if let Some(suppressed) = router.noise.allow() {
                    tracing::warn!(upstream = %router.upstream, error = %e, suppressed,
                        "upstream sent an invalid message; ignored")
                }
            }
        }
    }
}

/// A server→client request no call could take: a ping is answered, the rest
/// refused.
async fn answer_unplaced(upstream: Arc<str>, unplaced: Unplaced, responder: Responder) {
    match unplaced {
        Unplaced::Ping => {
            let raw =
                RawValue::from_string("{}".into()).unwrap_or_else(|_| RawValue::NULL.to_owned());
            responder.respond(Ok(raw)).await
        }
        Unplaced::NoClient { method } => {
            tracing::warn!(upstream = %upstream, %method,
                "upstream sent a request outside any call; refused");
            responder.refuse(NotRelayed::OutsideCall { method }).await
        }
    }
}

/// The raw pieces of a message from an upstream: responses keep their result and
/// error bytes untouched.
#[derive(serde::Deserialize)]
struct Probe {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<Value>,
    #[serde(default)]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<Box<RawValue>>,
}
