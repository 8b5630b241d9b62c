//! A harness for driving a Manifold gateway end to end from tests.
//!
//! What:
//! - [`McpClient`]: a minimal Streamable-HTTP MCP client (plain `http://`, on
//!   hyper-util's session-era client). It keeps the session id and negotiated revision
//!   from `initialize`, posts requests, notifications and responses, reads
//!   `application/json` and `text/event-stream` replies (whole, as a [`Reply`], or
//!   incrementally, as a [`MessageStream`]), opens the GET stream and ends the
//!   session with DELETE. [`McpClient::post_raw`] sends arbitrary bytes and headers
//!   for negative tests.
//! - [`TestGateway`]: a gateway started in-process from TOML text, listening on
//!   `127.0.0.1:0`, stopped when dropped.
//! - [`DemoHttp`]: the demo upstream (`manifold-demo-upstream --http`) as a child
//!   process, killed when dropped.
//! - [`McpClient::send_stateless`], [`stateless_request`]: the 2026-07-28 era
//!   (no session, `_meta` and headers on every request).
//!
//! Invariants: every wait is bounded (by [`WAIT`] unless a caller sets another
//! limit), so a broken gateway fails a test with a message instead of hanging it;
//! every child process is killed on drop; helpers return `anyhow::Result` with
//! context instead of panicking, except constructors given an invalid URL.
//!
//! Not here: TLS, authentication, resumable streams (`Last-Event-ID`).

mod client;
mod gateway;
mod reply;
mod stateless;

pub use client::McpClient;
pub use gateway::{
    admin_token_for, code_worker_bin, demo_upstream_bin, toml_string, DemoHttp, TestGateway,
};
pub use reply::{MessageStream, RawReply, Reply, StreamingReply, ACCEPT_BOTH, WAIT};
pub use stateless::{stateless_meta, stateless_request, STATELESS};
