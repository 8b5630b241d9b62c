//! The stdio front door (`manifold stdio`): one client per process, speaking
//! newline-delimited JSON-RPC on stdin and stdout, through the same pipeline as
//! the HTTP endpoint (admission, policy, validation, confirmation, audit).
//!
//! - Every revision the HTTP endpoint speaks: a session-era client's
//!   `initialize` opens its session (stdio has no `Mcp-Session-Id`: the front
//!   door remembers it), after which the session's notifications
//!   (`list_changed`, logs, resource updates) go to stdout; a 2026-07-28 client
//!   sends `_meta` on every request as it would over HTTP.
//! - Requests are served concurrently, at most `limits.max_calls_per_session`
//!   at once; a stream reply (progress, a server→client request, the answer)
//!   is written message by message; the client's answers to server→client
//!   requests and its `notifications/cancelled` arrive on stdin like anything
//!   else.
//! - The principal is the local user (`[stdio] principal`, default the OS user).
//!
//! Invariants: stdout carries only whole JSON-RPC messages, one per line (a
//! newline an upstream put between JSON tokens is written as a space; one inside
//! a string is already escaped); nothing else is ever written there (logs go to
//! stderr); a line longer than `limits.max_body_bytes` is answered with an
//! error and skipped, never buffered whole; when stdin closes, the calls in
//! flight finish and are answered before the function returns.
//!
//! Not here: stopping the gateway (the caller does, after this returns).

use bytes::Bytes;
use manifold_policy::Identity;
use manifold_protocol::{Incoming, MessageError};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, Semaphore};
use tokio::task::AbortHandle;

use crate::era::Era;
use crate::pipeline;
use crate::refusal::Refusal;
use crate::reply::Reply;
use crate::request::{Accepts, Arrival, Front};
use crate::state::{Gateway, SessionEnd};

/// Messages queued for stdout before a writer waits (a client that stops
/// reading stalls its own requests, nothing else).
pub const STDOUT_QUEUE: usize = 256;

/// The principal of `manifold stdio`: `[stdio] principal`, else `$USER`, else
/// `$LOGNAME`, else `local`.
pub fn local_principal(configured: Option<&str>) -> String {
    configured
        .map(str::to_string)
        .or_else(|| std::env::var("USER").ok().filter(|u| !u.is_empty()))
        .or_else(|| std::env::var("LOGNAME").ok().filter(|u| !u.is_empty()))
        .unwrap_or_else(|| "local".to_string())
}

