//! A script's worker, driven: a turn of the pool taken, the worker started
//! and sent the script, then each of its calls out answered ([`pump`])
//! until it ends, the wall clock runs out, the request is cancelled, or —
//! 2026-07-28 — one of its calls needs the client's input, which pauses it
//! ([`Step::Paused`]: the worker waits, `paused.rs` holds it for the retry).
//!
//! Invariants: a [`Running`] script holds its turn and its worker process
//! until it drops (the worker is killed then); every wait is under the
//! script's deadline and its cancellation; a call in flight when either
//! comes is cancelled.
//!
//! Not here: the answer (`mod.rs`), what a call is (`inner.rs`).

use bytes::Bytes;
use manifold_code::{Finished, FromWorker, Start, ToWorker};
use manifold_config::code::{CodeConfig, WORKER_BASE_MEMORY};
use serde_json::Value;
use tokio::sync::{mpsc, OwnedSemaphorePermit};
use tokio_util::sync::CancellationToken;

use super::inner::{self, Inner, Pending};
use super::worker::Worker;
use crate::request::Request;
use crate::state::code::Spare;

/// A script whose worker is running.
pub(super) struct Running {
    worker: Worker,
    _turn: OwnedSemaphorePermit,
    pub deadline: tokio::time::Instant,
    /// Calls made so far.
    pub calls: u32,
    /// Searches made so far (bounded by `max_calls` too).
    pub searches: u32,
    pub sha256: String,
    pub cfg: CodeConfig,
    /// The client's progress token, given to each call.
    pub progress: Option<Value>,
}

/// Where driving a script stopped.
pub(super) enum Step {
    Finished(Finished),
    /// 2026-07-28: a call needs the client's input (`inputRequests`).
    Paused {
        pending: Pending,
        input_requests: Value,
    },
}

/// Why a script ended without a value: the failure as a model reads it.
pub(super) type Stopped = String;

pub(super) fn calls_note(n: u32) -> String {
    match n {
        0 => String::new(),
        1 => " after 1 tool call".into(),
        n => format!(" after {n} tool calls"),
    }
}

/// A script the gateway's shutdown ended.
const STOPPING: &str = "The script was stopped: the gateway is shutting down";

fn timed_out(cfg: &CodeConfig, n: u32) -> Stopped {
    format!(
        "The script was stopped: it ran past its timeout of {} s (timeout){}",
        cfg.timeout.as_secs(),
        calls_note(n)
    )
}

/// Takes a turn, starts the worker and sends it the script.
pub(super) async fn start(
    x: &Request,
    script: &str,
    inputs: Option<Value>,
    cfg: CodeConfig,
    progress: Option<Value>,
    cancel: &CancellationToken,
) -> Result<Running, Stopped> {
    // Waiting for a turn is bounded by the timeout too; the script's own
    // wall clock starts with its turn.
    let waited = tokio::time::Instant::now() + cfg.timeout;
    let turn = tokio::select! {
        t = x.gw.code.turn(cfg.workers) => t,
        _ = tokio::time::sleep_until(waited) => return Err(format!(
            "The script did not start: no worker was free within its timeout of {} s (timeout, workers)",
            cfg.timeout.as_secs()
        )),
        _ = cancel.cancelled() => return Err("The script was cancelled before it started".into()),
        _ = x.gw.life.stop.cancelled() => return Err(STOPPING.into()),
    };
    let deadline = tokio::time::Instant::now() + cfg.timeout;
    let turn = turn.map_err(|b| {
        format!(
            "code mode is busy: {} scripts are running and {} wait (workers, max_queued); try again shortly",
            b.workers, b.max_queued
        )
    })?;
    let how = Spare {
        program: x.gw.code.program(cfg.worker.as_deref()),
        address_space: cfg.max_memory.saturating_add(WORKER_BASE_MEMORY),
        cpu_seconds: cfg.timeout.as_secs() + 1,
    };
    let start = Start {
        script: script.to_string(),
        inputs,
        limits: manifold_code::Limits {
            max_steps: cfg.max_steps,
            max_memory: cfg.max_memory,
            max_calls: cfg.max_calls,
            max_result_bytes: cfg.max_result_bytes,
            timeout_ms: cfg.timeout.as_millis() as u64,
        },
    };
    // The spare started for this script, if it is still alive; else a new one.
    let spare =
        x.gw.code
            .take_spare(&how)
            .and_then(|w| w.downcast::<Worker>().ok());
    let begun = match spare {
        Some(mut w) => match w.begin(&start).await {
            Ok(()) => Some(*w),
            Err(_) => None,
        },
        None => None,
    };
    let worker = match begun {
        Some(w) => w,
        None => {
            let mut w =
                Worker::start(&how).map_err(|e| format!("The script could not run: {e}"))?;
            w.begin(&start)
                .await
                .map_err(|e| format!("The script could not run: {e}"))?;
            w
        }
    };
    // The next script's worker starts now, off its path, unless one already
    // waits (under concurrency another script may have started it): a spare
    // nobody takes would be a process started and killed for nothing.
    if !x.gw.code.has_spare() {
        if let Ok(next) = Worker::start(&how) {
            x.gw.code.keep_spare(how, Box::new(next));
        }
    }
    Ok(Running {
        worker,
        _turn: turn,
        deadline,
        calls: 0,
        searches: 0,
        sha256: manifold_code::digest(script),
        cfg,
        progress,
    })
}

