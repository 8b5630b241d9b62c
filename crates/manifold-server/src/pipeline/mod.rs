//! The request spine. Every request, from any front door and either era, goes
//! through the same phases (see `README.md` next to this file for why in this
//! order):
//!
//! ```text
//! decode → admit → route → handler or call chain → finish
//! ```
//!
//! - decode (`decode`): one JSON-RPC message; its era from the envelope.
//! - admit (`admit`): the era's transport rules → who is calling ([`Caller`]).
//! - route (`route`): the one method table → a handler (`crate::handlers`,
//!   answered here) or the call chain (`crate::call`, forwarded: resolve →
//!   resume → validate → confirm → limits → credentials → relay → shape →
//!   check output → finish).
//! - finish ([`finish`]): the request's metrics and audit record, once.
//!
//! Invariants: a phase refuses by returning a [`Refusal`], which only the
//! refusal table turns into bytes (`Refusal::reply`: called by [`finish`] and
//! by this file's phases for what they refuse before a handler runs, by the
//! call chain's finish, and by the front doors for what they refuse before a
//! message exists). Every
//! request whose method is known is finished exactly once: here, or by the
//! call chain's relay, which takes the observation when it dispatches.
//!
//! Not here: framing (the front doors), HTTP-only checks (Origin, Host, Accept,
//! body limits: `front/http.rs`).
//!
//! [`Caller`]: crate::request::Caller

mod admit;
mod decode;
mod route;

use manifold_protocol::{jsonrpc, Incoming, MessageError, RequestId};
use serde_json::Value;
use std::sync::Arc;

use crate::era::Era;
use crate::handlers;
use crate::observe::Observed;
use crate::refusal::Refusal;
use crate::reply::Reply;
use crate::request::{Arrival, Request};
use crate::state::Gateway;

/// Serves one message: a request gets its reply; a notification or a client's
/// response gets [`Reply::Accepted`].
pub(crate) async fn serve(gw: &Arc<Gateway>, arrival: Arrival, body: &[u8]) -> Reply {
    serve_decoded(gw, arrival, Incoming::parse(body)).await
}

/// [`serve`] for a body its front door has already decoded (stdio reads each
/// line's shape first), so the message is parsed once.
pub(crate) async fn serve_decoded(
    gw: &Arc<Gateway>,
    arrival: Arrival,
    decoded: Result<Incoming, MessageError>,
) -> Reply {
    let (msg, era) = match decode::decode(decoded, &arrival.front) {
        Ok(m) => m,
        Err(r) => return r.reply(None, Era::Session),
    };
    // The request's span: its parent (the client's trace) is set before it
    // is entered, so everything below continues the client's trace.
    let span = crate::tracectx::request_span(&arrival.request_id, arrival.front.transport());
    if let Some(id) = &arrival.identity {
        span.record("principal", id.display_name().as_str());
    }
    if let Incoming::Request { id, method, msg } = &msg {
        let params = jsonrpc::params(msg);
        let meta_version = params
            .and_then(|p| p.get("_meta"))
            .and_then(|m| m.get(manifold_protocol::methods::meta::PROTOCOL_VERSION))
            .and_then(Value::as_str);
        let header = |h: &str| arrival.front.header(h);
        crate::tracectx::describe(
            &span,
            crate::tracectx::Described {
                method,
                id: id.as_value(),
                params,
                headers: arrival.front.headers(),
                session: header(manifold_protocol::methods::HEADER_SESSION_ID),
                protocol_version: meta_version
                    .or(header(manifold_protocol::methods::HEADER_PROTOCOL_VERSION)),
            },
        );
    }
    use tracing::Instrument;
    serve_message(gw, arrival, msg, era).instrument(span).await
}

async fn serve_message(gw: &Arc<Gateway>, arrival: Arrival, msg: Incoming, era: Era) -> Reply {
    match msg {
        Incoming::Request { id, method, msg } => {
            let mut obs = Observed::start(gw, &arrival.request_id, arrival.bytes, &method);
            if *arrival.endpoint != *gw.default_endpoint() {
                obs.endpoint = Some(arrival.endpoint.clone());
            }
            let admission = crate::tracectx::phase(crate::tracectx::Phase::Admission);
            let admitted = admission.in_scope(|| admit::request(gw, &arrival, era, &method, &msg));
            let admitted = match admitted {
                Ok(a) => a,
                Err(r) => return finish(Some(obs), Err(r), &id, era).await,
            };
            obs.admitted(
                admitted.caller.session().map(|s| s.digest.as_str()),
                admitted.caller.client_info(),
                admitted.principal.audit_name(),
                admitted.principal.metrics_label(gw.cfg().principal_label),
            );
            let mut x = Request {
                gw: gw.clone(),
                arrival,
                era,
                caller: admitted.caller,
                principal: admitted.principal,
                rpc_id: id,
                method,
                obs: Some(obs),
            };
            let result = route::route(&mut x, msg).await;
            finish(x.obs.take(), result, &x.rpc_id, x.era).await
        }
        Incoming::Notification { method, msg } => match admit::session(gw, &arrival) {
            Ok(session) => {
                let caller = crate::request::Caller::Session(session);
                match handlers::client_messages::notification(gw, &caller, &method, &msg).await {
                    Ok(()) => Reply::Accepted,
                    Err(r) => r.reply(None, era),
                }
            }
            Err(r) => r.reply(None, era),
        },
        Incoming::Response { id, msg } => match admit::session(gw, &arrival) {
            Ok(session) => {
                let caller = crate::request::Caller::Session(session);
                match handlers::client_messages::response(gw, &caller, &id, msg).await {
                    Ok(()) => Reply::Accepted,
                    Err(r) => r.reply(None, era),
                }
            }
            Err(r) => r.reply(None, era),
        },
    }
}

/// Phase finish, for every answer made on the request's own task: the reply
/// (a refusal, a tool error among them, rendered by the refusal table), with
/// the request's metrics and audit record if nobody else took them (the
/// call chain's relay does once it dispatches: `call::finish`). The record
/// is written before the reply goes out.
async fn finish(
    obs: Option<Observed>,
    result: Result<Reply, Refusal>,
    id: &RequestId,
    era: Era,
) -> Reply {
    crate::observe::answered(obs, result, id, era).await
}

/// The session's stream for notifications outside any request (HTTP GET).
pub(crate) fn open_stream(gw: &Arc<Gateway>, arrival: &Arrival) -> Reply {
    match admit::session_of(gw, arrival) {
        Ok(session) => handlers::session::open_stream(gw, &session),
        Err(r) => r.reply(None, Era::Session),
    }
}

/// Ends the session on the client's request (HTTP DELETE).
pub(crate) fn end_session(gw: &Arc<Gateway>, arrival: &Arrival) -> Reply {
    match admit::session_of(gw, arrival) {
        Ok(session) => handlers::session::end(gw, &session),
        Err(r) => r.reply(None, Era::Session),
    }
}
