//! The demo server's tool catalog and tool implementations.
//!
//! What: the fixed tools that show a gateway off (`echo`, `add`, `weather`,
//! `slow_progress`, `regional_lookup`, `add_tool`, `sample`, `elicit`, `link`,
//! `touch`, `log`, `log_level`), the fault tools for tests (`fail`, `sleep`,
//! `crash`; listed and callable only with `--faults`), the optional
//! `synthetic_NNNN` tools, and tools added at runtime by `add_tool`.
//!
//! Invariants:
//! - Listing order is stable: fixed tools, then synthetic, then dynamic tools
//!   in the order they were added; the pagination cursor (an offset into that
//!   order) therefore stays meaningful while tools are only appended.
//! - Several definitions and the `echo` result carry members no spec defines
//!   (`x-demo-extension`, `x-demo-result-extra`) or that older revisions lack
//!   (`title`, `icons`, `annotations`, `_meta`, `outputSchema`) so tests can
//!   check a gateway passes them through untouched, key order included.
//! - Bad arguments give a tool-level error (`isError: true`), as MCP asks for
//!   input validation failures; only an unknown tool name is a -32602.
//!
//! What not: no JSON Schema validation of arguments beyond what each tool reads.

use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::{notification, CallContext, RpcError, Session, TransportKind};

/// Small inline SVG so the icon is self-contained (`<svg/>`).
const ICON: &str = "data:image/svg+xml;base64,PHN2Zy8+";
/// Upper bounds so silly arguments cannot park a task for days.
const MAX_SLEEP_MS: u64 = 24 * 60 * 60 * 1000;
const MAX_STEPS: u64 = 10_000;
/// Where the HTTP transport puts a request's `traceparent` header, in
/// `params._meta`, for the `trace` tool to report.
pub const HTTP_TRACEPARENT: &str = "io.manifold.demo/http-traceparent";

/// Tools that misbehave on purpose (a tool error, a long wait, a process exit):
/// only with `--faults`, never in the shipped catalogue.
pub const FAULT_TOOLS: &[&str] = &["fail", "sleep", "crash"];

/// All tools this server lists.
pub(super) struct Catalog {
    fixed: Vec<Value>,
    fixed_names: HashSet<String>,
    synthetic: usize,
    /// Tools added by `add_tool`: (name, definition), in insertion order.
    dynamic: Mutex<Vec<(String, Value)>>,
}

impl Catalog {
    #[cfg(test)]
    pub(super) fn new(synthetic: usize, faults: bool) -> Self {
        Self::with_diagnostics(synthetic, faults, &[])
    }

    /// The catalogue with the diagnostic tools `names` (`env`, `grandchild`) too.
    pub(super) fn with_diagnostics(synthetic: usize, faults: bool, names: &[&str]) -> Self {
        let mut fixed = fixed_tools();
        if !faults {
            fixed.retain(|t| {
                !t.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|n| FAULT_TOOLS.contains(&n))
            });
        }
        fixed.extend(diagnostic_tools().into_iter().filter(|t| {
            t.get("name")
                .and_then(Value::as_str)
                .is_some_and(|n| names.contains(&n))
        }));
        fixed.extend((0..synthetic).map(|i| {
            json!({
                "name": synthetic_name(i),
                "description": format!("Synthetic echo tool #{i} (large-catalog benchmarks)."),
                "inputSchema": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}}
                }
            })
        }));
        let fixed_names = fixed
            .iter()
            .filter_map(|tool| tool.get("name").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        Self {
            fixed,
            fixed_names,
            synthetic,
            dynamic: Mutex::new(Vec::new()),
        }
    }

    /// Exactly `tools`, nothing else (catalogue mode, see [`super::catalog`]).
    pub(super) fn listing(tools: Vec<Value>) -> Self {
        let fixed_names = tools
            .iter()
            .filter_map(|tool| tool.get("name").and_then(Value::as_str))
            .map(str::to_owned)
            .collect();
        Self {
            fixed: tools,
            fixed_names,
            synthetic: 0,
            dynamic: Mutex::new(Vec::new()),
        }
    }

    /// The page starting at `offset` (`page_size` 0 = everything) and the
    /// offset of the next page, or `None` when `offset` is past the end.
    pub(super) fn page(
        &self,
        offset: usize,
        page_size: usize,
    ) -> Option<(Vec<Value>, Option<usize>)> {
        let dynamic = self.dynamic.lock();
        let total = self.fixed.len() + dynamic.len();
        if offset > total {
            return None;
        }
        let end = match page_size {
            0 => total,
            n => offset.saturating_add(n).min(total),
        };
        let tools = self
            .fixed
            .iter()
            .chain(dynamic.iter().map(|(_, def)| def))
            .skip(offset)
            .take(end - offset)
            .cloned()
            .collect();
        Some((tools, (end < total).then_some(end)))
    }

    fn is_synthetic(&self, name: &str) -> bool {
        name.strip_prefix("synthetic_")
            .and_then(|n| n.parse::<usize>().ok())
            .is_some_and(|i| i < self.synthetic && synthetic_name(i) == name)
    }

    fn is_dynamic(&self, name: &str) -> bool {
        self.dynamic.lock().iter().any(|(n, _)| n == name)
    }

    /// Append a dynamic tool; false if the name is taken. Check and insert
    /// happen under one lock so concurrent `add_tool` calls cannot both win.
    fn add_dynamic(&self, name: &str) -> bool {
        let mut dynamic = self.dynamic.lock();
        if self.fixed_names.contains(name) || dynamic.iter().any(|(n, _)| n == name) {
            return false;
        }
        let definition = json!({
            "name": name,
            "description": format!("Dynamically added tool {name}."),
            "inputSchema": {"type": "object", "properties": {}}
        });
        dynamic.push((name.to_owned(), definition));
        true
    }
}

