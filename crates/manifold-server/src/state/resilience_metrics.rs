//! The metric families of retries, circuit breakers, pools and coalesced
//! calls (documented in docs/metrics.md), registered with the others; those
//! of retries, breakers and pools are refreshed at each scrape from the
//! upstreams' own counts, coalesced calls are counted as they happen.
//!
//! Invariants: a series exists only for an upstream that has `retries`, a
//! `breaker` or several members (a pool), or (coalesced calls) a call that
//! was coalesced; labels are configured upstream names, the breaker's three
//! states and a member's four; monotonic counts are exported as gauges, like
//! `manifold_upstream_restarts` (a restarted or reloaded upstream counts
//! from zero again).
//!
//! Not here: counting (manifold-upstream `retry`, `breaker`).

use manifold_upstream::{BreakerState, MemberRole, Upstream};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamLabel {
    upstream: String,
}

/// A pool's members in one [`MemberRole`].
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MemberLabel {
    upstream: String,
    state: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct BreakerLabel {
    upstream: String,
    state: &'static str,
}

pub(crate) struct ResilienceMetrics {
    retries: Family<UpstreamLabel, Gauge>,
    refused: Family<UpstreamLabel, Gauge>,
    breaker: Family<BreakerLabel, Gauge>,
    opened: Family<UpstreamLabel, Gauge>,
    members: Family<MemberLabel, Gauge>,
    ejections: Family<UpstreamLabel, Gauge>,
    coalesced: Family<UpstreamLabel, Counter>,
}

impl ResilienceMetrics {
    pub(crate) fn register(r: &mut Registry) -> ResilienceMetrics {
        let m = ResilienceMetrics {
            retries: Family::default(),
            refused: Family::default(),
            breaker: Family::default(),
            opened: Family::default(),
            members: Family::default(),
            ejections: Family::default(),
            coalesced: Family::default(),
        };
        r.register(
            "upstream_retries",
            "Calls sent to the upstream again after a transient failure (retries)",
            m.retries.clone(),
        );
        r.register(
            "upstream_retry_budget_refusals",
            "Retries the upstream's retry budget refused (the call failed with its failure)",
            m.refused.clone(),
        );
        r.register(
            "upstream_breaker_state",
            "1 for the state the upstream's circuit breaker is in: closed, open or half_open",
            m.breaker.clone(),
        );
        r.register(
            "upstream_breaker_opened",
            "Times the upstream's circuit breaker opened",
            m.opened.clone(),
        );
        r.register(
            "upstream_pool_members",
            "A pool's members by what they do: serving (ready, agreeing, not ejected), disagrees (other lists than the holder's), ejected (an outlier), down (not ready)",
            m.members.clone(),
        );
        r.register(
            "upstream_pool_ejections",
            "Times a pool's members were ejected as outliers",
            m.ejections.clone(),
        );
        r.register(
            "coalesced_calls",
            "Tool calls served from an identical concurrent call's upstream call (coalesce = true), without a call of their own",
            m.coalesced.clone(),
        );
        m
    }

    /// A call of `upstream` was served from another's upstream call.
    pub(crate) fn coalesced(&self, upstream: &str) {
        self.coalesced
            .get_or_create(&UpstreamLabel {
                upstream: upstream.to_string(),
            })
            .inc();
    }

    /// Refreshes `u`'s series (none for an upstream without retries, a
    /// breaker or a pool).
    pub(crate) fn refresh(&self, u: &Upstream) {
        let label = || UpstreamLabel {
            upstream: u.name().to_string(),
        };
        if let Some(c) = u.retry_counts() {
            self.retries.get_or_create(&label()).set(c.retries as i64);
            self.refused.get_or_create(&label()).set(c.refused as i64);
        }
        if let Some(b) = u.breaker() {
            for s in [
                BreakerState::Closed,
                BreakerState::Open,
                BreakerState::HalfOpen,
            ] {
                self.breaker
                    .get_or_create(&BreakerLabel {
                        upstream: u.name().to_string(),
                        state: s.as_str(),
                    })
                    .set(i64::from(b.state == s));
            }
            self.opened.get_or_create(&label()).set(b.opened as i64);
        }
        if u.is_pool() {
            let members = u.members();
            for role in MemberRole::ALL {
                let n = members.iter().filter(|m| m.role() == role).count();
                self.members
                    .get_or_create(&MemberLabel {
                        upstream: u.name().to_string(),
                        state: role.as_str(),
                    })
                    .set(n as i64);
            }
            let ejections: u64 = members.iter().map(|m| m.ejections).sum();
            self.ejections.get_or_create(&label()).set(ejections as i64);
        }
    }
}
