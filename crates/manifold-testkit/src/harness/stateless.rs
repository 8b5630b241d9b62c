//! The 2026-07-28 stateless era from the client side: requests that carry their
//! revision and capabilities in `_meta`, posted with the headers that era
//! requires (`MCP-Protocol-Version`, `Mcp-Method`, `Mcp-Name`: the `name`,
//! `uri` or `taskId` of the params), and no session.
//!
//! Invariants: [`McpClient::send_stateless`] never sends a session id, and
//! returns the response whatever its status (tests assert statuses); for an SSE
//! reply it returns the last message that carries an id.
//!
//! Not here: listen streams (use [`McpClient::send_streaming_with`]).

use anyhow::{Context, Result};
use http::StatusCode;
use serde_json::{json, Value};

use super::client::McpClient;

/// The stateless revision.
pub const STATELESS: &str = "2026-07-28";

/// The `_meta` of a stateless request declaring `capabilities`.
pub fn stateless_meta(capabilities: Value) -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": STATELESS,
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "modern-test", "version": "1"}
    })
}

/// A stateless request declaring no capabilities.
pub fn stateless_request(id: u64, method: &str, mut params: Value) -> Value {
    params["_meta"] = stateless_meta(json!({}));
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

impl McpClient {
    /// POSTs a stateless request with the headers its era requires, derived from
    /// the body; `extra` replaces same-named ones (an empty value removes one).
    /// The status and the response message.
    pub async fn send_stateless(
        &self,
        body: &Value,
        extra: &[(&str, &str)],
    ) -> Result<(StatusCode, Value)> {
        let method = body["method"].as_str().unwrap_or_default().to_string();
        let mut headers: Vec<(&str, &str)> =
            vec![("mcp-protocol-version", STATELESS), ("mcp-method", &method)];
        let name = body["params"]["name"]
            .as_str()
            .or(body["params"]["uri"].as_str())
            .or(body["params"]["taskId"].as_str())
            .map(str::to_string);
        if let Some(n) = &name {
            headers.push(("mcp-name", n));
        }
        for (k, v) in extra {
            headers.retain(|(h, _)| !h.eq_ignore_ascii_case(k));
            if !v.is_empty() {
                headers.push((k, v));
            }
        }
        let reply = self.post_raw(body.to_string(), &headers).await?;
        let text = String::from_utf8_lossy(&reply.body).to_string();
        // SSE replies: the last data line with an id is the response.
        let json_text = if reply.content_type().contains("event-stream") {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .rfind(|l| l.contains("\"id\""))
                .unwrap_or("null")
                .to_string()
        } else {
            text
        };
        let v = serde_json::from_str(&json_text).with_context(|| json_text.clone())?;
        Ok((reply.status, v))
    }
}
