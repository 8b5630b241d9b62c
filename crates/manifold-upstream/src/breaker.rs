//! The circuit breaker of one upstream (`[upstreams.<name>.breaker]`):
//! closed, it lets every call through and counts how they end; after
//! `failures` failures in a row, or a share of failures over `error_ratio`
//! among at least `failures` calls in `window`, it opens and calls fail at
//! once ([`UpstreamError::Failing`], saying when it will be tried again)
//! for `open_for`; then it half-opens: one call goes through as a probe, and
//! its outcome closes the breaker or opens it again.
//!
//! Invariants: what counts as a failure is the upstream's fault alone
//! ([`UpstreamError::is_upstream_fault`]): an answer, even a JSON-RPC error,
//! is a success; a cancellation or a call ended before its outcome counts as
//! nothing (and frees the probe's place). The lock is held for a few steps,
//! never across an `.await`.
//!
//! Not here: the retries that each count as an attempt here (`retry`, `call`).

use manifold_config::BreakerPolicy;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

use crate::error::UpstreamError;

/// Slots of the breaker's `window` (it slides a slot at a time).
pub const WINDOW_SLOTS: u32 = 10;

/// A breaker's state, as `/upstreams`, `/readyz`, `/metrics` and `manifold
/// check` show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    Closed,
    Open,
    HalfOpen,
}

impl BreakerState {
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerState::Closed => "closed",
            BreakerState::Open => "open",
            BreakerState::HalfOpen => "half_open",
        }
    }
}

/// A breaker as reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BreakerReport {
    pub state: BreakerState,
    /// While open: how long until a probe may go through.
    pub retry_in: Option<Duration>,
    /// Failures in a row, now.
    pub consecutive_failures: u32,
    /// Times it opened since the upstream started.
    pub opened: u64,
    /// Why it last opened.
    pub reason: Option<String>,
}

pub(crate) struct Breaker {
    policy: BreakerPolicy,
    upstream: Arc<str>,
    inner: Mutex<Inner>,
    opened: AtomicU64,
}

enum Phase {
    Closed,
    Open {
        until: Instant,
    },
    /// `probing`: the probe call is out.
    HalfOpen {
        probing: bool,
    },
}

struct Inner {
    phase: Phase,
    consecutive: u32,
    calls: [u32; WINDOW_SLOTS as usize],
    failures: [u32; WINDOW_SLOTS as usize],
    start: Instant,
    at: u64,
    reason: Option<String>,
}

impl Inner {
    fn advance(&mut self, now: Instant, window: Duration) {
        let slot = (window / WINDOW_SLOTS).as_millis().max(1);
        let now_slot = (now.saturating_duration_since(self.start).as_millis() / slot) as u64;
        let passed = now_slot
            .saturating_sub(self.at)
            .min(u64::from(WINDOW_SLOTS));
        for i in 1..=passed {
            let k = ((self.at + i) % u64::from(WINDOW_SLOTS)) as usize;
            self.calls[k] = 0;
            self.failures[k] = 0;
        }
        self.at = self.at.max(now_slot);
    }
    fn slot(&self) -> usize {
        (self.at % u64::from(WINDOW_SLOTS)) as usize
    }
}

/// A call the breaker let through: how it ends is recorded once
/// ([`Admitted::record`]); dropped unrecorded, it counts as nothing.
pub(crate) struct Admitted {
    breaker: Arc<Breaker>,
    probe: bool,
    recorded: bool,
}

impl Breaker {
    pub(crate) fn new(upstream: Arc<str>, policy: BreakerPolicy) -> Breaker {
        Breaker {
            policy,
            upstream,
            inner: Mutex::new(Inner {
                phase: Phase::Closed,
                consecutive: 0,
                calls: [0; WINDOW_SLOTS as usize],
                failures: [0; WINDOW_SLOTS as usize],
                start: Instant::now(),
                at: 0,
                reason: None,
            }),
            opened: AtomicU64::new(0),
        }
    }

    /// Lets a call through, or says at once that the upstream is failing.
    pub(crate) fn admit(self: &Arc<Self>) -> Result<Admitted, UpstreamError> {
        self.admit_at(Instant::now())
    }

