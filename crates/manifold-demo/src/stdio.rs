//! stdio transport for the demo server: newline-delimited JSON-RPC.
//!
//! What: reads one JSON message per line from the input, handles each request
//! on its own task, and writes every outgoing message (responses, progress,
//! server→client requests, list_changed) as one line on the output.
//!
//! Invariants:
//! - Only JSON-RPC goes to the output; logs go to stderr.
//! - A single writer task owns the output, so lines never interleave.
//! - Input EOF ends the run: in-flight requests are cancelled (the client is
//!   gone) and already-produced messages are flushed briefly before returning.
//!
//! What not: no batches, no Content-Length framing (that is LSP, not MCP).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{broadcast, mpsc};

use super::rogue::{Line, Misbehaviour};
use crate::config::DemoConfig;
use crate::identity::SERVER_NAME;
use crate::jsonrpc::{classify, parse_error, Incoming};
use crate::server::DemoServer;
use crate::transport::{CallContext, TransportKind};

/// Serve the process's stdin/stdout until stdin reaches EOF.
pub async fn run(config: DemoConfig) -> std::io::Result<()> {
    eprintln!("{SERVER_NAME}: serving MCP over stdio");
    serve_closing(
        config,
        tokio::io::stdin(),
        tokio::io::stdout(),
        close_stdout,
    )
    .await
}

/// `close-stdout` on the real process: fd 1 is closed for good.
fn close_stdout() {
    use std::os::fd::{FromRawFd, OwnedFd};
    // SAFETY: fd 1 is this process's stdout; the only writer (the writer task)
    // has dropped its handle before this runs, and nothing writes to it after.
    drop(unsafe { OwnedFd::from_raw_fd(1) });
}

/// Serve one stdio-style session over any byte streams (e.g. a
/// `tokio::io::duplex` pair in-process). Note that the `crash` tool exits the
/// whole process, whatever the streams are.
pub async fn serve<R, W>(config: DemoConfig, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    serve_closing(config, input, output, || {}).await
}

async fn serve_closing<R, W>(
    config: DemoConfig,
    input: R,
    output: W,
    on_close: fn(),
) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let server = DemoServer::new(config, TransportKind::Stdio);
    let session = server.new_session();
    let rogue = server.config().misbehave.clone();
    let (tx, rx) = mpsc::unbounded_channel::<Value>();
    let (raw_tx, raw_rx) = mpsc::unbounded_channel::<Line>();
    let writer = tokio::spawn(write_lines(output, rx, raw_rx, on_close));
    // In 2026-07-28 mode, list changes reach clients only on a listen stream.
    let events = (!server.config().modern).then(|| server.subscribe_events());
    let forwarder = tokio::spawn(forward_events(events, tx.clone()));

    let mut input = BufReader::new(input);
    let mut line = Vec::new();
    let mut seen = std::collections::HashMap::new();
    // `--serial-calls`: one call at a time.
    let serial = server
        .config()
        .serial_calls
        .map(|d| (d, Arc::new(tokio::sync::Mutex::new(()))));
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line).await? == 0 {
            break;
        }
        let text = line.trim_ascii();
        if text.is_empty() {
            continue;
        }
        let message = match serde_json::from_slice::<Value>(text) {
            Ok(message) => message,
            Err(_) => {
                let _ = tx.send(parse_error());
                continue;
            }
        };
        let incoming = classify(message);
        if server.config().hangs_on(&incoming) {
            eprintln!("{SERVER_NAME}: --hang-calls: no longer reading stdin");
            std::future::pending::<()>().await;
        }
        match incoming {
            Incoming::Request { id, method, params } => {
                if rogue.dies_on(&method, &mut seen) {
                    eprintln!("{SERVER_NAME}: --misbehave: killed by itself at {method}");
                    super::rogue::die();
                }
                let change_after = rogue.changes_after(&method, &seen);
                let session = session.clone();
                let (tx, raw, rogue) = (tx.clone(), raw_tx.clone(), rogue.clone());
                let call = method == "tools/call";
                if call && rogue.has(Misbehaviour::CloseStdout) {
                    eprintln!("{SERVER_NAME}: --misbehave close-stdout: closing stdout");
                    let _ = raw.send(Line::Close);
                    continue;
                }
                let queue = serial.clone().filter(|_| call && !is_crash(&params));
                tokio::spawn(async move {
                    let _turn = match &queue {
                        Some((took, lock)) => {
                            let turn = lock.clone().lock_owned().await;
                            tokio::time::sleep(*took).await;
                            Some(turn)
                        }
                        None => None,
                    };
                    let ctx = CallContext {
                        outbound: Some(tx.clone()),
                        ..CallContext::default()
                    };
                    if let Some(response) = session.handle_request(id, method, params, ctx).await {
                        if call {
                            rogue.before_answer(&raw);
                            for answer in rogue.answers(response) {
                                let _ = tx.send(answer);
                            }
                        } else {
                            let _ = tx.send(response);
                        }
                    }
                    if change_after {
                        session.server().add_tool_and_announce("late");
                    }
                });
            }
            Incoming::Notification { method, params } => {
                session.handle_notification(&method, &params)
            }
            Incoming::Response { id, message } => {
                session.handle_response(&id, message);
            }
            Incoming::Invalid(error) => {
                let _ = tx.send(error);
            }
        }
    }

    eprintln!("{SERVER_NAME}: stdin closed, shutting down");
    session.cancel_all();
    forwarder.abort();
    drop(tx);
    // Request tasks drop their senders as they unwind; give the writer a
    // moment to flush what is queued, but never hang on a stuck output.
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
    Ok(())
}

/// Whether a `tools/call` is of `crash` (which skips `--serial-calls`' queue).
fn is_crash(params: &serde_json::Map<String, Value>) -> bool {
    params.get("name").and_then(Value::as_str) == Some("crash")
}

/// Owns the output. Raw lines (fault modes) go first: they were queued before
/// the answer they precede.
async fn write_lines<W>(
    output: W,
    mut rx: mpsc::UnboundedReceiver<Value>,
    mut raw: mpsc::UnboundedReceiver<Line>,
    on_close: fn(),
) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    let mut output = Some(output);
    loop {
        let mut line = tokio::select! {
            biased;
            Some(r) = raw.recv() => match r {
                Line::Raw(bytes) => bytes,
                Line::Close => {
                    drop(output.take());
                    on_close();
                    continue;
                }
            },
            m = rx.recv() => match m {
                Some(message) => message.to_string().into_bytes(),
                None => return Ok(()),
            },
        };
        let Some(out) = output.as_mut() else {
            continue;
        };
        line.push(b'\n');
        out.write_all(&line).await?;
        // Flush per message: the peer is waiting for this exact line.
        out.flush().await?;
    }
}

async fn forward_events(
    events: Option<broadcast::Receiver<Value>>,
    tx: mpsc::UnboundedSender<Value>,
) {
    let Some(mut events) = events else { return };
    loop {
        match events.recv().await {
            Ok(event) => {
                if tx.send(event).is_err() {
                    return;
                }
            }
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}
