//! [`ToolError`]: the refusal table's family of tool execution errors — a
//! `tools/call` Manifold answers with a result whose `isError` is true (MCP
//! classes these as results a model reads and can act on, not as protocol
//! errors) — each with its text and its audit outcome.
//!
//! Invariants: a tool error becomes bytes only in [`ToolError::reply`]
//! (reached through [`Refusal::reply`](super::Refusal::reply)) or, for
//! a result replaced after the upstream answered, as the result
//! [`ToolError::result`] that the relay then answers like any other; it
//! travels with 200 in both eras, and a 2026-07-28 one carries
//! `resultType: "complete"`; its text says what happened and what was not done.
//!
//! Not here: JSON-RPC errors (the table, `refusal/mod.rs`), an upstream's own
//! `isError` results (they pass through untouched).

use manifold_audit::Outcome;
use manifold_protocol::{jsonrpc, RequestId};
use manifold_upstream::UpstreamError;
use serde_json::{json, Value};

use crate::era::Era;
use crate::reply::Reply;

/// Why the human did not let a `[confirm]` call through.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum NotConfirmed {
    /// "decline".
    Declined,
    /// "cancel": dismissed without choosing.
    Dismissed,
    /// An error answer, or none in time.
    NoAnswer(String),
}

/// A tool call answered with `isError: true` by Manifold itself.
#[derive(Debug, Clone, thiserror::Error)]
pub(crate) enum ToolError {
    /// The arguments do not fit the tool's `inputSchema` (`[validation]
    /// arguments`): each failing pointer and rule, so a model can correct
    /// its call. Nothing reached the upstream.
    #[error("Invalid arguments for tool `{tool}` (checked against its inputSchema):\n{}", errors.join("\n"))]
    InvalidArguments { tool: String, errors: Vec<String> },
    /// `[confirm]`: the human did not accept; the tool was not called.
    #[error("{}", not_confirmed(tool, why))]
    NotConfirmed { tool: String, why: NotConfirmed },
    /// `[validation] output = "enforce"`: the upstream's `structuredContent`
    /// breaks the tool's `outputSchema`; its result is replaced by this.
    #[error("The result of `{tool}` from upstream `{upstream}` does not match the tool's outputSchema:\n{}", errors.join("\n"))]
    OutputMismatch {
        tool: String,
        upstream: String,
        errors: Vec<String>,
    },
    /// The upstream could not be asked, or did not answer: a model reads why.
    #[error("{0}")]
    Upstream(UpstreamError),
    /// `search_tools` with a query or limit it cannot use.
    #[error("search_tools: {0}")]
    Search(String),
    /// `call_tool` naming a tool the caller's view of the endpoint does not
    /// hold (a hidden tool is answered the same).
    #[error("Unknown tool: `{0}`. Find the tools of this server with search_tools and call one by the exact name it gives.")]
    UnknownTool(String),
    /// `call_tool` arguments of the wrong shape.
    #[error("call_tool: {0}")]
    CallTool(String),
    /// `run_script` (code mode): a script that did not parse, failed, or
    /// went past a named limit — where, what, and what it did last; or a
    /// script that could not be run (arguments, a full pool).
    #[error("run_script: {0}")]
    Script(String),
    /// The caller has no account at a `user_oauth` / `user_secret` upstream
    /// and its client cannot open a URL for them: the link, for a human.
    #[error("{}", .0.message())]
    AccountRequired(Box<super::connect::AccountAsk>),
}

fn not_confirmed(tool: &str, why: &NotConfirmed) -> String {
    match why {
        NotConfirmed::Declined => format!("The user declined to run `{tool}`; it was not called."),
        NotConfirmed::Dismissed => format!(
            "The user dismissed the confirmation for `{tool}` without choosing; it was not called."
        ),
        NotConfirmed::NoAnswer(why) => {
            format!("`{tool}` was not called: its confirmation got no answer ({why}).")
        }
    }
}

impl ToolError {
    /// How the call is recorded: an upstream that could not be asked by the
    /// failure's kind, anything else as a tool error.
    pub(crate) fn outcome(&self) -> Outcome {
        match self {
            ToolError::Upstream(e) => upstream_outcome(e),
            _ => Outcome::ToolError,
        }
    }

    /// The result object: one text content item and `isError: true`.
    pub(crate) fn result(&self) -> Value {
        json!({"content": [{"type": "text", "text": self.to_string()}], "isError": true})
    }

