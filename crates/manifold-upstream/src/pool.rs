//! A [`Pool`]: the members behind one upstream — `instances` children of a
//! stdio command, or one HTTP instance per `urls` entry; an upstream that is
//! not a pool is a pool of one. Each member has its own connection, lists,
//! state, breaker and restarts (its own actor, in `upstream`); the pool picks
//! the member a call goes to and keeps the members honest.
//!
//! - **Balancing.** A call goes to the member with the fewest calls in
//!   flight (ties taken in turn), among those that are connected, agree on
//!   the lists, are not ejected and whose breaker is not open; when none is
//!   left, the least bad connected one still serves (a degraded pool beats
//!   a failed call). Both eras are balanced per call: Manifold multiplexes
//!   every client onto one upstream session per member, as it does for an
//!   upstream that is not a pool, so no client owns an upstream session.
//! - **What is stateful stays put.** Manifold's own requests (resource
//!   subscriptions, the 2026-07-28 listen's `resourceSubscriptions`) go to
//!   the *holder*: the first member ready (the lowest-numbered ready one
//!   when the holder goes down), kept while it serves (never moved back, so
//!   nothing is held twice); a task
//!   goes back to the member that made it ([`Pool::pick`] with a pin).
//! - **Agreement.** The pool's lists are the holder's; a ready member that
//!   publishes different lists is reported (`/upstreams`, a warning) and
//!   gets no calls until it agrees again.
//! - **Outlier ejection.** A member whose calls fail ([`UpstreamError::is_upstream_fault`])
//!   at [`OUTLIER_ERROR_RATIO`] or more while the rest of the pool (called at
//!   least as often) does at most half as badly, or whose answers take [`OUTLIER_LATENCY_FACTOR`]
//!   times the others' (and [`OUTLIER_LATENCY_FLOOR`] more), over at least
//!   [`OUTLIER_MIN_CALLS`] calls in [`OUTLIER_WINDOW`], is ejected for
//!   [`OUTLIER_EJECT_FOR`]; at most half the pool is ejected at once.
//!
//! Invariants: a pool of one picks its one member and records nothing (its
//! calls cost what they cost before pools); locks are held for a few steps,
//! never across an `.await`.
//!
//! Not here: running a member (`upstream`), a call's attempts and retries
//! (`call`), the breaker's rules (`breaker`).

use manifold_config::UpstreamConfig;
use manifold_protocol::lists::ListSnapshot;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch, Notify};
use tokio::time::Instant;

use crate::breaker::{Admitted, Breaker, BreakerReport, BreakerState};
use crate::connection::{Connection, Slot};
use crate::error::UpstreamError;
use crate::status::{State, UpstreamStatus};

/// Calls of a member within [`OUTLIER_WINDOW`] before its error rate or
/// latency is judged.
pub const OUTLIER_MIN_CALLS: u32 = 10;
/// How long a member's calls are counted for outlier ejection (the counts
/// start afresh after it).
pub const OUTLIER_WINDOW: Duration = Duration::from_secs(30);
/// A member failing this share of its calls stands out (when the others
/// fail at most half as often).
pub const OUTLIER_ERROR_RATIO: f64 = 0.5;
/// A member whose mean answer time is this many times the others' median
/// stands out...
pub const OUTLIER_LATENCY_FACTOR: f64 = 4.0;
/// ...when it is also at least this much slower.
pub const OUTLIER_LATENCY_FLOOR: Duration = Duration::from_millis(100);
/// How long an ejected member gets no calls (unless nothing else is left).
pub const OUTLIER_EJECT_FOR: Duration = Duration::from_secs(30);

/// The state one member is in.
#[derive(Debug, Clone)]
pub struct MemberReport {
    pub index: usize,
    /// Its URL (HTTP pools), or `None` (stdio children).
    pub url: Option<String>,
    pub status: UpstreamStatus,
    pub in_flight: usize,
    /// It publishes lists other than the holder's: no calls until it agrees.
    pub disagrees: bool,
    /// Ejected as an outlier: how long it still gets no calls.
    pub ejected_for: Option<Duration>,
    /// Times it was ejected.
    pub ejections: u64,
    /// It holds Manifold's own stateful requests (subscriptions, the listen).
    pub holder: bool,
    pub breaker: Option<BreakerReport>,
}

