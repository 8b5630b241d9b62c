//! The demo upstream MCP server: what the shipped `gateway.toml` fronts
//! (`manifold demo-upstream`), and the upstream the tests and benchmarks use
//! (the `manifold-demo-upstream` binary).
//!
//! What: a small, spec-correct MCP server (protocol revisions 2024-11-05,
//! 2025-03-26, 2025-06-18 and 2025-11-25, and 2026-07-28 with `--modern`) whose
//! default catalogue shows a gateway off: tools (echo, add, weather, progress,
//! sampling, elicitation, resource links, logging, list changes), prompts and
//! resources, with members no spec defines to prove lossless pass-through. Fault
//! modes (a failing tool, a hanging tool, a crashing process, oversized
//! requests refused) are off unless a flag switches them on (`--faults`,
//! `--fail-initialize`, `--bad-request-over`); tests pass those flags.
//!
//! This module is the transport-independent protocol logic: JSON-RPC
//! classification, per-connection [`Session`] state and method dispatch.
//! [`stdio`] and [`http`] only move messages; [`tools`] holds the catalog.
//!
//! Invariants:
//! - Every request gets exactly one response, except a request the client
//!   cancelled with `notifications/cancelled`, which gets none (per spec).
//! - Requests are handled concurrently; nothing here holds a lock across an
//!   `.await`.
//! - The tool catalog is server-wide (shared by all HTTP sessions), so
//!   `notifications/tools/list_changed` goes out on the server-wide event
//!   channel rather than on a request's own stream.
//!
//! What not: no batching (removed from MCP in 2025-06-18; batches are answered
//! with -32600), no resumable streams, no authorization, no MCP SDK.

pub mod app;
pub mod catalog;
pub mod cli;
pub mod flaky;
pub mod http;
pub mod modern;
pub mod modern_tasks;
mod resources;
pub mod rogue;
pub mod skill;
pub mod stdio;
pub mod tools;

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use serde_json::{json, Map, Value};
use tokio::sync::{broadcast, mpsc, oneshot};
use tokio_util::sync::CancellationToken;

/// Protocol revisions this server speaks, oldest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// Offered when the client asks for a revision we do not know.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";
pub const SERVER_NAME: &str = "manifold-demo-upstream";
pub const SERVER_VERSION: &str = "0.1.0";
pub const DEFAULT_INSTRUCTIONS: &str =
    "Manifold demo upstream: a mock MCP server for demos, tests and benchmarks.";

/// JSON-RPC 2.0 / MCP error codes used by the demo server.
pub mod codes {
    pub const PARSE_ERROR: i64 = -32700;
    pub const INVALID_REQUEST: i64 = -32600;
    pub const METHOD_NOT_FOUND: i64 = -32601;
    pub const INVALID_PARAMS: i64 = -32602;
    pub const UNSUPPORTED_VERSION: i64 = -32022;
    pub const INTERNAL_ERROR: i64 = -32603;
    /// MCP's "resource not found".
    pub const RESOURCE_NOT_FOUND: i64 = -32002;
}

