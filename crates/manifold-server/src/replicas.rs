//! What this replica does with the others through `[cluster] redis` (the bus
//! is manifold-cluster's, this replica's handle on it `state::cluster`):
//! what it sends when something a client sent belongs to a call or a stream
//! held by another replica, and what it does with what the others send.
//!
//! | arrives here | held elsewhere | message |
//! |---|---|---|
//! | a client's answer to a server→client request another replica minted | that replica's pending request | `Answer` |
//! | `notifications/cancelled` for a call not in flight here | the call | `Cancel` |
//! | a resource update for a session whose GET stream is not here | the stream | `Push` |
//! | an upstream's `list_changed` | every replica's own connection | `ListChanged` |
//! | a 2026-07-28 retry for a call not held here | the held call | `Resume`, answered by `Resumed` |
//!
//! What arrives here was signed by a replica holding the session key and is
//! taken once (manifold-cluster's `auth`); even so, an answer is delivered
//! only to the session (by digest) and pending request (by its unguessable
//! id) it names, and a `Resumed` only to the replica and retry it names.
//!
//! Invariants: publishing is bounded by manifold-cluster's `OP_TIMEOUT`; a
//! retry sent to the bus waits [`RESUME_TAKE_TIMEOUT`] for a holder to take
//! it, then at most [`Gateway::resume_answer_bound`] between two parts of the
//! answer, so a holder that dies mid-answer costs a bounded wait, never a hang;
//! the forwarded retry's answer is relayed part by part (a stream stays a
//! stream). Without `[cluster] redis` none of this runs.
//!
//! Not here: the bus (manifold-cluster), deciding that something is not held
//! here (the handlers and the call chain's relay ask this module only after
//! looking).

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::StatusCode;
use manifold_cluster::{Envelope, Message, ResumeEvent};
use manifold_protocol::RequestId;
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::{mpsc, oneshot};

use crate::era::Era;
use crate::refusal::Refusal;
use crate::reply::Reply;
use crate::state::held_calls::{Resume, NOT_HELD_HERE};
use crate::state::Gateway;

/// How long a retry sent to the bus waits for the replica holding its call to
/// say it took it; no answer means no replica holds it.
pub const RESUME_TAKE_TIMEOUT: Duration = Duration::from_secs(2);
/// Added to the longest upstream `timeout` to bound the wait between two
/// parts of a forwarded retry's answer.
pub const RESUME_ANSWER_SLACK: Duration = Duration::from_secs(5);
/// Parts of one forwarded retry's answer waiting to be relayed.
const RESUME_QUEUE: usize = 64;

/// Forgets a forwarded retry when its answer is over (or abandoned).
struct Forwarded {
    gw: Arc<Gateway>,
    corr: String,
}

impl Drop for Forwarded {
    fn drop(&mut self) {
        if let Some(c) = &self.gw.cluster {
            c.resumes.lock().remove(&self.corr);
        }
    }
}

impl Gateway {
    /// Starts the bus and the task serving what the other replicas send.
    pub(crate) fn start_cluster(self: &Arc<Self>) {
        let Some(c) = &self.cluster else { return };
        let (tx, mut rx) = manifold_cluster::Bus::queue();
        self.life
            .background
            .spawn(c.bus.clone().run(tx, self.life.stop.clone()));
        let gw = self.clone();
        self.life.background.spawn(async move {
            loop {
                let env = tokio::select! {
                    _ = gw.life.stop.cancelled() => return,
                    env = rx.recv() => env,
                };
                match env {
                    Some(env) => gw.on_cluster_message(env),
                    None => return,
                }
            }
        });
    }

    /// Publishes `message`, logging a failure (for relays nobody waits on).
    pub(crate) fn publish_later(self: &Arc<Self>, message: Message) {
        if let Some(c) = &self.cluster {
            c.publish_later(&self.life.background, message);
        }
    }

    /// A client's answer to a request this replica did not mint, sent to the
    /// replica that did. `Ok(false)` without a cluster.
    pub(crate) async fn relay_answer(
        &self,
        session: &str,
        id: &str,
        outcome: Map<String, Value>,
    ) -> Result<bool, Refusal> {
        self.publish_now(
            "the answer to a server→client request",
            Message::Answer {
                session: session.to_string(),
                id: id.to_string(),
                outcome,
            },
        )
        .await
    }

    /// `notifications/cancelled` for a call not in flight here.
    pub(crate) async fn relay_cancel(
        &self,
        session: &str,
        request: &RequestId,
    ) -> Result<bool, Refusal> {
        self.publish_now(
            "the cancellation",
            Message::Cancel {
                session: session.to_string(),
                request: request.as_value().clone(),
            },
        )
        .await
    }

