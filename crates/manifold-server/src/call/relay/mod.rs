//! Step relay: forward the call to its upstream and relay everything that
//! comes back to the calling client only.
//!
//! The reply is one message when the upstream's result comes first, and a
//! stream as soon as the upstream sends a notification (progress, log) or a
//! request (sampling, elicitation) before the result (`stream`); the stream then
//! carries those, with ids minted for this client (`requests`), and ends with
//! the result. A 2026-07-28 client cannot be sent a request: the upstream's
//! questions become an `InputRequiredResult` instead (`input_required`).
//!
//! Invariants: the request's observation is taken here, at dispatch, and
//! finished exactly once by its [`Answering`] (the chain's `finish`), on
//! every exit — an answer, an upstream failure, a cancellation, a client that
//! left (the call then runs on to its outcome, or is cancelled for a client
//! whose disconnection cancels), an expired input round; the answer is
//! checked against the tool's `outputSchema` there (`check_output`).
//!
//! Retries and the circuit breaker are a use of this step, not a step of
//! their own: the call is dispatched past its upstream's breaker (an open one
//! fails it at once with a tool error saying when the upstream will be tried
//! again), and a call that may be repeated (`repeat`) is sent again by the
//! upstream's `Call` before its first event comes out — the one point where
//! nothing of the answer has reached the client yet, which only dispatch
//! sees. The audit record counts the attempts.
//!
//! Coalescing is a use of this step too (`coalesce`): identical concurrent
//! calls of a read-only tool whose override says `coalesce = true`, by one
//! principal, are dispatched once, on a task of the gateway, and each caller
//! is answered (and recorded) from that call's outcome.
//!
//! Not here: resolving and the checks before dispatch (the chain's earlier
//! steps), framing the stream (the front door).

mod coalesce;
pub(crate) mod input_required;
mod repeat;
mod requests;
mod stream;

use bytes::Bytes;
use manifold_upstream::CallEvent;
use tokio::sync::mpsc;
use tracing::Instrument;

use super::context::Answering;
use super::context::{Call, TaskHook};
use crate::era::Era;
use crate::refusal::{status_of_relayed, Refusal};
use crate::reply::Reply;
use crate::request::{Caller, Request};
use stream::Pending;

/// Sends the call to its upstream and answers the client with one message, or
/// with a stream once the upstream streams.
pub(crate) async fn forward(x: &mut Request, call: Call) -> Result<Reply, Refusal> {
    let gw = x.gw.clone();
    let Some(cancel) = x.caller.begin_call(&x.rpc_id) else {
        let refused = Refusal::TooManyCalls {
            limit: gw.cfg().limits.max_calls_per_session,
        };
        return Err(call.refused(x, refused));
    };
    let repeatable = repeat::repeatable(&call);
    let shared = coalesce::key(x, &call);
    let Call {
        mut params,
        upstream,
        mut headers,
        shape,
        output_check,
        permit,
        confirmed,
        task,
        expected,
        facts,
        ..
    } = call;
    let mut obs = x.obs.take();
    if let Some(o) = obs.as_mut() {
        o.dispatched(&upstream);
    }
    // The upstream's part of the trace: open until the answer (it rides in
    // `Answering`, into the stream's pump if there is one).
    let span = crate::tracectx::upstream_call(&x.method, upstream.name());
    span.in_scope(|| crate::tracectx::propagate(&mut params, &mut headers));
    let mut answering = Answering {
        span: span.clone(),
        gw: gw.clone(),
        caller: x.caller.clone(),
        upstream: upstream.name().clone(),
        id: x.rpc_id.clone(),
        shape,
        era: x.era,
        obs,
        output_check,
        permit,
        task,
        expected,
        member: None,
        facts,
    };
    tracing::debug!(upstream = %upstream.name(), method = %x.method,
        principal = x.principal.audit_name(), "forwarding");
    // A 2026-07-28 upstream is told who the client is; a session-era client gets its
    // InputRequiredResults as requests it understands.
    let mut for_upstream = upstream.is_stateless().then(|| x.caller.for_upstream());
    if let (Some(f), TaskHook::Relay { facts, .. }) = (for_upstream.as_mut(), &answering.task) {
        // A task lives on the pool member that made it.
        f.member = facts.member;
    }
    if let Some(joined) = shared.and_then(|key| gw.tables.coalescing.join(key, &gw.life.stop)) {
        let dispatch = coalesce::Dispatch {
            upstream,
            method: x.method.clone(),
            params,
            headers,
            for_upstream,
            repeatable,
            span,
        };
        return coalesce::answer(x, joined, cancel, answering, dispatch).await;
    }
    let call = match upstream
        .forward(
            &x.method,
            Some(params),
            headers,
            for_upstream.as_ref(),
            repeatable,
        )
        .instrument(span)
        .await
    {
        Ok(c) => {
            if upstream.is_pool() {
                answering.member = Some(c.member());
            }
            c
        }
        Err(not) => {
            x.caller.end_call(&x.rpc_id);
            answering.facts.attempts = upstream.guarded().then_some(not.attempts);
            let bytes = answering
                .answer(manifold_upstream::CallOutcome::Failed(not.error))
                .await;
            return Ok(Reply::ok(bytes));
        }
    };
    // From here on, dropping this handler (the client's connection closed) hands
    // the call to a background drain instead of abandoning it.
    let pending = Pending::new(call, cancel, answering);
    let reply = first_answer(x, pending).await?;
    // A confirmed call whose 2026-07-28 upstream asks for input: its state is
    // wrapped, so the retry goes on without a new question (and cannot be
    // used to skip one: the wrapper is bound to this request).
    match &x.caller {
        Caller::Stateless(c) if upstream.is_stateless() && confirmed => {
            let digest = c.digest.clone();
            Ok(input_required::wrap_input_round(x, &digest, reply))
        }
        _ => Ok(reply),
    }
}

/// The client's reply, from the call's first event: its answer, a stream, or
/// (2026-07-28) an `InputRequiredResult`.
async fn first_answer(x: &Request, mut pending: Pending) -> Result<Reply, Refusal> {
    let accepts_stream = x.arrival.accepts.stream;
    let Some(first) = pending.next().await else {
        return stream::cancelled(accepts_stream);
    };
    let first = match first {
        CallEvent::Request {
            method,
            params,
            responder,
        } if x.era == Era::Stateless => {
            let question = input_required::Question {
                method,
                params,
                responder,
            };
            return Ok(pending.bridge(x, question).await);
        }
        other => other,
    };
    match first {
        CallEvent::Done(outcome) => {
            let status = status_of_relayed(x.era, &outcome);
            let bytes = pending.answer(outcome).await;
            Ok(Reply::relayed(status, bytes))
        }
        ev if accepts_stream => {
            let (tx, rx) = mpsc::channel::<Bytes>(x.gw.cfg().limits.stream_queue);
            pending.stream_to(tx, ev);
            Ok(Reply::Stream(rx))
        }
        mut ev => loop {
            // The client cannot take a stream: drop notifications, refuse
            // requests, answer with the result alone.
            match ev {
                CallEvent::Done(outcome) => {
                    return Ok(Reply::ok(pending.answer(outcome).await));
                }
                CallEvent::Request {
                    responder, method, ..
                } => requests::no_stream(method, responder).await,
                CallEvent::Notification(_) => {}
            }
            let Some(next) = pending.next().await else {
                return stream::cancelled(accepts_stream);
            };
            ev = next;
        },
    }
}
