//! stdio upstreams: a child process speaking newline-delimited JSON-RPC.
//!
//! Four tasks per child, all ending with the connection's `closed` token: a writer
//! (owns stdin), a reader (owns stdout, lines bounded by `max_message_bytes`; a
//! line too long, not UTF-8 or not JSON-RPC is skipped and reading goes on), a
//! stderr reader (read to the end whatever it holds, each line logged with the
//! upstream's name within [`STDERR_LINES_PER_WINDOW`]) and a reaper (owns the
//! child, records its exit code, fires `closed` when it exits). Stdout closing
//! ends the connection even if the child lives on: it is stopped and restarted.
//!
//! Stopping follows the spec: close stdin, wait, SIGTERM, wait, SIGKILL. The child
//! leads a process group of its own, and the signals go to the whole group, so
//! what it started (a wrapper's server, a server's helpers) stops with it; once the
//! child has exited, for any reason, whatever is left of its group is killed.
//!
//! The child's environment is its configured `env` plus [`PASSED_ENV`] from the
//! gateway's, unless `inherit_env` is set: one upstream's secrets never reach
//! another's process.
//!
//! Not here: what the messages mean (`wire`, `router`).

use bytes::Bytes;
use manifold_config::{LimitsConfig, Transport as Configured, UpstreamConfig};
use std::process::Stdio;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, Notify};
use tokio_util::sync::CancellationToken;

use super::lines::{Line, Lines};
use super::{Driver, Ended, Outgoing, Transport};
use crate::error::UpstreamError;
use crate::limits::STDERR_LINES_PER_WINDOW;
use crate::message::{BoxFuture, Outbound};
use crate::router::Source;
use crate::wire::Wire;
use manifold_foundation::log_budget::LogBudget;

/// Messages queued for a child's stdin.
pub const STDIN_QUEUE: usize = 256;
/// Longest stderr line kept (the rest of the line is dropped).
pub const MAX_STDERR_LINE: usize = 16 * 1024;
/// Grace periods when stopping a child: after closing stdin, after SIGTERM.
pub const STOP_GRACE: Duration = Duration::from_secs(2);
/// How long a failed handshake, or a connection whose stdout ended, waits for a
/// dying child to be reaped, so its exit code and stderr explain the failure.
const REAP_WAIT: Duration = Duration::from_millis(200);

const NO_EXIT: i64 = i64::MIN;

/// Variables of the gateway's environment a child gets besides its own `env`
/// (without `inherit_env`).
pub const PASSED_ENV: &[&str] = &["PATH", "HOME", "LANG"];

/// The child's stdin, as the outbound half responders hold.
struct Stdin {
    writer: mpsc::Sender<Bytes>,
    upstream: Arc<str>,
}

impl Stdin {
    fn not_running(&self) -> UpstreamError {
        UpstreamError::transient(&self.upstream, "the child process is not running", false)
    }

    /// Queues a message for the child's stdin, waiting at most `bound` for room: a
    /// child that stops reading fills the queue, and its callers get an error
    /// instead of waiting for ever.
    async fn send(&self, bytes: Vec<u8>, bound: Duration) -> Result<(), UpstreamError> {
        use tokio::sync::mpsc::error::{SendTimeoutError, TrySendError};
        // Room in the queue (the usual case): no timer. The queue's permits go to
        // senders already waiting before any are free, so this jumps no one.
        let bytes = match self.writer.try_send(Bytes::from(bytes)) {
            Ok(()) => return Ok(()),
            Err(TrySendError::Full(bytes)) => bytes,
            Err(TrySendError::Closed(_)) => return Err(self.not_running()),
        };
        match self.writer.send_timeout(bytes, bound).await {
            Ok(()) => Ok(()),
            Err(SendTimeoutError::Closed(_)) => Err(self.not_running()),
            Err(SendTimeoutError::Timeout(_)) => Err(UpstreamError::unavailable(
                &self.upstream,
                format!("the child process has not read its stdin for {bound:?}"),
            )),
        }
    }
}

impl Outbound for Stdin {
    fn send_message(&self, bytes: Vec<u8>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            if let Err(e) = self.send(bytes, crate::limits::SEND_TIMEOUT).await {
                tracing::warn!(upstream = %self.upstream, error = %e, "sending to the upstream failed");
            }
        })
    }
}

pub(crate) struct StdioTransport {
    wire: Arc<Wire>,
    stdin: Arc<Stdin>,
    /// Exit code once the child exited (`NO_EXIT` before; -signal when killed).
    exit: Arc<AtomicI64>,
    stop: Arc<Notify>,
    stopped: CancellationToken,
}

