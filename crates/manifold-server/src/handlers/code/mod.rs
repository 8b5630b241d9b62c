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
//! | `mod.rs` | a script from its arguments to its answer (or its input request) |
//! | `tool.rs` | the meta-tool's name and definition |
//! | `driver.rs` | the worker driven: a turn, the script, its calls out, under the deadline |
//! | `paused.rs` | 2026-07-28: a script paused for the client's input, and its retry |
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

mod driver;
mod inner;
mod paused;
pub(crate) mod tool;
mod worker;

pub use tool::RUN_SCRIPT;

use bytes::Bytes;
use manifold_config::code::CodeConfig;
use manifold_protocol::jsonrpc;
use serde_json::{json, Map, Value};
use tokio::sync::{mpsc, oneshot};
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
/// (its calls' progress and questions go there), else as one message; a
/// 2026-07-28 retry carrying a paused script's `requestState` goes on as
/// that script (`paused.rs`).
pub(crate) async fn run(
    x: &mut Request,
    params: &Map<String, Value>,
    places: Option<manifold_policy::Permit>,
) -> Result<Reply, Refusal> {
    let cfg = x.gw.cfg().code.clone();
    let (script, inputs) = arguments(&cfg, params)?;
    let Some(cancel) = x.caller.begin_call(&x.rpc_id) else {
        return Err(Refusal::TooManyCalls {
            limit: x.gw.cfg().limits.max_calls_per_session,
        });
    };
    // A paused script is taken only once this request may run it (a refused
    // retry would end the script).
    let begin = match begin(x, params, script, inputs, cfg) {
        Ok(b) => b,
        Err(r) => {
            x.caller.end_call(&x.rpc_id);
            return Err(r);
        }
    };
    // The script is named on its record from the start, whatever its end.
    let sha256 = match &begin {
        Begin::Fresh { script, .. } => manifold_code::digest(script),
        Begin::Resume { running, .. } => running.sha256.clone(),
    };
    if let Some(o) = x.observation() {
        o.note(Facts {
            script: Some(manifold_audit::ScriptEvent {
                sha256,
                calls: None,
                steps: None,
            }),
            ..Facts::default()
        });
    }
    // The script runs on a task of the gateway, whatever the client does
    // meanwhile: a session-era client that leaves does not cancel it, a
    // 2026-07-28 one does; a client that takes no stream gets no interim
    // message.
    let streams = x.arrival.accepts.stream;
    let (tx, mut rx) = mpsc::channel::<Bytes>(x.gw.cfg().limits.stream_queue);
    let (done_tx, mut done_rx) = oneshot::channel::<Reply>();
    let mut detached = x.detach();
    x.gw.life.background.clone().spawn(async move {
        let _places = places;
        let mut done_tx = done_tx;
        let cancels = detached.caller.cancels_on_disconnect();
        let out = streams.then_some(&tx);
        let answered = tokio::select! {
            a = execute(&mut detached, begin, out, &cancel) => a,
            _ = done_tx.closed(), if cancels => {
                cancel.cancel();
                Err(Refusal::Cancelled)
            }
        };
        drop(tx);
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
        let _ = done_tx.send(match (cancelled, streams) {
            (false, _) => reply,
            (true, true) => Reply::empty_stream(),
            (true, false) => Refusal::Cancelled.reply(Some(&detached.rpc_id), detached.era),
        });
    });
    // One message when the answer comes first (as a direct call's); a stream
    // once a call's progress or question does.
    let first = tokio::select! {
        biased;
        m = rx.recv() => m,
        done = &mut done_rx => return Ok(done.unwrap_or_else(|_| Reply::empty_stream())),
    };
    let Some(first) = first else {
        return Ok(done_rx.await.unwrap_or_else(|_| Reply::empty_stream()));
    };
    let (out, stream) = mpsc::channel::<Bytes>(x.gw.cfg().limits.stream_queue);
    x.gw.life.background.spawn(async move {
        if out.send(first).await.is_err() {
            return;
        }
        loop {
            tokio::select! {
                m = rx.recv() => match m {
                    Some(m) => if out.send(m).await.is_err() { return },
                    None => break,
                },
                // The client left: dropping `done_rx` tells the script.
                _ = out.closed() => return,
            }
        }
        if let Ok(Reply::Message { bytes, .. }) = done_rx.await {
            let _ = out.send(bytes).await;
        }
    });
    Ok(Reply::Stream(stream))
}

/// How this `run_script` begins: a paused script its `requestState` names,
/// or a fresh one.
fn begin(
    x: &Request,
    params: &Map<String, Value>,
    script: String,
    inputs: Option<Value>,
    cfg: CodeConfig,
) -> Result<Begin, Refusal> {
    Ok(match params.get("requestState") {
        Some(state) => {
            let p = paused::take(x, state, &script)?;
            Begin::Resume {
                running: Box::new(p.running),
                pending: p.pending,
                responses: paused::responses(params),
            }
        }
        None => {
            let progress = params
                .get("_meta")
                .and_then(|m| m.get("progressToken"))
                .cloned();
            Begin::Fresh {
                script,
                inputs,
                progress,
                cfg,
            }
        }
    })
}

