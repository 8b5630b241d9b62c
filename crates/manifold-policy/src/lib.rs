//! Who is calling, and (later) what they may do. The server asks
//! [`identity::Authenticator`] for the caller's [`identity::Identity`] in its
//! admission phase and answers the refusals this crate names.
//!
//! Invariants: no HTTP server code and no knowledge of MCP messages; every
//! await on a peer (the identity provider's key endpoint) is bounded; tokens and
//! keys are never logged or kept, only their digests.
//!
//! Also: tool arguments checked against their `inputSchema` (`validation`).
//!
//! And per-caller rate limits and concurrency caps (`limits`).
//!
//! And which calls a human confirms first (`confirm`, `[confirm]`).
//!
//! And who sees and may use which items (`authz`, `[[policy]]`), with the
//! `who` grammar shared by every rule (`who`).
//!
//! Not here: the 401/403 responses themselves, or answering a hidden item as an
//! unknown one (manifold-server).

pub mod authz;
pub mod confirm;
pub mod identity;
pub mod limits;
pub mod validation;
pub mod who;

pub use authz::{Decision, ItemKind, Policy, ViewKey};
pub use confirm::ConfirmRules;
pub use identity::{
    bearer_token, find_key, hash_key, AuthError, AuthMethod, Authenticator, Identity,
};
pub use limits::{Bucket, Limited, Permit, RateLimits};
pub use validation::{ArgumentValidators, Checks};
