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
//! A read of a file a skill announced (SEP-2640) is checked against the
//! announced size and SHA-256 digest (`skill_file`): bytes that do not
//! match are refused, never passed on as the skill's.
//!
//! Not here: compiling the validators (manifold-policy).

use manifold_upstream::CallOutcome;
use serde_json::Value;

use super::context::{Expected, OutputCheck};
use crate::refusal::{Refusal, ToolError};
use crate::state::Gateway;
use base64::Engine;
use sha2::{Digest, Sha256};

/// The outcome to answer with: `outcome` itself, or under `enforce` the tool
/// error replacing a result that does not match `tool`'s `outputSchema`.
pub(crate) fn apply(
    gw: &Gateway,
    check: &OutputCheck,
    upstream: &str,
    outcome: CallOutcome,
) -> CallOutcome {
    let (tool, validators) = (check.tool.as_str(), &check.validators);
    let CallOutcome::Result(raw) = &outcome else {
        return outcome;
    };
    // Most tools declare no `outputSchema`: their results pass unread (parsing
    // every result cost a relayed call 5 % of its instructions).
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

/// A skill file's read: `outcome` when its content (the one with the file's
/// URI, else the first) is the announced size and digest; else the refusal
/// that says which differs. Errors and failures pass as they are.
pub(crate) fn skill_file(
    expected: &Expected,
    outcome: CallOutcome,
) -> Result<CallOutcome, Refusal> {
    let CallOutcome::Result(raw) = &outcome else {
        return Ok(outcome);
    };
    let refuse = |why: String| Refusal::SkillFileMismatch {
        uri: expected.uri.clone(),
        why,
    };
    let result: Value =
        serde_json::from_str(raw.get()).map_err(|_| refuse("the answer is not JSON".into()))?;
    let contents = result
        .get("contents")
        .and_then(Value::as_array)
        .ok_or_else(|| refuse("the answer has no `contents`".into()))?;
    let content = contents
        .iter()
        .find(|c| c.get("uri").and_then(Value::as_str) == Some(&expected.original))
        .or_else(|| contents.first())
        .ok_or_else(|| refuse("the answer has no content".into()))?;
    let bytes = match (
        content.get("text").and_then(Value::as_str),
        content.get("blob").and_then(Value::as_str),
    ) {
        (Some(text), _) => text.as_bytes().to_vec(),
        (None, Some(blob)) => base64::engine::general_purpose::STANDARD
            .decode(blob)
            .map_err(|_| refuse("its `blob` is not base64".into()))?,
        (None, None) => return Err(refuse("its content has neither `text` nor `blob`".into())),
    };
    if bytes.len() as u64 != expected.file.size {
        return Err(refuse(format!(
            "{} bytes where the skill announced {}",
            bytes.len(),
            expected.file.size
        )));
    }
    let digest = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
    if digest != expected.file.digest {
        return Err(refuse(format!(
            "its bytes hash to {digest} where the skill announced {}",
            expected.file.digest
        )));
    }
    Ok(outcome)
}
