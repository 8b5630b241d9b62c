//! Step confirm (`[confirm]`): a human confirms a tool call through the
//! calling client before it goes on.
//!
//! - A session-era client that declared form elicitation and accepts an SSE
//!   response is asked with `elicitation/create` on the call's own stream
//!   ([`Asked::OnStream`]; the chain waits for the answer on a task of its
//!   own, [`wait`], and goes on as the human said, [`decided`]).
//! - A 2026-07-28 client that declared form elicitation gets an
//!   `InputRequiredResult` whose `confirm` input request is the question; its
//!   retry carries the answer (`inputResponses.confirm`) and a single-use
//!   `requestState` bound to the request and the principal
//!   (`state::held_calls`). When its 2026-07-28 upstream then asks for input,
//!   the upstream's state is wrapped ([`wrap_input_round`]: `confirmed.`,
//!   bound the same way, expiring, single-use) so the retry is not asked about
//!   again.
//! - A client that cannot be asked is refused with -32021 naming the missing
//!   capability, or, with `without_elicitation = "allow"`, the call goes on
//!   unconfirmed. The local operator (`manifold call`) is the human: not asked.
//!
//! Invariants: nothing goes on before an "accept"; "decline", "cancel", an
//! error answer or no answer within `limits.held_call_ttl` is a tool execution
//! error saying the call was not made; every verdict is on the call's audit
//! record (`confirmation`); the question shows the client's own arguments,
//! never an operator's pinned ones.
//!
//! Not here: which calls need confirming (manifold-policy `confirm`), what
//! happens after an "accept" (the chain, `call/mod.rs`).

use bytes::Bytes;
use manifold_audit::Confirmation;
use manifold_config::WithoutElicitation;
use manifold_protocol::jsonrpc;
use manifold_upstream::Responder;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::context::Call;
use crate::refusal::{NotConfirmed, Refusal, ToolError};
use crate::reply::Reply;
use crate::request::{Caller, Request};
use crate::state::held_calls::{CONFIRMED_PREFIX, CONFIRM_PREFIX};
use crate::state::sessions::ClientSession;

/// The `inputRequests` key of the question for a 2026-07-28 client.
const CONFIRM_INPUT_KEY: &str = "confirm";

/// Arguments shown in the question: about this many bytes of values in all,
/// shared between the arguments (every argument's name is always shown).
const SUMMARY_BYTES: usize = 1000;
/// The least shown of any one argument's value.
const MIN_VALUE_BYTES: usize = 24;

/// What the human said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    Accept,
    Refuse(NotConfirmed),
}

impl Verdict {
    /// From an `ElicitResult` (or the client's error).
    fn from_answer(answer: Result<&Value, String>) -> Verdict {
        match answer {
            Err(e) => Verdict::Refuse(NotConfirmed::NoAnswer(e)),
            Ok(v) => match v.get("action").and_then(Value::as_str) {
                Some("accept") => Verdict::Accept,
                Some("decline") => Verdict::Refuse(NotConfirmed::Declined),
                Some("cancel") => Verdict::Refuse(NotConfirmed::Dismissed),
                _ => Verdict::Refuse(NotConfirmed::NoAnswer(
                    "the client's answer had no valid `action`".into(),
                )),
            },
        }
    }

    fn audited(&self) -> Confirmation {
        match self {
            Verdict::Accept => Confirmation::Accepted,
            Verdict::Refuse(NotConfirmed::Declined) => Confirmation::Declined,
            Verdict::Refuse(_) => Confirmation::Cancelled,
        }
    }
}

/// What the confirm step did with a call.
pub(crate) enum Asked {
    /// It goes on: confirmed, or not in need of it.
    Go,
    /// It is answered now, without going on (a 2026-07-28 client's question).
    Answered(Reply),
    /// A human is to be asked on the call's stream ([`wait`]).
    OnStream(Question),
}

/// A question to ask on a session's stream.
pub(crate) struct Question {
    session: Arc<ClientSession>,
    params: Value,
}

