//! Step resume (2026-07-28): a retry carrying the `requestState` of a call
//! Manifold holds for the client's input goes on as that call — its answers
//! reach the waiting call, and the retry is answered with what the call
//! answers next. Runs once resolve has found the target in the caller's view
//! now (not when the call was held): a retry whose target a reload hid ends
//! its held call instead ([`abandon`]).
//!
//! Invariants: a state resumes only the call it was minted for, for the
//! principal and request it was minted for (`state::held_calls` verifies it);
//! the held call's record is the call's, so a resumed retry is counted, not
//! audited again; a `[confirm]` answer is not a held call's (the confirm step
//! takes it); a state for a stateless upstream is its own and goes to it
//! byte-exact.
//!
//! Not here: holding the call and bridging its rounds (`relay`), minting and
//! verifying states (`state::held_calls`).

use serde_json::{Map, Value};
use tokio::sync::oneshot;

use crate::refusal::Refusal;
use crate::reply::Reply;
use crate::request::Request;
use crate::state::held_calls::{params_digest, Resume, NOT_HELD_HERE};

/// A retry whose target the caller may no longer see (a reload hid it): the
/// call its state holds here for this caller is not resumed but ended —
/// cancelled upstream, recorded as cancelled. What the retry is answered is
/// the handler's (as for any hidden item). A state that does not verify ends
/// nothing.
pub(crate) fn abandon(x: &Request, params: &Map<String, Value>) {
    let Some(state) = params.get("requestState").and_then(Value::as_str) else {
        return;
    };
    let digest = params_digest(&x.method, params, &x.principal.audit_name());
    // Dropping the sender wakes the holder with nothing: it cancels the call.
    if x.gw.tables.held.take(state, &digest).is_ok() {
        tracing::info!(method = %x.method, "a held call's target left the caller's view; the call is cancelled");
    }
}

/// A retry carrying `requestState`: resumes its held call and waits for the
/// answer. `None` when the request carries no state (a first attempt).
pub(crate) async fn resume(
    x: &Request,
    params: &Map<String, Value>,
) -> Option<Result<Reply, Refusal>> {
    let state = params.get("requestState")?;
    let Some(state) = state.as_str() else {
        return Some(Err(Refusal::InvalidRequestState("it must be a string")));
    };
    let digest = params_digest(&x.method, params, &x.principal.audit_name());
    let responses = params
        .get("inputResponses")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let tx = match x.gw.tables.held.take(state, &digest) {
        Ok(tx) => tx,
        // Authentic but not held here: another replica may hold it.
        Err(NOT_HELD_HERE) if x.gw.cluster.is_some() => {
            return x
                .gw
                .resume_elsewhere(state, &digest, &x.rpc_id, responses)
                .await;
        }
        Err(why) => return Some(Err(Refusal::InvalidRequestState(why))),
    };
    let (reply, wait) = oneshot::channel();
    let resume = Resume {
        responses,
        id: x.rpc_id.clone(),
        reply,
    };
    if tx.send(resume).is_err() {
        return Some(Err(Refusal::InvalidRequestState("its call ended")));
    }
    Some(wait.await.map_err(|_| Refusal::HeldCallLost))
}
