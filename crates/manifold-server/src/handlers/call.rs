//! `tools/call` and `prompts/get`: the exposed name resolves to its upstream and
//! that upstream's own name, and the request is forwarded.
//!
//! Invariants: an unknown name answers as unknown, whoever asks; the audit record
//! names what the client asked for even when it is refused.
//!
//! Not here: resolving (`relay::resolve`), forwarding (`relay`).

use manifold_catalog::Kind;
use manifold_protocol::jsonrpc;
use manifold_protocol::methods as m;
use serde_json::{json, Map, Value};

use crate::era::Era;

use crate::exchange::Exchange;
use crate::refusal::Refusal;
use crate::relay::{self, resolve, Target};
use crate::reply::Reply;

pub(crate) async fn call(
    x: &mut Exchange,
    mut params: Map<String, Value>,
) -> Result<Reply, Refusal> {
    let kind = match x.method.as_str() {
        m::TOOLS_CALL => Kind::Tools,
        _ => Kind::Prompts,
    };
    let name = resolve::required_str(&params, "name", &x.method)?;
    if let Some(o) = x.observation() {
        o.name = Some(name.clone());
    }
    let access = x.access();
    // What the client sent is checked against the schema it was shown, before
    // an override's pins are injected; only for a tool in the caller's view
    // (a hidden one answers as unknown below, never as "invalid").
    if kind == Kind::Tools
        && x.gw.cfg().validate_arguments
        && access.catalog.tools.get(&name).is_some()
    {
        let empty = Value::Object(Map::new());
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => &empty,
            Some(a) => a,
        };
        if let Err(errors) = x.gw.validators.load().check(&name, arguments) {
            return Ok(invalid_arguments(x, &name, &errors).await);
        }
    }
    let mut target = resolve::named(&x.gw, &access, kind, &x.method, &name, &mut params)?;
    if let Some(o) = x.obs.as_mut() {
        o.injected = target.injected.take();
    }
    if kind == Kind::Tools && x.gw.cfg().validate_output != manifold_config::OutputMode::Off {
        target.output_check = Some(name.clone());
    }
    if kind == Kind::Tools {
        // Rate limits are taken when the call is really about to go (after a
        // human's "accept", for a confirmed one): see `confirm`.
        return super::confirm::forward(x, &name, params, target, &access.catalog).await;
    }
    relay::forward(x, params, target).await
}

/// `[[rate_limit]]`: the places a tool call holds until it ends, or the
/// refusal saying when to retry. With `[cluster] redis`, the rate buckets are
/// shared by every replica (manifold-policy falls back to this replica's own
/// when Redis cannot decide).
pub(crate) async fn rate_limit(
    x: &Exchange,
    name: &str,
    target: &mut Target,
) -> Result<(), Refusal> {
    let limits = x.gw.live().rate_limits.clone();
    if limits.is_empty() {
        return Ok(());
    }
    let Some(caller) = x.principal.identity() else {
        return Ok(());
    };
    let refuse = |l: manifold_policy::Limited| Refusal::RateLimited {
        tool: name.to_string(),
        rule: l.rule,
        limit: l.limit,
        retry_after: l.retry_after,
    };
    let shared = (x.gw.cluster.as_ref()).map(|c| &*c.bus as &dyn manifold_policy::SharedBuckets);
    let permit = limits.admit_with(&caller, name, shared).await;
    target.permit = Some(permit.map_err(refuse)?);
    Ok(())
}

/// Arguments that do not fit the tool's `inputSchema`: a tool execution error
/// (`isError: true`, as MCP classes input validation failures) naming each
/// failing pointer and rule, so a model can correct its call. Nothing reaches
/// the upstream; the record says `tool_error`.
async fn invalid_arguments(x: &mut Exchange, name: &str, errors: &[String]) -> Reply {
    let text = format!(
        "Invalid arguments for tool `{name}` (checked against its inputSchema):\n{}",
        errors.join("\n")
    );
    let mut result = json!({"content": [{"type": "text", "text": text}], "isError": true});
    if x.era == Era::Stateless {
        result["resultType"] = json!("complete");
    }
    let bytes = jsonrpc::response_bytes_from_json(&x.rpc_id, result.to_string().as_bytes());
    if let Some(o) = x.obs.take() {
        o.finish(manifold_audit::Outcome::ToolError, bytes.len())
            .await;
    }
    Reply::ok(bytes)
}
