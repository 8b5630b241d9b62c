//! Coalescing (`[upstreams.<name>.overrides.<tool>] coalesce = true`):
//! identical concurrent calls of a read-only tool by the same principal share
//! one upstream call. The first caller's call is made on a task of the
//! gateway; callers with an identical call that arrive while it is in flight
//! wait for its outcome, and every caller is answered with it, byte for byte.
//!
//! What may share ([`key`]): a `tools/call` whose override says `coalesce =
//! true` and whose annotations, as the caller was shown them, say
//! `readOnlyHint: true` (an override that asks for a tool that is not
//! read-only is warned about once, and its calls are each their own); not a
//! call a human confirmed (`[confirm]`), nor one that may become a task, nor
//! one that carries a `progressToken` or params beyond `name`, `arguments`
//! and `_meta`. Identical means the same principal (an anonymous caller: the
//! same session; a 2026-07-28 anonymous request never shares), endpoint,
//! upstream, and the same request as sent upstream (its params as canonical
//! JSON: members sorted, nothing else normalized; for a 2026-07-28 upstream,
//! also the client facts it is told).
//!
//! Invariants:
//! - never across principals, nor endpoints: both are part of the key;
//! - with nothing configured a call costs the branch on its override (an
//!   upstream without overrides: one empty-map lookup);
//! - the shared call belongs to no caller: one leaving (its
//!   `notifications/cancelled`, a 2026-07-28 client closing its stream) does
//!   not end it for the others; it is cancelled upstream when its last
//!   caller leaves, or when the gateway stops;
//! - each caller gets its own answer and its own record (followers' audit
//!   records say `coalesced: true`, and `manifold_coalesced_calls_total`
//!   counts them); the output check runs per caller, in its answer;
//! - a shared call relays nothing but its outcome: its notifications are
//!   dropped, and a request the upstream makes during it (sampling,
//!   elicitation, roots) is refused, as there is no one client to ask;
//! - the bounds are the table's (`state::coalescing`: `MAX_SHARED_CALLS`,
//!   `MAX_WAITERS`); a caller past them makes its own call.
//!
//! Not here: the table of shared calls (`state::coalescing`), the answer and
//! its record (the chain's `finish`).

use manifold_upstream::{
    CallEvent, ClientFacts, ExtraHeaders, NotRelayed, Upstream, UpstreamError,
};
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::repeat;
use crate::call::context::Answering;
use crate::call::context::{Call, TaskHook, What};
use crate::era::Era;
use crate::refusal::{status_of_relayed, Refusal};
use crate::reply::Reply;
use crate::request::{Principal, Request};
use crate::state::coalescing::{Ended, Joined, Key, Making, Outcome, Seat};

/// The params a shareable call may carry: anything else (a task request, a
/// 2026-07-28 retry's `requestState` or `inputResponses`) makes it its own.
const SHAREABLE_PARAMS: [&str; 3] = ["name", "arguments", "_meta"];

/// What the shared call sends upstream: the first caller's request.
pub(super) struct Dispatch {
    pub upstream: Upstream,
    pub method: String,
    pub params: Map<String, Value>,
    pub headers: ExtraHeaders,
    pub for_upstream: Option<ClientFacts>,
    pub repeatable: bool,
    pub span: tracing::Span,
}

/// What makes `call` identical to others, when it may share an upstream call.
pub(super) fn key(x: &Request, call: &Call) -> Option<Key> {
    if call.what != What::Tool {
        return None;
    }
    let tool = call.facts.original.as_deref()?;
    if call.upstream.config().overrides.get(tool)?.coalesce != Some(true) {
        return None;
    }
    if call.confirmed || matches!(call.task, TaskHook::Create { declared: true, .. }) {
        return None;
    }
    if call
        .params
        .keys()
        .any(|k| !SHAREABLE_PARAMS.contains(&k.as_str()))
    {
        return None;
    }
    let progress = call
        .params
        .get("_meta")
        .and_then(Value::as_object)
        .is_some_and(|m| m.contains_key("progressToken"));
    if progress {
        return None;
    }
    if repeat::hints(call).read_only_hint != Some(true) {
        if x.gw
            .tables
            .coalescing
            .first_warning(call.upstream.name(), tool)
        {
            tracing::warn!(upstream = %call.upstream.name(), %tool,
                "`coalesce = true` asks to share calls of a tool whose annotations do not say readOnlyHint: true; its calls are not coalesced");
        }
        return None;
    }
    let who = match &x.principal {
        Principal::Anonymous => format!(
            "{} session {}",
            manifold_audit::ANONYMOUS,
            x.caller.session()?.digest
        ),
        p => p.audit_name(),
    };
    let mut request = Vec::new();
    write_object(&mut request, &call.params);
    if call.upstream.is_stateless() {
        let facts = x.caller.for_upstream();
        request.push(b'\n');
        write_object(&mut request, &facts.capabilities);
        request.extend_from_slice(
            format!("\n{:?} {}", facts.log_level, facts.bridge_input).as_bytes(),
        );
    }
    Some(Key {
        who,
        endpoint: x.arrival.endpoint.clone(),
        upstream: call.upstream.name().clone(),
        request,
    })
}

/// An object in the canonical form of the audit log
/// (`manifold_audit::canonical`: members sorted by key at every depth, numbers
/// exactly as parsed, so `1` and `1.0` differ and two calls are identical
/// only when they surely are).
fn write_object(out: &mut Vec<u8>, m: &Map<String, Value>) {
    manifold_audit::canonical::write_canonical_members(out, m.iter().map(|(k, v)| (k.as_str(), v)));
}

