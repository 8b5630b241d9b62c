//! Code mode (`discovery = "code"`): `tools/list` holds `search_tools` and
//! `run_script`; `run_script {script, inputs?}` runs a model's Starlark
//! script (manifold-code) in a worker process of its own, and answers each of
//! its calls out as the caller (`inner`): a tool call goes through the whole
//! call chain with its own audit record, a search through the endpoint's
//! index. The script's own record names it by SHA-256, with its calls and
//! steps.
//!
//! | file | what |
//! |---|---|
//! | `mod.rs` | a script from its arguments to its answer |
//! | `tool.rs` | the meta-tool's name and definition |
//! | `worker.rs` | the worker process and its lines |
//! | `inner.rs` | a script's calls and searches, as the caller |
//!
//! Invariants: a script runs only with a turn of the pool (`[code] workers`,
//! `max_queued`: refused when full), never on an async worker; every limit of
//! `[code]` ends it with a tool error naming the limit and its value — the
//! wall clock here, the others in the worker; cancelling `run_script` (the
//! client's `notifications/cancelled`, or a client that leaves) cancels the
//! call in flight and kills the worker; a script's failure is a tool error a
//! model can act on (line, column, message, what it did last).
//!
//! Not here: the engine and its limits (manifold-code), the pool
//! (`state::code`), the chain (`crate::call`).

mod inner;
pub(crate) mod tool;
mod worker;

pub use tool::RUN_SCRIPT;

use bytes::Bytes;
use manifold_code::{FromWorker, Start};
use manifold_config::code::{CodeConfig, WORKER_BASE_MEMORY};
use manifold_protocol::jsonrpc;
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::observe::Facts;
use crate::refusal::{Refusal, ToolError};
use crate::reply::Reply;
use crate::request::Request;

/// The script and its inputs from `run_script`'s arguments.
fn arguments(
    cfg: &CodeConfig,
    params: &Map<String, Value>,
) -> Result<(String, Option<Value>), ToolError> {
    let shape = || {
        ToolError::Script(
            "its arguments must be {\"script\": \"def main():\\n    return …\", \"inputs\": {…}}"
                .into(),
        )
    };
    let Some(Value::Object(args)) = params.get("arguments") else {
        return Err(shape());
    };
    let Some(Value::String(script)) = args.get("script") else {
        return Err(shape());
    };
    if script.len() > cfg.max_script_bytes {
        return Err(ToolError::Script(format!(
            "the script is {} bytes, more than max_script_bytes ({}); do less in one script",
            script.len(),
            cfg.max_script_bytes
        )));
    }
    Ok((script.clone(), args.get("inputs").cloned()))
}

/// `run_script`: the script's answer, on a stream when the client takes one
/// (its calls' progress and questions go there), else as one message.
pub(crate) async fn run(x: &mut Request, params: &Map<String, Value>) -> Result<Reply, Refusal> {
    let cfg = x.gw.cfg().code.clone();
    let (script, inputs) = arguments(&cfg, params)?;
    let Some(cancel) = x.caller.begin_call(&x.rpc_id) else {
        return Err(Refusal::TooManyCalls {
            limit: x.gw.cfg().limits.max_calls_per_session,
        });
    };
    let progress = params
        .get("_meta")
        .and_then(|m| m.get("progressToken"))
        .cloned();
    let job = Job {
        script,
        inputs,
        progress,
        cfg,
    };
    if !x.arrival.accepts.stream {
        let answered = execute(x, job, None, &cancel).await;
        x.caller.end_call(&x.rpc_id);
        return answered.map(|result| Reply::ok(response(x, result)));
    }
    let (tx, rx) = mpsc::channel::<Bytes>(x.gw.cfg().limits.stream_queue);
    let mut detached = x.detach();
    x.gw.life.background.clone().spawn(async move {
        let answered = execute(&mut detached, job, Some(&tx), &cancel).await;
        detached.caller.end_call(&detached.rpc_id);
        // A cancelled request gets no response: its stream ends.
        let cancelled = matches!(answered, Err(Refusal::Cancelled));
        let reply = crate::observe::answered(
            detached.obs.take(),
            answered.map(|result| Reply::ok(response(&detached, result))),
            &detached.rpc_id,
            detached.era,
        )
        .await;
        if let (Reply::Message { bytes, .. }, false) = (reply, cancelled) {
            let _ = tx.send(bytes).await;
        }
    });
    Ok(Reply::Stream(rx))
}

/// The response bytes of a script's result.
fn response(x: &Request, result: Map<String, Value>) -> Bytes {
    let result = inner::for_era(x.era, result);
    Bytes::from(jsonrpc::response_bytes_from_json(
        &x.rpc_id,
        Value::Object(result).to_string().as_bytes(),
    ))
}

/// One script to run.
struct Job {
    script: String,
    inputs: Option<Value>,
    progress: Option<Value>,
    cfg: CodeConfig,
}

