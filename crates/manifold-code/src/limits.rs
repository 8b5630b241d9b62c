//! The named limits one script runs under (`[code]` in the gateway's
//! configuration), with their defaults. The engine enforces the evaluation
//! limits (steps, heap, calls, log, result); the gateway enforces the wall
//! clock and the worker's process limits around it.
//!
//! Not here: reading them from a file (manifold-config), the pool of
//! workers (the gateway).

use serde::{Deserialize, Serialize};

/// Default wall-clock budget of one script, in milliseconds (30 s).
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// Default evaluation steps (Starlark ticks: a function call or a loop turn).
pub const DEFAULT_MAX_STEPS: u64 = 1_000_000;
/// Default Starlark heap of one script (64 MiB).
pub const DEFAULT_MAX_MEMORY: u64 = 64 * 1024 * 1024;
/// Default tool calls one script may make.
pub const DEFAULT_MAX_CALLS: u32 = 50;
/// Default largest script, in bytes (64 KiB).
pub const DEFAULT_MAX_SCRIPT_BYTES: usize = 64 * 1024;
/// Default largest result (the returned value as JSON), in bytes (1 MiB).
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1024 * 1024;
/// What `print` may write in all, in bytes (64 KiB); more ends the script.
pub const MAX_LOG_BYTES: usize = 64 * 1024;
/// How deep Starlark calls may nest (the dialect has no recursion to speak
/// of; a function that calls itself ends here).
pub const MAX_CALL_DEPTH: usize = 32;
/// How deeply the returned value (or a call's arguments) may nest.
pub const MAX_VALUE_DEPTH: usize = 64;

/// One script's limits, as the gateway sends them to its worker.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Limits {
    /// Evaluation steps.
    pub max_steps: u64,
    /// Starlark heap, in bytes.
    pub max_memory: u64,
    /// Tool calls.
    pub max_calls: u32,
    /// The returned value as JSON, in bytes.
    pub max_result_bytes: usize,
    /// Wall clock, in milliseconds (the worker stops itself a little after;
    /// the gateway ends it at this mark).
    pub timeout_ms: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_steps: DEFAULT_MAX_STEPS,
            max_memory: DEFAULT_MAX_MEMORY,
            max_calls: DEFAULT_MAX_CALLS,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            timeout_ms: DEFAULT_TIMEOUT_MS,
        }
    }
}
