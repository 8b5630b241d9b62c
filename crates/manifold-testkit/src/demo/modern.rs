//! The demo server's 2026-07-28 mode (`--modern`): stateless requests only.
//!
//! What: `server/discover`; every other request must carry the revision and the
//! client capabilities in `params._meta` (else -32602, or -32022 for another
//! revision); `initialize` is refused with -32022 naming the supported revision;
//! results carry `resultType`, lists `ttlMs`/`cacheScope`; `subscriptions/listen`
//! acknowledges, then relays the server's list changes tagged with the listen id;
//! two tools exist only here: `whoami` echoes the request's `_meta` and `Mcp-*`
//! headers, and `ask` asks a question with an `InputRequiredResult` (key
//! `answer`, a `requestState`) and answers once the retry carries the answer.
//!
//! The legacy tools and lists are reused unchanged; tools that need a
//! server→client request fail here (2026-07-28 servers cannot send those).
//!
//! Not here: transports (stdio/http), which only skip the session handshake.

use serde_json::{json, Map, Value};
use std::sync::Arc;
use tokio::sync::broadcast;

use super::{codes, CallContext, RpcError, Session, SERVER_NAME, SERVER_VERSION};

/// The only revision this mode speaks.
pub const MODERN_VERSION: &str = "2026-07-28";
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPS: &str = "io.modelcontextprotocol/clientCapabilities";
const META_SUBSCRIPTION: &str = "io.modelcontextprotocol/subscriptionId";
const META_SERVER: &str = "io.modelcontextprotocol/serverInfo";
/// The `requestState` the `ask` tool hands out and expects back.
pub const ASK_STATE: &str = "demo-ask-state-1";

/// The tools only this mode lists (appended to the legacy catalog).
pub fn extra_tools() -> Vec<Value> {
    vec![
        json!({
            "name": "ask",
            "description": "Asks the user for an answer with an InputRequiredResult (elicitation), then echoes it.",
            "inputSchema": {"type": "object", "properties": {"question": {"type": "string"}}}
        }),
        json!({
            "name": "whoami",
            "description": "Echoes the request's _meta and Mcp-* headers.",
            "inputSchema": {"type": "object", "properties": {}}
        }),
    ]
}

fn unsupported(requested: &str) -> RpcError {
    RpcError {
        code: codes::UNSUPPORTED_VERSION,
        message: format!(
            "unsupported protocol version {requested}; this server speaks {MODERN_VERSION}"
        ),
    }
}

/// Checks the per-request `_meta`; `Err` is the error to answer.
fn check_meta(method: &str, params: &Map<String, Value>) -> Result<(), RpcError> {
    if method == "initialize" {
        let requested = params
            .get("protocolVersion")
            .and_then(Value::as_str)
            .unwrap_or("(none)");
        return Err(unsupported(requested));
    }
    let meta = params.get("_meta").and_then(Value::as_object);
    let Some(version) = meta
        .and_then(|m| m.get(META_VERSION))
        .and_then(Value::as_str)
    else {
        return Err(RpcError::invalid_params(format!(
            "params._meta[\"{META_VERSION}\"] is required"
        )));
    };
    if version != MODERN_VERSION {
        return Err(unsupported(version));
    }
    if !meta.is_some_and(|m| m.get(META_CAPS).is_some_and(Value::is_object)) {
        return Err(RpcError::invalid_params(format!(
            "params._meta[\"{META_CAPS}\"] is required"
        )));
    }
    Ok(())
}

/// `resultType` first, then the result's members.
fn complete(result: Value) -> Value {
    let mut out = Map::new();
    out.insert("resultType".into(), json!("complete"));
    if let Value::Object(m) = result {
        out.extend(m);
    }
    Value::Object(out)
}

