//! Step check output (`[validation] output`): a `tools/call` result whose
//! `structuredContent` breaks the tool's `outputSchema` is logged (`warn`,
//! within a log budget) or replaced by the tool error naming each failure
//! (`enforce`).
//!
//! Invariants: runs on the answer wherever it arrives (one message, the end of
//! a stream, a held call's last round: the relay's answer, `finish`); only a
//! result is checked (errors and failures pass as they are); a result that is
//! not JSON, or a tool without a compiled `outputSchema`, passes.
//!
//! Not here: compiling the validators (manifold-policy).

use manifold_upstream::CallOutcome;
use serde_json::Value;

use crate::refusal::ToolError;
use crate::state::Gateway;

/// The outcome to answer with: `outcome` itself, or under `enforce` the tool
/// error replacing a result that does not match `tool`'s `outputSchema`.
pub(crate) fn apply(gw: &Gateway, tool: &str, upstream: &str, outcome: CallOutcome) -> CallOutcome {
    let CallOutcome::Result(raw) = &outcome else {
        return outcome;
    };
    // Most tools declare no `outputSchema`: their results pass unread (parsing
    // every result cost a relayed call 5 % of its instructions).
    let validators = gw.validators.load();
    if !validators.checks_output(tool) {
        return outcome;
    }
    let Ok(result) = serde_json::from_str::<Value>(raw.get()) else {
        return outcome;
    };
    let Err(errors) = validators.check_output(tool, &result) else {
        return outcome;
    };
    match gw.cfg().validate_output {
        manifold_config::OutputMode::Enforce => {
            let error = ToolError::OutputMismatch {
                tool: tool.to_string(),
                upstream: upstream.to_string(),
                errors,
            };
            match serde_json::value::RawValue::from_string(error.result().to_string()) {
                Ok(raw) => CallOutcome::Result(raw),
                Err(_) => outcome,
            }
        }
        _ => {
            if let Some(suppressed) = gw.output_warnings.allow() {
                tracing::warn!(%tool, %upstream, errors = %errors.join("; "), suppressed,
                    "a result does not match its tool's outputSchema; passed on ([validation] output = \"warn\")");
            }
            outcome
        }
    }
}
