//! `[confirm]`: a human confirms a tool call through the calling client before
//! it is forwarded.
//!
//! - A session-era client that declared form elicitation and accepts an SSE
//!   response is asked with `elicitation/create` on the call's own stream; the
//!   call is forwarded on the same stream once the answer is "accept".
//! - A 2026-07-28 client that declared form elicitation gets an
//!   `InputRequiredResult` whose `confirm` input request is the question; its
//!   retry carries the answer (`inputResponses.confirm`) and a single-use
//!   `requestState` bound to the request and the principal
//!   (`state::held_calls`). When its 2026-07-28 upstream then asks for input,
//!   the upstream's state is wrapped (`confirmed.`, bound the same way,
//!   expiring, single-use) so the retry is not asked about again.
//! - A client that cannot be asked is refused with -32021 naming the missing
//!   capability, or, with `without_elicitation = "allow"`, the call proceeds
//!   unconfirmed. The local operator (`manifold call`) is the human: not asked.
//!
//! Invariants: nothing reaches the upstream before an "accept"; "decline",
//! "cancel", an error answer or no answer within `limits.held_call_ttl` is a
//! tool execution error saying the call was not made; every decision is on
//! the call's audit record (`confirmation`); the question shows the client's
//! own arguments, never an operator's pinned ones.
//!
//! Not here: which calls need confirming (manifold-policy `confirm`).

use bytes::Bytes;
use manifold_audit::{Confirmation, Outcome};
use manifold_catalog::Catalog;
use manifold_config::WithoutElicitation;
use manifold_protocol::jsonrpc;
use manifold_upstream::Responder;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::era::Era;
use crate::exchange::{Caller, Exchange};
use crate::refusal::Refusal;
use crate::relay::{self, Target};
use crate::reply::Reply;
use crate::state::held_calls::{CONFIRMED_PREFIX, CONFIRM_PREFIX};
use crate::state::sessions::ClientSession;

/// The `inputRequests` key of the question for a 2026-07-28 client.
pub const CONFIRM_INPUT_KEY: &str = "confirm";

/// Arguments shown in the question: about this many bytes of values in all,
/// shared between the arguments (every argument's name is always shown).
const SUMMARY_BYTES: usize = 1000;
/// The least shown of any one argument's value.
const MIN_VALUE_BYTES: usize = 24;

/// What the human said.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Decision {
    Accept,
    Decline,
    Cancel,
    /// An error answer, or none in time: the call is not made.
    NoAnswer(String),
}

impl Decision {
    /// From an `ElicitResult` (or the client's error).
    fn from_answer(answer: Result<&Value, String>) -> Decision {
        match answer {
            Err(e) => Decision::NoAnswer(e),
            Ok(v) => match v.get("action").and_then(Value::as_str) {
                Some("accept") => Decision::Accept,
                Some("decline") => Decision::Decline,
                Some("cancel") => Decision::Cancel,
                _ => Decision::NoAnswer("the client's answer had no valid `action`".into()),
            },
        }
    }

    fn audited(&self) -> Confirmation {
        match self {
            Decision::Accept => Confirmation::Accepted,
            Decision::Decline => Confirmation::Declined,
            Decision::Cancel | Decision::NoAnswer(_) => Confirmation::Cancelled,
        }
    }
}

