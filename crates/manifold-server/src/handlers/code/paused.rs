//! 2026-07-28: a script whose call needs the client's input (a `[confirm]`
//! question, an upstream's own input round) is paused — its worker waits on
//! the call's answer — and `run_script` answers with an
//! `InputRequiredResult` carrying the call's `inputRequests` and a
//! `requestState` naming the paused script. The client's retry (the same
//! `run_script` with `inputResponses` and that state) goes on as the script:
//! the call is retried with the client's answers, and the script runs on.
//!
//! Invariants: a state resumes only the script it was minted for, for the
//! principal and client it was minted for, with the same script text (its
//! digest), once; a paused script keeps its turn and its deadline, and is
//! dropped — its worker killed — when the deadline passes; the state is
//! random (32 bytes) and held only here (a retry on another replica is
//! refused, saying so).
//!
//! Not here: driving the worker (`driver.rs`).

use serde_json::{Map, Value};

use super::driver::Running;
use super::inner::Pending;
use crate::refusal::Refusal;
use crate::request::{Caller, Request};

/// The prefix of a paused script's `requestState`.
pub(super) const STATE_PREFIX: &str = "mcs1.";

/// A paused script, as the pool holds it.
pub(super) struct Paused {
    pub running: Running,
    pub pending: Pending,
    /// Who paused it, for the record of a script no retry ends.
    pub principal: String,
    pub client: Option<manifold_audit::ClientInfo>,
}

/// Whose a paused script is: the principal and (2026-07-28) the client.
fn owner(x: &Request) -> String {
    let client = match &x.caller {
        Caller::Stateless(c) => c.digest.as_str(),
        _ => "",
    };
    format!("{}\n{client}", x.principal.audit_name())
}

/// Holds `paused` for `x`'s caller until its deadline: the `requestState`
/// the client retries with.
pub(super) fn hold(x: &Request, paused: Paused) -> Result<String, Refusal> {
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw).map_err(|e| {
        Refusal::Tool(crate::refusal::ToolError::Script(format!(
            "the script could not pause for the client's input: no randomness for its state ({e})"
        )))
    })?;
    let token: String = std::iter::once(STATE_PREFIX.to_string())
        .chain(raw.iter().map(|b| format!("{b:02x}")))
        .collect();
    let deadline = paused.running.deadline;
    x.gw.code
        .paused
        .hold(token.clone(), owner(x), Box::new(paused));
    let (gw, expired) = (x.gw.clone(), token.clone());
    x.gw.life.background.spawn(async move {
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => {}
            _ = gw.life.stop.cancelled() => {}
        }
        // No retry came: the script ends here, and its record says so.
        let gone = gw.code.paused.expire(&expired);
        if let Some(p) = gone.and_then(|b| b.downcast::<Paused>().ok()) {
            let script = manifold_audit::ScriptEvent {
                sha256: p.running.sha256.clone(),
                calls: Some(p.running.calls),
                steps: None,
            };
            crate::observe::script_abandoned(&gw, p.principal, p.client, script).await;
        }
    });
    Ok(token)
}

/// The paused script a retry names (its `requestState`), for this caller and
/// this script.
pub(super) fn take(x: &Request, state: &Value, script: &str) -> Result<Paused, Refusal> {
    let Some(state) = state.as_str().filter(|s| s.starts_with(STATE_PREFIX)) else {
        return Err(Refusal::InvalidRequestState(
            "it is not a paused script's (run_script's requestState comes from its own InputRequiredResult)",
        ));
    };
    let held = x.gw.code.paused.take(state, &owner(x));
    let Some(paused) = held.and_then(|b| b.downcast::<Paused>().ok()) else {
        return Err(Refusal::InvalidRequestState(
            "no script is paused under it for this caller here (it was answered, it expired at the script's timeout, or another replica holds it)",
        ));
    };
    if paused.running.sha256 != manifold_code::digest(script) {
        // Taken, so it ends here: a retry repeats its request.
        return Err(Refusal::InvalidRequestState(
            "the retry's script is not the paused script: retry with the same arguments",
        ));
    }
    Ok(*paused)
}

/// The client's answers in a retry.
pub(super) fn responses(params: &Map<String, Value>) -> Value {
    params
        .get("inputResponses")
        .cloned()
        .unwrap_or_else(|| Value::Object(Map::new()))
}
