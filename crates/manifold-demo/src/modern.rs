//! The demo server's 2026-07-28 mode (`--modern`): stateless requests only.
//!
//! What: `server/discover`; every other request must carry the revision and the
//! client capabilities in `params._meta` (else -32602, or -32022 for another
//! revision); `initialize` is refused with -32022 naming the supported revision;
//! results carry `resultType`, lists `ttlMs`/`cacheScope`; `subscriptions/listen`
//! acknowledges, then relays the server's list changes and the updates of its
//! `resourceSubscriptions` (which `touch` accepts while the stream is open),
//! tagged with the listen id;
//! two tools exist only here: `whoami` echoes the request's `_meta` and `Mcp-*`
//! headers, and `ask` asks with `InputRequiredResult`s (key `answer`, a
//! `requestState`), one round per entry of its `via` argument (elicitation,
//! sampling, roots), and answers once the retries carried every answer.
//!
//! The legacy tools and lists are reused unchanged; tools that need a
//! server→client request fail here (2026-07-28 servers cannot send those).
//!
//! Not here: transports (stdio/http), which only skip the session handshake.

use serde_json::{json, Map, Value};
use std::sync::Arc;
use tokio::sync::broadcast;

use crate::codes;
use crate::identity::{SERVER_NAME, SERVER_VERSION};
use crate::jsonrpc::RpcError;
use crate::session::Session;
use crate::transport::CallContext;

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
            "description": "Asks the client with InputRequiredResults, one round per entry of `via` (elicitation, sampling, roots; default elicitation), then echoes the answers.",
            "inputSchema": {"type": "object", "properties": {
                "question": {"type": "string"},
                "via": {"type": "array", "items": {"enum": ["elicitation", "sampling", "roots"]}}
            }}
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
    let tasks = session.server.config.tasks;
    match method {
        "tasks/get" | "tasks/update" | "tasks/cancel" if tasks => {
            session.server.task_store.request(method, params, ctx)
        }
        "ping" | "logging/setLevel" | "resources/subscribe" | "resources/unsubscribe" => {
            Err(RpcError::new(
                codes::METHOD_NOT_FOUND,
                format!("Method not found: {method} (not in 2026-07-28)"),
            ))
        }
        "subscriptions/listen" => listen(session, id, params, ctx).await,
        "tools/list" => {
            let mut list = session.list_tools(params)?;
            // Catalogue mode lists the catalogue's tools only.
            let catalogue = session.server.config.catalog.is_some();
            if let Some(tools) = list.get_mut("tools").and_then(Value::as_array_mut) {
                if !catalogue {
                    tools.extend(extra_tools());
                    if tasks {
                        tools.extend(crate::modern_tasks::tools());
                    }
                }
            }
            list["ttlMs"] = json!(ttl);
            list["cacheScope"] = json!("public");
            Ok(complete(list))
        }
        "tools/call" if session.server.config.catalog.is_some() => {
            session.dispatch(method, params, ctx).await.map(complete)
        }
        "tools/call" => match params.get("name").and_then(Value::as_str) {
            Some("whoami") => Ok(complete(json!({
                "content": [{"type": "text", "text": "request metadata"}],
                "structuredContent": {"meta": params.get("_meta"), "headers": ctx.mcp_headers},
            }))),
            Some("ask") => Ok(ask(params)),
            Some(name) if tasks => match session.server.task_store.call(name, params).await {
                Some(r) => r,
                None => session.dispatch(method, params, ctx).await.map(complete),
            },
            _ => session.dispatch(method, params, ctx).await.map(complete),
        },
        "prompts/list" | "resources/list" | "resources/templates/list" | "skills/list" => {
            let mut list = session.dispatch(method, params, ctx).await?;
            list["ttlMs"] = json!(ttl);
            list["cacheScope"] = json!("public");
            Ok(complete(list))
        }
        "resources/read" | "skills/get" => {
            let mut read = session.dispatch(method, params, ctx).await?;
            read["ttlMs"] = json!(0);
            read["cacheScope"] = json!("private");
            Ok(complete(read))
        }
        _ => session.dispatch(method, params, ctx).await.map(complete),
    }
}

