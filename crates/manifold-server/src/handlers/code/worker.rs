//! One script's worker process: started with the worker program
//! (`manifold-code-worker`), its address space and CPU time lowered by the worker itself
//! before it reads the script, its environment empty, its stderr discarded;
//! spoken to in lines (`manifold_code::wire`).
//!
//! Invariants: the process is killed when this value drops (every exit of a
//! script: an end, a timeout, a cancellation, a gateway stopping); a line
//! from it is at most `MAX_LINE_BYTES`, and anything else from it — a longer
//! line, a line that is not a message, an early exit — ends the script with
//! what was seen.
//!
//! Not here: what the messages mean (`mod.rs`).

use manifold_code::{FromWorker, Start, ToWorker, MAX_LINE_BYTES};
use std::process::Stdio;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::state::code::Spare;

/// A running worker.
pub(super) struct Worker {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

/// What went wrong with a worker, as a script's failure reads it.
#[derive(Debug, thiserror::Error)]
pub(super) enum WorkerError {
    #[error("its worker process could not be started ({0}); the gateway's code worker is missing or broken")]
    Start(std::io::Error),
    #[error("{}", ended(*.0))]
    Ended(Option<i32>),
    #[error("its worker process sent a line longer than {MAX_LINE_BYTES} bytes")]
    TooLong,
    #[error("its worker process sent something that is not a message ({0})")]
    Garbled(String),
    #[error("its worker process could not be written to ({0})")]
    Write(std::io::Error),
}

/// Why a worker that ended without an answer ended, by its signal: an
/// allocation the address space refused aborts it (SIGABRT), CPU time past
/// its limit stops it (SIGXCPU, then SIGKILL).
fn ended(signal: Option<i32>) -> String {
    use nix::sys::signal::Signal;
    match signal.and_then(|s| Signal::try_from(s).ok()) {
        Some(Signal::SIGABRT) | Some(Signal::SIGSEGV) => "one of its operations needed more memory (or stack) than its worker may have (max_memory)".into(),
        Some(Signal::SIGXCPU) | Some(Signal::SIGKILL) => "its worker used up its CPU time (timeout)".into(),
        Some(s) => format!("its worker process ended on {s} without an answer"),
        None => "its worker process ended without an answer".into(),
    }
}

impl Worker {
    /// Starts a worker as `how` says (its program, address space and CPU
    /// time).
    pub(super) fn start(how: &Spare) -> Result<Worker, WorkerError> {
        let mut child = Command::new(&how.program.program)
            .args(&how.program.args)
            .arg("--address-space")
            .arg(how.address_space.to_string())
            .arg("--cpu-seconds")
            .arg(how.cpu_seconds.to_string())
            // A script sees nothing of the gateway: no secret in its
            // environment, no directory of its own.
            .env_clear()
            .current_dir("/")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(WorkerError::Start)?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(WorkerError::Start(std::io::Error::other("no pipes")));
        };
        Ok(Worker {
            child,
            input,
            output: BufReader::new(output),
        })
    }

    async fn write(&mut self, value: &impl serde::Serialize) -> Result<(), WorkerError> {
        let mut line =
            serde_json::to_vec(value).map_err(|e| WorkerError::Garbled(e.to_string()))?;
        line.push(b'\n');
        self.input
            .write_all(&line)
            .await
            .map_err(WorkerError::Write)?;
        self.input.flush().await.map_err(WorkerError::Write)
    }

    /// Sends the script.
    pub(super) async fn begin(&mut self, start: &Start) -> Result<(), WorkerError> {
        self.write(start).await
    }

    /// Answers the worker's last call out.
    pub(super) async fn answer(&mut self, answer: &ToWorker) -> Result<(), WorkerError> {
        self.write(answer).await
    }

    /// The worker's next message.
    pub(super) async fn next(&mut self) -> Result<FromWorker, WorkerError> {
        let mut line = Vec::new();
        let n = (&mut self.output)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut line)
            .await
            .map_err(|e| WorkerError::Garbled(e.to_string()))?;
        if n == 0 {
            let status = self.child.wait().await.ok();
            let signal = status.and_then(|s| {
                use std::os::unix::process::ExitStatusExt;
                s.signal()
            });
            return Err(WorkerError::Ended(signal));
        }
        if line.len() > MAX_LINE_BYTES {
            return Err(WorkerError::TooLong);
        }
        serde_json::from_slice(&line).map_err(|e| WorkerError::Garbled(e.to_string()))
    }
}
