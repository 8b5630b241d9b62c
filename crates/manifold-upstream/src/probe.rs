//! The era check's messages, and what their answers mean: Manifold's own check
//! that a connection still speaks the era it was set up in — `ping` in the
//! session era, `server/discover` in 2026-07-28 (which has no ping), the
//! request the handshake's probe sends too (`handshake`).
//!
//! Invariants: an answer is read by parsing it, never by searching its text;
//! only a discover result that no longer lists the connection's revision, or
//! "method not found", says the upstream was re-deployed (a transient failure
//! is not).
//!
//! Not here: sending the check and reconnecting (the HTTP transport's
//! `session`), the handshake itself (`handshake`).

use manifold_protocol::methods as m;
use manifold_protocol::ErrorCode;

use crate::message::CallOutcome;
use crate::wire::Wire;

/// Manifold's own check that its session still holds: `ping` in the session era,
/// `server/discover` in 2026-07-28 (which has no ping).
pub(crate) fn is_check(method: &str) -> bool {
    method == m::PING || method == m::SERVER_DISCOVER
}

/// The probe request for the era the connection speaks: method, headers, message.
pub(crate) fn check_request(
    wire: &Wire,
) -> (
    &'static str,
    Vec<(String, String)>,
    serde_json::Map<String, serde_json::Value>,
) {
    let mut msg = serde_json::Map::new();
    msg.insert("jsonrpc".into(), "2.0".into());
    msg.insert("id".into(), serde_json::Value::Null);
    let version = wire.protocol_version.get().filter(|_| wire.is_stateless());
    let method = if version.is_some() {
        m::SERVER_DISCOVER
    } else {
        m::PING
    };
    msg.insert("method".into(), method.into());
    if let Some(v) = version {
        let meta = crate::wire::request_meta(v, None);
        msg.insert("params".into(), serde_json::json!({"_meta": meta}));
    }
    let headers = vec![(m::HEADER_METHOD.to_string(), method.to_string())];
    (method, headers, msg)
}

/// Whether a `server/discover` answer leaves the connection as it is: a result
/// that still lists the revision the connection speaks, or an error other than
/// "method not found" (a transient failure is not a re-deployment).
pub(crate) fn still_stateless(wire: &Wire, outcome: Option<CallOutcome>) -> bool {
    let raw = match outcome {
        Some(CallOutcome::Result(raw)) => raw,
        Some(CallOutcome::Error(e)) => {
            return ErrorCode::of_error(e.get()) != Some(ErrorCode::METHOD_NOT_FOUND);
        }
        _ => return true,
    };
    let Some(version) = wire.protocol_version.get() else {
        return false;
    };
    serde_json::from_str::<serde_json::Value>(raw.get())
        .ok()
        .and_then(|v| v.get("supportedVersions").cloned())
        .and_then(|v| v.as_array().cloned())
        .is_some_and(|a| a.iter().any(|x| x.as_str() == Some(version.as_str())))
}
