//! [`Reply`]: what the pipeline answers a request with — one JSON-RPC message, a
//! stream of them, or nothing — before any framing. The front door frames it: HTTP
//! as a JSON body or an SSE stream, stdio as lines, the operator as a value.
//!
//! Invariants: every message is one complete JSON-RPC text (no SSE `data:`
//! prefix, no trailing newline); a stream ends when its sender is dropped.
//!
//! Not here: HTTP headers and bodies (`front`), deciding statuses (`refusal`).

use bytes::Bytes;
use http::StatusCode;
use tokio::sync::mpsc;

/// A stream of JSON-RPC messages, each one complete JSON text.
pub(crate) type Messages = mpsc::Receiver<Bytes>;

/// The answer to one request.
#[derive(Debug)]
pub(crate) enum Reply {
    /// One JSON-RPC message: a result or an error.
    Message {
        /// The HTTP status it travels with (the refusal table's choice for
        /// errors; 200 otherwise). Front doors without statuses ignore it.
        status: StatusCode,
        bytes: Bytes,
        /// A session this reply starts (`initialize`): HTTP sends it as
        /// `Mcp-Session-Id`.
        session: Option<String>,
        /// Manifold refused the request itself (a [`Refusal`](crate::refusal::Refusal)),
        /// as opposed to answering it or relaying an upstream's answer.
        refused: bool,
        /// When to try again (a rate limit): HTTP sends it as `Retry-After`.
        retry_after: Option<std::time::Duration>,
    },
    /// Related messages, then (for a call) its response; ends when the sender
    /// drops.
    Stream(Messages),
    /// A notification or a client's response was taken; nothing to answer
    /// (HTTP 202).
    Accepted,
    /// The session was ended on the client's request (HTTP 200, no body).
    Ended,
}

impl Reply {
    /// A result or error message with status 200.
    pub(crate) fn ok(bytes: impl Into<Bytes>) -> Reply {
        Reply::relayed(StatusCode::OK, bytes)
    }

    /// A relayed answer with the status the era gives it
    /// ([`status_of_relayed`](crate::refusal::status_of_relayed)).
    pub(crate) fn relayed(status: StatusCode, bytes: impl Into<Bytes>) -> Reply {
        Reply::Message {
            status,
            bytes: bytes.into(),
            session: None,
            refused: false,
            retry_after: None,
        }
    }

    /// A stream that ends at once: the answer to a request the client
    /// cancelled while it waited (a cancelled request gets no response).
    pub(crate) fn empty_stream() -> Reply {
        let (_, rx) = mpsc::channel(1);
        Reply::Stream(rx)
    }

    /// The message's bytes (none for the other forms).
    pub(crate) fn into_bytes(self) -> Bytes {
        match self {
            Reply::Message { bytes, .. } => bytes,
            _ => Bytes::new(),
        }
    }

    /// Bytes of the message, 0 for the other forms.
    pub(crate) fn len(&self) -> usize {
        match self {
            Reply::Message { bytes, .. } => bytes.len(),
            _ => 0,
        }
    }
}
