//! Step validate: the arguments are well-formed for the tool before anything
//! else is spent on the call — they fit its `inputSchema` (`[validation]
//! arguments`; a misfit is a tool execution error naming each failing pointer
//! and rule, so a model can correct its call), and every `x-mcp-header`
//! argument can travel as its `Mcp-Param-*` header (SEP-2243; -32602 if not).
//!
//! Invariants: the schema checked is the one the caller was shown, against the
//! arguments as the client sent them (before an override's pins); the headers
//! are computed from the arguments the upstream will get (a pinned header
//! argument is mirrored too); nothing reaches the upstream when either fails.
//!
//! Not here: compiling the validators (manifold-policy, rebuilt with the
//! catalogue), the output check (`check_output`).

use manifold_catalog::Kind;
use manifold_protocol::headers::param_headers;
use serde_json::{Map, Value};

use super::context::{Call, What};
use crate::refusal::{Refusal, ToolError};
use crate::request::Request;

/// Checks `call`'s arguments and adds its `Mcp-Param-*` headers.
pub(crate) fn arguments(x: &Request, call: &mut Call) -> Result<(), Refusal> {
    if let (What::Tool, true, Some(validators)) = (
        call.what,
        x.gw.cfg().validate_arguments,
        call.validators.as_ref(),
    ) {
        let empty = Value::Object(Map::new());
        let sent = match &call.sent_arguments {
            Some(sent) => sent,
            None => call.params.get("arguments").unwrap_or(&empty),
        };
        let sent = if sent.is_null() { &empty } else { sent };
        if let Err(errors) = validators.check(&call.exposed, sent) {
            return Err(Refusal::Tool(ToolError::InvalidArguments {
                tool: call.exposed.clone(),
                errors,
            }));
        }
    }
    let kind = match call.what {
        What::Tool => Kind::Tools,
        What::Prompt => Kind::Prompts,
        What::Resource | What::Completion | What::Task | What::Skill | What::Directory => {
            return Ok(())
        }
    };
    let Some(entry) = call
        .view
        .as_ref()
        .and_then(|v| v.list(kind).get(&call.exposed))
    else {
        return Ok(());
    };
    if entry.header_params.is_empty() {
        return Ok(());
    }
    match param_headers(&entry.header_params, call.params.get("arguments")) {
        Ok(h) => {
            x.gw.metrics.headers_mirrored(h.len());
            call.headers.extend(h);
            Ok(())
        }
        Err(e) => {
            x.gw.metrics.header_rejected();
            Err(Refusal::InvalidParams(format!(
                "Invalid arguments for {}: {e}",
                call.exposed
            )))
        }
    }
}
