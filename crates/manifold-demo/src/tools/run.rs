//! What each demo tool does when called (the registry rows in `registry` say
//! which runs for which tool, and when it may), and where the HTTP transport
//! puts the `traceparent` the `trace` tool reports ([`HTTP_TRACEPARENT`]).
//!
//! Invariants: bad arguments are a tool-level error (`Err` text, answered
//! with `isError: true`); waits are bounded ([`MAX_SLEEP_MS`], [`MAX_STEPS`]);
//! server→client requests and notifications go only to the calling session.
//!
//! Not here: listing and gating (the registry).

use serde_json::{json, Map, Value};
use std::time::Duration;

use crate::identity::SERVER_NAME;
use crate::jsonrpc::notification;
use crate::server::DemoServer;
use crate::session::Session;
use crate::transport::{CallContext, TransportKind};

/// Where the HTTP transport puts a request's `traceparent` header, in
/// `params._meta`, for the `trace` tool to report.
pub const HTTP_TRACEPARENT: &str = "io.manifold.demo/http-traceparent";

/// Upper bounds so silly arguments cannot park a task for days.
const MAX_SLEEP_MS: u64 = 24 * 60 * 60 * 1000;
const MAX_STEPS: u64 = 10_000;

/// Tool outcome: `Ok(result)` or `Err(text of an isError result)`.
pub(super) type ToolOutcome = Result<Value, String>;

pub(super) fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

pub(super) fn str_arg<'a>(args: &'a Map<String, Value>, key: &str) -> Result<&'a str, String> {
    args.get(key)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("argument `{key}` must be a string"))
}

pub(super) fn u64_arg(
    args: &Map<String, Value>,
    key: &str,
    default: Option<u64>,
) -> Result<u64, String> {
    match (args.get(key), default) {
        (None | Some(Value::Null), Some(default)) => Ok(default),
        (value, _) => value
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("argument `{key}` must be a non-negative integer")),
    }
}

pub(super) fn echo(args: &Map<String, Value>) -> ToolOutcome {
    let text = str_arg(args, "text")?;
    // The unknown result member is deliberate: gateways must pass it through.
    Ok(json!({
        "content": [{"type": "text", "text": text}],
        "x-demo-result-extra": {"z": 1, "a": 2}
    }))
}

