//! Approvals and revocations by a principal, on a [`PinStore`]: what
//! `manifold pins approve|revoke` and the admin plane's `POST /pins/approve`
//! do; and finding the items a name given by a person can mean.
//!
//! - Approving a pending item makes its pending definition the pin, approved
//!   by the principal given; a [`Wanted`] fingerprint (what the approver was
//!   shown) must still be the pending one, so a definition that changed again
//!   since is not approved unseen.
//! - Revoking removes a pin: the item is new again (held or pinned per
//!   `new_tools`, since its upstream keeps its `pinned_since`).
//! - Both append a [`JournalEntry`] that the running gateway audits, with the
//!   principal, when it reads the store (the command line cannot write the
//!   gateway's audit log safely while it runs).
//!
//! Invariants: all or nothing — every selected item is checked before the
//! store changes; an approval is always of a definition the store holds
//! (never of one given from outside); the principal is recorded as given.
//!
//! Not here: who may approve (the admin plane's authentication; the
//! command line runs as the local user), the file (`file`).

use manifold_catalog::fingerprint::Fingerprint;
use std::collections::BTreeMap;
use std::time::SystemTime;

use crate::store::{remove_from, JournalEntry, PendingReason, Pin, PinStore};
use crate::{item::ItemKind, item::ItemRef};

/// What to approve.
#[derive(Debug, Clone, PartialEq)]
pub enum Selection {
    /// These items, each pending.
    Items(Vec<Wanted>),
    /// Every pending item of this upstream.
    Upstream(String),
    /// Every pending item.
    All,
}

/// One item to approve, optionally only at the fingerprint the approver saw.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    pub item: ItemRef,
    pub fingerprint: Option<Fingerprint>,
}

/// One approval made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    pub item: ItemRef,
    pub fingerprint: Fingerprint,
    /// The pin it replaced (`None`: the item was new).
    pub previous: Option<Fingerprint>,
    pub reason: PendingReason,
}

/// One pin removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revocation {
    pub item: ItemRef,
    pub fingerprint: Fingerprint,
}

/// Why nothing was approved or revoked.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApproveError {
    #[error("{0}: nothing is pending for it")]
    NothingPending(ItemRef),
    #[error(
        "{item}: the pending definition is now {now}, not {wanted}; look at it again before approving"
    )]
    Stale {
        item: ItemRef,
        wanted: Fingerprint,
        now: Fingerprint,
    },
    #[error("{0}: it is not pinned")]
    NotPinned(ItemRef),
}

/// How exposed names are formed, to find an item by the name a client sees
/// (`[naming] separator` and each upstream's prefix).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Names {
    pub separator: String,
    /// Upstream → prefix, where it is not the upstream's name.
    pub prefixes: BTreeMap<String, String>,
}

impl From<&manifold_config::GatewayConfig> for Names {
    /// The names a configuration exposes: its separator, and each upstream
    /// whose prefix is not its name.
    fn from(cfg: &manifold_config::GatewayConfig) -> Names {
        Names {
            separator: cfg.naming.separator.clone(),
            prefixes: cfg
                .upstreams
                .iter()
                .filter(|u| u.prefix != u.name)
                .map(|u| (u.name.clone(), u.prefix.clone()))
                .collect(),
        }
    }
}

impl Default for Names {
    fn default() -> Self {
        Names {
            separator: "__".into(),
            prefixes: BTreeMap::new(),
        }
    }
}

impl PinStore {
    /// The items (pinned or pending) `name` can mean: `UPSTREAM/NAME`, the
    /// upstream's own `NAME` (a template's `uriTemplate`), or an exposed
    /// `PREFIX<sep>NAME`; of `kind` only, when given. Sorted; empty when
    /// none.
    pub fn lookup(&self, name: &str, kind: Option<ItemKind>, names: &Names) -> Vec<ItemRef> {
        let mut out: Vec<ItemRef> = Vec::new();
        for (upstream, pins) in &self.upstreams {
            let prefix = names
                .prefixes
                .get(upstream)
                .map_or(upstream.as_str(), String::as_str);
            let mut own: Vec<&str> = vec![name];
            if let Some(rest) = name
                .strip_prefix(upstream.as_str())
                .and_then(|r| r.strip_prefix('/'))
            {
                own.push(rest);
            }
            if let Some(rest) = name
                .strip_prefix(prefix)
                .and_then(|r| r.strip_prefix(names.separator.as_str()))
            {
                own.push(rest);
            }
            let kinds = pins.approved.keys().chain(pins.pending.keys());
            for k in kinds {
                if kind.is_some_and(|want| want != *k) {
                    continue;
                }
                for n in &own {
                    let known = pins.approved.get(k).is_some_and(|m| m.contains_key(*n))
                        || pins.pending.get(k).is_some_and(|m| m.contains_key(*n));
                    if known {
                        out.push(ItemRef::new(upstream, *k, n));
                    }
                }
            }
        }
        out.sort();
        out.dedup();
        out
    }

