//! `[code]`: the limits of code mode (`discovery = "code"`): every script a
//! model runs with `run_script` is bounded by each of them, and going past one
//! ends the script with a tool error that names the limit and its value.
//!
//! `workers` and `max_queued` size the pool at start (a reload cannot change
//! them: `fixed`); the limits of one script are read as each script starts.
//!
//! Not here: the engine (manifold-code), the pool and the meta-tool
//! (manifold-server `handlers/code/`).

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Default `timeout`: a script's wall clock, its tool calls included.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest `timeout` accepted (10 minutes).
pub const MAX_TIMEOUT: Duration = Duration::from_secs(600);
/// Default `max_steps`: Starlark evaluation steps (a function call or a loop
/// turn each).
pub const DEFAULT_MAX_STEPS: u64 = 1_000_000;
/// Default `max_memory`: a script's Starlark heap, in bytes (64 MiB). The
/// worker process's address space is bounded too (`max_memory` plus
/// [`WORKER_BASE_MEMORY`]).
pub const DEFAULT_MAX_MEMORY: u64 = 64 * 1024 * 1024;
/// What a worker process may map besides the script's heap (its code, its
/// script thread's stack, the allocator's reserved arenas): 2 GiB of
/// address space, most of it reserved and never touched.
pub const WORKER_BASE_MEMORY: u64 = 2 * 1024 * 1024 * 1024;
/// Default `max_calls`: tool calls one script may make.
pub const DEFAULT_MAX_CALLS: u32 = 50;
/// Default `max_script_bytes` (64 KiB).
pub const DEFAULT_MAX_SCRIPT_BYTES: usize = 64 * 1024;
/// Default `max_result_bytes`: the returned value as JSON (1 MiB).
pub const DEFAULT_MAX_RESULT_BYTES: usize = 1024 * 1024;
/// Default `workers`: scripts running at once, each in its own worker
/// process.
pub const DEFAULT_WORKERS: usize = 4;
/// Default `max_queued`: scripts waiting for a worker; one more is refused.
pub const DEFAULT_MAX_QUEUED: usize = 32;

/// `[code]` in the file.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct CodeSection {
    /// A script's wall clock, tool calls included (`"30s"`).
    #[serde(default)]
    pub timeout: Option<String>,
    /// Starlark evaluation steps (`DEFAULT_MAX_STEPS`).
    #[serde(default)]
    pub max_steps: Option<u64>,
    /// The script's Starlark heap, in bytes (`DEFAULT_MAX_MEMORY`).
    #[serde(default)]
    pub max_memory: Option<u64>,
    /// Tool calls one script may make (`DEFAULT_MAX_CALLS`).
    #[serde(default)]
    pub max_calls: Option<u32>,
    /// The largest script, in bytes (`DEFAULT_MAX_SCRIPT_BYTES`).
    #[serde(default)]
    pub max_script_bytes: Option<usize>,
    /// The largest returned value as JSON, in bytes (`DEFAULT_MAX_RESULT_BYTES`).
    #[serde(default)]
    pub max_result_bytes: Option<usize>,
    /// Scripts running at once (`DEFAULT_WORKERS`).
    #[serde(default)]
    pub workers: Option<usize>,
    /// Scripts waiting for a worker (`DEFAULT_MAX_QUEUED`).
    #[serde(default)]
    pub max_queued: Option<usize>,
    /// The worker program (default: `manifold-code-worker` next to the
    /// `manifold` executable).
    #[serde(default)]
    pub worker: Option<String>,
}

/// `[code]`, validated (its defaults without the section).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeConfig {
    pub timeout: Duration,
    pub max_steps: u64,
    pub max_memory: u64,
    pub max_calls: u32,
    pub max_script_bytes: usize,
    pub max_result_bytes: usize,
    pub workers: usize,
    pub max_queued: usize,
    /// `worker`: `None`, the default program.
    pub worker: Option<std::path::PathBuf>,
}

impl Default for CodeConfig {
    fn default() -> CodeConfig {
        CodeConfig {
            timeout: DEFAULT_TIMEOUT,
            max_steps: DEFAULT_MAX_STEPS,
            max_memory: DEFAULT_MAX_MEMORY,
            max_calls: DEFAULT_MAX_CALLS,
            max_script_bytes: DEFAULT_MAX_SCRIPT_BYTES,
            max_result_bytes: DEFAULT_MAX_RESULT_BYTES,
            workers: DEFAULT_WORKERS,
            max_queued: DEFAULT_MAX_QUEUED,
            worker: None,
        }
    }
}

/// `[code]` checked: every limit more than zero, the timeout at most
/// [`MAX_TIMEOUT`].
pub(crate) fn validate(c: &CodeSection) -> Result<CodeConfig, String> {
    fn positive<T: PartialEq + Default + Copy>(key: &str, v: Option<T>, d: T) -> Result<T, String> {
        match v {
            Some(v) if v == T::default() => Err(format!("key `code.{key}`: must be more than 0")),
            Some(v) => Ok(v),
            None => Ok(d),
        }
    }
    let d = CodeConfig::default();
    let timeout = match c.timeout.as_deref() {
        None => d.timeout,
        Some(t) => {
            let t = crate::limits::duration("code.timeout", t)?;
            if t.is_zero() || t > MAX_TIMEOUT {
                return Err(format!(
                    "key `code.timeout`: must be more than 0 and at most {}m",
                    MAX_TIMEOUT.as_secs() / 60
                ));
            }
            t
        }
    };
    Ok(CodeConfig {
        timeout,
        max_steps: positive("max_steps", c.max_steps, d.max_steps)?,
        max_memory: positive("max_memory", c.max_memory, d.max_memory)?,
        max_calls: positive("max_calls", c.max_calls, d.max_calls)?,
        max_script_bytes: positive("max_script_bytes", c.max_script_bytes, d.max_script_bytes)?,
        max_result_bytes: positive("max_result_bytes", c.max_result_bytes, d.max_result_bytes)?,
        workers: positive("workers", c.workers, d.workers)?,
        max_queued: c.max_queued.unwrap_or(d.max_queued),
        worker: match c.worker.as_deref() {
            Some("") => return Err("key `code.worker`: an empty path".into()),
            Some(w) => Some(std::path::PathBuf::from(w)),
            None => None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_refusals() {
        assert_eq!(
            validate(&CodeSection::default()).unwrap(),
            CodeConfig::default()
        );
        let table: [(CodeSection, &str); 4] = [
            (
                CodeSection {
                    timeout: Some("0s".into()),
                    ..Default::default()
                },
                "code.timeout",
            ),
            (
                CodeSection {
                    timeout: Some("2h".into()),
                    ..Default::default()
                },
                "code.timeout",
            ),
            (
                CodeSection {
                    max_calls: Some(0),
                    ..Default::default()
                },
                "code.max_calls",
            ),
            (
                CodeSection {
                    workers: Some(0),
                    ..Default::default()
                },
                "code.workers",
            ),
        ];
        for (section, key) in table {
            let e = validate(&section).unwrap_err();
            assert!(e.contains(key), "{e}");
        }
        let c = validate(&CodeSection {
            timeout: Some("5s".into()),
            max_calls: Some(3),
            max_queued: Some(0),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            (c.timeout, c.max_calls, c.max_queued),
            (Duration::from_secs(5), 3, 0)
        );
    }
}
