//! `logging/setLevel` (MCP's logging, not Manifold's own logs): remembered on the
//! session and applied to every upstream that declared `logging`, at the most
//! verbose level any live session asked for (see `state::log_levels`).
//!
//! Invariants: one upstream refusing the level never fails the client's request.

use manifold_protocol::jsonrpc;
use manifold_protocol::logging::{LogLevel, LEVELS};
use serde_json::{Map, Value};

use crate::refusal::Refusal;
use crate::reply::Reply;
use crate::request::Request;

/// The level a `logging/setLevel` asks for.
fn requested_level(params: &Map<String, Value>) -> Result<LogLevel, Refusal> {
    let level = params.get("level").and_then(Value::as_str).ok_or_else(|| {
        Refusal::InvalidParams("logging/setLevel needs params.level (a string)".into())
    })?;
    LogLevel::parse(level).ok_or_else(|| {
        Refusal::InvalidParams(format!(
            "Invalid log level `{level}`: expected one of {}",
            LEVELS.join(", ")
        ))
    })
}

pub(crate) async fn set_level(
    x: &mut Request,
    params: Map<String, Value>,
) -> Result<Reply, Refusal> {
    let level = requested_level(&params)?;
    if let Some(session) = x.caller.session() {
        session.set_log_level(level);
    }
    x.gw.apply_log_level().await;
    Ok(Reply::ok(jsonrpc::response_bytes_from_json(
        &x.rpc_id, b"{}",
    )))
}