fn synthetic_name(i: usize) -> String {
    format!("synthetic_{i:04}")
}

/// Tools that report on the process for tests, each behind its own flag:
/// `env` (`--env-tool`), `grandchild` (`--spawn-grandchild`) and
/// `broken_schema` (`--misbehave broken-schema`: an inputSchema no validator
/// compiles; the tool echoes its arguments).
fn diagnostic_tools() -> Vec<Value> {
    vec![
        json!({
            "name": "trace",
            "description": "Reports the W3C trace context this call arrived with.",
            "inputSchema": {"type": "object"}
        }),
        json!({
            "name": "broken_schema",
            "description": "Echoes its arguments; its inputSchema does not compile.",
            "inputSchema": {"type": "object", "properties": {"x": {"type": "not-a-type"}}}
        }),
        json!({
            "name": "env",
            "description": "Reports one environment variable of this process (or `unset`).",
            "inputSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        }),
        json!({
            "name": "grandchild",
            "description": "Reports the pid of the process this server started at launch.",
            "inputSchema": {"type": "object"}
        }),
    ]
}

fn fixed_tools() -> Vec<Value> {
    vec![
        json!({
            "name": "echo",
            "title": "Echo",
            "description": "Returns the given text. The result carries an extra, unspecified member.",
            "inputSchema": {
                "type": "object",
                "properties": {"text": {"type": "string", "description": "Text to echo back"}},
                "required": ["text"]
            },
            "annotations": {"title": "Echo", "readOnlyHint": true, "idempotentHint": true, "openWorldHint": false},
            "icons": [{"src": ICON, "mimeType": "image/svg+xml", "sizes": ["any"]}],
            "_meta": {"io.manifold.demo/origin": "demo-upstream"},
            "x-demo-extension": {"kept": true, "order": [3, 1, 2]}
        }),
        json!({
            "name": "add",
            "title": "Add",
            "description": "Adds two numbers; the sum is also returned as structuredContent.",
            "inputSchema": {
                "type": "object",
                "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                "required": ["a", "b"]
            },
            "annotations": {"readOnlyHint": true, "idempotentHint": true}
        }),
        json!({
            "name": "weather",
            "title": "Weather (fake)",
            "description": "Deterministic fake weather for a city, with an output schema.",
            "inputSchema": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"]
            },
            "outputSchema": {
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "temperatureC": {"type": "number"},
                    "conditions": {"type": "string"}
                },
                "required": ["city", "temperatureC", "conditions"]
            },
            "_meta": {"io.manifold.demo/fake": true},
            "x-demo-extension": {"kept": true, "order": [3, 1, 2]}
        }),
        json!({
            "name": "slow_progress",
            "description": "Works in steps, sending notifications/progress when the call has a progressToken.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "steps": {"type": "integer", "minimum": 0, "default": 3},
                    "delay_ms": {"type": "integer", "minimum": 0, "default": 50}
                }
            }
        }),
        json!({
            "name": "regional_lookup",
            "description": "Looks something up in a region. In HTTP mode reports the mcp-* request headers it received.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "region": {"type": "string", "x-mcp-header": "Region"},
                    "verbose": {"type": "boolean", "x-mcp-header": "Verbose"},
                    "query": {"type": "string"}
                },
                "required": ["region", "query"]
            }
        }),
        json!({
            "name": "add_tool",
            "description": "Adds a tool to this server's list, then sends notifications/tools/list_changed.",
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string"}},
                "required": ["name"]
            },
            "annotations": {"destructiveHint": false, "idempotentHint": false}
        }),
        json!({
            "name": "fail",
            "description": "Always returns a tool-level error.",
            "inputSchema": {"type": "object", "properties": {}}
        }),
        json!({
            "name": "sleep",
            "description": "Waits for ms milliseconds (with a progressToken, after one notifications/progress saying it started); honours notifications/cancelled.",
            "inputSchema": {
                "type": "object",
                "properties": {"ms": {"type": "integer", "minimum": 0}},
                "required": ["ms"]
            }
        }),
        json!({
            "name": "crash",
            "description": "Exits the process with `code` (default 3; stdio mode only).",
            "inputSchema": {
                "type": "object",
                "properties": {"code": {"type": "integer", "minimum": 0, "maximum": 255}}
            },
            "annotations": {"destructiveHint": true}
        }),
        json!({
            "name": "sample",
            "description": "Asks the client for a completion via sampling/createMessage.",
            "inputSchema": {
                "type": "object",
                "properties": {"prompt": {"type": "string"}},
                "required": ["prompt"]
            }
        }),
        json!({
            "name": "elicit",
            "description": "Asks the user for a name via elicitation/create (form mode).",
            "inputSchema": {
                "type": "object",
                "properties": {"message": {"type": "string"}},
                "required": ["message"]
            }
        }),
        json!({
            "name": "link",
            "description": "Returns a resource_link to demo://linked/<n>, a resource no list names.",
            "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}
        }),
        json!({
            "name": "touch",
            "description": "Sends notifications/resources/updated for a subscribed URI (server-wide).",
            "inputSchema": {
                "type": "object",
                "properties": {"uri": {"type": "string"}},
                "required": ["uri"]
            }
        }),
        json!({
            "name": "log",
            "description": "Sends notifications/message: tied to this call, or server-wide with broadcast.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "level": {"type": "string"},
                    "text": {"type": "string"},
                    "logger": {"type": "string"},
                    "broadcast": {"type": "boolean"}
                },
                "required": ["level", "text"]
            }
        }),
        json!({
            "name": "log_level",
            "description": "Reports the last logging/setLevel this server received.",
            "inputSchema": {"type": "object"}
        }),
    ]
}

