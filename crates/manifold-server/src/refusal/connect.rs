//! [`AccountAsk`]: the answer to a call that needs the caller's own account
//! at a `user_oauth` or `user_secret` upstream, and the caller has none yet —
//! in the form the client can act on:
//!
//! | client | answer |
//! |---|---|
//! | 2025-11-25 session that declared `elicitation.url` | JSON-RPC error -32042 (`URLElicitationRequiredError`) with one URL elicitation (`elicitationId`, the link, a message); `notifications/elicitation/complete` follows when the account is connected |
//! | 2026-07-28 request that declared `elicitation.url` | an `InputRequiredResult`: one input request `connect` (`elicitation/create`, `mode: "url"`) and a `requestState`; its retry goes on once the account exists |
//! | any other `tools/call` | a tool error whose text holds the link and the code, for a human |
//! | any other request | a JSON-RPC error (-32600) whose message holds them |
//!
//! Invariants: the link and its code are the only things shown (never a
//! token); the message names the upstream.
//!
//! Not here: making the link (`state::connects`), choosing the form
//! (`call::credentials`).

use serde_json::{json, Value};

/// How the client is asked.
#[derive(Debug, Clone)]
pub(crate) enum AskForm {
    /// -32042 with `data.elicitations`.
    UrlElicitation,
    /// An `InputRequiredResult` with this `requestState`.
    InputRequired { state: String },
    /// The link in an error's message.
    Link,
}

/// A call waiting for its caller to connect an account.
#[derive(Debug, Clone)]
pub(crate) struct AccountAsk {
    pub upstream: String,
    pub url: String,
    pub code: String,
    pub elicitation_id: String,
    pub form: AskForm,
    /// Why a stored account was forgotten (a refused refresh), if it was.
    pub lapsed: Option<String>,
}

/// The `inputRequests` key of the 2026-07-28 question.
pub(crate) const CONNECT_INPUT_KEY: &str = "connect";

impl AccountAsk {
    /// What a person reads.
    pub(crate) fn message(&self) -> String {
        let why = self
            .lapsed
            .as_deref()
            .map(|w| format!(" (the account connected before can no longer be used: {w})"))
            .unwrap_or_default();
        format!(
            "Upstream `{}` acts as each user with their own account, and yours is not connected{why}. Open {} in a browser, enter the code {} when the page asks (only your client was shown it), and connect; then retry.",
            self.upstream, self.url, self.code
        )
    }

    /// The 2025-11-25 `data` of -32042.
    pub(crate) fn elicitation_data(&self) -> Value {
        json!({"elicitations": [{
            "mode": "url",
            "elicitationId": self.elicitation_id,
            "url": self.url,
            "message": self.message(),
        }]})
    }

    /// The 2026-07-28 `InputRequiredResult`.
    pub(crate) fn input_required(&self, state: &str) -> Value {
        json!({
            "resultType": "input_required",
            "inputRequests": {CONNECT_INPUT_KEY: {
                "method": "elicitation/create",
                "params": {"mode": "url", "url": self.url, "message": self.message()},
            }},
            "requestState": state,
        })
    }
}
