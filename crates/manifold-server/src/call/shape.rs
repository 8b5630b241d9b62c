//! Step shape: what an answer does with a task (the 2026-07-28 Tasks
//! extension), wherever the answer arrives. A
//! `tools/call` answered with a task (`resultType: "task"`) gets a task id
//! sealed for its caller in place of the upstream's; a `tasks/*` answer gets
//! the client's id back in place of the upstream's, and a `tasks/get` that
//! shows the task ended (a terminal status, or the upstream no longer knowing
//! it) records that end, once.
//!
//! Invariants: only the top-level `taskId` of an answer changes; every other
//! byte is the upstream's (`manifold_protocol::tasks::replace_top_level_string`);
//! the upstream's task id never reaches the client; a task made for a request
//! that did not declare the extension (a session-era client's never can), or
//! one whose id cannot be sealed, is refused and cancelled upstream (best effort, bounded by
//! [`SEND_TIMEOUT`](manifold_upstream::SEND_TIMEOUT)) — the client never holds
//! a task Manifold cannot route.
//!
//! Not here: opening the client's id and routing `tasks/*` (the resolve
//! step), the sealing and the tables (`state::tasks`), the end record
//! (`observe::task_end`).

use manifold_audit::{Outcome, TaskEvent, TaskStage};
use manifold_protocol::headers::standard_headers;
use manifold_protocol::tasks::{self as t, SpliceError, Status};
use manifold_protocol::ErrorCode;
use manifold_upstream::CallOutcome;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use std::sync::Arc;

use crate::call::context::TaskHook;
use crate::observe::{task_end, Facts, Observed, TaskEnd};
use crate::refusal::Refusal;
use crate::state::tasks::{expiry, owner_digest, record_id, TaskFacts, MAX_UPSTREAM_TASK_ID_BYTES};
use crate::state::Gateway;

/// What an answer becomes.
pub(crate) struct Shaped {
    pub outcome: Result<CallOutcome, Refusal>,
    /// The record's outcome in place of the answer's own (`task` for a
    /// creation).
    pub recorded: Option<Outcome>,
    /// `[validation] output` does not apply: a `CreateTaskResult` has no
    /// `structuredContent` to check.
    pub skip_check: bool,
}

fn pass(outcome: CallOutcome) -> Shaped {
    Shaped {
        outcome: Ok(outcome),
        recorded: None,
        skip_check: false,
    }
}

fn refuse(r: Refusal) -> Shaped {
    Shaped {
        outcome: Err(r),
        recorded: None,
        skip_check: true,
    }
}

/// Who answers: what the call's `Answering` lends the task hook.
pub(crate) struct Answerer<'a> {
    pub gw: &'a Arc<Gateway>,
    pub upstream: &'a Arc<str>,
    /// The request's observation, read for its task record (the owner, the
    /// request's id).
    pub obs: Option<&'a Observed>,
    /// The call's facts: a task made is recorded there.
    pub facts: &'a mut Facts,
    /// The pool member that answered (a pool's).
    pub member: Option<usize>,
}

/// The answer `outcome` with its task id rewritten for the client (see the
/// module doc).
pub(crate) async fn shape(hook: TaskHook, mut a: Answerer<'_>, outcome: CallOutcome) -> Shaped {
    match hook {
        TaskHook::None => pass(outcome),
        TaskHook::Unwanted => match task_of(&outcome) {
            None => pass(outcome),
            Some((_, f)) => unasked(
                &a,
                usable_id(&f),
                "answered with a task, which a session-era client cannot receive (Manifold \
                 offers tasks only to 2026-07-28 clients that declare the \
                 io.modelcontextprotocol/tasks extension); the task was cancelled",
            ),
        },
        TaskHook::Create {
            owner,
            declared,
            endpoint,
            tool,
            original,
            path,
        } => {
            let Some((raw, f)) = task_of(&outcome) else {
                return pass(outcome);
            };
            let upstream_id = usable_id(&f);
            if !declared {
                return unasked(
                    &a,
                    upstream_id,
                    "answered with a task although the request did not declare the \
                     io.modelcontextprotocol/tasks extension; the task was cancelled",
                );
            }
            let Some(upstream_id) = upstream_id else {
                return refuse(unusable(
                    &a,
                    &format!(
                        "answered with a task without a usable taskId (a non-empty string of at \
                     most {MAX_UPSTREAM_TASK_ID_BYTES} bytes)"
                    ),
                ));
            };
            let created_ms = manifold_foundation::time::unix_now_ms();
            let facts = TaskFacts {
                upstream: a.upstream.to_string(),
                endpoint,
                upstream_id: upstream_id.clone(),
                owner: owner_digest(&owner),
                tool,
                original,
                created_ms,
                expires: expiry(created_ms, f.ttl_ms),
                member: a.member,
                path: Some(path),
            };
            let spliced = a.gw.tables.mcp_tasks.seal(&facts).and_then(|client_id| {
                let text = t::replace_top_level_string(raw.get(), "taskId", &client_id).ok()?;
                Some((client_id, RawValue::from_string(text).ok()?))
            });
            let Some((client_id, raw)) = spliced else {
                return unasked(
                    &a,
                    Some(upstream_id),
                    "answered with a task Manifold cannot relay (its id does not fit in a \
                     sealed task id, or taskId appears twice); the task was cancelled",
                );
            };
            let rid = record_id(&client_id);
            let tracked = a.gw.tables.mcp_tasks.created(&rid, &facts, &owner);
            a.gw.metrics.task_created(a.upstream, tracked);
            a.facts.task = Some(TaskEvent {
                id: rid,
                stage: TaskStage::Created,
                duration_us: None,
                is_error: false,
            });
            Shaped {
                outcome: Ok(CallOutcome::Result(raw)),
                recorded: Some(Outcome::Task),
                skip_check: true,
            }
        }
        TaskHook::Relay {
            client_id,
            facts,
            method,
        } => relayed(&mut a, outcome, &client_id, &facts, &method).await,
    }
}

