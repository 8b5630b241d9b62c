//! Recent calls per upstream, for the console's overview: calls per second,
//! the error rate and latency percentiles over the last [`RECENT_WINDOW`],
//! counted by the gateway itself (no Prometheus needed).
//!
//! Each upstream has a ring of [`SLOTS`] slots of [`SLOT_SECONDS`] each; a
//! slot holds its calls, errors, tool errors and a latency histogram of
//! [`LATENCY_BINS`] log-linear bins (four per power of two of microseconds,
//! so a percentile is within about 19 % of the true value). Recording is a
//! few relaxed atomic adds; a slot is claimed for a new period by one
//! compare-and-swap of its period number, and then zeroed.
//!
//! Invariants: no lock on the recording path (the upstream's ring is found
//! through an `ArcSwap` of a map, replaced only when an upstream is first
//! seen or removed); memory per upstream is fixed (about 20 KiB), and each
//! reload keeps only its upstreams' rings, so there are at most as many as
//! the configuration has upstreams, plus removed ones whose last calls
//! finished after the reload (until the next); the numbers are
//! approximate by design — a call recorded at the instant its slot turns
//! over may be lost with the previous period's counts.
//!
//! Not here: the Prometheus families (`metrics`), when a call is counted
//! (`observe`).

use arc_swap::ArcSwap;
use parking_lot::Mutex;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Seconds one slot covers.
pub const SLOT_SECONDS: u64 = 10;
/// Slots per upstream: [`RECENT_WINDOW`] is `SLOTS × SLOT_SECONDS`.
pub const SLOTS: usize = 30;
/// The window the overview's rates and percentiles cover.
pub const RECENT_WINDOW: Duration = Duration::from_secs(SLOT_SECONDS * SLOTS as u64);
/// Latency histogram bins: four per power of two, up to 2^40 µs (12 days).
pub const LATENCY_BINS: usize = 160;

/// How a call ended, as the overview counts it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ended {
    Ok,
    /// A tool's `isError` result: the upstream answered.
    ToolError,
    /// Anything else: a protocol error, a timeout, an unavailable upstream, a
    /// refusal, a cancellation.
    Failed,
}

struct Slot {
    /// The period (seconds since start / SLOT_SECONDS, plus one) the counts
    /// are of; 0: never used.
    period: AtomicU64,
    calls: AtomicU64,
    failed: AtomicU64,
    tool_errors: AtomicU64,
    bins: [AtomicU32; LATENCY_BINS],
}

impl Slot {
    fn new() -> Slot {
        Slot {
            period: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            tool_errors: AtomicU64::new(0),
            bins: std::array::from_fn(|_| AtomicU32::new(0)),
        }
    }

    fn zero(&self) {
        self.calls.store(0, Relaxed);
        self.failed.store(0, Relaxed);
        self.tool_errors.store(0, Relaxed);
        for b in &self.bins {
            b.store(0, Relaxed);
        }
    }
}

/// One upstream's ring.
struct Ring {
    slots: Box<[Slot]>,
}

/// The bin of a latency of `us` microseconds.
fn bin(us: u64) -> usize {
    if us < 4 {
        return us as usize;
    }
    let log = 63 - u64::from(us.leading_zeros());
    let sub = (us >> (log - 2)) & 3;
    ((log * 4 + sub) as usize).min(LATENCY_BINS - 1)
}

/// The smallest latency (µs) of bin `b` (bins 4 to 7 are never used: 4 µs
/// starts bin 8).
fn bin_floor(b: usize) -> u64 {
    if b < 8 {
        return (b as u64).min(4);
    }
    let (log, sub) = ((b / 4) as u64, (b % 4) as u64);
    (4 + sub) << (log - 2)
}

/// What the overview shows of one upstream.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Summary {
    pub calls: u64,
    pub failed: u64,
    pub tool_errors: u64,
    /// The time the counts cover (shorter than the window just after start).
    pub covered: Duration,
    /// Median and 99th percentile latency; `None` without calls.
    pub p50: Option<Duration>,
    pub p99: Option<Duration>,
}

impl Summary {
    pub fn per_second(&self) -> f64 {
        let secs = self.covered.as_secs_f64();
        if secs <= 0.0 {
            0.0
        } else {
            self.calls as f64 / secs
        }
    }
    /// Failed calls as a share of all calls (0 without calls).
    pub fn error_rate(&self) -> f64 {
        if self.calls == 0 {
            0.0
        } else {
            self.failed as f64 / self.calls as f64
        }
    }
}