/// Handle `tools/call`. Unknown tool → -32602; tool failures → `isError`.
pub(super) async fn call(
    session: &Arc<Session>,
    params: &Map<String, Value>,
    ctx: &CallContext,
) -> Result<Value, RpcError> {
    let name = params
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| RpcError::invalid_params("tools/call needs a string `name`"))?;
    let empty = Map::new();
    let args = match params.get("arguments") {
        None | Some(Value::Null) => &empty,
        Some(Value::Object(args)) => args,
        Some(_) => return Err(RpcError::invalid_params("`arguments` must be an object")),
    };
    let progress_token = params
        .get("_meta")
        .and_then(|meta| meta.get("progressToken"))
        .filter(|token| token.is_string() || token.is_number());
    let server = session.server();
    if let Some(served) = &server.config().catalog {
        return served
            .call(name, args)
            .ok_or_else(|| RpcError::invalid_params(format!("Unknown tool: {name}")));
    }
    if let Some(out) = &ctx.outbound {
        server.config().misbehave.flood_progress(params, out);
    }
    if FAULT_TOOLS.contains(&name) && !server.config().faults {
        return Err(RpcError::invalid_params(format!("Unknown tool: {name}")));
    }
    let outcome = match name {
        "echo" => echo(args),
        "add" => add(args),
        "weather"
            if server
                .config()
                .misbehave
                .has(super::rogue::Misbehaviour::BadOutput) =>
        {
            weather(args).map(|mut r| {
                r["structuredContent"]["temperatureC"] = json!("warm");
                r
            })
        }
        "weather" => weather(args),
        "slow_progress" => slow_progress(args, progress_token, ctx).await,
        "regional_lookup" => regional_lookup(args, ctx),
        "add_tool" => add_tool(session, args, ctx),
        "fail" => Err("this tool always fails".to_owned()),
        "sleep" => sleep(args, progress_token, ctx).await,
        "crash" => crash(server.transport(), args),
        "sample" => sample(session, args, ctx).await,
        "elicit" => elicit(session, args, ctx).await,
        "link" => link(args),
        "touch" => touch(server, args),
        "log" => log(server, args, ctx),
        "log_level" => Ok(text_result(
            server.log_level.lock().as_deref().unwrap_or("unset"),
        )),
        "trace" if server.config().trace_tool => {
            let meta = params.get("_meta");
            let field = |k: &str| meta.and_then(|m| m.get(k)).cloned().unwrap_or(Value::Null);
            Ok(text_result(
                &json!({
                    "traceparent": field("traceparent"),
                    "http_traceparent": field(HTTP_TRACEPARENT),
                })
                .to_string(),
            ))
        }
        "env" if server.config().env_tool => str_arg(args, "name")
            .map(|n| text_result(&std::env::var(n).unwrap_or_else(|_| "unset".into()))),
        "broken_schema"
            if server
                .config()
                .misbehave
                .has(super::rogue::Misbehaviour::BrokenSchema) =>
        {
            Ok(text_result(&Value::Object(args.clone()).to_string()))
        }
        "grandchild" => match server.grandchild {
            Some(pid) => Ok(text_result(&pid.to_string())),
            None => return Err(RpcError::invalid_params("Unknown tool: grandchild")),
        },
        _ if server.tools.is_synthetic(name) => {
            Ok(text_result(str_arg(args, "text").unwrap_or(name)))
        }
        _ if server.tools.is_dynamic(name) => Ok(text_result(&format!("dynamic tool {name}"))),
        _ => return Err(RpcError::invalid_params(format!("Unknown tool: {name}"))),
    };
    Ok(outcome.unwrap_or_else(
        |message| json!({"content": [{"type": "text", "text": message}], "isError": true}),
    ))
}

