//! Answering an upstream's requests: a request the upstream sends during a
//! call (sampling, elicitation, roots) goes to the call's client, under a
//! fresh id minted for it on the client's session, or is refused on the
//! client's behalf with the reason from manifold-upstream's table
//! ([`NotRelayed`]).
//!
//! Invariants: a request reaches only the client of the call it came in; a
//! client that did not declare the capability the method needs is never asked;
//! each minted id is remembered by the caller (the stream forgets them at its
//! end); the number of requests awaiting one client's answers is bounded by its
//! session (`MAX_PENDING_CLIENT_REQUESTS`).
//!
//! Not here: a 2026-07-28 client (its questions travel as an
//! `InputRequiredResult`: `input_required`), writing to the stream (`stream`).

use manifold_protocol::methods::required_capability;
use manifold_upstream::{NotRelayed, Responder};
use serde_json::{Map, Value};

use crate::request::Caller;

/// The message asking the call's client `method`, with an id minted for it
/// (pushed onto `minted`); `None` when it was refused instead.
pub(crate) async fn to_client(
    caller: &Caller,
    method: String,
    params: Option<Value>,
    responder: Responder,
    minted: &mut Vec<String>,
) -> Option<Vec<u8>> {
    let Some(session) = caller.session().filter(|_| caller.can_be_asked()) else {
        // 2026-07-28 servers never send requests (MRTR replaced them); once
        // the response streams, it is too late for an InputRequiredResult.
        responder
            .refuse(NotRelayed::AfterStreamStarted { method })
            .await;
        return None;
    };
    if let Some(capability) = required_capability(&method) {
        if !session.has_capability(capability) {
            let capability = capability.to_string();
            responder
                .refuse(NotRelayed::MissingCapability { capability, method })
                .await;
            return None;
        }
    }
    let down_id = match session.add_pending(responder) {
        Ok(id) => id,
        Err(responder) => {
            responder.refuse(NotRelayed::TooManyPending).await;
            return None;
        }
    };
    minted.push(down_id.clone());
    let mut msg = Map::new();
    msg.insert("jsonrpc".into(), Value::from("2.0"));
    msg.insert("id".into(), Value::from(down_id));
    msg.insert("method".into(), Value::from(method));
    if let Some(p) = params {
        msg.insert("params".into(), p);
    }
    Some(serde_json::to_vec(&Value::Object(msg)).unwrap_or_default())
}

/// The call's client left: the upstream's request is refused for it.
pub(crate) async fn client_gone(method: String, responder: Responder) {
    responder.refuse(NotRelayed::ClientGone { method }).await;
}

/// The call's client takes one JSON answer, not a stream it could be asked on.
pub(crate) async fn no_stream(method: String, responder: Responder) {
    responder.refuse(NotRelayed::NoStream { method }).await;
}
