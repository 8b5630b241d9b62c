//! The integrity metric families (documented in docs/metrics.md):
//! `manifold_quarantined_items{upstream, kind}` — items held now (withheld
//! under `mode = "quarantine"`, only reported under `"warn"`) — and
//! `manifold_quarantine_events_total{upstream, kind, reason}` — items that
//! became held (`reason`: `changed`, `new` or `duplicate`).
//!
//! Invariants: labels are bounded — upstreams are configured names, kinds and
//! reasons are fixed sets; the gauge is set when the held set is settled
//! (per catalogue change), so a released item's series goes back to 0.
//!
//! Not here: when items are held (`integrity`), rendering (`state::metrics`).

use manifold_integrity::ItemKind;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamKind {
    upstream: String,
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct UpstreamKindReason {
    upstream: String,
    kind: &'static str,
    reason: &'static str,
}

/// The integrity families, registered in the gateway's registry.
#[derive(Clone, Default)]
pub(crate) struct IntegrityMetrics {
    items: Family<UpstreamKind, Gauge>,
    events: Family<UpstreamKindReason, Counter>,
}

impl IntegrityMetrics {
    pub(crate) fn register(r: &mut Registry) -> IntegrityMetrics {
        let m = IntegrityMetrics::default();
        r.register(
            "quarantined_items",
            "Tools, prompts, resource templates, resources and instructions held by [integrity] (changed, unapproved or published twice), by upstream and kind",
            m.items.clone(),
        );
        r.register(
            "quarantine_events",
            "Items that became held by [integrity], by upstream, kind and reason (changed, new, duplicate)",
            m.events.clone(),
        );
        m
    }

    /// One item became held.
    pub(crate) fn event(&self, upstream: &str, kind: ItemKind, reason: &'static str) {
        self.events
            .get_or_create(&UpstreamKindReason {
                upstream: upstream.to_string(),
                kind: kind.as_str(),
                reason,
            })
            .inc();
    }

    /// The gauges after a settle: held items by kind, for every upstream
    /// judged now or before (an upstream without any is set to 0).
    pub(crate) fn set_counts(&self, held: &[(&str, BTreeMap<ItemKind, usize>)]) {
        for (upstream, counts) in held {
            for kind in ItemKind::ALL {
                let label = UpstreamKind {
                    upstream: upstream.to_string(),
                    kind: kind.as_str(),
                };
                let n = counts.get(&kind).copied().unwrap_or(0);
                if n > 0 || self.items.get(&label).is_some() {
                    self.items.get_or_create(&label).set(n as i64);
                }
            }
        }
    }
}