/// Asks a human when `[confirm]` says so, or takes the answer a 2026-07-28
/// retry carries.
pub(crate) fn ask(x: &mut Request, call: &mut Call) -> Result<Asked, Refusal> {
    let gw = x.gw.clone();
    // A 2026-07-28 retry that answers our question.
    if let Some(verdict) = retry_answer(x, &mut call.params)? {
        decided(call, verdict)?;
        return Ok(Asked::Go);
    }
    // From the caller's own view (the snapshot that resolved the tool); a tool
    // not found there is asked about, never waved through.
    let needs = needs_confirming(x, call);
    if !needs || matches!(x.caller, Caller::Operator(_)) {
        call.confirmed = needs;
        return Ok(Asked::Go);
    }
    let question = question(x, call);
    match x.caller.clone() {
        Caller::Session(session)
            if form_elicitation(&session.capabilities) && x.arrival.accepts.stream =>
        {
            Ok(Asked::OnStream(Question {
                session,
                params: question,
            }))
        }
        Caller::Stateless(c) if form_elicitation(&c.capabilities) => {
            let principal = x.principal.audit_name();
            if gw.tables.held.full_for(&principal) {
                return Err(Refusal::HeldCallsFullForPrincipal {
                    limit: gw.tables.held.per_principal,
                });
            }
            let Some(state) = gw.tables.held.ask_confirmation(&c.digest, &principal) else {
                return Err(Refusal::HeldCallsFull {
                    limit: gw.tables.held.max,
                });
            };
            // The retry carrying the answer is the call's record.
            if let Some(o) = x.observation() {
                o.not_audited();
            }
            let result = json!({
                "resultType": "input_required",
                "inputRequests": {CONFIRM_INPUT_KEY: {"method": "elicitation/create", "params": question}},
                "requestState": state,
            });
            Ok(Asked::Answered(Reply::ok(
                jsonrpc::response_bytes_from_json(&x.rpc_id, result.to_string().as_bytes()),
            )))
        }
        caller => {
            let why = match caller {
                Caller::Session(_) if !x.arrival.accepts.stream => {
                    "the client did not accept an SSE response, so it cannot be asked".to_string()
                }
                _ => "the client did not declare the `elicitation` capability (form mode), so it cannot be asked".to_string(),
            };
            match gw.live().confirm.without_elicitation {
                WithoutElicitation::Refuse => Err(Refusal::ConfirmationUnavailable {
                    tool: call.exposed.clone(),
                    why,
                }),
                WithoutElicitation::Allow => {
                    call.facts.confirmation = Some(Confirmation::Unconfirmed);
                    call.confirmed = true;
                    Ok(Asked::Go)
                }
            }
        }
    }
}

/// The human's verdict, on the call's record: an "accept" lets the call go on
/// (confirmed), anything else is the tool error saying it was not made.
pub(crate) fn decided(call: &mut Call, verdict: Verdict) -> Result<(), Refusal> {
    call.facts.confirmation = Some(verdict.audited());
    match verdict {
        Verdict::Accept => {
            call.confirmed = true;
            Ok(())
        }
        Verdict::Refuse(why) => Err(Refusal::Tool(ToolError::NotConfirmed {
            tool: call.exposed.clone(),
            why,
        })),
    }
}

/// Session era: sends the question on the call's stream (`tx`) and waits for
/// the human's answer, at most `limits.held_call_ttl`; `None` when the client
/// cancelled or left, the session ended or the gateway stops (nothing was
/// called). `x` is the request detached for the stream's task.
pub(crate) async fn wait(
    x: &Request,
    question: Question,
    tx: &mpsc::Sender<Bytes>,
) -> Option<Verdict> {
    let Question { session, params } = question;
    let gw = &x.gw;
    let (responder, answer) = Responder::local();
    let Ok(id) = session.add_pending(responder) else {
        return Some(Verdict::Refuse(NotConfirmed::NoAnswer(
            "too many requests await this client's answers".into(),
        )));
    };
    // `notifications/cancelled` for the call reaches it while the human
    // decides, like any call in flight.
    let cancel = session.begin_call(x.rpc_id.clone()).unwrap_or_else(|| {
        let t = CancellationToken::new();
        t.cancel();
        t
    });
    let request =
        json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create", "params": params});
    let bound = gw.cfg().limits.stream_write_timeout;
    let sent = tokio::time::timeout(bound, tx.send(Bytes::from(request.to_string()))).await;
    let verdict = if !matches!(sent, Ok(Ok(()))) {
        None
    } else {
        tokio::select! {
            a = answer => Some(match a {
                Ok(Ok(raw)) => Verdict::from_answer(serde_json::from_str(raw.get()).as_ref().map_err(|e| e.to_string())),
                Ok(Err(e)) => Verdict::Refuse(NotConfirmed::NoAnswer(format!("the client answered with an error: {}", e.get()))),
                Err(_) => Verdict::Refuse(NotConfirmed::NoAnswer("the question was dropped".into())),
            }),
            _ = tokio::time::sleep(gw.tables.held.ttl) => Some(Verdict::Refuse(NotConfirmed::NoAnswer(format!("none within {:?} (limits.held_call_ttl)", gw.tables.held.ttl)))),
            _ = cancel.cancelled() => None,
            _ = session.ended.cancelled() => None,
            _ = gw.life.stop.cancelled() => None,
            _ = tx.closed() => None,
        }
    };
    session.forget_pending(&id);
    // The relay registers the call again, with its own token.
    session.end_call(&x.rpc_id);
    verdict
}

