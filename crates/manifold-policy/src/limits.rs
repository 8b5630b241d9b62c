//! `[[rate_limit]]`: rate limits (GCRA, the `governor` crate) and concurrency
//! caps on `tools/call`, per caller. Every rule whose `who` matches the caller
//! and whose `tools` globs match the exposed name applies; a call needs a place
//! in each. Buckets are keyed by principal, by the caller's first group, or
//! one for everyone.
//!
//! Invariants: a refusal says when to retry (the rate's next free slot, or
//! [`CONCURRENCY_RETRY`] for a full concurrency cap); a [`Permit`] gives its
//! concurrency places back when dropped, whatever the call's end; buckets are
//! per process unless they are shared ([`RateLimits::admit_with`] hands the
//! [`Bucket`]s to a [`SharedBuckets`] decider and falls back to its own when
//! that cannot decide; concurrency caps stay per process).
//!
//! Not here: the refusal itself (the server answers 429 / its JSON-RPC code).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::middleware::NoOpMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};
use manifold_config::{BucketKey, RateLimitRule};
use manifold_foundation::glob::Glob;
use manifold_foundation::log_budget::LogBudget;
pub use manifold_foundation::rate::{Bucket, SharedBuckets};

use crate::identity::Identity;

/// What a caller is told to wait when a concurrency cap is full (a call may
/// end at any moment; there is no schedule to read).
pub const CONCURRENCY_RETRY: Duration = Duration::from_secs(1);
/// Warnings per log window about rate decisions made by this process's own
/// buckets because the shared ones could not decide.
pub const SHARED_FALLBACKS_LOGGED: u32 = 5;

type Limiter<C> =
    RateLimiter<String, DefaultKeyedStateStore<String>, C, NoOpMiddleware<<C as Clock>::Instant>>;

/// Calls in flight per bucket of one rule.
type InFlight = Arc<Mutex<HashMap<String, usize>>>;

struct Rule<C: Clock> {
    who: Vec<String>,
    tools: Vec<Glob>,
    key: BucketKey,
    limiter: Option<Limiter<C>>,
    /// (period, burst) of `limiter`, for deciding elsewhere.
    quota: Option<(Duration, u32)>,
    concurrency: Option<usize>,
    in_flight: InFlight,
    /// For messages: `10/s, burst 20`, `4 at once`.
    describe: String,
}

/// Why a call was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Limited {
    /// The rule's index in the file (`[[rate_limit]]` #n, from 0).
    pub rule: usize,
    pub retry_after: Duration,
    /// What the rule allows, for the message.
    pub limit: String,
}

/// The places a call holds; given back on drop.
#[derive(Default)]
pub struct Permit {
    held: Vec<(InFlight, String)>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        for (map, key) in self.held.drain(..) {
            let mut m = map.lock();
            if let Some(n) = m.get_mut(&key) {
                *n = n.saturating_sub(1);
                if *n == 0 {
                    m.remove(&key);
                }
            }
        }
    }
}

/// Every `[[rate_limit]]` rule.
pub struct RateLimits<C: Clock = DefaultClock> {
    rules: Vec<Rule<C>>,
    clock: C,
    /// Log budget for decisions made here because the shared buckets could not.
    fallbacks: LogBudget,
}

impl RateLimits<DefaultClock> {
    pub fn new(rules: &[RateLimitRule]) -> RateLimits<DefaultClock> {
        RateLimits::with_clock(rules, DefaultClock::default())
    }
}