/// What a member does, as `/metrics` and `manifold check` count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemberRole {
    /// Ready, agreeing on the lists, not ejected.
    Serving,
    /// Ready, but publishing other lists than the holder's: no calls.
    Disagrees,
    /// Ejected as an outlier.
    Ejected,
    /// Not ready (starting, restarting).
    Down,
}

impl MemberRole {
    pub const ALL: [MemberRole; 4] = [
        MemberRole::Serving,
        MemberRole::Disagrees,
        MemberRole::Ejected,
        MemberRole::Down,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            MemberRole::Serving => "serving",
            MemberRole::Disagrees => "disagrees",
            MemberRole::Ejected => "ejected",
            MemberRole::Down => "down",
        }
    }
}

impl MemberReport {
    pub fn role(&self) -> MemberRole {
        if self.status.state != State::Ready {
            MemberRole::Down
        } else if self.disagrees {
            MemberRole::Disagrees
        } else if self.ejected_for.is_some() {
            MemberRole::Ejected
        } else {
            MemberRole::Serving
        }
    }
}

/// One member: its connection, lists and state, as its actor publishes them.
pub(crate) struct Member {
    pub(crate) index: usize,
    pub(crate) config: UpstreamConfig,
    pub(crate) slot: Arc<Slot>,
    pub(crate) lists: RwLock<Option<Arc<ListSnapshot>>>,
    pub(crate) status: watch::Sender<UpstreamStatus>,
    /// Asks its live connection to refetch the lists; `None` between
    /// connections.
    pub(crate) refresh: Mutex<Option<mpsc::Sender<()>>>,
    pub(crate) breaker: Option<Arc<Breaker>>,
    /// The URIs its listen asks updates for (the holder's: the upstream's
    /// watched set; the others': none).
    pub(crate) watched: watch::Sender<BTreeSet<String>>,
    /// Times it connected (its connection's number).
    pub(crate) connections: AtomicU64,
    disagrees: AtomicBool,
    health: Mutex<Health>,
    ejections: AtomicU64,
}

/// A member's calls in the current outlier window.
struct Health {
    since: Instant,
    calls: u32,
    failures: u32,
    /// Sum of the answered calls' durations.
    answered_time: Duration,
    ejected_until: Option<Instant>,
}

impl Health {
    fn new(now: Instant) -> Health {
        Health {
            since: now,
            calls: 0,
            failures: 0,
            answered_time: Duration::ZERO,
            ejected_until: None,
        }
    }
    fn mean(&self) -> Option<Duration> {
        let answered = self.calls - self.failures;
        (answered >= OUTLIER_MIN_CALLS).then(|| self.answered_time / answered)
    }
    fn ejected(&self, now: Instant) -> bool {
        self.ejected_until.is_some_and(|u| now < u)
    }
    /// Failing at [`OUTLIER_ERROR_RATIO`] or more.
    fn failing(&self) -> bool {
        self.calls > 0 && f64::from(self.failures) / f64::from(self.calls) >= OUTLIER_ERROR_RATIO
    }
    /// What standing out asks of the member itself, whatever the others do:
    /// failing, or answering in [`OUTLIER_LATENCY_FLOOR`] or more on average.
    fn may_stand_out(&self) -> bool {
        self.failing() || self.mean().is_some_and(|m| m >= OUTLIER_LATENCY_FLOOR)
    }
}

impl Member {
    /// Sets the URIs this member's listen asks for; its listen is reopened
    /// only when they change.
    fn watch(&self, want: &BTreeSet<String>) {
        self.watched.send_if_modified(|w| {
            let changed = w != want;
            w.clone_from(want);
            changed
        });
    }

    fn live(&self) -> Option<Arc<Connection>> {
        self.slot.get().filter(|c| !c.wire.closed.is_cancelled())
    }
    fn ready(&self) -> bool {
        self.status.borrow().state == State::Ready && self.lists.read().is_some()
    }
    pub(crate) fn in_flight(&self) -> usize {
        self.slot
            .get()
            .map(|c| c.wire.router.in_flight())
            .unwrap_or(0)
    }
    /// How unwelcome a call is here: 0 serves, 1 only when nothing better is
    /// left.
    fn tier(&self, now: Instant, avoid: Option<usize>) -> u8 {
        let out = self.disagrees.load(Ordering::Relaxed)
            || self.health.lock().ejected(now)
            || self.breaker.as_ref().is_some_and(|b| b.is_open(now))
            || avoid == Some(self.index);
        u8::from(out)
    }
}

