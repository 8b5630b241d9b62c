//! MCP logging across the gateway: the level the shared upstreams log at
//! follows the live sessions (the most verbose any asked for), and a message no
//! call claimed reaches every session with a GET stream whose level and view
//! admit it (the rules: `log_levels`).
//!
//! Invariants: one upstream refusing a level never fails a client's request;
//! a sweep that ends many sessions sends one round of levels, not one per
//! session; no lock is held across `.await`.
//!
//! Not here: the filters and the level table (`log_levels`), messages tied to
//! a call (the call chain's relay).

use bytes::Bytes;
use manifold_protocol::headers::standard_headers;
use manifold_protocol::methods as m;
use serde_json::{Map, Value};
use std::sync::Arc;

use super::log_levels::{for_client, LogFilter};
use super::views;
use super::Gateway;

impl Gateway {
    /// Applies the most verbose level any live session asked for to every upstream
    /// that declared `logging`. Failures are logged: one upstream refusing must
    /// not fail the client's request.
    pub(crate) async fn apply_log_level(&self) {
        let Some(level) = self.tables.sessions.most_verbose_log_level() else {
            return;
        };
        *self.tables.upstream_log_level.0.lock() = Some(level);
        let targets: Vec<_> = self
            .upstreams()
            .iter()
            .filter(|u| {
                u.status()
                    .facts
                    .is_some_and(|f| f.capabilities.contains_key("logging") && !f.is_stateless())
            })
            .cloned()
            .collect();
        let calls = targets.into_iter().map(|u| async move {
            let mut params = Map::new();
            params.insert("level".into(), Value::from(level.as_str()));
            let headers = standard_headers(m::LOGGING_SET_LEVEL, None);
            // Each member of a pool logs on its own: each is told.
            for call in u.call_each(m::LOGGING_SET_LEVEL, Some(params), headers).await {
                match call {
                    Ok(mut call) => {
                        if let manifold_upstream::CallOutcome::Failed(e) = call.outcome().await {
                            tracing::warn!(upstream = %u.name(), error = %e, "logging/setLevel failed");
                        }
                    }
                    Err(e) => {
                        tracing::debug!(upstream = %u.name(), error = %e, "logging/setLevel not sent")
                    }
                }
            }
        });
        futures_util::future::join_all(calls).await;
    }

    /// Applies the log level in the background, ending with the gateway.
    pub(crate) fn apply_log_level_later(self: &Arc<Self>) {
        let gw = self.clone();
        self.life.background.spawn(async move {
            tokio::select! {
                _ = gw.life.stop.cancelled() => {}
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
        let Some(now) = self.tables.sessions.most_verbose_log_level() else {
            return;
        };
        {
            // Checked and set at once: a sweep that ends many sessions spawns
            // one setLevel round, not one per session.
            let mut applied = self.tables.upstream_log_level.0.lock();
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
        // Under `[[policy]]` or on a virtual endpoint, only sessions whose
        // view holds something of the upstream hear it (decided once per view).
        let views = self.generation.load().views.clone();
        type Key = (std::sync::Arc<str>, Option<manifold_policy::ViewKey>);
        let mut memo: std::collections::HashMap<Key, bool> = std::collections::HashMap::new();
        let default = self.default_endpoint();
        for session in self.tables.sessions.all() {
            let key = views::key_of(views.policy(), session.viewer().as_deref());
            if key.is_some() || session.endpoint != default {
                let hears = *memo
                    .entry((session.endpoint.clone(), key.clone()))
                    .or_insert_with(|| {
                        views::holds_upstream(&views.get(&session.endpoint, key.as_ref()), upstream)
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