    async fn publish_now(&self, what: &'static str, message: Message) -> Result<bool, Refusal> {
        let Some(c) = &self.cluster else {
            return Ok(false);
        };
        match c.bus.publish(message).await {
            Ok(0) => Err(Refusal::ClusterUnavailable {
                what,
                error: manifold_cluster::ClusterError::Unavailable(
                    "no other replica is connected to the bus".into(),
                ),
            }),
            Ok(_) => Ok(true),
            Err(error) => Err(Refusal::ClusterUnavailable { what, error }),
        }
    }

    /// The longest wait between two parts of a forwarded retry's answer: the
    /// longest upstream `timeout`, plus [`RESUME_ANSWER_SLACK`].
    pub(crate) fn resume_answer_bound(&self) -> Duration {
        self.cfg()
            .upstreams
            .iter()
            .map(|u| u.timeout)
            .max()
            .unwrap_or_default()
            + RESUME_ANSWER_SLACK
    }

    /// A 2026-07-28 retry whose held call is not here, sent to the replica
    /// holding it; its answer comes back part by part. `None` without a
    /// cluster.
    pub(crate) async fn resume_elsewhere(
        self: &Arc<Self>,
        state: &str,
        digest: &str,
        id: &RequestId,
        responses: Map<String, Value>,
    ) -> Option<Result<Reply, Refusal>> {
        let c = self.cluster.as_ref()?;
        let Some(corr) = manifold_cluster::random_id() else {
            return Some(Err(Refusal::ClusterUnavailable {
                what: "the retry resuming a held call",
                error: manifold_cluster::ClusterError::Unavailable(
                    "no randomness for a correlation id".into(),
                ),
            }));
        };
        let (tx, mut rx) = mpsc::channel(RESUME_QUEUE);
        c.resumes.lock().insert(corr.clone(), tx);
        let forwarded = Forwarded {
            gw: self.clone(),
            corr: corr.clone(),
        };
        let sent = c
            .bus
            .publish(Message::Resume {
                corr,
                state: state.to_string(),
                digest: digest.to_string(),
                id: id.as_value().clone(),
                responses,
            })
            .await;
        match sent {
            // Nobody else listens: nobody else holds it.
            Ok(0) => return Some(Err(Refusal::InvalidRequestState(NOT_HELD_HERE))),
            Ok(_) => {}
            Err(error) => {
                return Some(Err(Refusal::ClusterUnavailable {
                    what: "the retry resuming a held call",
                    error,
                }))
            }
        }
        match tokio::time::timeout(RESUME_TAKE_TIMEOUT, rx.recv()).await {
            Ok(Some(ResumeEvent::Taken)) => {}
            _ => return Some(Err(Refusal::InvalidRequestState(NOT_HELD_HERE))),
        }
        let bound = self.resume_answer_bound();
        let first = match tokio::time::timeout(bound, rx.recv()).await {
            Ok(Some(e)) => e,
            _ => return Some(Err(Refusal::HeldCallLost)),
        };
        Some(match first {
            ResumeEvent::Reply {
                status,
                bytes,
                refused,
            } => Ok(Reply::Message {
                status: StatusCode::from_u16(status).unwrap_or(StatusCode::OK),
                bytes: Bytes::from(bytes),
                session: None,
                refused,
                retry_after: None,
            }),
            ResumeEvent::Streamed { bytes } => {
                let (out, stream) = mpsc::channel(RESUME_QUEUE);
                let _ = out.try_send(Bytes::from(bytes));
                let stop = self.life.stop.clone();
                self.life.background.spawn(async move {
                    let _forget = forwarded;
                    loop {
                        let next = tokio::select! {
                            _ = stop.cancelled() => return,
                            n = tokio::time::timeout(bound, rx.recv()) => n,
                        };
                        match next {
                            Ok(Some(ResumeEvent::Streamed { bytes })) => {
                                if out.send(Bytes::from(bytes)).await.is_err() {
                                    return; // the client left
                                }
                            }
                            Ok(Some(ResumeEvent::Reply { bytes, .. })) => {
                                let _ = out.send(Bytes::from(bytes)).await;
                                return;
                            }
                            Ok(Some(ResumeEvent::Taken)) => {}
                            // The end, a holder gone quiet, or shutdown.
                            Ok(Some(ResumeEvent::End)) | Ok(None) | Err(_) => return,
                        }
                    }
                });
                Ok(Reply::Stream(stream))
            }
            ResumeEvent::Taken | ResumeEvent::End => Err(Refusal::HeldCallLost),
        })
    }

