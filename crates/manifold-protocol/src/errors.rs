//! JSON-RPC and MCP error codes, and the error object Manifold itself emits.
//!
//! Not here: which HTTP status an error travels with; that depends on why it was
//! sent and in which era, and is decided in one table (the server's refusals).

use serde_json::{json, Map, Value};

/// A JSON-RPC error code with its meaning in MCP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ErrorCode(pub i64);

impl ErrorCode {
    pub const PARSE_ERROR: ErrorCode = ErrorCode(-32700);
    pub const INVALID_REQUEST: ErrorCode = ErrorCode(-32600);
    pub const METHOD_NOT_FOUND: ErrorCode = ErrorCode(-32601);
    pub const INVALID_PARAMS: ErrorCode = ErrorCode(-32602);
    pub const INTERNAL_ERROR: ErrorCode = ErrorCode(-32603);
    /// 2025-11-25 and older: resource not found (2026-07-28 uses -32602).
    pub const RESOURCE_NOT_FOUND_LEGACY: ErrorCode = ErrorCode(-32002);
    /// 2026-07-28: an HTTP header disagrees with the body (SEP-2243).
    pub const HEADER_MISMATCH: ErrorCode = ErrorCode(-32020);
    /// 2026-07-28: the request needs a client capability that was not declared.
    pub const MISSING_CLIENT_CAPABILITY: ErrorCode = ErrorCode(-32021);
    /// 2025-11-25: the request needs the user to visit a URL first
    /// (`URLElicitationRequiredError`, `data.elicitations[]`); retired in
    /// 2026-07-28, where an `InputRequiredResult` asks instead.
    pub const URL_ELICITATION_REQUIRED: ErrorCode = ErrorCode(-32042);
    /// 2026-07-28: the protocol version of the request is not supported.
    pub const UNSUPPORTED_PROTOCOL_VERSION: ErrorCode = ErrorCode(-32022);
    /// Manifold: the upstream that owns the request is unavailable. In the
    /// implementation-defined server-error range (-32000..-32099 minus the spec's).
    pub const UPSTREAM_UNAVAILABLE: ErrorCode = ErrorCode(-32050);
    /// Manifold: the upstream did not answer within its timeout.
    pub const UPSTREAM_TIMEOUT: ErrorCode = ErrorCode(-32051);
    /// Manifold: a `[[rate_limit]]` rule refused the call; `data.retryAfterMs`
    /// says when to try again.
    pub const RATE_LIMITED: ErrorCode = ErrorCode(-32060);

    /// The `code` of an error object (`{"code": …, "message": …}`) as JSON
    /// text, parsed: never a substring search, so a peer that echoes client
    /// input in its message cannot steer what Manifold reads. `None` when it
    /// is not an error object with an integer code.
    pub fn of_error(error: &str) -> Option<ErrorCode> {
        #[derive(serde::Deserialize)]
        struct Code {
            code: i64,
        }
        serde_json::from_str::<Code>(error)
            .ok()
            .map(|c| ErrorCode(c.code))
    }

    /// The `error.code` of a whole JSON-RPC error message as JSON text (see
    /// [`ErrorCode::of_error`]); `None` for anything else.
    pub fn of_message(message: &str) -> Option<ErrorCode> {
        #[derive(serde::Deserialize)]
        struct Code {
            code: i64,
        }
        #[derive(serde::Deserialize)]
        struct Message {
            error: Code,
        }
        serde_json::from_str::<Message>(message)
            .ok()
            .map(|m| ErrorCode(m.error.code))
    }
}

/// A JSON-RPC error object produced by Manifold (upstream errors pass through raw).
#[derive(Debug, Clone, PartialEq)]
pub struct RpcError {
    pub code: ErrorCode,
    pub message: String,
    pub data: Option<Value>,
}

impl RpcError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }

    pub fn parse(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::PARSE_ERROR, message)
    }
    pub fn invalid_request(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_REQUEST, message)
    }
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!("Method not found: {method}"),
        )
    }
    pub fn invalid_params(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_PARAMS, message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INTERNAL_ERROR, message)
    }

    /// The error object (`{"code", "message", "data"?}`).
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        m.insert("code".into(), json!(self.code.0));
        m.insert("message".into(), json!(self.message));
        if let Some(d) = &self.data {
            m.insert("data".into(), d.clone());
        }
        Value::Object(m)
    }
}

impl std::fmt::Display for RpcError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.message, self.code.0)
    }
}

impl std::error::Error for RpcError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_are_read_by_parsing_never_by_searching() {
        assert_eq!(
            ErrorCode::of_error(r#"{"code":-32021,"message":"m"}"#),
            Some(ErrorCode::MISSING_CLIENT_CAPABILITY)
        );
        assert_eq!(ErrorCode::of_error(r#"{"message":"code: -32021"}"#), None);
        assert_eq!(ErrorCode::of_error(r#"{"code":"-32021"}"#), None);
        assert_eq!(
            ErrorCode::of_message(
                r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32022,"message":"x"}}"#
            ),
            Some(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION)
        );
        assert_eq!(
            ErrorCode::of_message(
                r#"{"jsonrpc":"2.0","id":1,"result":{"text":"\"error\":{\"code\":-32022}"}}"#
            ),
            None
        );
    }
}