/// Runs `job` for the caller of `x`: its result, or the tool error it ended
/// with; the script's facts go on `x`'s record.
async fn execute(
    x: &mut Request,
    job: Job,
    out: Option<&mpsc::Sender<Bytes>>,
    cancel: &CancellationToken,
) -> Result<Map<String, Value>, Refusal> {
    let sha256 = manifold_code::digest(&job.script);
    let mut event = manifold_audit::ScriptEvent {
        sha256: sha256.clone(),
        calls: Some(0),
        steps: None,
    };
    let ended = drive(x, &job, &sha256, out, cancel, &mut event).await;
    if let Some(o) = x.observation() {
        o.note(Facts {
            script: Some(event),
            ..Facts::default()
        });
    }
    match ended {
        Ok(f) => {
            let text = serde_json::to_string(&f.value).unwrap_or_default();
            let mut result = Map::new();
            result.insert("content".into(), json!([{"type": "text", "text": text}]));
            result.insert(
                "structuredContent".into(),
                json!({"value": f.value, "calls": f.calls, "log": f.log}),
            );
            Ok(result)
        }
        Err(_) if cancel.is_cancelled() => Err(Refusal::Cancelled),
        Err(text) => Err(ToolError::Script(text).into()),
    }
}

/// The worker's life: started with a turn of the pool, the script sent, its
/// calls out answered, until it ends, the wall clock runs out, or the call
/// is cancelled. `Err`: the failure as a model reads it.
async fn drive(
    x: &Request,
    job: &Job,
    sha256: &str,
    out: Option<&mpsc::Sender<Bytes>>,
    cancel: &CancellationToken,
    event: &mut manifold_audit::ScriptEvent,
) -> Result<manifold_code::Finished, String> {
    let cfg = &job.cfg;
    let deadline = tokio::time::Instant::now() + cfg.timeout;
    let timed_out = |n: u32| {
        format!(
            "The script was stopped: it ran past its timeout of {} s (timeout){}",
            cfg.timeout.as_secs(),
            calls_note(n)
        )
    };
    let turn = tokio::select! {
        t = x.gw.code.turn(cfg.workers) => t,
        _ = tokio::time::sleep_until(deadline) => return Err(timed_out(0)),
        _ = cancel.cancelled() => return Err("The script was cancelled before it started".into()),
    };
    let _turn = turn.map_err(|b| {
        format!(
            "code mode is busy: {} scripts are running and {} wait (workers, max_queued); try again shortly",
            b.workers, b.max_queued
        )
    })?;
    let program = x.gw.code.program(cfg.worker.as_deref());
    let address_space = cfg.max_memory.saturating_add(WORKER_BASE_MEMORY);
    let cpu_seconds = cfg.timeout.as_secs() + 1;
    let mut w = worker::Worker::start(&program, address_space, cpu_seconds)
        .map_err(|e| format!("The script could not run: {e}"))?;
    let start = Start {
        script: job.script.clone(),
        inputs: job.inputs.clone(),
        limits: manifold_code::Limits {
            max_steps: cfg.max_steps,
            max_memory: cfg.max_memory,
            max_calls: cfg.max_calls,
            max_result_bytes: cfg.max_result_bytes,
            timeout_ms: cfg.timeout.as_millis() as u64,
        },
    };
    w.begin(&start)
        .await
        .map_err(|e| format!("The script could not run: {e}"))?;
    let script = inner::Script {
        x,
        sha256,
        progress: job.progress.as_ref(),
        out,
    };
    let mut n = 0u32;
    loop {
        let msg = tokio::select! {
            m = w.next() => m.map_err(|e| format!("The script was stopped: {e}{}", calls_note(n)))?,
            _ = tokio::time::sleep_until(deadline) => return Err(timed_out(n)),
            _ = cancel.cancelled() => return Err(format!("The script was cancelled{}", calls_note(n))),
        };
        let answer = match msg {
            FromWorker::Call { name, arguments } => {
                n += 1;
                event.calls = Some(n);
                let id = inner::call_id(x, n);
                let call = inner::call(&script, id.clone(), name, arguments);
                tokio::select! {
                    a = call => a,
                    _ = tokio::time::sleep_until(deadline) => {
                        cancel_inner(x, &id);
                        return Err(timed_out(n));
                    }
                    _ = cancel.cancelled() => {
                        cancel_inner(x, &id);
                        return Err(format!("The script was cancelled{}", calls_note(n)));
                    }
                }
            }
            FromWorker::Search { query, limit } => inner::search(x, query, limit).await,
            FromWorker::Done(f) => {
                event.steps = Some(f.steps);
                return Ok(f);
            }
            FromWorker::Failed(f) => {
                event.steps = Some(f.steps);
                let mut text = f.describe();
                if !f.log.is_empty() {
                    text.push_str("\nIts log:\n");
                    text.push_str(&f.log.join("\n"));
                }
                return Err(text);
            }
        };
        // A refusal: the worker fails the script with its words and ends.
        w.answer(&answer)
            .await
            .map_err(|e| format!("The script was stopped: {e}{}", calls_note(n)))?;
    }
}

/// A session's call in flight is cancelled upstream too (a stateless
/// caller's is, when its future drops).
fn cancel_inner(x: &Request, id: &manifold_protocol::RequestId) {
    if let Some(s) = x.caller.session() {
        s.cancel_call(id);
    }
}

fn calls_note(n: u32) -> String {
    match n {
        0 => String::new(),
        1 => " after 1 tool call".into(),
        n => format!(" after {n} tool calls"),
    }
}