    /// The response to request `id` in `era` (status 200; a 2026-07-28 result
    /// says it is complete).
    pub(crate) fn reply(&self, id: &RequestId, era: Era) -> Reply {
        let mut result = self.result();
        if era == Era::Stateless {
            result["resultType"] = json!("complete");
        }
        Reply::ok(jsonrpc::response_bytes_from_json(
            id,
            result.to_string().as_bytes(),
        ))
    }
}

/// The audit outcome of a request that got no response from its upstream.
pub(crate) fn upstream_outcome(e: &UpstreamError) -> Outcome {
    match e {
        UpstreamError::Timeout { .. } => Outcome::Timeout,
        UpstreamError::Cancelled { .. } => Outcome::Cancelled,
        UpstreamError::Unavailable { .. }
        | UpstreamError::Transient { .. }
        | UpstreamError::Failing { .. }
        | UpstreamError::Busy { .. }
        | UpstreamError::NeedsLogin { .. }
        | UpstreamError::CallerRefused { .. } => Outcome::UpstreamUnavailable,
        UpstreamError::Protocol { .. } => Outcome::ProtocolError { code: e.code().0 },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(e: &ToolError, era: Era) -> Value {
        let Reply::Message {
            status,
            bytes,
            refused,
            ..
        } = e.reply(&RequestId::number(4), era)
        else {
            panic!("a message");
        };
        assert_eq!(status, http::StatusCode::OK, "{e:?}");
        assert!(!refused, "a tool error is a result: {e:?}");
        serde_json::from_slice(&bytes).expect("json")
    }

    /// The family: each tool error's text, outcome and shape in both eras.
    #[test]
    fn every_tool_error_is_a_result_with_its_text_and_outcome() {
        let tool = || "t".to_string();
        let rows: Vec<(ToolError, &str, Outcome)> = vec![
            (
                ToolError::InvalidArguments {
                    tool: tool(),
                    errors: vec!["/n: not a number".into(), "/m: required".into()],
                },
                "Invalid arguments for tool `t` (checked against its inputSchema):\n/n: not a number\n/m: required",
                Outcome::ToolError,
            ),
            (
                ToolError::Script("The script was stopped: max_calls (3)".into()),
                "run_script: The script was stopped: max_calls (3)",
                Outcome::ToolError,
            ),
            (
                ToolError::NotConfirmed {
                    tool: tool(),
                    why: NotConfirmed::Declined,
                },
                "The user declined to run `t`; it was not called.",
                Outcome::ToolError,
            ),
            (
                ToolError::NotConfirmed {
                    tool: tool(),
                    why: NotConfirmed::Dismissed,
                },
                "The user dismissed the confirmation for `t` without choosing; it was not called.",
                Outcome::ToolError,
            ),
            (
                ToolError::NotConfirmed {
                    tool: tool(),
                    why: NotConfirmed::NoAnswer("none within 1s".into()),
                },
                "`t` was not called: its confirmation got no answer (none within 1s).",
                Outcome::ToolError,
            ),
            (
                ToolError::OutputMismatch {
                    tool: tool(),
                    upstream: "u".into(),
                    errors: vec!["/x: wrong".into()],
                },
                "The result of `t` from upstream `u` does not match the tool's outputSchema:\n/x: wrong",
                Outcome::ToolError,
            ),
            (
                ToolError::Search("`query` is empty".into()),
                "search_tools: `query` is empty",
                Outcome::ToolError,
            ),
            (
                ToolError::UnknownTool("x".into()),
                "Unknown tool: `x`. Find the tools of this server with search_tools and call one by the exact name it gives.",
                Outcome::ToolError,
            ),
            (
                ToolError::CallTool("`name` must be a string".into()),
                "call_tool: `name` must be a string",
                Outcome::ToolError,
            ),
            (
                ToolError::Upstream(UpstreamError::Timeout {
                    upstream: "u".into(),
                    timeout: std::time::Duration::from_secs(1),
                }),
                "",
                Outcome::Timeout,
            ),
        ];
        for (e, text, outcome) in rows {
            assert_eq!(e.outcome(), outcome, "{e:?}");
            let want = if text.is_empty() {
                e.to_string()
            } else {
                text.to_string()
            };
            let session = answered(&e, Era::Session);
            assert_eq!(session["id"], 4);
            assert_eq!(session["result"]["content"][0]["text"], want.as_str());
            assert_eq!(session["result"]["isError"], true);
            assert!(session["result"].get("resultType").is_none());
            let stateless = answered(&e, Era::Stateless);
            assert_eq!(stateless["result"]["resultType"], "complete");
        }
    }
}
