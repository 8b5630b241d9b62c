//! What a client sends that is not a request: notifications (only
//! `notifications/cancelled` means something to Manifold) and its answers to
//! server→client requests, relayed to the upstream that asked.
//!
//! Invariants: a cancellation reaches only the call it names, in the client's own
//! session; an answer reaches only the upstream request it was minted for (on
//! this replica, or through the cluster's bus on the one that minted it).
//!
//! Not here: relaying the request to the client (`relay`).

use manifold_protocol::methods as m;
use manifold_protocol::{jsonrpc, RequestId};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use crate::refusal::Refusal;
use crate::request::Caller;
use crate::state::Gateway;

/// A client notification. With `[cluster] redis`, a cancellation for a call
/// not in flight here goes to the other replicas (one may run it); `Err` when
/// it could not be sent there.
pub(crate) async fn notification(
    gw: &Gateway,
    caller: &Caller,
    method: &str,
    msg: &Map<String, Value>,
) -> Result<(), Refusal> {
    if method != m::NOTIF_CANCELLED {
        return Ok(());
    }
    let target = jsonrpc::params(msg)
        .and_then(|p| p.get("requestId"))
        .and_then(RequestId::from_value);
    if let (Some(target), Some(session)) = (target, caller.session()) {
        if !session.cancel_call(&target) && !gw.relay_cancel(&session.digest, &target).await? {
            tracing::debug!(request = %target, "cancellation for a request not in flight");
        }
    }
    Ok(())
}

/// A client's answer to a server→client request, relayed to the upstream that
/// asked — through the bus when another replica minted its id (`Err` when it
/// could not be sent there).
pub(crate) async fn response(
    gw: &Gateway,
    caller: &Caller,
    id: &RequestId,
    mut msg: Map<String, Value>,
) -> Result<(), Refusal> {
    let Some(session) = caller.session() else {
        return Ok(());
    };
    let Some(responder) = session.take_pending(id) else {
        let elsewhere = id.as_str().filter(|s| !session.minted_here(s));
        let relayed = match elsewhere {
            Some(s) => {
                let outcome: Map<String, Value> = ["result", "error"]
                    .iter()
                    .filter_map(|k| msg.remove(*k).map(|v| (k.to_string(), v)))
                    .collect();
                gw.relay_answer(&session.digest, s, outcome).await?
            }
            None => false,
        };
        if !relayed {
            tracing::debug!(request = %id, "response to no pending request; ignored");
        }
        return Ok(());
    };
    let (ok, member) = match (msg.get("result"), msg.get("error")) {
        (Some(r), _) => (true, r),
        (None, Some(e)) => (false, e),
        (None, None) => return Ok(()),
    };
    let raw =
        RawValue::from_string(member.to_string()).unwrap_or_else(|_| RawValue::NULL.to_owned());
    responder.respond(if ok { Ok(raw) } else { Err(raw) }).await;
    Ok(())
}