/// Behaviour knobs, mirrored one-to-one by the CLI flags.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// `tools/list` page size; 0 disables pagination.
    pub page_size: usize,
    /// Number of extra `synthetic_NNNN` tools (large-catalog benchmarks).
    pub synthetic_tools: usize,
    /// `instructions` in the initialize result; `None` omits the member.
    pub instructions: Option<String>,
    /// The listed `demo://readme` resource's description.
    pub readme_description: String,
    /// `--app NAME`: also the MCP Apps tool and UI resource ([`app`]).
    pub app: Option<String>,
    /// `--skill TEXT`: also the Skills extension and one skill ([`skill`]).
    pub skill: Option<String>,
    /// `--skill-digest-lies`: the skill's entry announces a wrong digest.
    pub skill_digest_lies: bool,
    /// Answer `initialize` with -32603 to exercise startup failures.
    pub fail_initialize: bool,
    /// Speak 2026-07-28 only (stateless; see [`modern`]).
    pub modern: bool,
    /// Modern mode: offer the Tasks extension (see [`modern_tasks`]).
    pub tasks: bool,
    /// `ttlMs` on lists and `server/discover` in modern mode.
    pub list_ttl_ms: u64,
    /// Modern mode: declare no `tools.listChanged` and send none.
    pub no_list_changed: bool,
    /// HTTP: POST bodies over this many bytes get 400 with a null-id error.
    pub bad_request_over: Option<usize>,
    /// List and serve the fault tools (`fail`, `sleep`, `crash`; see
    /// the registry's fault tools, `tools`). Tests pass `--faults`; the shipped catalogue has none.
    pub faults: bool,
    /// Fault mode: a hung server. `tools/call` (and `notifications/cancelled`) is
    /// taken and never answered: over HTTP the POST stays open unanswered; over
    /// stdio the process stops reading stdin at the first `tools/call`.
    pub hang_calls: bool,
    /// Diagnostics: a tool `env` that reports one environment variable.
    pub env_tool: bool,
    /// Diagnostics: start a `sleep` process at launch (a grandchild of whoever
    /// started this server) and report its pid with the tool `grandchild`.
    pub spawn_grandchild: bool,
    /// The diagnostic tool `trace` (`--trace-tool`).
    pub trace_tool: bool,
    /// The diagnostic tools `slow_read` (a slow read-only tool) and `calls`
    /// (`--slow-read-tool`).
    pub slow_read_tool: bool,
    /// The `file:///srv/docs/{+path}` template, reads echoing their URI
    /// (`--docs`, see [`resources`]).
    pub docs: bool,
    /// `add_tool` announces `list_changed` in the calling request's stream
    /// only, as SDK servers with one server object per session do, instead of
    /// to every session (`--notify-caller-only`).
    pub notify_caller_only: bool,
    /// stdio: handle one `tools/call` at a time, each taking this long first
    /// (`--serial-calls MS`): a single-threaded server, for pool tests and
    /// benchmarks. `crash` is not queued (it kills the child with its queue).
    pub serial_calls: Option<std::time::Duration>,
    /// Fault modes (`--misbehave`), see [`rogue`].
    pub misbehave: rogue::Rogue,
    /// A flaky upstream (`--flaky-*`), see [`flaky`].
    pub flaky: flaky::Flaky,
    /// Catalogue mode (`--catalog`, `--catalog-server`): these tools instead of
    /// the demo's own, see [`catalog`].
    pub catalog: Option<Arc<catalog::ServedCatalog>>,
}

impl DemoConfig {
    /// Whether this message is one a hung server (`--hang-calls`) never answers.
    pub fn hangs_on(&self, incoming: &Incoming) -> bool {
        self.hang_calls
            && match incoming {
                Incoming::Request { method, .. } => method == "tools/call",
                Incoming::Notification { method, .. } => method == "notifications/cancelled",
                _ => false,
            }
    }
}

/// `ttlMs` of the modern mode's lists unless `--list-ttl-ms` says otherwise.
pub const DEFAULT_LIST_TTL_MS: u64 = 60_000;

impl Default for DemoConfig {
    fn default() -> Self {
        Self {
            page_size: 0,
            synthetic_tools: 0,
            instructions: Some(DEFAULT_INSTRUCTIONS.to_owned()),
            readme_description: README_DESCRIPTION.to_owned(),
            app: None,
            skill: None,
            skill_digest_lies: false,
            fail_initialize: false,
            modern: false,
            tasks: false,
            list_ttl_ms: DEFAULT_LIST_TTL_MS,
            no_list_changed: false,
            bad_request_over: None,
            faults: false,
            hang_calls: false,
            env_tool: false,
            spawn_grandchild: false,
            trace_tool: false,
            slow_read_tool: false,
            docs: false,
            notify_caller_only: false,
            serial_calls: None,
            misbehave: rogue::Rogue::default(),
            flaky: flaky::Flaky::default(),
            catalog: None,
        }
    }
}