/// Every upstream's ring.
pub(crate) struct RecentCalls {
    start: Instant,
    rings: ArcSwap<foldhash::HashMap<Arc<str>, Arc<Ring>>>,
    /// Serializes adding a ring (rare: once per upstream name).
    adding: Mutex<()>,
}

impl Default for RecentCalls {
    fn default() -> Self {
        RecentCalls::new(Instant::now())
    }
}

impl RecentCalls {
    pub(crate) fn new(start: Instant) -> RecentCalls {
        RecentCalls {
            start,
            rings: ArcSwap::from_pointee(foldhash::HashMap::default()),
            adding: Mutex::new(()),
        }
    }

    fn period(&self, now: Instant) -> u64 {
        now.saturating_duration_since(self.start).as_secs() / SLOT_SECONDS + 1
    }

    fn ring(&self, upstream: &Arc<str>) -> Arc<Ring> {
        if let Some(r) = self.rings.load().get(upstream) {
            return r.clone();
        }
        let _one = self.adding.lock();
        let current = self.rings.load_full();
        if let Some(r) = current.get(upstream) {
            return r.clone();
        }
        let ring = Arc::new(Ring {
            slots: (0..SLOTS).map(|_| Slot::new()).collect(),
        });
        let mut next = (*current).clone();
        next.insert(upstream.clone(), ring.clone());
        self.rings.store(Arc::new(next));
        ring
    }

    /// Keeps the rings of the `upstreams` a reload leaves in force and drops
    /// the others (one added again later starts from nothing).
    pub(crate) fn keep_only(&self, upstreams: &[&str]) {
        let _one = self.adding.lock();
        let current = self.rings.load_full();
        if current.keys().all(|name| upstreams.contains(&&**name)) {
            return;
        }
        let mut next = (*current).clone();
        next.retain(|name, _| upstreams.contains(&&**name));
        self.rings.store(Arc::new(next));
    }

    /// A call to `upstream` ended after `latency`.
    pub(crate) fn record(&self, upstream: &Arc<str>, ended: Ended, latency: Duration) {
        self.record_at(upstream, ended, latency, Instant::now());
    }

    fn record_at(&self, upstream: &Arc<str>, ended: Ended, latency: Duration, now: Instant) {
        let ring = self.ring(upstream);
        let period = self.period(now);
        let slot = &ring.slots[(period % SLOTS as u64) as usize];
        let seen = slot.period.load(Relaxed);
        if seen != period
            && seen < period
            && slot
                .period
                .compare_exchange(seen, period, Relaxed, Relaxed)
                .is_ok()
        {
            slot.zero();
        }
        slot.calls.fetch_add(1, Relaxed);
        match ended {
            Ended::Ok => {}
            Ended::ToolError => {
                slot.tool_errors.fetch_add(1, Relaxed);
            }
            Ended::Failed => {
                slot.failed.fetch_add(1, Relaxed);
            }
        }
        let us = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        slot.bins[bin(us)].fetch_add(1, Relaxed);
    }

    /// The last [`RECENT_WINDOW`] of `upstream` (zeros when it had no calls).
    pub(crate) fn summary(&self, upstream: &str) -> Summary {
        self.summary_at(upstream, Instant::now())
    }

