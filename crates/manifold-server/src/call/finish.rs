//! Step finish, for answers that arrive after the handler has returned: the
//! upstream's answer (one message, the end of a stream, a held call's last
//! round), a cancellation, a client that left, an expired input round, and a
//! call confirmed on its stream. The call's [`Answering`] (in `context`) rides
//! from the relay into a stream's pump or a held call's holder; its methods
//! here finish the request's observation exactly once.
//!
//! Invariants: [`record`] is the one place here an observation is finished
//! (the other is the pipeline's, for answers made on the request's own task);
//! an answer is shaped and checked before it gets here (the chain's tail in
//! `call/mod.rs`), its URIs are learned before it is recorded, and recorded before its bytes go out; bytes come from the
//! refusal table or are the upstream's own, decorated for the era.
//!
//! Not here: what the answer is (the relay), the metrics and the audit record
//! themselves (`observe`).

use bytes::Bytes;
use manifold_audit::Outcome;
use manifold_protocol::{jsonrpc, results};
use manifold_upstream::{CallOutcome, UpstreamError};
use tokio::sync::mpsc;

use super::context::{Answering, ResultShape};
use crate::era::Era;
use crate::observe::{Facts, Observed};
use crate::refusal::{Refusal, ToolError};
use crate::reply::Reply;
use crate::request::Request;

/// Finishes `obs` (if it is still to be finished) with what the call
/// decided (`facts`), `outcome` and the answer's size.
async fn record(obs: Option<Observed>, facts: Facts, outcome: Outcome, bytes: usize) {
    if let Some(mut o) = obs {
        o.note(facts);
        o.finish(outcome, bytes).await;
    }
}

impl Answering {
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
        let facts = std::mem::take(&mut self.facts);
        record(self.obs.take(), facts, r.outcome(), reply.len()).await;
        reply
    }

    /// The call ended without an answer to send: cancelled by the client, its
    /// stream closed, the gateway stopping, an input round not retried.
    pub(crate) async fn cancelled(&mut self) {
        let facts = std::mem::take(&mut self.facts);
        record(self.obs.take(), facts, Outcome::Cancelled, 0).await;
    }
}

/// Step finish for an answer that went through: its bytes, decorated for the
/// era (or the refusal's), recorded as `recorded` before they go out. URIs in
/// a result are learned first, so a client's `resources/read` of a link it was
/// just given reaches its owner.
pub(crate) async fn answered(a: &mut Answering, outcome: CallOutcome, recorded: Outcome) -> Bytes {
    let bytes = match outcome {
        CallOutcome::Result(raw) => {
            let raw = a.gw.exposed_result(&a.upstream, raw);
            a.gw.tables.learned.learn(&a.upstream, &raw);
            Bytes::from(match (a.era, a.shape) {
                (Era::Stateless, ResultShape::Read) => {
                    let text = results::with_read_hints(raw.get());
                    jsonrpc::response_bytes_from_json(&a.id, text.as_bytes())
                }
                (Era::Stateless, _) => {
                    let text = results::with_result_type(raw.get());
                    jsonrpc::response_bytes_from_json(&a.id, text.as_bytes())
                }
                (Era::Session, _) => jsonrpc::response_bytes(&a.id, &raw),
            })
        }
        CallOutcome::Error(raw) => Bytes::from(jsonrpc::error_bytes_raw(&a.id, &raw)),
        CallOutcome::Failed(e) => a.failure(e).reply(Some(&a.id), a.era).into_bytes(),
    };
    let facts = std::mem::take(&mut a.facts);
    record(a.obs.take(), facts, recorded, bytes.len()).await;
    bytes
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
        None => return record(x.obs.take(), Facts::default(), Outcome::Cancelled, 0).await,
        Some(Ok(reply)) => reply,
        Some(Err(r)) => {
            let reply = r.reply(Some(&x.rpc_id), x.era);
            record(x.obs.take(), Facts::default(), r.outcome(), reply.len()).await;
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
