//! A script's calls out, as the caller: `call(name, arguments)` is a direct
//! `tools/call` through the whole call chain (the caller's view of the
//! endpoint, validation, rate limits, `[confirm]`, overrides, header
//! mirroring, retries and breakers, quarantine), with a request, an id and
//! an audit record of its own (`via = "run_script"`, the script's SHA-256);
//! `search(query, limit)` is the endpoint's search in the caller's view.
//!
//! Invariants: a meta-tool is never called from a script (`run_script`
//! cannot run itself); an inner call's messages before its answer (progress,
//! a confirmation's question) go to the script's stream when the client
//! takes one, and are dropped otherwise (its confirm step then never asks on
//! a stream); a tool error is an answer, a refusal fails the script with
//! its words.
//!
//! Not here: the worker (`worker.rs`), the chain (`crate::call`).

use bytes::Bytes;
use manifold_catalog::search::SearchRequest;
use manifold_code::ToWorker;
use manifold_protocol::methods as m;
use manifold_protocol::RequestId;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

use super::tool::{RUN_SCRIPT, VIA_RUN_SCRIPT};
use crate::era::Era;
use crate::handlers::discovery::{self, CALL_TOOL, SEARCH_TOOLS};
use crate::observe::{Facts, Observed};
use crate::reply::Reply;
use crate::request::{Arrival, Request};

/// What an inner call needs of its script.
pub(super) struct Script<'a> {
    /// The `run_script` request.
    pub x: &'a Request,
    pub sha256: &'a str,
    /// The client's progress token for the script, given to each call.
    pub progress: Option<&'a Value>,
    /// The script's stream, when the client takes one.
    pub out: Option<&'a mpsc::Sender<Bytes>>,
}

/// The id of a script's `n`th call: never one a client sends (a client's
/// `notifications/cancelled` can only name the script's own id).
pub(super) fn call_id(x: &Request, n: u32) -> RequestId {
    RequestId::string(format!("manifold-script:{}:{n}", x.arrival.request_id))
}

/// A call of a paused script that waits for the client's input.
pub(super) struct Pending {
    pub name: String,
    pub arguments: Value,
    /// The call's own `requestState` (the confirm step's).
    pub state: String,
}

/// What a call gives the script: an answer (or a refusal) for the worker, or
/// (2026-07-28) the client's input it needs first.
pub(super) enum Inner {
    Answer(ToWorker),
    Input {
        pending: Pending,
        /// The call's `inputRequests`, for the client.
        input_requests: Value,
    },
}

/// `call(name, arguments)`, as the caller; `retry`: the call's own
/// `requestState` and the client's `inputResponses` for it.
pub(super) async fn call(
    s: &Script<'_>,
    id: RequestId,
    name: String,
    arguments: Value,
    retry: Option<(String, Value)>,
) -> Inner {
    if [RUN_SCRIPT, SEARCH_TOOLS, CALL_TOOL].contains(&name.as_str()) {
        return Inner::Answer(ToWorker::Refused(format!(
            "call({name:?}) is refused: a script calls the endpoint's tools, not its meta-tools (use search() to find tools)"
        )));
    }
    let x = s.x;
    let mut params = Map::new();
    params.insert("name".into(), Value::String(name.clone()));
    params.insert("arguments".into(), arguments.clone());
    if let Some(token) = s.progress {
        let mut meta = Map::new();
        meta.insert("progressToken".into(), token.clone());
        params.insert("_meta".into(), Value::Object(meta));
    }
    if let Some((state, responses)) = &retry {
        params.insert("requestState".into(), Value::String(state.clone()));
        params.insert("inputResponses".into(), responses.clone());
    }
    let bytes = serde_json::to_vec(&params).map_or(0, |b| b.len());
    let request_id = x.gw.request_id();
    let mut obs = Observed::start(&x.gw, &request_id, bytes, m::TOOLS_CALL);
    if *x.arrival.endpoint != *x.gw.default_endpoint() {
        obs.endpoint = Some(x.arrival.endpoint.clone());
    }
    obs.admitted(
        x.caller.session().map(|s| s.digest.as_str()),
        x.caller.client_info(),
        x.principal.audit_name(),
        x.principal.metrics_label(x.gw.cfg().principal_label),
    );
    let mut inner = Request {
        gw: x.gw.clone(),
        arrival: Arrival {
            request_id,
            bytes,
            ..x.arrival.clone()
        },
        era: x.era,
        caller: x.caller.clone(),
        principal: x.principal.clone(),
        rpc_id: id.clone(),
        method: m::TOOLS_CALL.to_string(),
        obs: Some(obs),
    };
    // A retry of a call an upstream holds for input goes on as that call
    // (whose record it is), as the route does for a direct retry.
    let held = match retry.is_some() {
        true => crate::call::held(&mut inner, &params).await,
        false => None,
    };
    let result = match held {
        Some(r) => r,
        None => {
            if let Some(o) = inner.observation() {
                o.audit(&params);
                o.note(Facts {
                    via: Some(VIA_RUN_SCRIPT),
                    script: Some(manifold_audit::ScriptEvent {
                        sha256: s.sha256.to_string(),
                        calls: None,
                        steps: None,
                    }),
                    ..Facts::default()
                });
            }
            crate::call::tool(&mut inner, params).await
        }
    };
    let reply = crate::observe::answered(inner.obs.take(), result, &id, x.era).await;
    answer_of(&name, arguments, reply, &id, s.out).await
}

