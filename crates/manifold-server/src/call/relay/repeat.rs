//! Which calls may be sent upstream more than once: the relay asks the
//! upstream for retries (`[upstreams.<name>] retries`) only for a
//! `tools/call` whose tool says it may be repeated — `readOnlyHint: true` or
//! `idempotentHint: true` in the annotations the caller was shown — or that
//! the operator marked (`[upstreams.<name>.overrides.<tool>] retry = true`;
//! `retry = false` turns retries off for a tool whose hints cannot be
//! trusted). Never `prompts/get`, `resources/read` or `completion/complete`.
//!
//! Invariants: decided before dispatch, from the catalogue entry that
//! resolved the call; the tool's definition is read only for an upstream
//! that retries (an upstream without `retries` costs one branch).
//!
//! Not here: retrying itself, the budget and the breaker (manifold-upstream
//! `call`, `retry`, `breaker`): they run inside the upstream's `Call` before
//! its first event, so nothing of an answer has reached the client when a
//! call is sent again.

use manifold_catalog::Kind;
use serde::Deserialize;

use crate::call::context::{Call, What};

/// The annotations that say a call may be repeated (unknown members are
/// skipped, not kept: this reads, the catalogue's bytes stay as they are).
#[derive(Deserialize, Default)]
struct Definition {
    #[serde(default)]
    annotations: Option<Hints>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct Hints {
    #[serde(default)]
    pub read_only_hint: Option<bool>,
    #[serde(default)]
    pub idempotent_hint: Option<bool>,
}

/// Whether `call` may be sent again after a transient failure.
pub(super) fn repeatable(call: &Call) -> bool {
    if call.what != What::Tool || !call.upstream.retries_calls() {
        return false;
    }
    let marked = call
        .facts
        .original
        .as_deref()
        .and_then(|t| call.upstream.config().overrides.get(t))
        .and_then(|o| o.retry);
    if let Some(marked) = marked {
        return marked;
    }
    let hints = hints(call);
    hints.read_only_hint == Some(true) || hints.idempotent_hint == Some(true)
}

/// The hints of `call`'s tool as the caller was shown them (none for a tool
/// its view does not hold).
pub(super) fn hints(call: &Call) -> Hints {
    call.view
        .as_ref()
        .and_then(|v| v.list(Kind::Tools).get(&call.exposed))
        .and_then(|entry| serde_json::from_slice::<Definition>(entry.json()).ok())
        .and_then(|d| d.annotations)
        .unwrap_or_default()
}