impl StdioTransport {
    fn exit_code(&self) -> Option<i32> {
        match self.exit.load(Ordering::SeqCst) {
            NO_EXIT => None,
            c => i32::try_from(c).ok(),
        }
    }

    fn exit_description(&self) -> String {
        match self.exit_code() {
            Some(c) if c < 0 => format!("the process was killed by signal {}", -c),
            Some(c) => format!("the process exited with code {c}"),
            None => "the process closed its stdout".into(),
        }
    }
}

impl Outbound for StdioTransport {
    fn send_message(&self, bytes: Vec<u8>) -> BoxFuture<'_, ()> {
        self.stdin.send_message(bytes)
    }
}

impl Transport for StdioTransport {
    fn request(&self, out: Outgoing) -> BoxFuture<'_, Result<Option<Driver>, UpstreamError>> {
        // The reader task routes the reply: no driver. The send is bounded by the
        // call's own timeout.
        Box::pin(async move { self.stdin.send(out.bytes, out.timeout).await.map(|()| None) })
    }

    fn cancels_by_closing(&self) -> bool {
        false
    }

    fn initialized(&self) {}

    fn shutdown(&self) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            self.stop.notify_one();
            let _ = tokio::time::timeout(STOP_GRACE * 3, self.stopped.cancelled()).await;
        })
    }

    fn ended(&self, after_failure: bool) -> BoxFuture<'_, Ended> {
        Box::pin(async move {
            if after_failure {
                let _ = tokio::time::timeout(REAP_WAIT, self.wire.closed.cancelled()).await;
            }
            // Stdout often reaches its end a moment before the child is reaped:
            // wait that moment, so the reason is the exit (a signal, a code)
            // rather than "closed its stdout".
            if self.exit_code().is_none() && self.wire.closed.is_cancelled() {
                let _ = tokio::time::timeout(REAP_WAIT, self.stopped.cancelled()).await;
            }
            Ended {
                reason: self.exit_description(),
                exit_code: self.exit_code(),
            }
        })
    }

    fn outbound(&self) -> Arc<dyn Outbound> {
        self.stdin.clone()
    }
}

