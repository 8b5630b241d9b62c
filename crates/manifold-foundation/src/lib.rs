//! What several Manifold crates need and none should own, at the bottom of the
//! crate graph: globs ([`glob`]), a budget for log lines a peer can cause
//! ([`log_budget`]), the rate bucket a call takes a place in and the seam a
//! shared decider fills ([`rate`]), AES-256-GCM seal/open under
//! domain-separated keys ([`aead`], feature `aead`), and the bounded HTTPS
//! client and fetch ([`http`], feature `http`), and URLs as errors may show
//! them ([`redact`]: no userinfo, no query), and text from a peer made
//! safe to show a person ([`text`]: nothing invisible, nothing reordering),
//! and the size of a value's JSON text without writing it ([`json`]), time
//! as written and counted ([`time`]), constant-time equality ([`ct`]),
//! HMAC-SHA256 ([`mac`], feature `aead`), whether a file changed
//! ([`watch`]), the pause between reconnections ([`backoff`]) and the
//! syntax of a URI scheme ([`uri`]).
//!
//! Invariants: no MCP semantics and no Manifold configuration here (nothing
//! reads a JSON-RPC message or a `gateway.toml` section); every wait and every
//! body is bounded by what the caller passes; never hold a lock across
//! `.await` (locks are `parking_lot`'s: no poisoning to tolerate).
//!
//! Not here: the JSON-RPC envelope and its error codes (manifold-protocol),
//! anything that decides what a rule or an answer means (the crates above).

#[cfg(feature = "aead")]
pub mod aead;
pub mod backoff;
pub mod ct;
pub mod glob;
#[cfg(feature = "http")]
pub mod http;
pub mod json;
pub mod log_budget;
#[cfg(feature = "aead")]
pub mod mac;
pub mod rate;
pub mod redact;
pub mod text;
pub mod time;
pub mod uri;
pub mod watch;