/// Which transport carries the session; a few tools behave differently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    Stdio,
    Http,
}

/// A JSON-RPC error produced while handling a request.
#[derive(Debug, Clone)]
pub struct RpcError {
    pub code: i64,
    pub message: String,
}

impl RpcError {
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(codes::INVALID_PARAMS, message)
    }
}

/// `{"jsonrpc":"2.0","id":id,"result":result}`.
pub fn rpc_result(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// `{"jsonrpc":"2.0","id":id,"error":{code,message}}`.
pub fn rpc_error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The reply to input that is not JSON at all (id is unknowable, hence null).
pub fn parse_error() -> Value {
    rpc_error(Value::Null, codes::PARSE_ERROR, "Parse error")
}

/// A notification message (no id).
pub fn notification(method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "method": method, "params": params})
}

/// Map key for a JSON-RPC id. Serialized form keeps `1` and `"1"` distinct.
fn id_key(id: &Value) -> String {
    id.to_string()
}

/// One inbound JSON-RPC message, classified.
#[derive(Debug)]
pub enum Incoming {
    Request {
        id: Value,
        method: String,
        params: Map<String, Value>,
    },
    Notification {
        method: String,
        params: Map<String, Value>,
    },
    /// A client's answer to one of our server→client requests (whole message).
    Response { id: Value, message: Value },
    /// Not a valid message; the payload is the error response to send back.
    Invalid(Value),
}

/// Classify a parsed JSON value as a JSON-RPC 2.0 message.
pub fn classify(message: Value) -> Incoming {
    let Value::Object(mut obj) = message else {
        let text = if message.is_array() {
            "Invalid Request: batches are not supported"
        } else {
            "Invalid Request: expected a JSON object"
        };
        return Incoming::Invalid(rpc_error(Value::Null, codes::INVALID_REQUEST, text));
    };
    // Never answer a response, even a malformed one (e.g. an error with a
    // null id): replying could ping-pong errors with the peer forever.
    if !obj.contains_key("method") && (obj.contains_key("result") || obj.contains_key("error")) {
        let id = obj.get("id").cloned().unwrap_or(Value::Null);
        return Incoming::Response {
            id,
            message: Value::Object(obj),
        };
    }
    // MCP ids are strings or numbers; anything else cannot be echoed back.
    let id = match obj.get("id") {
        None => None,
        Some(id @ (Value::String(_) | Value::Number(_))) => Some(id.clone()),
        Some(_) => {
            return Incoming::Invalid(rpc_error(
                Value::Null,
                codes::INVALID_REQUEST,
                "Invalid Request: id must be a string or a number",
            ))
        }
    };
    let invalid = |text: &str| {
        rpc_error(
            id.clone().unwrap_or(Value::Null),
            codes::INVALID_REQUEST,
            text,
        )
    };
    if obj.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return Incoming::Invalid(invalid("Invalid Request: jsonrpc must be \"2.0\""));
    }
    match obj.remove("method") {
        Some(Value::String(method)) => {
            let params = match obj.remove("params") {
                None | Some(Value::Null) => Map::new(),
                Some(Value::Object(params)) => params,
                Some(_) => {
                    return Incoming::Invalid(rpc_error(
                        id.unwrap_or(Value::Null),
                        codes::INVALID_PARAMS,
                        "Invalid params: params must be an object",
                    ))
                }
            };
            match id {
                Some(id) => Incoming::Request { id, method, params },
                None => Incoming::Notification { method, params },
            }
        }
        Some(_) => Incoming::Invalid(invalid("Invalid Request: method must be a string")),
        None => Incoming::Invalid(invalid(
            "Invalid Request: not a request, notification or response",
        )),
    }
}