    /// What another replica sent.
    fn on_cluster_message(self: &Arc<Self>, env: Envelope) {
        match env.message {
            Message::Answer {
                session,
                id,
                outcome,
            } => {
                let Some(responder) = self
                    .tables
                    .sessions
                    .by_digest(&session)
                    .and_then(|s| s.take_pending(&RequestId::string(id)))
                else {
                    return;
                };
                let member = outcome
                    .get("result")
                    .map(|r| (true, r))
                    .or_else(|| outcome.get("error").map(|e| (false, e)));
                let Some((ok, member)) = member else { return };
                let raw = RawValue::from_string(member.to_string())
                    .unwrap_or_else(|_| RawValue::NULL.to_owned());
                self.life.background.spawn(async move {
                    responder.respond(if ok { Ok(raw) } else { Err(raw) }).await;
                });
            }
            Message::Cancel { session, request } => {
                if let (Some(s), Some(id)) = (
                    self.tables.sessions.by_digest(&session),
                    RequestId::from_value(&request),
                ) {
                    s.cancel_call(&id);
                }
            }
            Message::Push { session, message } => {
                if let Some(s) = self.tables.sessions.by_digest(&session) {
                    s.push(Bytes::from(message));
                }
            }
            Message::ListChanged { upstream, method } => {
                if let Some(u) = self.upstream(&upstream) {
                    tracing::debug!(upstream = %upstream, %method, from = %env.from,
                        "another replica heard list_changed; refetching");
                    u.refetch_lists();
                }
            }
            Message::Resume {
                corr,
                state,
                digest,
                id,
                responses,
            } => {
                // Only the holder answers: the others hold nothing under it.
                let Ok(tx) = self.tables.held.take(&state, &digest) else {
                    return;
                };
                let Some(id) = RequestId::from_value(&id) else {
                    return;
                };
                let gw = self.clone();
                self.life.background.spawn(async move {
                    gw.answer_resume(env.from, corr, tx, id, responses).await
                });
            }
            Message::Resumed { to, corr, event } => {
                let Some(c) = &self.cluster else { return };
                if to != c.bus.replica() {
                    return;
                }
                let tx = c.resumes.lock().get(&corr).cloned();
                if let Some(tx) = tx {
                    // A part cannot be dropped from the middle of an answer: a
                    // reader that fell this far behind loses the whole answer.
                    if tx.try_send(event).is_err() {
                        c.resumes.lock().remove(&corr);
                        tracing::warn!("a forwarded retry's answer is not being read; abandoned");
                    }
                }
            }
        }
    }

    /// Resumes a call held here for a retry that reached replica `to`, and
    /// sends the answer there part by part.
    async fn answer_resume(
        self: Arc<Self>,
        to: String,
        corr: String,
        held: oneshot::Sender<Resume>,
        id: RequestId,
        responses: Map<String, Value>,
    ) {
        let Some(c) = &self.cluster else { return };
        let send = |event: ResumeEvent| Message::Resumed {
            to: to.clone(),
            corr: corr.clone(),
            event,
        };
        if let Err(e) = c.bus.publish(send(ResumeEvent::Taken)).await {
            tracing::warn!(error = %e, "cannot tell the retry's replica its call was taken");
        }
        let (reply, wait) = oneshot::channel();
        let resumed = held
            .send(Resume {
                responses,
                id: id.clone(),
                reply,
            })
            .is_ok();
        let answer = match (resumed, wait.await) {
            (true, Ok(r)) => r,
            _ => Refusal::HeldCallLost.reply(Some(&id), Era::Stateless),
        };
        let events: Vec<ResumeEvent> = match answer {
            Reply::Message {
                status,
                bytes,
                refused,
                ..
            } => vec![ResumeEvent::Reply {
                status: status.as_u16(),
                bytes: String::from_utf8_lossy(&bytes).into_owned(),
                refused,
            }],
            Reply::Stream(mut rx) => {
                while let Some(bytes) = rx.recv().await {
                    let event = ResumeEvent::Streamed {
                        bytes: String::from_utf8_lossy(&bytes).into_owned(),
                    };
                    if let Err(e) = c.bus.publish(send(event)).await {
                        tracing::warn!(error = %e, "part of a forwarded retry's answer not sent");
                        return;
                    }
                }
                vec![ResumeEvent::End]
            }
            Reply::Accepted | Reply::Ended => vec![ResumeEvent::End],
        };
        for event in events {
            if let Err(e) = c.bus.publish(send(event)).await {
                tracing::warn!(error = %e, "a forwarded retry's answer not sent");
            }
        }
    }

    /// What `/readyz` says about the bus (`None` without one), and whether it
    /// is connected.
    pub(crate) fn cluster_health(&self) -> Option<manifold_cluster::Health> {
        self.cluster.as_ref().map(|c| c.bus.health())
    }
}