/// Tool outcome: `Ok(result)` or `Err(text of an isError result)`.
type ToolOutcome = Result<Value, String>;

fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("argument `{key}` must be a string"))
}

fn u64_arg(args: &Map<String, Value>, key: &str, default: Option<u64>) -> Result<u64, String> {
    match (args.get(key), default) {
        (None | Some(Value::Null), Some(default)) => Ok(default),
        (value, _) => value
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("argument `{key}` must be a non-negative integer")),
    }
}

fn echo(args: &Map<String, Value>) -> ToolOutcome {
    let text = str_arg(args, "text")?;
    // The unknown result member is deliberate: gateways must pass it through.
    Ok(json!({
        "content": [{"type": "text", "text": text}],
        "x-demo-result-extra": {"z": 1, "a": 2}
    }))
}

fn add(args: &Map<String, Value>) -> ToolOutcome {
    let number = |key: &str| {
        args.get(key)
            .filter(|v| v.is_number())
            .ok_or_else(|| format!("argument `{key}` must be a number"))
    };
    let (a, b) = (number("a")?, number("b")?);
    // Integers stay integers (3, not 3.0) when the sum fits.
    let sum = match (a.as_i64(), b.as_i64()) {
        (Some(a), Some(b)) if a.checked_add(b).is_some() => json!(a + b),
        _ => json!(a.as_f64().unwrap_or(0.0) + b.as_f64().unwrap_or(0.0)),
    };
    Ok(json!({
        "content": [{"type": "text", "text": sum.to_string()}],
        "structuredContent": {"sum": sum}
    }))
}

fn weather(args: &Map<String, Value>) -> ToolOutcome {
    const CONDITIONS: &[&str] = &["sunny", "cloudy", "rainy", "windy", "snowy", "foggy"];
    let city = str_arg(args, "city")?;
    // FNV-1a: stable across runs and platforms, unlike std's hasher.
    let hash = city.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    let tenths = i32::try_from(hash % 451).unwrap_or(0);
    let temperature = f64::from(tenths - 100) / 10.0;
    let conditions = CONDITIONS[usize::try_from((hash >> 16) % 6).unwrap_or(0)];
    let structured = json!({"city": city, "temperatureC": temperature, "conditions": conditions});
    Ok(json!({
        "content": [{"type": "text", "text": structured.to_string()}],
        "structuredContent": structured
    }))
}

