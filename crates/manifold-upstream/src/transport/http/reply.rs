//! Decoding the upstream's reply to a POST: a JSON body, or an SSE stream read
//! until the call's response arrives — priming events (an id with empty data)
//! skipped, a stream the upstream closes early resumed with GET +
//! `Last-Event-ID` (SEP-1699 polling), at most [`MAX_RESUMPTIONS`] times. An
//! HTTP error whose body is a JSON-RPC error with the call's id still answers
//! it.
//!
//! Invariants: every body is bounded (`limits.max_message_bytes`, an SSE event
//! by the same, an error body by [`MAX_ERROR_BODY`]); what arrives is handed to
//! the wire (`Wire::dispatch`), never interpreted here but for the one code
//! that means Manifold's revision is gone (-32022: re-probe).
//!
//! Not here: what the messages mean (`wire`, `router`).

use http::{Method, StatusCode};
use http_body_util::{BodyExt, Limited};
use manifold_protocol::methods as m;
use manifold_protocol::sse::SseDecoder;
use manifold_protocol::ErrorCode;
use std::sync::Arc;
use std::time::Duration;

use super::link::HttpLink;
use crate::error::UpstreamError;
use crate::router::Source;

/// Times a broken response stream is resumed with `Last-Event-ID` before the call
/// fails.
pub const MAX_RESUMPTIONS: usize = 5;
/// Longest `retry:` delay honoured before resuming.
pub const MAX_RETRY_DELAY: Duration = Duration::from_secs(5);
/// The most of an HTTP error answer's body read (its message, or a JSON-RPC
/// error that still answers the call).
pub const MAX_ERROR_BODY: usize = 64 * 1024;

pub(super) enum ReplyError {
    Upstream(UpstreamError),
    Status(StatusCode, String),
}

pub(super) async fn read_reply(
    l: &Arc<HttpLink>,
    resp: http::Response<hyper::body::Incoming>,
    id: u64,
) -> Result<(), ReplyError> {
    let session = &l.wire;
    let name = session.upstream().clone();
    let status = resp.status();
    let ctype = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if !status.is_success() {
        let body = Limited::new(resp.into_body(), MAX_ERROR_BODY)
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        // A JSON-RPC error body with our id still answers the call.
        let text = String::from_utf8_lossy(&body).to_string();
        if ctype.starts_with(m::CONTENT_TYPE_JSON) && text.contains("\"error\"") {
            if session.is_stateless()
                && ErrorCode::of_message(&text) == Some(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION)
            {
                // Our revision is no longer supported: re-probe after this answer.
                tracing::warn!(upstream = %name, "the upstream no longer supports Manifold's 2026-07-28 requests (-32022); reconnecting to probe again");
                session.closed.cancel();
            }
            session.dispatch(&text, Source::Call(id), &l.outbound());
            if !session.router.is_pending(id) {
                return Ok(());
            }
        }
        return Err(ReplyError::Status(status, text));
    }
    if ctype.starts_with(m::CONTENT_TYPE_SSE) {
        return read_sse(l, resp.into_body(), Some(id))
            .await
            .map_err(ReplyError::Upstream);
    }
    let body = Limited::new(resp.into_body(), l.max_message)
        .collect()
        .await
        .map_err(|e| {
            ReplyError::Upstream(UpstreamError::protocol(
                &name,
                format!("reading the reply failed: {e}"),
            ))
        })?
        .to_bytes();
    let text = std::str::from_utf8(&body).map_err(|_| {
        ReplyError::Upstream(UpstreamError::protocol(&name, "the reply is not UTF-8"))
    })?;
    if !text.trim().is_empty() {
        session.dispatch(text, Source::Call(id), &l.outbound());
    }
    if session.router.is_pending(id) {
        return Err(ReplyError::Upstream(UpstreamError::protocol(
            &name,
            "the reply did not answer the request",
        )));
    }
    Ok(())
}

/// Reads an SSE reply until the call's response arrives, resuming with
/// `Last-Event-ID` when the upstream closes the stream early (SEP-1699 polling).
pub(super) async fn read_sse(
    l: &Arc<HttpLink>,
    mut body: hyper::body::Incoming,
    context: Option<u64>,
) -> Result<(), UpstreamError> {
    let session = &l.wire;
    let name = session.upstream().clone();
    let out = l.outbound();
    let mut decoder = SseDecoder::new(l.max_message);
    let mut resumptions = 0;
    let mut retry = Duration::from_millis(100);
    loop {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                UpstreamError::protocol(&name, format!("the SSE stream failed: {e}"))
            })?;
            let Ok(chunk) = frame.into_data() else {
                continue;
            };
            let events = decoder
                .feed(&chunk)
                .map_err(|e| UpstreamError::protocol(&name, e.to_string()))?;
            for ev in events {
                if let Some(r) = ev.retry {
                    retry = Duration::from_millis(r).min(MAX_RETRY_DELAY);
                }
                if ev.data.is_empty() {
                    continue; // priming event or keep-alive
                }
                let source = context.map_or(Source::Standalone, Source::Call);
                session.dispatch(&ev.data, source, &out);
            }
            if let Some(id) = context {
                if !session.router.is_pending(id) {
                    return Ok(());
                }
            }
        }
        let Some(id) = context else { return Ok(()) };
        if !session.router.is_pending(id) {
            return Ok(());
        }
        let Some(last) = decoder.last_event_id().map(str::to_string) else {
            return Err(UpstreamError::protocol(
                &name,
                "the SSE stream ended before the response",
            ));
        };
        if resumptions >= MAX_RESUMPTIONS {
            return Err(UpstreamError::protocol(
                &name,
                "the SSE stream kept ending before the response",
            ));
        }
        resumptions += 1;
        tokio::time::sleep(retry).await;
        let resp = l.send(Method::GET, None, &[], Some(&last)).await?;
        if !resp.status().is_success() {
            return Err(UpstreamError::protocol(
                &name,
                format!("resuming the SSE stream got HTTP {}", resp.status()),
            ));
        }
        body = resp.into_body();
    }
}
