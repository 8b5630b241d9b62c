//! The operator's front door: [`Gateway::call_tool`], the one tool call of
//! `manifold call`, through the same pipeline as every client's request —
//! admission, the method table, resolve, relay — with no transport.
//!
//! Invariants: the operator is its own principal (`operator`); its call is one
//! JSON message (it takes no stream, so it is never asked anything mid-call);
//! cancelling the token cancels the call upstream.
//!
//! Not here: printing the answer or choosing exit codes (the binary).

use manifold_protocol::methods as m;
use serde_json::{json, Map, Value};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

use crate::pipeline;
use crate::reply::Reply;
use crate::request::{Accepts, Arrival, Front};
use crate::state::Gateway;

/// The answer to [`Gateway::call_tool`].
#[derive(Debug, Clone, PartialEq)]
pub enum ToolReply {
    /// The tool's result (check `isError`). An upstream that could not be asked
    /// answers here too, as a tool error naming it.
    Result(Value),
    /// Manifold refused the call itself: an unknown tool, arguments an
    /// `x-mcp-header` parameter cannot carry, the audit log unavailable, the call
    /// cancelled.
    Refused {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// The upstream answered with a JSON-RPC error.
    Error {
        code: i64,
        message: String,
        data: Option<Value>,
    },
}

impl Gateway {
    /// Calls the tool exposed as `name` with `arguments`, as the local operator.
    /// Cancelling `cancel` cancels the call upstream; the answer is then an error.
    pub async fn call_tool(
        self: &Arc<Self>,
        name: &str,
        arguments: Map<String, Value>,
        cancel: CancellationToken,
    ) -> ToolReply {
        let body = json!({
            "jsonrpc": "2.0",
            "id": 1,
            "method": m::TOOLS_CALL,
            "params": {"name": name, "arguments": arguments},
        })
        .to_string();
        let arrival = Arrival {
            request_id: self.request_id(),
            bytes: body.len(),
            front: Front::Operator(cancel),
            identity: None,
            peer: None,
            endpoint: self.default_endpoint(),
            accepts: Accepts {
                json: true,
                stream: false,
            },
        };
        match pipeline::serve(self, arrival, body.as_bytes()).await {
            Reply::Message { bytes, refused, .. } => tool_reply(&bytes, refused),
            other => ToolReply::Refused {
                code: manifold_protocol::ErrorCode::INTERNAL_ERROR.0,
                message: format!("unexpected answer to a tools/call: {other:?}"),
                data: None,
            },
        }
    }
}

fn tool_reply(bytes: &[u8], refused: bool) -> ToolReply {
    let msg: Value = serde_json::from_slice(bytes).unwrap_or(Value::Null);
    if let Some(result) = msg.get("result") {
        return ToolReply::Result(result.clone());
    }
    let err = msg.get("error").cloned().unwrap_or(Value::Null);
    let code = err
        .get("code")
        .and_then(Value::as_i64)
        .unwrap_or(manifold_protocol::ErrorCode::INTERNAL_ERROR.0);
    let message = err
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or("no message")
        .to_string();
    let data = err.get("data").cloned();
    if refused {
        ToolReply::Refused {
            code,
            message,
            data,
        }
    } else {
        ToolReply::Error {
            code,
            message,
            data,
        }
    }
}