impl<C: Clock + Clone> RateLimits<C> {
    /// With an explicit clock (tests drive a fake one).
    pub fn with_clock(rules: &[RateLimitRule], clock: C) -> RateLimits<C> {
        let rules = rules
            .iter()
            .map(|r| {
                let limiter = r.rate.and_then(|(n, per)| {
                    let burst = NonZeroU32::new(r.burst)?;
                    let quota = Quota::with_period(per / n)?.allow_burst(burst);
                    Some(RateLimiter::dashmap_with_clock(quota, clock.clone()))
                });
                let mut describe = Vec::new();
                if let Some((n, per)) = r.rate {
                    let unit = match per.as_secs() {
                        1 => "s",
                        60 => "m",
                        _ => "h",
                    };
                    describe.push(format!("{n}/{unit}, burst {}", r.burst));
                }
                if let Some(c) = r.concurrency {
                    describe.push(format!("{c} at once"));
                }
                let quota = limiter
                    .as_ref()
                    .and(r.rate)
                    .map(|(n, per)| (per / n, r.burst));
                Rule {
                    quota,
                    who: r.who.clone(),
                    tools: r.tools.iter().map(|g| Glob::new(g)).collect(),
                    key: r.key,
                    limiter,
                    concurrency: r.concurrency,
                    in_flight: Arc::default(),
                    describe: describe.join("; "),
                }
            })
            .collect();
        RateLimits {
            rules,
            clock,
            fallbacks: LogBudget::new(SHARED_FALLBACKS_LOGGED),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// A place for `caller`'s call of `tool` in every rule that applies, or why
    /// not.
    pub fn admit(&self, caller: &Identity, tool: &str) -> Result<Permit, Limited> {
        let (permit, buckets) = self.admit_concurrency(caller, tool)?;
        self.check_local(&buckets)?;
        Ok(permit)
    }

    /// [`RateLimits::admit`], with the rate buckets decided by `shared` (every
    /// replica's, through Redis) when there is one: one round trip, a place
    /// in every bucket or in none. When `shared` cannot decide, this
    /// process's own buckets do, so calls go on with per-process limits (a
    /// warning says so, within [`SHARED_FALLBACKS_LOGGED`] per window).
    pub async fn admit_with(
        &self,
        caller: &Identity,
        tool: &str,
        shared: Option<&dyn SharedBuckets>,
    ) -> Result<Permit, Limited> {
        let Some(shared) = shared else {
            return self.admit(caller, tool);
        };
        let (permit, buckets) = self.admit_concurrency(caller, tool)?;
        match shared.take(&buckets).await {
            Ok(None) => {}
            Ok(Some((rule, wait))) => return Err(self.limited(rule, wait)),
            Err(e) => {
                if let Some(suppressed) = self.fallbacks.allow() {
                    tracing::warn!(error = %e, suppressed,
                        "shared rate limits unavailable; this replica's own buckets decide");
                }
                self.check_local(&buckets)?;
            }
        }
        Ok(permit)
    }

    /// The concurrency places of every rule that applies, taken, and the rate
    /// buckets the call still needs a place in: for a caller that decides
    /// those elsewhere (shared by replicas through Redis), falling back to
    /// [`RateLimits::check_local`] when it cannot.
    fn admit_concurrency(
        &self,
        caller: &Identity,
        tool: &str,
    ) -> Result<(Permit, Vec<Bucket>), Limited> {
        let mut permit = Permit::default();
        let mut buckets = Vec::new();
        for (i, rule) in self.rules.iter().enumerate() {
            if !rule.tools.iter().any(|g| g.matches(tool))
                || !crate::who::matches(&rule.who, caller)
            {
                continue;
            }
            let key = match rule.key {
                BucketKey::Principal => caller.display_name(),
                BucketKey::Group => caller.groups.first().cloned().unwrap_or_default(),
                BucketKey::Global => String::new(),
            };
            if let Some(cap) = rule.concurrency {
                let mut m = rule.in_flight.lock();
                let n = m.entry(key.clone()).or_insert(0);
                if *n >= cap {
                    return Err(self.limited(i, CONCURRENCY_RETRY));
                }
                *n += 1;
                drop(m);
                permit.held.push((rule.in_flight.clone(), key.clone()));
            }
            if let Some((period, burst)) = rule.quota {
                buckets.push(Bucket {
                    rule: i,
                    key,
                    period,
                    burst,
                });
            }
        }
        Ok((permit, buckets))
    }

    /// Takes a place in each of `buckets` in this process's own limiters.
    fn check_local(&self, buckets: &[Bucket]) -> Result<(), Limited> {
        for b in buckets {
            let Some(l) = self.rules.get(b.rule).and_then(|r| r.limiter.as_ref()) else {
                continue;
            };
            if let Err(not_until) = l.check_key(&b.key) {
                return Err(self.limited(b.rule, not_until.wait_time_from(self.clock.now())));
            }
        }
        Ok(())
    }

    /// The refusal of rule `rule`, to retry after `retry_after`.
    fn limited(&self, rule: usize, retry_after: Duration) -> Limited {
        Limited {
            rule,
            retry_after,
            limit: self
                .rules
                .get(rule)
                .map(|r| r.describe.clone())
                .unwrap_or_default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::identity::AuthMethod;
    use governor::clock::FakeRelativeClock;

    fn rule(
        who: &[&str],
        rate: Option<(u32, u64)>,
        burst: u32,
        concurrency: Option<usize>,
    ) -> RateLimitRule {
        RateLimitRule {
            who: who.iter().map(|s| s.to_string()).collect(),
            tools: vec!["demo__*".into()],
            key: BucketKey::Principal,
            rate: rate.map(|(n, s)| (n, Duration::from_secs(s))),
            burst,
            concurrency,
        }
    }

    fn caller(method: AuthMethod, subject: &str, groups: &[&str]) -> Identity {
        Identity {
            subject: subject.into(),
            source: "corp".into(),
            groups: groups.iter().map(|s| s.to_string()).collect(),
            scopes: vec![],
            method,
        }
    }

    #[test]
    fn a_rate_allows_its_burst_then_says_when_to_retry() {
        let clock = FakeRelativeClock::default();
        let limits = RateLimits::with_clock(&[rule(&["*"], Some((2, 1)), 2, None)], clock.clone());
        let alice = caller(AuthMethod::Jwt, "alice", &[]);
        let bob = caller(AuthMethod::Jwt, "bob", &[]);
        assert!(limits.admit(&alice, "demo__echo").is_ok());
        assert!(limits.admit(&alice, "demo__echo").is_ok());
        let e = limits.admit(&alice, "demo__echo").err().expect("limited");
        assert_eq!(e.rule, 0);
        assert_eq!(e.retry_after, Duration::from_millis(500));
        assert_eq!(e.limit, "2/s, burst 2");
        // Another principal has its own bucket — another issuer's alice too;
        // another tool is not limited.
        assert!(limits.admit(&bob, "demo__echo").is_ok());
        let partner_alice = Identity {
            source: "partner".into(),
            ..alice.clone()
        };
        assert!(limits.admit(&partner_alice, "demo__echo").is_ok());
        assert!(limits.admit(&alice, "other__echo").is_ok());
        clock.advance(Duration::from_millis(500));
        assert!(limits.admit(&alice, "demo__echo").is_ok());
        assert!(limits.admit(&alice, "demo__echo").is_err());
    }

    #[test]
    fn a_concurrency_cap_holds_until_permits_drop() {
        let limits = RateLimits::with_clock(
            &[rule(&["group:ci"], None, 1, Some(2))],
            FakeRelativeClock::default(),
        );
        let ci = caller(AuthMethod::ApiKey, "bot", &["ci"]);
        let first = limits.admit(&ci, "demo__x").expect("1");
        let _second = limits.admit(&ci, "demo__x").expect("2");
        let e = limits.admit(&ci, "demo__x").err().expect("full");
        assert_eq!(e.retry_after, CONCURRENCY_RETRY);
        drop(first);
        assert!(limits.admit(&ci, "demo__x").is_ok());
        // The rule names group:ci only.
        let other = caller(AuthMethod::ApiKey, "bot2", &["ops"]);
        for _ in 0..5 {
            std::mem::forget(limits.admit(&other, "demo__x").expect("not limited"));
        }
    }
}
