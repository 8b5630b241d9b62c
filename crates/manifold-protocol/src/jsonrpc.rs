//! The JSON-RPC 2.0 envelope, decoded just enough to route: kind, id and method.
//!
//! Invariants: the decoded message keeps every member it arrived with, in order
//! (`serde_json` with `preserve_order`), so re-serializing it after rewriting the few
//! members Manifold owns (id, `params.name`, `params._meta.progressToken`) is lossless.
//! Results and errors from upstreams are carried as [`RawValue`] and copied byte for
//! byte into the downstream response.
//!
//! Not here: batches (rejected with a clear error; no revision after 2025-03-26 allows
//! them and no client in use sends them), and any MCP-level meaning of `params`.

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use std::fmt;
use std::hash::{Hash, Hasher};

use crate::errors::{ErrorCode, RpcError};

/// A JSON-RPC id: a string or a number, never null. Kept as the JSON value it arrived
/// as, so the reply carries exactly the same id back.
#[derive(Debug, Clone)]
pub struct RequestId(Value);

impl RequestId {
    /// Validates an id member: strings and numbers only.
    pub fn from_value(v: &Value) -> Option<RequestId> {
        match v {
            Value::String(_) | Value::Number(_) => Some(RequestId(v.clone())),
            _ => None,
        }
    }
    pub fn number(n: u64) -> RequestId {
        RequestId(Value::from(n))
    }
    pub fn string(s: impl Into<String>) -> RequestId {
        RequestId(Value::String(s.into()))
    }
    pub fn as_value(&self) -> &Value {
        &self.0
    }
    pub fn as_u64(&self) -> Option<u64> {
        self.0.as_u64()
    }
    pub fn as_str(&self) -> Option<&str> {
        self.0.as_str()
    }
}

impl PartialEq for RequestId {
    fn eq(&self, other: &Self) -> bool {
        // Numbers compare by value (1 == 1.0 is not a concern: ids are integers in
        // practice, and serde_json compares the parsed representation).
        self.0 == other.0
    }
}
impl Eq for RequestId {}
impl Hash for RequestId {
    fn hash<H: Hasher>(&self, state: &mut H) {
        match &self.0 {
            Value::String(s) => {
                0u8.hash(state);
                s.hash(state)
            }
            other => {
                1u8.hash(state);
                other.to_string().hash(state)
            }
        }
    }
}
impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A decoded incoming message. `msg` is the whole object, members in arrival order.
#[derive(Debug, Clone)]
pub enum Incoming {
    Request {
        id: RequestId,
        method: String,
        msg: Map<String, Value>,
    },
    Notification {
        method: String,
        msg: Map<String, Value>,
    },
    Response {
        id: RequestId,
        msg: Map<String, Value>,
    },
}

/// Why a body is not a JSON-RPC message; knows the error to answer with.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum MessageError {
    #[error("Parse error: {0}")]
    Parse(String),
    #[error("Invalid request: {reason}")]
    Invalid {
        reason: String,
        /// The id, when the message had a usable one (the reply then carries it).
        id: Option<RequestId>,
    },
    #[error("Invalid request: JSON-RPC batches are not supported; send one message per POST")]
    Batch,
}

impl MessageError {
    pub fn to_rpc_error(&self) -> RpcError {
        match self {
            MessageError::Parse(_) => RpcError::new(ErrorCode::PARSE_ERROR, self.to_string()),
            _ => RpcError::new(ErrorCode::INVALID_REQUEST, self.to_string()),
        }
    }
    pub fn id(&self) -> Option<&RequestId> {
        match self {
            MessageError::Invalid { id, .. } => id.as_ref(),
            _ => None,
        }
    }
}

fn invalid(reason: impl Into<String>, id: Option<RequestId>) -> MessageError {
    MessageError::Invalid {
        reason: reason.into(),
        id,
    }
}

impl Incoming {
    /// Decodes one message from a body.
    pub fn parse(bytes: &[u8]) -> Result<Incoming, MessageError> {
        let v: Value =
            serde_json::from_slice(bytes).map_err(|e| MessageError::Parse(e.to_string()))?;
        Self::from_value(v)
    }

