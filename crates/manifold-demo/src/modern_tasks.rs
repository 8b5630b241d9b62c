//! The Tasks extension (`io.modelcontextprotocol/tasks`) in the demo's
//! 2026-07-28 mode (`--modern`): a small in-memory task store, the tools that
//! make tasks, and `tasks/get`, `tasks/update`, `tasks/cancel`.
//!
//! Tools (each becomes a task only for a request that declares the
//! extension in its `_meta` clientCapabilities):
//! - `task_slow {ms, ttl_ms?}`: optional — synchronous for a non-declaring
//!   request; else a task that completes after `ms` (cancellable);
//! - `task_required {}`: required — -32021 without the extension;
//! - `task_ask {}`: required — goes `input_required` with one elicitation
//!   (`confirm-1`), completes once `tasks/update` answers it, echoing the answer;
//! - `task_fail {}`: required — ends `failed` with a JSON-RPC error;
//! - `task_unasked {}`: a broken server's tool — a task (working until
//!   cancelled) whatever the request declared;
//! - `task_stats {}`: what reached the store (counts per method, the last
//!   `Mcp-Name`, the last `inputResponses`), for tests to assert on.
//!
//! A task is keyed by its id alone (any connection reaches it); a task past its
//! `ttlMs` is forgotten (-32602, as after an upstream restart).
//!
//! Not here: the rest of the 2026-07-28 mode (`modern`).

use parking_lot::Mutex;
use serde_json::{json, Map, Value};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio_util::sync::CancellationToken;

use crate::codes;
use crate::jsonrpc::RpcError;
use crate::transport::CallContext;

const EXTENSION: &str = "io.modelcontextprotocol/tasks";
const META_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
/// -32021: a capability the client did not declare.
const MISSING_CAPABILITY: i64 = -32021;
/// -32020: a routing header that disagrees with the body.
const HEADER_MISMATCH: i64 = -32020;
/// Every task's `ttlMs` unless `task_slow` says otherwise.
const DEFAULT_TTL_MS: u64 = 60_000;
const POLL_INTERVAL_MS: u64 = 100;
/// The longest `task_slow` sleeps.
const MAX_SLEEP_MS: u64 = 120_000;
/// Tasks kept at most (the oldest are forgotten first).
const MAX_TASKS: usize = 1024;

/// The tools of this module (appended to the modern catalog).
pub fn tools() -> Vec<Value> {
    let empty = json!({"type": "object", "properties": {}});
    vec![
        json!({"name": "task_slow", "description": "Sleeps `ms`; a task for requests that declare the Tasks extension.",
            "inputSchema": {"type": "object", "properties": {"ms": {"type": "integer"}, "ttl_ms": {"type": "integer"}}}}),
        json!({"name": "task_required", "description": "Runs only as a task.", "inputSchema": empty}),
        json!({"name": "task_ask", "description": "A task that asks for confirmation (elicitation) and echoes the answer.", "inputSchema": empty}),
        json!({"name": "task_fail", "description": "A task that fails with a JSON-RPC error.", "inputSchema": empty}),
        json!({"name": "task_unasked", "description": "A task whatever the request declared (a broken server); it works until cancelled.", "inputSchema": empty}),
        json!({"name": "task_stats", "description": "What reached the task store.", "inputSchema": empty}),
    ]
}

struct Task {
    status: &'static str,
    created_at: String,
    updated_at: String,
    born: Instant,
    ttl_ms: u64,
    /// `result` (completed), `error` (failed) or `inputRequests` (input_required).
    detail: Option<(&'static str, Value)>,
    cancel: CancellationToken,
}

/// The store and what reached it.
#[derive(Default)]
pub struct Store {
    tasks: Mutex<HashMap<String, Task>>,
    next: AtomicU64,
    stats: Mutex<Map<String, Value>>,
}

fn declared(params: &Map<String, Value>) -> bool {
    params
        .get("_meta")
        .and_then(|m| m.get(META_CAPS))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(EXTENSION))
        .is_some_and(Value::is_object)
}

