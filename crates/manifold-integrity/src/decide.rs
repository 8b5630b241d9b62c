//! The decision over one upstream's fresh lists: for every tool, prompt,
//! resource template, static resource (its model-facing members) and the
//! server's instructions, whether it matches its pin, is pinned now (first
//! sight), has changed, or is new and waits — and the [`Update`] that records
//! it in the store. Pure: (store snapshot, upstream, lists, rules, now) in,
//! decisions out; the caller applies the update and withholds what is held.
//!
//! The rules, per item (by kind and the upstream's own name):
//! - pinned, same fingerprint → [`Verdict::Approved`] (and a pending entry
//!   left from an earlier change is dropped: a tool that comes back to its
//!   approved definition is released by itself);
//! - pinned, other fingerprint → [`Verdict::Changed`], held, with the diff;
//!   recorded as pending (`changed`);
//! - not pinned, upstream without pins yet: `trust_on_first_use` →
//!   [`Verdict::Pinned`] (everything it publishes), else [`Verdict::New`],
//!   held and recorded as pending (`new`);
//! - not pinned, upstream with pins: `new_tools = "allow"` →
//!   [`Verdict::Pinned`], `"quarantine"` → [`Verdict::New`], held. For
//!   static resources and instructions "with pins" means past the first
//!   sight of that kind ([`ItemKind::judged_per_kind`], recorded in the store
//!   whether the upstream published any or not): a store written before they
//!   were judged pins them at their first sight instead of holding them all,
//!   and a resource an upstream adds later follows `new_tools`.
//!
//! A renamed item is a removal plus a new item: its old pin stays (and
//! applies again if the old name comes back), the new name follows the rules
//! for new items. Pending entries of items the upstream no longer publishes
//! are dropped. Items without a string name are skipped (the catalog leaves
//! them out). A name published more than once in one list is a protocol
//! error: [`Verdict::Duplicate`], held in every copy whatever its pin says
//! (the catalog leaves every copy out too), neither pinned nor recorded as
//! pending — there is no one definition to approve — so a poisoned second
//! copy never rides along with an approved first one.
//!
//! Invariants: deciding again over the store with the update applied gives
//! the same held set and an empty update (no write on an unchanged list);
//! `mode` is not an input: under `warn` the same decisions are logged and
//! counted instead of withheld, and pending items are recorded so they can
//! be approved.
//!
//! Not here: withholding, logging, metrics and audit (manifold-server);
//! fetching lists.

use manifold_catalog::fingerprint::{diff, DefinitionDiff, Fingerprint};
use manifold_catalog::UpstreamLists;
use manifold_config::integrity::{IntegritySettings, NewTools};
use serde_json::{Map, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::SystemTime;

use crate::store::{Op, PendingReason, PinStore, Update};
use crate::{item::ItemKind, item::ItemRef};

/// What [`decide`] needs of `[integrity]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rules {
    pub new_tools: NewTools,
    pub trust_on_first_use: bool,
}

impl From<&IntegritySettings> for Rules {
    fn from(s: &IntegritySettings) -> Rules {
        Rules {
            new_tools: s.new_tools,
            trust_on_first_use: s.trust_on_first_use,
        }
    }
}

/// Why an item was pinned at first sight.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PinReason {
    /// The upstream had no pins yet (`trust_on_first_use = true`).
    FirstUse,
    /// A new item of an upstream with pins (`new_tools = "allow"`).
    NewAllowed,
}

/// The decision for one item.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// It matches its pin.
    Approved,
    /// Pinned now, at first sight; served.
    Pinned(PinReason),
    /// It differs from its pin: held.
    Changed {
        approved: Fingerprint,
        diff: DefinitionDiff,
    },
    /// Never approved and not pinned by the rules: held.
    New,
    /// The upstream published `copies` items under this name in one list:
    /// held (every copy), never pinned.
    Duplicate { copies: usize },
}