    pub fn from_value(v: Value) -> Result<Incoming, MessageError> {
        let msg = match v {
            Value::Object(m) => m,
            Value::Array(_) => return Err(MessageError::Batch),
            _ => return Err(invalid("a message must be a JSON object", None)),
        };
        let id = match msg.get("id") {
            None => None,
            Some(v) => match RequestId::from_value(v) {
                Some(id) => Some(id),
                None => return Err(invalid("`id` must be a string or a number", None)),
            },
        };
        if msg.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
            return Err(invalid("`jsonrpc` must be \"2.0\"", id));
        }
        match msg.get("method") {
            Some(Value::String(method)) => {
                let method = method.clone();
                if let Some(p) = msg.get("params") {
                    if !p.is_object() {
                        return Err(invalid("`params` must be an object", id));
                    }
                }
                Ok(match id {
                    Some(id) => Incoming::Request { id, method, msg },
                    None => Incoming::Notification { method, msg },
                })
            }
            Some(_) => Err(invalid("`method` must be a string", id)),
            None => {
                let Some(id) = id else {
                    return Err(invalid(
                        "a message needs `method` (request, notification) or `id` (response)",
                        None,
                    ));
                };
                let has_result = msg.contains_key("result");
                let has_error = msg.contains_key("error");
                if has_result == has_error {
                    return Err(invalid(
                        "a response carries exactly one of `result` and `error`",
                        Some(id),
                    ));
                }
                Ok(Incoming::Response { id, msg })
            }
        }
    }

    pub fn method(&self) -> Option<&str> {
        match self {
            Incoming::Request { method, .. } | Incoming::Notification { method, .. } => {
                Some(method)
            }
            Incoming::Response { .. } => None,
        }
    }
}

/// `params` of a request or notification, when present.
pub fn params(msg: &Map<String, Value>) -> Option<&Map<String, Value>> {
    msg.get("params").and_then(Value::as_object)
}

/// `params._meta.progressToken`, when present.
pub fn progress_token(params: &Map<String, Value>) -> Option<&Value> {
    params
        .get("_meta")
        .and_then(Value::as_object)
        .and_then(|m| m.get("progressToken"))
}

/// Serializes `{"jsonrpc":"2.0","id":…,"result":…}` with the result copied raw.
pub fn response_bytes(id: &RequestId, result: &RawValue) -> Vec<u8> {
    let id_text = id.as_value().to_string();
    let mut out = Vec::with_capacity(36 + id_text.len() + result.get().len());
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id_text.as_bytes());
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result.get().as_bytes());
    out.push(b'}');
    out
}

/// Serializes a response whose result is already serialized JSON text.
pub fn response_bytes_from_json(id: &RequestId, result_json: &[u8]) -> Vec<u8> {
    let id_text = id.as_value().to_string();
    let mut out = Vec::with_capacity(36 + id_text.len() + result_json.len());
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id_text.as_bytes());
    out.extend_from_slice(b",\"result\":");
    out.extend_from_slice(result_json);
    out.push(b'}');
    out
}

/// Serializes an error response; `id` is null when the request's id is unknown.
pub fn error_bytes(id: Option<&RequestId>, err: &RpcError) -> Vec<u8> {
    let v = serde_json::json!({
        "jsonrpc": "2.0",
        "id": id.map(|i| i.as_value().clone()).unwrap_or(Value::Null),
        "error": err.to_value(),
    });
    v.to_string().into_bytes()
}

/// Serializes an error response whose error object is already serialized (upstream).
pub fn error_bytes_raw(id: &RequestId, error: &RawValue) -> Vec<u8> {
    let id_text = id.as_value().to_string();
    let mut out = Vec::with_capacity(36 + id_text.len() + error.get().len());
    out.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.extend_from_slice(id_text.as_bytes());
    out.extend_from_slice(b",\"error\":");
    out.extend_from_slice(error.get().as_bytes());
    out.push(b'}');
    out
}

