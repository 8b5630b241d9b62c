//! What a client sends that is not a request: notifications (only
//! `notifications/cancelled` means something to Manifold) and its answers to
//! server→client requests, relayed to the upstream that asked.
//!
//! Invariants: a cancellation reaches only the call it names, in the client's own
//! session; an answer reaches only the upstream request it was minted for.
//!
//! Not here: relaying the request to the client (`relay`).

use manifold_protocol::methods as m;
use manifold_protocol::{jsonrpc, RequestId};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::exchange::Caller;

/// A client notification.
pub(crate) fn notification(caller: &Caller, method: &str, msg: &Map<String, Value>) {
    if method != m::NOTIF_CANCELLED {
        return;
    }
    let target = jsonrpc::params(msg)
        .and_then(|p| p.get("requestId"))
        .and_then(RequestId::from_value);
    if let (Some(target), Some(session)) = (target, caller.session()) {
        if !session.cancel_call(&target) {
            tracing::debug!(request = %target, "cancellation for a request not in flight");
        }
    }
}

/// A client's answer to a server→client request, relayed to the upstream that asked.
pub(crate) async fn response(caller: &Caller, id: &RequestId, msg: Map<String, Value>) {
    let Some(responder) = caller.session().and_then(|s| s.take_pending(id)) else {
        tracing::debug!(request = %id, "response to no pending request; ignored");
        return;
    };
    let (ok, member) = match (msg.get("result"), msg.get("error")) {
        (Some(r), _) => (true, r),
        (None, Some(e)) => (false, e),
        (None, None) => return,
    };
    let raw =
        RawValue::from_string(member.to_string()).unwrap_or_else(|_| RawValue::NULL.to_owned());
    responder.respond(if ok { Ok(raw) } else { Err(raw) }).await;
}
