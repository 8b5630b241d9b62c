//! `logging/setLevel` and `notifications/message` across many upstreams.
//!
//! - A client's `logging/setLevel` is remembered on its session and applied to
//!   every upstream that declared `logging`. Upstreams are shared, so each is set
//!   to the most verbose level any live session asked for; each session then gets
//!   only messages at or above its own level. When sessions end, the upstreams
//!   get the most verbose level of those left, if that is less verbose.
//! - Every message a client receives names its upstream in `logger`:
//!   `<upstream>` when the upstream gave none, else `<upstream>/<logger>`.
//! - Messages tied to a call go to the calling client only (on its response
//!   stream); others go to every session with a GET stream open whose level
//!   admits them. A session that never set a level gets every level.
//!
//! Not here: the upstream transports' own stderr (that is Manifold's log).

use manifold_protocol::methods as m;
use manifold_protocol::RpcError;
use serde_json::{Map, Value};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use crate::session::DownSession;
use crate::Gateway;

/// RFC 5424 severities, least severe first, as MCP spells them.
pub const LEVELS: [&str; 8] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
];

/// A session that never sent `logging/setLevel`: every level.
pub(crate) const LEVEL_UNSET: u8 = u8::MAX;
/// A 2026-07-28 request without `_meta` logLevel: no log messages at all.
pub(crate) const LEVEL_OFF: u8 = LEVELS.len() as u8;

pub(crate) fn level_index(level: &str) -> Option<u8> {
    LEVELS.iter().position(|l| *l == level).map(|i| i as u8)
}

/// Validates a `logging/setLevel` request; the level's index.
pub(crate) fn requested_level(params: &Map<String, Value>) -> Result<u8, RpcError> {
    let level = params.get("level").and_then(Value::as_str).ok_or_else(|| {
        RpcError::invalid_params("logging/setLevel needs params.level (a string)")
    })?;
    level_index(level).ok_or_else(|| {
        RpcError::invalid_params(format!(
            "Invalid log level `{level}`: expected one of {}",
            LEVELS.join(", ")
        ))
    })
}

/// Applies the most verbose level any live session asked for to every upstream
/// that declared `logging`. Failures are logged: one upstream refusing must not
/// fail the client's request.
pub(crate) async fn apply_to_upstreams(gw: &Arc<Gateway>) {
    let Some(index) = gw.sessions.most_verbose_log_level() else {
        return;
    };
    gw.upstream_log_level.store(index, Ordering::Relaxed);
    let level = LEVELS[index as usize];
    let targets: Vec<_> = gw
        .upstreams
        .iter()
        .filter(|u| {
            // Modern upstreams have no logging/setLevel: each request carries
            // its client's level in `_meta`.
            u.status()
                .facts
                .is_some_and(|f| f.capabilities.contains_key("logging") && !f.is_modern())
        })
        .cloned()
        .collect();
    let calls = targets.into_iter().map(|u| async move {
        let mut params = Map::new();
        params.insert("level".into(), Value::from(level));
        let headers = crate::forward::standard_headers(m::LOGGING_SET_LEVEL, None);
        match u.call(m::LOGGING_SET_LEVEL, Some(params), headers).await {
            Ok(mut call) => {
                if let manifold_upstream::CallOutcome::Failed(e) = call.outcome().await {
                    tracing::warn!(upstream = %u.name(), error = %e, "logging/setLevel failed");
                }
            }
            Err(e) => {
                tracing::debug!(upstream = %u.name(), error = %e, "logging/setLevel not sent")
            }
        }
    });
    futures_util::future::join_all(calls).await;
}

/// Sessions ended: if the most verbose level still asked for is less verbose
/// than the one the upstreams were given, they get it, so an ended debugging
/// session does not leave every upstream sending debug messages. When no session
/// asked for a level any more, the upstreams keep the last one (MCP has no way
/// back to a server's default).
pub(crate) fn sessions_ended(gw: &Arc<Gateway>) {
    let Some(now) = gw.sessions.most_verbose_log_level() else {
        return;
    };
    let applied = gw.upstream_log_level.load(Ordering::Relaxed);
    if applied == LEVEL_UNSET || now <= applied {
        return;
    }
    let gw2 = gw.clone();
    gw.tasks.spawn(async move {
        tokio::select! {
            _ = gw2.shutdown.cancelled() => {}
            _ = apply_to_upstreams(&gw2) => {}
        }
    });
}

/// Prepares a notification for one client: names the upstream in a message's
/// `logger`; false when the client's level filters the message out. Other
/// notifications pass unchanged.
pub(crate) fn for_client(
    session: &DownSession,
    upstream: &str,
    msg: &mut Map<String, Value>,
) -> bool {
    if msg.get("method").and_then(Value::as_str) != Some(m::NOTIF_MESSAGE) {
        return true;
    }
    let Some(params) = msg.get_mut("params").and_then(Value::as_object_mut) else {
        return true;
    };
    let level = params
        .get("level")
        .and_then(Value::as_str)
        .and_then(level_index)
        .unwrap_or(0);
    let wanted = session.log_level();
    if wanted != LEVEL_UNSET && level < wanted {
        return false;
    }
    let logger = match params.get("logger").and_then(Value::as_str) {
        Some(l) if !l.is_empty() => format!("{upstream}/{l}"),
        _ => upstream.to_string(),
    };
    params.insert("logger".into(), Value::String(logger));
    true
}

/// A message no call claimed: to every session with a GET stream that wants it.
pub(crate) fn broadcast(gw: &Gateway, upstream: &str, msg: &Map<String, Value>) -> usize {
    let mut sent = 0;
    for session in gw.sessions.all() {
        let mut copy = msg.clone();
        if for_client(&session, upstream, &mut copy) {
            let bytes = serde_json::to_vec(&Value::Object(copy)).unwrap_or_default();
            if session.push(crate::body::sse_message(&bytes)) {
                sent += 1;
            }
        }
    }
    sent
}