/// The members of one upstream.
pub(crate) struct Pool {
    pub(crate) members: Box<[Arc<Member>]>,
    /// Where ties start, turned by each pick.
    turn: AtomicUsize,
    /// Some member published a connection.
    connected: Notify,
    /// The member holding Manifold's stateful requests.
    holder: Mutex<Option<usize>>,
}

/// The member a call goes to, and its live connection.
pub(crate) struct Picked {
    pub member: Arc<Member>,
    pub conn: Arc<Connection>,
}

/// What one attempt on a member records when it ends: its breaker's leave
/// and, in a pool, the member's health.
pub(crate) struct Leave {
    pool: Option<Arc<Pool>>,
    member: Arc<Member>,
    admitted: Option<Admitted>,
    started: Instant,
    recorded: bool,
}

impl Pool {
    pub(crate) fn new(
        name: &Arc<str>,
        config: &UpstreamConfig,
        breaker: Option<manifold_config::BreakerPolicy>,
    ) -> Pool {
        let now = Instant::now();
        let members = (0..config.instances.max(1))
            .map(|index| {
                let label: Arc<str> = if config.is_pool() {
                    Arc::from(format!("{name}#{index}"))
                } else {
                    name.clone()
                };
                Arc::new(Member {
                    index,
                    config: config.member(index),
                    slot: Arc::default(),
                    lists: RwLock::new(None),
                    status: watch::channel(crate::status::starting()).0,
                    refresh: Mutex::new(None),
                    breaker: breaker.map(|p| Arc::new(Breaker::new(label, p))),
                    watched: watch::channel(BTreeSet::new()).0,
                    connections: AtomicU64::new(0),
                    disagrees: AtomicBool::new(false),
                    health: Mutex::new(Health::new(now)),
                    ejections: AtomicU64::new(0),
                })
            })
            .collect();
        Pool {
            members,
            turn: AtomicUsize::new(0),
            connected: Notify::new(),
            holder: Mutex::new(None),
        }
    }

    pub(crate) fn is_pool(&self) -> bool {
        self.members.len() > 1
    }

    /// A member published a connection: retries waiting for one go on.
    pub(crate) fn published(&self) {
        self.connected.notify_waiters();
    }

    /// The member a call goes to: `pin`'s (a task's owner: that member or
    /// none), else the least loaded welcome one (see the module doc), else
    /// `None` when no member is connected. `avoid`: a retry's last member.
    pub(crate) fn pick(&self, pin: Option<usize>, avoid: Option<usize>) -> Option<Picked> {
        if let Some(i) = pin {
            let member = self.members.get(i)?.clone();
            let conn = member.live()?;
            return Some(Picked { member, conn });
        }
        if let [only] = &self.members[..] {
            let conn = only.live()?;
            return Some(Picked {
                member: only.clone(),
                conn,
            });
        }
        let now = Instant::now();
        let n = self.members.len();
        let start = self.turn.fetch_add(1, Ordering::Relaxed);
        let mut best: Option<((u8, usize), Picked)> = None;
        for k in 0..n {
            let member = &self.members[(start + k) % n];
            let Some(conn) = member.live() else { continue };
            let key = (member.tier(now, avoid), conn.wire.router.in_flight());
            if best.as_ref().is_none_or(|(b, _)| key < *b) {
                best = Some((
                    key,
                    Picked {
                        member: member.clone(),
                        conn,
                    },
                ));
            }
        }
        best.map(|(_, p)| p)
    }

    /// A member to send to, waiting for one to connect until `until`.
    pub(crate) async fn wait(
        &self,
        until: Instant,
        pin: Option<usize>,
        avoid: Option<usize>,
    ) -> Option<Picked> {
        loop {
            let published = self.connected.notified();
            tokio::pin!(published);
            published.as_mut().enable();
            if let Some(p) = self.pick(pin, avoid) {
                return Some(p);
            }
            tokio::select! {
                _ = published => {}
                _ = tokio::time::sleep_until(until) => return None,
            }
        }
    }

