//! A worker: one script read from stdin ([`Start`]), run by the engine on a
//! thread with a large stack, each call out written to stdout and its
//! answer read back from stdin, the end written last. The gateway starts one
//! worker process per script.
//!
//! Invariants: the worker writes nothing but [`FromWorker`] lines to stdout;
//! a line longer than [`MAX_LINE_BYTES`] or not a message ends the run; a
//! panic in the engine ends the script as a failure, not silently.
//!
//! Not here: process limits (the gateway sets them when it starts the
//! worker) and the wall clock (the gateway ends the worker at its timeout).

use parking_lot::Mutex;
use serde_json::Value;
use std::io::{BufRead, Read, Write};
use std::sync::Arc;

use crate::engine::{self, Host};
use manifold_code::{Failure, FromWorker, Start, Stop, ToWorker, MAX_LINE_BYTES};

/// The script thread's stack (256 MiB of address space, touched only as
/// deep as a script nests values): printing or comparing a deeply nested
/// value recurses in the engine.
const SCRIPT_STACK_BYTES: usize = 256 * 1024 * 1024;

/// Why a worker gave up on its gateway.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    #[error("reading from the gateway: {0}")]
    Read(#[from] std::io::Error),
    #[error("a line from the gateway is longer than {MAX_LINE_BYTES} bytes")]
    TooLong,
    #[error("the gateway closed the worker's input")]
    Closed,
    #[error("a line from the gateway is not a message: {0}")]
    Garbled(#[from] serde_json::Error),
    #[error("starting the script's thread: {0}")]
    Spawn(std::io::Error),
    #[error("setting the worker's {0:?}: {1}")]
    Limit(nix::sys::resource::Resource, nix::Error),
}

/// One line, at most [`MAX_LINE_BYTES`].
fn read_line(input: &mut dyn BufRead) -> Result<Vec<u8>, WorkerError> {
    let mut line = Vec::new();
    let n = input
        .take(MAX_LINE_BYTES as u64 + 1)
        .read_until(b'\n', &mut line)?;
    if n == 0 {
        return Err(WorkerError::Closed);
    }
    if line.len() > MAX_LINE_BYTES {
        return Err(WorkerError::TooLong);
    }
    Ok(line)
}

fn write_line(output: &mut dyn Write, msg: &FromWorker) -> std::io::Result<()> {
    let mut text = serde_json::to_vec(msg).map_err(std::io::Error::other)?;
    text.push(b'\n');
    output.write_all(&text)?;
    output.flush()
}

/// The gateway, as the engine's host: each call out is a line out and a line
/// back.
struct Gateway {
    input: Box<dyn BufRead + Send>,
    output: Shared,
}

/// The worker's output, shared by the host and the end.
type Shared = Arc<Mutex<Box<dyn Write + Send>>>;

impl Gateway {
    fn ask(&mut self, msg: FromWorker) -> Result<Value, String> {
        write_line(&mut **self.output.lock(), &msg)
            .map_err(|e| format!("the gateway is gone: {e}"))?;
        let line = read_line(&mut self.input).map_err(|e| e.to_string())?;
        match serde_json::from_slice::<ToWorker>(&line).map_err(|e| e.to_string())? {
            ToWorker::Answer(v) => Ok(v),
            ToWorker::Refused(why) => Err(why),
        }
    }
}

impl Host for Gateway {
    fn call(&mut self, name: &str, arguments: Value) -> Result<Value, String> {
        self.ask(FromWorker::Call {
            name: name.to_string(),
            arguments,
        })
    }

    fn search(&mut self, query: &str, limit: u64) -> Result<Value, String> {
        self.ask(FromWorker::Search {
            query: query.to_string(),
            limit,
        })
    }
}

/// The failure of a script that panicked the engine: an allocation too big
/// for the worker's heap is the one a script can cause on purpose (a single
/// operation such as `"x" * 2**30`), named as the memory limit.
fn stopped_engine(panic: &(dyn std::any::Any + Send), max_memory: &u64) -> Failure {
    let text = panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    if text.contains("memory") || text.contains("capacity overflow") {
        return Failure::limit(
            "max_memory",
            *max_memory,
            format!("one of its operations needed more memory than the worker may have (max_memory, {max_memory} bytes)"),
        );
    }
    Failure {
        stop: Stop::Runtime,
        message: "the script stopped the engine (an internal error); it did not finish".into(),
        line: None,
        column: None,
        limit: None,
        value: None,
        last: None,
        calls: 0,
        log: Vec::new(),
        steps: 0,
    }
}

/// Runs one script between `input` and `output`.
pub fn serve(
    mut input: Box<dyn BufRead + Send>,
    output: Box<dyn Write + Send>,
) -> Result<(), WorkerError> {
    // Ready before the script arrives: a spare worker waits with its globals
    // built, so a script's turn does not pay for them.
    let globals = engine::globals();
    let start: Start = serde_json::from_slice(&read_line(&mut input)?)?;
    let output: Shared = Arc::new(Mutex::new(output));
    let host = Gateway {
        input,
        output: output.clone(),
    };
    let max_memory = start.limits.max_memory;
    let script = std::thread::Builder::new()
        .name("manifold-script".into())
        .stack_size(SCRIPT_STACK_BYTES)
        .spawn(move || {
            let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                engine::run(
                    &globals,
                    &start.script,
                    start.inputs,
                    &start.limits,
                    Box::new(host),
                )
            }));
            match ended {
                Ok(Ok(f)) => FromWorker::Done(f),
                Ok(Err(f)) => FromWorker::Failed(*f),
                Err(panic) => FromWorker::Failed(stopped_engine(panic.as_ref(), &max_memory)),
            }
        })
        .map_err(WorkerError::Spawn)?;
    let end = script.join().unwrap_or_else(|_| {
        FromWorker::Failed(Failure::limit(
            "worker",
            0,
            "the script's thread ended abnormally".into(),
        ))
    });
    write_line(&mut **output.lock(), &end)?;
    Ok(())
}

