//! MCP logging's filters and levels: which messages a client gets
//! ([`LogFilter`], [`for_client`]) and the level last sent to the upstreams
//! ([`UpstreamLogLevel`]). How they are applied across many upstreams:
//! - Upstreams are shared, so each one that declared `logging` is set to the most
//!   verbose level any live session asked for; each session then gets only
//!   messages at or above its own level. When sessions end, the upstreams get the
//!   most verbose level of those left, if that is less verbose.
//! - Every message a client receives names its upstream in `logger`:
//!   `<upstream>` when the upstream gave none, else `<upstream>/<logger>`.
//! - Messages tied to a call go to the calling client only (the relay); others go
//!   to every session with a GET stream open whose level admits them. A session
//!   that never set a level gets every level.
//! - 2026-07-28 upstreams have no `logging/setLevel`: each request
//!   carries its client's level in `_meta`.
//!
//! Not here: sending levels and delivering messages (`logging`), the upstream
//! transports' own stderr (that is Manifold's log).

use manifold_protocol::logging::LogLevel;
use manifold_protocol::methods as m;
use parking_lot::Mutex;
use serde_json::{Map, Value};

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

    /// The level a 2026-07-28 upstream is told about in `_meta`, if any.
    pub(crate) fn level(self) -> Option<LogLevel> {
        match self {
            LogFilter::AtLeast(l) => Some(l),
            _ => None,
        }
    }
}

/// The level last sent to the upstreams, if any.
#[derive(Default)]
pub(crate) struct UpstreamLogLevel(pub(crate) Mutex<Option<LogLevel>>);

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