/// Server-wide state: configuration, the tool catalog and the event channel.
pub struct DemoServer {
    config: DemoConfig,
    transport: TransportKind,
    tools: tools::Catalog,
    /// Messages not tied to any request (tools/list_changed). Transports
    /// forward them: stdout for stdio, each session's GET stream for HTTP.
    events: broadcast::Sender<Value>,
    /// The last `logging/setLevel` (the `log_level` tool reports it).
    log_level: Mutex<Option<String>>,
    /// URIs with a `resources/subscribe` in force (the `touch` tool checks it).
    subscribed: Mutex<std::collections::HashSet<String>>,
    /// URIs in the `resourceSubscriptions` of open `subscriptions/listen`
    /// streams (`--modern`), counted per stream.
    watched: Mutex<HashMap<String, usize>>,
    /// Tasks (`--modern --tasks`).
    pub(crate) task_store: Arc<modern_tasks::Store>,
    /// The pid of the process started at launch (`--spawn-grandchild`).
    grandchild: Option<u32>,
    /// `tools/call`s that arrived, by tool (the `calls` tool reports them).
    pub(crate) arrivals: flaky::Arrivals,
    /// `slow_read` calls that began: each result carries its number.
    pub(crate) slow_reads: std::sync::atomic::AtomicU64,
}

impl DemoServer {
    pub fn new(config: DemoConfig, transport: TransportKind) -> Arc<Self> {
        let (events, _) = broadcast::channel(64);
        let mut diagnostics = Vec::new();
        if config.env_tool {
            diagnostics.push("env");
        }
        if config.trace_tool {
            diagnostics.push("trace");
        }
        // Not waited for: it is meant to outlive this process unless its process
        // group is stopped with it.
        let grandchild = config
            .spawn_grandchild
            .then(|| std::process::Command::new("sleep").arg("3600").spawn().ok())
            .flatten()
            .map(|c| c.id());
        if grandchild.is_some() {
            diagnostics.push("grandchild");
        }
        if config.slow_read_tool {
            diagnostics.push("slow_read");
        }
        if config.flaky.is_on() || config.slow_read_tool {
            diagnostics.push("calls");
        }
        if config.misbehave.has(rogue::Misbehaviour::BrokenSchema) {
            diagnostics.push("broken_schema");
        }
        if config.misbehave.has(rogue::Misbehaviour::RugPull) {
            diagnostics.push("rug_pull");
        }
        config.misbehave.flood_stderr();
        Arc::new(Self {
            grandchild,
            arrivals: Default::default(),
            slow_reads: Default::default(),
            tools: match &config.catalog {
                Some(served) => tools::Catalog::listing(served.tools().to_vec()),
                None => tools::Catalog::with_diagnostics(
                    config.synthetic_tools,
                    config.faults,
                    &diagnostics,
                ),
            },
            config,
            transport,
            events,
            log_level: Mutex::new(None),
            subscribed: Mutex::new(Default::default()),
            watched: Mutex::new(Default::default()),
            task_store: Default::default(),
        })
    }

    pub fn config(&self) -> &DemoConfig {
        &self.config
    }

    pub fn transport(&self) -> TransportKind {
        self.transport
    }

    /// Subscribe to server-wide notifications sent from now on.
    pub fn subscribe_events(&self) -> broadcast::Receiver<Value> {
        self.events.subscribe()
    }

    /// Send a server-wide notification; dropped when nobody listens (the
    /// spec lets a server skip notifications it has no stream for).
    fn broadcast(&self, message: Value) {
        let _ = self.events.send(message);
    }

    /// Adds the tool `name` and announces `list_changed` to every listener;
    /// false (and nothing sent) when the name is taken.
    pub fn add_tool_and_announce(&self, name: &str) -> bool {
        let added = self.tools.add_dynamic(name);
        if added {
            self.broadcast(notification("notifications/tools/list_changed", json!({})));
        }
        added
    }

    pub fn new_session(self: &Arc<Self>) -> Arc<Session> {
        Arc::new(Session {
            server: Arc::clone(self),
            in_flight: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            next_request: AtomicU64::new(0),
            client_capabilities: Mutex::new(None),
        })
    }
}