/// Serializes a notification.
pub fn notification_bytes(method: &str, params: Option<&Value>) -> Vec<u8> {
    let mut m = Map::new();
    m.insert("jsonrpc".into(), Value::from("2.0"));
    m.insert("method".into(), Value::from(method));
    if let Some(p) = params {
        m.insert("params".into(), p.clone());
    }
    Value::Object(m).to_string().into_bytes()
}

/// A response from a peer, with result or error kept raw.
#[derive(Debug, serde::Deserialize)]
pub struct RawResponse {
    pub id: Value,
    #[serde(default)]
    pub result: Option<Box<RawValue>>,
    #[serde(default)]
    pub error: Option<Box<RawValue>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_messages() {
        let cases: &[(&str, &str)] = &[
            (r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, "request"),
            (
                r#"{"jsonrpc":"2.0","id":"a","method":"ping","params":{}}"#,
                "request",
            ),
            (
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
                "notification",
            ),
            (r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, "response"),
            (
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"x"}}"#,
                "response",
            ),
        ];
        for (text, kind) in cases {
            let got = match Incoming::parse(text.as_bytes()).unwrap() {
                Incoming::Request { .. } => "request",
                Incoming::Notification { .. } => "notification",
                Incoming::Response { .. } => "response",
            };
            assert_eq!(got, *kind, "{text}");
        }
    }

    #[test]
    fn rejects_bad_envelopes_with_the_right_code() {
        let cases: &[(&str, i64, bool)] = &[
            ("{not json", -32700, false),
            ("", -32700, false),
            ("[]", -32600, false),
            ("42", -32600, false),
            (r#"{"id":1,"method":"ping"}"#, -32600, true),
            (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, -32600, true),
            (
                r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
                -32600,
                false,
            ),
            (
                r#"{"jsonrpc":"2.0","id":{},"method":"ping"}"#,
                -32600,
                false,
            ),
            (r#"{"jsonrpc":"2.0","id":1,"method":5}"#, -32600, true),
            (
                r#"{"jsonrpc":"2.0","id":1,"method":"x","params":[1]}"#,
                -32600,
                true,
            ),
            (r#"{"jsonrpc":"2.0","id":1}"#, -32600, true),
            (
                r#"{"jsonrpc":"2.0","id":1,"result":1,"error":{}}"#,
                -32600,
                true,
            ),
            (r#"{"jsonrpc":"2.0"}"#, -32600, false),
        ];
        for (text, code, has_id) in cases {
            let err = Incoming::parse(text.as_bytes()).unwrap_err();
            assert_eq!(err.to_rpc_error().code.0, *code, "{text}");
            assert_eq!(err.id().is_some(), *has_id, "{text}");
        }
    }

    #[test]
    fn keeps_member_order_and_unknown_members() {
        let text = r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"z":1,"name":"a","_meta":{"progressToken":"t","x":[3,1]},"a":{"q":null}},"extra":true}"#;
        let Incoming::Request { msg, .. } = Incoming::parse(text.as_bytes()).unwrap() else {
            panic!("not a request")
        };
        assert_eq!(serde_json::to_string(&msg).unwrap(), text);
        assert_eq!(
            progress_token(params(&msg).unwrap()),
            Some(&Value::from("t"))
        );
    }

    #[test]
    fn response_bytes_copy_result_raw() {
        let raw: Box<RawValue> =
            serde_json::from_str(r#"{"b":1.50,"a":[],"_meta":{"k":"v"}}"#).unwrap();
        let out = response_bytes(&RequestId::string("x"), &raw);
        assert_eq!(
            std::str::from_utf8(&out).unwrap(),
            r#"{"jsonrpc":"2.0","id":"x","result":{"b":1.50,"a":[],"_meta":{"k":"v"}}}"#
        );
    }

    #[test]
    fn ids_hash_by_value() {
        use std::collections::HashSet;
        let mut s = HashSet::new();
        s.insert(RequestId::number(1));
        s.insert(RequestId::string("1"));
        assert_eq!(s.len(), 2);
        assert!(s.contains(&RequestId::from_value(&serde_json::json!(1)).unwrap()));
    }
}
