//! Step finish, for answers that arrive after the handler has returned: the
//! upstream's answer (one message, the end of a stream, a held call's last
//! round), a cancellation, a client that left, an expired input round, and a
//! call confirmed on its stream. [`Answering`] is who gets a call's answer and
//! how it is recorded; it rides from the relay into a stream's pump or a held
//! call's holder, and finishes the request's observation exactly once.
//!
//! Invariants: [`record`] is the one place here an observation is finished
//! (the other is the pipeline's, for answers made on the request's own task);
//! an answer is checked (`check_output`) and its URIs learned before it is
//! recorded, and recorded before its bytes go out; bytes come from the
//! refusal table or are the upstream's own, decorated for the era.
//!
//! Not here: what the answer is (the relay), the metrics and the audit record
//! themselves (`observe`).

use bytes::Bytes;
use manifold_audit::Outcome;
use manifold_protocol::{jsonrpc, results, RequestId};
use manifold_upstream::{CallOutcome, UpstreamError};
use std::sync::Arc;
use tokio::sync::mpsc;

use super::check_output;
use super::context::{Expected, OutputCheck, ResultShape, TaskHook};
use super::relay::tasks;
use crate::era::Era;
use crate::observe::{outcome_of, Observed};
use crate::refusal::{Refusal, ToolError};
use crate::reply::Reply;
use crate::request::{Caller, Request};
use crate::state::Gateway;

/// Finishes `obs` (if it is still to be finished) with `outcome` and the
/// answer's size.
async fn record(obs: Option<Observed>, outcome: Outcome, bytes: usize) {
    if let Some(o) = obs {
        o.finish(outcome, bytes).await;
    }
}

/// Who gets a call's answer and how it is recorded: what the relay, a pump
/// and the input bridge share. Holds the request's observation until it is
/// finished.
pub(crate) struct Answering {
    /// `upstream.call`: closes when the answer is recorded (this drops).
    pub span: tracing::Span,
    pub gw: Arc<Gateway>,
    pub caller: Caller,
    pub upstream: Arc<str>,
    pub id: RequestId,
    pub shape: ResultShape,
    pub era: Era,
    pub obs: Option<Observed>,
    /// The exposed tool whose `outputSchema` the result is checked against.
    pub output_check: Option<OutputCheck>,
    /// Rate-limit places held until the answer (dropped with this).
    pub permit: Option<manifold_policy::Permit>,
    /// What the answer does with a task (the Tasks extension).
    pub task: TaskHook,
    /// A skill file's read: the digest its bytes are checked against.
    pub expected: Option<Expected>,
    /// The pool member that answers, when the upstream is a pool (a task
    /// made there lives there).
    pub member: Option<usize>,
}

impl Answering {
    /// Records an answer, then returns its bytes. The response waits for its audit
    /// record. URIs in a result are learned first, so a client's `resources/read`
    /// of a link it was just given reaches its owner.
    pub(crate) async fn answer(&mut self, outcome: CallOutcome) -> Bytes {
        let hook = std::mem::replace(&mut self.task, TaskHook::None);
        let answerer = tasks::Answerer {
            gw: &self.gw,
            upstream: &self.upstream,
            obs: self.obs.as_mut(),
            member: self.member,
        };
        let shaped = tasks::shape(hook, answerer, outcome).await;
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
        let recorded = shaped.recorded.unwrap_or_else(|| outcome_of(&outcome));
        let bytes = match outcome {
            CallOutcome::Result(raw) => {
                let raw = self.gw.exposed_result(&self.upstream, raw);
                self.gw.learned.learn(&self.upstream, &raw);
                Bytes::from(match (self.era, self.shape) {
                    (Era::Stateless, ResultShape::Read) => {
                        let text = results::with_read_hints(raw.get());
                        jsonrpc::response_bytes_from_json(&self.id, text.as_bytes())
                    }
                    (Era::Stateless, _) => {
                        let text = results::with_result_type(raw.get());
                        jsonrpc::response_bytes_from_json(&self.id, text.as_bytes())
                    }
                    (Era::Session, _) => jsonrpc::response_bytes(&self.id, &raw),
                })
            }
            CallOutcome::Error(raw) => Bytes::from(jsonrpc::error_bytes_raw(&self.id, &raw)),
            CallOutcome::Failed(e) => self.failure(e).reply(Some(&self.id), self.era).into_bytes(),
        };
        record(self.obs.take(), recorded, bytes.len()).await;
        bytes
    }

    /// How an upstream that could not be asked reaches the client: a tool
    /// error a model reads, or a JSON-RPC error.
    fn failure(&self, e: UpstreamError) -> Refusal {
        match self.shape {
            ResultShape::Tool => Refusal::Tool(ToolError::Upstream(e)),
            ResultShape::Rpc | ResultShape::Read => Refusal::Upstream(e),
        }
    }

    /// Answers with a refusal (recorded with its outcome).
    pub(crate) async fn refuse(&mut self, r: Refusal) -> Reply {
        let reply = r.reply(Some(&self.id), self.era);
        record(self.obs.take(), r.outcome(), reply.len()).await;
        reply
    }

    /// The call ended without an answer to send: cancelled by the client, its
    /// stream closed, the gateway stopping, an input round not retried.
    pub(crate) async fn cancelled(&mut self) {
        record(self.obs.take(), Outcome::Cancelled, 0).await;
    }

    /// A copy that takes over the observation (which is finished once).
    pub(crate) fn hand_over(&mut self) -> Answering {
        Answering {
            span: self.span.clone(),
            gw: self.gw.clone(),
            caller: self.caller.clone(),
            upstream: self.upstream.clone(),
            id: self.id.clone(),
            shape: self.shape,
            era: self.era,
            obs: self.obs.take(),
            output_check: self.output_check.clone(),
            permit: self.permit.take(),
            task: std::mem::replace(&mut self.task, TaskHook::None),
            expected: self.expected.take(),
            member: self.member,
        }
    }
}

/// A task id that opened for its owner but is past its expiry: its end is
/// recorded as `expired` (once), and the refusal says so.
pub(crate) async fn task_expired(
    x: &Request,
    client_id: &str,
    facts: &crate::state::tasks::TaskFacts,
) -> Refusal {
    let end = crate::observe::TaskEnd {
        client_record_id: crate::state::tasks::record_id(client_id),
        facts,
        outcome: Outcome::Expired,
        is_error: false,
        owner: x.principal.audit_name(),
    };
    crate::observe::task_end(&x.gw, end, x.obs.as_ref()).await;
    Refusal::TaskExpired
}

/// A call confirmed on its stream: writes its answer to the stream (`tx`),
/// recording a refusal (a declined call's tool error among them); the relay
/// has recorded an answer that went through it. `None`: the call ended
/// without a verdict (the client or the gateway went away), and nothing was
/// called.
pub(crate) async fn on_stream(
    x: &mut Request,
    result: Option<Result<Reply, Refusal>>,
    tx: &mpsc::Sender<Bytes>,
) {
    let reply = match result {
        None => return record(x.obs.take(), Outcome::Cancelled, 0).await,
        Some(Ok(reply)) => reply,
        Some(Err(r)) => {
            let reply = r.reply(Some(&x.rpc_id), x.era);
            record(x.obs.take(), r.outcome(), reply.len()).await;
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