/// The response bytes of a script's result (or input request).
fn response(x: &Request, result: Map<String, Value>) -> Bytes {
    let result = match result.contains_key("resultType") {
        true => result,
        false => inner::for_era(x.era, result),
    };
    Bytes::from(jsonrpc::response_bytes_from_json(
        &x.rpc_id,
        Value::Object(result).to_string().as_bytes(),
    ))
}

/// How a script starts: fresh, or (2026-07-28) a paused one with the
/// client's answers for its pending call.
enum Begin {
    Fresh {
        script: String,
        inputs: Option<Value>,
        progress: Option<Value>,
        cfg: CodeConfig,
    },
    Resume {
        running: Box<driver::Running>,
        pending: inner::Pending,
        responses: Value,
    },
}

/// Runs a script for the caller of `x`: its result, an input request (a
/// paused script), or the tool error it ended with; the script's facts go on
/// `x`'s record (a paused script's request has none: the retry that ends it
/// is the script's record).
async fn execute(
    x: &mut Request,
    begin: Begin,
    out: Option<&mpsc::Sender<Bytes>>,
    cancel: &CancellationToken,
) -> Result<Map<String, Value>, Refusal> {
    let mut steps = None;
    let (mut running, first) = match begin {
        Begin::Fresh {
            script,
            inputs,
            progress,
            cfg,
        } => match driver::start(x, &script, inputs, cfg, progress, cancel).await {
            Ok(r) => (Box::new(r), None),
            Err(text) => {
                let digest = manifold_code::digest(&script);
                return ended(x, &digest, 0, None, Err(text), cancel);
            }
        },
        Begin::Resume {
            running,
            pending,
            responses,
        } => {
            let retry = Some((pending.state, responses));
            let answered = driver::call(
                x,
                &running,
                pending.name,
                pending.arguments,
                retry,
                out,
                cancel,
            )
            .await;
            match answered {
                Ok(inner::Inner::Answer(a)) => (running, Some(a)),
                Ok(inner::Inner::Input {
                    pending,
                    input_requests,
                }) => return pause(x, running, pending, input_requests),
                Err(text) => {
                    let (digest, calls) = (running.sha256.clone(), running.calls);
                    return ended(x, &digest, calls, None, Err(text), cancel);
                }
            }
        }
    };
    let step = driver::pump(x, &mut running, first, out, cancel, &mut steps).await;
    let (digest, calls) = (running.sha256.clone(), running.calls);
    match step {
        Ok(driver::Step::Paused {
            pending,
            input_requests,
        }) => pause(x, running, pending, input_requests),
        Ok(driver::Step::Finished(f)) => ended(x, &digest, f.calls, steps, Ok(f), cancel),
        Err(text) => ended(x, &digest, calls, steps, Err(text), cancel),
    }
}

/// A paused script: held for the retry, and its request answered with the
/// input its call needs (not a record of its own: the retry's is the
/// script's). Only a 2026-07-28 caller is asked so.
fn pause(
    x: &mut Request,
    running: Box<driver::Running>,
    pending: inner::Pending,
    input_requests: Value,
) -> Result<Map<String, Value>, Refusal> {
    if x.era != crate::era::Era::Stateless {
        let text = format!(
            "The script failed: call({:?}) asked for input in a way this client cannot be asked",
            pending.name
        );
        let (digest, calls) = (running.sha256.clone(), running.calls);
        return ended(
            x,
            &digest,
            calls,
            None,
            Err(text),
            &CancellationToken::new(),
        );
    }
    let state = paused::hold(
        x,
        paused::Paused {
            running: *running,
            pending,
            principal: x.principal.audit_name(),
            client: x.caller.client_info(),
        },
    )?;
    if let Some(o) = x.observation() {
        o.not_audited();
    }
    let mut result = Map::new();
    result.insert("resultType".into(), json!("input_required"));
    result.insert("inputRequests".into(), input_requests);
    result.insert("requestState".into(), json!(state));
    Ok(result)
}

/// A script's end: its facts on `x`'s record, and its result or tool error.
fn ended(
    x: &mut Request,
    sha256: &str,
    calls: u32,
    steps: Option<u64>,
    end: Result<manifold_code::Finished, driver::Stopped>,
    cancel: &CancellationToken,
) -> Result<Map<String, Value>, Refusal> {
    if let Some(o) = x.observation() {
        o.note(Facts {
            script: Some(manifold_audit::ScriptEvent {
                sha256: sha256.to_string(),
                calls: Some(calls),
                steps,
            }),
            ..Facts::default()
        });
    }
    match end {
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
