//! What the demo server says it is and which protocol revisions it speaks:
//! the name and version in `serverInfo` (and at the start of every log line),
//! and the revisions `initialize` negotiates between.
//!
//! Invariants: [`SUPPORTED_PROTOCOL_VERSIONS`] is oldest first and
//! [`LATEST_PROTOCOL_VERSION`] is its last entry.
//!
//! Not here: the 2026-07-28 revision of `--modern` (`modern::MODERN_VERSION`),
//! the negotiation itself (`initialize`, in `methods`).

/// Protocol revisions this server speaks, oldest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];
/// Offered when the client asks for a revision we do not know.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";
pub const SERVER_NAME: &str = "manifold-demo-upstream";
pub const SERVER_VERSION: &str = "0.1.0";