/// What the worker process may take, set on itself before it reads the
/// script (a script cannot lift them: they are lowered before it exists).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessLimits {
    /// Address space, in bytes (`RLIMIT_AS`): a single huge allocation fails
    /// here, and ends the worker, not the gateway.
    pub address_space: u64,
    /// CPU time, in seconds (`RLIMIT_CPU`): a backstop behind the wall clock
    /// the gateway keeps.
    pub cpu_seconds: u64,
}

/// Lowers this process's limits (and turns core dumps off: a worker's
/// memory holds tool results).
pub fn limit_process(limits: ProcessLimits) -> Result<(), WorkerError> {
    use nix::sys::resource::{setrlimit, Resource};
    let set = |r: Resource, v: u64| setrlimit(r, v, v).map_err(|e| WorkerError::Limit(r, e));
    set(Resource::RLIMIT_CORE, 0)?;
    set(Resource::RLIMIT_CPU, limits.cpu_seconds.max(1))?;
    set(Resource::RLIMIT_AS, limits.address_space)?;
    Ok(())
}

/// One script over this process's stdin and stdout.
pub fn serve_stdio() -> Result<(), WorkerError> {
    serve(
        Box::new(std::io::BufReader::new(std::io::stdin())),
        Box::new(std::io::stdout()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use manifold_code::Limits;
    use serde_json::json;

    /// A Write the test reads back.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);
    impl Write for Sink {
        fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
            self.0.lock().extend_from_slice(b);
            Ok(b.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_worker_asks_for_each_call_and_ends_with_the_value() {
        let start = Start {
            script: "def main(inputs):\n  r = call('t', {'a': inputs['a']})\n  return r['n'] + 1\n"
                .into(),
            inputs: Some(json!({"a": 1})),
            limits: Limits::default(),
        };
        let mut input = serde_json::to_vec(&start).unwrap();
        input.push(b'\n');
        input.extend_from_slice(&serde_json::to_vec(&ToWorker::Answer(json!({"n": 41}))).unwrap());
        input.push(b'\n');
        let sink = Sink::default();
        serve(
            Box::new(std::io::Cursor::new(input)),
            Box::new(sink.clone()),
        )
        .unwrap();
        let out = String::from_utf8(sink.0.lock().clone()).unwrap();
        let lines: Vec<FromWorker> = out
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert_eq!(
            lines[0],
            FromWorker::Call {
                name: "t".into(),
                arguments: json!({"a": 1})
            }
        );
        match &lines[1] {
            FromWorker::Done(f) => assert_eq!((f.value.clone(), f.calls), (json!(42), 1)),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_gateway_that_goes_away_fails_the_call_not_the_worker() {
        let start = Start {
            script: "def main():\n  return call('t')\n".into(),
            inputs: None,
            limits: Limits::default(),
        };
        let mut input = serde_json::to_vec(&start).unwrap();
        input.push(b'\n');
        let sink = Sink::default();
        serve(
            Box::new(std::io::Cursor::new(input)),
            Box::new(sink.clone()),
        )
        .unwrap();
        let out = String::from_utf8(sink.0.lock().clone()).unwrap();
        let last: FromWorker = serde_json::from_str(out.lines().last().unwrap()).unwrap();
        assert!(matches!(last, FromWorker::Failed(f) if f.message.contains("closed")));
    }
}