/// Answers the worker's calls out (first `answer`, the answer to the call it
/// waits on, if any) until the script ends or pauses. `steps` gets the
/// worker's count when it reports one.
pub(super) async fn pump(
    x: &Request,
    r: &mut Running,
    mut answer: Option<ToWorker>,
    out: Option<&mpsc::Sender<Bytes>>,
    cancel: &CancellationToken,
    steps: &mut Option<u64>,
) -> Result<Step, Stopped> {
    loop {
        if let Some(a) = answer.take() {
            // A refusal: the worker fails the script with its words and ends.
            r.worker
                .answer(&a)
                .await
                .map_err(|e| format!("The script was stopped: {e}{}", calls_note(r.calls)))?;
        }
        let msg = tokio::select! {
            m = r.worker.next() => m.map_err(|e| format!("The script was stopped: {e}{}", calls_note(r.calls)))?,
            _ = tokio::time::sleep_until(r.deadline) => return Err(timed_out(&r.cfg, r.calls)),
            _ = cancel.cancelled() => return Err(format!("The script was cancelled{}", calls_note(r.calls))),
            _ = x.gw.life.stop.cancelled() => return Err(STOPPING.into()),
        };
        answer = Some(match msg {
            // The worker counts its calls; so does the gateway, which does not
            // trust the side that runs the script.
            FromWorker::Call { name, .. } if r.calls >= r.cfg.max_calls => {
                ToWorker::Refused(format!(
                    "call({name:?}) would be tool call {} of at most {} (max_calls)",
                    r.calls + 1,
                    r.cfg.max_calls
                ))
            }
            FromWorker::Search { .. } if r.searches >= r.cfg.max_calls => {
                ToWorker::Refused(format!(
                    "search() would be search {} of at most {} (max_calls bounds searches too)",
                    r.searches + 1,
                    r.cfg.max_calls
                ))
            }
            FromWorker::Call { name, arguments } => {
                r.calls += 1;
                match call(x, r, name, arguments, None, out, cancel).await? {
                    Inner::Answer(a) => a,
                    Inner::Input {
                        pending,
                        input_requests,
                    } => {
                        return Ok(Step::Paused {
                            pending,
                            input_requests,
                        })
                    }
                }
            }
            FromWorker::Search { query, limit } => {
                r.searches += 1;
                inner::search(x, query, limit).await
            }
            FromWorker::Done(f) => {
                *steps = Some(f.steps);
                return Ok(Step::Finished(f));
            }
            FromWorker::Failed(f) => {
                *steps = Some(f.steps);
                let mut text = f.describe();
                if !f.log.is_empty() {
                    text.push_str("\nIts log:\n");
                    text.push_str(&f.log.join("\n"));
                }
                return Err(text);
            }
        });
    }
}

/// The script's call number `r.calls` (`retry`: the input for its pending
/// round), under the script's deadline and cancellation.
pub(super) async fn call(
    x: &Request,
    r: &Running,
    name: String,
    arguments: Value,
    retry: Option<(String, Value)>,
    out: Option<&mpsc::Sender<Bytes>>,
    cancel: &CancellationToken,
) -> Result<Inner, Stopped> {
    let id = inner::call_id(x, r.calls);
    let script = inner::Script {
        x,
        sha256: &r.sha256,
        progress: r.progress.as_ref(),
        out,
    };
    let call = inner::call(&script, id.clone(), name, arguments, retry);
    tokio::select! {
        a = call => Ok(a),
        _ = tokio::time::sleep_until(r.deadline) => {
            cancel_inner(x, &id);
            Err(timed_out(&r.cfg, r.calls))
        }
        _ = cancel.cancelled() => {
            cancel_inner(x, &id);
            Err(format!("The script was cancelled{}", calls_note(r.calls)))
        }
        _ = x.gw.life.stop.cancelled() => {
            cancel_inner(x, &id);
            Err(STOPPING.into())
        }
    }
}

/// A session's call in flight is cancelled upstream too (a stateless
/// caller's is, when its future drops).
fn cancel_inner(x: &Request, id: &manifold_protocol::RequestId) {
    if let Some(s) = x.caller.session() {
        s.cancel_call(id);
    }
}
