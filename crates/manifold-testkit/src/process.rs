//! [`Proc`]: a child process for black-box tests (the `manifold` binary, the
//! demo upstream, a peer SDK), its output lines on channels, killed and reaped
//! when dropped. The one process harness of every test suite.
//!
//! Invariants: a spawned child never outlives its `Proc` (SIGTERM first, so a
//! gateway reaps its own children, then SIGKILL after [`STOP_GRACE`]); every
//! wait for a line is bounded; output is read on threads of its own, so a child
//! never blocks on a full pipe.
//!
//! Not here: in-process gateways (`harness::TestGateway`).

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{bail, Context, Result};

/// How long a child gets to exit after SIGTERM before it is killed.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// A child process killed and reaped on drop, with its output lines on channels.
pub struct Proc {
    pub child: Child,
    pub stdout: mpsc::Receiver<String>,
    pub stderr: mpsc::Receiver<String>,
    pub name: String,
}

impl Proc {
    /// Spawns `cmd` (stdin closed, stdout and stderr captured); with
    /// `MANIFOLD_E2E_VERBOSE` set, its stderr is echoed as it arrives.
    pub fn spawn(name: &str, mut cmd: Command) -> Result<Proc> {
        cmd.stdin(Stdio::null());
        Proc::spawn_with_stdin(name, cmd)
    }

    /// [`Proc::spawn`] with stdin as `cmd` sets it (`Stdio::piped()`: the
    /// caller takes `child.stdin`).
    pub fn spawn_with_stdin(name: &str, mut cmd: Command) -> Result<Proc> {
        cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().with_context(|| format!("starting {name}"))?;
        let (otx, orx) = mpsc::channel();
        let (etx, erx) = mpsc::channel();
        let out = child.stdout.take().context("stdout")?;
        let err = child.stderr.take().context("stderr")?;
        let n = name.to_string();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(|l| l.ok()) {
                let _ = otx.send(line);
            }
        });
        std::thread::spawn(move || {
            for line in BufReader::new(err).lines().map_while(|l| l.ok()) {
                if std::env::var_os("MANIFOLD_E2E_VERBOSE").is_some() {
                    eprintln!("[{n}] {line}");
                }
                let _ = etx.send(line);
            }
        });
        Ok(Proc {
            child,
            stdout: orx,
            stderr: erx,
            name: name.to_string(),
        })
    }

    /// The first line on `rx` containing `needle`, within `timeout`.
    pub fn wait_line(
        rx: &mpsc::Receiver<String>,
        needle: &str,
        timeout: Duration,
        what: &str,
    ) -> Result<String> {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return Ok(line),
                Ok(_) => continue,
                Err(_) => bail!("{what}: no line containing {needle:?} within {timeout:?}"),
            }
        }
    }

    /// Sends SIGTERM and waits for the exit, at most `within`; `None` if the
    /// child is still running then.
    pub fn terminate(&mut self, within: Duration) -> Option<std::process::ExitStatus> {
        if let Ok(pid) = i32::try_from(self.child.id()) {
            let _ = Command::new("kill")
                .arg("-TERM")
                .arg(pid.to_string())
                .status();
        }
        crate::wait::eventually_blocking("the child's exit", within, || {
            Ok(self.child.try_wait()?)
        })
        .ok()
    }

    /// Every stderr line, once the child has exited and closed its stderr (at
    /// most `within` after the call).
    pub fn stderr_to_end(&self, within: Duration) -> Vec<String> {
        let deadline = std::time::Instant::now() + within;
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.stderr.recv_timeout(left) {
                Ok(line) => lines.push(line),
                Err(_) => return lines,
            }
        }
    }

    /// Sends `signal` (`-TERM`, `-KILL`) without waiting.
    pub fn signal(&self, signal: &str) {
        let _ = Command::new("kill")
            .args([signal, &self.child.id().to_string()])
            .status();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(Some(_))) {
            return;
        }
        if self.terminate(STOP_GRACE).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
