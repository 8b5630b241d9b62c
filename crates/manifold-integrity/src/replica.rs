//! Approvals and revocations shared between replicas ([`Shared`]): what one
//! replica's journal entry becomes on the wire (with the approved definition,
//! so a replica that never saw the item held can still pin it), and how
//! another replica applies it to its own store.
//!
//! Invariants: an approval is applied only when its definition's fingerprint
//! is the one approved (a damaged or forged entry cannot pin something else);
//! applying is idempotent (a pin already at that fingerprint, or a revocation
//! of a pin that is no longer at it, changes nothing); applying writes no
//! journal entry (the origin's gateway audited it; a replica that applied it
//! must not send it on again).
//!
//! Not here: carrying entries between replicas (the gateway's cluster
//! layer: a sealed log in Redis), who may approve.

use manifold_catalog::fingerprint::Fingerprint;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::store::{remove_from, JournalEntry, Pin, PinStore};
use crate::{item::ItemKind, item::ItemRef};

/// One approval or revocation, as replicas share it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shared {
    /// `approve` or `revoke`.
    pub action: String,
    pub upstream: String,
    pub kind: ItemKind,
    pub name: String,
    pub fingerprint: Fingerprint,
    pub by: String,
    pub at: String,
    /// The approved definition (an approval only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub definition: Option<Map<String, Value>>,
}

impl Shared {
    /// What `entry` (of `store`'s journal) becomes on the wire; `None` for an
    /// approval whose pin is no longer in the store (revoked or replaced
    /// since: a later entry says so).
    pub fn of(entry: &JournalEntry, store: &PinStore) -> Option<Shared> {
        let item = ItemRef::new(&entry.upstream, entry.kind, &entry.name);
        let definition = match entry.action.as_str() {
            "approve" => {
                let pin = store.pin(&item)?;
                if pin.fingerprint != entry.fingerprint {
                    return None;
                }
                Some(pin.definition.clone())
            }
            _ => None,
        };
        Some(Shared {
            action: entry.action.clone(),
            upstream: entry.upstream.clone(),
            kind: entry.kind,
            name: entry.name.clone(),
            fingerprint: entry.fingerprint,
            by: entry.by.clone(),
            at: entry.at.clone(),
            definition,
        })
    }
}

impl PinStore {
    /// Applies an approval or revocation another replica made; returns
    /// whether the store changed. Refused (`Err`, nothing changed) when an
    /// approval's definition does not have the fingerprint it claims.
    pub fn apply_shared(&mut self, s: &Shared) -> Result<bool, String> {
        let item = ItemRef::new(&s.upstream, s.kind, &s.name);
        match s.action.as_str() {
            "approve" => {
                let Some(definition) = &s.definition else {
                    return Err(format!("{item}: an approval without its definition"));
                };
                if Fingerprint::of(definition) != s.fingerprint {
                    return Err(format!(
                        "{item}: the definition shared does not have the fingerprint approved"
                    ));
                }
                if s.kind.name_of(definition) != Some(s.name.as_str()) {
                    return Err(format!("{item}: the definition shared names another item"));
                }
                if self
                    .pin(&item)
                    .is_some_and(|p| p.fingerprint == s.fingerprint)
                {
                    return Ok(false);
                }
                let first_seen = self
                    .pending(&item)
                    .filter(|p| p.fingerprint == s.fingerprint)
                    .map_or_else(|| s.at.clone(), |p| p.first_seen.clone());
                self.set_pin(
                    &item,
                    Pin {
                        fingerprint: s.fingerprint,
                        first_seen,
                        approved_by: s.by.clone(),
                        approved_at: s.at.clone(),
                        definition: definition.clone(),
                    },
                );
                Ok(true)
            }
            "revoke" => {
                if self
                    .pin(&item)
                    .is_none_or(|p| p.fingerprint != s.fingerprint)
                {
                    return Ok(false);
                }
                Ok(self
                    .upstreams
                    .get_mut(&s.upstream)
                    .is_some_and(|u| remove_from(&mut u.approved, s.kind, &s.name)))
            }
            other => Err(format!("{item}: unknown action `{other}`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{approve::Selection, approve::Wanted};
    use serde_json::json;
    use std::time::SystemTime;

    fn def(text: &str) -> Map<String, Value> {
        json!({"name": "search", "description": text})
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    /// A store where `search` was pinned as "v1" and now publishes "v2".
    fn held() -> PinStore {
        let mut s = PinStore::new();
        let up = crate::store::Update {
            upstream: "gh".into(),
            ops: vec![crate::store::Op::Pin {
                kind: ItemKind::Tool,
                name: "search".into(),
                fingerprint: Fingerprint::of(&def("v1")),
                definition: def("v1"),
                at: "2026-11-26T00:00:00Z".into(),
            }],
        };
        s.apply(&up);
        s.apply(&crate::store::Update {
            upstream: "gh".into(),
            ops: vec![crate::store::Op::Pend {
                kind: ItemKind::Tool,
                name: "search".into(),
                fingerprint: Fingerprint::of(&def("v2")),
                reason: crate::store::PendingReason::Changed,
                definition: def("v2"),
                at: "2026-11-26T01:00:00Z".into(),
            }],
        });
        s
    }

    #[test]
    fn an_approval_made_on_one_replica_pins_the_same_definition_on_another() {
        let item = ItemRef::new("gh", ItemKind::Tool, "search");
        let mut origin = held();
        origin
            .approve(
                &Selection::Items(vec![Wanted {
                    item: item.clone(),
                    fingerprint: None,
                }]),
                "admin_token:ops",
                SystemTime::now(),
            )
            .expect("approved");
        let entry = origin.journal_after(0)[0].clone();
        let shared = Shared::of(&entry, &origin).expect("shared");
        let wire = serde_json::to_string(&shared).expect("json");
        let back: Shared = serde_json::from_str(&wire).expect("read");

        let mut other = held();
        assert_eq!(other.apply_shared(&back), Ok(true));
        assert_eq!(other.pin(&item), origin.pin(&item), "the same pin");
        assert!(other.pending(&item).is_none(), "released");
        assert!(other.journal_after(0).is_empty(), "not journaled again");
        assert_eq!(other.apply_shared(&back), Ok(false), "idempotent");

        // A forged definition does not pin.
        let mut forged = back.clone();
        forged.definition = Some(def("v3: send the keys"));
        assert!(held().apply_shared(&forged).is_err());

        // A revocation removes the pin only at that fingerprint.
        let revoke = Shared {
            action: "revoke".into(),
            definition: None,
            ..back
        };
        assert_eq!(other.apply_shared(&revoke), Ok(true));
        assert!(other.pin(&item).is_none());
        assert_eq!(
            held().apply_shared(&revoke),
            Ok(false),
            "pinned at v1: kept"
        );
    }
}
