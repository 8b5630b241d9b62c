//! MCP logging (`logging/setLevel`, `notifications/message`) across many upstreams.
//!
//! - Upstreams are shared, so each one that declared `logging` is set to the most
//!   verbose level any live session asked for; each session then gets only
//!   messages at or above its own level. When sessions end, the upstreams get the
//!   most verbose level of those left, if that is less verbose.
//! - Every message a client receives names its upstream in `logger`:
//!   `<upstream>` when the upstream gave none, else `<upstream>/<logger>`.
//! - Messages tied to a call go to the calling client only (the relay); others go
//!   to every session with a GET stream open whose level admits them. A session
//!   that never set a level gets every level.
//! - Modern (2026-07-28) upstreams have no `logging/setLevel`: each request
//!   carries its client's level in `_meta`.
//!
//! Not here: the upstream transports' own stderr (that is Manifold's log).

use bytes::Bytes;
use manifold_protocol::headers::standard_headers;
use manifold_protocol::logging::LogLevel;
use manifold_protocol::methods as m;
use parking_lot::Mutex;
use serde_json::{Map, Value};
use std::sync::Arc;

use super::Gateway;

/// Which messages a client gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogFilter {
    /// Every level (a session that never sent `logging/setLevel`).
    All,
    /// At or above this level.
    AtLeast(LogLevel),
    /// None (a 2026-07-28 request without `_meta` logLevel).
    Off,
}

impl LogFilter {
    pub(crate) fn admits(self, level: LogLevel) -> bool {
        match self {
            LogFilter::All => true,
            LogFilter::AtLeast(min) => level >= min,
            LogFilter::Off => false,
        }
    }

    /// The level a modern upstream is told about in `_meta`, if any.
    pub(crate) fn level(self) -> Option<LogLevel> {
        match self {
            LogFilter::AtLeast(l) => Some(l),
            _ => None,
        }
    }
}

/// The level last sent to the upstreams, if any.
#[derive(Default)]
pub(crate) struct UpstreamLogLevel(Mutex<Option<LogLevel>>);

/// Prepares a notification for one client: names the upstream in a message's
/// `logger`; false when the client's filter drops the message. Other
/// notifications pass unchanged.
pub(crate) fn for_client(filter: LogFilter, upstream: &str, msg: &mut Map<String, Value>) -> bool {
    if msg.get("method").and_then(Value::as_str) != Some(m::NOTIF_MESSAGE) {
        return true;
    }
    let Some(params) = msg.get_mut("params").and_then(Value::as_object_mut) else {
        return true;
    };
    let level = params
        .get("level")
        .and_then(Value::as_str)
        .and_then(LogLevel::parse)
        .unwrap_or(LogLevel::Debug);
    if !filter.admits(level) {
        return false;
    }
    let logger = match params.get("logger").and_then(Value::as_str) {
        Some(l) if !l.is_empty() => format!("{upstream}/{l}"),
        _ => upstream.to_string(),
    };
    params.insert("logger".into(), Value::String(logger));
    true
}

