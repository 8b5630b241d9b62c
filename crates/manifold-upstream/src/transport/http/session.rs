//! The work of one POST in the upstream's session: sent, its reply read and
//! dispatched, the upstream's `Mcp-Session-Id` kept, a transparent
//! re-`initialize` when the upstream answers 404 for it, a check of the
//! session when a request fails (the era probe: `crate::probe`), and DELETE
//! when the transport shuts down.
//!
//! Invariants: a call's reading is bounded by its timeout plus
//! [`STREAM_GRACE`]; one client's bad request never resets an upstream every
//! client shares: only Manifold's own check failing reconnects.
//!
//! Not here: building and sending the request (`client`), decoding the reply
//! (`reply`).

use bytes::Bytes;
use http::{Method, StatusCode};
use manifold_protocol::methods as m;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::super::Outgoing;
use super::client::on_behalf;
use super::link::HttpLink;
use super::reply::{read_reply, ReplyError};
use crate::error::UpstreamError;
use crate::message::{BoxFuture, Outbound};
use crate::probe;

/// Extra time a POST's reader may outlive its call's timeout.
pub const STREAM_GRACE: Duration = Duration::from_secs(5);
/// Longest wait for the upstream to end its session (DELETE) on shutdown.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);

impl Outbound for HttpLink {
    fn send_message(&self, bytes: Vec<u8>) -> BoxFuture<'_, ()> {
        Box::pin(async move {
            match tokio::time::timeout(crate::limits::SEND_TIMEOUT, self.post_message(bytes)).await
            {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    tracing::warn!(upstream = %self.wire.upstream(), error = %e, "sending to the upstream failed")
                }
                Err(_) => {
                    tracing::warn!(upstream = %self.wire.upstream(), bound = ?crate::limits::SEND_TIMEOUT,
                    "the upstream did not take a message in time; dropped")
                }
            }
        })
    }
}

impl HttpLink {
    /// POSTs a notification or response; the upstream answers 202.
    async fn post_message(&self, bytes: Vec<u8>) -> Result<(), UpstreamError> {
        let resp = self
            .send(Method::POST, Some(Bytes::from(bytes)), &[], None)
            .await?;
        if !resp.status().is_success() {
            return Err(UpstreamError::protocol(
                self.wire.upstream(),
                format!("answered {} to a notification", resp.status()),
            ));
        }
        Ok(())
    }

    /// Ends the upstream session (DELETE), best effort.
    pub(super) async fn shutdown(&self) {
        if self.session_id.lock().is_none() {
            return;
        }
        let del = self.send(Method::DELETE, None, &[], None);
        let _ = tokio::time::timeout(DELETE_TIMEOUT, del).await;
    }

    /// Starts a new upstream session after the upstream forgot ours (404).
    async fn reinitialize(&self, stale: Option<String>) -> Result<(), UpstreamError> {
        let _guard = self.reinit.lock().await;
        if *self.session_id.lock() != stale {
            return Ok(()); // someone else already did
        }
        tracing::info!(upstream = %self.wire.upstream(), "upstream session expired (404); re-initializing");
        *self.session_id.lock() = None;
        self.wire.reinitialize().await
    }
}

/// The work of one POST: send it, read the reply (JSON or SSE), dispatch what comes
/// back. The call polls this future inline, so a forwarded call costs no extra
/// task and no cross-thread hand-off; dropping the call aborts it.
pub(super) async fn drive_call(l: Arc<HttpLink>, out: Outgoing) {
    let limit = out.timeout + STREAM_GRACE;
    let wire = l.wire.clone();
    let id = out.id;
    let run = run_call(&l, id, &out.method, out.bytes, &out.headers);
    tokio::select! {
        // The connection's end fails every call; nothing more to read.
        _ = wire.closed.cancelled() => {}
        res = tokio::time::timeout(limit, run) => match res {
            Ok(Ok(())) => {}
            Ok(Err(e)) => wire.router.fail(id, e),
            Err(_) => wire.router.fail(
                id,
                UpstreamError::Timeout {
                    upstream: wire.upstream().to_string(),
                    timeout: limit,
                },
            ),
        }
    }
}