fn missing() -> RpcError {
    RpcError::new(MISSING_CAPABILITY, "Missing required client capability")
}

fn text(t: &str) -> Value {
    json!({"content": [{"type": "text", "text": t}]})
}

impl Store {
    fn count(&self, what: &str) {
        let mut s = self.stats.lock();
        let n = s.get(what).and_then(Value::as_u64).unwrap_or(0);
        s.insert(what.into(), json!(n + 1));
    }

    /// A new task, `working`; its id.
    fn create(&self, ttl_ms: u64) -> (String, CancellationToken) {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let id = format!("demo-task-{n}-{nanos:08x}");
        let now = manifold_foundation::time::rfc3339_seconds(SystemTime::now());
        let cancel = CancellationToken::new();
        let mut tasks = self.tasks.lock();
        if tasks.len() >= MAX_TASKS {
            if let Some(oldest) = tasks
                .iter()
                .min_by_key(|(_, t)| t.born)
                .map(|(k, _)| k.clone())
            {
                tasks.remove(&oldest);
            }
        }
        tasks.insert(
            id.clone(),
            Task {
                status: "working",
                created_at: now.clone(),
                updated_at: now,
                born: Instant::now(),
                ttl_ms,
                detail: None,
                cancel: cancel.clone(),
            },
        );
        (id, cancel)
    }