impl Gateway {
    /// Serves one client on `input` / `output` until `input` ends (or shutdown
    /// begins); returns once every request read has been answered.
    pub async fn serve_stdio<R, W>(self: &Arc<Self>, input: R, output: W)
    where
        R: AsyncBufRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let user = local_principal(self.cfg().stdio_principal.as_deref());
        let identity = Arc::new(Identity::local(&user));
        tracing::info!(principal = %identity.display_name(), "serving one client on stdio");
        let (tx, rx) = mpsc::channel::<Bytes>(STDOUT_QUEUE);
        let writer = tokio::spawn(write_lines(output, rx));
        let session: Arc<Mutex<Option<String>>> = Arc::default();
        let slots = Arc::new(Semaphore::new(
            self.cfg().limits.max_calls_per_session.max(1),
        ));
        let mut handlers = tokio::task::JoinSet::new();
        // Requests being served, by their JSON-RPC id (its JSON text).
        let running: Arc<Mutex<HashMap<String, AbortHandle>>> = Arc::default();
        let mut lines = Lines::new(input, self.cfg().limits.max_body_bytes);
        loop {
            let line = tokio::select! {
                l = lines.next() => l,
                _ = self.life.shutdown.cancelled() => break,
            };
            let line = match line {
                Line::Message(l) => l,
                Line::TooLong => {
                    let limit = self.cfg().limits.max_body_bytes;
                    let refused = Refusal::LineTooLong { limit }.reply(None, Era::Session);
                    let _ = tx.send(refused.into_bytes()).await;
                    continue;
                }
                Line::End => break,
            };
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            // Parsed once: the shape decides how the line is served, and the
            // same value is what the pipeline decodes.
            let bytes = line.len();
            let parsed = serde_json::from_slice::<serde_json::Value>(&line)
                .map_err(|e| MessageError::Parse(e.to_string()));
            drop(line);
            let kind = classify(parsed.as_ref().ok());
            let msg = parsed.and_then(Incoming::from_value);
            if let Kind::Cancel(id) = &kind {
                // A 2026-07-28 client cancels a request over stdio by naming it
                // (there is no stream to close): its handler is dropped, which
                // cancels the call upstream. A session-era cancellation is also
                // handled by the pipeline below.
                if let Some(abort) = running.lock().remove(id) {
                    abort.abort();
                }
            }
            let (gw, tx, session, identity) =
                (self.clone(), tx.clone(), session.clone(), identity.clone());
            match kind {
                Kind::Request(id) => {
                    // Only requests take a place: a response or a cancellation
                    // must always get through, or a call waiting for one would
                    // hold its place forever.
                    let Ok(permit) = slots.clone().acquire_owned().await else {
                        break;
                    };
                    let (running2, key) = (running.clone(), id.clone());
                    // Held while spawning: the task's own removal waits for the
                    // insertion, so a quick one leaves no stale entry.
                    let mut table = running.lock();
                    let handle = handlers.spawn(async move {
                        let _permit = permit;
                        gw.serve_line(msg, bytes, identity, &session, &tx, true)
                            .await;
                        running2.lock().remove(&id);
                    });
                    table.insert(key, handle);
                }
                Kind::Cancel(_) | Kind::Other(false) => {
                    // A notification or a response: nothing is ever written
                    // back for it (a refusal included).
                    handlers.spawn(async move {
                        gw.serve_line(msg, bytes, identity, &session, &tx, false)
                            .await;
                    });
                }
                Kind::Other(true) => {
                    // Not a message at all: the pipeline's error (id null) is
                    // the answer.
                    handlers.spawn(async move {
                        gw.serve_line(msg, bytes, identity, &session, &tx, true)
                            .await;
                    });
                }
            }
            // Reap finished handlers as we go, so the set stays small.
            while handlers.try_join_next().is_some() {}
        }
        // Input closed (or shutdown): listen streams get their final result;
        // questions to the client fail now (it can no longer answer) instead
        // of waiting out their time; the calls in flight finish and are
        // answered; then the session ends.
        self.tables.listeners.end_all();
        let id = session.lock().clone();
        if let Some(s) = id.as_deref().and_then(|id| self.tables.sessions.get(id)) {
            for r in s.take_all_pending() {
                r.refuse(manifold_upstream::NotRelayed::ClientClosedInput)
                    .await;
            }
        }
        while handlers.join_next().await.is_some() {}
        if let Some(id) = id {
            self.end_session(&id, SessionEnd::Closed);
        }
        drop(tx);
        let _ = writer.await;
    }

    /// One message from the client, answered on `tx`.
    async fn serve_line(
        self: &Arc<Self>,
        msg: Result<Incoming, MessageError>,
        bytes: usize,
        identity: Arc<Identity>,
        session: &Mutex<Option<String>>,
        tx: &mpsc::Sender<Bytes>,
        answers: bool,
    ) {
        let arrival = Arrival {
            request_id: self.request_id(),
            bytes,
            front: Front::Stdio {
                session: session.lock().clone(),
            },
            identity: Some(identity),
            peer: None,
            endpoint: self.default_endpoint(),
            accepts: Accepts {
                json: true,
                stream: true,
            },
        };
        let reply = pipeline::serve_decoded(self, arrival.clone(), msg).await;
        if !answers {
            return;
        }
        match reply {
            Reply::Message {
                bytes,
                session: opened,
                ..
            } => {
                // The session is known before its `initialize` answer goes
                // out, so the client's next message finds it.
                let previous = opened
                    .as_ref()
                    .and_then(|id| session.lock().replace(id.clone()));
                let _ = tx.send(bytes).await;
                if let Some(id) = opened {
                    // The session's own stream (what HTTP clients GET) goes to
                    // stdout too, after the `initialize` answer.
                    if let Some(old) = previous {
                        self.end_session(&old, SessionEnd::Closed);
                    }
                    let arrival = Arrival {
                        front: Front::Stdio { session: Some(id) },
                        ..arrival
                    };
                    if let Reply::Stream(rx) = pipeline::open_stream(self, &arrival) {
                        self.life.background.spawn(forward(rx, tx.clone()));
                    }
                }
            }
            Reply::Stream(rx) => forward(rx, tx.clone()).await,
            Reply::Accepted | Reply::Ended => {}
        }
    }
}