async fn slow_progress(
    args: &Map<String, Value>,
    token: Option<&Value>,
    ctx: &CallContext,
) -> ToolOutcome {
    let steps = u64_arg(args, "steps", Some(3))?.min(MAX_STEPS);
    let delay = Duration::from_millis(u64_arg(args, "delay_ms", Some(50))?.min(MAX_SLEEP_MS));
    for step in 1..=steps {
        tokio::time::sleep(delay).await;
        if let (Some(token), Some(outbound)) = (token, &ctx.outbound) {
            let params = json!({
                "progressToken": token,
                "progress": step,
                "total": steps,
                "message": format!("step {step}")
            });
            // A vanished client is noticed when the result cannot be sent.
            let _ = outbound.send(notification("notifications/progress", params));
        }
    }
    Ok(text_result(&format!("done after {steps} steps")))
}

fn regional_lookup(args: &Map<String, Value>, ctx: &CallContext) -> ToolOutcome {
    let region = str_arg(args, "region")?;
    let query = str_arg(args, "query")?;
    let verbose = match args.get("verbose") {
        None | Some(Value::Null) => false,
        Some(value) => value
            .as_bool()
            .ok_or("argument `verbose` must be a boolean")?,
    };
    Ok(json!({
        "content": [{"type": "text", "text": format!("lookup {query:?} in region {region} (verbose: {verbose})")}],
        "structuredContent": {"receivedHeaders": ctx.mcp_headers}
    }))
}

fn add_tool(session: &Session, args: &Map<String, Value>, ctx: &CallContext) -> ToolOutcome {
    let name = str_arg(args, "name")?;
    let valid = !name.is_empty()
        && name.len() <= 128
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
    if !valid {
        return Err(format!("invalid tool name: {name:?}"));
    }
    let server = session.server();
    if !server.tools.add_dynamic(name) {
        return Err(format!("tool already exists: {name}"));
    }
    let note = notification("notifications/tools/list_changed", json!({}));
    match &ctx.outbound {
        Some(outbound) if server.config().notify_caller_only => {
            let _ = outbound.send(note);
        }
        _ => server.broadcast(note),
    }
    Ok(text_result(&format!("added {name}")))
}

async fn sleep(args: &Map<String, Value>, token: Option<&Value>, ctx: &CallContext) -> ToolOutcome {
    let ms = u64_arg(args, "ms", None)?.min(MAX_SLEEP_MS);
    // Tells a test the call has reached the upstream, so it can cancel it
    // without guessing how long the way here takes.
    if let (Some(token), Some(outbound)) = (token, &ctx.outbound) {
        let params = json!({"progressToken": token, "progress": 0, "message": "sleeping"});
        let _ = outbound.send(notification("notifications/progress", params));
    }
    // Cancellation is handled by Session::handle_request dropping this future.
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(text_result("slept"))
}

fn crash(transport: TransportKind, args: &Map<String, Value>) -> ToolOutcome {
    match transport {
        TransportKind::Stdio => {
            let code = args
                .get("code")
                .and_then(Value::as_i64)
                .and_then(|c| i32::try_from(c).ok())
                .unwrap_or(3);
            eprintln!(
                "{}: crash requested, exiting with code {code}",
                super::SERVER_NAME
            );
            std::process::exit(code)
        }
        // One HTTP process serves many sessions; killing it is not the point.
        TransportKind::Http => Err("crash is only available in stdio mode".to_owned()),
    }
}

async fn sample(session: &Session, args: &Map<String, Value>, ctx: &CallContext) -> ToolOutcome {
    let prompt = str_arg(args, "prompt")?;
    // Spec: only send sampling requests to clients that declared support.
    if !session.client_has_capability("sampling") {
        return Err("the client did not declare the sampling capability".to_owned());
    }
    let params = json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": prompt}}],
        "maxTokens": 100
    });
    let result = session
        .request_client(ctx, "sampling/createMessage", params)
        .await?;
    // 2025-11-25 allows content to be one block or an array of blocks.
    let content = result.get("content");
    let text = content
        .and_then(|c| c.get("text"))
        .or_else(|| {
            content
                .and_then(Value::as_array)
                .and_then(|blocks| blocks.iter().find_map(|b| b.get("text")))
        })
        .and_then(Value::as_str)
        .ok_or("the sampling result has no text content")?;
    Ok(text_result(&format!("sampled: {text}")))
}

