//! The table of shared upstream calls (`coalesce = true`): identical
//! concurrent `tools/call`s of one principal, keyed by [`Key`], wait on one
//! upstream call. The relay's `coalesce` decides what may share and runs the
//! shared call; this holds who waits on it.
//!
//! Invariants:
//! - a call's waiters are counted under the table's lock, and a call leaves
//!   the table under it — when its outcome is in (before the outcome is sent,
//!   so no caller joins a call that already ended and is served a stale
//!   answer) or when its last waiter leaves (then it is cancelled): a caller
//!   never joins a call that is going away;
//! - bounded: at most [`MAX_SHARED_CALLS`] calls in the table and
//!   [`MAX_WAITERS`] waiters on one; a caller past either bound makes its own
//!   call;
//! - no lock is held across an `.await` (the outcome travels on a `watch`).
//!
//! Not here: what may share and the shared call itself
//! (`call::relay::coalesce`).

use manifold_upstream::{CallOutcome, UpstreamError};
use parking_lot::Mutex;
use serde_json::value::RawValue;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// The most upstream calls shared at once, over the whole gateway; a caller
/// beyond it makes its own call.
pub const MAX_SHARED_CALLS: usize = 1024;

/// The most callers waiting on one shared call (its first caller included);
/// the next identical call makes its own.
pub const MAX_WAITERS: usize = 256;

/// The most (upstream, tool) pairs warned about (an override asks to coalesce a
/// tool that is not read-only): once each, so a busy tool does not flood the
/// log; overrides are configured, so the set stays small.
const MAX_WARNED: usize = 1024;

/// What makes two calls identical: the same principal (or, for anonymous
/// callers, the same session), endpoint, upstream, and the same request
/// (canonical JSON of what is sent upstream).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub who: String,
    pub endpoint: Arc<str>,
    pub upstream: Arc<str>,
    /// The request as sent upstream, in canonical form.
    pub request: Vec<u8>,
}

/// How a shared call ended: what every waiter answers with.
#[derive(Debug, Clone)]
pub(crate) struct Ended {
    pub outcome: Outcome,
    /// Times it was sent upstream (an upstream with retries or a breaker).
    pub attempts: Option<u32>,
}

/// A [`CallOutcome`] every waiter can have a copy of.
#[derive(Debug, Clone)]
pub(crate) enum Outcome {
    Result(Box<RawValue>),
    Error(Box<RawValue>),
    Failed(UpstreamError),
}

impl From<CallOutcome> for Outcome {
    fn from(o: CallOutcome) -> Outcome {
        match o {
            CallOutcome::Result(r) => Outcome::Result(r),
            CallOutcome::Error(e) => Outcome::Error(e),
            CallOutcome::Failed(f) => Outcome::Failed(f),
        }
    }
}

impl Outcome {
    /// One waiter's copy, byte for byte.
    pub(crate) fn to_call_outcome(&self) -> CallOutcome {
        match self {
            Outcome::Result(r) => CallOutcome::Result(r.clone()),
            Outcome::Error(e) => CallOutcome::Error(e.clone()),
            Outcome::Failed(f) => CallOutcome::Failed(f.clone()),
        }
    }
}

/// One shared call.
struct Shared {
    /// Callers waiting on it; changed only under the table's lock.
    waiters: AtomicUsize,
    outcome: watch::Receiver<Option<Ended>>,
    /// Cancels the upstream call: its last waiter left, or the gateway stops.
    cancel: CancellationToken,
}

#[derive(Default)]
struct Table {
    calls: Mutex<HashMap<Key, Arc<Shared>>>,
    warned: Mutex<HashSet<(Arc<str>, String)>>,
}

impl Table {
    /// A waiter leaves: the call is cancelled, and leaves the table, when it
    /// was the last.
    fn leave(&self, key: &Key, call: &Arc<Shared>) {
        let mut calls = self.calls.lock();
        if call.waiters.fetch_sub(1, Ordering::AcqRel) == 1 {
            if calls.get(key).is_some_and(|c| Arc::ptr_eq(c, call)) {
                calls.remove(key);
            }
            call.cancel.cancel();
        }
    }

    fn forget(&self, key: &Key, call: &Arc<Shared>) {
        let mut calls = self.calls.lock();
        if calls.get(key).is_some_and(|c| Arc::ptr_eq(c, call)) {
            calls.remove(key);
        }
    }
}

/// The shared calls in flight.
#[derive(Default)]
pub(crate) struct Coalescing {
    table: Arc<Table>,
}

/// A caller's place on a shared call; leaving it (dropping it) may cancel
/// the call.
pub(crate) struct Seat {
    table: Arc<Table>,
    key: Key,
    call: Arc<Shared>,
}

impl Seat {
    /// Where the call's outcome arrives.
    pub(crate) fn outcome(&self) -> watch::Receiver<Option<Ended>> {
        self.call.outcome.clone()
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.table.leave(&self.key, &self.call);
    }
}

