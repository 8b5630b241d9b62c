//! Response bodies: a whole JSON message, or an SSE stream that frames each
//! JSON-RPC message of a [`Reply::Stream`](crate::reply::Reply::Stream) as an SSE
//! `message` event, with keep-alive comments while it is quiet.
//!
//! Invariants: the stream ends when every sender of its channel is gone; a
//! keep-alive comment goes out after [`SSE_KEEPALIVE`] of quiet.
//!
//! Not here: what the messages are (the pipeline).

use bytes::Bytes;
use http_body::Frame;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::reply::Messages;

/// Keep-alive comment interval on open SSE streams.
pub const SSE_KEEPALIVE: Duration = Duration::from_secs(25);

pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

pub(crate) fn empty() -> Body {
    full(Bytes::new())
}

/// One JSON-RPC message as an SSE `message` event.
fn event(json: &[u8]) -> Bytes {
    manifold_protocol::sse::encode_event(None, None, &String::from_utf8_lossy(json))
}

/// An SSE body: one event per message the channel yields, a keep-alive comment
/// when it is quiet, and the end when every sender is gone.
pub(crate) struct SseBody {
    rx: Messages,
    keepalive: tokio::time::Interval,
}

impl SseBody {
    pub(crate) fn boxed(rx: Messages) -> Body {
        let mut keepalive = tokio::time::interval(SSE_KEEPALIVE);
        keepalive.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        keepalive.reset();
        SseBody { rx, keepalive }.boxed_unsync()
    }
}

impl http_body::Body for SseBody {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Infallible>>> {
        match self.rx.poll_recv(cx) {
            Poll::Ready(Some(msg)) => return Poll::Ready(Some(Ok(Frame::data(event(&msg))))),
            Poll::Ready(None) => return Poll::Ready(None),
            Poll::Pending => {}
        }
        if self.keepalive.poll_tick(cx).is_ready() {
            return Poll::Ready(Some(Ok(Frame::data(
                manifold_protocol::sse::encode_comment("keep-alive"),
            ))));
        }
        Poll::Pending
    }
}