/// What a transport provides to one request while it is handled.
#[derive(Debug, Default)]
pub struct CallContext {
    /// Where messages tied to this request go (progress notifications,
    /// server→client requests). `None` when the transport cannot deliver
    /// them, e.g. an HTTP client that does not accept `text/event-stream`.
    pub outbound: Option<mpsc::UnboundedSender<Value>>,
    /// Request headers whose lowercase name starts with `mcp-` (HTTP only).
    pub mcp_headers: Map<String, Value>,
}

/// Per-connection state (one stdio process, or one HTTP `Mcp-Session-Id`).
pub struct Session {
    server: Arc<DemoServer>,
    /// Cancellation handles of requests being handled, by id key.
    in_flight: Mutex<HashMap<String, CancellationToken>>,
    /// Our server→client requests awaiting the client's response, by id key.
    pending: Mutex<HashMap<String, oneshot::Sender<Value>>>,
    next_request: AtomicU64,
    client_capabilities: Mutex<Option<Value>>,
}

/// Removes a map entry when the owning future finishes or is dropped, so
/// cancelled or aborted work never leaks entries.
struct RemoveOnDrop<'a, T> {
    map: &'a Mutex<HashMap<String, T>>,
    key: String,
}

impl<T> Drop for RemoveOnDrop<'_, T> {
    fn drop(&mut self) {
        self.map.lock().remove(&self.key);
    }
}

impl Session {
    pub fn server(&self) -> &Arc<DemoServer> {
        &self.server
    }

    /// Handle a request; `None` means "send nothing" (the client cancelled it).
    pub async fn handle_request(
        self: &Arc<Self>,
        id: Value,
        method: String,
        params: Map<String, Value>,
        ctx: CallContext,
    ) -> Option<Value> {
        let detail = match params.get("name").and_then(Value::as_str) {
            Some(name) if method == "tools/call" => format!(" {name}"),
            _ => String::new(),
        };
        eprintln!("{SERVER_NAME}: {method}{detail} (id {id})");
        // The spec forbids cancelling initialize, so it is never registered.
        if method == "initialize" && !self.server.config.modern {
            return Some(respond(id, self.initialize(&params)));
        }
        let token = CancellationToken::new();
        let key = id_key(&id);
        self.in_flight.lock().insert(key.clone(), token.clone());
        let _registered = RemoveOnDrop {
            map: &self.in_flight,
            key,
        };
        tokio::select! {
            biased;
            _ = token.cancelled() => {
                eprintln!("{SERVER_NAME}: request {id} cancelled; no response is sent");
                None
            }
            outcome = self.dispatch_era(&id, &method, &params, &ctx) => Some(respond(id, outcome)),
        }
    }

    /// Handle a client notification (never answered).
    pub fn handle_notification(&self, method: &str, params: &Map<String, Value>) {
        if method == "notifications/cancelled" && self.server.config.misbehave.honours_cancel() {
            if let Some(id) = params.get("requestId") {
                if let Some(token) = self.in_flight.lock().get(&id_key(id)) {
                    token.cancel();
                }
            }
        }
        // notifications/initialized and anything else: accepted silently.
    }