/// Answers the caller from the shared call it joined (the first caller makes
/// it first). `cancel` is the caller's own cancellation.
pub(super) async fn answer(
    x: &Request,
    joined: Joined,
    cancel: CancellationToken,
    mut answering: Answering,
    dispatch: Dispatch,
) -> Result<Reply, Refusal> {
    let seat = match joined {
        Joined::First(seat, making) => {
            let span = dispatch.span.clone();
            answering
                .gw
                .life
                .background
                .spawn(make(dispatch, making).instrument(span));
            seat
        }
        Joined::Follower(seat) => {
            answering.gw.metrics.coalesced(&answering.upstream);
            answering.facts.coalesced = true;
            seat
        }
    };
    let mut waiting = Waiting {
        seat: Some(seat),
        answering: Some(answering),
        cancel,
        era: x.era,
        drained: false,
    };
    waiting.answer(false, x.arrival.accepts.stream).await
}

/// Makes the shared call and hands its outcome to every caller waiting.
async fn make(d: Dispatch, making: Making) {
    let cancel = making.cancel().clone();
    let ended = run(d, &cancel).await;
    making.end(ended);
}

async fn run(d: Dispatch, cancel: &CancellationToken) -> Ended {
    let gone = |upstream: &Upstream| Ended {
        outcome: Outcome::Failed(UpstreamError::Cancelled {
            upstream: upstream.name().to_string(),
        }),
        attempts: None,
    };
    let forward = d.upstream.forward(
        &d.method,
        Some(d.params),
        d.headers,
        d.for_upstream.as_ref(),
        d.repeatable,
    );
    let started = tokio::select! {
        started = forward => started,
        _ = cancel.cancelled() => return gone(&d.upstream),
    };
    let mut call = match started {
        Ok(call) => call,
        Err(not) => {
            return Ended {
                outcome: Outcome::Failed(not.error),
                attempts: d.upstream.guarded().then_some(not.attempts),
            }
        }
    };
    loop {
        tokio::select! {
            ev = call.next() => match ev {
                CallEvent::Done(outcome) => {
                    return Ended { outcome: outcome.into(), attempts: call.attempts() };
                }
                CallEvent::Request { method, responder, .. } => {
                    responder.refuse(NotRelayed::Coalesced { method }).await;
                }
                CallEvent::Notification(_) => {}
            },
            _ = cancel.cancelled() => {
                call.cancel("every caller of the shared call left, or the gateway is stopping").await;
                return gone(&d.upstream);
            }
        }
    }
}

/// One caller waiting on a shared call. Dropped while it waits (the client's
/// connection closed), it is finished on a task of the gateway as the relay
/// finishes a call whose client left: a session-era call waits on for the
/// outcome and is recorded with it; a 2026-07-28 call is cancelled.
struct Waiting {
    /// Leaves the shared call when dropped.
    seat: Option<Seat>,
    /// `None` once answered.
    answering: Option<Answering>,
    cancel: CancellationToken,
    era: Era,
    /// Already the drain of a dropped waiter.
    drained: bool,
}

impl Waiting {
    /// The caller's answer: the shared call's outcome, or (`gone`, or the
    /// caller cancelled) none.
    async fn answer(&mut self, gone: bool, accepts_stream: bool) -> Result<Reply, Refusal> {
        let (Some(mut rx), Some(upstream)) = (
            self.seat.as_ref().map(Seat::outcome),
            self.answering.as_ref().map(|a| a.upstream.clone()),
        ) else {
            return Err(Refusal::Cancelled);
        };
        let ended = if gone {
            None
        } else {
            tokio::select! {
                ended = outcome(&mut rx, &upstream) => Some(ended),
                _ = self.cancel.cancelled() => None,
            }
        };
        self.seat = None;
        let Some(mut a) = self.answering.take() else {
            return Err(Refusal::Cancelled);
        };
        a.caller.end_call(&a.id);
        let Some(ended) = ended else {
            a.cancelled().await;
            return super::stream::cancelled(accepts_stream);
        };
        a.facts.attempts = ended.attempts;
        let outcome = ended.outcome.to_call_outcome();
        let status = status_of_relayed(self.era, &outcome);
        let bytes = a.answer(outcome).await;
        Ok(Reply::relayed(status, bytes))
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if self.drained {
            return;
        }
        let (Some(a), Some(seat)) = (self.answering.take(), self.seat.take()) else {
            return;
        };
        let gone = a.caller.cancels_on_disconnect();
        let tasks = a.gw.life.background.clone();
        let mut rest = Waiting {
            seat: Some(seat),
            answering: Some(a),
            cancel: self.cancel.clone(),
            era: self.era,
            drained: true,
        };
        tasks.spawn(async move {
            let _ = rest.answer(gone, false).await;
        });
    }
}

/// The shared call's outcome, once it is in. A call whose task ended without
/// one (the runtime is stopping) is a cancelled call.
async fn outcome(rx: &mut watch::Receiver<Option<Ended>>, upstream: &str) -> Ended {
    let ended = match rx.wait_for(Option::is_some).await {
        Ok(ended) => ended.clone(),
        Err(_) => None,
    };
    ended.unwrap_or_else(|| Ended {
        outcome: Outcome::Failed(UpstreamError::Cancelled {
            upstream: upstream.to_string(),
        }),
        attempts: None,
    })
}