impl Gateway {
    /// Applies the most verbose level any live session asked for to every upstream
    /// that declared `logging`. Failures are logged: one upstream refusing must
    /// not fail the client's request.
    pub(crate) async fn apply_log_level(&self) {
        let Some(level) = self.sessions.most_verbose_log_level() else {
            return;
        };
        *self.upstream_log_level.0.lock() = Some(level);
        let targets: Vec<_> = self
            .upstreams()
            .iter()
            .filter(|u| {
                u.status()
                    .facts
                    .is_some_and(|f| f.capabilities.contains_key("logging") && !f.is_modern())
            })
            .cloned()
            .collect();
        let calls = targets.into_iter().map(|u| async move {
            let mut params = Map::new();
            params.insert("level".into(), Value::from(level.as_str()));
            let headers = standard_headers(m::LOGGING_SET_LEVEL, None);
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

    /// Applies the log level in the background, ending with the gateway.
    pub(crate) fn apply_log_level_later(self: &Arc<Self>) {
        let gw = self.clone();
        self.tasks.spawn(async move {
            tokio::select! {
                _ = gw.stop.cancelled() => {}
                _ = gw.apply_log_level() => {}
            }
        });
    }

    /// Sessions ended: if the most verbose level still asked for is less verbose
    /// than the one the upstreams were given, they get it, so an ended debugging
    /// session does not leave every upstream sending debug messages. When no
    /// session asks for a level any more, the upstreams keep the last one (MCP
    /// has no way back to a server's default).
    pub(crate) fn log_levels_after_sessions_ended(self: &Arc<Self>) {
        let Some(now) = self.sessions.most_verbose_log_level() else {
            return;
        };
        {
            // Checked and set at once: a sweep that ends many sessions spawns
            // one setLevel round, not one per session.
            let mut applied = self.upstream_log_level.0.lock();
            if applied.is_none_or(|a| now <= a) {
                return;
            }
            *applied = Some(now);
        }
        self.apply_log_level_later();
    }

    /// A message no call claimed: to every session with a GET stream that wants it.
    pub(crate) fn broadcast_log(&self, upstream: &str, msg: &Map<String, Value>) -> usize {
        let mut sent = 0;
        // Under `[[policy]]`, only sessions whose view holds something of the
        // upstream hear it (decided once per view).
        let views = self.views.load_full();
        let mut memo: std::collections::HashMap<Option<manifold_policy::ViewKey>, bool> =
            std::collections::HashMap::new();
        for session in self.sessions.all() {
            let key = super::views::key_of(views.policy(), session.viewer().as_deref());
            if key.is_some() {
                let hears = *memo.entry(key.clone()).or_insert_with(|| {
                    super::views::holds_upstream(&views.get(key.as_ref()), upstream)
                });
                if !hears {
                    continue;
                }
            }
            let filter = session
                .log_level()
                .map_or(LogFilter::All, LogFilter::AtLeast);
            let mut copy = msg.clone();
            if for_client(filter, upstream, &mut copy) {
                let bytes = serde_json::to_vec(&Value::Object(copy)).unwrap_or_default();
                if session.push(Bytes::from(bytes)) {
                    sent += 1;
                }
            }
        }
        sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn message(level: &str, logger: Option<&str>) -> Map<String, Value> {
        let mut params = json!({"level": level, "data": "x"});
        if let Some(l) = logger {
            params["logger"] = json!(l);
        }
        json!({"jsonrpc": "2.0", "method": m::NOTIF_MESSAGE, "params": params})
            .as_object()
            .cloned()
            .unwrap()
    }

    #[test]
    fn filters_admit_by_severity_and_name_the_upstream() {
        let rows = [
            (LogFilter::All, "debug", true),
            (LogFilter::AtLeast(LogLevel::Warning), "info", false),
            (LogFilter::AtLeast(LogLevel::Warning), "warning", true),
            (LogFilter::AtLeast(LogLevel::Warning), "emergency", true),
            (LogFilter::Off, "emergency", false),
        ];
        for (filter, level, admitted) in rows {
            let mut msg = message(level, None);
            assert_eq!(
                for_client(filter, "up", &mut msg),
                admitted,
                "{filter:?} {level}"
            );
        }
        let mut msg = message("error", Some("db"));
        assert!(for_client(LogFilter::All, "up", &mut msg));
        assert_eq!(msg["params"]["logger"], "up/db");
        let mut msg = message("error", None);
        assert!(for_client(LogFilter::All, "up", &mut msg));
        assert_eq!(msg["params"]["logger"], "up");
        let mut other = json!({"jsonrpc": "2.0", "method": "notifications/progress"})
            .as_object()
            .cloned()
            .unwrap();
        assert!(
            for_client(LogFilter::Off, "up", &mut other),
            "not a log message"
        );
    }
}
