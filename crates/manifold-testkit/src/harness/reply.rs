//! What the client returns: [`RawReply`] (bytes), [`Reply`] (a whole reply with
//! its JSON-RPC messages) and [`MessageStream`] (messages read as they arrive).

use std::collections::VecDeque;
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use bytes::Bytes;
use http::header::{HeaderMap, CONTENT_TYPE};
use http::{Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use manifold_protocol::sse::SseDecoder;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio::time::Instant;

/// Default bound on any single wait (a reply, one stream message, readiness).
pub const WAIT: Duration = Duration::from_secs(10);

/// The `Accept` header a Streamable-HTTP client sends with every POST.
pub const ACCEPT_BOTH: &str = "application/json, text/event-stream";

pub(super) const SSE: &str = "text/event-stream";

pub(super) fn content_type_of(headers: &HeaderMap) -> String {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned()
}

fn is_sse(content_type: &str) -> bool {
    content_type.to_ascii_lowercase().starts_with(SSE)
}

/// An HTTP reply, unparsed.
#[derive(Debug, Clone)]
pub struct RawReply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl RawReply {
    pub fn content_type(&self) -> String {
        content_type_of(&self.headers)
    }

    /// The body as one JSON value.
    pub fn json(&self) -> Result<Value> {
        serde_json::from_slice(&self.body)
            .with_context(|| format!("HTTP {} body is not JSON: {}", self.status, self.text()))
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

impl std::fmt::Display for RawReply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "HTTP {} [{}] {}",
            self.status,
            self.content_type(),
            self.text()
        )
    }
}

/// A whole reply to a POST, with its JSON-RPC messages in order: one for an
/// `application/json` reply, one per non-empty SSE event for `text/event-stream`.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub content_type: String,
    /// The body exactly as received.
    pub body: Bytes,
    /// Each message's JSON text exactly as received.
    pub raw_messages: Vec<String>,
    /// `raw_messages`, parsed (member order kept).
    pub messages: Vec<Value>,
}

impl Reply {
    /// Parses a raw reply. JSON bodies are one message; SSE bodies one message per
    /// event with data (priming events are skipped); other bodies none.
    pub fn from_raw(raw: RawReply) -> Result<Reply> {
        let content_type = raw.content_type();
        let raw_messages = if is_sse(&content_type) {
            let mut decoder = SseDecoder::default();
            decoder
                .feed(&raw.body)?
                .into_iter()
                .filter(|e| !e.data.is_empty())
                .map(|e| e.data)
                .collect()
        } else if content_type.to_ascii_lowercase().contains("json") && !raw.body.is_empty() {
            vec![String::from_utf8(raw.body.to_vec()).context("JSON body is not UTF-8")?]
        } else {
            Vec::new()
        };
        let messages = raw_messages
            .iter()
            .map(|t| serde_json::from_str(t).with_context(|| format!("message is not JSON: {t}")))
            .collect::<Result<Vec<Value>>>()?;
        Ok(Reply {
            status: raw.status,
            headers: raw.headers,
            content_type,
            body: raw.body,
            raw_messages,
            messages,
        })
    }

    pub fn is_sse(&self) -> bool {
        is_sse(&self.content_type)
    }

    /// The last message carrying `result` or `error` (the response).
    pub fn response(&self) -> Result<&Value> {
        self.messages
            .iter()
            .rev()
            .find(|m| m.get("result").is_some() || m.get("error").is_some())
            .ok_or_else(|| anyhow!("no JSON-RPC response in {self}"))
    }

    /// The response's `result`; an error if the response is an error.
    pub fn result(&self) -> Result<&Value> {
        let r = self.response()?;
        r.get("result")
            .ok_or_else(|| anyhow!("expected a result, got {r}"))
    }

    /// The response's `error` object; an error if the response is a result.
    pub fn error(&self) -> Result<&Value> {
        let r = self.response()?;
        r.get("error")
            .ok_or_else(|| anyhow!("expected an error, got {r}"))
    }

    /// The exact text of the response's `result` member, as the server wrote it.
    pub fn raw_result(&self) -> Result<String> {
        #[derive(serde::Deserialize)]
        struct Probe {
            result: Option<Box<RawValue>>,
        }
        for text in self.raw_messages.iter().rev() {
            let probe: Probe = serde_json::from_str(text)?;
            if let Some(r) = probe.result {
                return Ok(r.get().to_owned());
            }
        }
        bail!("no result in {self}")
    }

    /// Notifications (a method, no id), in order.
    pub fn notifications(&self) -> Vec<&Value> {
        self.messages
            .iter()
            .filter(|m| m.get("method").is_some() && m.get("id").is_none())
            .collect()
    }

    /// Server→client requests (a method and an id), in order.
    pub fn requests(&self) -> Vec<&Value> {
        self.messages
            .iter()
            .filter(|m| m.get("method").is_some() && m.get("id").is_some())
            .collect()
    }
}

impl std::fmt::Display for Reply {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "HTTP {} [{}] {}",
            self.status,
            self.content_type,
            String::from_utf8_lossy(&self.body)
        )
    }
}

