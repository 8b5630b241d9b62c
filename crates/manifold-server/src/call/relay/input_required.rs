//! 2026-07-28 client ↔ session-era upstream: an upstream that asks the client
//! something mid-call (sampling, elicitation, roots) gets its questions turned into
//! an `InputRequiredResult`, and the client's retry (carrying `requestState` and
//! `inputResponses`) resumes the held call.
//!
//! - The call stays open upstream, owned by a holder task, for at most
//!   `limits.held_call_ttl`; then it is cancelled upstream and recorded as
//!   cancelled.
//! - States are minted and checked by `state::held_calls` (HMAC-bound to the
//!   request and the principal, expiring, single-use); a resumed call gets a
//!   fresh state if it asks again. A retry is resumed only while its target is
//!   in the caller's view (`pipeline::route` checks; [`abandon`] ends the call
//!   otherwise).
//! - A client that did not declare the capability the upstream needs gets 400 +
//!   -32021 with `requiredCapabilities`, and the call is cancelled upstream.
//! - Questions an upstream asks together share one round (`input_1` … `input_n`,
//!   gathered for [`GATHER_WINDOW`]).
//!
//! Invariants: every exit records the request once — the upstream's answer, a
//! refusal (-32021, too many held calls), an expired round (cancelled).
//!
//! Not here: the other direction, a session-era client of a 2026-07-28 upstream
//! (manifold-upstream `input_bridge.rs`); requests that arrive after a response
//! stream has started (those are refused).

use bytes::Bytes;
use manifold_protocol::methods::required_capability;
use manifold_protocol::{jsonrpc, RequestId};
use manifold_upstream::{Call, CallEvent, CallOutcome, NotRelayed, Responder};
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};
use std::time::Duration;
use tokio::sync::oneshot;

use crate::call::context::Answering;
use crate::refusal::Refusal;
use crate::reply::Reply;
use crate::request::{Caller, Request};
use crate::state::held_calls::Resume;
use crate::state::Gateway;

/// How long Manifold waits, after an upstream's question, for more questions to
/// ask in the same round (an upstream may ask several concurrently).
pub const GATHER_WINDOW: Duration = Duration::from_millis(50);

/// The key of the `n`-th question of a round (from 0) in `inputRequests`.
fn input_key(n: usize) -> String {
    format!("input_{}", n + 1)
}

/// One question an upstream asked its client.
pub(crate) struct Question {
    pub method: String,
    pub params: Option<Value>,
    pub responder: Responder,
}

/// The round's questions: `first`, and any others that arrive within
/// [`GATHER_WINDOW`]. An outcome instead means the upstream answered anyway.
async fn gather(call: &mut Call, first: Question) -> (Vec<Question>, Option<CallOutcome>) {
    let mut questions = vec![first];
    loop {
        match tokio::time::timeout(GATHER_WINDOW, call.next()).await {
            Ok(CallEvent::Request {
                method,
                params,
                responder,
            }) => questions.push(Question {
                method,
                params,
                responder,
            }),
            Ok(CallEvent::Notification(_)) => {}
            Ok(CallEvent::Done(outcome)) => return (questions, Some(outcome)),
            Err(_) => return (questions, None),
        }
    }
}

async fn refuse_all(questions: Vec<Question>, why: NotRelayed) {
    for q in questions {
        q.responder.refuse(why.clone()).await;
    }
}

/// The upstream answered without waiting for (some of) its questions: they are
/// refused, and the answer recorded and returned.
async fn answered_anyway(
    a: &mut Answering,
    questions: Vec<Question>,
    outcome: CallOutcome,
) -> Bytes {
    refuse_all(questions, NotRelayed::CallEnded).await;
    a.answer(outcome).await
}

fn input_required(id: &RequestId, questions: &[Question], state: &str) -> Reply {
    let mut requests = Map::new();
    for (n, q) in questions.iter().enumerate() {
        let mut request = Map::new();
        request.insert("method".into(), Value::from(q.method.as_str()));
        if let Some(p) = &q.params {
            request.insert("params".into(), p.clone());
        }
        requests.insert(input_key(n), Value::Object(request));
    }
    let result = json!({
        "resultType": "input_required",
        "inputRequests": requests,
        "requestState": state,
    });
    Reply::ok(jsonrpc::response_bytes_from_json(
        id,
        result.to_string().as_bytes(),
    ))
}

/// The digest a request's `requestState` is bound to.
fn digest_of(x: &Request) -> String {
    match &x.caller {
        Caller::Stateless(c) => c.digest.clone(),
        _ => String::new(),
    }
}

/// Phase: the upstream asked the (2026-07-28) client something before answering.
/// Answers the client with -32021 or an `InputRequiredResult`, holding the call.
pub(crate) async fn bridge(
    x: &Request,
    mut call: Call,
    first: Question,
    mut a: Answering,
) -> Reply {
    let gw = &x.gw;
    let (questions, outcome) = gather(&mut call, first).await;
    if let Some(outcome) = outcome {
        return Reply::ok(answered_anyway(&mut a, questions, outcome).await);
    }
    let mut missing: Vec<String> = Vec::new();
    for q in &questions {
        if let Some(cap) = required_capability(&q.method) {
            if !x.caller.has_capability(cap) && !missing.iter().any(|m| m == cap) {
                missing.push(cap.to_string());
            }
        }
    }
    if !missing.is_empty() {
        refuse_all(questions, NotRelayed::RoundMissesCapability).await;
        call.cancel("the client lacks a required capability").await;
        return a.refuse(Refusal::MissingCapabilities(missing)).await;
    }
    if gw.tables.held.full() {
        refuse_all(questions, NotRelayed::HeldCallsFull).await;
        call.cancel("too many held calls").await;
        return a
            .refuse(Refusal::HeldCallsFull {
                limit: gw.tables.held.max,
            })
            .await;
    }
    let principal = x.principal.audit_name();
    if gw.tables.held.full_for(&principal) {
        refuse_all(questions, NotRelayed::HeldCallsFullForPrincipal).await;
        call.cancel("too many held calls for this principal").await;
        return a
            .refuse(Refusal::HeldCallsFullForPrincipal {
                limit: gw.tables.held.per_principal,
            })
            .await;
    }
    let digest = digest_of(x);
    let (state_id, state, rx) = gw.tables.held.hold(&digest, &principal);
    let reply = input_required(&x.rpc_id, &questions, &state);
    let responders = questions.into_iter().map(|q| q.responder).collect();
    let holder = Holder {
        gw: gw.clone(),
        call,
        a,
        digest,
        principal,
    };
    gw.life
        .background
        .spawn(holder.hold(responders, rx, state_id));
    reply
}

