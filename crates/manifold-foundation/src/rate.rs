//! [`Bucket`]: one rate bucket a call needs a place in (GCRA: one place comes
//! back every `period`, `burst` at once), and [`SharedBuckets`]: the seam
//! through which buckets shared by several processes are decided in one step.
//!
//! Invariants: a shared decision takes a place in every bucket it is given or
//! in none; a decider that cannot decide says so (`Err`), and never blocks
//! longer than its own bound, so the caller can fall back to its own buckets.
//!
//! Not here: which buckets a call needs and the local limiters
//! (manifold-policy `limits`), the Redis decider (manifold-cluster `rate`).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

/// A rate bucket a call needs a place in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bucket {
    /// The rule's index in the file (`[[rate_limit]]` #n, from 0), returned
    /// when the bucket refuses.
    pub rule: usize,
    /// The bucket within the rule: a principal, a group, or empty (global).
    pub key: String,
    /// One place comes back every `period`.
    pub period: Duration,
    /// Places available at once.
    pub burst: u32,
}

/// A shared decision: `Ok(None)` when every bucket had a place (all taken);
/// `Ok(Some((rule, wait)))` for the first rule without one and how long until
/// it has; `Err(why)` when it could not be decided.
pub type Taken = Result<Option<(usize, Duration)>, String>;

/// Buckets decided elsewhere (by every replica together).
pub trait SharedBuckets: Send + Sync {
    /// Takes a place in every bucket of `buckets`, or in none.
    fn take<'a>(
        &'a self,
        buckets: &'a [Bucket],
    ) -> Pin<Box<dyn Future<Output = Taken> + Send + 'a>>;
}
