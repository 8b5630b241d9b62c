//! Who is calling and what they may do: the server's front door asks
//! [`identity::Authenticator`] for the caller's [`identity::Identity`] before
//! it reads the body (and answers 401/403 from the [`AuthError`] this crate
//! names, with its status); the call chain asks the rest:
//! - who sees and may use which items (`authz`, `[[policy]]`), with the `who`
//!   grammar shared by every rule (`who`);
//! - tool arguments against their `inputSchema`, results against their
//!   `outputSchema` (`validation`);
//! - which calls a human confirms first (`confirm`, `[confirm]`);
//! - per-caller rate limits and concurrency caps (`limits`), with the shared
//!   (Redis) decision behind manifold-foundation's `SharedBuckets`.
//!
//! Invariants: no HTTP server code and no knowledge of MCP messages; every
//! await on a peer (the identity provider's key and introspection endpoints)
//! is bounded; tokens and keys are never logged or kept, only their digests.
//!
//! Not here: the HTTP responses themselves, answering a hidden item as an
//! unknown one, the order of the checks (manifold-server's call chain).

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
pub use limits::{Bucket, Limited, Permit, RateLimits, SharedBuckets};
pub use validation::{ArgumentValidators, Checks};
