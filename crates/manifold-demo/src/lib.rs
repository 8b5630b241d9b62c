//! The demo upstream MCP server: what the shipped `gateway.toml` fronts
//! (`manifold demo-upstream`), and the upstream the tests and benchmarks use
//! (the `manifold-demo-upstream` binary).
//!
//! What: a small, spec-correct MCP server (protocol revisions 2024-11-05,
//! 2025-03-26, 2025-06-18 and 2025-11-25, and 2026-07-28 with `--modern`) whose
//! default catalogue shows a gateway off: tools (echo, add, weather, progress,
//! sampling, elicitation, resource links, logging, list changes), prompts and
//! resources, with members no spec defines to prove lossless pass-through. Fault
//! modes (a failing tool, a hanging tool, a crashing process, oversized
//! requests refused) are off unless a flag switches them on (`--faults`,
//! `--fail-initialize`, `--bad-request-over`); tests pass those flags.
//!
//! This file is the crate's face: it declares the modules and re-exports what
//! the binary, the gateway's tests and the benchmarks use. The protocol logic
//! is transport-independent: `jsonrpc` classifies and frames messages, a
//! [`DemoServer`] holds the server-wide state (`start` builds one from its
//! [`DemoConfig`]) and a [`Session`] the per-connection state, `request`
//! handles one request end to end, and `methods` (session era) and [`modern`]
//! (2026-07-28) dispatch it; [`tools`] holds the tools and `listing` the
//! catalogue a server lists; [`stdio`] and [`http`] only move messages.
//!
//! Invariants:
//! - Every request gets exactly one response, except a request the client
//!   cancelled with `notifications/cancelled`, which gets none (per spec).
//! - Requests are handled concurrently; nothing holds a lock across an
//!   `.await`.
//! - The tool catalog is server-wide (shared by all HTTP sessions), so
//!   `notifications/tools/list_changed` goes out on the server-wide event
//!   channel rather than on a request's own stream.
//!
//! What not: no batching (removed from MCP in 2025-06-18; batches are answered
//! with -32600), no resumable streams, no authorization, no MCP SDK.

pub mod app;
pub mod catalog;
pub mod cli;
pub mod codes;
mod config;
pub mod flaky;
pub mod http;
mod identity;
mod jsonrpc;
mod listing;
mod methods;
pub mod modern;
pub mod modern_tasks;
mod request;
mod resources;
pub mod rogue;
mod server;
mod session;
pub mod skill;
mod start;
pub mod stdio;
pub mod tools;
mod transport;

pub use config::{DemoConfig, DEFAULT_INSTRUCTIONS, DEFAULT_LIST_TTL_MS, README_DESCRIPTION};
pub use identity::{
    LATEST_PROTOCOL_VERSION, SERVER_NAME, SERVER_VERSION, SUPPORTED_PROTOCOL_VERSIONS,
};
pub use jsonrpc::{classify, notification, parse_error, rpc_error, rpc_result, Incoming, RpcError};
pub use server::DemoServer;
pub use session::Session;
pub use transport::{CallContext, TransportKind};
