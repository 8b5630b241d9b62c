//! [`LogBudget`]: a budget for log lines a peer can cause. A broken or hostile
//! peer (an upstream writing garbage or flooding its stderr, a scan refused at
//! authentication, an upstream whose results break their schema) can trigger
//! log lines as fast as it can send; each line costs the gateway's log (and
//! whoever ships and keeps it). So such lines are logged up to a budget per
//! [`LOG_WINDOW`], and what the budget suppressed is reported, as a count, with
//! the next line logged.
//!
//! Invariants: never blocks (one short lock, never held across `.await`);
//! nothing is dropped silently: every suppressed line is counted.
//!
//! Not here: what is logged, and each budget's size (the callers name theirs).

use parking_lot::Mutex;
use std::time::{Duration, Instant};

/// The window budgets are counted over.
pub const LOG_WINDOW: Duration = Duration::from_secs(10);

/// One budget.
#[derive(Debug)]
pub struct LogBudget {
    per_window: u32,
    state: Mutex<Window>,
}

#[derive(Debug)]
struct Window {
    start: Instant,
    used: u32,
    suppressed: u64,
}

impl LogBudget {
    /// A budget of `per_window` lines per [`LOG_WINDOW`].
    pub fn new(per_window: u32) -> LogBudget {
        LogBudget {
            per_window,
            state: Mutex::new(Window {
                start: Instant::now(),
                used: 0,
                suppressed: 0,
            }),
        }
    }

    /// `Some(n)`: log this line, and say that `n` were suppressed before it;
    /// `None`: over budget, the line is counted and not logged.
    pub fn allow(&self) -> Option<u64> {
        self.allow_at(Instant::now())
    }

    fn allow_at(&self, now: Instant) -> Option<u64> {
        let mut w = self.state.lock();
        if now.duration_since(w.start) >= LOG_WINDOW {
            w.start = now;
            w.used = 0;
        }
        if w.used >= self.per_window {
            w.suppressed += 1;
            return None;
        }
        w.used += 1;
        Some(std::mem::take(&mut w.suppressed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_per_window_and_the_suppressed_are_counted() {
        let budget = LogBudget::new(2);
        let t0 = Instant::now();
        assert_eq!(budget.allow_at(t0), Some(0));
        assert_eq!(budget.allow_at(t0), Some(0));
        for _ in 0..5 {
            assert_eq!(budget.allow_at(t0), None);
        }
        // A new window: the first line logged reports the 5 suppressed.
        let t1 = t0 + LOG_WINDOW;
        assert_eq!(budget.allow_at(t1), Some(5));
        assert_eq!(budget.allow_at(t1), Some(0));
        assert_eq!(budget.allow_at(t1), None);
    }
}