    fn admit_at(self: &Arc<Self>, now: Instant) -> Result<Admitted, UpstreamError> {
        let mut g = self.inner.lock();
        let probe = match g.phase {
            Phase::Closed => false,
            Phase::Open { until } if now < until => {
                return Err(self.failing(&g, until - now));
            }
            Phase::Open { .. } | Phase::HalfOpen { probing: false } => {
                g.phase = Phase::HalfOpen { probing: true };
                true
            }
            // The probe is out: the others wait for its verdict, failing
            // at once meanwhile.
            Phase::HalfOpen { probing: true } => {
                return Err(self.failing(&g, Duration::ZERO));
            }
        };
        Ok(Admitted {
            breaker: self.clone(),
            probe,
            recorded: false,
        })
    }

    fn failing(&self, g: &Inner, retry_in: Duration) -> UpstreamError {
        UpstreamError::Failing {
            upstream: self.upstream.to_string(),
            reason: g
                .reason
                .clone()
                .unwrap_or_else(|| "its recent calls failed".into()),
            retry_in,
        }
    }

    fn record(&self, probe: bool, failure: Option<&UpstreamError>, now: Instant) {
        let mut g = self.inner.lock();
        g.advance(now, self.policy.window);
        let k = g.slot();
        g.calls[k] = g.calls[k].saturating_add(1);
        let Some(e) = failure else {
            g.consecutive = 0;
            if probe || matches!(g.phase, Phase::HalfOpen { .. }) {
                tracing::info!(upstream = %self.upstream, "the probe call succeeded; the circuit breaker is closed again");
                g.phase = Phase::Closed;
                g.calls = [0; WINDOW_SLOTS as usize];
                g.failures = [0; WINDOW_SLOTS as usize];
            }
            return;
        };
        g.failures[k] = g.failures[k].saturating_add(1);
        g.consecutive = g.consecutive.saturating_add(1);
        let calls: u32 = g.calls.iter().sum();
        let failures: u32 = g.failures.iter().sum();
        let p = &self.policy;
        let why = if probe {
            Some(format!("the probe call failed: {e}"))
        } else if !matches!(g.phase, Phase::Closed) {
            None
        } else if g.consecutive >= p.failures {
            Some(format!(
                "{} failures in a row, the last: {e}",
                g.consecutive
            ))
        } else if calls >= p.failures && f64::from(failures) > p.error_ratio * f64::from(calls) {
            Some(format!(
                "{failures} of its last {calls} calls failed, the last: {e}"
            ))
        } else {
            None
        };
        if let Some(why) = why {
            tracing::warn!(upstream = %self.upstream, open_for = ?p.open_for, reason = %why,
                "circuit breaker open: calls fail at once until a probe succeeds");
            g.phase = Phase::Open {
                until: now + p.open_for,
            };
            g.reason = Some(why);
            self.opened.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether it refuses calls now: open and not yet due for a probe, or
    /// half-open with its probe out.
    pub(crate) fn is_open(&self, now: Instant) -> bool {
        match self.inner.lock().phase {
            Phase::Open { until } => now < until,
            Phase::HalfOpen { probing } => probing,
            Phase::Closed => false,
        }
    }

    /// The probe ended without an outcome: another call may probe.
    fn release(&self) {
        let mut g = self.inner.lock();
        if let Phase::HalfOpen { probing: true } = g.phase {
            g.phase = Phase::HalfOpen { probing: false };
        }
    }

    pub(crate) fn report(&self) -> BreakerReport {
        self.report_at(Instant::now())
    }

    fn report_at(&self, now: Instant) -> BreakerReport {
        let g = self.inner.lock();
        let (state, retry_in) = match g.phase {
            Phase::Closed => (BreakerState::Closed, None),
            Phase::Open { until } if now < until => (BreakerState::Open, Some(until - now)),
            Phase::Open { .. } | Phase::HalfOpen { .. } => (BreakerState::HalfOpen, None),
        };
        BreakerReport {
            state,
            retry_in,
            consecutive_failures: g.consecutive,
            opened: self.opened.load(Ordering::Relaxed),
            reason: g.reason.clone(),
        }
    }
}

impl Admitted {
    /// How the call (one attempt of it) ended: `None` for an answer,
    /// `Some(e)` for a failure (counted when it is the upstream's fault).
    pub(crate) fn record(&mut self, failure: Option<&UpstreamError>) {
        self.record_at(failure, Instant::now())
    }

    fn record_at(&mut self, failure: Option<&UpstreamError>, now: Instant) {
        if self.recorded {
            return;
        }
        match failure {
            Some(e) if !e.is_upstream_fault() => return,
            _ => {}
        }
        self.recorded = true;
        self.breaker.record(self.probe, failure, now);
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        if self.probe && !self.recorded {
            self.breaker.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn breaker(failures: u32, ratio: f64) -> Arc<Breaker> {
        Arc::new(Breaker::new(
            Arc::from("u"),
            BreakerPolicy {
                failures,
                window: Duration::from_secs(30),
                error_ratio: ratio,
                open_for: Duration::from_secs(10),
            },
        ))
    }
    fn fault() -> UpstreamError {
        UpstreamError::transient("u", "HTTP 503", true)
    }
    /// One call at `at`, ending with `failure`.
    fn call(b: &Arc<Breaker>, at: Instant, failure: Option<UpstreamError>) {
        b.admit_at(at)
            .expect("admitted")
            .record_at(failure.as_ref(), at);
    }

    #[test]
    fn opens_after_failures_in_a_row_fails_fast_then_one_probe_closes_it() {
        let (b, t0) = (breaker(3, 1.0), Instant::now());
        for _ in 0..3 {
            call(&b, t0, Some(fault()));
        }
        let e = b.admit_at(t0).err().expect("open");
        assert!(
            e.to_string().contains("again in 10s") && e.to_string().contains("3 failures"),
            "{e}"
        );
        assert_eq!(b.report_at(t0).state, BreakerState::Open);
        let later = t0 + Duration::from_secs(10);
        assert_eq!(b.report_at(later).state, BreakerState::HalfOpen);
        let mut probe = b.admit_at(later).expect("the probe");
        assert!(b.admit_at(later).is_err(), "one probe at a time");
        probe.record_at(None, later);
        assert_eq!(b.report_at(later).state, BreakerState::Closed);
        assert!(b.admit_at(later).is_ok());
        assert_eq!(b.report_at(later).opened, 1);
    }

    #[test]
    fn a_failed_probe_opens_it_again_and_a_dropped_one_frees_its_place() {
        let (b, t0) = (breaker(1, 1.0), Instant::now());
        call(&b, t0, Some(fault()));
        let later = t0 + Duration::from_secs(10);
        drop(b.admit_at(later).expect("probe"));
        let mut probe = b.admit_at(later).expect("another probe");
        probe.record_at(Some(&fault()), later);
        assert_eq!(b.report_at(later).state, BreakerState::Open);
        assert_eq!(b.report_at(later).opened, 2);
    }

    #[test]
    fn the_error_ratio_counts_within_the_window_and_answers_and_cancels_are_not_failures() {
        let (b, t0) = (breaker(4, 0.5), Instant::now());
        // Alternating: never 4 in a row; 3 of 6 is not over half.
        for i in 0..6 {
            call(&b, t0, (i % 2 == 1).then(fault));
        }
        assert_eq!(b.report_at(t0).state, BreakerState::Closed);
        call(
            &b,
            t0,
            Some(UpstreamError::Cancelled {
                upstream: "u".into(),
            }),
        );
        assert_eq!(b.report_at(t0).state, BreakerState::Closed);
        call(&b, t0, Some(fault()));
        assert_eq!(b.report_at(t0).state, BreakerState::Open, "4 of 7");
        // An old window is forgotten.
        let (b, t0) = (breaker(4, 0.5), Instant::now());
        for _ in 0..3 {
            call(&b, t0, Some(fault()));
        }
        call(&b, t0, None);
        let later = t0 + Duration::from_secs(31);
        call(&b, later, Some(fault()));
        assert_eq!(b.report_at(later).state, BreakerState::Closed);
    }
}