    /// Approves the selected pending items as `by`, at `now`; nothing
    /// changes when any selected item cannot be approved.
    pub fn approve(
        &mut self,
        selection: &Selection,
        by: &str,
        now: SystemTime,
    ) -> Result<Vec<Approval>, ApproveError> {
        let chosen: Vec<ItemRef> = match selection {
            Selection::Items(wanted) => {
                for w in wanted {
                    let pending = self
                        .pending(&w.item)
                        .ok_or_else(|| ApproveError::NothingPending(w.item.clone()))?;
                    if let Some(fp) = w.fingerprint.filter(|fp| *fp != pending.fingerprint) {
                        return Err(ApproveError::Stale {
                            item: w.item.clone(),
                            wanted: fp,
                            now: pending.fingerprint,
                        });
                    }
                }
                let mut items: Vec<ItemRef> = wanted.iter().map(|w| w.item.clone()).collect();
                items.sort();
                items.dedup();
                items
            }
            Selection::Upstream(u) => self
                .pending_items()
                .filter(|(i, _, _)| &i.upstream == u)
                .map(|(i, _, _)| i)
                .collect(),
            Selection::All => self.pending_items().map(|(i, _, _)| i).collect(),
        };
        let at = manifold_foundation::time::rfc3339_seconds(now);
        let mut done = Vec::with_capacity(chosen.len());
        for item in chosen {
            let Some(pending) = self.pending(&item).cloned() else {
                continue;
            };
            let previous = self
                .set_pin(
                    &item,
                    Pin {
                        fingerprint: pending.fingerprint,
                        first_seen: pending.first_seen,
                        approved_by: by.to_string(),
                        approved_at: at.clone(),
                        definition: pending.definition,
                    },
                )
                .map(|p| p.fingerprint);
            self.journal(JournalEntry {
                seq: 0,
                at: at.clone(),
                action: "approve".into(),
                upstream: item.upstream.clone(),
                kind: item.kind,
                name: item.name.clone(),
                fingerprint: pending.fingerprint,
                previous,
                by: by.to_string(),
            });
            done.push(Approval {
                item,
                fingerprint: pending.fingerprint,
                previous,
                reason: pending.reason,
            });
        }
        Ok(done)
    }

