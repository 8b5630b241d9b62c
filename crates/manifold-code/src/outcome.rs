//! What a script ends with: its value and what it did ([`Finished`]), or why
//! it stopped ([`Failure`]), in words a model can act on — the line and
//! column, the message, the limit and its value, what the script did last.
//!
//! Not here: how the gateway answers with them (a tool result or a tool
//! error).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A script that returned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finished {
    /// `main`'s return value, as JSON.
    pub value: Value,
    /// Tool calls it made.
    pub calls: u32,
    /// What it printed, a line each.
    pub log: Vec<String>,
    /// Evaluation steps it took.
    pub steps: u64,
}

/// Why a script stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Stop {
    /// It does not parse (or breaks the dialect: `while`, `load`, a
    /// statement at the top level other than `def` and assignments).
    Syntax,
    /// It failed while running (a Starlark error, `fail()`, a call refused).
    Runtime,
    /// It went past a named limit.
    Limit,
}

/// A script that did not return.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub stop: Stop,
    /// What went wrong, without a traceback.
    pub message: String,
    /// 1-based line and column where it went wrong, when known.
    pub line: Option<u32>,
    pub column: Option<u32>,
    /// The limit it went past (`max_steps`, `max_memory`, `max_calls`,
    /// `max_result_bytes`, `timeout`, …) and its value.
    pub limit: Option<String>,
    pub value: Option<u64>,
    /// What the script did last (`call("github__create_issue")`,
    /// `search("…")`), when it called out at all.
    pub last: Option<String>,
    /// Tool calls it made before it stopped.
    pub calls: u32,
    /// What it printed before it stopped.
    pub log: Vec<String>,
    /// Evaluation steps it took.
    pub steps: u64,
}

impl Failure {
    /// A failure at a named limit.
    pub fn limit(name: &str, value: u64, message: String) -> Failure {
        Failure {
            stop: Stop::Limit,
            message,
            line: None,
            column: None,
            limit: Some(name.to_string()),
            value: Some(value),
            last: None,
            calls: 0,
            log: Vec::new(),
            steps: 0,
        }
    }

    /// The failure as a model reads it: where, what, and what the script did
    /// last.
    pub fn describe(&self) -> String {
        let mut out = String::new();
        match self.stop {
            Stop::Syntax => out.push_str("The script does not parse"),
            Stop::Runtime => out.push_str("The script failed"),
            Stop::Limit => out.push_str("The script was stopped"),
        }
        if let (Some(l), Some(c)) = (self.line, self.column) {
            out.push_str(&format!(" at line {l}, column {c}"));
        }
        out.push_str(": ");
        out.push_str(&self.message);
        if let Some(last) = &self.last {
            out.push_str(&format!(
                "\nIts last call out was {last} ({} tool call{} in all).",
                self.calls,
                if self.calls == 1 { "" } else { "s" }
            ));
        }
        out
    }
}