    /// Moves a task on, unless it already ended.
    fn set(&self, id: &str, status: &'static str, detail: Option<(&'static str, Value)>) {
        if let Some(t) = self.tasks.lock().get_mut(id) {
            if matches!(t.status, "completed" | "failed" | "cancelled") {
                return;
            }
            t.status = status;
            t.detail = detail;
            t.updated_at = manifold_foundation::time::rfc3339_seconds(SystemTime::now());
        }
    }

    /// The task as `tasks/get` shows it (`None`: unknown, or past its TTL).
    fn view(&self, id: &str) -> Option<Value> {
        let mut tasks = self.tasks.lock();
        let expired = tasks
            .get(id)
            .is_some_and(|t| t.born.elapsed() > Duration::from_millis(t.ttl_ms));
        if expired {
            tasks.remove(id);
        }
        let t = tasks.get(id)?;
        let mut v = json!({
            "taskId": id, "status": t.status, "createdAt": t.created_at,
            "lastUpdatedAt": t.updated_at, "ttlMs": t.ttl_ms, "pollIntervalMs": POLL_INTERVAL_MS
        });
        if let Some((k, d)) = &t.detail {
            v[*k] = d.clone();
        }
        Some(v)
    }

    fn created(&self, id: &str) -> Value {
        let mut v = self.view(id).unwrap_or_else(|| json!({"taskId": id}));
        if let Value::Object(m) = &mut v {
            m.shift_remove("result");
            m.shift_remove("error");
            m.shift_remove("inputRequests");
            let mut out = Map::new();
            out.insert("resultType".into(), json!("task"));
            out.extend(std::mem::take(m));
            return Value::Object(out);
        }
        v
    }

    /// `tools/call` of one of this module's tools; `None`: not one of them.
    pub(crate) async fn call(
        self: &Arc<Self>,
        name: &str,
        params: &Map<String, Value>,
    ) -> Option<Result<Value, RpcError>> {
        let args = params.get("arguments").and_then(Value::as_object);
        let arg = |k: &str| args.and_then(|a| a.get(k)).and_then(Value::as_u64);
        let declared = declared(params);
        Some(match name {
            "task_stats" => Ok(json!({
                "resultType": "complete",
                "content": [{"type": "text", "text": "task store statistics"}],
                "structuredContent": Value::Object(self.stats.lock().clone())
            })),
            "task_slow" => {
                let ms = arg("ms").unwrap_or(0).min(MAX_SLEEP_MS);
                if !declared {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    return Some(Ok(complete(text(&format!("slept {ms} ms")))));
                }
                let (id, cancel) = self.create(arg("ttl_ms").unwrap_or(DEFAULT_TTL_MS));
                let (store, tid) = (self.clone(), id.clone());
                tokio::spawn(async move {
                    tokio::select! {
                        _ = cancel.cancelled() => {}
                        _ = tokio::time::sleep(Duration::from_millis(ms)) => {
                            let r = text(&format!("slept {ms} ms"));
                            store.set(&tid, "completed", Some(("result", r)));
                        }
                    }
                });
                Ok(self.created(&id))
            }
            "task_unasked" => {
                self.count("task_unasked");
                let (id, _) = self.create(DEFAULT_TTL_MS);
                Ok(self.created(&id))
            }
            "task_required" | "task_ask" | "task_fail" if !declared => Err(missing()),
            "task_required" => {
                let (id, _) = self.create(DEFAULT_TTL_MS);
                self.set(&id, "completed", Some(("result", text("required done"))));
                Ok(self.created(&id))
            }
            "task_fail" => {
                let (id, _) = self.create(DEFAULT_TTL_MS);
                let error = json!({"code": codes::INTERNAL_ERROR, "message": "the job failed"});
                self.set(&id, "failed", Some(("error", error)));
                Ok(self.created(&id))
            }
            "task_ask" => {
                let (id, _) = self.create(DEFAULT_TTL_MS);
                let ask = json!({"confirm-1": {"method": "elicitation/create", "params": {
                    "mode": "form", "message": "Proceed?",
                    "requestedSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}}
                }}});
                self.set(&id, "input_required", Some(("inputRequests", ask)));
                Ok(self.created(&id))
            }
            _ => return None,
        })
    }

    /// `tasks/get`, `tasks/update`, `tasks/cancel`.
    pub(crate) fn request(
        &self,
        method: &str,
        params: &Map<String, Value>,
        ctx: &CallContext,
    ) -> Result<Value, RpcError> {
        self.count(method);
        let name = ctx.mcp_headers.get("mcp-name").cloned();
        self.stats
            .lock()
            .insert("last_mcp_name".into(), name.clone().unwrap_or(Value::Null));
        if !declared(params) {
            return Err(missing());
        }
        let Some(id) = params.get("taskId").and_then(Value::as_str) else {
            return Err(RpcError::invalid_params("params.taskId must be a string"));
        };
        if name
            .as_ref()
            .and_then(Value::as_str)
            .is_some_and(|n| n != id)
        {
            return Err(RpcError::new(
                HEADER_MISMATCH,
                "Mcp-Name does not match taskId",
            ));
        }
        let unknown = || RpcError::invalid_params("Failed to retrieve task: Task not found");
        let task = self.view(id).ok_or_else(unknown)?;
        match method {
            "tasks/get" => Ok(complete(task)),
            "tasks/update" => {
                let responses = params.get("inputResponses").cloned().unwrap_or(Value::Null);
                self.stats
                    .lock()
                    .insert("last_input_responses".into(), responses.clone());
                if let Some(answer) = responses.get("confirm-1") {
                    let r = json!({"content": [{"type": "text", "text": format!("confirmed: {answer}")}]});
                    self.set(id, "completed", Some(("result", r)));
                }
                Ok(json!({"resultType": "complete"}))
            }
            _ => {
                if let Some(t) = self.tasks.lock().get(id) {
                    t.cancel.cancel();
                }
                self.set(id, "cancelled", None);
                Ok(json!({"resultType": "complete"}))
            }
        }
    }
}

/// `resultType: "complete"` first, then the result's members.
fn complete(result: Value) -> Value {
    let mut out = Map::new();
    out.insert("resultType".into(), json!("complete"));
    if let Value::Object(m) = result {
        out.extend(m);
    }
    Value::Object(out)
}