/// The answer in `reply` (to request `id`): a result the script reads, or a
/// JSON-RPC error that fails it.
async fn answer_of(
    name: &str,
    arguments: Value,
    reply: Reply,
    id: &RequestId,
    out: Option<&mpsc::Sender<Bytes>>,
) -> Inner {
    Inner::Answer(
        match answer_or_input(name, arguments, reply, id, out).await {
            Ok(answer) => answer,
            Err(input) => return input,
        },
    )
}

/// [`answer_of`], with the input a call needs as `Err`.
async fn answer_or_input(
    name: &str,
    arguments: Value,
    reply: Reply,
    id: &RequestId,
    out: Option<&mpsc::Sender<Bytes>>,
) -> Result<ToWorker, Inner> {
    let message = match reply {
        Reply::Message { bytes, .. } => bytes,
        Reply::Stream(mut rx) => loop {
            let Some(m) = rx.recv().await else {
                return Ok(ToWorker::Refused(format!(
                    "call({name:?}) ended without an answer"
                )));
            };
            if is_answer_to(&m, id) {
                break m;
            }
            // Progress, a log line, a question for the human: the script's
            // client sees it on the script's stream.
            if let Some(out) = out {
                let _ = out.send(m).await;
            }
        },
        Reply::Accepted | Reply::Ended => {
            return Ok(ToWorker::Refused(format!(
                "call({name:?}) ended without an answer"
            )))
        }
    };
    let Ok(Value::Object(mut msg)) = serde_json::from_slice::<Value>(&message) else {
        return Ok(ToWorker::Refused(format!(
            "call({name:?}): the answer is not JSON"
        )));
    };
    if let Some(Value::Object(mut result)) = msg.remove("result") {
        if result.get("resultType").and_then(Value::as_str) == Some("input_required") {
            let state = result
                .get("requestState")
                .and_then(Value::as_str)
                .map(str::to_owned);
            let requests = result.remove("inputRequests");
            return match (state, requests) {
                (Some(state), Some(input_requests)) => Err(Inner::Input {
                    pending: Pending {
                        name: name.to_string(),
                        arguments,
                        state,
                    },
                    input_requests,
                }),
                _ => Ok(ToWorker::Refused(format!(
                    "call({name:?}) asked for input without saying what (no inputRequests or requestState)"
                ))),
            };
        }
        // The era's decoration, not the tool's.
        result.remove("resultType");
        return Ok(ToWorker::Answer(Value::Object(result)));
    }
    let error = msg.get("error");
    let text = error
        .and_then(|e| e.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("an error");
    let code = error.and_then(|e| e.get("code")).and_then(Value::as_i64);
    Ok(ToWorker::Refused(match code {
        Some(c) => format!("call({name:?}) was refused: {text} (JSON-RPC error {c})"),
        None => format!("call({name:?}) was refused: {text}"),
    }))
}

/// Whether `m` is the response to request `id`.
fn is_answer_to(m: &[u8], id: &RequestId) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        id: Option<Value>,
        result: Option<serde::de::IgnoredAny>,
        error: Option<serde::de::IgnoredAny>,
    }
    serde_json::from_slice::<Probe>(m).is_ok_and(|p| {
        p.id.as_ref() == Some(id.as_value()) && (p.result.is_some() || p.error.is_some())
    })
}

/// `search(query, limit)`: the definitions `search_tools` would give, rate
/// limited as `search_tools` is for this caller.
pub(super) async fn search(x: &Request, query: String, limit: u64) -> ToWorker {
    let _places = match crate::call::search_places(x, SEARCH_TOOLS).await {
        Ok(p) => p,
        Err(r) => return ToWorker::Refused(format!("search() was refused: {r}")),
    };
    let mut args = Map::new();
    args.insert("query".into(), Value::String(query));
    args.insert("limit".into(), Value::from(limit));
    let request = match SearchRequest::from_arguments(&args) {
        Ok(r) => r,
        Err(e) => return ToWorker::Refused(format!("search: {e}")),
    };
    match discovery::found(x, request, false).await {
        Ok(bytes) => match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(mut o)) => ToWorker::Answer(o.remove("tools").unwrap_or_default()),
            _ => ToWorker::Refused("search: the definitions are not JSON".into()),
        },
        Err(e) => ToWorker::Refused(e.to_string()),
    }
}

/// A result for the era: 2026-07-28 results say they are complete.
pub(super) fn for_era(era: Era, mut result: Map<String, Value>) -> Map<String, Value> {
    if era == Era::Stateless {
        result.insert("resultType".into(), Value::String("complete".into()));
    }
    result
}
