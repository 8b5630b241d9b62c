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

use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{broadcast, mpsc};

use super::{
    classify, parse_error, CallContext, DemoConfig, DemoServer, Incoming, TransportKind,
    SERVER_NAME,
};

/// Serve the process's stdin/stdout until stdin reaches EOF.
pub async fn run(config: DemoConfig) -> std::io::Result<()> {
    eprintln!("{SERVER_NAME}: serving MCP over stdio");
    serve(config, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serve one stdio-style session over any byte streams (e.g. a
/// `tokio::io::duplex` pair in-process). Note that the `crash` tool exits the
/// whole process, whatever the streams are.
pub async fn serve<R, W>(config: DemoConfig, input: R, output: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let server = DemoServer::new(config, TransportKind::Stdio);
    let session = server.new_session();
    let (tx, rx) = mpsc::unbounded_channel::<Value>();
    let writer = tokio::spawn(write_lines(output, rx));
    // In 2026-07-28 mode, list changes reach clients only on a listen stream.
    let events = (!server.config().modern).then(|| server.subscribe_events());
    let forwarder = tokio::spawn(forward_events(events, tx.clone()));

    let mut input = BufReader::new(input);
    let mut line = Vec::new();
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
                let session = session.clone();
                let tx = tx.clone();
                tokio::spawn(async move {
                    let ctx = CallContext {
                        outbound: Some(tx.clone()),
                        ..CallContext::default()
                    };
                    if let Some(response) = session.handle_request(id, method, params, ctx).await {
                        let _ = tx.send(response);
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

async fn write_lines<W>(
    mut output: W,
    mut rx: mpsc::UnboundedReceiver<Value>,
) -> std::io::Result<()>
where
    W: AsyncWrite + Unpin,
{
    while let Some(message) = rx.recv().await {
        let mut line = message.to_string().into_bytes();
        line.push(b'\n');
        output.write_all(&line).await?;
        // Flush per message: the peer is waiting for this exact line.
        output.flush().await?;
    }
    Ok(())
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