    fn summary_at(&self, upstream: &str, now: Instant) -> Summary {
        let covered = now.saturating_duration_since(self.start).min(RECENT_WINDOW);
        let mut s = Summary {
            covered,
            ..Summary::default()
        };
        let Some(ring) = self.rings.load().get(upstream).cloned() else {
            return s;
        };
        let period = self.period(now);
        let oldest = period.saturating_sub(SLOTS as u64 - 1).max(1);
        let mut bins = [0u64; LATENCY_BINS];
        for slot in ring.slots.iter() {
            let p = slot.period.load(Relaxed);
            if p < oldest || p > period {
                continue;
            }
            s.calls += slot.calls.load(Relaxed);
            s.failed += slot.failed.load(Relaxed);
            s.tool_errors += slot.tool_errors.load(Relaxed);
            for (sum, b) in bins.iter_mut().zip(slot.bins.iter()) {
                *sum += u64::from(b.load(Relaxed));
            }
        }
        let total: u64 = bins.iter().sum();
        let quantile = |q: f64| -> Option<Duration> {
            if total == 0 {
                return None;
            }
            let rank = ((total as f64) * q).ceil().max(1.0) as u64;
            let mut seen = 0;
            for (b, n) in bins.iter().enumerate() {
                seen += n;
                if seen >= rank {
                    // The middle of the bin: the next bin's floor is its top.
                    let mid = (bin_floor(b) + bin_floor(b + 1).max(bin_floor(b) + 1)) / 2;
                    return Some(Duration::from_micros(mid));
                }
            }
            None
        };
        s.p50 = quantile(0.50);
        s.p99 = quantile(0.99);
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_are_ordered_and_within_a_quarter_power_of_two() {
        let mut last = 0;
        for us in [0u64, 1, 3, 4, 5, 7, 8, 100, 1_000, 65_536, 1 << 39] {
            let b = bin(us);
            assert!(b >= last, "{us}");
            last = b;
            assert!(bin_floor(b) <= us, "{us}: floor {}", bin_floor(b));
            assert!(
                us < bin_floor(b + 1).max(4),
                "{us}: next {}",
                bin_floor(b + 1)
            );
        }
        assert_eq!(bin(u64::MAX), LATENCY_BINS - 1);
    }

    #[test]
    fn rates_errors_and_percentiles_over_the_window_only() {
        let start = Instant::now();
        let r = RecentCalls::new(start);
        let up: Arc<str> = Arc::from("demo");
        let at = |s: u64| start + Duration::from_secs(s);
        // 98 fast calls, one slow, one very slow failure, at t=5s.
        for _ in 0..98 {
            r.record_at(&up, Ended::Ok, Duration::from_micros(1_000), at(5));
        }
        r.record_at(&up, Ended::ToolError, Duration::from_millis(50), at(5));
        r.record_at(&up, Ended::Failed, Duration::from_secs(2), at(5));
        let s = r.summary_at("demo", at(10));
        assert_eq!((s.calls, s.failed, s.tool_errors), (100, 1, 1));
        assert_eq!(s.covered, Duration::from_secs(10));
        assert!((s.per_second() - 10.0).abs() < 1e-9);
        assert!((s.error_rate() - 0.01).abs() < 1e-9);
        let p50 = s.p50.expect("p50").as_micros() as f64;
        assert!((p50 / 1_000.0 - 1.0).abs() < 0.2, "{p50}");
        let p99 = s.p99.expect("p99").as_micros() as f64;
        assert!((p99 / 50_000.0 - 1.0).abs() < 0.2, "{p99}");
        // Another upstream is not mixed in; an unknown one is empty.
        assert_eq!(r.summary_at("other", at(10)).calls, 0);
        // Past the window the calls are gone, and a reused slot starts again.
        let later = at(5 + RECENT_WINDOW.as_secs());
        assert_eq!(r.summary_at("demo", later).calls, 0);
        r.record_at(&up, Ended::Ok, Duration::from_micros(10), later);
        let s = r.summary_at("demo", later);
        assert_eq!((s.calls, s.failed), (1, 0));
        assert_eq!(s.covered, RECENT_WINDOW);
    }

    #[test]
    fn a_removed_upstream_takes_its_ring_with_it() {
        let start = Instant::now();
        let r = RecentCalls::new(start);
        let (a, b): (Arc<str>, Arc<str>) = (Arc::from("a"), Arc::from("b"));
        let at = start + Duration::from_secs(1);
        r.record_at(&a, Ended::Ok, Duration::from_micros(10), at);
        r.record_at(&b, Ended::Ok, Duration::from_micros(10), at);
        r.keep_only(&["b", "c"]);
        assert_eq!(r.rings.load().len(), 1);
        assert_eq!(r.summary_at("a", at).calls, 0);
        assert_eq!(r.summary_at("b", at).calls, 1);
        // Added again, it counts from nothing.
        r.record_at(&a, Ended::Failed, Duration::from_micros(10), at);
        assert_eq!(r.summary_at("a", at).calls, 1);
        r.keep_only(&["a", "b"]);
        assert_eq!(r.rings.load().len(), 2);
        r.keep_only(&[]);
        assert!(r.rings.load().is_empty());
    }
}