/// Spawns the child and its tasks.
pub(crate) async fn connect(
    cfg: &UpstreamConfig,
    limits: &LimitsConfig,
    wire: Arc<Wire>,
) -> Result<StdioTransport, UpstreamError> {
    let Configured::Stdio {
        command,
        args,
        env,
        cwd,
        inherit_env,
    } = &cfg.transport
    else {
        return Err(UpstreamError::unavailable(
            &cfg.name,
            "not a stdio upstream",
        ));
    };
    let mut cmd = Command::new(command);
    if !inherit_env {
        cmd.env_clear();
        for key in PASSED_ENV {
            if let Some(v) = std::env::var_os(key) {
                cmd.env(key, v);
            }
        }
    }
    cmd.args(args)
        .envs(env)
        // A group of its own: the signals that stop it reach its descendants.
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(dir) = cwd {
        cmd.current_dir(dir);
    }
    let mut child = cmd.spawn().map_err(|e| {
        UpstreamError::unavailable(&cfg.name, format!("cannot start `{command}`: {e}"))
    })?;
    let (Some(stdin), Some(stdout), Some(stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        return Err(UpstreamError::unavailable(
            &cfg.name,
            "the child has no stdio pipes",
        ));
    };
    tracing::info!(upstream = %cfg.name, pid = child.id(), command = %command, "started upstream process");

    let (wtx, wrx) = mpsc::channel::<Bytes>(STDIN_QUEUE);
    let exit = Arc::new(AtomicI64::new(NO_EXIT));
    let stop = Arc::new(Notify::new());
    let stopped = CancellationToken::new();
    let name: Arc<str> = wire.upstream().clone();
    let transport = StdioTransport {
        wire: wire.clone(),
        stdin: Arc::new(Stdin {
            writer: wtx,
            upstream: name.clone(),
        }),
        exit: exit.clone(),
        stop: stop.clone(),
        stopped: stopped.clone(),
    };
    let closed = wire.closed.clone();

    // Writer: owns stdin; dropping it on exit closes the pipe (the first stop step).
    wire.tasks.spawn(writer(
        stdin,
        wrx,
        stop.clone(),
        closed.clone(),
        name.clone(),
    ));

    // Reader: one JSON-RPC message per line.
    let max = limits.max_message_bytes;
    let (w, out) = (wire.clone(), transport.outbound());
    wire.tasks.spawn(async move {
        // Bytes, not text: a line that is not UTF-8 is skipped, not fatal.
        let mut lines = Lines::new(stdout, max);
        loop {
            let next = tokio::select! {
                _ = w.closed.cancelled() => break,
                n = lines.next() => n,
            };
            match next {
                Ok(Line::Text(line)) => match std::str::from_utf8(line) {
                    Ok(text) if text.trim().is_empty() => {}
                    Ok(text) => w.dispatch(text, Source::Stdio, &out),
                    Err(_) => {
                        if let Some(suppressed) = w.router.noise.allow() {
                            tracing::warn!(upstream = %w.upstream(), suppressed,
                                "upstream wrote a line that is not UTF-8; it was discarded");
                        }
                    }
                },
                Ok(Line::TooLong) => {
                    if let Some(suppressed) = w.router.noise.allow() {
                        tracing::warn!(upstream = %w.upstream(), limit = max, suppressed,
                            "upstream wrote a line longer than limits.max_message_bytes; it was discarded");
                    }
                }
                Ok(Line::Eof) => break,
                Err(e) => {
                    tracing::warn!(upstream = %w.upstream(), error = %e, "reading the upstream's stdout failed");
                    break;
                }
            }
        }
        w.closed.cancel();
    });

    // stderr: the upstream's own logs, attributed, within a budget. It is read
    // to the end whatever it holds: a child blocked on a full stderr pipe hangs.
    let w = wire.clone();
    wire.tasks.spawn(async move {
        let mut lines = Lines::new(stderr, MAX_STDERR_LINE);
        let noise = LogBudget::new(STDERR_LINES_PER_WINDOW);
        loop {
            let next = tokio::select! {
                _ = w.closed.cancelled() => break,
                n = lines.next() => n,
            };
            match next {
                Ok(Line::Text(line)) => {
                    if let Some(suppressed) = noise.allow() {
                        let line = String::from_utf8_lossy(line);
                        // A child's text reaches a person's terminal: what
                        // they would not see (escape sequences, bidi
                        // overrides, tag characters) is shown escaped.
                        let line = manifold_foundation::text::printable(line.trim_end());
                        if suppressed > 0 {
                            tracing::warn!(target: "manifold::upstream_stderr", upstream = %w.upstream(), suppressed,
                                "stderr lines over the budget were not logged");
                        }
                        tracing::info!(target: "manifold::upstream_stderr", upstream = %w.upstream(), "{line}");
                    }
                }
                Ok(Line::TooLong) => {}
                Ok(Line::Eof) | Err(_) => break,
            }
        }
    });

    // Reaper: owns the child.
    wire.tasks
        .spawn(reaper(child, exit, stop, stopped, closed, name));
    Ok(transport)
}

async fn writer(
    mut stdin: tokio::process::ChildStdin,
    mut rx: mpsc::Receiver<Bytes>,
    stop: Arc<Notify>,
    closed: CancellationToken,
    name: Arc<str>,
) {
    let mut batch = Vec::new();
    loop {
        let msg = tokio::select! {
            _ = closed.cancelled() => break,
            _ = stop.notified() => { stop.notify_one(); break }
            m = rx.recv() => m,
        };
        let Some(msg) = msg else { break };
        // The tasks that woke us may have more to send in the same turn of the
        // runtime (several callers' requests read from one poll of the sockets):
        // let them run first, so their messages share this write.
        if rx.is_empty() {
            tokio::task::yield_now().await;
        }
        gather(&mut batch, msg, &mut rx);
        let res = async {
            stdin.write_all(&batch).await?;
            stdin.flush().await
        }
        .await;
        if let Err(e) = res {
            tracing::warn!(upstream = %name, error = %e, "writing to the upstream's stdin failed");
            closed.cancel();
            break;
        }
        // A batch that grew large once (a big message) is not kept for ever.
        if batch.capacity() > 4 * STDIN_BATCH_BYTES {
            batch = Vec::new();
        }
    }
    drop(stdin);
}

/// Most bytes the writer joins into one write: the messages already queued when it
/// wakes go to the child together (one write, one wake-up of the child's reader,
/// instead of two writes per message), up to about a pipe's buffer.
pub const STDIN_BATCH_BYTES: usize = 64 * 1024;

/// `first` and the messages queued behind it, each ended by a newline, into
/// `batch` (cleared first), until the batch reaches [`STDIN_BATCH_BYTES`]: the
/// message that crosses it is the batch's last, so a batch holds at most that
/// plus one message (a client's is bounded by `limits.max_body_bytes`); a first
/// message larger than the bound goes alone.
fn gather(batch: &mut Vec<u8>, first: Bytes, rx: &mut mpsc::Receiver<Bytes>) {
    batch.clear();
    batch.extend_from_slice(&first);
    batch.push(b'\n');
    while batch.len() < STDIN_BATCH_BYTES {
        let Ok(next) = rx.try_recv() else { break };
        batch.extend_from_slice(&next);
        batch.push(b'\n');
    }
}

async fn reaper(
    mut child: Child,
    exit: Arc<AtomicI64>,
    stop: Arc<Notify>,
    stopped: CancellationToken,
    closed: CancellationToken,
    name: Arc<str>,
) {
    // The child leads its group: the group id is its pid.
    let group = child.id().and_then(|p| i32::try_from(p).ok());
    let status = tokio::select! {
        st = child.wait() => st.ok(),
        _ = stop.notified() => {
            stop.notify_one(); // let the writer see it too and close stdin
            graceful_stop(&mut child, &name).await
        }
    };
    if let Some(st) = status {
        let code = st.code().map(i64::from).or_else(|| {
            use std::os::unix::process::ExitStatusExt;
            st.signal().map(|s| -i64::from(s))
        });
        exit.store(code.unwrap_or(-1), Ordering::SeqCst);
        tracing::info!(upstream = %name, status = %st, "upstream process exited");
    }
    // Whatever the child started and left behind goes with it.
    if let Some(group) = group {
        signal_group(group, nix::sys::signal::Signal::SIGKILL);
    }
    closed.cancel();
    stopped.cancel();
}

/// Sends `sig` to the process group `group` (its leader's pid); a group with no
/// process left is not an error.
fn signal_group(group: i32, sig: nix::sys::signal::Signal) {
    let _ = nix::sys::signal::killpg(nix::unistd::Pid::from_raw(group), sig);
}

async fn graceful_stop(child: &mut Child, name: &str) -> Option<std::process::ExitStatus> {
    if let Ok(Ok(st)) = tokio::time::timeout(STOP_GRACE, child.wait()).await {
        return Some(st);
    }
    if let Some(pid) = child.id().and_then(|p| i32::try_from(p).ok()) {
        tracing::debug!(upstream = %name, pid, "sending SIGTERM to its process group");
        signal_group(pid, nix::sys::signal::Signal::SIGTERM);
        if let Ok(Ok(st)) = tokio::time::timeout(STOP_GRACE, child.wait()).await {
            return Some(st);
        }
        tracing::warn!(upstream = %name, "upstream did not stop after SIGTERM; killing its process group");
        signal_group(pid, nix::sys::signal::Signal::SIGKILL);
    }
    let _ = child.kill().await;
    child.wait().await.ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What one write carries, for messages queued before the writer wakes.
    #[tokio::test]
    async fn queued_messages_go_in_one_write_within_the_bound() {
        let big = "x".repeat(STDIN_BATCH_BYTES);
        let half = "h".repeat(STDIN_BATCH_BYTES / 2);
        // (queued messages, the writes they make)
        let cases: Vec<(Vec<&str>, Vec<String>)> = vec![
            (vec!["a"], vec!["a\n".into()]),
            (vec!["a", "b", "c"], vec!["a\nb\nc\n".into()]),
            // One over the bound goes alone; what follows starts the next write.
            (vec![&big, "b"], vec![format!("{big}\n"), "b\n".into()]),
            // The write that crosses the bound is the last of its batch.
            (
                vec![&half, &half, "c"],
                vec![format!("{half}\n{half}\n"), "c\n".into()],
            ),
        ];
        for (queued, want) in cases {
            let (tx, mut rx) = mpsc::channel::<Bytes>(STDIN_QUEUE);
            for m in &queued {
                tx.send(Bytes::from(m.to_string())).await.expect("queue");
            }
            drop(tx);
            let mut writes = Vec::new();
            let mut batch = Vec::new();
            while let Some(first) = rx.recv().await {
                gather(&mut batch, first, &mut rx);
                writes.push(String::from_utf8(batch.clone()).expect("utf-8"));
            }
            assert_eq!(
                writes,
                want,
                "{:?}",
                queued.iter().map(|m| m.len()).collect::<Vec<_>>()
            );
        }
    }
}