pub(super) fn add(args: &Map<String, Value>) -> ToolOutcome {
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

pub(super) fn weather(args: &Map<String, Value>) -> ToolOutcome {
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

pub(super) async fn slow_progress(
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

pub(super) fn regional_lookup(args: &Map<String, Value>, ctx: &CallContext) -> ToolOutcome {
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

/// `rug_pull`: with `pull`, the catalogue changes under the clients (once)
/// and they are told; always, the calls each tool name received.
pub(super) fn rug_pull(
    session: &Session,
    args: &Map<String, Value>,
    ctx: &CallContext,
) -> ToolOutcome {
    let pull = match args.get("pull") {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(_) => return Err("argument `pull` must be a boolean".to_owned()),
    };
    let flag = |key: &str| match args.get(key) {
        None | Some(Value::Null) => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(_) => Err(format!("argument `{key}` must be a boolean")),
    };
    let (twin, smuggle) = (flag("twin")?, flag("smuggle")?);
    let server = session.server();
    let changed = (pull && server.tools.pull_rug())
        | (twin && server.tools.twin())
        | (smuggle && server.tools.smuggle());
    if changed {
        let note = notification("notifications/tools/list_changed", json!({}));
        match &ctx.outbound {
            Some(outbound) if server.config().notify_caller_only => {
                let _ = outbound.send(note);
            }
            _ => server.broadcast(note),
        }
    }
    let report = json!({"pulled": server.tools.rug_pulled(), "calls": server.tools.calls()});
    Ok(json!({
        "content": [{"type": "text", "text": report.to_string()}],
        "structuredContent": report
    }))
}

pub(super) fn add_tool(
    session: &Session,
    args: &Map<String, Value>,
    ctx: &CallContext,
) -> ToolOutcome {
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
    let added = match &ctx.outbound {
        Some(outbound) if server.config().notify_caller_only => {
            let added = server.tools.add_dynamic(name);
            if added {
                let note = notification("notifications/tools/list_changed", json!({}));
                let _ = outbound.send(note);
            }
            added
        }
        _ => server.add_tool_and_announce(name),
    };
    if !added {
        return Err(format!("tool already exists: {name}"));
    }
    Ok(text_result(&format!("added {name}")))
}

pub(super) async fn sleep(
    args: &Map<String, Value>,
    token: Option<&Value>,
    ctx: &CallContext,
) -> ToolOutcome {
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

/// `slow_read`: waits, then answers with `key`, the number this call got
/// when it began (calls that share one upstream call share it too) and an
/// unknown member a gateway must pass on.
pub(super) async fn slow_read(server: &DemoServer, args: &Map<String, Value>) -> ToolOutcome {
    let ms = u64_arg(args, "ms", None)?.min(MAX_SLEEP_MS);
    let key = str_arg(args, "key")?.to_owned();
    let served = server
        .slow_reads
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        + 1;
    // Cancellation is handled by Session::handle_request dropping this future.
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(json!({
        "content": [{"type": "text", "text": key}],
        "x-demo-served": served,
        "x-demo-result-extra": {"z": 1, "a": 2}
    }))
}

pub(super) fn crash(transport: TransportKind, args: &Map<String, Value>) -> ToolOutcome {
    match transport {
        TransportKind::Stdio => {
            let code = args
                .get("code")
                .and_then(Value::as_i64)
                .and_then(|c| i32::try_from(c).ok())
                .unwrap_or(3);
            eprintln!("{SERVER_NAME}: crash requested, exiting with code {code}");
            std::process::exit(code)
        }
        // One HTTP process serves many sessions; killing it is not the point.
        TransportKind::Http => Err("crash is only available in stdio mode".to_owned()),
    }
}

pub(super) async fn sample(
    session: &Session,
    args: &Map<String, Value>,
    ctx: &CallContext,
) -> ToolOutcome {
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

pub(super) async fn elicit(
    session: &Session,
    args: &Map<String, Value>,
    ctx: &CallContext,
) -> ToolOutcome {
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

pub(super) fn link(args: &Map<String, Value>) -> ToolOutcome {
    let n = u64_arg(args, "n", Some(1))?;
    let uri = format!("demo://linked/{n}");
    Ok(json!({"content": [
        {"type": "text", "text": format!("see {uri}")},
        {"type": "resource_link", "uri": uri, "name": format!("linked {n}"), "mimeType": "text/plain"}
    ]}))
}

pub(super) fn touch(server: &DemoServer, args: &Map<String, Value>) -> ToolOutcome {
    let uri = str_arg(args, "uri")?;
    if !crate::resources::is_subscribed(server, uri) {
        return Err(format!("nobody subscribed to {uri}"));
    }
    server.broadcast(notification(
        "notifications/resources/updated",
        json!({"uri": uri}),
    ));
    Ok(text_result(&format!("touched {uri}")))
}

pub(super) fn log(
    server: &DemoServer,
    args: &Map<String, Value>,
    ctx: &CallContext,
) -> ToolOutcome {
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

/// `weather`, or (`--misbehave bad-output`) a result whose `structuredContent`
/// breaks the tool's `outputSchema`.
pub(super) fn weather_of(server: &DemoServer, args: &Map<String, Value>) -> ToolOutcome {
    if server
        .config()
        .misbehave
        .has(crate::rogue::Misbehaviour::BadOutput)
    {
        return weather(args).map(|mut r| {
            r["structuredContent"]["temperatureC"] = json!("warm");
            r
        });
    }
    weather(args)
}

/// `log_level`: the last `logging/setLevel` this server received.
pub(super) fn log_level(server: &DemoServer) -> ToolOutcome {
    Ok(text_result(
        server.log_level.lock().as_deref().unwrap_or("unset"),
    ))
}

/// `trace`: the W3C trace context the call arrived with.
pub(super) fn trace(params: &Map<String, Value>) -> ToolOutcome {
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

/// `env`: one environment variable of this process (or `unset`).
pub(super) fn env(args: &Map<String, Value>) -> ToolOutcome {
    str_arg(args, "name").map(|n| text_result(&std::env::var(n).unwrap_or_else(|_| "unset".into())))
}

/// `grandchild`: the pid of the process this server started at launch.
pub(super) fn grandchild(server: &DemoServer) -> ToolOutcome {
    match server.grandchild {
        Some(pid) => Ok(text_result(&pid.to_string())),
        None => Err("this server started no grandchild (--spawn-grandchild)".to_owned()),
    }
}
