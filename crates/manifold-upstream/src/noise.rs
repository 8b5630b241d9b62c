//! [`Noise`]: a budget for log lines a peer can cause. A broken or hostile
//! upstream can write garbage, or flood its stderr, as fast as a pipe takes it;
//! each line logged costs the gateway's log (and whoever ships and keeps it).
//! So lines a peer triggers are logged up to a budget per window, and what the
//! budget suppressed is reported, as a count, with the next line logged.
//!
//! Invariants: never blocks (one short lock, never held across `.await`);
//! nothing is dropped silently: every suppressed line is counted.
//!
//! Not here: what is logged (the callers; the gateway uses one for the
//! requests it refuses at authentication).

use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The window budgets are counted over.
pub const NOISE_WINDOW: Duration = Duration::from_secs(10);
/// Lines about garbage from one upstream (not JSON-RPC, not UTF-8, over
/// `limits.max_message_bytes`) logged per window.
pub const GARBAGE_LINES_PER_WINDOW: u32 = 10;
/// Lines of one child's stderr logged per window.
pub const STDERR_LINES_PER_WINDOW: u32 = 200;

/// One budget.
#[derive(Debug)]
pub struct Noise {
    per_window: u32,
    state: Mutex<Window>,
}

#[derive(Debug)]
struct Window {
    start: Instant,
    used: u32,
    suppressed: u64,
}

impl Noise {
    pub fn new(per_window: u32) -> Noise {
        Noise {
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
        let mut w = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if now.duration_since(w.start) >= NOISE_WINDOW {
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
        let noise = Noise::new(2);
        let t0 = Instant::now();
        assert_eq!(noise.allow_at(t0), Some(0));
        assert_eq!(noise.allow_at(t0), Some(0));
        for _ in 0..5 {
            assert_eq!(noise.allow_at(t0), None);
        }
        // A new window: the first line logged reports the 5 suppressed.
        let t1 = t0 + NOISE_WINDOW;
        assert_eq!(noise.allow_at(t1), Some(5));
        assert_eq!(noise.allow_at(t1), Some(0));
        assert_eq!(noise.allow_at(t1), None);
    }
}
