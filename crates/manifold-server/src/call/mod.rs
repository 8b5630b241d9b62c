//! The call chain: every forwarded request (`tools/call`, `prompts/get`,
//! `resources/read`, `completion/complete`, the Tasks and Skills extensions'
//! requests) goes through the same named steps,
//! one file each, in one order — [`STEPS`]:
//!
//! ```text
//! resolve → resume → validate → confirm → limits → credentials → relay → shape → check output → finish
//! ```
//!
//! | step | file | what |
//! |---|---|---|
//! | resolve | `resolve.rs` | the name or URI to its upstream in the caller's view; the request rewritten for it |
//! | resume | `resume.rs` | (2026-07-28) a retry carrying a held call's state goes on as that call |
//! | validate | `validate.rs` | the arguments fit the tool's `inputSchema`; `x-mcp-header` arguments fit their headers |
//! | confirm | `confirm.rs` | `[confirm]`: a human accepts the call first |
//! | limits | `limits.rs` | `[[rate_limit]]` places; the audit log can keep the record |
//! | credentials | `credentials/` | a `token_exchange` upstream gets the caller's exchanged token; a `user_oauth`/`user_secret` upstream the caller's own account, or the caller a connect link |
//! | relay | `relay/` | dispatch; one message, a stream, or an input round back to the client |
//! | shape | `shape.rs` | what the answer does with a task (the Tasks extension) |
//! | check output | `check_output.rs` | `[validation] output` on the result |
//! | finish | `finish.rs` | the answer recorded once, then sent |
//!
//! Each function below runs the steps its method needs, in this order; the
//! last three run on the relay's answer, wherever it arrives (one message,
//! the end of a stream, a held call's last round): [`Answering::answer`], the
//! chain's tail, is below too. No step imports another, earlier or later:
//! only this file composes them (`tests/architecture.rs` checks), and what
//! the steps share is `context` (the [`Call`] and its [`Answering`]). Why this order: each step
//! is cheaper or more fundamental than the next, and nothing that costs the
//! caller something (a human's attention, a rate-limit place, a token
//! exchange) is spent on a call a cheaper step refuses. `tests/architecture.rs`
//! checks this list against the files of this folder and the order of the
//! calls below.
//!
//! Retries and the circuit breaker are not a step: they are part of relay
//! (`relay/repeat.rs` decides which calls may be repeated; manifold-upstream
//! sends them again), because a call may only be sent again before anything
//! of its answer has reached the client, and only dispatch sees that point.
//! An open breaker's refusal is a tool error like any upstream failure.
//!
//! Invariants: a step refuses by returning a [`Refusal`] (a tool error is one
//! of its family); a step records what it decides in the [`Call`]'s `facts`,
//! never in the observation, and the facts reach the audit record once, where
//! the call ends (step finish; [`Call::refused`], which the composers below
//! and the relay call on a refusal before dispatch); the observation is
//! finished by the pipeline for an answer made here, and by the relay's
//! [`Answering`] once it has dispatched; what outlives the request's handler (the confirm step's wait
//! on a stream, a stream's pump and its drain, a coalesced call, a held input
//! round) goes on through the same steps and ends in the same tail.
//!
//! Not here: the method table (`pipeline/route.rs`), answers Manifold gives
//! itself (`handlers`).

mod check_output;
mod confirm;
mod context;
mod credentials;
mod finish;
mod limits;
mod relay;
pub(crate) mod resolve;
mod resume;
mod shape;
mod validate;

use bytes::Bytes;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use crate::refusal::Refusal;
use crate::reply::Reply;
use crate::request::Request;
use confirm::Asked;
use context::TaskHook;
use context::{Answering, Call};
pub(crate) use limits::search as search_places;
use manifold_upstream::CallOutcome;
pub use relay::input_required::GATHER_WINDOW;

/// The chain's steps, in order: a file (or folder) of `src/call/` each
/// (`tests/architecture.rs` holds the folder and the calls to this list).
pub const STEPS: [&str; 10] = [
    "resolve",
    "resume",
    "validate",
    "confirm",
    "limits",
    "credentials",
    "relay",
    "shape",
    "check_output",
    "finish",
];

/// `tools/call`: every step.
pub(crate) async fn tool(x: &mut Request, params: Map<String, Value>) -> Result<Reply, Refusal> {
    let mut call = resolve::tool(x, params)?;
    let asked = validate::arguments(x, &mut call).and_then(|()| confirm::ask(x, &mut call));
    match asked {
        Ok(Asked::Go) => confirmed(x, call).await,
        Ok(Asked::Answered(reply)) => Ok(reply),
        Ok(Asked::OnStream(question)) => Ok(on_stream(x, call, question)),
        Err(r) => Err(call.refused(x, r)),
    }
}

/// A tool call past confirmation (now, or once a human accepted it on its
/// stream).
async fn confirmed(x: &mut Request, call: Call) -> Result<Reply, Refusal> {
    dispatch(x, call, true).await
}

/// The steps from limits on (`limits`: whether the method takes rate-limit
/// places); a refusal notes what the call decided on the request's record.
async fn dispatch(x: &mut Request, mut call: Call, limits: bool) -> Result<Reply, Refusal> {
    let ready = match limits {
        true => limits::take(x, &mut call).await,
        false => Ok(()),
    };
    let ready = match ready {
        Ok(()) => credentials::attach(x, &mut call).await,
        Err(r) => Err(r),
    };
    match ready {
        Ok(()) => relay::forward(x, call).await,
        Err(r) => Err(call.refused(x, r)),
    }
}

