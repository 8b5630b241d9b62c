//! `manifold-code-worker --address-space BYTES --cpu-seconds S`: code mode's
//! worker process. It lowers its own limits first (address space, CPU time,
//! no core dumps), then runs one script from stdin (manifold-code's wire),
//! its calls out answered by the gateway over stdin and stdout.
//!
//! | module | what |
//! |---|---|
//! | `engine` | parsing and evaluating one script; the `call`, `search` and `print` built-ins |
//! | `worker` | the worker's loop and its process limits |
//!
//! Built on its own, not with the gateway's workspace: the starlark crate
//! turns on serde_json's `arbitrary_precision`, which changes how every
//! crate in one build reads JSON numbers (scripts/build-code-worker).
//!
//! Not here: the pool and the wall clock (the gateway).

mod engine;
mod worker;

use std::process::ExitCode;

/// Exit status when the worker could not start or lost its gateway.
const FAILED: u8 = 1;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut address_space = None;
    let mut cpu_seconds = None;
    while let Some(a) = args.next() {
        let value = args.next().and_then(|v| v.parse::<u64>().ok());
        match a.as_str() {
            "--address-space" => address_space = value,
            "--cpu-seconds" => cpu_seconds = value,
            other => {
                eprintln!("manifold-code-worker: unknown argument {other}");
                return ExitCode::from(FAILED);
            }
        }
    }
    let (Some(address_space), Some(cpu_seconds)) = (address_space, cpu_seconds) else {
        eprintln!("usage: manifold-code-worker --address-space BYTES --cpu-seconds S (the gateway starts it)");
        return ExitCode::from(FAILED);
    };
    let limits = worker::ProcessLimits {
        address_space,
        cpu_seconds,
    };
    match worker::limit_process(limits).and_then(|()| worker::serve_stdio()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("manifold-code-worker: {e}");
            ExitCode::from(FAILED)
        }
    }
}