/// What the first caller of a shared call needs to make it: the token that
/// cancels it, and where its outcome goes.
pub(crate) struct Making {
    table: Arc<Table>,
    key: Key,
    call: Arc<Shared>,
    tx: watch::Sender<Option<Ended>>,
}

impl Making {
    pub(crate) fn cancel(&self) -> &CancellationToken {
        &self.call.cancel
    }

    /// The call ended: it leaves the table first (a caller arriving now makes
    /// a new call rather than get this answer), then its waiters get it.
    pub(crate) fn end(self, ended: Ended) {
        self.table.forget(&self.key, &self.call);
        let _ = self.tx.send(Some(ended));
    }
}

/// A caller's place: the first (it also makes the call), or one that waits on
/// a call already made.
pub(crate) enum Joined {
    First(Seat, Making),
    Follower(Seat),
}

impl Coalescing {
    /// Joins the shared call for `key`, or opens one (cancelled with `stop`
    /// too); `None` past the bounds: the caller makes its own call.
    pub(crate) fn join(&self, key: Key, stop: &CancellationToken) -> Option<Joined> {
        let mut calls = self.table.calls.lock();
        if let Some(call) = calls.get(&key) {
            if call.waiters.load(Ordering::Acquire) >= MAX_WAITERS {
                return None;
            }
            call.waiters.fetch_add(1, Ordering::AcqRel);
            let seat = Seat {
                table: self.table.clone(),
                key,
                call: call.clone(),
            };
            return Some(Joined::Follower(seat));
        }
        if calls.len() >= MAX_SHARED_CALLS {
            return None;
        }
        let (tx, rx) = watch::channel(None);
        let call = Arc::new(Shared {
            waiters: AtomicUsize::new(1),
            outcome: rx,
            cancel: stop.child_token(),
        });
        calls.insert(key.clone(), call.clone());
        let seat = Seat {
            table: self.table.clone(),
            key: key.clone(),
            call: call.clone(),
        };
        let making = Making {
            table: self.table.clone(),
            key,
            call,
            tx,
        };
        Some(Joined::First(seat, making))
    }

    /// Whether to warn that `upstream`'s `tool` asks to coalesce but is not
    /// read-only: true once per pair.
    pub(crate) fn first_warning(&self, upstream: &Arc<str>, tool: &str) -> bool {
        let mut warned = self.table.warned.lock();
        let pair = (upstream.clone(), tool.to_string());
        if warned.contains(&pair) || warned.len() >= MAX_WARNED {
            return false;
        }
        warned.insert(pair)
    }

    /// Shared calls in flight (for tests and status).
    #[cfg(test)]
    fn in_flight(&self) -> usize {
        self.table.calls.lock().len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(who: &str) -> Key {
        Key {
            who: who.into(),
            endpoint: "/mcp".into(),
            upstream: "u".into(),
            request: r#"{"arguments":{},"name":"t"}"#.into(),
        }
    }

    #[test]
    fn the_last_waiter_leaving_cancels_and_forgets_the_call() {
        let c = Coalescing::default();
        let stop = CancellationToken::new();
        let Some(Joined::First(first, making)) = c.join(key("a"), &stop) else {
            panic!("the first caller makes the call");
        };
        let Some(Joined::Follower(follower)) = c.join(key("a"), &stop) else {
            panic!("an identical call joins it");
        };
        assert!(matches!(c.join(key("b"), &stop), Some(Joined::First(..))));
        drop(first);
        assert!(!making.cancel().is_cancelled(), "one waiter is left");
        drop(follower);
        assert!(making.cancel().is_cancelled());
        // `b`'s seat was dropped at once: its call is gone too.
        assert_eq!(c.in_flight(), 0);
    }

    #[test]
    fn an_ended_call_takes_no_new_waiters_and_the_bounds_hold() {
        let c = Coalescing::default();
        let stop = CancellationToken::new();
        let Some(Joined::First(seat, making)) = c.join(key("a"), &stop) else {
            panic!("first");
        };
        let mut rx = seat.outcome();
        let ended = Ended {
            outcome: Outcome::Failed(UpstreamError::Cancelled {
                upstream: "u".into(),
            }),
            attempts: None,
        };
        making.end(ended);
        assert!(rx.borrow_and_update().is_some());
        assert!(matches!(c.join(key("a"), &stop), Some(Joined::First(..))));
        let Some(Joined::First(_held, m)) = c.join(key("a"), &stop) else {
            panic!("first");
        };
        let seats: Vec<_> = (1..MAX_WAITERS)
            .map(|_| c.join(key("a"), &stop).expect("room"))
            .collect();
        assert!(c.join(key("a"), &stop).is_none(), "{} waiters", seats.len());
        stop.cancel();
        assert!(m.cancel().is_cancelled(), "the gateway's stop cancels it");
    }
}