/// Session era: the question goes out on the call's stream, and a task of the
/// gateway that owns the (detached) request waits for the human and goes on
/// as they said.
fn on_stream(x: &mut Request, mut call: Call, question: confirm::Question) -> Reply {
    let (tx, rx) = mpsc::channel::<Bytes>(x.gw.cfg().limits.stream_queue);
    let mut detached = x.detach();
    x.gw.life.background.clone().spawn(async move {
        // `None`: the client or the gateway went away, and nothing was called.
        let result = match confirm::wait(&detached, question, &tx).await {
            Some(verdict) => Some(match confirm::decided(&mut call, verdict) {
                Ok(()) => confirmed(&mut detached, call).await,
                Err(r) => Err(call.refused(&mut detached, r)),
            }),
            None => None,
        };
        finish::on_stream(&mut detached, result, &tx).await;
    });
    Reply::Stream(rx)
}

/// `prompts/get`: no schema to check, nothing to confirm or rate-limit.
pub(crate) async fn prompt(x: &mut Request, params: Map<String, Value>) -> Result<Reply, Refusal> {
    let mut call = resolve::prompt(x, params)?;
    match validate::arguments(x, &mut call) {
        Ok(()) => dispatch(x, call, true).await,
        Err(r) => Err(call.refused(x, r)),
    }
}

/// `resources/read`.
pub(crate) async fn resource(
    x: &mut Request,
    params: Map<String, Value>,
) -> Result<Reply, Refusal> {
    let call = resolve::resource(x, params)?;
    dispatch(x, call, true).await
}

/// `completion/complete`.
pub(crate) async fn completion(
    x: &mut Request,
    params: Map<String, Value>,
) -> Result<Reply, Refusal> {
    let call = resolve::completion(x, params)?;
    dispatch(x, call, true).await
}

/// `skills/get` and `resources/directory/read` (the Skills extension): to
/// the upstream that serves the skill or the directory.
pub(crate) async fn skills(x: &mut Request, params: Map<String, Value>) -> Result<Reply, Refusal> {
    let call = if x.method == manifold_protocol::methods::SKILLS_GET {
        resolve::skill(x, params)?
    } else {
        resolve::directory(x, params)?
    };
    dispatch(x, call, true).await
}

/// `tasks/get`, `tasks/update`, `tasks/cancel` (the Tasks extension): to the
/// upstream that owns the task, with the caller's credentials; nothing to
/// validate, confirm or rate-limit (all applied when the task was created).
pub(crate) async fn task(x: &mut Request, params: Map<String, Value>) -> Result<Reply, Refusal> {
    let call = resolve::task(x, params).await?;
    dispatch(x, call, false).await
}

/// A 2026-07-28 retry carrying the `requestState` of a held call: resolved
/// in the caller's view now, then resumed (`None`: not such a retry, or its
/// upstream is stateless and the state is its own; the request goes on to its
/// handler). A retry whose target left the view ends its held call and goes
/// on to the handler, which answers as for any hidden item. The held call's
/// record is the call's; a retry that resumed nothing (a forged, expired or
/// reused state) is its own request and gets its own record.
pub(crate) async fn held(
    x: &mut Request,
    params: &Map<String, Value>,
) -> Option<Result<Reply, Refusal>> {
    if !crate::state::held_calls::is_retry(params) {
        return None;
    }
    match resolve::upstream_of(&x.gw, &x.access(), &x.method, params) {
        Some(upstream) if upstream.is_stateless() => return None,
        Some(_) => {}
        None => {
            resume::abandon(x, params);
            return None;
        }
    }
    let reply = resume::resume(x, params).await?;
    if let (Err(_), Some(o)) = (&reply, x.observation()) {
        o.audit(params);
    }
    Some(reply)
}

impl Answering {
    /// The chain's tail, on an answer wherever it arrives (one message, the
    /// end of a stream, a held call's last round): shape (a task), check
    /// output, finish. Returns the answer's bytes, once recorded.
    pub(crate) async fn answer(&mut self, outcome: CallOutcome) -> Bytes {
        if let CallOutcome::Failed(e) = &outcome {
            if e.is_caller_refused() {
                let principal = self.obs.as_ref().map(|o| o.principal().to_string());
                credentials::refused(&self.gw, &self.upstream, principal.as_deref()).await;
            }
        }
        let hook = std::mem::replace(&mut self.task, TaskHook::None);
        let answerer = shape::Answerer {
            gw: &self.gw,
            upstream: &self.upstream,
            obs: self.obs.as_ref(),
            facts: &mut self.facts,
            member: self.member,
        };
        let shaped = shape::shape(hook, answerer, outcome).await;
        let outcome = match shaped.outcome {
            Ok(o) => o,
            Err(r) => return self.refuse(r).await.into_bytes(),
        };
        let outcome = match (&self.output_check, shaped.skip_check) {
            (Some(check), false) => check_output::apply(&self.gw, check, &self.upstream, outcome),
            _ => outcome,
        };
        let outcome = match self.expected.take() {
            Some(expected) => match check_output::skill_file(&expected, outcome) {
                Ok(o) => o,
                Err(r) => return self.refuse(r).await.into_bytes(),
            },
            None => outcome,
        };
        let recorded = shaped
            .recorded
            .unwrap_or_else(|| crate::observe::outcome_of(&outcome));
        finish::answered(self, outcome, recorded).await
    }
}