/// Handles one request in modern mode.
pub(crate) async fn dispatch(
    session: &Arc<Session>,
    id: &Value,
    method: &str,
    params: &Map<String, Value>,
    ctx: &CallContext,
) -> Result<Value, RpcError> {
    if method == "server/discover" {
        return Ok(discover(session));
    }
    check_meta(method, params)?;
    let ttl = session.server.config.list_ttl_ms;
    match method {
        "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
            Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {method} (not in 2026-07-28)"),
            ))
        }
        "subscriptions/listen" => listen(session, id, params, ctx).await,
        "tools/list" => {
            let mut list = session.list_tools(params)?;
            if let Some(tools) = list.get_mut("tools").and_then(Value::as_array_mut) {
                tools.extend(extra_tools());
            }
            list["ttlMs"] = json!(ttl);
            list["cacheScope"] = json!("public");
            Ok(complete(list))
        }
        "tools/call" => match params.get("name").and_then(Value::as_str) {
            Some("whoami") => Ok(complete(json!({
                "content": [{"type": "text", "text": "request metadata"}],
                "structuredContent": {"meta": params.get("_meta"), "headers": ctx.mcp_headers},
            }))),
            Some("ask") => Ok(ask(params)),
            _ => session.dispatch(method, params, ctx).await.map(complete),
        },
        "prompts/list" | "resources/list" | "resources/templates/list" => {
            let mut list = session.dispatch(method, params, ctx).await?;
            list["ttlMs"] = json!(ttl);
            list["cacheScope"] = json!("public");
            Ok(complete(list))
        }
        "resources/read" => {
            let mut read = session.dispatch(method, params, ctx).await?;
            read["ttlMs"] = json!(0);
            read["cacheScope"] = json!("private");
            Ok(complete(read))
        }
        _ => session.dispatch(method, params, ctx).await.map(complete),
    }
}

fn discover(session: &Session) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": [MODERN_VERSION],
        "capabilities": {
            "tools": {"listChanged": !session.server.config.no_list_changed},
            "prompts": {"listChanged": false},
            "resources": {"subscribe": false, "listChanged": false},
            "completions": {},
            "logging": {}
        },
        "instructions": session.server.config.instructions,
        "_meta": {META_SERVER: {"name": SERVER_NAME, "version": SERVER_VERSION}},
        "ttlMs": session.server.config.list_ttl_ms,
        "cacheScope": "public"
    })
}

/// The `ask` tool: first an InputRequiredResult, then (with the answer and the
/// state) the answer echoed.
fn ask(params: &Map<String, Value>) -> Value {
    let answer = params
        .get("inputResponses")
        .and_then(|r| r.get("answer"))
        .filter(|_| params.get("requestState") == Some(&json!(ASK_STATE)));
    match answer {
        Some(answer) => {
            let said = answer
                .get("content")
                .map(Value::to_string)
                .unwrap_or_else(|| answer.to_string());
            complete(json!({"content": [{"type": "text", "text": format!("you answered {said}")}]}))
        }
        None => {
            let question = params
                .get("arguments")
                .and_then(|a| a.get("question"))
                .and_then(Value::as_str)
                .unwrap_or("What is your name?");
            json!({
                "resultType": "input_required",
                "inputRequests": {"answer": {
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": question,
                        "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
                    }
                }},
                "requestState": ASK_STATE
            })
        }
    }
}

/// `subscriptions/listen`: acknowledgment, then the server's list changes tagged
/// with the listen id, until the client closes the stream (or cancels on stdio).
async fn listen(
    session: &Arc<Session>,
    id: &Value,
    params: &Map<String, Value>,
    ctx: &CallContext,
) -> Result<Value, RpcError> {
    let Some(out) = &ctx.outbound else {
        return Err(RpcError::invalid_params(
            "subscriptions/listen needs a stream (Accept: text/event-stream)",
        ));
    };
    let wanted = params
        .get("notifications")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let tools = wanted.get("toolsListChanged") == Some(&json!(true))
        && !session.server.config.no_list_changed;
    let mut honoured = Map::new();
    if tools {
        honoured.insert("toolsListChanged".into(), json!(true));
    }
    let mut events = session.server.subscribe_events();
    let ack = super::notification(
        "notifications/subscriptions/acknowledged",
        json!({"_meta": {META_SUBSCRIPTION: id}, "notifications": honoured}),
    );
    if out.send(ack).is_err() {
        return Ok(complete(json!({"_meta": {META_SUBSCRIPTION: id}})));
    }
    loop {
        match events.recv().await {
            Ok(mut ev) => {
                let method = ev.get("method").and_then(Value::as_str).unwrap_or("");
                if method != "notifications/tools/list_changed" || !tools {
                    continue;
                }
                ev["params"] = json!({"_meta": {META_SUBSCRIPTION: id}});
                if out.send(ev).is_err() {
                    break;
                }
            }
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => break,
        }
    }
    Ok(complete(json!({"_meta": {META_SUBSCRIPTION: id}})))
}