    /// The holder's connection (Manifold's own stateful requests), else any
    /// live one.
    pub(crate) fn holder_connection(&self) -> Option<Arc<Connection>> {
        let held = *self.holder.lock();
        held.and_then(|i| self.members[i].live())
            .or_else(|| self.members.iter().find_map(|m| m.live()))
    }

    /// The holder, kept while it is ready; otherwise the lowest-numbered ready
    /// member takes over (and gets the watched URIs).
    pub(crate) fn elect(&self, watched: &BTreeSet<String>) -> Option<usize> {
        let mut holder = self.holder.lock();
        if holder.is_none_or(|i| !self.members[i].ready()) {
            *holder = self.members.iter().position(|m| m.ready());
        }
        let none = BTreeSet::new();
        for m in self.members.iter() {
            m.watch(if Some(m.index) == *holder {
                watched
            } else {
                &none
            });
        }
        *holder
    }

    /// Gives member `index`, about to be ready, the watched URIs now when no
    /// ready member holds them: [`elect`](Self::elect) will make it the holder,
    /// and its first listen asks for them instead of being reopened for them.
    pub(crate) fn claim(&self, index: usize, watched: &BTreeSet<String>) {
        // Under the holder's lock, as `elect` sets them: an election between
        // the look and the send would otherwise be undone.
        let holder = self.holder.lock();
        if holder.is_none_or(|i| i == index || !self.members[i].ready()) {
            self.members[index].watch(watched);
        }
    }

    /// Marks the ready members whose lists differ from `lists` (the
    /// holder's); says which started or stopped disagreeing.
    pub(crate) fn check_agreement(&self, lists: Option<&ListSnapshot>, upstream: &str) {
        for m in self.members.iter() {
            let differs = match (lists, m.lists.read().as_deref()) {
                (Some(held), Some(own)) => held != own,
                _ => false,
            };
            let was = m.disagrees.swap(differs, Ordering::Relaxed);
            if differs && !was {
                tracing::warn!(upstream, member = m.index,
                    "this pool member publishes other tools, prompts or resources than the others; it gets no calls until they agree");
            } else if was && !differs {
                tracing::info!(upstream, member = m.index, "this pool member agrees again");
            }
        }
    }

    /// Lets a call through `picked`'s breaker.
    pub(crate) fn admit(self: &Arc<Self>, picked: &Picked) -> Result<Leave, UpstreamError> {
        let admitted = match &picked.member.breaker {
            Some(b) => Some(b.admit()?),
            None => None,
        };
        Ok(Leave {
            pool: self.is_pool().then(|| self.clone()),
            member: picked.member.clone(),
            admitted,
            started: Instant::now(),
            recorded: false,
        })
    }

    /// Counts a member's call and ejects it when it stands out.
    fn record(&self, member: &Member, failure: Option<&UpstreamError>, took: Duration) {
        let now = Instant::now();
        {
            let mut h = member.health.lock();
            if now.saturating_duration_since(h.since) >= OUTLIER_WINDOW {
                let ejected = h.ejected_until;
                *h = Health::new(now);
                h.ejected_until = ejected;
            }
            h.calls += 1;
            match failure {
                Some(_) => h.failures += 1,
                None => h.answered_time += took,
            }
            if h.calls < OUTLIER_MIN_CALLS || h.ejected(now) {
                return;
            }
            // Most calls of a healthy pool stop here, without looking at the
            // others.
            if !h.may_stand_out() {
                return;
            }
        }
        let Some(why) = self.stands_out(member, now) else {
            return;
        };
        let ejected = self
            .members
            .iter()
            .filter(|m| m.health.lock().ejected(now))
            .count();
        if ejected + 1 > self.members.len() / 2 {
            return;
        }
        let mut h = member.health.lock();
        *h = Health::new(now);
        h.ejected_until = Some(now + OUTLIER_EJECT_FOR);
        member.ejections.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(upstream = %member.config.name, member = member.index, reason = %why,
            eject_for = ?OUTLIER_EJECT_FOR, "pool member ejected as an outlier");
    }