impl Verdict {
    /// Whether the item is held (withheld under `mode = "quarantine"`,
    /// reported under `"warn"`).
    pub fn held(&self) -> bool {
        matches!(
            self,
            Verdict::Changed { .. } | Verdict::New | Verdict::Duplicate { .. }
        )
    }

    /// `approved`, `pinned`, `changed`, `new` or `duplicate` (logs,
    /// `/upstreams`).
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Approved => "approved",
            Verdict::Pinned(_) => "pinned",
            Verdict::Changed { .. } => "changed",
            Verdict::New => "new",
            Verdict::Duplicate { .. } => "duplicate",
        }
    }
}

/// One item's decision.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    pub kind: ItemKind,
    /// The upstream's own name (`uriTemplate` for a template).
    pub name: String,
    /// Of what the upstream sent.
    pub fingerprint: Fingerprint,
    pub verdict: Verdict,
}

/// Every decision for one upstream's lists, and what to record.
#[derive(Debug, Clone, PartialEq)]
pub struct Decisions {
    pub upstream: String,
    /// In list order, tools, then prompts, then templates.
    pub items: Vec<Decision>,
    /// Apply with [`PinStore::apply`] (and write it, when there is a file).
    pub update: Update,
}

impl Decisions {
    /// The held items.
    pub fn held(&self) -> impl Iterator<Item = &Decision> {
        self.items.iter().filter(|d| d.verdict.held())
    }

    /// Whether items of `kind` named `name` are to be withheld (every item of
    /// that name: see the module's note on duplicates).
    pub fn withholds(&self, kind: ItemKind, name: &str) -> bool {
        self.held().any(|d| d.kind == kind && d.name == name)
    }

    /// The names held, by kind (to filter a list with).
    pub fn held_names(&self) -> BTreeMap<ItemKind, HashSet<String>> {
        let mut out: BTreeMap<ItemKind, HashSet<String>> = BTreeMap::new();
        for d in self.held() {
            out.entry(d.kind).or_default().insert(d.name.clone());
        }
        out
    }

    /// Held items by kind (`manifold_quarantined_items{upstream, kind}`).
    pub fn held_counts(&self) -> BTreeMap<ItemKind, usize> {
        let mut out = BTreeMap::new();
        for d in self.held() {
            *out.entry(d.kind).or_insert(0) += 1;
        }
        out
    }
}

/// What an upstream publishes of one kind (see [`crate::item::published`]).
type Published<'a> = std::borrow::Cow<'a, [Map<String, Value>]>;

/// Decides for `lists` alone: [`decide_published`] without judging the
/// instructions (their pin and pending entry are left as they are).
pub fn decide(
    store: &PinStore,
    upstream: &str,
    lists: &UpstreamLists,
    rules: &Rules,
    now: SystemTime,
) -> Decisions {
    decide_inner(store, upstream, lists, None, rules, now)
}

/// Decides for every item `upstream` publishes in `lists` and its
/// `instructions` (one successful fetch of all its lists: never call it with
/// the empty lists of an upstream that is down, or its pending entries would
/// be dropped). See [`crate::item::published`] for what is judged of each kind.
pub fn decide_published(
    store: &PinStore,
    upstream: &str,
    lists: &UpstreamLists,
    instructions: Option<&str>,
    rules: &Rules,
    now: SystemTime,
) -> Decisions {
    decide_inner(store, upstream, lists, Some(instructions), rules, now)
}

