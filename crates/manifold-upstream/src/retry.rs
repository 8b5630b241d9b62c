//! Retries of one upstream (`[upstreams.<name>] retries`): the budget that
//! keeps them from becoming a storm, the backoff between attempts, and the
//! counts `/metrics` shows.
//!
//! The budget: over a sliding [`BUDGET_WINDOW`] (in [`BUDGET_SLOTS`] slots),
//! retries may number at most `budget` × the calls made plus
//! [`BUDGET_FLOOR`]. Under a total outage an upstream therefore sees at most
//! that many extra requests, whatever `max` says; the floor lets a quiet
//! upstream's rare failure still be retried.
//!
//! Invariants: the lock is held for a few arithmetic steps, never across an
//! `.await`; a refused retry is counted and the call fails with the failure
//! it had; backoff never outlasts the call's own deadline (the caller bounds
//! the sleep).
//!
//! Not here: which calls may be repeated (the server decides and says so),
//! which failures may be retried (`UpstreamError::retry_class`), the loop
//! that sends again (`call`).

use manifold_config::RetryPolicy;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// The window the retry budget is measured over.
pub const BUDGET_WINDOW: Duration = Duration::from_secs(10);
/// Slots of the window (it slides a slot at a time).
pub const BUDGET_SLOTS: usize = 10;
/// Retries allowed per window whatever the share (a quiet upstream's rare
/// failure can still be retried).
pub const BUDGET_FLOOR: f64 = 3.0;
/// First backoff before a retry (then doubled per attempt, with full jitter).
pub const BACKOFF_BASE: Duration = Duration::from_millis(20);
/// Longest backoff before one retry.
pub const BACKOFF_CAP: Duration = Duration::from_secs(1);
/// Longest a retry waits for a restarting upstream to be connected again
/// (within the call's deadline): a stdio child that exited mid-call.
pub const RECONNECT_WAIT: Duration = Duration::from_secs(5);

/// One upstream's retry policy, budget and counts.
pub(crate) struct Retries {
    pub(crate) policy: RetryPolicy,
    window: Mutex<Window>,
    retries: AtomicU64,
    refused: AtomicU64,
}

/// Calls and retries per slot; `at` is the slot `now` falls in.
struct Window {
    calls: [u64; BUDGET_SLOTS],
    retries: [u64; BUDGET_SLOTS],
    start: Instant,
    at: u64,
}

impl Window {
    /// Moves to the slot of `now`, clearing the slots passed over.
    fn advance(&mut self, now: Instant) {
        let slot = BUDGET_WINDOW / BUDGET_SLOTS as u32;
        let now_slot = (now.saturating_duration_since(self.start).as_millis()
            / slot.as_millis().max(1)) as u64;
        let passed = now_slot.saturating_sub(self.at).min(BUDGET_SLOTS as u64);
        for i in 1..=passed {
            let k = ((self.at + i) % BUDGET_SLOTS as u64) as usize;
            self.calls[k] = 0;
            self.retries[k] = 0;
        }
        self.at = self.at.max(now_slot);
    }
    fn slot(&self) -> usize {
        (self.at % BUDGET_SLOTS as u64) as usize
    }
}

/// What `/metrics` and `/upstreams` show of an upstream's retries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RetryCounts {
    /// Retries sent.
    pub retries: u64,
    /// Retries the budget refused (the call failed with its first failure).
    pub refused: u64,
}

impl Retries {
    pub(crate) fn new(policy: RetryPolicy) -> Retries {
        Retries {
            policy,
            window: Mutex::new(Window {
                calls: [0; BUDGET_SLOTS],
                retries: [0; BUDGET_SLOTS],
                start: Instant::now(),
                at: 0,
            }),
            retries: AtomicU64::new(0),
            refused: AtomicU64::new(0),
        }
    }

    /// A call that may be retried was made (what the budget is a share of).
    pub(crate) fn called(&self) {
        self.called_at(Instant::now())
    }

    fn called_at(&self, now: Instant) {
        let mut w = self.window.lock();
        w.advance(now);
        let k = w.slot();
        w.calls[k] += 1;
    }

    /// Takes one retry from the budget; `false` (and counted as refused)
    /// when it is spent.
    pub(crate) fn take(&self) -> bool {
        self.take_at(Instant::now())
    }

    fn take_at(&self, now: Instant) -> bool {
        let allowed = {
            let mut w = self.window.lock();
            w.advance(now);
            let calls: u64 = w.calls.iter().sum();
            let retries: u64 = w.retries.iter().sum();
            let allowed = (retries + 1) as f64 <= BUDGET_FLOOR + self.policy.budget * calls as f64;
            if allowed {
                let k = w.slot();
                w.retries[k] += 1;
            }
            allowed
        };
        if !allowed {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        allowed
    }

    /// A retry the budget allowed got past the breaker and goes out: what
    /// [`RetryCounts::retries`] counts (one the breaker refuses is not sent).
    pub(crate) fn sent(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn counts(&self) -> RetryCounts {
        RetryCounts {
            retries: self.retries.load(Ordering::Relaxed),
            refused: self.refused.load(Ordering::Relaxed),
        }
    }
}

/// The pause before retry number `n` (1 for the first): full jitter over an
/// exponential bound, [`BACKOFF_BASE`] × 2ⁿ⁻¹ capped at [`BACKOFF_CAP`], so
/// the callers of a failing upstream do not come back in step.
pub(crate) fn backoff(n: u32) -> Duration {
    let bound = BACKOFF_BASE
        .saturating_mul(1u32 << n.saturating_sub(1).min(16))
        .min(BACKOFF_CAP);
    bound.mul_f64(jitter())
}

/// A number in [0, 1) that differs between calls and processes (no RNG
/// dependency for this: the hash of a per-process random state and a
/// counter).
fn jitter() -> f64 {
    use std::hash::{BuildHasher, Hasher};
    static STATE: std::sync::OnceLock<std::collections::hash_map::RandomState> =
        std::sync::OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = STATE.get_or_init(Default::default).build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_a_share_of_calls_plus_a_floor_over_a_sliding_window() {
        let r = Retries::new(RetryPolicy {
            max: 2,
            budget: 0.1,
        });
        let t0 = Instant::now();
        for _ in 0..100 {
            r.called_at(t0);
        }
        // 3 (floor) + 10 % of 100.
        let taken = (0..50).filter(|_| r.take_at(t0)).count();
        assert_eq!(taken, 13);
        (0..taken).for_each(|_| r.sent());
        assert_eq!(
            r.counts(),
            RetryCounts {
                retries: 13,
                refused: 37
            }
        );
        // Once the window has passed, only the floor is left.
        let later = t0 + BUDGET_WINDOW + Duration::from_millis(1);
        let taken = (0..50).filter(|_| r.take_at(later)).count();
        assert_eq!(taken, 3);
    }

    #[test]
    fn backoff_grows_within_its_cap_and_jitters() {
        for n in 1..20 {
            let bound = BACKOFF_BASE
                .saturating_mul(1 << (n - 1).min(16))
                .min(BACKOFF_CAP);
            for _ in 0..20 {
                assert!(backoff(n) <= bound);
            }
        }
        let d: std::collections::BTreeSet<_> = (0..20).map(|_| backoff(5)).collect();
        assert!(d.len() > 10, "jittered: {d:?}");
    }
}