/// A reply read incrementally: the messages of an SSE body as they arrive (or the
/// one message of a JSON body). Each wait is bounded by the stream's timeout.
pub struct MessageStream {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub content_type: String,
    body: Option<Incoming>,
    sse: bool,
    decoder: SseDecoder,
    /// A non-SSE body, collected until it ends.
    buf: Vec<u8>,
    pending: VecDeque<String>,
    timeout: Duration,
    what: String,
}

/// A POST reply read message by message (see [`McpClient::request_streaming`]).
pub type StreamingReply = MessageStream;

impl MessageStream {
    pub(super) fn new(resp: Response<Incoming>, timeout: Duration, what: String) -> MessageStream {
        let (parts, body) = resp.into_parts();
        let content_type = content_type_of(&parts.headers);
        MessageStream {
            status: parts.status,
            sse: is_sse(&content_type),
            headers: parts.headers,
            content_type,
            body: Some(body),
            decoder: SseDecoder::default(),
            buf: Vec::new(),
            pending: VecDeque::new(),
            timeout,
            what,
        }
    }

    pub fn is_sse(&self) -> bool {
        self.sse
    }

    /// Changes the bound on each later wait.
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout;
    }

    /// The next message, `None` once the body ended; an error if nothing arrives
    /// within the timeout.
    pub async fn next(&mut self) -> Result<Option<Value>> {
        let deadline = Instant::now() + self.timeout;
        self.next_until(deadline).await
    }

    /// The next message's exact text.
    pub async fn next_raw(&mut self) -> Result<Option<String>> {
        let deadline = Instant::now() + self.timeout;
        self.next_raw_until(deadline).await
    }

    /// The next message; an error if the body ends first.
    pub async fn expect_next(&mut self) -> Result<Value> {
        self.next()
            .await?
            .ok_or_else(|| anyhow!("{}: the stream ended", self.what))
    }

    /// Skips messages until one satisfies `pred`; an error if the stream ends or
    /// the timeout passes first.
    pub async fn wait_for(&mut self, mut pred: impl FnMut(&Value) -> bool) -> Result<Value> {
        let deadline = Instant::now() + self.timeout;
        loop {
            match self.next_until(deadline).await? {
                Some(m) if pred(&m) => return Ok(m),
                Some(_) => {}
                None => bail!("{}: the stream ended before the awaited message", self.what),
            }
        }
    }

    /// Every remaining message until the body ends (each wait bounded).
    pub async fn rest(&mut self) -> Result<Vec<Value>> {
        let mut out = Vec::new();
        while let Some(m) = self.next().await? {
            out.push(m);
        }
        Ok(out)
    }

    async fn next_until(&mut self, deadline: Instant) -> Result<Option<Value>> {
        match self.next_raw_until(deadline).await? {
            Some(t) => Ok(Some(
                serde_json::from_str(&t).with_context(|| format!("message is not JSON: {t}"))?,
            )),
            None => Ok(None),
        }
    }

    async fn next_raw_until(&mut self, deadline: Instant) -> Result<Option<String>> {
        match self.poll_until(deadline).await? {
            Next::Message(m) => Ok(Some(m)),
            Next::Ended => Ok(None),
            Next::TimedOut => bail!("{}: no message within {:?}", self.what, self.timeout),
        }
    }

    /// Asserts that no message `unwanted` picks arrives within `within` (others
    /// are skipped; the stream ending is fine: nothing more can come). An error
    /// if one arrives, or if the body fails — never a pass on a broken stream.
    pub async fn nothing_within(
        &mut self,
        within: Duration,
        mut unwanted: impl FnMut(&Value) -> bool,
    ) -> Result<()> {
        let deadline = Instant::now() + within;
        loop {
            match self.poll_until(deadline).await? {
                Next::Message(t) => {
                    let m: Value = serde_json::from_str(&t)
                        .with_context(|| format!("message is not JSON: {t}"))?;
                    if unwanted(&m) {
                        bail!("{}: {m} arrived within {within:?}", self.what);
                    }
                }
                Next::Ended | Next::TimedOut => return Ok(()),
            }
        }
    }

    async fn poll_until(&mut self, deadline: Instant) -> Result<Next> {
        loop {
            if let Some(m) = self.pending.pop_front() {
                return Ok(Next::Message(m));
            }
            let Some(body) = self.body.as_mut() else {
                return Ok(Next::Ended);
            };
            let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
                Err(_) => return Ok(Next::TimedOut),
                Ok(None) => {
                    self.body = None;
                    if !self.sse && !self.buf.is_empty() {
                        let text = String::from_utf8(std::mem::take(&mut self.buf))
                            .context("body is not UTF-8")?;
                        self.pending.push_back(text);
                    }
                    continue;
                }
                Ok(Some(frame)) => frame.with_context(|| format!("{}: body error", self.what))?,
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if self.sse {
                for event in self.decoder.feed(&data)? {
                    if !event.data.is_empty() {
                        self.pending.push_back(event.data);
                    }
                }
            } else {
                self.buf.extend_from_slice(&data);
            }
        }
    }
}

/// What a bounded wait on the body gave.
enum Next {
    Message(String),
    Ended,
    TimedOut,
}
