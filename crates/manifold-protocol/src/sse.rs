//! Server-Sent Events codec with size limits.
//!
//! [`SseDecoder`] is an incremental parser following the WHATWG EventSource
//! "event stream interpretation" rules: lines end with LF, CR or CRLF (a CRLF
//! split across chunks counts once), `field: value` lines (one space after the
//! colon is dropped), `:` comment lines, a line without a colon is a field
//! with an empty value, fields `data`, `event`, `id` (ignored if it contains
//! NUL) and `retry` (digits only), and a blank line dispatches the event. A
//! UTF-8 BOM at the start of the stream is skipped.
//!
//! Deviations, on purpose:
//!
//! - An event is dispatched whenever its block contained any field that took
//!   effect, even with empty data — MCP servers send "priming" events made of
//!   an `id:` and an empty `data:`. Callers skip empty-data events themselves.
//! - Invalid UTF-8 is an error ([`SseError::InvalidUtf8`]) rather than being
//!   replaced with U+FFFD.
//! - [`SseEvent::id`] is the `id` set in the event's own block, not the
//!   persistent last-event-ID buffer; that is [`SseDecoder::last_event_id`].
//!
//! Invariants: memory is bounded — the pending partial line plus the event
//! being assembled never exceed `max_event_bytes`, otherwise `feed` fails with
//! [`SseError::EventTooLarge`]. After any error the decoder is poisoned and
//! returns the same error for every later chunk. Nothing here panics on any
//! input.
//!
//! Not done here: I/O, reconnection or timers (callers honour `retry` and
//! send `Last-Event-ID` themselves), and dispatch of an unterminated event at
//! end of stream (discarded, per spec).

use bytes::Bytes;

/// Default cap on one event (partial line plus assembled fields).
pub const DEFAULT_MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `id` field of this event's block, if it had one.
    pub id: Option<String>,
    /// The `event` type; `None` when absent or empty (i.e. `"message"`).
    pub event: Option<String>,
    /// The `data` lines joined with `\n`.
    pub data: String,
    /// A valid `retry` field of this event's block, in milliseconds.
    pub retry: Option<u64>,
}

/// Why a stream cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error("SSE event exceeds the {limit}-byte limit")]
    EventTooLarge { limit: usize },
    #[error("SSE stream is not valid UTF-8")]
    InvalidUtf8,
}

/// Incremental SSE parser; see the module docs.
#[derive(Debug, Clone)]
pub struct SseDecoder {
    max_event_bytes: usize,
    /// Bytes of the current, unterminated line.
    line: Vec<u8>,
    /// The previous chunk ended with CR: skip an LF that starts the next one.
    pending_cr: bool,
    /// No line has been completed yet (a BOM may still lead the stream).
    at_start: bool,
    /// The event block being assembled.
    block: SseEvent,
    /// Some field of the block took effect.
    seen: bool,
    last_event_id: Option<String>,
    failed: Option<SseError>,
}

impl Default for SseDecoder {
    fn default() -> Self {
        Self::new(DEFAULT_MAX_EVENT_BYTES)
    }
}

impl SseDecoder {
    /// A decoder that rejects events larger than `max_event_bytes`.
    pub fn new(max_event_bytes: usize) -> Self {
        Self {
            max_event_bytes,
            line: Vec::new(),
            pending_cr: false,
            at_start: true,
            block: SseEvent::default(),
            seen: false,
            last_event_id: None,
            failed: None,
        }
    }