/// What a line is, as far as the front door cares.
enum Kind {
    /// A request, with its id (JSON text).
    Request(String),
    /// `notifications/cancelled` naming this request id (JSON text).
    Cancel(String),
    /// A response or another notification (`false`), or something that is
    /// not a message (`true`: the pipeline's refusal answers it).
    Other(bool),
}

fn classify(line: Option<&serde_json::Value>) -> Kind {
    let Some(serde_json::Value::Object(m)) = line else {
        return Kind::Other(true);
    };
    match (m.get("method").and_then(|v| v.as_str()), m.get("id")) {
        (Some(_), Some(id)) => Kind::Request(id.to_string()),
        (Some("notifications/cancelled"), None) => m
            .get("params")
            .and_then(|p| p.get("requestId"))
            .map_or(Kind::Other(false), |id| Kind::Cancel(id.to_string())),
        (Some(_), None) => Kind::Other(false),
        (None, Some(_)) if m.contains_key("result") || m.contains_key("error") => {
            Kind::Other(false)
        }
        _ => Kind::Other(true),
    }
}

/// Copies a stream's messages to stdout until it ends.
async fn forward(mut rx: mpsc::Receiver<Bytes>, tx: mpsc::Sender<Bytes>) {
    while let Some(m) = rx.recv().await {
        if tx.send(m).await.is_err() {
            return;
        }
    }
}

/// Writes each message as one line.
async fn write_lines<W: AsyncWrite + Unpin>(mut out: W, mut rx: mpsc::Receiver<Bytes>) {
    while let Some(m) = rx.recv().await {
        let mut line = m.to_vec();
        // Whitespace between JSON tokens; inside strings newlines are escaped.
        for b in &mut line {
            if *b == b'\n' || *b == b'\r' {
                *b = b' ';
            }
        }
        line.push(b'\n');
        if out.write_all(&line).await.is_err() || out.flush().await.is_err() {
            tracing::debug!("stdout closed; no more answers can be written");
            return;
        }
    }
}

enum Line {
    Message(Vec<u8>),
    TooLong,
    End,
}

/// Newline-delimited messages, each at most `max` bytes; a longer one is
/// skipped to its newline without being kept.
struct Lines<R> {
    input: R,
    max: usize,
}

impl<R: AsyncBufRead + Unpin> Lines<R> {
    fn new(input: R, max: usize) -> Lines<R> {
        Lines { input, max }
    }

    async fn next(&mut self) -> Line {
        let mut line = Vec::new();
        let mut too_long = false;
        loop {
            let buf = match self.input.fill_buf().await {
                Ok(b) => b,
                Err(_) => return Line::End,
            };
            if buf.is_empty() {
                // EOF: a last line without a newline still counts.
                return match (too_long, line.is_empty()) {
                    (true, _) => Line::TooLong,
                    (false, true) => Line::End,
                    (false, false) => Line::Message(line),
                };
            }
            let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            if !too_long {
                if line.len() + chunk.len() > self.max {
                    too_long = true;
                    line = Vec::new();
                } else {
                    line.extend_from_slice(chunk);
                }
            }
            let used = done.unwrap_or(buf.len());
            self.input.consume(used);
            if done.is_some() {
                return if too_long {
                    Line::TooLong
                } else {
                    Line::Message(line)
                };
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_bounded_and_a_long_one_is_skipped() {
        let input: &[u8] = b"{\"a\":1}\n0123456789abcdef\r\n{}\nlast";
        let mut lines = Lines::new(input, 10);
        let mut got = Vec::new();
        loop {
            match lines.next().await {
                Line::Message(m) => got.push(String::from_utf8(m).unwrap()),
                Line::TooLong => got.push("<too long>".into()),
                Line::End => break,
            }
        }
        assert_eq!(got, ["{\"a\":1}", "<too long>", "{}", "last"]);
    }

    #[test]
    fn the_principal_defaults_to_the_os_user() {
        assert_eq!(local_principal(Some("ops-laptop")), "ops-laptop");
        assert!(!local_principal(None).is_empty());
    }
}