    /// Deliver a client's response to the matching server→client request.
    /// Returns false when no such request is pending.
    pub fn handle_response(&self, id: &Value, message: Value) -> bool {
        let waiter = self.pending.lock().remove(&id_key(id));
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(message);
                true
            }
            None => {
                eprintln!("{SERVER_NAME}: ignoring response to unknown request {id}");
                false
            }
        }
    }

    /// Session end: cancel in-flight work and fail pending client requests.
    pub fn cancel_all(&self) {
        for (_, token) in self.in_flight.lock().drain() {
            token.cancel();
        }
        self.pending.lock().clear();
    }

    /// Send a server→client request over `ctx.outbound` and await the answer.
    /// `Ok(result)` or `Err(error message)`, ready for a tool-level result.
    async fn request_client(
        &self,
        ctx: &CallContext,
        method: &str,
        params: Value,
    ) -> Result<Value, String> {
        let Some(outbound) = &ctx.outbound else {
            return Err("the transport cannot carry server-to-client requests here".into());
        };
        let n = self.next_request.fetch_add(1, Ordering::Relaxed) + 1;
        let id = Value::String(format!("demo-srv-{n}"));
        let (tx, rx) = oneshot::channel();
        let key = id_key(&id);
        self.pending.lock().insert(key.clone(), tx);
        let _registered = RemoveOnDrop {
            map: &self.pending,
            key,
        };
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        if outbound.send(request).is_err() {
            return Err("the client connection is closed".into());
        }
        let response = rx
            .await
            .map_err(|_| "the session ended before the client answered".to_string())?;
        match response.get("error") {
            Some(error) => Err(error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("the client answered with an error")
                .to_owned()),
            None => Ok(response.get("result").cloned().unwrap_or(Value::Null)),
        }
    }

    fn client_has_capability(&self, name: &str) -> bool {
        self.client_capabilities
            .lock()
            .as_ref()
            .and_then(|caps| caps.get(name))
            .is_some()
    }

    fn initialize(&self, params: &Map<String, Value>) -> Result<Value, RpcError> {
        let config = &self.server.config;
        if config.fail_initialize {
            return Err(RpcError::new(
                codes::INTERNAL_ERROR,
                "initialize failed (--fail-initialize)",
            ));
        }
        let version = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .filter(|v| SUPPORTED_PROTOCOL_VERSIONS.contains(v))
            .unwrap_or(LATEST_PROTOCOL_VERSION);
        *self.client_capabilities.lock() = params.get("capabilities").cloned();
        let mut result = Map::new();
        result.insert("protocolVersion".into(), json!(version));
        result.insert(
            "capabilities".into(),
            json!({
                "tools": {"listChanged": true},
                "prompts": {"listChanged": false},
                "resources": {"subscribe": true, "listChanged": false},
                "completions": {},
                "logging": {}
            }),
        );
        result.insert(
            "serverInfo".into(),
            json!({"name": SERVER_NAME, "version": SERVER_VERSION}),
        );
        if let Some(text) = config.instructions.as_deref().filter(|t| !t.is_empty()) {
            result.insert("instructions".into(), json!(text));
        }
        if config.app.is_some() {
            result["capabilities"]["extensions"] = json!({
                manifold_protocol::extensions::UI: {"mimeTypes": [app::APP_MIME]}
            });
        }
        if config.skill.is_some() {
            result["capabilities"]["extensions"][manifold_protocol::extensions::SKILLS] =
                skill::extension();
        }
        Ok(Value::Object(result))
    }

    async fn dispatch_era(
        self: &Arc<Self>,
        id: &Value,
        method: &str,
        params: &Map<String, Value>,
        ctx: &CallContext,
    ) -> Result<Value, RpcError> {
        if self.server.config.modern {
            modern::dispatch(self, id, method, params, ctx).await
        } else {
            self.dispatch(method, params, ctx).await
        }
    }

    async fn dispatch(
        self: &Arc<Self>,
        method: &str,
        params: &Map<String, Value>,
        ctx: &CallContext,
    ) -> Result<Value, RpcError> {
        if let Some(text) = &self.server.config.skill {
            let lies = self.server.config.skill_digest_lies;
            if let Some(answer) = skill::dispatch(text, lies, method, params) {
                return answer;
            }
        }
        match method {
            "ping" => Ok(json!({})),
            "tools/list" => self.list_tools(params),
            "tools/call" => match &self.server.config.app {
                Some(app)
                    if matches!(
                        params.get("name").and_then(Value::as_str),
                        Some(app::APP_TOOL | app::APP_ONLY_TOOL)
                    ) =>
                {
                    Ok(app::call(app))
                }
                _ => tools::call(self, params, ctx).await,
            },
            "prompts/list" => Ok(json!({"prompts": [{
                "name": "greet",
                "description": "Ask the model to greet someone.",
                "arguments": [{"name": "name", "description": "Who to greet", "required": true}]
            }]})),
            "prompts/get" => get_prompt(params),
            "resources/list" => {
                let mut resources = vec![json!({
                    "uri": README_URI,
                    "name": "readme",
                    "description": self.server.config.readme_description,
                    "mimeType": "text/plain",
                    "x-demo-resource-extra": {"kept": true}
                })];
                if self.server.config.app.is_some() {
                    resources.push(app::resource());
                }
                if self.server.config.skill.is_some() {
                    resources.extend(skill::resources());
                }
                Ok(json!({ "resources": resources }))
            }
            "resources/templates/list" => Ok(resources::templates(self.server.config.docs)),
            "resources/read" => match &self.server.config.app {
                Some(app) if params.get("uri").and_then(Value::as_str) == Some(app::APP_URI) => {
                    Ok(app::read(app))
                }
                _ => resources::read(params, self.server.config.docs),
            },
            "resources/subscribe" | "resources/unsubscribe" => {
                resources::subscription(&self.server, method, params)
            }
            "completion/complete" => resources::complete(params),
            "logging/setLevel" => set_log_level(&self.server, params),
            _ => Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {method}"),
            )),
        }
    }

    fn list_tools(&self, params: &Map<String, Value>) -> Result<Value, RpcError> {
        // The cursor is the decimal offset of the first tool of the page.
        let offset = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(cursor)) => cursor
                .parse::<usize>()
                .map_err(|_| RpcError::invalid_params(format!("Invalid cursor: {cursor}")))?,
            Some(_) => return Err(RpcError::invalid_params("Invalid cursor: not a string")),
        };
        let page_size = self.server.config.page_size;
        let (tools, next) = self
            .server
            .tools
            .page(offset, page_size)
            .ok_or_else(|| RpcError::invalid_params(format!("Invalid cursor: {offset}")))?;
        let mut tools = tools;
        if next.is_none() && self.server.config.app.is_some() {
            tools.push(app::tool());
            tools.push(app::app_only_tool());
        }
        let mut result = Map::new();
        result.insert("tools".into(), Value::Array(tools));
        if let Some(next) = next {
            result.insert("nextCursor".into(), json!(next.to_string()));
        }
        Ok(Value::Object(result))
    }
}