fn discover(session: &Session) -> Value {
    let mut v = discover_core(session);
    if session.server.config.tasks {
        v["capabilities"]["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
    }
    if session.server.config.skill.is_some() {
        v["capabilities"]["extensions"][manifold_protocol::extensions::SKILLS] =
            crate::skill::extension();
    }
    v
}

fn discover_core(session: &Session) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": [MODERN_VERSION],
        "capabilities": {
            "tools": {"listChanged": !session.server.config.no_list_changed},
            "prompts": {"listChanged": false},
            "resources": {"subscribe": true, "listChanged": false},
            "completions": {},
            "logging": {}
        },
        "instructions": session.server.config.instructions,
        "_meta": {META_SERVER: {"name": SERVER_NAME, "version": SERVER_VERSION}},
        "ttlMs": session.server.config.list_ttl_ms,
        "cacheScope": "public"
    })
}

/// What `ask` can ask for, one per round: the `inputRequests` entry for each.
fn input_request(via: &str, question: &str) -> Option<Value> {
    Some(match via {
        "elicitation" => json!({
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": question,
                "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
            }
        }),
        "sampling" => json!({
            "method": "sampling/createMessage",
            "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": question}}],
                "maxTokens": 100
            }
        }),
        "roots" => json!({"method": "roots/list", "params": {}}),
        _ => return None,
    })
}

/// The `ask` tool: one `InputRequiredResult` round per entry of `via` (default
/// `["elicitation"]`), each asking under the key `answer`, then the answers
/// echoed. Stateless like the revision wants: the answers so far travel in the
/// `requestState` (`ASK_STATE` for the first round, then `ASK_STATE|<json>`).
fn ask(params: &Map<String, Value>) -> Value {
    let args = params.get("arguments");
    let question = args
        .and_then(|a| a.get("question"))
        .and_then(Value::as_str)
        .unwrap_or("What is your name?");
    let via: Vec<&str> = match args.and_then(|a| a.get("via")).and_then(Value::as_array) {
        Some(v) => v.iter().filter_map(Value::as_str).collect(),
        None => vec!["elicitation"],
    };
    let state = params.get("requestState").and_then(Value::as_str);
    let mut collected: Vec<Value> = match state {
        None => Vec::new(),
        Some(ASK_STATE) => Vec::new(),
        Some(s) => match s
            .strip_prefix(ASK_STATE)
            .and_then(|r| r.strip_prefix('|'))
            .and_then(|r| serde_json::from_str(r).ok())
        {
            Some(so_far) => so_far,
            None => return tool_error(&format!("not a requestState of mine: {s}")),
        },
    };
    if state.is_some() {
        if let Some(answer) = params.get("inputResponses").and_then(|r| r.get("answer")) {
            collected.push(answer.get("content").unwrap_or(answer).clone());
        }
    }
    let Some(next) = via.get(collected.len()) else {
        let said: Vec<String> = collected.iter().map(Value::to_string).collect();
        return complete(
            json!({"content": [{"type": "text", "text": format!("you answered {}", said.join(" then "))}]}),
        );
    };
    let Some(request) = input_request(next, question) else {
        return tool_error(&format!(
            "cannot ask via `{next}`: use elicitation, sampling or roots"
        ));
    };
    let state = if collected.is_empty() {
        ASK_STATE.to_string()
    } else {
        format!("{ASK_STATE}|{}", Value::from(collected))
    };
    json!({
        "resultType": "input_required",
        "inputRequests": {"answer": request},
        "requestState": state
    })
}

fn tool_error(text: &str) -> Value {
    complete(json!({"content": [{"type": "text", "text": text}], "isError": true}))
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
    let uris: Vec<String> = wanted
        .get("resourceSubscriptions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
    let mut honoured = Map::new();
    if tools {
        honoured.insert("toolsListChanged".into(), json!(true));
    }
    if !uris.is_empty() {
        honoured.insert("resourceSubscriptions".into(), json!(uris));
    }
    let mut events = session.server.subscribe_events();
    let watch = super::resources::Watch::new(&session.server, uris);
    let ack = super::jsonrpc::notification(
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
                let wanted = match method {
                    "notifications/tools/list_changed" => tools,
                    "notifications/resources/updated" => ev["params"]["uri"]
                        .as_str()
                        .is_some_and(|u| watch.contains(u)),
                    _ => false,
                };
                if !wanted {
                    continue;
                }
                match ev.get_mut("params").and_then(Value::as_object_mut) {
                    Some(p) => {
                        p.insert("_meta".into(), json!({META_SUBSCRIPTION: id}));
                    }
                    None => ev["params"] = json!({"_meta": {META_SUBSCRIPTION: id}}),
                }
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
