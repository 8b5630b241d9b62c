//! Session-era client ↔ 2026-07-28 upstream: a 2026-07-28 upstream asks for client input
//! with an `InputRequiredResult` instead of a server→client request. For a caller
//! that speaks the session era, the call turns each `inputRequests` entry into a
//! [`CallEvent::Request`] (which the gateway relays to the client like any
//! upstream request), collects the answers under the same keys, and sends the
//! request again with a new id, `inputResponses` and the `requestState` exactly
//! as received, looping while the upstream asks again.
//!
//! Invariants: the caller sees one call and one outcome; the call's deadline
//! covers every round; at most [`MAX_INPUT_ROUNDS`] rounds of at most
//! [`MAX_INPUT_REQUESTS`] questions each. A question the client answers with an
//! error ends the call with that error (there is no `inputResponses` form for a
//! refusal).
//!
//! Not here: relaying the questions to the client (manifold-server), and the
//! other direction, a 2026-07-28 client of a session-era upstream (manifold-server
//! `relay/input_required.rs`).

use manifold_protocol::methods as m;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::collections::VecDeque;
use tokio::sync::mpsc;

use crate::attempt::Attempt;
use crate::message::{CallEvent, CallOutcome, InputAnswer, Responder};
use crate::{
    error::UpstreamError, facts::ClientFacts, facts::ExtraHeaders, limits::MAX_INPUT_REQUESTS,
    limits::MAX_INPUT_ROUNDS,
};

/// The methods on which a 2026-07-28 server may answer `InputRequiredResult`.
pub(crate) fn applies(method: &str) -> bool {
    matches!(method, m::TOOLS_CALL | m::PROMPTS_GET | m::RESOURCES_READ)
}

/// The bridging state of one call.
pub(crate) struct Bridge {
    method: String,
    /// The request as the caller made it, resent on every round.
    params: Map<String, Value>,
    headers: ExtraHeaders,
    caller: ClientFacts,
    rounds: usize,
    /// Questions of this round not yet handed to the caller.
    queued: VecDeque<CallEvent>,
    /// Answers of this round, while some are outstanding.
    answers: Option<mpsc::Receiver<InputAnswer>>,
    expected: usize,
    collected: Map<String, Value>,
    state: Option<Value>,
    /// A round was asked: once its answers are in, the request goes again.
    retry_due: bool,
}

impl Bridge {
    pub(crate) fn new(
        method: &str,
        params: Map<String, Value>,
        headers: ExtraHeaders,
        caller: ClientFacts,
    ) -> Bridge {
        Bridge {
            method: method.to_string(),
            params,
            headers,
            caller,
            rounds: 0,
            queued: VecDeque::new(),
            answers: None,
            expected: 0,
            collected: Map::new(),
            state: None,
            retry_due: false,
        }
    }

    /// Reads an `InputRequiredResult`: queues its questions; `Err` when it breaks
    /// the rules or the limits.
    fn ask(&mut self, result: Map<String, Value>) -> Result<(), String> {
        self.rounds += 1;
        if self.rounds > MAX_INPUT_ROUNDS {
            return Err(format!(
                "it asked for client input more than {MAX_INPUT_ROUNDS} times in one call"
            ));
        }
        let requests = match result.get("inputRequests") {
            None => Map::new(),
            Some(Value::Object(r)) => r.clone(),
            Some(_) => return Err("inputRequests is not an object".into()),
        };
        self.state = result.get("requestState").cloned();
        if requests.is_empty() && self.state.is_none() {
            return Err(
                "an InputRequiredResult with neither inputRequests nor requestState".into(),
            );
        }
        if requests.len() > MAX_INPUT_REQUESTS {
            return Err(format!(
                "it asked {} questions at once (at most {MAX_INPUT_REQUESTS} are relayed)",
                requests.len()
            ));
        }
        self.collected.clear();
        self.expected = requests.len();
        let (tx, rx) = mpsc::channel(requests.len().max(1));
        for (key, req) in requests {
            let method = req.get("method").and_then(Value::as_str);
            let Some(method) = method else {
                return Err(format!("inputRequests[{key:?}] has no method"));
            };
            self.queued.push_back(CallEvent::Request {
                method: method.to_string(),
                params: req.get("params").cloned(),
                responder: Responder::retry(key, tx.clone()),
            });
        }
        // With no questions (only a requestState), the retry goes at once.
        self.answers = (self.expected > 0).then_some(rx);
        self.retry_due = true;
        Ok(())
    }

    /// The request for the next round.
    fn retry_params(&mut self) -> Map<String, Value> {
        let mut p = self.params.clone();
        p.insert(
            "inputResponses".into(),
            Value::Object(std::mem::take(&mut self.collected)),
        );
        match self.state.take() {
            Some(state) => p.insert("requestState".into(), state),
            None => p.shift_remove("requestState"),
        };
        p
    }
}

/// `Some(result)` when `raw` is an `InputRequiredResult`.
fn input_required(raw: &RawValue) -> Option<Map<String, Value>> {
    if !raw.get().contains("input_required") {
        return None;
    }
    let map: Map<String, Value> = serde_json::from_str(raw.get()).ok()?;
    (map.get("resultType").and_then(Value::as_str) == Some("input_required")).then_some(map)
}

/// The next event of a bridged call: the upstream's events, its questions one by
/// one, and after the answers the next round, until an outcome that is not an
/// `InputRequiredResult`.
pub(crate) async fn next(attempt: &mut Attempt, b: &mut Bridge) -> CallEvent {
    loop {
        if let Some(ev) = b.queued.pop_front() {
            return ev;
        }
        if let Some(rx) = b.answers.as_mut() {
            let answer = tokio::select! {
                a = rx.recv() => a,
                _ = attempt.expiry.as_mut() => return attempt.timed_out().await,
            };
            match answer {
                Some((key, Ok(raw))) => {
                    let v = serde_json::from_str(raw.get()).unwrap_or(Value::Null);
                    b.collected.insert(key, v);
                    if b.collected.len() < b.expected {
                        continue;
                    }
                    b.answers = None;
                }
                Some((_, Err(error))) => return attempt.end(CallOutcome::Error(error)),
                None => {
                    let upstream = attempt.conn.wire.upstream().to_string();
                    return attempt.end(CallOutcome::Failed(UpstreamError::Cancelled { upstream }));
                }
            }
        }
        if b.retry_due {
            // Every answer is in: the next round.
            b.retry_due = false;
            let params = b.retry_params();
            let conn = attempt.conn.clone();
            let launched = conn
                .launch(
                    &b.method,
                    Some(params),
                    b.headers.clone(),
                    attempt.timeout,
                    Some(&b.caller),
                )
                .await;
            match launched {
                Ok(l) => attempt.resend(l),
                Err(e) => return attempt.end(CallOutcome::Failed(e)),
            }
        }
        match attempt.next().await {
            CallEvent::Done(CallOutcome::Result(raw)) => {
                let Some(result) = input_required(&raw) else {
                    return CallEvent::Done(CallOutcome::Result(raw));
                };
                if let Err(why) = b.ask(result) {
                    let upstream = attempt.conn.wire.upstream().to_string();
                    return attempt.end(CallOutcome::Failed(UpstreamError::protocol(
                        &upstream, &why,
                    )));
                }
            }
            other => return other,
        }
    }
}