pub(crate) const README_URI: &str = "demo://readme";
/// The listed `demo://readme` resource's description, unless `--readme-description` says another.
pub const README_DESCRIPTION: &str = "What this demo server is.";

fn respond(id: Value, outcome: Result<Value, RpcError>) -> Value {
    match outcome {
        Ok(result) => rpc_result(id, result),
        Err(error) => rpc_error(id, error.code, &error.message),
    }
}

fn get_prompt(params: &Map<String, Value>) -> Result<Value, RpcError> {
    let name = params.get("name").and_then(Value::as_str).unwrap_or("");
    if name != "greet" {
        return Err(RpcError::invalid_params(format!("Unknown prompt: {name}")));
    }
    let who = params
        .get("arguments")
        .and_then(|args| args.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("Missing required argument: name"))?;
    Ok(json!({
        "description": "Greeting prompt",
        "messages": [{"role": "user", "content": {"type": "text", "text": format!("Please greet {who}.")}}]
    }))
}

fn set_log_level(server: &DemoServer, params: &Map<String, Value>) -> Result<Value, RpcError> {
    match params.get("level").and_then(Value::as_str) {
        Some(level) if manifold_protocol::logging::LogLevel::parse(level).is_some() => {
            *server.log_level.lock() = Some(level.to_string());
            Ok(json!({}))
        }
        _ => Err(RpcError::invalid_params("Invalid log level")),
    }
}