/// A `tasks/*` answer: the client's id back; a `tasks/get` showing the end
/// records it.
async fn relayed(
    a: &mut Answerer<'_>,
    outcome: CallOutcome,
    client_id: &str,
    facts: &TaskFacts,
    method: &str,
) -> Shaped {
    let polling = method == t::TASKS_GET;
    let (outcome, end) = match outcome {
        CallOutcome::Result(raw) => {
            let seen = t::facts(raw.get());
            let end = seen.as_ref().filter(|_| polling).and_then(|f| {
                Some(match f.status.filter(|s| s.is_terminal())? {
                    Status::Completed => (Outcome::Completed, f.is_error),
                    Status::Failed => (
                        Outcome::Failed {
                            code: f.error_code.unwrap_or(ErrorCode::INTERNAL_ERROR.0),
                        },
                        false,
                    ),
                    _ => (Outcome::Cancelled, false),
                })
            });
            match t::replace_top_level_string(raw.get(), "taskId", client_id) {
                Ok(text) => match RawValue::from_string(text) {
                    Ok(raw) => (CallOutcome::Result(raw), end),
                    Err(_) => {
                        return refuse(Refusal::UnusableTask {
                            upstream: a.upstream.to_string(),
                            why: format!("answered {method} with a result Manifold cannot relay"),
                        })
                    }
                },
                // An acknowledgment (update, cancel) has no taskId.
                Err(SpliceError::Missing(_)) => (CallOutcome::Result(raw), end),
                Err(_) => {
                    return refuse(Refusal::UnusableTask {
                        upstream: a.upstream.to_string(),
                        why: format!("answered {method} with taskId twice"),
                    })
                }
            }
        }
        // The upstream no longer knows a task whose id Manifold still opens:
        // its TTL passed and it was purged, or the upstream restarted.
        CallOutcome::Error(raw)
            if polling && ErrorCode::of_error(raw.get()) == Some(ErrorCode::INVALID_PARAMS) =>
        {
            (CallOutcome::Error(raw), Some((Outcome::Expired, false)))
        }
        other => (other, None),
    };
    if let Some((ended, is_error)) = end {
        let owner = a
            .obs
            .as_ref()
            .map(|o| o.principal().to_string())
            .unwrap_or_default();
        let end = TaskEnd {
            client_record_id: record_id(client_id),
            facts,
            outcome: ended,
            is_error,
            owner,
        };
        task_end(a.gw, end, a.obs).await;
    }
    pass(outcome)
}

/// What `outcome` says of its task, with its text, when it is one
/// (`resultType: "task"`).
fn task_of(outcome: &CallOutcome) -> Option<(&RawValue, t::TaskFacts)> {
    let CallOutcome::Result(raw) = outcome else {
        return None;
    };
    if !t::may_be_task(raw.get()) {
        return None;
    }
    let f = t::facts(raw.get()).filter(|f| f.is_task)?;
    Some((raw, f))
}

/// The upstream's task id, when Manifold can route it.
fn usable_id(f: &t::TaskFacts) -> Option<String> {
    f.task_id
        .clone()
        .filter(|id| !id.is_empty() && id.len() <= MAX_UPSTREAM_TASK_ID_BYTES)
}

/// The refusal of a task answer Manifold cannot relay, saying `why`.
fn unusable(a: &Answerer<'_>, why: &str) -> Refusal {
    Refusal::UnusableTask {
        upstream: a.upstream.to_string(),
        why: why.to_string(),
    }
}

/// A task the caller cannot hold: cancelled upstream, refused with `why`.
fn unasked(a: &Answerer<'_>, upstream_id: Option<String>, why: &str) -> Shaped {
    cancel_upstream(a, upstream_id);
    refuse(unusable(a, why))
}

/// Asks the upstream to cancel a task the client will never hold (best
/// effort, in the background, bounded by `SEND_TIMEOUT`).
fn cancel_upstream(a: &Answerer<'_>, upstream_id: Option<String>) {
    let (Some(id), Some(upstream)) = (upstream_id, a.gw.upstream(a.upstream)) else {
        return;
    };
    let mut caps = Map::new();
    caps.insert("extensions".into(), json!({ t::EXTENSION: {} }));
    let caller = manifold_upstream::ClientFacts {
        capabilities: caps,
        member: a.member,
        ..Default::default()
    };
    let mut params = Map::new();
    params.insert("taskId".into(), Value::String(id.clone()));
    let headers = standard_headers(t::TASKS_CANCEL, Some(&id));
    let stop = a.gw.life.stop.clone();
    a.gw.life.background.spawn(async move {
        let cancel = async {
            if let Ok(mut c) = upstream
                .call_as(t::TASKS_CANCEL, Some(params), headers, Some(&caller))
                .await
            {
                let _ = c.outcome().await;
            }
        };
        tokio::select! {
            _ = stop.cancelled() => {}
            r = tokio::time::timeout(manifold_upstream::SEND_TIMEOUT, cancel) => {
                if r.is_err() {
                    tracing::debug!("tasks/cancel for a task not relayed: no answer in time");
                }
            }
        }
    });
}
