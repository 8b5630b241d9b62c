//! Code mode's shared words: what the gateway and a worker process agree on.
//! The gateway runs each model-written script in a worker process
//! (`manifold-code-worker`, built on its own) that it talks to over the
//! worker's stdin and stdout, so that no script, however hostile, shares the
//! gateway's memory, stack or CPU time.
//!
//! | module | what |
//! |---|---|
//! | `limits` | the named limits and their defaults |
//! | `outcome` | a script's value, or why it stopped (line, column, limit, last call) |
//! | `wire` | the messages between the gateway and a worker |
//! | `digest` | the script's SHA-256, as audit records name it |
//!
//! Not here: the engine and the worker's loop (`manifold-code-worker`); the
//! pool, the wall clock and what a call does (manifold-server's code
//! handler and its call chain).

mod digest;
mod limits;
mod outcome;
mod wire;

pub use digest::digest;
pub use limits::*;
pub use outcome::{Failure, Finished, Stop};
pub use wire::{FromWorker, Start, ToWorker, MAX_LINE_BYTES};