async fn elicit(session: &Session, args: &Map<String, Value>, ctx: &CallContext) -> ToolOutcome {
    let message = str_arg(args, "message")?;
    if !session.client_has_capability("elicitation") {
        return Err("the client did not declare the elicitation capability".to_owned());
    }
    let params = json!({
        "mode": "form",
        "message": message,
        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
    });
    let result = session
        .request_client(ctx, "elicitation/create", params)
        .await?;
    let action = result.get("action").and_then(Value::as_str).unwrap_or("?");
    let content = result
        .get("content")
        .map(Value::to_string)
        .unwrap_or_default();
    Ok(text_result(
        format!("elicited: {action} {content}").trim_end(),
    ))
}

fn link(args: &Map<String, Value>) -> ToolOutcome {
    let n = u64_arg(args, "n", Some(1))?;
    let uri = format!("demo://linked/{n}");
    Ok(json!({"content": [
        {"type": "text", "text": format!("see {uri}")},
        {"type": "resource_link", "uri": uri, "name": format!("linked {n}"), "mimeType": "text/plain"}
    ]}))
}

fn touch(server: &super::DemoServer, args: &Map<String, Value>) -> ToolOutcome {
    let uri = str_arg(args, "uri")?;
    if !super::resources::is_subscribed(server, uri) {
        return Err(format!("nobody subscribed to {uri}"));
    }
    server.broadcast(notification(
        "notifications/resources/updated",
        json!({"uri": uri}),
    ));
    Ok(text_result(&format!("touched {uri}")))
}

fn log(server: &super::DemoServer, args: &Map<String, Value>, ctx: &CallContext) -> ToolOutcome {
    let level = str_arg(args, "level")?;
    let text = str_arg(args, "text")?;
    let mut params = json!({"level": level, "data": text});
    if let Some(logger) = args.get("logger").and_then(Value::as_str) {
        params["logger"] = json!(logger);
    }
    let message = notification("notifications/message", params);
    if args.get("broadcast").and_then(Value::as_bool) == Some(true) {
        server.broadcast(message);
    } else if let Some(outbound) = &ctx.outbound {
        let _ = outbound.send(message);
    }
    Ok(text_result("logged"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(tools: &[Value]) -> Vec<&str> {
        tools.iter().filter_map(|t| t["name"].as_str()).collect()
    }

    #[test]
    fn pages_cover_fixed_synthetic_and_dynamic_tools_in_order() {
        let catalog = Catalog::new(2, true);
        assert!(catalog.add_dynamic("late"));
        assert!(!catalog.add_dynamic("late"), "duplicate dynamic name");
        assert!(!catalog.add_dynamic("echo"), "clash with a fixed tool");
        let (all, next) = catalog.page(0, 0).expect("page");
        assert_eq!(next, None);
        assert_eq!(all.len(), 18);
        let mut offset = 0;
        let mut paged = Vec::new();
        loop {
            let (page, next) = catalog.page(offset, 5).expect("page");
            assert!(page.len() <= 5);
            paged.extend(page);
            match next {
                Some(next) => offset = next,
                None => break,
            }
        }
        assert_eq!(names(&paged), names(&all));
        assert_eq!(
            names(&all)[15..],
            ["synthetic_0000", "synthetic_0001", "late"]
        );
        assert!(catalog.page(19, 5).is_none(), "offset past the end");
        assert_eq!(
            catalog.page(18, 5).map(|(p, n)| (p.len(), n)),
            Some((0, None))
        );
    }

    #[test]
    fn fault_tools_are_listed_only_with_faults() {
        let (shipped, _) = Catalog::new(0, false).page(0, 0).expect("page");
        let (with_faults, _) = Catalog::new(0, true).page(0, 0).expect("page");
        assert_eq!(with_faults.len(), shipped.len() + FAULT_TOOLS.len());
        for fault in FAULT_TOOLS {
            assert!(!names(&shipped).contains(fault), "{fault} shipped");
            assert!(names(&with_faults).contains(fault), "{fault} missing");
        }
    }

    #[test]
    fn synthetic_names_must_match_exactly() {
        let catalog = Catalog::new(3, true);
        assert!(catalog.is_synthetic("synthetic_0002"));
        assert!(!catalog.is_synthetic("synthetic_0003"));
        assert!(!catalog.is_synthetic("synthetic_2"));
        assert!(!catalog.is_synthetic("synthetic_+002"));
    }
}
