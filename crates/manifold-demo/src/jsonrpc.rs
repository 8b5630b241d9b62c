//! JSON-RPC 2.0 messages as the demo server reads and writes them: an inbound
//! message classified ([`classify`] into [`Incoming`]), the replies and
//! notifications it sends ([`rpc_result`], [`rpc_error`], [`parse_error`],
//! [`notification`]) and the error a handler returns ([`RpcError`]).
//!
//! Invariants: a response is never answered (replying could ping-pong errors
//! with the peer forever); batches are invalid requests (removed from MCP in
//! 2025-06-18); an id is echoed back only when it is a string or a number.
//!
//! Not here: the codes (`codes`), moving messages (`stdio`, `http`), what a
//! method does (the dispatchers: `methods`, `modern`).

use serde_json::{json, Map, Value};

use crate::codes;

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
pub(crate) fn id_key(id: &Value) -> String {
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

/// The response to a request: its result, or its error.
pub(crate) fn respond(id: Value, outcome: Result<Value, RpcError>) -> Value {
    match outcome {
        Ok(result) => rpc_result(id, result),
        Err(error) => rpc_error(id, error.code, &error.message),
    }
}
