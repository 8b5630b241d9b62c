//! Response bodies: a whole JSON message, or an SSE stream fed by a bounded channel
//! with keep-alive comments.

use bytes::Bytes;
use http_body::Frame;
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full};
use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::sync::mpsc;

pub(crate) type Body = UnsyncBoxBody<Bytes, Infallible>;

pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

pub(crate) fn empty() -> Body {
    full(Bytes::new())
}

/// One JSON-RPC message as an SSE `message` event.
pub(crate) fn sse_message(json: &[u8]) -> Bytes {
    manifold_protocol::sse::encode_event(None, None, &String::from_utf8_lossy(json))
}

/// An SSE body: yields what the channel yields, a keep-alive comment when it is
/// quiet, and ends when every sender is gone.
pub(crate) struct SseBody {
    rx: mpsc::Receiver<Bytes>,
    keepalive: tokio::time::Interval,
}

impl SseBody {
    pub(crate) fn boxed(rx: mpsc::Receiver<Bytes>) -> Body {
        let mut keepalive = tokio::time::interval(crate::SSE_KEEPALIVE);
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
            Poll::Ready(Some(b)) => return Poll::Ready(Some(Ok(Frame::data(b)))),
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