    /// Removes the pins of `items` as `by`, at `now`; nothing changes when
    /// any of them is not pinned.
    pub fn revoke(
        &mut self,
        items: &[ItemRef],
        by: &str,
        now: SystemTime,
    ) -> Result<Vec<Revocation>, ApproveError> {
        if let Some(missing) = items.iter().find(|i| self.pin(i).is_none()) {
            return Err(ApproveError::NotPinned(missing.clone()));
        }
        let mut items = items.to_vec();
        items.sort();
        items.dedup();
        let at = manifold_foundation::time::rfc3339_seconds(now);
        let mut done = Vec::with_capacity(items.len());
        for item in items {
            let Some(pin) = self.pin(&item).cloned() else {
                continue;
            };
            if let Some(u) = self.upstreams.get_mut(&item.upstream) {
                remove_from(&mut u.approved, item.kind, &item.name);
            }
            self.journal(JournalEntry {
                seq: 0,
                at: at.clone(),
                action: "revoke".into(),
                upstream: item.upstream.clone(),
                kind: item.kind,
                name: item.name.clone(),
                fingerprint: pin.fingerprint,
                previous: None,
                by: by.to_string(),
            });
            done.push(Revocation {
                item,
                fingerprint: pin.fingerprint,
            });
        }
        Ok(done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{Op, Update};
    use serde_json::{json, Map, Value};

    fn def(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => unreachable!("an object"),
        }
    }

    /// `gh` with tool `a` pinned and changed, tool `b` new; `fs` with a
    /// template pinned.
    fn store() -> PinStore {
        let mut s = PinStore::new();
        let a1 = def(json!({"name": "a", "description": "one"}));
        let a2 = def(json!({"name": "a", "description": "two"}));
        let b = def(json!({"name": "b"}));
        let t = def(json!({"uriTemplate": "file:///{path}", "name": "files"}));
        s.apply(&Update {
            upstream: "gh".into(),
            ops: vec![
                Op::Pin {
                    kind: ItemKind::Tool,
                    name: "a".into(),
                    fingerprint: Fingerprint::of(&a1),
                    definition: a1,
                    at: "t0".into(),
                },
                Op::Pend {
                    kind: ItemKind::Tool,
                    name: "a".into(),
                    fingerprint: Fingerprint::of(&a2),
                    reason: PendingReason::Changed,
                    definition: a2,
                    at: "t1".into(),
                },
                Op::Pend {
                    kind: ItemKind::Tool,
                    name: "b".into(),
                    fingerprint: Fingerprint::of(&b),
                    reason: PendingReason::New,
                    definition: b,
                    at: "t1".into(),
                },
            ],
        });
        s.apply(&Update {
            upstream: "fs".into(),
            ops: vec![Op::Pin {
                kind: ItemKind::ResourceTemplate,
                name: "file:///{path}".into(),
                fingerprint: Fingerprint::of(&t),
                definition: t,
                at: "t0".into(),
            }],
        });
        s
    }

    fn tool(u: &str, n: &str) -> ItemRef {
        ItemRef::new(u, ItemKind::Tool, n)
    }

    #[test]
    fn names_are_found_by_every_spelling() {
        let s = store();
        let names = Names {
            separator: "__".into(),
            prefixes: [("gh".to_string(), "github".to_string())].into(),
        };
        for spelling in ["a", "gh/a", "github__a"] {
            assert_eq!(
                s.lookup(spelling, None, &names),
                [tool("gh", "a")],
                "{spelling}"
            );
        }
        assert!(
            s.lookup("gh__a", None, &names).is_empty(),
            "the prefix is `github`"
        );
        assert_eq!(
            s.lookup("gh__a", None, &Names::default()),
            [tool("gh", "a")]
        );
        let template = ItemRef::new("fs", ItemKind::ResourceTemplate, "file:///{path}");
        assert_eq!(
            s.lookup("fs/file:///{path}", None, &names),
            std::slice::from_ref(&template)
        );
        assert_eq!(s.lookup("file:///{path}", None, &names), [template]);
        assert!(s
            .lookup("file:///{path}", Some(ItemKind::Tool), &names)
            .is_empty());
        assert!(s.lookup("nope", None, &names).is_empty());
    }

    #[test]
    fn approving_makes_the_pending_definition_the_pin_and_journals_the_principal() {
        let mut s = store();
        let now = SystemTime::UNIX_EPOCH;
        let a = tool("gh", "a");
        let pending = s.pending(&a).expect("pending").clone();
        let old = s.pin(&a).expect("pinned").fingerprint;
        let done = s
            .approve(
                &Selection::Items(vec![Wanted {
                    item: a.clone(),
                    fingerprint: Some(pending.fingerprint),
                }]),
                "local:alice",
                now,
            )
            .expect("approved");
        assert_eq!(
            done,
            [Approval {
                item: a.clone(),
                fingerprint: pending.fingerprint,
                previous: Some(old),
                reason: PendingReason::Changed,
            }]
        );
        let pin = s.pin(&a).expect("pinned");
        assert_eq!(pin.definition, pending.definition);
        assert_eq!(pin.approved_by, "local:alice");
        assert_eq!(pin.first_seen, "t1");
        assert!(s.pending(&a).is_none());
        let j = s.journal_after(0);
        assert_eq!(j.len(), 1);
        assert_eq!(
            (j[0].action.as_str(), j[0].by.as_str(), j[0].previous),
            ("approve", "local:alice", Some(old))
        );
        // Nothing pending any more: an error, and nothing changed.
        let before = s.clone();
        let e = s
            .approve(
                &Selection::Items(vec![Wanted {
                    item: a.clone(),
                    fingerprint: None,
                }]),
                "x",
                now,
            )
            .expect_err("nothing pending");
        assert_eq!(e, ApproveError::NothingPending(a));
        assert_eq!(s, before);
    }

    #[test]
    fn a_definition_that_changed_since_it_was_shown_is_not_approved() {
        let mut s = store();
        let b = tool("gh", "b");
        let shown = Fingerprint::of(&def(json!({"name": "b", "description": "older"})));
        let before = s.clone();
        let e = s
            .approve(
                &Selection::Items(vec![
                    Wanted {
                        item: tool("gh", "a"),
                        fingerprint: None,
                    },
                    Wanted {
                        item: b.clone(),
                        fingerprint: Some(shown),
                    },
                ]),
                "admin:ops",
                SystemTime::UNIX_EPOCH,
            )
            .expect_err("stale");
        assert!(
            matches!(e, ApproveError::Stale { ref item, .. } if *item == b),
            "{e}"
        );
        assert_eq!(s, before, "all or nothing");
    }

    #[test]
    fn by_upstream_or_all_and_revocations() {
        let mut s = store();
        let now = SystemTime::UNIX_EPOCH;
        assert!(s
            .approve(&Selection::Upstream("fs".into()), "p", now)
            .expect("ok")
            .is_empty());
        let done = s.approve(&Selection::All, "local:bob", now).expect("ok");
        assert_eq!(done.len(), 2);
        assert_eq!(done[1].reason, PendingReason::New);
        assert_eq!(s.pending_items().count(), 0);
        // Revoking removes the pins; the upstream still has had pins.
        let e = s
            .revoke(&[tool("gh", "a"), tool("gh", "zz")], "p", now)
            .expect_err("zz");
        assert_eq!(e, ApproveError::NotPinned(tool("gh", "zz")));
        assert!(s.pin(&tool("gh", "a")).is_some(), "all or nothing");
        let gone = s
            .revoke(&[tool("gh", "a"), tool("gh", "b")], "local:bob", now)
            .expect("ok");
        assert_eq!(gone.len(), 2);
        assert!(s.pin(&tool("gh", "a")).is_none() && s.has_pins("gh"));
        assert!(s.upstreams["gh"].approved.is_empty());
        let actions: Vec<&str> = s
            .journal_after(0)
            .iter()
            .map(|j| j.action.as_str())
            .collect();
        assert_eq!(actions, ["approve", "approve", "revoke", "revoke"]);
    }
}
