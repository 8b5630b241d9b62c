//! A flaky upstream, for tests of retries and circuit breakers (HTTP only):
//! a share of `tools/call` requests is answered by resetting the connection
//! before any response (`--flaky-reset SHARE`), a share with
//! `503 Service Unavailable` (`--flaky-unavailable SHARE`), and the first N
//! with 503 whatever the shares (`--flaky-outage N`: an outage the upstream
//! recovers from). Which request gets which is decided by its arrival number
//! and `--flaky-seed`, so a run is the same each time for the same order of
//! arrivals.
//!
//! Every `tools/call` that arrives is counted by tool name before any fault
//! (the `calls` tool, listed with any `--flaky-*`, reports the counts, and is
//! itself never failed): a test sees how many times the gateway sent a call,
//! answered or not.
//!
//! Invariants: off unless asked for; only `tools/call` is affected (the
//! handshake, lists and pings are answered), so the upstream stays connected
//! while its calls fail.
//!
//! Not here: protocol breakage (`rogue`), hung calls (`--hang-calls`).

use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// The tool that reports the counts: never failed, and not an arrival the
/// faults are numbered by (a test can look without changing what follows).
pub const COUNTS_TOOL: &str = "calls";

/// What the flags asked for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Flaky {
    /// Share of `tools/call` requests whose connection is reset unanswered.
    pub reset: f64,
    /// Share answered 503.
    pub unavailable: f64,
    /// The first this many `tools/call` requests are answered 503.
    pub outage: u64,
    /// Seeds which requests fail.
    pub seed: u64,
}

impl Flaky {
    pub fn is_on(&self) -> bool {
        self.reset > 0.0 || self.unavailable > 0.0 || self.outage > 0
    }
}

/// What happens to one `tools/call`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Served as usual.
    None,
    /// The connection is reset, nothing answered.
    Reset,
    /// 503.
    Unavailable,
}

/// Arrivals, counted.
#[derive(Default)]
pub struct Arrivals {
    seen: AtomicU64,
    by_tool: Mutex<BTreeMap<String, u64>>,
}

impl Arrivals {
    /// Counts a `tools/call` of `tool` and decides its fault.
    pub fn arrive(&self, tool: &str, flaky: &Flaky) -> Fault {
        *self.by_tool.lock().entry(tool.to_string()).or_default() += 1;
        if tool == COUNTS_TOOL {
            return Fault::None;
        }
        let n = self.seen.fetch_add(1, Ordering::Relaxed);
        if !flaky.is_on() {
            return Fault::None;
        }
        if n < flaky.outage {
            return Fault::Unavailable;
        }
        let r = unit(flaky.seed, n);
        if r < flaky.reset {
            Fault::Reset
        } else if r < flaky.reset + flaky.unavailable {
            Fault::Unavailable
        } else {
            Fault::None
        }
    }

    /// `tools/call` arrivals by tool name.
    pub fn counts(&self) -> BTreeMap<String, u64> {
        self.by_tool.lock().clone()
    }
}

/// A number in [0, 1) from the seed and the arrival number (splitmix64).
fn unit(seed: u64, n: u64) -> f64 {
    let mut z = seed
        .wrapping_add(n.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 53) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_hold_and_a_seed_repeats() {
        let flaky = Flaky {
            reset: 0.3,
            unavailable: 0.1,
            outage: 5,
            seed: 7,
        };
        let run = || {
            let a = Arrivals::default();
            (0..10_000)
                .map(|_| a.arrive("echo", &flaky))
                .collect::<Vec<_>>()
        };
        let faults = run();
        assert_eq!(faults, run(), "the same seed, the same faults");
        assert!(faults[..5].iter().all(|f| *f == Fault::Unavailable));
        let share = |f: Fault| faults.iter().filter(|x| **x == f).count() as f64 / 10_000.0;
        assert!(
            (share(Fault::Reset) - 0.3).abs() < 0.02,
            "{}",
            share(Fault::Reset)
        );
        assert!((share(Fault::Unavailable) - 0.1).abs() < 0.02);
        let a = Arrivals::default();
        a.arrive("echo", &Flaky::default());
        a.arrive("echo", &Flaky::default());
        a.arrive("sleep", &Flaky::default());
        assert_eq!(
            a.counts(),
            BTreeMap::from([("echo".into(), 2), ("sleep".into(), 1)])
        );
    }
}