    /// Feeds bytes; returns the events completed by this chunk. Memory is
    /// bounded: the pending line plus the event being assembled never exceed
    /// `max_event_bytes` (an error otherwise, and the decoder is poisoned).
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let mut events = Vec::new();
        match self.feed_inner(chunk, &mut events) {
            Ok(()) => Ok(events),
            Err(e) => {
                self.failed = Some(e.clone());
                self.line = Vec::new();
                self.block = SseEvent::default();
                Err(e)
            }
        }
    }

    /// The last event id seen (it persists across events, per spec), for
    /// `Last-Event-ID` resumption. `None` before any id, or after an empty
    /// `id:` reset it.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref().filter(|id| !id.is_empty())
    }

    fn feed_inner(&mut self, mut chunk: &[u8], events: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if chunk.is_empty() {
            return Ok(());
        }
        if std::mem::take(&mut self.pending_cr) {
            if let Some(rest) = chunk.strip_prefix(b"\n") {
                chunk = rest;
            }
        }
        while !chunk.is_empty() {
            let Some(end) = chunk.iter().position(|&b| b == b'\n' || b == b'\r') else {
                self.reserve(chunk.len())?;
                self.line.extend_from_slice(chunk);
                break;
            };
            self.reserve(end)?;
            let terminator_len = match chunk.get(end..end + 2) {
                Some(b"\r\n") => 2,
                None if chunk[end] == b'\r' => {
                    self.pending_cr = true;
                    1
                }
                _ => 1,
            };
            if self.line.is_empty() {
                self.process_line(&chunk[..end], events)?;
            } else {
                let mut line = std::mem::take(&mut self.line);
                line.extend_from_slice(&chunk[..end]);
                let result = self.process_line(&line, events);
                line.clear();
                self.line = line;
                result?;
            }
            chunk = &chunk[end + terminator_len..];
        }
        Ok(())
    }

    /// Checks that `more` line bytes fit in the budget.
    fn reserve(&self, more: usize) -> Result<(), SseError> {
        let used = self.block.data.len()
            + self.block.event.as_ref().map_or(0, String::len)
            + self.block.id.as_ref().map_or(0, String::len)
            + self.line.len();
        if used.saturating_add(more) > self.max_event_bytes {
            Err(SseError::EventTooLarge {
                limit: self.max_event_bytes,
            })
        } else {
            Ok(())
        }
    }

    fn process_line(
        &mut self,
        mut line: &[u8],
        events: &mut Vec<SseEvent>,
    ) -> Result<(), SseError> {
        if std::mem::take(&mut self.at_start) {
            line = line.strip_prefix(BOM).unwrap_or(line);
        }
        if line.is_empty() {
            self.dispatch(events);
            return Ok(());
        }
        let line = std::str::from_utf8(line).map_err(|_| SseError::InvalidUtf8)?;
        let (field, value) = match line.split_once(':') {
            Some(("", _)) => return Ok(()), // comment
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "data" => {
                self.block.data.push_str(value);
                self.block.data.push('\n');
            }
            "event" => self.block.event = Some(value.to_owned()).filter(|e| !e.is_empty()),
            "id" if !value.contains('\0') => {
                self.block.id = Some(value.to_owned());
                self.last_event_id = Some(value.to_owned());
            }
            "retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                match value.parse() {
                    Ok(ms) => self.block.retry = Some(ms),
                    Err(_) => return Ok(()), // overflow: ignored like any invalid retry
                }
            }
            _ => return Ok(()), // unknown or invalid field: ignored
        }
        self.seen = true;
        Ok(())
    }

    fn dispatch(&mut self, events: &mut Vec<SseEvent>) {
        let mut event = std::mem::take(&mut self.block);
        if std::mem::take(&mut self.seen) {
            if event.data.ends_with('\n') {
                event.data.pop();
            }
            events.push(event);
        }
    }
}

/// Encodes one event: optional `id:` and `event:` lines, one `data:` line per
/// line of `data`, and a blank terminating line. Line breaks cannot be carried
/// inside SSE fields: CR, LF and CRLF in `data` all become line splits (so a
/// decoder returns them as `\n`), and CR, LF (and NUL, in `id`) are dropped
/// from `id` and `event`.
pub fn encode_event(id: Option<&str>, event: Option<&str>, data: &str) -> Bytes {
    let mut out = String::with_capacity(data.len() + 32);
    if let Some(id) = id {
        out.push_str("id: ");
        out.extend(id.chars().filter(|c| !matches!(c, '\r' | '\n' | '\0')));
        out.push('\n');
    }
    if let Some(event) = event {
        out.push_str("event: ");
        out.extend(event.chars().filter(|c| !matches!(c, '\r' | '\n')));
        out.push('\n');
    }
    for line in split_lines(data) {
        out.push_str(if line.is_empty() { "data:" } else { "data: " });
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

/// A comment (keep-alive): `": {text}\n\n"`; a multi-line `text` becomes
/// one comment line per line.
pub fn encode_comment(text: &str) -> Bytes {
    let mut out = String::with_capacity(text.len() + 4);
    for line in split_lines(text) {
        out.push_str(": ");
        out.push_str(line);
        out.push('\n');
    }
    out.push('\n');
    Bytes::from(out)
}

/// Splits on CRLF, CR and LF; always yields at least one (maybe empty) line.
fn split_lines(s: &str) -> impl Iterator<Item = &str> {
    let mut rest = Some(s);
    std::iter::from_fn(move || {
        let current = rest?;
        match current.find(['\r', '\n']) {
            Some(i) => {
                let skip = if current[i..].starts_with("\r\n") {
                    2
                } else {
                    1
                };
                rest = current.get(i + skip..);
                current.get(..i)
            }
            None => {
                rest = None;
                Some(current)
            }
        }
    })
}

#[cfg(test)]
mod tests;