/// `instructions`: `None` leaves the instructions unjudged.
fn decide_inner(
    store: &PinStore,
    upstream: &str,
    lists: &UpstreamLists,
    instructions: Option<Option<&str>>,
    rules: &Rules,
    now: SystemTime,
) -> Decisions {
    let at = manifold_foundation::time::rfc3339_seconds(now);
    let mut items = Vec::new();
    let mut ops = Vec::new();
    let published: Vec<(ItemKind, Published<'_>)> = ItemKind::ALL
        .into_iter()
        .filter(|k| *k != ItemKind::Instructions || instructions.is_some())
        .map(|k| (k, crate::item::published(lists, instructions.flatten(), k)))
        .collect();
    let mut seen: HashSet<(ItemKind, &str)> = HashSet::new();
    for (kind, list) in &published {
        let kind = *kind;
        let has_pins = if kind.judged_per_kind() {
            let judged = store.judged(upstream, kind);
            if !judged {
                ops.push(Op::Judged { kind });
            }
            judged
        } else {
            store.has_pins(upstream)
        };
        let mut copies: HashMap<&str, usize> = HashMap::new();
        for definition in list.iter() {
            if let Some(name) = kind.name_of(definition) {
                *copies.entry(name).or_insert(0) += 1;
            }
        }
        for definition in list.iter() {
            let Some(name) = kind.name_of(definition) else {
                continue;
            };
            if !seen.insert((kind, name)) {
                continue;
            }
            let fingerprint = Fingerprint::of(definition);
            if let Some(&n) = copies.get(name).filter(|n| **n > 1) {
                // What was pending for the name is no longer one definition.
                if store.pending(&ItemRef::new(upstream, kind, name)).is_some() {
                    ops.push(Op::Unpend {
                        kind,
                        name: name.to_string(),
                    });
                }
                items.push(Decision {
                    kind,
                    name: name.to_string(),
                    fingerprint,
                    verdict: Verdict::Duplicate { copies: n },
                });
                continue;
            }
            let item = ItemRef::new(upstream, kind, name);
            let pending = store.pending(&item);
            let verdict = match store.pin(&item) {
                Some(pin) if pin.fingerprint == fingerprint => Verdict::Approved,
                Some(pin) => Verdict::Changed {
                    approved: pin.fingerprint,
                    diff: diff(&pin.definition, definition),
                },
                None => {
                    let pin_now = if has_pins {
                        rules.new_tools == NewTools::Allow
                    } else {
                        rules.trust_on_first_use
                    };
                    match (pin_now, has_pins) {
                        (true, false) => Verdict::Pinned(PinReason::FirstUse),
                        (true, true) => Verdict::Pinned(PinReason::NewAllowed),
                        (false, _) => Verdict::New,
                    }
                }
            };
            match &verdict {
                Verdict::Approved => {
                    if pending.is_some() {
                        ops.push(Op::Unpend {
                            kind,
                            name: name.to_string(),
                        });
                    }
                }
                Verdict::Pinned(_) => ops.push(Op::Pin {
                    kind,
                    name: name.to_string(),
                    fingerprint,
                    definition: definition.clone(),
                    at: at.clone(),
                }),
                Verdict::Duplicate { .. } => {}
                Verdict::Changed { .. } | Verdict::New => {
                    let reason = if matches!(verdict, Verdict::New) {
                        PendingReason::New
                    } else {
                        PendingReason::Changed
                    };
                    let recorded =
                        pending.is_some_and(|p| p.fingerprint == fingerprint && p.reason == reason);
                    if !recorded {
                        ops.push(Op::Pend {
                            kind,
                            name: name.to_string(),
                            fingerprint,
                            reason,
                            definition: definition.clone(),
                            at: at.clone(),
                        });
                    }
                }
            }
            items.push(Decision {
                kind,
                name: name.to_string(),
                fingerprint,
                verdict,
            });
        }
    }
    // Pending entries of items no longer published.
    if let Some(u) = store.upstreams.get(upstream) {
        for (kind, names) in &u.pending {
            if *kind == ItemKind::Instructions && instructions.is_none() {
                continue;
            }
            for name in names.keys() {
                if !seen.contains(&(*kind, name.as_str())) {
                    ops.push(Op::Unpend {
                        kind: *kind,
                        name: name.clone(),
                    });
                }
            }
        }
    }
    Decisions {
        upstream: upstream.to_string(),
        items,
        update: Update {
            upstream: upstream.to_string(),
            ops,
        },
    }
}

#[cfg(test)]
mod tests;
