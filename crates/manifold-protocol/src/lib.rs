//! Manifold's wire vocabulary: the JSON-RPC 2.0 envelope kept as raw members, MCP
//! method and header names, error codes, log levels, protocol revisions, the
//! `x-mcp-header` codec, an SSE codec with size limits, and the 2026-07-28 result
//! members (`resultType`, cache hints) added without re-encoding.
//!
//! Invariants: nothing here performs I/O or depends on an async runtime, so every
//! function can be unit-tested and fuzzed alone. Message bodies are never decoded into
//! typed MCP structs: members Manifold does not rewrite stay as they arrived (tenet 1,
//! `docs/TENETS.md`).
//!
//! `fuzzing` holds the fuzz-target bodies (also replayed by `tests/fuzz_corpus.rs`).
//!
//! Not here: routing, naming, sessions, transports.

pub mod errors;
pub mod extensions;
#[doc(hidden)]
pub mod fuzzing;
pub mod headers;
pub mod jsonrpc;
pub mod lists;
pub mod logging;
pub mod methods;
pub mod results;
pub mod sse;
pub mod tasks;
pub mod version;

pub use errors::{ErrorCode, RpcError};
pub use jsonrpc::{Incoming, MessageError, RequestId};