/// Forwards a `tools/call`, asking a human first when `[confirm]` says so;
/// `view` is the caller's catalogue snapshot that resolved the tool.
pub(crate) async fn forward(
    x: &mut Exchange,
    name: &str,
    mut params: Map<String, Value>,
    target: Target,
    view: &Catalog,
) -> Result<Reply, Refusal> {
    let gw = x.gw.clone();
    // A 2026-07-28 retry that answers our question.
    if let Some(decision) = retry_answer(x, &mut params)? {
        return decided(x, name, decision, params, target).await;
    }
    // From the caller's own view (the snapshot that resolved the tool); a tool
    // not found there is asked about, never waved through.
    let needs = needs_confirming(x, view, name);
    if !needs || matches!(x.caller, Caller::Operator(_)) {
        return go(x, name, params, target, needs).await;
    }
    let question = question(x, name, &target, &params);
    match x.caller.clone() {
        Caller::Session(s) if form_elicitation(&s.capabilities) && x.arrival.accepts.stream => {
            Ok(ask_on_stream(x, s, name, question, params, target))
        }
        Caller::Stateless(c) if form_elicitation(&c.capabilities) => {
            let principal = x.principal.audit_name();
            if gw.held.full_for(&principal) {
                return Err(Refusal::HeldCallsFullForPrincipal {
                    limit: gw.held.per_principal,
                });
            }
            let Some(state) = gw.held.ask_confirmation(&c.digest, &principal) else {
                return Err(Refusal::HeldCallsFull { limit: gw.held.max });
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
            Ok(Reply::ok(jsonrpc::response_bytes_from_json(
                &x.rpc_id,
                result.to_string().as_bytes(),
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
                    tool: name.to_string(),
                    why,
                }),
                WithoutElicitation::Allow => {
                    if let Some(o) = x.observation() {
                        o.confirmation = Some(Confirmation::Unconfirmed);
                    }
                    go(x, name, params, target, true).await
                }
            }
        }
    }
}

/// Forwards the call now: its rate-limit places are taken here, after any
/// confirmation, so a call waiting for a human holds none and a declined one
/// costs none. `confirmed`: `[confirm]` covers the call (it was asked about,
/// or let through unasked).
async fn go(
    x: &mut Exchange,
    name: &str,
    params: Map<String, Value>,
    mut target: Target,
    confirmed: bool,
) -> Result<Reply, Refusal> {
    super::call::rate_limit(x, name, &mut target).await?;
    let modern = target.upstream.is_modern();
    let reply = relay::forward(x, params, target).await?;
    // A confirmed call whose 2026-07-28 upstream asks for input: its state is
    // wrapped, so the retry goes on without a new question (and cannot be
    // used to skip one: the wrapper is bound to this request).
    let digest = match &x.caller {
        Caller::Stateless(c) if modern && confirmed => c.digest.clone(),
        _ => return Ok(reply),
    };
    Ok(wrap_input_round(x, &digest, reply))
}

fn needs_confirming(x: &Exchange, view: &Catalog, name: &str) -> bool {
    let rules = x.gw.live().confirm.clone();
    !rules.is_empty()
        && view
            .tools
            .get(name)
            .is_none_or(|e| rules.needs(name, e.json()))
}

/// Rewrites the `requestState` of an `InputRequiredResult` in `reply`.
fn wrap_input_round(x: &Exchange, digest: &str, reply: Reply) -> Reply {
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
            let Some(wrapped) = x.gw.held.wrap_confirmed(digest, &principal, &inner) else {
                tracing::warn!(limit = x.gw.held.max,
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

/// The human's answer a 2026-07-28 retry carries for our question (its state
/// and answer are removed from `params`); `None` for any other request.
fn retry_answer(
    x: &Exchange,
    params: &mut Map<String, Value>,
) -> Result<Option<Decision>, Refusal> {
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
        .map(|s| x.gw.held.unwrap_confirmed(s, &c.digest).map(str::to_string));
    match wrapped {
        Some(Ok(inner)) => {
            params.insert("requestState".into(), Value::String(inner));
            return Ok(Some(Decision::Accept));
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
    x.gw.held
        .take_confirmation(state, &c.digest)
        .map_err(Refusal::InvalidRequestState)?;
    // Shifted out, not swapped: the members forwarded keep their order.
    let responses = params.shift_remove("inputResponses");
    params.shift_remove("requestState");
    let answer = responses
        .as_ref()
        .and_then(|r| r.get(CONFIRM_INPUT_KEY))
        .ok_or_else(|| "the retry carried no inputResponses.confirm".to_string());
    Ok(Some(Decision::from_answer(answer)))
}

/// Goes on as the human said: forwards, or answers that the call was not made.
async fn decided(
    x: &mut Exchange,
    name: &str,
    decision: Decision,
    params: Map<String, Value>,
    target: Target,
) -> Result<Reply, Refusal> {
    if let Some(o) = x.observation() {
        o.confirmation = Some(decision.audited());
    }
    if decision == Decision::Accept {
        return go(x, name, params, target, true).await;
    }
    let bytes = not_made(x, name, &decision);
    if let Some(o) = x.obs.take() {
        o.finish(Outcome::ToolError, bytes.len()).await;
    }
    Ok(Reply::ok(bytes))
}

/// The tool execution error for a call the human did not let through.
fn not_made(x: &Exchange, name: &str, decision: &Decision) -> Vec<u8> {
    let text = match decision {
        Decision::Decline => format!("The user declined to run `{name}`; it was not called."),
        Decision::Cancel => format!(
            "The user dismissed the confirmation for `{name}` without choosing; it was not called."
        ),
        Decision::NoAnswer(why) => {
            format!("`{name}` was not called: its confirmation got no answer ({why}).")
        }
        Decision::Accept => String::new(),
    };
    let mut result = json!({"content": [{"type": "text", "text": text}], "isError": true});
    if x.era == Era::Stateless {
        result["resultType"] = json!("complete");
    }
    jsonrpc::response_bytes_from_json(&x.rpc_id, result.to_string().as_bytes())
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
fn question(x: &Exchange, name: &str, target: &Target, params: &Map<String, Value>) -> Value {
    let pinned: Vec<&str> = x
        .obs
        .as_ref()
        .and_then(|o| o.injected.as_ref())
        .and_then(Value::as_object)
        .map(|p| p.keys().map(String::as_str).collect())
        .unwrap_or_default();
    let args = params
        .get("arguments")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let summary = summarise(&args, &pinned);
    let upstream = target.upstream.name();
    let own = target.original.as_deref().unwrap_or(name);
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

/// Session era: opens the call's stream with the question and answers on it,
/// from a gateway task that owns the (detached) exchange until the end.
fn ask_on_stream(
    x: &mut Exchange,
    session: Arc<ClientSession>,
    name: &str,
    question: Value,
    params: Map<String, Value>,
    target: Target,
) -> Reply {
    let gw = x.gw.clone();
    let (tx, rx) = mpsc::channel::<Bytes>(gw.cfg().limits.stream_queue);
    let mut detached = x.detach();
    let name = name.to_string();
    gw.tasks.clone().spawn(async move {
        let gw = detached.gw.clone();
        let (responder, answer) = Responder::local();
        let Ok(id) = session.add_pending(responder) else {
            let d = Decision::NoAnswer("too many requests await this client's answers".into());
            finish_on_stream(&mut detached, &name, d, params, target, &tx).await;
            return;
        };
        // `notifications/cancelled` for the call reaches it while the human
        // decides, like any call in flight.
        let cancel = session
            .begin_call(detached.rpc_id.clone())
            .unwrap_or_else(|| {
                let t = CancellationToken::new();
                t.cancel();
                t
            });
        let request = json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create", "params": question});
        let bound = gw.cfg().limits.stream_write_timeout;
        let sent = tokio::time::timeout(bound, tx.send(Bytes::from(request.to_string()))).await;
        let decision = if !matches!(sent, Ok(Ok(()))) {
            None
        } else {
            tokio::select! {
                a = answer => Some(match a {
                    Ok(Ok(raw)) => Decision::from_answer(serde_json::from_str(raw.get()).as_ref().map_err(|e| e.to_string())),
                    Ok(Err(e)) => Decision::NoAnswer(format!("the client answered with an error: {}", e.get())),
                    Err(_) => Decision::NoAnswer("the question was dropped".into()),
                }),
                _ = tokio::time::sleep(gw.held.ttl) => Some(Decision::NoAnswer(format!("none within {:?} (limits.held_call_ttl)", gw.held.ttl))),
                _ = cancel.cancelled() => None,
                _ = session.ended.cancelled() => None,
                _ = gw.stop.cancelled() => None,
                _ = tx.closed() => None,
            }
        };
        session.forget_pending(&id);
        // The forward registers the call again, with its own token.
        session.end_call(&detached.rpc_id);
        match decision {
            Some(d) => finish_on_stream(&mut detached, &name, d, params, target, &tx).await,
            // The client or the gateway went away: nothing was called.
            None => {
                if let Some(o) = detached.obs.take() {
                    o.finish(Outcome::Cancelled, 0).await;
                }
            }
        }
    });
    Reply::Stream(rx)
}

/// Writes the call's answer (forwarded on "accept") to the stream.
async fn finish_on_stream(
    x: &mut Exchange,
    name: &str,
    decision: Decision,
    params: Map<String, Value>,
    target: Target,
    tx: &mpsc::Sender<Bytes>,
) {
    let reply = match decided(x, name, decision, params, target).await {
        Ok(reply) => reply,
        Err(r) => {
            let reply = r.reply(Some(&x.rpc_id), x.era);
            if let Some(o) = x.obs.take() {
                o.finish(r.outcome(), reply.len()).await;
            }
            reply
        }
    };
    match reply {
        Reply::Message { bytes, .. } => {
            let _ = tx.send(bytes).await;
        }
        Reply::Stream(mut more) => {
            while let Some(m) = more.recv().await {
                if tx.send(m).await.is_err() {
                    break;
                }
            }
        }
        Reply::Accepted | Reply::Ended => {}
    }
}
