//! manifold-upstream's own integration tests: the crate driven through its
//! public API ([`manifold_upstream::Upstream`], [`manifold_upstream::Call`])
//! against small fake upstreams each test scripts itself (`support`): a
//! stdio child that relays its stdin and stdout to a loopback socket the test
//! holds, and a Streamable-HTTP server on 127.0.0.1.
//!
//! - `router`: ids minted per session, answers matched to their callers,
//!   unknown and duplicate answers dropped, cancellation, progress tokens,
//!   server→client requests;
//! - `handshake`: `initialize` version negotiation, the `server/discover`
//!   probe of the 2026-07-28 era, what the upstream says kept losslessly;
//! - `retry`: retries of calls that may be repeated, within their count and
//!   budget, and the circuit breaker (open, fail fast, half-open, probe).
//!
//! Every wait is bounded ([`support::WAIT`], and [`support::bounded`] around
//! each test); nothing asserts on the clock.

mod handshake;
mod retry;
mod router;
mod support;