    /// Why `member` stands out from the rest of the pool, if it does.
    fn stands_out(&self, member: &Member, now: Instant) -> Option<String> {
        let (calls, failures, failing, mean) = {
            let h = member.health.lock();
            (h.calls, h.failures, h.failing(), h.mean())
        };
        let (mut other_calls, mut other_failures, mut means) = (0u32, 0u32, Vec::new());
        for m in self.members.iter().filter(|m| m.index != member.index) {
            let h = m.health.lock();
            if h.ejected(now) {
                continue;
            }
            other_calls += h.calls;
            other_failures += h.failures;
            means.extend(h.mean());
        }
        let ratio = f64::from(failures) / f64::from(calls.max(1));
        let others = if other_calls == 0 {
            0.0
        } else {
            f64::from(other_failures) / f64::from(other_calls)
        };
        // Standing out needs a baseline: the rest of the pool called as often
        // (a member that alone took the first calls of an outage is not an
        // outlier, the whole upstream may be failing).
        if failing && other_calls >= OUTLIER_MIN_CALLS && others <= ratio / 2.0 {
            return Some(format!(
                "{failures} of its last {calls} calls failed (the others: {:.0} %)",
                others * 100.0
            ));
        }
        let mean = mean?;
        means.sort();
        let median = *means.get(means.len() / 2)?;
        (mean.as_secs_f64() >= OUTLIER_LATENCY_FACTOR * median.as_secs_f64()
            && mean >= median + OUTLIER_LATENCY_FLOOR)
            .then(|| format!("its answers take {mean:?} on average (the others: {median:?})"))
    }

    /// Every member as reported.
    pub(crate) fn reports(&self) -> Vec<MemberReport> {
        let now = Instant::now();
        let holder = *self.holder.lock();
        self.members
            .iter()
            .map(|m| {
                let h = m.health.lock();
                MemberReport {
                    index: m.index,
                    url: match &m.config.transport {
                        // Expanded `${VAR}`s may be secrets: shown as errors show URLs.
                        manifold_config::Transport::Http { url, .. } => {
                            Some(manifold_foundation::redact::url(url).into_owned())
                        }
                        manifold_config::Transport::Stdio { .. } => None,
                    },
                    status: m.status.borrow().clone(),
                    in_flight: m.in_flight(),
                    disagrees: m.disagrees.load(Ordering::Relaxed),
                    ejected_for: h.ejected_until.filter(|u| now < *u).map(|u| u - now),
                    ejections: m.ejections.load(Ordering::Relaxed),
                    holder: holder == Some(m.index),
                    breaker: m.breaker.as_ref().map(|b| b.report()),
                }
            })
            .collect()
    }

    /// The pool's breaker as one: a pool of one reports its member's; a pool
    /// is open only when every member's breaker is (calls fail at once), and
    /// half-open when none is closed.
    pub(crate) fn breaker(&self) -> Option<BreakerReport> {
        let mut reports = self
            .members
            .iter()
            .filter_map(|m| m.breaker.as_ref().map(|b| b.report()));
        let first = reports.next()?;
        let mut all = vec![first];
        all.extend(reports);
        if all.len() == 1 {
            return all.pop();
        }
        let rank = |s: BreakerState| match s {
            BreakerState::Closed => 0,
            BreakerState::HalfOpen => 1,
            BreakerState::Open => 2,
        };
        // The best member's state is the pool's: it can still serve.
        let best = all.iter().min_by_key(|r| rank(r.state))?.clone();
        Some(BreakerReport {
            opened: all.iter().map(|r| r.opened).sum(),
            consecutive_failures: all
                .iter()
                .map(|r| r.consecutive_failures)
                .min()
                .unwrap_or(0),
            ..best
        })
    }
}

impl Leave {
    /// How the attempt ended: `None` for an answer, `Some(e)` for a failure.
    /// Recorded once.
    pub(crate) fn record(&mut self, failure: Option<&UpstreamError>) {
        if let Some(a) = self.admitted.as_mut() {
            a.record(failure);
        }
        if self.recorded {
            return;
        }
        let counted = failure.filter(|e| e.is_upstream_fault());
        if failure.is_some() && counted.is_none() {
            return; // a cancellation, the caller's own doing: not the member's
        }
        self.recorded = true;
        if let Some(pool) = &self.pool {
            pool.record(&self.member, counted, self.started.elapsed());
        }
    }

