//! The upstream's GET stream: notifications outside any call (`list_changed`,
//! resource updates), kept open while the session lives.
//!
//! Invariants: reopened with a backoff (from [`REOPEN_INITIAL`], doubling to
//! [`REOPEN_MAX`], reset once a stream lasted [`REOPEN_RESET_AFTER`]), so an
//! upstream that ends it at once is asked at most every few seconds; the task
//! is the wire's (it ends with the connection).
//!
//! Not here: reading the stream (`reply::read_sse`).

use http::Method;
use manifold_protocol::methods as m;
use std::sync::Arc;
use std::time::Duration;

use super::link::HttpLink;
use super::reply::read_sse;

/// The first wait before reopening a GET stream the upstream closed.
const REOPEN_INITIAL: Duration = Duration::from_millis(500);
/// The longest wait before reopening it.
const REOPEN_MAX: Duration = Duration::from_secs(30);
/// A stream that lasted this long resets the wait.
const REOPEN_RESET_AFTER: Duration = Duration::from_secs(30);

/// Keeps the upstream's GET stream open for notifications outside any call,
/// reconnecting with backoff while the session lives.
pub(super) fn start(link: &Arc<HttpLink>) {
    let l = link.clone();
    link.wire.spawn_owned(async move {
        let s = l.wire.clone();
        let mut backoff =
            manifold_foundation::backoff::Backoff::new(REOPEN_INITIAL, REOPEN_MAX);
        loop {
            let opened = tokio::time::Instant::now();
            let resp = match l.send(Method::GET, None, &[], None).await {
                Ok(r) => r,
                Err(_) => return, // the supervisor notices the outage on the next call
            };
            let ok_sse = resp.status().is_success()
                && resp
                    .headers()
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|c| c.starts_with(m::CONTENT_TYPE_SSE));
            if !ok_sse {
                tracing::debug!(upstream = %s.upstream(), status = %resp.status(), "upstream offers no GET stream");
                return;
            }
            if let Err(e) = read_sse(&l, resp.into_body(), None).await {
                tracing::debug!(upstream = %s.upstream(), error = %e, "upstream GET stream ended");
            }
            if opened.elapsed() > REOPEN_RESET_AFTER {
                backoff.reset();
            }
            tokio::time::sleep(backoff.next_pause()).await;
        }
    });
}
