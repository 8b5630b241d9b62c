//! Approvals shared between replicas through `[cluster] redis`, for replicas
//! without a shared filesystem: each approval or revocation a replica picks
//! up from its own store's journal (its admin plane, or `manifold pins` next
//! to it) goes to the deployment's sealed log `pins` in Redis, with the
//! approved definition; every replica reads the log every `WATCH_INTERVAL`
//! and applies what others shared to its own store (`PinStore::apply_shared`:
//! only a definition with the fingerprint approved; nothing journaled again,
//! so nothing is sent on twice), then serves what was approved. A replica
//! that starts (or was cut off) applies the log from its beginning (the last
//! `MAX_SHARED_ENTRIES`).
//!
//! Invariants: Redis down never blocks the store (the log is retried at the
//! next look, a failed send is logged); an entry is audited only by the
//! replica that picked it up from its own journal.
//!
//! Not here: the log itself (manifold-cluster `Bus::append_shared`), the
//! keeper task that calls these (`keeper`).

use manifold_integrity::{JournalEntry, PinStore, Shared};
use std::sync::atomic::Ordering;

use crate::state::Gateway;

/// The shared log's name.
const LOG: &str = "pins";

impl Gateway {
    /// Sends `entries` (new in `store`'s journal) to the other replicas.
    pub(crate) async fn share_pins(&self, entries: &[JournalEntry], store: &PinStore) {
        let Some(cluster) = &self.cluster else {
            return;
        };
        for entry in entries {
            let Some(shared) = Shared::of(entry, store) else {
                continue;
            };
            let Ok(body) = serde_json::to_string(&shared) else {
                continue;
            };
            let floor = self.integrity.shared_seen.load(Ordering::Relaxed);
            if let Err(e) = cluster.bus.append_shared(LOG, &body, floor).await {
                tracing::error!(error = %e, upstream = %entry.upstream, name = %entry.name,
                    action = %entry.action, "an approval could not be shared with the other replicas; make it again once Redis is back");
            }
        }
    }

    /// What the other replicas shared since the last look, parsed. `None`
    /// when nothing was appended since (or no Redis). The caller records the
    /// look ([`SharedLook::done`]) once it applied the entries.
    pub(crate) async fn shared_pins(&self) -> Option<SharedLook> {
        let cluster = self.cluster.as_ref()?;
        let seen = self.integrity.shared_seen.load(Ordering::Relaxed);
        let last = match cluster.bus.shared_last(LOG).await {
            Ok(n) => n,
            Err(e) => {
                tracing::debug!(error = %e, "the shared approvals could not be read");
                return None;
            }
        };
        // The counter changes with every append; unchanged, nothing is new.
        if *self.integrity.shared_counter.lock() == Some(last) {
            return None;
        }
        if last < seen {
            tracing::warn!(
                last,
                read = seen,
                "the shared approvals log's counter went back (Redis lost it, or it was reset): \
                 this replica applies entries above the highest it read only, and appends above it"
            );
        }
        let read = match cluster.bus.shared_since(LOG, seen).await {
            Ok(r) => r,
            Err(e) => {
                tracing::debug!(error = %e, "the shared approvals could not be read");
                return None;
            }
        };
        let entries = read
            .entries
            .iter()
            .filter_map(|(id, text)| match serde_json::from_str::<Shared>(text) {
                Ok(s) => Some(s),
                Err(e) => {
                    tracing::warn!(id, error = %e, "a shared approval this version cannot read; skipped");
                    None
                }
            })
            .collect();
        Some(SharedLook {
            highest: read.highest.max(seen),
            counter: last,
            entries,
        })
    }
}

/// One look at the shared log: its entries to apply, and where the next look
/// starts.
pub(crate) struct SharedLook {
    /// The highest authentic ID read (never the counter: a counter raised
    /// by hand must not make the replica skip the entries that follow).
    highest: u64,
    counter: u64,
    pub entries: Vec<Shared>,
}

impl SharedLook {
    /// Records the look: the next one reads past `highest`, and only once the
    /// counter has changed.
    pub(crate) fn done(&self, gw: &Gateway) {
        gw.integrity
            .shared_seen
            .store(self.highest, Ordering::Relaxed);
        *gw.integrity.shared_counter.lock() = Some(self.counter);
    }
}

/// Applies `entries` to `store`, logging each that is refused.
pub(crate) fn apply_all(store: &mut PinStore, entries: &[Shared]) {
    for s in entries {
        match store.apply_shared(s) {
            Ok(true) => tracing::info!(action = %s.action, upstream = %s.upstream, kind = %s.kind,
                name = %s.name, by = %s.by, "applied an approval made on another replica"),
            Ok(false) => {}
            Err(e) => tracing::warn!(error = %e, "a shared approval was refused"),
        }
    }
}