async fn run_call(
    l: &Arc<HttpLink>,
    id: u64,
    method: &str,
    bytes: Vec<u8>,
    headers: &[(String, String)],
) -> Result<(), UpstreamError> {
    let session = &l.wire;
    let name = session.upstream().clone();
    let sent_session = l.session_id.lock().clone();
    let in_session = sent_session.is_some();
    // A failure of Manifold's own probe settles it: reconnect (with backoff, and
    // a new era probe). A failure of any other request is that request's, until a
    // probe says the session itself is gone: one client's bad request never
    // resets an upstream every client shares.
    let probe = probe::is_check(method);
    let doubt = |why: &str| {
        if probe {
            tracing::warn!(upstream = %name, why, "the upstream failed Manifold's probe; reconnecting");
            session.closed.cancel();
        } else {
            check_session(l);
        }
    };
    // Shared, not copied, by a resend (a refused token, a lost session).
    let bytes = Bytes::from(bytes);
    let mut resp = l
        .send(Method::POST, Some(bytes.clone()), headers, None)
        .await
        .inspect_err(|e| doubt(&e.to_string()))?;
    if resp.status() == StatusCode::NOT_FOUND && sent_session.is_some() && method != m::INITIALIZE {
        l.reinitialize(sent_session).await.inspect_err(|_| {
            // It may have been re-deployed as another era: reconnect and probe.
            session.closed.cancel();
        })?;
        resp = l.send(Method::POST, Some(bytes), headers, None).await?;
    }
    let stateless = session.is_stateless();
    read_reply(l, resp, id).await.map_err(|e| match e {
        ReplyError::Upstream(e) => e,
        // Credentials are the operator's to fix (`headers` in the config), not a
        // protocol fault of the upstream.
        ReplyError::Status(code, _)
            if code == StatusCode::UNAUTHORIZED || code == StatusCode::FORBIDDEN =>
        {
            if on_behalf(headers) {
                UpstreamError::CallerRefused {
                    upstream: name.to_string(),
                    status: code.as_u16(),
                }
            } else {
                UpstreamError::unavailable(
                    &name,
                    format!("authorization required (HTTP {code}); check the upstream's `headers` (or `auth`) in the configuration"),
                )
            }
        }
        ReplyError::Status(code, body)
            if (stateless && code.is_client_error()) || (in_session && code == StatusCode::BAD_REQUEST) =>
        {
            // Not a JSON-RPC answer: about this request alone (too large, refused
            // by a proxy or the server's validation), or about the session (an
            // upstream re-deployed in the other era refuses everything). A probe
            // tells which; Manifold's own probe refused means the latter.
            doubt(&format!("HTTP {code}"));
            if probe {
                UpstreamError::unavailable(&name, format!("it refused Manifold's probe (HTTP {code}); reconnecting"))
            } else {
                UpstreamError::protocol(
                    &name,
                    format!("HTTP {code}: {}", body.chars().take(300).collect::<String>()),
                )
            }
        }
        // "Not now": a gateway in front of it, or the server itself, failed
        // before answering; another attempt may get through.
        ReplyError::Status(code, body)
            if matches!(code.as_u16(), 502..=504) =>
        {
            UpstreamError::transient(
                &name,
                format!("HTTP {code}: {}", body.chars().take(300).collect::<String>()),
                true,
            )
        }
        ReplyError::Status(code, body) => UpstreamError::protocol(
            &name,
            format!(
                "HTTP {code}: {}",
                body.chars().take(300).collect::<String>()
            ),
        ),
    })
}

/// Sends one `ping` in the session (at most one at a time); its refusal with 400
/// reconnects (see `run_call`).
fn check_session(l: &Arc<HttpLink>) {
    if l.checking.swap(true, Ordering::AcqRel) {
        return;
    }
    let l = l.clone();
    l.wire.clone().spawn_owned(async move {
        let wire = l.wire.clone();
        let timeout = wire.timeout.min(crate::limits::PROBE_TIMEOUT);
        let (method, headers, mut msg) = probe::check_request(&wire);
        if let Ok(mut reg) = wire.router.register(&mut msg) {
            let bytes = serde_json::to_vec(&msg).unwrap_or_default();
            let probe = run_call(&l, reg.id, method, bytes, &headers);
            let answered = tokio::time::timeout(timeout, probe).await.is_ok();
            wire.router.forget(reg.id);
            // A 2026-07-28 upstream must still discover as one; anything else (a
            // session-era server's error, say) means it was re-deployed: reconnect,
            // which probes its era again.
            if answered && method == m::SERVER_DISCOVER && !probe::still_stateless(&wire, reg.done.try_recv().ok()) {
                tracing::warn!(upstream = %wire.upstream(),
                    "the upstream no longer discovers as 2026-07-28; reconnecting to probe its era again");
                wire.closed.cancel();
            }
        }
        l.checking.store(false, Ordering::Release);
    });
}
