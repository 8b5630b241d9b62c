//! The messages between the gateway and a worker, one JSON text per line:
//! the gateway sends [`Start`], then a [`ToWorker`] for each call out; the
//! worker sends a [`FromWorker`] for each call out, then its end (`done` or
//! `failed`).
//!
//! Invariants: a line is at most [`MAX_LINE_BYTES`] either way (a longer one
//! ends the run); every message refuses unknown members.
//!
//! Not here: what the gateway does with a call (its call chain).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::limits::Limits;
use crate::outcome::{Failure, Finished};

/// The longest line either side reads (16 MiB): a tool's result on its way
/// in, a call's arguments or the script's end on its way out.
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// The first line to a worker: the script, its inputs and its limits.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Start {
    pub script: String,
    #[serde(default)]
    pub inputs: Option<Value>,
    pub limits: Limits,
}

/// A line to a worker after [`Start`]: the answer to its call out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum ToWorker {
    /// The tool's result (or the search's definitions).
    Answer(Value),
    /// Why the call was refused: the script fails with these words.
    Refused(String),
}

/// A line from a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum FromWorker {
    /// `call(name, arguments)`.
    Call { name: String, arguments: Value },
    /// `search(query, limit)`.
    Search { query: String, limit: u64 },
    /// The script returned.
    Done(Finished),
    /// The script stopped.
    Failed(Failure),
}
