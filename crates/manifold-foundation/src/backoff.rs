//! The pause between attempts to reconnect (an upstream's restart, an
//! upstream's GET stream, the cluster's Redis): it doubles after each
//! attempt up to a cap, and starts over once a connection has held.
//!
//! Invariants: the first pause is `first`; each pause is twice the one
//! before it, never more than `max`; `reset` brings back `first`.
//!
//! Not here: when a connection counts as having held (each caller says), or
//! the jittered pause between retries of one call (manifold-upstream
//! `retry`, which many callers take at once and so must spread).

use std::time::Duration;

/// Exponential backoff between reconnection attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Pauses from `first`, doubling up to `max`.
    pub const fn new(first: Duration, max: Duration) -> Backoff {
        Backoff {
            first,
            max,
            next: first,
        }
    }

    /// The pause the next attempt waits (for logs).
    pub fn current(&self) -> Duration {
        self.next
    }

    /// The pause to wait now; the one after it doubles (up to the cap).
    pub fn next_pause(&mut self) -> Duration {
        let now = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        now
    }

    /// A connection held: the next pause is the first again.
    pub fn reset(&mut self) {
        self.next = self.first;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_to_its_cap_and_starts_over_on_reset() {
        let ms = Duration::from_millis;
        let mut b = Backoff::new(ms(100), ms(700));
        let pauses: Vec<Duration> = (0..5).map(|_| b.next_pause()).collect();
        assert_eq!(pauses, [ms(100), ms(200), ms(400), ms(700), ms(700)]);
        assert_eq!(b.current(), ms(700));
        b.reset();
        assert_eq!(b.next_pause(), ms(100));
    }
}