    /// The member this attempt went to.
    pub(crate) fn member(&self) -> usize {
        self.member.index
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use manifold_config::{Transport, UpstreamProtocol};

    /// An HTTP pool of `n` members (never connected: the tests feed
    /// outcomes straight to the pool's bookkeeping).
    fn pool(n: usize) -> Pool {
        let urls: Vec<String> = (0..n)
            .map(|i| format!("http://127.0.0.1:{}/mcp", 9000 + i))
            .collect();
        let config = UpstreamConfig {
            name: "web".into(),
            transport: Transport::Http {
                url: urls[0].clone(),
                headers: Default::default(),
                auth: Default::default(),
                tls: Default::default(),
            },
            timeout: Duration::from_secs(30),
            ping_interval: None,
            required: false,
            prefix: "web".into(),
            tools: Default::default(),
            prompts: Default::default(),
            protocol: UpstreamProtocol::Auto,
            overrides: Default::default(),
            retries: None,
            breaker: None,
            instances: n,
            pool_urls: urls,
        };
        Pool::new(&Arc::from("web"), &config, None)
    }

    fn feed(p: &Pool, member: usize, calls: u32, failing: bool, took: Duration) {
        let fault = UpstreamError::unavailable("web", "reset");
        for _ in 0..calls {
            p.record(&p.members[member], failing.then_some(&fault), took);
        }
    }

    fn ejected(p: &Pool) -> Vec<usize> {
        p.reports()
            .iter()
            .filter(|m| m.ejected_for.is_some())
            .map(|m| m.index)
            .collect()
    }

    #[test]
    fn a_member_whose_answers_take_far_longer_is_ejected_and_similar_ones_are_not() {
        let p = pool(3);
        let fast = Duration::from_millis(20);
        feed(&p, 0, OUTLIER_MIN_CALLS, false, fast);
        feed(&p, 1, OUTLIER_MIN_CALLS, false, fast * 2);
        assert!(ejected(&p).is_empty(), "twice as slow does not stand out");
        feed(&p, 2, OUTLIER_MIN_CALLS, false, Duration::from_millis(400));
        assert_eq!(ejected(&p), [2]);
        assert_eq!(p.reports()[2].ejections, 1);
    }

    #[test]
    fn a_failing_member_is_ejected_unless_the_whole_pool_fails_and_never_more_than_half() {
        let ok = Duration::from_millis(5);
        // The others answer: the failing one stands out.
        let p = pool(4);
        feed(&p, 0, OUTLIER_MIN_CALLS, false, ok);
        feed(&p, 1, OUTLIER_MIN_CALLS, true, ok);
        assert_eq!(ejected(&p), [1]);
        // Everyone fails: the upstream is failing, not a member (the
        // breaker's business), so nobody is ejected.
        let p = pool(2);
        feed(&p, 0, OUTLIER_MIN_CALLS, true, ok);
        feed(&p, 1, OUTLIER_MIN_CALLS, true, ok);
        assert!(ejected(&p).is_empty());
        // At most half the pool: of three failing members among four, two go.
        let p = pool(4);
        feed(&p, 0, OUTLIER_MIN_CALLS * 3, false, ok);
        for m in 1..4 {
            feed(&p, m, OUTLIER_MIN_CALLS, true, ok);
        }
        assert_eq!(ejected(&p).len(), 2, "{:?}", ejected(&p));
        // Too few calls to judge.
        let p = pool(2);
        feed(&p, 0, OUTLIER_MIN_CALLS, false, ok);
        feed(&p, 1, OUTLIER_MIN_CALLS - 1, true, ok);
        assert!(ejected(&p).is_empty());
    }

    #[test]
    fn a_pool_of_one_records_nothing() {
        let p = Arc::new(pool(1));
        assert!(!p.is_pool());
        // Its leave carries no pool: a single upstream's calls cost what they did.
        let picked_member = p.members[0].clone();
        assert!(picked_member.breaker.is_none());
        assert_eq!(p.reports().len(), 1);
        assert!(
            p.pick(None, None).is_none(),
            "nothing connected, nothing picked"
        );
    }
}
