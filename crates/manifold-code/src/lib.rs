//! Code mode's engine: a model's Starlark script, run with named limits, its
//! tool calls and searches answered by a host. The gateway runs each script
//! in a worker process (`worker`) it talks to over the worker's stdin and
//! stdout (`wire`), so that no script, however hostile, shares the gateway's
//! memory, stack or CPU time.
//!
//! | module | what |
//! |---|---|
//! | `limits` | the named limits and their defaults |
//! | `outcome` | a script's value, or why it stopped (line, column, limit, last call) |
//! | `engine` | parsing and evaluating one script; the `call`, `search` and `print` built-ins |
//! | `wire` | the messages between the gateway and a worker |
//! | `worker` | the worker's loop: one script from stdin, its calls out on stdout |
//!
//! Not here: the pool of workers, the wall clock, and what a call does (the
//! gateway: manifold-server's code handler and its call chain).

mod engine;
mod limits;
mod outcome;
mod wire;
mod worker;

pub use engine::{digest, run, Host};
pub use limits::*;
pub use outcome::{Failure, Finished, Stop};
pub use wire::{FromWorker, Start, ToWorker, MAX_LINE_BYTES};
pub use worker::{limit_process, serve_stdio, ProcessLimits, WorkerError};