/// Owns a held call until the retry comes (or the wait ends).
struct Holder {
    gw: std::sync::Arc<Gateway>,
    call: Call,
    a: Answering,
    digest: String,
    /// Whom it is held for (`limits.max_held_calls_per_principal`).
    principal: String,
}

impl Holder {
    /// Answers the upstream's questions with the client's responses and drives the
    /// call on; asks again (a fresh state) if the upstream does. Without a retry
    /// in time the call is cancelled upstream and recorded as cancelled.
    async fn hold(
        mut self,
        mut responders: Vec<Responder>,
        mut rx: oneshot::Receiver<Resume>,
        mut state_id: String,
    ) {
        loop {
            let resume = tokio::select! {
                r = &mut rx => r.ok(),
                _ = tokio::time::sleep(self.gw.tables.held.ttl) => None,
                _ = self.gw.life.stop.cancelled() => None,
            };
            let Some(resume) = resume else {
                self.gw.tables.held.release(&state_id);
                self.call
                    .cancel("the client did not come back with the input")
                    .await;
                self.a.cancelled().await;
                return;
            };
            for (n, responder) in responders.drain(..).enumerate() {
                match resume.responses.get(&input_key(n)) {
                    Some(v) => {
                        let raw = RawValue::from_string(v.to_string())
                            .unwrap_or_else(|_| RawValue::NULL.to_owned());
                        responder.respond(Ok(raw)).await;
                    }
                    None => responder.refuse(NotRelayed::NoResponseInRetry).await,
                }
            }
            // Drive the call on: its outcome, or the next round of questions.
            let (questions, outcome) = loop {
                match self.call.next().await {
                    CallEvent::Notification(_) => continue,
                    CallEvent::Done(outcome) => break (Vec::new(), Some(outcome)),
                    CallEvent::Request {
                        method,
                        params,
                        responder,
                    } => {
                        let first = Question {
                            method,
                            params,
                            responder,
                        };
                        break gather(&mut self.call, first).await;
                    }
                }
            };
            if let Some(outcome) = outcome {
                let bytes = answered_anyway(&mut self.a, questions, outcome).await;
                let _ = resume.reply.send(Reply::ok(retag(&bytes, &resume.id)));
                return;
            }
            // The same call's next round: it takes back the place it held.
            let (id, state, new_rx) = self.gw.tables.held.hold(&self.digest, &self.principal);
            let _ = resume
                .reply
                .send(input_required(&resume.id, &questions, &state));
            responders = questions.into_iter().map(|q| q.responder).collect();
            rx = new_rx;
            state_id = id;
        }
    }
}

/// The final response was built for the first request's id; the retry has its own.
fn retag(bytes: &[u8], id: &RequestId) -> Vec<u8> {
    let Ok(mut v) = serde_json::from_slice::<Map<String, Value>>(bytes) else {
        return bytes.to_vec();
    };
    v.insert("id".into(), id.as_value().clone());
    serde_json::to_vec(&Value::Object(v)).unwrap_or_else(|_| bytes.to_vec())
}

/// A confirmed call whose 2026-07-28 upstream asks for input: the
/// `requestState` of the `InputRequiredResult` in `reply` is wrapped (bound
/// to this request, `digest`), so the retry goes on without a new question
/// and cannot be used to skip one.
pub(crate) fn wrap_input_round(x: &Request, digest: &str, reply: Reply) -> Reply {
    let Reply::Message {
        status,
        bytes,
        session,
        refused,
        retry_after,
    } = reply
    else {
        return reply;
    };
    let rewritten = serde_json::from_slice::<Map<String, Value>>(&bytes)
        .ok()
        .and_then(|mut msg| {
            let result = msg.get_mut("result")?.as_object_mut()?;
            if result.get("resultType").and_then(Value::as_str) != Some("input_required") {
                return None;
            }
            let inner = result.get("requestState")?.as_str()?.to_string();
            let principal = x.principal.audit_name();
            // With no room for the wrapper the round goes out as the upstream
            // wrote it: its retry is then asked about again, never let through.
            let Some(wrapped) = x.gw.tables.held.wrap_confirmed(digest, &principal, &inner) else {
                tracing::warn!(limit = x.gw.tables.held.max,
                    "no room for a confirmed call's wrapper (limits.max_held_calls); its retry will be confirmed again");
                return None;
            };
            result.insert("requestState".into(), Value::String(wrapped));
            serde_json::to_vec(&Value::Object(msg)).ok()
        });
    Reply::Message {
        status,
        bytes: rewritten.map_or(bytes, Bytes::from),
        session,
        refused,
        retry_after,
    }
}