fn needs_confirming(x: &Request, call: &Call) -> bool {
    let rules = x.gw.live().confirm.clone();
    !rules.is_empty()
        && call.view.as_ref().is_none_or(|view| {
            view.tools
                .get(&call.exposed)
                .is_none_or(|e| rules.needs(&call.exposed, e.json()))
        })
}

/// The human's answer a 2026-07-28 retry carries for our question (its state
/// and answer are removed from `params`); `None` for any other request.
fn retry_answer(x: &Request, params: &mut Map<String, Value>) -> Result<Option<Verdict>, Refusal> {
    let Caller::Stateless(c) = &x.caller else {
        return Ok(None);
    };
    // The retry of a confirmed call's own input round (a 2026-07-28 upstream
    // asked something): the upstream's state goes back to it, no new
    // question — once, before the wrapper expires, for this caller only.
    let wrapped = params
        .get("requestState")
        .and_then(Value::as_str)
        .filter(|s| s.starts_with(CONFIRMED_PREFIX))
        .map(|s| {
            x.gw.tables
                .held
                .unwrap_confirmed(s, &c.digest)
                .map(str::to_string)
        });
    match wrapped {
        Some(Ok(inner)) => {
            params.insert("requestState".into(), Value::String(inner));
            return Ok(Some(Verdict::Accept));
        }
        Some(Err(why)) => return Err(Refusal::InvalidRequestState(why)),
        None => {}
    }
    let Some(state) = params
        .get("requestState")
        .and_then(Value::as_str)
        .filter(|s| s.starts_with(CONFIRM_PREFIX))
    else {
        return Ok(None);
    };
    x.gw.tables
        .held
        .take_confirmation(state, &c.digest)
        .map_err(Refusal::InvalidRequestState)?;
    // Shifted out, not swapped: the members forwarded keep their order.
    let responses = params.shift_remove("inputResponses");
    params.shift_remove("requestState");
    let answer = responses
        .as_ref()
        .and_then(|r| r.get(CONFIRM_INPUT_KEY))
        .ok_or_else(|| "the retry carried no inputResponses.confirm".to_string());
    Ok(Some(Verdict::from_answer(answer)))
}

/// Whether declared client capabilities allow a form elicitation (`{}` is
/// form-only, as before modes existed).
fn form_elicitation(capabilities: &Map<String, Value>) -> bool {
    match capabilities.get("elicitation") {
        Some(Value::Object(e)) => e.is_empty() || e.contains_key("form"),
        _ => false,
    }
}

/// The `elicitation/create` params: which tool, which upstream, the client's
/// arguments summarised; accept or decline, nothing to fill in.
fn question(x: &Request, call: &Call) -> Value {
    let pinned: Vec<&str> = call
        .facts
        .injected
        .as_ref()
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let args = call
        .params
        .get("arguments")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let summary = summarise(&args, &pinned);
    let name = &call.exposed;
    let upstream = call.upstream.name();
    let own = call.facts.original.as_deref().unwrap_or(name);
    let message = format!(
        "Confirm this tool call before it runs.\n\nTool: {name} (`{own}` on upstream `{upstream}`)\nArguments:{summary}\n\nAccept to run it; decline to stop it."
    );
    let mut q =
        json!({"message": message, "requestedSchema": {"type": "object", "properties": {}}});
    // `mode` arrived with 2025-11-25; older clients know only form requests.
    let modes = match &x.caller {
        Caller::Session(s) => s.protocol_version.as_str() >= "2025-11-25",
        _ => true,
    };
    if modes {
        q["mode"] = json!("form");
    }
    q
}

/// Every argument the client sent, one per line in name order (so none can
/// hide behind another), each value cut to its share of [`SUMMARY_BYTES`].
fn summarise(args: &Map<String, Value>, pinned: &[&str]) -> String {
    let mut keys: Vec<&String> = args
        .keys()
        .filter(|k| !pinned.contains(&k.as_str()))
        .collect();
    keys.sort();
    if keys.is_empty() {
        return " (none)".into();
    }
    let share = (SUMMARY_BYTES / keys.len()).max(MIN_VALUE_BYTES);
    keys.iter()
        .map(|k| {
            let mut v = args[k.as_str()].to_string();
            if v.len() > share {
                let mut end = share;
                while !v.is_char_boundary(end) {
                    end -= 1;
                }
                v.truncate(end);
                v.push_str("… (cut)");
            }
            format!("\n  {k}: {v}")
        })
        .collect()
}
